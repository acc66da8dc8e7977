"""`reprospec merge RUN...`: shard runs of one spec into one run folder and one report."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.formats import REPORT_FORMATS

if TYPE_CHECKING:
    from reprospec.core.inputs import Spec
    from reprospec.core.results import RunResult


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `merge` verb's arguments."""
    p = sub.add_parser("merge", help="merge shard runs into one run and one report")
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="the shard runs: run folders, results.json files, run ids or `latest~N`",
    )
    opt.out(
        p,
        help="where run ids are looked up and the merged run is written (default: .reprospec)",
    )
    opt.output_format(
        p,
        REPORT_FORMATS,
        default=None,
        help="also print the merged report in this format to stdout",
    )


def run(args: argparse.Namespace) -> int:
    from reprospec.outcome.judge import exit_code_for
    from reprospec.pipeline.stages import write_outputs
    from reprospec.report.progress import print_outcome
    from reprospec.store.merge import merge, named
    from reprospec.store.resultsjson import load_run, new_run_id
    from reprospec.store.runfolder import RunFolder

    out = Path(args.out)
    # Resolved once: `latest` names another run as soon as the merged one's folder exists.
    refs = [_shard_dir(ref, index, len(args.runs), out) for index, ref in enumerate(args.runs)]
    shards = [load_run(ref, out) for ref in refs]
    stopped = [shard for shard in shards if shard.interrupted]
    if stopped:
        # Its cells hold only the attempts it ran: merged, they read as the cell's (1/1
        # where 2 were asked), and the merged report said `reprospec run --resume ID` of
        # the merged run, which no store holds.
        from reprospec.core.words import resume_command
        from reprospec.errors import UsageError

        # Resumed from the shard's own store (OUT of its OUT/runs/ID), where the merge's
        # --out, which holds no such run, was named.
        first = stopped[0]
        raise UsageError(
            f"cannot merge {named(first)}: it was interrupted before it ran all its attempts; "
            f"finish it first with `{resume_command(first.run_id, first.store)}`, then merge"
        )
    # The folders this merge makes for its store (OUT's own parents too, `--out new/store`):
    # shards that do not merge leave none of them.
    made = [path for path in (*reversed(out.parents), out, out / "runs") if not path.exists()]
    # A folder no run has (RunFolder.new): two merges of one spec in one second drew one id.
    folder = RunFolder.new(out, lambda: new_run_id(shards[0].spec_name))
    try:
        merged = merge(shards, run_id=folder.run_id)
    except BaseException:
        # No empty run for `latest`, and no empty store where there was none.
        for path in (folder.path, *reversed(made)):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    # Attempt logs keep their relative paths (cells/<cell>/<n>/): bring them along so
    # the merged report has its excerpts and stacks. Shards hold disjoint attempts.
    lost = []
    for ref, shard in zip(refs, shards, strict=True):
        cells = RunFolder(ref).cells
        if cells.is_dir():
            shutil.copytree(cells, folder.cells, dirs_exist_ok=True)
        elif any(a.logs for c in shard.cells for a in c.attempts):
            lost.append(f"{named(shard)} from {ref}")
    if lost:
        # A CI job that uploaded a shard's results.json alone: its attempts' logs, stacks and
        # cores merged as if they were there, links to files the merged run lacks.
        from dataclasses import replace

        merged = replace(merged, warnings=(*merged.warnings, _logs_lost(lost)))
    write_outputs(folder, merged)
    # Which run is the new, merged one and which are the runs it was made of.
    given = ", ".join(
        f"{'shard ' + shard.shard if shard.shard else 'run'} {ref}"
        for shard, ref in zip(shards, refs, strict=True)
    )
    print(f"merged {given} into the merged run {folder.path}", file=sys.stderr)
    print_outcome(merged, args.format, out)
    write_github_outputs(merged)
    return exit_code_for(merged)


def _logs_lost(shards: list[str]) -> str:
    """The merged run's warning of the shards given without their `cells/` folder."""
    its = "its" if len(shards) == 1 else "their"
    return (
        f"{', '.join(shards)}: no cells/ folder beside {its} results.json: {its} attempts' logs "
        "(stdout, stderr, native stacks) are not in the merged run, only the excerpts "
        "results.json holds; give each shard's whole run folder to merge them"
    )


def _shard_dir(ref: str, index: int, count: int, out: Path) -> Path:
    """The run folder of the shard run `ref`, the RUN at `index` of `count`: one not found
    is said as the shard run it was to be (`no run 'nothere'` alone did not say which
    argument, nor that it named a shard run of the spec)."""
    from reprospec.errors import UsageError
    from reprospec.store.resultsjson import run_dir_of

    try:
        return run_dir_of(ref, out)
    except UsageError as exc:
        raise UsageError(f"RUN {index + 1} of {count} (a shard run to merge): {exc}") from exc


def write_github_outputs(merged: RunResult) -> None:
    """In GitHub Actions, the merged run's job summary and `::error` annotations, as `run`
    writes a run's: in sharded CI the merge job holds the verdict of every cell on all its
    attempts, where each shard judged only its share (a rate cell's 1 of 4 attempts is
    `undecided`), and it wrote neither."""
    from reprospec.commands.run import (
        in_github_actions,
        write_github_annotations,
        write_github_summary,
    )

    write_github_summary(merged)
    if in_github_actions():  # the spec is read again only for the annotations' lines
        write_github_annotations(merged, _merged_spec(merged), Path(merged.spec_path))


def _merged_spec(merged: RunResult) -> Spec | None:
    """The spec the shards ran, read again from its file for its cells' lines (the merge job
    of a workflow runs in the checkout the shards ran in), with the run's `--set`; None
    where that file is gone, no longer loads or no longer holds the text that ran."""
    from reprospec.core.redact import Redactor
    from reprospec.errors import FatalError
    from reprospec.pipeline.stages import spec_text_of
    from reprospec.spec.load import load_spec

    overrides = merged.options.get("overrides")
    try:
        spec = load_spec(
            merged.spec_path,
            [str(o) for o in overrides] if isinstance(overrides, list) else [],
            files=False,
        )
    except (FatalError, OSError):
        return None
    # The text as the run kept it (pipeline/stages.py: its `--set` heading, secrets masked).
    kept = Redactor.for_spec(spec.document).spec_text(spec_text_of(spec))
    from reprospec.spec.load import same_spec_text

    return spec if same_spec_text(merged.spec_text, kept) else None
