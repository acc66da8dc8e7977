"""`reprospec bundle RUN -o FILE --verify`: the archive rerun the way its recipient runs it.

A bundle carries the files its cells name (export/tree.py). A file the program opens by a
name it builds or keeps in its code (`open("../common/cfg.json")`, a config under /tmp) is
named nowhere, so the archive looked complete and its recipient learnt otherwise from a
FileNotFoundError and `not-reproduced`. The verify unpacks the archive into a new
temporary folder, away from the tree it was made from, and runs its spec there as
`reprospec run FILE --yes` does (the run's `-m` filters, `--timeout`, observe mode and
runner) on the run's failing cells, each once, or as often as the run tried it where its
attempts did not all end alike or it expects a rate (one attempt of a flaky cell says
nothing). Per cell it says whether the rerun gives the run's verdict and signatures, and,
whatever came back, the files the rerun's output says were missing (`No such file or
directory: '../common/cfg.json'`) that are in the tree here, absent from the archive.

A file read by its absolute path (/tmp/settings.json) is still there on this machine, so
the rerun finds it: the rerun's Python processes record what they open (the record
capture makes, stackdump's audit hook), and a file of the program's own read outside the
unpacked tree is named. A non-Python program's reads are not recorded.

It lives with capture's readers, which it uses: capture's verify asks the same of a copy
of a captured spec's tree.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from reprospec.capture.datafiles import OUTPUT_TAIL_BYTES, named_in, read_outside
from reprospec.capture.footprint import RECORD_IMPORTS_VAR
from reprospec.core import environ
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Spec
from reprospec.core.logtext import shell_join
from reprospec.core.results import AttemptResult, CellResult, NotRun, RunResult, VerdictKind
from reprospec.core.runoptions import RunOptions
from reprospec.core.words import attempts_phrase, plural
from reprospec.export.bundle import Packed, unpack
from reprospec.outcome.evidence import read_log
from reprospec.plan.failingcell import cell_filters
from reprospec.plan.run import RunPlan, plan_run
from reprospec.spec.load import load_spec
from reprospec.store.runfolder import RunFolder

# How one run of the unpacked spec is made (the CLI's: live progress, Ctrl-C).
Execute = Callable[[RunPlan], RunResult]

# The lines of a rerun's output that say a file was missing: Python's FileNotFoundError
# (`[Errno 2] No such file or directory: 'x'`), `python: can't open file 'x'`, a shell's
# or a C library's `cat: x: No such file or directory`. Only these lines are read for
# names: a word elsewhere in the output names no missing file.
_MISSING_LINE = re.compile(r"No such file or directory|can't open file|FileNotFoundError")


@frozen
class Missing:
    """A file the bundle's rerun did not find that the tree it was made from holds."""

    path: Path  # where it is on this machine
    named: str  # relative to its cell's workdir (`../common/cfg.json`)

    @property
    def in_workdir(self) -> bool:
        return not self.named.startswith("../")

    def advice(self) -> str:
        """What puts it into the next bundle: `files` holds only the workdir's files."""
        if self.in_workdir:
            return f"list {self.named} in the spec's `files`"
        return (
            f"`files` holds only the workdir's files: move {self.named} into the workdir "
            "(or make the workdir a folder that holds it) and list it in `files`"
        )


@frozen
class CellCheck:
    """One cell of the run, rerun from the unpacked archive: the run's verdict and the
    rerun's, whether the rerun's outcome counts as the run's (`reproduced`), the rerun's
    signatures no attempt of the run had (`unlike`: what came back instead), and the files
    the rerun looked for that the archive lacks (`missing`, whether or not it came back)."""

    cell: str
    verdict: VerdictKind
    ran: str  # the run's attempts (`error exit 1 KeyError`, `2x crash SIGSEGV, 1x pass`)
    rerun_verdict: VerdictKind
    rerun: str
    attempts: int  # the rerun's
    reproduced: bool
    missing: tuple[Missing, ...] = ()
    unlike: tuple[str, ...] = ()
    # A rate cell the run reproduced whose rerun failed the run's way, but too few times to
    # decide its rate at this many attempts: the bundle reproduces it.
    rate_undecided: bool = False

    @property
    def complete(self) -> bool:
        """It came back, and looked for no file the archive lacks."""
        return self.reproduced and not self.missing


@frozen
class BundleCheck:
    """What the verify found: each checked cell, the cells it could not check and why,
    the files read outside the unpacked tree, and where its runs are (kept when it did not
    reproduce; removed otherwise)."""

    checked: tuple[CellCheck, ...]
    skipped: tuple[str, ...]
    outside: tuple[str, ...]
    folder: Path
    reports: tuple[Path, ...]
    interrupted: bool = False

    @property
    def reproduced(self) -> bool:
        """Every checked cell came back as the run had it, looking for no file the archive
        lacks (and one was checked)."""
        return bool(self.checked) and not self.interrupted and all(c.complete for c in self.checked)


def verify(packed: Packed, run: RunResult, run_dir: Path, execute: Execute) -> BundleCheck:
    """Unpack `packed` into a new temporary folder and rerun the cells `checked_cells`
    picks of `run` (made in `run_dir`) there, through `execute`, into a store of that
    folder's own: the user's store and history never see the verify. The folder is removed
    when every cell reproduced; otherwise kept, for its runs' reports."""
    folder = Path(tempfile.mkdtemp(prefix="reprospec-verify-"))
    check = None
    try:
        check = _verify(packed, run, run_dir, execute, folder)
        return check
    finally:
        if check is None or check.reproduced:
            shutil.rmtree(folder, ignore_errors=True)


def _verify(
    packed: Packed, run: RunResult, run_dir: Path, execute: Execute, folder: Path
) -> BundleCheck:
    unpacked = unpack(packed.path, folder / "bundles")
    tree = (unpacked.root / "tree").resolve()
    options = unpacked.run_options(
        RunOptions(
            out=folder / "out",
            purpose="bundle",
            # Quoted as a shell reads it: a path with a space, or bytes not UTF-8 (the
            # store took `b$'\xfe'.tar.gz` as an internal UnicodeEncodeError).
            command_line=shell_join(["reprospec", "run", str(packed.path), "--yes"]),
        )
    )
    changes: dict[str, str | None] = {RECORD_IMPORTS_VAR: "1"}  # the child records its opens
    # A secret the run's spec had written in is read from the environment by the archive's
    # spec: the values are known here, and the rerun had them empty and passed, `not as in
    # the run` with no cause. One already set here is the engine's own to give.
    changes.update({name: value for name, value in packed.replaced if name not in os.environ})
    if options.runner == "venv":
        from reprospec.venvs import ENVS_VARIABLE, shared_envs

        # The environments the run was made in, found by content hash: the temporary
        # store's own folder would build each again.
        # A merged Slurm run's are SHARED's (slurm preflight builds them there), not
        # its merge folder's. $REPROSPEC_ENVS is read (and a file there refused) by the
        # venvs' one reader of it, as the runner reads it.
        changes[ENVS_VARIABLE] = str(
            shared_envs() or RunFolder(run_dir).made_under.resolve() / "envs"
        )
    before = time.time()
    checked: list[CellCheck] = []
    outside: dict[str, None] = {}
    reports: list[Path] = []
    # The engine's own files (the harness's) and the verify's folder are no input of the
    # program's.
    engine = (folder, Path(__file__).resolve().parent.parent)
    with environ.changed(changes):  # before planning: a plan copies the environment
        spec = load_spec(unpacked.spec, options.overrides)
        cells = plan_run(spec, options).cells
        chosen, skipped = checked_cells(run, {cell.id: cell for cell in cells})
        for group, repeat in _groups(chosen):
            runs = options if repeat is None else options.with_changes(repeat=repeat)
            for plan in _plans([cell for _, cell in group], cells, spec, runs):
                result = execute(plan)
                ran_in = options.out.resolve() / "runs" / result.run_id
                reports.append(RunFolder(ran_in).report_md)
                attempts = [a for cell in result.cells for a in cell.attempts]
                read = read_outside(ran_in, attempts, tree, before=before, leave_out=engine)
                outside.update(dict.fromkeys(read))
                if result.interrupted:
                    return BundleCheck(
                        tuple(checked), skipped, tuple(outside), folder, tuple(reports), True
                    )
                places = _Places(
                    tree,
                    packed.tree_root,
                    {a.cell.id: a.workdir for a in plan.first_attempts()},
                    folder.resolve(),
                )
                again = {cell.cell.id: cell for cell in result.cells}
                for original, _ in group:
                    if original.cell.id in again:
                        checked.append(_compare(original, again[original.cell.id], ran_in, places))
    return BundleCheck(tuple(checked), skipped, tuple(outside), folder, tuple(reports))


def checked_cells(
    run: RunResult, cells: Mapping[str, Cell]
) -> tuple[list[tuple[CellResult, Cell]], tuple[str, ...]]:
    """The run's cells the verify reruns, each with its cell in the bundle's spec (`cells`,
    by id), and those it cannot check, with why. The cells where an attempt failed: the
    failure is what the bundle is for (a matrix's passing cells would only cost time);
    where none failed (a spec that expects a pass), every cell that ran. A cell no attempt
    of which ran (infra-error, not run) has no outcome to compare."""
    any_failed = any(a.failed for cell in run.cells for a in cell.attempts)
    chosen: list[tuple[CellResult, Cell]] = []
    skipped: list[str] = []
    for cell in run.cells:
        if not any(a.ran is not None for a in cell.attempts):
            skipped.append(f"{cell.cell.id} (no attempt of the run ran: {cell.verdict})")
        elif not any_failed or any(a.failed for a in cell.attempts):
            if cell.cell.id in cells:
                chosen.append((cell, cells[cell.cell.id]))
            else:
                skipped.append(f"{cell.cell.id} (no such cell in the bundle's spec)")
    return chosen, tuple(skipped)


def _groups(
    chosen: Sequence[tuple[CellResult, Cell]],
) -> Iterator[tuple[list[tuple[CellResult, Cell]], int | None]]:
    """The chosen cells by how often each is rerun: once (1) where the run's attempts all
    ended alike, the run's own repeat (None) where they did not or the cell expects a rate:
    one attempt of a flaky cell is no verdict."""
    steady = [(c, cell) for c, cell in chosen if not flaky(c)]
    varied = [(c, cell) for c, cell in chosen if flaky(c)]
    if steady:
        yield steady, 1
    if varied:
        yield varied, None


def flaky(cell: CellResult) -> bool:
    """Whether the run's attempts of `cell` ended in more than one way, or it expects a rate."""
    signatures = {a.ran.signature for a in cell.attempts if a.ran is not None}
    return len(signatures) > 1 or cell.expected.rate is not None


def _plans(
    group: Sequence[Cell], cells: Sequence[Cell], spec: Spec, options: RunOptions
) -> Iterator[RunPlan]:
    """The runs that hold exactly `group` of the bundle's `cells`: one, by `-m` filters
    of each axis's values among them, where those select no other cell; else one a cell."""
    filters = [cell_filters(cell, cells) for cell in group]
    every = tuple(dict.fromkeys(f for each in filters for f in each))
    plan = plan_run(spec, options.with_changes(matrix_filters=every))
    if len(plan.cells) == len(group):
        yield plan
        return
    for each in filters:
        yield plan_run(spec, options.with_changes(matrix_filters=each))


@frozen
class _Places:
    """Where the unpacked tree is, the folder it was made from, and each rerun cell's
    workdir in the unpacked tree."""

    tree: Path
    source: Path | None
    workdirs: Mapping[str, Path]
    # The verify's temporary folder, which holds the unpacked tree: a missing name that
    # leaves the tree by `..` is still in it (one outside it is the machine's own path).
    folder: Path


def _compare(original: CellResult, again: CellResult, ran_in: Path, places: _Places) -> CellCheck:
    """The run's cell against its rerun: the same verdict; no failure signature the run's
    attempts never had (`expect: {outcome: error}` is `reproduced` by a FileNotFoundError as by the
    run's RuntimeError); and, where that verdict is not `reproduced` (it says nothing of
    what happened), the run's most common outcome among the rerun's. A flaky cell's rerun
    may end in any of the run's ways, not each (a rare one can miss by chance). Missing
    files are read whatever came back: a program may log one and end alike without it."""
    common = Counter(a.ran.signature for a in original.attempts if a.ran is not None)
    seen = {a.ran.signature for a in again.attempts if a.ran is not None}
    # Failures alone: a pass where the run never had one is its verdict's to judge.
    failed = {a.ran.signature for a in again.attempts if a.ran is not None and a.failed}
    unlike = tuple(sorted(failed - set(common)))
    same = again.verdict == original.verdict and bool(seen) and not unlike
    if same and original.verdict != "reproduced":
        same = common.most_common(1)[0][0] in seen
    # A rate is a count of chances: 3 of 4 in the run and 2 of 4 again is the same failure,
    # its rate undecided at 4 attempts, not a bundle that lacks something.
    rate_undecided = (
        not same
        and original.expected.rate is not None
        and (original.verdict, again.verdict) == ("reproduced", "undecided")
        and not unlike
        and bool(failed & set(common))
    )
    return CellCheck(
        cell=original.cell.id,
        verdict=original.verdict,
        ran=attempts_phrase(original.attempts),
        rerun_verdict=again.verdict,
        rerun=attempts_phrase(again.attempts),
        attempts=len(again.attempts),
        reproduced=same or rate_undecided,
        missing=_missing(again, ran_in, places),
        unlike=unlike,
        rate_undecided=rate_undecided,
    )


def _missing(again: CellResult, ran_in: Path, places: _Places) -> tuple[Missing, ...]:
    """The files the rerun's output says were missing that the tree the bundle was made
    from holds, or its workdir reaches by the same relative way (and the unpacked one
    lacks), named from the cell's workdir here."""
    copy = places.workdirs.get(again.cell.id)
    if places.source is None or copy is None:
        return ()
    copy = copy.resolve()
    said = "\n".join(
        line
        for attempt in again.attempts
        for text in _texts(attempt, ran_in)
        for line in text.splitlines()
        if _MISSING_LINE.search(line)
    )
    workdir = (
        places.source / copy.relative_to(places.tree) if copy.is_relative_to(places.tree) else None
    )
    found: dict[Path, Missing] = {}
    for name in named_in(said, copy):
        path = Path(os.path.normpath(name))
        if path.exists():
            continue
        if path.is_relative_to(places.tree):
            here = places.source / path.relative_to(places.tree)
        elif workdir is not None and path.is_relative_to(places.folder):
            # Named by a way out of the unpacked tree (`../shared/cfg.json` from a workdir
            # at its root, the spec beside the program): the same way from the workdir the
            # bundle was made from, which is where the run found it.
            here = Path(os.path.normpath(workdir / os.path.relpath(path, copy)))
        else:
            continue
        if here.is_file() and workdir is not None and here not in found:
            found[here] = Missing(here, os.path.relpath(here, workdir))
    return tuple(found.values())


def _texts(attempt: AttemptResult, ran_in: Path) -> Iterator[str]:
    """What an attempt said of itself: why it did not run, its exceptions' messages, and
    the end of its output."""
    if isinstance(attempt.outcome, NotRun):
        yield attempt.outcome.reason
    else:
        for link in attempt.outcome.exceptions:
            yield f"{link.type}: {link.message or ''}"
    for name in ("stdout.log", "stderr.log"):
        yield read_log(ran_in / attempt.logs / name, head=0, tail=OUTPUT_TAIL_BYTES)


def outside_warnings(check: BundleCheck) -> list[str]:
    """A warning a file the rerun read by its path outside the unpacked bundle: this
    machine has it, so the rerun found it; the bundle's recipient may not."""
    return [
        f"bundle --verify: the program read {path} by its path, outside the bundle: it is "
        "on this machine, so the rerun found it; where the bundle is rerun it must be at "
        "that path (a bundle cannot carry it)"
        for path in check.outside
    ]


def report_lines(check: BundleCheck, archive: Path, run_id: str) -> list[str]:
    """What `bundle --verify` prints once the reruns are done: a line a cell, a line a
    missing file, the cells not checked, then the conclusion."""
    lines: list[str] = []
    for cell in check.checked:
        if cell.rate_undecided:
            lines.append(
                f"verify: {cell.cell}: the run's failure came back ({cell.rerun}), too few "
                f"times to decide its rate in {cell.attempts} attempts (the run: {cell.ran}); "
                "rerun the bundle with a larger --repeat to settle the rate"
            )
        elif cell.reproduced:
            lines.append(f"verify: {cell.cell}: as in the run: {cell.rerun_verdict} ({cell.rerun})")
        else:
            unlike = ", ".join(cell.unlike)
            instead = f"; it ended in {unlike}, as no attempt of the run did" if unlike else ""
            lines.append(
                f"verify: {cell.cell}: not as in the run: the run was {cell.verdict} "
                f"({cell.ran}), the bundle's rerun {cell.rerun_verdict} ({cell.rerun}){instead}"
            )
        for missing in cell.missing:
            lines.append(
                f"verify: {cell.cell}: the bundle lacks {missing.named} ({missing.path}), "
                f"which the program looked for: {missing.advice()}"
            )
    for skipped in check.skipped:
        lines.append(f"verify: not checked: {skipped}")
    count = f"{sum(c.reproduced for c in check.checked)}/{plural(len(check.checked), 'cell')}"
    lacked = len({m.path for c in check.checked for m in c.missing})  # a file once, not per cell
    lacks = f"; the bundle lacks {plural(lacked, 'file')} the program looked for" if lacked else ""
    if check.reproduced:
        read = (
            f"; it read {plural(len(check.outside), 'file')} outside it (named in a warning)"
            if check.outside
            else ""
        )
        lines.append(
            f"verified {archive}: {count} of run {run_id} came back as in the run, unpacked "
            f"and rerun away from this tree{read}"
        )
        return lines
    if check.interrupted:
        why = "the verify was interrupted" + (f" ({count} as in the run)" if check.checked else "")
    elif not check.checked:
        why = f"no cell of run {run_id} ran, so none could be compared"
    else:
        why = f"{count} of run {run_id} came back as in the run{lacks}"
    lines.append(f"not verified: {archive}: {why}; the archive is kept as written")
    lines.extend(f"verify: its run: {report}" for report in check.reports)
    return lines
