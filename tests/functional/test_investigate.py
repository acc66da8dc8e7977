"""The Python API's searches run for real: `reprospec.isolate_spec`, `amplify_spec`,
`minimize_spec` and `bisect_spec` on tiny specs whose children die of a real SIGSEGV, each
answer frozen, unprinted, rendered and judged as its verb prints and exits."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

import reprospec
from reprospec import venvs
from reprospec.errors import SpecError, UsageError
from reprospec.spec import load as spec_load
from tests.support.api import TOGGLES
from tests.support.envs import make_releases, uv_environment


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_isolate_names_the_toggle_that_segfaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, "toggles.yaml", TOGGLES)
    said: list[str] = []
    options = reprospec.IsolateOptions(run=reprospec.RunOptions(out=tmp_path / "out"))
    found = reprospec.isolate_spec(spec, options, progress=said.append)
    assert isinstance(found, reprospec.IsolateResult)
    assert [d.name for d in found.culprits] == ["crash"]
    assert (found.failing.cell.id, found.passing.cell.id) == (
        "crash=true,verbose=false",
        "crash=false,verbose=true",
    )
    assert found.result.status == "isolated"
    assert not found.interrupted
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.budget = 3  # type: ignore[misc]
    # Nothing printed: what the verb says on stderr went to `progress`.
    assert capsys.readouterr() == ("", "")
    assert said
    assert said[-1].startswith("round ")
    # The views and the exit code are the verb's own: isolate.md as written, its JSON.
    assert reprospec.exit_code(found) == 0
    assert reprospec.render(found, "md") == (found.folder / "isolate.md").read_text()
    assert json.loads(reprospec.render(found, "json"))["status"] == "isolated"
    assert reprospec.render(found, "text").startswith("crashes when crash=true")
    # A loaded Spec runs with its own overrides; the same question replays the stored probes.
    loaded = reprospec.load_spec(spec, ("run.timeout=50s",))
    again = reprospec.isolate_spec(loaded, options)
    assert [d.name for d in again.culprits] == ["crash"]
    assert again.id != found.id  # another timeout: another question
    replayed = reprospec.isolate_spec(spec, options)
    assert (replayed.id, replayed.reused) == (found.id, len(found.runs))


def test_a_callers_mistake_is_named_by_the_argument_it_passed_not_a_cli_option(
    tmp_path: Path,
) -> None:
    # `(from --set matrix.b=1)`, `give ... with --passing-set`: options the caller never typed.
    spec = _write(
        tmp_path,
        "one.yaml",
        "reprospec: 1\nname: one\ncommand: 'false'\nexpect: {outcome: error}\n",
    )
    with pytest.raises(SpecError, match=r"\(from overrides matrix\.b=1\)$"):
        reprospec.load_spec(spec, ["matrix.b=1"])
    with pytest.raises(UsageError, match=r"^overrides nonsense: expected PATH=VALUE"):
        reprospec.load_spec(spec, ["nonsense"])
    isolate = reprospec.IsolateOptions(run=reprospec.RunOptions(out=tmp_path / "out"))
    with pytest.raises(UsageError, match=r"side with passing_sets \(the cell") as said:
        reprospec.isolate_spec(spec, isolate)
    assert "--" not in str(said.value)
    bad_set = dataclasses.replace(isolate, run=reprospec.RunOptions(overrides=("nonsense",)))
    with pytest.raises(UsageError, match=r"^overrides nonsense: expected PATH=VALUE"):
        reprospec.isolate_spec(spec, bad_set)
    with pytest.raises(UsageError, match=r"^passing_sets bad: expected PATH=VALUE"):
        reprospec.isolate_spec(spec, dataclasses.replace(isolate, passing_sets=("bad",)))
    with pytest.raises(UsageError, match=r"^tries nosuch=1: unknown perturbation"):
        reprospec.amplify_spec(spec, reprospec.AmplifyOptions(tries=("nosuch=1",)))
    # The CLI's own words are the CLI's, after an API call in the same process too.
    with pytest.raises(UsageError, match=r"^--set nonsense: "):
        spec_load.load_spec(spec, ["nonsense"])


def test_a_cancelled_isolate_is_an_interrupted_answer_exit_130(tmp_path: Path) -> None:
    spec = _write(tmp_path, "toggles.yaml", TOGGLES)
    cancel = threading.Event()
    cancel.set()
    options = reprospec.IsolateOptions(run=reprospec.RunOptions(out=tmp_path / "out"))
    found = reprospec.isolate_spec(spec, options, cancel=cancel)
    assert found.interrupted
    assert reprospec.exit_code(found) == 130


def test_amplify_finds_the_perturbation_that_makes_the_crash_frequent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The crash needs a thread switch interval below 0.1 ms: never in the plain program.
    _write(
        tmp_path,
        "rare.py",
        "import os, signal, sys\n"
        "if sys.getswitchinterval() < 1e-4:\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    spec = _write(
        tmp_path,
        "rare.yaml",
        "reprospec: 1\nname: rare\ncommand: python rare.py\nrun: {timeout: 60s}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n",
    )
    options = reprospec.AmplifyOptions(
        tries=("switch_interval=1e-6",),
        budget=40,
        run=reprospec.RunOptions(out=tmp_path / "out", jobs=2),
    )
    found = reprospec.amplify_spec(spec, options)
    assert isinstance(found, reprospec.AmplifyReport)
    assert found.result.status == "amplified"
    assert found.sentence().startswith("base 0/")
    assert "with switch_interval=1e-06: " in found.sentence()
    assert reprospec.exit_code(found) == 0
    assert reprospec.render(found, "md") == (found.folder / "amplify.md").read_text()
    assert found.amplified_spec is not None
    assert found.amplified_spec.is_file()
    assert capsys.readouterr().out == ""


def test_minimize_shrinks_the_program_to_the_lines_that_crash(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "crash.py",
        "import os\nimport signal\nimport sys\n\ntotal = 0\nfor i in range(3):\n"
        "    total += i\nprint('total', total)\nif sys.argv[1] == 'boom':\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\nprint('done')\n",
    )
    spec = _write(
        tmp_path,
        "crash.yaml",
        "reprospec: 1\nname: minimize-me\nmatrix:\n  mode: [calm, boom]\n"
        "command: python crash.py ${{ matrix.mode }}\nrun: {timeout: 60s}\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n  cases:\n"
        "    - when: {mode: calm}\n      outcome: pass\n",
    )
    options = reprospec.MinimizeOptions(
        budget=200, run=reprospec.RunOptions(out=tmp_path / "out", jobs=2)
    )
    found = reprospec.minimize_spec(spec, options)
    assert isinstance(found, reprospec.Minimized)
    assert found.result.status == "minimized"
    assert not found.unconfirmed
    assert reprospec.exit_code(found) == 0
    kept = (found.output / "crash.py").read_text()
    assert "os.kill(os.getpid(), signal.SIGSEGV)" in kept
    assert "total" not in kept
    assert reprospec.render(found, "md") == (found.output / "minimize.md").read_text()


def test_a_minimization_without_its_passing_cells_says_so_and_counts_lines_once(
    tmp_path: Path,
) -> None:
    """MinimizeOptions(passing_cells=False) on a spec with a passing cell said "the spec has
    no passing cell": it has one, which the option left out. And the start said
    `minimizing 5 lines of Python in the files' own layout` (a line of `a = 1; b = 2`,
    which minimize writes as two) of a search whose answer read `9 -> N`: both counts."""
    _write(
        tmp_path,
        "crash.py",
        "import os, signal, sys\na = 1; b = 2; c = 3\nd = a + b; e = c * 2\n"
        "if sys.argv[1] == 'boom': os.kill(os.getpid(), signal.SIGSEGV)\nprint(d, e)\n",
    )
    spec = _write(
        tmp_path,
        "crash.yaml",
        "reprospec: 1\nname: minimize-me\nmatrix:\n  mode: [calm, boom]\n"
        "command: python crash.py ${{ matrix.mode }}\nrun: {timeout: 60s}\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n  cases:\n"
        "    - when: {mode: calm}\n      outcome: pass\n",
    )
    options = reprospec.MinimizeOptions(
        budget=60, passing_cells=False, run=reprospec.RunOptions(out=tmp_path / "out", jobs=2)
    )
    said: list[str] = []
    found = reprospec.minimize_spec(spec, options, progress=said.append)
    text = reprospec.render(found, "text")
    assert "the spec has no passing cell" not in text, text
    left_out = "the spec's 1 passing cell left out (MinimizeOptions(passing_cells=False))"
    assert left_out in text, text
    assert left_out in (found.output / "minimize.md").read_text()
    start = next(line for line in said if line.startswith("minimizing "))
    assert start.startswith(
        "minimizing 5 lines of Python (crash.py; 9 as minimize writes them) for cell "
        "mode=boom; passing cells checked: none (the spec's 1 left out: passing_cells=False)"
    ), start
    assert any(line.startswith("9 -> ") for line in text.splitlines()), text


def test_an_isolation_out_of_budget_names_the_budget_as_its_caller_gave_it(
    tmp_path: Path,
) -> None:
    # isolate_spec(..., IsolateOptions(budget=3)) said "a larger --budget continues this
    # isolation" in its text, an option the caller never typed.
    spec = _write(tmp_path, "toggles.yaml", TOGGLES)
    options = reprospec.IsolateOptions(budget=3, run=reprospec.RunOptions(out=tmp_path / "out"))
    found = reprospec.isolate_spec(spec, options)
    assert found.result.status == "budget"
    said = "a larger IsolateOptions(budget=...) continues this isolation"
    assert said in reprospec.render(found, "text")


def test_a_minimization_out_of_budget_names_the_budget_as_its_caller_gave_it(
    tmp_path: Path,
) -> None:
    # minimize_spec(..., MinimizeOptions(budget=20)) said "a larger --budget continues this
    # minimization" in its text and minimize.md, an option the caller never typed.
    _write(
        tmp_path,
        "crash.py",
        "import os, signal\na = 1\nb = 2\nc = a + b\nd = c * 2\n"
        "os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    spec = _write(
        tmp_path,
        "crash.yaml",
        "reprospec: 1\nname: crash\ncommand: python crash.py\nrun: {timeout: 30s}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n",
    )
    options = reprospec.MinimizeOptions(budget=20, run=reprospec.RunOptions(out=tmp_path / "out"))
    found = reprospec.minimize_spec(spec, options)
    assert found.result.status == "budget"
    said = "a larger MinimizeOptions(budget=...) continues this minimization"
    assert said in reprospec.render(found, "text")
    assert said in (found.output / "minimize.md").read_text()


def test_bisect_names_the_first_release_that_segfaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A wheelhouse of 1.0..1.3 whose 1.2 and later crash; environments built for this test.
    for name, value in {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}.items():
        monkeypatch.setenv(name, value)
    make_releases(tmp_path / "wheels", "reprospec-apidemo", 4, lambda m: f"BROKEN = {m > 1}\n")
    _write(
        tmp_path,
        "check.py",
        "import os, signal\nimport reprospec_apidemo as demo\n"
        "if demo.BROKEN:\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    spec = _write(
        tmp_path,
        "demo.yaml",
        'reprospec: 1\nname: api-bisect\nenvironment:\n  packages: ["reprospec-apidemo==1.3"]\n'
        "command: python check.py\nrun: {timeout: 60s}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n",
    )
    said: list[str] = []
    request = reprospec.BisectRequest(
        str(spec),  # a str is taken, as every API path is
        "reprospec-apidemo",
        "1.0",
        "1.3",
        find_links=tmp_path / "wheels",
        out=tmp_path / "out",
    )
    report = reprospec.bisect_spec(request, progress=said.append)
    assert isinstance(report, reprospec.BisectReport)
    assert (report.result.first_bad, report.result.last_good) == ("1.2", "1.1")
    assert reprospec.exit_code(report) == 0
    assert reprospec.render(report, "md") == (report.folder / "bisect.md").read_text()
    assert json.loads(reprospec.render(report, "json"))["first_bad"] == "1.2"
    assert reprospec.render(report, "text").startswith(
        "first bad: reprospec-apidemo 1.2 (last good 1.1)"
    )
    assert said[0].startswith("bisecting reprospec-apidemo: 4 candidates")
    # The driver fills the report's budget wording (not set by hand, as unit tests do): the
    # API's caller is told of `BisectRequest(budget=...)`, never of `--budget`.
    assert report.budget_said == "BisectRequest(budget=...)"
    # The answer goes nowhere unasked (the venv runner's build lines are its own, on stderr).
    assert capsys.readouterr().out == ""


def test_capture_command_writes_the_spec_that_reproduces_a_segfault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(
        tmp_path,
        "train.py",
        "import os, signal, sys\n"
        "if '--fast' in sys.argv:\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    captured = reprospec.capture_command(["python", "train.py", "--fast"], out=tmp_path / "out")
    assert isinstance(captured, reprospec.Captured)
    assert captured.spec == tmp_path / "train-capture.yaml"
    assert (captured.written, captured.verified) == (True, True)
    assert reprospec.exit_code(captured) == 0
    assert reprospec.render(captured, "text").startswith("wrote train-capture.yaml: crash:SIGSEGV")
    spec = reprospec.load_spec(tmp_path / "train-capture.yaml")
    assert spec.document["expect"] == {"outcome": "crash", "signal": "SIGSEGV", "where": "main"}
    # The verb's lines are the answer's; nothing was printed.
    assert capsys.readouterr() == ("", "")
    with pytest.raises(reprospec.errors.UsageError, match="exists"):
        reprospec.capture_command(["python", "train.py", "--fast"], out=tmp_path / "out")


def test_the_searches_import_no_torch_and_import_reprospec_stays_lazy() -> None:
    """`import reprospec` loads none of them; reaching one loads the drivers, never torch."""
    import subprocess
    import sys

    code = (
        "import sys, reprospec;"
        "lazy = 'reprospec.investigate' not in sys.modules;"
        "reprospec.isolate_spec, reprospec.bisect_spec, reprospec.capture_command;"
        "reprospec.compare;"
        "print(lazy, 'torch' in sys.modules, 'reprospec.investigate' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False", "True"]
