"""A distributed attempt's ranks as its outcome's detail names them (outcome/ranks.py)."""

from __future__ import annotations

from reprospec.core.jsontypes import JsonObject
from reprospec.outcome import ranks


def test_a_hung_child_that_is_a_rank_is_named_by_its_rank() -> None:
    # The hang of specs/distributed-skipped-allreduce.yaml read `child pid 569 was in
    # training.py:327 in _step, ...; rank 1 is out of step: rank 0 at train step 3 ...`:
    # which rank pid 569 was, the report did not say (its events did).
    stuck: JsonObject = {
        "event": "ranks_stuck",
        "diverged": [1],
        "ranks": [
            {"rank": 0, "pid": 569, "phase": "train", "step": 3, "stage": "backward"},
            {"rank": 1, "pid": 570, "phase": "train", "step": 4, "stage": "sync"},
        ],
    }
    report = ranks.from_events([{"event": "distributed", "world_size": 2}, stuck])
    assert report is not None
    detail = "child pid 569 was in training.py:327 in _step, where the main process only waits"
    assert ranks.named_child(detail, 569, report) == (
        "rank 0 (child pid 569) was in training.py:327 in _step, where the main process only waits"
    )
    # A child that is no rank (a rank's DataLoader worker) stays a child.
    assert ranks.named_child("child pid 571 was in x.py:1", 571, report) == (
        "child pid 571 was in x.py:1"
    )


def test_a_crashed_child_that_is_a_rank_is_named_once_in_parentheses() -> None:
    # A rank's crash: its detail names the child's command in parentheses after its pid,
    # and the rank put in parentheses before them read `rank 0 (child pid 4242)
    # (./train.py) died of SIGSEGV`.
    stuck: JsonObject = {
        "event": "ranks_stuck",
        "ranks": [
            {"rank": 0, "pid": 4242, "phase": "train", "step": 3},
            {"rank": 1, "pid": 4243, "phase": "train", "step": 3},
        ],
    }
    report = ranks.from_events([{"event": "distributed", "world_size": 2}, stuck])
    assert report is not None
    detail = (
        "exit status 1; child pid 4242 (./train.py --x) died of SIGSEGV (Segmentation fault), "
        "reaped by the engine"
    )
    assert ranks.named_child(detail, 4242, report) == (
        "exit status 1; rank 0's process, child pid 4242 (./train.py --x) died of SIGSEGV "
        "(Segmentation fault), reaped by the engine"
    )
