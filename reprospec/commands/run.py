"""`reprospec run SPEC`: validate, expand, run every attempt, judge, store, report."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reprospec.engine import (
    PlannedRun,
    RunOptions,
    Scheduler,
    exit_code_for,
    install_sigterm_as_interrupt,
    judge_cells,
    now_iso,
    parse_shard,
    plan_run,
)
from reprospec.errors import UsageError
from reprospec.models import AttemptPlan, AttemptResult, RunResult, Spec


def run(args: argparse.Namespace) -> int:
    from reprospec.spec import load_spec
    from reprospec.store import Store

    resume_id: str | None = args.resume
    if resume_id is not None and Path(resume_id).is_dir():
        # `--resume .reprospec/runs/ID`: the folder names both the run and its store.
        folder = Path(resume_id).resolve()
        resume_id, args.out = folder.name, folder.parent.parent
    store = Store(args.out)
    if resume_id is not None:
        options, spec_path, done = _resume_state(store, resume_id, args)
    else:
        if args.spec is None:
            raise UsageError("run needs a SPEC (or --resume RUN)")
        options = _options_from_args(args)
        spec_path = args.spec
        done = {}
    spec = load_spec(spec_path, options.all_overrides())
    planned = plan_run(spec, options)
    if not planned.attempts:
        raise UsageError("nothing to run: this shard holds no attempts")
    result = execute(
        planned, options, store, run_id=resume_id, done=done, command_line=_command_line(args)
    )
    _print_outcome(result, args.format, Path(args.out))
    return exit_code_for(result)


def _options_from_args(args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        runner=args.runner,
        jobs=args.jobs,
        repeat=args.repeat,
        timeout=args.timeout,
        matrix_filters=tuple(args.matrix),
        overrides=tuple(args.overrides),
        out_root=Path(args.out),
        python=args.python,
        gpus=args.gpus,
        shard=parse_shard(args.shard) if args.shard else None,
        find_links=args.find_links,
    )


def _resume_state(
    store: Any, run_id: str, args: argparse.Namespace
) -> tuple[RunOptions, str, Mapping[tuple[str, int], AttemptResult]]:
    """The options and finished attempts of an interrupted run, from the store."""
    info = store.run_info(run_id)
    if info is None:
        raise UsageError(f"--resume {run_id}: no such run in {Path(args.out) / 'results.db'}")
    if args.spec is not None and Path(args.spec).resolve() != Path(info["spec_path"]).resolve():
        raise UsageError(
            f"--resume {run_id} ran {info['spec_path']}, not {args.spec}: "
            "leave the spec out to resume it"
        )
    options = RunOptions.from_dict(info["options"], Path(args.out))
    if args.jobs:
        options = RunOptions.from_dict({**options.to_dict(), "jobs": args.jobs}, Path(args.out))
    return options, info["spec_path"], store.finished_attempts(run_id)


# Options that only say where this machine keeps things or how it prints them:
# a person reproducing the bug elsewhere needs none of them.
_LOCAL_OPTIONS = ("--out", "--format", "--resume", "--python", "--find-links")


def _command_line(args: argparse.Namespace) -> str:
    """The command to show under "How to reproduce"."""
    words: list[str] = []
    skip = False
    for word in sys.argv[1:]:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in _LOCAL_OPTIONS:
            skip = "=" not in word
            continue
        words.append(word)
    if args.resume is not None and args.spec is None:
        return ""  # the report falls back to `reprospec run <spec path>`
    return "reprospec " + shlex.join(words) if words else "reprospec run"


def execute(
    planned: PlannedRun,
    options: RunOptions,
    store: Any,
    *,
    run_id: str | None = None,
    done: Mapping[tuple[str, int], AttemptResult] | None = None,
    command_line: str = "",
) -> RunResult:
    """Run a planned spec end to end and write the run folder; returns the RunResult."""
    from reprospec.gpuslots import GpuPool, visible_gpus
    from reprospec.progress import Progress
    from reprospec.results import new_run_id
    from reprospec.runners import get_runner

    spec = planned.spec
    runner = get_runner(
        options.runner,
        python=options.python,
        find_links=options.find_links,
        spec_dir=spec.base_dir,
        cache_dir=options.out_root.resolve() / "cache",
    )
    runner.prepare(planned.attempts)
    resumed = run_id is not None
    run_id = run_id or new_run_id(spec.name)
    # Absolute: children run in their own workdir and must find the events file.
    run_dir = options.out_root.resolve() / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    started = now_iso()
    if not resumed:
        store.begin_run(
            run_id,
            spec.name,
            str((spec.origin or spec.path).resolve()),  # --resume may run from elsewhere
            _spec_text(spec, options),
            options.runner,
            options.to_dict(),
            {},
        )
    env_holder: dict[str, Any] = {}
    env_thread = _capture_environment_in_background(
        runner, planned.attempts[0], run_dir, env_holder
    )
    gpu_pool = GpuPool(visible_gpus(options.gpus))

    def record(plan: AttemptPlan, result: AttemptResult) -> None:
        store.record_attempt(run_id, plan.cell.id, result)

    progress = Progress(planned, stream=sys.stderr)
    scheduler = Scheduler(
        planned,
        runner,
        run_dir,
        gpu_pool=gpu_pool,
        on_attempt=record,
        progress=progress.update,
        done=done,
    )
    interrupted = False
    install_sigterm_as_interrupt()
    with progress:
        try:
            attempts_by_cell = scheduler.run()
        except KeyboardInterrupt:
            interrupted = True
            attempts_by_cell = scheduler.results_so_far()
    env_thread.join(timeout=None if not interrupted else 5)
    result = RunResult(
        run_id=run_id,
        spec_name=spec.name,
        spec_path=str(spec.origin or spec.path),
        spec_text=_spec_text(spec, options),
        runner=options.runner,
        started=started,
        finished=now_iso(),
        environment=env_holder.get("env", {}),
        cells=judge_cells(planned, attempts_by_cell, interrupted=interrupted),
        command_line=command_line,
        title=str(spec.document.get("title") or spec.name),
        description=str(spec.document.get("description") or ""),
        warnings=tuple(env_holder.get("warnings", ())),
        interrupted=interrupted,
        shard=f"{options.shard[0]}/{options.shard[1]}" if options.shard else "",
    )
    _write_outputs(run_dir, result)
    append_github_summary(result)
    for cell in result.cells:
        store.finish_cell(run_id, cell)
    store.finish_run(
        run_id, "interrupted" if interrupted else "finished", environment=result.environment
    )
    return result


def _capture_environment_in_background(
    runner: Any, plan: AttemptPlan, run_dir: Path, holder: dict[str, Any]
) -> Any:
    """Capture the target environment in a child while the attempts run."""
    import threading

    def capture() -> None:
        from reprospec.doctor import environment_mismatches

        try:
            env = dict(runner.capture_environment(plan, run_dir))
            # What the spec says the incident needs vs what actually ran here.
            mismatches = environment_mismatches(env, plan.environment)
            if mismatches:
                env["environment_mismatch"] = mismatches
            holder["env"] = env
        except Exception as exc:  # the environment table is worth less than the run
            holder["env"] = {"error": f"environment capture failed: {exc}"}

    thread = threading.Thread(target=capture, name="reprospec-env", daemon=True)
    thread.start()
    return thread


def _spec_text(spec: Spec, options: RunOptions) -> str:
    """The spec that ran: its own text, or the overridden document when --set was used."""
    overrides = options.all_overrides()
    if not overrides:
        return spec.source_text
    import yaml

    header = "# resolved from {} with: {}\n".format(
        spec.path.name, " ".join(f"--set {o}" for o in overrides)
    )
    return header + yaml.safe_dump(_plain(spec.document), sort_keys=False, allow_unicode=True)


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists, for yaml.safe_dump."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _write_outputs(run_dir: Path, result: RunResult) -> None:
    from reprospec.report import render
    from reprospec.results import write_run

    write_run(run_dir, result)
    report = render(result, "md", run_dir=run_dir)
    tmp = run_dir / "report.md.tmp"
    tmp.write_text(report, encoding="utf-8")
    tmp.replace(run_dir / "report.md")


def append_github_summary(result: RunResult) -> None:
    """In GitHub Actions, add the run's summary and results table to the job summary page."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from reprospec.progress import VERDICT_MARKS, actual_text
    from reprospec.report.markdown import summary_line

    lines = [
        f"### reprospec: {result.title or result.spec_name}",
        "",
        f"**{summary_line(result)}**",
        "",
        "| | cell | actual | attempts | verdict |",
        "|---|---|---|---|---|",
    ]
    for cell in result.cells:
        rate = cell.rate
        lines.append(
            f"| {VERDICT_MARKS.get(cell.verdict, '?')} | `{cell.cell.id}` | "
            f"{actual_text(cell).replace('|', '/')} | {rate.matched}/{rate.attempts} | "
            f"{cell.verdict} |"
        )
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n\n")
    except OSError as exc:  # the run and its report are written: a summary is a bonus
        print(f"reprospec: warning: cannot append to GITHUB_STEP_SUMMARY ({path}): "
              f"{exc.strerror or exc}", file=sys.stderr)


def _print_outcome(result: RunResult, fmt: str | None, out_root: Path) -> None:
    from reprospec.console import make_console
    from reprospec.progress import results_table

    # With --format the report goes to stdout, so the table moves to stderr.
    console = make_console(sys.stderr if fmt else sys.stdout)
    console.print(results_table(result))
    run_dir = out_root / "runs" / result.run_id
    summary = result.summary
    console.print(
        f"{summary['reproduced']}/{summary['cells']} cell(s) reproduced"
        + (f", {summary['infra_error']} infra-error" if summary["infra_error"] else "")
        + (" (interrupted: partial results)" if result.interrupted else "")
    )
    console.print(f"report: {run_dir / 'report.md'}")
    if fmt:
        from reprospec.report import render

        sys.stdout.write(render(result, fmt, run_dir=run_dir))
        sys.stdout.flush()
