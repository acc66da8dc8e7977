"""`reprospec doctor SPEC`'s choice of the interpreter to check (commands/doctor.py), with the
venv runner's search for each python stubbed: no process is started."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reprospec import doctor
from reprospec.commands import doctor as command
from reprospec.venvs import build
from reprospec.venvs.build import EnvBuildError


def _search(here: dict[str, str]) -> object:
    """A stand-in for `find_interpreter` finding only the pythons of `here`."""

    def find(request: str | None = None, **_: object) -> SimpleNamespace:
        if request in here:
            return SimpleNamespace(path=here[request])
        raise EnvBuildError(f"no Python {request} on this machine")

    return find


def test_a_python_not_here_names_no_cells_where_no_ids_were_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Needs of cells without ids: venv-python said "(0 cells )" after the search's reason.
    monkeypatch.setattr(build, "find_interpreter", _search({"3.11": "/py/3.11"}))
    needs = doctor.Needs(python="3.11", pythons=(("3.4", ()), ("3.11", ())), runner="venv")
    _, base = command._interpreter(None, needs)
    assert base is not None
    assert base.why.startswith("no Python 3.4 on this machine: the venv runner builds"), base.why


def test_cells_that_name_no_python_are_not_among_every_cell_of_a_python_not_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cell a names no python (built on the default base), cell b a python not here: it said
    # "so every cell would be an infra error", though cell a runs; then "every such cell
    # would be", beside the other checks' one wording of it (core/words.cells_not_run).
    monkeypatch.setattr(build, "find_interpreter", _search({}))
    needs = doctor.Needs(python="3.4", pythons=((None, ("a",)), ("3.4", ("b",))), runner="venv")
    _, base = command._interpreter(None, needs)
    assert base is not None
    assert base.why.endswith(": the venv runner builds each cell's venv on it, so every such "
                             "cell is an infra error, not run"), base.why  # fmt: skip


def test_two_pythons_of_one_interpreter_are_one_and_name_no_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `python: ['3.11', '3.11.7']`, one interpreter: `several` was counted before grouping,
    # and the only interpreter's label named every cell of the matrix.
    found = {"3.11": "/py/3.11", "3.11.7": "/py/3.11"}
    monkeypatch.setattr(build, "find_interpreter", _search(found))
    pythons = (("3.11", ("py=3.11",)), ("3.11.7", ("py=3.11.7",)))
    needs = doctor.Needs(python="3.11", pythons=pythons, runner="venv")
    interpreters, base = command._interpreter(None, needs)
    assert base is None
    assert [each.path for each in interpreters] == ["/py/3.11"]
    assert interpreters[0].label == "", interpreters[0].label


def test_a_python_not_here_beside_one_found_names_its_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build, "find_interpreter", _search({"3.11": "/py/3.11"}))
    pythons = (("3.4", ("py=3.4",)), ("3.11", ("py=3.11",)))
    needs = doctor.Needs(python="3.11", pythons=pythons, runner="venv")
    interpreters, base = command._interpreter(None, needs)
    assert base is not None
    assert base.why.startswith("no Python 3.4 on this machine (cell py=3.4): "), base.why
    assert interpreters[0].label == "python 3.11 (cell py=3.11)", interpreters[0].label


def test_none_of_the_pythons_here_says_whose_the_checked_interpreter_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The header read `reprospec doctor: /usr/bin/python3.12 for spec.yaml`, a bare path taken
    # for what the cells run, though no cell that names a python is built on it.
    monkeypatch.setattr(build, "find_interpreter", _search({}))
    needs = doctor.Needs(python="3.9", pythons=(("3.9", ()),), runner="venv")
    interpreters, base = command._interpreter(None, needs)
    assert base is not None
    assert base.status == "fail"
    whose = interpreters[0].whose
    assert "none of the spec's pythons being here" in whose, whose
    # No cell names no python: none is built on it, where it said "builds on it only the
    # cells that name no python" beside venv-python's "every cell would be an infra error".
    assert "no cell is built on it; checked for the machine alone" in whose, whose


def test_none_of_the_pythons_here_beside_cells_that_name_none_says_those_are_built_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build, "find_interpreter", _search({}))
    needs = doctor.Needs(python="3.9", pythons=(("3.9", ("b",)), (None, ("a",))), runner="venv")
    interpreters, _ = command._interpreter(None, needs)
    whose = interpreters[0].whose
    assert "builds on it only the cells that name no python" in whose, whose


def test_cells_that_name_no_python_make_the_one_found_name_its_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `py: [3.11, 3.11.7, null]`: the null cell is built on reprospec's own interpreter, but
    # the one found was labelled "", and `_uncaptured` said "every workload cell is an infra
    # error" where it could not be captured.
    found = {"3.11": "/py/3.11", "3.11.7": "/py/3.11"}
    monkeypatch.setattr(build, "find_interpreter", _search(found))
    pythons = (("3.11", ("py=3.11",)), ("3.11.7", ("py=3.11.7",)), (None, ("py=none",)))
    needs = doctor.Needs(python="3.11", pythons=pythons, runner="venv")
    interpreters, base = command._interpreter(None, needs)
    assert base is None
    assert [each.path for each in interpreters] == ["/py/3.11"]
    label = interpreters[0].label
    assert label == "python 3.11 and 3.11.7 (cells py=3.11, py=3.11.7)", label


def test_cells_that_name_no_python_on_the_same_interpreter_are_not_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # reprospec runs on the 3.11 the spec names: the py=none cell, built on reprospec's own,
    # was counted as another interpreter, the one labelled `python 3.11 (cell py=3.11)`, and
    # its failed capture said the workload cells of it alone are infra errors.
    own = build.own_interpreter_path()
    monkeypatch.setattr(build, "find_interpreter", _search({"3.11": own}))
    pythons = (("3.11", ("py=3.11",)), (None, ("py=none",)))
    needs = doctor.Needs(python="3.11", pythons=pythons, runner="venv")
    interpreters, base = command._interpreter(None, needs)
    assert base is None
    assert [each.path for each in interpreters] == [own]
    assert interpreters[0].label == "", interpreters[0].label
    # Beside another python, it is named with the py=none cell too.
    here = {"3.11": own, "3.12": "/py/3.12"}
    monkeypatch.setattr(build, "find_interpreter", _search(here))
    needs = doctor.Needs(python="3.11", pythons=(*pythons, ("3.12", ("py=3.12",))), runner="venv")
    interpreters, _ = command._interpreter(None, needs)
    labels = [each.label for each in interpreters]
    assert labels == ["python 3.11 (cells py=3.11, py=none)", "python 3.12 (cell py=3.12)"]


def test_uv_not_here_says_which_cells_are_not_run_in_the_one_wording(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `doctor --runner venv` without uv said "so every cell would be an infra error, not
    # run", beside the other checks' one wording of it (core/words.cells_not_run).
    def missing() -> str:
        raise EnvBuildError("uv is not on PATH")

    monkeypatch.setattr(build, "uv_binary", missing)
    (check,) = command._runner_checks("venv")
    assert check.status == "fail"
    assert check.why == (
        "uv is not on PATH: the venv runner builds each cell's venv with it, so every cell "
        "is an infra error, not run"
    ), check.why
