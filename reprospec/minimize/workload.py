"""Step 4 of `minimize` for workloads: each number of the workload to its smallest failing value.

A workload spec has no program to cut: the harness is fixed, and what makes a repro
smaller is its sizes (fewer steps to reach the failure, fewer items, smaller batches,
a narrower model, fewer workers and ranks) and its environment variables. The sizes are
the `Program.fields` of the candidate, each an integer of the spec named by its `--set`
path (`workload.phases.1.steps`): a literal one, or a built-in model's parameter the spec
leaves at its default (an mlp's `hidden` is 64 unless the spec says so, and 64 is as
much the repro's size as a written 64). A value written as an expression
(`${{ matrix.x }}`) is the matrix's, and the settings step (isolate) owns it.

`reduce_workload(program, floors)` is a reducer as `source.reduce` is (the same
protocol: yield a candidate, be sent whether it still fails the same way), so the
flaky-aware search of `search.py` judges its candidates unchanged. It first drops the
environment variables the failure does not need (the same ddmin as a command's), then
lowers the fields: per field it tries the floor first (most sizes do not matter at
all), then halves the gap between the largest value seen clean and the smallest seen
failing; a second round runs when the first changed anything, since a smaller batch
can make a smaller dataset fail. A field with a `step` moves in multiples of it: a
transformer's `d_model` must stay a multiple of `nhead`.

A floor is the smallest legal value the spec itself implies, so that no budget goes on
a candidate the oracle must reject: a phase where a fault or the expect is located at
step N keeps N steps (steps count from 1), a worker fault keeps one worker, a worker
fault at dataset index I keeps I + 1 items, a fault at step N of a phase without `steps`
keeps the items of N batches, a fault of rank R keeps R + 1 ranks. What the
spec does not say (a fault at a step of "the first phase that reaches it") is left to the
oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue, array, integer, obj
from reprospec.minimize.program import Program
from reprospec.minimize.source import Reducer, reduce_env

# Built-in model params that only size the model: (the harness's default, the smallest
# legal value), as docs/spec-format.md's "model and loss" and the harness's models.py
# give them. transformer-decoder's d_model also moves in multiples of nhead (below).
_MODEL_PARAMS: dict[str, dict[str, tuple[int, int]]] = {
    "mlp": {"hidden": (64, 1), "layers": (2, 0)},
    "cnn": {"channels": (16, 1)},
    "transformer-decoder": {"d_model": (32, 1), "layers": (2, 1)},
}
_NHEAD = 2  # transformer-decoder's default nhead
ROUNDS = 2  # a second round only when the first changed a field


@frozen
class Field:
    """One number of the workload that minimize may lower, and how far."""

    path: str  # the `--set` path: workload.data.loader.batch_size
    value: int
    floor: int
    why: str = ""  # what sets the floor when the spec does ("a worker fault")
    step: int = 1  # legal values are multiples of it (d_model: of nhead)
    default: bool = False  # not written in the spec: the harness's default value

    def to_dict(self) -> JsonObject:
        return {
            "field": self.path,
            "value": self.value,
            "floor": self.floor,
            "why": self.why,
            "step": self.step,
            "default": self.default,
        }


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
        floor = max([0, *known]) + 1
        passes = _one_pass_floor(workload, faults)
        if passes is not None and passes[0] > floor:
            floor, why = passes
        found.append(Field("workload.data.dataset.size", size, floor, why))
    found += _model_fields(obj(workload.get("model")))
    workers = integer(loader.get("num_workers"))
    if workers is not None:
        needs = bool(worker_faults) or expect.get("where") == "worker"
        why = "a worker fault" if needs else ""
        found.append(Field("workload.data.loader.num_workers", workers, int(needs), why))
    world = integer(obj(workload.get("distributed")).get("world_size"))
    if world is not None:
        ranks = [integer(f.get("rank")) for f in faults]
        known = [r for r in ranks if r is not None]
        why = f"a fault of rank {max(known)}" if known else ""
        found.append(Field("workload.distributed.world_size", world, max([0, *known]) + 1, why))
    return tuple(f for f in found if f.value > f.floor)


def _one_pass_floor(
    workload: Mapping[str, JsonValue], faults: list[JsonObject]
) -> tuple[int, str] | None:
    """The fewest items that still give a fault's step in a phase without `steps` (one pass
    of the data), and why; validation refuses a fault whose step such a phase never reaches
    (spec/checks/cells.py), so a smaller dataset is no candidate. Counted at the spec's own
    batch size and world size: minimize only lowers them, which only adds batches per rank.
    None when no fault needs it or a number is not a literal."""
    phases = [obj(p) for p in array(workload.get("phases"))]
    loader = obj(obj(workload.get("data")).get("loader"))
    batch = integer(loader.get("batch_size", 1))
    distributed = workload.get("distributed")
    world = integer(obj(distributed).get("world_size")) if distributed is not None else 1
    if batch is None or world is None or not isinstance(loader.get("drop_last", False), bool):
        return None
    best: tuple[int, str] | None = None
    for fault in faults:
        at = obj(fault.get("at"))
        step, name = integer(at.get("step")), at.get("phase")
        chosen = [p for p in phases if name is None or p.get("name") == name]
        if step is None or not chosen:
            continue
        given = [integer(p["steps"]) for p in chosen if p.get("steps") is not None]
        if len(given) == len(chosen) or any(n is None or n >= step for n in given):
            continue  # a phase with steps reaches it (or the step check refused the spec)
        # DistributedSampler shares out ceil(size / world) items a rank (floor with drop_last).
        items = step * batch * world if loader.get("drop_last") else (step - 1) * batch * world + 1
        if best is None or items > best[0]:
            where = f"phase {name}" if name is not None else "the first phase that reaches it"
            best = (items, f"a fault at step {step} of {where} (one pass of the data)")
    return best


def _model_fields(model: Mapping[str, JsonValue]) -> list[Field]:
    """A built-in model's width and depth, written or left at the harness's default.

    A default is a field only where `--set` can write it: the model is a known built-in
    named literally and `params` is a mapping or absent (not an expression).
    """
    if "entrypoint" in model:
        return []
    builtin = model.get("builtin", "mlp")
    written = model.get("params")
    if not isinstance(builtin, str) or not isinstance(written, (dict, type(None))):
        return []
    params = obj(written)
    step = 1
    if builtin == "transformer-decoder":
        # d_model must stay a multiple of nhead: it moves in whole heads. An nhead written
        # as an expression leaves d_model alone (its multiples are not known here).
        nhead = integer(params.get("nhead", _NHEAD))
        step = nhead if nhead is not None and nhead > 0 else 0
    found: list[Field] = []
    for name, (default, least) in _MODEL_PARAMS.get(builtin, {}).items():
        value = integer(params[name]) if name in params else default
        if value is None or (name == "d_model" and (not step or value % step)):
            continue
        if name == "d_model":
            why = f"a multiple of nhead ({step})"
            found.append(Field(f"workload.model.params.{name}", value, step, why, step))
        else:
            found.append(Field(f"workload.model.params.{name}", value, least))
        if name not in params:
            found[-1] = replace(found[-1], why="the harness's default", default=True)
    return found


def reduce_workload(
    program: Program, floors: Mapping[str, int], steps: Mapping[str, int] | None = None
) -> Reducer:
    """The environment variables the failure does not need dropped, then the fields lowered."""
    current = yield from reduce_env(program)
    return (yield from reduce_fields(current, floors, steps))


def reduce_fields(
    program: Program, floors: Mapping[str, int], steps: Mapping[str, int] | None = None
) -> Reducer:
    """Each field from the floor up, by halving, keeping a value only when it still fails.

    The search runs in units of the field's step (a d_model of 32 with 4 heads is 8 units
    of 4), so that every candidate is a legal value.
    """
    current = program
    for _ in range(ROUNDS):
        changed = False
        for path, _value in program.fields:
            step = (steps or {}).get(path, 1)
            low = floors.get(path, 0) // step - 1  # the largest unit count known not to fail
            high = dict(current.fields)[path] // step  # the smallest known to fail
            if high <= low + 1:
                continue
            candidate = with_field(current, path, (low + 1) * step)
            if (yield candidate):
                current, changed = candidate, True
                continue
            low += 1
            while high - low > 1:
                middle = (low + high) // 2
                candidate = with_field(current, path, middle * step)
                if (yield candidate):
                    current, high, changed = candidate, middle, True
                else:
                    low = middle
        if not changed:
            break
    return current


def with_field(program: Program, path: str, value: int) -> Program:
    return replace(program, fields=tuple((p, value if p == path else v) for p, v in program.fields))


def field_overrides(program: Program) -> list[str]:
    """The `--set` list that runs the candidate's values."""
    return [f"{path}={value}" for path, value in program.fields]
