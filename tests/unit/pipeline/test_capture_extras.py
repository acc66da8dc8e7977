"""The run's environment capture and a requirement's extra (`shop[fast]`): it reads what the
run's own package check found for the cell, where that check ran, instead of asking the
interpreter again (a second probe, which each run of such a spec waited for at its end,
made in another environment than the attempts' own)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.environment import packages
from reprospec.pipeline.stages import EnvironmentCapture
from tests.support.plans import attempt_plan

LINE = "quickjson is not installed (shop[fast] requires quickjson>=2)"


class _Checked:
    """A runner whose capture names an interpreter, and whose own check of the cell found
    `lines` (None: it never checked it)."""

    name = "local"

    def __init__(self, lines: tuple[str, ...] | None) -> None:
        self.lines = lines
        self.kept: AttemptPlan | None = None

    def capture_environment(self, _plan: AttemptPlan, _log_dir: Path) -> Mapping[str, JsonValue]:
        return {"python": {"executable": "/nowhere/python3", "version": "3.11.7"}}

    def keep_package_lines(self, plan: AttemptPlan) -> None:
        self.kept = plan

    def package_lines(self, _plan: AttemptPlan) -> tuple[str, ...] | None:
        return self.lines


def _plan(tmp_path: Path) -> AttemptPlan:
    return attempt_plan("true", tmp_path, environment={"packages": ["shop[fast]"]})


def test_the_capture_reads_the_runs_own_check_and_asks_no_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def probe(python: str, *_args: object, **_kwargs: object) -> packages.Installed:
        asked.append(python)
        raise AssertionError("the interpreter was asked again")

    monkeypatch.setattr(packages, "probe_installed", probe)
    runner, plan = _Checked((LINE,)), _plan(tmp_path)
    capture = EnvironmentCapture(runner, plan, tmp_path)  # type: ignore[arg-type]
    assert runner.kept == plan  # asked to keep its attempt's lines, before any attempt ran
    environment, _ = capture.result(timeout=10)
    assert environment["environment_mismatch"] == [LINE]
    assert "environment_unjudged" not in environment
    assert asked == []


def test_an_attempt_the_run_does_not_check_is_asked_of_its_interpreter_in_the_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed run's captured attempt that ran before (`checked=False`): its check is not
    run again, so the capture's own thread asks the interpreter, as the check asks it."""
    asked: list[str] = []

    def lists(
        python: str, *_args: object, **_kwargs: object
    ) -> dict[tuple[str, ...], tuple[str, ...]]:
        asked.append(python)
        return {("shop[fast]",): (LINE,)}

    monkeypatch.setattr(packages, "lists_mismatches", lists)
    capture = EnvironmentCapture(_Checked(None), _plan(tmp_path), tmp_path, checked=False)  # type: ignore[arg-type]
    capture._thread.join(10)
    assert asked == ["/nowhere/python3"]  # in the thread, before result()
    environment, _ = capture.result(timeout=10)
    assert environment["environment_mismatch"] == [LINE]


def test_an_attempt_the_check_never_reached_is_not_judged_and_not_probed_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run stopped before the captured attempt's check (Ctrl-C before the first attempt),
    or the check refused the cell before probing: result() probed the interpreter on the
    main thread (up to a minute, past a stopped run's 5 seconds, after the runner closed
    its venv's holds). Named not judged, asking nothing."""
    asked: list[str] = []

    def lists(python: str, *_args: object, **_kwargs: object) -> object:
        asked.append(python)
        raise AssertionError("the interpreter was asked at the run's end")

    monkeypatch.setattr(packages, "lists_mismatches", lists)
    capture = EnvironmentCapture(_Checked(None), _plan(tmp_path), tmp_path)  # type: ignore[arg-type]
    capture._thread.join(10)
    environment, _ = capture.result(timeout=0.1)
    assert environment["environment_unjudged"] == ["shop[fast]"]
    assert "environment_mismatch" not in environment
    assert asked == []
