"""What squeue (and sacct, where a cluster has accounting) says of a run's jobs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from datetime import datetime
from time import monotonic

from reprospec.core import capped
from reprospec.core.frozen import frozen

# What a squeue or sacct answer may hold: a user's whole queue, one line a job (or task).
# Past it the rest is left out, and the answer is none (`_said`): its jobs past the cut
# are not known, never "not listed" (a running shard read as died). A runaway client
# cannot fill the login node's memory.
_SAID_BYTES = 64 << 20
# squeue's refusal of a job id it no longer knows (asked of one alone: Slurm 22.05 answers
# a list with those it knows, and nothing for the others).
_INVALID_ID = "Invalid job id"
_SQUEUE_JOBS = ["squeue", "--noheader", "--array", "--states=all", "--format=%F|%K|%i|%T|%r"]

# squeue/sacct states: still going, or ended (with what that end means for us).
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "RESV_DEL_HOLD",
        "STOPPED",
    }
)
ENDED_STATES = {
    "TIMEOUT": "time limit",
    "NODE_FAIL": "node failure",
    "PREEMPTED": "preempted",
    "CANCELLED": "cancelled",
    "BOOT_FAIL": "node boot failure",
    "DEADLINE": "deadline",
    "OUT_OF_MEMORY": "out of memory",
    "FAILED": "failed",
    "COMPLETED": "completed",
    "SPECIAL_EXIT": "special exit",
    "REVOKED": "revoked",
}


@frozen
class QueueEntry:
    """One job (or array task) as squeue/sacct shows it."""

    job: str  # array job id, or the job id of a plain job
    task: int | None
    state: str
    reason: str = ""


def query_queue(jobs: Iterable[str]) -> dict[tuple[str, int | None], QueueEntry] | None:
    """squeue (every state it still remembers), then sacct where it answers; None: no answer
    (squeue's, or an answer of either cut at _SAID_BYTES: a job missing from it is not
    known to be gone).

    Only `jobs` are asked of (`--jobs`): every user's queue, arrays expanded, was cut on a
    large cluster, and a running shard past the cut was called died. Keys are (array job
    id, task) for array tasks and (job id, None) for plain jobs.
    """
    wanted = {j for j in jobs if j}
    if not wanted:
        return None
    entries = _squeue_jobs(wanted)
    if entries is None:
        return None
    # sacct knows jobs squeue forgot (MinJobAge), but only with an accounting database.
    accounted = _sacct(wanted)
    if accounted is None:
        return None
    for key, entry in accounted.items():
        entries.setdefault(key, entry)
    return entries


_ALONE_S = 30.0  # squeue's time for every id asked alone (`_squeue_jobs`), all together


def _squeue_jobs(wanted: set[str]) -> dict[tuple[str, int | None], QueueEntry] | None:
    """squeue's entries of `wanted`; None where it did not answer. A refusal of an id it no
    longer knows ("Invalid job id specified": one id asked alone, or, from a squeue that
    refuses a list with one, any) is that job not listed: each id is then asked alone."""
    ids = sorted(wanted, key=lambda job: (len(job), job))
    said = _said([*_SQUEUE_JOBS, f"--jobs={','.join(ids)}"], timeout_s=30, stop=None)
    if not isinstance(said, str):
        return _parse_squeue(_text(said), wanted)
    if _INVALID_ID not in said:
        return None
    entries: dict[tuple[str, int | None], QueueEntry] = {}
    # One _ALONE_S for all the ids asked alone (a run resumed many times holds many): each
    # its own 30 s was up to 20 minutes of a `slurm status` where squeue answers slowly.
    deadline = monotonic() + _ALONE_S
    for job in ids if len(ids) > 1 else ():
        left = deadline - monotonic()
        if left <= 0:
            return None  # (not asked: not known, never "not listed")
        one = _said([*_SQUEUE_JOBS, f"--jobs={job}"], timeout_s=left, stop=None)
        if isinstance(one, str):
            if _INVALID_ID not in one:
                return None
            continue
        entries.update(_parse_squeue(_text(one), wanted))
    return entries


@frozen
class ScriptJob:
    """A job squeue lists whose batch script is one of a run folder's own."""

    job: str  # the array job's id, or a plain job's
    script: str  # its batch script, as sbatch was given it (an absolute path)
    submitted: datetime | None  # slurmctld's submit time (squeue's %V, local time)
    comment: str  # its --comment (squeue's %k): submit.py's marker of its own sbatch
    tasks: frozenset[int]  # an array's task ids (its --array); empty for a plain job
    active: bool  # a task (or the job) still queued or running


def jobs_of_scripts(
    scripts: Iterable[str], *, timeout_s: float = 30, stop: Callable[[], bool] | None = None
) -> list[ScriptJob] | None:
    """The user's jobs (squeue --me: another's script is not the run's, whatever its path)
    whose batch script is one of `scripts`, in every state squeue still remembers (an ended
    job stays listed for MinJobAge); None where squeue did not answer within `timeout_s`.
    How a submission whose sbatch timed out is found (submit.py: its submit time and
    tasks tell it from an older job of the same script), and how a resume learns of one
    found too late. One squeue call for all the scripts; `stop` saying so ends it (None)."""
    wanted = set(scripts)
    said = _asked(
        ["squeue", "--me", "--noheader", "--array", "--states=all", "--format=%F|%K|%V|%T|%k|%o"],
        timeout_s=timeout_s,
        stop=stop,
    )
    if said is None:
        return None
    jobs: dict[str, tuple[str, str, str, set[int], bool]] = {}
    for line in said.splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) < 5 or not parts[0].isdigit():
            continue
        job, task, submitted, state, rest = parts
        # The comment and then the script are last, either may hold a `|`: the script is
        # the wanted path the line ends with (the longest), the comment what precedes it.
        ends = [path for path in wanted if rest.endswith("|" + path)]
        if not ends:
            continue
        script = max(ends, key=len)
        comment = rest[: -len(script) - 1]
        _, _, _, tasks, active = jobs.setdefault(job, (script, submitted, comment, set(), False))
        if task.isdigit():
            tasks.add(int(task))
        jobs[job] = (script, submitted, comment, tasks, active or state in ACTIVE_STATES)
    return [
        ScriptJob(
            job=job,
            script=script,
            submitted=_submit_time(submitted),
            comment=comment,
            tasks=frozenset(tasks),
            active=active,
        )
        for job, (script, submitted, comment, tasks, active) in sorted(
            jobs.items(), key=lambda item: int(item[0])
        )
    ]


@frozen
class Accounted:
    """What sacct says of the jobs an sbatch marked (`jobs_marked`): `jobs` where it
    answered (empty: none), else None and `why` it could not say, in its own words where
    it gave them ("Slurm accounting storage is disabled": a cluster without accounting)."""

    jobs: tuple[ScriptJob, ...] | None
    why: str = ""


def jobs_marked(
    marker: str,
    script: str,
    since: datetime,
    *,
    timeout_s: float = 30,
    stop: Callable[[], bool] | None = None,
) -> Accounted:
    """The user's jobs submitted from `since` on that sacct says carry `marker`: as their
    comment (sacct's Comment, kept where the cluster stores job comments,
    AccountingStoreFlags=job_comment) or in the sbatch line that submitted them
    (SubmitLine, where this sacct has it: `--comment=<marker>` is one of its words).

    How submit.py finds the job of an sbatch that timed out which squeue no longer lists:
    a short one that ended and left squeue's memory (MinJobAge) before the lookup asked.
    The jobs are `script`'s (the marker was given to its sbatch alone)."""
    fields = ["JobID", "State", "Submit", "Comment", "SubmitLine"]
    deadline = monotonic() + timeout_s
    said = _said(_sacct_argv(fields, since), timeout_s=timeout_s, stop=stop)
    if isinstance(said, str) and "SubmitLine" in said:
        # An sacct older than SubmitLine (Slurm 22.05) refuses the field: the comment alone,
        # within what is left of the same `timeout_s` (not a second one).
        fields = fields[:-1]
        left = deadline - monotonic()
        if left < 1:
            return Accounted(None, f"sacct did not answer within {timeout_s:.0f} s")
        said = _said(_sacct_argv(fields, since), timeout_s=left, stop=stop)
        if isinstance(said, str) and said.startswith("sacct did not answer"):
            said = f"sacct did not answer within {timeout_s:.0f} s"
    if isinstance(said, str):
        return Accounted(None, said)
    jobs: dict[str, tuple[str, set[int], bool]] = {}
    for line in said.stdout.decode(errors="replace").splitlines():
        # SubmitLine is last: the one field that may hold `|` (a user's own option).
        parts = line.split("|", len(fields) - 1)
        if len(parts) < len(fields):
            continue
        job_id, state, submitted, comment = parts[:4]
        line_words = parts[4].split() if len(parts) > 4 else []
        if comment != marker and f"--comment={marker}" not in line_words:
            continue
        job, _, task = job_id.partition("_")
        if not job.isdigit():
            continue
        _, tasks, active = jobs.setdefault(job, (submitted, set(), False))
        tasks.update(_task_ids(task))
        ended = state.split()[0] if state.strip() else ""
        jobs[job] = (submitted, tasks, active or ended in ACTIVE_STATES)
    return Accounted(
        tuple(
            ScriptJob(
                job=job,
                script=script,
                submitted=_submit_time(submitted),
                comment=marker,
                tasks=frozenset(tasks),
                active=active,
            )
            for job, (submitted, tasks, active) in sorted(jobs.items(), key=lambda i: int(i[0]))
        )
    )


def _sacct_argv(fields: list[str], since: datetime) -> list[str]:
    """sacct for the user's jobs (its default: their own) submitted from `since` on, one
    line each (`--allocations`: no steps), `|`-separated with nothing after the last field."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        "--allocations",
        f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}",
        f"--format={','.join(fields)}",
    ]


def _task_ids(text: str) -> set[int]:
    """An array task's id (`4`), or a pending array's (`[1-3,5%2]`); empty: a plain job."""
    text = text.strip("[]").split("%")[0]
    ids: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            ids.update(range(int(first), int(last or first) + 1))
    return ids


def _submit_time(text: str) -> datetime | None:
    """squeue's %V (SLURM_TIME_FORMAT=standard, set by _asked: a user's own format, say
    `relative`, would not parse); None where it reads otherwise."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def _parse_squeue(text: str, wanted: set[str]) -> dict[tuple[str, int | None], QueueEntry]:
    out: dict[tuple[str, int | None], QueueEntry] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 5:
            continue
        array_job, task, job_id, state, reason = parts[:5]
        if array_job in wanted and task.isdigit():
            key: tuple[str, int | None] = (array_job, int(task))
        elif job_id in wanted:
            key = (job_id, None)
        else:
            continue
        out[key] = QueueEntry(job=key[0], task=key[1], state=state, reason=reason)
    return out


def _sacct(wanted: set[str]) -> dict[tuple[str, int | None], QueueEntry] | None:
    """sacct's entries of `wanted`: none where it refuses or is not there (a cluster
    without accounting: "Slurm accounting storage is disabled"), None where its answer was
    cut (what it left out may be a job's end)."""
    jobs = ",".join(sorted(wanted))
    argv = ["sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State"]
    said = _said([*argv, f"--jobs={jobs}"], timeout_s=30, stop=None)
    if isinstance(said, str):
        return None if said == _cut_words("sacct") else {}
    out: dict[tuple[str, int | None], QueueEntry] = {}
    for line in _text(said).splitlines():
        job_id, _, state = line.partition("|")
        state = state.split()[0] if state.strip() else ""
        job, _, task = job_id.partition("_")
        if job in wanted and state:
            key: tuple[str, int | None] = (job, int(task) if task.isdigit() else None)
            out[key] = QueueEntry(job=job, task=key[1], state=state)
    return out


def _asked(
    argv: list[str], *, timeout_s: float = 30, stop: Callable[[], bool] | None = None
) -> str | None:
    """What a Slurm client (squeue, sacct) printed; None where it is not installed, did not
    answer within `timeout_s` (or before `stop` said so), or refused (sacct where the
    cluster keeps no accounting). A reason or a job's field may be in any bytes (a site's
    plugin, a locale): replaced. Times in Slurm's standard format (YYYY-MM-DDTHH:MM:SS),
    whatever the user's SLURM_TIME_FORMAT.

    Run by capped.run, in a session of its own: a site's squeue is often a wrapper script
    whose child (the real squeue) holds the pipe; killing the wrapper alone left it there,
    and reading to EOF then waited for that child (a 2 s limit took 20 s, a second Ctrl-C
    was not heard). Its whole group is ended instead."""
    said = _said(argv, timeout_s=timeout_s, stop=stop)
    return None if isinstance(said, str) else _text(said)


def _text(said: capped.Completed) -> str:
    """A client's answer as text (any bytes: replaced)."""
    return said.stdout.decode(errors="replace")


def _cut_words(tool: str) -> str:
    """Why an answer cut at _SAID_BYTES is none."""
    return f"{tool}'s answer passed {_SAID_BYTES >> 20} MiB and was cut"


def _said(
    argv: list[str], *, timeout_s: float, stop: Callable[[], bool] | None
) -> capped.Completed | str:
    """`_asked`'s run of a Slurm client: its end where it answered (exit 0) whole, else why
    not (an answer cut at _SAID_BYTES is none: what it left out is not known)."""
    if shutil.which(argv[0]) is None:
        return f"{argv[0]} not found"
    env = {**os.environ, "SLURM_TIME_FORMAT": "standard"}
    timeout_s = max(timeout_s, 1)
    try:
        done = capped.run(argv, limit=_SAID_BYTES, tail=0, timeout_s=timeout_s, env=env, stop=stop)
    except OSError as exc:
        return f"{argv[0]} could not be started: {exc.strerror or exc}"
    if done.timed_out:
        return f"{argv[0]} did not answer within {timeout_s:.0f} s"
    if done.stopped:
        return f"{argv[0]} was stopped"
    if done.cut:
        return _cut_words(argv[0])
    if done.returncode != 0:
        words = done.stderr.decode(errors="replace").strip().splitlines()
        return words[-1].strip() if words else f"{argv[0]} exit {done.returncode}"
    return done
