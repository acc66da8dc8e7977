"""Argument parsing and dispatch, inside one error handler.

Importing this module stays cheap (no yaml, jsonschema, jinja2, rich, torch):
each verb imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec import __version__
from reprospec.core.formats import SEARCH_VERBS
from reprospec.core.logtext import printable
from reprospec.errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    FatalError,
    InterruptedBeforeRun,
    SpecError,
    suggest,
)

# The verbs, in `reprospec --help`'s order; each is reprospec/commands/<verb>.py, with its
# `add_parser(subparsers)` and its `run(args) -> int`.
COMMANDS = (
    "validate",
    "plan",
    "run",
    "report",
    "env",
    "doctor",
    "schema",
    "materialize",
    "history",
    "compare",
    "merge",
    "slurm",
    "isolate",
    "minimize",
    "amplify",
    "bisect",
    "envs",
    "bundle",
    "capture",
    "completion",
    "docker",
)


def _columns() -> int:
    """The terminal's width, as shutil.get_terminal_size has it (without importing shutil,
    which imports the compression modules: argparse asks for it in every parser)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, **options: int | None) -> None:
        if options.get("width") is None:
            options["width"] = _columns() - 2
        super().__init__(prog, **options)  # type: ignore[arg-type]


# argparse's words for a value not among an option's choices.
_INVALID_CHOICE = re.compile(
    r"argument .*: invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)$"
)


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line, never a traceback."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"reprospec: error: {message}{self._did_you_mean(message)}", file=sys.stderr)
        raise SystemExit(2)

    def _did_you_mean(self, message: str) -> str:
        """For `unrecognized arguments: --repat 3`: the nearest option of this parser or of
        the verb's (argparse reports a verb's unknown options from the top parser); for
        `invalid choice: 'dockr' (choose from ...)`, the nearest choice."""
        choice = _INVALID_CHOICE.match(message)
        if choice is not None:
            # Quoted up to 3.12, bare from 3.12.8 and 3.13: `(choose from local, docker)`.
            choices = [c.strip().strip("'") for c in choice["choices"].split(",")]
            near = suggest(choice["word"], choices)[:1]
            return f"; did you mean {near[0]!r}?" if near else ""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        known = list(self._option_string_actions)
        for verb in _verbs(self).values():
            known.extend(verb._option_string_actions)
        hints = []
        for word in message[len(prefix) :].split():
            name = word.split("=", 1)[0]
            if word.startswith("-") and os.path.lexists(word):
                # A file whose name begins with a dash reads as an option.
                hints.append(f"./{word} or -- {word} (a file of that name)")
            elif name.startswith("--"):
                hints += suggest(name, known)[:1]
        return f"; did you mean {' or '.join(dict.fromkeys(hints))}?" if hints else ""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line: each verb's module declares its own parser (`add_parser`);
    with `only`, just that verb's is built (and only its module imported)."""
    parser = _Parser(
        prog="reprospec",
        description="Turn a machine- and configuration-dependent crash into a rerunnable spec.",
    )
    parser.add_argument("--version", action="version", version=f"reprospec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for verb in COMMANDS:
        # The verb being run is known, so no other verb's parser is built (each costs
        # gettext's search for a translation): the choices hold just that verb.
        if only is None or only == verb:
            importlib.import_module(f"reprospec.commands.{verb}").add_parser(sub)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    from reprospec.commands import options as opt

    if args.command in opt.WRITING_VERBS:
        # Before anything runs: an -o or --out that cannot be written said so only after
        # a whole search, naming no option.
        for flag, dest in (("-o", "output"), ("--out", "out")):
            path = getattr(args, dest, None)
            if isinstance(path, Path):
                folder = dest == "out" or getattr(args, "output_is_folder", True)
                opt.check_writable(flag, path, folder=folder)
                if dest == "out" or args.command in opt.UTF8_OUTPUT_VERBS:
                    opt.check_utf8(flag, path)
    for flag, dest in (("--python", "python"), ("--find-links", "find_links")):
        # Recorded (the run's options, its report's How to reproduce): a path that is not
        # UTF-8 ended the run with an internal UnicodeEncodeError.
        given = getattr(args, dest, None)
        if isinstance(given, (str, Path)):
            opt.check_utf8(flag, Path(given), as_given=True)
    module = importlib.import_module(f"reprospec.commands.{args.command}")
    result: int = module.run(args)
    return result


# Verbs that read one spec and print (`validate`, `plan`): they never run attempts.
_SHORT_VERBS = ("validate", "plan", "schema")
# Verbs that run attempts (pipeline/stages.execute, which releases the collector).
_ENGINE_VERBS = ("run", "isolate", "minimize", "amplify", "bisect", "capture")


# Verbs other tools have, named by what they do here: spelled nothing like the verb, they
# got no did-you-mean (`reprospec show latest`: "unknown command 'show'" alone).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "show": ("report",),
    "view": ("report",),
    "render": ("report",),
    "log": ("history",),
    "logs": ("history",),
    "list": ("history",),
    "ls": ("history",),
    "runs": ("history",),
    "diff": ("compare",),
    "check": ("validate",),
    "lint": ("validate",),
    "test": ("run",),
    "rerun": ("run",),
    "resume": ("run --resume",),
}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's entry point (the console script's and `python -m reprospec`'s,
    through reprospec.__main__.main, which imports this module inside its own guard);
    returns the exit code. A Ctrl-C anywhere in it exits EXIT_INTERRUPTED with one line,
    before the verb's own handler too (the completion hook's and the collector's imports),
    where that one printed a traceback."""
    try:
        # First, before any import of its own: the collector's state is the verb's from
        # here on, not whatever count of young objects the process came in with (a
        # collection in from_cli's import, or not, by a few allocations of any change).
        _hold_collector(argv)
        # Imported here, inside the guard: a Ctrl-C in its import exits as any other.
        from reprospec.core.caller import from_cli

        with from_cli():
            return _main(argv)
    except KeyboardInterrupt:
        print("reprospec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _hold_collector(argv: Sequence[str] | None) -> None:
    """The cyclic garbage collector off for the command line's verbs that only import and
    set up before they end or run attempts: it would only walk the freshly imported
    modules, again and again. The Python API's caller (`argv` given) keeps its own."""
    if argv is not None or len(sys.argv) < 2:
        return
    verb = sys.argv[1]
    if verb in _SHORT_VERBS or verb in _ENGINE_VERBS:
        # Off before the import below, which may itself be what collects.
        import gc

        gc.disable()
    if verb in _ENGINE_VERBS:
        # Until the first attempt: the engine turns the collector back on then, for a long
        # run's garbage (core/collector.py). A short verb (docs/limits.md) keeps it off.
        from reprospec.core import collector

        collector.hold()


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if "_ARGCOMPLETE" in os.environ and argv is None:
        # The shell asks for completions (`reprospec completion SHELL` installed the hook):
        # argcomplete reads the line from the environment, answers and exits.
        from reprospec.commands.completion import complete

        complete(build_parser())
    if words == ["--version"]:
        # What argparse's version action prints, without building every verb's parser
        # (which imports every command's module: 2.3x `import yaml`'s CPU, for one line).
        print(f"reprospec {__version__}")
        return 0
    verb = words[0] if words and words[0] in COMMANDS else None
    if verb is None and words and not words[0].startswith("-"):
        # A mistyped verb: say which one was meant, before argparse lists all twenty.
        # The table first: it says what was meant, where the nearest spelling of `list` is
        # `bisect` and of `runs` is `run`.
        near = list(_SYNONYMS.get(words[0].lower(), ())) or suggest(words[0], COMMANDS)
        hint = f"; did you mean {' or '.join(repr(v) for v in near)}?" if near else ""
        print(f"reprospec: error: unknown command {words[0]!r}{hint}", file=sys.stderr)
        print("reprospec: the commands are listed by `reprospec --help`", file=sys.stderr)
        return 2
    try:
        # argparse's own exits (--help, a bad option: exit 2 with its usage) pass through.
        parser = build_parser(verb)
        args = _parse(parser, verb, words)
        if args.command is None:
            parser.print_help()
            return 2
        code = _dispatch(args)
        # What is still buffered is written here, where a closed pipe is caught below, not
        # at the interpreter's exit (which prints "Exception ignored ..." and exits 120).
        sys.stdout.flush()
        return code
    except FatalError as exc:
        print(printable(_format_fatal(exc)), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        return _interrupted(verb, exc)
    except BrokenPipeError:
        return _closed_pipe()
    except OSError as exc:
        if exc.errno == errno.ENOENT and not exc.filename and _cwd_gone():
            # The cwd asked for (a relative --out, the default .reprospec, made absolute) said
            # only "No such file or directory", naming nothing.
            print(
                "reprospec: the current folder no longer exists (removed after the shell "
                "entered it): cd into one that does",
                file=sys.stderr,
            )
            return 2
        where = f": {exc.filename}" if exc.filename else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            # The machine failed us (a full disk, a failing one): not the user's input.
            print(f"reprospec: {exc.strerror or exc}{where}", file=sys.stderr)
            return EXIT_INFRA
        # A path the user gave that cannot be used (--out is a file, -o is a folder,
        # no permission): their input, not our bug.
        print(f"reprospec: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: keep the traceback for the report, not for the user's face
        if _while_interrupted(exc):
            return _interrupted(verb)
        log = _write_crash_log()
        print(printable(f"reprospec: internal error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        print(f"reprospec: the traceback is in {log}; please report it", file=sys.stderr)
        return 3


def _interrupted(verb: str | None, exc: BaseException | None = None) -> int:
    """Say the command was stopped (and how it resumes), and give its exit code."""
    if verb == "run" and isinstance(exc, InterruptedBeforeRun):
        from reprospec.core.words import interrupted_before_run

        print(interrupted_before_run(exc.resume_id, exc.out), file=sys.stderr)
        return EXIT_INTERRUPTED
    # A search stopped before it could say so itself: its stored probes still resume.
    again = "; run the same command again to resume" if verb in SEARCH_VERBS else ""
    if verb == "capture":
        again = "; the spec is still the first draft: capture again with --force"
    print(f"reprospec: interrupted{again}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _while_interrupted(exc: BaseException) -> bool:
    """Whether `exc` was raised while a Ctrl-C unwound: code that cleans up on the way out
    and is not safe against one (argparse's parse_intermixed_args restores each option's
    `save_nargs`, which a Ctrl-C before all were saved left unset) fails with an error of
    its own, which read as reprospec's bug, exit 3, where the user had stopped it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__context__
    return False


def _cwd_gone() -> bool:
    """Whether the process's working folder has been removed."""
    try:
        Path.cwd()
    except FileNotFoundError:
        return True
    return False


def _closed_pipe() -> int:
    """The reader of stdout has gone (`plan | head`): write nothing more, and exit as a
    program the pipe's SIGPIPE ends does (Python ignores the signal and raises instead).

    stdout is pointed at /dev/null first: what is still buffered in it would otherwise
    fail again at the interpreter's exit, which then prints "Exception ignored ...
    BrokenPipeError" and exits 120 (the Python documentation's note on SIGPIPE).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # stdout without a descriptor (a test's capture): nothing to flush at exit
    return EXIT_CLOSED_PIPE


def _parse(
    parser: argparse.ArgumentParser, verb: str | None, words: list[str]
) -> argparse.Namespace:
    """The words as the verb's own parser reads them, options anywhere among its arguments.

    Through the top parser, argparse takes a verb's positionals in one go: `merge A --out X B`
    and `slurm status --format json RUN` were refused ("unrecognized arguments: B"), with the
    top parser's usage. The verb's parser, intermixed, reads them as written and says its own
    usage when refusing. A verb whose positional takes the rest (`capture -- CMD`) cannot be
    intermixed (argparse refuses), and keeps argparse's order.
    """
    if verb is None:
        return parser.parse_args(words)
    own = _verbs(parser)[verb]
    takes_the_rest = (argparse.REMAINDER, argparse.PARSER)
    rest = any(action.nargs in takes_the_rest for action in own._get_positional_actions())
    words = [verb, *_negative_durations(own, words[1:], rest)]
    if rest:
        return parser.parse_args(words)
    _refuse_foreign_options(own, verb, words[1:])
    if "--" in words[1:]:
        # `--` ends the options (a spec named `-x.yaml`): intermixed, Python 3.11's argparse
        # dropped what follows it, "unrecognized arguments: -x.yaml". Options
        # then come before it, as POSIX has them.
        args = own.parse_args(words[1:])
        args.command = verb
        return args
    args = own.parse_intermixed_args(words[1:])
    args.command = verb
    return args


def _refuse_foreign_options(own: argparse.ArgumentParser, verb: str, words: list[str]) -> None:
    """Refuse an option of other verbs that this verb does not have, as typed, naming the
    verbs that have it: `run --budget 0 x` read the 0 as the spec and said `unrecognized
    arguments: --budget x; did you mean --set?`, of an option isolate, minimize, amplify and
    bisect take. Up to `--`; an abbreviation of one of this verb's own options is its own
    (argparse's allow_abbrev), and a name no verb has is left to argparse's did-you-mean."""
    mine = list(own._option_string_actions)
    if "-h" in words or "--help" in words:
        return  # argparse's help comes first, as it would before its own refusal
    parsers: list[tuple[str, argparse.ArgumentParser]] = []  # built at the first unknown
    for at, word in enumerate(words):
        if word == "--":
            return
        name, equals, _ = word.partition("=")
        if not name.startswith("--") or any(option.startswith(name) for option in mine):
            continue
        parsers = parsers or _verb_parsers(verb)
        others = [
            (other, parser._option_string_actions[name])
            for other, parser in parsers
            if name in parser._option_string_actions
        ]
        if not others:
            continue
        action = others[0][1]
        # Its value as typed, where the option takes one (`--budget 0`, `--budget=0`).
        takes = not equals and action.nargs != 0 and at + 1 < len(words)
        typed = " ".join(words[at : at + 2] if takes else [word])
        names = [other for other, _ in others]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        own.error(f"{typed}: {name} is an option of {listed}, not of {verb}")


def _verb_parsers(verb: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every verb's parser but `verb`'s, in `reprospec --help`'s order (each verb's module
    imported: only to word a refusal)."""
    # Built again, whole: the parser that read the words was built with `only=verb`
    # (build_parser), and holds no other verb's parser.
    verbs = _verbs(build_parser())
    return [(name, verbs[name]) for name in COMMANDS if name != verb]


def _verbs(parser: argparse.ArgumentParser) -> Mapping[str, argparse.ArgumentParser]:
    """The verbs' parsers `parser` holds, by name ({} for a verb's own parser, which holds
    none): the top parser's, as build_parser built them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: Mapping[str, argparse.ArgumentParser] = action.choices
            return choices
    return {}


# A negative duration's word (`-5s`, `-1.5m`): argparse reads one as an option, not a value.
_NEGATIVE = re.compile(r"-\.?\d")


def _negative_durations(own: argparse.ArgumentParser, words: list[str], rest: bool) -> list[str]:
    """`--timeout -5s` as `--timeout=-5s`, for every option whose value is a DURATION:
    argparse takes `-5s` for an option and said "expected one argument", where the value's
    own check says what is wrong with it. Up to `--`, and for a verb whose positional
    takes the rest (`capture CMD ...`) up to its first word: the command's own words are
    not touched."""
    out: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word == "--" or (rest and not word.startswith("-")):
            break
        action = own._option_string_actions.get(word)
        following = words[at + 1] if at + 1 < len(words) else ""
        if action is not None and action.metavar == "DURATION" and _NEGATIVE.match(following):
            out.append(f"{word}={following}")
            at += 2
            continue
        out.append(word)
        at += 1
        if action is not None and action.nargs != 0 and following and at < len(words):
            out.append(following)  # the option's value, whatever it looks like
            at += 1
    return out + words[at:]


def _format_fatal(exc: FatalError) -> str:
    """Located spec problems one per line (`file:line:col: ...`); anything else `reprospec: ...`."""
    if isinstance(exc, SpecError):
        return "\n".join(exc.problems)
    return f"reprospec: {exc}"


def _write_crash_log() -> Path:
    import tempfile
    import traceback

    fd, name = tempfile.mkstemp(prefix="reprospec-internal-error-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(traceback.format_exc())
    return Path(name)


if __name__ == "__main__":
    sys.exit(main())
