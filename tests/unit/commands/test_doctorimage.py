"""`doctor SPEC --runner docker`: the host's checks made for the docker runner, where no image
of the spec is here yet (nothing asked of a container: no process)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

import pytest

from reprospec import doctor
from reprospec.commands.doctorimage import image_checks
from reprospec.doctor.needs import CellPackages, check_spec_environment

if TYPE_CHECKING:
    from pathlib import Path

    from reprospec.core.inputs import AttemptPlan

NOT_HERE = "the image is not here yet (built at the first run): checked inside it once it is"
# The host's spec-environment of a spec of python 3.10 on a 3.11 machine, as doctor made it.
HOST = doctor.Check(
    "spec-environment",
    "warn",
    "the interpreter is python 3.11.7; the spec names 3.10",
    "run with --python PATH of a matching interpreter",
)


def test_an_image_not_here_yet_says_nothing_of_the_hosts_interpreter() -> None:
    # It kept the host's `the interpreter is python 3.11.7; the spec names 3.10` and its
    # advice of --python, which the docker runner refuses (exit 2).
    six = CellPackages(("six==1.16.0",), ("default",))
    needs = doctor.Needs(python="3.10", packages=six.packages, package_sets=(six,), runner="docker")
    (check,) = image_checks([HOST], needs, [], "s.yaml", None, find_links=None)
    assert (check.name, check.status, check.why) == ("spec-environment", "skipped", NOT_HERE)
    # What the runner refuses of any image is said all the same.
    mine = CellPackages(("six", "./mypkg"), ("default",))
    refused = replace(needs, packages=mine.packages, package_sets=(mine,))
    (check,) = image_checks([HOST], refused, [], "s.yaml", None, find_links=None)
    assert check.status == "fail"
    assert check.why.startswith("environment.packages './mypkg': a path on this machine")
    assert check.why.endswith(
        ": on the docker runner every cell that names it is an infra error, not run"
    )
    assert "python 3.11.7" not in check.why


def test_the_engine_alone_resolves_no_spec_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `doctor --runner docker` with no spec resolved `Path("")` once the engine answered: in
    # a working folder since removed, FileNotFoundError, a traceback (review).
    from reprospec.commands.doctor import _docker_checks
    from reprospec.runners.docker import engine

    monkeypatch.setattr(engine, "connect", lambda **_: object())
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    (check,) = _docker_checks((), "", find_links=None)
    assert (check.name, check.status) == ("docker", "pass")


def test_the_docker_runners_python_mismatch_advises_no_python_flag() -> None:
    # Made in an image of 3.11 for a spec of 3.10: `-> run with --python PATH`, which
    # `run --runner docker` refuses.
    needs = doctor.Needs(python="3.10", runner="docker")
    check = check_spec_environment({"python": {"version": "3.11.7"}}, needs)
    assert check.status == "warn"
    assert "--python" not in check.todo
    assert check.todo.startswith("name an image of the spec's python (environment.image")
    local = check_spec_environment(
        {"python": {"version": "3.11.7"}}, replace(needs, runner="local")
    )
    assert local.todo.startswith("run with --python PATH of a matching interpreter, or with")


def test_an_image_not_here_beside_one_here_is_said_for_each_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With two images, one here, the checks were made in the one here and nothing said the
    # other's cells were not checked: neither made nor skipped.
    from reprospec.commands import doctorimage

    def made(*_: object, **__: object) -> dict[str, list[doctor.Check]]:
        return {
            "torch": [doctor.Check("torch", "pass", "in image a:1: torch 2.13.0")],
            "native-stacks": [doctor.Check("native-stacks", "pass", "gdb runs in image a:1")],
        }

    monkeypatch.setattr(doctorimage, "_made_inside", made)
    host = [
        doctor.Check("torch", "pass", "torch 2.13.0 (the host's)"),
        doctor.Check("native-stacks", "skipped", ""),
    ]
    plan = cast("AttemptPlan", None)  # (asked of nothing: _made_inside is the fake's)
    checks = image_checks(
        host,
        doctor.Needs(runner="docker"),
        [("a:1", plan)],
        "s.yaml",
        None,
        ["b:2"],
        find_links=None,
    )
    assert [(c.name, c.status, c.why) for c in checks] == [
        ("torch", "pass", "in image a:1: torch 2.13.0"),
        ("torch", "skipped", "image b:2 is not here: checked in it once it is"),
        ("native-stacks", "pass", "gdb runs in image a:1"),
        ("native-stacks", "skipped", "image b:2 is not here: checked in it once it is"),
    ]


def test_a_cell_whose_image_cannot_be_made_is_said_not_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its plan was dropped (`except InfraError: continue`): its cells neither checked nor
    # said, and the header named the other image alone as checked.
    from types import SimpleNamespace

    from reprospec.commands import doctorimage
    from reprospec.errors import InfraError
    from reprospec.runners.docker import engine, image

    def recipe_for(environment: str, **_: object) -> object:
        if environment == "broken":
            raise InfraError("no Dockerfile: ./nope/Dockerfile")
        return SimpleNamespace(tag="a:1")

    monkeypatch.setattr(engine, "connect", lambda **_: object())
    monkeypatch.setattr(image, "recipe_for", recipe_for)
    monkeypatch.setattr(image, "image_present", lambda _client, _tag: True)
    plans = [
        SimpleNamespace(environment=env, cell=SimpleNamespace(id=cell))
        for env, cell in (("ok", "a"), ("broken", "b"), ("broken", "c"))
    ]
    here, missing, unmade = doctorimage.present_images(
        cast("list[AttemptPlan]", plans), "s.yaml", find_links=None
    )
    assert [tag for tag, _ in here] == ["a:1"]
    assert missing == []
    # Each cell one reason stopped is named: c, with b's reason, was neither checked nor
    # said (review).
    assert unmade == ["cells b, c (no Dockerfile: ./nope/Dockerfile)"]

    def made(*_: object, **__: object) -> dict[str, list[doctor.Check]]:
        return {"torch": [doctor.Check("torch", "pass", "in image a:1: torch 2.13.0")]}

    monkeypatch.setattr(doctorimage, "_made_inside", made)
    host = [doctor.Check("torch", "pass", "torch 2.13.0 (the host's)")]
    checks = image_checks(
        host, doctor.Needs(runner="docker"), here, "s.yaml", None, [], unmade, find_links=None
    )
    assert [(c.status, c.why) for c in checks] == [
        ("pass", "in image a:1: torch 2.13.0"),
        ("skipped", "the image of cells b, c (no Dockerfile: ./nope/Dockerfile) cannot be made"),
    ]


def test_no_image_here_and_none_can_be_made_is_said_not_built_at_the_first_run() -> None:
    # Every cell's image unmade (a one-cell spec whose Dockerfile is missing): each check
    # said "not here yet (built at the first run)", which the first run cannot do (review).
    host = [doctor.Check("torch", "pass", "torch 2.13.0 (the host's)")]
    unmade = ["cell b (no Dockerfile: ./nope/Dockerfile)"]
    checks = image_checks(
        host, doctor.Needs(runner="docker"), [], "s.yaml", None, [], unmade, find_links=None
    )
    assert [(c.status, c.why) for c in checks] == [
        ("skipped", "the image of cell b (no Dockerfile: ./nope/Dockerfile) cannot be made"),
    ]
    # One not here yet too: both are said.
    checks = image_checks(
        host, doctor.Needs(runner="docker"), [], "s.yaml", None, ["a:1"], unmade, find_links=None
    )
    assert checks[0].why == (
        "the image is not here yet (built at the first run): checked inside it once it is;"
        " the image of cell b (no Dockerfile: ./nope/Dockerfile) cannot be made"
    )


def test_the_header_names_the_images_checked_and_those_not() -> None:
    # The header's three-level conditional in commands/doctor.py, now doctorimage.header,
    # in each of its cases (its wording of an unmade image is image_checks').
    from reprospec.commands.doctorimage import header

    plan = cast("AttemptPlan", object())
    unmade = ["cell b (no Dockerfile: ./nope/Dockerfile)"]
    runs = "the docker runner's attempts run in"
    assert header([("a:1", plan)], ["c:1"], unmade, "s.yaml") == (
        f" ({runs} image a:1: checked in a container of it; image c:1 not here: not checked;"
        " the image of cell b (no Dockerfile: ./nope/Dockerfile) cannot be made: not checked)"
    )
    assert header([("a:1", plan)], [], [], "s.yaml") == (
        f" ({runs} image a:1: checked in a container of it)"
    )
    assert header([], ["c:1"], [], "s.yaml") == f" ({runs} the cells' images, none here yet)"
    assert header([], [], [], "s.yaml") == f" ({runs} the cells' images, none here yet)"
    assert header([], [], unmade, "s.yaml") == (
        f" ({runs} the cells' images; the image of cell b (no Dockerfile: ./nope/Dockerfile)"
        " cannot be made)"
    )
    assert header([], ["c:1"], unmade, "s.yaml") == (
        f" ({runs} the cells' images, none here yet; the image of cell b (no Dockerfile:"
        " ./nope/Dockerfile) cannot be made)"
    )
    assert header([], [], [], None) == f" ({runs} the cells' images)"
