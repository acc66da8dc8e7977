"""The `${{ EXPR }}` language: a tokenizer, a recursive-descent parser, an evaluator.

No `eval`, no attribute access on Python objects, no calls: an expression can
only read names from the context it is given. Grammar (lowest precedence first):

    expr     := or
    or       := and ("or" and)*
    and      := not ("and" not)*
    not      := "not" not | compare
    compare  := primary [("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in") primary]
    primary  := literal | name ("." field)* | "(" expr ")" | "[" [expr ("," expr)*] "]"
    literal  := integer | float | 'single' | "double" | true | false | null

`and`/`or` return one of their operands (as in Python and GitHub Actions), so
`matrix.n == 0 and 'pass' or 'crash'` picks a string. Equality never confuses
booleans with numbers (`true == 1` is false). Rendered inside a longer string,
booleans are `true`/`false`, null is the empty string (both as GitHub does),
lists and mappings are compact JSON.

An expression is at most MAX_EXPRESSION_CHARS long and MAX_EXPRESSION_DEPTH
levels deep (parentheses, lists, `not`, chained operators): the parser and the
evaluator recurse, and a spec from a ticket must not exhaust the stack.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple, TypeGuard, TypeVar

from reprospec.core.bounds import MAX_EXPRESSION_CHARS, MAX_EXPRESSION_DEPTH
from reprospec.core.jsontypes import JsonScalar, JsonValue
from reprospec.core.lazyre import Lazy

# Names an expression may read, and the fields each allows (None: any field).
ROOTS: Mapping[str, frozenset[str] | None] = {
    "matrix": None,
    "env": None,
    "spec": frozenset({"name"}),
    "cell": frozenset({"id"}),
    "attempt": frozenset(),
}

OPEN, CLOSE = "${{", "}}"


class ExprError(ValueError):
    """A bad expression: `message` plus the 0-based `offset` of the problem in `text`."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        self.message = message
        self.text = text
        self.offset = offset
        shown = text if len(text) <= 80 else text[:77] + "..."
        super().__init__(f"'{shown}' at column {offset + 1}: {message}")


# The parsed nodes are NamedTuples, not frozen dataclasses: the classes are created at
# every start of `validate` and `plan`, and a NamedTuple class costs a sixth as much.
# (Nodes only ever meet nodes: nothing compares one to a plain tuple.)
class Literal(NamedTuple):
    value: JsonScalar


class Name(NamedTuple):
    parts: tuple[str, ...]
    offset: int

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


class ListLit(NamedTuple):
    items: tuple[Node, ...]


class Not(NamedTuple):
    operand: Node


class BoolOp(NamedTuple):
    op: str
    left: Node
    right: Node


class Compare(NamedTuple):
    op: str
    left: Node
    right: Node
    offset: int


Node = Literal | Name | ListLit | Not | BoolOp | Compare


class Token(NamedTuple):
    kind: str  # num, str, name, op, end
    value: str | int | float | None
    offset: int


_TOKEN = Lazy(
    r"""
    (?P<space>\s+)
  | (?P<num>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|\.)
  | (?P<quote>['"])
    """,
    re.VERBOSE,
)

# Operators people bring from GitHub Actions or C: say what to write instead.
_FOREIGN = {"&&": "and", "||": "or", "!": "not", "=": "=="}
_ARITHMETIC = frozenset("+-*/%")
# GitHub Actions' functions a user may bring, and what this grammar writes instead.
_FUNCTIONS = {
    "contains": "; contains(a, b) is written 'b in a'",
    "format": "; write the text around the ${{ }}",
    "tojson": "; a list or mapping inside a longer text renders as JSON",
}


def tokenize(text: str) -> list[Token]:
    """Split an expression into tokens; raise ExprError on anything unknown."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            for foreign, ours in _FOREIGN.items():
                if text.startswith(foreign, pos):
                    raise ExprError(f"unknown operator '{foreign}'; write '{ours}'", text, pos)
            char = text[pos]
            why = " (an expression has no arithmetic)" if char in _ARITHMETIC else ""
            raise ExprError(f"unexpected character '{char}'{why}", text, pos)
        kind = match.lastgroup or ""
        if kind == "quote":
            value, end = _read_string(text, pos)
            tokens.append(Token("str", value, pos))
            pos = end
            continue
        if kind == "num":
            raw = match.group()
            is_float = any(c in raw for c in ".eE")
            tokens.append(Token("num", float(raw) if is_float else int(raw), pos))
        elif kind in ("name", "op"):
            tokens.append(Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(Token("end", None, len(text)))
    return tokens


def _read_string(text: str, start: int) -> tuple[str, int]:
    """A quoted literal; a quote is escaped by doubling it ('it''s'), as in GitHub Actions."""
    quote = text[start]
    out = []
    pos = start + 1
    while pos < len(text):
        char = text[pos]
        if char == quote:
            if text.startswith(quote * 2, pos):
                out.append(quote)
                pos += 2
                continue
            return "".join(out), pos + 1
        out.append(char)
        pos += 1
    raise ExprError("unterminated string", text, start)


_COMPARE = ("==", "!=", "<=", ">=", "<", ">")
_KEYWORDS = {"true": True, "false": False, "null": None}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        if len(text) > MAX_EXPRESSION_CHARS:
            raise ExprError(
                f"the expression is {len(text)} characters long; "
                f"at most {MAX_EXPRESSION_CHARS} are allowed",
                text,
                0,
            )
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0

    def nest(self, token: Token) -> None:
        """Enter one level of nesting (a parenthesis, list or `not`); refuse too many."""
        self.depth += 1
        if self.depth > MAX_EXPRESSION_DEPTH:
            raise self.error(f"nested deeper than {MAX_EXPRESSION_DEPTH} levels", token)

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def at(self, kind: str, value: str | None = None) -> bool:
        token = self.peek()
        return token.kind == kind and (value is None or token.value == value)

    def error(self, message: str, token: Token | None = None) -> ExprError:
        return ExprError(message, self.text, (token or self.peek()).offset)

    def parse(self) -> Node:
        if self.at("end"):
            raise self.error("empty expression")
        node = self.parse_or()
        if not self.at("end"):
            raise self.error(f"unexpected {_describe(self.peek())}")
        return node

    def parse_or(self) -> Node:
        node = self.parse_and()
        while self.at("name", "or"):
            self.take()
            node = BoolOp("or", node, self.parse_and())
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while self.at("name", "and"):
            self.take()
            node = BoolOp("and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        if self.at("name", "not"):
            self.nest(self.take())
            node = Not(self.parse_not())
            self.depth -= 1
            return node
        return self.parse_compare()

    def parse_compare(self) -> Node:
        left = self.parse_primary()
        op = self._compare_op()
        if op is None:
            return left
        offset = self.peek().offset
        self.take()
        if op == "not in":
            self.take()
        node = Compare(op, left, self.parse_primary(), offset)
        if self._compare_op() is not None:
            raise self.error("comparisons cannot be chained; join them with 'and'")
        return node

    def _compare_op(self) -> str | None:
        token = self.peek()
        if token.kind == "op" and token.value in _COMPARE:
            return str(token.value)
        if token.kind == "name" and token.value == "in":
            return "in"
        after = self.tokens[self.pos + 1] if self.pos + 1 < len(self.tokens) else token
        if token.kind == "name" and token.value == "not" and after.value == "in":
            return "not in"
        return None

    def parse_primary(self) -> Node:
        token = self.take()
        if token.kind in ("num", "str"):
            return Literal(token.value)
        if token.kind == "op" and token.value == "(":
            self.nest(token)
            node = self.parse_or()
            self.expect(")")
            self.depth -= 1
            return node
        if token.kind == "op" and token.value == "[":
            self.nest(token)
            listed = self.parse_list()
            self.depth -= 1
            return listed
        if token.kind == "name" and token.value in _KEYWORDS:
            return Literal(_KEYWORDS[token.value])
        if token.kind == "name" and token.value not in ("and", "or", "not", "in"):
            return self.parse_name(token)
        raise self.error(f"expected a value, got {_describe(token)}", token)

    def parse_list(self) -> Node:
        items: list[Node] = []
        if not self.at("op", "]"):
            items.append(self.parse_or())
            while self.at("op", ","):
                self.take()
                items.append(self.parse_or())
        self.expect("]")
        return ListLit(tuple(items))

    def parse_name(self, token: Token) -> Node:
        parts = [str(token.value)]
        while self.at("op", "."):
            self.take()
            field = self.take()
            if field.kind != "name":
                raise self.error(f"expected a field name after '.', got {_describe(field)}", field)
            parts.append(str(field.value))
        name = ".".join(parts)
        # Said before the name is checked: `contains(...)` is not an unknown name to look
        # up but a construct the grammar has not, and `matrix.cfg[0]` names a real axis.
        if self.at("op", "("):
            hint = _FUNCTIONS.get(name.lower(), "")
            raise self.error(f"'{name}(...)': an expression has no function calls{hint}", token)
        if self.at("op", "["):
            raise self.error(
                f"'{name}[...]': an expression has no indexing; read a field by its name "
                f"({name}.FIELD)"
            )
        _check_name(parts, self.text, token.offset)
        return Name(tuple(parts), token.offset)

    def expect(self, value: str) -> None:
        if not self.at("op", value):
            raise self.error(f"expected '{value}', got {_describe(self.peek())}")
        self.take()


def _describe(token: Token) -> str:
    if token.kind == "end":
        return "the end of the expression"
    if token.kind == "str":
        return f"string {token.value!r}"
    return f"'{token.value}'"


def _check_name(parts: list[str], text: str, offset: int) -> None:
    root = parts[0]
    if root not in ROOTS:
        known = ", ".join(ROOTS)
        raise ExprError(f"unknown name '{root}' (an expression can read {known})", text, offset)
    fields = ROOTS[root]
    if fields is None:
        return
    if root == "attempt" and len(parts) > 1:
        raise ExprError("'attempt' is a number and has no fields", text, offset)
    if root != "attempt" and (len(parts) != 2 or parts[1] not in fields):
        allowed = " or ".join(f"{root}.{f}" for f in sorted(fields))
        raise ExprError(f"unknown name '{'.'.join(parts)}' (did you mean {allowed}?)", text, offset)


# The same few texts are parsed again and again (every cell and attempt evaluates each
# `${{ }}` of the spec, validation first): parse each once. Nodes are immutable, so the
# cached tree is shared safely; an ExprError is not cached, it is raised again.
@functools.lru_cache(maxsize=1024)
def parse(text: str) -> Node:
    """Parse the inside of one `${{ }}`; raise ExprError with the column of the problem."""
    node = _Parser(text).parse()
    # `a or b or c ...` nests without parentheses: the tree, not the text, must be shallow.
    if depth(node) > MAX_EXPRESSION_DEPTH:
        raise ExprError(
            f"nested deeper than {MAX_EXPRESSION_DEPTH} levels (split the chain of operators)",
            text,
            0,
        )
    return node


def depth(node: Node) -> int:
    """Levels of a parsed expression (a literal or name is 1), computed without recursion."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(current, ListLit):
            stack.extend((item, level + 1) for item in current.items)
        elif isinstance(current, Not):
            stack.append((current.operand, level + 1))
        elif isinstance(current, (BoolOp, Compare)):
            stack.extend(((current.left, level + 1), (current.right, level + 1)))
    return deepest


# ---------------------------------------------------------------- evaluation


def evaluate(node: Node | str, context: Mapping[str, JsonValue]) -> JsonValue:
    """The value of an expression (a parsed node or its text) in `context`."""
    if isinstance(node, str):
        text = node
        return _Evaluator(text, context).eval(parse(node))
    return _Evaluator("", context).eval(node)


class _Evaluator:
    def __init__(self, text: str, context: Mapping[str, JsonValue]) -> None:
        self.text = text
        self.context = context

    def eval(self, node: Node) -> JsonValue:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Name):
            return self.lookup(node)
        if isinstance(node, ListLit):
            return [self.eval(item) for item in node.items]
        if isinstance(node, Not):
            return not self.eval(node.operand)
        if isinstance(node, BoolOp):
            left = self.eval(node.left)
            if node.op == "and":
                return self.eval(node.right) if left else left
            return left if left else self.eval(node.right)
        return self.compare(node)

    def lookup(self, node: Name) -> JsonValue:
        value = self.context.get(node.parts[0])
        for part in node.parts[1:]:
            # A missing field is null, as in GitHub Actions: include-only axes
            # are absent from some cells, and env vars may be unset.
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def compare(self, node: Compare) -> bool:
        left, right = self.eval(node.left), self.eval(node.right)
        op = node.op
        if op == "==":
            return same(left, right)
        if op == "!=":
            return not same(left, right)
        if op in ("in", "not in"):
            found = self.contains(right, left, node)
            return found if op == "in" else not found
        if _is_number(left) and _is_number(right):
            return _ordered(op, left, right)
        if isinstance(left, str) and isinstance(right, str):
            return _ordered(op, left, right)
        raise ExprError(
            f"cannot compare {shown(left)} {op} {shown(right)} "
            f"({_kinds(left, right)}; only two numbers or two strings)",
            self.text,
            node.offset,
        )

    def contains(self, container: JsonValue, item: JsonValue, node: Compare) -> bool:
        if isinstance(container, str):
            return render(item) in container
        if isinstance(container, list):
            return any(same(item, member) for member in container)
        if isinstance(container, Mapping):
            return isinstance(item, str) and item in container
        if container is None:
            return False
        raise ExprError(
            f"'in' needs a string, list or mapping on its right, got {shown(container)}",
            self.text,
            node.offset,
        )


def _is_number(value: object) -> TypeGuard[float]:
    # (an int is a float to the type checker; a bool is no number here)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_Ordered = TypeVar("_Ordered", float, str)


def _ordered(op: str, left: _Ordered, right: _Ordered) -> bool:
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def same(a: object, b: object) -> bool:
    """Equality that never confuses booleans with numbers (`true == 1` is false)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def render(value: object) -> str:
    """A value as text inside a longer string: true/false, null as '', JSON for collections."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def shown(value: object) -> str:
    """A value as an expression would write it, for a message: `'2'` is a string and `2` a
    number, where render()'s text would show both as `2` and hide the very type mismatch
    the message is about."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if value is None:
        return "null"
    return render(value)


def _kinds(left: object, right: object) -> str:
    kinds = (_kind(left), _kind(right))
    if kinds[0] == kinds[1]:
        return "two " + ("nulls" if kinds[0] == "null" else kinds[0].split()[1] + "s")
    return " and ".join(kinds)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a list" if isinstance(value, list) else "a mapping"


# ---------------------------------------------------------------- templates


class Expression(NamedTuple):
    """One `${{ }}` found in a string: its inner text (stripped) and where it starts."""

    text: str
    start: int
    end: int


def find_expressions(value: str) -> list[Expression]:
    """Every `${{ }}` in a string, quote-aware; raise ExprError when one is not closed."""
    found = []
    pos = value.find(OPEN)
    while pos != -1:
        end = _closing(value, pos + len(OPEN))
        if end < -1:
            # A `}}` inside an open quote is text, so the `${{` looks unclosed: the quote
            # is the mistake to point at (`${{ 'x }}`).
            raise ExprError(
                "a quoted string is never closed, so the '}}' after it is part of it",
                value,
                -end - 2,
            )
        if end == -1:
            raise ExprError("'${{' is never closed with '}}'", value, pos)
        found.append(Expression(value[pos + len(OPEN) : end].strip(), pos, end + len(CLOSE)))
        pos = value.find(OPEN, end + len(CLOSE))
    return found


def _closing(value: str, pos: int) -> int:
    """The offset of the `}}` that closes an expression; -1 when there is none, and
    -2 - OFFSET when there is none because the quote at OFFSET is never closed and a `}}`
    was read as part of the string it opens."""
    quote = ""
    opened = 0
    swallowed = False
    while pos < len(value):
        char = value[pos]
        if quote:
            swallowed = swallowed or value.startswith(CLOSE, pos)
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote, opened, swallowed = char, pos, False
        elif value.startswith(CLOSE, pos):
            return pos
        pos += 1
    return -2 - opened if quote and swallowed else -1


# What a literal `${{` is written as in a string the expressions are expanded in: an
# expression whose value is that text (a string literal holds no `${{` to expand).
ESCAPED_OPEN = "${{ '${{' }}"


def literal_text(text: str) -> str:
    """`text` as a string whose expansion is `text` itself: each `${{` in it written as
    ESCAPED_OPEN. A ticket's `--msg '${{ oops }}'` copied into a spec's command as it was
    failed validation (`unknown name 'oops'`), and its `--template "${{ env.USER }}"` read
    the reader's environment where the program got the text."""
    return text.replace(OPEN, ESCAPED_OPEN)


def interpolate_string(value: str, context: Mapping[str, JsonValue]) -> JsonValue:
    """Evaluate the `${{ }}` in a string: alone, it keeps its type; else render as text."""
    found = find_expressions(value)
    if not found:
        return value
    if len(found) == 1 and value.strip() == value[found[0].start : found[0].end]:
        return evaluate(found[0].text, context)
    out, last = [], 0
    for expression in found:
        out.append(value[last : expression.start])
        out.append(render(evaluate(expression.text, context)))
        last = expression.end
    out.append(value[last:])
    return "".join(out)


def interpolate(value: JsonValue, context: Mapping[str, JsonValue]) -> JsonValue:
    """A copy of `value` (dicts, lists, strings) with every `${{ }}` evaluated."""
    if isinstance(value, str):
        return interpolate_string(value, context)
    if isinstance(value, Mapping):
        return {key: interpolate(item, context) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [interpolate(item, context) for item in value]
    return value


def iter_names(node: Node) -> Iterator[Name]:
    """Every name read by a parsed expression, in source order."""
    if isinstance(node, Name):
        yield node
    elif isinstance(node, ListLit):
        for item in node.items:
            yield from iter_names(item)
    elif isinstance(node, Not):
        yield from iter_names(node.operand)
    elif isinstance(node, (BoolOp, Compare)):
        yield from iter_names(node.left)
        yield from iter_names(node.right)


def names_used(value: JsonValue) -> list[str]:
    """The dotted names (`matrix.num_workers`) read anywhere in `value`, unique, in order."""
    names: dict[str, None] = {}
    if isinstance(value, str):
        for expression in find_expressions(value):
            for name in iter_names(parse(expression.text)):
                names.setdefault(name.dotted, None)
    elif isinstance(value, Mapping):
        for item in value.values():
            names.update(dict.fromkeys(names_used(item)))
    elif isinstance(value, (list, tuple)):
        for item in value:
            names.update(dict.fromkeys(names_used(item)))
    return list(names)
