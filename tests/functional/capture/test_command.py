"""`reprospec capture -- CMD` on real programs: the spec it writes validates, reruns to the same
failure signature, proposes the command's own flags and overrides as axes, and one suggested
alternative separates the cells under `run --observe`.

The programs are in tests/data/capture/ and fail for real: a DataLoader worker's invalid read
(ctypes, torch on CPU), a Hydra app (real hydra-core) raising at validation step 7 under
Lightning-style `\\r` bars, a deadlock inside an import, a segfaulting `subprocess` child, a
multiprocessing.Pool left waiting for its segfaulted worker's task, a forked worker that
segfaults loading the batch ahead of its loop, a DataLoader worker that deadlocks fetching
an item, a DataLoader worker raising ValueError deep in the dataset's code, and a script
whose local modules are imported by name at run time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from reprospec import native
from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import shell_line, shell_split
from reprospec.core.runoptions import RunOptions
from reprospec.plan.run import plan_run
from reprospec.plan.workfiles import named_files
from reprospec.spec.comments import observe_line
from reprospec.spec.load import load_spec
from tests.support.cli import ROOT, Cli, CliResult, interrupt_when
from tests.support.files import written
from tests.support.oomcount import machine_oom_kills
from tests.support.secretnames import named_secrets

PROGRAMS = ROOT / "tests" / "data" / "capture"


def copied(case: str, tmp_path: Path) -> Path:
    """The program's folder, copied where its runs may write (cores, Hydra's outputs/)."""
    workdir = tmp_path / case
    shutil.copytree(PROGRAMS / case, workdir)
    return workdir


def capture(
    cli: Cli,
    workdir: Path,
    *argv: str,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> CliResult:
    out = workdir.parent / "out"
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), *options, "--", *argv,
        cwd=workdir, env=env,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    return result


def venv_first(*before: Path) -> dict[str, str]:
    """A PATH that finds this venv's `pytest` (and `before`'s programs ahead of it), as a
    shell with the venv active does: what a captured `pytest ...` command runs."""
    folders = [*map(str, before), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    return {"PATH": os.pathsep.join(folders)}


def spec_document(folder: Path, name: str = "spec.yaml") -> Mapping[str, JsonValue]:
    """The spec capture wrote (validated, as `run` loads it): its document."""
    return load_spec(str(folder / name)).document


# The verify line's start: where it ran, and the variables of the shell it left out when the
# test's shell has some.
_VERIFY = re.compile(r"^verify in a copy of the spec and its \d+ files?(?: \(without [^)]*\))?: ")


def first_run(workdir: Path) -> dict[str, Any]:
    """The capture's own run (the oldest in --out): what the command did."""
    out = workdir.parent / "out"
    # The store's order, not the folders' names: a verify run begun in the capture run's
    # second sorts by its random suffix, before or after it.
    with sqlite3.connect(f"file:{out / 'results.db'}?mode=ro", uri=True) as db:
        (run_id,) = db.execute("SELECT run_id FROM runs ORDER BY rowid LIMIT 1").fetchone()
    data: dict[str, Any] = json.loads((out / "runs" / run_id / "results.json").read_text())
    return data


def signatures(results: dict[str, Any]) -> dict[str, set[str]]:
    return {
        cell["id"]: {a["outcome"]["signature"] for a in cell["attempts"]}
        for cell in results["cells"]
    }


def rerun_and_separate(
    cli: Cli, workdir: Path, axis: str, widened: str, *, timeout: float = 300
) -> tuple[str, dict[str, set[str]]]:
    """`reprospec run` reproduces the captured signature; `--observe` with the suggested
    value added to `axis` gives two cells that end differently. Returns both."""
    spec = load_spec(str(workdir / "spec.yaml"))  # validates, as `run` does
    assert axis in spec.document["matrix"]  # type: ignore[operator]
    captured = next(iter(signatures(first_run(workdir)).values()))
    ran = cli("run", "spec.yaml", cwd=workdir, timeout=timeout)
    assert ran.code == 0, ran.stdout + ran.stderr  # every cell reproduced
    assert next(iter(signatures(ran.results()).values())) == captured
    observed = cli(
        "run",
        "spec.yaml",
        "--observe",
        "--set",
        f"matrix.{axis}={widened}",
        cwd=workdir,
        timeout=timeout,
    )
    assert observed.code == 0, observed.stdout + observed.stderr
    cells = signatures(observed.results())
    assert len(cells) == 2
    assert len({frozenset(s) for s in cells.values()}) == 2, cells
    return next(iter(captured)), cells


def axes(workdir: Path) -> dict[str, Any]:
    matrix = spec_document(workdir)["matrix"]
    assert isinstance(matrix, dict)
    return {name: values for name, values in matrix.items()}


def test_a_worker_segfault_only_with_workers_and_pinned_memory(cli: Cli, tmp_path: Path) -> None:
    workdir = copied("worker", tmp_path)
    argv = ("python", "train.py", "--workers", "2", "--pin-memory", "--steps", "10")
    result = capture(cli, workdir, *argv, options=("--no-verify",))
    assert axes(workdir) == {"workers": [2], "pin_memory": [True], "steps": [10]}
    text = (workdir / "spec.yaml").read_text()
    assert "try [2, 0]" in text
    assert "try [true, false]" in text
    expect = spec_document(workdir)["expect"]
    assert expect == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "validation",
    }
    # The title says no step, as `expect`: the main loop's was some steps past the one the
    # worker died loading (`at validation step 5`). The worker's frame, where its stack was
    # read (its core, with gdb or py-spy), is named.
    title = spec_document(workdir)["title"]
    stack = first_run(workdir)["cells"][0]["attempts"][0]["stack"]
    frame = f" in __getitem__ (train.py:{line_of(workdir / 'train.py', 'string_at(0)')})"
    assert title == (
        f"train.py: SIGSEGV in a DataLoader worker{frame if stack else ''}, main loop at validation"
    )
    assert "torch==2.13.0" in result.stdout  # the distribution it imported, pinned
    signature, cells = rerun_and_separate(cli, workdir, "workers", "[2, 0]")
    assert signature.startswith("crash:SIGSEGV:worker:validation")
    assert cells["workers=0,pin_memory=true,steps=10"] == {"pass"}


def line_of(path: Path, text: str) -> int:
    """The number of the first line of `path` holding `text`."""
    return next(n for n, line in enumerate(path.read_text().split("\n"), 1) if text in line)


def test_a_forked_workers_crash_is_titled_by_its_frame_and_the_main_loops_step(
    cli: Cli, tmp_path: Path
) -> None:
    # The worker loading batch 6 dies of SIGSEGV while the loop is at step 5: the title
    # named step 5 as the crash's, and no frame of the worker (its faulthandler dump names
    # load_batch), where the program's own frame says where to look.
    workdir = copied("mpworker", tmp_path)
    result = capture(cli, workdir, "python", "train.py", "--steps", "8")
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    frame = f"load_batch (train.py:{line_of(workdir / 'train.py', 'string_at(0)')})"
    document = spec_document(workdir)
    assert document["title"] == (
        f"train.py: SIGSEGV in a child process in {frame}, main loop at train step 5"
    )
    assert document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "child",
        "phase": "train",
        "step": 5,
    }
    child = r"in a child process \(python[\d.]* train\.py --steps 8\)"
    assert re.search(rf"signal: SIGSEGV  # {child}, in {re.escape(frame)}\n", text)


def test_a_hydra_app_failing_at_validation_step_7_under_lightning_bars(
    cli: Cli, tmp_path: Path
) -> None:
    pytest.importorskip("hydra")
    workdir = copied("hydra", tmp_path)
    result = capture(
        cli, workdir, "python", "app.py", "data.num_workers=2", "trainer.precision=16-mixed"
    )
    assert "the same signature (error:RuntimeError:validation) came back in 1/1" in (result.stdout)
    assert axes(workdir) == {"num_workers": [2], "precision": ["16-mixed"]}
    spec = load_spec(str(workdir / "spec.yaml"))
    assert spec.document["markers"] == [{"preset": "lightning"}]
    assert spec.document["command"] == (
        "python app.py data.num_workers=${{ matrix.num_workers }} "
        "trainer.precision=${{ matrix.precision }}"
    )
    expect = spec.document["expect"]
    assert isinstance(expect, dict)
    assert (expect["outcome"], expect["exception"], expect["phase"], expect["step"]) == (
        "error",
        "RuntimeError",
        "validation",
        7,
    )
    assert "Hydra's overrides.yaml: data.num_workers=2, trainer.precision=16-mixed" in (
        (workdir / "spec.yaml").read_text()
    )
    _, cells = rerun_and_separate(cli, workdir, "num_workers", "[2, 0]")
    assert cells["num_workers=0,precision=16-mixed"] == {"pass"}


def test_a_program_hanging_at_import(cli: Cli, tmp_path: Path) -> None:
    workdir = copied("importhang", tmp_path)
    argv = ("python", "main.py", "--start-method", "fork", "--items", "3")
    capture(cli, workdir, *argv, options=("--timeout", "3s", "--no-verify"))
    assert axes(workdir) == {"start_method": ["fork"], "items": [3]}
    spec = load_spec(str(workdir / "spec.yaml"))
    assert spec.document["expect"] == {"outcome": "hang"}
    assert spec.document["files"] == ["plugin.py"]
    text = (workdir / "spec.yaml").read_text()
    assert "outcome: hang  # while importing plugin.py:9" in text
    # The title, a report's headline, says so too: it read `main.py: hang`.
    assert spec.document["title"] == "main.py: hang while importing plugin.py:9"
    assert "try [fork, spawn]" in text
    signature, cells = rerun_and_separate(cli, workdir, "start_method", "[fork, spawn]")
    assert signature == "hang"
    assert cells["start_method=spawn,items=3"] == {"pass"}


def test_a_hang_under_timeout_is_captured_as_the_hang_at_its_bound(
    cli: Cli, tmp_path: Path
) -> None:
    """`timeout 3 python hang.py`, as CI runs a step: timeout's SIGTERM at 3 s read as the
    program's own `error exit 124`, so the spec expected an exit code and kept no stack.
    Its DURATION is the run's timeout now, and the command runs without the wrapper."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "hang.py").write_text(
        "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()\n"
    )
    result = capture(cli, workdir, "timeout", "-k", "1", "2", "python", "hang.py")
    document = spec_document(workdir)
    assert document["command"] == "python hang.py"
    assert document["run"] == {"timeout": "2s"}
    assert document["expect"] == {"outcome": "hang"}
    # Where it hung, as a crash's title names its frame: it read `hang.py: hang`.
    assert document["title"] == "hang.py: hang in <module> (hang.py:4)"
    text = (workdir / "spec.yaml").read_text()
    assert "\n#   reprospec capture -- timeout -k 1 2 python hang.py\n" in text
    assert "# `timeout -k 1 2` of the command is the run's timeout (2s)" in text
    assert "verdict reproduced" in result.stdout, result.stdout
    # The hang's stacks were taken: the main thread waits on its lock.
    stacks = list((workdir.parent / "out" / "runs").glob("*/cells/*/*/stack.txt"))
    assert stacks
    assert "hang.py" in stacks[0].read_text(), stacks
    # A timeout that keeps the program's own exit (`--preserve-status`) stays as written.
    workdir.joinpath("spec.yaml").unlink()
    capture(cli, workdir, "timeout", "--preserve-status", "30", "python", "-c", "exit(3)")
    document = spec_document(workdir)
    assert document["command"] == "timeout --preserve-status 30 python -c 'exit(3)'"
    assert document["expect"] == {"outcome": "error", "exit_code": 3}


def test_a_hang_is_titled_where_the_run_says_it_hung(cli: Cli, tmp_path: Path) -> None:
    """The title's frame is the run's (Outcome.hung_in): a deadlock between threads is the
    joined thread's, a child's hang the child's. It read the stacks' first frame of the
    program's own: the main thread's join (`hang in main (dl.py:15)`, where the run's line
    said `hang in worker (dl.py:7)`), or nothing for a child."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "dl.py").write_text(
        "import threading\n"
        "\n"
        "lock = threading.Lock()\n"
        "\n"
        "\n"
        "def worker():\n"
        "    with lock:\n"
        "        pass\n"
        "\n"
        "\n"
        "def main():\n"
        "    lock.acquire()\n"
        "    thread = threading.Thread(target=worker)\n"
        "    thread.start()\n"
        "    thread.join()\n"
        "\n"
        "\n"
        "main()\n"
    )
    (workdir / "child.py").write_text(
        "import multiprocessing\n"
        "import time\n"
        "\n"
        "\n"
        "def work():\n"
        "    time.sleep(1000)\n"
        "\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    child = multiprocessing.Process(target=work)\n"
        "    child.start()\n"
        "    child.join()\n"
    )
    options = ("--timeout", "3s", "--no-verify")
    result = capture(cli, workdir, "python", "dl.py", options=options)
    assert "hang in worker (dl.py:7)" in result.stderr, result.stderr
    assert spec_document(workdir)["title"] == "dl.py: hang in worker (dl.py:7)"
    workdir.joinpath("spec.yaml").unlink()
    result = capture(cli, workdir, "python", "child.py", options=options)
    assert "in work (child.py:6)" in result.stderr, result.stderr
    document = spec_document(workdir)
    assert document["expect"] == {"outcome": "hang", "where": "child"}
    assert document["title"] == "child.py: hang in a child process in work (child.py:6)"


def test_a_hang_stuck_in_a_dataloader_worker_is_expected_there(cli: Cli, tmp_path: Path) -> None:
    """A worker's crash was written `where: worker`; a hang stuck in a worker (its stacks
    show it fetching an item) wrote none, and the main process's own hang matched it."""
    workdir = copied("workerhang", tmp_path)
    # 20 s, not 10: the worker must reach its hang (after torch's import and the workers'
    # start) well before the timeout; 10 s failed this test with two suites on the machine.
    result = capture(
        cli, workdir, "python", "train.py", "--workers", "2", options=("--timeout", "20s")
    )
    spec = load_spec(str(workdir / "spec.yaml"))
    assert spec.document["expect"] == {"outcome": "hang", "where": "worker"}
    # The worker's own frame, as a worker's crash is titled: the stacks' first frame is the
    # main process's, waiting for the batch, which the title left out.
    assert (
        spec.document["title"]
        == "train.py: hang in a DataLoader worker in __getitem__ (train.py:23)"
    )
    text = (workdir / "spec.yaml").read_text()
    assert "where: worker  # the hang is stuck in a DataLoader worker fetching an item" in text
    # Its frame is named as the report names it: the description read `in
    # /home/alice/proj/train.py:9`, the capturer's folder in a spec written to be sent.
    description = str(spec.document["description"])
    assert "was fetching an item, in train.py:" in description, description
    assert str(workdir) not in text
    # The written spec reproduces it: its verify's hang is the worker's too.
    assert "verdict reproduced" in result.stdout, result.stdout + result.stderr
    assert [
        (a["outcome"]["kind"], a["outcome"]["where"])
        for a in first_run(workdir)["cells"][0]["attempts"]
    ] == [("hang", "worker")]


def test_a_pool_that_hangs_after_its_worker_segfaulted(cli: Cli, tmp_path: Path) -> None:
    """The spec names the dead worker beside the hang it expects: the hang's cause."""
    workdir = copied("poolhang", tmp_path)
    capture(
        cli, workdir, "python", "run.py", "--items", "4", options=("--timeout", "3s", "--no-verify")
    )
    spec = load_spec(str(workdir / "spec.yaml"))
    assert spec.document["expect"] == {"outcome": "hang"}  # what was observed, and is matched
    assert spec.document["title"] == "run.py: hang after a child process died of SIGSEGV"
    text = (workdir / "spec.yaml").read_text()
    said = r"outcome: hang  # after a child process \(python[\d.]* run\.py --items 4\) died of"
    assert re.search(said + " SIGSEGV", text), text
    assert "It ended `hang:after-child-SIGSEGV` in 1 of 1 attempt: " in text


def test_a_crash_in_a_subprocess_child(cli: Cli, tmp_path: Path) -> None:
    workdir = copied("child", tmp_path)
    capture(
        cli, workdir, "python", "run.py", "--workers", "2", "--batch", "4", options=("--no-verify",)
    )
    assert axes(workdir) == {"workers": [2], "batch": [4]}
    text = (workdir / "spec.yaml").read_text()
    assert re.search(r"signal: SIGSEGV  # in a child process \(python[\d.]* work\.py 2\)", text)
    signature, cells = rerun_and_separate(cli, workdir, "workers", "[2, 0]")
    assert signature.startswith("crash:SIGSEGV:child")
    assert cells["workers=0,batch=4"] == {"pass"}


def test_a_script_importing_local_modules_from_its_folder(cli: Cli, tmp_path: Path) -> None:
    workdir = copied("localmod", tmp_path)
    argv = ("python", "scripts/run.py", "--precision", "16", "--steps", "5")
    capture(cli, workdir, *argv, options=("--no-verify",))
    assert axes(workdir) == {"precision": [16], "steps": [5]}
    spec = load_spec(str(workdir / "spec.yaml"))
    # losses_half is imported by name at run time: only the child's record finds it.
    assert spec.document["files"] == ["scripts/helpers.py", "scripts/losses_half.py"]
    assert spec.document["expect"] == {
        "outcome": "error",
        "exception": "ValueError",
        "message": r"loss is nan at step \d+ in half precision",
        "phase": "train",
        "step": 3,
    }
    # bundle and the standalone repro carry what the spec lists, and the script itself.
    planned = plan_run(spec, RunOptions())
    assert named_files(planned.attempts[0]) == (
        "scripts/helpers.py",
        "scripts/losses_half.py",
        "scripts/run.py",
    )
    signature, cells = rerun_and_separate(cli, workdir, "precision", "[16, 32]")
    assert signature == "error:ValueError:train"
    assert cells["precision=32,steps=5"] == {"pass"}


def test_a_command_that_did_not_run_says_the_spec_it_wrote_needs_force(
    cli: Cli, tmp_path: Path
) -> None:
    # Its reason's way on (`pass --python PATH`, a typo fixed) was refused next: "spec.yaml
    # exists; pass --force to overwrite it".
    result = cli("capture", "-o", "spec.yaml", "--", "nosuchprog", "--x", cwd=tmp_path)
    assert result.code == 3, result.stdout + result.stderr
    assert "wrote spec.yaml: nothing ran (command not found: nosuchprog" in result.stdout
    assert "spec.yaml expects nothing, as nothing ran: capture again with --force" in (
        result.stdout
    )


def test_capture_refuses_to_overwrite_and_needs_a_command(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("x")
    refused = cli("capture", "-o", "spec.yaml", "--", "true", cwd=tmp_path)
    assert refused.code == 2
    assert "spec.yaml exists; pass --force" in refused.stderr
    bare = cli("capture", cwd=tmp_path)
    assert bare.code == 2
    assert "capture needs a command after `--`" in bare.stderr
    # `capture -- "$CMD"` with CMD unset: the shell's exit 127 was the captured failure.
    empty = cli("capture", "-o", "e.yaml", "--", "", cwd=tmp_path)
    assert empty.code == 2, empty.stderr
    assert "the command's first word is empty" in empty.stderr
    assert not (tmp_path / "e.yaml").exists()
    # An empty or binary log: nothing to read, nothing written (it was a TODO skeleton, 0).
    (tmp_path / "empty.log").write_text("\n  \n")
    (tmp_path / "binary.log").write_bytes(b"\x7fELF\x02\x01\x00\x00crash\n")
    for log, said in (("empty.log", "is empty"), ("binary.log", "is not text")):
        read = cli("capture", "--from-log", log, "-o", "t.yaml", cwd=tmp_path)
        assert read.code == 2, read.stderr
        assert f"--from-log: {log} {said}" in read.stderr
        assert "Traceback" not in read.stderr
        assert not (tmp_path / "t.yaml").exists()
    # Never over what the command reads (it wrote the spec over the script, then ran the
    # YAML as Python and called the SyntaxError reproduced), nor over a file that is not a
    # spec, --force or not; nor, from a log, over the log.
    script = tmp_path / "crash.py"
    script.write_text("raise SystemExit(3)\n")
    for argv in (
        ("--force", "-o", "crash.py", "--", "python", "crash.py"),
        ("-o", "new.yaml", "--force", "--", "python", "crash.py", "--config=new.yaml"),
        ("--force", "-o", "crash.py", "--", "true"),
        ("--force", "--from-log", "crash.py", "-o", "crash.py"),
    ):
        (tmp_path / "new.yaml").write_text("x")
        refused = cli("capture", *argv, cwd=tmp_path)
        assert refused.code == 2, (argv, refused.stdout, refused.stderr)
        assert "Traceback" not in refused.stderr
        assert (tmp_path / "new.yaml").read_text() == "x"
    assert script.read_text() == "raise SystemExit(3)\n"
    named = cli("capture", "--force", "-o", "crash.py", "--", "python", "crash.py", cwd=tmp_path)
    assert "capture reads it (crash.py)" in named.stderr
    # A program's own config.yaml, opened but not named: --force writes only over a spec
    # (the draft was written over it, and the program read the draft as its config).
    (tmp_path / "config.yaml").write_text("lr: 0.1\n")
    config = cli("capture", "--force", "-o", "config.yaml", "--", "python", "crash.py",
                 cwd=tmp_path)  # fmt: skip
    assert config.code == 2
    assert "config.yaml exists and is not a reprospec spec" in config.stderr
    assert (tmp_path / "config.yaml").read_text() == "lr: 0.1\n"
    (tmp_path / "old.yaml").write_text("reprospec: 1\nname: old\ncommand: 'true'\n")
    again = cli("capture", "--force", "--no-verify", "-o", "old.yaml", "--", "python", "crash.py",
                cwd=tmp_path)  # fmt: skip
    assert again.code == 0, again.stdout + again.stderr
    assert "crash.py" in (tmp_path / "old.yaml").read_text()


def test_a_command_that_passed_is_said_to_have_passed(cli: Cli, tmp_path: Path) -> None:
    # It said `verdict reproduced` of `expect: pass`, and nothing more: a rare failure that
    # did not come read as captured.
    result = capture(cli, tmp_path, "python", "-c", "print('fine')")
    assert "nothing failed: the command passed in 1 attempt" in result.stdout
    assert "capture again with --repeat N" in result.stdout
    document = spec_document(tmp_path)
    assert document["expect"] == {"outcome": "pass"}
    # A capture given --repeat 20 that passed 20 times was told "--repeat N" again.
    more = capture(
        cli, tmp_path, "python", "-c", "print('fine')", options=("--force", "--repeat", "3")
    )
    assert "the command passed in 3 attempts" in more.stdout
    assert "capture again with --repeat above 3, which keeps what a failure needs" in more.stdout


def _venv_with(
    tmp_path: Path, name: str, version: str, scripts: dict[str, str] | None = None
) -> Path:
    """A real venv at tmp_path/venv (no pip) with one wheel made here installed by uv: a
    package `name` of `version` whose module holds VERSION, and `main`, which raises a
    ValueError of it; `scripts`: the wheel's console scripts, which uv writes."""
    from uv import find_uv_bin

    from tests.support.envs import make_wheel, uv_environment

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    module = f"VERSION = {version!r}\n\n\ndef main():\n    raise ValueError(VERSION)\n"
    wheel = make_wheel(tmp_path / "wheels", name, version, module, scripts)
    install = [str(find_uv_bin()), "pip", "install", "--python", str(venv / "bin" / "python")]
    subprocess.run(
        [*install, "--no-index", str(wheel)], check=True, capture_output=True,
        env={**os.environ, **uv_environment()},
    )  # fmt: skip
    return venv


def test_the_packages_are_read_in_the_interpreter_that_ran_the_command(
    cli: Cli, tmp_path: Path
) -> None:
    # A command run by another environment's interpreter got the engine's versions pinned
    # (or none, for what the engine lacks); and `capture --python` did not exist, though
    # capture's own advice for a bare `python` that ran the engine's named it.
    venv = _venv_with(tmp_path, "nu-only-pkg", "1.2.3")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text("import nu_only_pkg\nraise ValueError(nu_only_pkg.VERSION)\n")
    by_path = capture(cli, workdir, str(venv / "bin" / "python"), "t.py")
    assert "packages it imported: nu-only-pkg==1.2.3" in by_path.stdout
    assert f"it ran with --python {venv / 'bin' / 'python'}, whose packages" in by_path.stdout
    assert "verdict reproduced" in by_path.stdout
    document = spec_document(workdir)
    assert document["command"] == "python t.py"  # no path of this machine
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert environment["packages"] == ["nu-only-pkg==1.2.3"]
    # Without it, the engine's interpreter lacks the package: said, never a verdict.
    plain = cli("run", str(workdir / "spec.yaml"), "--out", str(tmp_path / "out"))
    assert plain.code == 3, plain.stdout + plain.stderr
    assert "nu-only-pkg is not installed" in plain.stdout + plain.stderr
    (workdir / "spec.yaml").unlink()
    chosen = capture(
        cli, workdir, "python", "t.py", options=("--python", str(venv / "bin" / "python"))
    )
    assert "verdict reproduced" in chosen.stdout
    assert "packages it imported: nu-only-pkg==1.2.3" in chosen.stdout
    assert spec_document(workdir)["expect"] == {
        "outcome": "error", "exception": "ValueError", "message": r"\d+\.\d+\.\d+",
    }  # fmt: skip


def test_an_environments_console_script_by_its_path_is_written_by_its_name(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture -- /home/me/.venv/bin/nu-tool`: the spec's command was that path, which no
    # other machine has, where `/home/me/.venv/bin/python t.py` was written `python t.py`.
    # The tool is the package's console script, as the installer writes it: one the venv
    # runner's and docker's environments of `packages` have too (a script written in the
    # bin by hand would be no package's, and missing there) (review).
    venv = _venv_with(tmp_path, "nu-only-pkg", "1.2.3", {"nu-tool": "nu_only_pkg:main"})
    tool = venv / "bin" / "nu-tool"
    assert tool.read_text().startswith(f"#!{venv / 'bin' / 'python'}")
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = capture(cli, workdir, str(tool), "data.csv")
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["command"] == "nu-tool data.csv"
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert environment["packages"] == ["nu-only-pkg==1.2.3"]


def test_a_native_programs_spec_names_no_python(cli: Cli, tmp_path: Path) -> None:
    # A program that is no Python (a copy of `false`, as a C program of the user's): the
    # spec pinned the engine's Python version, a run warning on every machine with another.
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copy("/bin/false", workdir / "fails")
    result = capture(cli, workdir, "./fails", "--x", "1")
    assert "verdict reproduced" in result.stdout, result.stdout
    environment = spec_document(workdir).get("environment") or {}
    assert isinstance(environment, dict)
    assert "python" not in environment
    assert "packages" not in environment
    # A Python script of its own by its path (its `#!` names Python) still pins it.
    (workdir / "fails.py").write_text("#!/usr/bin/env python3\nimport sys\nsys.exit(1)\n")
    (workdir / "fails.py").chmod(0o755)
    capture(cli, workdir, "./fails.py", options=("--force",))
    pinned = spec_document(workdir).get("environment")
    assert isinstance(pinned, dict)
    assert "python" in pinned


def test_no_packages_are_pinned_of_the_engine_for_a_script_that_runs_another_python(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture -- sh run.sh`, run.sh running another environment's python: the engine's
    # own versions were pinned (`rich==14...` where the program imported that env's rich
    # 0.0.1), and its `python` written, for a program that ran neither.
    venv = _venv_with(tmp_path, "rich", "0.0.1")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text("import rich\nraise ValueError(rich.VERSION)\n")
    (workdir / "run.sh").write_text(f"exec {shlex.quote(str(venv / 'bin' / 'python'))} t.py\n")
    result = capture(cli, workdir, "sh", "run.sh", options=("--no-verify",))
    assert "environment.packages left out" in result.stdout, result.stdout
    assert f"the packages of {venv / 'lib'}" in result.stdout
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    assert "packages" not in environment
    assert "python" not in environment
    # With that environment's python given, its versions are read and pinned.
    (workdir / "spec.yaml").unlink()
    given = ("--no-verify", "--python", str(venv / "bin" / "python"))
    capture(cli, workdir, "sh", "run.sh", options=given)
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    assert environment["packages"] == ["rich==0.0.1"]


def test_a_workers_exception_is_expected_by_its_own_message(cli: Cli, tmp_path: Path) -> None:
    # torch raises it again as `Caught ValueError in DataLoader worker process 0.`: that
    # was the message expected, which any ValueError of any worker matches.
    workdir = copied("workererror", tmp_path)
    result = capture(cli, workdir, "python", "train.py", "--workers", "2")
    assert "verdict reproduced" in result.stdout, result.stdout
    expect = spec_document(workdir)["expect"]
    assert isinstance(expect, dict)
    assert expect["exception"] == "ValueError"
    assert expect["message"] == r"bad sample \d+: label \-\d+ is out of range \[\d+, \d+\)"


def test_a_script_named_through_dot_dot_reproduces_in_the_copy(cli: Cli, tmp_path: Path) -> None:
    # `python ./pt/../x.py`: the verify's copy carries x.py, not pt/, so the spec's command
    # named nothing there (infra-error), and the verify blamed the workdir's other files.
    (tmp_path / "pt").mkdir()
    (tmp_path / "x.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    result = capture(cli, tmp_path, "python", "./pt/../x.py")
    assert "verdict reproduced" in result.stdout, result.stdout
    assert spec_document(tmp_path)["command"] == "python ./x.py"
    text = (tmp_path / "spec.yaml").read_text()
    assert "\n#   reprospec capture -- python ./pt/../x.py\n" in text
    # The word it wrote otherwise, not the command again (a long one wrapped mid-quote).
    assert "\n#   ./pt/../x.py -> ./x.py\n" in text


def test_the_interpreters_path_in_a_message_is_a_wildcard(cli: Cli, tmp_path: Path) -> None:
    # `/home/me/.venv/bin/python3: No module named nothere` matched no other machine. Said by
    # a child the program runs: the cell's own `python -m nothere` never started (infra-error,
    # nothing to capture), a program whose tool is missing failed.
    (tmp_path / "run.py").write_text(
        "import subprocess, sys\n"
        "sys.exit(subprocess.run([sys.executable, '-m', 'nothere_of_reprospec']).returncode)\n"
    )
    capture(cli, tmp_path, "python", "run.py")
    expect = spec_document(tmp_path)["expect"]
    assert isinstance(expect, dict)
    assert expect["message"] == r"\S+: No module named nothere_of_reprospec"


def test_a_flaky_failure_the_copy_missed_is_not_blamed_on_a_file(cli: Cli, tmp_path: Path) -> None:
    # 0 of 2 in the copy, 1 of 2 in the workdir: said as what chance does, not as "the
    # command needs more of the workdir ... name it in files" (there was no such file).
    # The attempts fail by their count: 1 (the first run), none of 3-4 (the copy's), 5.
    count = tmp_path / "count"
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.py").write_text(
        "from pathlib import Path\n"
        f"count = Path({str(count)!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        "if n in (1, 5):\n    raise TimeoutError('slow')\n"
    )
    out = tmp_path / "out"
    argv = [
        "capture",
        "-o",
        "spec.yaml",
        "--out",
        str(out),
        "--repeat",
        "2",
        "--",
        "python",
        "f.py",
    ]
    result = cli(*argv, cwd=work)
    assert result.code == 1, result.stdout + result.stderr
    assert "it came back in the workdir in 1/2 attempts, not in a copy" in result.stdout
    assert "can miss every attempt of one rerun by chance" in result.stdout
    assert "name it in the spec's `files`" not in result.stdout
    assert count.read_text() == "6"


def test_a_file_read_by_its_path_outside_the_workdir_is_named(cli: Cli, tmp_path: Path) -> None:
    # verify said `reproduced` (the file was there, at its path) and the spec and its bundle
    # said nothing of it: a reader got FileNotFoundError. The machine's files are not named.
    settings = tmp_path / "elsewhere" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"precision": "fp8"}')
    os.utime(settings, (time.time() - 60, time.time() - 60))  # there before the capture
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(
        f"import json\ncfg = json.load(open({str(settings)!r}))\n"
        "open('/etc/hostname').close()\n"
        "raise NotImplementedError(cfg['precision'])\n"
    )
    result = capture(cli, work, "python", "app.py")
    line = next(x for x in result.stdout.splitlines() if x.startswith("read outside the workdir"))
    assert line.endswith(f"(a reader needs it at the same path): {settings}")
    spec = " ".join((work / "spec.yaml").read_text().replace("\n#", " ").split())
    assert f"Read but not in files (ask whoever captured it): {settings} (outside" in spec


def test_ctrl_c_stops_the_capture_keeps_the_run_and_writes_no_spec_from_it(
    tmp_path: Path,
) -> None:
    """Ctrl-C during the observing run: exit 130, the attempt's tree ended, the stored run
    says it was interrupted, and the spec is the draft written before the run, not one
    made from attempts that did not finish."""
    started = tmp_path / "started"
    program = f"import time; open({str(started)!r}, 'w').close(); time.sleep(600)"
    out = tmp_path / "out"
    spec = tmp_path / "spec.yaml"
    argv = [sys.executable, "-m", "reprospec", "capture", "-o", str(spec), "--out", str(out)]
    argv += ["--timeout", "10m", "--", "python", "-c", program]
    stopped = interrupt_when(argv, started.exists, wait_s=120)
    assert stopped.code == 130, stopped.stderr
    assert "interrupted; the spec is still the first draft: capture again with --force" in (
        stopped.stderr
    )
    (run,) = (out / "runs").iterdir()
    assert json.loads((run / "results.json").read_text())["interrupted"] is True
    draft = spec.read_text()
    assert "time.sleep(600)" in draft
    assert draft.startswith("# A first draft")
    assert "expect:" not in draft  # nothing observed is written as expected


def test_a_repeated_capture_writes_the_attempts_its_rate_bound_needs(
    cli: Cli, tmp_path: Path
) -> None:
    # 3 of 3 gives `rate: '>=0.4'`; a plain `reprospec run` of one attempt could not decide
    # it (1 of 1: 95% interval 0.21-1), so the spec says `repeat: 3`, as the capture ran.
    (tmp_path / "crash.py").write_text(
        "import ctypes\nprint('step 1', flush=True)\nctypes.string_at(0)\n"
    )
    capture(cli, tmp_path, "python", "crash.py", options=("--repeat", "3", "--no-verify"))
    document = spec_document(tmp_path)
    expect, run = document["expect"], document["run"]
    assert isinstance(expect, dict)
    assert isinstance(run, dict)
    assert expect["rate"] == ">=0.4"
    assert run["repeat"] == 3
    ran = cli("run", "spec.yaml", cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert (cell["verdict"], len(cell["attempts"])) == ("reproduced", 3)


def test_a_sometimes_failure_gets_a_bound_the_spec_says_is_never_refuted(
    cli: Cli, tmp_path: Path
) -> None:
    # 2 of 3: `rate: '>0'`, which no count of clean attempts refutes: a fixed bug stayed
    # `undecided` for good, and nothing in the spec said so (a new user's trial).
    count = tmp_path / "count"
    (tmp_path / "flip.py").write_text(
        "import pathlib, sys\n"
        f"count = pathlib.Path({str(count)!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        "sys.exit('odd attempt' if n % 2 else 0)\n"
    )
    capture(cli, tmp_path, "python", "flip.py", options=("--repeat", "3", "--no-verify"))
    text = (tmp_path / "spec.yaml").read_text()
    assert "rate: '>0'  # observed 2/3; met by one match, never refuted: to tell a fix" in text


def test_a_message_naming_an_address_and_the_attempts_own_temporary_path_reproduces(
    cli: Cli, tmp_path: Path
) -> None:
    # The attempt's TMPDIR (the engine's reprospec-tmp folder), a mkdtemp in it and an
    # object's address differ in every attempt: none of them may be written into the spec.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "hexmsg.py").write_text(
        "import tempfile\n"
        "class Buf: pass\n"
        "d = tempfile.mkdtemp()\n"
        "print('train step 1/1', flush=True)\n"
        "raise RuntimeError(f'stale buffer {Buf()!r} mapped from {d}/shard.bin')\n"
    )
    result = capture(cli, workdir, "python", "hexmsg.py")
    assert "verdict reproduced" in result.stdout
    expect = spec_document(workdir)["expect"]
    assert isinstance(expect, dict)
    assert expect["message"] == (
        r"stale buffer <__main__\.Buf object at (?:0x)?[0-9a-f]+> mapped from \S+/shard\.bin"
    )
    ran = cli("run", "spec.yaml", "--repeat", "2", cwd=workdir)
    assert ran.code == 0, ran.stdout + ran.stderr


def test_a_message_holding_a_secret_reproduces_without_writing_the_secret_or_its_mask(
    cli: Cli, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "dl.py").write_text(
        "import os\n"
        "print('train step 1/2', flush=True)\n"
        "raise PermissionError(f\"403 for token {os.environ['HF_TOKEN']}\")\n"
    )
    secret = "hf_SuperSecretValue123"
    result = capture(cli, workdir, "python", "dl.py", env={"HF_TOKEN": secret})
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    assert secret not in text
    expect = spec_document(workdir)["expect"]
    assert isinstance(expect, dict)
    message = expect["message"]
    assert isinstance(message, str)
    assert "*" not in message
    assert re.search(message, f"403 for token {secret}")


def test_secrets_on_the_command_line_are_run_with_and_never_written(
    cli: Cli, tmp_path: Path
) -> None:
    # `--api-key`, `HF_TOKEN=...` before the program, and a part of the token the program
    # printed: the key was an axis (in the spec, the run folder's names, every report), the
    # header quoted the command whole, and the runs went without the leading variable.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "up.py").write_text(
        "import os, sys\n"
        "assert os.environ['HF_TOKEN'] == 'hf_zzTopSecret999'\n"
        "key = sys.argv[sys.argv.index('--api-key') + 1]\n"
        "token = os.environ['HF_TOKEN'][:8]\n"
        "raise PermissionError(f'403: key {key} cannot write (token {token})')\n"
    )
    argv = ["HF_TOKEN=hf_zzTopSecret999", "python", "up.py", "--api-key", "sk-live-AAAABBBB"]
    result = capture(cli, workdir, *argv)
    assert result.code == 0, result.stdout + result.stderr
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    document = spec_document(workdir)
    assert document["command"] == 'python up.py --api-key "$API_KEY"'
    assert document["expect"] == {
        "outcome": "error",
        "exception": "PermissionError",
        "message": r"\d+: key .+? cannot write \(token .+?\)",
    }
    runs = tmp_path / "out" / "runs"
    stored = [p.read_text() for p in (*runs.rglob("*.json"), *runs.rglob("*.md"))]
    assert stored
    for output in (text, result.stdout, result.stderr):
        assert "AAAABBBB" not in output
        assert "zzTop" not in output
    # The stored runs mask whole values (the part the program printed is the engine's
    # Redactor's to mask, which it does not).
    for output in stored:
        assert "AAAABBBB" not in output
        assert "zzTopSecret999" not in output
    assert not any("AAAA" in p.name for p in runs.rglob("*"))


@pytest.mark.parametrize("program", [(), ("env",)], ids=["leading", "env"])
def test_a_secret_the_command_line_sets_under_any_name_is_run_with_and_never_written(
    cli: Cli, tmp_path: Path, program: tuple[str, ...]
) -> None:
    # `GITHUB_TOKEN_RO=... python x.py` was judged by its name's last word (`ro`): the
    # spec wrote the token `# set on the command line`, and its message quoted it. With the
    # `env` program, each assignment was an axis: the secret in the cells' names and reports.
    workdir = tmp_path / "work"
    workdir.mkdir()
    secrets = named_secrets("long")
    (workdir / "x.py").write_text(
        "import os\n"
        "token, n = os.environ['GITHUB_TOKEN_RO'], os.environ['MAX_TOKENS']\n"
        "raise RuntimeError(f'bad {token} {n}')\n"
    )
    words = [f"{name}={value}" for name, value in secrets.items()]
    result = capture(cli, workdir, *program, *words, "MAX_TOKENS=2048", "python", "x.py")
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    document = spec_document(workdir)
    assert document["command"] == "python x.py"
    assert "matrix" not in document
    environment = document["environment"]
    assert isinstance(environment, dict)
    variables = environment["env"]
    assert isinstance(variables, dict)
    assert variables["MAX_TOKENS"] == "2048"
    for name in secrets:
        assert variables[name] == f"${{{{ env.{name} }}}}"
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["message"] == r"bad .+? \d+"
    runs = tmp_path / "out" / "runs"
    stored = [p.read_text() for p in (*runs.rglob("*.json"), *runs.rglob("*.md"))]
    for value in secrets.values():
        for output in (text, result.stdout, result.stderr, *stored):
            assert value not in output
        assert not any(value in p.name for p in runs.rglob("*"))


def test_env_i_is_kept_so_the_spec_runs_its_program_in_an_empty_environment(
    cli: Cli, tmp_path: Path
) -> None:
    # `env -i A=1 python x.py`: `-i A=1` was an axis (`env -i ${{ matrix.i }}`), and a token
    # among the assignments would have been one. The empty environment is the incident: the
    # spec's command keeps `env -i`, and its rerun fails as the command did.
    workdir = tmp_path / "work"
    workdir.mkdir()
    token = named_secrets("long")["GITHUB_TOKEN_RO"]
    (workdir / "x.py").write_text(
        "import os\n"
        "if 'HOME' not in os.environ:\n"
        "    token = os.environ.get('GITHUB_TOKEN_RO', '')\n"
        "    raise RuntimeError(f\"no HOME, A={os.environ.get('A')} token={len(token)}\")\n"
    )
    # Under `-i` env finds the program on its default path: the interpreter by its path.
    python = sys.executable
    argv = ["env", "-i", "A=1", f"GITHUB_TOKEN_RO={token}", python, "x.py"]
    # The shell's settings were written into environment.env, which `-i` wipes.
    shell = {**os.environ, "NCCL_DEBUG": "INFO", "PYTHONUNBUFFERED": "1"}
    result = capture(cli, workdir, *argv, env=shell)
    assert "verdict reproduced" in result.stdout
    assert "axes from the command" not in result.stdout
    # What `-i` takes of reprospec's own is said: the forensics are fewer.
    assert "`env -i` empties the program's environment, reprospec's own" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    document = spec_document(workdir)
    assert document["command"] == (
        f'env -i A=1 GITHUB_TOKEN_RO="$GITHUB_TOKEN_RO" {shlex.quote(python)} x.py'
    )
    assert "matrix" not in document
    environment = document["environment"]
    assert isinstance(environment, dict)
    variables = environment["env"]
    assert isinstance(variables, dict)
    assert variables == {"GITHUB_TOKEN_RO": "${{ env.GITHUB_TOKEN_RO }}"}
    assert token not in text + result.stdout + result.stderr
    # Rerun from a shell that has HOME and the token: the program still gets neither HOME
    # nor anything but what `env -i` gives it.
    env = {**os.environ, "GITHUB_TOKEN_RO": token, "HOME": str(tmp_path)}
    ran = cli("run", "spec.yaml", "--out", str(tmp_path / "again"), cwd=workdir, env=env)
    assert ran.code == 0, ran.stdout + ran.stderr
    report = next((tmp_path / "again" / "runs").glob("*/report.md")).read_text()
    assert "no HOME, A=1 token=16" in report
    assert token not in report


@pytest.mark.parametrize("shell", [False, True], ids=["leading", "sh-c"])
def test_a_setting_the_command_line_sets_is_written_and_reruns_anywhere(
    cli: Cli, tmp_path: Path, shell: bool
) -> None:
    # `MAX_TOKENS=2048 python train.py` was written `${{ env.MAX_TOKENS }}`: a reference
    # to the reader's environment (its name holds TOKEN), null there, and the spec passed.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "train.py").write_text(
        "import os\n"
        "n = int(os.environ['MAX_TOKENS'])\n"
        "if n > 1024:\n"
        "    raise ValueError(f'MAX_TOKENS {n} is over the context')\n"
    )
    line = "MAX_TOKENS=2048 python train.py"
    argv = ["sh", "-c", line] if shell else line.split()
    result = capture(cli, workdir, *argv)
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    environment = document["environment"]
    assert isinstance(environment, dict)
    variables = environment["env"]
    assert isinstance(variables, dict)
    if shell:  # the script is one word of shell, its assignment kept as written
        assert document["command"] == f"sh -c '{line}'"
        assert "MAX_TOKENS" not in variables
    else:
        assert document["command"] == "python train.py"
        assert variables["MAX_TOKENS"] == "2048"
    assert document["expect"] == {
        "outcome": "error",
        "exception": "ValueError",
        "message": r"MAX_TOKENS \d+ is over the context",
    }
    assert f"capture -- {shlex.join(argv)}" in (workdir / "spec.yaml").read_text()
    # A plain run without the variable in its shell reproduces, and the report's spec and
    # standalone repro hold the value, not a reference to the reader's environment.
    env = {k: v for k, v in os.environ.items() if k != "MAX_TOKENS"}
    ran = cli("run", "spec.yaml", "--out", str(tmp_path / "again"), cwd=workdir, env=env)
    assert ran.code == 0, ran.stdout + ran.stderr
    report = next((tmp_path / "again" / "runs").glob("*/report.md")).read_text()
    assert "MAX_TOKENS 2048 is over the context" in report
    assert "env.MAX_TOKENS" not in report
    assert '"$MAX_TOKENS"' not in report


def test_a_credential_under_a_name_that_says_nothing_is_run_with_and_never_written(
    cli: Cli, tmp_path: Path
) -> None:
    # `--auth-header "Bearer ..."` and a URL holding a password: the option names say
    # nothing secret, and both values were axes (spec, folder names, every report).
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "fetch.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--auth-header'); p.add_argument('--db-url')\n"
        "a = p.parse_args()\n"
        "assert a.auth_header == 'Bearer qwertyuiop123456', a.auth_header\n"
        "assert a.db_url == 'postgres://me:hunter2hunter2@db/x', a.db_url\n"
        "raise ConnectionError('403 from the dataset server')\n"
    )
    argv = ["python", "fetch.py", "--auth-header", "Bearer qwertyuiop123456",
            "--db-url=postgres://me:hunter2hunter2@db/x"]  # fmt: skip
    result = capture(cli, workdir, *argv)
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    assert document["command"] == (
        'python fetch.py --auth-header "$AUTH_HEADER" --db-url="$DB_URL_SECRET"'
    )
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["exception"] == "ConnectionError"
    runs = tmp_path / "out" / "runs"
    stored = [p.read_text() for p in (*runs.rglob("*.json"), *runs.rglob("*.md"))]
    for output in (*stored, (workdir / "spec.yaml").read_text(), result.stdout, result.stderr):
        assert "qwertyuiop" not in output
        assert "hunter2" not in output
    assert not any("qwerty" in p.name or "hunter" in p.name for p in runs.rglob("*"))


def test_a_verify_that_misses_says_what_of_the_expectation_missed(cli: Cli, tmp_path: Path) -> None:
    # The same exception comes back with another message: the signature is the same, the
    # verdict not-reproduced, and the line says it was the message.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "drift.py").write_text(
        "import pathlib\n"
        f"seen = pathlib.Path({str(tmp_path / 'seen')!r})\n"
        "first = not seen.exists()\n"
        "seen.touch()\n"
        # Not the message as one literal: the judge looks for it in the output's end too,
        # and the traceback quotes this line.
        "raise RuntimeError(('first' if first else 'another') + ' failure')\n"
    )
    out = tmp_path / "out"
    result = cli("capture", "-o", "spec.yaml", "--out", str(out), "--", "python", "drift.py",
                 cwd=workdir)  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    # (after the variables of the shell it left out, when the test's shell has some)
    assert _VERIFY.sub("", verify).startswith(
        "the same signature (error:RuntimeError) came back in 1/1 attempt, but the "
        "spec's expect did not match: message: expected a match of 'first failure', got "
        "'another failure'; verdict not-reproduced"
    ), verify


def test_a_failure_that_does_not_come_back_is_said_without_a_but(cli: Cli, tmp_path: Path) -> None:
    # "NOT the same signature (error:KeyError) came back in 0/1 attempt, but the spec's
    # expect did not match": the "but" said the opposite of what happened.
    workdir = tmp_path / "work"
    workdir.mkdir()
    seen = tmp_path / "seen"
    (workdir / "once.py").write_text(
        f"import pathlib\nseen = pathlib.Path({str(seen)!r})\n"
        "if not seen.exists():\n    seen.touch()\n    raise KeyError('first run only')\n"
    )
    out = tmp_path / "out"
    result = cli("capture", "-o", "spec.yaml", "--out", str(out), "--", "python", "once.py",
                 cwd=workdir)  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert _VERIFY.sub("", verify).startswith(
        "NOT the same signature (error:KeyError) came back in 0/1 attempt (the others: "
        "pass in 1); the spec's expect did not match: outcome: expected error, got pass"
    ), verify


def test_the_commands_the_spec_suggests_are_quoted_for_a_shell(cli: Cli, tmp_path: Path) -> None:
    # The header's `reprospec run my spec.yaml --observe ...` was two files, pasted.
    (tmp_path / "ok.py").write_text("print('fine')\n")
    result = cli("capture", "-o", "my spec.yaml", "--no-verify", "--out", str(tmp_path / "out"),
                 "--", "python", "ok.py", "--n", "1", cwd=tmp_path)  # fmt: skip
    assert result.code == 0, result.stderr
    assert "#   reprospec run 'my spec.yaml' --observe" in (tmp_path / "my spec.yaml").read_text()


def test_a_script_a_wrapper_runs_goes_into_files(cli: Cli, tmp_path: Path) -> None:
    # `capture -- sh run.sh`, run.sh running `python app.py`: app.py is run, not imported,
    # and only imports became `files`, so the bundle of the spec carried fmt.py and run.sh
    # and no app.py: the recipient's rerun could not start it.
    (tmp_path / "fmt.py").write_text("def banner():\n    return 'start'\n")
    (tmp_path / "app.py").write_text(
        "from fmt import banner\nprint(banner(), flush=True)\nraise ValueError('in app')\n"
    )
    (tmp_path / "run.sh").write_text("set -e\npython app.py\n")
    capture(cli, tmp_path, "sh", "run.sh", options=("--no-verify",))
    document = spec_document(tmp_path)
    assert document["files"] == ["app.py", "fmt.py"]
    # The script a command names itself is not listed again.
    (tmp_path / "spec.yaml").unlink()
    capture(cli, tmp_path, "python", "app.py", options=("--no-verify",))
    assert spec_document(tmp_path)["files"] == ["fmt.py"]


def test_the_data_a_program_reads_goes_into_files_and_the_bundle_reruns(
    cli: Cli, tmp_path: Path
) -> None:
    # A program reading its config.yaml was captured without it: `files` held the imports
    # only, and the bundle's rerun failed elsewhere with FileNotFoundError, not the bug.
    work = tmp_path / "work"
    (work / "conf").mkdir(parents=True)
    (work / "conf" / "config.yaml").write_text("lr: 0.1\n")
    (work / ".env").write_text("TOKEN=abc\n")
    for folder in (".git", "venv/lib"):  # a repository's, an environment's: not its data
        (work / folder).mkdir(parents=True)
        (work / folder / "HEAD").write_text("x\n")
    (work / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with (work / "weights.bin").open("wb") as big:  # sparse: 17 MiB on paper, no disk
        big.truncate(17 << 20)
    (work / "images").mkdir()  # a dataset: too many files to carry, however small
    for index in range(40):
        (work / "images" / f"{index}.jpg").write_bytes(b"x")
    (work / "app.py").write_text(
        "import os\n"
        "cfg = open('conf/config.yaml').read()\n"
        "for name in sorted(os.listdir('images')) if os.path.isdir('images') else ():\n"
        "    open(os.path.join('images', name), 'rb').close()\n"
        "if os.path.exists('.env'):\n    open('.env').read()\n"
        "if os.path.exists('weights.bin'):\n    os.close(os.open('weights.bin', os.O_RDONLY))\n"
        "open('/etc/hostname').close()\n"
        "for name in ('.git/HEAD', 'venv/lib/HEAD'):\n"
        "    if os.path.exists(name):\n        open(name).close()\n"
        "with open('out.txt', 'w') as f:\n    f.write('made here')\n"
        "open('out.txt').read()\n"
        "raise ValueError('bad ' + cfg.strip())\n"
    )
    result = capture(cli, work, "python", "app.py")
    # Not the output it wrote and read back, /etc, or the script itself; a hidden file (a
    # .env holds secrets) and one over the size limit are named instead.
    assert spec_document(work)["files"] == ["conf/config.yaml"]
    assert (
        "not in `files` (a reader fetches them): images/ (40 files, 40 B), weights.bin"
        in result.stdout
    )
    assert "hidden, not in `files` (it may hold secrets): .env\n" in result.stdout
    # The spec says so too (a bundle carries the spec, not capture's console).
    assert (
        "Read but not in files (ask whoever captured it): .env (hidden: "
        "it may hold secrets), images/ (40 files, 40 B) (too large to carry), weights.bin "
        "(too large to carry)"
    ) in " ".join((work / "spec.yaml").read_text().replace("\n#", " ").split())
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    bundle = tmp_path / "sent.tar.gz"
    made = cli("bundle", str(run.latest_run()), "-o", str(bundle))
    assert made.code == 0, made.stderr
    # Elsewhere, without the workdir: the bundle's config.yaml makes the same failure.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(work)
    rerun = cli("run", str(bundle), "--yes", "--out", str(elsewhere / "out"), cwd=elsewhere)
    assert rerun.code == 0, rerun.stdout + rerun.stderr


def test_a_file_missed_only_once_the_first_is_there_is_added_in_the_next_round(
    cli: Cli, tmp_path: Path
) -> None:
    # The program stops at its first missing file (the config): the data the config names
    # shows missing only in the copy that has the config. One round of adding files left
    # the spec without the data and capture exited 1.
    work = written(
        tmp_path / "work",
        {
            "conf/run.txt": "data/rows.txt\n",
            "data/rows.txt": "boom\n",
            "app.py": "import subprocess, sys\n"
            "def cat(name):\n"
            "    read = subprocess.run(['cat', name], capture_output=True, text=True)\n"
            "    sys.stderr.write(read.stderr)\n"
            "    if read.returncode:\n        sys.exit(0)\n"
            "    return read.stdout.strip()\n"
            "rows = cat(cat('conf/' + 'run' + '.txt'))\n"
            "if rows == 'boom':\n    raise RuntimeError('boom rows')\n",
        },
    )
    result = capture(cli, work, "python", "app.py")
    assert (
        "the failure needs conf/run.txt, data/rows.txt of the workdir: it came back there, not "
        "in a copy of the spec without them, and the spec now lists them (files)"
    ) in result.stdout, result.stdout
    assert spec_document(work)["files"] == [
        "conf/run.txt",
        "data/rows.txt",
    ]
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert "verdict reproduced" in verify, verify


def test_the_verify_runs_in_a_copy_and_adds_a_file_only_another_program_read(
    cli: Cli, tmp_path: Path
) -> None:
    # The verify reran the spec in the workdir, where everything the command read was at
    # hand: it said `reproduced` of a spec whose bundle failed elsewhere. Here the file is
    # read by `cat`, which no audit hook sees, under a name no word of the command holds.
    work = written(
        tmp_path / "work",
        {
            "conf/settings.txt": "mode: boom\n",
            "app.py": "import subprocess, sys\n"
            "name = 'conf/' + 'settings' + '.txt'\n"
            "read = subprocess.run(['cat', name], capture_output=True, text=True)\n"
            "sys.stderr.write(read.stderr)\n"
            "if 'boom' in read.stdout:\n    raise RuntimeError('boom mode')\n",
        },
    )
    result = capture(cli, work, "python", "app.py")
    # The copy's rerun passed; cat said which file it missed, and it is in `files` now.
    assert (
        "the failure needs conf/settings.txt of the workdir: it came back there, not in a "
        "copy of the spec without it, and the spec now lists it (files)"
    ) in result.stdout, result.stdout
    assert spec_document(work)["files"] == ["conf/settings.txt"]
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert verify.startswith("verify in a copy of the spec and its 2 files"), verify
    assert "verdict reproduced" in verify, verify
    # The copy ran outside the workdir and is gone; the workdir got nothing written into it.
    verify_run = tmp_path / "out" / "runs" / verify.rpartition("(run ")[2].split(",")[0]
    ran = json.loads((verify_run / "results.json").read_text())
    # The run names the spec capture wrote; it ran in the copy, outside the workdir, gone.
    assert ran["spec"]["path"] == str(work / "spec.yaml")
    copied = Path(ran["cells"][0]["environment"]["workdir"])
    assert not copied.is_relative_to(work)
    assert not copied.exists()
    assert sorted(p.name for p in work.iterdir()) == ["app.py", "conf", "spec.yaml"]


def test_a_file_read_outside_the_workdir_by_a_relative_path_is_named_as_what_the_copy_lacks(
    cli: Cli, tmp_path: Path
) -> None:
    # A new user's trial: the program read ../shared/data.csv, which capture named as read
    # outside the workdir, yet the verify said "the command needs more of the workdir than
    # capture saw it read; name it in the spec's files" (which may not leave the workdir).
    written(tmp_path / "shared", {"data.csv": "a,b\n"})
    work = written(
        tmp_path / "app",
        {"app.py": "with open('../shared/data.csv') as f:\n    raise KeyError(f.readline())\n"},
    )
    out = tmp_path / "out"
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), "--", "python", "app.py", cwd=work
    )
    assert result.code == 1, result.stdout + result.stderr
    assert (
        "it came back in the workdir, but not in a copy of the spec and the 1 file it carries: "
        "the command read ../shared/data.csv outside the workdir, which no spec or bundle "
        "carries, and a copy elsewhere lacks it where a path relative to the workdir reaches "
        "it: move it into the workdir (and `files`), or have the program read it by its "
        "absolute path"
    ) in result.stdout, result.stdout
    assert "capture saw it read" not in result.stdout, result.stdout


def test_the_verify_copy_reaches_no_neighbour_of_its_temporary_folder(
    cli: Cli, tmp_path: Path
) -> None:
    # The same program, and a `shared/data.csv` beside the verify's temporary folder (its
    # TMPDIR's, where another program's file may be): the copy, at the scratch folder's
    # top, read that one by `../shared/data.csv`, and its failure "came back" from a file
    # that was not the program's.
    written(tmp_path / "shared", {"data.csv": "a,b\n"})
    temp = tmp_path / "tmp"
    written(temp / "shared", {"data.csv": "a,b\n"})
    work = written(
        tmp_path / "app",
        {"app.py": "with open('../shared/data.csv') as f:\n    raise KeyError(f.readline())\n"},
    )
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(tmp_path / "out"), "--", "python", "app.py",
        cwd=work, env={"TMPDIR": str(temp)},
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "the command read ../shared/data.csv outside the workdir" in result.stdout, result.stdout


def test_a_failure_needing_a_file_capture_cannot_see_is_not_called_reproduced(
    cli: Cli, tmp_path: Path
) -> None:
    # The shell tests for a file whose name it builds, and says nothing when it is not
    # there: no record and no message name it, so the spec cannot be made whole. It
    # reproduces in the workdir only, and capture says so and exits 1.
    work = written(
        tmp_path / "work",
        {
            "marker": "",
            "crash.py": "import ctypes\nctypes.string_at(0)\n",
            "run.sh": 'f=$(printf "mark%s" er)\nif [ -f "$f" ]; then python crash.py; fi\n',
        },
    )
    out = tmp_path / "out"
    result = cli("capture", "-o", "spec.yaml", "--out", str(out), "--", "sh", "run.sh", cwd=work)
    assert result.code == 1, result.stdout + result.stderr
    assert (
        "it came back in the workdir, but not in a copy of the spec and the 2 files it "
        "carries: the command needs more of the workdir than capture saw it read"
    ) in result.stdout, result.stdout
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert "NOT the same signature (crash:SIGSEGV" in verify, verify
    assert "verdict not-reproduced" in verify, verify
    # sh exited 139 for python's SIGSEGV: the comment said "in the main process".
    assert (
        "signal: SIGSEGV  # exit status 139 = 128 + SIGSEGV, as a shell reports it: the status "
        "a shell gives when a process it ran dies of it"
    ) in (work / "spec.yaml").read_text()


def test_the_verify_links_what_no_bundle_carries_and_survives_odd_output(
    cli: Cli, tmp_path: Path
) -> None:
    # A 20 MiB checkpoint is named for a reader to fetch, not carried: the copy lacked it,
    # and the verify said "name it in files" (exit 1). Now it is linked into the copy. The
    # program's `~1.5s` in its output made the search of what the copy lacked raise.
    work = tmp_path / "work"
    work.mkdir()
    with (work / "weights.bin").open("wb") as big:  # sparse: 20 MiB on paper
        big.truncate(20 << 20)
    (work / "data.txt").write_text("boom\n")
    (work / "app.py").write_text(
        "import os, sys\nprint('epoch took ~1.5s', flush=True)\n"
        "os.close(os.open('weights.bin', os.O_RDONLY))\n"
        "if sys.stdin.read().strip() == 'boom':\n    raise ValueError('boom')\n"
    )
    (work / "run.sh").write_text("f=data; cat $f.txt | python app.py\n")
    result = capture(cli, work, "sh", "run.sh")
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert "weights.bin linked (no bundle carries it)" in verify, verify
    assert "verdict reproduced" in verify, verify
    # data.txt, which cat read under a built name, was found from cat's message.
    assert "data.txt" in spec_document(work)["files"]  # type: ignore[operator]


def test_an_environment_made_in_the_workdir_is_linked_not_listed(cli: Cli, tmp_path: Path) -> None:
    # `.venv/bin/python app.py` with the venv in the workdir: the copy raised ValueError
    # (an internal error, exit 3) placing the interpreter's link, and the venv's
    # site-packages, on the child's sys.path, put its modules in `files`.
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / ".venv")], check=True)
    (site,) = (work / ".venv" / "lib").glob("python3*/site-packages")
    (site / "fancylib").mkdir()
    (site / "fancylib" / "__init__.py").write_text("def go():\n    raise RuntimeError('fancy')\n")
    (work / "app.py").write_text("import fancylib\nfancylib.go()\n")
    result = capture(cli, work, ".venv/bin/python", "app.py")
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert ".venv/ linked" in verify, verify
    assert "verdict reproduced" in verify, verify
    assert "files" not in spec_document(work)


def test_a_shell_script_the_command_runs_brings_the_files_it_names(
    cli: Cli, tmp_path: Path
) -> None:
    # `sh run.sh` running `cat data.txt | python app.py`: run.sh's own words name data.txt,
    # which the copy (as the bundle) carries; the verify in the copy reproduces.
    work = written(
        tmp_path / "work",
        {
            "data.txt": "boom\n",
            "app.py": "import sys\nif sys.stdin.read().strip() == 'boom':\n"
            "    raise ValueError('boom')\n",
            "run.sh": "cat data.txt | python app.py\n",
        },
    )
    result = capture(cli, work, "sh", "run.sh")
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert verify.startswith("verify in a copy of the spec and its 3 files"), verify
    assert "verdict reproduced" in verify, verify


@pytest.mark.skipif(native.gdb_path() is None, reason="gdb not installed (apt-get install gdb)")
@pytest.mark.skipif(native.core_pattern().piped, reason="kernel.core_pattern pipes cores away")
def test_a_pipeline_that_passed_over_a_segfault_is_no_pass_to_capture(
    cli: Cli, tmp_path: Path
) -> None:
    # parse.py segfaults mid-pipeline, and the pipeline exits 0 (sort's status, no
    # pipefail). capture wrote `expect: {outcome: pass}`, exited 0, and its verify said
    # "the same signature (pass) came back ... reproduced" of a copy that lacked data.txt,
    # where nothing died at all.
    parse = (
        "import ctypes, sys\n"
        "for line in sys.stdin:\n"
        "    fields = line.strip().split(',')\n"
        "    if len(fields) != 3:\n"
        "        sys.stdout.flush()\n"
        "        ctypes.string_at(0)\n"
        "    print(fields[0])\n"
    )
    work = written(tmp_path / "work", {"data.txt": "a,b,c\nd,e\n", "parse.py": parse})
    script = "cat data.txt | python parse.py | sort"
    out = tmp_path / "out"
    refused = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), "--", "sh", "-c", script, cwd=work
    )  # fmt: skip
    assert refused.code == 1, refused.stdout + refused.stderr
    assert refused.stdout.startswith(
        "it passed, but a process of the attempt died of SIGSEGV (pid "
    )
    assert (
        "nothing written: the command passed, so a spec of it could only expect a pass"
    ) in refused.stdout, refused.stdout
    assert f"capture `bash -o pipefail -c '{script}'`, whose status is the crash's" in (
        refused.stdout
    )
    assert not (work / "spec.yaml").exists()  # nor the first draft
    # The capture it says to make: the crash is the pipeline's, and data.txt, which only
    # the `-c` script names, is in the verify's first copy (it was added by a second round).
    result = capture(cli, work, "bash", "-o", "pipefail", "-c", script)
    expect = spec_document(work)["expect"]
    assert isinstance(expect, dict)
    assert (expect["outcome"], expect["signal"]) == ("crash", "SIGSEGV")
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert _VERIFY.match(verify), verify
    assert verify.startswith("verify in a copy of the spec and its 2 files"), verify
    assert "verdict reproduced" in verify, verify
    assert "the failure needs" not in result.stdout, result.stdout


def test_a_config_the_command_names_is_listed_so_compare_tells_its_edit(
    cli: Cli, tmp_path: Path
) -> None:
    # Capture saw the child read config.json, but the command names it, so it
    # was left out of `files`; a named file is never compared (the command may write it),
    # and `compare` of a run before and after an edit of it said "same program files".
    app = (
        "import argparse, json\n"
        "p = argparse.ArgumentParser()\n"
        "for name in ('--config', '--state', '--log'):\n"
        "    p.add_argument(name)\n"
        "a = p.parse_args()\n"
        "cfg = json.load(open(a.config))\n"
        "count = int(open(a.state).read())\n"
        "open(a.state, 'w').write(str(count + 1))\n"
        "open(a.log, 'w').write('ran\\n')\n"
        "if cfg['decoder'] == 'native':\n"
        "    raise RuntimeError('the native decoder failed')\n"
    )
    work = written(
        tmp_path / "work",
        {"app.py": app, "config.json": '{"decoder": "native"}\n', "state.txt": "0"},
    )
    argv = ("python", "app.py", "--config", "config.json", "--state", "state.txt")
    capture(cli, work, *argv, "--log", "run.log")
    # Not the state it read and wrote back, the log it wrote, nor its own script.
    assert spec_document(work)["files"] == ["config.json"]
    out = tmp_path / "out"
    before = cli("run", "spec.yaml", "--out", str(out), cwd=work)
    assert before.code == 0, before.stdout + before.stderr
    (work / "config.json").write_text('{"decoder": "python"}\n')
    after = cli("run", "spec.yaml", "--out", str(out), cwd=work)
    assert after.code == 1, after.stdout + after.stderr
    compared = cli(
        "compare", before.latest_run().name, after.latest_run().name, "--out", str(out)
    )  # fmt: skip
    assert compared.code == 0, compared.stderr
    assert "program files that differ:\n  config.json: changed\n" in compared.stdout, (
        compared.stdout
    )
    assert "(list in `files` what it reads): run.log, state.txt\n" in compared.stdout


def test_a_traceback_the_program_went_on_from_is_expected_beside_its_exit(
    cli: Cli, tmp_path: Path
) -> None:
    # A handled KeyError, logged, then `sys.exit(2)`: the exception did not end it, but it
    # is what a reader recognises; the judge matches the last traceback printed.
    (tmp_path / "handled.py").write_text(
        "import logging, sys\ntry:\n    {}['missing']\nexcept KeyError:\n"
        "    logging.exception('lookup failed')\n"
        "print('checkpoint dir not writable', file=sys.stderr)\nsys.exit(2)\n"
    )
    result = capture(cli, tmp_path, "python", "handled.py")
    expect = spec_document(tmp_path)["expect"]
    assert expect == {
        "outcome": "error",
        "exception": "KeyError",
        "message": "checkpoint dir not writable",
        "exit_code": 2,
    }, expect
    assert (
        "# the last traceback printed; the process went on and exited 2"
        in (tmp_path / "spec.yaml").read_text()
    )
    assert "verdict reproduced" in result.stdout, result.stdout


def test_a_pythonpath_the_failure_needs_goes_into_the_spec(cli: Cli, tmp_path: Path) -> None:
    # `PYTHONPATH=src python -m mypkg`: PYTHONPATH is not written into a spec, and the verify
    # kept it, so it said "reproduced" of a spec that fails anywhere else ("No module named
    # mypkg"). Now the verify leaves it out, finds it needed, and the spec sets it.
    workdir = tmp_path / "work"
    package = workdir / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("raise ValueError('from the package')\n")
    result = capture(
        cli, workdir, "python", "-m", "mypkg", env={"PYTHONPATH": f"src{os.pathsep}{ROOT}"}
    )
    assert "the failure needs PYTHONPATH as your shell sets it" in result.stdout, result.stdout
    # The package is found where the child looked for it (`src/`, its sys.path), and the
    # copy the verify ran in carried it: the bundle's rerun finds it too.
    assert spec_document(workdir)["files"] == [
        "src/mypkg/__init__.py",
        "src/mypkg/__main__.py",
    ]
    assert "verdict reproduced" in result.stdout, result.stdout
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    assert environment["env"]["PYTHONPATH"] == f"src{os.pathsep}{ROOT}"  # type: ignore[index,call-overload]


def test_a_variable_of_the_shell_the_failure_needs_goes_into_the_spec(
    cli: Cli, tmp_path: Path
) -> None:
    # The verify used to inherit the capturing shell: it said "reproduced" for a spec that
    # passed in any other shell, since USE_NATIVE=1 was set here and written nowhere.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "segv.py").write_text(
        "import ctypes, os\n"
        "print('train step 1/1', flush=True)\n"
        "if os.environ.get('USE_NATIVE') == '1':\n"
        "    ctypes.string_at(0)\n"
    )
    shell = {"USE_NATIVE": "1", "UNRELATED_SETTING": "x", "OTHER_SETTING": "y"}
    result = capture(cli, workdir, "python", "segv.py", env=shell)
    assert "the failure needs USE_NATIVE as your shell sets it" in result.stdout
    assert "verdict reproduced" in result.stdout
    env = spec_document(workdir)["environment"]
    assert isinstance(env, dict)
    variables = env["env"]
    assert isinstance(variables, dict)
    # Set by the failing cell, empty in the control cell, which passed without it.
    assert variables["USE_NATIVE"] == "${{ matrix.use_native }}"
    assert spec_document(workdir)["matrix"] == {"use_native": ["1", None]}
    assert not {"UNRELATED_SETTING", "OTHER_SETTING"} & set(variables)  # not needed: not set
    # The spec alone reproduces: a shell without the variable.
    rerun = cli(
        "run", str(workdir / "spec.yaml"), "--out", str(tmp_path / "out"), env={"USE_NATIVE": ""}
    )
    assert rerun.code == 0, rerun.stdout + rerun.stderr


def test_a_variable_the_failure_needs_gets_a_control_cell_minimize_holds_to(
    cli: Cli, tmp_path: Path
) -> None:
    # A new user's trial: the spec had one cell, MLPKG_FUSED: '1', and its message pattern
    # met any shape mismatch; minimize, with no passing cell, kept the error and dropped
    # the `if` that reads the variable (another bug). The control cell, the command
    # without it, which capture saw pass, now holds every candidate to passing there.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "prog.py").write_text(
        "import os\n\n\n"
        "def forward(rows):\n"
        "    if os.environ.get('MLPKG_FUSED') == '1':\n"
        "        raise RuntimeError(\n"
        "            f'mat1 and mat2 shapes cannot be multiplied ({rows}x32 and 16x32)'\n"
        "        )\n"
        "    return rows\n\n\n"
        "forward(8)\n"
        "print('ok')\n"
    )
    shell = {"MLPKG_FUSED": "1", "UNRELATED_SETTING": "x"}
    result = capture(cli, workdir, "python", "prog.py", env=shell)
    assert "; the control cell (MLPKG_FUSED empty) passed in 1/1 attempt; " in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["matrix"] == {"mlpkg_fused": ["1", None]}
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["cases"] == [{"when": {"mlpkg_fused": None}, "outcome": "pass"}]
    text = (workdir / "spec.yaml").read_text()
    assert (
        "MLPKG_FUSED: ${{ matrix.mlpkg_fused }}  # your shell set it: the failure needs it" in text
    )
    # Both cells as expected, in a shell that sets it too: the control cell empties it.
    out = tmp_path / "out"
    rerun = cli("run", str(workdir / "spec.yaml"), "--out", str(out), env=shell)
    assert rerun.code == 0, rerun.stdout + rerun.stderr
    assert "2/2 cells reproduced" in rerun.stdout, rerun.stdout
    minimized = tmp_path / "minimized"
    argv = ["minimize", str(workdir / "spec.yaml"), "--out", str(out), "-o", str(minimized)]
    ran = cli(*argv, "--budget", "40", env=shell)
    assert "passing cells checked: mlpkg_fused=null" in ran.stderr, ran.stderr
    assert "no passing cell" not in ran.stdout + ran.stderr
    # Still the bug: the condition on the variable kept, as the passing cell holds it.
    assert "MLPKG_FUSED" in (minimized / "prog.py").read_text(), ran.stdout
    # isolate takes the control cell as its passing side and names the variable's axis.
    isolated = cli("isolate", str(workdir / "spec.yaml"), "--out", str(out), env=shell)
    assert isolated.code == 0, isolated.stdout + isolated.stderr
    assert "errors when mlpkg_fused=1; with mlpkg_fused=null, it passes" in isolated.stdout


def test_a_control_cell_is_written_only_where_the_command_passed_without_the_variable(
    cli: Cli, tmp_path: Path
) -> None:
    # Empty is not unset to this program: the control cell the spec would write (FAST_MODE
    # empty) errs, though the rerun without it passed, so the spec has none, and says why.
    work = tmp_path / "empty"
    work.mkdir()
    (work / "prog.py").write_text(
        "import os\n"
        "mode = os.environ.get('FAST_MODE')\n"
        "if mode == '1':\n"
        "    raise RuntimeError('fused kernel failed')\n"
        "if mode is not None:\n"
        "    raise ValueError(f'FAST_MODE={mode!r}: not a mode')\n"
    )
    result = capture(cli, work, "python", "prog.py", env={"FAST_MODE": "1"})
    assert "the failure needs FAST_MODE as your shell sets it" in result.stdout, result.stdout
    assert (
        "the command passed in a rerun without FAST_MODE, but a control cell with it empty "
        "did not pass in the verify (it ended error:ValueError): the spec has no control cell"
    ) in result.stdout, result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(work)
    assert "matrix" not in document
    assert (
        "FAST_MODE: '1'  # your shell set it: the failure needs it"
        in (work / "spec.yaml").read_text()
    )
    # Without the variable it failed another way, never passed: "did not fail the same
    # way" is no control, and no control cell is written, said why.
    other = tmp_path / "other"
    other.mkdir()
    (other / "prog.py").write_text(
        "import os\n"
        "if os.environ.get('FAST_MODE') == '1':\n"
        "    raise RuntimeError('fused kernel failed')\n"
        "raise ValueError('the slow path is not built')\n"
    )
    result = capture(cli, other, "python", "prog.py", env={"FAST_MODE": "1"})
    assert "the failure needs FAST_MODE as your shell sets it" in result.stdout, result.stdout
    assert (
        "no control cell (the command with FAST_MODE empty): no rerun without it passed (it "
        "ended error:ValueError); the spec has one failing cell"
    ) in result.stdout, result.stdout
    assert "; the control cell (" not in result.stdout, result.stdout
    assert "matrix" not in spec_document(other)


def test_a_relevant_variable_of_the_shell_is_tested_and_said_as_found(
    cli: Cli, tmp_path: Path
) -> None:
    # The variables capture writes as relevant (OMP_*, CUDA_*, PYTHON*...) were in every
    # rerun: OMP_NUM_THREADS=4, the whole cause of a hang, was written `# your shell set it;
    # not shown needed`, beside PYTHONUNBUFFERED's same words. Now the verify reruns
    # without them, narrows to those the failure needs, and says each as it found it.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "omp.py").write_text(
        "import os, sys\n"
        "if os.environ.get('OMP_NUM_THREADS') == '4':\n"
        "    sys.exit('deadlock stand-in: 4 threads')\n"
    )
    shell = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "2", "PYTHONUNBUFFERED": "1"}
    result = capture(cli, workdir, "python", "omp.py", env=shell)
    assert (
        "the failure needs OMP_NUM_THREADS as your shell sets it: it did not come back without "
        "it, and the spec now sets it (environment.env); to see it vary, add values to "
        "matrix.omp_num_threads, beside the control cell's"
    ) in result.stdout, result.stdout
    assert "testing your shell's relevant variables, rerun 1: with 0 of the " in result.stderr
    assert "; the control cell (OMP_NUM_THREADS empty) passed in 1/1 attempt; " in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    text = (workdir / "spec.yaml").read_text()
    # It passed without it: the control cell, which sets it empty, passed in the verify too.
    needed = "OMP_NUM_THREADS: ${{ matrix.omp_num_threads }}  # your shell set it: the failure"
    assert needed + " needs it\n" in text, text
    assert spec_document(workdir)["matrix"] == {"omp_num_threads": ["4", None]}
    assert "MKL_NUM_THREADS: '2'  # your shell set it; the failure came back without it\n" in text
    assert "not shown needed" not in text
    # The interpreter's own knobs are not tested, and said so.
    untested = "PYTHONUNBUFFERED: '1'  # your shell set it; not tested by a rerun without it"
    assert untested in text, text
    testing = [
        line
        for line in result.stderr.splitlines()
        if "checking whether it needs" in line or "relevant variables" in line
    ]
    assert testing, result.stderr
    assert not [line for line in testing if "PYTHON" in line], testing
    # The spec as written reproduces in a shell that sets none of them.
    rerun = cli(
        "run", str(workdir / "spec.yaml"), "--out", str(tmp_path / "out2"),
        env={"OMP_NUM_THREADS": "", "MKL_NUM_THREADS": ""},
    )  # fmt: skip
    assert rerun.code == 0, rerun.stdout + rerun.stderr


def test_a_control_cell_capture_writes_always_loads(cli: Cli, tmp_path: Path) -> None:
    # `CACHE_BACKEND=null` wrote `cache_backend: ['null', null]`, two cells of one id, and
    # `INCLUDE=1` `matrix: {include: [...]}`: specs the loader refused, capture exit 2 on a
    # spec it wrote itself, where it wrote a valid one-cell spec before. Now no control
    # cell, said why and how to add one by hand, and the one-cell spec as before.
    for name, value in [("CACHE_BACKEND", "null"), ("INCLUDE", "1")]:
        work = tmp_path / name.lower()
        work.mkdir()
        (work / "prog.py").write_text(
            f"import os\nif os.environ.get('{name}') == '{value}':\n"
            "    raise RuntimeError('boom')\n"
        )
        result = capture(cli, work, "python", "prog.py", env={name: value})
        assert f"the failure needs {name} as your shell sets it" in result.stdout, result.stdout
        assert "verdict reproduced" in result.stdout, result.stdout
        assert f"no control cell (the command with {name} empty): " in result.stdout
        assert f"`env -u {name}` (unset, not empty)" in result.stdout, result.stdout
        document = spec_document(work)
        assert "matrix" not in document
        environment = document["environment"]
        assert isinstance(environment, dict)
        variables = environment["env"]
        assert isinstance(variables, dict)
        assert variables[name] == value  # as your shell sets it, in the one cell
        rerun = cli("run", str(work / "spec.yaml"), "--out", str(tmp_path / "out"))
        assert rerun.code == 0, rerun.stdout + rerun.stderr


def test_a_control_cell_that_passed_is_kept_where_the_failure_missed_beside_it(
    cli: Cli, tmp_path: Path
) -> None:
    # The control was kept only where the whole rerun reproduced: a flaky failure that
    # missed the failing cell of the rerun with the control dropped a control that had
    # passed, and said it "did not pass ... (it ended pass)". At --repeat 3 the program
    # fails with OMP_NUM_THREADS=4 but in its 7th to 9th run with it (capture's 3, the
    # verify's 3, then the failing cell of the rerun with the control): 3 of 6 attempts
    # the rule counts failed, and the passes without it are too many for a failure at 0.5
    # to miss by chance, so the control stands (its rule asked again with the miss).
    workdir = tmp_path / "work"
    workdir.mkdir()
    runs = tmp_path / "runs.log"
    (workdir / "omp.py").write_text(
        "import fcntl, os\n"
        f"with open({str(runs)!r}, 'a+') as f:\n"
        "    fcntl.flock(f, fcntl.LOCK_EX)\n"
        "    omp = os.environ.get('OMP_NUM_THREADS')\n"
        "    f.write(f'{omp}\\n')\n"
        "    f.seek(0)\n"
        "    fours = f.read().splitlines().count('4')\n"
        "if omp == '4' and fours not in (7, 8, 9):\n"
        "    raise RuntimeError('threads went wrong')\n"
    )
    result = capture(
        cli, workdir, "python", "omp.py", options=("--repeat", "3"), env={"OMP_NUM_THREADS": "4"}
    )
    assert runs.read_text().splitlines().count("4") == 9, runs.read_text()
    assert "matrix.omp_num_threads, beside the control cell's" in result.stdout, result.stdout
    assert (
        "the control cell (OMP_NUM_THREADS empty) passed in 3/3 attempts of a rerun of the "
        "spec with it, and is kept; the failure (error:RuntimeError) missed that rerun's "
        "failing cell (0/3 attempts)"
    ) in result.stdout, result.stdout
    assert "did not pass in the verify" not in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    assert spec_document(workdir)["matrix"] == {"omp_num_threads": ["4", None]}


def test_a_failing_cell_s_miss_beside_the_control_counts_against_its_passes(
    cli: Cli, tmp_path: Path
) -> None:
    # A failure that comes and goes whatever the environment: it failed in capture's run and
    # the verify's (OMP_NUM_THREADS=4 set), passed in every rerun without it, and missed the
    # failing cell beside the control. The control was kept on that rerun without the rule
    # asked again: 1 of 2 attempts with the variable failed, and 3 passes without it are
    # what a failure at 0.5 misses by chance (0.5^3 = 12.5%): no control.
    workdir = tmp_path / "work"
    workdir.mkdir()
    runs = tmp_path / "runs.log"
    (workdir / "omp.py").write_text(
        "import fcntl, os\n"
        f"with open({str(runs)!r}, 'a+') as f:\n"
        "    fcntl.flock(f, fcntl.LOCK_EX)\n"
        "    f.seek(0)\n"
        "    n = len(f.read().splitlines()) + 1\n"
        "    f.write(f'{n}\\n')\n"
        "if n <= 2:\n"
        "    raise RuntimeError('threads went wrong')\n"
    )
    result = capture(cli, workdir, "python", "omp.py", env={"OMP_NUM_THREADS": "4"})
    assert (
        "no control cell (the command with OMP_NUM_THREADS empty): the failure came back in "
        "1/2 attempts with it set"
    ) in result.stdout, result.stdout
    assert "beside the control cell's" not in result.stdout, result.stdout
    assert "matrix" not in spec_document(workdir), spec_document(workdir)


def test_two_needed_variables_whose_axes_would_be_one_get_no_control_cell(
    cli: Cli, tmp_path: Path
) -> None:
    # Mode and MODE: one axis `mode`, both env lines reading it, so the failing cell ran
    # MODE=a Mode=a; the failure needing Mode=a and MODE=b missed, and capture called it
    # flaky (exit 1, neither variable set) where it found them needed before controls.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "prog.py").write_text(
        "import os\n"
        "if os.environ.get('Mode') == 'a' and os.environ.get('MODE') == 'b':\n"
        "    raise RuntimeError('modes clash')\n"
    )
    result = capture(cli, workdir, "python", "prog.py", env={"Mode": "a", "MODE": "b"})
    assert "MODE, Mode would share the matrix axis `mode`" in result.stdout, result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    env = environment["env"]
    assert isinstance(env, dict)
    assert (env["Mode"], env["MODE"]) == ("a", "b"), env


def test_a_flaky_failure_gets_a_control_only_where_its_passes_are_evidence(
    cli: Cli, tmp_path: Path
) -> None:
    # A flaky failure's reruns without the variables narrowing ended on can pass by
    # chance: a control cell then stood on passes a failure at the rate seen misses
    # (0.5^4 = 6%). This program needs both variables, and fails every other run with
    # them: 2 of 4 attempts with them failed, 4 without passed, too few to tell.
    workdir = tmp_path / "work"
    workdir.mkdir()
    runs = tmp_path / "runs.log"
    (workdir / "prog.py").write_text(
        "import fcntl, os\n"
        "both = os.environ.get('ALPHA_MODE') == '1' and os.environ.get('BETA_MODE') == '1'\n"
        f"with open({str(runs)!r}, 'a+') as f:\n"
        "    fcntl.flock(f, fcntl.LOCK_EX)\n"
        "    f.write(f'{both}\\n')\n"
        "    f.seek(0)\n"
        "    n = f.read().splitlines().count('True')\n"
        "if both and n % 2 == 1:\n"
        "    raise RuntimeError('modes clash')\n"
    )
    shell = {"ALPHA_MODE": "1", "BETA_MODE": "1"}
    result = capture(cli, workdir, "python", "prog.py", options=("--repeat", "2"), env=shell)
    assert "the failure needs ALPHA_MODE, BETA_MODE together" in result.stdout, result.stdout
    assert (
        "no control cell (the command with ALPHA_MODE, BETA_MODE empty): the failure came back "
        "in 2/4 attempts with them set, and 4 attempts without passed: a failure that comes "
        "and goes at that rate misses that many by chance, so the passes are no control; "
    ) in result.stdout, result.stdout
    assert "capture again with a larger --repeat to tell: reprospec capture --repeat " in (
        result.stdout
    )
    assert "matrix" not in spec_document(workdir)


def _capture_stopped(
    workdir: Path,
    timeout: str,
    command: list[str],
    ready: Callable[[], bool],
    env: dict[str, str] | None = None,
) -> tuple[CliResult, Path]:
    """`reprospec capture -o spec.yaml --timeout TIMEOUT -- COMMAND` run in `workdir` (its
    store beside it, in `out`), Ctrl-C'd once `ready()` holds: how it stopped, and the
    spec's path."""
    spec = workdir / "spec.yaml"
    argv = [sys.executable, "-m", "reprospec", "capture", "-o", str(spec)]
    argv += ["--out", str(workdir.parent / "out"), "--timeout", timeout, "--", *command]
    shell = ["sh", "-c", f'cd "{workdir}" && exec "$@"', "sh", *argv]
    return interrupt_when(shell, ready, env=env, wait_s=120), spec


def test_a_ctrl_c_in_the_rerun_of_a_pytest_test_alone_keeps_the_spec_of_the_first_run(
    tmp_path: Path,
) -> None:
    # A new user's trial: a pytest hang waited its whole timeout in the first run, then
    # Ctrl-C in the rerun of the test alone left the first draft ("capture again"): the
    # first run's wait was lost. Now the spec is the whole command's, from that run.
    starts = tmp_path / "starts"
    workdir = tmp_path / "work"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "tests" / "test_hang.py").write_text(
        "import threading\n"
        "def test_fast():\n    pass\n"
        "def test_deadlock():\n"
        f"    with open({str(starts)!r}, 'a') as f:\n        f.write('x')\n"
        "    lock = threading.Lock()\n    lock.acquire()\n    lock.acquire()\n"
    )
    # 10s: the rerun alone is bounded by how long the test went unended in the first run,
    # less the rerun's own start; a loaded machine left 5s's window too short to stop it in.
    stopped, _ = _capture_stopped(
        workdir,
        "10s",
        [sys.executable, "-m", "pytest", "tests/test_hang.py"],
        lambda: starts.exists() and len(starts.read_text()) >= 2,
    )
    assert stopped.code == 130, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert (
        "reprospec: interrupted in the rerun of tests/test_hang.py::test_deadlock alone; "
    ) in stopped.stderr, stopped.stderr
    assert (
        "the spec runs the whole command: the rerun of tests/test_hang.py::test_deadlock "
        "alone was stopped"
    ) in stopped.stdout, stopped.stdout
    document = spec_document(workdir)
    assert document["expect"] == {"outcome": "hang", "phase": "tests/test_hang.py::test_deadlock"}
    command = document["command"]
    assert isinstance(command, str)
    assert command.endswith("-m pytest tests/test_hang.py -v"), command


def test_a_ctrl_c_in_the_relevant_variables_reruns_leaves_the_spec_whole(
    tmp_path: Path,
) -> None:
    # Each rerun writes the spec without some of the shell's variables: stopped in one,
    # capture must leave the spec as the verify ran it, every variable in it (a spec
    # without OMP_NUM_THREADS, the failure's whole cause, would not reproduce).
    started = tmp_path / "without-it"
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "omp.py").write_text(
        "import os, sys, time\n"
        "if os.environ.get('OMP_NUM_THREADS') == '4':\n"
        "    sys.exit('deadlock stand-in: 4 threads')\n"
        f"open({str(started)!r}, 'w').close()\n"
        "time.sleep(600)\n"
    )
    stopped, spec = _capture_stopped(
        workdir,
        "10m",
        ["python", "omp.py"],
        started.exists,
        env={"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "2"},
    )
    assert stopped.code == 130, stopped.stdout + stopped.stderr
    assert "testing your shell's relevant variables, rerun 1" in stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    text = spec.read_text()
    assert "OMP_NUM_THREADS: '4'" in text, text
    assert "MKL_NUM_THREADS: '2'" in text, text


def test_a_ctrl_c_while_narrowing_the_shells_variables_says_the_spec_needs_some(
    tmp_path: Path,
) -> None:
    # A new user's trial: stopped while the reruns narrowed the shell's variables, capture
    # said only that the spec was "not verified, `reprospec run` checks it" (which in that
    # shell reproduces), though the failure had not come back without them and the spec
    # sets none: sent on, it missed everywhere else.
    started = tmp_path / "narrowing"
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "needs.py").write_text(
        "import os, sys, time\n"
        "if os.environ.get('USE_FAST_PATH') != '1':\n"
        "    sys.exit(0)\n"
        "if os.environ.get('OTHER_MARK') != '1':  # only in a narrowing rerun\n"
        f"    open({str(started)!r}, 'w').close()\n"
        "    time.sleep(600)\n"
        "sys.exit('fast path broke')\n"
    )
    stopped, spec = _capture_stopped(
        workdir,
        "10m",
        ["python", "needs.py"],
        started.exists,
        env={"USE_FAST_PATH": "1", "OTHER_MARK": "1"},
    )
    assert stopped.code == 130, stopped.stdout + stopped.stderr
    assert "reprospec: narrowing, rerun " in stopped.stderr, stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    said = re.search(
        r"^the failure came back with your shell's \d+ variables set and not without them, "
        r"so it needs some of them; the narrowing that finds which was stopped, and the spec "
        r"sets none",
        stopped.stdout,
        re.M,
    )
    assert said, stopped.stdout
    assert "USE_FAST_PATH" not in spec.read_text()


def test_relevant_variables_the_failure_came_back_without_are_said_so(
    cli: Cli, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "boom.py").write_text("raise ValueError('always')\n")
    result = capture(cli, workdir, "python", "boom.py", env={"OMP_NUM_THREADS": "4"})
    assert "the failure came back without OMP_NUM_THREADS" in result.stdout, result.stdout
    assert "none of them is needed; the spec still sets them as your shell does" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    assert "OMP_NUM_THREADS: '4'  # your shell set it; the failure came back without it\n" in text


def test_two_variables_of_the_shell_needed_together_are_narrowed_to_the_pair(
    cli: Cli, tmp_path: Path
) -> None:
    # ZETA_A and ALPHA_B sort into different halves of the shell's variables: the halves
    # search gave up and wrote every one of them, each "the failure needs it".
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "e.py").write_text(
        "import ctypes, os\n"
        "print('train step 1/1', flush=True)\n"
        "if os.environ.get('ZETA_A') == '1' and os.environ.get('ALPHA_B') == '2':\n"
        "    ctypes.string_at(0)\n"
    )
    shell = {
        "ZETA_A": "1", "ALPHA_B": "2", "FOO_UNRELATED": "3", "BAR_X": "4",
        "CONTAINER_NAME": "dirty-target-qgfkbb", "MIDDLE_SETTING": "m",
    }  # fmt: skip
    result = capture(cli, workdir, "python", "e.py", env=shell)
    assert "the failure needs ALPHA_B, ZETA_A together as your shell sets them" in result.stdout
    # Said first, on stderr with the reruns' progress: what the narrowing is about to do
    # (minutes of reruns with nothing said of why).
    said = re.search(
        r"^reprospec: the failure came back with your shell's (\d+) variables set and not "
        r"without them: finding which it needs, by at most (\d+) reruns of the spec "
        r"with some left out(, the first with only ALPHA_B, ZETA_A, which the program's "
        r"files name)?, each of 1 attempt, then at most 2 with those it ends on$",
        result.stderr,
        re.M,
    )
    assert said, result.stderr
    assert said[3], said[0]  # e.py reads them by name: tried alone first
    # Each rerun says what it keeps, before its `verifying` line (16 alike, 6 min).
    first = "reprospec: narrowing, rerun 1 of at most "
    assert f": with 2 of your shell's {said[1]} variables (ALPHA_B, ZETA_A)\n" in result.stderr
    assert result.stderr.index(first) < result.stderr.index("reprospec: verifying", said.end())
    assert int(said[1]) >= len(shell)
    assert int(said[2]) >= 2
    assert said.start() < result.stderr.index("reprospec: verifying", said.end())
    assert "verdict reproduced" in result.stdout, result.stdout
    text = (workdir / "spec.yaml").read_text()
    assert "ALPHA_B: ${{ matrix.alpha_b }}  # your shell set it: the failure needs it" in text
    assert "ZETA_A: ${{ matrix.zeta_a }}  # your shell set it: the failure needs it" in text
    env = spec_document(workdir)["environment"]
    assert isinstance(env, dict)
    variables = env["env"]
    assert isinstance(variables, dict)
    # Set together by one cell, empty together in the control cell (no mix was seen to pass).
    assert spec_document(workdir)["matrix"] == {
        "shell_env": ["set", "empty"],
        "include": [
            {"shell_env": "set", "alpha_b": "2", "zeta_a": "1"},
            {"shell_env": "empty", "alpha_b": None, "zeta_a": None},
        ],
    }
    assert "shell_env: [set, empty]  # empty: ALPHA_B, ZETA_A empty, the control cell" in text
    assert not {"FOO_UNRELATED", "BAR_X", "CONTAINER_NAME", "MIDDLE_SETTING"} & set(variables)
    assert text.count("the failure needs it") == 2
    # The spec alone reproduces: a shell without either.
    rerun = cli(
        "run",
        str(workdir / "spec.yaml"),
        "--out",
        str(tmp_path / "out"),
        env={"ZETA_A": "", "ALPHA_B": ""},
    )
    assert rerun.code == 0, rerun.stdout + rerun.stderr


def test_a_workers_flag_of_a_program_without_torch_is_hinted_without_a_dataloader(
    cli: Cli, tmp_path: Path
) -> None:
    # app.py imports ctypes and argparse only: its `workers` axis was hinted "for a
    # DataLoader, 0 loads the data in the main process".
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "app.py").write_text(
        "import argparse, ctypes\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--workers', type=int)\n"
        "args = parser.parse_args()\n"
        "print('train step 1/1', flush=True)\n"
        "if args.workers > 1:\n"
        "    ctypes.string_at(0)\n"
    )
    capture(cli, workdir, "python", "app.py", "--workers", "2", options=("--no-verify",))
    text = (workdir / "spec.yaml").read_text()
    assert "workers: [2]  # from `--workers 2`; try [2, 0]: " in text
    # Said of the crash the run ended in (a hang is told `no worker to wait on`).
    assert "try [2, 0]: 0 usually means no worker processes: no worker to die\n" in text
    assert "DataLoader" not in text
    assert "torch" not in text


def test_a_dataloader_worker_crash_seen_once_in_three_attempts_expects_no_step(
    cli: Cli, tmp_path: Path
) -> None:
    # `--repeat 5` with one worker crash in five wrote the main loop's step, which moves
    # with how far ahead the worker ran; capture.md leaves out the step of a worker crash
    # seen once. The worker segfaults loading item 20 in the first attempt
    # only (the one that makes the marker file, outside the workdir).
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text(
        "import ctypes, os\n"
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset, get_worker_info\n"
        "MARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crashed')\n"
        "class Items(Dataset):\n"
        "    def __len__(self):\n"
        "        return 40\n"
        "    def __getitem__(self, i):\n"
        "        if i == 20 and get_worker_info() is not None:\n"
        "            try:\n"
        "                os.close(os.open(MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY))\n"
        "            except FileExistsError:\n"
        "                pass\n"
        "            else:\n"
        "                ctypes.string_at(0)\n"
        "        return torch.tensor([float(i)])\n"
        "loader = DataLoader(\n"
        "    Items(), batch_size=1, num_workers=1, multiprocessing_context='fork'\n"
        ")\n"
        "for step, batch in enumerate(loader, start=1):\n"
        "    print(f'train step {step}/40', flush=True)\n"
    )
    result = capture(cli, workdir, "python", "t.py", options=("--repeat", "3", "--no-verify"))
    assert "in 1/3 attempts" in result.stdout, result.stdout
    spec = load_spec(str(workdir / "spec.yaml"))
    assert spec.document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "train",
        "rate": ">0",
    }
    text = (workdir / "spec.yaml").read_text()
    assert re.search(r"the main loop was at step \d+; workers run ahead", text), text


def test_a_main_process_crash_is_not_reproduced_by_a_childs(cli: Cli, tmp_path: Path) -> None:
    # The spec of the main process's SIGSEGV had no `where`, and a run where a child process
    # died of SIGSEGV instead (another bug: the main process exited 1) reproduced it.
    workdir = tmp_path / "work"
    written(
        workdir,
        {
            "crash.py": (
                "import ctypes, multiprocessing, os, sys\n"
                "if __name__ == '__main__':\n"
                "    if os.path.exists('in-child'):\n"
                "        child = multiprocessing.get_context('fork').Process(\n"
                "            target=ctypes.string_at, args=(0,)\n"
                "        )\n"
                "        child.start()\n"
                "        child.join()\n"
                "        sys.exit(1)\n"
                "    ctypes.string_at(0)\n"
            ),
        },
    )
    capture(cli, workdir, "python", "crash.py")
    expect = spec_document(workdir)["expect"]
    assert expect == {"outcome": "crash", "signal": "SIGSEGV", "where": "main"}
    (workdir / "in-child").write_text("")
    again = cli("run", "spec.yaml", "--yes", "--out", str(tmp_path / "again"), cwd=workdir)
    assert again.code == 1, again.stdout + again.stderr
    (cell,) = again.results()["cells"]
    assert cell["attempts"][0]["outcome"]["where"] == "child"
    assert cell["verdict"] == "not-reproduced"


def test_a_failure_that_needs_nothing_of_the_shell_adds_nothing(cli: Cli, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "boom.py").write_text("print('train step 1/1', flush=True)\nraise ValueError(1)\n")
    result = capture(cli, workdir, "python", "boom.py", env={"UNRELATED_SETTING": "x"})
    assert "the failure needs" not in result.stdout
    assert " file (without " in result.stdout  # the shell's own were left out, and it says so
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    assert "UNRELATED_SETTING" not in text
    assert "Each matrix axis" not in text  # no settings of its own: no axes to widen


def test_ctrl_c_in_the_verify_keeps_the_spec_the_finished_run_wrote(tmp_path: Path) -> None:
    """Ctrl-C once the first run ended, in the verify rerun: the spec written from that
    run stays, and the message says it is written but unverified; it said "the spec is
    still the first draft: capture again with --force" of a finished spec."""
    started, ran = tmp_path / "verifying", tmp_path / "ran"
    # The first attempt fails at once; the verify's attempt (a second one) waits.
    program = (
        "import os, time\n"
        f"if os.path.exists({str(ran)!r}):\n    open({str(started)!r}, 'w').close()\n"
        "    time.sleep(600)\n"
        f"open({str(ran)!r}, 'w').close()\nraise ValueError('first failure')\n"
    )
    (tmp_path / "prog.py").write_text(program)
    out = tmp_path / "out"
    spec = tmp_path / "spec.yaml"
    argv = [sys.executable, "-m", "reprospec", "capture", "-o", str(spec), "--out", str(out)]
    argv += ["--timeout", "10m", "--", "python", str(tmp_path / "prog.py")]
    stopped = interrupt_when(argv, started.exists, wait_s=120)
    assert stopped.code == 130, stopped.stderr
    assert "first draft" not in stopped.stderr
    assert f"{spec} is written from the run that ended, but not verified" in stopped.stderr
    assert "spec.yaml: error:ValueError in 1/1 attempt" in stopped.stdout
    written = spec.read_text()
    assert not written.startswith("# A first draft")
    assert "exception: ValueError" in written


def test_a_pytest_runs_conftest_is_carried(cli: Cli, tmp_path: Path) -> None:
    # pytest loads conftest.py through its own import hook, ahead of capture's recorder:
    # the spec left out the root conftest.py that puts the project on sys.path, and its
    # verify (and every bundle of it) failed at collection, `No module named 'mypkg'`.
    workdir = tmp_path / "proj"
    (workdir / "mypkg").mkdir(parents=True)
    (workdir / "tests").mkdir()
    (workdir / "conftest.py").write_text("# the project's root: pytest puts it on sys.path\n")
    (workdir / "mypkg" / "__init__.py").write_text("VALUE = 1\n")
    (workdir / "tests" / "test_value.py").write_text(
        "import mypkg\n\n\ndef test_value():\n    assert mypkg.VALUE == 2\n"
    )
    here = venv_first()
    result = capture(cli, workdir, "pytest", "tests/test_value.py", env=here)
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    # The failing test is run alone (pt35), by a node id: its file is no word a bundle
    # carries, so it is listed too.
    assert document["command"] == "pytest tests/test_value.py::test_value -v"
    assert document["files"] == ["conftest.py", "mypkg/__init__.py", "tests/test_value.py"]
    # The plugins pytest loads through the same hook are pinned too (flaky, which the test
    # environment has): an order-dependent flake's cause may be one.
    environment = document["environment"]
    assert isinstance(environment, dict)
    packages = environment["packages"]
    assert isinstance(packages, list)
    assert any(str(p).startswith("flaky==") for p in packages), packages
    assert any(str(p).startswith("pytest-xdist==") for p in packages), packages


def test_a_pytest_module_that_fails_to_collect_is_captured_with_its_import_error(
    cli: Cli, tmp_path: Path
) -> None:
    # `pytest tests/test_fetch.py` failing at collection (exit 2) was captured as
    # `error:exit-2` expecting only `exit_code: 2`, which any usage error meets; pytest's
    # `ERROR tests/test_fetch.py` and its `E   ModuleNotFoundError` were not read.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fetch.py").write_text(
        "from nosuchlib_fxg import fetch\n\ndef test_fetch():\n    assert fetch()\n"
    )
    here = venv_first()
    made = cli(
        "capture", "--no-verify", "-o", "c.yaml", "--", "pytest", "tests/test_fetch.py",
        cwd=tmp_path, env=here,
    )  # fmt: skip
    assert made.code == 0, made.stdout + made.stderr
    assert "error:ModuleNotFoundError:tests/test_fetch.py in 1/1" in made.stdout
    expect = spec_document(tmp_path, "c.yaml")["expect"]
    assert expect == {
        "outcome": "error",
        "exception": "ModuleNotFoundError",
        "message": "No module named 'nosuchlib_fxg'",
        "phase": "tests/test_fetch.py",
    }


def test_a_module_looked_for_and_never_found_is_no_file_it_imported(
    cli: Cli, tmp_path: Path
) -> None:
    # The pytest console script does not put the rootdir on sys.path, so the test
    # module's `from mylib import fetch` failed at collection; capture still said "files it
    # imported or read from the workdir: mylib/__init__.py" and listed it in `files`: the
    # import was recorded as looked for, and mylib/ found in the workdir by name.
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text("def fetch():\n    return 41\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fetch.py").write_text(
        "from mylib import fetch\n\ndef test_fetch():\n    assert fetch() == 42\n"
    )
    here = venv_first()
    made = cli(
        "capture", "--no-verify", "-o", "c.yaml", "--", "pytest", "tests/test_fetch.py",
        cwd=tmp_path, env=here,
    )  # fmt: skip
    assert made.code == 0, made.stdout + made.stderr
    assert "error:ModuleNotFoundError:tests/test_fetch.py in 1/1" in made.stdout
    assert "mylib" not in made.stdout
    assert "files" not in spec_document(tmp_path, "c.yaml")
    # `python -m pytest` puts the rootdir first on sys.path: mylib is imported, and listed.
    made = cli(
        "capture", "--no-verify", "-o", "m.yaml", "--", "python", "-m", "pytest",
        "tests/test_fetch.py", cwd=tmp_path, env=here,
    )  # fmt: skip
    assert made.code == 0, made.stdout + made.stderr
    assert "error:AssertionError:tests/test_fetch.py::test_fetch in 1/1" in made.stdout
    assert "files it imported or read from the workdir: mylib/__init__.py" in made.stdout
    assert spec_document(tmp_path, "m.yaml")["files"] == ["mylib/__init__.py"]


def test_a_script_lists_the_modules_it_imported_not_those_it_tried(
    cli: Cli, tmp_path: Path
) -> None:
    # bin/app.py's folder is first on its sys.path, not the workdir: `import settings`
    # finds no settings.py there, the program goes on without it, and the workdir's own
    # settings.py (another program's) is nothing it needs; its helpers are.
    (tmp_path / "bin" / "helpers").mkdir(parents=True)
    (tmp_path / "settings.py").write_text("LEVEL = 3\n")
    (tmp_path / "bin" / "helpers" / "__init__.py").write_text("")
    (tmp_path / "bin" / "helpers" / "check.py").write_text(
        "def check(level):\n    raise ValueError(f'level {level} is out of range')\n"
    )
    (tmp_path / "bin" / "app.py").write_text(
        "try:\n    import settings\nexcept ImportError:\n    settings = None\n"
        "import importlib\n"
        "check = importlib.import_module('helpers.check')\n"
        "check.check(getattr(settings, 'LEVEL', 9))\n"
    )
    made = cli("capture", "--no-verify", "-o", "s.yaml", "--", "python", "bin/app.py", cwd=tmp_path)
    assert made.code == 0, made.stdout + made.stderr
    assert "error:ValueError in 1/1" in made.stdout
    files = spec_document(tmp_path, "s.yaml")["files"]
    assert files == ["bin/helpers/__init__.py", "bin/helpers/check.py"]


def test_an_option_of_several_numbers_is_one_axis_a_reader_can_widen(
    cli: Cli, tmp_path: Path
) -> None:
    # argparse's nargs='+': `--layers 64 128 256` was `layers: [64]` and a command reading
    # `--layers ${{ matrix.layers }} 128 256`, so widening the axis to 32 ran [32, 128, 256].
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--layers', type=int, nargs='+')\n"
        "p.add_argument('--lr', type=float)\n"
        "p.add_argument('data')\n"
        "a = p.parse_args()\n"
        "raise RuntimeError(f'layers {a.layers} lr {a.lr} data {a.data}')\n"
    )
    result = capture(cli, workdir, "python", "t.py", "--layers", "64", "128", "256", "--lr",
                     "0.1", "data.csv")  # fmt: skip
    assert "axes from the command: layers='64 128 256', lr=0.1\n" in result.stdout
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    assert document["matrix"] == {"layers": ["64 128 256"], "lr": [0.1]}
    assert document["command"] == (
        "python t.py --layers ${{ matrix.layers }} --lr ${{ matrix.lr }} data.csv"
    )
    # The axis widened as a reader would: each value is the words the option takes.
    messages = _observed(cli, workdir, "matrix.layers=[64 128 256, 32]")
    assert messages == {
        "layers=64 128 256,lr=0.1": "layers [64, 128, 256] lr 0.1 data data.csv",
        "layers=32,lr=0.1": "layers [32] lr 0.1 data data.csv",
    }


def test_an_options_one_number_before_a_positional_number_is_its_axis_alone(
    cli: Cli, tmp_path: Path
) -> None:
    # `--batch-size 32 5` (5 the positional epochs) was the axis `batch_size: [32
    # 5]`; widened, argparse refused `--batch-size 64 5` with no epochs. The script's own
    # add_argument calls say --batch-size takes one value and --layers several.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--layers', type=int, nargs='+')\n"
        "p.add_argument('--batch-size', type=int)\n"
        "p.add_argument('epochs', type=int)\n"
        "a = p.parse_args()\n"
        "raise RuntimeError(f'layers {a.layers} bs {a.batch_size} epochs {a.epochs}')\n"
    )
    result = capture(cli, workdir, "python", "t.py", "--batch-size", "32", "5", "--layers",
                     "64", "128")  # fmt: skip
    assert "axes from the command: batch_size=32, layers='64 128'\n" in result.stdout
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    assert document["matrix"] == {"batch_size": [32], "layers": ["64 128"]}
    assert document["command"] == (
        "python t.py --batch-size ${{ matrix.batch_size }} 5 --layers ${{ matrix.layers }}"
    )
    messages = _observed(cli, workdir, "matrix.batch_size=[32, 64]")
    assert messages == {
        "batch_size=32,layers=64 128": "layers [64, 128] bs 32 epochs 5",
        "batch_size=64,layers=64 128": "layers [64, 128] bs 64 epochs 5",
    }


def test_a_prefix_is_its_option_and_an_imported_parsers_numbers_are_never_split(
    cli: Cli, tmp_path: Path
) -> None:
    # Argparse reads `--batch` as --batch-size (allow_abbrev), which takes one value;
    # looked up by its exact word it was the axis `batch: [32 5]` and a widened cell ran
    # argparse's usage error. And net.py's parser is in cfg.py, unread: `--layers 64
    # 128 256` (nargs='+') was `layers: [64 128]` with 256 left in the command, a label of
    # a value the program never had; then kept as written; now cfg.py's parser is read
    # (net.py imports it): one axis of the three words.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "train.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--batch-size', type=int)\n"
        "p.add_argument('--lr', type=float)\n"
        "p.add_argument('epochs', type=int)\n"
        "a = p.parse_args()\n"
        "raise RuntimeError(f'bs {a.batch_size} epochs {a.epochs} lr {a.lr}')\n"
    )
    (workdir / "cfg.py").write_text(
        "import argparse\n"
        "def get_args():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--layers', type=int, nargs='+')\n"
        "    p.add_argument('epochs', type=int, nargs='?')\n"
        "    return p.parse_args()\n"
    )
    (workdir / "net.py").write_text(
        "from cfg import get_args\n"
        "a = get_args()\n"
        "raise RuntimeError(f'layers {a.layers} epochs {a.epochs}')\n"
    )
    result = capture(cli, workdir, "python", "train.py", "--batch", "32", "5", "--lr", "0.1")
    assert "axes from the command: batch=32, lr=0.1\n" in result.stdout
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    assert document["matrix"] == {"batch": [32], "lr": [0.1]}
    assert document["command"] == (
        "python train.py --batch ${{ matrix.batch }} 5 --lr ${{ matrix.lr }}"
    )
    messages = _observed(cli, workdir, "matrix.batch=[32, 64]")
    assert messages == {
        "batch=32,lr=0.1": "bs 32 epochs 5 lr 0.1",
        "batch=64,lr=0.1": "bs 64 epochs 5 lr 0.1",
    }

    result = capture(cli, workdir, "python", "net.py", "--layers", "64", "128", "256",
                     options=("--force",))  # fmt: skip
    assert "axes from the command: layers='64 128 256'\n" in result.stdout
    assert "verdict reproduced" in result.stdout
    document = spec_document(workdir)
    assert document["matrix"] == {"layers": ["64 128 256"]}
    assert document["command"] == "python net.py --layers ${{ matrix.layers }}"
    assert set(_observed(cli, workdir, "matrix.layers=[64 128 256, 32 64]").values()) == {
        "layers [64, 128, 256] epochs None",
        "layers [32, 64] epochs None",
    }


def test_an_option_of_several_words_alike_is_kept_as_written_and_said_so(
    cli: Cli, tmp_path: Path
) -> None:
    # `--files a.csv b.csv` was `files: [a.csv]` and `--files ${{ matrix.files }} b.csv`:
    # whether b.csv is the option's or the program's own argument, only its parser knows.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--files', nargs='+')\n"
        "p.add_argument('--lr', type=float)\n"
        "a = p.parse_args()\n"
        "raise RuntimeError(f'files {a.files} lr {a.lr}')\n"
    )
    for name in ("a.csv", "b.csv"):
        (workdir / name).write_text("x,y\n")
    result = capture(cli, workdir, "python", "t.py", "--files", "a.csv", "b.csv", "--lr", "0.1")
    note = (
        "--files a.csv b.csv kept as written, no axis: an option of several values, or of one "
        "and the program's own arguments after it; only the program's parser knows which"
    )
    assert "axes from the command: lr=0.1\n" in result.stdout
    assert note + "\n" in result.stdout
    assert "verdict reproduced" in result.stdout
    text = (workdir / "spec.yaml").read_text()
    header = " ".join(
        line.removeprefix("#").strip() for line in text.splitlines() if line.startswith("#")
    )
    assert note in header
    document = spec_document(workdir)
    assert document["matrix"] == {"lr": [0.1]}
    assert document["command"] == "python t.py --files a.csv b.csv --lr ${{ matrix.lr }}"


def _flaky_crash(tmp_path: Path, crashes: tuple[int, ...]) -> tuple[Path, Path]:
    """A use-after-free's stand-in that crashes about 3 times in 10 (os.urandom), but in this
    test by its attempts' count (a file outside the workdir): attempts `crashes` die of
    SIGSEGV, the others pass, so which of capture's reruns miss is the test's, not chance's."""
    count = tmp_path / "count"
    work = tmp_path / "work"
    work.mkdir()
    (work / "uaf.py").write_text(
        "import ctypes, os\n"
        "from pathlib import Path\n"
        f"count = Path({str(count)!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        f"forced = n in {crashes!r}\n"
        "if forced or (n > 200 and os.urandom(1)[0] < 77):\n"
        "    ctypes.string_at(0)\n"
    )
    return work, count


_SHELL = {"AWS_CA_BUNDLE": "/etc/ssl/certs/ca.crt", "CONTAINER_NAME": "dirty-target-q"}


def _capture_flaky(
    cli: Cli, tmp_path: Path, work: Path, env: dict[str, str]
) -> tuple[CliResult, Path]:
    """`capture -o spec.yaml -- python uaf.py` in `work` with `env` set, and its --out."""
    out = tmp_path / "out"
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), "--", "python", "uaf.py",
        cwd=work, env=env,
    )  # fmt: skip
    return result, out


def _writes_no_shell_variable(work: Path, said: str) -> None:
    """spec.yaml sets none of _SHELL's variables and says nothing `said` of any."""
    text = (work / "spec.yaml").read_text()
    assert said not in text
    for name in _SHELL:
        assert name not in text


def test_a_flaky_crash_that_misses_a_rerun_as_it_first_ran_names_no_cause(
    cli: Cli, tmp_path: Path
) -> None:
    # Attempt 1 (the first run) crashes; the copy's, the workdir's without the shell's
    # variables and the workdir's with them (as the first run ran) pass: a failure that
    # comes and goes, said so with the command to capture it again, and no variable or
    # file written as its cause.
    work, _count = _flaky_crash(tmp_path, (1,))
    result, out = _capture_flaky(cli, tmp_path, work, _SHELL)
    assert result.code == 1, result.stdout + result.stderr
    assert "the failure may be flaky" in result.stdout, result.stdout
    assert "no variable or file is named as its cause" in result.stdout
    assert f"reprospec capture --repeat 20 --out {out} --force -o spec.yaml" in result.stdout
    assert "the failure needs" not in result.stdout
    assert "needs more of the workdir" not in result.stdout
    assert "the runs wrote" not in result.stdout  # its count is outside the workdir
    _writes_no_shell_variable(work, "the failure needs it")


def test_a_crash_only_without_what_its_first_run_left_names_the_files_left(
    cli: Cli, tmp_path: Path
) -> None:
    # The program crashes unless a checkpoint its first run wrote is there: every rerun in
    # the workdir passes, and "may be flaky, capture with --repeat 20" sent a person after
    # a rate; the file the runs wrote is named (nu-b ck). The store and the spec, written in
    # the workdir too, are not.
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(
        "import ctypes, os\n"
        "resumed = os.path.exists('out/ckpt.txt')\n"
        "os.makedirs('out', exist_ok=True)\n"
        "open('out/ckpt.txt', 'w').write('2')\n"
        "if not resumed and os.environ.get('FAST_KERNEL') == '1':\n"
        "    ctypes.string_at(0)\n"
    )
    # FAST_KERNEL from the shell: the copy's rerun, without it, passes too (a copy of the
    # tree has no checkpoint, and would have crashed with it).
    result = cli(
        "capture", "-o", "spec.yaml", "--", "python", "train.py",
        cwd=work, env={**_SHELL, "FAST_KERNEL": "1"},
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "the failure may be flaky" in result.stdout, result.stdout
    assert (
        "the runs wrote out/ckpt.txt in the workdir, which every rerun found there and the "
        "first run did not"
    ) in result.stdout, result.stdout


def test_variables_a_flaky_crash_did_not_come_back_with_are_not_written_as_needed(
    cli: Cli, tmp_path: Path
) -> None:
    # Attempt 4, the workdir's rerun with the shell's variables, crashes by chance, so the
    # narrowing runs; its reruns all pass, so it ends on every variable, and the copy's and
    # the workdir's reruns with them set pass too: none is shown needed, none written, and
    # no file blamed (the old verify wrote each "the failure needs it", then said the
    # command needs more of the workdir).
    work, count = _flaky_crash(tmp_path, (1, 4))
    result, _out = _capture_flaky(cli, tmp_path, work, _SHELL)
    assert result.code == 1, result.stdout + result.stderr
    assert "none of them is shown needed and the spec sets none" in result.stdout, result.stdout
    assert "the failure may be flaky" in result.stdout
    assert "the failure needs" not in result.stdout
    assert "needs more of the workdir" not in result.stdout
    _writes_no_shell_variable(work, "the failure needs it")
    assert int(count.read_text()) > 4  # the narrowing ran


def test_a_pass_that_a_flaky_crash_failed_in_reruns_names_no_variable_it_needs(
    cli: Cli, tmp_path: Path
) -> None:
    # Attempt 1 (the first run) passes; 2 (the copy's) and 3 (the workdir's, both without
    # the shell's variables) crash, 4 (with them, as the first run ran) passes. The old
    # verify narrowed on one-attempt reruns (5 passed without AWS_CA_BUNDLE, 7 with the
    # other passed) and wrote "the failure needs CONTAINER_NAME" for a pass. The rerun without
    # them, made once more (5), passes: flaky, no variable named.
    work, count = _flaky_crash(tmp_path, (2, 3, 6))
    result, out = _capture_flaky(cli, tmp_path, work, _SHELL)
    assert result.code == 1, result.stdout + result.stderr
    assert "no variable is named as what the pass needs" in result.stdout, result.stdout
    assert f"reprospec capture --repeat 20 --out {out} --force -o spec.yaml" in result.stdout
    assert "needs AWS_CA_BUNDLE" not in result.stdout
    assert "needs CONTAINER_NAME" not in result.stdout
    assert "needs more of the workdir" not in result.stdout
    _writes_no_shell_variable(work, "needs it")
    assert count.read_text() == "5"


def test_a_variable_a_flaky_pass_was_narrowed_to_is_not_written_when_it_passes_without(
    cli: Cli, tmp_path: Path
) -> None:
    # 1 passes; 2, 3 and 5 (the rerun without the shell's variables made once more) crash,
    # 4 (with them) passes, so the narrowing runs: its reruns pass, so it ends on one of
    # them, and the rerun without it, made once more, passes: not needed, none written.
    # The old verify wrote it "the failure needs it" (5 crashed) and said reproduced.
    work, count = _flaky_crash(tmp_path, (2, 3, 5))
    result, out = _capture_flaky(cli, tmp_path, work, _SHELL)
    assert result.code == 1, result.stdout + result.stderr
    assert "a rerun without them, made once more, passed" in result.stdout, result.stdout
    assert "no variable is named as what the pass needs" in result.stdout
    assert f"reprospec capture --repeat 20 --out {out} --force -o spec.yaml" in result.stdout
    assert "needs AWS_CA_BUNDLE" not in result.stdout
    assert "needs CONTAINER_NAME" not in result.stdout
    _writes_no_shell_variable(work, "needs it")
    assert int(count.read_text()) > 5  # the narrowing ran


def test_a_variable_a_pass_needs_is_written_as_what_the_pass_needs(
    cli: Cli, tmp_path: Path
) -> None:
    # A program that crashes, every time, unless USE_SAFE_ALLOC=1: captured passing, it
    # needs the variable to pass, said so (not "the failure needs it": no failure was seen).
    work = tmp_path / "work"
    work.mkdir()
    (work / "safe.py").write_text(
        "import ctypes, os\nif os.environ.get('USE_SAFE_ALLOC') != '1':\n    ctypes.string_at(0)\n"
    )
    shell = {**_SHELL, "USE_SAFE_ALLOC": "1"}
    result = capture(cli, work, "python", "safe.py", env=shell)
    assert "the pass needs USE_SAFE_ALLOC as your shell sets it" in result.stdout, result.stdout
    # (the pass's own line may say the spec "may lack what the failure needs": not a claim)
    assert "the failure needs USE_SAFE_ALLOC" not in result.stdout, result.stdout
    text = (work / "spec.yaml").read_text()
    assert "your shell set it: the pass needs it" in text
    assert "the failure needs it" not in text
    assert "AWS_CA_BUNDLE" not in text


def test_a_flaky_crash_back_once_in_the_workdir_is_not_blamed_on_a_file(
    cli: Cli, tmp_path: Path
) -> None:
    # Attempts 1 (the first run) and 3 (the workdir's rerun) crash, 2 (the copy's) passes:
    # one attempt each side; the workdir's rerun made again (4) misses, so no file the copy
    # lacked is blamed (the old verify said the command needs more of the workdir).
    work, count = _flaky_crash(tmp_path, (1, 3))
    result, out = _capture_flaky(cli, tmp_path, work, {})
    assert result.code == 1, result.stdout + result.stderr
    assert "not in the workdir again: the failure may be flaky" in result.stdout, result.stdout
    assert "needs more of the workdir" not in result.stdout
    assert f"reprospec capture --repeat 20 --out {out} --force -o spec.yaml" in result.stdout
    assert count.read_text() == "4"


def _messages(ran: CliResult) -> dict[str, object]:
    """Each cell's message, by cell id, of a run of one attempt a cell: what the program got."""
    return {
        cell["id"]: attempt["outcome"]["message"]
        for cell in ran.results()["cells"]
        for attempt in cell["attempts"]
    }


def _observed(cli: Cli, workdir: Path, setting: str) -> dict[str, object]:
    """`reprospec run spec.yaml --observe --set SETTING` in `workdir`, which ends 0: each
    cell's message, by cell id (`_messages`)."""
    ran = cli("run", "spec.yaml", "--observe", "--set", setting, cwd=workdir)
    assert ran.code == 0, ran.stdout + ran.stderr
    return _messages(ran)


def test_a_pytest_tests_segfault_is_titled_with_the_frame_it_died_in(
    cli: Cli, tmp_path: Path
) -> None:
    """A test's segfault under pytest (which enables faulthandler) with a second
    thread alive was titled `test_x.py: SIGSEGV`: a main process's crash has no stack of
    its own, and the dump lists the other thread first. The crashed thread's block names
    the frame, in the title and the spec's `signal` comment."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "test_x.py").write_text(
        "import ctypes\nimport threading\n\n\n"
        "def read_shared(ptr):\n    return ctypes.string_at(ptr)\n\n\n"
        "def test_shared_buffer():\n"
        "    stop = threading.Event()\n"
        "    other = threading.Thread(target=stop.wait, daemon=True)\n"
        "    other.start()\n"
        "    read_shared(0)\n"
    )
    result = capture(
        cli, workdir, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"
    )
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    title = "test_x.py::test_shared_buffer: SIGSEGV in read_shared (test_x.py:6)"
    assert document["title"] == title, document
    assert ", in read_shared (test_x.py:6)" in (workdir / "spec.yaml").read_text()


def test_pytests_plugin_option_stays_in_the_command_no_axis(cli: Cli, tmp_path: Path) -> None:
    """lo38: `capture -- pytest -p no:cacheprovider -v test_x.py` made `p=no:cacheprovider`
    a matrix axis: a plugin blocked is part of the command, not a setting of the crash. The
    lone test's crash (its `-v` line the only one) still names the test."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "test_x.py").write_text(
        "import ctypes\n\n\ndef test_crash():\n    ctypes.string_at(0)\n"
    )
    pytest = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_x.py")
    result = capture(cli, workdir, *pytest)
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    command = document["command"]
    assert isinstance(command, str)
    assert command.endswith(" -m pytest -p no:cacheprovider -v test_x.py::test_crash"), command
    matrix = document.get("matrix") or {}
    assert isinstance(matrix, dict)
    assert "p" not in matrix, document
    assert document["markers"] == [{"preset": "pytest"}]
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == "test_x.py::test_crash"


def test_a_lone_crashing_test_under_a_shells_c_gets_the_pytest_preset(
    cli: Cli, tmp_path: Path
) -> None:
    """lo38: `capture -- sh -c 'pytest -v t.py'` of one test that segfaults: its `-v` line,
    the only one, is no two lines to detect, and `sh -c` was not read as running pytest (only
    `/bin/sh -c` was): the spec got no markers and no phase. With a passed test before it,
    two lines, it had both."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t.py").write_text("import ctypes\n\n\ndef test_crash():\n    ctypes.string_at(0)\n")
    script = f"{shlex.quote(sys.executable)} -m pytest -p no:cacheprovider -v t.py"
    result = capture(cli, workdir, "sh", "-c", script)
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["markers"] == [{"preset": "pytest"}], document
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == "t.py::test_crash"


def _pytest_project(workdir: Path) -> None:
    """A project whose tests/test_x.py has a test that segfaults (a real invalid read, in
    pkg/core.py), one before it and one after; tests/test_state.py's second test segfaults
    only after the first left it a null pointer."""
    (workdir / "pkg").mkdir(parents=True)
    (workdir / "tests").mkdir()
    (workdir / "conftest.py").write_text("# the root: pytest puts it on sys.path\n")
    (workdir / "pkg" / "__init__.py").write_text("")
    (workdir / "pkg" / "core.py").write_text(
        "import ctypes\n\n\ndef get(ptr):\n    return ctypes.string_at(ptr)\n"
    )
    (workdir / "tests" / "test_x.py").write_text(
        "from pkg import core\n\n\ndef test_before():\n    assert core.get(b'ok')\n\n\n"
        "def test_crash():\n    core.get(0)\n\n\ndef test_after():\n    assert True\n"
    )
    (workdir / "tests" / "test_state.py").write_text(
        "from pkg import core\n\nSTATE = [b'ok']\n\n\n"
        "def test_leaves_a_null():\n    STATE[0] = 0\n\n\n"
        "def test_reads_it():\n    core.get(STATE[0])\n"
    )


def test_a_pytest_tests_segfault_names_the_test_and_the_spec_runs_it_alone(
    cli: Cli, tmp_path: Path
) -> None:
    """pt34: `capture -- pytest -q tests/test_x.py` of a test's segfault kept `-q`, got no
    pytest preset and no phase: the spec named the frame, never the test. Now it runs
    pytest -v, names the test (title, expect.phase), and runs the test alone, a rerun of it
    alone having crashed the same way; its file, named by the node id, is carried."""
    workdir = tmp_path / "proj"
    _pytest_project(workdir)
    here = venv_first()
    result = capture(cli, workdir, "pytest", "-q", "tests/test_x.py", env=here)
    node = "tests/test_x.py::test_crash"
    assert f"wrote spec.yaml: crash:SIGSEGV:main:{node}:" in result.stdout, result.stdout
    assert f"narrowed to the test that crashed: {node} alone crashed the same way" in (
        result.stdout
    )
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["title"] == f"{node}: SIGSEGV in get (pkg/core.py:5)", document
    assert document["command"] == f"pytest {node} -v"
    assert document["markers"] == [{"preset": "pytest"}]
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == node
    assert "tests/test_x.py" in cast_list(document["files"])
    # The run's report says which test crashed.
    ran = cli("run", "spec.yaml", "--out", str(tmp_path / "out"), cwd=workdir, env=here)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert f"crash SIGSEGV @ {node}" in ran.stdout


def test_a_pytest_crash_that_needs_the_tests_before_it_keeps_the_whole_command(
    cli: Cli, tmp_path: Path
) -> None:
    """pt34: the test alone passes (the one before it left the null pointer): the spec
    runs the whole file, under -v, and says why; `python -m pytest -x` keeps its -x."""
    workdir = tmp_path / "proj"
    _pytest_project(workdir)
    result = capture(
        cli, workdir, sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
        "tests/test_state.py",
    )  # fmt: skip
    node = "tests/test_state.py::test_reads_it"
    assert (
        f"the spec runs the whole command: {node} alone did not crash the same way" in result.stdout
    ), result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["title"] == f"{node}: SIGSEGV in get (pkg/core.py:5)", document
    assert document["command"] == (
        "python -m pytest -x -p no:cacheprovider tests/test_state.py -v"
    ), document["command"]
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == node


def test_a_pytest_xdist_workers_segfault_names_the_test_xdist_says_it_ran(
    cli: Cli, tmp_path: Path
) -> None:
    """pt34: under `-n 2` the crash is a worker's (a child's), and -v's lines are the
    workers' tests in any order: the phase is the test xdist says the worker crashed
    running; the narrowed command keeps -n and -k."""
    workdir = tmp_path / "proj"
    _pytest_project(workdir)
    here = venv_first()
    result = capture(
        cli, workdir, "pytest", "-n", "2", "-k", "crash or after", "tests/test_x.py", env=here
    )
    node = "tests/test_x.py::test_crash"
    assert f"wrote spec.yaml: crash:SIGSEGV:child:{node}:" in result.stdout, result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert str(document["title"]).startswith(f"{node}: SIGSEGV in a pytest-xdist worker"), document
    assert document["command"] == (
        f"pytest -n ${{{{ matrix.n }}}} -k '${{{{ matrix.k }}}}' {node} -v"
    ), document["command"]


def test_a_pytest_tests_segfault_captured_without_verify_names_the_test_and_runs_the_file(
    cli: Cli, tmp_path: Path
) -> None:
    """pt34: --no-verify reruns nothing, so nothing is narrowed: the spec runs the command
    that ran, under -v, and still names the test. The ini file's `addopts = -ra -q`
    (pytest's own example) cancelled one -v: a second is added."""
    workdir = tmp_path / "proj"
    _pytest_project(workdir)
    (workdir / "pytest.ini").write_text("[pytest]\naddopts = -ra -q\n")
    here = venv_first()
    result = capture(
        cli, workdir, "pytest", "-qx", "tests/test_x.py", options=("--no-verify",), env=here
    )
    assert "narrowed" not in result.stdout
    assert "whole command" not in result.stdout
    document = spec_document(workdir)
    node = "tests/test_x.py::test_crash"
    assert document["title"] == f"{node}: SIGSEGV in get (pkg/core.py:5)", document
    assert document["command"] == "pytest -x tests/test_x.py -v -v"
    assert len(list((tmp_path / "out" / "runs").iterdir())) == 1  # the capture's run alone


def cast_list(value: JsonValue) -> list[JsonValue]:
    assert isinstance(value, list), value
    return value


def test_a_parametrized_tests_segfault_with_spaces_in_its_id_names_the_whole_id(
    cli: Cli, tmp_path: Path
) -> None:
    """pt35: the pytest preset's `\\S+` read `test_x[a b]` as `test_x[a`: the title and the
    phase named no test, and the rerun alone ran a node id pytest did not find (exit 4),
    so the spec kept the whole command. The id is read whole, and the spec runs it alone."""
    workdir = tmp_path / "proj"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "tests" / "test_p.py").write_text(
        "import ctypes\n\nimport pytest\n\n\n"
        "@pytest.mark.parametrize('v', ['ok', 'a b', 'after'])\n"
        "def test_x(v):\n    if v == 'a b':\n        ctypes.string_at(0)\n"
    )
    here = venv_first()
    result = capture(cli, workdir, "pytest", "-q", "tests/test_p.py", env=here)
    node = "tests/test_p.py::test_x[a b]"
    assert f"wrote spec.yaml: crash:SIGSEGV:main:{node}:" in result.stdout, result.stdout
    assert f"narrowed to the test that crashed: {node} alone crashed" in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["title"] == f"{node}: SIGSEGV in test_x (tests/test_p.py:9)", document
    assert document["command"] == f"pytest '{node}' -v"
    expect = document["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == node


@pytest.mark.parametrize(
    "launcher",
    [("uv", "run", "--with", "pytest-xdist"), (sys.executable, "-X", "dev", "-m")],
    ids=["uv-run-with", "python-X"],
)
def test_a_pytest_run_by_a_launcher_with_options_names_the_test_that_crashed(
    cli: Cli, tmp_path: Path, launcher: tuple[str, ...]
) -> None:
    """pt35: `uv run --with pytest-xdist pytest ...` read `pytest-xdist` as the program, and
    `python -X dev -m pytest` read `dev` as a script: no pytest, no -v, the spec named no
    test. uv is a stand-in here (a real process that drops its options and runs the rest,
    as `uv run` does in an environment that has them)."""
    uv = (
        '#!/bin/sh\nshift\nwhile [ $# -gt 0 ]; do\n  case "$1" in\n'
        "    --with) shift 2 ;;\n    -*) shift ;;\n    *) break ;;\n  esac\ndone\n"
        'exec "$@"\n'
    )
    _names_the_crashed_test(cli, tmp_path, "uv", uv, (*launcher, "pytest"))


def _names_the_crashed_test(
    cli: Cli, tmp_path: Path, name: str, script: str, words: tuple[str, ...]
) -> None:
    """Capture of `WORDS -q tests/test_x.py` (a test that segfaults), `name` on PATH a
    stand-in launcher (`script`): the spec names the test, narrowed, run with -v."""
    workdir = tmp_path / "proj"
    _pytest_project(workdir)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / name).write_text(script)
    (bin_dir / name).chmod(0o755)
    result = capture(cli, workdir, *words, "-q", "tests/test_x.py", env=venv_first(bin_dir))
    node = "tests/test_x.py::test_crash"
    assert f"wrote spec.yaml: crash:SIGSEGV:main:{node}:" in result.stdout, result.stdout
    assert f"narrowed to the test that crashed: {node} alone" in result.stdout
    document = spec_document(workdir)
    assert str(document["command"]).endswith(f"pytest {node} -v"), document["command"]
    assert document["markers"] == [{"preset": "pytest"}]


@pytest.mark.parametrize(
    "launcher",
    [
        ("hatch", "--env=test", "run"),
        ("hatch", "-etest", "run"),
        ("hatch", "run", "+py=3.11", "test:"),
    ],
    ids=["env-equals", "e-joined", "matrix-selector"],
)
def test_a_pytest_run_by_hatch_with_its_options_names_the_test_that_crashed(
    cli: Cli, tmp_path: Path, launcher: tuple[str, ...]
) -> None:
    """pt42: `hatch --env=test run pytest`, `hatch -etest run pytest` and `hatch run
    +py=3.11 test:pytest` were read as no pytest: no -v, the spec named no test. hatch is a
    stand-in here (a real process that drops its options and selectors and the program's
    `ENV:`, and runs the rest, as hatch does in an environment that has pytest)."""
    hatch = (
        '#!/bin/sh\nwhile [ "$1" != run ]; do shift; done\nshift\n'
        'while [ $# -gt 0 ]; do\n  case "$1" in\n    [+-]*) shift ;;\n    *) break ;;\n'
        '  esac\ndone\nprogram="${1#*:}"\nshift\nexec "$program" "$@"\n'
    )
    *before, last = launcher
    words = (*before, f"{last}pytest") if last.endswith(":") else (*launcher, "pytest")
    _names_the_crashed_test(cli, tmp_path, "hatch", hatch, words)


def test_a_crashing_test_whose_id_holds_a_bracket_is_named_whole_from_merged_output(
    cli: Cli, tmp_path: Path
) -> None:
    """`pytest -v 2>&1`: the crash's line, `t.py::test_y[a] b] Fatal Python error: ...`,
    gave the phase `t.py::test_y[a]`, the id cut at its first `]` (lo37)."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "test_p.py").write_text(
        "import ctypes\nimport pytest\n\n\ndef test_ok():\n    pass\n\n\n"
        "@pytest.mark.parametrize('v', ['a] b'])\n"
        "def test_y(v):\n    ctypes.string_at(0)\n"
    )
    (workdir / "run.sh").write_text("pytest -v test_p.py 2>&1\n")
    here = venv_first()
    result = capture(cli, workdir, "sh", "run.sh", options=("--no-verify",), env=here)
    assert "wrote spec.yaml: crash:SIGSEGV:main:test_p.py::test_y[a] b]:" in result.stdout
    expect = spec_document(workdir)["expect"]
    assert isinstance(expect, dict)
    assert expect["phase"] == "test_p.py::test_y[a] b]"


def test_a_failing_pytest_test_is_narrowed_to_its_node_id(cli: Cli, tmp_path: Path) -> None:
    """pt35: a failing test (no crash) was named, but the spec ran the whole command. It is
    rerun alone, failed the same way, and the spec runs it alone."""
    workdir = tmp_path / "proj"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "tests" / "test_f.py").write_text(
        "import pytest\n\n\ndef test_before():\n    pass\n\n\n"
        "@pytest.mark.parametrize('s', ['ok', 'foo bar'])\n"
        "def test_y(s):\n    assert s == 'ok', s\n\n\ndef test_after():\n    pass\n"
    )
    here = venv_first()
    result = capture(cli, workdir, "pytest", "-q", "tests/test_f.py", env=here)
    node = "tests/test_f.py::test_y[foo bar]"
    assert f"wrote spec.yaml: error:AssertionError:{node} in 1/1" in result.stdout, result.stdout
    assert f"narrowed to the test that failed: {node} alone failed the same way" in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    assert spec_document(workdir)["command"] == f"pytest '{node}' -v"


def test_a_hanging_pytest_test_is_narrowed_within_a_bound_of_its_own(
    cli: Cli, tmp_path: Path
) -> None:
    """pt35: a hung test was named, but the spec ran the whole command. Its rerun alone
    gets a timeout of its own, not the spec's 25 s: as long as the first run left it
    unended (pt40: not start-up and a 10 s stall, which called a test that alone is merely
    slow a hang), so the 8 s test before it (after the first) is not waited for again. It
    hung alone, and the spec runs it alone, keeping its 25 s timeout."""
    workdir = tmp_path / "proj"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "tests" / "test_hang.py").write_text(
        "import time\n\n\ndef test_first():\n    pass\n\n\n"
        "def test_slow():\n    time.sleep(8)\n\n\n"
        "def test_stuck():\n    time.sleep(1000)\n\n\ndef test_last():\n    pass\n"
    )
    here = venv_first()
    result = capture(
        cli, workdir, "pytest", "-q", "tests/test_hang.py", options=("--timeout", "25s"), env=here
    )
    node = "tests/test_hang.py::test_stuck"
    assert f"wrote spec.yaml: hang:{node} in 1/1" in result.stdout, result.stdout
    narrowed = re.search(
        rf"narrowed to the test that hung: {re.escape(node)} alone hung the same way \(1/1 "
        r"attempt, run \S+, (?P<took>[\d.]+) s: a hang if unended at (?P<bound>\d+)s, as "
        r"long as it went unended with the others\), so the spec runs it alone",
        result.stdout,
    )
    assert narrowed is not None, result.stdout
    assert 16 < int(narrowed["bound"]) < 25
    assert float(narrowed["took"]) < 25
    # Said before the rerun: how long it may wait, the bound the result line gives.
    assert (
        f"reprospec: rerunning {node} alone, to see whether it hangs without the others (a "
        f"hang is called after {narrowed['bound']}s: as long as it went unended with them)"
    ) in result.stderr, result.stderr
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["command"] == f"pytest {node} -v"
    assert document["run"] == {"timeout": "25s"}


def test_the_first_pytest_test_that_hangs_is_named_and_narrowed(cli: Cli, tmp_path: Path) -> None:
    """pt40: the first test of five hung: no test had ended before it, so the first run gave
    no bound of start-up and a stall, and the spec ran the whole command. Its rerun alone
    waits the timeout, as long as the first run left it unended; the spec runs it alone,
    and its description says where the stack shows the test hung."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "test_h.py").write_text(
        "import time\n\n\ndef test_one():\n    time.sleep(1000)\n"
        + "".join(f"\n\ndef test_{n}():\n    pass\n" for n in range(2, 6))
    )
    here = venv_first()
    result = capture(
        cli, workdir, "pytest", "-q", "test_h.py", options=("--timeout", "8s"), env=here
    )
    node = "test_h.py::test_one"
    assert f"wrote spec.yaml: hang:{node} in 1/1" in result.stdout, result.stdout
    assert (
        f"reprospec: rerunning {node} alone, to see whether it hangs without the others (a "
        "hang is called at the 8s timeout)"
    ) in result.stderr, result.stderr
    assert re.search(
        rf"narrowed to the test that hung: {re.escape(node)} alone hung the same way \(1/1 "
        r"attempt, run \S+, [\d.]+ s: a hang if unended at the spec's 8s timeout\), so the "
        "spec runs it alone",
        result.stdout,
    ), result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["command"] == f"pytest {node} -v"
    # The signature names the test (its -v line, left unended): its place is added, not
    # its name again (pt42).
    description = str(document["description"])
    assert f"`hang:{node}`" in description, description
    assert description.rstrip().endswith("; the test was at test_h.py:5"), description


def test_a_test_that_alone_is_only_slow_is_not_narrowed_as_a_hang(cli: Cli, tmp_path: Path) -> None:
    """pt40: a test that hangs after another (state it left) but alone sleeps 14 s and
    passes was rerun alone at start-up and a 10 s stall, killed, and called "hung alone":
    the spec ran it alone, and it passed. Rerun as long as the first run left it unended,
    it passes: the spec runs the whole command, and says why."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "test_s.py").write_text(
        "import time\n\nSTATE = {}\n\n\ndef test_first():\n    STATE['x'] = 1\n\n\n"
        "def test_slow():\n    time.sleep(1000 if STATE else 14)\n"
    )
    here = venv_first()
    result = capture(
        cli, workdir, "pytest", "-q", "test_s.py", options=("--timeout", "25s"), env=here
    )
    node = "test_s.py::test_slow"
    assert f"wrote spec.yaml: hang:{node} in 1/1" in result.stdout, result.stdout
    assert re.search(
        rf"the spec runs the whole command: {re.escape(node)} alone did not hang the same way "
        r"\(0/1 attempt, run \S+, [\d.]+ s: a hang if unended at the spec's 25s timeout; it "
        r"ended pass\)",
        result.stdout,
    ), result.stdout
    assert spec_document(workdir)["command"] == "pytest test_s.py -v"


def _captured_hang(
    cli: Cli, tmp_path: Path, module: str, source: str, test: str, timeout: str
) -> tuple[Path, CliResult, str]:
    """`capture --timeout TIMEOUT pytest -q MODULE` in a project of that one module, whose
    TEST hung in the first run: the project, the result, the hung test's node id."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / module).write_text(source)
    result = capture(
        cli, workdir, "pytest", "-q", module, options=("--timeout", timeout), env=venv_first()
    )
    node = f"{module}::{test}"
    assert f"wrote spec.yaml: hang:{node} in 1/1" in result.stdout, result.stdout
    return workdir, result, node


def _rerun_at_the_timeout(result: CliResult, node: str, timeout: str) -> str:
    """The bound the rerun alone was given, said before it ran, where it was still using
    CPU there and capture said it reruns the test at the spec's timeout."""
    said = re.search(
        r"a hang is called after (?P<bound>\d+)s: as long as it went unended with them",
        result.stderr,
    )
    assert said is not None, result.stderr
    assert (
        f"reprospec: {node} alone was still using CPU at the bound (slow work, or a busy "
        f"loop), not still as a hang: rerunning it at the spec's {timeout} timeout"
    ) in result.stderr, result.stderr
    return said["bound"]


def test_a_hang_whose_short_bound_holds_its_reruns_start_up_is_narrowed_at_it(
    cli: Cli, tmp_path: Path
) -> None:
    """A test that hangs as the spec's timeout nears (a 19 s test before it, by the clock of
    its process) is rerun alone within a bound of a few seconds, which pytest's own start-up
    (its imports, the collection) takes much of: that CPU is no work of the test's, and the
    still hang is narrowed at its bound, where before the start-up read as moving and the
    rerun waited the spec's whole timeout again."""
    _, result, node = _captured_hang(
        cli,
        tmp_path,
        "test_l.py",
        "import os, time\n\n\ndef _age():\n"
        "    stat = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n"
        "    began = int(stat[19]) / os.sysconf('SC_CLK_TCK')\n"
        "    return time.clock_gettime(time.CLOCK_BOOTTIME) - began\n\n\n"
        "def test_zero():\n    pass\n\n\n"
        "def test_first():\n    time.sleep(max(0.0, 19.0 - _age()))\n\n\n"
        "def test_stuck():\n    time.sleep(1000)\n",
        "test_stuck",
        "21s",
    )
    narrowed = re.search(
        rf"narrowed to the test that hung: {re.escape(node)} alone hung the same way \(1/1 "
        r"attempt, run \S+, [\d.]+ s: a hang if unended at (?P<bound>\d+)s, as long as it "
        r"went unended with the others\), so the spec runs it alone",
        result.stdout,
    )
    assert narrowed is not None, result.stdout + result.stderr
    # At its short bound (a few seconds here, 11 under a doubled load), not the spec's 21 s.
    assert int(narrowed["bound"]) < 21, result.stdout
    assert "still using CPU" not in result.stderr, result.stderr


def test_a_test_that_alone_works_past_its_bound_is_rerun_at_the_timeout(
    cli: Cli, tmp_path: Path
) -> None:
    """pt42: a test that hangs after a 25 s one (state it left) but alone sleeps and works in
    steps for 35 s and passes was rerun alone within the bound the first run left it
    unended (28 s), killed there still working, and called "hung alone": the spec ran it
    alone, and it passed. Its CPU time rose up to the bound: no still hang, so it is rerun
    at the spec's 50 s timeout, passes, and the spec runs the whole command."""
    workdir, result, node = _captured_hang(
        cli,
        tmp_path,
        "test_w.py",
        "import time\n\nSTATE = {}\n\n\ndef test_zero():\n    pass\n\n\n"
        "def test_first():\n    time.sleep(25)\n    STATE['x'] = 1\n\n\n"
        "def test_work():\n"
        "    if STATE:\n        time.sleep(1000)\n"
        "    end = time.monotonic() + 35\n"
        "    while time.monotonic() < end:\n"
        "        time.sleep(0.4)\n"
        "        spent = time.process_time() + 0.1\n"
        "        while time.process_time() < spent:\n            pass\n",
        "test_work",
        "50s",
    )
    bound = _rerun_at_the_timeout(result, node, "50s")
    assert int(bound) < 35, result.stderr
    assert re.search(
        rf"the spec runs the whole command: {re.escape(node)} alone did not hang the same way "
        r"\(0/1 attempt, run \S+, [\d.]+ s: a hang if unended at the spec's 50s timeout; at "
        rf"the {bound}s bound it was still using CPU, so it was rerun at the spec's "
        r"timeout; it ended pass\)",
        result.stdout,
    ), result.stdout
    assert spec_document(workdir)["command"] == "pytest test_w.py -v"


def test_a_busy_looping_test_is_rerun_at_the_timeout_and_narrowed(cli: Cli, tmp_path: Path) -> None:
    """pt42: a hang that spins (`while True: pass`) uses CPU at its bound as slow work does,
    and CPU time cannot tell them apart: it is rerun at the spec's timeout, the first run's
    own wait, hangs there too, and the spec runs it alone."""
    workdir, result, node = _captured_hang(
        cli,
        tmp_path,
        "test_b.py",
        "import time\n\n\ndef test_zero():\n    pass\n\n\n"
        "def test_first():\n    time.sleep(8)\n\n\n"
        "def test_spin():\n    while True:\n        pass\n",
        "test_spin",
        "20s",
    )
    bound = _rerun_at_the_timeout(result, node, "20s")
    assert re.search(
        rf"narrowed to the test that hung: {re.escape(node)} alone hung the same way \(1/1 "
        r"attempt, run \S+, [\d.]+ s: a hang if unended at the spec's 20s timeout; at the "
        rf"{bound}s bound it was still using CPU, so it was rerun at the spec's "
        r"timeout\), so the spec runs it alone",
        result.stdout,
    ), result.stdout
    assert spec_document(workdir)["command"] == f"pytest {node} -v"


def test_a_pytest_hang_at_collection_says_the_module_it_was_collecting(
    cli: Cli, tmp_path: Path
) -> None:
    """pt40: a test module whose import hangs (an `import wandb` that never returns) was a
    hang that named nothing of pytest's: its stack says the module pytest was collecting,
    and the import it sat in."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "slowmod.py").write_text("import time\n\ntime.sleep(1000)\n")
    (workdir / "test_a.py").write_text("def test_a():\n    pass\n")
    (workdir / "test_c.py").write_text("import slowmod\n\n\ndef test_c():\n    pass\n")
    here = venv_first()
    options = ("--no-verify", "--timeout", "8s")
    result = capture(cli, workdir, "pytest", "-q", ".", options=options, env=here)
    assert "wrote spec.yaml: hang in 1/1" in result.stdout, result.stdout
    assert "; pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:3)" in str(
        spec_document(workdir)["description"]
    )


@pytest.mark.parametrize("two", [False, True], ids=["one", "two"])
def test_a_pytest_xdist_hang_names_the_test_its_workers_had_not_ended(
    cli: Cli, tmp_path: Path, two: bool
) -> None:
    """pt35: under `-n 2` the phase of a hang was -v's last test line, any worker's: test_c,
    which another worker started and passed after test_hang began. Now it is the test the
    workers had started and not ended; where two hung (one on each worker, no test
    ended), none is named and the spec's description lists both."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "test_h.py").write_text(
        "import time\n\n\ndef test_one():\n    time.sleep(1000)\n\n\n"
        "def test_two():\n    time.sleep(1000)\n"
        if two
        else "import time\n\n\ndef test_a():\n    time.sleep(0.5)\n\n\n"
        "def test_hang():\n    time.sleep(1000)\n\n\n"
        "def test_b():\n    time.sleep(1)\n\n\ndef test_c():\n    pass\n"
    )
    here = venv_first()
    options = ("--no-verify", "--timeout", "25s")
    result = capture(
        cli, workdir, "pytest", "-n", "2", "-p", "no:cacheprovider", "test_h.py",
        options=options, env=here,
    )  # fmt: skip
    document = spec_document(workdir)
    expect = document["expect"]
    assert isinstance(expect, dict)
    if not two:
        assert "wrote spec.yaml: hang:test_h.py::test_hang in 1/1" in result.stdout, result.stdout
        assert expect["phase"] == "test_h.py::test_hang"
    else:
        assert "wrote spec.yaml: hang in 1/1" in result.stdout, result.stdout
        assert "phase" not in expect
        assert "pytest-xdist's workers were running 2 tests: " in str(document["description"])


def test_an_error_is_titled_with_the_frame_that_raised_it(cli: Cli, tmp_path: Path) -> None:
    """A live capture titled an error `pkg.run: IndexError`, where a crash's title
    names the frame it died in (`SIGSEGV in read (app.py:30)`). Its traceback's innermost
    frame of the workdir's code names it; of chained exceptions, the one that ended it."""
    workdir = tmp_path / "work"
    (workdir / "pkg").mkdir(parents=True)
    (workdir / "pkg" / "__init__.py").write_text("")
    (workdir / "pkg" / "helpers.py").write_text("def pick(xs, i):\n    return xs[i]\n")
    (workdir / "pkg" / "run.py").write_text(
        "from pkg.helpers import pick\n\n\n"
        "def main():\n"
        "    try:\n        {}['a']\n    except KeyError:\n        print(pick([1, 2], 5))\n\n\n"
        "main()\n"
    )
    result = capture(cli, workdir, sys.executable, "-m", "pkg.run")
    assert "verdict reproduced" in result.stdout, result.stdout
    document = spec_document(workdir)
    assert document["title"] == "pkg.run: IndexError in pick (pkg/helpers.py:2)", document


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")
def test_a_137_a_timeout_gave_is_captured_as_the_error_a_rerun_reads(
    cli: Cli, tmp_path: Path
) -> None:
    """A launcher's 137 for a SIGKILL it sent (`timeout --foreground -s KILL`), with
    no OOM kill counted on the machine, is `error` exit 137 (rule 4): capture wrote
    `crash SIGKILL`, now the error's exit code, a comment saying why and when a run reads
    it otherwise, and the verify rerun reads the same. The suite's real OOM kills may run
    beside it: tried again where the machine counted one, else skipped."""
    step = "import time; time.sleep(30)"
    # --preserve-status: its exit is the program's, so capture keeps the wrapper (a plain
    # `timeout` is the run's timeout instead: test_a_hang_under_timeout_...).
    argv = ["timeout", "--foreground", "--preserve-status", "-s", "KILL", "1"]
    argv += [sys.executable, "-c", step]
    for again in range(4):
        before = machine_oom_kills()
        if before is None:
            pytest.skip("this kernel counts no OOM kills (/proc/vmstat)")
        workdir = tmp_path / f"try-{again}"
        workdir.mkdir()
        # Not `capture`, which asserts its exit: another process's OOM kill counted during
        # one of its runs makes that run's SIGKILL a crash (rightly: the kill may have been
        # the attempt's), so the verify misses; that try is not this test's to judge.
        result = cli(
            "capture", "-o", "spec.yaml", "--out", str(workdir / "out"), "--timeout", "20s",
            "--", *argv, cwd=workdir,
        )  # fmt: skip
        if machine_oom_kills() == before:
            break
    else:
        pytest.skip("other processes of this machine were OOM-killed meanwhile, at every try")
    assert result.code == 0, result.stdout + result.stderr
    assert "wrote spec.yaml: error:exit-137 in 1/1 attempt" in result.stdout, result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    expect = spec_document(workdir)["expect"]
    assert expect == {"outcome": "error", "exit_code": 137}, expect
    assert (
        # `--foreground`'s timeout reaps its own step: the run saw no kill, only the 137.
        "exit_code: 137  # 128 + SIGKILL, or a program's own exit status (no OOM kill during "
        "the attempt): not a crash; a crash SIGKILL where the machine counts an OOM kill as it runs"
    ) in (workdir / "spec.yaml").read_text()


def test_a_wrappers_options_and_the_interpreters_code_are_no_axes(cli: Cli, tmp_path: Path) -> None:
    # Before: `timeout --foreground -s KILL 1 python3 -c CODE` wrote the axes
    # `foreground: [true]`, `s: [KILL]` and `c: [CODE]`: the wrapper's options and the
    # interpreter's code read as the program's settings.
    workdir = tmp_path / "wrapped"
    workdir.mkdir()
    sleep = "import time; time.sleep(30)"
    argv = (
        "timeout",
        "--foreground",
        "--preserve-status",
        "-s",
        "KILL",
        "1",
        "python3",
        "-c",
        sleep,
    )
    capture(cli, workdir, *argv, options=("--no-verify",))
    document = spec_document(workdir)
    assert "matrix" not in document, document.get("matrix")
    assert document["command"] == shlex.join(argv)
    # A real crash under two wrappers: the program's own `--lr` is still an axis, read back.
    crash = "import ctypes; ctypes.string_at(0)"
    wrapped: tuple[str, ...] = ("timeout", "--preserve-status", "-k", "5", "60")
    wrapped += ("nice", "-n", "5", "python3", "-X", "faulthandler")
    capture(cli, workdir, *wrapped, "-c", crash, "--lr", "0.1", options=("--no-verify", "--force"))
    assert axes(workdir) == {"lr": [0.1]}
    command = spec_document(workdir)["command"]
    assert command == f"{shlex.join(wrapped)} -c {shlex.quote(crash)} --lr ${{{{ matrix.lr }}}}"
    expect = spec_document(workdir)["expect"]
    assert isinstance(expect, dict)
    assert expect["signal"] == "SIGSEGV"


def test_a_pytest_command_pins_pytest_and_says_its_plugins(cli: Cli, tmp_path: Path) -> None:
    # Before: `packages it imported: pytest-xdist==...`, and only that was pinned: pytest,
    # the program the command runs, was dropped as a requirement of the plugin.
    from importlib.metadata import version

    workdir = tmp_path / "work"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "tests" / "test_x.py").write_text(
        "import ctypes\n\n\ndef test_ok():\n    pass\n\n\n"
        "def test_crash():\n    ctypes.string_at(0)\n"
    )
    pytest_script = str(Path(sys.executable).parent / "pytest")
    argv = (pytest_script, "-q", "-x", "-p", "no:cacheprovider", "tests/test_x.py")
    result = capture(cli, workdir, *argv, options=("--timeout", "60s", "--no-verify"))
    said = result.stdout + result.stderr
    pytest_pin, xdist_pin = (
        f"pytest=={version('pytest')}",
        f"pytest-xdist=={version('pytest-xdist')}",
    )
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    packages = environment["packages"]
    assert isinstance(packages, list)
    assert pytest_pin in packages, packages
    assert xdist_pin in packages, packages
    assert f"the program it ran: {pytest_pin}" in said, said
    plugins = next(line for line in said.splitlines() if "through entry points:" in line)
    assert xdist_pin in plugins
    imported = [line for line in said.splitlines() if line.startswith("packages it imported")]
    assert not any("pytest-xdist" in line for line in imported), imported


def _wrapped_workdir(tmp_path: Path) -> Path:
    """A program failing by its `--lr`, a test failing beside one passing, a shell script
    running the program: the commands captured wrapped and unwrapped."""
    workdir = tmp_path / "work"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "helper.py").write_text("X = 1\n")
    (workdir / "prog.py").write_text(
        "import argparse\n\nimport helper\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float)\n"
        "raise ValueError(f'bad lr {parser.parse_args().lr} {helper.X}')\n"
    )
    (workdir / "run.sh").write_text("set -e\npython3 prog.py --lr 0.2\n")
    (workdir / "tests" / "test_x.py").write_text(
        "import helper\n\n\ndef test_ok():\n    pass\n\n\n"
        "def test_bad():\n    assert helper.X == 2\n"
    )
    return workdir


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")
def test_an_env_inside_a_wrapper_is_read_past_to_the_programs_own_axes(
    cli: Cli, tmp_path: Path
) -> None:
    # Before: `timeout 5 env -i python3 prog.py --lr 0.1` wrote the axes `i: [python3]` and
    # `lr`, its command `timeout 5 env -i ${{ matrix.i }} prog.py ...`: the env after the
    # wrapper was read as its program, its `-i` as the program's option.
    workdir = _wrapped_workdir(tmp_path)
    plain = ("env", "-i", "python3", "prog.py", "--lr", "0.1")
    capture(cli, workdir, *plain, options=("-o", "plain.yaml"))
    wrapper = ("timeout", "--preserve-status", "5")  # kept as written (not the run's timeout)
    result = capture(cli, workdir, *wrapper, *plain)
    assert "verdict reproduced" in result.stdout, result.stdout
    assert "axes from the command: lr=0.1" in result.stdout, result.stdout
    # What `env -i` takes from the program is said of the wrapped one too.
    assert "`env -i` empties the program's environment" in result.stdout, result.stdout
    wrapped, unwrapped = spec_document(workdir), spec_document(workdir, "plain.yaml")
    assert wrapped["matrix"] == unwrapped["matrix"] == {"lr": [0.1]}
    assert wrapped["command"] == f"{shlex.join(wrapper)} {unwrapped['command']}"
    assert wrapped["expect"] == unwrapped["expect"]


# The commands whose capture is compared wrapped and unwrapped: a pytest run (its test's
# node id, pins and plugins), a Python script by the interpreter's path (run as `python`),
# and a shell script (the spec's name and title are the script's).
_UNWRAPPED = (
    ("python3", "-m", "pytest", "-p", "no:cacheprovider", "tests/test_x.py"),
    (sys.executable, "prog.py", "--lr", "0.1"),
    ("sh", "run.sh"),
)


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")
@pytest.mark.parametrize("plain", _UNWRAPPED, ids=("pytest", "interpreter-path", "shell"))
def test_a_wrapped_command_is_captured_as_without_its_wrapper(
    cli: Cli, tmp_path: Path, plain: tuple[str, ...]
) -> None:
    # Before: `timeout 60 python3 -m pytest tests/test_x.py` was no pytest run (expect
    # `exit_code: 1`, no test's node id, not narrowed to it), `timeout 60 /venv/bin/python
    # prog.py` kept the path of this machine, `timeout 60 sh run.sh` was named `timeout`:
    # each reader looked at the command's first word.
    workdir = _wrapped_workdir(tmp_path)
    env = venv_first()
    said = capture(cli, workdir, *plain, options=("-o", "plain.yaml"), env=env).stdout
    # --preserve-status: kept as written (a plain `timeout` is the run's timeout instead).
    wrapper = ("nice", "-n", "5", "timeout", "--preserve-status", "-s", "KILL", "60")
    result = capture(cli, workdir, *wrapper, *plain, env=env)
    assert "verdict reproduced" in result.stdout, result.stdout
    wrapped, unwrapped = dict(spec_document(workdir)), dict(spec_document(workdir, "plain.yaml"))
    assert wrapped.pop("command") == f"{shlex.join(wrapper)} {unwrapped.pop('command')}"
    described, description = wrapped.pop("description"), unwrapped.pop("description")
    assert isinstance(described, str)
    assert isinstance(description, str)
    assert described.replace(f"`{shlex.join(wrapper)} ", "`") == description
    assert wrapped == unwrapped
    # And what capture says of them but the runs' ids and the spec's name.
    lines = [re.sub(r"\d{8}-\d{6}-[\w-]+", "RUN", line) for line in result.stdout.splitlines()]
    alone = [re.sub(r"\d{8}-\d{6}-[\w-]+", "RUN", line) for line in said.splitlines()]
    assert [line.replace("spec.yaml", "S") for line in lines] == [
        line.replace("plain.yaml", "S") for line in alone
    ]
    if plain[0] == "python3":
        expect = wrapped["expect"]
        assert isinstance(expect, dict)
        assert expect["phase"] == "tests/test_x.py::test_bad"
        assert "tests/test_x.py::test_bad -v" in str(spec_document(workdir)["command"])


def test_hypothesis_pytest_plugin_is_no_package_a_test_imported(cli: Cli, tmp_path: Path) -> None:
    # Before: `packages it imported: hypothesis==...` for a test that never imports it: its
    # pytest plugin, `_hypothesis_pytestplugin` (a top-level module of its own, loaded by
    # pytest through importlib, which no import records), imports hypothesis at the
    # terminal summary, so hypothesis was pinned as the program's own import.
    pytest.importorskip("hypothesis")
    from importlib.metadata import version

    workdir = _wrapped_workdir(tmp_path)
    argv = ("python3", "-m", "pytest", "-p", "no:cacheprovider", "tests/test_x.py")
    result = capture(cli, workdir, *argv, options=("--no-verify",), env=venv_first())
    said = result.stdout.splitlines()
    pin = f"hypothesis=={version('hypothesis')}"
    imported = [line for line in said if line.startswith("packages it imported")]
    assert not any("hypothesis" in line for line in imported), imported
    plugins = [line for line in said if "loaded through entry points:" in line]
    assert len(plugins) == 1, said
    assert pin in plugins[0]
    environment = spec_document(workdir)["environment"]
    assert isinstance(environment, dict)
    packages = environment["packages"]
    assert isinstance(packages, list)
    assert pin in packages, packages  # pytest loads it in a reader's run too
    # Run with it blocked, the plugin never loads, and hypothesis is not pinned at all.
    blocked = ("python3", "-m", "pytest", "-p", "no:hypothesispytest", *argv[3:])
    result = capture(cli, workdir, *blocked, options=("--no-verify", "--force"), env=venv_first())
    assert "hypothesis" not in result.stdout, result.stdout


def test_a_module_only_a_plugin_imports_is_not_said_as_the_programs(
    cli: Cli, tmp_path: Path
) -> None:
    # Before: `packages it imported: typing_extensions==...` for a test that imports only
    # hypothesis, whose modules import typing_extensions: every module any process looked
    # for was said as the program's import. Now what its own code imports (its
    # test module read with the one reader of imports) is said apart from what its
    # libraries did; both stay pinned, as they ran. A direct import is kept.
    pytest.importorskip("hypothesis")
    pytest.importorskip("typing_extensions")
    from importlib.metadata import version

    pin = f"typing_extensions=={version('typing_extensions')}"
    test = (
        "from hypothesis import given, settings, strategies as st\n{extra}\n\n"
        "@settings(database=None)\n@given(st.integers())\n"
        "def test_zero(x):\n    assert x * 0 == 1\n"
    )
    for extra, own in (("", False), ("import typing_extensions", True)):
        workdir = tmp_path / str(own) / "work"
        workdir.mkdir(parents=True)
        (workdir / "test_h.py").write_text(test.format(extra=extra))
        argv = ("python3", "-m", "pytest", "-p", "no:cacheprovider", "-x", "test_h.py")
        result = capture(cli, workdir, *argv, options=("--no-verify",), env=venv_first())
        said = result.stdout.splitlines()
        imported = [line for line in said if line.startswith("packages it imported")]
        pulled = [line for line in said if line.startswith("packages its libraries imported")]
        assert any(pin in line for line in imported) is own, said
        assert any(pin in line for line in pulled) is not own, said
        environment = spec_document(workdir)["environment"]
        assert isinstance(environment, dict)
        assert pin in environment["packages"], environment  # type: ignore[operator]


def test_a_literal_expression_opener_in_the_command_reaches_the_program_as_written(
    cli: Cli, tmp_path: Path
) -> None:
    # A new user's trial: `capture -- python app.py --msg '${{ oops }}'` exited 2 with an
    # error located in its own spec (`unknown name 'oops'`): the word was copied into
    # `command:` as an expression. Written escaped, the verify's rerun gets the text itself.
    workdir = tmp_path / "app"
    workdir.mkdir()
    (workdir / "app.py").write_text(
        "import sys\nsys.exit(3 if sys.argv[1:] == ['--msg', '${{ oops }}'] else 0)\n"
    )
    result = capture(cli, workdir, "python", "app.py", "--msg", "${{ oops }}")
    assert "came back in 1/1 attempt" in result.stdout, result.stdout
    assert spec_document(workdir)["expect"] == {"outcome": "error", "exit_code": 3}


def test_the_header_writes_a_command_of_several_lines_as_the_one_that_ran(
    cli: Cli, tmp_path: Path
) -> None:
    # A comment holds no line break: a `-c` program of two lines read `-c 'import os
    # os.abort()'` in the header, a SyntaxError, not the command that ran; a spec path with
    # a line break in the observe note named another file.
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "app.py").write_text("import os, sys\nif sys.argv[2] == '1':\n    os.abort()\n")
    code = "import os\nos.abort()"
    capture(cli, workdir, "python", "-c", code, options=("--no-verify",))
    header = (workdir / "spec.yaml").read_text().split("\nreprospec: 1\n")[0]
    said, written = header.split("\n")[:2]
    assert said.startswith("# Written by this command (run "), header
    assert written.startswith("#   reprospec capture -- python -c $'import os\\n"), header
    typed = written.split("-- ", 1)[1]
    assert shell_split(typed) == ["python", "-c", code]
    # A long command is written whole on its line: wrapped in the sentence, it broke
    # mid-backquote over comment lines that could not be pasted back.
    name = "odd\nname.yaml"
    long = ("python", "app.py", "--mode", "1", "--output-directory", "my results/" + "run " * 12)
    done = cli(
        "capture", "-o", name, "--out", str(tmp_path / "out"), "--no-verify", "--", *long,
        cwd=workdir,
    )  # fmt: skip
    assert done.code == 0, done.stderr
    lines = (workdir / name).read_text().split("\n")
    assert shell_split(lines[1].removeprefix("#   reprospec capture -- ")) == list(long)
    observe = next(line for line in lines if "--observe" in line)
    assert observe == f"# {observe_line(shell_line([name]))}", lines[:8]
    assert shell_split(observe.split("reprospec run ")[1])[0] == name
