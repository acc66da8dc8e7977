"""The Python API's searches refuse bad arguments as usage errors before anything runs, and
a search's answer renders and says its exit code as its verb does; no child is started."""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

import reprospec
from reprospec.bisect.search import BisectResult, Status, VersionEvidence
from reprospec.errors import UsageError
from tests.support.api import TOGGLES


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "toggles.yaml"
    path.write_text(TOGGLES)
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: reprospec.IsolateOptions(budget="50"), "budget takes a whole number, got '50'"),  # type: ignore[arg-type]
        (lambda: reprospec.IsolateOptions(budget=0), "budget must be >= 1, got 0"),
        (lambda: reprospec.IsolateOptions(budget=True), "budget takes a whole number"),
        (lambda: reprospec.IsolateOptions(error=1.5), "error must be strictly between 0 and 1"),
        (lambda: reprospec.IsolateOptions(min_rate="0.3"), "min_rate takes a probability"),  # type: ignore[arg-type]
        (lambda: reprospec.IsolateOptions(cell="crash=true"), "cell takes a sequence of strings"),  # type: ignore[arg-type]
        (lambda: reprospec.IsolateOptions(failing=3), "failing takes a string, got 3"),  # type: ignore[arg-type]
        (lambda: reprospec.IsolateOptions(run={"jobs": 2}), "run takes a reprospec.RunOptions"),  # type: ignore[arg-type]
        (lambda: reprospec.MinimizeOptions(output=3), "output takes a path, got 3"),  # type: ignore[arg-type]
        (lambda: reprospec.MinimizeOptions(budget=2.5), "budget takes a whole number"),  # type: ignore[arg-type]
        (lambda: reprospec.AmplifyOptions(tries="gc=aggressive"), "tries takes a sequence"),  # type: ignore[arg-type]
        (lambda: reprospec.AmplifyOptions(first=0), "first must be >= 1"),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", ""),
            "bad takes a version (a day with by_date), got ''",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", jobs=0),
            "jobs must be >= 1, got 0",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", timeout_s="5m"),  # type: ignore[arg-type]
            "timeout_s takes seconds as a number",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), ["pkg"], "1.0", "2.0"),  # type: ignore[arg-type]
            "package takes a string",
        ),
        # Before: checked only when bisect_spec was called, and `pre="no"` was true.
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", runner="local"),
            "runner takes 'venv' or 'docker' (bisect installs each candidate), got 'local'",
        ),
        (
            lambda: reprospec.BisectRequest(
                Path("s.yaml"), None, "2024-03-01", "2024-03-20", by_date=True, runner="docker"
            ),
            "by_date needs runner='venv'",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), None, "1.0", "2.0"),
            "package takes a package's name (None only with by_date=True)",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", pre="no"),  # type: ignore[arg-type]
            "pre takes True or False, got 'no'",
        ),
        (
            lambda: reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", fresh=1),  # type: ignore[arg-type]
            "fresh takes True or False, got 1",
        ),
    ],
)
def test_bad_search_options_are_usage_errors_when_made(
    make: Callable[[], object], message: str
) -> None:
    # Before: `budget="50"` failed deep in the search ('<' not supported between ...), and
    # `cell="crash=true"` was read a character at a time.
    with pytest.raises(UsageError, match=re.escape(message)):
        make()


def test_bisect_request_takes_its_documented_defaults() -> None:
    # python-api.md: `package` (None with `by_date`). Before: a TypeError, "missing 1
    # required positional argument: 'package'", where the docs say it may be left out.
    request = reprospec.BisectRequest(
        spec="s.yaml", by_date=True, good="2023-01-01", bad="2023-02-01"
    )
    assert (request.package, request.spec) == (None, Path("s.yaml"))
    # What is missing is a UsageError naming it, as every other options class says one.
    missing: list[tuple[Callable[[], object], str]] = [
        (lambda: reprospec.BisectRequest(), "spec takes a spec file's path, got none"),
        (lambda: reprospec.BisectRequest(spec="s.yaml", by_date=True, bad="2023-02-01"), "good"),
        (lambda: reprospec.BisectRequest(spec="s.yaml", by_date=True, good="2023-01-01"), "bad"),
        (lambda: reprospec.BisectRequest(spec="s.yaml", good="1", bad="2"), "package takes"),
    ]
    for make, message in missing:
        with pytest.raises(UsageError, match=re.escape(message)):
            make()


def test_search_options_keep_what_the_engine_reads() -> None:
    options = reprospec.IsolateOptions(cell=["crash=true"], budget=True + 1, error=0.01)
    assert options.cell == ("crash=true",)
    assert (options.budget, options.error) == (2, 0.01)
    request = reprospec.BisectRequest(
        "s.yaml",
        "pkg",
        "1.0",
        "2.0",
        out="store",
        timeout_s=5,
    )
    assert (request.spec, request.out, request.timeout_s) == (Path("s.yaml"), Path("store"), 5.0)
    assert reprospec.MinimizeOptions(output="dir").output == Path("dir")
    # error=None is the default, as isolate's and minimize's (the search compared it with 0).
    unset = reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", error=None)
    assert unset.error == reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0").error


Opts = TypeVar(
    "Opts", reprospec.IsolateOptions, reprospec.MinimizeOptions, reprospec.AmplifyOptions
)


def _filtered(kind: type[Opts]) -> Opts:
    """The search's options with the cell chosen as `reprospec.run` chooses it."""
    return kind(run=reprospec.RunOptions(matrix_filters=("verbose=true",)))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda _: reprospec.isolate_spec(3),  # type: ignore[arg-type]
            "isolate_spec's spec takes a Spec or a spec file's path",
        ),
        (
            lambda spec: reprospec.isolate_spec(spec, reprospec.RunOptions()),  # type: ignore[arg-type]
            "isolate_spec's options takes a reprospec.IsolateOptions, got RunOptions",
        ),
        (
            lambda spec: reprospec.minimize_spec(spec, reprospec.IsolateOptions()),  # type: ignore[arg-type]
            "minimize_spec's options takes a reprospec.MinimizeOptions, got IsolateOptions",
        ),
        (
            lambda spec: reprospec.amplify_spec([spec]),  # type: ignore[arg-type]
            "amplify_spec's spec takes a Spec or a spec file",
        ),
        (
            lambda spec: reprospec.bisect_spec(spec),
            "bisect_spec's request takes a reprospec.BisectRequest",
        ),
        (lambda spec: reprospec.isolate_spec(spec, progress="loud"), "progress takes a function"),  # type: ignore[arg-type]
        (lambda spec: reprospec.isolate_spec(spec, cancel=True), "cancel takes a threading.Event"),  # type: ignore[arg-type]
        # Before: dropped unsaid, and the search ran on the first failing cell instead.
        (
            lambda spec: reprospec.isolate_spec(spec, _filtered(reprospec.IsolateOptions)),
            "isolate_spec: run.matrix_filters (verbose=true) do not choose the cell it searches: "
            "give them as reprospec.IsolateOptions(cell=...)",
        ),
        (
            lambda spec: reprospec.minimize_spec(spec, _filtered(reprospec.MinimizeOptions)),
            "give them as reprospec.MinimizeOptions(cell=...)",
        ),
        (
            lambda spec: reprospec.amplify_spec(spec, _filtered(reprospec.AmplifyOptions)),
            "give them as reprospec.AmplifyOptions(matrix_filters=...)",
        ),
    ],
)
def test_bad_search_arguments_are_usage_errors_before_anything_runs(
    tmp_path: Path, call: Callable[[Path], object], message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        call(_spec(tmp_path))
    assert list(tmp_path.iterdir()) == [tmp_path / "toggles.yaml"]


def test_a_search_refusing_its_question_raises_the_clis_usage_error(tmp_path: Path) -> None:
    # The refusal `reprospec isolate -m ... --failing ...` exits 2 with, in the words of the
    # arguments given (cell, failing); nothing runs.
    options = reprospec.IsolateOptions(
        cell=("crash=true",),
        failing="crash=true,verbose=false",
        run=reprospec.RunOptions(out=tmp_path / "out"),
    )
    with pytest.raises(
        UsageError, match=r"^cell and failing both choose the failing cell"
    ) as raised:
        reprospec.isolate_spec(_spec(tmp_path), options, cancel=threading.Event())
    assert raised.value.exit_code == 2


def _bisected(status: Status, attempts: int = 3, infra: bool = False) -> reprospec.BisectReport:
    """A bisect's answer as its driver makes it, without running one."""
    evidence = VersionEvidence(
        "1.0", "skipped", 0, 0, 0.5, infra_error="cannot install" if infra else None
    )
    found = status == "found"
    result = BisectResult(
        status=status,
        first_bad="1.1" if found else None,
        last_good="1.0" if found else None,
        confidence=0.99 if found else 0.0,
        attempts=attempts,
        reason="" if found else "nothing ran",
        versions=(evidence,),
    )
    request = reprospec.BisectRequest(Path("s.yaml"), "pkg", "1.0", "1.1")
    return reprospec.BisectReport(
        request, "pkg-1.0-1.1-x", Path("out/bisect/x"), "s", "", ("1.0", "1.1"), result
    )


def test_render_and_exit_code_take_a_searchs_answer() -> None:
    # A search's answer, beside a RunResult: rendered and judged as its verb prints and exits.
    found = _bisected("found")
    for fmt in ("md", "text", "json"):
        assert reprospec.render(found, fmt) == found.render(fmt)
    assert reprospec.render(found, "text").startswith("first bad: pkg 1.1 (last good 1.0)")
    assert reprospec.exit_code(found) == 0
    assert reprospec.exit_code(_bisected("undecided")) == 1
    assert reprospec.exit_code(_bisected("refused", attempts=0, infra=True)) == 3
    # A run's formats are not an answer's.
    with pytest.raises(UsageError, match="a search's answer renders as 'md', 'text', 'json'"):
        reprospec.render(found, "html")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # Each names the argument given, where before it named the CLI's option (`--repeat`,
        # `--`, `--from-log`) or was a TypeError of Python's (`python=3`, `out=3`).
        ({"argv": "python train.py"}, "argv takes a sequence of strings"),
        ({"argv": []}, "capture_command needs a command: argv=['python', 'train.py', ...]"),
        ({"argv": [" "]}, "capture: the command's first word is empty: nothing to run"),
        ({"argv": ["python", "t.py"], "repeat": 0}, "repeat must be >= 1, got 0"),
        ({"argv": ["python", "t.py"], "repeat": "2"}, "repeat takes a whole number, got '2'"),
        ({"argv": ["python", "t.py"], "timeout_s": "5m"}, "timeout_s takes seconds as a number"),
        ({"argv": ["python", "t.py"], "timeout_s": -1}, "timeout_s must be > 0 seconds"),
        ({"argv": ["python", "t.py"], "python": 3}, "python takes a string, got 3"),
        ({"argv": ["python", "t.py"], "out": 3}, "out takes a path, got 3"),
        ({"argv": ["python", "t.py"], "output": 3}, "output takes a path, got 3"),
        ({"argv": ["python", "t.py"], "progress": 3}, "progress takes a function"),
    ],
)
def test_capture_refuses_a_bad_command_before_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, object], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="^" + re.escape(message)):
        reprospec.capture_command(**kwargs)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_the_package_and_investigate_name_the_same_searches() -> None:
    # mypy reads only a literal __all__, so the names are written three times (reprospec's
    # __all__ and _SEARCHES, investigate's __all__): a name one list lacks would be an
    # AttributeError from `reprospec.NAME`, or a search the package never names.
    import reprospec
    from reprospec import investigate

    assert set(investigate.__all__) == set(reprospec._SEARCHES)
    assert set(reprospec._SEARCHES).issubset(reprospec.__all__)
    # Every other name but __version__ is reprospec.api's, read on first use.
    for name in reprospec.__all__:
        assert getattr(reprospec, name) is not None, name


def test_every_answer_renders_md_without_a_format() -> None:
    # Before: a search's answer and `reprospec.render` defaulted to "md", a Captured's and a
    # RunComparison's own render() to "text": one answer, two views by the same call.
    from reprospec.capture.command import Captured, Observed
    from reprospec.report.compare import RunComparison

    renders: tuple[Callable[..., str], ...] = (
        reprospec.IsolateResult.render,
        reprospec.Minimized.render,
        reprospec.AmplifyReport.render,
        reprospec.BisectReport.render,
        Captured.render,
        RunComparison.render,
    )
    for render in renders:
        assert inspect.signature(render).parameters["fmt"].default == "md"
    captured = Captured(Path("t-capture.yaml"), Observed(None, 0, 0), ("wrote t-capture.yaml",))
    assert captured.render() == reprospec.render(captured) == captured.render("md")
    assert captured.render("md").startswith("## Captured t-capture.yaml")


# Two failing cells (crash=true, either verbose): amplify and bisect must be told which.
TWO_FAILING = """\
reprospec: 1
name: toggles
matrix: {crash: [false, true], verbose: [false, true]}
command: python -c "import sys; sys.exit(0)" ${{ matrix.crash }} ${{ matrix.verbose }}
run: {timeout: 30s}
expect: {outcome: crash, signal: SIGSEGV, cases: [{when: {crash: false}, outcome: pass}]}
"""


def test_api_errors_name_the_argument_passed_not_the_cli_option(tmp_path: Path) -> None:
    # python-api.md: an error of what you passed names the argument. Before, each said the
    # CLI's `-m` (`no cell matches -m verbose=maybe`, `choose one with -m: -m verbose=false`)
    # and `tries` was refused only once amplify_spec ran.
    spec = tmp_path / "t.yaml"
    spec.write_text(TWO_FAILING)
    refusals: list[tuple[Callable[[], object], str]] = [
        (
            lambda: reprospec.plan_run(
                spec, reprospec.RunOptions(matrix_filters=("verbose=maybe",))
            ),
            "no cell matches matrix_filters=('verbose=maybe',): axis 'verbose' holds false, true",
        ),
        (
            lambda: reprospec.minimize_spec(spec, reprospec.MinimizeOptions(cell=("nope=1",))),
            "MinimizeOptions(cell=('nope=1',)): unknown axis 'nope'",
        ),
        (
            lambda: reprospec.amplify_spec(spec, reprospec.AmplifyOptions(budget=5)),
            "choose one with AmplifyOptions(matrix_filters=...): "
            "AmplifyOptions(matrix_filters=('verbose=false',)) (cell crash=true,verbose=false)",
        ),
        (
            lambda: reprospec.bisect_spec(
                reprospec.BisectRequest(spec=spec, package="packaging", good="21.3", bad="22.0")
            ),
            "choose one with BisectRequest(matrix_filters=...): "
            "BisectRequest(matrix_filters=('verbose=false',))",
        ),
        (
            lambda: reprospec.AmplifyOptions(tries=("nosuch=1",)),
            "tries nosuch=1: unknown perturbation 'nosuch'",
        ),
    ]
    for make, message in refusals:
        with pytest.raises(UsageError, match=re.escape(message)) as refused:
            make()
        assert "-m" not in str(refused.value)
        assert "--" not in str(refused.value)
