"""`reprospec run SPEC`: the CLI over `pipeline.run`, with live progress, a table and exit codes.

Every input (a spec file, a report.md, a bundle, a `--resume` reference) is read into one
frozen `RunRequest` before anything runs; the parsed arguments are never changed.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from reprospec.commands import options as opt
from reprospec.core.formats import BUNDLE_SUFFIXES, REPORT_FORMATS
from reprospec.core.frozen import frozen
from reprospec.core.logtext import printable
from reprospec.errors import SpecError, UsageError

if TYPE_CHECKING:
    from reprospec.core.inputs import Spec
    from reprospec.core.results import RunResult
    from reprospec.core.runoptions import RunOptions
    from reprospec.pipeline.stages import Resume
    from reprospec.plan.run import RunPlan


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `run` verb's arguments."""
    p = sub.add_parser("run", help="run a spec: every cell, a table, a report")
    opt.spec(
        p,
        optional=True,
        help="a spec file, a report.md that embeds one, or a bundle (.tar.gz from `reprospec "
        "bundle`; optional with --resume)",
    )
    opt.selection(p)
    p.add_argument(
        "--observe",
        action="store_true",
        help="ignore expect: record what each cell does and group cells by outcome (exit 0 "
        "unless something could not run); a spec without expect always observes",
    )
    opt.runner(p, default=None)  # None: a bundle's own runner (a venv run's) applies
    opt.jobs(p)
    opt.repeat(p)
    opt.first_attempt(p)
    opt.timeout(p)
    opt.out(p)
    opt.output_format(
        p,
        REPORT_FORMATS,
        default=None,
        help="also print the report in this format to stdout (html: one self-contained page)",
    )
    opt.python(p)
    opt.gpus(p)
    p.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only shard K of N of the attempts (K from 1); `merge` joins the shards",
    )
    p.add_argument(
        "--resume",
        default=None,
        # `--resume "$RUN"` with RUN unset: '' was read as the current folder's name.
        type=opt.nonempty("a run id, `latest` or a run folder"),
        metavar="RUN",
        help="finish an interrupted run without redoing finished attempts "
        "(its id, `latest` or `latest~N`)",
    )
    opt.find_links(p)
    opt.keep_cores(p)
    opt.preload_option(
        p,
        help="fork each attempt from a server that imported these modules once (overrides "
        "run.preload; 'none' turns it off); attempts a fork could change run fresh",
    )
    p.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="run a report.md or a bundle without showing its plan and asking first (needed when "
        "stdin is not a terminal)",
    )


@frozen
class RunRequest:
    """What one `reprospec run` was asked, every input read and checked: the spec loaded
    (from its file, a report or an unpacked bundle, or again for `--resume`), the options
    it runs with, and what to do around the run."""

    spec: Spec
    options: RunOptions
    # The results store the run goes to (`--resume FOLDER` names its own).
    out: Path
    # `--resume`: the run continued and the attempts it already finished.
    resume: Resume | None = None
    # A report or a bundle the user named without --yes: its plan is shown and confirmed.
    confirm: str | None = None
    # `--format`: the report also printed to stdout.
    format: str | None = None
    # A report of a command spec read away from its spec file: what to say when it fails.
    report_note: str | None = None


def run(args: argparse.Namespace) -> int:
    from reprospec.outcome.judge import exit_code_for
    from reprospec.plan.run import plan_run
    from reprospec.report.progress import print_outcome

    request = read_request(args)
    plan = plan_run(request.spec, request.options)
    shard = request.options.shard
    if not plan.attempts and shard is not None and request.resume is None:
        # Fewer attempts than shards (an array sized for the matrix, one cell chosen): the
        # shard records an empty run, so `merge` finds all N, where exit 2 and no run left
        # merge refusing a missing shard that no command could make.
        print(
            f"reprospec: shard {shard} holds no attempts (the run has fewer attempts than "
            "shards): an empty run is recorded for `merge`",
            file=sys.stderr,
        )
    if request.confirm is not None:
        confirm_foreign(request.confirm, plan)
    cancel = threading.Event()
    result = execute(
        plan,
        request.options,
        resume=request.resume,
        whole=reads_whole_cells(request.format),
        cancel=cancel,
    )
    print_outcome(result, request.format, request.out)
    write_github_summary(result)
    write_github_annotations(result, request.spec, request.spec.path)
    if result.interrupted:
        from reprospec.core.words import resume_command

        print(
            f"reprospec: interrupted; finish the run with: "
            f"{resume_command(result.run_id, request.out)}",
            file=sys.stderr,
        )
    code = exit_code_for(result)
    if code != 0 and request.report_note is not None:
        print(request.report_note, file=sys.stderr)
    if cancel.is_set() and not result.interrupted:
        # Stopped once every attempt had ended: the run is complete and written, and the
        # stop is still obeyed, as a script that chains the next step expects.
        from reprospec.errors import EXIT_INTERRUPTED

        print(
            "reprospec: interrupted after the last attempt had ended: the run is complete "
            "(nothing to resume)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return code


def execute(
    plan: RunPlan,
    options: RunOptions,
    *,
    resume: Resume | None = None,
    whole: bool = True,
    cancel: threading.Event | None = None,
) -> RunResult:
    """One run of `plan` with the progress lines on stderr; Ctrl-C (or SIGTERM) stops it
    and the result says so. `run`'s, and `bundle --verify`'s rerun of the unpacked spec.

    Once the run is in the store, a stop is not raised but set in `cancel` (the caller's,
    to read after its own output) for the rest of the command: the engine writes what ran,
    and the caller prints its table and resume command, whole. A stop after the
    last attempt leaves the result complete, `cancel` set."""
    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.core.safepoint import Deferral
    from reprospec.pipeline import stages
    from reprospec.report.progress import Progress

    cancel = cancel if cancel is not None else threading.Event()
    deferral = Deferral()
    install_stop_handlers(cancel, deferral)
    observes = plan.expectations.of
    with Progress(
        len(plan.attempts),
        stream=sys.stderr,
        observes=lambda cell: observes(cell).observes,
        gone=cancel.set,
    ) as progress:
        return stages.execute(
            plan,
            options.with_changes(deferral=deferral),
            progress=progress.update,
            resume=resume,
            cancel=cancel,
            whole=whole,
        )


def report_note(named: str, spec: Spec) -> str | None:
    """For `run report.md` of a command spec whose spec file is not where the report says
    (the report was sent elsewhere): the report embeds the spec, not the scripts and files
    its command runs, so a failure may only mean they are missing here. A bundle carries
    them; the note says how to make one, and is printed only when the run did not go as
    expected."""
    if not is_report(named) or "command" not in spec.document or spec.origin is not None:
        return None
    return (
        f"note: {printable(named)} embeds the spec but not the files its command runs; they "
        f"were looked for in {printable(str(spec.base_dir.resolve()))}. To rerun it where "
        "they are missing, pack the run where it was made, with its workdir's files: "
        "`reprospec bundle RUN -o run.tar.gz` (RUN: that run's folder or id), then "
        "`reprospec run run.tar.gz` here"
    )


def run_folder_hint(path: str) -> str | None:
    """For `run .reprospec/runs/ID/spec.yaml`: the copy's relative paths point nowhere.

    A run folder keeps a copy of the spec beside results.json and report.md; its
    `workdir` and files are relative to where the spec was, not to the run folder.
    """
    from reprospec.store.runfolder import RunFolder

    folder = RunFolder(Path(path).parent)
    if Path(path) != folder.spec_yaml or not (
        folder.results_json.is_file() and folder.report_md.is_file()
    ):
        return None
    return (
        f"note: {path} is the copy of the spec kept in the run folder {folder.path}; its "
        f"relative paths are read from there. Rerun it with `reprospec run {folder.report_md}` "
        f"(the spec from where it was run), or pack the run for elsewhere with "
        f"`reprospec bundle {folder.path} -o run.tar.gz`"
    )


def read_request(args: argparse.Namespace) -> RunRequest:
    """`run`'s arguments as one request; a bad spec, option or bundle is refused here,
    before a run folder or a store is written (a bundle is unpacked under OUT/bundles/)."""
    from reprospec.spec.load import load_spec

    if args.resume is not None:
        return _resumed(args.resume, args)
    named: str | None = args.spec
    if named is None:
        raise UsageError("run needs a SPEC (or --resume RUN)")
    out = Path(args.out)
    options = opt.run_options(args, command_line=_command_line())
    path = named
    bundle = _is_bundle(named)
    if bundle:
        from reprospec.export.bundle import PROMPT_BYTES, scan, unpack

        # The raw headers first (bounded): a large bundle is confirmed before it is written
        # out, since its plan can only be shown once it is.
        scanned = scan(Path(named))
        if scanned.total_bytes > PROMPT_BYTES and not args.yes:
            ask(
                f"{printable(named)} unpacks {scanned.total_bytes >> 20} MiB "
                f"({scanned.members} members) into {printable(str(out / 'bundles'))} before its "
                "plan can be shown",
                named,
            )
        unpacked = unpack(Path(named), out / "bundles")
        print(f"reprospec: bundle unpacked in {unpacked.root}", file=sys.stderr)
        options = unpacked.run_options(options, runner_given=args.runner is not None)
        path = str(unpacked.spec)
    # The spec is validated before anything is written: a bad spec creates no store.
    try:
        spec = load_spec(path, options.overrides)
    except SpecError as exc:
        hint = run_folder_hint(path)
        if hint is None:
            raise
        raise SpecError([*exc.problems, hint]) from None
    foreign = (bundle or is_report(named)) and not args.yes
    return RunRequest(
        spec=spec,
        options=options,
        out=out,
        confirm=named if foreign else None,
        format=args.format,
        report_note=report_note(named, spec),
    )


def _resumed(reference: str, args: argparse.Namespace) -> RunRequest:
    """`--resume RUN`: the interrupted run's spec and options (only `-j` may change; any
    other option that would change what runs is refused, naming it)."""
    from reprospec.pipeline import resume as resumption
    from reprospec.pipeline.stages import Resume

    run_id, out = resumption.resolve(reference, Path(args.out))
    spec, options, done = resumption.load(
        run_id,
        out,
        jobs=args.jobs,
        spec_path=args.spec,
        asked=opt.run_options(args),
        given=_given_kept(args),
    )
    return RunRequest(
        spec=spec, options=options, out=out, resume=Resume(run_id, done), format=args.format
    )


def _given_kept(args: argparse.Namespace) -> frozenset[str]:
    """The options a resumed run keeps (`resume.KEPT`) that this command line gave: each
    differs from its parser default (None, an empty list, False) only when given."""
    given = {
        "matrix_filters": args.matrix,
        "overrides": args.overrides,
        "observe": args.observe,
        "runner": args.runner,
        "repeat": args.repeat,
        "first_attempt": args.first_attempt,
        "timeout_s": args.timeout,
        "python": args.python,
        "gpus": args.gpus,
        "shard": args.shard,
        "find_links": args.find_links,
        "keep_cores": args.keep_cores,
        "preload": args.preload,
    }
    return frozenset(name for name, value in given.items() if value not in (None, [], False))


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


# Options that only say where this machine keeps things or how it prints them:
# a person reproducing the bug elsewhere needs none of them.
_LOCAL_OPTIONS = ("--out", "--format", "--resume", "--python", "--find-links")
_LOCAL_FLAGS = ("--keep-cores",)


def _command_line() -> str:
    """The command to show under "How to reproduce"."""
    from reprospec.core.logtext import shell_join
    from reprospec.core.runoptions import without_options

    words = without_options(sys.argv[1:], _LOCAL_OPTIONS, _LOCAL_FLAGS, cut=True)
    return "reprospec " + shell_join(words) if words else "reprospec run"


def _github_summary_path() -> str | None:
    """Where GitHub Actions wants the job summary (`GITHUB_STEP_SUMMARY`), or None."""
    import os

    return os.environ.get("GITHUB_STEP_SUMMARY") or None


def in_github_actions() -> bool:
    """`GITHUB_ACTIONS=true`: failing cells are annotated on their spec lines."""
    import os

    return os.environ.get("GITHUB_ACTIONS") == "true"


def reads_whole_cells(fmt: str | None) -> bool:
    """Whether a run's end prints more of its cells than `print_outcome`'s table and
    report.md read (another `--format`; GitHub's summary and annotations): otherwise the
    run holds only what those two read (`stages.execute(whole=False)`), as a large
    matrix must (docs/performance.md, "Memory and the run folder as the matrix grows")."""
    return fmt not in (None, "md") or _github_summary_path() is not None or in_github_actions()


def write_github_summary(result: RunResult) -> None:
    """In GitHub Actions, add the run's summary and results table to the job summary page."""
    path = _github_summary_path()
    if path is None:
        return
    from reprospec.report import render

    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(render(result, "github"))
    except OSError as exc:  # the run and its report are written: a summary is a bonus
        print(
            f"reprospec: warning: cannot append to GITHUB_STEP_SUMMARY ({path}): "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )


def write_github_annotations(result: RunResult, spec: Spec | None, file: Path) -> None:
    """In GitHub Actions (`GITHUB_ACTIONS=true`), an `::error` annotation on the spec line of
    each cell that failed, so a pull request shows it where the cell is written: the lines of
    `spec`, read from `file`; without one (a merge whose spec file no longer loads), each
    annotation is on the file's first line; and on none where the file is not there (a merge
    job whose checkout lacks the spec the shards ran), where they named a file GitHub could
    not show."""
    import os

    if not in_github_actions():
        return
    # Imported only in GitHub Actions: a run elsewhere never needs them.
    from reprospec.report.github import error_annotations
    from reprospec.spec.lines import cell_lines

    path = file.resolve()
    # GitHub resolves an annotation's file against the repository's root.
    workspace = os.environ.get("GITHUB_WORKSPACE")
    for root in (Path(workspace) if workspace else None, Path.cwd()):
        if root is not None and path.is_relative_to(root.resolve()):
            path = path.relative_to(root.resolve())
            break
    lines = cell_lines(spec, [cell.cell for cell in result.cells]) if spec is not None else {}
    named = path.as_posix() if file.is_file() else ""
    # On stderr, which the runner reads for commands as it does stdout: `--format json`
    # keeps stdout a document.
    for line in error_annotations(result, named, lines):
        print(line, file=sys.stderr, flush=True)


def _is_bundle(path: str | Path) -> bool:
    # By name first: the bundle module (tarfile, hashlib) is imported only for an archive.
    if not str(path).lower().endswith(BUNDLE_SUFFIXES):
        return False
    from reprospec.export.bundle import is_bundle

    return is_bundle(path)
