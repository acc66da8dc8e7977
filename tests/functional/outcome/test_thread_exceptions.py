"""The exception that ended the process decides the verdict, not a thread's traceback.

A program whose threads die of an exception as its main thread does prints their
tracebacks (threading.excepthook's `Exception in thread ...:` blocks) and the main
thread's on one stderr at the same moment, interleaved a line or a character at a time.
Read from stderr, the exception of the attempt was a thread's TypeError, none, or the
RuntimeError with the threads' lines for its message: `not-reproduced` for a program that
dies of its RuntimeError every time. The engine's sitecustomize now records the main
thread's uncaught exception (raised-PID.txt) and classify reads that first.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli
from tests.support.threadexc import PROGRAM, seen

REPEAT = 12


def _spec(
    tmp_path: Path, name: str, command: str, expect: str, run: str = "", environment: str = ""
) -> Path:
    (tmp_path / "conc.py").write_text(PROGRAM)
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(
        "reprospec: 1\n"
        f"name: {name}\n"
        f"environment: {{workdir: {tmp_path}{environment}}}\n"
        f"command: {command}\n"
        f"run: {{timeout: 60s, repeat: {REPEAT}{run}}}\n"
        f"expect: {expect}\n"
    )
    return spec


def test_the_main_threads_exception_and_its_chain_decide_under_interleaving(
    cli: Cli, tmp_path: Path
) -> None:
    # A `python` root, a shell that forks its one program (`cd . &&`: dash forks it, the
    # record is its child's), that shell under a perturbation (launch.py applies `nice`
    # and execs it), and a fork of a preload server: the same every attempt.
    expect = '{outcome: error, exception: RuntimeError, message: "main failed"}'
    for name, command, run, environment in (
        ("root", "python conc.py main", "", ""),
        ("shell", '"cd . && python conc.py main"', "", ""),
        ("niced", '"cd . && python conc.py main"', "", ", perturb: {nice: 5}"),
        ("forked", "python conc.py main", ", preload: [json]", ""),
    ):
        spec = _spec(tmp_path, name, command, expect, run, environment)
        result = cli("run", str(spec), "-j", "2")
        cell = result.results()["cells"][0]
        ended = (
            "error",
            "RuntimeError",
            "main failed",
            (("KeyError", "cause"), ("RuntimeError", None)),
        )
        assert seen(cell["attempts"]) == {ended: REPEAT}, (name, result.stdout)
        assert cell["verdict"] == "reproduced", name
        assert result.code == 0, result.stdout + result.stderr
        if name == "forked":
            assert {a["launch"] for a in cell["attempts"]} == {"forked"}
        # The threads are shown as the threads', in the detail.
        details = {a["outcome"]["detail"] for a in cell["attempts"]}
        assert all(
            d.startswith("exit code 1; 8 threads died of an exception (")
            and d.endswith("a thread's exception ends no process)")
            for d in details
        ), details


def test_threads_that_died_leave_the_process_its_own_end(cli: Cli, tmp_path: Path) -> None:
    # The main thread joins its dead threads and exits 1 itself: an error with no exception
    # (none ended the process), not the threads' TypeError; exiting 0, a pass.
    spec = _spec(
        tmp_path, "exit1", "python conc.py exit1", "{outcome: error, exception: TypeError}"
    )
    result = cli("run", str(spec), "-j", "2")
    cell = result.results()["cells"][0]
    assert seen(cell["attempts"]) == {("error", None, None, ()): REPEAT}, result.stdout
    assert cell["verdict"] == "not-reproduced"
    assert "exception: expected TypeError, got none" in cell["reason"], cell["reason"]
    spec = _spec(tmp_path, "exit0", "python conc.py exit0", "{outcome: pass}")
    result = cli("run", str(spec), "-j", "2")
    cell = result.results()["cells"][0]
    assert seen(cell["attempts"]) == {("pass", None, None, ()): REPEAT}, result.stdout
    assert result.code == 0, result.stdout + result.stderr


def test_capture_names_the_main_threads_exception(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "conc.py").write_text(PROGRAM)
    out = tmp_path / "cap.yaml"
    result = cli(
        "capture", "--repeat", "6", "--timeout", "30s", "-o", str(out), "--",
        "python", "conc.py", "main", cwd=tmp_path,
    )  # fmt: skip
    said = result.stdout + result.stderr
    assert result.code == 0, said
    assert "error:RuntimeError in 6/6 attempts" in said, said
    assert "TypeError" not in said, said
    assert "exception: RuntimeError" in out.read_text()


# A thread that dies of a chained exception, then the main thread's own `sys.exit(1)`: the
# thread died of the chain's last exception (a module's dotted `Error`, never named `...Error`
# in full), which is not the process's message; nor is a thread's group's closing rule.
THREAD_DIES = """\
import shutil, sys, threading

def chained():
    try:
        open("/nonexistent/x")
    except OSError as err:
        raise shutil.Error("copy failed") from err

def unraised():
    raise shutil.Error("copy failed") from ValueError("root")

def group():
    raise ExceptionGroup("eg", [ValueError("a"), TypeError("b")])

thread = threading.Thread(target=globals()[sys.argv[1]])
thread.start()
thread.join()
sys.exit(1)
"""


def test_a_thread_dead_of_a_chain_is_shown_by_its_last_exception_not_as_the_message(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "dies.py").write_text(THREAD_DIES)
    for how, died in (
        ("chained", "shutil.Error"),
        ("unraised", "shutil.Error"),
        ("group", "ExceptionGroup[TypeError,ValueError]"),
    ):
        spec = tmp_path / f"{how}.yaml"
        spec.write_text(
            "reprospec: 1\n"
            f"name: {how}\n"
            f"environment: {{workdir: {tmp_path}}}\n"
            f"command: python dies.py {how}\n"
            "run: {timeout: 60s, repeat: 1}\n"
            "expect: {outcome: error, exit_code: 1}\n"
        )
        result = cli("run", str(spec))
        outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
        assert (outcome["kind"], outcome.get("exception"), outcome.get("message")) == (
            "error",
            None,
            None,
        ), (how, outcome)
        assert outcome["detail"].startswith(
            f"exit code 1; 1 thread died of an exception ({died}; "
        ), (how, outcome["detail"])
        assert result.code == 0, result.stdout + result.stderr
