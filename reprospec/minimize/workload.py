"""Step 4 of `minimize` for workloads: each number of the workload to its smallest failing value.

A workload spec has no program to cut: the harness is fixed, and what makes a repro
smaller is its sizes (fewer steps to reach the failure, fewer items, smaller batches,
a narrower model, fewer workers). These are the `Program.fields` of the candidate,
each a literal integer of the spec named by its `--set` path
(`workload.phases.1.steps`). A value written as an expression (`${{ matrix.x }}`) is
the matrix's, and the settings step (isolate) owns it.

`reduce_fields(program, floors)` is a reducer as `source.reduce` is (the same
protocol: yield a candidate, be sent whether it still fails the same way), so the
flaky-aware search of `search.py` judges its candidates unchanged. Per field it tries
the floor first (most sizes do not matter at all), then halves the gap between the
largest value seen clean and the smallest seen failing; a second round runs when the
first changed anything, since a smaller batch can make a smaller dataset fail.

A floor is the smallest legal value the spec itself implies, so that no budget goes on
a candidate the oracle must reject: a phase where a fault or the expect is located at
step N keeps N steps (steps count from 1), a worker fault keeps one worker, a worker
fault at dataset index I keeps I + 1 items. What the spec does not say (a fault at a
step of "the first phase that reaches it") is left to the oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from reprospec.core.jsontypes import JsonObject, JsonValue, array, integer, obj
from reprospec.minimize.program import Program
from reprospec.minimize.source import Reducer

# Built-in model params that only size the model, with their smallest legal value
# (docs/spec-format.md, "model and loss"). transformer-decoder's d_model is left out:
# it must stay a multiple of nhead, which a halving search does not keep.
_MODEL_PARAMS: dict[str, dict[str, int]] = {
    "mlp": {"hidden": 1, "layers": 0},
    "cnn": {"channels": 1},
    "transformer-decoder": {"layers": 1},
}
ROUNDS = 2  # a second round only when the first changed a field


@dataclass(frozen=True)
class Field:
    """One number of the workload that minimize may lower, and how far."""

    path: str  # the `--set` path: workload.data.loader.batch_size
    value: int
    floor: int
    why: str = ""  # what sets the floor when the spec does ("a worker fault")

    def to_dict(self) -> JsonObject:
        return {"field": self.path, "value": self.value, "floor": self.floor, "why": self.why}


def workload_fields(document: Mapping[str, JsonValue]) -> tuple[Field, ...]:
    """The literal integers of `document['workload']` minimize lowers, in the search's order:
    steps first (they bound how much data is read), then batch and dataset size, the model's
    width, the workers. Only those above their floor: the others have nothing to lose."""
    workload = obj(document.get("workload"))
    expect = obj(document.get("expect"))
    faults = [obj(f) for f in array(workload.get("faults"))]
    worker_faults = [f for f in faults if f.get("where") == "worker"]
    located = [obj(f.get("at")) for f in faults]
    found: list[Field] = []
    for i, phase in enumerate(obj(p) for p in array(workload.get("phases"))):
        steps = integer(phase.get("steps"))
        if steps is None:
            continue
        name = phase.get("name")
        at = [integer(a.get("step")) for a in located if a.get("phase") == name]
        if expect.get("phase") == name:
            at.append(integer(expect.get("step")))
        floors = [s for s in at if s is not None]
        floor = max([1, *floors])
        why = f"a fault or the expect at step {floor} of {name}" if floors else ""
        found.append(Field(f"workload.phases.{i}.steps", steps, floor, why))
    data = obj(workload.get("data"))
    loader = obj(data.get("loader"))
    dataset = obj(data.get("dataset"))
    batch = integer(loader.get("batch_size"))
    if batch is not None:
        found.append(Field("workload.data.loader.batch_size", batch, 1))
    size = integer(dataset.get("size"))
    if size is not None and "entrypoint" not in dataset:
        indexes = [integer(obj(f.get("at")).get("index")) for f in worker_faults]
        known = [i for i in indexes if i is not None]
        why = f"a worker fault at index {max(known)}" if known else ""
        found.append(Field("workload.data.dataset.size", size, max([0, *known]) + 1, why))
    model = obj(workload.get("model"))
    params = obj(model.get("params"))
    builtin = str(model.get("builtin", "mlp")) if "entrypoint" not in model else ""
    for name, least in _MODEL_PARAMS.get(builtin, {}).items():
        width = integer(params.get(name))
        if width is not None:
            found.append(Field(f"workload.model.params.{name}", width, least))
    workers = integer(loader.get("num_workers"))
    if workers is not None:
        needs = bool(worker_faults) or expect.get("where") == "worker"
        why = "a worker fault" if needs else ""
        found.append(Field("workload.data.loader.num_workers", workers, int(needs), why))
    return tuple(f for f in found if f.value > f.floor)


def reduce_fields(program: Program, floors: Mapping[str, int]) -> Reducer:
    """Each field from the floor up, by halving, keeping a value only when it still fails."""
    current = program
    for _ in range(ROUNDS):
        changed = False
        for path, _value in program.fields:
            low = floors.get(path, 0) - 1  # the largest value known not to fail (none yet)
            high = dict(current.fields)[path]  # the smallest known to fail
            if high <= low + 1:
                continue
            candidate = with_field(current, path, low + 1)
            if (yield candidate):
                current, changed = candidate, True
                continue
            low += 1
            while high - low > 1:
                candidate = with_field(current, path, (low + high) // 2)
                if (yield candidate):
                    current, high, changed = candidate, (low + high) // 2, True
                else:
                    low = (low + high) // 2
        if not changed:
            break
    return current


def with_field(program: Program, path: str, value: int) -> Program:
    return replace(program, fields=tuple((p, value if p == path else v) for p, v in program.fields))


def field_overrides(program: Program) -> list[str]:
    """The `--set` list that runs the candidate's values."""
    return [f"{path}={value}" for path, value in program.fields]
