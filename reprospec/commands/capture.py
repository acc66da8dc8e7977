"""`reprospec capture -- CMD` and `reprospec capture --from-log FILE`: a spec from a failure.

Run a failing command through the engine and write the spec that reproduces it,
or read a ticket's pasted log into a spec skeleton (docs/capture.md).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.words import plural

if TYPE_CHECKING:
    from reprospec.capture.command import Request
    from reprospec.capture.hangwait import VerifyWait
    from reprospec.core.results import RunResult


# A command capture's attempts' own limit when --timeout is not given.
DEFAULT_TIMEOUT = "300s"
# The options of a command capture runs, each with what stands for it in a --from-log
# skeleton, which runs nothing: refused there (exit 2), as cli.md's rule for options that
# do not apply says, rather than dropped without a word. -o and --force apply to both.
_RUN_ONLY = (
    ("--repeat", "repeat", "set run.repeat in the spec it writes"),
    ("--timeout", "timeout", "set run.timeout in the spec it writes"),
    ("--no-verify", "verify", "it never reruns the spec it writes"),
    ("--python", "python", "the spec's Python and packages are the log's"),
    ("--out", "out", "no run is stored"),
)


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `capture` verb's arguments."""
    p = sub.add_parser(
        "capture",
        help="run a failing command (or read a ticket's log) and write a spec that reproduces it",
        description="reprospec capture [-o SPEC] [--repeat N] [--timeout T] -- CMD ARGS...\n"
        "reprospec capture --from-log FILE|- [-o SPEC]",
    )
    opt.output(
        p,
        metavar="SPEC",
        help="the spec to write (default: NAME-capture.yaml here, NAME the script's stem; "
        "with --from-log: ticket.yaml)",
    )
    p.add_argument(
        "--from-log",
        metavar="FILE",
        default=None,
        help="read a ticket's pasted text (a file, or - for stdin) instead of running a command",
    )
    # The options of a command capture runs default to None here, so that one given
    # with --from-log (which runs nothing) is told from one left out: `_RUN_ONLY`.
    opt.repeat(
        p,
        default=None,
        help="run the command N times (and the verify rerun as often); with N > 1 the spec "
        "gets a rate bound from the observed rate and run.repeat: N",
    )
    opt.timeout(
        p,
        default=None,
        help="per attempt (default 300s): past it the command is a hang, its stacks taken",
    )
    p.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        default=None,
        help="do not rerun the written spec to check that the same failure comes back",
    )
    p.add_argument("--force", action="store_true", help="overwrite the output spec when it exists")
    opt.python(
        p,
        help="the interpreter a bare `python` in the command runs, and whose packages the "
        "spec pins (default: the one a path in the command names, else this one)",
    )
    opt.out(p, help="where the runs go (default: .reprospec)")
    p.set_defaults(out=None)
    p.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ARGS",
        help="the command to run, after `--`",
    )


def run(args: argparse.Namespace) -> int:
    """Capture; prints what was written, what is left to fill in, and the verify rerun."""
    from reprospec.errors import EXIT_INTERRUPTED, UsageError

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if args.from_log is not None:
        if argv:
            raise UsageError("capture: give either --from-log FILE or a command after `--`")
        given = [
            f"{flag} ({why})" for flag, dest, why in _RUN_ONLY if getattr(args, dest) is not None
        ]
        if given:
            # Taken and dropped without a word, `--repeat 5` wrote a one-attempt spec.
            raise UsageError(
                f"capture --from-log runs nothing, so it takes no {'; '.join(given)}: "
                "those are for `capture -- CMD`"
            )
        return _from_log(args)
    from reprospec.capture.command import VerifyInterrupted, capture, command_request
    from reprospec.commands.options import timeout_seconds
    from reprospec.core.units import positive_duration

    # The --timeout of every verb, read by one function (run's, bisect's, minimize's).
    timeout_s = timeout_seconds(args.timeout)
    if timeout_s is None:
        timeout_s = positive_duration(DEFAULT_TIMEOUT)
    request = command_request(
        argv,
        output=args.output,
        repeat=args.repeat if args.repeat is not None else 1,
        timeout_s=timeout_s,
        verify=args.verify is not False,
        out=args.out if args.out is not None else opt.DEFAULT_OUT,
        force=args.force,
        python=args.python,
    )

    def run_spec(
        path: Path,
        repeat: int,
        observe: bool,
        wait: VerifyWait | None,
        /,
        *,
        shown: Path | None = None,
    ) -> RunResult:
        return _run_spec(path, repeat, observe, request, wait, shown)

    try:
        captured = capture(request, run_spec, lambda line: print(line, file=sys.stderr))
    except VerifyInterrupted as stopped:
        for line in stopped.lines:
            print(line)
        output = shlex.quote(str(request.output))
        print(
            f"reprospec: interrupted in {stopped.rerun}; {request.output} is written from the "
            f"run that ended, but not verified: `reprospec run {output}` checks it",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if captured.lines:
        print(captured.render("text"))
    return captured.exit_code()


def _run_spec(
    path: Path,
    repeat: int,
    observe: bool,
    request: Request,
    wait: VerifyWait | None = None,
    shown: Path | None = None,
) -> RunResult:
    """One run of the spec (capture.command.run_captured), with the live progress `run`
    shows. `wait`: a verify's of a captured hang, said up front: each verify of a hang
    waited the whole timeout with nothing said of it. `shown`: run_captured's."""
    import threading

    from reprospec.capture.command import run_captured
    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.core.safepoint import Deferral
    from reprospec.report.progress import Progress

    print(
        f"reprospec: {'running' if observe else 'verifying'} {(shown or path).name} "
        f"({plural(repeat, 'attempt')}" + (f"; {wait.note()})" if wait else ")"),
        file=sys.stderr,
    )
    # Ctrl-C and SIGTERM set `cancel` first (a KeyboardInterrupt can be swallowed where it
    # lands): the run stops, keeps what ran in the store, and capture writes nothing from
    # a run it did not finish: exit 130, as `run`.
    cancel = threading.Event()
    # Once the run is stored a stop is `cancel` alone, so the run is written whole, where
    # one after its last attempt left it `killed` with no report; raised again
    # once the engine has returned, for capture's own writing.
    deferral = Deferral()
    install_stop_handlers(cancel, deferral)
    try:
        with Progress(repeat, stream=sys.stderr, observes=lambda _cell: observe) as progress:
            result = run_captured(
                path,
                repeat,
                observe,
                request,
                wait,
                progress=progress.update,
                cancel=cancel,
                deferral=deferral,
                shown=shown,
            )
    finally:
        deferral.end()
    if cancel.is_set():
        # Stopped after its last attempt: the run is complete in the store, and capture
        # stops all the same, writing nothing from it, as at any other moment.
        raise KeyboardInterrupt
    return result


def _from_log(args: argparse.Namespace) -> int:
    from reprospec.capture.fromlog import capture_log, is_binary, log_text
    from reprospec.capture.writer import check_output
    from reprospec.errors import EXIT_INTERRUPTED, UsageError

    if args.from_log == "-":
        try:
            # Its bytes, decoded as a file's are (`log_text`): a UTF-16 log piped in.
            stdin = getattr(sys.stdin, "buffer", None)
            text = log_text(stdin.read()) if stdin is not None else sys.stdin.read()
        except KeyboardInterrupt:
            # Nothing is written before the log is read: no draft to speak of (the generic
            # capture message said "the spec is still the first draft" of no file at all).
            print("reprospec: interrupted while reading the log; nothing written", file=sys.stderr)
            return EXIT_INTERRUPTED
        source = "stdin"
    else:
        try:
            text = log_text(Path(args.from_log).read_bytes())
        except OSError as exc:
            raise UsageError(f"--from-log: {args.from_log}: {exc.strerror or exc}") from None
        source = args.from_log
    if not text.strip():
        # An empty log (a failed copy, a wrong file) was written up as a skeleton, exit 0.
        raise UsageError(f"--from-log: {source} is empty: no log to read")
    if is_binary(text):
        raise UsageError(
            f"--from-log: {source} is not text (NUL and undecodable bytes throughout): give "
            "the ticket's pasted log, not a binary file"
        )
    output: Path = args.output or Path("ticket.yaml")
    check_output(output, force=args.force, reads=() if source == "stdin" else (source,))
    for line in capture_log(text, source, output):
        print(line)
    return 0
