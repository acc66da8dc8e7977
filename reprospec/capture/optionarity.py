"""How many values each of a script's argparse options takes, read from its source.

capture reads a command's words into axes without running the program's parser, and
`--batch-size 32 5` is `--batch-size 32` and a positional 5 (an epoch count) or an option
of two numbers (`nargs='+'`): the words alone cannot tell (an axis `[32 5]`
widened to 64 ran argparse's usage error). The script's own `add_argument` calls can:
this reads them from its syntax tree, running nothing (a script without a parser would
run its whole job under `--help`).

    options = parser_options(Path("train.py").read_text())
    options.arity("--batch-size"), options.arity("--batch"), options.arity("--amp")
    # 1, 1 (a unique prefix, as argparse reads it), 0 (store_true)

An option's arity is unknown (None) where its call says no more than the words do: an
`action` not written as a string (but argparse's BooleanOptionalAction), a `nargs` of
`...` or not written as a literal, `**kwargs`, or two calls of the same option that
disagree. `script_options` reads the script and the workdir's modules it imports (a parser
built in `config.py`, `from config import get_parser`), as one parser.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Final, Literal

from reprospec.core.frozen import frozen
from reprospec.core.pysource import UNREADABLE
from reprospec.plan.shellwords import MAX_PARSE_BYTES
from reprospec.plan.workfiles import local_imports, module_files

# `nargs='+'` or `'*'`: every value up to the next option.
MANY: Final = "many"
Arity = int | Literal["many"]

# The actions that store the values they are given (argparse's default is "store").
_STORING = frozenset({"store", "append", "extend"})
# The actions that take no value: `--amp 5` is the switch and a positional 5.
_NO_VALUE = frozenset(
    {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
)


@frozen
class ParserOptions:
    """What a script's `add_argument` calls say of its options.

    `arities`: each option string whose values the calls say (0 for a switch, `MANY` for
    `nargs='+'`/`'*'`); `unknown`: the option strings they define without saying;
    `abbreviations`: whether a word that begins exactly one long option names it, as
    argparse's `allow_abbrev` (its default) reads `--batch` for `--batch-size`: False where
    a parser turns it off (or may: not written as `True`), or where a call's option
    strings are not written out, so that a prefix unique among those seen may not be.
    """

    arities: Mapping[str, Arity] = field(default_factory=dict)
    unknown: frozenset[str] = frozenset()
    abbreviations: bool = True

    def arity(self, word: str) -> Arity | None:
        """The values the option `word` takes; None where the calls do not say, or it is
        none of theirs."""
        if word in self.arities:
            return self.arities[word]
        if word in self.unknown or not self.abbreviations or not word.startswith("--"):
            return None
        # argparse matches a prefix against every option string of its parser, and
        # refuses two matches as ambiguous; one the calls define without saying its
        # values is as unknown here as the word itself.
        names = [name for name in (*self.arities, *self.unknown) if name.startswith(word)]
        return self.arities.get(names[0]) if len(names) == 1 else None


def parser_options(*sources: str) -> ParserOptions:
    """The options of the `add_argument` calls in `sources`, read as one parser's (an option
    two of them define with two arities is unknown); none where one is no Python."""
    found: dict[str, Arity | None] = {}
    abbreviations = True
    for source in sources:
        try:
            tree = ast.parse(source)
        except UNREADABLE:
            continue
        abbreviations &= _add_arguments(tree, found)
    return ParserOptions(
        {name: arity for name, arity in found.items() if arity is not None},
        frozenset(name for name, arity in found.items() if arity is None),
        abbreviations,
    )


def _add_arguments(tree: ast.AST, found: dict[str, Arity | None]) -> bool:
    """Add the arity of each option the tree's `add_argument` calls define to `found`;
    False where the tree turns argparse's abbreviations off (or may)."""
    abbreviations = True
    for node in ast.walk(tree):
        if _turns_off_abbreviations(node):
            abbreviations = False
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        if any(not isinstance(arg, ast.Constant) for arg in node.args):
            abbreviations = False  # `add_argument(*names)`, `add_argument(f"--{key}")`
        names = [
            arg.value
            for arg in node.args
            if isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and arg.value.startswith("-")
        ]
        arity = _arity(node.keywords)
        if _boolean_optional(node.keywords):
            # `--amp` and the `--no-amp` argparse adds beside it: switches both.
            names += ["--no-" + name[2:] for name in names if name.startswith("--")]
        for name in names:
            # The same option twice (subparsers) with two arities: which one parses the
            # command depends on the subcommand.
            found[name] = arity if found.get(name, arity) == arity else None
    return abbreviations


def _turns_off_abbreviations(node: ast.AST) -> bool:
    """`ArgumentParser(allow_abbrev=False)` or `parser.allow_abbrev = ...`: anything but a
    written `True`; also `ArgumentParser(**settings)`, which may hold it."""
    if isinstance(node, ast.Call):
        if any(
            keyword.arg == "allow_abbrev"
            and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is True)
            for keyword in node.keywords
        ):
            return True
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name == "ArgumentParser" and any(k.arg is None for k in node.keywords)
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            isinstance(target, ast.Attribute) and target.attr == "allow_abbrev"
            for target in targets
        )
    return False


def _boolean_optional(keywords: Sequence[ast.keyword]) -> bool:
    """`action=argparse.BooleanOptionalAction` (or the name imported alone)."""
    action = next((k.value for k in keywords if k.arg == "action"), None)
    if isinstance(action, ast.Attribute):
        return action.attr == "BooleanOptionalAction"
    return isinstance(action, ast.Name) and action.id == "BooleanOptionalAction"


def _arity(keywords: Sequence[ast.keyword]) -> Arity | None:
    """The values one `add_argument` call's option takes; None where the call does not say."""
    given: Mapping[str | None, ast.expr] = {k.arg: k.value for k in keywords}
    if None in given:  # **kwargs
        return None
    action = given.get("action")
    if _boolean_optional(keywords) or (
        isinstance(action, ast.Constant) and action.value in _NO_VALUE
    ):
        return 0
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


def script_options(script: str | None, workdir: Path) -> ParserOptions:
    """`parser_options` of the Python file a command runs, found from `workdir`, and of the
    workdir's modules it imports: `script` as capture's `script_of` reads it (`train.py`,
    or the module `-m` names: `pkg.tool`); none where there is none, or none to read."""
    if script is None:
        return ParserOptions()
    if script.endswith(".py"):
        path = workdir / script
    else:
        # What `-m` runs: the module's own file (`pkg/tool.py`, `pkg/__main__.py`), the last
        # of those importing it runs, never a package's `__init__.py` alone.
        found = module_files(script, workdir)
        if not found or found[-1].name == "__init__.py":
            return ParserOptions()
        path = found[-1]
    if not path.is_file():
        return ParserOptions()
    sources = []
    for file in local_imports([path], workdir):
        try:
            if file.stat().st_size <= MAX_PARSE_BYTES:
                sources.append(file.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return parser_options(*sources)
