"""The scheduler: plan every attempt, run them (`-j N`), classify, judge, record.

One direction only: Spec -> Cells -> AttemptPlans -> Executions -> Outcomes ->
Verdicts -> RunResult. Each finished attempt is written to the store at once,
so an interrupted or killed run loses nothing already finished.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reprospec.errors import InfraError, UsageError
from reprospec.gpuslots import GpuPool
from reprospec.models import (
    AttemptPlan,
    AttemptResult,
    Cell,
    CellResult,
    Execution,
    Expectation,
    RunResult,
    Spec,
)
from reprospec.runners.base import Runner


@dataclass(frozen=True)
class RunOptions:
    """Everything `reprospec run` was asked, beyond the spec itself."""

    runner: str = "local"
    jobs: int | None = None
    repeat: int | None = None
    timeout: str | None = None
    matrix_filters: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    out_root: Path = Path(".reprospec")
    python: str | None = None
    gpus: str | None = None
    shard: tuple[int, int] | None = None
    find_links: Path | None = None

    def all_overrides(self) -> tuple[str, ...]:
        """`--repeat`/`--timeout` are overrides too, so they pass through validation."""
        extra: list[str] = []
        if self.repeat is not None:
            extra.append(f"run.repeat={self.repeat}")
        if self.timeout is not None:
            extra.append(f"run.timeout={self.timeout}")
        return (*self.overrides, *extra)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runner": self.runner,
            "jobs": self.jobs,
            "repeat": self.repeat,
            "timeout": self.timeout,
            "matrix_filters": list(self.matrix_filters),
            "overrides": list(self.overrides),
            "python": self.python,
            "gpus": self.gpus,
            "shard": list(self.shard) if self.shard else None,
            "find_links": str(self.find_links) if self.find_links else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], out_root: Path) -> RunOptions:
        shard = data.get("shard")
        find_links = data.get("find_links")
        return cls(
            runner=data.get("runner", "local"),
            jobs=data.get("jobs"),
            repeat=data.get("repeat"),
            timeout=data.get("timeout"),
            matrix_filters=tuple(data.get("matrix_filters", ())),
            overrides=tuple(data.get("overrides", ())),
            out_root=out_root,
            python=data.get("python"),
            gpus=data.get("gpus"),
            shard=(int(shard[0]), int(shard[1])) if shard else None,
            find_links=Path(find_links) if find_links else None,
        )


@dataclass(frozen=True)
class PlannedRun:
    """A spec expanded into cells and the attempts this invocation will run."""

    spec: Spec
    cells: tuple[Cell, ...]
    expectations: Mapping[str, Expectation]
    attempts: tuple[AttemptPlan, ...]
    repeat: int
    max_repeat: int
    adaptive: bool
    stop_on: str
    parallel: int


@dataclass
class _CellState:
    """Mutable bookkeeping of one cell while its attempts run (scheduler-private)."""

    results: dict[int, AttemptResult] = field(default_factory=dict)
    stopped: bool = False


ProgressCallback = Callable[[str, Cell, AttemptResult | None, int, int], None]


def parse_shard(text: str) -> tuple[int, int]:
    """`"2/8"` -> (2, 8); K counts from 1."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise UsageError(f"--shard expects K/N like 2/8, got {text!r}") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text}: K must be between 1 and N")
    return k, n


def plan_run(spec: Spec, options: RunOptions) -> PlannedRun:
    """Expand the matrix, apply -m filters, and plan attempt 1..repeat of every cell."""
    from reprospec.matrix import expand, select
    from reprospec.plan import expectation_for, plan_attempt

    cells = tuple(select(expand(spec), list(options.matrix_filters)))
    run_section = spec.document.get("run", {}) or {}
    repeat_value = run_section.get("repeat", 1)
    adaptive = repeat_value == "auto"
    max_repeat = int(run_section.get("max_repeat", 30)) if adaptive else int(repeat_value)
    # Adaptive repeats start with a handful of attempts and add more while the
    # Wilson interval still straddles the expected rate (see _maybe_extend).
    repeat = min(5, max_repeat) if adaptive else max_repeat
    expectations = {cell.id: expectation_for(spec, cell) for cell in cells}
    # Round-robin over cells so the repeats of a flaky cell interleave with the others.
    attempts = tuple(
        plan_attempt(spec, cell, number) for number in range(1, repeat + 1) for cell in cells
    )
    if options.shard is not None:
        k, n = options.shard
        attempts = tuple(a for i, a in enumerate(attempts) if i % n == k - 1)
        # A shard reports only the cells it ran; `reprospec merge` puts them together.
        in_shard = {plan.cell.id for plan in attempts}
        cells = tuple(cell for cell in cells if cell.id in in_shard)
    parallel = options.jobs or int(run_section.get("parallel", 1) or 1)
    return PlannedRun(
        spec=spec,
        cells=cells,
        expectations=expectations,
        attempts=attempts,
        repeat=repeat,
        max_repeat=max_repeat,
        adaptive=adaptive,
        stop_on=str(run_section.get("stop_on", "never")),
        parallel=max(1, parallel),
    )


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Scheduler:
    """Runs planned attempts on `jobs` threads, handing out GPU slots, honouring stop_on."""

    def __init__(
        self,
        planned: PlannedRun,
        runner: Runner,
        run_dir: Path,
        *,
        gpu_pool: GpuPool,
        on_attempt: Callable[[AttemptPlan, AttemptResult], None],
        progress: ProgressCallback | None = None,
        done: Mapping[tuple[str, int], AttemptResult] | None = None,
    ) -> None:
        self.planned = planned
        self.runner = runner
        self.run_dir = run_dir
        self.gpu_pool = gpu_pool
        self.on_attempt = on_attempt
        self.progress = progress
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._states = {cell.id: _CellState() for cell in planned.cells}
        for (cell_id, number), result in (done or {}).items():
            if cell_id in self._states:
                self._states[cell_id].results[number] = result
        self._queue: list[AttemptPlan] = [
            plan
            for plan in planned.attempts
            if plan.attempt not in self._states[plan.cell.id].results
        ]
        self.total = len(self._queue)
        self.finished = 0

    def run(self) -> dict[str, list[AttemptResult]]:
        """Run everything (or until cancelled); returns each cell's attempt results by order."""
        workers = [
            threading.Thread(target=self._work, name=f"reprospec-job-{i}", daemon=True)
            for i in range(min(self.planned.parallel, max(1, self.total)))
        ]
        for worker in workers:
            worker.start()
        try:
            # Join in short slices: a plain join() would keep Ctrl-C from reaching us.
            while any(worker.is_alive() for worker in workers):
                for worker in workers:
                    worker.join(timeout=0.1)
        except KeyboardInterrupt:
            self.cancel.set()
            for worker in workers:
                worker.join()
            raise
        return self.results_so_far()

    def results_so_far(self) -> dict[str, list[AttemptResult]]:
        """Each cell's finished attempts, in attempt order."""
        with self._lock:
            return {
                cell_id: [state.results[n] for n in sorted(state.results)]
                for cell_id, state in self._states.items()
            }

    def _next(self) -> AttemptPlan | None:
        with self._lock:
            while self._queue:
                plan = self._queue.pop(0)
                if not self._states[plan.cell.id].stopped:
                    return plan
            return None

    def _work(self) -> None:
        while not self.cancel.is_set():
            plan = self._next()
            if plan is None:
                return
            needed = int(plan.environment.get("gpus", 0) or 0)
            result = self._run_one(plan, needed)
            if result is None:
                return
            with self._lock:
                state = self._states[plan.cell.id]
                state.results[plan.attempt] = result
                self.finished += 1
                self._apply_stop_on(state, result)
                self._maybe_extend(plan, state)
            self.on_attempt(plan, result)
            if self.progress is not None:
                self.progress("attempt", plan.cell, result, self.finished, self.total)

    def _run_one(self, plan: AttemptPlan, gpus_needed: int) -> AttemptResult | None:
        from reprospec.judge import judge_attempt
        from reprospec.outcome import classify, infra_reason

        log_dir = self.run_dir / "cells" / _safe_dir(plan.cell.id) / str(plan.attempt)
        log_dir.mkdir(parents=True, exist_ok=True)
        logs = str(log_dir.relative_to(self.run_dir)) + "/"
        if gpus_needed > self.gpu_pool.size:
            reason = (
                f"skipped: needs {gpus_needed} GPU(s), "
                f"{self.gpu_pool.size or 'none'} visible to this run"
            )
            return _infra_result(plan, logs, reason)
        slot = self.gpu_pool.take(gpus_needed, self.cancel)
        if slot is None:
            return None
        if self.progress is not None:
            self.progress("start", plan.cell, None, self.finished, self.total)
        try:
            execution = self.runner.run(plan, log_dir, gpu_slot=slot, cancel=self.cancel)
        except InfraError as exc:
            return _infra_result(plan, logs, str(exc))
        finally:
            self.gpu_pool.give_back(slot)
        if execution.interrupted:
            return None
        infra = infra_reason(execution)
        outcome = classify(execution) if infra is None else None
        if outcome is None:
            return _infra_result(plan, logs, infra or "the runner reported no outcome", execution)
        output_tail = _tail_text(execution.stderr_path) + _tail_text(execution.stdout_path)
        matched, mismatches = judge_attempt(outcome, plan.expectation, output_tail=output_tail)
        return AttemptResult(
            attempt=plan.attempt,
            duration_s=round(execution.duration_s, 3),
            outcome=outcome,
            matched=matched,
            mismatches=tuple(mismatches),
            logs=logs,
            started=execution.started,
            finished=execution.finished,
            gpu_slot=execution.gpu_slot,
            warnings=execution.warnings,
            stack=_read_text(execution.stack_path),
        )

    def _apply_stop_on(self, state: _CellState, result: AttemptResult) -> None:
        stop_on = self.planned.stop_on
        if (
            stop_on == "first-reproduction"
            and result.matched
            or stop_on == "first-miss"
            and not result.matched
        ):
            state.stopped = True

    def _maybe_extend(self, plan: AttemptPlan, state: _CellState) -> None:
        """`repeat: auto`: queue one more attempt while the interval does not decide."""
        if not self.planned.adaptive or state.stopped or plan.expectation.rate is None:
            return
        from reprospec.judge import rate_decided, wilson

        numbers = sorted(state.results)
        queued = any(p.cell.id == plan.cell.id for p in self._queue)
        if queued or len(numbers) >= self.planned.max_repeat:
            return
        matched = sum(r.matched for r in state.results.values())
        low, high = wilson(matched, len(numbers))
        from reprospec.models import Rate

        rate = Rate(matched, len(numbers), low, high)
        if rate_decided(rate, plan.expectation.rate):
            return
        from reprospec.plan import plan_attempt

        self._queue.append(plan_attempt(self.planned.spec, plan.cell, numbers[-1] + 1))
        self.total += 1


def _infra_result(
    plan: AttemptPlan, logs: str, reason: str, execution: Execution | None = None
) -> AttemptResult:
    return AttemptResult(
        attempt=plan.attempt,
        duration_s=round(execution.duration_s, 3) if execution else 0.0,
        outcome=None,
        matched=False,
        mismatches=(),
        logs=logs,
        started=execution.started if execution else now_iso(),
        finished=execution.finished if execution else now_iso(),
        gpu_slot=execution.gpu_slot if execution else (),
        infra_error=reason,
        warnings=execution.warnings if execution else (),
    )


def _safe_dir(cell_id: str) -> str:
    """A cell id as a folder name: keep it readable, drop what a filesystem dislikes."""
    keep = "".join(ch if ch.isalnum() or ch in "=,._-+" else "_" for ch in cell_id)
    return keep[:200] or "cell"


def _tail_text(path: Path | None, limit: int = 64 * 1024) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit))
        return fh.read().replace(b"\0", b"").decode("utf-8", errors="replace")


def _read_text(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def judge_cells(
    planned: PlannedRun,
    attempts_by_cell: Mapping[str, Sequence[AttemptResult]],
    *,
    interrupted: bool = False,
) -> tuple[CellResult, ...]:
    """Turn each cell's attempts into its verdict."""
    from reprospec.judge import judge_cell

    commands = {plan.cell.id: _command_text(plan) for plan in reversed(planned.attempts)}
    planned_count = {cell.id: 0 for cell in planned.cells}
    for plan in planned.attempts:
        planned_count[plan.cell.id] += 1
    cells = []
    for cell in planned.cells:
        attempts = tuple(attempts_by_cell.get(cell.id, ()))
        expectation = planned.expectations[cell.id]
        verdict, reason, rate = judge_cell(expectation, attempts)
        if interrupted and not attempts:
            reason = "not run: the run was interrupted first (--resume finishes it)"
        elif interrupted and len(attempts) < planned_count[cell.id]:
            reason += (
                f" (interrupted after {len(attempts)} of {planned_count[cell.id]} attempts;"
                " --resume finishes it)"
            )
        cells.append(
            CellResult(
                cell=cell,
                expected=expectation,
                verdict=verdict,
                reason=reason,
                rate=rate,
                attempts=attempts,
                command=commands.get(cell.id, ""),
            )
        )
    return tuple(cells)


def _command_text(plan: AttemptPlan) -> str:
    """What the cell runs, for people: the command, or the harness for a workload."""
    if plan.argv is None:
        return "python -m reprospec_harness  (built-in PyTorch workload)"
    argv = list(plan.argv)
    if argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3:
        return argv[2]
    return shlex.join(argv)


def exit_code_for(run: RunResult) -> int:
    """0 every cell reproduced; 3 any infra-error; 1 some cell not reproduced; 130 interrupted."""
    from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK

    if run.interrupted:
        return EXIT_INTERRUPTED
    summary = run.summary
    if summary["infra_error"]:
        return EXIT_INFRA
    if summary["not_reproduced"]:
        return EXIT_NOT_REPRODUCED
    return EXIT_OK


def install_sigterm_as_interrupt() -> None:
    """SIGTERM (CI cancelling a job) stops a run like Ctrl-C: partial report, exit 130."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def elapsed_since(start: float) -> float:
    return round(time.monotonic() - start, 3)


__all__ = [
    "PlannedRun",
    "RunOptions",
    "Scheduler",
    "exit_code_for",
    "judge_cells",
    "parse_shard",
    "plan_run",
]
