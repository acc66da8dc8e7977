"""`sbatch` the array (all shards, or those a resume sends again) and the merge that follows it."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone

from reprospec.core import capped
from reprospec.errors import InfraError
from reprospec.slurm.plan import ARRAY_SCRIPT, MERGE_SCRIPT, SlurmRun, Submission, save

# sbatch answers a job id, or its refusal: more than this is cut (head and tail kept).
_ANSWER_BYTES = 64 * 1024
_SBATCH_TIMEOUT_S = 120


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


def _sbatch(argv: Sequence[str]) -> str:
    """Run sbatch --parsable; the job id (a cluster name after `;` is dropped)."""
    if shutil.which(argv[0]) is None:
        raise InfraError(
            f"{argv[0]} not found: run this on a Slurm login node "
            "(or use --dry-run to see the scripts)"
        )
    try:
        # In a session of its own (capped.run): in reprospec's process group a terminal's
        # Ctrl-C, which the CLI defers until slurm.json records the jobs, SIGINTed sbatch
        # too: 'sbatch refused the job: exit -2', exit 3, the run's folder removed, where a
        # job may have been queued. A stuck one is still ended (its group) at the timeout.
        proc = capped.run(argv, limit=_ANSWER_BYTES, timeout_s=_SBATCH_TIMEOUT_S)
    except OSError as exc:
        raise InfraError(f"{argv[0]} could not be started: {exc}") from None
    if proc.timed_out:
        raise InfraError(f"{argv[0]} did not answer within {_SBATCH_TIMEOUT_S} s")
    # sbatch's refusal may name a path or a site's message in any bytes: replaced.
    stdout = proc.stdout.decode(errors="replace").strip()
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip() or stdout
        raise InfraError(f"sbatch refused the job: {message or f'exit {proc.returncode}'}")
    job = stdout.splitlines()[-1].split(";")[0].strip() if stdout else ""
    if not job.isdigit():
        raise InfraError(f"sbatch answered {stdout!r}, not a job id")
    return job


def _scancel(job: str) -> None:
    if shutil.which("scancel"):
        # Its own session too: a Ctrl-C as it runs would leave the array queued.
        with contextlib.suppress(OSError):
            capped.run(["scancel", job], limit=_ANSWER_BYTES, timeout_s=60)


def submit(
    run: SlurmRun,
    shards: Sequence[int] | None = None,
    *,
    time: str | None = None,
    merge_only: bool = False,
) -> SlurmRun:
    """Submit the array (all or `shards`) and the merge after it; slurm.json records both."""
    array_job = ""
    a_argv: list[str] = []
    chosen = tuple(shards) if shards is not None else tuple(range(1, run.shards + 1))
    if not merge_only:
        a_argv = array_argv(run, chosen, time=time)
        array_job = _sbatch(a_argv)
    m_argv = merge_argv(run, array_job or None)
    try:
        merge_job = _sbatch(m_argv)
    except InfraError:
        # An array without its merge would leave shards nobody merges: take it back.
        if array_job:
            _scancel(array_job)
        raise
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
