"""A run from a loaded spec to a `RunResult`: the stages in order, and nothing else.

    load -> validate -> expand -> plan -> execute -> classify -> judge -> store -> render
    spec.py             matrix.py  plan.py  scheduler.py  outcome.py  judge.py  store.py  report/
                                            attempt.py                          runfolder.py

This module owns what a run holds while it goes: the runner, the run id and
folder, the store, the environment capture in the background, the GPU pool
and cancellation. It prints nothing and installs no signal handlers: the CLI
(commands/run.py) does that, and the Python API (api.py) calls in here too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from reprospec.core import collector, stopclock
from reprospec.core.caller import resuming, said
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan, Cell, Spec
from reprospec.core.jsontypes import JsonObject
from reprospec.core.logtext import undecodable_byte
from reprospec.core.redact import MASK, Redactor, holds_secret, unset_env
from reprospec.core.results import (
    AttemptResult,
    CellResult,
    Outcome,
    RunResult,
    SetAside,
    Standalone,
)
from reprospec.core.runoptions import SEARCH_PURPOSES, RunOptions
from reprospec.core.sections import same_python
from reprospec.core.words import (
    RESOLVED_SPEC,
    agree,
    attempts_not_stored,
    plural,
    set_aside_warning,
)
from reprospec.errors import InfraError, InterruptedBeforeRun, UsageError
from reprospec.outcome.judgedcells import JudgedCells
from reprospec.pipeline.attempt import AttemptExecutor
from reprospec.pipeline.gpus import GpuPool, visible_gpus
from reprospec.pipeline.programfiles import program_files, refuse_other_files
from reprospec.pipeline.scheduler import ProgressCallback, ProgressEvent, Scheduler
from reprospec.plan.run import RunPlan, plan_run
from reprospec.process import leftovers
from reprospec.report import warm_up
from reprospec.runners import create_runner
from reprospec.runners.base import Runner, first_runnable, pins_of
from reprospec.spec.checks.cells import (
    silent_fault_message,
    silent_faults,
    unread_axes,
    unread_axis_message,
)
from reprospec.spec.matrix import expand
from reprospec.store.db import Store, StoreError
from reprospec.store.digests import FILES_FIELD, RunKey
from reprospec.store.runfolder import RunFolder
from reprospec.store.specvariables import FIELD as VARIABLES_FIELD
from reprospec.store.specvariables import public_values
from reprospec.store.specvariables import record as spec_variables

if TYPE_CHECKING:
    # A resumed run's record, made only by a resume (core/resumed.py says why).
    from reprospec.core.resumed import Resumed, Stopped


@frozen
class Resume:
    """What an interrupted run already finished, to continue it under its own id."""

    run_id: str
    done: Mapping[tuple[str, int], AttemptResult] = field(default_factory=dict)


def run(
    spec: Spec,
    options: RunOptions,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    resume: Resume | None = None,
    shown: Path | None = None,
) -> RunResult:
    """Plan and execute `spec`; returns the judged result, already stored and written.

    Interrupted (KeyboardInterrupt, or `cancel` set): the attempts in flight are
    stopped, the partial result is stored and written, `interrupted` is True.
    `options.deferral`: as `execute` begins it. `shown`: as `execute` takes it.
    """
    plan = plan_run(spec, options)
    return execute(plan, options, progress=progress, cancel=cancel, resume=resume, shown=shown)


def execute(
    plan: RunPlan,
    options: RunOptions,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    resume: Resume | None = None,
    whole: bool = True,
    shown: Path | None = None,
) -> RunResult:
    """Run a planned spec end to end and write its run folder and store rows.

    `shown`: the spec file the run records as its spec (store, results.json, report) where
    the plan's spec is a copy of it, made for this run and removed after it (capture's
    verify): the run then names the file a person has, not a folder gone when it ends.

    `options.deferral`: begun once the run is about to be in the store, from where the
    caller's stop (Ctrl-C) is `cancel` alone, never raised (core/safepoint.py): the attempts
    stop on it, and what ran is judged and written whole. A stop once every attempt had
    ended stops nothing: the run is complete, not interrupted. Never ended here:
    the caller goes on under it as it needs (`run` to its table, api.run to its return).

    `whole=False`: the result's `cells` are a `JudgedRun`, each made when it is read, and a
    finished cell only what the report and the console read of it
    (`JudgedCells.for_report`; its attempts without timestamps and log folders), as a large
    run holds them; results.json has each cell whole. Otherwise the
    result is read back from results.json, whole, as the Python API returns it.
    """
    from reprospec.store.cellspool import CellSpool
    from reprospec.store.resultsjson import kept_on_resume, load_run

    spec = plan.spec
    # Checked first: `--gpus` ids this machine lacks are a usage error before anything runs.
    gpu_pool = GpuPool(visible_gpus(options.gpus))
    _refuse_undecodable_out(options.out)
    # The spec carries the overrides it was loaded with: those are the ones that ran.
    options = options.with_changes(overrides=spec.overrides)
    runner = create_runner(options, spec_dir=spec.base_dir)
    # Closed as anything fails before the run (`opened`, below, closes it from its start):
    # it holds the process's remembered failures (venvs.remembered_failures), and a runner
    # left open kept "python 3.12 not found" for every later run of this process.
    try:
        runner.prepare(plan.attempts)
    except InterruptedBeforeRun:
        runner.close()
        raise
    except KeyboardInterrupt as exc:
        runner.close()
        # Stopped before the run is in the store (below): nothing of it is, so `run` says
        # so, where its 130 read as `--resume RUN` would finish a run that was never stored.
        out = options.out
        raise InterruptedBeforeRun(resume.run_id if resume else None, out) from exc
    except BaseException:
        runner.close()
        raise
    # Opened before a new run's folder is made: a store that cannot be used (damaged, on a
    # full disk) refused the run after it had left a folder of an engine.json alone, which
    # `latest` then named, so `report latest` and `run --resume latest` said "no run"
    # though the run before it was whole.
    # The store, and the run folder this engine holds (`RunFolder.hold`): released at the
    # run's end, or as anything before it fails (a resume refused by `reap`).
    opened = contextlib.ExitStack()
    # The runner's close, too: a failure from here to the run (a full disk's begin_run, a
    # resume's writing) left it open, as only the end of the run's attempts closed it. A
    # second close is harmless.
    opened.callback(runner.close)
    try:
        store = opened.enter_context(Store(options.out, reserve=True))
    except BaseException:
        opened.close()
        raise
    # The store's key, read at its first use and kept: the program's files, the spec's
    # secret variables and the capture's are digested under it (store/digests.py).
    key = RunKey(options.out)
    try:
        # The program's files as the attempts will find them, digested before the first
        # starts (an attempt may write a file its command names): what `compare` tells
        # changed by.
        files, files_warnings = program_files(plan, key)
        # What the store keeps of a resumed run's start, read once: its files are checked
        # here, before the folder is claimed (a refused resume leaves the run as it was),
        # and its times and status are carried over below.
        begun = store.run_info(resume.run_id) if resume is not None else None
        if resume is not None and begun is not None:
            files_warnings += refuse_other_files(begun.environment, files, resume.run_id)
        # Absolute: children run in their own workdir and must find the events file.
        if resume is not None:
            folder = RunFolder.of(options.out.resolve(), resume.run_id).create()
            # Held before the claim: a second resume is refused, not run.
            held = folder.hold()
            opened.callback(os.close, held)
            # Read before the claim writes engine.json anew: the earlier engine's word of a
            # stop its store could not take (a full disk), which makes it not `killed`.
            noted = folder.stop_noted()
            _claim(folder, len(plan.cells))
        else:
            folder = _new_folder(options.out.resolve(), spec.name, len(plan.cells))
            held = folder.hold()
            opened.callback(os.close, held)
            noted = ""
        run_id = folder.run_id
        # Read before anything writes it: a resumed run whose results.json is missing has its
        # folder written again from the store, and one that had finished keeps its record.
        had_results = folder.results_json.is_file()
        # The spec's path as the run recorded it (as typed, `sl.yaml`): a resumed run loads
        # it from the store's absolute path, and its report and results.json said that one,
        # the sender's home in a report meant to be shared.
        previous, recorded = (
            kept_on_resume(folder.results_json)
            if resume is not None and had_results
            else (None, None)
        )
        # A resumed run's dead engine may have left attempts running: they end first.
        reaped = leftovers.reap(folder.path) if resume is not None else ()
        # Started as soon as the runner and the folder are there (a resumed run's leftovers
        # gone): a short run's end waits for it.
        # The first attempt whose environment could be built: a first cell whose venv or
        # image failed would leave the report only its error.
        # An empty shard (fewer attempts than shards) runs none: the first cell's first
        # attempt stands for the machine the shard ran on, which its record still says.
        captured = (
            first_runnable(runner, plan.attempts) if plan.attempts else plan.attempts.planned(0, 1)
        )
        capture = EnvironmentCapture(
            runner,
            captured,
            folder.path,
            key=key,
            inherits=options.runner != "docker",
            # A resumed run's attempt that ran before is not checked again in this one, nor
            # an empty shard's, which it never runs: their capture asks the interpreter.
            checked=bool(plan.attempts)
            and not (resume and (captured.cell.id, captured.attempt) in resume.done),
        )
        # The values of the variables the spec reads, as this run reads them: a resume under
        # other values is refused (pipeline/resume.py), compare tells them (store/specvariables.py).
        variables = spec_variables(spec.document, key)
        kept: JsonObject = {
            **({} if files is None else {FILES_FIELD: files}),
            **({} if variables is None else {VARIABLES_FIELD: variables}),
        }
        # Every attempt and the run pass through it before anything is stored, printed or
        # rendered: no output can show a secret that was missed on its way (redact.py).
        redactor = Redactor.for_spec(spec.document)
        # The spec is rerun from a report or a bundle: masked so it stays valid YAML.
        spec_text = redactor.spec_text(spec_text_of(spec))
        started = _now()
        ended: str | None = None  # a resume that runs nothing keeps the end it had
        # How the earlier part of a resumed run stopped, and when, and the parts before it
        # (a run resumed before): its report says so.
        stopped: Stopped = "interrupted"
        stopped_at = ""
        before = folder.resumed_parts() if resume is not None else ()
    except BaseException:
        opened.close()
        raise
    # Each cell's results.json entry, written as it is judged (store/cellspool.py).
    with opened, CellSpool(folder.results_spool, len(plan.cells)) as spool:
        if options.deferral is not None:
            # From the store's row to the last output, a stop is `cancel`: raised after
            # the last attempt, it lost the writing of the run.
            options.deferral.begin()
        if resume is not None:
            # A resumed run began when it first did: its report and results.json say so
            # (the store's row kept that time all along).
            started = begun.started if begun is not None and begun.started else started
            if begun is not None:
                # The store says running of a run whose engine died without a word (resume
                # refuses one whose engine lives): `killed`, as history lists it.
                stopped = _stopped(begun.status, noted)
                stopped_at = begun.finished if stopped != "killed" else ""
                if begun.status == "finished" and begun.finished:
                    # Its folder written again from the store (removed by hand): no attempt
                    # runs, and the run still ended when it did (review).
                    ended = begun.finished
            store.resume_run(run_id)
        else:
            try:
                store.begin_run(
                    run_id,
                    spec.name,
                    # Absolute: --resume may run from elsewhere.
                    str((shown or spec.origin or spec.path).resolve()),
                    spec_text,
                    options.runner,
                    redactor.value(options.stored()),
                    # Kept from the start: a resumed run compares its files and variables with
                    # these.
                    kept,
                    started=started,  # the same second as results.json's, which a resume keeps
                )
            except StoreError:
                # Not begun (a full disk): no run the store lists, so no folder;
                # the capture's child, which writes in it, ends first.
                capture.result(timeout=5)
                _discard(folder)
                raise
        stored_before = len(resume.done) if resume else 0
        # Its results.json gone (the folder removed by hand), the store writes it again; a
        # killed part never wrote one.
        rewritten = not had_results and stopped != "killed"
        if resume is not None:
            from reprospec.core.resumed import earlier_parts

            # A finished part written by a resume of it that ran nothing is named once.
            before, last = earlier_parts(before, stopped, stopped_at, stored_before)
            # Kept as this part begins: interrupted or killed, the next resume still names
            # the parts before it. A finished run's too, whose retry of its attempts that
            # could not run (a finished run, whole, runs none and keeps its record) was
            # stopped: its attempts were counted as the stopped retry's.
            folder.write_resumed_parts((*before, last))
        keeper = _Keeper(store, run_id, stored=stored_before)
        judged = JudgedCells(plan, spool.add, redactor)
        executor = AttemptExecutor(runner, folder)

        def run_attempt(
            attempt: AttemptPlan, gpu_slot: tuple[str, ...], stop: threading.Event
        ) -> AttemptResult | None:
            return redactor.value(executor(attempt, gpu_slot, stop))

        def on_cell(cell: Cell, attempts: tuple[AttemptResult, ...]) -> None:
            folder.end_cells([cell.id])  # its attempts' prunes left its folder to its end
            judged.add(cell, attempts)

        def committed_then_said(
            event: ProgressEvent,
            cell: Cell,
            result: AttemptResult | None,
            finished: int,
            total: int,
        ) -> None:
            keeper.before_line(event, result)
            if progress is not None:
                progress(event, cell, result, finished, total)

        scheduler = Scheduler(
            plan,
            run_attempt,
            gpu_pool=gpu_pool,
            on_attempt=keeper.record,
            progress=committed_then_said,
            done=resume.done if resume else None,
            cancel=cancel,
            on_cell=on_cell,
            # A SIGTERM's arrival, where the command line's handlers timestamp it (none for
            # the Python API's caller, whose stop is its own cancel event).
            stop_arrival=stopclock.first_since if stopclock.installed() else None,
        )
        keeper.cancel = scheduler.cancel
        # The imports and setup are done: the collector is on for the attempts (collector.py).
        collector.release()
        # An attempt that could not write its folder (a full disk, a folder made unwritable
        # or replaced by a file): the run stops as a store that fails stops it, but the store
        # still works, so the run is stored as interrupted, not left `running` (`killed`).
        broke: OSError | None = None
        # An exception of the caller's own code, a `progress` callback's (or an engine bug):
        # the attempts in flight are stopped as for Ctrl-C, and the run is stored as
        # interrupted before it is raised again, where it left the run `running` in the
        # store while the caller lived, 'still running' to report and resume. Any
        # BaseException: a callback that calls sys.exit raises SystemExit, no Exception.
        raised: BaseException | None = None
        try:
            scheduler.run()
            # A stop that came once every attempt had ended (the progress said [N/N]) cut
            # nothing short: the run is complete, not `interrupted` with nothing to resume.
            # A store that failed stops it all the same.
            interrupted = scheduler.cancel.is_set() and (
                keeper.failure is not None or not scheduler.complete()
            )
        except KeyboardInterrupt:
            interrupted = True
        except BrokenPipeError as exc:
            # The reader of the progress lines went away (`run SPEC 2>&1 | head`): the
            # caller's stream, not an attempt's folder. Raised again once the run is stored
            # interrupted, it ends the command as a closed pipe does (exit 141), where it was
            # a store failure (`InfraError: Broken pipe`) whose message then broke the same
            # pipe and left Python's exit 1, a not-reproduced run's code.
            interrupted, raised = True, exc
        except OSError as exc:
            interrupted, broke = True, exc
        except BaseException as exc:
            interrupted, raised = True, exc
        finally:
            # Every attempt is over: what the runner kept running (preload servers) goes,
            # and the cells that did not end (an interrupted run's) leave no empty folder.
            runner.close()
            folder.end_cells(scheduler.unfinished())
        if not interrupted and capture.running():
            # The outputs' imports and template, while the capture's child still runs.
            with collector.importing():
                warm_up()
        environment, warnings = capture.result(
            timeout=_STOPPED_CAPTURE_S if interrupted else None, cancel=scheduler.cancel
        )
        # The attempts that ended as a SIGTERM to every process came are taken back before
        # anything is judged (`settle`: the rest of a short slack after the last attempt,
        # which the capture's wait and the imports above have partly spent), and the others'
        # progress lines said, whose `progress` may raise as it may in `run`.
        try:
            scheduler.settle()
        except BaseException as exc:
            interrupted, raised = True, raised or exc
        # Every attempt that ended is committed, said or not (a stop's, a callback's raise),
        # and those the store still holds after a failure stopped the run (`unstored`).
        keeper.flush(at_end=True)
        set_aside = scheduler.set_aside()
        if set_aside:
            keeper.forget(set_aside)
            # An attempt set aside is one to run again: the run is not complete, though the
            # stop's handler may not have run yet (a loaded machine) to say it stopped.
            interrupted = True
        environment = {**environment, **kept}
        # The run folder removed under the run (`rm -rf`): its outputs go into a new one,
        # and the warning (stderr, the report) says what it lacks, where nothing did and the
        # report listed attempt folders that were gone; a run stopped says it too.
        removed = _removed(folder, held, keeper.stored)
        rewritten_as = ", and its results.json and report.md are written again, into a new one"
        warnings = (
            *((set_aside_warning(set_aside),) if set_aside else ()),
            *((removed + rewritten_as,) if removed else ()),
            *reaped,
            *unset_env(spec.document, Redactor.masked_names(spec.source_text)),
            # An axis of `--set matrix.X=[...]` is never validated: an observed run of two
            # cells alike read as if X had been tried and changed nothing. Of the cells that
            # run: a probe's one cell runs no two alike (bisect's, whose override left unread
            # the axis that fed the user's package version).
            *(unread_axis_message(axis) for axis in unread_axes(spec.document, plan.cells)),
            *_silent_faults(spec),
            *_quiet_pytest(spec),
            *files_warnings,
            *warnings,
            *store.warnings,
            *keeper.unstored,
        )
        cells = judged.all(scheduler.unfinished(), interrupted=interrupted)
        record = None
        if resume is not None:
            from reprospec.core.resumed import Resumed

            earlier = Resumed(stored_before, 0, stopped, stopped_at, before, rewritten=rewritten)
            record = _resumed(keeper.stored - stored_before, earlier, previous, interrupted)
        result = RunResult(
            run_id=run_id,
            spec_name=spec.name,
            spec_path=recorded or str(shown or spec.origin or spec.path),
            spec_text=spec_text,
            runner=options.runner,
            started=started,
            finished=ended if ended is not None and keeper.stored == stored_before else _now(),
            environment=environment,
            cells=cells,
            # A secret of a --set as the expression that reads it, which runs.
            command_line=redactor.command_line(options.command_line),
            title=spec.title,
            description=spec.description,
            warnings=warnings,
            interrupted=interrupted,
            shard=str(options.shard) if options.shard else "",
            standalone=_standalone(
                plan,
                cells,
                _ran_python(environment),
                public_values(variables),
                pins_of(runner),
                redactor,
            ),
            # Its --set secrets as command_line has them, `${{ env.NAME }}`: How to reproduce
            # of a run made from Python is built from these, and `***` is no YAML.
            options={
                **options.to_dict(),
                "overrides": [redactor.override(setting) for setting in options.overrides],
            },
            paths=path_labels(spec, environment, docker=options.runner == "docker"),
            resumed=record,
            store=options.out,
        )
        # (the cells are masked already, as they were judged: the walk passes them through)
        result = redactor.value(result)
        # Each output on its own: a full disk keeps what can still be written.
        written = False
        try:
            # A search's probe run (tens to thousands of them) unsynced: write_atomic says
            # what that risks, and the search's own answer files are synced.
            write_outputs(
                folder,
                result,
                spool.entries(result.cells),
                durable=options.purpose not in SEARCH_PURPOSES,
            )
            written = True
        except OSError as exc:
            keeper.failed(
                f"{folder.path}: cannot write results.json and report.md: {exc}",
                full=exc.errno in (errno.ENOSPC, errno.EDQUOT),
            )
        if keeper.failure is None:
            try:
                store.finish_cells(run_id, result.cells)
                store.finish_run(
                    run_id,
                    "interrupted" if interrupted else "finished",
                    environment=result.environment,
                    finished=result.finished,
                )
            except StoreError as exc:
                keeper.store_failed(exc)
        if keeper.failure is not None:
            # The store still calls the run running: engine.json says why it is not.
            folder.note_stop(keeper.stop_reason())
            raise keeper.error(options, folder, written=written, removed=removed)
        if broke is not None:
            failure = _located(broke)
            raise keeper.error(options, folder, written=written, failure=failure, removed=removed)
        if raised is not None:
            raise raised
    return load_run(folder.results_json) if whole else result


def _silent_faults(spec: Spec) -> list[str]:
    """A warning for each workload fault no cell of the spec's matrix injects (its `when`
    false in all): such a run was not-reproduced with no word of the fault. Judged over the
    matrix, not the cells `-m` keeps: one cell of a matrix over `fault` leaves the others'
    faults out by design, and it was said of each (`-m fault=hang`)."""
    workload = spec.document.get("workload")
    if not isinstance(workload, Mapping) or not workload.get("faults"):
        return []
    cells = expand(spec)
    return [silent_fault_message(i, len(cells)) for i in silent_faults(spec.document, cells)]


def _quiet_pytest(spec: Spec) -> list[str]:
    """A warning for each test a hang or crash expects as its phase that the command, a
    pytest without `-v`, never prints (pipeline/quietpytest.py): every attempt of it was
    not-reproduced, with no word why."""
    from reprospec.pipeline.quietpytest import quiet_pytest_phases

    return [
        f"{'.'.join(map(str, path))}: {message}"
        for path, message in quiet_pytest_phases(spec.document)
    ]


def _claim(folder: RunFolder, cells: int) -> None:
    """Claim a resumed run's folder; one that cannot be written is said of the folder, where
    the error named the temporary file of its engine.json (`engine.json.tmp1234`):
    exit 3 for a full disk, 2 for a folder this user cannot write."""
    try:
        folder.claim(cells)
    except OSError as exc:
        what = f"{resuming(folder.run_id)}: its folder {folder.path} cannot be written: "
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InfraError(f"{what}{exc.strerror}") from exc
        raise UsageError(f"{what}{exc.strerror or exc}") from exc


def _new_folder(out: Path, name: str, cells: int) -> RunFolder:
    """A new run's folder, claimed by this engine; one that cannot be (a full disk: its
    engine.json) is removed, and the run refused, exit 3, saying where."""
    from reprospec.store.resultsjson import new_run_id

    folder = RunFolder.new(out, lambda: new_run_id(name))
    try:
        return folder.claim(cells)
    except OSError as exc:
        _discard(folder)
        raise InfraError(f"{folder.path}: cannot start the run there: {_located(exc)}") from exc


def _discard(folder: RunFolder) -> None:
    """Remove the folder of a run that never began: nothing in it is the user's."""
    import shutil

    shutil.rmtree(folder.path, ignore_errors=True)


def _removed(folder: RunFolder, held: int, stored: int) -> str:
    """What to say of a run folder removed while the run ran (RunFolder.removed_since), or
    "": the files its attempts wrote there are lost, the store keeps what was stored."""
    if not folder.removed_since(held):
        return ""
    return (
        f"the run folder {folder.path} was removed while the run ran: the files its attempts "
        "had written there (logs, stacks, events) are gone; the results store keeps its "
        f"{plural(stored, 'stored attempt')}"
    )


def _located(exc: OSError) -> str:
    """An OSError as `PATH: what failed` (`.../cells/i=3: Not a directory`)."""
    what = exc.strerror or str(exc)
    return f"{exc.filename}: {what}" if exc.filename else what


# The attempts shorter than this share a commit (`_Keeper.record`).
HELD_UNDER_S = 0.1


class _Keeper:
    """Stores each attempt as it ends; the first failure to store stops the run.

    A full disk (or a store that fails) means nothing more can be kept: the run stops
    (the attempts in flight are cancelled), the attempts stored so far stay, and the
    run ends with a StoreError (exit 3) saying how to continue it.
    """

    def __init__(self, store: Store, run_id: str, *, stored: int = 0) -> None:
        self.store = store
        self.run_id = run_id
        self.cancel: threading.Event | None = None
        self.stored = stored
        self.failure: str | None = None
        self.full = False  # the failure is a full disk's
        # The run's end's word of the attempts held when the failure came that could not be
        # written then either (`flush(at_end=True)`): a warning of the run.
        self.unstored: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def record(self, attempt: AttemptPlan, result: AttemptResult) -> None:
        """Store the attempt. A pass shorter than HELD_UNDER_S is held, written and
        committed by `flush` before its progress line is said (or by the store's next
        write): those that ended since the last line that needed a commit (a command line's
        run says each STOPPED_SLACK_S after its end) share one transaction, where a commit
        per attempt of `true` was most of the engine's cost of storing it
        (docs/performance.md). The store bounds how many it holds, and keeps the room their
        commit needs on a full disk (store/db.py's reserve): a pass said is a row stored."""
        if self.failure is not None:
            return
        # A longer attempt is committed at once, with those held: its commit is nothing
        # beside it, and a kill (or a full disk) before its line would make --resume run it
        # again. So is any that did not pass: a rare failure is what the run is for, and
        # another attempt would not bring it back, where a short pass costs its rerun alone.
        outcome = result.outcome
        commit = (
            result.duration_s >= HELD_UNDER_S
            or not isinstance(outcome, Outcome)
            or outcome.kind != "pass"
        )
        try:
            self.store.record_attempt(self.run_id, attempt.cell.id, result, commit=commit)
        except StoreError as exc:
            self.store_failed(exc)
            return
        with self._lock:
            self.stored += 1

    def before_line(self, event: ProgressEvent, result: AttemptResult | None) -> None:
        """A progress line is about to be said: an attempt's row is committed first
        (`flush`), whatever the store holds, since another job's commit may have taken or
        left this attempt's row. The progress callback's one step before its line, which
        test_keeper drives: an early return here said a held row uncommitted (-j)."""
        if event == "attempt" and result is not None:
            self.flush()

    def flush(self, *, at_end: bool = False) -> None:
        """Commit the attempts recorded so far: before one is said, with every one written
        since the last commit (the next quarter second's lines then need none), and at the
        run's end. The store's own list of those held says whether any is (`Store.commit`:
        nothing to do where none is), under its lock: a list of this keeper's beside it
        lost an attempt held between another's commit and its clearing the list (-j).
        Once a failure stopped the run, only `at_end`: an attempt held as it came (another
        job's) is written then, or said in `unstored`, where the store's close wrote it
        after the run's warnings were read, and its failure went unsaid (review)."""
        if self.failure is not None and not at_end:
            return
        try:
            self.store.commit()
        except StoreError as exc:
            if self.failure is None:
                self.store_failed(exc)
                return
            with self._lock:
                self.stored -= exc.lost
            if exc.lost:
                self.unstored = (attempts_not_stored(exc.lost, str(exc).splitlines()[0]),)

    def store_failed(self, exc: StoreError) -> None:
        """The store failed: the rows its failure took back (`lost`) are not stored; the
        failing record's own row, never counted yet, is where the reserve kept it (`kept_own`:
        the short pass past the store's held bound)."""
        with self._lock:
            self.stored += exc.kept_own - exc.lost
        self.failed(str(exc), full=exc.full)

    def forget(self, set_aside: Sequence[SetAside]) -> None:
        """Take the attempts set aside out of the store (each was stored as it ended), so
        that `--resume` runs them again; a store that fails stops the run as a write does."""
        if self.failure is not None:
            return
        try:
            gone = self.store.forget_attempts(
                self.run_id, [(each.cell_id, each.attempt) for each in set_aside]
            )
        except StoreError as exc:
            self.store_failed(exc)
            return
        with self._lock:
            self.stored -= gone

    def failed(self, reason: str, *, full: bool = False) -> None:
        with self._lock:
            if self.failure is None:
                self.failure, self.full = reason, full
        if self.cancel is not None:
            self.cancel.set()

    def stop_reason(self) -> str:
        """Why the run stopped, in a few words, for `history` (RunFolder.note_stop)."""
        if self.full:
            return "the disk was full (ENOSPC)"
        return f"a write failed: {(self.failure or '').splitlines()[0]}"

    def error(
        self,
        options: RunOptions,
        folder: RunFolder,
        *,
        written: bool,
        failure: str | None = None,
        removed: str = "",
    ) -> InfraError:
        """The run's end, exit 3 as cli.md gives a full disk: what failed (the store's
        `failure`, else an attempt's), and why where the run folder was `removed` under the
        run, how many attempts were stored, the --resume line."""
        kind = StoreError if failure is None else InfraError
        return kind(
            f"{failure or self.failure}\n"
            + (f"reprospec: {removed}\n" if removed else "")
            + f"reprospec: the run stopped; {plural(self.stored, 'attempt')} of it "
            + f"{agree(self.stored)} stored"
            + (f", and {folder.path} holds its results so far" if written else "")
            + ".\nreprospec: once the problem is solved, continue it with: "
            + said(
                f"reprospec run --resume {folder.run_id} --out {options.out}",
                f"reprospec.resume({folder.run_id!r}, out={str(options.out)!r})",
            )
        )


# How long a run stopped at its end still waits for its environment capture.
_STOPPED_CAPTURE_S = 5.0


class EnvironmentCapture:
    """The target environment, captured in a child on a thread while the attempts run."""

    def __init__(
        self,
        runner: Runner,
        attempt: AttemptPlan,
        run_dir: Path,
        *,
        key: RunKey | None = None,
        inherits: bool = True,
        checked: bool = True,
    ) -> None:
        """`key`: the run's store key, which digests the secret variables (none: no
        digests); `inherits`: the attempts inherit the engine's environment (not docker's);
        `checked`: this run runs `attempt` (not a resumed run's that ran before), so that a
        runner that checks its packages (`CheckingRunner`) checks it."""
        self._key = key
        self._inherits = inherits
        self._checked = checked
        self._environment: JsonObject = {}
        self._warnings: tuple[str, ...] = ()
        self._runner, self._attempt = runner, attempt
        self._extras_pending = False  # the capture ran, its extras not judged yet
        from reprospec.runners.base import CheckingRunner

        if self._by_the_check() and isinstance(runner, CheckingRunner):
            # Before the attempts run: the runner keeps this attempt's check's lines only.
            runner.keep_package_lines(attempt)
        self._thread = threading.Thread(
            target=self._capture, args=(runner, attempt, run_dir), name="reprospec-env", daemon=True
        )
        self._thread.start()

    def _capture(self, runner: Runner, attempt: AttemptPlan, run_dir: Path) -> None:
        # Imported here, in the capture's thread: a run waits for this thread at its end.
        from reprospec.environment.captured import environment_mismatches

        try:
            env: JsonObject = dict(runner.capture_environment(attempt, run_dir))
        except Exception as exc:  # the environment table is worth less than the run
            self._environment = {"error": f"environment capture failed: {exc}"}
            self._warnings = (f"environment capture failed: {exc}",)
            return
        # What the spec says the incident needs vs what actually ran here.
        mismatches = environment_mismatches(env, attempt.environment.to_json())
        if mismatches:
            env["environment_mismatch"] = list(mismatches)
        # An extra's requirements, which a capture cannot judge: the lines of the run's own
        # check of this attempt (`package_lines`, read once the attempts ran: `result`), or,
        # where the run does not check it, asked here, in this thread (`_judge_extras`).
        if self._by_the_check():
            self._extras_pending = True
        else:
            self._judge_extras(env)
        ran, wanted = _ran_python(env), attempt.environment.python
        if ran and wanted and not same_python(ran, wanted):
            # Said on the console too: the report's Environment section was the only place,
            # and a verdict on 3.11 of a 3.10 incident reads as the incident's.
            self._warnings = (
                f"the spec names Python {wanted}; this run had {ran} "
                f"(seen in {attempt.cell.id or 'the cell'}): its verdicts are {ran}'s",
            )
        env["captured_in"] = attempt.cell.id  # a toggle may choose the interpreter: whose?
        try:
            self._digest_variables(env, attempt)
        except Exception as exc:  # the digests are worth less than the capture they sit in
            self._warnings += (f"the environment's variables could not be digested: {exc}",)
        self._environment = env

    def _digest_variables(self, env: JsonObject, attempt: AttemptPlan) -> None:
        """The store key's digests of the secret variables the capture saw set (`***`), so
        that `compare` can tell a token that changed from one that did not, from what the
        engine gave the attempt (its own environment, then the spec's `environment.env`);
        and of every other variable the attempts inherited that the capture's table does
        not show, so that `MYAPP_MODE=1` in one shell and not the other is not "same
        environment"."""
        table = env.get("env")
        if self._key is None or not isinstance(table, dict):
            return
        # A secret by its name (the capture's `***`) or by its value's shape (`HF_ENDPOINT=
        # https://u:pw@h`, masked later): compare told no change of one, `***` either way.
        masked = [
            name
            for name, value in table.items()
            if value == MASK or (isinstance(value, str) and holds_secret(name, value))
        ]
        outer: dict[str, str] = {}
        if self._inherits:
            from reprospec.runners.local import outer_environ

            outer = outer_environ()
        # Imported only now: hmac and secrets for a run with something to digest.
        from reprospec.store.digests import (
            FIELD,
            INHERITED_FIELD,
            inherited_names,
            variable_digests,
        )

        inherited = inherited_names(outer, [*table, *attempt.environment.env])
        if self._inherits and not inherited:
            # Recorded empty, so that compare tells "none inherited" from "no record".
            env[INHERITED_FIELD] = {"store": None, "of": []}
        if not masked and not inherited:
            return
        try:
            key = self._key.get()
        except OSError:
            return  # a store that cannot keep a key: compare says "set" only, not "changed"
        if masked:
            env[FIELD] = variable_digests(key, {**outer, **attempt.env}, masked)
        if inherited:
            env[INHERITED_FIELD] = variable_digests(key, outer, inherited)

    def running(self) -> bool:
        return self._thread.is_alive()

    def result(
        self, timeout: float | None = None, *, cancel: threading.Event | None = None
    ) -> tuple[JsonObject, tuple[str, ...]]:
        """(environment, warnings); waits up to `timeout` seconds for the capture, or, with
        none, until it ends or `cancel` is set, and then 5 seconds more: a stop is no longer
        raised there, and a capture that hung held the run's end with it."""
        if timeout is None and cancel is not None:
            while self._thread.is_alive() and not cancel.is_set():
                self._thread.join(0.1)  # returns as the thread ends: no wait added
            timeout = _STOPPED_CAPTURE_S
        self._thread.join(timeout)
        if self._thread.is_alive():
            return {"error": "environment capture did not finish"}, ()
        if self._extras_pending:
            self._extras_pending = False
            self._judge_extras(self._environment)
        return self._environment, self._warnings

    def _by_the_check(self) -> bool:
        """Whether the run's own package check judges the captured attempt's extras: a
        runner that checks them in the attempts' interpreter, an attempt this run runs."""
        from reprospec.runners.base import CheckingRunner

        return self._inherits and self._checked and isinstance(self._runner, CheckingRunner)

    def _judge_extras(self, env: JsonObject) -> None:
        """What the extras of the cell's `environment.packages` (`torch[opt-einsum]`) lack,
        added to the capture's mismatches. Where the run checks the captured attempt
        (`_by_the_check`), the lines its check found, read once the attempts ran (a second
        probe of the interpreter made each run of such a spec wait for it at its end, and
        asked it in another environment than the attempts'); where that check never
        reached it (the run stopped first, or it refused the cell before probing, `./pkg`)
        they are named not judged: asked there, the probe held a stopped run's end past
        its 5 seconds, on the main thread, after the runner had closed (a venv's holds
        released). Else, in the capture's thread, asked of the interpreter as the check
        asks it (`extra_mismatches`): docker's, named not judged, and a resumed run's
        attempt that ran before."""
        attempt = self._attempt
        packages = attempt.environment.packages
        if not packages:
            return  # nothing to check: the check's module is not imported
        from reprospec.environment.packages import wants_extras
        from reprospec.runners.base import CheckingRunner

        if not wants_extras(packages):
            return
        unjudged: list[str] = []
        runner = self._runner
        if self._by_the_check() and isinstance(runner, CheckingRunner):
            checked = runner.package_lines(attempt)
            extras = list(checked or ())
            if checked is None:
                unjudged = [r for r in packages if wants_extras([r])]
        else:
            from reprospec.environment.captured import extra_mismatches

            extras, unjudged = extra_mismatches(
                env,
                packages,
                variables=attempt.env,
                cwd=attempt.workdir if self._inherits else None,
            )
        found = env.get("environment_mismatch")
        mismatches = list(dict.fromkeys([*(found if isinstance(found, list) else []), *extras]))
        if mismatches:
            env["environment_mismatch"] = mismatches
        if unjudged:
            env["environment_unjudged"] = list(unjudged)


def write_outputs(
    folder: RunFolder,
    result: RunResult,
    entries: Iterable[str] | None = None,
    *,
    durable: bool = True,
) -> None:
    """results.json, spec.yaml, report.md and (where the run has a standalone script)
    repro.py into the run folder, each replaced atomically.

    `entries`: results.json's text of each cell (`resultsjson.run_json`), when the cells
    of `result` are only what the report reads of them. `durable`: each fsynced
    (`write_atomic`); not a search's probe run's."""
    from reprospec.core.atomicfile import write_atomic
    from reprospec.report import render
    from reprospec.store.resultsjson import write_run

    write_run(folder.path, result, entries, durable=durable)
    write_atomic(folder.report_md, render(result, "md"), durable=durable)
    if result.standalone is not None and result.standalone.script:
        write_atomic(folder.repro_py, result.standalone.script, durable=durable)


def _ran_python(environment: JsonObject) -> str | None:
    """The Python version the environment capture saw (None: not captured)."""
    python = environment.get("python")
    version = python.get("version") if isinstance(python, dict) else None
    return version if isinstance(version, str) and version else None


def _standalone(
    plan: RunPlan,
    cells: Sequence[CellResult],
    ran_python: str | None = None,
    values: Mapping[str, str | None] | None = None,
    pins: Callable[[AttemptPlan], tuple[str, ...]] | None = None,
    redactor: Redactor | None = None,
) -> Standalone | None:
    """The run's standalone repro; a generator that fails says so instead of losing the run."""
    from reprospec.plan.standalone import choose_cell, standalone_for

    try:
        return standalone_for(
            plan, cells, ran_python=ran_python, values=values, pins=pins, redactor=redactor
        )
    except Exception as exc:  # the run's results matter more than the extra section
        cell = choose_cell(cells)
        kind: Literal["command", "workload"] = (
            "workload" if plan.attempts and plan.attempts[0].workload is not None else "command"
        )
        return Standalone(
            cell=cell.cell.id if cell else "",
            kind=kind,
            unavailable=f"could not be generated: {type(exc).__name__}: {exc}",
        )


def spec_text_of(spec: Spec) -> str:
    """The spec that ran: its own text, or the overridden document when --set was used."""
    if not spec.overrides:
        return spec.source_text
    from reprospec.spec.load import plain
    from reprospec.spec.yamlsource import dump_yaml

    header = "{}{} with: {}\n".format(
        RESOLVED_SPEC, spec.path.name, " ".join(f"--set {o}" for o in spec.overrides)
    )
    # dump_yaml quotes what YAML 1.2 would read back as another type (`1e3`, `0o17`).
    return header + dump_yaml(plain(spec.document))


def ran_as_stored(spec: Spec, stored: str) -> bool:
    """Whether `spec`, read again today, is the spec a run stored as `stored`: the store,
    the run folder and a report keep its text with its secrets masked
    (`Redactor.spec_text`; a store of older versions, `Redactor.text` or not masked), so
    today's text is masked the same way first. Compared unmasked, every spec that writes a
    secret itself read as changed (`bundle` warned that its files were today's)."""
    from reprospec.spec.load import same_spec_text

    current = spec_text_of(spec)
    if stored == current:
        return True
    redactor = Redactor.for_spec(spec.document)
    candidates = (current, redactor.text(current), redactor.spec_text(current))
    if any(same_spec_text(stored, text) for text in candidates):
        return True
    # Stored by a reprospec whose rule masked less (a credential in the command, before it
    # was one): masked again by today's rule, it is today's text, where --resume refused it
    # and bundle warned that its workdir files were today's.
    return same_spec_text(redactor.spec_text(stored), redactor.spec_text(current))


def path_labels(
    spec: Spec, environment: Mapping[str, object], *, docker: bool = False
) -> dict[str, str]:
    """absolute path -> how a report names it: the places a run's paths point into.

    The target interpreter's venv (`<venv>`) and installation (`<python>`), as its
    environment capture says; the harness (`<harness>`); the project (the git work
    tree that holds the spec, else its folder: named relative, ""); the home folder
    (`<home>`). A report then reads the same on every machine and leaks no user name.
    """
    from reprospec.process.childprotocol import HARNESS_DIR

    labels: dict[str, str] = {}
    python = environment.get("python")
    if isinstance(python, Mapping):
        prefix, base = python.get("prefix"), python.get("base_prefix")
        if isinstance(prefix, str) and isinstance(base, str) and prefix != base:
            labels[prefix] = "<venv>"
        if isinstance(base, str):
            labels.update(_python_labels(base, python.get("version")))
    if docker:  # (the docker runner's modules only for a docker run)
        from reprospec.runners.docker.container import IN_HARNESS

        labels[IN_HARNESS] = "<harness>"
    else:
        labels[str(HARNESS_DIR)] = "<harness>"
    labels[str(project_root(spec.base_dir))] = ""
    labels[str(Path.home())] = "<home>"
    # A path that is not UTF-8 (HOME=/home/$'\x80') is in no text a report reads (those
    # are decoded with its bytes replaced), and results.json, which keeps these labels,
    # took it as an internal UnicodeEncodeError once every attempt had run.
    return {
        path: label
        for path, label in labels.items()
        if path not in ("", "/") and undecodable_byte(path) is None
    }


# Installation prefixes other software shares: a distribution's Python lives in /usr, and
# so do /usr/local/cuda and /usr/lib/x86_64-linux-gnu/libcuda.so (a report from the H200
# read `CUDA_HOME=<python>/local/cuda`). Only the interpreter's own folders are named there.
SHARED_PREFIXES = ("/usr", "/usr/local", "/opt")


def _python_labels(base: str, version: object) -> dict[str, str]:
    """The installation's label: its prefix, or only its library folders in a shared one."""
    base = base.rstrip("/") or "/"
    if base not in SHARED_PREFIXES:
        return {base: "<python>"}
    labels = {f"{base}/lib/python3": "<python>/lib/python3"}  # Debian's dist-packages
    if isinstance(version, str) and (found := re.match(r"(\d+)\.(\d+)", version)):
        short = f"python{found[1]}.{found[2]}"
        labels[f"{base}/lib/{short}"] = f"<python>/lib/{short}"
    return labels


def project_root(folder: Path) -> Path:
    """The git work tree that holds `folder`, else `folder` itself (absolute)."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _stopped(status: str, noted: str) -> Stopped:
    """How the earlier part of a resumed run ended, from the store's status: `running` is a
    run whose engine died without a word (resume refuses one whose engine lives), `killed`
    as history lists it; or, where its engine said in engine.json why it stopped (`noted`:
    the disk was full), `interrupted`, as history lists that one."""
    from reprospec.core.resumed import KILLED

    if status == "running":
        return "interrupted" if noted else KILLED
    return "finished" if status == "finished" else "interrupted"


def _resumed(
    ran: int, resumed: Resumed, previous: Resumed | None, interrupted: bool
) -> Resumed | None:
    """The `resumed` record of a resumed run that ran `ran` attempts now. A finished run
    resumed with its folder whole, nothing run (no attempt had failed to run), keeps the
    record it had (`previous`: none for a run that went straight through), where it was
    called resumed from a run "finished ... (its folder written again)" that was neither
    stopped nor written again. Not one `interrupted`: its retry of the attempts
    that could not run was stopped before it stored one, and read as the finished run
    itself, stopped, with no word of the part it carried over."""
    if resumed.stopped == "finished" and not resumed.rewritten and ran == 0 and not interrupted:
        return previous
    return replace(resumed, ran=ran)


def _refuse_undecodable_out(out: Path) -> None:
    """A usage error, before anything runs, where the store's path is not UTF-8 (a folder
    named `d$'\\xff'ir`): the run records it in its store and its results.json, which took
    such a path as an internal UnicodeEncodeError once the attempts had run, and the run
    was lost. The CLI refuses it first; run_spec's other callers (the pytest plugin) do
    not. The spec's path load_spec refused already, for every caller."""
    from reprospec.core.logtext import not_utf8

    wrong = not_utf8("--out's path", str(out.resolve()))  # as it is recorded
    if wrong is not None:
        raise UsageError(wrong)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


__all__ = [
    "EnvironmentCapture",
    "Resume",
    "execute",
    "ran_as_stored",
    "run",
    "spec_text_of",
    "write_outputs",
]
