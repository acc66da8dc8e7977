"""The Python API: what the CLI does, for code that drives the engine (isolate, bisect, pytest).

    import reprospec

    spec = reprospec.load_spec("specs/segfault.yaml")
    result = reprospec.run(spec, reprospec.RunOptions(repeat=3, jobs=2))
    for cell in result.cells:
        print(cell.cell.id, cell.verdict, cell.rate.matched, "/", cell.rate.attempts)
    print(reprospec.render(result, "md"))

Every function here is also reachable as `reprospec.NAME`, as are the searches
(`reprospec.isolate_spec`, `bisect_spec`, `minimize_spec`, `amplify_spec`: investigate.py).
Errors are the `reprospec.errors` classes: `SpecError` (bad spec, located), `UsageError`,
`InfraError` (nothing could run); each carries the CLI's exit code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.answers import Answer
from reprospec.core.caller import from_api
from reprospec.core.inputs import Spec
from reprospec.core.results import RunResult
from reprospec.core.runoptions import (
    RunOptions,
    Shard,
    Words,
    optional_path,
    run_options,
    string_sequence,
)
from reprospec.errors import UsageError
from reprospec.outcome.judge import exit_code_for
from reprospec.pipeline.scheduler import ProgressCallback
from reprospec.plan.run import RunPlan
from reprospec.spec.validate import Validation

if TYPE_CHECKING:
    # Read at first use: `import reprospec.api` (the CLI's run) does not pay for compare's views.
    from reprospec.report.compare import RunComparison


@from_api
def load_spec(path: str | Path, overrides: Words = (), *, files: bool = True) -> Spec:
    """Read, override (`PATH=VALUE` as `--set` takes them) and validate one spec file.

    A spec file (`.yaml`) or a report (`report.md`) that embeds one. Raises
    SpecError listing every problem as `file:line:col: path: message`. `files=False`:
    the spec's `files` are not looked for in the workdir (a reader that only names or
    plans it); every other check holds.
    """
    from reprospec.spec import load as spec

    _path("path", path)
    if not isinstance(files, bool):
        # A true str ("no") read as True, as RunOptions' flags refuse one (runoptions.py).
        raise UsageError(f"files takes True or False, got {files!r}")
    return spec.load_spec(path, string_sequence("overrides", overrides), files=files)


@from_api
def validate(paths: str | Path | Iterable[str | Path]) -> Validation:
    """Check spec files (folders are searched for *.yaml / *.yml); never raises on bad specs.

    One path may be given alone: a str is iterable, and read as paths it was one "no such
    file" problem per character of its name.
    """
    from reprospec.plan.missing import missing_script_notes
    from reprospec.spec import validate as validation

    if isinstance(paths, (str, PathLike)):
        return validation.validate([paths], missing_script_notes)
    if not isinstance(paths, Iterable):
        raise UsageError(f"validate takes a path or paths, got {paths!r}")
    listed = list(paths)
    for path in listed:
        _path("validate", path)
    return validation.validate(listed, missing_script_notes)


@from_api
def plan_run(spec: Spec | str | Path, options: RunOptions | None = None) -> RunPlan:
    """The cells and every attempt `run` would execute with these options; runs nothing.

    `spec` is a loaded Spec or a path (loaded with `options.overrides`), as `run` takes it:
    a path raised "'str' object has no attribute 'document'".
    """
    from reprospec.plan import run as runplan

    options = _options(options)
    if not isinstance(spec, Spec):
        spec = load_spec(spec, options.overrides)
    return runplan.plan_run(spec, options)


@from_api
def run(
    spec: Spec | str | Path,
    options: RunOptions | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Run every attempt of every selected cell; returns the judged, stored `RunResult`.

    `spec` is a loaded Spec (its own overrides apply; `options.overrides` is ignored)
    or a path (loaded with `options.overrides`).
    `progress(event, cell, result, finished, total)` is called from worker threads, one
    call at a time, when an attempt starts ("start", result None) and ends ("attempt").
    Setting `cancel` stops the run like Ctrl-C: attempts in flight are killed, the
    partial result is stored and returned with `interrupted=True`.
    `options.deferral` (the search verbs' probe runs: commands/interrupt.py) is begun as
    the run is stored and ended as this returns: a stop meanwhile is `cancel` alone.
    """
    from reprospec.pipeline import stages

    options = _options(options)
    _callbacks(progress, cancel)
    if not isinstance(spec, Spec):
        spec = load_spec(spec, options.overrides)
    if not options.command_line and spec.origin is not None:
        # A spec read from a report: the run records the spec file the report was made from
        # (its `spec_path`), whose text is not the report's (a run's `--set`s, resolved in
        # it), and How to reproduce said `reprospec run t.yaml`; it names the report, as
        # the CLI's typed `reprospec run report.md` does.
        from reprospec.core.reportspec import rerun_command

        ran = options.with_changes(overrides=spec.overrides).to_dict()
        options = options.with_changes(command_line=rerun_command(ran, str(spec.path), as_ran=True))
    try:
        return stages.run(spec, options, progress=progress, cancel=cancel)
    finally:
        if options.deferral is not None:
            # The caller goes on past its probe, stoppable there again: a stop raised into
            # this run's writing left it `killed` with no report; one raised after it, as
            # the search writes its own state, is the search's to take.
            options.deferral.end()


@from_api
def resume(
    run_id: str | Path,
    *,
    out: str | Path = Path(".reprospec"),
    jobs: int | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
) -> RunResult:
    """Finish an interrupted run under its own id, without redoing its finished attempts.

    `run_id` as `--resume` takes it: an id or a unique prefix under `out`, `latest`
    (`latest~N`), or the run's folder. `say` takes the runner's lines, as `RunOptions.say`
    does for `run` (the stored options hold none).
    """
    from reprospec.pipeline import resume as resumption
    from reprospec.pipeline import stages

    _callbacks(progress, cancel)
    if say is not None and not callable(say):
        raise UsageError(f"say takes a function of one str, got {say!r}")
    _path("run_id", run_id)
    found, store = resumption.resolve(run_id, _path("out", out))
    spec, options, done = resumption.load(found, store, jobs=jobs)
    if say is not None:
        options = options.with_changes(say=say)
    return stages.run(
        spec, options, progress=progress, cancel=cancel, resume=stages.Resume(found, done)
    )


def render(result: RunResult | Answer, fmt: str = "md") -> str:
    """The report of a run: "md" (the bug report), "html", "json", "junit" or "github".

    Made from the result alone (its attempts carry their log excerpts and stacks). A
    search's answer (`reprospec.isolate`'s, `bisect`'s, `minimize`'s, `amplify`'s) renders
    as its verb writes and prints it: "md" (its report file), "text" or "json".
    """
    if isinstance(result, Answer) and not isinstance(result, RunResult):
        return result.render(fmt)
    from reprospec.report import render as render_report

    return render_report(_result(result, "render"), fmt)


@from_api
def load_result(run: str | Path, out: str | Path = Path(".reprospec")) -> RunResult:
    """A finished run: a run folder, its results.json, or a run id (or unique prefix) in `out`.

    `out` may be a str, as `RunOptions.out` may: the store's readers join paths to it.
    """
    from reprospec.store.resultsjson import load_run

    _path("run", run)
    result = load_run(run, _path("out", out))
    if result.store is None:
        return result
    # Absolute, as `run` returns its store (its run read back from its absolute folder):
    # load_result(ID, out=".repro") gave `.repro`, and the one run's two stores differed.
    # (The CLI's readers keep the store as typed, for the commands they print.)
    from dataclasses import replace

    return replace(result, store=result.store.resolve())


@from_api
def compare(
    run_a: RunResult | str | Path,
    run_b: RunResult | str | Path,
    *,
    out: str | Path = Path(".reprospec"),
) -> RunComparison:
    """What changed from `run_a` to `run_b`, as `reprospec compare` finds and prints it: the
    spec, the program's files, the options, the environment, each cell's verdict and
    outcomes. Each run is a `RunResult` or what `load_result` takes (an id, a folder,
    `latest~N`, under `out`); `render(comparison, "text")` is what `compare` prints.
    """
    from reprospec.report.compare import compare_runs

    return compare_runs(run_a, run_b, _path("out", out))


def exit_code(result: RunResult | Answer) -> int:
    """The CLI's exit code: 0 reproduced, 1 not, 3 infra-error, 4 undecided, 130 interrupted.

    For a search's answer, its verb's: 0 the search answered (isolated, minimized,
    amplified, found), 1 it did not, 3 infra-error, 130 interrupted.
    """
    if isinstance(result, Answer) and not isinstance(result, RunResult):
        return result.exit_code()
    return exit_code_for(_result(result, "exit_code"))


def _path(name: str, value: object) -> Path:
    """`value` as the path an argument `name` takes (a str or a PathLike): anything else
    raised Python's TypeError from deep inside (`out=3`: "expected str, bytes or
    os.PathLike object, not int"). RunOptions' own paths are read by the same rule
    (`optional_path`), which takes None as "not given": an argument must be given."""
    path = optional_path(name, value)
    if path is None:
        raise UsageError(f"{name} takes a path, got None")
    return path


def _options(options: object) -> RunOptions:
    """`options` as run and plan_run take it: a RunOptions, or None for the defaults (a
    dict raised "'dict' object has no attribute 'overrides'")."""
    return RunOptions() if options is None else run_options("options", options)


def _callbacks(progress: object, cancel: object) -> None:
    """A `progress` that is no function, or a `cancel` that is no `threading.Event`,
    refused before anything runs: `cancel=True` raised AttributeError in the scheduler's
    threads, a traceback on stderr, after the run had begun."""
    if progress is not None and not callable(progress):
        raise UsageError(f"progress takes a function, got {progress!r}")
    if cancel is not None and not (hasattr(cancel, "is_set") and hasattr(cancel, "set")):
        raise UsageError(f"cancel takes a threading.Event, got {cancel!r}")


def _result(result: object, name: str) -> RunResult:
    """`result` when it is a RunResult; a run's id or folder is refused naming load_result,
    where it raised AttributeError from deep inside the report."""
    if isinstance(result, RunResult):
        return result
    if isinstance(result, (str, PathLike)):
        raise UsageError(
            f"{name} takes a RunResult or a search's answer, got {result!r}: read a "
            f"stored run first with reprospec.load_result({str(result)!r})"
        )
    raise UsageError(f"{name} takes a RunResult or a search's answer, got {type(result).__name__}")


__all__ = [
    "RunOptions",
    "RunPlan",
    "RunResult",
    "Shard",
    "Spec",
    "Validation",
    "compare",
    "exit_code",
    "load_result",
    "load_spec",
    "plan_run",
    "render",
    "resume",
    "run",
    "validate",
]
