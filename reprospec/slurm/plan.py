"""A Slurm run's plan: what every shard runs, what Slurm is asked, every submission (slurm.json).

Everything a node needs is absolute (nodes start elsewhere); `save` writes
slurm.json atomically, since `status` may read it at any time.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import (
    JsonObject,
    JsonValue,
    as_text,
    as_texts,
    checked_array,
    checked_integer,
    checked_object,
)
from reprospec.errors import UsageError
from reprospec.store.refs import is_latest, resolve_run_id
from reprospec.store.runfolder import SHARDS

FORMAT = 1
PLAN_FILE = "slurm.json"
ARRAY_SCRIPT = "array.sbatch"
MERGE_SCRIPT = "merge.sbatch"


@frozen
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
    # The venv runner's environments: a folder every node sees, built into on the login node
    # before submitting (slurm/preflight.py); the array script exports it as $REPROSPEC_ENVS.
    envs: str | None = None

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


@frozen
class SlurmOptions:
    """What Slurm is asked for each shard."""

    shards: int
    gpus_per_shard: int = 0
    cpus_per_shard: int | None = None
    partition: str | None = None
    time: str | None = None
    sbatch_args: tuple[str, ...] = ()


@frozen
class Submission:
    """One `sbatch` of the array (some or all shards) and of the merge that follows it."""

    array_job: str
    merge_job: str
    shards: tuple[int, ...]
    submitted: str
    array_argv: tuple[str, ...] = ()
    merge_argv: tuple[str, ...] = ()


@frozen
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
    # The spec file's sha256 when it was planned: a task that starts after the file was
    # edited would run another spec than the one validated and split here (None: a
    # slurm.json written before it was kept, or a file that could not be read).
    spec_sha256: str | None = None

    @property
    def shards(self) -> int:
        return self.options.shards

    def shard_dir(self, shard: int) -> Path:
        return self.run_dir / SHARDS / str(shard)

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
    from reprospec.store.resultsjson import new_run_id

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
        spec_sha256=_sha256(spec),
    )


def _sha256(path: Path) -> str | None:
    """The spec file's sha256, which each task checks before it runs (scripts.py: an edit
    since it was planned is refused); None where it cannot be read (no check then)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def spec_changed(run: SlurmRun) -> str | None:
    """Why the spec file is no longer the one this run planned (`changed`, `removed`), or
    None where it is (or no digest was kept). Every task sent again would refuse it: a
    fresh one by its digest (scripts.py), a resumed one as `run --resume` refuses a spec
    changed since its run began."""
    if run.spec_sha256 is None:
        return None
    path = Path(run.spec)
    if not path.exists():
        return "removed"
    digest = _sha256(path)
    if digest is None:
        return None  # unreadable here: the node may read it; its task says what it finds
    return None if digest == run.spec_sha256 else "changed"


def attempts_per_shard(total: int, shards: int) -> tuple[int, ...]:
    """How `--shard K/N` splits `total` attempts: round-robin, so the first ones get one more."""
    return tuple(len(range(k - 1, total, shards)) for k in range(1, shards + 1))


def run_to_dict(run: SlurmRun) -> JsonObject:
    """slurm.json."""
    args, opts = run.shard_args, run.options
    return {
        "format": FORMAT,
        "run_id": run.run_id,
        "spec": run.spec,
        "spec_name": run.spec_name,
        "chdir": run.chdir,
        "reprospec": list(run.reprospec),
        "shard_args": {
            "runner": args.runner,
            "python": args.python,
            "matrix": list(args.matrix),
            "overrides": list(args.overrides),
            "repeat": args.repeat,
            "timeout": args.timeout,
            "jobs": args.jobs,
            "find_links": args.find_links,
            "envs": args.envs,
        },
        "options": {
            "shards": opts.shards,
            "gpus_per_shard": opts.gpus_per_shard,
            "cpus_per_shard": opts.cpus_per_shard,
            "partition": opts.partition,
            "time": opts.time,
            "sbatch_args": list(opts.sbatch_args),
        },
        "attempts": list(run.attempts),
        "spec_sha256": run.spec_sha256,
        "submissions": [
            {
                "array_job": sub.array_job,
                "merge_job": sub.merge_job,
                "shards": list(sub.shards),
                "submitted": sub.submitted,
                "array_argv": list(sub.array_argv),
                "merge_argv": list(sub.merge_argv),
            }
            for sub in run.submissions
        ],
    }


def run_from_dict(data: Mapping[str, JsonValue], run_dir: Path) -> SlurmRun:
    """Inverse of `run_to_dict`; `run_dir` is where slurm.json was found.

    KeyError or TypeError when `data` is not what `run_to_dict` wrote.
    """
    args, opts = checked_object(data["shard_args"]), checked_object(data["options"])
    return SlurmRun(
        run_id=str(data["run_id"]),
        run_dir=run_dir,
        spec=str(data["spec"]),
        spec_name=str(data["spec_name"]),
        chdir=str(data["chdir"]),
        reprospec=as_texts(data["reprospec"]),
        shard_args=ShardArgs(
            runner=str(args.get("runner", "local")),
            python=as_text(args.get("python")),
            matrix=as_texts(args.get("matrix")),
            overrides=as_texts(args.get("overrides")),
            repeat=checked_integer(args.get("repeat")),
            timeout=as_text(args.get("timeout")),
            jobs=checked_integer(args.get("jobs")),
            find_links=as_text(args.get("find_links")),
            envs=as_text(args.get("envs")),
        ),
        options=SlurmOptions(
            shards=checked_integer(opts["shards"]) or 0,
            gpus_per_shard=checked_integer(opts.get("gpus_per_shard")) or 0,
            cpus_per_shard=checked_integer(opts.get("cpus_per_shard")),
            partition=as_text(opts.get("partition")),
            time=as_text(opts.get("time")),
            sbatch_args=as_texts(opts.get("sbatch_args")),
        ),
        attempts=tuple(checked_integer(n) or 0 for n in checked_array(data["attempts"])),
        submissions=tuple(
            Submission(
                array_job=str(sub["array_job"]),
                merge_job=str(sub["merge_job"]),
                shards=tuple(checked_integer(k) or 0 for k in checked_array(sub["shards"])),
                submitted=str(sub["submitted"]),
                array_argv=as_texts(sub.get("array_argv")),
                merge_argv=as_texts(sub.get("merge_argv")),
            )
            for sub in map(checked_object, checked_array(data.get("submissions")))
        ),
        spec_sha256=as_text(data.get("spec_sha256")),
    )


def save(run: SlurmRun) -> Path:
    """Write slurm.json (atomically: status may read it at any time)."""
    from reprospec.core.atomicfile import write_atomic

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
        if not isinstance(data, dict):
            raise TypeError(f"expected a mapping, got {type(data).__name__}")
        return run_from_dict(data, run_dir.resolve())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a reprospec Slurm run ({exc})") from exc
