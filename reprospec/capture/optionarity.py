"""How many values each of a script's argparse options takes, read from its source.

capture reads a command's words into axes without running the program's parser, and
`--batch-size 32 5` is `--batch-size 32` and a positional 5 (an epoch count) or an option
of two numbers (`nargs='+'`): the words alone cannot tell (rv19 F6; an axis `[32 5]`
widened to 64 ran argparse's usage error). The script's own `add_argument` calls can:
this reads them from its syntax tree, running nothing (a script without a parser would
run its whole job under `--help`).

    option_arities(Path("train.py").read_text())
    # {"--batch-size": 1, "-b": 1, "--layers": MANY, "--size": 2}

An option is left out (unknown) where its call says no more than the words do: an
`action` that takes no value or one not written as a string, a `nargs` of `...` or not
written as a literal, `**kwargs`, or two calls of the same option that disagree. Options
a script's imported modules define are not seen: the words' own rule reads those.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

from reprospec.core.pysource import UNREADABLE

# `nargs='+'` or `'*'`: every value up to the next option.
MANY: Final = "many"
Arity = int | Literal["many"]

# A source larger than this is no script whose parser is worth reading (a generated file).
_MAX_SOURCE_BYTES = 1 << 20
# The actions that store the values they are given (argparse's default is "store").
_STORING = frozenset({"store", "append", "extend"})


def option_arities(source: str) -> dict[str, Arity]:
    """Each option string of the `add_argument` calls in `source` with the number of values
    it takes (`MANY` for `+`/`*`); {} where `source` is no Python."""
    try:
        tree = ast.parse(source)
    except UNREADABLE:
        return {}
    found: dict[str, Arity | None] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        names = [
            arg.value
            for arg in node.args
            if isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and arg.value.startswith("-")
        ]
        arity = _arity(node.keywords)
        for name in names:
            # The same option twice (subparsers) with two arities: which one parses the
            # command depends on the subcommand.
            found[name] = arity if found.get(name, arity) == arity else None
    return {name: arity for name, arity in found.items() if arity is not None}


def _arity(keywords: Sequence[ast.keyword]) -> Arity | None:
    """The values one `add_argument` call's option takes; None where the call does not say."""
    given: Mapping[str | None, ast.expr] = {k.arg: k.value for k in keywords}
    if None in given:  # **kwargs
        return None
    action = given.get("action")
    if action is not None and not (isinstance(action, ast.Constant) and action.value in _STORING):
        return None
    nargs = given.get("nargs")
    if nargs is None:
        return 1
    if not isinstance(nargs, ast.Constant):
        return None
    value = nargs.value
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 1:
        return value
    if value == "?":
        return 1  # none or one: a value that follows is its
    if value in ("+", "*"):
        return MANY
    return None


def script_arities(script: str | None, workdir: Path) -> dict[str, Arity]:
    """`option_arities` of the Python file a command runs, found from `workdir`: `script` as
    capture's `script_of` reads it (`train.py`, or the module `-m` names: `pkg.tool`);
    {} where there is none, or none to read."""
    if script is None:
        return {}
    if script.endswith(".py"):
        candidates = [workdir / script]
    else:
        base = workdir / script.replace(".", "/")
        candidates = [base.with_suffix(".py"), base / "__main__.py"]
    for path in candidates:
        try:
            if path.is_file() and path.stat().st_size <= _MAX_SOURCE_BYTES:
                return option_arities(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return {}
