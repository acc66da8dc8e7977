"""`sbatch` the array (all shards, or those a resume sends again) and the merge that follows it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone

from reprospec.errors import InfraError
from reprospec.slurm.plan import ARRAY_SCRIPT, MERGE_SCRIPT, SlurmRun, Submission, save


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
        # sbatch's refusal may name a path or a site's message in any bytes: replaced.
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, errors="replace", timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        raise InfraError(f"{argv[0]} did not answer within 120 s") from None
    if proc.returncode != 0:
        message = proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}"
        raise InfraError(f"sbatch refused the job: {message}")
    job = proc.stdout.strip().splitlines()[-1].split(";")[0].strip() if proc.stdout.strip() else ""
    if not job.isdigit():
        raise InfraError(f"sbatch answered {proc.stdout.strip()!r}, not a job id")
    return job


def _scancel(job: str) -> None:
    if shutil.which("scancel"):
        subprocess.run(["scancel", job], capture_output=True, timeout=60, check=False)


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
