"""What `reprospec slurm resume` cleans up before it submits the missing shards again."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from reprospec.slurm.plan import SlurmRun
from reprospec.slurm.status import (
    cancel_time,
    death_cause,
    ended_as_stopped,
    read_log,
    shard_run,
)

# Signals that end an attempt when Slurm ends its whole job (SIGTERM, SIGKILL after KillWait).
KILL_SIGNALS = frozenset({"SIGTERM", "SIGKILL", "SIGHUP", "SIGINT", "SIGCONT"})
# How long before slurmstepd's "CANCELLED AT" an attempt may have ended of that same kill
# (clock skew between nodes, KillWait): generous, since forgetting one costs only a rerun.
KILL_SLACK_S = 120.0


def set_aside_unresumable(run: SlurmRun, shard: int) -> Path | None:
    """A shard folder whose run the store never recorded cannot `--resume`: move it to stale/.

    (A task killed between creating its run folder and its first store write.)
    """
    folder, _ = shard_run(run, shard)
    if folder is None:
        return None
    from reprospec.store.db import Store

    with Store(run.shard_dir(shard)) as store:
        known = store.run_info(folder.name) is not None
    if known:
        return None
    stale = run.run_dir / "stale"
    stale.mkdir(parents=True, exist_ok=True)
    target = stale / f"shard-{shard}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    shutil.move(str(run.shard_dir(shard)), target)
    return target


def forget_killed_attempts(run: SlurmRun, shard: int) -> tuple[tuple[str, int], ...]:
    """Attempts Slurm killed together with their shard, removed from its store.

    A time limit or scancel sends SIGTERM to every process of the job at once, so an
    attempt can end by it and be recorded before its engine notices it is being stopped,
    dead of the signal or not (a shell whose `sleep` it killed went on to exit 0). That
    end says nothing about the spec: the resumed shard runs those attempts again.
    Returns the (cell id, attempt) pairs forgotten.
    """
    folder, _ = shard_run(run, shard)
    sub = run.latest_submission(shard)
    if folder is None or sub is None:
        return ()
    log = run.shard_log(shard, sub.array_job)
    text = read_log(log)
    if death_cause(text) is None:
        return ()
    killed = cancel_time(text)
    if killed is None:
        try:
            killed = datetime.fromtimestamp(log.stat().st_mtime).astimezone()
        except OSError:
            return ()
    from reprospec.store.db import Store

    with Store(run.shard_dir(shard)) as store:
        if store.run_info(folder.name) is None:
            return ()
        doomed = tuple(
            key
            for key, attempt in store.finished_attempts(folder.name).items()
            # Any attempt that ended as the stop came (status.py's `_cut_short`: a shell
            # that outlived its killed `sleep` read pass); one dead of a kill signal
            # within the wider slack (clock skew between nodes, KillWait).
            if ended_as_stopped(attempt.finished, killed)
            or (
                attempt.ran is not None
                and attempt.ran.signal in KILL_SIGNALS
                and ended_as_stopped(attempt.finished, killed, KILL_SLACK_S)
            )
        )
        store.forget_attempts(folder.name, doomed)
    return doomed
