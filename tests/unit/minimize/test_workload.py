"""A workload's numbers, lowered by the flaky-aware search: the fields, floors and the reducer.

No processes: a candidate "runs" by a rule over its values that stands for the harness
(a worker fault at validation step 4 fires only with a worker, enough steps, and items
for that step), with a seeded coin for a flaky failure.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence
from dataclasses import replace

from reprospec.core.jsontypes import JsonValue
from reprospec.isolation.candidates import AttemptKind
from reprospec.minimize import workload
from reprospec.minimize.program import Program
from reprospec.minimize.search import Probe, Settings, minimize
from reprospec.minimize.workload import reduce_fields, reduce_workload, workload_fields
from tests.support.cli import ROOT

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
    at_floor: dict[str, JsonValue] = {
        "workload": {
            "phases": [{"name": "train", "steps": 1}],
            "model": {"params": {"hidden": 1, "layers": 0}},
        }
    }
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


def _fields(document: dict[str, JsonValue]) -> dict[str, tuple[int, int]]:
    return {f.path: (f.value, f.floor) for f in workload_fields(document)}


def test_a_built_in_models_defaulted_params_are_fields_at_the_harness_default() -> None:
    # `params` absent: the mlp is 64 wide and 2 deep all the same (the harness's defaults).
    mlp: dict[str, JsonValue] = {"workload": {"model": {"builtin": "mlp"}}}
    assert _fields(mlp) == {
        "workload.model.params.hidden": (64, 1),
        "workload.model.params.layers": (2, 0),
    }
    found = {f.path: f for f in workload_fields(mlp)}
    assert found["workload.model.params.hidden"].default
    # Written values are not defaults; `params` as an expression cannot be --set into.
    written: dict[str, JsonValue] = {"workload": {"model": {"params": {"hidden": 8}}}}
    assert not {f.path: f for f in workload_fields(written)}["workload.model.params.hidden"].default
    expression: dict[str, JsonValue] = {"workload": {"model": {"params": "${{ matrix.p }}"}}}
    assert _fields(expression) == {}
    entrypoint: dict[str, JsonValue] = {"workload": {"model": {"entrypoint": "m:build"}}}
    assert _fields(entrypoint) == {}


def test_d_model_moves_in_whole_heads() -> None:
    document: dict[str, JsonValue] = {
        "workload": {
            "model": {"builtin": "transformer-decoder", "params": {"d_model": 32, "nhead": 4}}
        }
    }
    found = {f.path: f for f in workload_fields(document)}
    d_model = found["workload.model.params.d_model"]
    assert (d_model.value, d_model.floor, d_model.step) == (32, 4, 4)
    assert found["workload.model.params.layers"].default  # 2 unless written
    original = Program((), (), fields=(("workload.model.params.d_model", 32),), workload=True)
    tried: list[int] = []
    reducer = reduce_fields(original, {d_model.path: 4}, {d_model.path: 4})
    candidate = next(reducer)
    try:
        while True:
            value = dict(candidate.fields)[d_model.path]
            tried.append(value)
            candidate = reducer.send(value >= 12)  # fails from 12 (three heads) up
    except StopIteration as stop:
        smallest = stop.value
    assert dict(smallest.fields)[d_model.path] == 12
    # The floor, then halving, every one a multiple of 4; the second round (the first
    # changed it) proposes 4 and 8 again, which the search answers from its cache.
    assert tried == [4, 16, 8, 12, 4, 8]
    # nhead's default (2) sets the step when the spec does not write it; a d_model that is
    # no multiple of it (an invalid spec) or an nhead written as an expression: no field.
    default_heads: dict[str, JsonValue] = {
        "workload": {"model": {"builtin": "transformer-decoder", "params": {"d_model": 16}}}
    }
    assert {f.path: f.step for f in workload_fields(default_heads)}[d_model.path] == 2
    invalid: list[dict[str, JsonValue]] = [
        {"d_model": 30, "nhead": 4},
        {"d_model": 32, "nhead": "${{ matrix.h }}"},
    ]
    for params in invalid:
        odd: dict[str, JsonValue] = {
            "workload": {"model": {"builtin": "transformer-decoder", "params": params}}
        }
        assert d_model.path not in _fields(odd)


def test_world_size_keeps_the_rank_a_fault_names() -> None:
    def ddp(faults: list[JsonValue]) -> dict[str, JsonValue]:
        return {
            "workload": {
                "model": {"params": {"hidden": 1, "layers": 0}},
                "distributed": {"world_size": 4, "backend": "gloo"},
                "faults": faults,
            }
        }

    ranked = ddp([{"kind": "skip_allreduce", "rank": 2, "at": {"phase": "train", "step": 3}}])
    assert _fields(ranked) == {"workload.distributed.world_size": (4, 3)}
    assert _fields(ddp([{"kind": "segfault"}])) == {"workload.distributed.world_size": (4, 1)}


def test_the_dataset_keeps_the_batches_of_a_fault_in_a_phase_without_steps() -> None:
    # Validation refuses a step one pass never reaches: 8 steps of 4 items need 29,
    # 2 ranks twice that; with drop_last every batch whole.
    def one_pass(loader: dict[str, JsonValue], world: int | None = None) -> dict[str, JsonValue]:
        section: dict[str, JsonValue] = {
            "data": {"dataset": {"size": 256}, "loader": loader},
            "phases": [{"name": "train", "steps": 2}, {"name": "val"}],
            "faults": [{"kind": "segfault", "at": {"phase": "val", "step": 8}}],
        }
        if world is not None:
            section["distributed"] = {"world_size": world}
        return {"workload": section}

    floor = {f.path: f.floor for f in workload_fields(one_pass({"batch_size": 4}))}
    assert floor["workload.data.dataset.size"] == 29
    floor = {f.path: f.floor for f in workload_fields(one_pass({"batch_size": 4}, 2))}
    assert floor["workload.data.dataset.size"] == 57
    drop = one_pass({"batch_size": 4, "drop_last": True})
    assert {f.path: f.floor for f in workload_fields(drop)}["workload.data.dataset.size"] == 32


def test_the_environment_variables_the_failure_does_not_need_are_dropped() -> None:
    env = (("KEEP_ME", "1"), ("NOISE_A", "x"), ("NOISE_B", "y"), ("NOISE_C", "z"))
    original = Program((), (), env=env, fields=(("workload.data.loader.batch_size", 8),))
    original = replace(original, workload=True)

    def run(program: Program, probe: Probe) -> tuple[Sequence[AttemptKind], str]:
        fails = "KEEP_ME" in dict(program.env)
        return (["match"] if fails else ["pass"] * probe.attempts), ""

    result = minimize(
        original,
        run,
        Settings(budget=200),
        lambda p: reduce_workload(p, {"workload.data.loader.batch_size": 1}),
    )
    assert result.status == "minimized", result.message
    assert result.program.env == (("KEEP_ME", "1"),)
    assert result.program.fields == (("workload.data.loader.batch_size", 1),)


def test_the_model_defaults_are_the_harness_s_own() -> None:
    """workload.py's table of the built-in models' defaults is a copy (the engine never
    imports the harness, whose models.py imports torch): read from models.py's source."""
    source = (ROOT / "reprospec/harness/reprospec_harness/models.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    assigned = {
        node.target.id: node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value
    }
    builtins = assigned["BUILTINS"]
    minimums = ast.literal_eval(assigned["MINIMUMS"])
    assert isinstance(builtins, ast.Dict)
    defaults: dict[str, dict[str, object]] = {}
    for key, value in zip(builtins.keys, builtins.values, strict=True):
        assert isinstance(key, ast.Constant)
        assert isinstance(value, ast.Name)
        (init,) = [f for f in classes[value.id].body if getattr(f, "name", "") == "__init__"]
        assert isinstance(init, ast.FunctionDef)
        named = init.args.args[-len(init.args.defaults) :]
        defaults[str(key.value)] = {
            a.arg: ast.literal_eval(d) for a, d in zip(named, init.args.defaults, strict=True)
        }
    assert set(workload._MODEL_PARAMS) <= set(defaults)
    for builtin, params in workload._MODEL_PARAMS.items():
        for name, (default, least) in params.items():
            assert defaults[builtin][name] == default, (builtin, name)
            assert least >= minimums[name], (builtin, name)
    assert defaults["transformer-decoder"]["nhead"] == workload._NHEAD
