"""A run as one archive to rerun: `reprospec bundle RUN -o x.tar.gz`, `reprospec run x.tar.gz`.

    RUN_ID/
      bundle.json        what is where: the spec inside tree/, the run's options, the files
      README.md          what this is and how to rerun it (with and without reprospec)
      report.md  results.json  spec.yaml  [repro.py]     the run folder's own files
      logs/cells/CELL/N/  every attempt's logs, events, env.json, stacks
      tree/...           the spec that ran and the workdir files its cells name, at their
                         places relative to each other (so `workdir: ../app` still resolves)

Packing masks secrets in everything it packs, as every other output does (redact.py):
the attempt folders hold what the child was given (cell.json's environment) and printed
(its logs) in clear, so each file passes through a Redactor of the run's secrets: those
of the spec in this engine's environment, and the values cell.json shows under a
secret-looking name or a name the spec reads from the engine (`${{ env.HF_TOKEN }}`).
The tree's files follow carry.py, the rule materialize shares: only the named files,
never a hidden one, and a secret-looking key's literal in them masked too, each such
file named in a warning and in the README. In that same pass, results.json, report.md
and the logs name the sender's paths as a report does (`<home>`, `<venv>`, the user's
name as a folder `<user>`: report/paths.py `PathNames.for_bundle`); what a rerun runs
(the spec, report.md's embedded one, the carried files, repro.py) keeps its own.

Unpacking trusts nothing in the archive: only regular files and folders, names
relative and inside the bundle (no `..`, no absolute path, no link of any kind),
bounded counts and sizes checked before and while each member is written, each
file created new (O_EXCL, O_NOFOLLOW) in a fresh folder. An archive is unpacked
once, into `OUT/bundles/<sha256 of the archive>/`, and reused after.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, TypedDict

from reprospec.core.bounds import MAX_PARALLEL, MAX_REPEAT, count_within
from reprospec.core.formats import BUNDLE_SUFFIXES
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan, Spec
from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import printable, with_bytes_written
from reprospec.core.redact import Redactor, env_names_read, public_env, sets_secret
from reprospec.core.reportspec import rerun_command
from reprospec.core.results import RunResult
from reprospec.core.units import format_duration, positive_duration
from reprospec.core.words import interrupted_of, plural, resume_command
from reprospec.errors import UsageError
from reprospec.export.carry import carried_bytes
from reprospec.export.tree import SpecTree, spec_tree
from reprospec.process.childprotocol import CELL_JSON
from reprospec.report.paths import PathNames
from reprospec.store.runfolder import INTERRUPTED, RunFolder
from reprospec.store.specvariables import FIELD as VARIABLES
from reprospec.store.specvariables import ReadAs, read_as

if TYPE_CHECKING:
    from reprospec.core.runoptions import RunOptions

FORMAT = 1
MANIFEST = "bundle.json"
# Unpacking limits: a bundle is a spec, some source files and capped logs.
MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 2 << 30
MAX_FILE_BYTES = 512 << 20
MAX_NAME_CHARS = 1024
MAX_DEPTH = 48
# Bytes of one PAX or GNU long-name record (a name is at most MAX_NAME_CHARS anyway).
MAX_META_BYTES = 64 << 10
# Bytes of bundle.json; above PROMPT_BYTES unpacked, `run` asks before unpacking.
MAX_MANIFEST_BYTES = 1 << 20
PROMPT_BYTES = 64 << 20
# `-m` filters a manifest may carry (each is a filter a person typed).
MAX_MATRIX_FILTERS = 256
# Packing: attempt files the logs leave out (scratch folders, core dumps).
_SKIP_DIRS = {"tmp", "cache", "__pycache__"}
_LOG_FILE_BYTES = 64 << 20
# The engine variables a spec reads, `${{ env.X }}` (found in text the mask left valid).
_ENV_READ = re.compile(r"\benv\.([A-Za-z_][A-Za-z0-9_]*)")


@frozen
class Packed:
    """What `pack` wrote: the archive, how many files, and what it could not include."""

    path: Path
    files: int
    workdir_files: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    # Files named from outside the workdir (`../raises.py`), as placed under tree/.
    outside_files: tuple[str, ...] = ()
    # The folder on this machine that the archive's tree/ stands for (`bundle --verify`
    # names a file its rerun missed where it is here).
    tree_root: Path | None = None
    # The variables the archive's spec reads where the spec had a secret written in
    # (`${{ env.DB_PASSWORD }}` for `hunter2-pw`), with the values the run had: never
    # written, only held for `--verify`, which runs with them as the author would.
    replaced: tuple[tuple[str, str], ...] = ()


@frozen
class Unpacked:
    """A bundle on disk: the spec to run and the options the original run had."""

    root: Path
    spec: Path
    matrix_filters: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    repeat: int | None = None
    # The original run's `-j` where it gave one: it overrides the spec's `run.parallel`,
    # and a race or a contention bug reproduces at another rate without it.
    jobs: int | None = None
    timeout_s: float | None = None
    observe: bool = False
    # The original run's runner where it was not local: a venv run's cells need the
    # packages their environments were built with (on the local runner: infra-error).
    runner: str | None = None
    # The original run's `--preload` where it was given (() for `--preload none`): its
    # attempts forked from a server that imported them, which the spec does not say.
    preload: tuple[str, ...] | None = None
    # The number of the original run's first attempt where it was not 1 (a search's probe,
    # RunOptions.first_attempt): a `${{ attempt }}` seed or a fault's `probability` coin
    # draws what its attempts 5, 6, ... drew, where the rerun's 1, 2, ... drew otherwise.
    first_attempt: int = 1
    # The original run's `stop_on` where it gave one (`RunOptions(stop_on=...)`, a search's
    # probe): without it the rerun ran every attempt where the run stopped each cell at its
    # first reproduction.
    stop_on: str | None = None

    def run_options(self, options: RunOptions, *, runner_given: bool = False) -> RunOptions:
        """The options this bundle's spec runs with: the original run's `-m` filters,
        `-j`, `--repeat`, `--timeout`, `--preload`, observe mode, first attempt number and
        runner (not local) unless `options` gives them (the manifest was checked as the
        CLI's options are, when it was read); its overrides first (its `stop_on` as
        `run.stop_on=...`, which a `--set` or `options.stop_on` given still overrides), then
        `options`'. `run FILE` and `bundle --verify` alike."""
        stop = (f"run.stop_on={self.stop_on}",) if self.stop_on else ()
        return options.with_changes(
            preload=options.preload if options.preload is not None else self.preload,
            runner=options.runner if runner_given or not self.runner else self.runner,
            matrix_filters=options.matrix_filters or self.matrix_filters,
            repeat=options.repeat if options.repeat is not None else self.repeat,
            jobs=options.jobs if options.jobs is not None else self.jobs,
            timeout_s=options.timeout_s if options.timeout_s is not None else self.timeout_s,
            observe=options.observe or self.observe,
            overrides=(*self.overrides, *stop, *options.overrides),
            first_attempt=(
                options.first_attempt if options.first_attempt != 1 else self.first_attempt
            ),
        )


class _BundledOptions(TypedDict, total=False):
    """The original run's options a manifest may hold (each checked when read)."""

    matrix_filters: tuple[str, ...]
    repeat: int
    jobs: int
    timeout_s: float
    observe: bool
    runner: str
    preload: tuple[str, ...]
    first_attempt: int
    stop_on: str


def is_bundle(path: str | Path) -> bool:
    """Whether `path` names an archive `run` should unpack (by name: .tar.gz, .tgz)."""
    name = str(path).lower()
    return name.endswith(BUNDLE_SUFFIXES) and Path(path).is_file()


# -- packing ---------------------------------------------------------------------------


@frozen
class _Sources:
    """The run's spec tree (without files where the spec is gone or no longer loads), the
    options a rerun keeps, and what could not be carried."""

    tree: SpecTree
    options: dict[str, object]
    warnings: tuple[str, ...]
    document: Mapping[str, JsonValue] | None = None
    spec_gone: bool = False


def pack(
    run: RunResult, run_dir: Path, output: Path, *, as_now: bool = False, force: bool = False
) -> Packed:
    """Write the bundle of the finished run in `run_dir` to `output` (a .tar.gz).

    `as_now` (`bundle --as-now`): the program's files that changed since the run are packed
    as they are now, each named in a warning, where they are otherwise refused. `force`
    (`bundle --force`): an `output` that exists is written over, where it is otherwise
    refused (exit 2, nothing written), as `capture -o` refuses one: a second bundle of
    another run to the same name replaced the first without a word."""
    if not output.name.endswith(BUNDLE_SUFFIXES):
        raise UsageError(f"-o {output}: a bundle is a .tar.gz (or .tgz) file")
    if output.is_dir():
        raise UsageError(f"-o {output} is a folder: name the archive to write")
    if (output.exists() or output.is_symlink()) and not force:
        raise UsageError(f"{output} exists; pass --force to overwrite it")
    _refuse_capture_run(run)
    sources = _sources(run, run_dir, as_now=as_now)
    top = PurePosixPath(run.run_id)
    spec_rel = _spec_place(run, sources)
    tree = sources.tree
    carried = [tree.place(p) for p in tree.files]
    outside = {tree.place(p) for p in tree.outside}
    workdir_rel = [rel for rel in carried if rel not in outside]
    manifest: dict[str, object] = {
        "format": FORMAT,
        "run_id": run.run_id,
        "spec_name": run.spec_name,
        "spec": f"tree/{spec_rel}",
        "options": sources.options,
        "files": [f"tree/{rel}" for rel in carried],
        "command_line": run.command_line,
    }
    if tree.absolute_workdir is not None:
        # The spec names its workdir by an absolute path: the rerun points it into tree/.
        inside = tree.place(tree.absolute_workdir)
        manifest["workdir"] = f"tree/{inside}"
    output.parent.mkdir(parents=True, exist_ok=True)
    redactor = _run_redactor(run, run_dir, sources.document)
    count = 0
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    # The archive's name as its README and report say it: a byte of it that is not UTF-8
    # written `\xfe` (-o b$'\xfe'.tar.gz ended the bundle with an internal
    # UnicodeEncodeError writing README.md).
    archive = with_bytes_written(output.name)
    run_folder = RunFolder(run_dir)
    try:
        with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            # The files of the run folder and the manifest's command line name the
            # sender's paths as report.md does (`<home>`, `<venv>`, `<user>`:
            # report/paths.py), in the one pass that masks their secrets; the spec, the
            # carried files and repro.py are what a rerun runs, and keep their own, but
            # for the spec's comment lines, which no rerun reads (capture's `# It ran with
            # --python /home/alice/...` carried the home path the rest named `<home>`).
            named = PathNames.for_bundle(run.paths)
            manifest["command_line"] = named.shorten(run.command_line)
            _add_text(tar, top / MANIFEST, json.dumps(manifest, indent=2) + "\n")
            spec_text = redactor.spec_text(run.spec_text)
            replaced = _replaced(run.spec_text, spec_text, redactor, sources.document)
            _add_text(tar, top / "tree" / spec_rel, _comments_named(spec_text, named))
            count += 2
            for folder in tree.empty_workdirs([spec_rel, *carried]):
                # A workdir no carried file is in (the command names only `../raises.py`)
                # must still be there: the rerun runs in it.
                _add_folder(tar, top / "tree" / folder)
            for path in run_folder.top_files:
                if path.is_file():
                    shown: PathNames | _ReportNames | _SpecNames | None = named
                    if path == run_folder.report_md:
                        shown = _ReportNames(named, f"tree/{spec_rel}", archive)
                    elif path == run_folder.spec_yaml:
                        shown = _SpecNames(named)  # what a rerun runs, but its comments
                    elif path == run_folder.repro_py:
                        shown = None  # what a rerun runs, as it ran
                    _add_file(tar, top / path.name, path, redactor, shown)
                    count += 1
                elif path == run_folder.results_json:
                    raise _removed(run, run_dir)
            masked: list[str] = []
            for path, rel in zip(tree.files, carried, strict=True):
                # The tree's files by the rule materialize shares (carry.py): a secret
                # value, or a secret-looking key's literal, is written as *** and named.
                content = carried_bytes(path, redactor)
                _add_data(tar, top / "tree" / rel, path, content.data)
                warning = content.warning(f"tree/{rel}")
                if warning is not None:
                    masked.append(warning)
                count += 1
            # Written after the tree: it names the files whose secrets were masked.
            place = _standalone_place(run, sources, spec_rel)
            cells = run_folder.cells
            logs = list(_log_files(cells))
            # A killed run's attempt, run again by --resume: what it wrote is packed too.
            interrupted = any(
                INTERRUPTED in d for p in logs for d in p.relative_to(cells).parts[:-1]
            )
            readme = _readme(
                run,
                manifest,
                carried,
                place,
                sources.document,
                masked,
                replaced=tuple(name for name, _ in replaced),
                interrupted=interrupted,
                archive=archive,
            )
            _add_text(tar, top / "README.md", named.shorten(readme))
            count += 1
            for path in logs:
                packed = top / "logs" / path.relative_to(run_dir).as_posix()
                _add_file(tar, packed, path, redactor, named)
                count += 1
        if not run_folder.results_json.is_file():
            # Removed after its top files were packed: the walk of its cells found no logs.
            raise _removed(run, run_dir)
        tmp.replace(output)
    except FileNotFoundError:
        if not run_folder.results_json.is_file():
            # A log gone between the walk and its reading, with the whole folder.
            raise _removed(run, run_dir) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)
    unfinished = _unfinished(run)
    warnings = (*sources.warnings, *masked, *([unfinished] if unfinished else []))
    return Packed(
        output, count, tuple(workdir_rel), warnings, tuple(sorted(outside)), tree.root, replaced
    )


def _unfinished(run: RunResult) -> str | None:
    """What an interrupted run's bundle lacks, or None: cells it never ran have no outcome a
    maintainer could read. A run stopped before any attempt ended was packed with only
    `wrote ...; rerun it with ...` said, an archive whose report shows nothing that failed;
    one stopped after 7 of a cell's 20 attempts, with nothing said at all, though its report
    judged the cell (its rate) on those 7 alone."""
    lacks = _lacks(run)
    if not lacks:
        return None
    # The run's own store named (`--out DIR` where it is not the default one): without it
    # the command looked in `.reprospec` and said "no results store".
    again = f"finish it first ({resume_command(run.run_id, run.store)}), then bundle it again"
    if _not_run(run) == len(run.cells):
        return (
            "the run was interrupted before any attempt ended: the bundle holds its spec and "
            f"files, but no outcome to show; {again}"
        )
    return f"the run was interrupted with {lacks}: the bundle's report shows only what ran; {again}"


def _lacks(run: RunResult) -> str:
    """`1 of 2 cells not run`, `1 of 1 cell cut short (interrupted after 7 of 20 attempts)`,
    or both: what of an interrupted run never ran ("" for one that lacks nothing)."""
    if not run.interrupted:
        return ""
    total = plural(len(run.cells), "cell")
    said: list[str] = []
    not_run = _not_run(run)
    if not_run:
        said.append(f"{not_run} of {total} not run")
    short = [
        interrupted_of(cell.reason)
        for cell in run.cells
        if cell.verdict != "not-run" and interrupted_of(cell.reason)
    ]
    if short:
        # The one cell's own count (`interrupted after 7 of 20 attempts`); several cells'
        # counts differ, each in the report's table.
        how = f" ({short[0]})" if len(short) == 1 else ""
        said.append(f"{len(short)} of {total} cut short{how}")
    return " and ".join(said)


def _not_run(run: RunResult) -> int:
    """The cells an interrupted run never reached (0 for a run that was not interrupted)."""
    return sum(cell.verdict == "not-run" for cell in run.cells) if run.interrupted else 0


def _replaced(
    ran: str, packed: str, redactor: Redactor, document: Mapping[str, JsonValue] | None
) -> tuple[tuple[str, str], ...]:
    """The variables the packed spec reads in place of a secret the run's spec had written
    in (its closing note names them; the run's own text may be masked already), less those
    the spec read itself, each with the value the run had: the README names them to
    export, and `--verify` sets them."""
    if document:
        own = set(env_names_read(dict(document)))
    else:  # the spec file is gone: its text, less the names the mask itself wrote
        own = set(_ENV_READ.findall(ran)) - set(Redactor.masked_names(ran))
    found = []
    for name in Redactor.masked_names(packed):
        values = [v for v, n in redactor.names.items() if n == name]
        # The redactor holds each secret as a JSON file escapes it too: not the value.
        escaped = {e for v in values if (e := json.dumps(v)[1:-1]) != v}
        values = [v for v in values if v not in escaped]
        if name not in own and values:
            found.append((name, min(values, key=len)))
    return tuple(found)


def _removed(run: RunResult, run_dir: Path) -> UsageError:
    """The run folder went while it was packed (removed by hand, a cleanup): nothing is
    written, where a bundle without its results.json, report and logs was said to be
    written, exit 0. Exit 2, as `bundle` of a folder already gone."""
    return UsageError(
        f"run {run.run_id}: its folder {run_dir} was removed while it was packed; "
        f"nothing was written"
    )


def _refuse_capture_run(run: RunResult) -> None:
    """Refuse (UsageError) one of `capture`'s own runs: each ran in the capturing shell
    with its variables, all of them, some (the narrowing's reruns) or none (the verify), and
    neither its spec nor a bundle says which. Its first run's spec is the draft, before
    capture wrote in the variables the failure needs: its bundle passed where the run, and
    its packed report, crashed."""
    if run.options.get("purpose") != "capture":
        return
    spec = Path(run.spec_path)
    named = shlex.quote(str(spec)) if spec.is_file() else "SPEC"
    raise UsageError(
        f"run {run.run_id} is one of capture's own runs: it ran with all, some or none of "
        "the capturing shell's variables, and neither its spec nor a bundle says which (its "
        "first run's spec is the draft, before capture wrote in those the failure needs), so "
        "a bundle of it need not do what its report says. Run the spec capture wrote "
        f"(reprospec run {named}) and bundle that run"
    )


def _sources(run: RunResult, run_dir: Path, *, as_now: bool = False) -> _Sources:
    """The spec file, the options and the workdir files of the run, from its store."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.plan.run import plan_run
    from reprospec.spec.load import load_spec
    from reprospec.store.db import Store

    warnings: list[str] = []
    out = run_dir.parent.parent
    info = None
    if (out / "results.db").is_file():
        with Store(out, reader=True) as store:
            info = store.run_info(run.run_id)
    stored = Path(info.spec_path) if info else Path(run.spec_path).resolve()
    options = RunOptions.from_dict(info.options, out) if info else RunOptions(out=out)
    kept: dict[str, object] = {
        "matrix_filters": list(options.matrix_filters),
        "repeat": options.repeat,
        "timeout_s": options.timeout_s,
        "observe": options.observe,
    }
    if options.runner != "local":
        kept["runner"] = options.runner
    if options.preload is not None:
        kept["preload"] = list(options.preload)
    if options.jobs is not None:
        kept["jobs"] = options.jobs
    if options.first_attempt != 1:
        kept["first_attempt"] = options.first_attempt
    if options.stop_on is not None:
        kept["stop_on"] = options.stop_on
    if not stored.is_file():
        from reprospec.store.digests import recorded_files

        ran = recorded_files(run.environment)
        if ran:
            # Packed without them, the archive's rerun fails on the first missing file
            # (infra-error, `can't open file`): capture's verify run, made in a copy since
            # removed, was bundled that way, exit 0.
            # Named relative to the spec's folder where inside it, else by their whole path.
            gone = [name for name in ran if not (stored.parent / name).exists()]
            said = gone or list(ran)
            shown = ", ".join(said[:4]) + (f" and {len(said) - 4} more" if len(said) > 4 else "")
            how = (
                f"and the program's files the run ran ({shown}) with it"
                if gone
                else f"and a bundle finds the program's files the run ran ({shown}) through it"
            )
            raise UsageError(
                f"the spec file {stored} is gone, {how}: a bundle of run {run.run_id} could "
                "not rerun. Run the spec where it is now (reprospec run SPEC) and bundle that run"
            )
        warnings.append(f"the spec file {stored} is gone: the bundle has no workdir files")
        return _Sources(_bare(stored), kept, tuple(warnings), spec_gone=True)
    from reprospec.errors import SpecError
    from reprospec.pipeline.stages import ran_as_stored

    # A secret given with --set is stored masked: quoted, it still loads (its value names
    # no workdir file; the spec packed is the run's own, masked to be rerun).
    overrides = tuple(_quoted_mask(o) for o in options.overrides)
    try:
        # A file of the spec's `files` gone since the run is refused below, by name, not
        # said as a spec that no longer loads.
        spec = load_spec(stored, overrides, files=False)
        plan = plan_run(spec, options.with_changes(shard=None))
    except SpecError as exc:
        warnings.append(f"the spec no longer loads ({exc}): the bundle has no workdir files")
        return _Sources(_bare(stored), kept, tuple(warnings))
    gone = _gone_files(spec, plan.attempts)
    if gone:
        # Packed without it, tree/spec.yaml still lists it: the archive's run is refused
        # wherever it is unpacked (the bundle was written, exit 0, with a warning). Taking
        # it out of the packed spec would run a program that reads it: refused here.
        raise UsageError(
            f"{stored} lists in `files` what is gone since run {run.run_id}: "
            f"{', '.join(gone)}. A bundle without it could not rerun: its spec lists it, and "
            "a spec whose `files` are not in its workdir does not validate. Put it back and "
            "bundle again (or, if the program no longer needs it, take it out of `files`, "
            "run the spec, and bundle that run)"
        )
    if (
        options.runner == "local"
        and options.python is not None
        and any(a.environment.packages for a in plan.attempts)
    ):
        # Its cells' packages were an interpreter of this machine's (`--python PATH`, a
        # capture's): a recipient has no such path, and the archive's `reprospec run FILE`
        # on reprospec's own interpreter was an infra-error (sqlparse is not installed), as
        # was `bundle --verify`'s, "not verified", exit 1. The venv runner builds
        # an environment with the packages the run checked its interpreter had.
        kept["runner"] = "venv"
    if not ran_as_stored(spec, run.spec_text):
        warnings.append(f"{stored} changed since the run: its workdir files are today's")
    tree = spec_tree(stored, spec.document, plan.attempts, max_file_bytes=MAX_FILE_BYTES)
    warnings += _files_since(run, run_dir, spec.base_dir, tree, stored, as_now=as_now)
    return _Sources(tree, kept, (*warnings, *tree.warnings), dict(spec.document))


def _files_since(
    run: RunResult, run_dir: Path, base: Path, tree: SpecTree, stored: Path, *, as_now: bool
) -> list[str]:
    """Refuse (UsageError) a run whose program's files changed or went since it ran, by the
    digests it recorded (sincerun.py); the warning where they could not be checked, or,
    with `as_now`, one per changed file packed as it is now.

    Packed as they are now, the bundle's tree is not the program its report says ran: the
    bundle of a passing run whose config was edited since crashed wherever it was rerun,
    exit 0 and no word (the bundle of a failing run after the fix carried the fix). A
    program that writes one of its own inputs (a resumed state file saved back) changes it
    in every run, so running again cannot help: the refusal says which files the run itself
    wrote and names --as-now, which packs them with a warning. A file that is gone cannot be
    packed at all: refused with or without it."""
    from reprospec.export.sincerun import since_run

    since = since_run(run.environment, run_dir, base, tree.files, _ran(run, run_dir))
    where = base.resolve()
    if since.gone or (since.changed and not as_now):
        if since.written and not since.gone:
            wrote = ", ".join(since.written)
            advice = (
                f"The run itself last wrote {wrote} (modified while it ran): its program "
                "writes its own input, so a new run would change it again. Pack them as they "
                f"are now with bundle --as-now (a warning names each), or put them back as "
                "they were and bundle again"
            )
        else:
            advice = (
                "Put them back as they were and bundle again, or run the spec "
                f"(reprospec run {shlex.quote(str(stored))}) and bundle that run"
                + ("" if since.gone else " (or pack them as they are now with bundle --as-now)")
            )
        raise UsageError(
            f"the program's files are not as run {run.run_id} read them (by the digests it "
            f"recorded): {', '.join(since.named())} (in {where}). A bundle packs "
            f"them as they are now: it would not be the program its report says ran. {advice}"
        )
    if since.changed:
        return [
            f"--as-now: {name} (in {where}) "
            + (
                "was written by the run itself: it is packed as the run left it, not as the "
                "run read it"
                if name in since.written
                else "changed since the run: it is packed as it is now, not as the run read it"
            )
            for name in since.changed
        ]
    if since.unchecked is not None:
        return [
            f"whether the program's files changed since run {run.run_id} cannot be told "
            f"({since.unchecked}): they are packed as they are now"
        ]
    return []


def _ran(run: RunResult, run_dir: Path) -> tuple[float, float] | None:
    """The run's start and end (epoch seconds), None where its record has none.

    `started` is stored to the second, cut down, so it is never after the real start. The
    end is results.json's modification time, written once the last attempt ended: a
    program's last write is before it, and a user's edit a moment after the run is after
    it (`finished`, cut to the second, could not tell those apart)."""
    from datetime import datetime

    try:
        start = datetime.fromisoformat(run.started).timestamp()
        end = datetime.fromisoformat(run.finished).timestamp() + 1.0
    except ValueError:
        return None
    with contextlib.suppress(OSError):
        end = (run_dir / "results.json").stat().st_mtime
    return (start, end)


def _gone_files(spec: Spec, attempts: Sequence[AttemptPlan]) -> list[str]:
    """The entries of the spec's `files` that are not a file of their cell's workdir now,
    each with its index and workdir, as validation would say of them."""
    listed = spec.document.get("files")
    gone: dict[str, None] = {}
    for workdir in dict.fromkeys(attempt.workdir.resolve() for attempt in attempts):
        for index, name in enumerate(listed if isinstance(listed, list) else []):
            path = os.path.join(workdir, os.path.expanduser(str(name)))  # noqa: PTH111,PTH118
            if not os.path.isfile(path):  # noqa: PTH113
                gone.setdefault(f"files[{index}] {str(name)!r} (in {workdir})", None)
    return list(gone)


def _bare(spec: Path) -> SpecTree:
    """The tree of a spec whose files cannot be found: the spec's place alone."""
    return SpecTree(spec, spec.parent, (), (), (), None)


def _quoted_mask(override: str) -> str:
    from reprospec.core.redact import MASK

    path, sep, value = override.partition("=")
    return f"{path}={json.dumps(value)}" if sep and MASK in value else override


def _spec_place(run: RunResult, sources: _Sources) -> str:
    if sources.spec_gone:
        place = Path(run.spec_path).name or "spec.yaml"
    else:
        place = sources.tree.place(sources.tree.spec)
    # The bundle holds the spec's YAML (run.spec_text), not the markdown a run of an issue.md
    # or a report.md read it from: under the .md name the rerun looked for a fenced block
    # in it and refused the bundle ("no ```yaml block").
    if PurePosixPath(place).suffix.lower() == ".md":
        place += ".yaml"
    return place


def _log_files(cells: Path) -> Iterator[Path]:
    if not cells.is_dir():
        return
    for folder, dirs, names in os.walk(cells):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            path = Path(folder) / name
            if name == "core" or name.startswith("core."):
                continue  # a core dump is this machine's memory; gdb's reading of it stays
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= _LOG_FILE_BYTES:
                yield path


def _info(name: PurePosixPath, size: int, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.as_posix())
    info.size, info.mode, info.mtime = size, mode, int(time.time())
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add_text(tar: tarfile.TarFile, name: PurePosixPath, text: str) -> None:
    data = text.encode("utf-8")
    tar.addfile(_info(name, len(data)), io.BytesIO(data))


def _add_folder(tar: tarfile.TarFile, name: PurePosixPath) -> None:
    info = _info(name, 0, 0o755)
    info.type = tarfile.DIRTYPE
    tar.addfile(info)


class _ReportNames:
    """report.md's paths named as `names` does, but for the spec it embeds: the block its
    first line's digest is of, which `reprospec run report.md` reruns (named, it no longer
    matched, and the packed report did not rerun). Its first line names `spec`, the packed
    spec beside it (`tree/s.yaml`): the sender's `s.yaml` named a file the unpacked folder
    lacks, so the spec's workdir was looked for beside report.md, where no tree/ file is,
    and `reprospec run RUN_ID/report.md` was refused (`workdir: folder not found`).
    An interrupted run's `--resume` is its sender's (`archive`: what the recipient reruns)."""

    def __init__(self, names: PathNames, spec: str, archive: str = "THIS-FILE.tar.gz") -> None:
        self._names = names
        self._spec = spec
        self._archive = archive

    def data(self, data: bytes) -> bytes:
        from reprospec.core.reportspec import MarkerError, find_marked_spec, marker_line

        text = data.decode("utf-8", "surrogateescape")
        try:
            marked = find_marked_spec(text)
        except MarkerError:
            marked = None
        lines = text.split("\n")
        start = marked.line_offset if marked else 0
        kept = range(start, start + marked.text.count("\n")) if marked else range(0)
        comments = {start + at for at in _comment_lines(marked.text)} if marked else set()
        shown = [
            (self._names.shorten(line) if at in comments else line)
            if at in kept
            else _for_recipient(_logs_linked(self._names.shorten(line)), self._archive)
            for at, line in enumerate(lines)
        ]
        if marked is not None and shown[0].startswith("<!-- reprospec:spec "):
            # The digest of the block as packed: its comments' paths are named too.
            shown[0] = marker_line(_comments_named(marked.text, self._names), self._spec)
        return "\n".join(shown).encode("utf-8", "surrogateescape")


class _SpecNames:
    """The run folder's spec.yaml as packed: as it ran, its comment lines' paths named."""

    def __init__(self, names: PathNames) -> None:
        self._names = names

    def data(self, data: bytes) -> bytes:
        text = data.decode("utf-8", "surrogateescape")
        return _comments_named(text, self._names).encode("utf-8", "surrogateescape")


def _comments_named(text: str, names: PathNames) -> str:
    """A spec's text with the paths of its whole-line comments named as `names` does: a
    comment is no part of what a rerun runs (a value's trailing `# ...` is left: where a
    value ends is YAML's to say)."""
    comments = _comment_lines(text)
    return "\n".join(
        names.shorten(line) if at in comments else line for at, line in enumerate(text.split("\n"))
    )


def _comment_lines(text: str) -> set[int]:
    """The lines of a spec's `text` (0-based) that are whole-line comments, as YAML reads
    them: a `#` line inside a block scalar (`command: |` holding a heredoc's `# /home/...`,
    a `#!` line) is the value's, what a rerun runs, and was named as a comment, the
    recipient's command changed. None where the text does not scan: nothing is named."""
    import yaml

    try:
        tokens = list(yaml.scan(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return set()
    inside: set[int] = set()
    for token in tokens:
        if isinstance(token, yaml.ScalarToken):
            end = token.end_mark  # (at a line's start where a block scalar ends before it)
            inside.update(range(token.start_mark.line, end.line + (end.column > 0)))
    return {
        at
        for at, line in enumerate(text.split("\n"))
        if line.lstrip().startswith("#") and at not in inside
    }


# An interrupted run's report tells its reader to `--resume` it: the banner's command and
# each cell's "--resume finishes it". A bundle's recipient has no store to resume from.
_RESUME_BANNER = re.compile(r"(`reprospec run --resume [^`]+`) finishes it")
_RESUME_CELL = re.compile(r"(?<![\w`-])--resume finishes it")


def _for_recipient(line: str, archive: str) -> str:
    """A line of an interrupted run's report as its bundle's recipient may act on it: the
    `--resume` that finishes the run is its sender's, whose store the run is in (the packed
    report told the recipient to run a command that says "no results store" there), and
    `reprospec run ARCHIVE` runs it again whole."""
    line = _RESUME_BANNER.sub(
        lambda found: (
            f"its sender's {found.group(1)} finishes it, from the run's store; "
            f"`reprospec run {archive}` runs it again whole"
        ),
        line,
    )
    return _RESUME_CELL.sub("its sender's --resume finishes it", line)


def _logs_linked(line: str) -> str:
    """A line of report.md with its links into the run folder's `cells/` (`Full native
    stacks: [cells/x/1/native-stacks.txt](...)`) made the bundle's `logs/cells/`, where the
    archive packs them: the packed report's links pointed at no file."""
    return line.replace("](cells/", "](logs/cells/")


def _add_file(
    tar: tarfile.TarFile,
    name: PurePosixPath,
    path: Path,
    redactor: Redactor,
    paths: PathNames | _ReportNames | _SpecNames | None = None,
) -> None:
    # Read through the path's target: the archive holds contents, never a link. Files are
    # at most _LOG_FILE_BYTES (logs): read whole, to be masked (and their paths named).
    with path.open("rb") as handle:
        data = redactor.data(handle.read())
    if paths is not None:
        data = paths.data(data)
    _add_data(tar, name, path, data)


def _add_data(tar: tarfile.TarFile, name: PurePosixPath, path: Path, data: bytes) -> None:
    mode = 0o755 if os.access(path, os.X_OK) else 0o644
    tar.addfile(_info(name, len(data), mode), io.BytesIO(data))


_CELL_JSON_BYTES = 1 << 20


def _run_redactor(
    run: RunResult, run_dir: Path, document: Mapping[str, JsonValue] | None
) -> Redactor:
    """The secrets of the run, as far as this machine can still tell them.

    This engine's environment may no longer hold what the run's did, so the attempt's own
    cell.json is read too: a value it shows under a secret-looking name, or under a name
    the spec reads from the engine, is a secret wherever the packed files hold it.
    """
    base = Redactor.for_spec(document or {})
    named = dict.fromkeys(base.values, "")
    named.update(base.names)
    if document:
        read = set(env_names_read(document)) - public_env(document)
    else:  # the spec file is gone: its text, less the names the mask itself wrote
        read = set(_ENV_READ.findall(run.spec_text)) - set(Redactor.masked_names(run.spec_text))
    cells = run_dir / "cells"
    for path in sorted(cells.rglob(CELL_JSON)) if cells.is_dir() else ():
        try:
            if path.is_symlink() or path.stat().st_size > _CELL_JSON_BYTES:
                continue
            data = json.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        environment = data.get("environment") if isinstance(data, dict) else None
        env = environment.get("env") if isinstance(environment, dict) else None
        for key, value in env.items() if isinstance(env, dict) else ():
            if isinstance(value, str) and (sets_secret(key, value) or key in read):
                named.setdefault(value, key)
    # A variable the run read unset gave its child no value to mask (its record says so,
    # store/specvariables.py): asking for it "as the run had it" asked for nothing.
    unset = {n for n, r in read_as(run.environment.get(VARIABLES)).items() if r.kind == "unset"}
    unknown = sorted(read - set(named.values()) - unset - {n for n, v in os.environ.items() if v})
    if unknown:
        # What the child was given from them may be in its logs: unmaskable, so not packed.
        their, them = ("its value", "it") if len(unknown) == 1 else ("their values", "them")
        raise UsageError(
            f"the run read {', '.join(unknown)} from its environment, which this one does "
            f"not hold: the bundle cannot mask {their} in the logs; set {them} as the run "
            f"had {them} and bundle again"
        )
    # A secret as a JSON file writes it (a quote or a backslash escaped) is masked too.
    for value, key in list(named.items()):
        named.setdefault(json.dumps(value)[1:-1], key)
    return Redactor(named, names={v: k for v, k in named.items() if k})


def _standalone_place(run: RunResult, sources: _Sources, spec_rel: str) -> str | None:
    """Where in `tree/` the standalone command runs: its workdir's place there (None: not
    a command, or a workdir the tree does not hold)."""
    standalone = run.standalone
    if standalone is None or standalone.kind != "command" or sources.spec_gone:
        return None
    workdir = Path(standalone.workdir)
    if not workdir.is_absolute():
        workdir = sources.tree.root / PurePosixPath(spec_rel).parent / workdir
    try:
        return workdir.resolve().relative_to(sources.tree.root.resolve()).as_posix()
    except ValueError:
        return None


def _readme(
    run: RunResult,
    manifest: dict[str, object],
    files: Sequence[str],
    place: str | None = None,
    document: Mapping[str, JsonValue] | None = None,
    masked: Sequence[str] = (),
    *,
    replaced: Sequence[str] = (),
    interrupted: bool = False,
    archive: str = "THIS-FILE.tar.gz",
) -> str:
    spec = manifest["spec"]
    options = manifest.get("options")
    if not isinstance(options, dict):
        options = {}
    runner = options.get("runner")
    # What `reprospec run ARCHIVE` gives the spec from the manifest (`--runner`,
    # `--preload`, `-m`, `-j`, `--repeat`, `--first-attempt`, `--timeout`, `--observe`, stop_on),
    # by the rule a report's rerun is written by: without them, the spec run by hand ran
    # every cell once (a `-m` run of 1 cell of 4 ran all 4). The manifest keeps the timeout
    # in seconds; the rule reads it as the store does.
    timeout = options.get("timeout_s")
    stored = {
        **options,
        "timeout": format_duration(float(timeout))
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        else None,
    }
    rerun = rerun_command(stored, f"{run.run_id}/{spec}")
    if manifest.get("workdir") is not None:
        # The spec names the sender's absolute workdir: run as it is, it looks there.
        moved = PurePosixPath(run.run_id, str(manifest["workdir"]))
        rerun += f' --set environment.workdir="$PWD/{moved}"'
    lines = [
        f"# {run.title or run.spec_name}",
        "",
        f"A reprospec bundle of run `{run.run_id}` of the spec `{run.spec_name}`: the spec,",
        "the report, the logs of every attempt, and the files of the workdir its cells name.",
        "",
        "Rerun it (reprospec unpacks it safely under `.reprospec/bundles/` and runs the spec",
        "with the run's `-m` filters, `-j`, `--repeat`, `--timeout`, `--preload`, observe mode,"
        " first attempt number and `stop_on`"
        + (
            f", on the {runner} runner it ran on):"
            if runner and runner == run.runner
            else f", on the {runner} runner, which installs its cells' packages: the run "
            "ran them with `--python`, an interpreter of its own machine's):"
            if runner
            else "):"
        ),
        "",
        f"    reprospec run {shlex.quote(archive)}",
        "",
        *(
            [
                "Its cells' packages are installed from the spec's requirements (uv's index,",
                "or add `--find-links DIR` for a wheelhouse of your own): a range",
                "(`six<1.17`) gets the newest release it allows then, which may",
                "be newer than the run's (report.md's standalone repro names what its cell had).",
                "",
            ]
            if runner == "venv"
            else []
        ),
        f"Or unpack it and run the spec yourself: `{rerun}`.",
        "`report.md` is the bug report; `logs/cells/CELL/N/` holds attempt N of each cell.",
    ]
    first = options.get("first_attempt")
    if isinstance(first, int) and not isinstance(first, bool) and first != 1:
        # A search's probe: `reprospec run ARCHIVE` and the command above number from it.
        lines.append(
            f"Its attempts were numbered from {first} (a search's probe): `reprospec run` "
            f"of the archive and the command above (`--first-attempt {first}`) number them "
            "so too; without it they are numbered from 1, so a `${{ attempt }}` seed or a "
            "fault's `probability` draws other values."
        )
    lacks = _lacks(run)
    if lacks:
        # The recipient reads report.md first: that it shows no outcome, or judged a cell on
        # some of its attempts only, is the run's doing, not the program's.
        lines.append(
            "The run was interrupted before it ended: "
            + (
                "no attempt had ended, so report.md shows no outcome"
                if _not_run(run) == len(run.cells)
                else f"{lacks}, and report.md shows only what ran"
            )
            + "; `reprospec run` of the bundle runs its cells again."
        )
    if interrupted:
        lines.append(
            f"`logs/cells/CELL/N{INTERRUPTED}/` holds what attempt N wrote before its run was "
            "killed; `--resume` ran it again in `N/`, which the report reads."
        )
    if run.standalone is not None and not run.standalone.unavailable:
        if run.standalone.script:
            lines += [
                "",
                "Without reprospec: `repro.py` reproduces cell "
                f"`{run.standalone.cell}` with plain `python repro.py` (torch only).",
            ]
        else:
            folder = PurePosixPath(str(spec)).parent
            line = run.standalone.run
            if place is not None:
                # The command runs in its workdir's place in the tree, not after the report's
                # `cd` into the workdir: that one can be the sender's absolute path (a spec's
                # absolute workdir, or one more than two folders up), not the recipient's.
                folder = PurePosixPath("tree") / place
                for glue in (" && ", "\n"):
                    cd = f"cd {shlex.quote(run.standalone.workdir)}{glue}"
                    if line.startswith(cd):
                        line = line[len(cd) :]
                        break
            lines += [
                "",
                f"Without reprospec, cell `{run.standalone.cell}` is "
                f"`{line}`, run in `{run.run_id}/{folder}/`.",
            ]
            # What that command line leaves out (environment.perturb, an image, a memory
            # limit), as the report's standalone repro says.
            lines += [f"Not in that command line: {note}." for note in run.standalone.notes]
    read = list(dict.fromkeys(env_names_read(dict(document)))) if document else []
    if read:
        # Read from the rerunning engine's environment, never carried: unset, they read as
        # null, and the rerun passed with no word of why. Each as the run read it (its
        # record, store/specvariables.py): the bare name `CODE` let a recipient export
        # CODE=0 and rerun another program than the run's CODE=3.
        ran = read_as(run.environment.get(VARIABLES))
        # "Export them first" after "leave it unset" told the recipient both of one name.
        unset = sum(name in ran and ran[name].kind == "unset" for name in read)
        ending = "; export them first."
        if unset:
            ending = "; export the others first." if unset < len(read) else "."
        lines += [
            "",
            "The spec reads these variables of the environment reprospec runs in (not in "
            "the bundle), here as the run had them: "
            + ", ".join(_as_run(name, ran.get(name)) for name in read)
            + ending,
        ]
    if replaced:
        # The spec had these secrets written in, so no `${{ env.X }}` read them and the
        # sentence above left them out: the rerun passed on empty values, with no word of
        # which to set.
        # One sentence for them all: each name's own read `Export A first (...): Export B
        # first (...): ...`, a sentence cut off after each.
        one = len(replaced) == 1
        lines += [
            "",
            "Export "
            + ", ".join(f"`{name}`" for name in replaced)
            + (
                " first (the spec had it written in; the bundle leaves it out): "
                "the bundle's spec reads it"
                if one
                else " first (the spec had them written in; the bundle leaves them out): "
                "the bundle's spec reads them"
            )
            + " from the environment reprospec runs in.",
        ]
    if files:
        lines += ["", "Files the cells name:", ""] + [
            f"- `tree/{printable(name, one_line=True)}`"
            for name in files  # a newline written out
        ]
    lines += [
        "",
        "Only those are carried: not the rest of the workdir, and never a hidden file "
        "(`.env`, `.git/`, `.ssh/`): if the program reads one, supply your own.",
    ]
    if masked:
        lines += ["", "Secrets masked in the files above (put your own values back):", ""]
        lines += [f"- {line}" for line in masked]
    return "\n".join(lines) + "\n"


def _as_run(name: str, read: ReadAs | None) -> str:
    """One variable of the README's sentence: `CODE=3` for a public one (shell-quoted), a
    secret only as set (its value is never kept, and never carried), an unset one as such;
    the bare name where the run kept no record of it."""
    if read is None:
        return f"`{name}`"
    if read.kind == "value":
        return f"`{name}={shlex.quote(read.value or '')}`"
    if read.kind == "secret":
        return f"`{name}` (a secret, set in the run: export your own)"
    return f"`{name}` (unset in the run: leave it unset)"


# -- unpacking -------------------------------------------------------------------------


def unpack(archive: Path, bundles: Path) -> Unpacked:
    """Unpack `archive` (checked, once) under `bundles/` and read its manifest.

    Under a lock on the bundles folder itself (flock on the folder: no file is added to
    it): a second engine given the same bundle waits for the first to finish unpacking,
    then reuses its tree, never replaces it under the run that uses it. Staging folders
    an engine killed mid-unpack left are removed first.
    """
    digest = _sha256(archive)
    root = bundles / digest[:16]
    bundles.mkdir(parents=True, exist_ok=True)
    with _locked(bundles):
        if not (root / ".complete").is_file():
            _remove_stale_staging(bundles)
            staging = Path(tempfile.mkdtemp(prefix=f".unpack-{os.getpid()}-", dir=bundles))
            try:
                extract(archive, staging)
                (staging / ".complete").write_text(digest + "\n")
                if root.exists():  # a half-unpacked leftover of an interrupted run
                    shutil.rmtree(root)
                staging.replace(root)
            finally:
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
    try:
        return _read_manifest(archive, root)
    except UsageError:
        # Refused (no manifest, a bad one): no run will use this tree, and a tar.gz that
        # is no bundle stayed unpacked under bundles/, marked complete.
        with _locked(bundles):
            shutil.rmtree(root, ignore_errors=True)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_stale_staging(bundles: Path) -> None:
    """Remove `.unpack-PID-*` folders whose engine (PID) is gone."""
    for folder in bundles.glob(".unpack-*"):
        pid = folder.name.split("-")[1]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _member_path(archive: Path, member: tarfile.TarInfo) -> PurePosixPath:
    name = member.name
    where = f"bundle {archive.name}: member {name[:200]!r}"
    if not name or len(name) > MAX_NAME_CHARS or "\0" in name or "\\" in name:
        raise UsageError(f"{where}: not a usable name")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise UsageError(f"{where}: an absolute path")
    parts = [p for p in path.parts if p != "."]
    if not parts or ".." in parts:
        raise UsageError(f"{where}: a path outside the bundle")
    if len(parts) > MAX_DEPTH:
        raise UsageError(f"{where}: a path more than {MAX_DEPTH} folders deep")
    if member.issym() or member.islnk():
        raise UsageError(f"{where}: a link ({member.linkname[:200]!r}); bundles hold files only")
    if not (member.isfile() or member.isdir()):
        raise UsageError(f"{where}: not a file or a folder")
    return PurePosixPath(*parts)


@frozen
class Scanned:
    """What an archive holds, read from its raw headers: members and bytes of files."""

    members: int
    total_bytes: int


_BLOCK = 512
# PAX ('x', 'g') and GNU long-name ('L', 'K') records: tarfile reads each whole into
# memory before anything else is checked (a 1 GiB one took 3 GB), so they are bounded here.
_META_TYPES = {
    b"x": "PAX header",
    b"g": "PAX global header",
    b"L": "GNU long name",
    b"K": "GNU long link name",
}


def _number(field: bytes) -> int:
    if field[:1] and field[0] & 0x80:  # base-256 (GNU): a big size
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\0", 1)[0].strip() or b"0"
    return int(text, 8)


def scan(archive: Path) -> Scanned:
    """Read the raw 512-byte headers of `archive` before `tarfile` reads anything, and
    refuse it (UsageError) when a PAX or GNU long-name record is over MAX_META_BYTES, a
    file is over MAX_FILE_BYTES, or the members or bytes are over their bounds. Reads
    the archive once, a block at a time: memory stays at a block and one bounded record."""
    where = f"bundle {archive.name}"
    members = total = 0
    pax_size: int | None = None
    try:
        with gzip.open(archive, "rb") as stream:
            while True:
                header = stream.read(_BLOCK)
                if len(header) < _BLOCK or header == bytes(_BLOCK):
                    break  # the end (two zero blocks), or a short archive tarfile will refuse
                kind = header[156:157]
                try:
                    size = _number(header[124:136])
                except ValueError:
                    raise UsageError(f"{where}: damaged archive (a header's size)") from None
                data = b""
                if kind in _META_TYPES:
                    if size > MAX_META_BYTES:
                        raise UsageError(
                            f"{where}: a {_META_TYPES[kind]} record of {size} bytes "
                            f"(at most {MAX_META_BYTES}): refused unread"
                        )
                    data = stream.read(size)
                    stream.read(-size % _BLOCK)
                    if kind == b"x":
                        pax_size = _pax_size(data)
                    continue
                members += 1
                if members > MAX_MEMBERS:
                    raise UsageError(f"{where}: more than {MAX_MEMBERS} members")
                if pax_size is not None:
                    size, pax_size = pax_size, None
                if kind in (b"0", b"\0", b"7"):
                    if size > MAX_FILE_BYTES:
                        raise UsageError(
                            f"{where}: a file of {size} bytes (at most {MAX_FILE_BYTES} per file)"
                        )
                    total += size
                    if total > MAX_TOTAL_BYTES:
                        raise UsageError(f"{where}: more than {MAX_TOTAL_BYTES} bytes unpacked")
                elif kind not in (b"1", b"2", b"3", b"4", b"5", b"6"):
                    raise UsageError(f"{where}: a member of unknown type {kind!r}")
                _skip(stream, size + (-size % _BLOCK))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UsageError(f"{where}: not a .tar.gz archive ({exc})") from None
    return Scanned(members, total)


def _skip(stream: gzip.GzipFile, count: int) -> None:
    while count > 0:
        block = stream.read(min(count, 1 << 20))
        if not block:
            return
        count -= len(block)


def _pax_size(data: bytes) -> int | None:
    """The `size` a PAX record gives the next member (it overrides the header's)."""
    for line in data.split(b"\n"):
        _, _, record = line.partition(b" ")
        key, _, value = record.partition(b"=")
        if key == b"size" and value.isdigit():
            return int(value)
    return None


def extract(archive: Path, dest: Path) -> int:
    """Extract the checked members of `archive` into the empty folder `dest`; returns files."""
    scan(archive)  # the raw headers first: tarfile reads a PAX record whole
    total = members = 0
    try:
        tar = tarfile.open(archive, "r:gz")  # noqa: SIM115 - closed below
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UsageError(f"bundle {archive}: not a .tar.gz archive ({exc})") from None
    with tar:
        try:
            for member in tar:
                members += 1
                if members > MAX_MEMBERS:
                    raise UsageError(f"bundle {archive.name}: more than {MAX_MEMBERS} members")
                rel = _member_path(archive, member)
                target = dest.joinpath(*rel.parts)
                if member.isdir():
                    _mkdirs(dest, rel.parts)
                    continue
                if member.size > MAX_FILE_BYTES:
                    raise UsageError(
                        f"bundle {archive.name}: {rel} is {member.size} bytes "
                        f"(at most {MAX_FILE_BYTES} per file)"
                    )
                total += member.size
                if total > MAX_TOTAL_BYTES:
                    raise UsageError(
                        f"bundle {archive.name}: more than {MAX_TOTAL_BYTES} bytes unpacked"
                    )
                _mkdirs(dest, rel.parts[:-1])
                source = tar.extractfile(member)
                if source is None:
                    raise UsageError(f"bundle {archive.name}: {rel} cannot be read")
                _write_new(target, source, member.size, executable=bool(member.mode & 0o111))
        except (tarfile.TarError, EOFError, OSError) as exc:
            if isinstance(exc, FileExistsError):
                raise UsageError(f"bundle {archive.name}: a member is given twice") from None
            raise UsageError(f"bundle {archive}: damaged archive ({exc})") from None
    return members


def _mkdirs(dest: Path, parts: Sequence[str]) -> None:
    """Create dest/parts... one level at a time, refusing anything that is not a real folder."""
    folder = dest
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir(0o755)
        except FileExistsError:
            if folder.is_symlink() or not folder.is_dir():
                raise UsageError(f"bundle: {folder.relative_to(dest)} is not a folder") from None


def _write_new(target: Path, source: IO[bytes], size: int, *, executable: bool) -> None:
    """Create `target` (never an existing file, never through a link) with `size` bytes."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, 0o755 if executable else 0o644)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while True:
            block = source.read(min(1 << 20, size - written + 1))
            if not block:
                break
            written += len(block)
            if written > size:
                raise UsageError(f"bundle: {target.name} holds more than its header says")
            out.write(block)


def _read_manifest(archive: Path, root: Path) -> Unpacked:
    tops = [p for p in root.iterdir() if p.is_dir()]
    where = f"bundle {archive.name}"
    if len(tops) != 1 or not (tops[0] / MANIFEST).is_file():
        raise UsageError(f"{where}: not a reprospec bundle (no single folder with {MANIFEST})")
    top = tops[0]
    try:
        if (top / MANIFEST).stat().st_size > MAX_MANIFEST_BYTES:
            raise UsageError(f"{where}: {MANIFEST} is over {MAX_MANIFEST_BYTES} bytes")
        data = json.loads((top / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise UsageError(f"{where}: {MANIFEST} cannot be read ({why})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{where}: {MANIFEST} is not a format-{FORMAT} manifest")
    spec = _inside(top, data.get("spec"), where)
    if not spec.is_file():
        raise UsageError(f"{where}: the spec {data.get('spec')!r} is missing")
    options = data.get("options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise UsageError(f"{where}: {MANIFEST}: options is not a mapping")
    overrides: tuple[str, ...] = ()
    if data.get("workdir") is not None:
        # Absolute: a relative `workdir` is read from the spec's folder, not from here, so
        # the unpacked tree under a relative `--out` (the default `.reprospec`) named a
        # folder inside the spec's own (`tree/specs/.reprospec/bundles/...`) that is not there.
        workdir = _inside(top, data.get("workdir"), where).absolute()
        overrides = (f"environment.workdir={json.dumps(str(workdir))}",)
    return Unpacked(root=top, spec=spec, overrides=overrides, **_run_options(options, where))


def _run_options(options: Mapping[str, object], where: str) -> _BundledOptions:
    """The original run's options from the manifest, checked with the bounds the CLI's
    `--repeat` and `--timeout` have (core/bounds.py): a bundle comes from a ticket, and a
    `repeat` of 10^12 in its manifest is refused as `--repeat 1000000000000` is."""
    checked: _BundledOptions = {}
    at = f"{where}: {MANIFEST}: options"
    if (repeat := _count_option(options, "repeat", MAX_REPEAT, at)) is not None:
        checked["repeat"] = repeat
    if (jobs := _count_option(options, "jobs", MAX_PARALLEL, at)) is not None:
        checked["jobs"] = jobs
    timeout = options.get("timeout_s")
    if timeout is not None:
        try:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise ValueError(f"expected a number of seconds, got {timeout!r}")
            checked["timeout_s"] = positive_duration(timeout)
        except ValueError as exc:
            raise UsageError(f"{at}.timeout_s: {exc}") from None
    filters = options.get("matrix_filters")
    if filters is not None:
        if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
            raise UsageError(f"{at}.matrix_filters: expected a list of AXIS=VALUE strings")
        if len(filters) > MAX_MATRIX_FILTERS:
            raise UsageError(f"{at}.matrix_filters: more than {MAX_MATRIX_FILTERS} filters")
        checked["matrix_filters"] = tuple(filters)
    observe = options.get("observe")
    if observe is not None:
        if not isinstance(observe, bool):
            raise UsageError(f"{at}.observe: expected true or false, got {observe!r}")
        checked["observe"] = observe
    runner = options.get("runner")
    if runner is not None:
        from reprospec.runners import RUNNERS  # those --runner offers

        if runner not in RUNNERS:
            raise UsageError(f"{at}.runner: expected one of {', '.join(RUNNERS)}, got {runner!r}")
        checked["runner"] = str(runner)
    preload = options.get("preload")
    if preload is not None:
        if not isinstance(preload, list) or not all(
            isinstance(name, str) and name and all(p.isidentifier() for p in name.split("."))
            for name in preload
        ):
            raise UsageError(f"{at}.preload: expected a list of module names, got {preload!r}")
        checked["preload"] = tuple(preload)
    first = options.get("first_attempt")
    if first is not None:
        if isinstance(first, bool) or not isinstance(first, int) or first < 1:
            raise UsageError(f"{at}.first_attempt: expected a whole number >= 1, got {first!r}")
        checked["first_attempt"] = first
    stop_on = options.get("stop_on")
    if stop_on is not None:
        from reprospec.core.runoptions import STOP_ON

        if stop_on not in STOP_ON:
            raise UsageError(f"{at}.stop_on: expected one of {', '.join(STOP_ON)}, got {stop_on!r}")
        checked["stop_on"] = str(stop_on)
    return checked


def _count_option(options: Mapping[str, object], name: str, most: int, at: str) -> int | None:
    """The manifest's option `name` as a count from 1 to `most`, as its CLI option takes it
    (None where the manifest has none); else a UsageError at `at.name`."""
    value = options.get(name)
    if value is None:
        return None
    try:
        return count_within(value, most)
    except ValueError as exc:
        raise UsageError(f"{at}.{name}: {exc}") from None


def _inside(top: Path, value: object, where: str) -> Path:
    """A manifest path: relative, inside the bundle, as a path on disk."""
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: {MANIFEST} names no path")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts:
        raise UsageError(f"{where}: {MANIFEST} names {value!r}, outside the bundle")
    return top.joinpath(*path.parts)
