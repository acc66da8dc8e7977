"""`run --observe` and specs without `expect`, from the CLI."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.cli import ROOT, SPECS, Cli


def test_run_observe_on_a_spec_with_expect(cli: Cli) -> None:
    result = cli("run", str(SPECS / "segfault-command.yaml"), "--observe", "-j", "2")
    assert result.code == 0, result.stderr
    data = result.results()
    assert {c["verdict"] for c in data["cells"]} == {"observed"}
    assert {c["expected"]["outcome"] for c in data["cells"]} == {"any"}
    assert data["summary"]["observed"] == 4
    assert "4/4 cells observed, 2 outcomes" in result.stdout
    assert (
        "num_workers=2 and pin_memory=true together: in every cell with this outcome, "
        "together in no other" in result.stdout
    )
    report = (result.latest_run() / "report.md").read_text()
    assert "\n## Outcomes\n" in report
    assert "**Observed 4 cells: crash SIGSEGV @ validation:7 in 1, pass" in report


def test_a_spec_without_expect_observes(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "no-expect.yaml"
    spec.write_text(
        (ROOT / "specs" / "segfault-command.yaml")
        .read_text()
        .split("\nexpect:")[0]
        .replace("workdir: fixtures", f"workdir: {ROOT / 'specs' / 'fixtures'}")
    )
    assert cli("validate", str(spec)).code == 0
    result = cli("run", str(spec), "-j", "2", "--format", "json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["summary"]["observed"] == 4
    crashed = [c for c in data["cells"] if c["attempts"][0]["outcome"]["kind"] == "crash"]
    assert [c["id"] for c in crashed] == ["num_workers=2,pin_memory=true"]


def test_observe_exits_3_when_something_could_not_run(cli: Cli) -> None:
    result = cli(
        "run",
        str(SPECS / "segfault-command.yaml"),
        "--observe",
        "-m",
        "num_workers=0",
        "--set",
        "environment.env.X=1",
        "--python",
        str(ROOT / "no-such-python"),
    )
    assert result.code == 3, result.stderr


def test_a_cell_that_could_not_run_is_not_counted_observed(cli: Cli, tmp_path: Path) -> None:
    # "1 cell observed, 0 outcomes, 1 infra-error" of a spec whose only cell never ran.
    spec = tmp_path / "nocmd.yaml"
    spec.write_text("reprospec: 1\nname: nocmd\ncommand: no-such-command-of-reprospec\n")
    result = cli("run", str(spec))
    assert result.code == 3, result.stderr
    assert "0/1 cell observed, 0 outcomes, 1 infra-error" in result.stdout


def test_an_observed_cell_counts_its_attempts_and_matches_nothing(cli: Cli, tmp_path: Path) -> None:
    # Observed attempts match "anything": the attempts column read `3/3 (95% CI 0.44–1.00)`
    # of a cell that passed every time, and each progress line said `match`.
    spec = tmp_path / "observed.yaml"
    spec.write_text(
        "reprospec: 1\nname: observed\nmatrix:\n  p: [0, 1]\n"
        "command: python -c 'import sys; sys.exit(${{ matrix.p }})'\nrun: {repeat: 3}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "(observed)" in line]
    assert len(rows) == 2, result.stdout
    assert all("│        3 │ observed │" in row for row in rows), rows
    assert "95% CI" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 6, result.stderr
    assert all("(observed, " in line for line in lines), lines
    # The HTML page holds the Outcomes and what explains them, as report.md does: it
    # showed the failure, the results and how to reproduce, without the explanation.
    page = tmp_path / "observed.html"
    assert cli("report", "latest", "--format", "html", "-o", str(page)).code == 0
    html = page.read_text()
    assert '<h2 id="outcomes">Outcomes</h2>' in html
    assert "<li><code>p=1</code>: in every cell with this outcome, in no other</li>" in html


def test_an_observed_runs_report_reruns_observed(cli: Cli, tmp_path: Path) -> None:
    # The report said `reprospec run report.md`, which judged the embedded spec's cells
    # against its expect: 1 of 2 "reproduced", exit 1, of a run that only observed.
    spec = tmp_path / "judged.yaml"
    spec.write_text(
        "reprospec: 1\nname: judged\nmatrix:\n  p: [0, 3]\n"
        "command: python -c 'import sys; sys.exit(${{ matrix.p }})'\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    first = cli("run", str(spec), "--observe", "-m", "p=3", "--repeat", "2")
    assert first.code == 0, first.stderr
    report = first.latest_run() / "report.md"
    offered = "`reprospec run report.md --observe -m p=3 --repeat 2`"
    assert offered in report.read_text()
    again = cli("run", str(report), "--yes", "--observe", "-m", "p=3", "--repeat", "2")
    assert again.code == 0, again.stdout + again.stderr
    assert "1/1 cell observed" in again.stdout


TWO_FRAMES = """\
import ctypes, os, signal, sys
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGSEGV)
elif sys.argv[1] == "read":
    ctypes.string_at(0)
"""


def test_two_crashes_of_one_signal_in_different_frames_are_told_apart(
    cli: Cli, tmp_path: Path
) -> None:
    """the headline read `crash SIGSEGV in 1, crash SIGSEGV in 1` and each group's
    explanation claimed its cell alone, where the two crashes were in different native
    frames, which nothing on the page named. Each outcome names its frame."""
    from reprospec import native

    unavailable = native.unavailable_reason()
    if unavailable is not None:
        pytest.skip(f"{unavailable}: the two crashes have one signature")
    (tmp_path / "crash.py").write_text(TWO_FRAMES)
    spec = tmp_path / "two.yaml"
    spec.write_text(
        "reprospec: 1\nname: two\nmatrix: {mode: [ok, kill, read]}\n"
        "environment: {workdir: .}\ncommand: python crash.py ${{ matrix.mode }}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    report = (result.latest_run() / "report.md").read_text()
    headline = report.split("\n**", 1)[1].split("**\n", 1)[0]
    assert "crash SIGSEGV at strlen@libc in 1" in headline, headline
    assert headline.count("crash SIGSEGV at ") == 2, headline


PARENT = """\
import subprocess, sys
subprocess.run([sys.executable, "{child}"], check=True)
"""


def _two_children(tmp_path: Path, expect: str = "", scripts: str = "a, b") -> Path:
    """A spec whose cell `script=a` runs `python3 a.py`, whose child `a_child.py` dies of a
    real SIGSEGV, and `script=b` the same through `b.py` and `b_child.py` (`ok.py` passes)."""
    for name in ("a", "b"):
        (tmp_path / f"{name}_child.py").write_text("import ctypes\nctypes.string_at(0)\n")
        (tmp_path / f"{name}.py").write_text(PARENT.format(child=f"{name}_child.py"))
    (tmp_path / "ok.py").write_text("print('ok')\n")
    spec = tmp_path / "children.yaml"
    spec.write_text(
        f"reprospec: 1\nname: children\nmatrix: {{script: [{scripts}]}}\n"
        "environment: {workdir: .}\ncommand: python3 ${{ matrix.script }}.py\n" + expect
    )
    return spec


def test_crashes_of_two_children_are_two_outcomes_each_naming_its_own(
    cli: Cli, tmp_path: Path
) -> None:
    """The two cells' crashes have one signature (`crash:SIGSEGV:child:...`), so
    observe mode made them one group, `crash SIGSEGV (child: ... a_child.py) in every
    cell`, worded by the first attempt: b's crash read as a_child.py's."""
    result = cli("run", str(_two_children(tmp_path)), "-j", "2")
    assert result.code == 0, result.stderr
    assert "2/2 cells observed, 2 outcomes" in result.stdout, result.stdout
    out = result.stdout
    for name in ("a", "b"):
        headline = f" {name}_child.py) in 1 of 2 cells (1 attempt)"
        assert headline in out, out
        explained = out.split(headline, 1)[1].splitlines()[1]
        assert explained.strip() == f"script={name}: in every cell with this outcome, in no other"
    report = (result.latest_run() / "report.md").read_text()
    headline = report.split("\n**", 1)[1].split("**\n", 1)[0]
    assert "a_child.py) in 1, " in headline, headline
    assert "b_child.py) in 1" in headline, headline
    # Observed, nothing was expected: the other crash is `Also seen` (it read `Expected as
    # well`, since an observed attempt matches anything).
    assert "\n### Also seen: `crash SIGSEGV (child: " in report, report
    assert "Expected as well" not in report


HANG_AFTER_A_CHILDS_ERROR = """\
import subprocess, sys, time
subprocess.run([sys.executable, "-c", "raise PermissionError('no access to /dev/shm')"])
time.sleep(600)
"""


def test_a_hang_is_not_named_by_a_traceback_a_finished_child_printed(
    cli: Cli, tmp_path: Path
) -> None:
    """Every observed cell read `hang (last traceback: PermissionError)`, a child's
    error that ended long before, while the program slept on at its line 3; the user took
    the child's error for the cause. The hang is `hang`; the report says where it hung and
    quotes the traceback apart, as one the process went on from."""
    (tmp_path / "hangkid.py").write_text(HANG_AFTER_A_CHILDS_ERROR)
    spec = tmp_path / "hang.yaml"
    spec.write_text(
        "reprospec: 1\nname: hangkid\nmatrix: {threads: ['1', '4']}\n"
        "environment: {workdir: ., env: {OMP_NUM_THREADS: '${{ matrix.threads }}'}}\n"
        "command: python hangkid.py\nrun: {timeout: 2s}\n"
    )
    result = cli("run", str(spec), "-j", "2")
    assert result.code == 0, result.stderr
    assert "hang in <module> (hangkid.py:3) in every cell (2 attempts)" in result.stdout
    assert "PermissionError" not in result.stdout
    report = (result.latest_run() / "report.md").read_text()
    assert "**Observed 2 cells: hang in <module> (hangkid.py:3) in 2**" in report, report
    assert "was in `hangkid.py:3 in <module>`" in report
    assert (
        "did not end the process (an exception it handled and logged, or a child process's): "
        "`PermissionError: no access to /dev/shm`"
    ) in report


HANG_IN_ONE_OF_TWO = """\
import sys, threading, time


def wait_for_data():
    threading.Event().wait()


def spin():
    while True:
        time.sleep(0.01)


if sys.argv[1] == "data":
    wait_for_data()
else:
    spin()
"""


def _hangs_in_two_places(tmp_path: Path, expect: str = "") -> Path:
    """A spec whose cell `mode=data` hangs in one function and `mode=spin` in another."""
    (tmp_path / "hangs.py").write_text(HANG_IN_ONE_OF_TWO)
    spec = tmp_path / "hangs.yaml"
    spec.write_text(
        "reprospec: 1\nname: hangs\nmatrix: {mode: [data, spin]}\n"
        "environment: {workdir: .}\ncommand: python hangs.py ${{ matrix.mode }}\n"
        "run: {timeout: 2s}\n" + expect
    )
    return spec


def test_hangs_in_two_places_are_two_outcomes_each_naming_its_frame(
    cli: Cli, tmp_path: Path
) -> None:
    """Two cells hung in different functions read `hang` alike, one outcome `in
    every cell`, so nothing said that the matrix value chose where the program hung. The
    frame each sat in is the outcome's (`hung_in` in results.json), in its words, and
    counts its cells apart; a busy loop caught at two of its lines would stay one."""
    result = cli("run", str(_hangs_in_two_places(tmp_path)), "-j", "2")
    assert result.code == 0, result.stderr
    assert "2/2 cells observed, 2 outcomes" in result.stdout, result.stdout
    lines = result.stdout.splitlines()
    for mode, frame in (("data", "wait_for_data (hangs.py:5)"), ("spin", "spin (hangs.py:")):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"hang in {frame}"))
        assert lines[at].endswith(" in 1 of 2 cells (1 attempt)"), lines[at]
        assert lines[at + 1].strip() == f"mode={mode}: in every cell with this outcome, in no other"
    report = (result.latest_run() / "report.md").read_text()
    failure = report.split("\n## Failure\n", 1)[1].split("\n## ", 1)[0]
    # Each hang's place, on a line of its own (one line, `hang` (2 attempts), named one).
    assert "- `hang` (1 attempt): pid " in failure, failure
    assert " was in `hangs.py:5 in wait_for_data` (cell `mode=data`, attempt 1)" in failure
    assert " in spin` (cell `mode=spin`, attempt 1)" in failure, failure
    cells = {c["id"]: c["attempts"][0]["outcome"] for c in result.results()["cells"]}
    assert cells["mode=data"]["signature"] == cells["mode=spin"]["signature"]
    hung = cells["mode=data"]["hung_in"]
    assert (Path(hung["path"]).name, hung["line"], hung["function"]) == (
        "hangs.py",
        5,
        "wait_for_data",
    )
    assert cells["mode=spin"]["hung_in"]["function"] == "spin"


def test_a_judged_report_with_no_pass_separates_the_failures_from_each_other(
    cli: Cli, tmp_path: Path
) -> None:
    """Every cell hung as expected, one in each function; the report's section was
    headed `What separates failing from passing cells` where no cell had passed, and held
    one `hang`, so the matrix value that chose the place was said nowhere."""
    spec = _hangs_in_two_places(tmp_path, "expect: {outcome: hang}\n")
    result = cli("run", str(spec), "-j", "2")
    assert result.code == 0, result.stdout + result.stderr
    report = (result.latest_run() / "report.md").read_text()
    assert "What separates failing from passing cells" not in report
    separates = report.split("\n## What separates the failures\n", 1)[1].split("\n## ", 1)[0]
    for mode, frame in (("data", "wait_for_data (hangs.py:5)"), ("spin", "spin (hangs.py:")):
        headline = next(line for line in separates.splitlines() if f"hang in {frame}" in line)
        assert f"in 1 of 2 cells: `mode={mode}`" in headline, separates


def test_a_judged_report_names_each_crashed_child(cli: Cli, tmp_path: Path) -> None:
    """The judged report counted the two children's crashes as one, in its headline
    (`crash SIGSEGV (child: ... a_child.py) in 2 of 3 cells`), in what separates the
    failing cells (one failure, of `script=a` and `script=b` alike), and in the other
    failures shown with their logs (none)."""
    expect = "expect: {outcome: crash, cases: [{when: {script: ok}, outcome: pass}]}\n"
    result = cli("run", str(_two_children(tmp_path, expect, "a, b, ok")), "-j", "2")
    assert result.code == 0, result.stderr
    report = (result.latest_run() / "report.md").read_text()
    headline = report.split("\n**", 1)[1].split("**\n", 1)[0]
    assert headline.startswith("2 of 3 cells failed: crash SIGSEGV (child: "), headline
    assert "a_child.py) in 1, crash SIGSEGV (child: " in headline, headline
    assert "b_child.py) in 1;" in headline, headline
    separates = report.split("## What separates", 1)[1].split("\n## ", 1)[0]
    for name in ("a", "b"):
        assert f" {name}_child.py)` in 1 of 3 cells: `script={name}`" in separates
    # The child the Failure section does not lead with gets its own log, as another failure.
    assert "\n### Expected as well: `crash SIGSEGV (child: " in report, report


def test_observe_lines_name_a_venv_path_as_the_table_does(cli: Cli, tmp_path: Path) -> None:
    """Under `--runner venv` a crashed child is the venv's interpreter: the table said
    `(child: <venv>/bin/python child.py 2)` and the outcome lines under it the venv's
    absolute path (`.../envs/530bf22d164f2554/bin/python`); both name it short now."""
    from reprospec import venvs
    from tests.support.envs import make_wheel, uv_environment

    wheels = tmp_path / "wheels"
    boom = "import ctypes\n\n\ndef go(n):\n    if n == 2:\n        ctypes.string_at(0)\n"
    make_wheel(wheels, "reprospec-observeboom", "1.0", boom + "    raise ValueError(n)\n")
    (tmp_path / "main.py").write_text(
        "import subprocess\nimport sys\n\n"
        'subprocess.run([sys.executable, "child.py", sys.argv[1]], check=True)\n'
    )
    (tmp_path / "child.py").write_text(
        "import sys\n\nimport reprospec_observeboom\n\nreprospec_observeboom.go(int(sys.argv[1]))\n"
    )
    spec = tmp_path / "boom.yaml"
    spec.write_text(
        "reprospec: 1\nname: boom\n"
        'environment:\n  packages: ["reprospec-observeboom==1.0"]\n'
        "files: [main.py, child.py]\n"
        "matrix:\n  n: [1, 2]\n"
        "command: python main.py ${{ matrix.n }}\n"
    )
    # The crash is read from its core. The envs live in a folder so long that the core's
    # first 80 bytes of the command line (pr_psargs) end inside the interpreter's path:
    # the whole argv is read from the core's stack.
    top = Path(tempfile.mkdtemp(prefix="rs-envs-"))
    envs = top / ("a-long-folder-of-environments-" + "e" * 60)
    env = {venvs.ENVS_VARIABLE: str(envs), **uv_environment()}
    try:
        result = cli(
            "run", str(spec), "--observe", "--runner", "venv", "--find-links", str(wheels), env=env
        )
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert result.code == 0, result.stdout + result.stderr
    table_row = next(line for line in result.stdout.splitlines() if "crash SIGSEGV" in line)
    assert "(child: <venv>/bin/python child.py 2)" in table_row, result.stdout
    (headline,) = [line for line in result.stdout.splitlines() if line.startswith("crash ")]
    assert headline.startswith("crash SIGSEGV (child: <venv>/bin/python child.py 2) in 1 of"), (
        headline
    )
    assert str(envs) not in result.stdout, result.stdout
    # report.md names the child as the console does, the crashed child's stack by it too.
    report = (result.latest_run() / "report.md").read_text()
    assert "crash SIGSEGV (child: <venv>/bin/python child.py 2)" in report, report
    assert "(`<venv>/bin/python child.py 2`)" in report, report
