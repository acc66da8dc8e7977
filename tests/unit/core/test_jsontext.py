"""`indented`: json.dumps(indent=2)'s exact text, at a fraction of its Python calls."""

from __future__ import annotations

import enum
import json
import math
import sys
from collections.abc import Callable
from types import FrameType

import pytest

from reprospec.core.jsontext import indented
from reprospec.store.resultsjson import cell_json, cell_to_dict
from tests.support.runs import segfault_matrix


class _Level(int, enum.Enum):
    HIGH = 1


class _Name(str):
    pass


def test_it_writes_what_json_dumps_writes_value_for_value() -> None:
    values: list[object] = [
        {},
        [],
        (),
        "x",
        3,
        -0.0,
        {"a": [], "b": {}, "c": (1, [2, {"d": ()}]), "e": [[[]]]},
        [1, 2.5, 1e300, math.nan, math.inf, -math.inf, True, False, None],
        # Escapes as json's own: quotes, a backslash, controls, non-ASCII kept as it is.
        ['é \u202e \x00 \x1b " \\ \n \t', {"ké\n": "v"}],
        # What it leaves to json.dumps: keys that are not strings, subclasses.
        {1: 2, None: 3, 2.5: 4, False: 5},
        {"level": _Level.HIGH, "name": _Name("n")},
    ]
    for value in values:
        assert indented(value) == json.dumps(value, indent=2, ensure_ascii=False), value
    for cell in segfault_matrix().cells:
        data = cell_to_dict(cell)
        assert indented(data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_a_cycle_is_refused_as_json_refuses_it() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        indented(loop)


def _python_calls(work: Callable[[], object]) -> int:
    """How many Python functions (and generator resumptions) `work` entered: a count no
    load on the machine moves, where its time would be the machine's."""
    calls = 0

    def count(_frame: FrameType, event: str, _arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_a_cells_entry_costs_a_few_calls_per_value_not_a_generator_chain() -> None:
    # results.json's entry of a cell is encoded on the run's main thread as the cell ends:
    # json.dumps(indent=2) resumed a chain of generators per token, about 470 Python calls
    # an attempt of `true` (the dearest thing the main thread did per attempt).
    cell = max(segfault_matrix().cells, key=lambda c: len(c.attempts))
    data = cell_to_dict(cell)
    values = _values(data)
    made = _python_calls(lambda: cell_json(cell)) - _python_calls(lambda: cell_to_dict(cell))
    assert made <= values + 10, (made, values)
    assert cell_json(cell) == "\n    " + json.dumps(data, indent=2, ensure_ascii=False).replace(
        "\n", "\n    "
    )


def _values(value: object) -> int:
    """How many values `value` holds, itself included."""
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return 1 + sum(_values(v) for v in value)
    return 1


def test_a_loaded_specs_frozen_values_are_written_without_json_dumps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A matrix value of a loaded spec (`opt: [[1, 2], {a: 1}]`) is a FrozenList or a
    # FrozenDict, copied into the cell's entry as it is: it sent the whole cell to json.dumps.
    from reprospec.core.frozenjson import freeze

    value = {"matrix": dict(freeze({"opt": [[1, 2], {"a": 1}], "o": {"k": [True]}}))}
    expected = json.dumps(value, indent=2, ensure_ascii=False)

    def refused(*_: object, **__: object) -> str:
        raise AssertionError("fell back on json.dumps")

    monkeypatch.setattr(json, "dumps", refused)
    assert indented(value) == expected
