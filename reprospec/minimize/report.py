"""What a minimization leaves: the minimized files, a spec and a repro that run them, minimize.md.

The result (`Minimized`) lives here, beside its views, so that driver.py imports this
module and never the other way round.

DIR/
  train_loop.py      the minimized Python files (their paths in the workdir), but those
                     emptied that DIR's check neither imported nor read
  data/, cfg.json    the workdir's files that the result names (a Python string, a word
                     of the command, a variable, a path in the spec), nothing else; the
                     spec's `files` whatever their size, a link out of the workdir linked,
                     but those DIR's check neither opened nor imported that nothing names
  minimized.yaml     the original spec, running them (workdir: .), same expect
  repro.sh           the failing cell's command alone: plain `sh repro.sh`
  minimize.md        before/after lines and AST nodes, attempts, time, rate, diff
  minimize.json      the same as JSON

For a workload spec (its numbers lowered, workload.py) there are no files: minimized.yaml
is the spec with the lowered values (its workdir the original's), repro.py the
standalone script `reprospec run` writes for the cell where the harness can write one
(not for a failure the spec injects: without reprospec the fault does not fire), and
repro.sh the run of minimized.yaml otherwise.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reprospec.core.answers import rendered, search_exit_code
from reprospec.core.atomicfile import save_all, write_atomic
from reprospec.core.expr import same
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Spec
from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import Rate, Standalone
from reprospec.core.words import (
    budget_continues,
    perturbed_phrase,
    plural,
    replayed_phrase,
)
from reprospec.isolation.differences import MISSING, Difference
from reprospec.minimize.hangplace import places_said
from reprospec.minimize.named import Carried, copy_named
from reprospec.minimize.program import Program, counted_as, join_words, source_lines
from reprospec.minimize.ratechange import (
    RateChange,
    interval_text,
    printed_interval,
    rate_change,
    rate_text,
)
from reprospec.minimize.search import MinimizeResult
from reprospec.minimize.settings import Reduced
from reprospec.minimize.source import loops_kept
from reprospec.minimize.unperturbed import Baseline, Unperturbed

SPEC_NAME = "minimized.yaml"


@frozen
class Minimized:
    """The answer in the spec's terms, with where it is stored."""

    id: str
    folder: Path  # OUT/minimize/ID: state and candidates
    output: Path  # -o DIR: the minimized files, spec, repro, minimize.md
    spec_name: str
    spec_path: str
    cell: Cell
    passing: tuple[Cell, ...]
    expectation: Expectation
    signature: str
    result: MinimizeResult
    seconds: float
    # Probes answered from an earlier run of it (interrupted, out of budget, or finished),
    # step 1's (isolate's) included, and their attempts, counted in the budget.
    reused: int
    interrupted: bool
    repro: str  # the standalone command (run in `output`)
    command_line: str = ""
    # The spec's passing cells `MinimizeOptions(passing_cells=False)` left out (0: none, or
    # the option on): the spec has them, and "the spec has no passing cell" was said of it.
    passing_left_out: int = 0
    # environment.perturb of the failing cell: minimized under it (amplify).
    perturbed: tuple[str, ...] = ()
    # Step 1: the failing cell's settings as isolate reduced them (None: not run).
    settings: Reduced | None = None
    # A workload's: why there is no repro.py (an injected fault), when there is none.
    repro_note: str = ""
    # A hang's: that repro.sh never stops by itself, and when the run stopped waiting.
    repro_waits: str = ""
    # What DIR's own rerun of minimized.yaml missed ("" when it failed the same way, or was
    # not checked): the search ran where every workdir file was linked (driver.confirm_dir).
    unconfirmed: str = ""
    replayed: int = 0  # the attempts of the `reused` probes
    budget: int = 0  # --budget
    # The workdir's files DIR's rerun read that the result does not name (`"da" + "ta.txt"`):
    # copied into DIR and listed in minimized.yaml's `files` (driver.confirm_dir).
    added: tuple[str, ...] = ()
    # The program's files the passes emptied that DIR's rerun neither imported nor read
    # (a module the minimized program no longer imports): left out of DIR and of
    # minimized.yaml's `files`, DIR checked again without them (driver.confirm_dir).
    dropped: tuple[str, ...] = ()
    # The spec's `files` that DIR's rerun neither opened nor imported and that neither the
    # result nor the rest of the spec names (a user's conf/settings.json, which the 3-line
    # result never opened): left out of DIR and of minimized.yaml's `files`, DIR checked
    # again without them (named.unread_listed, driver._drop_unread).
    unlisted: tuple[str, ...] = ()
    # The failing cell as minimized.yaml names it: the axes it no longer has left out
    # (`native=true`, where the original's was `input=records.csv,limit=50,native=true`).
    cell_after: str = ""
    # The spec's `files` that are links out of the workdir (a dataset linked in): linked in
    # DIR to the same file, not copied, each with that file's path (named.copy_named).
    linked: tuple[tuple[str, str], ...] = ()
    # `--preload`'s modules, as given (None: not given), which the search's attempts forked
    # from, and the spec's own run.preload, which DIR's final check runs under as
    # minimized.yaml does (driver._rerun_dir): minimize.md says both where they differ.
    search_preload: tuple[str, ...] | None = None
    spec_preload: tuple[str, ...] = ()
    # The -o DIR a refusal left alone, as it held an earlier search's result ("" where
    # none did): `output` is then the search folder's (driver.held_a_result).
    kept_output: str = ""
    # The failure messages side by side: the original's first matching attempt's (the
    # search's) and DIR's check's; a reader sees a value that changed its shape
    # (b'UUUUUUUU' at step 3 became b'ZZZZ...' at step 0, the bug gone). "" where unknown.
    message_before: str = ""
    message_after: str = ""
    # How its answer names the search's budget: `--budget`, or `MinimizeOptions(budget=...)`
    # to the Python API's caller (core/caller.py), set when made, as amplify's is.
    budget_said: str = "--budget"
    # Found under environment.perturb: the result and the original without it
    # (unperturbed.py); None where nothing was perturbed or DIR was not checked.
    unperturbed: Unperturbed | None = None
    # The original's rate without the perturbation that search.py's point 6 rested on:
    # amplify's base, or measured before the passes; None where neither (not perturbed).
    baseline: Baseline | None = None
    # Why minimize.json and minimize.md could not be written in `folder` ("" where they
    # were): a rerun of a finished minimization in an --out made read-only since knows its
    # answer from the replayed probes (DIR, -o elsewhere, holds it), and printed none.
    unsaved: str = ""

    def render(self, fmt: str = "md") -> str:
        """minimize.md ("md"), what `minimize` prints ("text") or its `--format json`."""
        return rendered(self, fmt, markdown=markdown, text=text, to_dict=to_dict)

    def exit_code(self) -> int:
        """`minimize`'s: 0 minimized (or out of budget with a smaller program) and DIR
        reproducing, 1 not, 3 infra-error, 130 interrupted."""
        return search_exit_code(
            self.interrupted,
            self.result.status,
            ("minimized", "budget"),
            holds=not self.unconfirmed,
        )


def dir_checked(found: Minimized) -> bool:
    """Whether DIR's minimized.yaml is rerun (driver.confirm_dir): a command's result, the
    search not stopped short of one."""
    program = found.result.program
    return (
        not program.workload
        and not found.interrupted
        and found.result.status in ("minimized", "budget")
    )


def write(found: Minimized, spec: Spec, workdir: Path) -> Minimized:
    """Write DIR (files, spec, repro) and the reports; the result with its repro command."""
    out = found.output
    out.mkdir(parents=True, exist_ok=True)
    program = found.result.program
    named = Carried()
    if not program.workload:
        # The store too (the search's folder is OUT/minimize/ID): `--out` in the workdir.
        skip = {out.resolve(), found.folder.resolve(), found.folder.parents[1].resolve()}
        named = copy_named(workdir, out, program, spec, skip=skip, leave=frozenset(found.unlisted))
        found = replace(found, linked=named.linked)
        for name in found.unlisted:
            # Copied by an earlier write of this DIR (before its check): gone now.
            (out / name).unlink(missing_ok=True)
    for name in found.added:
        if not (workdir / name).is_file():
            continue  # gone since a stored check added it: DIR keeps the copy it has
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(workdir / name, out / name)
    for path, text in program.files:
        target = out / path
        if path in found.dropped:
            # Written by an earlier write of this DIR (before its check): gone now.
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    spec_path = out / SPEC_NAME
    reset = found.settings.reset if found.settings else ()
    # The settings step was kept only where this spec expects the failure in the reduced
    # cell (`not_the_reduced_cell`, asked before the program was minimized there).
    carried = (*named.names, *found.added)
    spec_path.write_text(
        _commented(
            spec,
            _provenance(found),
            _spec_text(spec, program, reset, workdir, carried, (*found.dropped, *found.unlisted)),
            out,
        ),
        encoding="utf-8",
    )
    found = replace(found, cell_after=_cell_after(spec_path, found))
    if found.perturbed:
        # Amplified: the failure needs environment.perturb, which a plain command line does
        # not apply (it passed 6 of 6 times where `reprospec run` failed 4 of 4).
        found = replace(found, repro=_rerun(spec_path, found), repro_note=_PERTURBED_NOTE)
    elif program.workload:
        repro, note = _workload_repro(spec_path, found)
        found = replace(found, repro=repro, repro_note=note)
    else:
        repro, waits = _repro(spec_path, found)
        found = replace(found, repro=repro, repro_waits=waits)
    said = "".join(f"# {line}\n" for line in textwrap.wrap(found.repro_waits, 86))
    # Its header says what the answer says of DIR (`_where`): a refused or interrupted
    # search's repro.sh runs the original program, which its header called "minimized".
    state = "not minimized, the original program as it ran" if _original(found) else "minimized"
    (out / "repro.sh").write_text(
        f"#!/bin/sh\n# {found.cell.id} of {found.spec_name}, {state}\n{said}"
        f'cd "$(dirname "$0")" && {found.repro}\n',
        encoding="utf-8",
    )
    (out / "repro.sh").chmod(0o755)
    return write_reports(found)


def write_reports(found: Minimized) -> Minimized:
    """minimize.json and minimize.md, in the minimize folder and DIR: again once DIR's
    check has said what it found (its `BUT`, the files it added). The answer with `unsaved`
    set where the folder's could not be written (an --out made read-only since, a full
    disk): DIR's copy says so, and the answer is printed with a warning, not lost to the
    write's exit 2. DIR's own are the answer's product (driver._check_output refused an
    unwritable one before any attempt): a failure there is raised."""
    saved = replace(found, unsaved="")
    unsaved = save_all(
        found.folder,
        (
            ("minimize.json", lambda: json.dumps(to_dict(saved), indent=2) + "\n"),
            ("minimize.md", lambda: markdown(saved)),
        ),
    )
    found = replace(saved, unsaved=f"{unsaved}; those in {found.output} are") if unsaved else saved
    for name, content in _reports(found):
        write_atomic(found.output / name, content)
    return found


def _reports(found: Minimized) -> tuple[tuple[str, str], ...]:
    return (
        ("minimize.json", json.dumps(to_dict(found), indent=2) + "\n"),
        ("minimize.md", markdown(found)),
    )


def _spec_text(
    spec: Spec,
    program: Program,
    reset: Sequence[Difference],
    workdir: Path,
    carried: Sequence[str] = (),
    dropped: Sequence[str] = (),
) -> str:
    """The original spec, running the minimized program from its own folder, with the
    workdir files DIR holds besides the program's own (those the result names, those DIR's
    check found it reads: `carried`) in its `files`, which a bundle carries, and without
    those DIR leaves out (`dropped`: the emptied ones, and the spec's files the result
    does not use): a bundle of it had carried them.

    An axis the settings step reset holds only the passing value it was reset to: the
    failing cell is then the smallest configuration, and a setting that does not matter
    no longer multiplies the cells (nor goes at all, when the program no longer reads it).
    """
    from reprospec.spec.yamlsource import dump_yaml

    document = json.loads(json.dumps(spec.document))
    document["name"] = (str(document.get("name", "spec"))[:38] + "-minimized").strip("-")
    # The original's description tells of the program it ran, whole: said to be that one's.
    # So does a title that names where that program failed (capture's `deadlock.py: hang
    # in w2 (deadlock.py:17)`): the minimized program's lines are others, and a run of it
    # was headed by the original's place. Said in the description as the original's; the
    # title is then the spec's name, as for any spec without one. A title naming no line
    # ("flaky KeyError in loader") says what fails, as true of the minimized program: kept.
    described = str(document.get("description") or "").strip()
    title = str(document.get("title", "") or "").strip()
    titled = title if _NAMES_A_LINE.search(title) else ""
    if titled:
        del document["title"]
    document["description"] = (
        f"Minimized by `reprospec minimize` from {spec.path.name}."
        + (f" The original's title: {titled}." if titled else "")
        + (f" The original's description:\n\n{described}\n" if described else "")
    )
    if program.workload:
        # A workload: the lowered numbers in place, run from the original's workdir (its
        # entrypoint modules, if any), since there are no files of its own.
        for path, value in program.fields:
            _set(document, path, value)
        environment = document.get("environment")
        if isinstance(environment, dict) and "workdir" in environment:
            environment["workdir"] = str(workdir)
        if isinstance(environment, dict) and "env" in environment:
            _set_env(environment, program)
        _reset_axes(document, reset)
        _drop_unused_axes(document)
        return dump_yaml(document)
    original_command = spec.document.get("command")
    words = [*program.head, *program.args]
    document["command"] = words if isinstance(original_command, list) else join_words(tuple(words))
    environment = document.setdefault("environment", {})
    if isinstance(environment, dict):
        environment["workdir"] = "."
        _set_env(environment, program)
    listed = document.get("files")
    if isinstance(listed, list) and dropped:
        document["files"] = listed = [f for f in listed if str(f) not in dropped]
        if not listed:
            del document["files"]
    if carried:
        before = [str(f) for f in listed] if isinstance(listed, list) else []
        document["files"] = [*before, *(n for n in dict.fromkeys(carried) if n not in before)]
    _reset_axes(document, reset)
    _drop_unused_axes(document)
    return dump_yaml(document)


# capture's header's first two lines, its provenance: the capture command, which names
# the original's options and axes (`--workers 2`) that the minimized command may not have.
_CAPTURED_BY = re.compile(r"^# Written by this command[^\n]*\n#   reprospec capture [^\n]*\n", re.M)


def _provenance(found: Minimized) -> str:
    """minimized.yaml's own provenance, in place of capture's: the search and the spec."""
    return (
        f"# Written by `reprospec minimize` (search {found.id}) from {found.spec_path},\n"
        f"# its cell {found.cell.id}; the original's capture command is in that spec.\n"
    )


def _commented(spec: Spec, provenance: str, text: str, out: Path) -> str:
    """minimized.yaml's `text` with the spec's comments at their keys (capture's header,
    the reasons beside `expect`, the editor's `$schema=` line, its relative path made to
    name the same file from DIR), as amplified.yaml keeps them (spec.comments); capture's
    TODO block not, where the spec sets what it lists (spec.todo). capture's first lines,
    `Written by this command ... reprospec capture -- python load.py --workers 2`, give way
    to minimize's `provenance`: the option they named was gone from the command."""
    from reprospec.spec.comments import axes_note_for, carry_comments, schema_moved
    from reprospec.spec.todo import without_filled_todo

    if spec.source_text:
        # capture's note on widening the axes, gone with the matrix, else naming DIR's
        # minimized.yaml, as DIR's other commands do (run from DIR).
        text = axes_note_for(carry_comments(spec.source_text, text), text, SPEC_NAME)
        text = without_filled_todo(text, spec.source_text)
        text = _CAPTURED_BY.sub(lambda _: provenance, text, count=1)
    return schema_moved(text, spec.base_dir, out)


# A title naming a line of the program: capture's `... (deadlock.py:17)`.
_NAMES_A_LINE = re.compile(r"\([^()\s]+:\d+\)")


def _set_env(environment: dict[str, Any], program: Program) -> None:
    """The variables the minimized program kept (none: no `env` at all)."""
    if program.env:
        environment["env"] = dict(program.env)
    else:
        environment.pop("env", None)


def _set(document: dict[str, Any], path: str, value: int) -> None:
    """`--set path=value` on a plain document (list indexes as numbers; a mapping missing on
    the way is made, as `--set` makes it: a model param left at its default)."""
    node: Any = document
    *parents, last = path.split(".")
    for part in parents:
        if isinstance(node, list):
            node = node[int(part)]
        else:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _reset_axes(document: dict[str, Any], reset: Sequence[Difference]) -> None:
    """An axis the settings step reset holds only the passing value it was reset to; the
    `expect.cases`, `matrix.exclude` and `matrix.include` entries that name another value
    of it go with the cells they named. Kept, a case's `when: {twice: "1"}` named a value
    the axis no longer has, minimized.yaml failed its own validation (`'1' is not a value
    of axis 'twice'`), and minimize stopped on a temporary file's path before the
    program's search. A case dropped was never the reduced cell's (it names another
    value), so that cell's expect is the original spec's for it; where that is not the
    failing cell's (the failing cell's own `when: {twice: "1"}` case, dropped),
    `not_the_reduced_cell` refuses the reset."""
    matrix = document.get("matrix")
    for diff in reset:
        if (
            isinstance(matrix, dict)
            and diff.is_axis
            and isinstance(matrix.get(diff.name), list)
            and diff.base is not MISSING
        ):
            matrix[diff.name] = [diff.base]
            _drop_naming(matrix, "exclude", None, diff.name, diff.base)
            # An include entry naming another value fits no combination left: kept, it was
            # a new cell of that value, its expect no longer the cases' that were dropped.
            _drop_naming(matrix, "include", None, diff.name, diff.base)
            expect = document.get("expect")
            if isinstance(expect, dict):
                _drop_naming(expect, "cases", "when", diff.name, diff.base)


def _drop_naming(
    parent: dict[str, Any], key: str, within: str | None, axis: str, kept: object
) -> None:
    """`parent[key]`'s entries (each one's `within` mapping, or the entry itself) that set
    `axis` to a value other than `kept` removed; the list too, where none is left."""
    entries = parent.get(key)
    if not isinstance(entries, list):
        return

    def names_another(entry: object) -> bool:
        where = entry.get(within) if isinstance(entry, dict) and within else entry
        return isinstance(where, dict) and axis in where and not same(where[axis], kept)

    left = [entry for entry in entries if not names_another(entry)]
    if len(left) == len(entries):
        return
    if left:
        parent[key] = left
    else:
        del parent[key]


def _drop_unused_axes(document: dict[str, Any]) -> None:
    """Axes the minimized spec no longer reads go, so its cells are its smallest configuration.

    The passes took `${{ matrix.pinned }}` out of the command when the bug does not need
    it; the axis left behind would still multiply the cells and name the cell by a
    setting that changes nothing. An axis named anywhere else (a case's `when`, an
    include or exclude, another field) stays: dropping it could change what runs.
    """
    matrix = document.get("matrix")
    if not isinstance(matrix, dict):
        return
    rest = json.dumps({k: v for k, v in document.items() if k != "matrix"})
    if _WHOLE_MATRIX.search(rest):
        # `${{ matrix }}` renders the whole cell (its JSON): every axis and key is read
        # without its name (a program that loads its cell as JSON and reads `records`).
        return
    entries = json.dumps({k: matrix[k] for k in ("include", "exclude") if k in matrix})
    for axis in [k for k in matrix if k not in ("include", "exclude")]:
        # `${{ matrix.AXIS }}` in any field, or AXIS as a key (a case's `when`, an entry).
        read = re.compile(rf"matrix\.{re.escape(axis)}(?![\w-])|{re.escape(json.dumps(axis))}:")
        if read.search(rest) is None and read.search(entries) is None:
            del matrix[axis]
    _drop_unread_entry_keys(matrix, rest)
    if not any(k != "exclude" for k in matrix):
        # No axis and no `include` entry left: no matrix. A matrix of `include` entries
        # alone is its cells (it was dropped, and the spec read axes it no longer had).
        document.pop("matrix")


# An expression that reads the matrix whole, not one of its names: `${{ matrix }}`.
_WHOLE_MATRIX = re.compile(r"\$\{\{[^}]*\bmatrix\b(?!\s*\.)[^}]*\}\}")


def _drop_unread_entry_keys(matrix: dict[str, Any], rest: str) -> None:
    """The keys of `include` entries that are no axis and that nothing else reads (`rest`:
    the spec but its matrix; nor an `exclude`) leave every entry, as an unread axis leaves
    the matrix: the passes took `--records ${{ matrix.records }}` out of the command, and
    `records: 2000` stayed in an entry, a setting that changed nothing. Kept where dropping
    it leaves an entry empty or two entries alike: the entries are then the cells."""
    entries = matrix.get("include")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return
    excluded = json.dumps(matrix.get("exclude"))
    keys = dict.fromkeys(k for entry in entries for k in entry if k not in matrix)
    for key in keys:
        read = re.compile(rf"matrix\.{re.escape(key)}(?![\w-])|{re.escape(json.dumps(key))}:")
        if read.search(rest) is not None or read.search(excluded) is not None:
            continue
        kept = [{k: v for k, v in entry.items() if k != key} for entry in entries]
        shown = [json.dumps(entry, sort_keys=True) for entry in kept]
        if all(kept) and len(set(shown)) == len(shown):
            entries[:] = kept


def not_the_reduced_cell(
    spec: Spec, program: Program, reduced: Reduced, expectation: Expectation, workdir: Path
) -> str:
    """Why the minimized spec, its reset axes holding the passing values, cannot name the
    reduced cell as failing as the original cell was expected to ("" where it can): it has
    no such cell (a matrix of `include` entries alone), or expects it to do otherwise.

    Asked before the program is minimized in that cell: where a case of the spec expects
    something else there (the cell to pass, or a crash without its signal), the minimized
    spec could not name the cell its program was checked in, so step 1's answer is not
    used and the program is minimized in the failing cell as the spec names it.
    """
    import tempfile

    from reprospec import api
    from reprospec.core.runoptions import RunOptions

    text = _spec_text(spec, program, reduced.reset, workdir)
    with tempfile.TemporaryDirectory(prefix="reprospec-minimize-") as folder:
        # Planned from the spec's own folder: its workdir and files resolve as the
        # original's do (the text runs the program from `.`, the minimized folder).
        path = Path(folder) / SPEC_NAME
        path.write_text(text, encoding="utf-8")
        # Its `files` are the original's, not in this folder: not looked for.
        plan = api.plan_run(api.load_spec(path, files=False), RunOptions())
    for cell in plan.cells:
        if all(
            axis not in cell.matrix or same(cell.matrix[axis], value)
            for axis, value in reduced.cell.matrix.items()
        ):
            if plan.expectation(cell) == expectation:
                return ""
            return f"the spec expects {reduced.cell.id}, where it fails too, to do otherwise"
    return f"no cell of the spec is {reduced.cell.id}, where it fails too"


def _standalone(
    spec_path: Path, found: Minimized
) -> tuple[Standalone, tuple[str, ...], AttemptPlan]:
    """The failing cell of the minimized spec at `spec_path` as the run report's standalone
    repro makes it, the `-m` filters that select the cell, and its first attempt's plan."""
    from reprospec import api
    from reprospec.core.runoptions import RunOptions
    from reprospec.plan.standalone import env_reads, standalone_of

    # DIR's spec, planned, not run: a file of its `files` is not a reason to refuse it.
    spec = api.load_spec(spec_path, files=False)
    filters = cell_filters(spec, found)
    attempt = api.plan_run(spec, RunOptions(matrix_filters=filters)).attempts[0]
    standalone = standalone_of(
        attempt, spec_path.parent, spec_name=spec.name, reads=env_reads(spec.document)
    )
    return standalone, filters, attempt


def _cell_after(spec_path: Path, found: Minimized) -> str:
    """The failing cell's id in the minimized spec at `spec_path`: its own axes only."""
    from reprospec import api
    from reprospec.core.runoptions import RunOptions

    spec = api.load_spec(spec_path, files=False)
    plan = api.plan_run(spec, RunOptions(matrix_filters=cell_filters(spec, found)))
    return plan.cells[0].id if plan.cells else found.cell.id


def _repro(spec_path: Path, found: Minimized) -> tuple[str, str]:
    """The failing cell's command line, as `sh` runs it in DIR: the run report's standalone
    repro of it (its variables as `NAME=value` words: the bare command of a failure that
    needs `MY_FLAG=1` passed, and repro.sh with it); and for a hang, as the run report
    says, that it never stops by itself (a maintainer's `sh repro.sh` waited on)."""
    from reprospec.plan.standalone import hang_note

    standalone, _, attempt = _standalone(spec_path, found)
    return standalone.run or attempt.command_text, hang_note(attempt)


_PERTURBED_NOTE = (
    "the failure was found under environment.perturb, which a plain command line does not "
    "apply, so repro.sh reruns the minimized spec"
)


def _rerun(spec_path: Path, found: Minimized) -> str:
    """`reprospec run minimized.yaml -m ...`: the failing cell as reprospec runs it."""
    from reprospec import api

    return _rerun_line(cell_filters(api.load_spec(spec_path, files=False), found))


def cell_filters(spec: Spec, found: Minimized) -> tuple[str, ...]:
    """The `-m AXIS=VALUE` filters that select the failing cell in the minimized spec (the
    axes it still has: a setting reset in step 1 is no axis any more)."""
    return filters_of(spec, found.cell)


def filters_of(spec: Spec, cell: Cell) -> tuple[str, ...]:
    """The `-m AXIS=VALUE` filters that select the original spec's `cell` in the minimized
    `spec`: its values of the axes the minimized spec still has."""
    axes = spec.document.get("matrix")
    kept = set(axes) if isinstance(axes, dict) else set()
    # An `include` entry's keys are axes too (a matrix may be its entries alone).
    entries = axes.get("include") if isinstance(axes, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        kept.update(entry if isinstance(entry, dict) else ())
    return tuple(f"{a}={json.dumps(v)}" for a, v in cell.matrix.items() if a in kept)


def _rerun_line(filters: Sequence[str]) -> str:
    return join_words(("reprospec", "run", SPEC_NAME, *(w for f in filters for w in ("-m", f))))


def _workload_repro(spec_path: Path, found: Minimized) -> tuple[str, str]:
    """The failing cell's repro.py as `run` writes it, or the run of the minimized spec and
    why there is no script (an injected fault does not fire without reprospec)."""
    from reprospec.plan.standalone import REPRO_PY

    standalone, filters, _ = _standalone(spec_path, found)
    if standalone.script and standalone.run:
        (spec_path.parent / REPRO_PY).write_text(standalone.script, encoding="utf-8")
        return standalone.run, ""
    return _rerun_line(filters), (
        standalone.unavailable or "the harness cannot write a repro.py for this cell"
    )


def to_dict(found: Minimized) -> JsonObject:
    r = found.result
    return {
        "perturbed": list(found.perturbed),
        "lines_before": sizes(r).lines[0],
        "lines_after": sizes(r).lines[1],
        "file_lines_before": sizes(r).file_lines[0],
        "file_lines_after": sizes(r).file_lines[1],
        "nodes_before": r.original.nodes,
        "nodes_after": r.program.nodes,
        "attempts": attempts(found),
        # The --budget it ran under: a larger one on an --out that cannot be written is
        # refused before the replay (isolation.state.check_out_to_go_on).
        "budget": found.budget,
        "signature": found.signature,
        "rate": r.rate.to_dict(),
        "status": r.status,
        "message": r.message,
        "kept_output": found.kept_output,
        "spec": found.spec_name,
        # The spec minimized, absolute: a later minimize -o DIR tells its own answer from
        # another spec's of the same name by it (driver._check_output).
        "spec_path": str(Path(found.spec_path).absolute()),
        # The original program's content hash (Program.key): the same spec's answer for
        # a program since changed is another minimization's (driver._check_output).
        "program": r.original.key,
        "cell": found.cell.id,
        "cell_after": found.cell_after or found.cell.id,
        "passing_cells": [c.id for c in found.passing],
        "command_before": r.original.command,
        "command_after": r.program.command,
        "output": str(found.output),
        "repro": found.repro,
        "seconds": round(found.seconds, 1),
        "reused": found.reused,
        "replayed": found.replayed,
        "id": found.id,
        "search": r.to_dict(),
        "settings": found.settings.to_dict() if found.settings else None,
        "fields": [
            {"field": path, "before": before, "after": after}
            for path, before, after in fields(found.result)
        ],
        "repro_note": found.repro_note,
        "repro_waits": found.repro_waits,
        "unconfirmed": found.unconfirmed,
        "added": list(found.added),
        "dropped": list(found.dropped),
        "unlisted": list(found.unlisted),
        "linked": [{"file": name, "target": target} for name, target in found.linked],
        "search_preload": list(found.search_preload) if found.search_preload is not None else None,
        "message_before": found.message_before,
        "message_after": found.message_after,
        "unperturbed": found.unperturbed.to_dict() if found.unperturbed else None,
        "kept_perturbed": _kept_dict(found),
        "no_passing_cell": bool(_no_passing_warning(found)),
        "rate_change": change.to_dict() if (change := _rate_change(found)) else None,
        **({"unsaved": found.unsaved} if found.unsaved else {}),
    }


def _kept_dict(found: Minimized) -> JsonObject | None:
    """search.py's point 6 for a script: the base it rested on, where from, what it cost."""
    kept = found.result.kept_perturbed
    if kept is None:
        return None
    base = found.baseline
    return {
        **kept.to_dict(),
        "base": base.rate.to_dict() if base else None,
        "base_source": base.phrase if base else "",
    }


def _hung_in(r: MinimizeResult) -> str:
    """` (hung in w1 -> with, w2 -> with)`: where the original's hangs sat, which the
    signature `hang` does not say and each accepted candidate kept (search.py's point 7);
    "" where not read."""
    same = r.same_failure
    if same is None or not same.original_places:
        return ""
    return f" (hung {places_said(same.original_places)})"


def _same_line(found: Minimized) -> str:
    """minimize.md's line for search.py's point 7: the same failure for the same reason,
    no new exception and no clearly higher rate, and what those rules rejected and cost."""
    same = found.result.same_failure
    if same is None:
        return ""
    printed = ", ".join(same.original_exceptions) or "none"
    rounds = plural(same.passing_relooked_rounds, "round")
    how = {
        # A candidate's passes then: `passing_needed` moves with p, and later ones may ask more.
        "": f"{rounds}, as often as a candidate's then",
        "printed": f"{rounds}, until they printed it too",
        "budget": f"{rounds}, cut short by the budget",
    }[same.passing_relooked_stopped]
    relooked = (
        f"; the original's passing cells ran again ({plural(same.passing_relooked, 'attempt')}, "
        f"in the budget), {how}, at the first program whose passes printed "
        "a type theirs had not: what they print then is the original's"
        if same.passing_relooked
        else ""
    )
    exceptions = (
        f"{plural(same.new_exception_rejected, 'candidate')} rejected whose failure printed an "
        f"exception the original's attempts never did ({', '.join(same.new_exceptions)})"
        if same.new_exception_rejected
        else "no candidate's failure printed an exception the original's attempts never did"
    ) + (
        f"; {plural(same.new_passing_rejected, 'candidate')} rejected whose passing cell "
        f"passed printing {', '.join(same.new_passing_exceptions)}, which the original's never did"
        if same.new_passing_rejected
        else ""
    )
    exceptions += relooked
    hangs = (
        f"; the original hung {places_said(same.original_places)}: "
        + (
            f"{plural(same.hangs_elsewhere_rejected, 'candidate')} rejected whose hang sat "
            f"elsewhere ({places_said(same.hung_elsewhere, '')})"
            if same.hangs_elsewhere_rejected
            else "no candidate's hang sat elsewhere"
        )
        if same.original_places
        else ""
    )
    original = found.result.original_rate
    rate = (
        f"a candidate the search would accept failed up to {same.rate_most} times, stopping "
        f"once its 95% interval was above the original's {original.matched}/"
        f"{original.attempts} ({interval_text(original)}; rejected: another "
        "cause) or could no longer get there: "
        f"{same.rate_rejected} of {same.rate_checked} rejected, "
        f"{plural(same.rate_attempts, 'attempt')} (in the budget)"
        if same.rate_applies
        else f"the original's rate ({original.matched}/{original.attempts}, up to "
        f"{printed_interval(original).high}) leaves no room for a candidate's "
        f"{plural(same.rate_most, 'attempt')} to "
        "show one clearly higher: not asked"
    )
    every = (
        f"; the original came back clean at times, so a candidate the search would accept "
        f"failed up to {plural(same.every_time_most, 'time')} in a row, stopping at its first "
        f"clean attempt (kept), rejected where it failed in every one (at the original's "
        f"{original.matched / original.attempts:.0%}, that many in a row happen at most "
        f"{found.result.error:.0%} of the time: another cause): {same.every_time_rejected} of "
        f"{same.rate_checked} rejected, {plural(same.rate_attempts, 'attempt')} (in the budget)"
        if same.every_time_most
        else ""
    )
    loops = loops_kept(found.result.program)
    kept = (
        f"; {plural(len(loops), 'loop')} left whole, each never replaced by its body, which reads "
        f"its variable ({', '.join(f'`{loop}`' for loop in loops)}): the body alone runs once, "
        "on whatever that name held before (an earlier loop's last item: only the last "
        "thread joined), another program that may fail the same way"
        if loops
        else ""
    )
    return (
        f"- **Same failure**: the original printed {printed}; {exceptions}{hangs}; {rate}{every}"
        f"{kept}"
    )


def _kept_line(found: Minimized) -> str:
    """minimize.md's line for search.py's point 6: whether candidates had to keep needing
    the perturbation, on what base, and what that cost."""
    kept = found.result.kept_perturbed
    if kept is None:
        return ""
    base = found.baseline
    said = (
        f"the original failed as the expect says in {base.rate.matched} of "
        f"{plural(base.rate.attempts, 'attempt')} without it ({base.phrase})"
        if base
        else "the original was not measured without it (the budget left no room for it, or "
        "its attempts could not run)"
    )
    if not kept.applies:
        return (
            f"- **Still needs the perturbation**: {said}: not asked of the candidates (only "
            "where the original fails in none, or so rarely that a candidate's attempts could "
            "show one failing clearly more often)"
        )
    if kept.rule == "rarer":
        return (
            f"- **Still needs the perturbation**: {said}, so each candidate the search would "
            f"accept ran without it, up to {plural(kept.most, 'attempt')}, stopping once its 95% "
            "interval was above the original's (rejected: clearly more often, another bug) or "
            f"could no longer get there: {kept.rejected} of {kept.checked} rejected, "
            f"{plural(kept.attempts, 'attempt')} (in the budget)"
        )
    return (
        f"- **Still needs the perturbation**: {said}, so each candidate the search would "
        f"accept ran once without it and was rejected where it failed so: "
        f"{kept.rejected} of {kept.checked} rejected, {plural(kept.attempts, 'attempt')} "
        f"(in the budget)"
    )


@frozen
class Sizes:
    """(before, after) of the lines of Python and of the files, like with like."""

    lines: tuple[int, int]
    file_lines: tuple[int, int]


def sizes(result: MinimizeResult) -> Sizes:
    """The result's files as DIR holds them, each against the original's file in the same
    layout: a file minimize changed is written by `ast.unparse`, so its original is counted
    as unparse writes it too (program.as_written); one it left alone is the original's own
    text, counted as it is on both sides. Counted raw, a 28-line file cut by one statement
    read 'lines of the files 28 -> 29' (unparse's blank line before each method); counted
    unparsed on both sides, a file left whole read 30 lines where DIR's has 28."""
    after = dict(result.program.files)
    counts = [0, 0, 0, 0]
    for path, text in result.original.files:
        now = after.get(path, text)
        before = counted_as(text, now)
        for index, value in enumerate(
            (
                source_lines(before),
                source_lines(now),
                len(before.splitlines()),
                len(now.splitlines()),
            )
        ):
            counts[index] += value
    return Sizes((counts[0], counts[1]), (counts[2], counts[3]))


def _layout_note(result: MinimizeResult) -> list[str]:
    """Where the original's files in their own layout count otherwise than in the table
    (`sizes`: a file minimize changed counted as unparse writes it): both figures."""
    if result.original.workload:
        return []
    code, file = result.original.given_lines
    counted = sizes(result)
    if (code, file) == (counted.lines[0], counted.file_lines[0]):
        return []
    return [
        "- **Lines**: a file minimize changed is written by `ast.unparse` (no comments, one "
        "statement a line, its own blank lines), and its original is counted as unparse writes "
        f"it too, so that before and after compare; as it is, the original has {code} lines "
        f"of Python in {file} lines of file"
    ]


def fields(result: MinimizeResult) -> list[tuple[str, int, int]]:
    """A workload's numbers: (field, before, after); [] for a command spec."""
    after = dict(result.program.fields)
    return [(path, value, after[path]) for path, value in result.original.fields]


def _size_change(result: MinimizeResult) -> str:
    if result.original.workload:
        return ", ".join(
            f"{path.removeprefix('workload.')} {before} -> {after}"
            for path, before, after in fields(result)
        )
    counted = sizes(result).lines
    said = f"{counted[0]} -> {counted[1]} lines"
    if counted[0] != counted[1]:
        return said
    # The lines as they were: what shrank, where something did (a user's `7 -> 7 lines ...
    # (minimized)`, whose arguments were cut, read as nothing done).
    original, program = result.original, result.program
    shrank = [
        f"{what} {before} -> {after}"
        for what, before, after in (
            ("AST nodes", original.nodes, program.nodes),
            ("the command's arguments", len(original.args), len(program.args)),
            ("files", _kept_files(original), _kept_files(program)),
            ("environment variables", len(original.env), len(program.env)),
        )
        if after < before
    ]
    return f"{said}, {', '.join(shrank)}" if shrank else said


def _kept_files(program: Program) -> int:
    """The program's files that still hold something (minimize empties a file it cuts)."""
    return sum(1 for _, text in program.files if text.strip())


def attempts(found: Minimized) -> int:
    """Attempts in all: the settings step's (isolate's) and the program's."""
    return found.result.attempts + (found.settings.attempts if found.settings else 0)


def sentence(found: Minimized) -> str:
    """One line: what came of it."""
    r = found.result
    head = _size_change(r)
    if r.status in ("refused", "infra-error"):
        return f"not minimized ({r.status}): {r.message}"
    tail = f"; {r.message}" if r.message else ""
    missed = f"; BUT {found.unconfirmed}" if found.unconfirmed else ""
    added = (
        f"; DIR's rerun read {plural(len(found.added), 'file')} the result does not name, now in "
        f"DIR and its files: {', '.join(found.added)}"
        if found.added
        else ""
    )
    dropped = (
        f"; DIR leaves out {plural(len(found.dropped), 'emptied file')} its rerun neither imported "
        f"nor read: {', '.join(found.dropped)}"
        if found.dropped
        else ""
    )
    unlisted = (
        f"; DIR leaves out {len(found.unlisted)} of the spec's files its rerun neither "
        f"opened nor imported and nothing names: {', '.join(found.unlisted)}"
        if found.unlisted
        else ""
    )
    linked = (
        "; DIR links, not copies, the spec's files linked into the workdir from elsewhere: "
        + ", ".join(f"{name} (a link to {target})" for name, target in found.linked)
        if found.linked
        else ""
    )
    return (
        f"{head} in {plural(attempts(found), 'attempt')} ({r.status}); {_fails_as(found)}, "
        f"{_passing_checked(found)}{tail}{added}{dropped}{unlisted}{linked}{missed}"
    )


def _measured(found: Minimized, rate: Rate, *, named: bool = False) -> str:
    """`3/20 (5%-36%)`, or what is true of a rate no attempt measured: 0/0 is no rate (a
    search interrupted before its final check read `in 0/0 (0%-100%)`)."""
    return rate_text(rate, named=named) if rate.attempts else f"not measured{_before_stop(found)}"


def _before_stop(found: Minimized) -> str:
    """Why nothing was measured, where the search was interrupted."""
    return " before the interruption" if found.interrupted else ""


def _fails_as(found: Minimized) -> str:
    """`fails as SIGNATURE in 3/20 (5%-36%)`, or what was seen of it before it stopped."""
    rate = found.result.rate
    if not found.signature and found.settings is not None and found.settings.interrupted:
        # Stopped in step 1: isolate's attempts of the failing cell failed (its line says
        # so), and "no failure seen" denied them; the program's own were never run.
        return "its failure not read: interrupted in step 1 (isolate), before the program ran"
    if not found.signature:
        return f"no failure seen and no rate measured{_before_stop(found)}"
    if not rate.attempts:
        return f"fails as {found.signature}, its rate {_measured(found, rate)}"
    return f"fails as {found.signature} in {_measured(found, rate)}"


def _passing_checked(found: Minimized) -> str:
    """`passing cells pass 5/5`, or that there is none, or that none was checked (`0/0`
    said of a spec without a passing cell, and of a search stopped before it checked)."""
    checked = found.result.passing_checked
    if not found.passing:
        return _left_out(found) or "no passing cell to check"
    if not checked.ran:
        return f"passing cells not checked{_before_stop(found)}"
    return f"passing cells pass {checked.passed}/{checked.ran}"


def text(found: Minimized) -> str:
    first = f"{perturbed_phrase(found.perturbed)}\n" if found.perturbed else ""
    warning = _unperturbed_warning(found)
    first += f"{warning}\n" if warning else ""
    first += "".join(f"warning: {w}\n" for w in warnings(found))
    settings = (
        f"settings: {found.settings.sentence()}\n"
        if found.settings and found.settings.reset
        else ""
    )
    figures = f"{plural(attempts(found), 'attempt')} of a budget of {found.budget}"
    return (
        first
        + settings
        + sentence(found)
        + (f"\n{figures}{replayed_phrase(found.replayed, found.reused)}" if found.reused else "")
        + (f"\n{_continues(found)}" if found.result.budget_spent else "")
        + _where(found)
        + _report_line(found)
    )


def _where(found: Minimized) -> str:
    """The answer's last lines: DIR and its repro.sh. A refused or infra-error search shrank
    nothing: DIR holds the original as it ran, whose repro.sh did not fail (or could not
    run), and "minimized: DIR" and "repro: DIR/repro.sh" named them as the answer."""
    if found.result.status in ("refused", "infra-error"):
        return f"\nnot minimized: {found.output} holds the original program as it ran"
    if _original(found):
        # Stopped before a first smaller candidate (in the original's runs, or step 1's
        # isolate): "minimized: DIR" named the whole original program as the answer.
        return (
            f"\nnot minimized (interrupted before anything was cut): {found.output} holds "
            "the original program as it ran"
        )
    return f"\nminimized: {found.output}\nrepro: {found.output / 'repro.sh'}"


def _report_line(found: Minimized) -> str:
    """The report's path, part of the answer as printed (isolate's and bisect's say it too):
    DIR's minimize.md, which holds the answer even where the search folder could not."""
    return f"\nreport: {found.output / 'minimize.md'}"


def _original(found: Minimized) -> bool:
    """Whether DIR holds the original program as it ran: refused, could not run, or
    interrupted before anything was cut."""
    if found.result.status in ("refused", "infra-error"):
        return True
    return found.interrupted and not _cut_anything(found)


def _cut_anything(found: Minimized) -> bool:
    """Whether the answer differs from the original: a program cut, or settings reset."""
    reset = found.settings is not None and bool(found.settings.reset)
    return reset or found.result.program != found.result.original


def _unperturbed_warning(found: Minimized) -> str:
    """`BUT the minimized program fails without the perturbation too ...` where it does
    clearly more often than the original: amplify's "without it the failure is rarer"
    no longer holds of the result, which may be another bug (unperturbed.py)."""
    warning = found.unperturbed.warning() if found.unperturbed else ""
    return f"BUT {warning}" if warning else ""


def warnings(found: Minimized) -> list[str]:
    """What the answer's first lines must say of a result that may not be the bug: a
    spec with no passing cell, a rate clearly changed (ratechange.py)."""
    change = _rate_change(found)
    kept = (
        f"{found.kept_output} keeps the minimization it held (a refusal replaces no "
        f"result); this search's files are in {found.output}"
        if found.kept_output
        else ""
    )
    return [w for w in (kept, _no_passing_warning(found), change.warning() if change else "") if w]


def _answered(found: Minimized) -> bool:
    """Whether the search ended on a result whose rate the final check measured."""
    return not found.interrupted and found.result.status in ("minimized", "budget", "unconfirmed")


def _no_passing_warning(found: Minimized) -> str:
    """A command spec minimized with no passing cell checked (what `capture` writes: one
    cell): the oracle is only "fails with the same signature", which a user's race met as
    `raise RuntimeError(...)` and its segfault as `ctypes.string_at(0)`, the condition
    that is the bug gone. Said so that the reader does not take the result for the bug."""
    # Every result but a refusal's (none): a partial one (interrupted, out of time) slid as
    # far as a finished one can, and was the one a user's stopped run left unsaid.
    if found.passing or found.result.program.workload or found.result.status == "refused":
        return ""
    held = f"is held only to failing as {found.signature or 'the expect says'}"
    if found.passing_left_out:
        return (
            f"{_left_out(found)}: the result {held}, so it may be any program that fails so, "
            "the condition that is the bug gone; minimize with them to hold it to them"
        )
    return no_passing_words(held)


def _left_out(found: Minimized) -> str:
    """That the spec's passing cells were left out by the option, where they were: "the spec
    has no passing cell" was said of a spec that has them."""
    if not found.passing_left_out:
        return ""
    return (
        f"the spec's {plural(found.passing_left_out, 'passing cell')} left out "
        "(MinimizeOptions(passing_cells=False)), none checked"
    )


def no_passing_words(held: str) -> str:
    """The warning of a command spec with no passing cell; `held` says what the result is
    held to (minimize says it before its search too, `driver.py`, in the future tense)."""
    return (
        f"the spec has no passing cell: the result {held}, so it may be any program that "
        "fails so, the condition that is the bug gone; give the spec a passing cell "
        "(a matrix axis with a value where the program passes and a case that says so, "
        "`expect.cases: [{when: {AXIS: VALUE}, outcome: pass}]`) and minimize again"
    )


def _rate_change(found: Minimized) -> RateChange | None:
    """The result's rate against the original's, where they are clearly apart."""
    if not _answered(found):
        return None
    return rate_change(found.result.original_rate, found.result.rate)


def _messages(found: Minimized) -> list[str]:
    """The original's and the result's failure messages side by side (where known)."""
    # Where the result's row is empty, why: DIR's rerun did not fail (its failures were the
    # search's, whose messages are not kept), or its failure printed none.
    after = "(none printed)"
    if not found.result.rate.attempts and not found.message_after:
        # Not run at the end (stopped first): "none printed" would say it ran and printed none.
        after = (
            "(not measured: the search was stopped before its final check)"
            if found.interrupted
            else "(not measured: no final check ran it)"
        )
    elif found.unconfirmed:
        after = "(DIR's rerun did not fail"
        if found.result.rate.matched:
            after += f"; the search's final check saw it fail in {rate_text(found.result.rate)}"
        after += ", its messages not kept)"
    rows = [
        ("the original", found.message_before, "(none printed)"),
        ("the result", found.message_after, after),
    ]
    if found.unperturbed is not None:
        rows.append(
            ("the result, unperturbed", found.unperturbed.message_unperturbed, "(none printed)")
        )
    if not found.message_before and not found.message_after:
        return []
    lines = ["", "## Failure messages", "", "| | message |", "|---|---|"]
    lines += [f"| {who} | {_cell(message, missing)} |" for who, message, missing in rows]
    return lines


def _cell(message: str, missing: str = "(none printed)") -> str:
    """A message in a table cell: one line, its pipes escaped, at most 300 characters;
    `missing` where there is none (why, not "none seen" of a failure that was seen)."""
    if not message:
        return missing
    flat = " ".join(message.split())
    flat = flat if len(flat) <= 300 else flat[:297] + "..."
    return "`" + flat.replace("|", "\\|").replace("`", "'") + "`"


def _continues(found: Minimized) -> str:
    """What a larger --budget replays: every attempt but the final check's, which checked
    the smallest program seen so far, and a longer search checks a smaller one."""
    r = found.result
    final = r.rate.attempts + r.passing_checked.ran
    return budget_continues(
        "minimization",
        attempts(found) - final,
        "the final check" if final else "",
        said=found.budget_said,
    )


def markdown(found: Minimized) -> str:
    r = found.result
    lines = [
        f"# Minimized: {found.spec_name}, cell {found.cell.id}",
        "",
        *([f"**{perturbed_phrase(found.perturbed)}.**", ""] if found.perturbed else []),
        # In minimize.md itself the messages are below, not "in minimize.md".
        *(
            [f"**{_unperturbed_warning(found).replace(' in minimize.md', ' below')}.**", ""]
            if _unperturbed_warning(found)
            else []
        ),
        # In minimize.md itself the diff and the messages are below, not "in minimize.md".
        *[
            line
            for w in warnings(found)
            for line in (f"**Warning: {w.replace(' in minimize.md', ' below')}.**", "")
        ],
        sentence(found),
        "",
        "| | before | after |",
        "|---|---:|---:|",
    ]
    if r.original.workload:
        lines += [f"| `{path}` | {before} | {after} |" for path, before, after in fields(r)]
    else:
        lines += [
            f"| lines of Python | {sizes(r).lines[0]} | {sizes(r).lines[1]} |",
            f"| lines of the files | {sizes(r).file_lines[0]} | {sizes(r).file_lines[1]} |",
            f"| AST nodes | {r.original.nodes} | {r.program.nodes} |",
            f"| command | `{r.original.command}` | `{r.program.command}` |",
        ]
    if found.settings is not None:
        after = found.cell_after or found.cell.id  # as minimized.yaml names it
        lines.append(f"| failing cell | `{found.settings.original.id}` | `{after}` |")
    if r.original.env:
        lines.append(f"| environment variables | {len(r.original.env)} | {len(r.program.env)} |")
    lines += [
        "",
        *_layout_note(r),
        f"- **Signature**: `{found.signature or 'none seen'}`{_hung_in(r)}, the failing cell's "
        f"expect ({_expect(found)}); passing cells checked with every accepted candidate: "
        f"{', '.join(c.id for c in found.passing) or _none_checked(found)}",
        f"- **Rate of the result**: {_measured(found, r.rate, named=True)}; the original: "
        f"{_measured(found, r.original_rate)}"
        + (
            f" ({r.original_rate.attempts + 1} ran; counted without the failure they stopped "
            "at, which reads a rate high)"
            if r.original_stopped
            else " (ran until its first failure, which reads a rate high)"
            if r.original_sought
            else ""
        ),
        "- **Passing cells with the result**: "
        + (
            f"{r.passing_checked.passed}/{r.passing_checked.ran} attempts passed"
            if r.passing_checked.ran
            else _passing_checked(found)
        ),
        f"- **Attempts**: {attempts(found)} of the budget"
        f"{f' of {found.budget}' if found.budget else ''} ({r.attempts} for the program); "
        f"{plural(r.ran, 'candidate')} ran"
        + (
            f" ({r.cannot_run} of them could not start: {r.cannot_run_reason})"
            if r.cannot_run
            else ""
        )
        + f", {r.candidates - r.ran + 1} answered from the cache"
        # An earlier run of the same minimization, interrupted, out of budget or finished (a
        # finished one run again answers every probe from its state): "interrupted" was
        # said of them all.
        + (
            f"; {found.replayed} of them replayed from an earlier run "
            f"({plural(found.reused, 'probe')})"
            if found.reused
            else ""
        )
        + (f"; {_continues(found)}" if r.budget_spent else ""),
        f"- **Time**: {_duration(found.seconds)}"
        # A resumed search's own: "1s" of a minimization whose first run took 29 minutes.
        + (" this run, not counting the earlier run's replayed attempts" if found.reused else ""),
        "- **Rule**: a candidate fails at its first attempt that matches the expect with the "
        "same signature, printing no exception the original never did"
        # A hang's signature is `hang` wherever it sits: its place is the rule's too.
        + (
            ", hanging where the original did"
            if r.same_failure is not None and r.same_failure.original_places
            else ""
        )
        + ", and then its "
        f"passing cells must pass; it is dropped after "
        f"n clean attempts with (1 - p)^n <= {r.error:g}, p = {r.rate_used:.2f} (the assumed "
        f"minimum {r.min_rate:g}, raised to the 95% lower bound of the rate measured on the "
        f"original and the candidates seen failing while every attempt failed, else on "
        f"the original's attempts without the failure they stopped at)"
        + _deterministic_rule(r)
        + _passing_rule(r, bool(found.passing)),
    ]
    if found.settings is not None:
        where = f" (`{found.settings.folder / 'isolate.md'}`)" if found.settings.folder else ""
        lines.append(f"- **Settings** (step 1, by isolate{where}): {found.settings.sentence()}")
        caveat = found.settings.unguarded(found.passing)
        if caveat:
            lines.append(f"- **Caveat**: {caveat}")
    preload = _preload_line(found)
    if preload:
        lines.append(preload)
    if _same_line(found):
        lines.append(_same_line(found))
    if _kept_line(found):
        lines.append(_kept_line(found))
    if found.unperturbed is not None:
        lines.append(found.unperturbed.line())
    for warning in r.warnings:
        lines.append(f"- **Warning**: {warning}")
    lines += [
        "",
        "## Rerun",
        "",
        "```sh",
        f"reprospec run {shlex.quote(str(found.output / SPEC_NAME))}",
        f"sh {shlex.quote(str(found.output / 'repro.sh'))}",
        "```",
        *(["", f"No standalone repro.py: {found.repro_note}."] if found.repro_note else []),
        *(["", f"repro.sh: {found.repro_waits}."] if found.repro_waits else []),
        *_messages(found),
        "",
        "## Diff",
        "",
        "```diff",
    ]
    lines += _diff(r.original, r.program)
    lines += ["```", ""]
    return "\n".join(lines)


def _none_checked(found: Minimized) -> str:
    """minimize.md's word for no passing cell checked: left out by the option, or none."""
    return f"none ({_left_out(found)})" if found.passing_left_out else "none (the spec has none)"


def _passing_rule(r: MinimizeResult, passing: bool) -> str:
    """How many passes of each passing cell accepted a candidate, and at which rate
    (search.py's `passing_rate`): a broken passing cell fails at its own rate."""
    if not passing or not r.passing_needed:
        return ""
    why = (
        "the assumed minimum, since the original came back clean: a passing cell a candidate "
        "broke fails at its own rate, which nothing measured"
        if r.original_rate.matched < r.original_rate.attempts
        else "p, since the original failed in every attempt"
    )
    return (
        f"; a candidate seen failing is accepted after {r.passing_needed} passes of each "
        f"passing cell, (1 - q)^n <= 0.01, q = {r.passing_rate:.2f} ({why})"
    )


def _deterministic_rule(r: MinimizeResult) -> str:
    """The rule's second half where the failure was read as deterministic (search.py's
    point 2): why a clean candidate went after fewer attempts than (1 - p)^n asks, and
    that the passes that accept one did not (point 3)."""
    if not r.deterministic:
        return ""
    return (
        f"; while the original had failed in every attempt and no candidate seen failing "
        f"had come back clean, the failure was also read as deterministic (weight "
        f"{r.deterministic:.2f}, beside flaky at 0.9 and at the original's 95% lower bound), "
        f"the chance of n clean attempts summed over the readings: n = {r.clean_needed}; the "
        f"passes of each passing cell that accept a candidate keep p alone, since accepting "
        f"one that lost the condition makes the result another bug ({r.passing_needed} at "
        f"the end)"
    )


def _preload_line(found: Minimized) -> str:
    """How the search's attempts ran against how DIR's check and a rerun run, where
    `--preload` made them differ: a forked attempt differs from a fresh one in what the
    spec cannot show (preloadhint.py), so the reader is told which one verified what."""
    given = found.search_preload
    if given is None or given == found.spec_preload:
        return ""
    modules = ",".join(given)
    searched = (
        f"forked from a preload server that imported {', '.join(given)} once "
        f"(`--preload {modules}`)"
        if given
        else "fresh (`--preload none`)"
    )
    line = f"- **Preload**: the search's attempts ran {searched}, its rates with them"
    if not dir_checked(found):
        return line
    own = ", ".join(found.spec_preload)
    checked = (
        f"forked under the spec's own run.preload ({own}), as `reprospec run` of "
        "minimized.yaml runs it"
        if found.spec_preload
        else "fresh, as `reprospec run` of minimized.yaml and repro.sh run it"
    )
    return f"{line}; DIR's final check ran {checked}"


def _expect(found: Minimized) -> str:
    return ", ".join(f"{k}: {v}" for k, v in found.expectation.to_dict().items())


def _diff(before: Program, after: Program) -> list[str]:
    out: list[str] = []
    after_fields = dict(after.fields)
    for path, value in before.fields:
        if after_fields[path] != value:
            out += [f"-{path}: {value}", f"+{path}: {after_fields[path]}"]
    if before.command != after.command:
        out += [f"-$ {before.command}", f"+$ {after.command}"]
    kept = dict(after.env)
    out += [f"-env {name}={value}" for name, value in before.env if name not in kept]
    for (path, old), (_, new) in zip(before.files, after.files, strict=True):
        out += [
            line.rstrip("\n")
            for line in difflib.unified_diff(
                old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
            )
        ]
    return out


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s" if minutes else f"{rest}s"
