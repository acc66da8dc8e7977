"""The rank supervisor's reading of its ranks' exits (no torch, no real ranks)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import cast

import pytest

from reprospec.harness import HARNESS_ROOT

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import distributed


class Rank:
    """A rank whose exit code is read from a script: one value per reading, the last kept."""

    def __init__(self, readings: list[int | None], sentinel: int) -> None:
        self.readings = readings
        self.sentinel = sentinel
        self.pid = None  # never started for real: nothing to kill

    @property
    def exitcode(self) -> int | None:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]

    def join(self) -> None:
        pass


def watch(ranks: list[Rank], tmp_path: Path) -> int:
    """What the supervisor's watch ends the job with, for these ranks."""
    slots = [0] * (distributed.SLOT * len(ranks))
    watched = distributed._Ranks(cast(list[BaseProcess], ranks), slots, ["train"])
    code: int = distributed._watch(watched, str(tmp_path))
    return code


@pytest.fixture
def sentinels() -> Iterator[list[int]]:
    pipes = [os.pipe() for _ in range(2)]  # never written: a wait on them times out
    yield [read for read, _ in pipes]
    for pipe in pipes:
        for fd in pipe:
            os.close(fd)


def test_ranks_that_all_end_between_two_readings_end_as_the_first_failure(
    sentinels: list[int], tmp_path: Path
) -> None:
    # Both ranks are running at the first two readings and have both ended at the third:
    # rank 1 with exit code 3, rank 0 cleanly. Read once for "failed" and again for "all
    # ended", the job was a pass (CI saw a segfaulted rank judged `pass`).
    ranks = [Rank([None, None, 0], sentinels[0]), Rank([None, None, 3], sentinels[1])]
    assert watch(ranks, tmp_path) == 3


def test_ranks_that_all_end_cleanly_end_the_job_cleanly(
    sentinels: list[int], tmp_path: Path
) -> None:
    ranks = [Rank([None, 0], sentinels[0]), Rank([None, None, 0], sentinels[1])]
    assert watch(ranks, tmp_path) == 0


def test_a_fault_its_when_leaves_out_is_not_held_to_the_cells_ranks() -> None:
    # dd6.yaml's cell exit-rank1-workers: world_size 2, the rank-2 hang switched off there.
    workload = {
        "distributed": {"world_size": 2},
        "faults": [
            {"kind": "exit", "rank": 1, "when": True},
            {"kind": "hang", "rank": 2, "when": False},
            {"kind": "hang", "rank": 2, "when": "no"},
        ],
    }
    assert distributed.settings(workload) == distributed.Settings(2, "gloo")


def test_an_armed_fault_of_a_rank_the_cell_lacks_is_still_refused() -> None:
    workload = {"distributed": {"world_size": 2}, "faults": [{"kind": "hang", "rank": 2}]}
    with pytest.raises(distributed.ConfigError, match=r"faults\[0\]\.rank: rank 2 does not"):
        distributed.settings(workload)


@pytest.mark.parametrize(
    ("world_size", "matrix", "message"),
    [
        ("1000000000000", "", "s.yaml:8:29: workload.distributed.world_size: 1000000000000 ranks"),
        (
            "'${{ matrix.n }}'",
            "matrix:\n  n: [2, 300]\n",
            "300 ranks; at most 256 are allowed (docs/limits.md) (in cell n=300)",
        ),
    ],
)
def test_a_world_size_past_the_bound_is_a_located_spec_error(
    tmp_path: Path, world_size: str, matrix: str, message: str
) -> None:
    # Every rank is a process: a stranger's world_size of 10**12 was valid, and its run
    # forked torch processes until the attempt's process limit, past the machine's memory.
    import reprospec
    from reprospec.errors import SpecError

    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"reprospec: 1\nname: s\n{matrix}environment: {{device: cpu}}\nworkload:\n"
        "  model: {builtin: mlp}\n"
        "  data: {dataset: {builtin: synthetic, size: 64, shape: [16], classes: 4}}\n"
        "  phases: [{name: train, steps: 2}]\n"
        f"  distributed: {{world_size: {world_size}}}\n"
    )
    with pytest.raises(SpecError) as error:
        reprospec.load_spec(spec)
    assert any(message in problem for problem in error.value.problems), error.value.problems


class Started:
    """A rank as `_report_stuck` reads it: a pid only."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


def stuck_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: list[tuple[int, str]]
) -> dict[str, object]:
    """The `ranks_stuck` event of ranks each at (train step, stage)."""
    import json

    from reprospec_harness import events

    path = tmp_path / "events.jsonl"
    monkeypatch.setenv("REPROSPEC_EVENTS", str(path))
    monkeypatch.setattr(events, "_fd", None)
    slots = [0] * (distributed.SLOT * len(where))
    for rank, (step, stage) in enumerate(where):
        base = rank * distributed.SLOT
        slots[base + distributed._SEQ] = 1
        slots[base + distributed._PHASE] = 0
        slots[base + distributed._STEP] = step
        slots[base + distributed._STAGE] = distributed.STAGES.index(stage)
    processes = cast(list[BaseProcess], [Started(100 + r) for r in range(len(where))])
    distributed._report_stuck(distributed._Ranks(processes, slots, ["train"]), 2.0)
    with contextlib.suppress(OSError):
        os.close(cast(int, events._fd))
    event: dict[str, object] = json.loads(path.read_text().splitlines()[-1])
    return event


def test_a_hang_is_located_at_the_stage_of_the_rank_that_stopped_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rank 1's DataLoader worker hangs at train step 3: rank 1 sits in `data` while rank 0
    # went on to the step's gradient all-reduce and waits there. The hang was located at
    # rank 0's stage, `train:3 (backward)`, where nothing but the wait happened.
    event = stuck_event(tmp_path, monkeypatch, [(3, "backward"), (3, "data")])
    assert (event["phase"], event["step"], event["stage"]) == ("train", 3, "data")
    assert event["diverged"] == []
    # A rank a step ahead (it left out a collective) is out of step; the hang is at the
    # step of the rank behind, as before.
    event = stuck_event(tmp_path, monkeypatch, [(3, "backward"), (4, "sync")])
    assert (event["step"], event["stage"], event["diverged"]) == (3, "backward", [1])


def test_a_rank_that_exited_0_under_its_peers_is_named_with_the_first_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sentinels: list[int]
) -> None:
    # Rank 1 returned (exit 0) at train step 3; rank 0 then raised gloo's "Connection reset
    # by peer". The outcome named rank 0's RuntimeError only: the rank that left was
    # nowhere in it. A rank that reached the final barrier did not leave anyone.
    import json

    from reprospec_harness import events

    from reprospec.outcome import ranks as outcome_ranks

    path = tmp_path / "events.jsonl"
    monkeypatch.setenv("REPROSPEC_EVENTS", str(path))
    monkeypatch.setattr(events, "_fd", None)
    where = [(3, "sync", 1), (3, "start", 0), (6, "finish", 0)]
    slots = [0] * (distributed.SLOT * len(where))
    for rank, (step, stage, _) in enumerate(where):
        base = rank * distributed.SLOT
        slots[base + distributed._STEP] = step
        slots[base + distributed._STAGE] = distributed.STAGES.index(stage)
    slots[distributed._FAILED] = 1000
    processes = [Rank([code], sentinels[0]) for _, _, code in where]
    watched = distributed._Ranks(cast(list[BaseProcess], processes), slots, ["train"])
    assert distributed._first_failure(watched, [(0, 1)], str(tmp_path)) == 1
    with contextlib.suppress(OSError):
        os.close(cast(int, events._fd))
    event = json.loads(path.read_text().splitlines()[-1])
    assert [p["rank"] for p in event["left"]] == [1]
    report = outcome_ranks.from_events([{"event": "distributed", "world_size": 3}, event])
    assert report is not None
    assert outcome_ranks.describe(report) == (
        "rank 0 exited with code 1 first, at train step 3 (step agreement); rank 1 had "
        "exited with code 0 before the job ended, at train step 3 (step start)"
    )
