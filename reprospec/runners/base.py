"""The Runner protocol: how the engine asks for one attempt to be run."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypedDict, runtime_checkable

from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.results import Execution
from reprospec.core.sections import Command
from reprospec.process.childprotocol import EVENTS, STDERR, STDOUT
from reprospec.process.progress import ProgressWatch


class Runner(Protocol):
    """Runs attempts in isolation and reports raw facts (an Execution), never verdicts."""

    name: str

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        """Once per run, before any attempt: build images, check interpreters.

        Raises InfraError when nothing can run (no engine, interpreter missing).
        """

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        """Run one attempt to its end (or timeout, or `cancel`), blocking.

        Writes stdout.log, stderr.log, events.jsonl, env.json (workload), stack.txt
        (hang) into `log_dir`. No process of the attempt survives the return.
        Safe to call from several threads at once.
        """
        ...

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, JsonValue]:
        """The target environment as the harness sees it (run in a child, never here)."""
        ...

    def close(self) -> None:
        """Once per run, after the last attempt: stop what the runner keeps running
        (the local runner's preload servers)."""
        ...


@runtime_checkable
class BuildingRunner(Protocol):
    """A runner that builds each cell's environment in `prepare` (venv: a virtualenv;
    docker: an image) and keeps going past one it cannot build: that cell's attempts are
    infra-errors with the reason, the other cells run."""

    def build_error(self, plan: AttemptPlan) -> str:
        """Why the plan's environment could not be had ("" when it is built)."""
        ...


@runtime_checkable
class CheckingRunner(Protocol):
    """A runner that checks a cell's `environment.packages` in the interpreter that runs it
    (local, venv), before each attempt."""

    def keep_package_lines(self, plan: AttemptPlan) -> None:
        """Keep what that check finds for the attempt `plan` (the environment capture's,
        asked before the attempts run): only such an attempt's lines are kept."""
        ...

    def package_lines(self, plan: AttemptPlan) -> tuple[str, ...] | None:
        """What that check found wrong for the attempt `plan` (its cell and attempt number),
        one line each (() where nothing); None where it has not checked that attempt or
        was not asked to keep it (`keep_package_lines`)."""
        ...


@runtime_checkable
class InstallingRunner(Protocol):
    """A runner that installs a cell's `environment.packages` (venv; docker, in the image it
    builds), so the versions a range resolved to (`six<1.17`: six 1.16.0) are its to tell,
    not the spec's."""

    def pins(self, plan: AttemptPlan) -> tuple[str, ...]:
        """The plan's `environment.packages` pinned at the versions its environment holds
        (environment/packages.pins: `six==1.16.0`); () where it is not built."""
        ...


def pins_of(runner: Runner) -> Callable[[AttemptPlan], tuple[str, ...]] | None:
    """`runner.pins` where the runner installs packages, else None."""
    return runner.pins if isinstance(runner, InstallingRunner) else None


def first_runnable(runner: Runner, plans: Sequence[AttemptPlan]) -> AttemptPlan:
    """The first of `plans` (non-empty) whose environment `runner` has, after `prepare`: the
    one the run's environment is captured in, so a first cell whose environment could not be
    built leaves the report the environment the other cells ran in, not only its error; the
    first of all when none has."""
    if isinstance(runner, BuildingRunner):
        return next((plan for plan in plans if not runner.build_error(plan)), plans[0])
    return plans[0]


@runtime_checkable
class InstanceRunner(Protocol):
    """A runner that can run the instances of `run.instances` (local, venv).

    A runner without `run_instances` refuses such attempts: they end as infra-error
    with the reason, never as one process standing in for N.
    """

    name: str

    def run_instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slots: Sequence[tuple[str, ...]],
        cancel: threading.Event | None = None,
    ) -> tuple[Execution, ...]:
        """Run `plan.copies` instances of one attempt, released from one start barrier.

        `gpu_slots[I]` is instance I's slot; its files go to `log_dir/instance-I/`.
        Returns one Execution per instance, in instance order (`instance`,
        `ready_at`, `released_at` and `ended_at` set). Raises InfraError when the
        instances could not all be started (nothing of the command ran then).
        """
        ...


class AttemptFiles(TypedDict):
    """The `Execution` fields every runner fills the same way (`Execution(**files, ...)`)."""

    cell_id: str
    attempt: int
    log_dir: Path
    stdout_path: Path
    stderr_path: Path
    events_path: Path
    gpu_slot: tuple[str, ...]
    harness: bool
    timeout_s: float | None
    stall_s: float | None


def keep_logs(log_dir: Path) -> None:
    """Create the logs a lazy output sink (`process.output.CappedLog`) never wrote, empty:
    an attempt that ran and did not pass keeps every file, as before they were lazy; one
    that passed never had them made only for `RunFolder.prune` to remove them."""
    for name in (STDOUT, STDERR):
        try:
            _create(log_dir / name)
        except OSError:
            continue  # the folder is gone, or not writable: nothing more to keep


def attempt_files(plan: AttemptPlan, log_dir: Path, gpu_slot: tuple[str, ...]) -> AttemptFiles:
    """The Execution fields every runner fills the same way: the attempt's files and slot.

    Creates the folder and an empty events.jsonl, so a child that writes no event
    still leaves the file the run folder promises, and a child may open it without
    creating it (REPROSPEC_EVENTS: a command's own code appends to it too).
    """
    events_path = log_dir / EVENTS
    try:
        _create(events_path)
    except FileNotFoundError:
        # The run folder made it already (RunFolder.attempt_dir); a test's runner call may not.
        log_dir.mkdir(parents=True, exist_ok=True)
        _create(events_path)
    return {
        "cell_id": plan.cell.id,
        "attempt": plan.attempt,
        "log_dir": log_dir,
        "stdout_path": log_dir / STDOUT,
        "stderr_path": log_dir / STDERR,
        "events_path": events_path,
        "gpu_slot": tuple(gpu_slot),
        # A workload's main process is the harness; a command's is the spec's own program.
        "harness": plan.workload is not None,
        "timeout_s": plan.timeout_s,
        "stall_s": plan.stall_s,
    }


def _create(path: Path) -> None:
    """Create `path` if missing, as `touch` (which first tries to set its time) does."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def infra_execution(
    files: AttemptFiles,
    reason: str,
    *,
    started: str,
    finished: str,
    warnings: Sequence[str] = (),
    duration_s: float = 0.0,
) -> Execution:
    """An attempt that could not run at all, or whose end is no verdict on the program: no
    exit status, only the reason. `duration_s`: how long it ran, where it did (a forked
    attempt whose preload server died under it), so that it reads as what it took."""
    files["stdout_path"].touch()
    files["stderr_path"].touch()
    return Execution(
        returncode=None,
        timed_out=False,
        duration_s=duration_s,
        started=started,
        finished=finished,
        infra_error=reason,
        warnings=tuple(warnings),
        **files,
    )


def stall_watch(plan: AttemptPlan, events_path: Path) -> ProgressWatch | None:
    """`run.stall`'s watch of one attempt (None without it): what counts as its progress.

    A command without markers has only its output to say it is alive; one with markers,
    and a workload, progress by their events (progress.py says why).
    """
    if plan.stall_s is None:
        return None
    output_counts = plan.workload is None and not plan.markers
    return ProgressWatch(events_path, plan.stall_s, output_counts=output_counts)


# A command that may run a pipeline bash reports (core/jobreport.py): a `|` in its line, or a
# shell or shell script it starts (`bash run.sh`, `./train.sh`), whose pipelines it cannot see.
_MAY_REPORT_A_PIPELINE = Lazy(r"\||\.sh\b|(?:^|[\s/])(?:ba|z|k)?sh(?:\s|$)")


def pipeline_report(plan: AttemptPlan, stderr: Path) -> Path | None:
    """`stderr`, where the attempt may have run a pipeline whose death bash reports there
    (native.main_core reads its end to tell a pipeline's later process from the program);
    None otherwise, so that a crash's stderr is read once, by the outcome's evidence (a
    `python -c ...` segfault under `/bin/sh -c` read it a second time for no report)."""
    if not isinstance(plan.job, Command):
        return None
    return stderr if _may_report_a_pipeline(plan.job) else None


@functools.lru_cache(maxsize=64)
def _may_report_a_pipeline(job: Command) -> bool:
    return _MAY_REPORT_A_PIPELINE.search(job.text) is not None


def cd_folders(plan: AttemptPlan) -> tuple[Path, ...]:
    """The folders the command's shell line moves to with `cd` (`cd build && ./test`), in
    the workdir's terms: a crash there leaves its core there (native-stacks.md), on the
    local runner as in a container, where the workdir is bind-mounted at its own path."""
    if not isinstance(plan.job, Command):
        return ()
    return _cd_folders_of(plan.job, plan.workdir)


@functools.lru_cache(maxsize=64)
def _cd_folders_of(job: Command, workdir: Path) -> tuple[Path, ...]:
    """`cd_folders`, once per command: every attempt of a cell asked it again, and reading a
    shell line (shlex, then its `cd`s) took about 0.1 ms of an attempt's engine time."""
    from reprospec.plan.shellwords import command_words, located_words

    found = {loc.folder for loc in located_words(command_words(job)) if loc.folder}
    # A shell's `cd` is logical: `cd ../other` leaves the workdir, which `workdir / ".."`
    # would still count as inside it (Path.is_relative_to does not resolve `..`).
    return tuple(sorted({Path(os.path.normpath(workdir / folder)) for folder in found}))
