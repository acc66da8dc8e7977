"""Differences between two configurations, mixes of them, and the overrides that run a mix."""

from __future__ import annotations

import json

from reprospec.core.jsontypes import JsonValue
from reprospec.isolation.differences import (
    MISSING,
    Difference,
    Setting,
    configuration,
    differences,
    key,
    lookup,
    mix,
    overrides,
    render,
)

DOCUMENT: dict[str, JsonValue] = {
    "matrix": {"num_workers": [0, 2], "pin_memory": [False, True]},
    "workload": {
        "data": {"loader": {"batch_size": 16, "num_workers": "${{ matrix.num_workers }}"}},
        "phases": [{"name": "train", "steps": 10}, {"name": "validation", "steps": 10}],
    },
}


def test_axes_and_fields_that_differ_in_a_stable_order() -> None:
    passing: dict[str, Setting] = {
        "matrix.num_workers": 0,
        "matrix.pin_memory": False,
        "run.timeout": "30s",
    }
    failing: dict[str, Setting] = {
        "matrix.num_workers": 2,
        "matrix.pin_memory": True,
        "run.timeout": "30s",
    }
    failing["workload.seed"] = 3
    passing["workload.seed"] = MISSING
    diffs = differences(passing, failing)
    assert [d.path for d in diffs] == ["matrix.num_workers", "matrix.pin_memory", "workload.seed"]
    assert diffs[0] == Difference("matrix.num_workers", 0, 2)
    assert [d.describe() for d in diffs] == ["num_workers=2", "pin_memory=true", "workload.seed=3"]
    assert diffs[2].base is MISSING


def test_true_and_one_are_different_values() -> None:
    assert len(differences({"matrix.x": 1}, {"matrix.x": True})) == 1
    assert differences({"matrix.x": [1, 2]}, {"matrix.x": [1, 2]}) == ()


def test_a_side_keeps_the_spec_value_where_only_the_other_sets_it() -> None:
    sets = {"workload.data.loader.batch_size": 2, "workload.seed": 1}
    failing = configuration(DOCUMENT, {"num_workers": 2}, sets)
    passing = configuration(DOCUMENT, {"num_workers": 0}, {}, paths=sets)
    assert passing["workload.data.loader.batch_size"] == 16
    assert passing["workload.seed"] is MISSING
    diffs = differences(passing, failing)
    assert [d.path for d in diffs] == [
        "matrix.num_workers",
        "workload.data.loader.batch_size",
        "workload.seed",
    ]


def test_a_mix_applies_the_chosen_differences_only() -> None:
    passing: dict[str, Setting] = {"matrix.a": False, "matrix.b": False, "x.y": 1}
    failing: dict[str, Setting] = {"matrix.a": True, "matrix.b": True, "x.y": MISSING}
    diffs = differences(passing, failing)
    assert mix(passing, diffs, [1]) == {"matrix.a": False, "matrix.b": True, "x.y": 1}
    assert mix(passing, diffs, [2]) == {"matrix.a": False, "matrix.b": False}
    assert mix(passing, diffs, range(len(diffs))) == {"matrix.a": True, "matrix.b": True}


def test_overrides_make_one_cell_with_the_mixed_values() -> None:
    config: dict[str, Setting] = {
        "matrix.num_workers": 2,
        "matrix.pin_memory": False,
        "workload.data.loader.batch_size": 16,  # as the spec has it: no override
        "workload.data.loader.num_workers": 2,
        "workload.phases.1.steps": 3,
        "workload.seed": MISSING,  # absent in the spec too: nothing to delete
    }
    sets = overrides(config, DOCUMENT)
    assert sets == (
        "workload.data.loader.num_workers=2",
        "workload.phases.1.steps=3",
        'matrix={"num_workers": [2], "pin_memory": [false]}',
    )
    # JSON is YAML: each value reads back as itself.
    assert json.loads(sets[-1].partition("=")[2]) == {"num_workers": [2], "pin_memory": [False]}


def test_a_key_only_include_brings_is_null_in_a_cell_without_it() -> None:
    # The failing cell has `note` (an include entry brings it), the passing one has not:
    # a mix without it ran a one-cell matrix with no `note`, where `${{ matrix.note }}` is
    # an unknown axis (a spec error halfway through the search), and a side given
    # `~matrix.note` (MISSING) was no JSON value (an internal error).
    document: dict[str, JsonValue] = {
        "matrix": {"fused": [0, 1], "include": [{"fused": 1, "note": "extra"}]},
        "command": "run ${{ matrix.fused }} ${{ matrix.note }}",
    }
    matrix = json.dumps({"fused": [0], "note": [None]})
    assert overrides({"matrix.fused": 0}, document) == (f"matrix={matrix}",)
    assert overrides({"matrix.fused": 0, "matrix.note": MISSING}, document) == (f"matrix={matrix}",)
    kept = json.dumps({"fused": [1], "note": ["extra"]})
    assert overrides({"matrix.fused": 1, "matrix.note": "extra"}, document) == (f"matrix={kept}",)


def test_an_unset_field_is_deleted() -> None:
    assert overrides({"workload.data.loader.batch_size": MISSING}, DOCUMENT) == (
        "~workload.data.loader.batch_size",
        "~matrix",
    )


def test_lookup_and_render() -> None:
    assert lookup(DOCUMENT, "workload.phases.1.name") == "validation"
    assert lookup(DOCUMENT, "workload.phases.7.name") is MISSING
    assert lookup(DOCUMENT, "nope.deeper") is MISSING
    values: list[JsonValue] = [True, None, 2, "fork", [1, 2]]
    assert [render(v) for v in values] == [
        "true",
        "null",
        "2",
        "fork",
        "[1, 2]",
    ]


def test_keys_are_stable_and_tell_unset_apart() -> None:
    a = key({"b": 1, "a": True})
    assert a == key({"a": True, "b": 1})
    assert key({"a": MISSING}) != key({"a": None})


def test_the_passing_side_of_a_variable_unset_when_it_fails_is_named() -> None:
    # isolate said "crashes when LOG_LEVEL unset; without it, it passes", where it passes
    # with LOG_LEVEL=debug.
    from reprospec.isolation.differences import MISSING, Difference

    unset = Difference("environment.env.LOG_LEVEL", "debug", MISSING)
    assert unset.describe() == "environment.env.LOG_LEVEL unset"
    assert unset.describe_base() == "environment.env.LOG_LEVEL=debug"
    added = Difference("matrix.c", MISSING, True)
    assert added.describe_base() == "c unset"
    assert Difference("matrix.c", False, True).describe_base() == "c=false"


def test_an_empty_or_spaced_string_value_is_quoted_as_one_types_it() -> None:
    # isolate said "with par=, it passes" of an empty string, as if the value were left out
    # .
    from reprospec.isolation.differences import Difference, render

    assert Difference("matrix.par", "", "x").describe_base() == "par=''"
    assert render("a b") == "'a b'"
    assert render("fork") == "fork"
