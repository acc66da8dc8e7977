"""Slurm job arrays: one array task per shard, a dependent merge job, status and resume.

`reprospec slurm SPEC --shards N` writes two batch scripts into a run folder on the
shared `--out` and submits them with `sbatch --parsable`. Array task K runs
`reprospec run SPEC --shard K/N` into its own folder `shards/K/` (its own results.db:
one SQLite file is never written from several nodes). The merge job depends on the
array with `afterany`, so it starts however the tasks ended; it merges only a complete
set of shards and otherwise says which are missing. Our own attempt records hold the
signal, phase and step of every crash, so nothing here needs Slurm's accounting.

Status reads the shard folders first (they are the truth), then the Slurm output file
of each task (`slurmstepd: *** JOB ... CANCELLED ... DUE TO TIME LIMIT ***`), then
squeue (and sacct, where a cluster has accounting) for what is queued or running.

Run folder, under `<out>/slurm/<run-id>/`:

    slurm.json                the plan and every submission (job ids, sbatch argv)
    array.sbatch merge.sbatch the two scripts, resubmittable by hand
    shards/<K>/               task K's own `--out`: results.db, runs/<id>/
    logs/shard-<K>-<job>.out  task K's Slurm output (stdout and stderr)
    logs/merge-<job>.out      the merge job's output
    merged/runs/<id>/         the merged run: results.json, report.md
    cache/                    the environment-capture cache every shard shares
    stale/                    shard folders set aside by a resume (never merged)

The modules: `plan.py` (slurm.json), `preflight.py` (the spec's packages, checked on the
login node; the venv runner's environments built there into SHARED/envs), `scripts.py`,
`submit.py`, `queue.py` (squeue, sacct), `status.py`, `resume.py`. This package's namespace
is their API.
"""

from __future__ import annotations

from reprospec.slurm.plan import (
    ARRAY_SCRIPT,
    FORMAT,
    MERGE_SCRIPT,
    PLAN_FILE,
    ShardArgs,
    SlurmOptions,
    SlurmRun,
    Submission,
    attempts_per_shard,
    default_reprospec_command,
    find,
    load,
    new_run,
    run_from_dict,
    run_to_dict,
    save,
    spec_changed,
)
from reprospec.slurm.queue import (
    ACTIVE_STATES,
    QueueEntry,
    ScriptJob,
    jobs_of_scripts,
    query_queue,
)
from reprospec.slurm.resume import KILL_SIGNALS, forget_killed_attempts, set_aside_unresumable
from reprospec.slurm.scripts import array_script, merge_script, write_scripts
from reprospec.slurm.status import (
    CANCELLED_LINE,
    EXIT_LINE,
    MergeStatus,
    RunStatus,
    ShardState,
    ShardStatus,
    cancel_time,
    death_cause,
    merge_status,
    run_status,
    shard_status,
    status_to_dict,
)
from reprospec.slurm.submit import (
    LookupWait,
    SubmissionUnconfirmed,
    array_argv,
    merge_argv,
    submit,
)

__all__ = [
    "ACTIVE_STATES",
    "ARRAY_SCRIPT",
    "CANCELLED_LINE",
    "EXIT_LINE",
    "FORMAT",
    "KILL_SIGNALS",
    "MERGE_SCRIPT",
    "PLAN_FILE",
    "LookupWait",
    "MergeStatus",
    "QueueEntry",
    "RunStatus",
    "ScriptJob",
    "ShardArgs",
    "ShardState",
    "ShardStatus",
    "SlurmOptions",
    "SlurmRun",
    "Submission",
    "SubmissionUnconfirmed",
    "array_argv",
    "array_script",
    "attempts_per_shard",
    "cancel_time",
    "death_cause",
    "default_reprospec_command",
    "find",
    "forget_killed_attempts",
    "jobs_of_scripts",
    "load",
    "merge_argv",
    "merge_script",
    "merge_status",
    "new_run",
    "query_queue",
    "run_from_dict",
    "run_status",
    "run_to_dict",
    "save",
    "set_aside_unresumable",
    "shard_status",
    "spec_changed",
    "status_to_dict",
    "submit",
    "write_scripts",
]
