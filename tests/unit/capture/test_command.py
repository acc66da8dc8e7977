"""capture's own wording: where the spec it wrote is said to be."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.capture.command import _shown, chosen_interpreter


def test_the_spec_written_is_shown_as_typed_here_unless_far_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "a" / "b" / "c" / "d"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert _shown(here / "spec.yaml") == "spec.yaml"
    assert _shown(tmp_path / "a" / "b" / "x.yaml") == "../../x.yaml"
    # `-o /srv/x.yaml` read `../../../../srv/x.yaml`: past two folders up it is absolute.
    assert _shown(tmp_path / "x.yaml") == str(tmp_path / "x.yaml")


def test_an_interpreter_beside_the_engines_own_is_another_one(tmp_path: Path) -> None:
    # Same folder was taken for the engine's own: /usr/bin/python3.9 beside an engine of
    # /usr/bin/python3.11 was rewritten `python` and ran the engine's (review).
    ours = chosen_interpreter([sys.executable, "t.py"], None, tmp_path)
    assert ours == (("python", "t.py"), None)
    other = Path(sys.executable).parent / "python3.99"
    command, python = chosen_interpreter([str(other), "t.py"], None, tmp_path)
    assert (command, python) == (("python", "t.py"), str(other))


def test_a_worker_crashs_title_names_its_frame_and_no_step_of_the_main_loop() -> None:
    # The main loop's step (10), noticed some steps after the worker died, was in the title
    # (`SIGSEGV in a DataLoader worker at train step 10`) while `expect` said no step could
    # be expected; the frame the worker died in was in no title.
    from reprospec.capture.command import Observed, _title, expectation
    from reprospec.core.results import Outcome

    worker = Outcome(
        "crash", signal="SIGSEGV", where="worker", phase="train", step=10, signature="s"
    )
    observed = Observed(worker, 1, 1, steps=(10,), frame="__getitem__ (data.py:12)")
    expect, comments = expectation(observed)
    assert "step" not in expect
    assert comments["signal"] == "in a DataLoader worker, in __getitem__ (data.py:12)"
    assert _title(("python", "train.py"), observed, expect) == (
        "train.py: SIGSEGV in a DataLoader worker in __getitem__ (data.py:12), main loop at train"
    )
    # Where the steps were seen (three attempts at one step), the title says them as
    # `expect` does; a main process's crash keeps its step.
    again = replace(observed, matched=3, attempts=3, steps=(10, 10, 10), frame=None)
    expect, _ = expectation(again)
    assert _title(("python", "train.py"), again, expect) == (
        "train.py: SIGSEGV in a DataLoader worker, main loop at train step 10"
    )
    main = Observed(replace(worker, where="main", step=7), 1, 1, steps=(7,))
    expect, _ = expectation(main)
    assert _title(("python", "train.py"), main, expect) == "train.py: SIGSEGV at train step 7"
