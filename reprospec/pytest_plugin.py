"""The pytest plugin: each matrix cell of a spec is a test item, run by the engine.

Opt-in. Registered through the `pytest11` entry point `reprospec.pytest_plugin`, it
collects nothing until one of these is given:

    pytest --reprospec                 spec files matching `reprospec_pattern` (*.repro.yaml)
    pytest --reprospec specs/          every spec file under specs/ (any *.yaml that has a
                                       top-level `reprospec:` key); with no other path on the
                                       command line, only those folders are collected, else
                                       they and the paths given
    pytest --reprospec a.yaml b.yaml   the spec files named, whatever their names
    reprospec = true                   (ini) the same as --reprospec
    pytest -p reprospec.pytest_plugin  (where plugin autoload is off) the same as --reprospec

One item per cell, node id `specs/x.repro.yaml::num_workers=2,pin_memory=true`. The
call runs the cell's attempts through `reprospec.run` (each attempt in its own process
group: a segfaulting child never takes pytest down, no `--forked` needed), repeats
being the spec's `run.repeat` or `--reprospec-repeat`. Then:

    reproduced      -> passed
    not-reproduced  -> failed: expected vs actual, rate and interval, the report's path
    infra-error     -> failed, the same way, with the reason; "skipped: needs ..." (a
                       missing GPU) -> skipped

Spec `labels` are markers (`-m segfault`), registered so `--strict-markers` accepts
them (a label other plugins would act on, such as `flaky` or `skip`, is `label_flaky`);
`-k` matches cell ids and `axis:value` keywords. Under pytest-xdist each worker
hands out its own share of the GPU ids of the outer CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from reprospec.core.frozen import frozen

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from reprospec.core.inputs import Cell, Spec
    from reprospec.core.results import CellResult, RunResult
    from reprospec.core.runoptions import RunOptions

DEFAULT_PATTERN = "*.repro.yaml"
PLUGIN_NAME = "reprospec.pytest_plugin"
SKIP_PREFIX = "skipped: needs"
# The attribute of a teardown report that holds a failed try no call report said (flaky's).
FAILED_TRY = "reprospec_failed_try"
# A failure lists its attempts one a line when they did different things, up to this many
# (more are counted: `3× hang, 2× pass`; the report lists each).
_ATTEMPT_LINES = 10
# Files under a --reprospec folder are specs when they say so at the top level.
_SPEC_KEY = re.compile(rb"^reprospec\s*:", re.MULTILINE)
_SNIFF_BYTES = 256 * 1024


@frozen
class Settings:
    """What the plugin was asked for; absent from the stash when it is not active."""

    patterns: tuple[str, ...]
    folders: tuple[Path, ...]
    repeat: int | None
    out: Path
    runner: str
    python: str | None
    gpus: str | None  # this worker's share under xdist; None: the engine's own default
    # Files named on the command line: a spec there is collected as pytest collects a test
    # file named there, whatever its name.
    named: frozenset[Path] = frozenset()
    # The pytest command line that made the runs (`recorded_command_line`).
    command_line: str = ""

    def wants(self, path: Path) -> bool:
        """A spec file to collect: matches a pattern, or is a spec under a --reprospec path or
        named on the command line."""
        if path.suffix not in (".yaml", ".yml"):
            return False
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in self.patterns):
            return True
        resolved = path.resolve()
        inside = any(resolved == f or f in resolved.parents for f in self.folders)
        return (inside or resolved in self.named) and looks_like_spec(path)


SETTINGS = pytest.StashKey[Settings]()


def looks_like_spec(path: Path) -> bool:
    """A YAML file with a top-level `reprospec:` key (read no further than needed)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    return _SPEC_KEY.search(head) is not None


def worker_gpus(environ: Mapping[str, str]) -> str | None:
    """Under xdist, worker gwK of N takes every N-th GPU id from the K-th; else None.

    None too where no GPU is visible at all: the engine's default finds none either, and an
    xdist worker's runs recorded `--gpus ''` where the same cell's run without xdist had
    none (`compare`: `gpus: (none) -> ''`, an option changed that changed nothing)."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    count = environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not worker.startswith("gw") or not worker[2:].isdigit() or not count.isdigit():
        return None
    from reprospec.pipeline.gpus import visible_gpus

    slots = visible_gpus(None, environ)
    if not slots:
        return None
    return ",".join(slots[int(worker[2:]) :: max(1, int(count))])


# Markers other plugins act on: a spec labelled `flaky` must not be rerun by flaky or
# pytest-rerunfailures, nor one labelled `skip` skipped. Such labels get a `label_` prefix.
# fmt: off
ACTING_MARKERS = frozenset({
    "skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "flaky",
    "timeout", "forked", "repeat", "order", "run", "dependency", "asyncio", "anyio",
    "tryfirst", "trylast", "no_cover", "django_db", "xdist_group", "reprospec",
})
# fmt: on


def marker_name(label: str) -> str:
    """A label as a marker `-m` can name: characters outside [A-Za-z0-9_] become `_`."""
    name = re.sub(r"\W", "_", label)
    if name[:1].isdigit() or name in ACTING_MARKERS:
        name = f"label_{name}"
    return name


# -- hooks ----------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reprospec", "reprospec specs as tests")
    group.addoption(
        "--reprospec",
        action="append",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help=f"collect reprospec specs ({DEFAULT_PATTERN}, and every spec under PATH)",
    )
    group.addoption(
        "--reprospec-repeat",
        type=int,
        default=None,
        metavar="N",
        help="attempts per cell (default: the spec's run.repeat)",
    )
    group.addoption(
        "--reprospec-out",
        default=None,
        metavar="DIR",
        help="where runs and their reports go (default: .reprospec under the rootdir)",
    )
    # Every runner `reprospec run --runner` has (core/runoptions.RUNNER_NAMES, a small module):
    # venv was missing, refused as 'invalid choice', though the plugin runs what run runs.
    from reprospec.core.runoptions import RUNNER_NAMES

    group.addoption(
        "--reprospec-runner",
        choices=RUNNER_NAMES,
        default="local",
        help="where each attempt runs, as reprospec run --runner (default: local)",
    )
    group.addoption(
        "--reprospec-python",
        default=None,
        metavar="PATH",
        help="the local runner's interpreter, as reprospec run --python (default: pytest's)",
    )
    parser.addini("reprospec", type="bool", default=False, help="collect reprospec specs")
    parser.addini(
        "reprospec_pattern",
        type="args",
        default=[DEFAULT_PATTERN],
        help=f"file name patterns of spec files (default {DEFAULT_PATTERN})",
    )


# The plugin's options that say only where this machine keeps things, left out of the command
# line a run records, as `reprospec run` leaves out its --out and --python.
_LOCAL_OPTIONS = ("--reprospec-out", "--reprospec-python")


def recorded_command_line(args: Sequence[str]) -> str:
    """`pytest --reprospec flaky.yaml`: the command that made a cell's run, as its results.json's
    `command_line`, `compare` and the report's How to reproduce show it.

    `args` are pytest's own arguments (`config.invocation_params.args`: an xdist worker gets
    its controller's; `pytest.main(ARGS)` gives ARGS). A synthetic `reprospec run SPEC -m ...`
    was recorded before, and `compare` showed it as though someone had typed it.
    Not named `pytest_...`: pluggy takes a plugin's function of that name for a hook.
    """
    from reprospec.core.runoptions import without_options

    words = without_options(args, _LOCAL_OPTIONS)
    return shlex.join(["pytest", *words])


def pytest_configure(config: pytest.Config) -> None:
    values: list[str] | None = config.getoption("reprospec")
    if not (values is not None or config.getini("reprospec") or _loaded_explicitly(config)):
        return
    folders = tuple(Path(v).resolve() for v in values or () if v)
    for folder in folders:
        if not folder.exists():
            raise pytest.UsageError(f"--reprospec {folder}: no such file or folder")
    repeat = config.getoption("reprospec_repeat")
    if repeat is not None and repeat < 1:
        raise pytest.UsageError(f"--reprospec-repeat must be at least 1, got {repeat}")
    out = config.getoption("reprospec_out")
    if out:
        _check_out(Path(out))
    python = config.getoption("reprospec_python")
    if config.getoption("reprospec_runner") == "docker" and python:
        # Refused by the run's options too, but there once per cell, each failing alone.
        from reprospec.core.runoptions import docker_python_refused

        refused = docker_python_refused(
            "--reprospec-python", python, "leave --reprospec-runner docker out"
        )
        raise pytest.UsageError(str(refused))
    here = config.invocation_params.dir
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        # `pytest --reprospec a.yaml b.yaml`: the option took a.yaml, the command line b.yaml;
        # both are asked for (a file named only to the option would otherwise be left out).
        # So is a folder: `pytest --reprospec specs/ tests/` collected tests/ alone, the
        # specs under specs/ left out without a word, since pytest collects only its args.
        # Not where a path given is in it: `--reprospec specs/ specs/a.yaml` asks for a.yaml
        # of the folder whose YAML files are specs, not for the whole folder.
        given = {(here / arg.split("::")[0]).resolve() for arg in config.args}
        config.args += [
            v
            for v in values or ()
            if v
            and Path(v).exists()
            and not any(
                g == Path(v).resolve() or g.is_relative_to(Path(v).resolve()) for g in given
            )
        ]
    named = frozenset((here / arg.split("::")[0]).resolve() for arg in config.args)
    config.stash[SETTINGS] = Settings(
        patterns=tuple(config.getini("reprospec_pattern")),
        folders=folders,
        repeat=repeat,
        out=Path(out).resolve() if out else config.rootpath / ".reprospec",
        runner=config.getoption("reprospec_runner"),
        python=config.getoption("reprospec_python"),
        gpus=worker_gpus(os.environ),
        named=named,
        command_line=recorded_command_line(config.invocation_params.args),
    )
    config.addinivalue_line("markers", "reprospec: a matrix cell of a reprospec spec")
    config.pluginmanager.register(RerunRecorder(config), "reprospec-reruns")
    if folders and config.args_source != pytest.Config.ArgsSource.ARGS:
        # `pytest --reprospec specs/` means "the specs in specs/", not also `testpaths`.
        config.args = [str(f) for f in folders]


def _check_out(out: Path) -> None:
    """`--reprospec-out` that is a file, or on a file's path, refused as pytest refuses a bad
    option: each cell failed alone, saying `could not run: out FILE: not a folder`, an
    option the user never typed."""
    from reprospec.errors import UsageError
    from reprospec.store.runfolder import RunFolder

    try:
        RunFolder.check_out(out, "--reprospec-out")
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def _loaded_explicitly(config: pytest.Config) -> bool:
    """`-p reprospec.pytest_plugin` on the command line, in PYTEST_ADDOPTS or in addopts."""
    words = [
        *config.invocation_params.args,
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
        *config.getini("addopts"),
    ]
    for i, word in enumerate(words):
        if word in (f"-p{PLUGIN_NAME}", f"-p={PLUGIN_NAME}"):
            return True
        if word == "-p" and i + 1 < len(words) and words[i + 1] == PLUGIN_NAME:
            return True
    return False


class RerunRecorder:
    """Says in JUnit XML what a rerun did to a cell.

    pytest-rerunfailures reports a failed try as `rerun`, and flaky reports no call of it
    (its setup and teardown only), which pytest's JUnit writer records as a testcase with
    no failure: a CI page would count the try that failed as a pass. Its testcase gets a
    `rerunFailure` (the element Maven Surefire's format has for a failed try, which
    junitparser and CI readers know), with the same text as a failure; the final try's
    testcase has a `tries` property. `--reprospec-repeat N` is the way to
    repeat a cell (docs/pytest.md): its attempts are judged together, with a rate."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # The items whose call this try was reported (flaky reports none of a failed try).
        self.calls_reported: set[str] = set()

    # Before the JUnit writer's: at a teardown it closes the testcase this adds to.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "reprospec" not in report.keywords:
            return
        if report.when == "setup":
            self.calls_reported.discard(report.nodeid)
        if report.when == "call":
            self.calls_reported.add(report.nodeid)
        # `rerun` is pytest-rerunfailures' own outcome, outside pytest's Literal.
        outcome: str = report.outcome
        if outcome == "rerun" and report.when == "call":
            self._record(report, str(report.longrepr))
        # flaky's failed try: its call is not reported, only its setup and teardown, a
        # testcase with no failure; the teardown carries it (pytest_runtest_makereport).
        failed_try = getattr(report, FAILED_TRY, "")
        if report.when == "teardown" and failed_try and report.nodeid not in self.calls_reported:
            self._record(report, failed_try)

    def _record(self, report: pytest.TestReport, text: str) -> None:
        from _pytest.junitxml import xml_key  # pytest's JUnit writer, where --junitxml is on

        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        import xml.etree.ElementTree as ET

        first = text.splitlines()[0] if text else "failed"
        element = ET.Element("rerunFailure", message=f"{first} (a failed try, run again)")
        element.text = text
        reporter = xml.node_reporter(report)
        reporter.append(element)
        reporter.add_property("rerun", "true")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SpecFile | None:
    settings = parent.config.stash.get(SETTINGS, None)
    if settings is None or not settings.wants(file_path):
        return None
    spec_file: SpecFile = SpecFile.from_parent(parent, path=file_path)
    return spec_file


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if isinstance(item, SpecItem) and report.when == "teardown" and item.failed_try:
        # A try that failed: its teardown, with which the JUnit writer closes the testcase,
        # carries the failure, for RerunRecorder where no call said it (flaky runs a failed
        # try again and reports only the last try's call). An attribute: xdist carries it
        # from the worker with the report.
        setattr(report, FAILED_TRY, item.failed_try)
    # A skip raised by the plugin points at the cell's line in the spec, not at this file.
    if isinstance(item, SpecItem) and report.skipped and isinstance(report.longrepr, tuple):
        _, _, reason = report.longrepr
        report.longrepr = (str(item.path), item.line or 1, reason)
    return report


# -- collection -----------------------------------------------------------------------------


class SpecFile(pytest.File):
    """A spec file: validated when collected, one item per matrix cell."""

    def collect(self) -> Iterator[SpecItem]:
        from reprospec import api
        from reprospec.errors import SpecError, UsageError
        from reprospec.spec.lines import cell_lines
        from reprospec.spec.matrix import expand, known_axes

        try:
            spec = api.load_spec(self.path)
            # The cells only: planning every attempt here would cost 5x the whole collection.
            cells = expand(spec)
        except SpecError as exc:
            # Located problems, one per line; no traceback of ours.
            raise self.CollectError("\n".join(exc.problems)) from None
        except UsageError as exc:
            raise self.CollectError(f"{self.path}: {exc}") from None
        found = spec.document.get("labels")
        labels = [str(label) for label in found] if isinstance(found, list) else []
        markers = list(dict.fromkeys(marker_name(label) for label in labels))
        _register_markers(self.config, markers)
        lines = cell_lines(spec, cells)
        axes = tuple(known_axes(cells))
        for cell in cells:
            item: SpecItem = SpecItem.from_parent(
                self, name=cell.id, spec=spec, cell=cell, line=lines.get(cell.id), axes=axes
            )
            item.add_marker("reprospec")
            for name in markers:
                item.add_marker(name)
            yield item


def _register_markers(config: pytest.Config, names: Sequence[str]) -> None:
    """Spec labels as known markers, so `--strict-markers` accepts them."""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for name in names:
        if name not in known:
            config.addinivalue_line("markers", f"{name}: reprospec spec label")


# -- the item ---------------------------------------------------------------------------------


class NotReproduced(Exception):
    """The cell ran and did not do what `expect` says."""


class CouldNotRun(Exception):
    """The cell's attempts could not run (infra-error): the test fails with the reason."""


class SpecItem(pytest.Item):
    """One matrix cell: the call runs its attempts and judges them."""

    # Any: pytest constructs its nodes through `from_parent` with keywords of its own
    # choosing, which the base class takes typed one by one; a node class passes them on.
    def __init__(
        self,
        *,
        spec: Spec,
        cell: Cell,
        line: int | None = None,
        axes: Sequence[str] = (),
        **kwargs: Any,  # noqa: ANN401
    ) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.cell = cell
        self.line = line
        self.axes = tuple(axes) or tuple(cell.matrix)  # every axis of the spec's cells
        self.result: CellResult | None = None
        self.report_path: Path | None = None
        self.tries = 0  # more than 1 when pytest-rerunfailures or flaky ran the item again
        self.failed_try = ""  # this try's failure, for a rerun that reports none (flaky's)
        from reprospec.spec.matrix import render_value

        # `-k num_workers:2` (`=` and `,` are not allowed in -k expressions).
        for axis, value in cell.matrix.items():
            self.extra_keyword_matches.add(f"{axis}:{render_value(value)}")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.line - 1) if self.line else None, f"{self.spec.name}::{self.name}"

    def _options(self, settings: Settings) -> RunOptions:
        from reprospec import api

        return api.RunOptions(
            runner=settings.runner,
            repeat=settings.repeat,
            matrix_filters=cell_alone(self.cell, self.axes),
            out=settings.out,
            python=settings.python,
            gpus=settings.gpus,
            purpose="pytest",
            command_line=settings.command_line,
        )

    def runtest(self) -> None:
        """Run the cell's attempts and judge them, all in the call phase: pytest words only a
        call's exception through `repr_failure`, so a cell that could not run reads as
        concisely as one that failed (raised in setup, it was hundreds of lines of pytest's
        own traceback)."""
        self.tries += 1
        self.failed_try = ""
        try:
            self._judge()
        except (NotReproduced, CouldNotRun) as exc:
            self.failed_try = str(exc)  # RerunRecorder's, where flaky reports no call
            raise

    def _judge(self) -> None:
        from reprospec import api
        from reprospec.errors import FatalError
        from reprospec.store.runfolder import RunFolder

        settings = self.config.stash[SETTINGS]
        try:
            result: RunResult = api.run(self.spec, self._options(settings))
        except FatalError as exc:  # no runner, no interpreter, bad options: nothing ran
            raise CouldNotRun(f"{self._where()}: {self.cell.id}: could not run: {exc}") from None
        if result.interrupted:
            raise KeyboardInterrupt  # Ctrl-C reached the engine first: stop pytest too
        cells = [c for c in result.cells if c.cell.id == self.cell.id]
        if not cells:
            raise CouldNotRun(f"the run {result.run_id} holds no cell {self.cell.id!r}")
        cell = self.result = cells[0]
        self.report_path = RunFolder.of(settings.out, result.run_id).report_md
        properties = junit_properties(cell, result.run_id, self.report_path)
        if self.tries > 1:
            # Run again by pytest-rerunfailures or flaky: the testcase says which try it is
            # (each earlier try is a testcase of its own, with a `rerunFailure`).
            properties.append(("tries", self.tries))
        # A rerun replaces what the previous try recorded.
        names = {name for name, _ in properties}
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in names]
        self.user_properties.extend(properties)
        if cell.verdict == "infra-error":
            from reprospec.outcome.pytestreport import skipped_each

            reasons = [a.infra_error or "" for a in cell.attempts]
            # No GPU for the cell, or a cell's own pytest that skipped each of its tests (a
            # skipif this machine meets): nothing was tested here, as pytest's own skip says.
            if reasons and all(r.startswith(SKIP_PREFIX) or skipped_each(r) for r in reasons):
                pytest.skip(reasons[0])
            raise CouldNotRun(self._explain("infra-error"))
        if cell.verdict == "not-reproduced":
            raise NotReproduced(self._explain("not reproduced"))
        if cell.verdict == "undecided":
            # The rate's interval straddles the bound: nothing is shown yet, either way (the
            # reason says so, and how many attempts decide it or why no count does:
            # judge.deciding).
            raise NotReproduced(self._explain("undecided"))

    def _where(self) -> str:
        """`specs/x.yaml:12`: the cell's line, relative to the rootdir."""
        path, line, _ = self.location  # line 0-based
        return f"{path}:{line + 1}" if line is not None else path

    def _explain(self, verdict: str) -> str:
        """The failure, each fact once: a first line that says the verdict and its reason
        (what pytest's summary line and JUnit's message show), then only what that line
        does not say.

        The judge's reason of a cell that ran names what was expected (`expected crash
        SIGSEGV, got ...`, `... fails >=0.5 (error)`) and the most common miss; the body
        added the expectation, the attempts and the matched count again, and each attempt
        alike (`attempt 2: error exit 1`, the reason's own words, once per attempt).
        """
        from reprospec.core.words import (
            attempt_phrase,
            attempts_phrase,
            expectation_phrase,
            interval_phrase,
        )

        cell = self.result
        assert cell is not None
        reason = cell.reason
        # An undecided reason says so itself (`undecided (intermittent): ...`).
        said = reason if reason.startswith(verdict.split(" ")[0]) else f"{verdict}: {reason}"
        lines = [f"{self._where()}: {self.cell.id}: {said}"]
        if cell.verdict == "infra-error":
            # A judged cell's reason names the expectation; no attempt here was judged.
            lines.append(f"  expected: {expectation_phrase(cell.expected)}")
        phrases = {attempt_phrase(a, pid=False) for a in cell.attempts}
        if len(phrases) > 1 and len(cell.attempts) <= _ATTEMPT_LINES:
            # Attempts that differ: which did what (their counts follow from the list).
            lines += [f"  attempt {a.attempt}: {attempt_phrase(a)}" for a in cell.attempts]
        else:
            actual = attempts_phrase(cell.attempts)
            if not _told(actual, reason):
                lines.append(f"  actual:   {actual}")
        rate = cell.rate
        interval = f"95% interval {interval_phrase(rate.low, rate.high, dash='..')}"
        matched = f"{rate.matched}/{rate.attempts} matched"
        if rate.attempts and "95% CI" not in reason:  # a rate's reason has both
            lines.append(
                f"  rate:     {interval if matched in reason else f'{matched}, {interval}'}"
            )
        lines.append(f"  report:   {self.report_path}")
        return "\n".join(lines)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: TracebackStyle | None = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, (NotReproduced, CouldNotRun)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


def cell_alone(cell: Cell, axes: Sequence[str]) -> tuple[str, ...]:
    """The matrix filters that keep `cell` alone: every axis of the spec's cells (`axes`),
    each at the cell's value as only that value reads (`exact_filter`; an axis the cell
    lacks, null). Its own values as its id shows them kept others too, which the item ran
    over again for each of them: `x=7` of the cell {x: 7} kept the cell {x: 7, d: 1} an
    `include` adds, and `v=3.10` of the string "3.10" the number 3.1."""
    from reprospec.spec.matrix import exact_filter

    return tuple(exact_filter(axis, cell.matrix.get(axis)) for axis in axes)


def _told(actual: str, reason: str) -> bool:
    """Whether the judge's `reason` already says what every attempt did (`actual`): `got
    error exit 1 in 2/2 attempts`, or an infra-error's `could not run: REASON`."""
    return f"got {actual} in" in reason or (
        actual.startswith("infra-error: ") and actual.removeprefix("infra-error: ") in reason
    )


def junit_properties(cell: CellResult, run_id: str, report: Path) -> list[tuple[str, object]]:
    """What `--junitxml` records for a cell: verdict, rate, interval, signature, report."""
    from reprospec.core.words import expectation_phrase, interval_phrase

    rate = cell.rate
    signatures = dict.fromkeys(
        a.ran.signature for a in cell.attempts if a.ran is not None and a.ran.signature
    )
    return [
        ("verdict", cell.verdict),
        ("expected", expectation_phrase(cell.expected)),
        ("rate", f"{rate.matched}/{rate.attempts}"),
        ("interval", interval_phrase(rate.low, rate.high, digits=3, dash="..")),
        ("signature", " ".join(signatures)),
        ("report", str(report)),
        ("run_id", run_id),
    ]
