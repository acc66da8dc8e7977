"""A loaded spec's document and a result's mappings are read-only, deep (core/frozenjson.py):
what `load_spec` checked is what plans and runs."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from reprospec.api import plan_run
from reprospec.core.frozenjson import FrozenDict, FrozenList, freeze, thaw
from reprospec.core.inputs import Spec
from reprospec.core.results import RunResult
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: frozen
matrix:
  w: [1, 2]
command: python -c "print(${{ matrix.w }})"
expect:
  outcome: pass
"""


def _spec(tmp_path: Path) -> Spec:
    path = tmp_path / "s.yaml"
    path.write_text(SPEC)
    return load_spec(path)


def test_a_loaded_specs_document_cannot_be_edited_after_it_was_checked(tmp_path: Path) -> None:
    # A plain dict: `spec.document["command"] = [...]` was planned and run unchecked.
    spec = _spec(tmp_path)
    with pytest.raises(TypeError, match="read-only"):
        spec.document["command"] = ["bogus"]  # type: ignore[index]
    matrix = spec.document["matrix"]
    assert isinstance(matrix, dict)
    with pytest.raises(TypeError, match="read-only"):
        matrix["w"] = [3]
    axis = matrix["w"]
    assert isinstance(axis, list)
    with pytest.raises(TypeError, match="read-only"):
        axis.append(3)
    with pytest.raises(TypeError, match="read-only"):
        spec.locations[("name",)] = (1, 1)  # type: ignore[index]
    # The checked document is what plans.
    assert [cell.id for cell in plan_run(spec).cells] == ["w=1", "w=2"]


def test_a_spec_hashes_and_pickles(tmp_path: Path) -> None:
    # hash(spec) raised "unhashable type: 'dict'".
    spec, again = _spec(tmp_path), _spec(tmp_path)
    assert hash(spec) == hash(again)
    assert {spec: 1}[again] == 1
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert isinstance(pickle.loads(pickle.dumps(spec)).document, FrozenDict)


def test_a_copy_is_the_callers_to_change_and_json_reads_it_as_before(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    deep = copy.deepcopy(spec.document)
    assert type(deep) is dict
    assert type(deep["matrix"]) is dict
    deep["matrix"]["w"].append(3)
    assert spec.document["matrix"] == {"w": [1, 2]}
    shallow = dict(spec.document)
    shallow["name"] = "other"
    assert spec.name == "frozen"
    assert spec.document["name"] == "frozen"
    assert json.loads(json.dumps(spec.document)) == thaw(spec.document)


def test_freeze_is_deep_and_thaw_undoes_it() -> None:
    value = {"a": [1, {"b": [2]}], "c": (3, [4])}
    frozen = freeze(value)
    assert isinstance(frozen, FrozenDict)
    assert isinstance(frozen["a"], FrozenList)
    assert isinstance(frozen["a"][1]["b"], FrozenList)
    assert isinstance(frozen["c"][1], FrozenList)
    assert frozen == value
    assert hash(frozen) == hash(freeze(value))
    assert freeze(frozen) is frozen
    plain = thaw(frozen)
    assert plain == value
    assert type(plain["a"]) is list
    assert type(plain["a"][1]) is dict


def test_a_results_mappings_are_read_only() -> None:
    run = RunResult(
        run_id="r",
        spec_name="s",
        spec_path="s.yaml",
        spec_text="",
        runner="local",
        started="",
        finished="",
        environment={"python": {"version": "3.11"}},
        cells=(),
        options={"repeat": 2},
        paths={"/x": "<venv>"},
    )
    for mapping in (run.environment, run.options, run.paths, run.summary):
        with pytest.raises(TypeError, match="read-only"):
            mapping["x"] = 1  # type: ignore[index]
    inner = run.environment["python"]
    assert isinstance(inner, dict)
    with pytest.raises(TypeError, match="read-only"):
        inner["version"] = "3.12"
    assert run.summary == {
        "cells": 0,
        "reproduced": 0,
        "not_reproduced": 0,
        "undecided": 0,
        "infra_error": 0,
    }
