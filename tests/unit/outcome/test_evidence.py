"""An attempt's evidence summed up in one pass: events, and the output tail that prefers stderr."""

from __future__ import annotations

from pathlib import Path

from reprospec.outcome.evidence import Events, Evidence, read_log


def test_events_are_summed_up_in_one_pass() -> None:
    events = Events.of(
        [
            {"event": "step", "phase": "train", "step": 3},
            {"event": "worker_busy", "pid": 7, "index": 2},
            {"event": "worker_busy", "pid": 7, "index": 3},
            {"event": "worker_free", "pid": 7, "index": 2},
            {"event": "worker_exit", "pid": 8, "exit_code": 1},  # no signal: not a death we name
            {"event": "phase", "phase": "validation"},
            {"event": "infra_error"},
        ]
    )
    assert (events.phase, events.step) == ("validation", None)
    assert [e["index"] for e in events.busy] == [3]
    assert events.worker_exit is None
    assert events.infra_error == "infrastructure error"


def test_output_tail_and_excerpt_prefer_stderr(tmp_path: Path) -> None:
    evidence = Evidence(stdout="progress 1\nprogress 2\n", stderr="\n\n")
    assert evidence.excerpt() == "progress 1\nprogress 2"  # stderr says nothing
    evidence = Evidence(stdout="step 9\n", stderr="Traceback (most recent call last):\nEOFError\n")
    assert evidence.excerpt().endswith("EOFError")
    assert evidence.output_tail() == "Traceback (most recent call last):\nEOFError\n\nstep 9\n"
    assert Evidence().excerpt() == ""
    assert Evidence().output_tail() == ""
    assert read_log(tmp_path / "missing.log") == ""
