"""The reduction passes: smaller candidates of a program, proposed one at a time.

`reduce(program)` is a generator: it yields a candidate, is sent True when the
candidate still fails the same way (it becomes the program to shrink) or False
(it is dropped), and returns the smallest program once no pass shrinks it any
more. It never runs anything: `search.py` judges each candidate, flakily.

    reducer = reduce(program)
    candidate = next(reducer)
    while True:
        try:
            candidate = reducer.send(still_fails(candidate))
        except StopIteration as stop:
            smallest = stop.value
            break

The passes, in the order of the issue (each a delta-debugging search over its
units, removing chunks of half, a quarter, ... down to one unit, as ddmin's
complement step does):

1. the command's words after the script, then the spec's environment variables;
2. per Python file, statically unused imports (one candidate), then hierarchical
   deletion (Misherghi and Su's HDD, ICSE 2006): the elements of every deletable
   list at depth 0 (the module's statements), then those at depth 1 inside what
   survived (function and class bodies, a call's arguments, ...), and so on; a
   list element is a statement, an except clause, a call's argument or keyword,
   an operand of `and`/`or`, an imported name, an element of a list, tuple, set or
   dict, or a decorator;
3. branches and blocks replaced by their body (`if`, `for`, `while`, `with`, `try`; not a
   `for` whose body reads its variable, `reads_its_variable`), an `if` by its `else`, an
   assignment by its value alone;
4. literals made simpler (strings and f-strings to "", numbers to 0).

None of them touches an exception's message while it costs nothing (`kept_messages`):
the arguments of `raise X(...)` and an `assert`'s message, where they call nothing but
builtins and methods of literals and read no name that the rest of the file does not read
too. The signature ignores a message, so `raise AssertionError(f"lost updates: {n}")`
became `raise AssertionError()`, the same failure, but the line that said what went wrong
was gone from the minimal program. One that costs something (it calls the program's own
`describe(state)`, or reads a name nothing else reads any more) is reduced as any code is.

Then again from 1, until a whole round changes nothing. Going top-down keeps the
number of candidates near the size of the answer times the depth, not the size
of the input: 500 unrelated lines go in a few chunked candidates at depth 0.

Why not pysource-minimize: it takes a checker callable and calls it once per
candidate, one at a time. That fits neither -j (the attempts of a candidate run
in parallel), nor stored results, nor a flaky verdict (it would have to be
decided inside the callable, without the search's rate); measured on
specs/fixtures/train_loop.py it took 3,019 checks for 36 lines. Its strategies
are the same kinds of transformation as the ones here.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from typing import TypeGuard, TypeVar

from reprospec.core.pysource import UNREADABLE
from reprospec.minimize.program import Program

Reducer = Generator[Program, bool, Program]
T = TypeVar("T")

# Statement lists a Python block must not leave empty (an empty one becomes `pass`).
_BLOCKS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.ExceptHandler,
)
# The lists whose elements go one by one: statements anywhere, and these fields.
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "decorator_list")
_LISTS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.Call: ("args", "keywords"),
    ast.BoolOp: ("values",),
    ast.Import: ("names",),
    ast.ImportFrom: ("names",),
    ast.List: ("elts",),
    ast.Tuple: ("elts",),
    ast.Set: ("elts",),
}
_UNWRAP = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def reduce(program: Program) -> Reducer:
    """Propose smaller candidates until a whole round of passes shrinks nothing."""
    current = program
    while True:
        start = current
        # An option and its value go together first (`--seed 7`): one word alone leaves
        # the other, which argparse refuses, so one word at a time removed no pair, and
        # ddmin's halves (3 words of 6, then 1) cut across them.
        groups = option_groups(current.args)
        if any(len(group) > 1 for group in groups):
            kept_groups = yield from ddmin(list(range(len(groups))), _words(current, groups))
            current = replace(current, args=_kept_words(current.args, groups, kept_groups))
        single = [(i,) for i in range(len(current.args))]
        kept = yield from ddmin(list(range(len(single))), _words(current, single))
        current = replace(current, args=_kept_words(current.args, single, kept))
        current = yield from reduce_env(current)
        for path, _ in program.files:
            current = yield from _reduce_file(current, path)
        if current == start:
            return current


def reduce_env(program: Program) -> Reducer:
    """The environment variables the failure needs (ddmin over them): a command's and a
    workload's alike."""
    kept = yield from ddmin(
        list(range(len(program.env))),
        lambda keep: replace(program, env=tuple(program.env[i] for i in keep)),
    )
    return replace(program, env=tuple(program.env[i] for i in kept))


def option_groups(args: Sequence[str]) -> list[tuple[int, ...]]:
    """The positions of `args` as units: an option with the values that follow it up to
    the next option (`--seed 7`, `--files a b`), each other word alone (`--x=1`, `--`, a
    positional before any option)."""
    groups: list[tuple[int, ...]] = []
    for index, word in enumerate(args):
        if groups and _takes_values(args[groups[-1][0]]) and not _is_option(word):
            groups[-1] = (*groups[-1], index)
        else:
            groups.append((index,))
    return groups


def _is_option(word: str) -> bool:
    """`-x`, `--seed`: not `-` (standard input) nor a negative number (`-1`, a value)."""
    return word.startswith("-") and word != "-" and _NEGATIVE.fullmatch(word) is None


def _takes_values(word: str) -> bool:
    return _is_option(word) and "=" not in word and word != "--"


_NEGATIVE = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _kept_words(
    args: Sequence[str], groups: Sequence[tuple[int, ...]], kept: Sequence[int]
) -> tuple[str, ...]:
    return tuple(args[i] for g in kept for i in groups[g])


def _words(
    program: Program, groups: Sequence[tuple[int, ...]]
) -> Callable[[list[int]], Program | None]:
    return lambda keep: replace(program, args=_kept_words(program.args, groups, keep))


def ddmin(
    units: list[T], build: Callable[[list[T]], Program | None]
) -> Generator[Program, bool, list[T]]:
    """The units that must stay: chunks of half, a quarter, ... one unit, each removed if it can.

    `build(kept)` is the candidate that keeps only `kept` (None: not a valid
    program, so never proposed). A removal that still fails is kept at once and
    the next chunk is tried at the same place (ddmin's complement step, without
    its subset step: a failing subset is reached through its complements).
    """
    if not units:
        return units
    chunk = max(1, len(units) // 2)
    while True:
        i = 0
        while i < len(units) and units:
            trial = units[:i] + units[i + chunk :]
            candidate = build(trial)
            if candidate is not None and (yield candidate):
                units = trial
            else:
                i += chunk
        if chunk == 1 or not units:
            return units
        chunk = max(1, min(chunk // 2, len(units) // 2))


def _reduce_file(program: Program, path: str) -> Reducer:
    """Every pass over one Python file (a file that does not parse is left alone)."""
    current = program
    text = current.source(path)
    try:
        ast.parse(text)
    except UNREADABLE:
        return current
    current = yield from _drop_unused(current, path)
    depth = 0
    while True:
        text = current.source(path)
        sites = deletable(text, depth)
        if not sites:
            break
        kept = yield from ddmin(sites, _builder(current, path, text, "delete", sites))
        current = _built(current, path, text, "delete", sites, kept)
        depth += 1
    # What the deletions left unreferenced (a class whose only user went), in one candidate,
    # before the budget goes to the literals: otherwise only a later round finds it.
    current = yield from _drop_unused(current, path)
    for kind in ("body", "orelse", "value", "simplify"):
        text = current.source(path)
        sites = changeable(text, kind)
        kept = yield from ddmin(sites, _builder(current, path, text, kind, sites))
        current = _built(current, path, text, kind, sites, kept)
    return current


def _builder(
    program: Program, path: str, text: str, kind: str, sites: Sequence[int]
) -> Callable[[list[int]], Program | None]:
    """The candidate that applies `kind` to every site except the kept ones."""

    def build(kept: list[int]) -> Program | None:
        changed = set(sites) - set(kept)
        smaller = _change(text, kind, changed)
        if smaller is None or smaller == text:
            return None
        return program.with_source(path, smaller)

    return build


def _built(
    program: Program, path: str, text: str, kind: str, sites: Sequence[int], kept: list[int]
) -> Program:
    if len(kept) == len(sites):
        return program
    smaller = _change(text, kind, set(sites) - set(kept))
    return program if smaller is None else program.with_source(path, smaller)


def _change(text: str, kind: str, changed: set[int]) -> str | None:
    if kind == "delete":
        return apply(text, delete=changed)
    if kind == "simplify":
        return apply(text, simplify=changed)
    return apply(text, unwrap={i: kind for i in changed})


# -- the sites: AST nodes numbered in pre-order ---------------------------------


def numbered(tree: ast.AST) -> list[ast.AST]:
    """Every node in pre-order (fields in their declared order): the same text, the same numbers."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _deletable_lists(node: ast.AST) -> list[list[ast.AST]]:
    """The lists of `node` whose elements can go one by one."""
    lists: list[list[ast.AST]] = []
    for name, value in ast.iter_fields(node):
        if not isinstance(value, list) or not value:
            continue
        if name in _LISTS.get(type(node), _STATEMENT_LISTS):
            lists.append(value)
        elif isinstance(node, ast.Dict) and name == "values":
            lists.append(value)  # a value goes with its key
    return lists


def deletable(text: str, depth: int) -> list[int]:
    """Numbers of the list elements at `depth` (how many deletable elements hold them), an
    exception's message that costs nothing left out (`kept_messages`)."""
    tree = ast.parse(text)
    nodes = numbered(tree)
    number = {id(n): i for i, n in enumerate(nodes)}
    kept = kept_messages(nodes)
    out: list[int] = []

    def visit(node: ast.AST, level: int) -> None:
        inside = {id(e) for values in _deletable_lists(node) for e in values}
        for child in ast.iter_child_nodes(node):
            if id(child) in kept:
                continue
            if id(child) in inside:
                if level == depth:
                    out.append(number[id(child)])
                else:
                    visit(child, level + 1)
            else:
                visit(child, level)

    visit(tree, 0)
    return sorted(out)


def changeable(text: str, kind: str) -> list[int]:
    """Numbers of the nodes `kind` can change: blocks to unwrap, or literals to simplify."""
    tree = ast.parse(text)
    nodes = numbered(tree)
    if kind == "body":
        return [
            i
            for i, n in enumerate(nodes)
            if isinstance(n, _UNWRAP) and n.body and not reads_its_variable(n)
        ]
    if kind == "orelse":
        return [i for i, n in enumerate(nodes) if isinstance(n, ast.If) and n.orelse]
    if kind == "value":
        return [
            i
            for i, n in enumerate(nodes)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None
        ]
    left = {id(c) for n in nodes if isinstance(n, ast.JoinedStr) for c in ast.walk(n) if c is not n}
    left |= kept_messages(nodes)
    return [i for i, n in enumerate(nodes) if id(n) not in left and _simpler(n) is not None]


def reads_its_variable(node: ast.AST) -> TypeGuard[ast.For | ast.AsyncFor]:
    """A `for` whose body reads a name its target binds (`for t in threads: t.join()`).

    Replaced by its body, it runs once, on whatever that name held before the loop: an
    earlier loop's last item (`for t in threads: t.start()` leaves `t` bound), so that only
    the last thread is joined and the others race the interpreter's exit. Such a candidate
    still fails, as often, with the same signature, but it is another program, whose failure
    the original never had; where the name was bound nowhere before, it fails of a
    NameError the original never printed, a candidate wasted. A loop whose body ignores its
    variable (`for _ in range(n):`) runs the same body: it is unwrapped as any block."""
    if not isinstance(node, (ast.For, ast.AsyncFor)):
        return False
    bound = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in bound
        for statement in node.body
        for n in ast.walk(statement)
    )


def loops_kept(program: Program) -> tuple[str, ...]:
    """`for t in threads` of each loop of the program's files that `reads_its_variable`
    kept a loop, in the order written: what minimize.md says the passes never unwrapped."""
    found: list[str] = []
    for _, text in program.files:
        try:
            # ast.walk is breadth-first: a nested loop came before a later top-level one.
            loops = sorted(
                (n for n in ast.walk(ast.parse(text)) if reads_its_variable(n)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            found += [f"for {ast.unparse(n.target)} in {ast.unparse(n.iter)}" for n in loops]
        except UNREADABLE:
            continue
    return tuple(found)


def kept_messages(nodes: Sequence[ast.AST]) -> set[int]:
    """The ids of the nodes of every exception message that costs nothing: the arguments of
    a `raise` of a call (`raise AssertionError(f"lost updates: {n}")`, `raise
    Lost(n, total=t)`) and an `assert`'s message, each one kept whole where it calls only
    builtins (`len`, `repr`; not where the file binds that name where the message sees it,
    at module level or in a function around it: a def, an import, an assignment, a
    parameter) and methods of literals (`", ".join`, `"{}".format`), and every
    name it reads is a builtin or read outside the file's messages too (`n` where `if n:`
    reads it): keeping it keeps nothing else alive. `nodes`: the file's, `numbered`.

    A message is never the failure (signatures leave it out), so a reduction that drops one
    fails "the same way"; but it is the one line that tells a maintainer what went wrong.
    One that reads a name only it reads (`diag = collect()` for it alone) or calls the
    program's code would keep that code in the minimal program: it is reduced as any code."""
    messages: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            messages += node.exc.args
            messages += [k.value for k in node.exc.keywords]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            messages.append(node.msg)
    inside = {id(c) for m in messages for c in ast.walk(m)}
    # Read, not bound: `diag = collect()` binds `diag` outside the message, and keeping a
    # message that alone reads it would keep `collect()`.
    read = {
        n.id
        for n in nodes
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inside
    }
    # A `def format(...)` of the program's is its code, and so is a name it imports or
    # assigns (`from report import summary as repr`, `from numpy import max`): a message's
    # `repr(xs)` calls the program's code, not the builtin (review). Only where the message
    # sees it: the module's, or a function's around it (`def forward(self, input)` hides
    # no `input` from a message elsewhere).
    visible = _visible_bindings(nodes[0], messages, inside) if nodes else {}
    kept: set[int] = set()
    for message in messages:
        bound = visible.get(id(message), frozenset())
        builtin = frozenset() if _STAR in bound else _BUILTINS - bound
        parts = list(ast.walk(message))
        own = {p.id for p in parts if isinstance(p, ast.Name) and not isinstance(p.ctx, ast.Load)}
        free = read | builtin | own  # `own`: a comprehension's variable
        if all(_costs_nothing(part, free, builtin) for part in parts):
            kept |= {id(part) for part in parts}
    return kept


_BUILTINS = frozenset(dir(builtins))
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# What `from x import *` binds: any name, so no builtin can be told from the module's.
_STAR = "*"


# The nodes whose bodies are a scope of their own, as Python resolves names.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _visible_bindings(
    tree: ast.AST, messages: Sequence[ast.AST], inside: set[int]
) -> dict[int, frozenset[str]]:
    """The names bound in the file (`_bound_names`, outside every message: `inside`) that
    each message (by id) sees: its own scope's, the module's and those of the functions
    around it, as Python resolves a name (a class body's only directly in it, not in its
    methods); a name declared `global` or `nonlocal` anywhere counts everywhere."""
    roots = {id(m) for m in messages}
    declared = frozenset(
        name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Global, ast.Nonlocal))
        for name in n.names
    )
    owns: dict[int, frozenset[str]] = {}

    def own(scope: ast.AST) -> frozenset[str]:
        if id(scope) not in owns:
            names: set[str] = set()
            stack = list(ast.iter_child_nodes(scope))
            while stack:
                node = stack.pop()
                if id(node) in inside:
                    continue
                names.update(_bound_names(node))  # a def's name binds where it stands
                if not isinstance(node, _SCOPES):
                    stack.extend(ast.iter_child_nodes(node))
            owns[id(scope)] = frozenset(names)
        return owns[id(scope)]

    out: dict[int, frozenset[str]] = {}

    def visit(node: ast.AST, around: frozenset[str], scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if id(child) in roots:
                out[id(child)] = around | own(scope) | declared
            elif isinstance(child, _SCOPES):
                seen = around if isinstance(scope, ast.ClassDef) else around | own(scope)
                visit(child, seen, child)
            else:
                visit(child, around, scope)

    visit(tree, frozenset(), tree)
    return out


def _bound_names(node: ast.AST) -> tuple[str, ...]:
    """The names `node` binds in its scope: a def's or class's, an import's (`import a.b`
    binds `a`, `as` its alias; `*` where it imports every name), a name stored (an
    assignment's, a `for`'s, a `with`'s `as`), a parameter, an `except ... as`, a `match`'s
    capture (`case repr:`, `case [*repr]:`, `case {**repr}:`)."""
    if isinstance(node, _DEFINITIONS):
        return (node.name,)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return tuple(a.asname or a.name.split(".", 1)[0] for a in node.names)
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, ast.ExceptHandler) and node.name:
        return (node.name,)
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return (node.name,)
    if isinstance(node, ast.MatchMapping) and node.rest:
        return (node.rest,)
    return ()


def _costs_nothing(node: ast.AST, free: set[str], builtin: frozenset[str]) -> bool:
    """Whether one node of a message keeps nothing else of the program alive: a name in
    `free`, a call of a `builtin` or of a literal's method, anything else but a lambda."""
    if isinstance(node, ast.Name):
        return node.id in free
    if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
        return False
    if isinstance(node, ast.Call):
        called = node.func
        if isinstance(called, ast.Name):
            return called.id in builtin
        return isinstance(called, ast.Attribute) and isinstance(called.value, ast.Constant)
    return True


def _simpler(node: ast.AST) -> ast.expr | None:
    """The simplest literal of the same type, or None when `node` is no literal or is simplest."""
    if isinstance(node, ast.JoinedStr):
        return ast.Constant("")
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return None
    value = node.value
    if isinstance(value, str) and value:
        return ast.Constant("")
    if isinstance(value, bytes) and value:
        return ast.Constant(b"")
    if isinstance(value, (int, float)) and value != 0:
        return ast.Constant(type(value)(0))
    return None


def _drop_unused(program: Program, path: str) -> Generator[Program, bool, Program]:
    """One candidate without the file's unused imports and unreferenced top-level
    functions and classes (`unused_imports`, `unused_definitions`); kept if it still fails."""
    text = program.source(path)
    unused = unused_imports(text) + unused_definitions(text)
    if not unused:
        return program
    smaller = apply(text, delete=set(unused))
    if smaller is None or smaller == text:
        return program
    candidate = program.with_source(path, smaller)
    return candidate if (yield candidate) else program


def unused_definitions(text: str) -> list[int]:
    """Numbers of the module-level functions and classes that nothing in the file names
    (read as a name, an attribute or a string: `getattr(m, "f")` and `__all__` count),
    undecorated and not dunder."""
    tree = ast.parse(text)
    nodes = numbered(tree)
    read = _names_read(nodes) | {n.attr for n in nodes if isinstance(n, ast.Attribute)}
    top = {id(statement) for statement in tree.body}
    return [
        i
        for i, n in enumerate(nodes)
        if isinstance(n, _DEFINITIONS)
        and id(n) in top
        and not n.decorator_list  # a decorator may register it: it has an effect unnamed
        and n.name not in read
        and not (n.name.startswith("__") and n.name.endswith("__"))
    ]


def _names_read(nodes: Sequence[ast.AST]) -> set[str]:
    """The names a file reads: as a name, or as a string (names listed in `__all__` are read
    by whoever imports the file; `getattr(m, "f")` reads `f`)."""
    read = {n.id for n in nodes if isinstance(n, ast.Name)}
    read |= {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return read


def unused_imports(text: str) -> list[int]:
    """Numbers of the imported names that nothing in the file reads (by name)."""
    nodes = numbered(ast.parse(text))
    read = _names_read(nodes)
    out: list[int] = []
    for i, n in enumerate(nodes):
        if isinstance(n, ast.alias) and n.name != "*":
            bound = n.asname or n.name.split(".")[0]
            if bound not in read:
                out.append(i)
    return out


# -- applying a change ------------------------------------------------------------


def apply(
    text: str,
    *,
    delete: set[int] | None = None,
    unwrap: dict[int, str] | None = None,
    simplify: set[int] | None = None,
) -> str | None:
    """`text` with the numbered nodes deleted, unwrapped or simplified; None if not valid Python."""
    tree = ast.parse(text)
    nodes = numbered(tree)
    gone = {id(nodes[i]) for i in delete or ()}
    opened = {id(nodes[i]): field for i, field in (unwrap or {}).items()}
    simpler = {id(nodes[i]) for i in simplify or ()}
    changer = _Changer(gone, opened, simpler)
    changed = changer.visit(tree)
    if not isinstance(changed, ast.AST):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ast.unparse(ast.fix_missing_locations(changed)) + "\n"
            compile(out, "<candidate>", "exec")
    except (SyntaxError, ValueError, TypeError, AttributeError, RecursionError):
        return None
    return out


class _Changer(ast.NodeTransformer):
    def __init__(self, gone: set[int], opened: dict[int, str], simpler: set[int]) -> None:
        self.gone = gone
        self.opened = opened
        self.simpler = simpler

    def visit(self, node: ast.AST) -> ast.AST | list[ast.AST] | None:
        if id(node) in self.simpler:
            literal = _simpler(node)
            if literal is not None:
                return ast.copy_location(literal, node)
        result = self.generic_visit(node)
        if isinstance(node, ast.BoolOp) and len(node.values) == 1:
            return node.values[0]
        if isinstance(node, _BLOCKS) and not node.body:
            node.body = [ast.Pass()]
        for name in _STATEMENT_LISTS:
            # A `pass` left beside other statements (its block was emptied, then unwrapped)
            # goes at once: it changes nothing, so it needs no candidate of its own.
            body = getattr(node, name, None)
            if isinstance(body, list) and len(body) > 1:
                kept = [s for s in body if not isinstance(s, ast.Pass)]
                setattr(node, name, kept or body[:1])
        return result

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Dict):
            kept = zip(node.keys, node.values, strict=True)
            pairs = [(k, v) for k, v in kept if id(v) not in self.gone]
            node.keys = [k for k, _ in pairs]
            node.values = [v for _, v in pairs]
        for name, old in ast.iter_fields(node):
            if isinstance(old, list):
                new: list[object] = []
                for item in old:
                    if not isinstance(item, ast.AST):
                        new.append(item)
                        continue
                    if id(item) in self.gone:
                        continue
                    field = self.opened.get(id(item))
                    if field == "value":
                        value = getattr(item, "value", None)
                        parts = [ast.copy_location(ast.Expr(value), item)] if value else [item]
                    else:
                        parts = list(getattr(item, field)) if field else [item]
                    for part in parts:
                        out = self.visit(part)
                        if out is None:
                            continue
                        for one in out if isinstance(out, list) else [out]:
                            if isinstance(one, (ast.Import, ast.ImportFrom)) and not one.names:
                                continue
                            new.append(one)
                setattr(node, name, new)
            elif isinstance(old, ast.AST):
                out = self.visit(old)
                if isinstance(out, ast.AST):
                    setattr(node, name, out)
        return node
