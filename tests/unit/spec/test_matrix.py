"""matrix.py: GitHub Actions strategy.matrix semantics, cell ids, -m selection."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.expr import same
from reprospec.core.inputs import Cell, Spec
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.errors import SpecError, UsageError
from reprospec.spec.matrix import (
    CellView,
    MatrixCells,
    MatrixError,
    cell_id,
    count_cells,
    expand,
    expand_matrix,
    format_value,
    iter_cells,
    matrix_cells,
    position_of,
    render_value,
    select,
)


def matrices(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [dict(c.matrix) for c in expand_matrix(section)]


def test_no_matrix_is_one_default_cell() -> None:
    cells = expand_matrix(None)
    assert [(c.id, c.index, dict(c.matrix)) for c in cells] == [("default", 0, {})]


def test_product_first_axis_slowest() -> None:
    # GitHub's documented order for version x os.
    section: JsonObject = {"version": [10, 12, 14], "os": ["ubuntu-latest", "windows-latest"]}
    assert matrices(section) == [
        {"version": v, "os": o} for v in (10, 12, 14) for o in ("ubuntu-latest", "windows-latest")
    ]
    assert [c.index for c in expand_matrix(section)] == list(range(6))


def test_github_include_example() -> None:
    # docs.github.com "Expanding or adding matrix configurations": the exact documented result.
    section: JsonObject = {
        "fruit": ["apple", "pear"],
        "animal": ["cat", "dog"],
        "include": [
            {"color": "green"},
            {"color": "pink", "animal": "cat"},
            {"fruit": "apple", "shape": "circle"},
            {"fruit": "banana"},
            {"fruit": "banana", "animal": "cat"},
        ],
    }
    assert matrices(section) == [
        {"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
        {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
        {"fruit": "pear", "animal": "cat", "color": "pink"},
        {"fruit": "pear", "animal": "dog", "color": "green"},
        {"fruit": "banana"},
        {"fruit": "banana", "animal": "cat"},
    ]


def test_github_exclude_example_partial_match() -> None:
    # docs.github.com "Excluding matrix configurations": 12 - 2 - 2 = 8 jobs.
    section: JsonObject = {
        "os": ["macos-latest", "windows-latest"],
        "version": [12, 14, 16],
        "environment": ["staging", "production"],
        "exclude": [
            {"os": "macos-latest", "version": 12, "environment": "production"},
            {"os": "windows-latest", "version": 16},
        ],
    }
    cells = matrices(section)
    assert len(cells) == 9
    assert {"os": "macos-latest", "version": 12, "environment": "production"} not in cells
    assert not any(c["os"] == "windows-latest" and c["version"] == 16 for c in cells)


def test_exclude_applies_before_include() -> None:
    section: JsonObject = {
        "a": [1, 2],
        "exclude": [{"a": 2}],
        "include": [{"a": 2, "b": "x"}],
    }
    # a=2 was excluded, so the include cannot extend it and becomes a new cell.
    assert matrices(section) == [{"a": 1}, {"a": 2, "b": "x"}]


def test_exclude_compares_mappings_by_equality() -> None:
    section: JsonObject = {
        "cfg": [{"lr": 0.1}, {"lr": 1}],
        "exclude": [{"cfg": {"lr": 1.0}}],
    }
    assert matrices(section) == [{"cfg": {"lr": 0.1}}]


def test_exclude_never_confuses_booleans_and_numbers() -> None:
    section: JsonObject = {"n": [0, 1], "flag": [False, True], "exclude": [{"flag": 1}]}
    assert len(matrices(section)) == 4


def test_include_may_overwrite_values_added_by_earlier_includes() -> None:
    section: JsonObject = {
        "a": [1, 2],
        "include": [{"extra": "x"}, {"a": 2, "extra": "y"}],
    }
    assert matrices(section) == [{"a": 1, "extra": "x"}, {"a": 2, "extra": "y"}]


def test_include_matching_an_existing_cell_adds_nothing() -> None:
    assert matrices({"a": [1, 2], "include": [{"a": 1}]}) == [{"a": 1}, {"a": 2}]


def test_include_only_matrix() -> None:
    section: JsonObject = {"include": [{"python": "3.10"}, {"python": "3.11", "torch": "2.5"}]}
    cells = expand_matrix(section)
    assert [c.id for c in cells] == ["python=3.10", "python=3.11,torch=2.5"]


def test_cell_ids_in_axis_order_with_include_keys_last() -> None:
    section: JsonObject = {
        "num_workers": [0, 2],
        "pin_memory": [False, True],
        "include": [{"num_workers": 2, "note": "workers", "pin_memory": True}],
    }
    assert [c.id for c in expand_matrix(section)] == [
        "num_workers=0,pin_memory=false",
        "num_workers=0,pin_memory=true",
        "num_workers=2,pin_memory=false",
        "num_workers=2,pin_memory=true,note=workers",
    ]
    assert list(expand_matrix(section)[3].matrix) == ["num_workers", "pin_memory", "note"]


def test_render_value_canonical() -> None:
    assert render_value(True) == "true"
    assert render_value(None) == "null"
    assert render_value(1.5) == "1.5"
    assert render_value({"lr": 0.1, "b": [1, 2]}) == '{"lr":0.1,"b":[1,2]}'
    assert cell_id({}) == "default"
    assert format_value is render_value


@pytest.mark.parametrize(
    ("section", "message", "path"),
    [
        ({}, "the matrix is empty: give at least one axis or an include entry", ("matrix",)),
        ({"exclude": [{"a": 1}]}, "the matrix is empty", ("matrix",)),
        ({"a": []}, "axis 'a' must be a non-empty list of values", ("matrix", "a")),
        ({"a": 3}, "axis 'a' must be a non-empty list of values", ("matrix", "a")),
        ({"a": [1], "exclude": [{"a": 1}]}, "every combination is excluded", ("matrix",)),
        ({"a": [1], "exclude": [{"b": 1}]}, "exclude key 'b'", ("matrix", "exclude", 0, "b")),
        ({"a": [1, 1]}, "cells 1 and 2 have the same id 'a=1'", ("matrix",)),
        ({"a": [True, "true"]}, "the same id 'a=true'", ("matrix",)),
        # One number two ways: two cells, but `-m a=2`, `when:` and `==` took both.
        (
            {"a": [2, True, 2.0]},
            "axis 'a' holds 2 and 2.0, one number to -m, when: and expressions but two cells",
            ("matrix", "a", 2),
        ),
    ],
)
def test_matrix_errors(section: dict[str, Any], message: str, path: tuple[Any, ...]) -> None:
    with pytest.raises(MatrixError) as caught:
        expand_matrix(section)
    assert message in caught.value.message
    assert caught.value.path == path


def test_expand_spec_locates_errors() -> None:
    spec = Spec(
        path=Path("s.yaml"),
        name="s",
        document={"matrix": {"a": [1, 1]}},
        source_text="",
        locations={("matrix",): (4, 3)},
    )
    with pytest.raises(SpecError) as caught:
        expand(spec)
    assert caught.value.problems[0].startswith("s.yaml:4:3: matrix: cells 1 and 2 have the same id")


CELLS = expand_matrix(
    {
        "num_workers": [0, 2, 4],
        "pin_memory": [False, True],
        "python": ["3.10", "3.11"],
    }
)


def ids(cells: Sequence[Any]) -> list[str]:
    return [c.id for c in cells]


def test_select_parses_values_as_yaml() -> None:
    kept = select(CELLS, ["pin_memory=true", "num_workers=2"])
    assert ids(kept) == [
        "num_workers=2,pin_memory=true,python=3.10",
        "num_workers=2,pin_memory=true,python=3.11",
    ]


def test_select_same_axis_is_or_and_axes_are_and() -> None:
    kept = select(CELLS, ["num_workers=0", "num_workers=4", "python=3.11", "pin_memory=false"])
    assert ids(kept) == [
        "num_workers=0,pin_memory=false,python=3.11",
        "num_workers=4,pin_memory=false,python=3.11",
    ]


def test_select_matches_rendered_text_when_yaml_reads_differently() -> None:
    # YAML reads 3.10 as the float 3.1; the axis holds the string "3.10".
    assert len(select(CELLS, ["python=3.10"])) == 6


def test_select_reads_an_axis_a_cell_lacks_as_null() -> None:
    # An include-only axis is null in the other cells, as expressions read it.
    cells = expand_matrix({"w": [0, 2], "include": [{"w": 4, "pin": True}]})
    assert ids(select(cells, ["pin=null"])) == ["w=0", "w=2"]
    assert ids(select(cells, ["pin=true"])) == ["w=4,pin=true"]
    with pytest.raises(UsageError, match="axis 'pin' holds null, true"):
        select(cells, ["pin=false"])


def test_a_no_match_lists_each_value_as_m_takes_it() -> None:
    # `holds a,b, x=1, plain` hid where one value ended: a comma's string quoted,
    # and each listed value selects its cell as written.
    cells = expand_matrix({"opt": ["a,b", " x=1", "plain", "3.10", 7, '"x", y']})
    with pytest.raises(UsageError) as refused:
        select(cells, ["opt=a, b"])
    listed = '"a,b", " x=1", plain, "3.10", 7, "\\"x\\", y"'
    assert str(refused.value).endswith(f"axis 'opt' holds {listed}")
    for value in ('"a,b"', '" x=1"', "plain", '"3.10"', "7", '"\\"x\\", y"'):
        assert len(select(cells, [f"opt={value}"])) == 1


def test_a_filter_written_as_a_cell_id_is_answered_with_the_filters_it_meant() -> None:
    # `-m kind=segv,x=1`, the cell as the table shows it (and as isolate's --failing takes
    # it): one filter, whose value `segv,x=1` no cell has; the refusal named kind's values
    # alone, not that -m takes one AXIS=VALUE.
    cells = expand_matrix({"kind": ["segv", "abort"], "x": [0, 1]})
    with pytest.raises(UsageError) as refused:
        select(cells, ["kind=segv,x=1"])
    assert str(refused.value) == (
        "no cell matches -m kind=segv,x=1: axis 'kind' holds segv, abort; "
        "one filter is one AXIS=VALUE: -m kind=segv -m x=1"
    )
    # A value with a comma that names no axis gets no such hint.
    with pytest.raises(UsageError) as plain:
        select(cells, ["kind=segv,abort"])
    assert "one filter" not in str(plain.value)


def test_select_without_filters_keeps_everything() -> None:
    assert select(CELLS, []) == CELLS


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            ["workers=2"],
            "-m workers=2: unknown axis 'workers' (axes: num_workers, pin_memory, python); "
            "did you mean num_workers?",
        ),
        (["zz=2"], "unknown axis 'zz' (axes: num_workers, pin_memory, python)"),
        (["num_workers"], "expected AXIS=VALUE"),
        (["num_workers=7"], "no cell matches -m num_workers=7"),
        (["pin_memory=1"], "no cell matches"),
    ],
)
def test_select_errors(filters: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        select(CELLS, filters)
    assert message in str(caught.value)


# -- counted, never expanded ---------------------------------------------------------


def _reference(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The matrix semantics the slow, obvious way: the product, then exclude, then include."""
    original = [k for k in section if k not in ("include", "exclude")]
    combos = (
        [
            dict(zip(original, values, strict=True))
            for values in itertools.product(*(section[a] for a in original))
        ]
        if original
        else []
    )
    combos = [
        c
        for c in combos
        if not any(all(same(c[k], v) for k, v in e.items()) for e in section.get("exclude", ()))
    ]
    extra = []
    for entry in section.get("include", ()):
        fits = [c for c in combos if all(same(c[k], v) for k, v in entry.items() if k in original)]
        for combo in fits:
            combo.update(entry)
        if not fits:
            extra.append(dict(entry))
    return combos + extra


@pytest.mark.parametrize("seed", range(40))
def test_counting_and_lazy_expansion_agree_with_the_product(seed: int) -> None:
    rng = random.Random(seed)
    values = [0, 1, 2, True, False, "a", 1.0, None, [1], {"k": 1}]
    section: dict[str, Any] = {
        f"x{i}": rng.sample(values, rng.randint(1, 4)) for i in range(rng.randint(1, 4))
    }
    names = list(section)
    section["exclude"] = [
        {k: rng.choice(values) for k in rng.sample(names, rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 6))
    ]
    section["include"] = [
        {k: rng.choice(values) for k in rng.sample([*names, "y"], rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 4))
    ]
    try:
        cells = expand_matrix(section)
    except MatrixError as exc:
        # Raising is one allowed outcome of a random section, so not a pytest.raises.
        assert any(  # noqa: PT017
            words in exc.message for words in ("same id", "no cells", "one number to -m")
        )
        return
    assert [sorted(map(repr, c.matrix.items())) for c in cells] == [
        sorted(map(repr, c.items())) for c in _reference(section)
    ]
    assert count_cells(section) == len(cells)
    # Each cell made alone from its index is the cell the walk makes there.
    lazy = matrix_cells(section)
    assert [lazy[i] for i in range(len(lazy))] == cells == lazy
    assert [c.index for c in cells] == list(range(len(cells)))


def _ids_collide(section: dict[str, Any]) -> bool:
    ids = [cell_id(c) for c in _reference_ordered(section)]
    return len(set(ids)) < len(ids)


def _reference_ordered(section: dict[str, Any]) -> list[dict[str, Any]]:
    order = {k: i for i, k in enumerate(k for k in section if k not in ("include", "exclude"))}
    for entry in section.get("include", ()):
        for key in entry:
            order.setdefault(key, len(order))
    return [{k: c[k] for k in sorted(c, key=order.__getitem__)} for c in _reference(section)]


@pytest.mark.parametrize("seed", range(60))
def test_cells_made_as_read_are_the_reference_past_excludes_and_includes(seed: int) -> None:
    # Larger axes than above, so a rank is found from the running counts of many values
    # (and, past the last axis an exclude names, as a mixed-radix number).
    rng = random.Random(seed)
    section: dict[str, Any] = {
        f"x{i}": list(range(rng.randint(1, 7))) for i in range(rng.randint(1, 4))
    }
    names = list(section)
    section["exclude"] = [
        {k: rng.choice(section[k]) for k in rng.sample(names, rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 8))
    ]
    section["include"] = [
        {k: rng.randint(0, 8) for k in rng.sample([*names, "y"], rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 3))
    ]
    reference = _reference_ordered(section)
    try:
        cells = matrix_cells(section)
    except MatrixError as exc:
        assert ("no cells" in exc.message and not reference) or (  # noqa: PT017
            "same id" in exc.message and _ids_collide(section)
        )
        return
    assert not _ids_collide(section)
    expected = [Cell(cell_id(c), i, c) for i, c in enumerate(reference)]
    assert isinstance(cells, MatrixCells)
    assert [cells[i] for i in range(len(cells))] == expected
    assert list(cells) == expected
    assert cells[-1] == expected[-1]
    assert cells[1::2] == tuple(expected[1::2])
    with pytest.raises(IndexError):
        cells[len(expected)]


@pytest.mark.parametrize(
    ("section", "pair"),
    [
        ({"a": [1, "1"]}, "cells 1 and 2 have the same id 'a=1'"),
        ({"a": [2, 1, 1]}, "cells 2 and 3 have the same id 'a=1'"),
        # No value repeats, but commas make two ids alike: the axes alone cannot tell.
        ({"a": ["1,b=2", "1"], "b": ["3", "2,b=3"]}, "cells 1 and 4 have the same id"),
        ({"a": [1, 2], "include": [{"a": 1, "c": 0}, {"a": 2, "c": 0}, {"c": 0, "a": 1}]}, ""),
        ({"include": [{"b": 1}, {"b": 1}]}, "cells 1 and 2 have the same id 'b=1'"),
        # 1 and 1.0: one number written two ways, refused before the cells are made.
        ({"a": [1, 1.0], "include": [{"a": 1, "x": 0}]}, "axis 'a' holds 1 and 1.0, one number"),
    ],
)
def test_ids_that_collide_are_found_without_a_map_of_every_id(
    section: dict[str, Any], pair: str
) -> None:
    if not pair:
        assert [c.id for c in matrix_cells(section)] == ["a=1,c=0", "a=2,c=0"]
        return
    with pytest.raises(MatrixError) as caught:
        matrix_cells(section)
    assert pair in caught.value.message


def test_a_repeated_value_excluded_away_is_no_collision() -> None:
    # 1 and '1' render alike, but exclude (which tells them apart) leaves one of them.
    assert [c.id for c in matrix_cells({"a": [1, "1"], "exclude": [{"a": "1"}]})] == ["a=1"]


def test_a_view_reads_its_cells_by_position_and_finds_them_again() -> None:
    cells = matrix_cells({"a": [0, 1, 2, 3], "b": ["x", "y"], "exclude": [{"b": "y", "a": 1}]})
    kept = select(cells, ["b=y"])
    assert isinstance(kept, CellView)
    assert ids(list(kept)) == ["a=0,b=y", "a=2,b=y", "a=3,b=y"]
    assert [kept[i] for i in range(len(kept))] == list(kept) == kept
    assert kept[1:] == (kept[1], kept[2])
    for view in (cells, kept, tuple(kept)):
        assert [position_of(view, c) for c in view] == list(range(len(view)))
    left_out = cells[0]
    assert position_of(kept, left_out) is None
    assert position_of(cells, Cell("a=9", 3, {"a": 9})) is None
    # Without filters, the cells themselves: no copy of every cell.
    assert select(cells, []) is cells


@pytest.mark.parametrize(
    ("section", "message", "path"),
    [
        ({f"a{i}": list(range(10)) for i in range(9)}, "1000000000 cells", ("matrix",)),
        ({"a": list(range(1001)), "b": list(range(100))}, "100100 cells", ("matrix",)),
        (
            {"a": list(range(1000)), "b": list(range(100)), "include": [{"a": -1}]},
            "100001 cells",
            ("matrix",),
        ),
        ({f"a{i}": [1] for i in range(65)}, "65 axes; at most 64", ("matrix",)),
        (
            {"a": [1], "include": [{"b": i} for i in range(257)]},
            "include has 257 entries",
            ("matrix", "include"),
        ),
        (
            {
                **{f"a{i}": [0, 1] for i in range(40)},
                "z": [0, 1],
                "exclude": [{f"a{i}": 0, "z": 0} for i in range(40)],
            },
            "too many ways to count",
            ("matrix", "exclude"),
        ),
    ],
)
def test_too_big_matrices_are_refused_before_any_cell_is_built(
    section: dict[str, Any], message: str, path: tuple[Any, ...]
) -> None:
    with pytest.raises(MatrixError) as caught:
        count_cells(section)
    assert message in caught.value.message
    assert caught.value.path == path
    with pytest.raises(MatrixError):
        next(iter_cells(section))


def test_exclude_that_leaves_few_of_a_huge_product_is_counted_exactly() -> None:
    # 10^9 combinations; 81 exclude entries leave one: counted in steps, not by walking 10^9.
    section: dict[str, Any] = {f"a{i}": list(range(10)) for i in range(9)}
    section["exclude"] = [{f"a{i}": v} for i in range(2, 9) for v in range(1, 10)]
    section["exclude"] += [{"a0": v} for v in range(1, 10)] + [{"a1": v} for v in range(1, 10)]
    assert count_cells(section) == 1
    assert [c.id for c in expand_matrix(section)] == [",".join(f"a{i}=0" for i in range(9))]


def _filters(rng: random.Random, section: dict[str, Any], names: list[str]) -> list[str]:
    """Random `-m` filters: values the axes hold, rendered or as YAML reads them, and some
    no axis holds; an include-only axis (`y`) at times, which the axes alone cannot select."""
    filters = []
    for axis in rng.sample([*names, "y"], rng.randint(1, len(names) + 1)):
        held = section.get(axis) or [None, 0, 1]
        for value in rng.sample([*held, 9, 1.0, "1"], rng.randint(1, 3)):
            filters.append(f"{axis}={rng.choice([render_value(value), json.dumps(value)])}")
    return filters


def _selected(cells: Sequence[Cell], filters: list[str]) -> list[Cell] | str:
    """The cells `select` keeps, or its refusal's words."""
    try:
        return list(select(cells, filters))
    except UsageError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(200))
def test_select_from_the_axes_keeps_the_cells_a_walk_keeps(seed: int) -> None:
    # The positions -m keeps are found from the axes (MatrixCells.positions_where), past
    # excludes and includes; a tuple of the same cells is selected by testing every cell.
    rng = random.Random(seed)
    values = [0, 1, 2, True, "a", 1.0, None, [1], "1"]
    section: dict[str, Any] = {
        f"x{i}": rng.sample(values, rng.randint(1, 5)) for i in range(rng.randint(1, 4))
    }
    names = list(section)
    section["exclude"] = [
        {k: rng.choice(section[k]) for k in rng.sample(names, rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 5))
    ]
    section["include"] = [
        {k: rng.choice(values) for k in rng.sample([*names, "y"], rng.randint(1, len(names)))}
        for _ in range(rng.randint(0, 3))
    ]
    try:
        cells = matrix_cells(section)
    except MatrixError:
        return  # ids that collide, or no cells: nothing to select from
    assert isinstance(cells, MatrixCells)
    for _ in range(5):
        filters = _filters(rng, section, names)
        walked = _selected(tuple(cells), filters)
        assert _selected(cells, filters) == walked
        if isinstance(walked, str):
            continue  # refused alike, in the same words
        kept = select(cells, filters)
        assert isinstance(kept, CellView)
        assert list(kept) == walked
        assert [kept[i] for i in range(len(kept))] == walked
        assert [c.index for c in kept] == [c.index for c in walked]


def test_select_makes_only_the_cells_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    # 16 of 65,536 cells: found from the axes, made when read (each walk made all 65,536).
    made: list[int] = []
    real = MatrixCells._cell

    def counted(self: MatrixCells, index: int, combo: JsonObject) -> Cell:
        made.append(index)
        return real(self, index, combo)

    monkeypatch.setattr(MatrixCells, "_cell", counted)
    values: list[JsonValue] = list(range(16))
    cells = matrix_cells({"a": values, "b": values, "c": values, "d": values})
    kept = select(cells, ["a=1", "b=2", "c=3"])
    assert made == []
    assert ids(kept) == [f"a=1,b=2,c=3,d={d}" for d in range(16)]
    assert made == [4656 + d for d in range(16)]  # read once: each kept cell made once
    # An exclude, two values of one axis and an include entry of its own after the product.
    cells = matrix_cells(
        {"a": values, "b": values, "exclude": [{"a": 3, "b": 5}], "include": [{"a": 3, "z": 1}]}
    )
    made.clear()  # made once each to check that no two ids collide
    kept = select(cells, ["b=5", "b=6", "a=3", "a=4"])
    assert made == []
    assert [(c.id, c.index) for c in kept] == [
        ("a=3,b=6,z=1", 3 * 16 + 5),
        ("a=4,b=5", 4 * 16 + 4),
        ("a=4,b=6", 4 * 16 + 5),
    ]
    assert made == [3 * 16 + 5, 4 * 16 + 4, 4 * 16 + 5]


def test_an_include_value_read_otherwise_than_the_axis_value_selects_by_the_cells() -> None:
    # The include entry writes 1.0 over 1 (equal by `same`): a test that reads the rendered
    # form tells them apart, so the axes alone cannot say which cells it keeps.
    cells = matrix_cells({"a": [1, 2], "include": [{"a": 1.0, "x": 0}]})
    assert isinstance(cells, MatrixCells)
    assert ids(cells) == ["a=1.0,x=0", "a=2"]
    assert cells.positions_where({"a": lambda v: render_value(v) == "1"}) is None
    assert list(cells.positions_where({"a": lambda v: same(v, 1)}) or ()) == [0]
    # An include-only axis: which entries fit a combination decides it, not the axes.
    assert cells.positions_where({"x": lambda v: v is None}) is None
