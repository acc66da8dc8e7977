"""`reprospec run SPEC`: the CLI over `pipeline.run`, with live progress, a table and exit codes."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from reprospec.core.logtext import printable
from reprospec.core.results import RunResult
from reprospec.core.runoptions import RunOptions, Shard
from reprospec.errors import UsageError

if TYPE_CHECKING:
    from reprospec.plan.run import RunPlan


def run(args: argparse.Namespace) -> int:
    from reprospec.outcome.judge import exit_code_for
    from reprospec.pipeline import resume as resumption
    from reprospec.pipeline import stages
    from reprospec.plan.run import plan_run
    from reprospec.report.progress import Progress
    from reprospec.spec.load import load_spec
    from reprospec.store.refs import is_latest, resolve_run_id

    out = Path(args.out)
    resume_id: str | None = args.resume
    if resume_id is not None and is_latest(resume_id):
        resume_id = resolve_run_id(resume_id, out)
    if resume_id is not None and Path(resume_id).is_dir():
        # `--resume .reprospec/runs/ID`: the folder names both the run and its store.
        folder = Path(resume_id).resolve()
        resume_id, out = folder.name, folder.parent.parent
    resume: stages.Resume | None = None
    # What the user named: a report or a bundle is shown and confirmed before it runs.
    given: str | None = args.spec
    if resume_id is not None:
        spec, options, done = resumption.load(resume_id, out, jobs=args.jobs, spec_path=args.spec)
        resume = stages.Resume(resume_id, done)
    else:
        if args.spec is None:
            raise UsageError("run needs a SPEC (or --resume RUN)")
        if _is_bundle(args.spec):
            from_bundle(args, out)
        options = options_from_args(args, command_line=_command_line())
        # The spec is validated before anything is written: a bad spec creates no store.
        spec = load_spec(args.spec, options.overrides)
    plan = plan_run(spec, options)
    if not plan.attempts:
        raise UsageError("nothing to run: this shard holds no attempts")
    if resume is None and given and (is_report(given) or _is_bundle(given)) and not args.yes:
        confirm_foreign(given, plan)
    cancel = threading.Event()
    install_stop_handlers(cancel)
    with Progress(len(plan.attempts), stream=sys.stderr) as progress:
        result = stages.execute(
            plan, options, progress=progress.update, resume=resume, cancel=cancel
        )
    print_outcome(result, args.format, out)
    write_github_summary(result)
    return exit_code_for(result)


def is_report(path: str | None) -> bool:
    """A markdown file: a report (or any document) that embeds the spec to run."""
    return path is not None and Path(path).suffix.lower() == ".md"


def confirm_foreign(path: str, plan: RunPlan, stdin: TextIO | None = None) -> None:
    """Show what a report or a bundle would run, then run it only when the person at the
    terminal says yes. Both come from tickets: what they run must be seen before it runs.
    Without a terminal to ask on, nothing runs (exit 2) unless `--yes` was given."""
    from reprospec.commands.plan import plan_text

    what = "a report" if is_report(path) else "a bundle"
    stdin = stdin or sys.stdin
    sys.stderr.write(
        f"reprospec: {printable(path)} is {what}: running it runs the spec it holds:\n\n"
        + plan_text(plan.spec, plan.repeat, plan.first_attempts())
    )
    if not stdin.isatty():
        raise UsageError(
            f"not run: {path} is {what} and there is no terminal to ask on; read the plan "
            "above and pass --yes to run it"
        )
    sys.stderr.write("\nRun it? [y/N]: ")
    sys.stderr.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise UsageError(f"not run: {path} (answered no)")


def ask(question: str, path: str, stdin: TextIO | None = None) -> None:
    """Ask the person at the terminal `question`; without one, or on no, nothing runs."""
    stdin = stdin or sys.stdin
    sys.stderr.write(f"reprospec: {question}\n")
    if not stdin.isatty():
        raise UsageError(f"not run: {path}: there is no terminal to ask on; pass --yes to run it")
    sys.stderr.write("Unpack it? [y/N]: ")
    sys.stderr.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise UsageError(f"not run: {path} (answered no)")


def from_bundle(args: argparse.Namespace, out: Path) -> None:
    """Unpack a bundle (checked, once, under OUT/bundles/) and run its spec with the original
    run's `-m` filters, `--repeat`, `--timeout` and observe mode unless given here."""
    from reprospec.export.bundle import PROMPT_BYTES, scan, unpack

    # The raw headers first (bounded): a large bundle is confirmed before it is written
    # out, since its plan can only be shown once it is.
    scanned = scan(Path(args.spec))
    if scanned.total_bytes > PROMPT_BYTES and not args.yes:
        ask(
            f"{printable(args.spec)} unpacks {scanned.total_bytes >> 20} MiB "
            f"({scanned.members} members) into {printable(str(out / 'bundles'))} before its "
            "plan can be shown",
            args.spec,
        )
    unpacked = unpack(Path(args.spec), out / "bundles")
    print(f"reprospec: bundle unpacked in {unpacked.root}", file=sys.stderr)
    args.spec = str(unpacked.spec)
    if not args.matrix:
        args.matrix = list(unpacked.matrix_filters)
    if args.repeat is None:
        args.repeat = unpacked.repeat
    if args.timeout is None and unpacked.timeout_s is not None:
        args.timeout = f"{unpacked.timeout_s:g}"
    args.observe = bool(getattr(args, "observe", False)) or unpacked.observe
    args.overrides = [*unpacked.overrides, *args.overrides]


def options_from_args(args: argparse.Namespace, command_line: str = "") -> RunOptions:
    """RunOptions from `run`'s arguments (the same options the Python API takes)."""
    from reprospec.core.units import parse_duration

    timeout_s = None
    if args.timeout is not None:
        try:
            timeout_s = parse_duration(args.timeout)
        except ValueError as exc:
            raise UsageError(f"--timeout: {exc}") from None
        if timeout_s <= 0:
            raise UsageError(f"--timeout: expected a duration > 0, got {args.timeout!r}")
    return RunOptions(
        runner=args.runner,
        jobs=args.jobs,
        repeat=args.repeat,
        timeout_s=timeout_s,
        matrix_filters=tuple(args.matrix),
        overrides=tuple(args.overrides),
        out=Path(args.out),
        python=args.python,
        gpus=args.gpus,
        shard=Shard.parse(args.shard) if args.shard else None,
        find_links=args.find_links,
        keep_cores=args.keep_cores,
        command_line=command_line,
        observe=bool(getattr(args, "observe", False)),
        preload=_preload(getattr(args, "preload", None)),
    )


def _preload(text: str | None) -> tuple[str, ...] | None:
    """`--preload torch,numpy` -> ("torch", "numpy"); `none` -> (); not given -> None."""
    if text is None:
        return None
    if text.strip().lower() in ("", "none"):
        return ()
    return tuple(name.strip() for name in text.split(",") if name.strip())


# Options that only say where this machine keeps things or how it prints them:
# a person reproducing the bug elsewhere needs none of them.
_LOCAL_OPTIONS = ("--out", "--format", "--resume", "--python", "--find-links")
_LOCAL_FLAGS = ("--keep-cores",)


def _command_line() -> str:
    """The command to show under "How to reproduce"."""
    words: list[str] = []
    skip = False
    for word in sys.argv[1:]:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in _LOCAL_FLAGS:
            continue
        if name in _LOCAL_OPTIONS:
            skip = "=" not in word
            continue
        words.append(word)
    return "reprospec " + shlex.join(words) if words else "reprospec run"


def install_stop_handlers(cancel: threading.Event) -> None:
    """SIGTERM (CI cancelling a job, a Slurm time limit) and Ctrl-C stop a run: partial
    report, exit 130. `cancel` is set first, in the handler, so an attempt that the same
    signal killed is known to have been stopped, not to have crashed."""

    def handler(_signum: int, _frame: object) -> None:
        cancel.set()
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def write_github_summary(result: RunResult) -> None:
    """In GitHub Actions, add the run's summary and results table to the job summary page."""
    import os

    from reprospec.report import render

    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(render(result, "github"))
    except OSError as exc:  # the run and its report are written: a summary is a bonus
        print(
            f"reprospec: warning: cannot append to GITHUB_STEP_SUMMARY ({path}): "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )


def print_outcome(result: RunResult, fmt: str | None, out: Path) -> None:
    """The results table and where the report is; with --format, the report on stdout."""
    from reprospec.report import render
    from reprospec.report.console import make_console
    from reprospec.report.progress import results_table
    from reprospec.store.runfolder import RunFolder

    # With --format the report goes to stdout, so the table moves to stderr.
    console = make_console(sys.stderr if fmt else sys.stdout)
    console.print(results_table(result))
    folder = RunFolder.of(out, result.run_id)
    summary = result.summary
    if result.observes:
        from reprospec.report.signatures import outcome_groups, outcome_lines

        groups = outcome_groups(result)
        console.print(
            f"{summary['cells']} cell(s) observed, {len(groups)} outcome(s)"
            + (f", {summary['infra_error']} infra-error" if summary["infra_error"] else "")
            + (" (interrupted: partial results)" if result.interrupted else "")
        )
        for line in outcome_lines(groups):
            console.print(printable(line), markup=False, highlight=False)
    else:
        console.print(
            f"{summary['reproduced']}/{summary['cells']} cell(s) reproduced"
            + (f", {summary['undecided']} undecided" if summary["undecided"] else "")
            + (f", {summary['infra_error']} infra-error" if summary["infra_error"] else "")
            + (" (interrupted: partial results)" if result.interrupted else "")
        )
    console.print(f"report: {folder.report_md}", markup=False, highlight=False)
    from reprospec.core.logtext import clean_log

    # What went wrong around the run (the store deleted under it, the environment capture).
    for warning in result.warnings:
        print(f"reprospec: warning: {clean_log(warning)}", file=sys.stderr)
    if fmt:
        sys.stdout.write(render(result, fmt))
        sys.stdout.flush()


def _is_bundle(path: str | Path) -> bool:
    # By name first: the bundle module (tarfile, hashlib) is imported only for an archive.
    if not str(path).lower().endswith((".tar.gz", ".tgz")):
        return False
    from reprospec.export.bundle import is_bundle

    return is_bundle(path)
