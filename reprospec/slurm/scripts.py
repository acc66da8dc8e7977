"""The two batch scripts of a Slurm run: the array (task K = shard K) and the merge after it.

Both are written into the run folder (`array.sbatch`, `merge.sbatch`), so a person
can read them and resubmit them by hand.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from reprospec.slurm.plan import ARRAY_SCRIPT, MERGE_SCRIPT, SlurmRun


def _directive_value(value: object) -> str:
    """`value` as sbatch reads a `#SBATCH` line's word: a path with a space ended the word
    there (`Invalid directive found in batch script`, nothing submitted), and one with a `#`
    ended the line there (the rest a comment: `--output=/p/a#b/x.out` wrote `/p/a`), so a
    value with whitespace, a `#`, a quote or a backslash is double-quoted, its `\\` and
    `"` escaped."""
    text = str(value)
    if not re.search(r"[\s#\"'\\]", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sbatch_lines(run: SlurmRun, *, merge: bool) -> list[str]:
    opts = run.options
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", run.spec_name)[:40]
    lines = [f"#SBATCH --job-name=reprospec-{'merge-' if merge else ''}{name}"]
    if merge:
        lines.append(f"#SBATCH --output={_directive_value(f'{run.run_dir}/logs/merge-%j.out')}")
    else:
        # %a: the task (= shard), %A: the array's job id; a resubmission gets a new file.
        out = _directive_value(f"{run.run_dir}/logs/shard-%a-%A.out")
        lines.append(f"#SBATCH --output={out}")
        lines.append(f"#SBATCH --array=1-{opts.shards}")
    lines.append(f"#SBATCH --chdir={_directive_value(run.chdir)}")
    lines.append("#SBATCH --ntasks=1")
    if opts.partition:
        lines.append(f"#SBATCH --partition={_directive_value(opts.partition)}")
    if not merge:
        if opts.cpus_per_shard:
            lines.append(f"#SBATCH --cpus-per-task={opts.cpus_per_shard}")
        if opts.gpus_per_shard:
            # GRES: Slurm sets CUDA_VISIBLE_DEVICES per task; the engine hands those ids out.
            lines.append(f"#SBATCH --gres=gpu:{opts.gpus_per_shard}")
        if opts.time:
            lines.append(f"#SBATCH --time={opts.time}")
    return lines


def _sh_text(text: str) -> str:
    """`text` inside a double-quoted shell word, said as it is."""
    return "".join("\\" + c if c in '"$`\\' else c for c in text)


def _quote_all(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def array_script(run: SlurmRun) -> str:
    """The batch script of array task K: `reprospec run SPEC --shard K/N` into shards/K/."""
    n = run.shards
    fresh = _quote_all(
        [
            *run.reprospec,
            "run",
            run.spec,
            "--shard",
            f"@K@/{n}",
            "--out",
            "@OUT@",
            *run.shard_args.argv(),
        ]
    )
    fresh = fresh.replace("@K@", '"$K"').replace("@OUT@", '"$OUT"')
    if run.spec_sha256:
        # A task starts when the queue lets it, maybe hours after the spec was planned and
        # split here: an edit since then ran another spec in it (and another in the next),
        # silently, where the merge then refused the mixed shards or merged what was never
        # planned. Refused, the task's own words in its output, which `status` shows.
        spec = shlex.quote(run.spec)
        fresh = (
            # Not there (another filesystem): `reprospec run` says so, not "changed".
            f"if [ -r {spec} ] && command -v sha256sum >/dev/null && "
            f'[ "$(sha256sum < {spec} | cut -d " " -f 1)" != {run.spec_sha256} ]; then\n'
            f'        echo "reprospec: {_sh_text(run.spec)} changed since reprospec slurm '
            f'planned this run: shard $K would run another spec; submit it again" >&2\n'
            f'        echo "reprospec-slurm: exit 2"\n'
            f"        exit 2\n"
            f"    fi\n"
            f"    {fresh}"
        )
    resume = _quote_all([*run.reprospec, "run", "--resume"]) + ' "$previous"'
    if run.shard_args.jobs is not None:
        resume += f" -j {run.shard_args.jobs}"
    header = "\n".join(_sbatch_lines(run, merge=False))
    envs = ""
    if run.shard_args.envs:
        # The venv runner's environments, built on the login node: each shard finds them
        # by their content hash, never builds its own copy in shards/K/.
        envs = (
            "# The venv runner's environments, built by `reprospec slurm` on the login node.\n"
            f"export REPROSPEC_ENVS={shlex.quote(run.shard_args.envs)}\n"
        )
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
{envs}echo "reprospec-slurm: shard $K/{n} job ${{SLURM_ARRAY_JOB_ID:-?}}_$K on $(hostname)" \\
     "CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES-unset}} utc$(date +%z)"
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
# What to do next is status's last line, said when the job ends, not when it was written:
# a fixed "resume" here was wrong advice where the spec changed since (resume refuses it).
said=$({status})
code=$?
printf '%s\\n' "$said"
if [ $code -ne 0 ]; then
    last=${{said##*$'\\n'}}
    echo "reprospec-slurm: not merging: ${{last:-reprospec slurm status exited $code}}" >&2
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
