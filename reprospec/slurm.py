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
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from reprospec.errors import InfraError, UsageError
from reprospec.runrefs import is_latest, resolve_run_id

FORMAT = 1
PLAN_FILE = "slurm.json"
ARRAY_SCRIPT = "array.sbatch"
MERGE_SCRIPT = "merge.sbatch"
# The last line an array task prints: the exit status of its `reprospec run`.
EXIT_LINE = re.compile(r"^reprospec-slurm: exit (\d+)$", re.MULTILINE)
# slurmstepd's own words when it ends a task: `*** JOB 16 ON vm CANCELLED AT 2026-11-23T14:38:10
# DUE TO TIME LIMIT ***` (no "DUE TO" when a person ran scancel).
CANCELLED_LINE = re.compile(
    r"\*\*\* (?:JOB|STEP) (?P<job>[\d.]+) ON (?P<node>\S+) CANCELLED AT (?P<at>\S+)"
    r"(?: DUE TO (?P<cause>[A-Z][A-Z ]*[A-Z]))?(?: \([^)]*\))? \*\*\*"
)
# Signals that end an attempt when Slurm ends its whole job (SIGTERM, SIGKILL after KillWait).
KILL_SIGNALS = frozenset({"SIGTERM", "SIGKILL", "SIGHUP", "SIGINT", "SIGCONT"})
# How long before slurmstepd's "CANCELLED AT" an attempt may have ended of that same kill
# (clock skew between nodes, KillWait): generous, since forgetting one costs only a rerun.
KILL_SLACK_S = 120.0
_CAUSES = {
    "TIME LIMIT": "time limit",
    "NODE FAILURE": "node failure",
    "PREEMPTION": "preempted",
    "JOB REQUEUE": "requeued",
}
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
_ENDED_STATES = {
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

ShardState = Literal["done", "queued", "running", "died", "failed", "unknown", "not-submitted"]


@dataclass(frozen=True)
class ShardArgs:
    """The `reprospec run` options every shard repeats: same runner, same cells, same repeats."""

    runner: str = "local"
    python: str | None = None
    matrix: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    repeat: int | None = None
    timeout: str | None = None
    jobs: int | None = None
    find_links: str | None = None

    def argv(self) -> list[str]:
        """These options as `reprospec run` arguments."""
        out = ["--runner", self.runner]
        if self.python:
            out += ["--python", self.python]
        for item in self.matrix:
            out += ["-m", item]
        for item in self.overrides:
            out += ["--set", item]
        if self.repeat is not None:
            out += ["--repeat", str(self.repeat)]
        if self.timeout is not None:
            out += ["--timeout", self.timeout]
        if self.jobs is not None:
            out += ["-j", str(self.jobs)]
        if self.find_links:
            out += ["--find-links", self.find_links]
        return out


@dataclass(frozen=True)
class SlurmOptions:
    """What Slurm is asked for each shard."""

    shards: int
    gpus_per_shard: int = 0
    cpus_per_shard: int | None = None
    partition: str | None = None
    time: str | None = None
    sbatch_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Submission:
    """One `sbatch` of the array (some or all shards) and of the merge that follows it."""

    array_job: str
    merge_job: str
    shards: tuple[int, ...]
    submitted: str
    array_argv: tuple[str, ...] = ()
    merge_argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlurmRun:
    """A spec submitted (or to be submitted) as a job array: everything in slurm.json."""

    run_id: str
    run_dir: Path
    spec: str
    spec_name: str
    chdir: str
    reprospec: tuple[str, ...]
    shard_args: ShardArgs
    options: SlurmOptions
    attempts: tuple[int, ...]  # attempts planned per shard, for progress
    submissions: tuple[Submission, ...] = ()

    @property
    def shards(self) -> int:
        return self.options.shards

    def shard_dir(self, shard: int) -> Path:
        return self.run_dir / "shards" / str(shard)

    def shard_log(self, shard: int, array_job: str) -> Path:
        return self.run_dir / "logs" / f"shard-{shard}-{array_job}.out"

    def merge_log(self, merge_job: str) -> Path:
        return self.run_dir / "logs" / f"merge-{merge_job}.out"

    def latest_submission(self, shard: int | None = None) -> Submission | None:
        """The newest submission, or the newest that ran `shard`."""
        for sub in reversed(self.submissions):
            if shard is None or shard in sub.shards:
                return sub
        return None


@dataclass(frozen=True)
class QueueEntry:
    """One job (or array task) as squeue/sacct shows it."""

    job: str  # array job id, or the job id of a plain job
    task: int | None
    state: str
    reason: str = ""


@dataclass(frozen=True)
class ShardStatus:
    """Where one shard stands, and why we think so."""

    shard: int
    state: ShardState
    detail: str
    job: str  # `12_3`, or "" when never submitted
    attempts_started: int
    attempts_planned: int
    run_dir: Path | None
    log: Path | None


@dataclass(frozen=True)
class MergeStatus:
    """Where the merge job stands; `report` once the merged run exists."""

    state: Literal["done", "queued", "running", "failed", "unknown", "not-submitted"]
    detail: str
    job: str
    report: Path | None
    log: Path | None


@dataclass(frozen=True)
class RunStatus:
    """The whole run: each shard, the merge, and whether squeue answered."""

    run: SlurmRun
    shards: tuple[ShardStatus, ...]
    merge: MergeStatus
    queue_answered: bool
    warnings: tuple[str, ...] = field(default=())

    @property
    def missing(self) -> tuple[int, ...]:
        """Shards a resume would submit again: ended without complete results."""
        return tuple(
            s.shard for s in self.shards if s.state in ("died", "failed", "not-submitted")
        )

    @property
    def active(self) -> tuple[int, ...]:
        return tuple(s.shard for s in self.shards if s.state in ("queued", "running"))

    @property
    def all_done(self) -> bool:
        return all(s.state == "done" for s in self.shards)


# -- the plan ------------------------------------------------------------------------


def default_reprospec_command() -> tuple[str, ...]:
    """How a node starts reprospec: this interpreter (a shared venv), `-m reprospec`."""
    return (sys.executable, "-m", "reprospec")


def new_run(
    spec: Path,
    spec_name: str,
    out_root: Path,
    options: SlurmOptions,
    shard_args: ShardArgs,
    attempts: Sequence[int],
    *,
    reprospec: Sequence[str] | None = None,
    chdir: Path | None = None,
    run_id: str | None = None,
) -> SlurmRun:
    """A run folder's plan (nothing written): absolute paths, since nodes start elsewhere."""
    from reprospec.results import new_run_id

    if options.shards < 1:
        raise UsageError("--shards must be at least 1")
    if len(attempts) != options.shards:
        raise ValueError("one attempt count per shard")
    run_id = run_id or new_run_id(spec_name)
    return SlurmRun(
        run_id=run_id,
        run_dir=out_root.resolve() / "slurm" / run_id,
        spec=str(spec.resolve()),
        spec_name=spec_name,
        chdir=str((chdir or Path.cwd()).resolve()),
        reprospec=tuple(reprospec or default_reprospec_command()),
        shard_args=shard_args,
        options=options,
        attempts=tuple(attempts),
    )


def attempts_per_shard(total: int, shards: int) -> tuple[int, ...]:
    """How `--shard K/N` splits `total` attempts: round-robin, so the first ones get one more."""
    return tuple(len(range(k - 1, total, shards)) for k in range(1, shards + 1))


def run_to_dict(run: SlurmRun) -> dict[str, Any]:
    """slurm.json."""
    return {
        "format": FORMAT,
        "run_id": run.run_id,
        "spec": run.spec,
        "spec_name": run.spec_name,
        "chdir": run.chdir,
        "reprospec": list(run.reprospec),
        "shard_args": {
            **vars(run.shard_args),
            "matrix": list(run.shard_args.matrix),
            "overrides": list(run.shard_args.overrides),
        },
        "options": {**vars(run.options), "sbatch_args": list(run.options.sbatch_args)},
        "attempts": list(run.attempts),
        "submissions": [
            {
                **vars(sub),
                "shards": list(sub.shards),
                "array_argv": list(sub.array_argv),
                "merge_argv": list(sub.merge_argv),
            }
            for sub in run.submissions
        ],
    }


def run_from_dict(data: Mapping[str, Any], run_dir: Path) -> SlurmRun:
    """Inverse of `run_to_dict`; `run_dir` is where slurm.json was found."""
    shard_args = dict(data["shard_args"])
    options = dict(data["options"])
    return SlurmRun(
        run_id=str(data["run_id"]),
        run_dir=run_dir,
        spec=str(data["spec"]),
        spec_name=str(data["spec_name"]),
        chdir=str(data["chdir"]),
        reprospec=tuple(data["reprospec"]),
        shard_args=ShardArgs(
            **{
                **shard_args,
                "matrix": tuple(shard_args.get("matrix", ())),
                "overrides": tuple(shard_args.get("overrides", ())),
            }
        ),
        options=SlurmOptions(**{**options, "sbatch_args": tuple(options.get("sbatch_args", ()))}),
        attempts=tuple(int(n) for n in data["attempts"]),
        submissions=tuple(
            Submission(
                array_job=str(sub["array_job"]),
                merge_job=str(sub["merge_job"]),
                shards=tuple(int(k) for k in sub["shards"]),
                submitted=str(sub["submitted"]),
                array_argv=tuple(sub.get("array_argv", ())),
                merge_argv=tuple(sub.get("merge_argv", ())),
            )
            for sub in data.get("submissions", ())
        ),
    )


def save(run: SlurmRun) -> Path:
    """Write slurm.json (atomically: status may read it at any time)."""
    from reprospec.results import write_atomic

    path = run.run_dir / PLAN_FILE
    write_atomic(path, json.dumps(run_to_dict(run), indent=2) + "\n")
    return path


def find(ref: str | Path, out_root: Path) -> Path:
    """The run folder of a Slurm run: its folder, its slurm.json, its id (or unique prefix),
    or `latest` / `latest~N`."""
    if isinstance(ref, str) and is_latest(ref):
        ref = resolve_run_id(ref, out_root, under="slurm")
    path = Path(ref)
    if path.is_file() and path.name == PLAN_FILE:
        return path.parent
    if (path / PLAN_FILE).is_file():
        return path
    root = out_root / "slurm"
    name = str(ref)
    if "/" not in name and root.is_dir():
        matches = sorted(p.parent for p in root.glob(f"{name}*/{PLAN_FILE}"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(p.name for p in matches[:5])
            raise UsageError(f"Slurm run {name!r} is ambiguous: {ids}")
    raise UsageError(
        f"no Slurm run {name!r}: not a folder with {PLAN_FILE}, nor a run id under {root}"
    )


def load(ref: str | Path, out_root: Path = Path(".reprospec")) -> SlurmRun:
    """A Slurm run from its folder or id (see `find`)."""
    run_dir = find(ref, out_root)
    path = run_dir / PLAN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return run_from_dict(data, run_dir.resolve())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a reprospec Slurm run ({exc})") from exc


# -- the scripts -----------------------------------------------------------------------


def _sbatch_lines(run: SlurmRun, *, merge: bool) -> list[str]:
    opts = run.options
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", run.spec_name)[:40]
    lines = [f"#SBATCH --job-name=reprospec-{'merge-' if merge else ''}{name}"]
    if merge:
        lines.append(f"#SBATCH --output={run.run_dir}/logs/merge-%j.out")
    else:
        # %a: the task (= shard), %A: the array's job id; a resubmission gets a new file.
        lines.append(f"#SBATCH --output={run.run_dir}/logs/shard-%a-%A.out")
        lines.append(f"#SBATCH --array=1-{opts.shards}")
    lines.append(f"#SBATCH --chdir={run.chdir}")
    lines.append("#SBATCH --ntasks=1")
    if opts.partition:
        lines.append(f"#SBATCH --partition={opts.partition}")
    if not merge:
        if opts.cpus_per_shard:
            lines.append(f"#SBATCH --cpus-per-task={opts.cpus_per_shard}")
        if opts.gpus_per_shard:
            # GRES: Slurm sets CUDA_VISIBLE_DEVICES per task; the engine hands those ids out.
            lines.append(f"#SBATCH --gres=gpu:{opts.gpus_per_shard}")
        if opts.time:
            lines.append(f"#SBATCH --time={opts.time}")
    return lines


def _quote_all(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def array_script(run: SlurmRun) -> str:
    """The batch script of array task K: `reprospec run SPEC --shard K/N` into shards/K/."""
    n = run.shards
    fresh = _quote_all(
        [*run.reprospec, "run", run.spec, "--shard", "@K@/" + str(n), "--out", "@OUT@"]
        + run.shard_args.argv()
    )
    fresh = fresh.replace("@K@", '"$K"').replace("@OUT@", '"$OUT"')
    resume = _quote_all([*run.reprospec, "run", "--resume"]) + ' "$previous"'
    if run.shard_args.jobs is not None:
        resume += f" -j {run.shard_args.jobs}"
    header = "\n".join(_sbatch_lines(run, merge=False))
    return f"""#!/bin/bash
{header}
# Written by `reprospec slurm` for spec {run.spec_name}: shard K of {n} is array task K.
# Each shard writes into its own folder (its own results.db); the merge job reads them all.
set -u
RUN={shlex.quote(str(run.run_dir))}
K=${{SLURM_ARRAY_TASK_ID:?run this script with sbatch --array}}
OUT="$RUN/shards/$K"
mkdir -p "$OUT" "$RUN/cache"
# One environment-capture cache for all shards (keyed by torch build, written atomically):
# only the first task on a kind of node pays the torch import.
[ -e "$OUT/cache" ] || ln -s ../../cache "$OUT/cache"
echo "reprospec-slurm: shard $K/{n} job ${{SLURM_ARRAY_JOB_ID:-?}}_$K on $(hostname)" \\
     "CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES-unset}}"
# A shard that died before (time limit, node failure) continues its own run: the
# attempts it finished are kept, only the others run.
previous=$(ls -d "$OUT"/runs/*/ 2>/dev/null | tail -n 1)
if [ -n "$previous" ]; then
    echo "reprospec-slurm: resuming $previous"
    {resume}
else
    {fresh}
fi
code=$?
echo "reprospec-slurm: exit $code"
exit $code
"""


def merge_script(run: SlurmRun) -> str:
    """The batch script of the merge job: every shard's run into one run and one report."""
    header = "\n".join(_sbatch_lines(run, merge=True))
    status = _quote_all([*run.reprospec, "slurm", "status"]) + ' "$RUN"'
    merge = _quote_all([*run.reprospec, "merge"]) + ' "${runs[@]}" --out "$RUN/merged"'
    return f"""#!/bin/bash
{header}
# Written by `reprospec slurm` for spec {run.spec_name}: runs after every array task
# ended (afterany), however it ended; merges only when every shard has its results.
set -u
RUN={shlex.quote(str(run.run_dir))}
if ! {status}; then
    echo "reprospec-slurm: not merging: some shard has no complete results;" \\
         "resubmit the missing ones with: reprospec slurm resume $RUN" >&2
    echo "reprospec-slurm: exit 3"
    exit 3
fi
runs=("$RUN"/shards/*/runs/*/)
{merge}
code=$?
echo "reprospec-slurm: exit $code"
exit $code
"""


def write_scripts(run: SlurmRun) -> tuple[Path, Path]:
    """array.sbatch and merge.sbatch (and the logs folder Slurm writes into)."""
    (run.run_dir / "logs").mkdir(parents=True, exist_ok=True)
    array = run.run_dir / ARRAY_SCRIPT
    merge = run.run_dir / MERGE_SCRIPT
    array.write_text(array_script(run), encoding="utf-8")
    merge.write_text(merge_script(run), encoding="utf-8")
    return array, merge


# -- submitting ---------------------------------------------------------------------------


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
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=120, check=False
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


# -- the queue ------------------------------------------------------------------------------


def query_queue(jobs: Iterable[str]) -> dict[tuple[str, int | None], QueueEntry] | None:
    """squeue (every state it still remembers), then sacct where it answers; None: no answer.

    Keys are (array job id, task) for array tasks and (job id, None) for plain jobs.
    """
    wanted = {j for j in jobs if j}
    if not wanted or shutil.which("squeue") is None:
        return None
    try:
        proc = subprocess.run(
            ["squeue", "--noheader", "--array", "--states=all", "--format=%F|%K|%i|%T|%r"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    entries = _parse_squeue(proc.stdout, wanted)
    # sacct knows jobs squeue forgot (MinJobAge), but only with an accounting database.
    for key, entry in _sacct(wanted).items():
        entries.setdefault(key, entry)
    return entries


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
    if shutil.which("sacct") is None:
        return {}
    try:
        proc = subprocess.run(
            ["sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State",
             "--jobs=" + ",".join(sorted(wanted))],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:  # "Slurm accounting storage is disabled": nothing to add
        return {}
    out: dict[tuple[str, int | None], QueueEntry] = {}
    for line in proc.stdout.splitlines():
        job_id, _, state = line.partition("|")
        state = state.split()[0] if state.strip() else ""
        job, _, task = job_id.partition("_")
        if job in wanted and state:
            key: tuple[str, int | None] = (job, int(task) if task.isdigit() else None)
            out[key] = QueueEntry(job=job, task=key[1], state=state)
    return out


# -- status -------------------------------------------------------------------------------


def death_cause(log_text: str) -> str | None:
    """Why slurmstepd ended a task, from its output file: "time limit", "cancelled", ..."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    if not matches:
        return None
    cause = matches[-1].group("cause")
    return _CAUSES.get(cause.strip(), cause.strip().lower()) if cause else "cancelled"


def _cancel_line(log_text: str) -> str:
    """slurmstepd's own words: `*** JOB 13 ON vm CANCELLED AT ... DUE TO TIME LIMIT ***`."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    return matches[-1].group(0) if matches else ""


def _last_error_line(log_text: str) -> str:
    """The last line that says what went wrong: reprospec's own, else an error, else the last."""
    lines = [
        line.strip()
        for line in log_text.splitlines()
        if line.strip() and not EXIT_LINE.match(line.strip())
    ]
    for pick in (
        lambda line: line.startswith(("reprospec:", "reprospec-slurm: not")),
        lambda line: "error" in line.lower(),
    ):
        for line in reversed(lines):
            if pick(line):
                return line
    return lines[-1] if lines else ""


def cancel_time(log_text: str) -> datetime | None:
    """When slurmstepd ended the task (its node's local time, as Slurm prints it)."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    if not matches:
        return None
    try:
        return datetime.fromisoformat(matches[-1].group("at")).astimezone()
    except ValueError:
        return None


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _shard_run(run: SlurmRun, shard: int) -> tuple[Path | None, dict[str, Any] | None]:
    """The shard's run folder (there is one per shard) and its results.json, when written."""
    runs = sorted(p for p in (run.shard_dir(shard) / "runs").glob("*/") if p.is_dir())
    if not runs:
        return None, None
    folder = runs[-1]
    try:
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return folder, None
    return folder, data if isinstance(data, dict) else None


def _attempts_started(folder: Path | None) -> int:
    """Attempt folders (`cells/<cell>/<n>/`): each is made when its attempt starts."""
    if folder is None or not (folder / "cells").is_dir():
        return 0
    return sum(1 for p in (folder / "cells").glob("*/*") if p.is_dir())


def shard_status(
    run: SlurmRun,
    shard: int,
    queue: Mapping[tuple[str, int | None], QueueEntry] | None,
) -> ShardStatus:
    """One shard: its results decide "done"; otherwise the queue, its log, its exit line."""
    planned = run.attempts[shard - 1] if shard <= len(run.attempts) else 0
    folder, results = _shard_run(run, shard)
    started = _attempts_started(folder)
    sub = run.latest_submission(shard)
    job = f"{sub.array_job}_{shard}" if sub else ""
    log = run.shard_log(shard, sub.array_job) if sub else None

    def status(state: ShardState, detail: str) -> ShardStatus:
        return ShardStatus(
            shard=shard,
            state=state,
            detail=detail,
            job=job,
            attempts_started=started,
            attempts_planned=planned,
            run_dir=folder,
            log=log if log is not None and log.exists() else None,
        )

    expected_shard = f"{shard}/{run.shards}"
    if results is not None and not results.get("interrupted"):
        if results.get("shard") not in (expected_shard, None):
            return status("failed", f"holds shard {results.get('shard')}, not {expected_shard}")
        summary = results.get("summary") or {}
        return status(
            "done",
            "{} of {} cell(s) reproduced".format(
                summary.get("reproduced", "?"), summary.get("cells", "?")
            )
            + (f", {summary['undecided']} undecided" if summary.get("undecided") else "")
            + (f", {summary['infra_error']} infra-error" if summary.get("infra_error") else ""),
        )
    if sub is None:
        return status("not-submitted", "never submitted")
    entry = queue.get((sub.array_job, shard)) if queue is not None else None
    if entry is not None and entry.state in ACTIVE_STATES:
        if entry.state == "PENDING":
            reason = f" ({entry.reason})" if entry.reason and entry.reason != "None" else ""
            return status("queued", f"pending{reason}")
        return status("running", entry.state.lower())
    text = _read(log)
    cause = death_cause(text)
    if cause is not None:
        return status("died", f"{cause} ({_cancel_line(text)})")
    if entry is not None and entry.state in _ENDED_STATES and entry.state != "COMPLETED":
        return status("died", f"{_ENDED_STATES[entry.state]} (Slurm state {entry.state})")
    if results is not None:  # interrupted: SIGTERM reached the engine, it wrote what it had
        return status("died", "interrupted: partial results only")
    exits = EXIT_LINE.findall(text)
    if exits:
        line = _last_error_line(text)
        return status(
            "failed",
            f"reprospec run exited {exits[-1]} without results" + (f": {line}" if line else ""),
        )
    if queue is None:
        return status("unknown", "no results yet, and squeue does not answer")
    if log is None or not log.exists():
        return status("died", "left the queue without starting (no output file)")
    return status("died", "ended without results: " + (_last_error_line(text) or "empty log"))


def merge_status(
    run: SlurmRun, queue: Mapping[tuple[str, int | None], QueueEntry] | None
) -> MergeStatus:
    """The merge job of the latest submission, and the merged report once written."""
    sub = run.latest_submission()
    merged = sorted((run.run_dir / "merged" / "runs").glob("*/results.json"))
    newest = merged[-1].parent / "report.md" if merged else None
    if sub is None:
        return MergeStatus("not-submitted", "never submitted", "", None, None)
    log = run.merge_log(sub.merge_job)
    log_found = log if log.exists() else None
    text = _read(log_found)
    exits = EXIT_LINE.findall(text)
    if newest is not None:
        return MergeStatus("done", "merged", sub.merge_job, newest, log_found)
    entry = queue.get((sub.merge_job, None)) if queue is not None else None
    if entry is not None and entry.state in ACTIVE_STATES:
        if entry.state == "PENDING":
            reason = f" ({entry.reason})" if entry.reason and entry.reason != "None" else ""
            return MergeStatus("queued", f"pending{reason}", sub.merge_job, None, log_found)
        return MergeStatus("running", entry.state.lower(), sub.merge_job, None, log_found)
    if exits:
        return MergeStatus(
            "failed",
            f"exited {exits[-1]}: {_last_error_line(text)}",
            sub.merge_job,
            newest,
            log_found,
        )
    if entry is not None and entry.state in _ENDED_STATES:
        return MergeStatus(
            "failed", f"Slurm state {entry.state}", sub.merge_job, newest, log_found
        )
    if queue is None:
        return MergeStatus("unknown", "squeue does not answer", sub.merge_job, newest, log_found)
    return MergeStatus("failed", "left the queue without merging", sub.merge_job, newest, log_found)


def run_status(run: SlurmRun, *, ask_queue: bool = True) -> RunStatus:
    """Every shard and the merge; squeue/sacct are asked once for all jobs of the run."""
    jobs = [j for sub in run.submissions for j in (sub.array_job, sub.merge_job)]
    queue = query_queue(jobs) if ask_queue else None
    shards = tuple(shard_status(run, k, queue) for k in range(1, run.shards + 1))
    warnings = () if queue is not None or not ask_queue else ("squeue does not answer",)
    return RunStatus(
        run=run,
        shards=shards,
        merge=merge_status(run, queue),
        queue_answered=queue is not None,
        warnings=warnings,
    )


def status_to_dict(status: RunStatus) -> dict[str, Any]:
    """`reprospec slurm status --json`."""
    return {
        "run_id": status.run.run_id,
        "run_dir": str(status.run.run_dir),
        "spec": status.run.spec,
        "shards": [
            {
                "shard": s.shard,
                "state": s.state,
                "detail": s.detail,
                "job": s.job,
                "attempts_started": s.attempts_started,
                "attempts_planned": s.attempts_planned,
                "run_dir": str(s.run_dir) if s.run_dir else None,
                "log": str(s.log) if s.log else None,
            }
            for s in status.shards
        ],
        "merge": {
            "state": status.merge.state,
            "detail": status.merge.detail,
            "job": status.merge.job,
            "report": str(status.merge.report) if status.merge.report else None,
            "log": str(status.merge.log) if status.merge.log else None,
        },
        "missing": list(status.missing),
        "queue_answered": status.queue_answered,
    }


# -- resume ----------------------------------------------------------------------------------


def set_aside_unresumable(run: SlurmRun, shard: int) -> Path | None:
    """A shard folder whose run the store never recorded cannot `--resume`: move it to stale/.

    (A task killed between creating its run folder and its first store write.)
    """
    folder, _ = _shard_run(run, shard)
    if folder is None:
        return None
    from reprospec.store import Store

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
    attempt can end by it and be recorded before its engine notices it is being stopped.
    That end says nothing about the spec: the resumed shard runs those attempts again.
    Returns the (cell id, attempt) pairs forgotten.
    """
    folder, _ = _shard_run(run, shard)
    sub = run.latest_submission(shard)
    if folder is None or sub is None:
        return ()
    log = run.shard_log(shard, sub.array_job)
    text = _read(log)
    if death_cause(text) is None:
        return ()
    killed = cancel_time(text)
    if killed is None:
        try:
            killed = datetime.fromtimestamp(log.stat().st_mtime).astimezone()
        except OSError:
            return ()
    from reprospec.store import Store

    with Store(run.shard_dir(shard)) as store:
        if store.run_info(folder.name) is None:
            return ()
        doomed = tuple(
            key
            for key, attempt in store.finished_attempts(folder.name).items()
            if attempt.ran is not None
            and attempt.ran.signal in KILL_SIGNALS
            and _ended_after(attempt.finished, killed.timestamp() - KILL_SLACK_S)
        )
        store.forget_attempts(folder.name, doomed)
    return doomed


def _ended_after(finished: str, threshold: float) -> bool:
    try:
        stamp = datetime.fromisoformat(finished)
    except ValueError:
        return True  # no usable time: rerunning it is the safe side
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()
    return stamp.timestamp() >= threshold
