"""An attempt's evidence summed up in one pass: events, and the output tail that prefers stderr."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core import capped
from reprospec.core.logtext import TAIL_LINES
from reprospec.core.results import Execution
from reprospec.outcome.evidence import Event, Events, Evidence, ends_with_warning, read_log


def test_events_are_summed_up_in_one_pass() -> None:
    events = Events.of(
        [
            {"event": "step", "phase": "train", "step": 3},
            {"event": "worker_busy", "pid": 7, "index": 2},
            {"event": "worker_busy", "pid": 7, "index": 3},
            {"event": "worker_free", "pid": 7, "index": 2},
            {"event": "worker_exit", "pid": 8, "exit_code": 0},  # exited under its loader
            {"event": "teardown", "pids": [9, "10", True, 11]},  # the harness's own kills
            {"event": "phase", "phase": "validation"},
            {"event": "infra_error"},
        ]
    )
    assert (events.phase, events.step) == ("validation", None)
    assert [e["index"] for e in events.busy] == [3]
    assert events.worker_exit == {"event": "worker_exit", "pid": 8, "exit_code": 0}
    assert events.killed == frozenset({9, 11})
    assert events.infra_error == "infrastructure error"
    # A worker that died of a signal is named before one that exited with a code.
    died: Event = {"event": "worker_exit", "pid": 7, "signal": "SIGSEGV"}
    exited: Event = {"event": "worker_exit", "pid": 8, "exit_code": 7}
    assert Events.of([died, exited]).worker_exit == died


def test_output_tail_and_excerpt_prefer_stderr(tmp_path: Path) -> None:
    evidence = Evidence(stdout="progress 1\nprogress 2\n", stderr="\n\n")
    assert evidence.excerpt() == "progress 1\nprogress 2"  # stderr says nothing
    evidence = Evidence(stdout="step 9\n", stderr="Traceback (most recent call last):\nEOFError\n")
    assert evidence.excerpt().endswith("EOFError")
    assert evidence.output_tail() == "Traceback (most recent call last):\nEOFError\n\nstep 9\n"
    assert Evidence().excerpt() == ""
    assert Evidence().output_tail() == ""
    assert read_log(tmp_path / "missing.log") == ""


def test_a_hangs_excerpt_has_the_tail_of_both_streams() -> None:
    """What a hung program printed last, on either stream, says where it hung."""
    progress = "".join(f"train step {n}\n" for n in range(30))
    evidence = Evidence(stdout=progress, stderr="x.py:2: UserWarning: not writable\n")
    assert evidence.excerpt() == "x.py:2: UserWarning: not writable"  # a failure: stderr's
    both = evidence.excerpt(hang=True)
    stderr, stdout = both.split("\n\n")
    assert stderr == "==> stderr.log <==\nx.py:2: UserWarning: not writable"
    lines = stdout.split("\n")
    assert lines[:2] == ["==> stdout.log <==", "… (15 earlier lines omitted)"]
    assert lines[-1] == "train step 29"
    assert len(lines) == 2 + TAIL_LINES
    # One stream with content: its excerpt, as for any failure.
    assert Evidence(stdout=progress).excerpt(hang=True) == Evidence(stdout=progress).excerpt()


def test_the_ranks_are_read_from_a_distributed_workloads_events_only(tmp_path: Path) -> None:
    # The ranks' reader is imported for an attempt that said it is distributed (evidence.py):
    # its report comes from those events, and none without them.
    from tests.support.plans import execution_in

    events = tmp_path / "events.jsonl"
    steps = '{"event": "step", "rank": 0, "phase": "train", "step": 4}\n'
    events.write_text(steps)
    assert Evidence.read(execution_in(tmp_path, 1, harness=True)).ranks is None
    events.write_text('{"event": "distributed", "world_size": 2, "backend": "gloo"}\n' + steps)
    ranks = Evidence.read(execution_in(tmp_path, 1, harness=True)).ranks
    assert ranks is not None
    assert (ranks.world_size, ranks.backend) == (2, "gloo")
    assert [(p.rank, p.step) for p in ranks.positions] == [(0, 4)]
    # A command's events are not believed about ranks (only the harness writes them).
    assert Evidence.read(execution_in(tmp_path, 1, harness=False)).ranks is None


def test_what_the_folder_lacks_is_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One listing of the attempt's folder: a silent pass's logs and native stacks, missing
    # from it, are not opened; what is there is read, and a log elsewhere is opened as ever.
    (tmp_path / "events.jsonl").write_bytes(b'{"event": "phase", "phase": "train"}\n')
    (tmp_path / "stderr.log").write_text("boom\n")
    opened: list[str] = []
    head_tail = capped.head_tail

    def spy(path: Path | str, head: int, tail: int) -> bytes:
        opened.append(Path(path).name)
        return head_tail(path, head, tail)

    monkeypatch.setattr(capped, "head_tail", spy)
    execution = Execution(
        cell_id="c",
        attempt=1,
        log_dir=tmp_path,
        returncode=0,
        timed_out=False,
        duration_s=0.1,
        started="s",
        finished="f",
        stdout_path=tmp_path / "stdout.log",
        stderr_path=tmp_path / "stderr.log",
        events_path=tmp_path / "events.jsonl",
    )
    evidence = Evidence.read(execution)
    assert (evidence.stdout, evidence.stderr, evidence.events.phase) == ("", "boom\n", "train")
    assert (evidence.native, evidence.gpu) == (None, None)
    assert sorted(opened) == ["events.jsonl", "stderr.log"]
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "stdout.log").write_text("out\n")
    moved = replace(execution, stdout_path=elsewhere / "stdout.log")
    assert Evidence.read(moved).stdout == "out\n"


def test_a_marker_redrawn_at_its_step_is_no_later_sign_of_progress() -> None:
    # A bar stuck at 7/10 redrawing its clock made the timeout's detail "last
    # progress 0.0 s before the timeout: still progressing?" and advise a longer timeout.
    def bar(t: float, step: int | None, phase: str | None = None) -> Event:
        return {"t": t, "event": "marker", "phase": phase, "step": step, "line": "bar"}

    events = Events.of([bar(10.0, 6), bar(11.0, 7), bar(12.0, 7), bar(19.0, 7)])
    assert (events.step, events.last_t) == (7, 11.0)
    assert Events.of([bar(11.0, 7), bar(12.0, 7, "eval")]).last_t == 12.0  # another phase
    assert Events.of([bar(11.0, None), bar(12.0, None)]).last_t == 12.0  # no step to compare


def test_a_warning_at_the_end_of_a_log_is_told_with_or_without_its_source_line() -> None:
    header = "/w/app.py:3: UserWarning: numpy is missing"
    assert ends_with_warning(f"{header}\n  warnings.warn('numpy is missing')\n\n")
    assert ends_with_warning(f"step 7\n{header}\n")  # no source line (python -c)
    assert ends_with_warning(f"{header}\n  torch.device('cpu')\n")
    assert not ends_with_warning(f"{header}\n  warnings.warn('x')\nfatal: no data\n")
    assert not ends_with_warning("  indented output\n")
    assert not ends_with_warning("")
