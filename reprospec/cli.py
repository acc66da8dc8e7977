"""Argument parsing and dispatch, inside one error handler.

Importing this module stays cheap (no yaml, jsonschema, jinja2, rich, torch):
each verb imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from reprospec import __version__
from reprospec.core.bounds import MAX_PARALLEL, MAX_REPEAT
from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, FatalError, SpecError
from reprospec.runners import RUNNERS

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
    "bisect",
    "envs",
    "bundle",
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


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line, never a traceback."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"reprospec: error: {message}", file=sys.stderr)
        raise SystemExit(2)


class _Unused:
    """Stands in for the parser of a verb that is not the one being run: its arguments are
    not built (building all fifteen verbs' costs a tenth of `validate`'s start-up)."""

    def add_argument(self, *_args: object, **_kwargs: object) -> None:
        return None


class _OnlyOne:
    """The subparsers action, building only the verb `only` in full (None: every verb)."""

    def __init__(self, sub: argparse._SubParsersAction[_Parser], only: str | None) -> None:
        self.sub = sub
        self.only = only

    def add_parser(
        self, name: str, *, help: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        if self.only is None or self.only == name:
            return self.sub.add_parser(name, help=help, description=description)
        # The verb being run is known, so no other verb's parser is ever asked for (each
        # costs gettext's search for a translation): the choices hold just that verb.
        return cast(argparse.ArgumentParser, _Unused())

    def wants(self, name: str) -> bool:
        """Whether `name`'s parser is built (its module need not be imported otherwise)."""
        return self.only is None or self.only == name


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, just that verb's arguments are built."""
    parser = _Parser(
        prog="reprospec",
        description="Turn a machine- and configuration-dependent crash into a rerunnable spec.",
    )
    parser.add_argument("--version", action="version", version=f"reprospec {__version__}")
    actions = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    only_one = _OnlyOne(actions, only)
    sub = cast("argparse._SubParsersAction[_Parser]", only_one)

    p = sub.add_parser("validate", help="check spec files (or every *.yaml in folders)")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="spec files, or folders searched for *.yaml and *.yml files",
    )

    p = sub.add_parser("plan", help="show the cells and exactly what each would run")
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a report.md that embeds one")
    p.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text (default), json (every cell's plan) or github (a CI job matrix)",
    )
    _add_selection_options(p)

    p = sub.add_parser("run", help="run a spec: every cell, a table, a report")
    p.add_argument(
        "spec",
        metavar="SPEC",
        nargs="?",
        help="a spec file, a report.md that embeds one, or a bundle (.tar.gz from `reprospec "
        "bundle`; optional with --resume)",
    )
    _add_selection_options(p)
    p.add_argument(
        "--observe",
        action="store_true",
        help="ignore expect: record what each cell does and group cells by outcome (exit 0 "
        "unless something could not run); a spec without expect always observes",
    )
    p.add_argument(
        "--runner",
        choices=tuple(RUNNERS),
        default="local",
        help="run attempts as local processes (default) or in fresh docker containers",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_at_most(MAX_PARALLEL),
        default=None,
        metavar="N",
        help="attempts at once (default: the spec's run.parallel, else 1)",
    )
    p.add_argument(
        "--repeat",
        type=_at_most(MAX_REPEAT),
        default=None,
        metavar="N",
        help="attempts per cell (overrides run.repeat)",
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="DURATION",
        help="per-attempt timeout like 90s or 5m (overrides run.timeout)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="the results store and run folders (default: .reprospec)",
    )
    p.add_argument(
        "--format",
        choices=("md", "html", "json", "junit"),
        default=None,
        help="also print the report in this format to stdout (html: one self-contained page)",
    )
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="local runner's interpreter (default: this one)",
    )
    p.add_argument(
        "--gpus",
        default=None,
        metavar="LIST",
        help="GPU ids to hand out (default: CUDA_VISIBLE_DEVICES or all visible)",
    )
    p.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only shard K of N of the attempts (K from 1); `merge` joins the shards",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN",
        help="finish an interrupted run without redoing finished attempts "
        "(its id, `latest` or `latest~N`)",
    )
    p.add_argument(
        "--find-links",
        type=Path,
        default=None,
        metavar="DIR",
        help="docker runner: a wheelhouse for images built offline",
    )

    p.add_argument(
        "--keep-cores",
        action="store_true",
        help="keep crashed processes' core files in their attempt folders (gdb read them)",
    )
    p.add_argument(
        "--preload",
        default=None,
        metavar="MOD,...",
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

    p = sub.add_parser("report", help="render a finished run again")
    p.add_argument(
        "run",
        metavar="RUN",
        help="a run folder, its results.json, a run id (or a unique prefix) under --out, "
        "`latest` (the newest run) or `latest~N` (N runs before it)",
    )
    p.add_argument(
        "--format",
        choices=("md", "html", "junit", "json"),
        default="md",
        help="markdown bug report (default), a self-contained HTML page with a sortable table "
        "and a heatmap, JUnit XML or JSON",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead of stdout",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="where run ids are looked up (default: .reprospec)",
    )

    p = sub.add_parser("env", help="this machine as the harness sees it (runs in a child)")
    p.add_argument("--json", action="store_true", help="print the whole capture as JSON")
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="the interpreter to look through (default: this one)",
    )

    p = sub.add_parser("doctor", help="compatibility checks for this machine and a spec")
    p.add_argument("spec", nargs="?", metavar="SPEC", help="also check what this spec's cells need")
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="the interpreter to check (default: this one)",
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON")

    sub.add_parser("schema", help="print the JSON Schema of the spec format")

    p = sub.add_parser("materialize", help="write a self-contained docker bundle for a spec")
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a report.md that embeds one")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="DIR",
        help="the folder to write the bundle into",
    )
    _add_selection_options(p)
    p.add_argument(
        "--find-links",
        type=Path,
        default=None,
        metavar="DIR",
        help="a wheelhouse the bundle's image builds install packages from, offline",
    )

    p = sub.add_parser("history", help="past runs and their verdicts")
    p.add_argument(
        "spec",
        nargs="?",
        metavar="SPEC",
        help="only the runs of this spec (a spec file, or a spec's name)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="the results store to read (default: .reprospec)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="a table (default) or JSON: every run with its id whole and its verdict counts",
    )

    p = sub.add_parser(
        "compare", help="what changed between two runs: spec, options, environment, each cell"
    )
    p.add_argument(
        "run_a",
        metavar="RUN_A",
        help="the first run: a run folder, results.json, run id, `latest` or `latest~N`",
    )
    p.add_argument("run_b", metavar="RUN_B", help="the second run, compared with the first")
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="where run ids are looked up (default: .reprospec)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="what changed, as text (default) or JSON",
    )

    p = sub.add_parser("merge", help="merge shard runs into one run and one report")
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="the shard runs: run folders, results.json files, run ids or `latest~N`",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="where run ids are looked up and the merged run is written (default: .reprospec)",
    )
    p.add_argument(
        "--format",
        choices=("md", "html", "json", "junit"),
        default=None,
        help="also print the merged report in this format to stdout",
    )

    if only_one.wants("slurm"):
        from reprospec.commands.slurm import add_arguments as add_slurm_arguments

        p = sub.add_parser("slurm", help="run a spec as a Slurm job array of shards, then merge")
        _add_selection_options(p)
        add_slurm_arguments(p)

    # Verbs that define their own arguments (their modules import only argparse at the top).
    if only_one.wants("isolate"):
        from reprospec.commands import isolate

        isolate.add_parser(sub)
    if only_one.wants("bisect"):
        from reprospec.commands import bisect

        bisect.add_parser(sub)
    if only_one.wants("envs"):
        from reprospec.commands import envs

        envs.add_parser(sub)
    if only_one.wants("bundle"):
        from reprospec.commands import bundle

        bundle.add_parser(sub)
    return parser


def _add_selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-m",
        "--matrix",
        action="append",
        default=[],
        metavar="AXIS=VALUE",
        help="keep only cells with this value (repeatable)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        dest="overrides",
        metavar="PATH=VALUE",
        help="override a spec field before expansion, value parsed as YAML",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _at_most(most: int) -> Callable[[str], int]:
    """A whole number from 1 to `most` (docs/limits.md), for argparse."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(
                f"expected a number from 1 to {most}, got {value} (docs/limits.md)"
            )
        return value

    return parse


def _dispatch(args: argparse.Namespace) -> int:
    import importlib

    module = importlib.import_module(f"reprospec.commands.{args.command}")
    result: int = module.run(args)
    return result


# Verbs that read one spec and print (`validate`, `plan`): they never run attempts.
_SHORT_VERBS = ("validate", "plan", "schema")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `reprospec` console script; returns the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    verb = words[0] if words and words[0] in COMMANDS else None
    if verb in _SHORT_VERBS and argv is None:
        # A short-lived process with bounded input (docs/limits.md): the cyclic garbage
        # collector would only walk the freshly imported modules, again and again.
        import gc

        gc.disable()
    parser = build_parser(verb)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _dispatch(args)
    except FatalError as exc:
        print(printable(_format_fatal(exc)), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("reprospec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as exc:
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
        log = _write_crash_log()
        print(printable(f"reprospec: internal error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        print(f"reprospec: the traceback is in {log}; please report it", file=sys.stderr)
        return 3


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
