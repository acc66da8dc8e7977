"""One attempt end to end: execute it with a runner, read its evidence once, classify, judge.

`AttemptExecutor` is the `RunAttempt` function the scheduler is given for a
real run; tests give the scheduler other functions. The attempt's files are
read here, once (`Evidence.read`); what the report needs later (a hang's
stacks, a failure's log excerpt) goes into the `AttemptResult`, so nothing
downstream opens them again.

An attempt with `run.instances` runs N process trees released together
(`runners.base.InstanceRunner`); each instance is classified and judged on its
own, and the attempt's outcome is the first failure by time (the instance whose
process ended first among those that failed), else instance 0's pass.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import is_int
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import TRACEBACK_TITLE
from reprospec.core.results import (
    AttemptResult,
    Execution,
    InstanceResult,
    NotRun,
    Outcome,
    bare_type,
)
from reprospec.core.sections import Command
from reprospec.core.units import format_size
from reprospec.core.words import LIMIT_REACHED, PASSED_AFTER_A_TRACEBACK, PASSED_BESIDE_A_CRASH
from reprospec.errors import InfraError
from reprospec.outcome.classify import classify, crash_stack, worker_stack
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.judge import judge_attempt
from reprospec.process.stacks import without_our_frames
from reprospec.runners.base import InstanceRunner, Runner, keep_logs
from reprospec.store.runfolder import RunFolder

if TYPE_CHECKING:
    from pathlib import Path

    from reprospec.native.stacks import NativeStacks
    from reprospec.outcome.gpufindings import GpuFindings  # where a diagnostic left one


class AttemptExecutor:
    """Runs attempts with `runner`, their files in `folder`; safe to call from many threads."""

    def __init__(self, runner: Runner, folder: RunFolder) -> None:
        self.runner = runner
        self.folder = folder

    def __call__(
        self, plan: AttemptPlan, gpu_slot: tuple[str, ...], cancel: threading.Event
    ) -> AttemptResult | None:
        result = self._run(plan, gpu_slot, cancel)
        if result is not None and result.ran is not None and result.ran.kind == "pass":
            # A pass is in the store; its folder keeps only what it printed (runfolder.py).
            self.folder.prune(plan.cell.id, plan.attempt)
            return result
        if result is not None and result.ran is not None and plan.instances is None:
            # Any other that ran keeps every file, its empty logs too (a command's are
            # made at their first byte).
            keep_logs(self.folder.path / self.folder.attempt_logs(plan.cell.id, plan.attempt))
        # Every folder that stays loses its blank in-flight record (only a silent pass's
        # hands it on, `prune`): the attempt is over, and the record was the engine's.
        self.folder.clear_record(plan.cell.id, plan.attempt)
        return result

    def _run(
        self, plan: AttemptPlan, gpu_slot: tuple[str, ...], cancel: threading.Event
    ) -> AttemptResult | None:
        log_dir = self.folder.attempt_dir(plan.cell.id, plan.attempt)
        logs = self.folder.attempt_logs(plan.cell.id, plan.attempt)
        if plan.instances is not None:
            return self._instances(plan, log_dir, gpu_slot, cancel)
        try:
            execution = self.runner.run(plan, log_dir, gpu_slot=gpu_slot, cancel=cancel)
        except InfraError as exc:
            return AttemptResult.not_run(plan.attempt, str(exc), logs)
        if execution.interrupted:
            return None
        return attempt_result(plan, execution, Evidence.read(execution), logs)

    def _instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        gpu_slot: tuple[str, ...],
        cancel: threading.Event,
    ) -> AttemptResult | None:
        # The folder `_run` made: made again, it would be a folder of files to set aside.
        logs = self.folder.attempt_logs(plan.cell.id, plan.attempt)
        if not isinstance(self.runner, InstanceRunner):
            reason = (
                f"the {self.runner.name} runner cannot run run.instances "
                f"({plan.copies} copies of the attempt released from one start barrier); "
                "use --runner local or --runner venv"
            )
            return AttemptResult.not_run(plan.attempt, reason, logs)
        # Each instance its own share of the attempt's slots (environment.gpus each).
        each = plan.gpus
        slots = [gpu_slot[n * each : (n + 1) * each] for n in range(plan.copies)]
        try:
            executions = self.runner.run_instances(plan, log_dir, gpu_slots=slots, cancel=cancel)
        except InfraError as exc:
            return AttemptResult.not_run(plan.attempt, str(exc), logs)
        if any(execution.interrupted for execution in executions):
            return None
        return instances_result(
            plan,
            executions,
            [f"{logs}instance-{n}/" for n in range(len(executions))],
        )


def attempt_result(
    plan: AttemptPlan,
    execution: Execution,
    evidence: Evidence,
    logs: str = "",
) -> AttemptResult:
    """Classify and judge one finished execution from its evidence (a container's stack
    dumps read by the workdir it recorded, `Execution.container_workdir`)."""
    # An exit 0 is pytest's only where its report counts skips (each test skipped: no test ran).
    pytest = (
        execution.returncode is not None
        and (execution.returncode != 0 or " skipped" in evidence.stdout)
        and _runs_pytest(plan)
    )
    outcome = with_native_and_ranks(
        classify(
            execution,
            evidence,
            pytest=pytest,
            argv=plan.job.argv if isinstance(plan.job, Command) else None,
            declared=_declared(plan, execution),
            workdir=plan.workdir,
        ),
        evidence,
    )
    verdict = judge_attempt(outcome, plan.expectation, evidence)
    failed = isinstance(outcome, Outcome) and outcome.kind != "pass"
    stack = evidence.stack if isinstance(outcome, Outcome) else None
    hang = isinstance(outcome, Outcome) and outcome.kind == "hang"
    excerpt = evidence.excerpt(hang=hang) if failed else None
    dead_child_stack: str | None = None
    # A dead child's own stack is its faulthandler report on stderr: a forked worker's
    # holds the frame of the sitecustomize's wrapper of Popen.__init__ it was started
    # through, reprospec's and not the program's, left out as stack.txt leaves it.
    if isinstance(outcome, Outcome) and outcome.where == "child":
        # A child's crash: its own stack, which the main process's traceback is not.
        child = crash_stack(execution, evidence)
        stack = without_our_frames(child) if child else stack
    elif isinstance(outcome, Outcome) and outcome.crashed_child is not None:
        # A hang after a child's death: the dead child's own stack, kept apart from the
        # hung ones' (a Pool's parent waits in `map`; the frame that crashed is the worker's).
        dead = crash_stack(execution, evidence)
        if dead is not None and dead.strip():
            dead_child_stack = without_our_frames(dead).strip()
            # The log holds the report as printed: left out as it is there.
            excerpt = evidence.excerpt(without=dead, hang=True)
    stuck = _stuck(outcome)
    if stuck is not None and evidence.native is not None:
        # The full text was written as the stacks were read, before the hang was classified:
        # its stuck worker is marked as report.md and results.json mark it.
        native.write_text(evidence.native, execution.log_dir, stuck)
    dead_worker = worker_stack(outcome, evidence) if isinstance(outcome, Outcome) else None
    if dead_worker is not None:
        from reprospec.outcome.tracebacks import current_thread_first

        # The worker's own stack leads the report; the excerpt is the main process's view.
        stack = current_thread_first(without_our_frames(dead_worker.stack))
        excerpt = evidence.excerpt(without=dead_worker.stack)
    return AttemptResult(
        attempt=plan.attempt,
        duration_s=round(execution.duration_s, 3),
        outcome=outcome,
        matched=verdict.matched,
        mismatches=verdict.mismatches,
        logs=logs,
        started=execution.started,
        finished=execution.finished,
        gpu_slot=execution.gpu_slot,
        warnings=(
            *execution.warnings,
            *_oom_unexplained(execution, outcome),
            *reached_memory_limit(plan, outcome),
            *preload_hint(evidence),
            *passed_over_a_crash(plan, outcome, evidence),
            *passed_after_a_traceback(outcome, evidence),
            *passed_beside_a_worker_fault(outcome, evidence),
        ),
        stack=stack,
        dead_child_stack=dead_child_stack,
        child_warnings=evidence.warnings(),
        # Only a failure's log is quoted in a report; "" says there was nothing to quote.
        excerpt=excerpt,
        native=native.render_markdown(
            evidence.native,
            pid=_pid(outcome),
            link=f"{logs}{native.TEXT_NAME}" if logs else None,
            stuck=stuck,
        )
        if failed and evidence.native is not None
        else None,
        gpu=evidence.gpu.markdown() or None if evidence.gpu is not None else None,
        launch=execution.launch,
        launch_note=execution.launch_note,
        perturbed=execution.perturbed,
    )


_MODULE = Lazy(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _declared(plan: AttemptPlan, execution: Execution) -> tuple[str, ...]:
    """The normalized names the cell's packages require, asked only of an exit 1 (where
    `python -m` of one of theirs is the program's failure, outcome/setupfail.py)."""
    packages = plan.environment.packages
    if not packages or execution.returncode != 1:
        return ()
    from reprospec.environment.packages import requirement_names

    return requirement_names(packages)


def _runs_pytest(plan: AttemptPlan) -> bool:
    """Whether the attempt's command is pytest, whose report names a failure the
    tracebacks' reader cannot see, or that skipped every test it selected; asked of an
    attempt that did not exit 0, or exited 0 with ` skipped` in its output (a plain pass,
    the common case, imports no reader of pytest's report)."""
    if not isinstance(plan.job, Command):
        return False
    from reprospec.outcome.pytestreport import is_pytest

    return is_pytest(plan.job.argv)


def _oom_unexplained(execution: Execution, outcome: Outcome | NotRun) -> tuple[str, ...]:
    """The OOM killer's kills an outcome does not name (it died of no SIGKILL: a worker it
    killed, which the main process outlived), kept as a warning: never lost."""
    if execution.oom is None or (isinstance(outcome, Outcome) and outcome.oom_killed):
        return ()
    return (execution.oom,)


def reached_memory_limit(plan: AttemptPlan, outcome: Outcome | NotRun) -> tuple[str, ...]:
    """A failure out of memory under `environment.memory` (a MemoryError, by type: never a
    torch.OutOfMemoryError, GPU memory no `environment.memory` bounds; C++'s uncaught
    std::bad_alloc, its abort's exception as outcome/cxxterminate.py read it, not any words
    of stderr's) is the limit's doing: said (LIMIT_REACHED), so that the verdict's phrase
    says it too, where the attempt's record alone did not tell that it ran into its limit.
    The docker runner's OOM kill says so already (`crash SIGKILL by the OOM killer`)."""
    memory = plan.environment.memory
    if memory is None or not isinstance(outcome, Outcome) or outcome.kind == "pass":
        return ()
    # The exception's type exactly (torch.OutOfMemoryError, a GPU's, is no host limit's),
    # else, with no traceback that ended it, stderr's last line where it names the type.
    # A group's members too, as `expect.exception` meets them: a TaskGroup whose task ran
    # out is `ExceptionGroup[MemoryError]`, one in the chain (`raise ... from group`) too.
    said = [e.type for e in outcome.raised()]
    said = said or [(outcome.message or "").partition("\n")[0].partition(":")[0].strip()]
    if any(bare_type(s) == "MemoryError" for s in said):
        found = "MemoryError"
    elif "std::bad_alloc" in said:
        found = "std::bad_alloc"
    else:
        return ()
    return (
        f"{LIMIT_REACHED}memory limit ({format_size(memory)}, environment.memory): {found} "
        "under it (docs/limits.md)",
    )


def passed_over_a_crash(
    plan: AttemptPlan, outcome: Outcome | NotRun, evidence: Evidence
) -> tuple[str, ...]:
    """A pass whose tree held a process that died of a signal (its core was read): said.

    The attempt's outcome is its root's (a descendant's crash counts where the root then
    failed), so `python train.py | tee log` whose python segfaulted passes: the shell's
    status is tee's. The pass is what ran; the crash beside it must not go unseen.
    """
    if not isinstance(outcome, Outcome) or outcome.kind != "pass" or evidence.native is None:
        return ()
    crashed = [p for p in evidence.native.processes if p.signal and not p.root]
    if not crashed:
        return ()
    first = crashed[0]
    piped = isinstance(plan.job, Command) and "|" in (plan.job.shell or "")
    return (
        f"{PASSED_BESIDE_A_CRASH} {first.signal} (pid {first.pid}"
        + (f": {first.command}" if first.command else "")
        + ")"
        + (f" and {len(crashed) - 1} more" if len(crashed) > 1 else "")
        + ": the attempt's status is its root's"
        + (
            " (a pipeline's status is its last command's; run it as"
            " `[bash, -o, pipefail, -c, ...]` to make the crash the pipeline's)"
            if piped
            else ""
        ),
    )


def passed_after_a_traceback(outcome: Outcome | NotRun, evidence: Evidence) -> tuple[str, ...]:
    """A pass that printed a traceback (`print_exc()`, exit 0): a bare pass would hide it."""
    # A pass imports no reader of tracebacks unless it printed one (issue 30, item 4): the
    # title, which rich's box has too (CPython's header adds a colon, rich's box does not).
    traceback = TRACEBACK_TITLE in evidence.stderr
    if not isinstance(outcome, Outcome) or outcome.kind != "pass" or not traceback:
        return ()
    from reprospec.outcome.tracebacks import last_printed

    said = last_printed(evidence.stderr)
    return (f"{PASSED_AFTER_A_TRACEBACK} {said}",) if said else ()


# A phase's name as a fault event carries it (the spec's, short and printable).
_PHASE = Lazy(r"[\w.:-]{1,64}")


def passed_beside_a_worker_fault(outcome: Outcome | NotRun, evidence: Evidence) -> tuple[str, ...]:
    """A pass in which a worker fault of the spec fired: said, once per fault.

    Workers fetch batches ahead of the loop, past the last step of a phase; a fault on an
    item of such a batch fires (its `fault` event) in a batch the loop never takes, so the
    attempt passes. A bare `pass` read as if the fault had never come.
    """
    if not isinstance(outcome, Outcome) or outcome.kind != "pass":
        return ()
    said: dict[int, str] = {}
    for event in evidence.events.faults:
        number = event.get("number")
        if event.get("where") != "worker" or not is_int(number) or number in said:
            continue
        kind, worker, index = event.get("kind"), event.get("worker"), event.get("index")
        phase, step = event.get("phase"), event.get("step")
        # Written inside the attempt: only names and numbers are worded.
        what = f" ({kind})" if isinstance(kind, str) and _MODULE.fullmatch(kind) else ""
        who = f" {worker}" if is_int(worker) else ""
        item = f" on item {index}" if is_int(index) else ""
        at = (
            f" ({phase} step {step})"
            if isinstance(phase, str) and _PHASE.fullmatch(phase) and is_int(step)
            else ""
        )
        said[number] = (
            f"passed, but workload.faults[{number}]{what} fired in DataLoader worker{who}"
            f"{item}{at}: the loop never took that batch (workers fetch batches ahead of "
            "the loop, past the last step of a phase)"
        )
    return tuple(said.values())


def preload_hint(evidence: Evidence) -> tuple[str, ...]:
    """What a forked attempt did that its preload server's imports make differ from a fresh
    one: variables it set that they had read, many modules they had not imported."""
    environ = _preload_environ(evidence.events.preload_environ)
    missed = evidence.events.preload_missed
    if missed is None:
        return environ
    listed, count = missed.get("packages"), missed.get("modules")
    # Written inside the attempt: only module names and numbers are worded.
    packages = [
        f"{name} ({n})"
        for p in (listed if isinstance(listed, list) else [])[:3]
        if isinstance(p, dict)
        and isinstance(name := p.get("name"), str)
        and _MODULE.fullmatch(name)
        and isinstance(n := p.get("modules"), int)
    ]
    if not isinstance(count, int) or not packages:
        return environ
    return (
        *environ,
        f"forked, then imported {count} modules its preload server had not "
        f"({', '.join(packages)}): add them to run.preload to import them once",
    )


def _preload_environ(names: tuple[str, ...]) -> tuple[str, ...]:
    """`forked, then set OMP_NUM_THREADS, which ...`: a fork cannot do what a fresh start
    does when a program sets a variable before its own import of a preloaded module."""
    if not names:
        return ()
    listed = ", ".join(names)
    return (
        f"forked, then set {listed}, which the preloaded modules (or the libraries they "
        f"load) had read when the preload server imported them, before the program ran: "
        f"where the program sets {'it' if len(names) == 1 else 'them'} before its own "
        f"import, a fresh attempt's import reads the program's "
        f"{'value' if len(names) == 1 else 'values'} and this forked one did not "
        f"(--preload none runs it fresh; environment.env sets a variable before the import "
        f"in both)",
    )


def _in_child(outcome: Outcome, stacks: NativeStacks, pid: int) -> Outcome:
    """`outcome` placed in the native place of the tree under its child `pid`: named by
    that child's command line (`(child pid N: ./pp)`, as a crash in a child is said) where
    the place is the child's or a process it ran, the latter named too (`hung_process`:
    `(child pid N: ./pp) in a process it ran (nap), in ...`; it read `(child pid N) in a
    process it ran (nap)`, the child's own command lost)."""
    found = native.hung_below(stacks, pid)
    if found is None:
        return outcome
    place, process = found
    child = next((p.command.strip() for p in stacks.processes if p.pid == pid), "")
    placed = replace(outcome, hung_native=place, cmdline=outcome.cmdline or child or None)
    if process.pid == pid:
        return placed
    return replace(placed, hung_process=process.command.strip() or None)


def with_native_and_ranks(outcome: Outcome | NotRun, evidence: Evidence) -> Outcome | NotRun:
    """A crash's signature gains its top in-library native frame, so two different
    segfaults are told apart; a hang with no Python stack, its native place (`hung_native`);
    a distributed hang's detail names the rank out of step."""
    if not isinstance(outcome, Outcome):
        return outcome
    if outcome.kind == "crash" and evidence.native is not None:
        outcome = replace(
            outcome,
            signature=native.with_native_frame(
                outcome.signature, evidence.native, pid=_pid(outcome)
            ),
        )
    if (
        outcome.kind == "hang"
        and evidence.native is not None
        and not evidence.stack
        and outcome.hung_in is None
        and outcome.crashed_child is None
    ):
        # No Python stack names where it sat (a C program's): its live native stacks do, as
        # a crash's name its frame (its progress line and report said `hang` alone). After
        # a child's death, the child names the hang instead, as for Python.
        # A launcher's child it sat in (`./nap` under `./pp`) is named too, as capture's
        # title names it: `hang in clock_nanosleep@libc<-main@nap` read as if `./pp` slept.
        outcome = replace(
            outcome,
            hung_native=native.hung_frame(evidence.native),
            hung_process=native.hung_descendant(evidence.native),
        )
    elif (
        outcome.kind == "hang"
        and evidence.native is not None
        and outcome.where == "child"
        and outcome.pid is not None
        and outcome.hung_in is None
        and outcome.crashed_child is None
    ):
        # A Python program only waiting for its child (`subprocess.run(["./nap"])`): the
        # child's native place, as a C launcher's (it read `hang (child pid N)`, no place).
        outcome = _in_child(outcome, evidence.native, outcome.pid)
    if outcome.kind != "pass" and evidence.gpu is not None:
        outcome = with_gpu_findings(outcome, evidence.gpu)
    if outcome.kind in ("hang", "crash", "error") and evidence.ranks is not None:
        from reprospec.outcome import ranks  # a distributed attempt's (evidence.py)

        if outcome.where == "child" and outcome.detail:
            named = ranks.named_child(outcome.detail, outcome.pid, evidence.ranks)
            outcome = replace(outcome, detail=named)
        said = ranks.describe(evidence.ranks)
        if said and said not in (outcome.detail or ""):
            detail = f"{outcome.detail}; {said}" if outcome.detail else said
            outcome = replace(outcome, detail=detail)
    return outcome


def with_gpu_findings(outcome: Outcome, findings: GpuFindings) -> Outcome:
    """A failure's signature gains the kernel the GPU diagnostics blame (`...:kernel=oob_store`),
    and its detail leads with what they found: the Python stack of a CUDA fault is
    usually not where the fault is."""
    kernel = findings.kernel
    signature = outcome.signature
    if kernel and f"kernel={kernel}" not in signature:
        signature = f"{signature}:kernel={kernel}"
    said = findings.headline()
    detail = outcome.detail
    if said and said not in (detail or ""):
        detail = f"{said}; {detail}" if detail else said
    return replace(outcome, signature=signature, detail=detail)


def _pid(outcome: Outcome | NotRun) -> int | None:
    """The pid of the process that crashed (`Outcome.crashed_pid`), of an outcome at all."""
    return outcome.crashed_pid if isinstance(outcome, Outcome) else None


def _stuck(outcome: Outcome | NotRun) -> int | None:
    """The pid of the DataLoader worker a hang is stuck in (its events' or its stacks'),
    whose threads the native stacks list first, as the hang's summary names it."""
    if isinstance(outcome, Outcome) and outcome.kind == "hang" and outcome.where == "worker":
        return outcome.pid
    return None


def chosen_instance(instances: Sequence[InstanceResult]) -> InstanceResult:
    """The instance whose outcome and logs an attempt of instances reports: the first that
    did not run, else the failure that ended first, else instance 0. Where every failure
    hung, the lowest numbered: each was killed at its own deadline, and the engine's kill
    order says nothing of the program (report/instances.first_failure says none first)."""
    not_run = [i for i in instances if isinstance(i.outcome, NotRun)]
    if not_run:
        return not_run[0]
    failed = [i for i in instances if i.failed]
    if not failed:
        return instances[0]
    if all(i.ran is not None and i.ran.kind == "hang" for i in failed):
        return min(failed, key=lambda i: i.instance)
    return min(failed, key=lambda i: (math.inf if i.end_s is None else i.end_s, i.instance))


def instances_result(
    plan: AttemptPlan,
    executions: Sequence[Execution],
    logs: Sequence[str],
) -> AttemptResult:
    """One attempt from its instances' executions: each classified and judged, the attempt's
    outcome the first failure by time (`chosen_instance`; else instance 0's), every instance
    recorded."""
    results = [
        attempt_result(plan, execution, Evidence.read(execution), folder)
        for execution, folder in zip(executions, logs, strict=True)
    ]
    released = [e.released_at for e in executions if e.released_at is not None]
    origin = min(released, default=None)

    def since(moment: float | None) -> float | None:
        if moment is None or origin is None:
            return None
        return round(moment - origin, 6)

    instances = tuple(
        InstanceResult(
            instance=number,
            outcome=result.outcome,
            matched=result.matched,
            gpu_slot=execution.gpu_slot,
            duration_s=result.duration_s,
            ready_s=since(execution.ready_at),
            start_s=since(execution.released_at),
            end_s=since(execution.ended_at),
            logs=result.logs,
        )
        for number, (execution, result) in enumerate(zip(executions, results, strict=True))
    )
    first = chosen_instance(instances)
    chosen = results[first.instance]
    outcome = chosen.outcome
    if isinstance(outcome, NotRun):
        outcome = NotRun(f"instance {first.instance} of {len(instances)}: {outcome.reason}")
    elif len(instances) > 1 and any(i.failed for i in instances):
        from reprospec.report.instances import first_failure  # the report's words for it

        said = first_failure(instances, first.instance)
        outcome = replace(outcome, detail=f"{outcome.detail}; {said}" if outcome.detail else said)
    return replace(
        chosen,
        outcome=outcome,
        matched=chosen.matched and isinstance(outcome, Outcome),
        duration_s=max(result.duration_s for result in results),
        started=min(result.started for result in results),
        finished=max(result.finished for result in results),
        gpu_slot=tuple(slot for execution in executions for slot in execution.gpu_slot),
        # The runner says which warnings are one instance's (`instance N: ...`).
        warnings=tuple(dict.fromkeys(w for result in results for w in result.warnings)),
        child_warnings=tuple(
            {w.key: w for result in results for w in result.child_warnings}.values()
        ),
        instances=instances,
        instance=first.instance,
        start_spread_s=round(max(released) - min(released), 6) if released else None,
    )
