"""The options verbs share, each declared once, and the one way they become `RunOptions`.

`run`, `isolate`, `slurm` and `bisect` (and every verb that drives runs) take the same
`--out`, `--runner`, `--timeout`, `-m`, `--set`, `-j`, ... : each is a small factory here
(pip's `cmdoptions.py` is the model), so a flag, its type and its bounds
(`core/bounds.py`) are written once and a bad value is refused in one wording whichever
verb was given it. A verb passes its own `help=` where the option means something more
there. `run_options` turns the parsed arguments into the `RunOptions` the engine takes.

Importing this module stays cheap (argparse, pathlib, the bounds): every verb's parser
is built from it, `reprospec --help` builds them all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from reprospec.core.bounds import MAX_FIRST_ATTEMPT, MAX_PARALLEL, MAX_REPEAT, count_within
from reprospec.core.lazyre import Lazy
from reprospec.core.runoptions import DEFAULT_OUT as DEFAULT_OUT

if TYPE_CHECKING:
    from reprospec.core.runoptions import RunOptions
    from reprospec.errors import InfraError, UsageError

# The CLI's own parser class (cli._Parser): any ArgumentParser.
P = TypeVar("P", bound=argparse.ArgumentParser)

SPEC_HELP = "a spec file, or a report.md that embeds one"


# -- value types (argparse `type=`): a bad value is a usage error, exit 2 ------------------


def count(most: int | None = None) -> Callable[[str], int]:
    """A whole number from 1 to `most` (docs/limits.md), for argparse."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        try:
            return count_within(value, most)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


positive = count()


def interpreter(text: str) -> str:
    """`--python`'s value, for argparse: an empty one (`--python "$PY"`, PY unset) was
    "interpreter not found: " and nothing more, exit 3, after the run was set up."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected an interpreter's path or name, got ''")
    from reprospec.core.runoptions import absolute_python

    return absolute_python(text)


# sbatch's --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds (`man sbatch`), or no limit.
_SLURM_TIME = re.compile(r"\d+(?::\d+){0,2}|\d+-\d+(?::\d+){0,2}|unlimited|infinite", re.I)


def slurm_time(text: str) -> str:
    """`slurm --time`, for argparse: a mistyped one (`2:00:xx`) was found by sbatch only,
    exit 3 with "sbatch refused" after the run was planned."""
    if not _SLURM_TIME.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(
            f"expected Slurm's time format (minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S), "
            f"got {text!r}"
        )
    return text.strip()


def folder(text: str) -> Path:
    """A folder that is there (`--find-links DIR`), for argparse: a mistyped one made every
    cell of the run an infra-error (`--find-links folder not found`), exit 3, where any other
    mistake in an option is exit 2 before anything runs."""
    # `--find-links "$WHEELS"` with WHEELS unset: '' was the current folder, a wheelhouse.
    path = given_path(text).expanduser()
    if not path.is_dir():
        what = "not a folder" if path.exists() else "folder not found"
        raise argparse.ArgumentTypeError(f"{what}: {text}")
    from reprospec.core.runoptions import absolute_folder

    return absolute_folder(path)


# -- the options ------------------------------------------------------------------------


def spec(p: argparse.ArgumentParser, *, help: str = SPEC_HELP, optional: bool = False) -> None:
    """The SPEC positional. An empty one (`run "$SPEC"`, SPEC unset) was the current folder:
    `.: is a folder, not a spec file`, naming neither the argument nor the empty value."""
    p.add_argument(
        "spec",
        metavar="SPEC",
        nargs="?" if optional else None,
        type=nonempty("a spec file"),
        help=help,
    )


def matrix(
    p: argparse.ArgumentParser, *, help: str = "keep only cells with this value (repeatable)"
) -> None:
    """`-m AXIS=VALUE`: which cells (docs/cli.md, "Selecting and overriding")."""
    p.add_argument("-m", "--matrix", action="append", default=[], metavar="AXIS=VALUE", help=help)


def overrides(
    p: argparse.ArgumentParser,
    *,
    help: str = "override a spec field before expansion, value parsed as YAML",
) -> None:
    """`--set PATH=VALUE`: a spec field changed before the spec is validated."""
    p.add_argument(
        "--set", action="append", default=[], dest="overrides", metavar="PATH=VALUE", help=help
    )


def amplify(p: argparse.ArgumentParser) -> None:
    """`--amplify PATH`: run under the perturbation `reprospec amplify` found."""
    p.add_argument(
        "--amplify",
        type=Path,
        default=None,
        metavar="PATH",
        help="run under the perturbation `reprospec amplify` found (its folder or "
        "amplify.json): the result says it was found amplified",
    )


def amplified(path: Path | None, spec: str | None = None) -> tuple[str, ...]:
    """`--amplify PATH` as the `--set`s of the perturbation it found (before the verb's own),
    checked to be an amplification of the verb's SPEC where it names a file."""
    if path is None:
        return ()
    from reprospec.amplify.driver import amplified_overrides

    spec_path = Path(spec) if spec and Path(spec).is_file() else None
    return amplified_overrides(Path(path), spec_path)


def selection(p: argparse.ArgumentParser) -> None:
    """`-m` and `--set`, as `plan`, `run`, `materialize` and `slurm` take them."""
    matrix(p)
    overrides(p)


def runner(
    p: argparse.ArgumentParser,
    *,
    choices: Sequence[str] | None = None,
    default: str | None = "local",
    help: str = "run attempts as local processes (default), in fresh docker containers "
    "(docker), or as local processes of a per-cell virtualenv built with uv (venv)",
) -> None:
    """`--runner`: every runner the engine has, unless the verb takes fewer. A default of
    None (local, for `run_options`) lets a verb tell `--runner local` from nothing given."""
    if choices is None:
        from reprospec.runners import RUNNERS

        choices = tuple(RUNNERS)
    p.add_argument("--runner", choices=tuple(choices), default=default, help=help)


def jobs(
    p: argparse.ArgumentParser,
    *,
    help: str = "attempts at once (default: the spec's run.parallel, else 1)",
) -> None:
    """`-j N`: attempts at once, within MAX_PARALLEL as `run.parallel` is."""
    p.add_argument("-j", "--jobs", type=count(MAX_PARALLEL), default=None, metavar="N", help=help)


def repeat(
    p: argparse.ArgumentParser,
    *,
    help: str = "attempts per cell (overrides run.repeat)",
    default: int | None = None,
) -> None:
    """`--repeat N`: attempts per cell, within MAX_REPEAT as `run.repeat` is."""
    p.add_argument("--repeat", type=count(MAX_REPEAT), default=default, metavar="N", help=help)


def first_attempt(p: argparse.ArgumentParser) -> None:
    """`--first-attempt N`: number each cell's attempts from N (RunOptions.first_attempt), as a
    search's probe numbered them: a report's `attempt 37`, seeded by `${{ attempt }}` or a
    fault's `probability` coin, is rerun as itself by `--first-attempt 37 --repeat 1`, where
    every run numbered from 1 and could not draw it again."""
    p.add_argument(
        "--first-attempt",
        type=count(MAX_FIRST_ATTEMPT),
        default=None,
        metavar="N",
        help="number each cell's attempts from N (default 1), as a search's probe did: "
        "rerun a report's attempt N by its number",
    )


def timeout(
    p: argparse.ArgumentParser,
    *,
    help: str = "per-attempt timeout like 90s or 5m (overrides run.timeout)",
    default: str | None = None,
) -> None:
    """`--timeout DURATION`: kept as written (slurm repeats it to every shard); checked by
    `run_options` (capture: by the spec it writes)."""
    p.add_argument("--timeout", default=default, metavar="DURATION", help=help)


def out(
    p: argparse.ArgumentParser,
    *,
    help: str = "the results store and run folders (default: .reprospec)",
    metavar: str = "DIR",
) -> None:
    """`--out DIR`: the results store every verb reads or writes."""
    p.add_argument("--out", type=given_path, default=DEFAULT_OUT, metavar=metavar, help=help)


def python(
    p: argparse.ArgumentParser, *, help: str = "local runner's interpreter (default: this one)"
) -> None:
    """`--python PATH`: the interpreter attempts (or a probe) run in."""
    p.add_argument("--python", type=interpreter, default=None, metavar="PATH", help=help)


def gpus(p: argparse.ArgumentParser) -> None:
    """`--gpus LIST`: the GPU ids the scheduler hands out."""
    p.add_argument(
        "--gpus",
        default=None,
        metavar="LIST",
        help="GPU ids to hand out (default: CUDA_VISIBLE_DEVICES or all visible)",
    )


def find_links(
    p: argparse.ArgumentParser,
    *,
    # The venv runner installs from it too (runners/__init__.py): the help said docker only.
    help: str = "docker runner: a wheelhouse image builds install from, offline; "
    "venv runner: a wheelhouse uv installs from besides the configured index",
) -> None:
    """`--find-links DIR`: a wheelhouse packages install from."""
    p.add_argument("--find-links", type=folder, default=None, metavar="DIR", help=help)


def keep_cores(p: argparse.ArgumentParser) -> None:
    """`--keep-cores`: crashed processes' core files stay in their attempt folders."""
    p.add_argument(
        "--keep-cores",
        action="store_true",
        help="keep crashed processes' core files in their attempt folders (by default each is "
        "deleted once eu-stack or gdb has read its native stacks)",
    )


def search_attempts(p: argparse.ArgumentParser, *, out_help: str) -> None:
    """How a search verb's attempts run (isolate, minimize, amplify): --runner, --timeout,
    --out, --python, --gpus, --find-links, --keep-cores, in that order. One list, so an
    option added to how attempts run reaches the three searches alike."""
    runner(p)
    timeout(p)
    out(p, help=out_help)
    python(p)
    gpus(p)
    find_links(p)
    keep_cores(p)


def answer_format(p: argparse.ArgumentParser) -> None:
    """`--format text|json` of a search whose answer is its evidence (isolate, amplify)."""
    output_format(
        p,
        ("text", "json"),
        default="text",
        help="text (default): the answer and its evidence; json: the same as JSON",
    )


def preload_option(p: argparse.ArgumentParser, *, help: str) -> None:
    """`--preload MOD,...`: fork each attempt from a server that imported these modules
    once (`run.preload` for this command; `none` turns the spec's off)."""
    p.add_argument("--preload", default=None, metavar="MOD,...", help=help)


def output_format(
    p: argparse.ArgumentParser, choices: Sequence[str], *, default: str | None, help: str
) -> None:
    """`--format`: which rendering goes to stdout (each verb has its own set)."""
    p.add_argument("--format", choices=tuple(choices), default=default, help=help)


def output(
    p: argparse.ArgumentParser,
    *,
    metavar: str,
    help: str,
    required: bool = False,
    names_file: bool = False,
) -> None:
    """`-o/--output PATH`: what a verb writes besides its store (a report, an archive,
    a folder, a spec), one spelling everywhere; `metavar` says which kind of path, and
    `names_file` that it is one file (`write_output`), never a folder."""
    p.add_argument(
        "-o",
        "--output",
        type=file_path if names_file else given_path,
        required=required,
        default=None,
        metavar=metavar,
        help=help,
    )
    # What cli._dispatch probes before the verb runs: a folder to make, or a file to open.
    p.set_defaults(output_is_folder=metavar == "DIR")


def nonempty(what: str) -> Callable[[str], str]:
    """A value that must not be empty (`--resume "$RUN"`, RUN unset), for argparse."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected {what}, got ''")
        return text

    return parse


def given_path(text: str) -> Path:
    """`--out`'s and `-o`'s value, for argparse: an empty one (`--out "$OUT"`, OUT unset) was
    `Path('')`, the current folder, where `run` wrote its store and run folders (and
    `materialize -o ''` its bundle) among the user's own files, as `--python ''` is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got ''")
    return Path(text)


def file_path(text: str) -> Path:
    """A path that names a file, for argparse: `report latest -o out/` wrote the report as
    a file named `out`, since `Path` drops the trailing slash that said a folder was meant
    (one already there is refused by `write_output`; this one did not exist yet)."""
    given_path(text)
    if text.endswith(("/", os.sep)) or (os.altsep is not None and text.endswith(os.altsep)):
        raise argparse.ArgumentTypeError(
            f"{text} names a folder (the trailing /): name the file to write"
        )
    return Path(text)


def force_output(p: argparse.ArgumentParser) -> None:
    """`--force`: let `-o` replace a file that is not one reprospec wrote (`write_output`)."""
    p.add_argument(
        "--force",
        action="store_true",
        help="let -o replace an existing file that reprospec did not write",
    )


# Every file a `-o FILE` writes carries a mark of its own near its top, by which what an
# earlier `-o` wrote is recognised. Any mention of reprospec was taken for one: a spec
# (`reprospec: 1`), a README or a pyproject.toml naming the tool, so that `schema -o
# specs/a.yaml` wrote the schema over the spec it was asked beside, without a word.
_OWN_OUTPUT_HEAD = 4096
_OWN_OUTPUT_MARKS = Lazy(
    # report.md's first line (core/reportspec.marker_line), the GitHub summary's heading,
    # results.json's first keys (store/resultsjson.run_to_dict): at the file's start.
    r'\A(?:<!-- reprospec:spec sha256=|### reprospec: |\{\s*"format": \d+,\s*"run_id": )'
    # The HTML report's generator, the JUnit report's <testsuites>, the schema's $id.
    r'|<meta name="generator" content="reprospec">|<testsuites name="reprospec"'
    r'|/schemas/reprospec\.schema\.json"',
)


def write_output(target: Path, text: str, *, force: bool = False) -> None:
    """Write `text` to `-o`'s `target` (its folder made), or refuse naming `-o`: the OSError
    said only "No such file or directory: /proc/nope", not which of the command's paths it
    was. A path that cannot be written is the user's input (exit 2); a disk
    that failed them, full or broken, is the machine's (exit 3).

    An existing file is replaced only where reprospec wrote it (an earlier report, the
    schema: `report latest -o report.html` after every run), or with `force`: `schema -o
    /etc/passwd`, run as root, wrote the schema over the machine's users (note71)."""
    from reprospec.errors import UsageError

    if target.is_dir():
        raise UsageError(f"-o {target}: it is a folder: name the file to write")
    if not force and target.exists() and not _written_by_reprospec(target):
        raise UsageError(
            f"-o {target}: it exists and is not a file reprospec wrote (a report or the "
            "schema, whose first lines say so): pass --force to replace it, or name another file"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable("-o", target, "mkdir", exc) from None
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise unwritable("-o", target, "write", exc) from None


def _written_by_reprospec(path: Path) -> bool:
    """Whether the file at `path` carries in its head the mark of a `-o` output (a report,
    the schema); an unreadable one is not known to be ours (the write then says why it
    cannot be written)."""
    try:
        with path.open("rb") as file:
            head = file.read(_OWN_OUTPUT_HEAD).decode("utf-8", errors="replace")
    except OSError:
        return False
    return _OWN_OUTPUT_MARKS.search(head) is not None


def unwritable(flag: str, path: Path, doing: str, exc: OSError) -> UsageError | InfraError:
    """`flag path: cannot write there: mkdir /proc/x: No such file or directory (...)`: the
    call that failed, on the path it failed on, with its errno's words. It named the nearest
    folder that exists with the errno of a folder made inside it, which read as if that
    folder were missing (`No such file or directory: /proc` of `--out /proc/x`).
    A hint where the errno alone misleads: the file on the path, the folder that exists
    but makes nothing (/proc, /sys). A path that
    cannot be written is the user's input (UsageError, exit 2); a disk that failed them,
    full or broken, the machine's (InfraError, exit 3)."""
    import errno

    from reprospec.errors import InfraError, UsageError

    failed = Path(exc.filename) if exc.filename is not None else path
    why = f"{flag} {path}: cannot write there: {doing} {failed}: {exc.strerror or exc}"
    parent = failed.parent
    if exc.errno == errno.ENOTDIR:
        # The file on the path, the nearest that exists: /etc/passwd of /etc/passwd/a/b.
        there = next((p for p in (failed, *failed.parents) if p.exists()), None)
        if there is not None and not there.is_dir():
            why += f" ({there} is a file)"
    elif exc.errno == errno.EEXIST and failed.exists() and not failed.is_dir():
        why += f" ({failed} is a file)"  # a folder of -o's path, made with its parents
    elif exc.errno == errno.ENOENT and parent.is_dir():
        # /proc, /sys: a folder that exists, in which nothing can be made.
        why += f" ({parent} exists, but nothing can be made in it)"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return InfraError(why)
    return UsageError(why)


def text_or_json(p: argparse.ArgumentParser, *, help: str) -> None:
    """`--format text|json` for a verb that prints text or JSON: every verb spells JSON
    output `--format json`. `--json`, the spelling some verbs had first, stays as a hidden
    alias so scripts that pass it keep working."""
    p.add_argument("--format", choices=("text", "json"), default="text", help=help)
    p.add_argument(
        "--json", dest="format", action="store_const", const="json", help=argparse.SUPPRESS
    )


def budget(p: argparse.ArgumentParser, *, default: int | None, help: str) -> None:
    """`--budget N`: attempts in all for a search (isolate, amplify, minimize, bisect); not
    part of a search's id, so a larger one continues the search (isolation.state.search_id)."""
    p.add_argument("--budget", type=positive, default=default, metavar="N", help=help)


def fraction_option(p: argparse.ArgumentParser, flag: str, *, help: str) -> None:
    """`--error P`, `--min-rate P`: a probability, checked by `fraction`."""
    p.add_argument(flag, type=float, default=None, metavar="P", help=help)


# -- checks that need more than one value's text ---------------------------------------------


def fraction(value: float | None, option: str) -> float | None:
    """`--error`, `--min-rate`: strictly between 0 and 1 (a search's probability)."""
    from reprospec.core.runoptions import fraction as probability

    return probability(option, value)


def timeout_seconds(text: str | None) -> float | None:
    """`--timeout` in seconds (None: not given), or the one usage error."""
    from reprospec.core.units import positive_duration
    from reprospec.errors import UsageError

    if text is None:
        return None
    try:
        return positive_duration(text)
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None


def preload(text: str | None) -> tuple[str, ...] | None:
    """`--preload torch,numpy` -> ("torch", "numpy"); `none` -> (); not given -> None."""
    from reprospec.errors import UsageError

    if text is None:
        return None
    if text.strip().lower() == "none":
        return ()
    if not text.strip():
        # `--preload "$MODS"` with MODS unset read as `none`: every attempt ran fresh, the
        # spec's run.preload turned off, without a word.
        raise UsageError(f"--preload {text!r} names no module: give MOD,... or none")
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        # `--preload ,,` read as off ran every attempt fresh without a word, and
        # `torch,,x` dropped what may have been a module mistyped away.
        raise UsageError(f"--preload {text!r} names an empty module: give MOD,... or none")
    return names


def preload_set(modules: tuple[str, ...] | None) -> tuple[str, ...]:
    """`--preload` as the `--set run.preload=[...]` it stands for (none when not given), for
    a verb whose runs take the spec's fields only (bisect): last, so it wins as run's does."""
    if modules is None:
        return ()
    return (f"run.preload={json.dumps(list(modules))}",)


def run_options(
    args: argparse.Namespace, *, purpose: str = "run", command_line: str = ""
) -> RunOptions:
    """The `RunOptions` the parsed arguments ask for: the one place a verb's options become
    the engine's. An option the verb does not declare keeps `RunOptions`' default, so a
    new verb declares what it takes and calls this."""
    from reprospec.core.runoptions import RunOptions, Shard

    given = vars(args)
    shard = given.get("shard")
    return RunOptions(
        runner=given.get("runner") or "local",
        jobs=given.get("jobs"),
        repeat=given.get("repeat"),
        timeout_s=timeout_seconds(given.get("timeout")),
        matrix_filters=tuple(given.get("matrix") or ()),
        overrides=(
            *amplified(given.get("amplify"), given.get("spec")),
            *(given.get("overrides") or ()),
        ),
        out=Path(given.get("out") or DEFAULT_OUT),
        python=given.get("python"),
        gpus=given.get("gpus"),
        # `--shard "$SHARD"` with SHARD unset is refused, where '' ran every attempt.
        shard=Shard.parse(shard) if shard is not None else None,
        find_links=given.get("find_links"),
        keep_cores=bool(given.get("keep_cores", False)),
        observe=bool(given.get("observe", False)),
        preload=preload(given.get("preload")),
        first_attempt=given.get("first_attempt") or 1,
        purpose=purpose,
        command_line=command_line,
    )


def invocation(skip: Sequence[str] = ()) -> str:
    """`reprospec ARGS` as this process was started, words in `skip` left out (empty when
    started without arguments, e.g. from Python)."""
    from reprospec.core.logtext import shell_join

    words = [word for word in sys.argv[1:] if word not in skip]
    return "reprospec " + shell_join(words) if words else ""


# The verbs that write a folder or file under `-o`/`--output` or a store under `--out`:
# each path is checked before anything runs (cli._dispatch).
WRITING_VERBS = (
    "run",
    "isolate",
    "minimize",
    "amplify",
    "bisect",
    "capture",
    "bundle",
    "materialize",
    "merge",
)


# The verbs whose -o a run records or loads again (minimize's DIR holds the spec it reruns;
# capture's spec is what runs): a path that is not UTF-8 is refused there, as --out's is.
UTF8_OUTPUT_VERBS = ("minimize", "capture")


def check_utf8(flag: str, path: Path, *, as_given: bool = False) -> None:
    """Refuse, before a verb runs anything, a `flag` path that is not UTF-8 (a folder named
    `o$'\\xfe'ut`) where the verb records it: `minimize -o` of one ran its whole search,
    then refused its own result's spec; `--out` of one ran a search's first round first.
    Its real path (links followed), as it is recorded (a run's --out, the spec capture and
    minimize write, loaded again); `as_given`: the text (`--python python3`)."""
    from reprospec.core.logtext import not_utf8
    from reprospec.errors import UsageError

    # os.path.realpath: Path.resolve raises on a loop of links (check_writable's to say).
    wrong = not_utf8("the path", str(path) if as_given else os.path.realpath(path))
    if wrong is not None:
        raise UsageError(f"{flag} {wrong}")


def check_writable(flag: str, path: Path, *, folder: bool = True) -> None:
    """Refuse, before a verb runs anything, a `flag` path it could not be written at: one
    under a file (`-o existing_file/sub`) or in a folder nothing can be made in (`/proc`).
    A file's path (not `folder`: capture's spec, bundle's archive) whose folder exists is
    probed by opening the file, not by making a folder of its name: `capture -o
    /proc/x.yaml` said `mkdir /proc/x.yaml`, a call nothing was to make.
    `minimize -o /proc/min-out` ran its whole search, then exited 2 saying only `No such
    file or directory: /proc/min-out`, naming no option. A path that exists is left to
    the verb, which says what it may be (a folder, not a file: `-o /dev/null`; minimize's
    DIR; a search's read-only --out, its answer printed unsaved). The probe is
    core/atomicfile.write_probe's (what writing makes first, made and removed: permissions
    alone do not tell /proc, where root may and cannot), its error that call's, on that
    path."""
    from reprospec.core.atomicfile import write_probe

    # A relative path in a removed folder: os.getcwd's ENOENT, which the command line says
    # as "the current folder no longer exists" (cli.main), before a probe would fail there.
    path.absolute()
    # The path as given: a relative one is named relative in the error, as it was typed.
    failed = write_probe(path, folder=folder)
    if failed is not None:
        raise unwritable(flag, path, *failed) from None
