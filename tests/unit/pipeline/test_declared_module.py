"""`python -m` of a module of a package the spec declares (pipeline/attempt.py, setupfail.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.results import NotRun, Outcome
from reprospec.outcome.evidence import Evidence
from reprospec.pipeline.attempt import attempt_result
from tests.support.plans import attempt_plan, execution_in

NO_ATTRS = (
    b"/venv/bin/python: Error while finding module specification for 'attrs.x' "
    b"(ModuleNotFoundError: No module named 'attrs')\n"
)


def _outcome(tmp_path: Path, packages: list[str]) -> Outcome | NotRun:
    (tmp_path / "stderr.log").write_bytes(NO_ATTRS)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    plan = attempt_plan(["python", "-m", "attrs.x"], tmp_path, environment={"packages": packages})
    execution = execution_in(tmp_path, 1)
    return attempt_result(plan, execution, Evidence.read(execution)).outcome


def test_a_declared_packages_module_missing_is_the_programs_error(tmp_path: Path) -> None:
    # attrs 21.2 has no `attrs` module (21.3 added it): what a version bisect looks for, as
    # `import attrs` in a script is. It was infra-error, and bisect refused its bad end.
    outcome = _outcome(tmp_path, ["Attrs==21.2.0"])
    assert isinstance(outcome, Outcome)
    assert outcome.kind == "error"


def test_an_undeclared_module_missing_never_started(tmp_path: Path) -> None:
    outcome = _outcome(tmp_path, ["six"])
    assert isinstance(outcome, NotRun)
    assert "no module named attrs in that interpreter" in outcome.reason


def test_under_reprospecs_own_interpreter_the_reason_leads_with_python(
    tmp_path: Path,
) -> None:
    """`python -m tlz` beside toolz, the command's `python` reprospec's own: the reason led
    with "install it there", into reprospec's interpreter, where an import of tlz is told
    "pass --python PATH" (the unchosen rule's infra-error there as well) (review)."""
    import dataclasses

    (tmp_path / "stderr.log").write_bytes(b"/x/bin/python: No module named tlz\n")
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    plan = attempt_plan(
        ["python", "-m", "tlz"], tmp_path, environment={"packages": ["toolz==0.9.0"]}
    )
    execution = dataclasses.replace(
        execution_in(tmp_path, 1),
        unchosen_python="`python` in the command ran reprospec's own interpreter /x/bin/python",
    )
    outcome = attempt_result(plan, execution, Evidence.read(execution)).outcome
    assert isinstance(outcome, NotRun)
    assert (
        "tlz in that interpreter (exit 1); `python` in the command ran reprospec's own "
        "interpreter /x/bin/python: pass --python PATH (the interpreter that has it), or "
        "--runner venv with its package in environment.packages"
    ) in outcome.reason, outcome.reason
    assert "install it there" not in outcome.reason, outcome.reason


def test_the_module_owners_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`packages_distributions` reads every installed distribution's metadata (0.1 s in a
    small venv): it ran for each attempt of a cell that ended in a ModuleNotFoundError."""
    from importlib import metadata

    from reprospec.outcome import setupfail

    calls: list[None] = []

    def owners() -> dict[str, list[str]]:
        calls.append(None)
        return {"bs4": ["beautifulsoup4"]}

    monkeypatch.setattr(metadata, "packages_distributions", owners)
    setupfail._owners_at.cache_clear()
    try:
        for _ in range(3):
            assert setupfail._of_declared("No module named 'bs4.nope'", {"beautifulsoup4"})
            assert not setupfail._of_declared("No module named 'bs4'", {"six"})
    finally:
        setupfail._owners_at.cache_clear()  # the next test reads this interpreter's own
    assert len(calls) == 1


def test_the_module_owners_are_read_again_after_an_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The map was kept for the life of the process: a notebook's `reprospec.run()` that
    installed beautifulsoup4 after a first judgement read `bs4.x` as undeclared."""
    import os
    import sys
    from importlib import metadata

    from reprospec.outcome import setupfail

    installed: dict[str, list[str]] = {}
    monkeypatch.setattr(metadata, "packages_distributions", lambda: dict(installed))
    site = tmp_path / "site-packages"
    site.mkdir()
    os.utime(site, ns=(1, 1))
    monkeypatch.setattr(sys, "path", [str(site)])
    setupfail._owners_at.cache_clear()
    try:
        assert not setupfail._of_declared("No module named 'bs4.x'", {"beautifulsoup4"})
        installed["bs4"] = ["beautifulsoup4"]
        (site / "beautifulsoup4-4.12.3.dist-info").mkdir()  # the install: the folder changes
        os.utime(site, ns=(2, 2))
        assert setupfail._of_declared("No module named 'bs4.x'", {"beautifulsoup4"})
    finally:
        setupfail._owners_at.cache_clear()


def test_a_working_folder_without_metadata_is_no_key_of_the_owners(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """sys.path's `''` (a notebook's, the pytest plugin's working folder) put that folder's
    mtime in the key: each file an attempt wrote there read the map again (review)."""
    import os
    import sys

    from reprospec.outcome import setupfail

    site = tmp_path / "site-packages"
    (site / "six-1.16.0.dist-info").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", ["", str(site)])
    before = setupfail._import_folders()
    assert [entry for entry, _ in before] == [str(site)]
    (work / "out.log").write_text("attempt 1\n")
    os.utime(work, ns=(5, 5))
    assert setupfail._import_folders() == before
    # A distribution installed there (`pip install --target .`) makes it count.
    (work / "bs4-0.0.1.dist-info").mkdir()
    assert [entry for entry, _ in setupfail._import_folders()] == ["", str(site)]


def test_an_entry_that_cannot_be_stated_keeps_its_folder_in_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A dangling `gone-1.0.dist-info` link was stat'ed under the folder's `try`: the folder
    left the key for good, and an install there never read the owners again (review)."""
    import sys

    from reprospec.outcome import setupfail

    site = tmp_path / "site-packages"
    (site / "a-1.0.dist-info").mkdir(parents=True)
    (site / "gone-1.0.dist-info").symlink_to(tmp_path / "nowhere")
    monkeypatch.setattr(sys, "path", [str(site)])
    before = setupfail._import_folders()
    assert before == (
        (
            str(site),
            (
                ("a-1.0.dist-info", (site / "a-1.0.dist-info").stat().st_mtime_ns),
                ("gone-1.0.dist-info", -1),
            ),
        ),
    )
    (site / "b-2.0.dist-info").mkdir()
    assert setupfail._import_folders() != before


def test_a_working_folder_with_an_in_place_egg_info_is_keyed_by_it_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`pip install -e .` of a setup.py project leaves `proj.egg-info` in the project: with
    that folder as sys.path's `''`, its own mtime was in the key, and each file an attempt
    wrote there read `packages_distributions` again (86 ms in reprospec's venv)."""
    import os
    import sys

    from reprospec.outcome import setupfail

    work = tmp_path / "proj"
    (work / "proj.egg-info").mkdir(parents=True)
    (work / "proj.egg-info" / "top_level.txt").write_text("proj\n")
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", [""])
    before = setupfail._import_folders()
    assert [entry for entry, _ in before] == [""]
    (work / "out.log").write_text("attempt 1\n")
    os.utime(work, ns=(5, 5))
    assert setupfail._import_folders() == before
    # Reinstalled in place: setuptools' egg_info opens top_level.txt again with 'wb' (a new
    # top-level package), the folder's mtime as it was (a utime of the folder never happens).
    folder = (work / "proj.egg-info").stat().st_mtime_ns
    with (work / "proj.egg-info" / "top_level.txt").open("wb") as rewritten:
        rewritten.write(b"proj\nnewtop\n")
    os.utime(work / "proj.egg-info" / "top_level.txt", ns=(7, 7))
    assert (work / "proj.egg-info").stat().st_mtime_ns == folder
    assert setupfail._import_folders() != before
    # Or another distribution installed there.
    (work / "other-1.0.dist-info").mkdir()
    assert len(setupfail._import_folders()[0][1]) == 3


def test_a_missing_module_recorded_under_a_traceback_limit_of_zero(tmp_path: Path) -> None:
    """A program that set `sys.tracebacklimit = 0` prints, and records, its exception with
    no traceback: its own record (raised.txt) was read for one with a header, and the
    unchosen interpreter's ModuleNotFoundError was the program's `error`."""
    import dataclasses

    from reprospec.outcome.setupfail import setup_failure

    missing = "ModuleNotFoundError: No module named 'foo'\n"
    (tmp_path / "stderr.log").write_text(missing)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    execution = dataclasses.replace(
        execution_in(tmp_path, 1),
        unchosen_python="`python` in the command ran reprospec's own interpreter /x/bin/python",
    )
    evidence = dataclasses.replace(Evidence.read(execution), raised=missing)
    said = setup_failure(execution, evidence)
    assert isinstance(said, NotRun)
    assert said.reason.startswith("ModuleNotFoundError: No module named 'foo' before any progress")
