"""The Python API's searches: `reprospec isolate`, `minimize`, `amplify`, `bisect`, `capture`.

    import reprospec

    found = reprospec.isolate_spec("toggles.yaml", reprospec.IsolateOptions(budget=60))
    found.sentence()                 # "crashes when b=true AND e=true; ..."
    reprospec.render(found, "md")    # isolate.md
    reprospec.exit_code(found)       # what `reprospec isolate` exits with

A notebook, a CI job or a pytest fixture that investigates a failure calls these where
a person types the verb: each takes the spec (a loaded `Spec`, whose own overrides apply,
or a path) and the verb's frozen options, checked when they are made (`UsageError`);
it runs every probe as an ordinary stored run and writes the verb's folder and report,
as the verb does, and returns the verb's frozen answer, the one the verb prints. It
prints nothing: `progress`, when given, is called with each line the verb says on
stderr. It installs no signal handler: setting `cancel` (a `threading.Event`) stops it
as Ctrl-C stops the verb, and the same call again resumes from the stored probes.

These live apart from api.py, after the stages they drive, because those stages run
their probes through api.py (scripts/import_graph.py's order); `reprospec.NAME` reaches
both alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import TypeVar

from reprospec.amplify.driver import AmplifyOptions
from reprospec.amplify.report import AmplifyReport
from reprospec.bisect.state import BisectReport, BisectRequest
from reprospec.capture.command import Captured
from reprospec.capture.hangwait import VerifyWait
from reprospec.core.caller import from_api, naming
from reprospec.core.inputs import Spec
from reprospec.core.results import RunResult
from reprospec.core.runoptions import RunOptions, Words, optional_path
from reprospec.errors import UsageError
from reprospec.isolation.driver import IsolateOptions
from reprospec.isolation.report import IsolateResult
from reprospec.minimize.driver import MinimizeOptions
from reprospec.minimize.report import Minimized

Progress = Callable[[str], None]
Options = TypeVar("Options")


@from_api
def isolate_spec(
    spec: Spec | str | Path,
    options: IsolateOptions | None = None,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> IsolateResult:
    """The smallest set of differences (matrix values, fields set on one side) that turns
    the passing cell into the failing one, as `reprospec isolate` finds it.

    The failing and passing cells are `options.failing` / `options.passing` (or
    `options.cell`'s filters), else read from `expect`, else found by running the matrix
    once. Returns the answer with `interrupted=True` where `cancel` stopped it.
    """
    from reprospec.isolation import driver

    options = _options(options, IsolateOptions, "isolate_spec")
    path, run = _spec(spec, options.run, "isolate_spec", "IsolateOptions(cell=...)")
    options = replace(options, run=_said(run, _progress(progress)))
    with naming("IsolateOptions", "cell"):
        return driver.isolate_spec(path, options, progress=progress, cancel=_cancel(cancel))


@from_api
def minimize_spec(
    spec: Spec | str | Path,
    options: MinimizeOptions | None = None,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> Minimized:
    """The smallest program (arguments, variables, the workdir's Python at AST level; a
    workload's numbers) whose failing cell still fails the same way, as `reprospec
    minimize` finds it; written to `options.output` (default OUT/minimize/ID/result)."""
    from reprospec.minimize import driver

    options = _options(options, MinimizeOptions, "minimize_spec")
    path, run = _spec(spec, options.run, "minimize_spec", "MinimizeOptions(cell=...)")
    options = replace(options, run=_said(run, _progress(progress)))
    with naming("MinimizeOptions", "cell"):
        return driver.minimize_spec(path, options, progress=progress, cancel=_cancel(cancel))


@from_api
def amplify_spec(
    spec: Spec | str | Path,
    options: AmplifyOptions | None = None,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> AmplifyReport:
    """The perturbation (`environment.perturb`) that makes the cell's rare failure most
    frequent, as `reprospec amplify` finds it; the amplified spec is written beside it."""
    from reprospec.amplify import driver

    options = _options(options, AmplifyOptions, "amplify_spec")
    path, run = _spec(spec, options.run, "amplify_spec", "AmplifyOptions(matrix_filters=...)")
    options = replace(options, run=_said(run, _progress(progress)))
    with naming("AmplifyOptions"):
        return driver.amplify_spec(path, options, progress=progress, cancel=_cancel(cancel))


@from_api
def bisect_spec(
    request: BisectRequest,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> BisectReport:
    """The first release of `request.package` between `good` and `bad` (or the first day,
    `by_date`) that reproduces the spec's failing cell, as `reprospec bisect` finds it.

    The question (spec, package, the two ends) is the request's, as it is the bisect's
    id: the same request again resumes. `cancel` (or Ctrl-C) raises `BisectInterrupted`,
    a KeyboardInterrupt, what ran kept for the next call.
    """
    from reprospec.bisect import driver

    request = _options(request, BisectRequest, "bisect_spec", "request")
    with naming("BisectRequest"):
        return driver.bisect_spec(request, progress=_progress(progress), cancel=_cancel(cancel))


@from_api
def capture_command(
    argv: Words,
    *,
    output: str | Path | None = None,
    repeat: int = 1,
    timeout_s: float = 300.0,
    verify: bool = True,
    out: str | Path = Path(".reprospec"),
    force: bool = False,
    python: str | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> Captured:
    """Run a failing command through the engine and write the spec that reproduces it, as
    `reprospec capture -- CMD` does (in this process's working directory): `output`
    (default NAME-capture.yaml, NAME the script's stem), verified by a rerun unless
    `verify=False`. `progress` gets the verify's lines; `cancel` (or Ctrl-C) raises
    KeyboardInterrupt (`VerifyInterrupted`, with its `lines`, in the verify rerun or in the
    rerun of a pytest test alone before it: the spec written from the first run).
    """
    from reprospec.capture import command

    request = command.command_request(
        argv,
        output=optional_path("output", output),
        repeat=repeat,
        timeout_s=timeout_s,
        verify=verify,
        out=optional_path("out", out) or Path(".reprospec"),
        force=force,
        python=python,
        api=True,
    )
    stop = _cancel(cancel)

    def run_spec(
        path: Path,
        repeat: int,
        observe: bool,
        wait: VerifyWait | None,
        /,
        *,
        shown: Path | None = None,
    ) -> RunResult:
        return command.run_captured(path, repeat, observe, request, wait, cancel=stop, shown=shown)

    return command.capture(request, run_spec, _progress(progress))


def _options(options: object, kind: type[Options], call: str, argument: str = "options") -> Options:
    """`options` when it is the verb's own options class (None: its defaults). An error
    names the call and its argument (`isolate_spec's options`), as the caller wrote them."""
    if options is None and kind is not BisectRequest:
        return kind()
    if not isinstance(options, kind):
        raise UsageError(
            f"{call}'s {argument} takes a reprospec.{kind.__name__}, got {type(options).__name__}"
        )
    return options


def _spec(spec: object, run: RunOptions, call: str, choose: str) -> tuple[Path, RunOptions]:
    """The spec's path and the run options its probes run with: a loaded Spec's own
    overrides replace `run.overrides`, as `reprospec.run` takes a loaded Spec. The run's
    matrix filters are refused: each probe runs one cell, so the search dropped them
    unsaid and searched the first failing cell, not the one they chose (`choose` does)."""
    if run.matrix_filters:
        shown = " ".join(run.matrix_filters)
        raise UsageError(
            f"{call}: run.matrix_filters ({shown}) do not choose the cell it searches: "
            f"give them as reprospec.{choose}"
        )
    if isinstance(spec, Spec):
        return spec.path, run.with_changes(overrides=spec.overrides)
    if isinstance(spec, (str, PathLike)):
        return Path(spec), run
    raise UsageError(f"{call}'s spec takes a Spec or a spec file's path, got {type(spec).__name__}")


def _said(run: RunOptions, progress: Progress | None) -> RunOptions:
    """`run` whose runner says its lines (a venv's or an image's build) to the search's
    `progress`, as the verb says them on stderr with its own, or to nothing without one:
    a search prints nothing. A `run.say` given is kept."""
    if run.say is not None:
        return run
    return run.with_changes(say=progress if progress is not None else _silent)


def _silent(_line: str) -> None:
    """What a search without `progress` does with the runner's lines."""


def _progress(progress: object) -> Progress | None:
    if progress is not None and not callable(progress):
        raise UsageError(f"progress takes a function of one str, got {type(progress).__name__}")
    return progress


def _cancel(cancel: object) -> threading.Event | None:
    if cancel is not None and not isinstance(cancel, threading.Event):
        raise UsageError(f"cancel takes a threading.Event, got {type(cancel).__name__}")
    return cancel


__all__ = [
    "AmplifyOptions",
    "AmplifyReport",
    "BisectReport",
    "BisectRequest",
    "Captured",
    "IsolateOptions",
    "IsolateResult",
    "MinimizeOptions",
    "Minimized",
    "amplify_spec",
    "bisect_spec",
    "capture_command",
    "isolate_spec",
    "minimize_spec",
]
