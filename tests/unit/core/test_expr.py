"""expr.py: the ${{ }} language: types, precedence, errors, interpolation, names."""

from __future__ import annotations

from typing import Any

import pytest

from reprospec.core.expr import (
    ExprError,
    evaluate,
    find_expressions,
    interpolate,
    names_used,
    parse,
    render,
    same,
    tokenize,
)
from reprospec.core.jsontypes import JsonObject

CTX: dict[str, Any] = {
    "matrix": {"num_workers": 2, "pin_memory": True, "trainer": "ddp", "cfg": {"lr": 0.1}},
    "env": {"HOME": "/home/u", "EMPTY": ""},
    "spec": {"name": "val-segfault"},
    "cell": {"id": "num_workers=2,pin_memory=true"},
    "attempt": 3,
}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("-2", -2),
        ("1.5", 1.5),
        ("2e3", 2000.0),
        ("'single'", "single"),
        ('"double"', "double"),
        ("'it''s'", "it's"),
        ("true", True),
        ("false", False),
        ("null", None),
        ("[1, 'a', true]", [1, "a", True]),
        ("[]", []),
        ("matrix.num_workers", 2),
        ("matrix.cfg.lr", 0.1),
        ("matrix.cfg", {"lr": 0.1}),
        ("matrix.missing", None),
        ("env.HOME", "/home/u"),
        ("env.UNSET", None),
        ("spec.name", "val-segfault"),
        ("cell.id", "num_workers=2,pin_memory=true"),
        ("attempt", 3),
    ],
)
def test_literals_and_names_keep_types(text: str, value: object) -> None:
    result = evaluate(text, CTX)
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("matrix.num_workers > 0 and matrix.pin_memory", True),
        ("matrix.num_workers == 0 or not matrix.pin_memory", False),
        # not binds looser than comparison, tighter than and/or.
        ("not matrix.num_workers == 0", True),
        ("not true and false", False),
        ("not (true and false)", True),
        # and binds tighter than or.
        ("true or true and false", True),
        ("(true or true) and false", False),
        ("false and 1 or 2", 2),
        ("matrix.num_workers == 0 and 'pass' or 'crash'", "crash"),
        ("matrix.trainer in ['ddp', 'fsdp']", True),
        ("matrix.trainer not in ['ddp', 'fsdp']", False),
        ("'dd' in matrix.trainer", True),
        ("'lr' in matrix.cfg", True),
        ("1 in matrix.missing", False),
        ("2 <= matrix.num_workers", True),
        ("attempt >= 2", True),
        ("1 < 1.5", True),
        ("'a' < 'b'", True),
        ("1 == 1.0", True),
        ("true == 1", False),
        ("0 == false", False),
        ("null == null", True),
        ("env.UNSET == null", True),
        ("[1, [2]] == [1, [2]]", True),
        ("matrix.cfg == matrix.cfg", True),
        ("1 != 2", True),
        ("true in [1]", False),
    ],
)
def test_operators_and_precedence(text: str, value: object) -> None:
    assert evaluate(text, CTX) == value
    assert type(evaluate(text, CTX)) is type(value)


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("", "empty expression", 1),
        ("matrix.x >", "expected a value, got the end of the expression", 11),
        ("(1", "expected ')', got the end of the expression", 3),
        ("1 2", "unexpected '2'", 3),
        ("'abc", "unterminated string", 1),
        ("a && b", "unknown operator '&&'; write 'and'", 3),
        ("true || false", "unknown operator '||'; write 'or'", 6),
        ("!true", "unknown operator '!'; write 'not'", 1),
        ("matrix.a = 1", "unknown operator '='; write '=='", 10),
        ("1 < 2 < 3", "comparisons cannot be chained; join them with 'and'", 7),
        (
            "github.sha",
            "unknown name 'github' (an expression can read matrix, env, spec, cell, attempt)",
            1,
        ),
        ("x == 1", "unknown name 'x'", 1),
        ("spec.title", "unknown name 'spec.title' (did you mean spec.name?)", 1),
        ("spec", "unknown name 'spec' (did you mean spec.name?)", 1),
        ("cell.name", "unknown name 'cell.name' (did you mean cell.id?)", 1),
        ("attempt.n", "'attempt' is a number and has no fields", 1),
        ("matrix.", "expected a field name after '.', got the end of the expression", 8),
        ("1 + 2", "unexpected character '+' (an expression has no arithmetic)", 3),
        # GitHub Actions' functions and indexing were 'unknown name' or 'unexpected': said
        # as the constructs the grammar has not, with what to write instead.
        (
            "contains(cell.id, 'x')",
            "'contains(...)': an expression has no function calls; "
            "contains(a, b) is written 'b in a'",
            1,
        ),
        ("len(matrix.a)", "'len(...)': an expression has no function calls", 1),
        ("matrix.a[0]", "'matrix.a[...]': an expression has no indexing", 9),
        ("[1, 2", "expected ']', got the end of the expression", 6),
        ("and", "expected a value, got 'and'", 1),
        ("__import__('os')", "'__import__(...)': an expression has no function calls", 1),
    ],
)
def test_parse_errors_say_what_and_where(text: str, message: str, column: int) -> None:
    with pytest.raises(ExprError) as caught:
        parse(text)
    assert caught.value.message.startswith(message)
    assert caught.value.offset + 1 == column
    assert str(caught.value) == f"'{text}' at column {column}: {caught.value.message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The operands as an expression writes them: the number 2 was shown '2', a string,
        # so the message denied its own reason.
        (
            "matrix.trainer < 2",
            "cannot compare 'ddp' < 2 (a string and a number; only two numbers or two strings)",
        ),
        (
            "true > false",
            "cannot compare true > false (two booleans; only two numbers or two strings)",
        ),
        (
            "env.UNSET < 1",
            "cannot compare null < 1 (null and a number; only two numbers or two strings)",
        ),
        ("1 in 2", "'in' needs a string, list or mapping on its right, got 2"),
    ],
)
def test_evaluation_errors(text: str, message: str) -> None:
    with pytest.raises(ExprError, match=r"^'") as caught:
        evaluate(text, CTX)
    assert caught.value.message == message


def test_tokenizer_reads_hyphenated_names() -> None:
    kinds = [(t.kind, t.value) for t in tokenize("matrix.node-version")]
    assert kinds == [("name", "matrix"), ("op", "."), ("name", "node-version"), ("end", None)]


def test_interpolate_whole_value_keeps_type() -> None:
    doc: JsonObject = {
        "num_workers": "${{ matrix.num_workers }}",
        "pin_memory": "${{matrix.pin_memory}}",
        "when": "  ${{ matrix.num_workers > 0 }}\n",
        "nothing": "${{ matrix.missing }}",
        "list": ["${{ attempt }}", 4, None],
        "nested": {"cfg": "${{ matrix.cfg }}"},
    }
    assert interpolate(doc, CTX) == {
        "num_workers": 2,
        "pin_memory": True,
        "when": True,
        "nothing": None,
        "list": [3, 4, None],
        "nested": {"cfg": {"lr": 0.1}},
    }


def test_interpolate_inside_text_renders() -> None:
    text = "w=${{ matrix.num_workers }} pin=${{ matrix.pin_memory }} none=[${{ env.UNSET }}]"
    assert interpolate(text, CTX) == "w=2 pin=true none=[]"
    assert interpolate("cfg=${{ matrix.cfg }}", CTX) == 'cfg={"lr":0.1}'
    assert interpolate("${{ 1 }}${{ 2 }}", CTX) == "12"
    assert (
        interpolate("no expressions, just $ and {{ }}", CTX) == "no expressions, just $ and {{ }}"
    )


def test_interpolate_does_not_mutate_input() -> None:
    doc: JsonObject = {"a": ["${{ attempt }}"]}
    interpolate(doc, CTX)
    assert doc == {"a": ["${{ attempt }}"]}


def test_find_expressions_is_quote_aware() -> None:
    found = find_expressions("a ${{ '}}' in cell.id }} b")
    assert [(e.text, e.start, e.end) for e in found] == [("'}}' in cell.id", 2, 24)]
    assert interpolate("a ${{ '}}' in cell.id }} b", CTX) == "a false b"


def test_unclosed_expression() -> None:
    with pytest.raises(ExprError) as caught:
        find_expressions("x ${{ matrix.a")
    assert caught.value.message == "'${{' is never closed with '}}'"
    assert caught.value.offset == 2


def test_unclosed_quote_is_said_at_the_quote() -> None:
    # The quote swallows the `}}`: said at the quote, where it was "'${{' is never closed".
    with pytest.raises(ExprError) as caught:
        find_expressions("x ${{ 'abc }} y")
    assert caught.value.message.startswith("a quoted string is never closed")
    assert caught.value.offset == 6


def test_names_used_walks_everything_in_order() -> None:
    doc: JsonObject = {
        "a": "${{ matrix.a and env.B }} and ${{ spec.name }}",
        "b": ["${{ matrix.cfg.lr }}", {"c": "${{ attempt or matrix.a }}"}],
        "d": 3,
    }
    assert names_used(doc) == ["matrix.a", "env.B", "spec.name", "matrix.cfg.lr", "attempt"]


def test_render_and_same() -> None:
    assert [render(v) for v in (True, False, None, 2, 0.5, "s", [1, "a"])] == [
        "true",
        "false",
        "",
        "2",
        "0.5",
        "s",
        '[1,"a"]',
    ]
    assert same({"a": [1, True]}, {"a": [1.0, True]})
    assert not same({"a": [1, True]}, {"a": [1, 1]})
    assert not same([1], [1, 2])
    assert not same("1", 1)


# -- bounded expressions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(" * 10_000 + "1" + ")" * 10_000, "at most 2000 are allowed"),
        ("[" * 100_000, "at most 2000 are allowed"),
        ("'" + "x" * 3000 + "'", "the expression is 3002 characters long"),
        ("(" * 40 + "1" + ")" * 40, "nested deeper than 32 levels"),
        ("[" * 40 + "]" * 40, "nested deeper than 32 levels"),
        ("not " * 40 + "true", "nested deeper than 32 levels"),
        (" or ".join(["false"] * 100), "nested deeper than 32 levels (split the chain"),
    ],
)
def test_deep_or_long_expressions_are_expr_errors(text: str, message: str) -> None:
    with pytest.raises(ExprError) as caught:
        parse(text)
    assert message in caught.value.message
    # The message quotes the expression cut short, never 100,000 characters of it.
    assert len(str(caught.value)) < 300


def test_expressions_within_the_bounds_evaluate() -> None:
    assert evaluate("(" * 30 + "1" + ")" * 30, {}) == 1
    assert evaluate(" or ".join(["false"] * 30) + " or 7", {}) == 7
    assert evaluate("not " * 30 + "true", {}) is True
