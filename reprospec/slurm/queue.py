"""What squeue (and sacct, where a cluster has accounting) says of a run's jobs."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

from reprospec.core.frozen import frozen

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
    """squeue (every state it still remembers), then sacct where it answers; None: no answer.

    Keys are (array job id, task) for array tasks and (job id, None) for plain jobs.
    """
    wanted = {j for j in jobs if j}
    if not wanted:
        return None
    said = _asked(["squeue", "--noheader", "--array", "--states=all", "--format=%F|%K|%i|%T|%r"])
    if said is None:
        return None
    entries = _parse_squeue(said, wanted)
    # sacct knows jobs squeue forgot (MinJobAge), but only with an accounting database.
    for key, entry in _sacct(wanted).items():
        entries.setdefault(key, entry)
    return entries


def jobs_of_script(script: str, *, active: bool = False) -> set[str] | None:
    """The job ids squeue lists (in every state it still remembers, or only those still
    queued or running: `active`) whose batch script is `script` (its absolute path, as
    sbatch was given it: a run folder's own); None where squeue did not answer. How a
    submission whose sbatch timed out is found: slurmctld may have queued it all the same
    (submit.py), and a resume must not submit its shards again."""
    said = _asked(["squeue", "--noheader", "--states=all", "--format=%F|%T|%o"])
    if said is None:
        return None
    found = set()
    for line in said.splitlines():
        job, _, rest = line.strip().partition("|")
        state, _, command = rest.partition("|")
        if command == script and job.isdigit() and (not active or state in ACTIVE_STATES):
            found.add(job)
    return found


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


def _sacct(wanted: set[str]) -> dict[tuple[str, int | None], QueueEntry]:
    jobs = ",".join(sorted(wanted))
    said = _asked(
        [
            "sacct",
            "--noheader",
            "--parsable2",
            "--allocations",
            "--format=JobID,State",
            f"--jobs={jobs}",
        ]
    )
    if said is None:  # "Slurm accounting storage is disabled": nothing to add
        return {}
    out: dict[tuple[str, int | None], QueueEntry] = {}
    for line in said.splitlines():
        job_id, _, state = line.partition("|")
        state = state.split()[0] if state.strip() else ""
        job, _, task = job_id.partition("_")
        if job in wanted and state:
            key: tuple[str, int | None] = (job, int(task) if task.isdigit() else None)
            out[key] = QueueEntry(job=job, task=key[1], state=state)
    return out


def _asked(argv: list[str]) -> str | None:
    """What a Slurm client (squeue, sacct) printed; None where it is not installed, did not
    answer within 30 s, or refused (sacct where the cluster keeps no accounting). A reason
    or a job's field may be in any bytes (a site's plugin, a locale): replaced."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
