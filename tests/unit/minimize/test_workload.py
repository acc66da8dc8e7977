"""A workload's numbers, lowered by the flaky-aware search: the fields, floors and the reducer.

No processes: a candidate "runs" by a rule over its values that stands for the harness
(a worker fault at validation step 4 fires only with a worker, enough steps, and items
for that step), with a seeded coin for a flaky failure.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from reprospec.core.jsontypes import JsonValue
from reprospec.isolation.candidates import AttemptKind
from reprospec.minimize.program import Program
from reprospec.minimize.search import Probe, Settings, minimize
from reprospec.minimize.workload import reduce_fields, workload_fields

DOCUMENT: dict[str, JsonValue] = {
    "workload": {
        "model": {"builtin": "cnn", "params": {"channels": 8}},
        "data": {
            "dataset": {"builtin": "synthetic", "size": 256},
            "loader": {"batch_size": 16, "num_workers": 2, "pin_memory": "${{ matrix.pin }}"},
        },
        "phases": [{"name": "train", "steps": 4}, {"name": "validation", "steps": 10}],
        "faults": [
            {"kind": "segfault", "where": "worker", "at": {"phase": "validation", "step": 7}}
        ],
    },
    "expect": {"outcome": "crash", "phase": "validation", "step": 7},
}


def test_the_fields_and_their_floors_come_from_the_spec() -> None:
    found = {f.path: (f.value, f.floor) for f in workload_fields(DOCUMENT)}
    assert found == {
        "workload.phases.0.steps": (4, 1),
        "workload.phases.1.steps": (10, 7),  # the fault and the expect are at step 7
        "workload.data.loader.batch_size": (16, 1),
        "workload.data.dataset.size": (256, 1),
        "workload.model.params.channels": (8, 1),
        "workload.data.loader.num_workers": (2, 1),  # a worker fault needs a worker
    }
    # An expression is the matrix's (pin_memory here); a field at its floor has nothing to lose.
    at_floor: dict[str, JsonValue] = {"workload": {"phases": [{"name": "train", "steps": 1}]}}
    assert workload_fields(at_floor) == ()


def _fails(values: dict[str, int]) -> bool:
    """The rule the harness stands for: validation reaches step 7 with a worker, and the
    batch of that step holds an item only when the dataset is at least 3 batches long."""
    return (
        values["workload.phases.1.steps"] >= 7
        and values["workload.data.loader.num_workers"] >= 1
        and values["workload.data.dataset.size"] >= 3 * values["workload.data.loader.batch_size"]
    )


def test_each_field_goes_to_the_smallest_value_that_still_fails_under_a_flaky_failure() -> None:
    fields = workload_fields(DOCUMENT)
    original = Program((), (), fields=tuple((f.path, f.value) for f in fields))
    floors = {f.path: f.floor for f in fields}
    coin = random.Random(3)
    runs: list[dict[str, int]] = []

    def run(program: Program, probe: Probe) -> tuple[Sequence[AttemptKind], str]:
        values = dict(program.fields)
        runs.append(values)
        if probe.role == "passing":
            return ["pass"] * probe.attempts, ""
        kinds: list[AttemptKind] = []
        for _ in range(probe.attempts):
            kinds.append("match" if _fails(values) and coin.random() < 0.6 else "pass")
            if kinds[-1] == "match" and probe.stop_after:
                break
        return kinds, ""

    result = minimize(
        original, run, Settings(budget=400, passing=1), lambda p: reduce_fields(p, floors)
    )
    assert result.status == "minimized", result.message
    after = dict(result.program.fields)
    assert _fails(after)
    assert after["workload.phases.0.steps"] == 1
    assert after["workload.phases.1.steps"] == 7
    assert after["workload.model.params.channels"] == 1
    assert after["workload.data.loader.num_workers"] == 1
    # batch and size move together: the smallest failing pair under this order of the search
    assert after["workload.data.dataset.size"] <= 3 * 16
    assert after["workload.data.loader.batch_size"] <= 16
    # No candidate below a floor the spec implies was ever run.
    assert all(
        r["workload.phases.1.steps"] >= 7 and r["workload.data.loader.num_workers"] >= 1
        for r in runs
    )
    assert result.rate.matched > 0
