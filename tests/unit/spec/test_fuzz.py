"""Fuzzing the input side: only the project's own located errors, whatever the input.

The YAML loader, the expression parser and evaluator, the matrix expander and
the whole document check get generated input: random text, text assembled
from each language's own tokens (where the interesting failures live), and
random documents. Each may accept or refuse; refusing is YamlSourceError,
ExprError or MatrixError with a location, never anything else. Bounded
examples keep the module to a few seconds.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprospec.core import expr
from reprospec.core.expr import ExprError, same
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.checks.document import check
from reprospec.spec.matrix import MatrixError, count_cells, expand_matrix
from reprospec.spec.yamlsource import YamlSourceError, dump_yaml, load_yaml

FAST = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# Deep inputs cost up to ~0.5 s each (pyyaml scans 1024 characters ahead for a key).
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

YAML_TOKENS = [
    "a",
    "b",
    "k",
    ":",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "  ",
    "\t",
    "#",
    "&x ",
    "*x",
    "&y ",
    "*y",
    "<<: ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!binary ",
    "!!python/object ",
    "!x ",
    "'",
    '"',
    "\\",
    "|",
    ">",
    "---\n",
    "...\n",
    "? ",
    "~",
    "null",
    "true",
    "on",
    "1",
    "0x",
    "1e9",
    ".nan",
    "9" * 120,
    "\x00",
    "\x07",
    "\u009b",
    "\ufeff",
    "\udcff",
    "é",
    "${{ ",
    " }}",
    "%YAML",
]
EXPR_TOKENS = [
    "(",
    ")",
    "[",
    "]",
    ",",
    ".",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "and",
    "or",
    "not",
    "in",
    "matrix",
    "env",
    "attempt",
    "cell",
    "spec",
    "id",
    "name",
    "x",
    "HOME",
    "1",
    "-2.5",
    "1e999",
    "'s'",
    '"t"',
    "'",
    "true",
    "false",
    "null",
    "&&",
    "!",
    "=",
    " ",
    "}}",
    "${{",
    "\x00",
]


def joined(tokens: list[str], most: int = 60) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), max_size=most).map("".join)


def assert_located_yaml(text: str) -> None:
    try:
        load_yaml(text)
    except YamlSourceError as exc:
        assert exc.problems
        assert all(p.line >= 1 and p.col >= 1 and p.message for p in exc.problems)


@FAST
@given(st.text(max_size=300))
def test_yaml_loader_on_any_text(text: str) -> None:
    assert_located_yaml(text)


@FAST
@given(joined(YAML_TOKENS, 80))
def test_yaml_loader_on_yaml_shaped_text(text: str) -> None:
    assert_located_yaml(text)


@FEW
@given(st.integers(1, 3000), st.sampled_from(["[", "{a: ", "- ", "&a [", "!!seq ["]))
def test_yaml_loader_on_deep_nesting(depth: int, opener: str) -> None:
    assert_located_yaml("a: " + opener * depth + "\n")


def assert_expr_error(error: ExprError) -> None:
    assert error.message
    assert 0 <= error.offset <= len(error.text)


CONTEXT: dict[str, Any] = {
    "matrix": {"x": 1, "name": "n", "l": [1, "a"], "m": {"k": None}},
    "env": {"HOME": "/root"},
    "spec": {"name": "s"},
    "cell": {"id": "x=1"},
    "attempt": 2,
}


def check_expression(text: str) -> None:
    try:
        node = expr.parse(text)
    except ExprError as exc:
        assert_expr_error(exc)
        return
    try:
        expr.evaluate(node, CONTEXT)
    except ExprError as exc:
        assert exc.message


@FAST
@given(st.text(max_size=200))
def test_expression_parser_on_any_text(text: str) -> None:
    check_expression(text)


@FAST
@given(joined(EXPR_TOKENS, 80).map(lambda s: s.replace("  ", " ")))
def test_expression_parser_on_expression_shaped_text(text: str) -> None:
    check_expression(text)
    # Embedded in a longer string, as in a spec value.
    try:
        expr.interpolate_string(f"run ${{{{ {text} }}}} now", CONTEXT)
    except ExprError as exc:
        assert exc.message


@FEW
@given(st.integers(1, 5000), st.sampled_from(["(", "[", "not ", "1 or ", "x == 1 and "]))
def test_expression_parser_on_deep_expressions(depth: int, prefix: str) -> None:
    tail = {"(": ")", "[": "]"}.get(prefix, "")
    check_expression(prefix * depth + "1" + tail * depth)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 0.5, float("nan"), float("inf")]),
    st.sampled_from(["a", "b", "1", "true", "", "x y"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("pq"), inner, max_size=2)
    ),
    max_leaves=4,
)
AXES = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def matrices(draw: st.DrawFn) -> JsonValue:
    section: dict[str, Any] = draw(st.dictionaries(AXES, st.lists(VALUES, max_size=4), max_size=4))
    keys = [*section, "e", "include", "exclude"]
    entry = st.dictionaries(st.sampled_from(keys), VALUES, max_size=3)
    if draw(st.booleans()):
        section["include"] = draw(st.lists(entry, max_size=4))
    if draw(st.booleans()):
        section["exclude"] = draw(st.lists(entry, max_size=4))
    # Shapes the schema refuses: the expander must refuse them too, not crash.
    shapes = st.one_of(st.just(section), st.just(None), VALUES, st.just({"a": 3, "include": 1}))
    drawn: JsonValue = draw(shapes)
    return drawn


def reference(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The matrix semantics the slow, obvious way: the product, then exclude, then include."""
    original = [k for k in section if k not in ("include", "exclude")]
    combos = []
    if original:
        for values in itertools.product(*(section[a] for a in original)):
            combos.append(dict(zip(original, values, strict=True)))
    combos = [
        c
        for c in combos
        if not any(
            all(k in c and same(c[k], v) for k, v in e.items()) for e in section.get("exclude", [])
        )
    ]
    extra = []
    for entry in section.get("include", []):
        fits = [c for c in combos if all(same(c[k], v) for k, v in entry.items() if k in original)]
        for combo in fits:
            combo.update(entry)
        if not fits:
            extra.append(dict(entry))
    return combos + extra


@FAST
@given(matrices())
def test_matrix_expander_on_any_section(section: JsonValue) -> None:
    # Any JSON value, shapes the schema refuses included: the expander must refuse them too.
    try:
        cells = expand_matrix(section)  # type: ignore[arg-type]
    except MatrixError as exc:
        assert exc.message
        assert exc.path[0] == "matrix"
        return
    assert count_cells(section) == len(cells)  # type: ignore[arg-type]
    if isinstance(section, dict):
        expected = reference(section)
        assert [list(c.matrix.items()) for c in cells] == [
            sorted(e.items(), key=lambda kv: list(cells[i].matrix).index(kv[0]))
            for i, e in enumerate(expected)
        ]


DOCUMENT_KEYS = st.sampled_from(
    ["reprospec", "name", "command", "workload", "matrix", "environment", "run", "expect",
     "markers", "timeout", "repeat", "outcome", "memory", "gpus", "env", "pattern", "cases",
     "when", "include", "exclude", "message"]
)  # fmt: skip
DOCUMENT_VALUES = st.recursive(
    st.one_of(SCALARS, st.sampled_from(["${{ matrix.a }}", "${{ attempt }}", "${{ ((", "5s"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(DOCUMENT_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(DOCUMENT_KEYS, DOCUMENT_VALUES, max_size=8))
def test_document_check_returns_problems_never_raises(document: dict[str, Any]) -> None:
    base = {"reprospec": 1, "name": "s", "command": "true", "expect": {"outcome": "pass"}}
    for data in (document, {**base, **document}):
        problems = check(data, {(): (1, 1)}, {})
        assert all(p.line >= 0 and p.message for p in problems)


PLAIN = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=False),
        st.text(max_size=12),
        st.sampled_from(["1e3", "0o17", "0x1f", "on", "yes", "1_000", "1:30", "True", ".5", "~"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@FAST
@given(PLAIN)
def test_dumped_yaml_reads_back_the_same(data: JsonValue) -> None:
    text = dump_yaml(data)
    try:
        loaded = load_yaml(text).data
    except YamlSourceError as exc:
        # Only text YAML cannot hold unescaped (dump_yaml escapes it) may be refused.
        raise AssertionError(f"{text!r}: {exc}") from None
    assert same(loaded, data)
