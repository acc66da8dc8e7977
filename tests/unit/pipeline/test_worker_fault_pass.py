"""A pass in which a worker fault of the spec fired says so (in-process, from its events).

A worker fault on an item of a batch the workers fetched ahead of the loop, past a phase's
last step, fired (its `fault` event) and the attempt passed with no word of it: the user
read `pass`, `not-reproduced`, as if the fault had never come.
"""

from __future__ import annotations

from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import Outcome
from reprospec.outcome.evidence import Events, Evidence
from reprospec.pipeline.attempt import passed_beside_a_worker_fault

FIRED: tuple[JsonObject, ...] = (
    {
        "event": "fault",
        "kind": "raise",
        "number": 6,
        "where": "worker",
        "worker": 0,
        "phase": "train",
        "step": 4,
        "index": 30,
    },
    # The same fault again in the next phase's fresh worker: said once.
    {
        "event": "fault",
        "kind": "raise",
        "number": 6,
        "where": "worker",
        "worker": 0,
        "phase": "validation",
        "step": 4,
        "index": 30,
    },
)


def test_a_pass_after_a_worker_fault_fired_says_where_it_fired() -> None:
    evidence = Evidence(events=Events(faults=FIRED))
    assert passed_beside_a_worker_fault(Outcome("pass", exit_code=0), evidence) == (
        "passed, but workload.faults[6] (raise) fired in DataLoader worker 0 on item 30 "
        "(train step 4): the loop never took that batch (workers fetch batches ahead of "
        "the loop, past the last step of a phase)",
    )


def test_a_failure_or_a_main_fault_says_nothing_more() -> None:
    evidence = Evidence(events=Events(faults=FIRED))
    assert passed_beside_a_worker_fault(Outcome("error", exit_code=1), evidence) == ()
    # `exit` with code 0 in the main process ends the attempt as a pass, by design.
    main: JsonObject = {"event": "fault", "kind": "exit", "number": 0, "where": "main"}
    passed = Outcome("pass", exit_code=0)
    assert passed_beside_a_worker_fault(passed, Evidence(events=Events(faults=(main,)))) == ()
