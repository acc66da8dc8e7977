"""`doctor SPEC --runner venv`'s venv-packages (commands/doctorvenv.py), with uv's resolver,
the interpreter search and the index configuration stubbed: no process is started."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from reprospec import doctor, venvs
from reprospec.commands.doctorvenv import resolve_check
from reprospec.doctor.needs import CellPackages
from reprospec.venvs import resolve as resolving
from reprospec.venvs.resolve import Resolved

PYTHON = venvs.Interpreter("/py/3.11/bin/python3.11", "3.11.7")


@pytest.fixture
def asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The package lists uv is asked to resolve (each answered by `answers`, default ok)."""
    monkeypatch.setenv(venvs.ENVS_VARIABLE, str(tmp_path / "envs"))
    monkeypatch.setattr(venvs, "uv_binary", lambda: "/bin/uv")
    monkeypatch.setattr(venvs, "user_index_config", lambda *_: venvs.IndexConfig())
    monkeypatch.setattr(venvs, "find_interpreter", lambda *_, **__: PYTHON)
    lists: list[tuple[str, ...]] = []

    def resolve(_: str, packages: tuple[str, ...], *__: object, **___: object) -> Resolved:
        lists.append(tuple(packages))
        return ANSWERS.get(tuple(packages), Resolved("ok"))

    monkeypatch.setattr(resolving, "resolve", resolve)
    ANSWERS.clear()
    return lists


ANSWERS: dict[tuple[str, ...], Resolved] = {}


def _needs(*lists: tuple[str, ...]) -> doctor.Needs:
    sets = tuple(CellPackages(packages, (f"v={i}",)) for i, packages in enumerate(lists))
    packages = tuple(p for each in lists for p in each)
    return doctor.Needs(packages=packages, package_sets=sets, runner="venv", cells=len(lists))


def _built(root: Path, request: venvs.EnvRequest) -> None:
    """`request`'s environment built in `root`, under the key the run gives it."""
    folder = root / request.key()
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").touch()
    (folder / venvs.META).write_text(json.dumps({"request": request.to_dict()}))


def test_a_list_built_already_is_not_asked_of_the_index(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    # six==1.0, deleted from a private index since its environment was built: doctor failed
    # "each is an infra error, not run" of a spec whose run reuses that environment.
    ANSWERS[("six==1.0",)] = Resolved("unsatisfiable", "No solution found")
    # Keyed as the run keys it (`request_for`).
    _built(
        tmp_path / "envs",
        venvs.request_for(PYTHON, ("six==1.0",), venvs.IndexConfig(), cwd=tmp_path),
    )
    check = resolve_check(_needs(("six==1.0",), ("six==1.1",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "pass", check
    assert asked == [("six==1.1",)]
    assert "(1 of 2 built already in " in check.why, check.why


def test_a_path_entry_built_already_is_keyed_as_the_run_keys_it(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    # doctor keyed a `./mypkg` list by its own copy of the recipe: one that drifted from the
    # run's (its sources read from another folder, or not at all) asked the index of an
    # environment the run reuses as it is.
    spec_dir = tmp_path / "spec"
    (spec_dir / "mypkg").mkdir(parents=True)
    (spec_dir / "mypkg" / "pyproject.toml").write_text("[project]\nname = 'mypkg'\n")
    request = venvs.request_for(PYTHON, ("./mypkg",), venvs.IndexConfig(), cwd=spec_dir)
    assert request.sources  # keyed by the folder's files, not its text alone
    _built(tmp_path / "envs", request)
    check = resolve_check(_needs(("./mypkg",)), None, None, spec_dir)
    assert check is not None
    assert check.status == "pass", check
    assert asked == []
    assert "(1 of 1 built already in " in check.why, check.why


def test_once_the_index_did_not_answer_the_other_lists_are_not_asked(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    # Each list waited out uv's network timeouts again (up to 120 s each), the index shared.
    for version in ("1", "2", "3"):
        ANSWERS[(f"six=={version}",)] = Resolved(
            "unknown", "Connection refused", stopped="unreached"
        )
    check = resolve_check(_needs(("six==1",), ("six==2",), ("six==3",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "warn", check
    assert asked == [("six==1",)]
    assert check.why.endswith(
        "six==1 (in cell v=0): Connection refused; 2 other package lists not checked: the "
        "index did not answer"
    ), check.why
    assert check.todo.startswith("make the index reachable"), check.todo
    # An unknown answer of another kind (uv failed otherwise): the next list is still asked.
    ANSWERS[("six==1",)] = Resolved("unknown", "uv crashed")
    asked.clear()
    resolve_check(_needs(("six==1",), ("six==2",)), None, None, tmp_path)
    assert asked == [("six==1",), ("six==2",)]


def test_a_list_that_timed_out_is_not_said_to_be_the_index_not_answering(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    # A long list's resolve backtracked past 120 s: the small lists after it were "not
    # checked: the index did not answer", which no network error said; then, "not checked"
    # still, where a slow list says nothing of the others (six==2 resolves in a second).
    ANSWERS[("big==1",)] = Resolved("unknown", "uv pip compile took over 120s", stopped="timed_out")
    check = resolve_check(_needs(("big==1",), ("six==2",), ("six==3",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "warn", check
    assert asked == [("big==1",), ("six==2",), ("six==3",)]
    assert check.why.endswith("big==1 (in cell v=0): uv pip compile took over 120s"), check.why
    assert "did not answer" not in check.why
    # Nor sent after the index for a resolver that was only slow.
    assert check.todo.startswith("pin more of the long list"), check.todo


@pytest.mark.usefixtures("asked")
def test_the_todo_of_uvs_own_error_is_not_to_make_the_index_reachable(tmp_path: Path) -> None:
    # A requirement uv cannot parse was told to "make the index reachable"; and a timeout
    # beside an unreached index said "make the index reachable" twice in one todo.
    ANSWERS[("six==",)] = Resolved("unknown", "error: Failed to parse: `six==`")
    check = resolve_check(_needs(("six==",)), None, None, tmp_path)
    assert check is not None
    assert check.todo == (
        "run `uv pip compile` of that list alone in the spec's folder to see uv's error"
    ), check.todo
    ANSWERS[("big==1",)] = Resolved("unknown", "uv pip compile took over 120s", stopped="timed_out")
    ANSWERS[("six==2",)] = Resolved("unknown", "Connection refused", stopped="unreached")
    check = resolve_check(_needs(("big==1",), ("six==2",)), None, None, tmp_path)
    assert check is not None
    assert check.todo.count("make the index reachable") == 1, check.todo
    assert check.todo.startswith(
        "pin more of the long list (`uv pip compile` of it alone "
        "shows where it backtracks); or make the index reachable ("
    ), check.todo
    # A timeout alone still names a silent index.
    ANSWERS.pop(("six==2",))
    check = resolve_check(_needs(("big==1",)), None, None, tmp_path)
    assert check is not None
    assert check.todo.endswith("or make the index reachable if it is silent"), check.todo


def test_after_two_timeouts_the_other_lists_are_not_asked(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    for big in ("big==1", "big==2"):
        ANSWERS[(big,)] = Resolved("unknown", "uv pip compile took over 120s", stopped="timed_out")
    needs = _needs(("big==1",), ("six==2",), ("big==2",), ("six==3",), ("six==4",))
    check = resolve_check(needs, None, None, tmp_path)
    assert check is not None
    assert asked == [("big==1",), ("six==2",), ("big==2",)]
    assert check.why.endswith(
        "big==2 (in cell v=2): uv pip compile took over 120s; 2 other package lists not "
        "checked: uv pip compile of 2 earlier lists timed out"
    ), check.why


def test_without_uv_it_is_said_once(
    asked: list[tuple[str, ...]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each list/python group said "...: uv is not installed: pip install uv" again.
    def missing() -> str:
        raise venvs.EnvBuildError("uv is not installed: pip install uv")

    monkeypatch.setattr(venvs, "uv_binary", missing)
    check = resolve_check(_needs(("six==1",), ("six==2",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "warn"
    assert check.why.count("uv is not installed") == 1, check.why
    assert asked == []


def test_a_build_stopped_while_it_ran_is_told_it_was_slow(
    asked: list[tuple[str, ...]], tmp_path: Path
) -> None:
    # A wheel whose build ran past the resolve's 120 s was told to "run `uv pip compile` of
    # that list alone ... to see uv's error": there was no error, the build was slow.
    said = "building big==1 from its sdist was still running after 120 s, where doctor stops"
    ANSWERS[("big==1",)] = Resolved("unknown", said, slow=True)
    check = resolve_check(_needs(("big==1",), ("six==2",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "warn", check
    assert asked == [("big==1",), ("six==2",)]  # (slow is no silent index: six==2 asked)
    assert check.why.endswith(f"big==1 (in cell v=0): {said}"), check.why
    assert check.todo.startswith("nothing is known wrong: run the spec once with --runner venv")
    assert "uv pip compile" not in check.todo, check.todo


@pytest.mark.usefixtures("asked")
def test_the_other_cells_are_said_to_run_only_where_nothing_is_unknown_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "the other cells run" was said beside a list that could not be checked (its index did
    # not answer: its cells may well fail too), and of cells whose interpreter is not found.
    ANSWERS[("six==9",)] = Resolved("unsatisfiable", "No solution found for six==9")
    failing = (
        "six==9 cannot be installed (in cell v=0): No solution found for six==9: on the venv "
        "runner, every such cell is an infra error (its venv cannot be built), not run"
    )
    check = resolve_check(_needs(("six==9",), ("six==2",)), None, None, tmp_path)
    assert check is not None
    assert check.why == failing + "; the other cells run", check.why
    ANSWERS[("six==2",)] = Resolved("unknown", "Connection refused", stopped="unreached")
    check = resolve_check(_needs(("six==9",), ("six==2",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "fail", check
    assert check.why == (
        failing + " (and could not check six==2 (in cell v=1): Connection refused)"
    ), check.why
    # v=1's python is not found here (venv-python fails): its cell is not run either.
    ANSWERS.pop(("six==2",))

    def find(wanted: str | None, *_: object, **__: object) -> venvs.Interpreter:
        if wanted == "3.99":
            raise venvs.EnvBuildError("no Python 3.99 on this machine")
        return PYTHON

    monkeypatch.setattr(venvs, "find_interpreter", find)
    needs = dataclasses.replace(
        _needs(("six==9",), ("six==2",)), pythons=((None, ("v=0",)), ("3.99", ("v=1",)))
    )
    check = resolve_check(needs, None, None, tmp_path)
    assert check is not None
    assert check.why == failing, check.why


@pytest.mark.usefixtures("asked")
def test_a_path_entry_keyed_in_part_is_said_built_at_each_doctor(tmp_path: Path) -> None:
    # A ./mypkg keyed in part is never recorded (Built.add): it was rebuilt at every doctor,
    # minutes of a compiled package, with no word why.
    ANSWERS[("./mypkg",)] = Resolved("ok", built=("./mypkg",), unrecorded=("./mypkg",))
    check = resolve_check(_needs(("./mypkg",)), None, None, tmp_path)
    assert check is not None
    assert check.status == "pass", check
    assert (
        "./mypkg built as the venv build builds it (no wheel here: an sdist, a path) into uv's "
        "cache; nothing installed; ./mypkg not recorded: keyed in part (more files than the "
        "venv runner reads, or a subfolder it cannot read: `run` says which), so each doctor "
        "builds it again)"
    ) in check.why, check.why
