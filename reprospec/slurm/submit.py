"""`sbatch` the array (all shards, or those a resume sends again) and the merge that follows it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from time import monotonic, sleep
from uuid import uuid4

from reprospec.core import capped
from reprospec.errors import InfraError
from reprospec.slurm.plan import ARRAY_SCRIPT, MERGE_SCRIPT, SlurmRun, Submission, save
from reprospec.slurm.queue import ScriptJob, jobs_marked, jobs_of_scripts

# sbatch answers a job id, or its refusal: more than this is cut (head and tail kept).
_ANSWER_BYTES = 64 * 1024
_SBATCH_TIMEOUT_S = 120
# sbatch's own words for a request that may have reached slurmctld, whose answer did not
# come back (its MessageTimeout): the job may be queued all the same. "Unable to contact
# slurm controller" is not among them: that request never left.
_UNANSWERED = ("timed out", "Zero Bytes were transmitted or received")
# How long squeue is asked (again and again) whether such a job was queued: slurmctld,
# slow or stopped for a moment, answers it once it has handled the submission before it.
_LOOKUP_S = 90.0
# How the user sees the jobs a lookup weighed: squeue's (their submit time, comment and
# script), sacct's (the same of jobs it remembers, ended ones too).
_SEE_SQUEUE = "squeue --me --format=%i,%V,%k,%o"
_SEE_SACCT = "sacct --format=JobID,Submit,Comment,SubmitLine"
# Where the user's own sbatch options carry a --comment (ours would replace it), the job is
# told by its submit time instead: slurmctld's clock may be behind ours by this much.
_SKEW = timedelta(seconds=60)


# A stop in the first moment of an sbatch is not told of a wait: sbatch answers at once.
_TELL_AFTER_S = 2.0
# How long scancel is waited for (the array of a merge not submitted): a slurmctld that did
# not answer the merge's sbatch may not answer it either, and the run ends after it.
_SCANCEL_S = 10.0


class LookupWait:
    """A stop (Ctrl-C, SIGTERM, SIGHUP) while an sbatch that timed out is waited for and
    looked up in squeue. The stop waits until slurm.json records the job (commands/slurm.py's
    deferral): silently that was up to 120 s for sbatch and 90 s for squeue, then exit 3.
    The first stop is told how long it waits and why; a second ends the wait, sbatch's
    (its process group stopped at once: a hung sbatch waited out its 120 s) or the lookup's,
    the job unconfirmed (SubmissionUnconfirmed: the run folder is kept). `heard` is the stop
    handler's (commands/interrupt.py), `tell` prints a line of its own.

    The lookup asks squeue, then sacct (`asking`): each stop names the one it waits for.
    The cancel of an array whose merge was not submitted (`cancelling`) is told as it
    begins, bounded (_SCANCEL_S), and a stop after the one that ended the merge's sbatch
    ends it too (`cancel_stopped`)."""

    __slots__ = (
        "_asking",
        "_cancel_until",
        "_cancelled_job",
        "_lookup_until",
        "_pending",
        "_sbatch_until",
        "_tell",
        "cancel_stopped",
        "given_up",
    )

    def __init__(self, tell: Callable[[str], None]) -> None:
        self._tell = tell
        self._sbatch_until: float | None = None  # sbatch running: when we end it
        self._lookup_until: float | None = None  # squeue (or sacct) asked: when we give up
        self._asking = "squeue"  # which of them the lookup asks now
        self._cancel_until: float | None = None  # scancel running: when we stop waiting
        self._cancelled_job = ""
        self._pending = False  # a first stop not told yet (it came as sbatch began)
        # Plain flags, set in the signal handler: an Event's lock, taken there as the
        # main thread held it, would deadlock.
        self.given_up = False
        self.cancel_stopped = False

    def heard(self, again: bool) -> bool:
        """A stop, the first or `again`: True where this told the user of it."""
        if self._cancel_until is not None:
            return self._heard_in_cancel(again)
        if self._lookup_until is None and self._sbatch_until is None:
            return False
        if again:
            self.given_up = True
            if self._lookup_until is None:
                self._tell(
                    "stopping: sbatch is ended before it answers, and squeue is not asked "
                    "whether it queued the job"
                )
            else:
                self._tell(
                    f"stopping: {self._asking} is no longer asked whether sbatch queued the job"
                )
            return True
        if self._lookup_until is None and monotonic() < self._started_sbatch() + _TELL_AFTER_S:
            self._pending = True  # told at the lookup, if sbatch times out
            return True
        self._tell_wait()
        return True

    def _heard_in_cancel(self, again: bool) -> bool:
        job = self._cancelled_job
        if again:
            self.cancel_stopped = True
            self._tell(
                f"stopping: scancel is no longer waited for (array job {job} may stay queued)"
            )
        else:
            left = (self._cancel_until or 0.0) - monotonic()
            self._tell(
                f"stopping once scancel has cancelled array job {job} (up to {max(left, 0):.0f} "
                "s): press Ctrl-C again to stop waiting"
            )
        return True

    def cancelling(self, job: str, until: float | None) -> None:
        """scancel ends array `job` until `until` (None: it has ended), which is told."""
        self._cancel_until = until
        self._cancelled_job = job
        if until is not None:
            self.cancel_stopped = False
            self._tell(f"cancelling array job {job} (up to {until - monotonic():.0f} s)")

    def _started_sbatch(self) -> float:
        return (self._sbatch_until or 0.0) - _SBATCH_TIMEOUT_S

    def _tell_wait(self) -> None:
        self._pending = False
        now = monotonic()
        if self._lookup_until is not None:
            left = self._lookup_until - now
            what = f"{self._asking} says whether sbatch queued the job (up to {left:.0f} s)"
        else:
            left = (self._sbatch_until or now) - now + _LOOKUP_S
            what = f"sbatch answers, or squeue says whether it queued the job (up to {left:.0f} s)"
        self._tell(
            f"stopping once {what}, so that slurm.json records it: press Ctrl-C again to "
            "stop waiting (the run folder is kept)"
        )

    def sbatch(self, running: bool) -> None:
        """An sbatch begins (or has ended): a stop from 2 s into it on is told its wait.
        A second stop ends the wait it came in: one that came as the last sbatch answered
        (the array's) does not end the next (the merge's) before it began."""
        self._sbatch_until = monotonic() + _SBATCH_TIMEOUT_S if running else None
        if running:
            self.given_up = False

    def lookup(self, until: float | None, asking: str = "squeue") -> None:
        """`asking` (squeue, sacct) is asked until `until` (None: no more); a stop that came
        in sbatch's first moment, untold then (sbatch would have answered at once), is told
        now."""
        self._lookup_until = until
        self._asking = asking
        if until is not None and self._pending and not self.given_up:
            self._tell_wait()


class SbatchUnanswered(InfraError):
    """sbatch timed out (its own MessageTimeout, or ours): its job may be queued anyway."""


class SbatchStopped(SbatchUnanswered):
    """sbatch ended by a second stop before it answered: its job may be queued anyway."""


class SubmissionUnconfirmed(InfraError):
    """An sbatch that timed out and whose job squeue did not show: it may still be queued,
    so the run folder must stay (a job that runs into a removed one fails unseen)."""


def array_argv(
    run: SlurmRun, shards: Sequence[int] | None = None, *, time: str | None = None
) -> list[str]:
    """`sbatch` for the array: all shards, or only `shards` (a resume)."""
    argv = ["sbatch", "--parsable", *run.options.sbatch_args]
    if shards is not None and tuple(shards) != tuple(range(1, run.shards + 1)):
        argv.append("--array=" + ",".join(str(k) for k in shards))
    if time:
        argv.append(f"--time={time}")
    return [*argv, str(run.run_dir / ARRAY_SCRIPT)]


def merge_argv(run: SlurmRun, array_job: str | None) -> list[str]:
    """`sbatch` for the merge, after the array has ended (`afterany`), or at once."""
    argv = ["sbatch", "--parsable", *run.options.sbatch_args]
    if array_job:
        argv.append(f"--dependency=afterany:{array_job}")
    return [*argv, str(run.run_dir / MERGE_SCRIPT)]


def _sbatch(argv: Sequence[str], stop: Callable[[], bool] | None = None) -> str:
    """Run sbatch --parsable; the job id (a cluster name after `;` is dropped). `stop`
    saying so ends it (its group) before it answers: SbatchStopped."""
    if shutil.which(argv[0]) is None:
        raise InfraError(
            f"{argv[0]} not found: run this on a Slurm login node "
            "(or use --dry-run to see the scripts)"
        )
    try:
        # In a session of its own (capped.run): in reprospec's process group a terminal's
        # Ctrl-C, which the CLI defers until slurm.json records the jobs, SIGINTed sbatch
        # too: 'sbatch refused the job: exit -2', exit 3, the run's folder removed, where a
        # job may have been queued. A stuck one is still ended (its group) at the timeout,
        # or at once by a second stop (`stop`).
        began = monotonic()
        proc = capped.run(argv, limit=_ANSWER_BYTES, timeout_s=_SBATCH_TIMEOUT_S, stop=stop)
    except OSError as exc:
        raise InfraError(f"{argv[0]} could not be started: {exc}") from None
    if proc.stopped:
        raise SbatchStopped(
            f"{argv[0]} was stopped before it answered (after {monotonic() - began:.0f} s)"
        )
    if proc.timed_out:
        raise SbatchUnanswered(f"{argv[0]} did not answer within {_SBATCH_TIMEOUT_S} s")
    # sbatch's refusal may name a path or a site's message in any bytes: replaced.
    stdout = proc.stdout.decode(errors="replace").strip()
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip() or stdout
        if any(words in message for words in _UNANSWERED):
            raise SbatchUnanswered(f"sbatch timed out: {message}")
        raise InfraError(f"sbatch refused the job: {message or f'exit {proc.returncode}'}")
    job = stdout.splitlines()[-1].split(";")[0].strip() if stdout else ""
    if not job.isdigit():
        raise InfraError(f"sbatch answered {stdout!r}, not a job id")
    return job


def _sbatch_or_found(
    argv: Sequence[str],
    tasks: frozenset[int],
    known: set[str],
    say: Callable[[str], None],
    wait: LookupWait | None = None,
) -> str:
    """`_sbatch`, and where it timed out, the job slurmctld queued all the same: that job
    is the submission, recorded as sbatch's answer would have been, so that neither it
    nor its shards are left unseen and no resume submits them twice. `tasks`: the array
    tasks the sbatch asks for (empty: the merge, a plain job).

    The job is told by its script (the run folder's own) and by the marker this sbatch
    alone gave it (`--comment=reprospec:<uuid>`, squeue's %k), with the tasks it asked
    for, not `known` to slurm.json: adopting an older job of the script (an ended array
    squeue still lists for MinJobAge, one submitted by hand, a second resume's) recorded a
    finished job as the shards', whose folders then held no results. A submit time was
    not enough: slurmctld's clock a few seconds behind ours missed the job itself. More
    than one such job (only where the user's own --comment leaves the time to tell them)
    is not guessed at: SubmissionUnconfirmed. A marked job squeue does not list is asked of
    sacct (queue.jobs_marked): a short one may have ended and left squeue's memory
    (MinJobAge) before the lookup; where sacct cannot say (no accounting), the message
    says so. A second stop as sbatch runs ends it at once (SbatchStopped):
    SubmissionUnconfirmed, squeue not asked."""
    marker = None if _has_comment(argv[:-1]) else f"reprospec:{uuid4().hex}"
    # Whole seconds (squeue's %V has no more), taken down, less slurmctld's possible skew.
    since = datetime.now().replace(microsecond=0) - _SKEW
    if marker is not None:
        argv = [*argv[:-1], f"--comment={marker}", argv[-1]]
    wait = wait or LookupWait(lambda _: None)
    try:
        wait.sbatch(True)
        return _sbatch(argv, stop=lambda: wait.given_up)
    except SbatchStopped as exc:
        # Asked of no one: the user stops waiting. The marker tells the job, queued later.
        which = "" if marker is None else f" (with this sbatch's {marker})"
        raise SubmissionUnconfirmed(
            f"{exc}; squeue was not asked: the job of {argv[-1]}{which} may be queued all "
            f"the same (see {_SEE_SQUEUE})"
        ) from None
    except SbatchUnanswered as exc:
        script = argv[-1]
        deadline = monotonic() + _LOOKUP_S
        wait.lookup(deadline)
        # Each squeue bounded by the time left (and ended by a second stop): a silent one
        # no longer outlasts the lookup.
        found: list[ScriptJob] | None = None
        while found is None and not wait.given_up:
            found = jobs_of_scripts(
                [script], timeout_s=deadline - monotonic(), stop=lambda: wait.given_up
            )
            if found is None and monotonic() >= deadline:
                raise SubmissionUnconfirmed(
                    f"{exc}; squeue did not answer either (for {_LOOKUP_S:g} s): the job of "
                    f"{script} may be queued all the same"
                ) from None
            pause = monotonic() + 2
            while found is None and not wait.given_up and monotonic() < min(pause, deadline):
                sleep(0.1)
        if found is None:  # (a second stop)
            raise SubmissionUnconfirmed(
                f"{exc}; its lookup in squeue was stopped: the job of {script} may be queued "
                "all the same"
            ) from None
        new = [job for job in found if _is_this_submission(job, marker, since, tasks, known)]
        nor = ""
        # Who listed the jobs `new` holds: the message names it, and how to see them.
        lister, see = "squeue", _SEE_SQUEUE
        # The marker named: the job, queued later, is told by it (squeue's %k).
        which = "submitted since" if marker is None else f"with this sbatch's {marker}"
        if not new and marker is not None:
            # A short job may have ended and left squeue's memory (MinJobAge) before it
            # was asked: sacct remembers it, where the cluster keeps accounting.
            sacct_s = max(deadline - monotonic(), 5)
            wait.lookup(monotonic() + sacct_s, "sacct")
            accounted = jobs_marked(
                marker, script, since, timeout_s=sacct_s, stop=lambda: wait.given_up
            )
            if wait.given_up:
                raise SubmissionUnconfirmed(
                    f"{exc}; squeue lists no job of {script} {which}, and its lookup in sacct "
                    f"was stopped: it may still be queued (see {_SEE_SQUEUE})"
                ) from None
            if accounted.jobs is None:
                nor = f", and sacct cannot say ({accounted.why})"
            else:
                nor = ", nor does sacct"
                new = [
                    job
                    for job in accounted.jobs
                    if _is_this_submission(job, marker, since, tasks, known)
                ]
                lister, see = "sacct", _SEE_SACCT
        if not new:
            raise SubmissionUnconfirmed(
                f"{exc}; squeue lists no job of {script} {which}{nor}: it may still be queued "
                f"(see {_SEE_SQUEUE})"
            ) from None
        if len(new) > 1:
            jobs = ", ".join(job.job for job in new)
            raise SubmissionUnconfirmed(
                f"{exc}; {lister} lists {len(new)} jobs of {script} that may be its ({jobs}): "
                f"which one this sbatch queued is not known (see {see})"
            ) from None
        job = new[0].job
        say(f"{exc}; slurmctld queued it all the same: job {job} ({script})")
        return job
    finally:
        wait.sbatch(False)
        wait.lookup(None)


def _has_comment(options: Sequence[str]) -> bool:
    """Whether sbatch options (the user's) set --comment, or a prefix sbatch reads as it."""
    for option in options:
        name = option.split("=", 1)[0]
        if name.startswith("--com") and "--comment".startswith(name):
            return True
    return False


def _is_this_submission(
    job: ScriptJob, marker: str | None, since: datetime, tasks: frozenset[int], known: set[str]
) -> bool:
    """Whether `job` is the one an sbatch marked `marker` (None: the user's own --comment,
    and begun at `since`) asked for. Ended as well as queued: a short job may have
    finished within the sbatch's timeout (ours is 120 s)."""
    if job.job in known or job.tasks != tasks:
        return False
    if marker is not None:
        return job.comment == marker
    return job.submitted is not None and job.submitted >= since


def _scancel(job: str, wait: LookupWait) -> tuple[bool, str]:
    """Cancel array `job`, whose merge was not submitted: whether it was, and what came of
    it in words. Told as it begins, bounded by _SCANCEL_S and ended by a stop after the
    one that ended the merge's sbatch (`wait`): a slurmctld that did not answer that sbatch
    held scancel for its 60 s, the user told nothing and the array job left unnamed."""
    if shutil.which("scancel") is None:
        return False, f"array job {job} was not cancelled (scancel not found): it may run"
    wait.cancelling(job, monotonic() + _SCANCEL_S)
    try:
        # Its own session too: a Ctrl-C as it runs would leave the array queued.
        done = capped.run(
            ["scancel", job],
            limit=_ANSWER_BYTES,
            timeout_s=_SCANCEL_S,
            stop=lambda: wait.cancel_stopped,
        )
    except OSError as exc:
        return (
            False,
            f"scancel could not be started ({exc.strerror or exc}): array job {job} may run",
        )
    finally:
        wait.cancelling(job, None)
    if done.stopped:
        why = "its scancel was stopped"
    elif done.timed_out:
        why = f"scancel did not answer within {_SCANCEL_S:.0f} s"
    elif done.returncode != 0:
        words = done.stderr.decode(errors="replace").strip().splitlines()
        why = f"scancel refused it ({words[-1].strip() if words else f'exit {done.returncode}'})"
    else:
        return True, f"array job {job} was cancelled"
    return False, f"array job {job} may still be queued: {why} (scancel {job})"


def submit(
    run: SlurmRun,
    shards: Sequence[int] | None = None,
    *,
    time: str | None = None,
    merge_only: bool = False,
    say: Callable[[str], None] = lambda _: None,
    wait: LookupWait | None = None,
) -> SlurmRun:
    """Submit the array (all or `shards`) and the merge after it; slurm.json records both.

    An sbatch that timed out is looked up in squeue: a job slurmctld queued all the same
    is recorded (`say` tells of it); one not found raises SubmissionUnconfirmed, where the
    caller must keep the run folder. `wait`: what the stop handler tells of a stop then."""
    wait = wait or LookupWait(lambda _: None)
    array_job = ""
    a_argv: list[str] = []
    chosen = tuple(shards) if shards is not None else tuple(range(1, run.shards + 1))
    known = {job for sub in run.submissions for job in (sub.array_job, sub.merge_job) if job}
    if not merge_only:
        a_argv = array_argv(run, chosen, time=time)
        array_job = _sbatch_or_found(a_argv, frozenset(chosen), known, say, wait)
    m_argv = merge_argv(run, array_job or None)
    try:
        merge_job = _sbatch_or_found(m_argv, frozenset(), known, say, wait)
    except InfraError as exc:
        # An array without its merge would leave shards nobody merges: take it back, and
        # say what came of that. One not surely cancelled may run into the run folder:
        # SubmissionUnconfirmed, which keeps it.
        if not array_job:
            raise
        cancelled, said = _scancel(array_job, wait)
        kept = isinstance(exc, SubmissionUnconfirmed) or not cancelled
        raise (SubmissionUnconfirmed if kept else InfraError)(f"{exc}; {said}") from None
    sub = Submission(
        array_job=array_job,
        merge_job=merge_job,
        shards=() if merge_only else chosen,
        submitted=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        array_argv=tuple(a_argv),
        merge_argv=tuple(m_argv),
    )
    run = replace(run, submissions=(*run.submissions, sub))
    save(run)
    return run
