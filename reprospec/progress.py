"""Live progress while a run goes, and the results table at its end (rich)."""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from reprospec.console import live_progress_enabled, make_console
from reprospec.models import AttemptResult, Cell, CellResult, Outcome, RunResult

if TYPE_CHECKING:
    from rich.table import Table

VERDICT_MARKS = {"reproduced": "✅", "not-reproduced": "❌", "infra-error": "⚠️"}


def describe_outcome(outcome: Outcome | None, infra_error: str | None = None) -> str:
    """`crash SIGSEGV (worker) @ validation:7` — one short phrase for tables and logs."""
    if outcome is None:
        return f"infra-error: {infra_error}" if infra_error else "infra-error"
    text: str = outcome.kind
    if outcome.signal:
        text += f" {outcome.signal}"
    elif outcome.kind == "error":
        if outcome.exception:
            text += f" {outcome.exception}"
        elif outcome.exit_code is not None:
            text += f" exit {outcome.exit_code}"
    if outcome.where == "worker":
        text += " (worker)"
    if outcome.phase or outcome.step is not None:
        where = outcome.phase or ""
        if outcome.step is not None:
            where += f":{outcome.step}"
        text += f" @ {where}"
    return text


class Progress:
    """A rich progress bar on a terminal; one plain line per finished attempt otherwise."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = live_progress_enabled(self.stream)
        self.total = total
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        self._running = 0

    def __enter__(self) -> Progress:
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]running[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=make_console(self.stream),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=self.total)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(
        self, event: str, cell: Cell, result: AttemptResult | None, finished: int, total: int
    ) -> None:
        with self._lock:
            if event == "start":
                self._running += 1
                if self._bar is not None:
                    self._bar.update(self._task, description=f"{cell.id}")
                return
            self._running = max(0, self._running - 1)
            assert result is not None
            phrase = describe_outcome(result.outcome, result.infra_error)
            mark = "match" if result.matched else ("infra" if result.infra_error else "miss")
            line = (
                f"[{finished}/{total}] {cell.id} #{result.attempt}: {phrase} "
                f"({mark}, {result.duration_s:.1f}s)"
            )
            if self._bar is not None:
                self._bar.update(self._task, completed=finished, total=total)
                self._bar.console.print(line, markup=False, highlight=False)
            else:
                print(line, file=self.stream, flush=True)


def results_table(run: RunResult) -> Table:
    """One row per cell: verdict mark, cell, expected, what happened, rate."""
    from rich.table import Table

    table = Table(title=f"{run.spec_name}: {run.run_id}", title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("cell", no_wrap=True)
    table.add_column("expected")
    table.add_column("actual")
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for cell in run.cells:
        table.add_row(
            VERDICT_MARKS.get(cell.verdict, "?"),
            cell.cell.id,
            _expected_text(cell),
            _actual_text(cell),
            _rate_text(cell),
            cell.verdict,
        )
    return table


def _expected_text(cell: CellResult) -> str:
    expected = cell.expected.to_dict()
    parts = []
    for key, value in expected.items():
        if key == "outcome":
            parts.append(str(value))
        elif key == "rate":
            parts.append(f"rate{value}")
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def actual_text(cell: CellResult) -> str:
    """What the cell's attempts did: one phrase, or counts of each when they differ."""
    return _actual_text(cell)


def _actual_text(cell: CellResult) -> str:
    phrases: dict[str, int] = {}
    for attempt in cell.attempts:
        phrase = describe_outcome(attempt.outcome, attempt.infra_error)
        phrases[phrase] = phrases.get(phrase, 0) + 1
    if not phrases:
        return "not run"
    if len(phrases) == 1:
        return next(iter(phrases))
    return "; ".join(f"{n}x {p}" for p, n in sorted(phrases.items(), key=lambda kv: -kv[1]))


def _rate_text(cell: CellResult) -> str:
    rate = cell.rate
    if rate.attempts <= 1:
        return f"{rate.matched}/{rate.attempts}"
    return f"{rate.matched}/{rate.attempts} [{rate.low:.2f}-{rate.high:.2f}]"
