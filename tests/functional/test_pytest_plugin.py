"""The pytest plugin, driven as a user would: `python -m pytest -p reprospec.pytest_plugin ...`.

Every run is a real pytest in a child process whose items run real attempts (a real
SIGSEGV included); outcomes are read back from its JUnit XML.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprospec import native
from reprospec.pytest_plugin import marker_name
from tests.support.cli import ROOT, SPECS, ExampleRun, is_workload_example, torch_captures_shared

# Every example, in sub-folders too (`pytest --reprospec specs/` collects them all).
EXAMPLES = sorted(p.relative_to(SPECS).as_posix() for p in SPECS.rglob("*.yaml"))
# What the plugin runs of them: every command example, and of the workloads (which cost a
# torch import and an optimizer's torch._dynamo import, about 5 s of CPU, per attempt) a
# crash with native stacks and a hang. The plugin adds nothing per workload: it collects a
# spec's cells and maps the engine's verdict to an outcome, the same for every spec; the
# workload examples' verdicts are the CLI's tests' (test_examples.py).
PLUGIN_EXAMPLES = [
    name
    for name in EXAMPLES
    if name in ("segfault.yaml", "workload-import-hang.yaml") or not is_workload_example(name)
]
# Of the crash, the cells with DataLoader workers: the crash and the pass beside it (the
# two without workers are two more torch runs of the same two outcomes).
PLUGIN_DESELECTED = [
    "specs/segfault.yaml::num_workers=0,pin_memory=false",
    "specs/segfault.yaml::num_workers=0,pin_memory=true",
]


HAVE_XDIST = importlib.util.find_spec("xdist") is not None

# Hypothesis (in the dev extra) registers a pytest plugin by entry point whose import is
# most of a child pytest's start (about 1 s of CPU of 1.6 s, per xdist worker too); no
# spec item uses it, so every child pytest here leaves it out. The plugins these tests
# are about (flaky, rerunfailures, xdist, reprospec's own entry point) still load as a
# user's would.
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")


@dataclass(frozen=True)
class PytestRun:
    code: int
    output: str
    cases: dict[str, tuple[str, dict[str, str], str]]  # node -> (outcome, properties, text)


def run_pytest(
    tmp_path: Path,
    *args: str,
    cwd: Path | None = None,
    timeout: float = 900,
    env: dict[str, str] | None = None,
) -> PytestRun:
    """pytest with the plugin in a child; `--reprospec-out` and `--junitxml` under tmp_path."""
    junit = tmp_path / f"junit-{len(list(tmp_path.glob('junit-*')))}.xml"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "reprospec.pytest_plugin",
        *NO_HYPOTHESIS,
        "-p",
        "no:cacheprovider",
        "--reprospec-out",
        str(tmp_path / "out"),
        f"--junitxml={junit}",
        "-rA",
        *args,
    ]
    child_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
        **(env or {}),
    }
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, cwd=cwd or tmp_path, env=child_env
    )
    cases: dict[str, tuple[str, dict[str, str], str]] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome, text = "passed", ""
            for kind in ("failure", "error", "skipped"):
                found = case.find(kind)
                if found is not None:
                    outcome = {"failure": "failed", "error": "error"}.get(kind, kind)
                    text = (found.get("message") or "") + "\n" + (found.text or "")
            props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
            # classname is the file's node id with "/" as ".": specs.segfault.yaml
            cases[f"{case.get('classname')}::{case.get('name')}"] = (outcome, props, text)
    return PytestRun(proc.returncode, proc.stdout + proc.stderr, cases)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


CRASH_SPEC = f"""\
reprospec: 1
name: crash-fails-one-cell
labels: [segfault, flaky, out-of-memory]
environment:
  workdir: {SPECS / "fixtures"}
matrix:
  num_workers: [0, 2]
  pin_memory: [false, true]
command: >-
  python train_loop.py --steps 8 --workers ${{{{ matrix.num_workers }}}}
  --pin-memory ${{{{ matrix.pin_memory }}}} --crash-at validation:7 --crash-if-pinned-workers
expect:
  outcome: pass
"""


GPU_SPEC = """\
reprospec: 1
name: needs-a-gpu
environment: {gpus: 1}
command: "true"
expect: {outcome: pass}
"""


# -- collection -----------------------------------------------------------------------------


def test_collects_only_spec_files_one_item_per_cell(tmp_path: Path) -> None:
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    write(tmp_path / "ci.yaml", "on: push\njobs: {}\n")  # a repository's other YAML
    write(tmp_path / "specs" / "plain.yaml", GPU_SPEC)  # a spec, but not matching the pattern
    run = run_pytest(tmp_path, "--reprospec", "--collect-only", "-q")
    assert run.code == 0, run.output
    assert "x.repro.yaml::num_workers=2,pin_memory=true" in run.output
    assert "4 tests collected" in run.output
    assert "ci.yaml" not in run.output
    assert "plain.yaml" not in run.output
    # A folder given to --reprospec adds every spec in it (and only specs).
    write(tmp_path / "specs" / "settings.yaml", "name: not a spec\n")
    run = run_pytest(tmp_path, "--reprospec", "specs", "--collect-only", "-q")
    assert "specs/plain.yaml::default" in run.output, run.output
    assert "settings.yaml" not in run.output
    assert "1 test collected" in run.output  # only the folder: not also the rest of rootdir
    # Spec files named on the command line, whatever their names: the option takes the first.
    write(tmp_path / "other.yaml", GPU_SPEC)
    run = run_pytest(
        tmp_path, "--reprospec", "specs/plain.yaml", "other.yaml", "--collect-only", "-q"
    )
    assert "specs/plain.yaml::default" in run.output, run.output
    assert "other.yaml::default" in run.output, run.output
    assert "2 tests collected" in run.output


def test_a_folder_given_to_reprospec_is_collected_beside_the_paths_given(
    tmp_path: Path,
) -> None:
    """`pytest --reprospec specs/ tests/` collected tests/ alone: pytest collects its own
    arguments, and the folder the option took was left out without a word."""
    write(tmp_path / "tests" / "x.repro.yaml", CRASH_SPEC)
    write(tmp_path / "specs" / "plain.yaml", GPU_SPEC)
    run = run_pytest(tmp_path, "--reprospec", "specs", "tests", "--collect-only", "-q")
    assert run.code == 0, run.output
    assert "specs/plain.yaml::default" in run.output, run.output
    assert "tests/x.repro.yaml::num_workers=2,pin_memory=true" in run.output
    assert "5 tests collected" in run.output
    # The folder named both ways is collected once.
    run = run_pytest(tmp_path, "--reprospec", "specs/", "specs", "--collect-only", "-q")
    assert "1 test collected" in run.output, run.output
    # A file of the folder named: that file alone (the folder says which YAML are specs).
    write(tmp_path / "specs" / "other.yaml", GPU_SPEC)
    run = run_pytest(tmp_path, "--reprospec", "specs/", "specs/plain.yaml", "--collect-only", "-q")
    assert "1 test collected" in run.output, run.output
    assert "specs/plain.yaml::default" in run.output, run.output


def test_the_plugin_is_opt_in(tmp_path: Path) -> None:
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    # Loaded by a conftest (as the entry point loads it), but not asked for: nothing collected.
    write(tmp_path / "conftest.py", 'pytest_plugins = ["reprospec.pytest_plugin"]\n')
    argv = [sys.executable, "-m", "pytest", *NO_HYPOTHESIS, "-p", "no:cacheprovider"]
    argv += ["--collect-only", "-q"]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert "no tests collected" in proc.stdout + proc.stderr, proc.stdout
    write(tmp_path / "pytest.ini", "[pytest]\nreprospec = true\n")
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert "4 tests collected" in proc.stdout, proc.stdout


def test_a_bad_spec_is_a_located_collection_error(tmp_path: Path) -> None:
    write(
        tmp_path / "bad.repro.yaml",
        "reprospec: 1\nname: bad\ncommand: 'true'\nexpect: {outcome: pas}\n",
    )
    run = run_pytest(tmp_path, "--reprospec", "--collect-only")
    assert run.code == 2, run.output
    assert f"{tmp_path / 'bad.repro.yaml'}:4:" in run.output
    assert "did you mean 'pass'" in run.output
    assert "Traceback" not in run.output


def test_labels_are_markers_and_k_selects_cells(tmp_path: Path) -> None:
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    write(tmp_path / "gpu.repro.yaml", GPU_SPEC)
    run = run_pytest(
        tmp_path, "--reprospec", "--strict-markers", "-m", "segfault", "--collect-only", "-q"
    )
    assert run.code == 0, run.output
    assert "4/5 tests collected (1 deselected)" in run.output
    run = run_pytest(
        tmp_path,
        "--reprospec",
        "--strict-markers",
        "-m",
        "out_of_memory and not label_flaky",
        "--collect-only",
        "-q",
    )
    assert "no tests collected (5 deselected)" in run.output, run.output
    run = run_pytest(
        tmp_path, "--reprospec", "-k", "num_workers:2 and pin_memory:true", "--collect-only", "-q"
    )
    assert "x.repro.yaml::num_workers=2,pin_memory=true" in run.output
    assert "1/5 tests collected (4 deselected)" in run.output
    assert marker_name("flaky") == "label_flaky"
    assert marker_name("out-of-memory") == "out_of_memory"


# -- running --------------------------------------------------------------------------------


def _check_crash_run(run: PytestRun, tmp_path: Path) -> None:
    assert run.code == 1, run.output
    assert "INTERNALERROR" not in run.output
    outcomes = {node: case[0] for node, case in run.cases.items()}
    assert outcomes == {
        "x.repro.yaml::num_workers=0,pin_memory=false": "passed",
        "x.repro.yaml::num_workers=0,pin_memory=true": "passed",
        "x.repro.yaml::num_workers=2,pin_memory=false": "passed",
        "x.repro.yaml::num_workers=2,pin_memory=true": "failed",
    }, {node: case[2][-3000:] for node, case in run.cases.items()}  # each cell's own words
    _outcome, props, text = run.cases["x.repro.yaml::num_workers=2,pin_memory=true"]
    # Expected vs actual, rate and interval, the report: in the failure and in JUnit. The
    # reason says what was expected and the crash; the body adds where it happened.
    assert ": not reproduced: expected pass, got crash SIGSEGV in 1/1 attempts" in text
    assert "actual:   crash SIGSEGV @ validation:7" in text
    assert "rate:     0/1 matched, 95% interval 0.00..0.80" in text
    assert props["verdict"] == "not-reproduced"
    assert props["rate"] == "0/1"
    assert props["interval"] == "0.000..0.794"
    # With gdb and core dumps at hand the crashing native frame joins the signature.
    native_frame = "" if native.unavailable_reason() else ":strlen@libc"
    assert props["signature"] == "crash:SIGSEGV:main:validation" + native_frame
    report = Path(props["report"])
    assert report.is_file()
    assert report.is_relative_to(tmp_path / "out")
    assert f"report:   {report}" in text


def test_a_segfaulting_cell_fails_alone(tmp_path: Path) -> None:
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    run = run_pytest(tmp_path, "--reprospec", "-p", "no:flaky", "-p", "no:rerunfailures")
    _check_crash_run(run, tmp_path)
    assert "x.repro.yaml:8: num_workers=2,pin_memory=true: not reproduced" in run.output


@pytest.mark.skipif(not HAVE_XDIST, reason="skipped: pytest-xdist is not installed")
def test_a_segfaulting_cell_fails_alone_under_xdist(tmp_path: Path) -> None:
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    run = run_pytest(tmp_path, "--reprospec", "-n", "2")
    _check_crash_run(run, tmp_path)
    assert "2 workers [4 items]" in run.output


def test_with_flaky_and_rerunfailures_loaded_the_verdicts_hold(tmp_path: Path) -> None:
    for plugin in ("flaky", "pytest_rerunfailures"):
        if importlib.util.find_spec(plugin) is None:
            pytest.skip(f"skipped: {plugin} is not installed (it is in the test extra)")
    write(tmp_path / "x.repro.yaml", CRASH_SPEC)
    run = run_pytest(tmp_path, "--reprospec", "-p", "flaky", "-p", "rerunfailures", "--reruns", "1")
    _check_crash_run(run, tmp_path)
    # The spec's `flaky` label is a marker flaky must not act on (it is label_flaky) ...
    assert "Flaky Test Report" not in run.output
    # ... and --reruns reruns the failing cell as a fresh run, with the same verdict.
    assert "1 failed, 3 passed, 1 rerun" in run.output


def test_a_cell_whose_own_pytest_skipped_each_test_is_a_skip_and_a_typo_fails(
    tmp_path: Path,
) -> None:
    # The cell's command is pytest: where it skipped each test (a skipif this machine
    # meets), nothing was tested, and the item is a skip as the GPU's is; a test id it did
    # not find is the cell's infra-error, a failure.
    write(
        tmp_path / "inner" / "check_inner.py",
        "import pytest\n\n@pytest.mark.skip(reason='no GPU here')\ndef test_gpu():\n    pass\n",
    )
    write(
        tmp_path / "x.repro.yaml",
        "reprospec: 1\nname: inner\nmatrix:\n  test: [test_gpu, test_typo]\n"
        "environment: {workdir: inner}\n"
        "command: python -m pytest -p no:cacheprovider -v check_inner.py::${{ matrix.test }}\n"
        "expect: {outcome: pass}\n",
    )
    run = run_pytest(tmp_path, "--reprospec")
    assert run.code == 1, run.output
    skipped = run.cases["x.repro.yaml::test=test_gpu"]
    assert skipped[0] == "skipped", run.output
    assert "pytest ran no test: 1 skipped: no GPU here (exit 0)" in run.output
    failed = run.cases["x.repro.yaml::test=test_typo"]
    assert failed[0] == "failed", run.output
    assert "pytest ran no test: not found: " in failed[2], failed[2]


def test_missing_gpu_skips_infra_error_fails_and_repeat_is_the_plugins(tmp_path: Path) -> None:
    write(tmp_path / "gpu.repro.yaml", GPU_SPEC)
    write(
        tmp_path / "ok.repro.yaml",
        "reprospec: 1\nname: ok\ncommand: 'true'\nexpect: {outcome: pass}\n",
    )
    run = run_pytest(
        tmp_path, "--reprospec", "--reprospec-repeat", "3", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    assert run.code == 0, run.output
    assert run.cases["gpu.repro.yaml::default"][0] == "skipped"
    assert "SKIPPED [1] gpu.repro.yaml:4: skipped: needs 1 GPU" in run.output
    assert run.cases["ok.repro.yaml::default"][1]["rate"] == "3/3"
    broken = run_pytest(
        tmp_path, "--reprospec", "--reprospec-python", "/nonexistent/python", "-k", "ok"
    )
    assert broken.code == 1, broken.output
    assert broken.cases["ok.repro.yaml::default"][0] == "failed", broken.output
    assert "could not run" in broken.output
    assert "Traceback" not in broken.output


def test_a_cell_that_cannot_run_fails_with_its_reason_not_a_traceback(tmp_path: Path) -> None:
    write(
        tmp_path / "missing.repro.yaml",
        "reprospec: 1\nname: missing\ncommand: ./no-such-program\nexpect: {outcome: pass}\n",
    )
    run = run_pytest(tmp_path, "--reprospec", "-p", "no:flaky", "-p", "no:rerunfailures")
    assert run.code == 1, run.output
    outcome, props, text = run.cases["missing.repro.yaml::default"]
    assert outcome == "failed"
    assert props["verdict"] == "infra-error"
    assert text.startswith(
        "missing.repro.yaml:3: default: infra-error: could not run: command not found"
    )
    # The reason, as concise as a failure: none of pytest's own frames (it was 554 lines).
    assert "_pytest" not in run.output, run.output
    assert "Traceback" not in run.output
    assert len(run.output.splitlines()) < 30, run.output


def test_a_reprospec_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """Each cell failed alone, saying `could not run: --out FILE: not a folder`, an option
    the user never typed; now pytest refuses the option, as it does `--reprospec nosuch`."""
    write(tmp_path / "ok.repro.yaml", GPU_SPEC.replace("environment: {gpus: 1}\n", ""))
    write(tmp_path / "a-file", "")
    for out, where in [("a-file", "a file is there"), ("a-file/x", "a-file on its path")]:
        run = run_pytest(tmp_path, "--reprospec", "--reprospec-out", out)
        assert run.code == 4, run.output
        assert f"ERROR: --reprospec-out {out}: not a folder ({where}" in run.output
        assert not run.cases
    assert not (tmp_path / "out").exists()


def test_an_interpreter_for_the_docker_runner_is_a_usage_error(tmp_path: Path) -> None:
    """The run's options refuse it (the docker runner runs the image's python3), but each
    cell failed alone saying so, in the API's words (`python PATH`), not the option's."""
    write(tmp_path / "ok.repro.yaml", GPU_SPEC.replace("environment: {gpus: 1}\n", ""))
    run = run_pytest(
        tmp_path, "--reprospec", "--reprospec-runner", "docker", "--reprospec-python", "python3"
    )
    assert run.code == 4, run.output
    assert "ERROR: --reprospec-python python3: the docker runner runs each cell in its image's" in (
        run.output
    )
    assert not run.cases


ONCE_SPEC = """\
reprospec: 1
name: fails-once
command: >-
  python -c "import os, sys; seen = os.path.exists('tried'); open('tried', 'a').close();
  sys.exit(0 if seen else 1)"
expect: {outcome: pass}
"""


@pytest.mark.parametrize(
    ("plugin", "rerun"),
    [
        ("pytest_rerunfailures", ["-p", "no:flaky", "--reruns", "1"]),
        # flaky reports no call of a failed try, only its setup and teardown: its testcase
        # had the failed verdict's properties and no failure, which a CI page counts a pass.
        ("flaky", ["-p", "no:rerunfailures", "--force-flaky", "--max-runs", "2"]),
    ],
)
def test_a_rerun_try_is_a_rerun_failure_in_junit(
    tmp_path: Path, plugin: str, rerun: list[str]
) -> None:
    """pytest-rerunfailures and flaky: the failed try's testcase says it failed, the last
    says its try."""
    pytest.importorskip(plugin)
    xunit2 = pytest.importorskip("junitparser.xunit2")
    write(tmp_path / "once.repro.yaml", ONCE_SPEC)
    run = run_pytest(tmp_path, "--reprospec", *rerun)
    assert run.code == 0, run.output
    assert "1 passed" in run.output
    junit = next(tmp_path.glob("junit-*.xml"))
    cases = [case for suite in xunit2.JUnitXml.fromfile(str(junit)) for case in suite]
    assert [case.name for case in cases] == ["default", "default"]
    failed_try, last_try = cases
    reruns = failed_try.rerun_failures()
    assert len(reruns) == 1
    assert reruns[0].message.startswith("once.repro.yaml:3: default: not reproduced")
    assert "got error exit 1" in (reruns[0].text or "")
    tried = {p.name: p.value for p in failed_try.properties()}
    assert tried["verdict"] == "not-reproduced"
    assert tried["rerun"] == "true"
    last = {p.name: p.value for p in last_try.properties()}
    assert last["verdict"] == "reproduced"
    assert last["tries"] == "2"
    assert last_try.is_passed
    assert not last_try.rerun_failures()


def run_verdicts(example_run: ExampleRun, names: list[str]) -> dict[str, str]:
    """What `reprospec run -j 2` gives each example's cells, as the pytest outcome it maps to.

    The examples' own runs (tests/functional/test_examples.py reads the same ones): each
    example is run once per session, not once more here; both sides run every spec as written,
    so both are judged under the same timeout."""
    expected: dict[str, str] = {}
    for name in names:
        result = example_run(name)
        assert result.code in (0, 1, 3), result.stderr
        for cell in result.results()["cells"]:
            reasons = [a.get("infra_error") or "" for a in cell["attempts"]]
            outcome = {"reproduced": "passed", "not-reproduced": "failed"}.get(cell["verdict"])
            if outcome is None:
                skipped = reasons and all(r.startswith("skipped: needs") for r in reasons)
                outcome = "skipped" if skipped else "failed"
            expected[f"specs.{name.replace('/', '.')}::{cell['id']}"] = outcome
    return expected


@pytest.mark.slow
def test_the_examples_give_the_verdicts_reprospec_run_gives(
    example_run: ExampleRun, tmp_path: Path
) -> None:
    """`pytest --reprospec specs/ specs/... -n 2` against `reprospec run` on the examples
    (PLUGIN_EXAMPLES: every command example, a workload crash and a workload hang; pytest's
    own --deselect leaves out PLUGIN_DESELECTED).

    One run of them, under xdist when it is installed (it is in the test extra): a worker
    runs each item as the plain plugin does, so a serial run of the same examples would
    check the same items a second time (a few minutes of the suite). The serial plugin is
    driven on its own by every other test of this file, and xdist's own concerns (one
    failing cell alone, the workers' count) by the crash spec's xdist test above."""
    pytest.importorskip("torch")
    assert "segfault.yaml" in PLUGIN_EXAMPLES
    assert len(PLUGIN_EXAMPLES) > len(EXAMPLES) // 2, PLUGIN_EXAMPLES
    # The folder to collect specs from, and the files of it to collect (pytest.md).
    paths = [f"specs/{name}" for name in PLUGIN_EXAMPLES]
    args = ["--reprospec", "specs/", *paths] + (["-n", "2"] if HAVE_XDIST else [])
    args += [word for node in PLUGIN_DESELECTED for word in ("--deselect", node)]
    # The child's engines capture the environment as `reprospec run` does; its torch part
    # is the one the examples' own runs captured (the shared captures), not imported anew.
    with torch_captures_shared(tmp_path / "out"):
        run = run_pytest(tmp_path, *args, cwd=ROOT, timeout=3600)
    got = {node: case[0] for node, case in run.cases.items()}
    # The examples' shared runs are read after the plugin's: other workers make them
    # meanwhile (the examples' own tests), rather than this one before its own run.
    expected = run_verdicts(example_run, PLUGIN_EXAMPLES)
    for node in PLUGIN_DESELECTED:
        del expected[node.replace("specs/", "specs.", 1)]
    assert got == expected, run.output[-3000:]


def test_an_undecided_rate_fails_the_item_and_says_so(tmp_path: Path) -> None:
    # 1 match in 2: the 95% interval 0.09-0.91 straddles >=0.5, nothing is shown either way.
    write(
        tmp_path / "flaky.repro.yaml",
        "reprospec: 1\nname: flaky\n"
        'command: python -c "import sys; sys.exit(${{ attempt }} % 2)"\n'
        "run: {repeat: 2}\nexpect: {outcome: error, rate: '>=0.5'}\n",
    )
    run = run_pytest(tmp_path, "--reprospec")
    assert run.code == 1, run.output
    outcome, props, text = run.cases["flaky.repro.yaml::default"]
    assert outcome == "failed"
    assert props["verdict"] == "undecided"
    assert "default: undecided (intermittent): 1/2" in text


def _failure(output: str, node: str) -> list[str]:
    """The failure pytest prints under `___ node ___`, to its last line (the report's)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip("_ ") == node) + 1
    end = next(i for i, line in enumerate(lines[start:], start) if line.startswith("  report:"))
    return lines[start : end + 1]


def test_a_failure_says_each_fact_once(tmp_path: Path) -> None:
    """The failure repeated itself: the reason's expectation again as `expected:`, its
    outcome as `actual:` and once more per attempt alike, the matched count twice, an
    undecided rate's `undecided` and `run more attempts` twice, and an infra-error's reason
    three times and `rate: 0/0 matched`. Each is said once now."""
    python = f"[{sys.executable}, -c"
    specs = {
        "alike": f"{python}, 'raise ValueError(1)']\nrun: {{repeat: 2}}\n"
        "expect: {outcome: crash, signal: SIGSEGV}",
        "mixed": f"{python}, 'import sys; sys.exit(${{{{ attempt }}}} % 2)']\nrun: {{repeat: 3}}\n"
        "expect: {outcome: pass}",
        "rate": f"{python}, 'import sys; sys.exit(${{{{ attempt }}}} % 2)']\nrun: {{repeat: 2}}\n"
        "expect: {outcome: error, rate: '>=0.5'}",
        "missing": "./no-such-program\nrun: {repeat: 2}\nexpect: {outcome: pass}",
    }
    for name, rest in specs.items():
        write(tmp_path / f"{name}.repro.yaml", f"reprospec: 1\nname: {name}\ncommand: {rest}\n")
    run = run_pytest(tmp_path, "--reprospec", "-p", "no:flaky", "-p", "no:rerunfailures")
    assert run.code == 1, run.output
    report = "  report:   " + str(tmp_path / "out" / "runs")

    alike = _failure(run.output, "alike::default")
    assert alike[0] == (
        "alike.repro.yaml:3: default: not reproduced: expected crash SIGSEGV, got error "
        "exit 1 ValueError in 2/2 attempts"
    )
    assert alike[1:-1] == ["  rate:     0/2 matched, 95% interval 0.00..0.66"]
    assert alike[-1].startswith(report)

    mixed = _failure(run.output, "mixed::default")
    assert mixed[0].endswith(
        ": not reproduced: expected pass, got error exit 1 in 2/3 attempts; 1/3 matched"
    )
    # Which attempt did what, once each; the counts follow from them.
    assert mixed[1:-1] == [
        "  attempt 1: error exit 1",
        "  attempt 2: pass",
        "  attempt 3: error exit 1",
        "  rate:     95% interval 0.06..0.80",
    ]

    rate = _failure(run.output, "rate::default")
    assert rate[0] == (
        "rate.repro.yaml:3: default: undecided (intermittent): 1/2 = 0.50 (95% CI 0.09–0.91) "
        "straddles >=0.5 (error); the rate seen is the bound itself: more attempts may not "
        "decide it"
    )
    assert rate[1:-1] == ["  attempt 1: error exit 1", "  attempt 2: pass"]

    missing = _failure(run.output, "missing::default")
    assert missing[0] == (
        "missing.repro.yaml:3: default: infra-error: could not run: command not found: "
        "./no-such-program (exit 127)"
    )
    assert missing[1:-1] == ["  expected: pass"]


def test_a_run_records_the_pytest_command_that_made_it(tmp_path: Path) -> None:
    # results.json said `reprospec run /abs/x.repro.yaml`, which nobody typed, and
    # `compare` showed it beside the next run's command as though it had been.
    write(
        tmp_path / "x.repro.yaml",
        "reprospec: 1\nname: x\ncommand: 'true'\nexpect: {outcome: pass}\n",
    )
    run = run_pytest(tmp_path, "--reprospec", "x.repro.yaml")
    assert run.code == 0, run.output
    (folder,) = (tmp_path / "out" / "runs").iterdir()
    recorded = json.loads((folder / "results.json").read_text())["command_line"]
    junit = next(tmp_path.glob("junit-*.xml"))
    assert recorded == (
        "pytest -p reprospec.pytest_plugin -p no:hypothesispytest -p no:cacheprovider "
        f"--junitxml={junit} -rA --reprospec x.repro.yaml"
    )
    assert f"```sh\n{recorded}\n```" in (folder / "report.md").read_text()
    again = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "x.repro.yaml", "--out", "out", "--repeat", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    compared = subprocess.run(
        [sys.executable, "-m", "reprospec", "compare", folder.name, "latest", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"command_line: '{recorded}' -> 'reprospec run x.repro.yaml --repeat 2'" in (
        compared.stdout
    ), compared.stdout + compared.stderr
