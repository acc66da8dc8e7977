"""Live progress while a run goes, and the results table at its end (rich); words from words.py."""

from __future__ import annotations

import sys
import threading
import time
from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, NamedTuple

from reprospec.core.inputs import Cell
from reprospec.core.logtext import printable
from reprospec.core.results import AttemptResult, RunResult
from reprospec.core.words import (
    VERDICT_MARKS,
    attempt_phrase,
    attempts_phrase,
    cell_rate_phrase,
    coarse,
    expectation_phrase,
    missed_keys,
    plural,
    resumed_phrase,
    seconds,
    time_left,
)
from reprospec.report.console import live_progress_enabled, make_console

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID
    from rich.table import Table
    from rich.text import Text

    from reprospec.core.results import CellResult
    from reprospec.core.units import RateBound


# Off a terminal, a line while attempts run with nothing written for this long: a hang
# waits for its timeout (5 minutes by default), and a CI log said nothing meanwhile.
QUIET_S = 60.0


class Progress:
    """A rich progress bar on a terminal; one plain line per finished attempt otherwise, and
    after QUIET_S without one while attempts run, a line that says so (`still running`)."""

    def __init__(
        self,
        total: int,
        stream: IO[str] | None = None,
        observes: Callable[[Cell], bool] = lambda _cell: False,
        gone: Callable[[], None] | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        # Called once the reader of `stream` has gone (`run SPEC 2>&1 | head`) as the quiet
        # line finds it: `run` stops then (its cancel), where it ran on to the next
        # attempt's end (a hang's timeout) with the reader's pipeline waiting on it.
        self.gone = gone
        # Whether a cell is observed (`--observe`): its attempts match "anything", and a
        # line per attempt that said `match` read as the expected failure.
        self.observes = observes
        self.live = live_progress_enabled(self.stream)
        self.total = total
        self._lock = threading.Lock()
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        # Attempts this process finished (a resumed run's earlier attempts took no time
        # here), the seconds they took, and the most that ran at once (-j, as the run
        # scheduled them): the ETA's time per attempt and how many go at a time.
        self._done = 0
        self._took = 0.0
        self._most = 1
        # When each attempt whose end is not said yet started, in order (time.monotonic()),
        # and the same per cell, and when a line was last written. Not by the thread that
        # said "start": a command line's run says an attempt's end STOPPED_SLACK_S later,
        # from another thread (pipeline/slack.py), so at -j 1 of attempts of a few ms these
        # hold a hundred that ended already: each line reads them in sorted order (bisect),
        # where a walk of them all cost the engine a tenth of a millisecond per attempt.
        self._starts: list[float] = []
        self._cell_starts: dict[str, list[float]] = {}
        self._written = time.monotonic()
        self._stop = threading.Event()
        self._quiet: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            bar = RichProgress(
                TextColumn("[bold]running[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("{task.description}"),
                console=make_console(self.stream),
                transient=True,
            )
            bar.start()
            self._task = bar.add_task("", total=self.total)
            self._bar = bar
        else:
            self._quiet = threading.Thread(target=self._watch, name="reprospec-quiet", daemon=True)
            self._quiet.start()
        return self

    def _watch(self) -> None:
        """Off a terminal, every QUIET_S without a line while attempts run: which run, and
        for how long the oldest has."""
        while not self._stop.wait(min(QUIET_S, 5.0)):
            now = time.monotonic()
            with self._lock:
                if not self._starts or now - self._written < QUIET_S:
                    continue
                oldest = self._starts[0]
                cell = min(self._cell_starts, key=lambda name: self._cell_starts[name][0])
                line = printable(
                    f"reprospec: still running: {plural(len(self._starts), 'attempt')}, the "
                    f"longest ({cell}) for {coarse(now - oldest)}",
                    one_line=True,
                )
                try:
                    self.stream.write(line + "\n")
                    self.stream.flush()
                except BrokenPipeError:
                    # The next attempt's line raises it again in the engine: exit 141.
                    if self.gone is not None:
                        self.gone()
                    return
                self._written = now

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._stop.set()
        if self._quiet is not None:
            self._quiet.join()

    def update(
        self, event: str, cell: Cell, result: AttemptResult | None, finished: int, total: int
    ) -> None:
        with self._lock:
            if event == "start":
                now = time.monotonic()
                insort(self._starts, now)
                insort(self._cell_starts.setdefault(cell.id, []), now)
                if self._bar is not None and self._task is not None:
                    from rich.markup import escape

                    # A cell id is the spec's text: never markup (`[/tmp]`), never escapes.
                    description = escape(printable(cell.id, one_line=True))
                    self._bar.update(self._task, description=description)
                return
            assert result is not None
            # One reading of the clock for the line: its end, its ETA, when it was written.
            now = time.monotonic()
            self._ended(cell.id, result, now)
            mark = "match" if result.matched else ("infra" if result.infra_error else "miss")
            if mark == "miss" and result.mismatches:
                # Which `expect` keys it missed: the phrase says what happened, not which of
                # the spec's lines it went against (a worker's crash omits the main
                # process's exception).
                mark += ": " + " and ".join(missed_keys(result.mismatches))
            if self.observes(cell) and not result.infra_error:
                mark = "observed"
            # The phrase quotes the child (an exception message, an event's phase): one line
            # of text, whatever it holds.
            self._done += 1
            self._took += max(result.duration_s, 0.0)
            line = printable(
                f"[{finished}/{total}] {cell.id} #{result.attempt}: {attempt_phrase(result)} "
                f"({mark}, {seconds(result.duration_s)}{self._eta(finished, total, now)})",
                one_line=True,
            )
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, completed=finished, total=total)
                self._bar.console.print(line, markup=False, highlight=False)
            else:
                # One write of the line and its end (print makes two system calls of it).
                self.stream.write(line + "\n")
                self.stream.flush()
                self._written = now

    def _ended(self, cell_id: str, result: AttemptResult, now: float) -> None:
        """Forget the start of the attempt of `cell_id` that ended: of two of one cell running
        at once (`-j` over `repeat`), the one that started `duration_s` before its end, or
        nearest. Its end is `result.finished`, not now: a command line's run says an end
        STOPPED_SLACK_S late, and at -j 1 the start `duration_s` before now was a later
        attempt's. The attempts still here that started before its end ran with it: the
        most at once is read at the ends, not at the starts (the attempts started while an
        end waited to be said, a hundred at -j 1 of a few ms each, ran after it)."""
        starts = self._cell_starts.get(cell_id)
        if not starts:
            return
        ended = now - _said_late(result.finished)
        began = ended - max(result.duration_s, 0.0)
        i = bisect_left(starts, began)
        if i == len(starts) or (i > 0 and began - starts[i - 1] <= starts[i] - began):
            i -= 1
        at = starts.pop(i)
        if not starts:
            del self._cell_starts[cell_id]
        del self._starts[bisect_left(self._starts, at)]
        self._most = max(self._most, 1 + bisect_left(self._starts, ended))

    def _eta(self, finished: int, total: int, now: float) -> str:
        """`, eta 3m10s` for a log line while attempts are left: the attempts' time left (of
        each running one, what the mean attempt has left of it; of each yet to start, the
        mean attempt), shared among the attempts that run at once, and never less than the
        running attempt furthest from its end. The wall time per finished attempt, times
        the attempts left, said at `-j 4` on its first line four times the time: the other
        three, as long, were ending with it, and counted whole, then three more times."""
        if finished >= total or self._done == 0:
            return ""
        per_attempt = self._took / self._done
        # Newest first: only those that started less than `per_attempt` ago have time left.
        left_running = longest = 0.0
        for start in reversed(self._starts):
            rest = per_attempt - (now - start)
            if rest <= 0:
                break
            left_running += rest
            longest = max(longest, rest)
        waiting = max(total - finished - len(self._starts), 0)
        left = (left_running + waiting * per_attempt) / self._most
        return f", {time_left(max(left, longest))}"


# The wall clock, as `finished` is written (bound here: the tests set `time` to a fake clock).
_epoch = time.time


def _said_late(finished: str) -> float:
    """How long ago an attempt that ended at `finished` (ISO-8601 UTC, as AttemptResult has
    it) ended: 0 where it is not a time, or in the future (the wall clock moved)."""
    try:
        end = datetime.fromisoformat(finished)
    except ValueError:
        return 0.0
    if end.tzinfo is None:
        return 0.0
    # (the epoch's seconds, not a datetime subtracted: read once per attempt's line)
    return max(_epoch() - end.timestamp(), 0.0)


def console_names(run: RunResult) -> Callable[[str], str]:
    """How the console names a path in what it prints of a run: short, as report.md does
    (`<venv>/bin/python`, report/paths.py). The results table and `--observe`'s outcome
    lines both name paths so; the lines printed the venv's absolute path where the table
    above them said `<venv>`."""
    from reprospec.report.paths import PathNames

    return PathNames(run.paths).shorten


def results_table(run: RunResult, width: int | None = None) -> Table:
    """One row per cell: verdict mark, cell, expected, what happened, rate.

    A large run (as its report: more than LARGE_RUN_CELLS cells) gets one row per group
    of alike cells, named by patterns: 256 rows of `pass` tell a terminal nothing.
    `width`: the console's, where it is known; a narrow one gets the notes beside the
    rates wrapped under them (`_rates`).
    """
    from rich.table import Table
    from rich.text import Text

    from reprospec.report.paths import with_short_commands
    from reprospec.report.tables import LARGE_RUN_CELLS, as_for, said_before

    # The command lines the outcomes name shortened before they are worded: a phrase cuts
    # a command to its width first, and a venv's whole path was all it kept.
    run = with_short_commands(run)
    short = console_names(run)
    table = Table(title=text(f"{run.spec_name}: {run.run_id}"), title_justify="left")
    if len(run.cells) > LARGE_RUN_CELLS:
        return _grouped(run, table, short, width)
    table.add_column("", no_wrap=True)
    # A long cell id (a captured command's flags as axes) wraps: were it kept on one line,
    # what was expected and what happened would shrink to nothing beside it.
    table.add_column("cell", overflow="fold", ratio=3)
    table.add_column("expected", ratio=2)
    table.add_column("actual", ratio=2)
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    rates = _rates(run, width)
    said: dict[str | tuple[str, str], str] = {}  # a long infra-error: the first cell that said it
    for cell, rate in zip(run.cells, rates, strict=True):
        actual = short(attempts_phrase(cell.attempts))
        first = said_before(cell.cell.id, cell.verdict, actual, said)
        actual = actual if first is None else as_for(first)
        table.add_row(
            VERDICT_MARKS[cell.verdict],
            text(cell.cell.id),
            text(expectation_phrase(cell.expected)),
            text(actual),
            # `_fitted`'s line breaks are its own; `text` writes a value's out as `\x0a`.
            Text("\n").join(text(line) for line in rate.split("\n")),
            cell.verdict,
        )
    return table


# What the cell, expected and actual columns are each given at least before the attempts
# column's notes are wrapped, and the width those are wrapped to (at least each rate's).
_ROOM = 16
_NOTE_WIDTH = 20
# The verdict mark's width (an emoji is 2 columns wide).
_MARK = 2


def _chrome(columns: int) -> int:
    """What a table of `columns` columns takes besides their text: a border before each
    column and after the last, and 1 column of padding each side of each."""
    return columns + 1 + 2 * columns


def _rates(run: RunResult, width: int | None) -> list[str]:
    """Each cell's attempts column: its rate, and beside it what cut it short (`1/1
    (interrupted after 1 of 3 attempts)`, `run.stop_on`'s note), fitted by `_fitted`."""
    from reprospec.report.tables import rate_note

    pairs = [
        (cell_rate_phrase(c.rate, c.expected), rate_note(c.reason, run.interrupted))
        for c in run.cells
    ]
    verdict = max((len(c.verdict) for c in run.cells), default=0)
    # 6 columns, of which cell, expected and actual give way.
    return _fitted(pairs, width, _chrome(6) + _MARK + verdict, 3)


def _fitted(
    pairs: list[tuple[str, str]], width: int | None, fixed: int, flexible: int
) -> list[str]:
    """Each (rate, note) of an attempts column, the note beside the rate where the terminal
    has the room. The column is never wrapped by rich (a rate broken over two lines reads as
    two numbers), so on a narrow terminal the note is wrapped here, under the rate: on one
    line it took 41 of 80 columns, and the `flexible` columns (the cells, what was expected
    and what happened) were left 2 to 4 columns each, cut to `wor`, `e…`. `fixed`: what the
    table's other columns, borders and padding take."""
    import textwrap

    from reprospec.report.tables import with_note

    said = [with_note(rate, note) for rate, note in pairs]
    widest = max(map(len, said), default=0)
    if width is None or width - (fixed + widest) >= flexible * _ROOM:
        return said
    wrap = max(_NOTE_WIDTH, *(len(rate) for rate, _ in pairs))
    # The rate's words all fit the first line (`wrap` is at least its width), so it is
    # never broken; only the note continues below it.
    return [textwrap.fill(line, wrap, break_long_words=False) for line in said]


def _grouped(run: RunResult, table: Table, short: Callable[[str], str], width: int | None) -> Table:
    """A large run's results table: one row per group of alike cells, its attempts column
    fitted to the terminal as the per-cell table's is (`_fitted`): a large matrix is the
    common Ctrl-C case."""
    from rich.text import Text

    from reprospec.report.environment import cell_environments
    from reprospec.report.tables import result_groups

    groups = result_groups(run, cell_environments(run.cells), short)
    table.add_column("", no_wrap=True)
    table.add_column("cells", overflow="fold", ratio=3)
    with_env = any(group["env"] for group in groups)
    if with_env:
        table.add_column("environment", ratio=2)
    table.add_column("expected", ratio=2)
    table.add_column("actual", ratio=2)
    table.add_column("attempts each", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    flexible = 4 if with_env else 3
    verdict = max((len(group["verdict"]) for group in groups), default=0)
    rates = _fitted(
        [(group["measured"], group["note"]) for group in groups],
        width,
        _chrome(flexible + 3) + _MARK + verdict,
        flexible,
    )
    for group, rate in zip(groups, rates, strict=True):
        env = (text(group["env"]),) if with_env else ()
        table.add_row(
            group["mark"],
            text(f"{group['count']}: " + "; ".join(group["cells"])),
            *env,
            text(group["expected"]),
            text(group["actual"]),
            # `_fitted`'s line breaks are its own; `text` writes a value's out as `\x0a`.
            Text("\n").join(text(line) for line in rate.split("\n")),
            group["verdict"],
        )
    return table


def text(value: str) -> Text:
    """A value from a spec or a child as rich text: shown as written (`[a-z ]+` stays), its
    control characters written out; never parsed as markup."""
    from rich.text import Text

    return Text(printable(value, one_line=True))


def print_outcome(result: RunResult, fmt: str | None, out: Path) -> None:
    """The results table and where the report is; with `fmt`, the report on stdout (what
    `run` and `merge` print at their end)."""
    from reprospec.core.logtext import clean_log
    from reprospec.report import render
    from reprospec.store.runfolder import RunFolder

    # With a format the report goes to stdout, so the table moves to stderr.
    console = make_console(sys.stderr if fmt else sys.stdout)
    console.print(results_table(result, console.width))
    folder = RunFolder.of(out, result.run_id)
    summary = result.summary
    if result.observes:
        from reprospec.report.paths import with_short_commands
        from reprospec.report.signatures import outcome_groups, outcome_lines

        # As the table's: the command lines shortened, then worded.
        groups = outcome_groups(with_short_commands(result))
        # The cells observed of the cells: one that could not run was not ("1 cell
        # observed, 0 outcomes, 1 infra-error" of a spec whose only cell never started).
        # The summary holds the count where there is one.
        console.print(
            f"{summary.get('observed', 0)}/{plural(summary['cells'], 'cell')} observed, "
            f"{plural(len(groups), 'outcome')}"
            + (f", {summary['infra_error']} infra-error" if summary["infra_error"] else "")
            + (" (interrupted: partial results)" if result.interrupted else "")
        )
        short = console_names(result)
        for line in outcome_lines(groups):
            console.print(printable(short(line)), markup=False, highlight=False)
    else:
        console.print(
            f"{summary['reproduced']}/{plural(summary['cells'], 'cell')} reproduced"
            + (f", {summary['undecided']} undecided" if summary["undecided"] else "")
            + (f", {summary['infra_error']} infra-error" if summary["infra_error"] else "")
            + (" (interrupted: partial results)" if result.interrupted else "")
        )
        for line in undecided_lines(result):
            console.print(printable(line), markup=False, highlight=False)
    if result.resumed is not None:
        # The table reads as one run: which of its attempts ran now is said beside it.
        said = resumed_phrase(result.resumed)
        console.print(f"resumed: {said}", markup=False, highlight=False)
    from reprospec.report.environment import perturbed_cells

    for cell, notes in perturbed_cells(result):
        # Said beside the figures it qualifies: these are the perturbed program's rates
        # (`perturbed`: a hand-written environment.perturb is no amplification found).
        console.print(
            printable(f"perturbed: {cell} ran under environment.perturb: {notes}"),
            markup=False,
            highlight=False,
        )
    if (unforked := _preload_unused(result)) is not None:
        # Said here, not only in report.md: a user who asked for run.preload reads the
        # attempts' times as a fork's (a perturbed spec runs every attempt fresh).
        console.print(printable(f"preload: {unforked}"), markup=False, highlight=False)
    console.print(f"report: {folder.report_md}", markup=False, highlight=False)
    # What went wrong around the run (the store deleted under it, the environment capture).
    for warning in result.warnings:
        print(f"reprospec: warning: {clean_log(warning)}", file=sys.stderr)
    if fmt:
        sys.stdout.write(render(result, fmt))
        sys.stdout.flush()


# The most undecided cells said one by one under the count; the others are counted.
_UNDECIDED_SAID = 5


def undecided_lines(result: RunResult) -> list[str]:
    """What decides each undecided cell: exit 4 and `1 undecided` said nothing of what to do,
    and how many is the question. The cell's reason says how many decide it, or why no count
    does (judge.deciding: at the rate seen, the attempts after which its 95% interval no
    longer straddles the bound, looked for up to `--repeat`'s limit); this line says it too
    and adds the `--repeat` to ask for them within a run's (`_RunSize`). An interrupted run's
    cells are finished by `--resume` first, which its own line says."""
    cells = [c for c in result.cells if c.verdict == "undecided" and not result.interrupted]
    lines = []
    size: _RunSize | None = None
    for cell in cells[:_UNDECIDED_SAID]:
        bound, rate = cell.expected.rate, cell.rate
        if bound is None or not rate.attempts:
            continue
        size = size or _RunSize.of(result)
        said = (
            f"undecided: {cell.cell.id}: {cell_rate_phrase(rate, cell.expected)} straddles {bound}"
        )
        lines.append(f"{said}; {_deciding(cell, bound, size)}")
    if len(cells) > _UNDECIDED_SAID:
        lines.append(f"undecided: {plural(len(cells) - _UNDECIDED_SAID, 'more cell')} (report.md)")
    return lines


class _RunSize(NamedTuple):
    """What bounds the attempts a cell can be given (`bounds.MAX_ATTEMPTS` a run): `--repeat
    N` over the cells the run's `-m` kept (`plan_run` checks N x those), `run.max_repeat`
    over the spec's whole matrix (validation checks it x every cell: of 2 of 40 cells kept,
    a `run.max_repeat: 6000` said to decide one was refused), and the matrix's axes, which
    the `-m` filters of one cell name (a cell another's `include` axis is null in)."""

    kept: int
    cells: int
    axes: Sequence[str]

    @classmethod
    def of(cls, result: RunResult) -> _RunSize:
        """Read from the spec that ran (its text holds any `--set`), the run's `-m` filters
        applied as `plan_run` does; a text that cannot be read so counts the run's cells."""
        from reprospec.errors import UsageError
        from reprospec.spec.matrix import MatrixError, known_axes, matrix_cells, select
        from reprospec.spec.yamlsource import YamlSourceError, load_yaml

        filters = result.options.get("matrix_filters")
        try:
            document = load_yaml(result.spec_text).data
            section = document.get("matrix") if isinstance(document, Mapping) else None
            every = matrix_cells(section if isinstance(section, Mapping) else None)
            kept = select(every, [str(f) for f in filters] if isinstance(filters, list) else [])
            return cls(len(kept), len(every), known_axes(every))
        except (YamlSourceError, MatrixError, UsageError):
            count = len(result.cells)
            return cls(count, count, known_axes([c.cell for c in result.cells]))


def _deciding(cell: CellResult, bound: RateBound, size: _RunSize) -> str:
    """What more attempts do to an undecided cell's rate: nothing where every attempt
    missed the expect the same way (the expect is what to change, as report.md's reason
    says); else what its reason says (judge.deciding, worded by words.more_attempts_phrase:
    how many decide it and which way, or why no count does), and where a count does, how to
    ask for it: `--repeat N` where the run's cells take that many each, else with the `-m`
    filters of the cell alone, and as `run.max_repeat` where the spec's cells do."""
    from reprospec.core.bounds import MAX_ATTEMPTS
    from reprospec.core.words import more_attempts_phrase
    from reprospec.outcome.judge import alike_phrase, deciding, missed_alike

    if keys := missed_alike(cell.attempts):
        return alike_phrase(keys)
    decides = deciding(cell.rate, bound)
    said, needed = more_attempts_phrase(decides, bound), decides.needed
    if needed is None:
        return said
    if needed * size.kept > MAX_ATTEMPTS:
        return (
            f"{said}: --repeat {needed} {_cell_alone(cell.cell, size.axes)}, the cell alone "
            f"({plural(size.kept, 'cell')} x {needed} is past a run's limit of "
            f"{MAX_ATTEMPTS:,} attempts)"
        )
    auto = f" (or run.repeat: auto with run.max_repeat: {needed})"
    return f"{said}: --repeat {needed}{auto if needed * size.cells <= MAX_ATTEMPTS else ''}"


def _cell_alone(cell: Cell, axes: Sequence[str]) -> str:
    """The `-m` words that keep `cell` alone: each axis at its value (`exact_filter`), an
    axis only other cells hold as null."""
    import shlex

    from reprospec.spec.matrix import exact_filter

    matrix = cell.matrix
    order = [*matrix, *(a for a in axes if a not in matrix)]
    return " ".join(f"-m {shlex.quote(exact_filter(a, matrix.get(a)))}" for a in order)


def _preload_unused(result: RunResult) -> str | None:
    """Where run.preload was asked and no attempt was forked: how they ran and why
    (`launch_summary`: `4 ran fresh: perturb.hash_seed: PYTHONHASHSEED is read when the
    interpreter starts (4)`)."""
    attempts = [a for c in result.cells for a in c.attempts]
    if any(a.launch == "forked" for a in attempts) or not any(
        a.launch == "fresh" and a.launch_note for a in attempts
    ):
        return None
    from reprospec.core.words import launch_summary

    return launch_summary(attempts)
