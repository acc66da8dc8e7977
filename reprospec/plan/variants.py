"""The jobs a run's cells can run, one attempt each: what names the program's files.

A cell's files (plan/workfiles.py) are named by its job (`command` or `workload`) and its
`environment.workdir`, and those change from cell to cell only by the values of the
matrix axes their expressions read: a spec whose job reads no axis names the same files
in every cell, and is read from one. `compare` digests the program's files before every
run, and a search hashes them into its id: planning every cell (0.1 ms each) and reading
the files of every different command (a 300-value `--seed` axis rendered 300 commands,
4 ms each with the script's imports followed) cost 0.5-1 s of a run.

So a command is read as a template: its words with each `${{ }}` left in place (the
shell's split of a string command too), and only the words that hold an expression are
rendered, one per value of the axes that word reads: 300 renderings of one word, not
of 300 commands, whose other words are looked up once. Where that cannot be exact (a
workdir or a workload that reads an axis, a value that would split the command's words
otherwise: a space, a quote, a `;`), each combination of the values the read axes can
hold is planned whole on the first cell, at most VARIANTS of them. A job that reads its
cell's id plans its cells in order. Either way the count of what was left unread is
kept, for the record to say so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import islice, product
from typing import NamedTuple

from reprospec.core.expr import ExprError, evaluate, find_expressions, iter_names, parse, render
from reprospec.core.inputs import AttemptPlan, Cell, Spec
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.sections import Command
from reprospec.errors import SpecError
from reprospec.plan.shellwords import command_words

# The most cells planned whole (about 0.1 ms each).
VARIANTS = 256
# The most renderings of a command's words (a few microseconds each).
RENDERINGS = 4096
# A rendered value that holds one of these may split the command's words otherwise than
# the template's placeholder did (or holds a placeholder's own mark).
_SPLITS = Lazy(r"[\s'\"\\;|&<>()$`#\ue000\ue001]")
_MARK = Lazy("\ue000(\\d+)\ue001")


class JobVariants(NamedTuple):  # (not a dataclass: see workfiles.ProgramFiles)
    """Attempt 1 of a cell per different job the cells can run (for a command read as a
    template: the first cell's attempt with its varying words rendered, each rendering
    once), and how many more there may be (0: `attempts` names every file any cell's job
    names)."""

    attempts: tuple[AttemptPlan, ...]
    unread: int


def job_variants(
    spec: Spec,
    cells: Sequence[Cell],
    plan: Callable[[Cell], AttemptPlan],
    base_env: Mapping[str, str],
    first: AttemptPlan,
) -> JobVariants:
    """The jobs `cells` can run (see the module); `plan(cell)`: its attempt 1; `first`:
    that of `cells[0]`, as the run plans it."""
    from reprospec.core.expr import names_used
    from reprospec.spec.matrix import axis_values

    doc = spec.document
    environment = doc.get("environment")
    workdir = environment.get("workdir") if isinstance(environment, dict) else None
    try:
        read = [n.split(".") for n in names_used([doc.get("command"), doc.get("workload")])]
        moves = [n.split(".") for n in names_used(workdir)]
    except ExprError:  # validation refused it; read every cell rather than guess
        read, moves = [["cell"]], []
    if any(n[0] == "cell" or n == ["matrix"] for n in [*read, *moves]):
        count = min(VARIANTS, len(cells))
        return JobVariants(tuple(plan(cells[i]) for i in range(count)), len(cells) - count)
    axes = list(dict.fromkeys(n[1] for n in [*read, *moves] if n[0] == "matrix" and len(n) > 1))
    if not axes:
        return JobVariants((first,), 0)
    matrix = doc.get("matrix")
    section = matrix if isinstance(matrix, Mapping) else None
    domains: dict[str, list[JsonValue | _Absent]] = {}
    for axis in axes:
        held, lacks = axis_values(section, axis)
        domains[axis] = [*held, *([ABSENT] if lacks else [])]
    if "command" in doc and not any(n[0] == "matrix" for n in moves):
        words = _word_variants(spec, first, doc["command"], domains, base_env)
        if words is not None:
            return words
    total = _count(list(domains.values()))
    attempts = []
    for values in islice(product(*domains.values()), VARIANTS):
        cell = replace(
            cells[0], matrix=_matrix(cells[0].matrix, dict(zip(axes, values, strict=True)))
        )
        try:
            attempts.append(plan(cell))
        except SpecError:
            continue  # a combination no cell has (exclude): its values do not evaluate
    return JobVariants(tuple(attempts), max(0, total - VARIANTS))


def _count(lists: Sequence[Sequence[object]]) -> int:
    """How many combinations `product(*lists)` makes."""
    count = 1
    for values in lists:
        count *= len(values)
    return count


class _Absent:
    """A cell without the axis (an include-only one): its key is left out."""


ABSENT = _Absent()


def _matrix(base: Mapping[str, JsonValue], values: Mapping[str, JsonValue | _Absent]) -> JsonObject:
    """`base` with `values` on their axes (an ABSENT one taken out)."""
    out = {k: v for k, v in base.items() if k not in values}
    out.update({k: v for k, v in values.items() if not isinstance(v, _Absent)})
    return out


def _word_variants(
    spec: Spec,
    first: AttemptPlan,
    command: JsonValue,
    domains: Mapping[str, list[JsonValue | _Absent]],
    base_env: Mapping[str, str],
) -> JobVariants | None:
    """The command read as a template (see the module): `first` with its varying words
    rendered; None where a rendering could split the words otherwise."""
    expressions: list[str] = []

    def marked(text: str) -> str:
        out, last = [], 0
        for found in find_expressions(text):
            out.append(f"{text[last : found.start]}\ue000{len(expressions)}\ue001")
            expressions.append(found.text)
            last = found.end
        return "".join(out) + text[last:]

    try:
        if isinstance(command, str):
            template = Command(("/bin/sh", "-c", marked(command)))
        elif isinstance(command, list):
            template = Command(
                tuple(marked(p) if isinstance(p, str) else render(p) for p in command)
            )
        else:
            return None
        words = command_words(template)
        # Each expression's renderings, over the values of the axes it reads.
        context: dict[str, JsonValue] = {
            "env": dict(base_env),
            "spec": {"name": spec.name},
            "cell": {"id": first.cell.id},
            "attempt": 1,
        }
        rendered: list[list[str]] = []
        unread = 0
        for text in expressions:
            axes = list(
                dict.fromkeys(
                    n.parts[1]
                    for n in iter_names(parse(text))
                    if n.parts[0] == "matrix" and len(n.parts) > 1
                )
            )
            held = [domains.get(a, [ABSENT]) for a in axes]
            unread += max(0, _count(held) - RENDERINGS)
            seen: dict[str, None] = {}
            for values in islice(product(*held), RENDERINGS):
                context["matrix"] = _matrix(first.cell.matrix, dict(zip(axes, values, strict=True)))
                seen[render(evaluate(text, context))] = None
            if any(_SPLITS.search(value) for value in seen):
                return None
            rendered.append(list(seen))
    except ExprError:
        return None
    columns: list[list[str]] = []
    for word in words:
        # [text, number, text, ...]: the word's own text around its expressions' marks.
        # (The group always takes part: no piece is None.)
        pieces = [piece or "" for piece in _MARK.split(word)]
        parts = [rendered[int(n)] for n in pieces[1::2]]
        unread += max(0, _count(parts) - RENDERINGS)
        column: dict[str, None] = {}
        for values in islice(product(*parts), RENDERINGS):
            filled = [values[i // 2] if i % 2 else piece for i, piece in enumerate(pieces)]
            column["".join(filled)] = None
        columns.append(list(column))
    # Every rendering of every word in some attempt: as many attempts as the word with
    # the most renderings has, the others' words repeated (each looked up once).
    count = max(len(column) for column in columns)
    attempts = tuple(
        replace(first, job=Command(tuple(c[min(i, len(c) - 1)] for c in columns)))
        for i in range(count)
    )
    return JobVariants(attempts, unread)
