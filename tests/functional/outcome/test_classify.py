"""Outcome classification of real child processes, one for every kind."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.results import ChainLink, Execution, Outcome
from reprospec.core.words import outcome_phrase
from reprospec.outcome.classify import classify
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.judge import judge_attempt
from reprospec.outcome.tracebacks import parse_exception
from tests.support.paths import DATA
from tests.support.plans import execution_in

CHILDREN = DATA / "outcome_children"


BEHAVE = CHILDREN / "behave.py"


HAS_TORCH = importlib.util.find_spec("torch") is not None


def run_child(
    tmp_path: Path, argv: list[str], timeout: float = 30.0, ready: str | None = None
) -> Execution:
    """Run argv as the runner would (own session, logs in files, events file) -> Execution.

    `ready`: text of the events file that `timeout` counts from (a hang's last event): a
    child starved for its start-up on a loaded machine would otherwise be killed before it
    got there, as a hang somewhere else."""
    events = tmp_path / "events.jsonl"
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    env = {**os.environ, "REPROSPEC_EVENTS": str(events), "PYTHONFAULTHANDLER": "1"}
    start = time.monotonic()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True)
        timed_out = False
        try:
            if ready is not None:
                _wait_for_event(events, ready, proc)
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait()
    return execution_in(
        tmp_path, returncode, timed_out=timed_out, duration_s=time.monotonic() - start
    )


def _wait_for_event(events: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the events file holds `text`, the child ends, or 60 s (then the test's
    assertions say what the child reached)."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if events.exists() and text in events.read_text():
            return
        time.sleep(0.02)


def behave(tmp_path: Path, mode: str, timeout: float = 30.0, ready: str | None = None) -> Execution:
    return run_child(tmp_path, [sys.executable, str(BEHAVE), mode], timeout=timeout, ready=ready)


# --- every outcome kind, from a real child -------------------------------------------


def test_pass(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "pass"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.signature) == ("pass", 0, "pass")
    assert (outcome.phase, outcome.step) == ("validation", 3)


def test_exit_code(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "exit3"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 3, None)
    assert outcome.exception is None
    assert outcome.signature == "error:exit-3:validation"


def test_uncaught_exception(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "raise"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code) == ("error", 1)
    assert outcome.exception == "Boom"
    assert outcome.message == "widget 7 exploded at 0xdeadbeef"
    assert outcome.signature == "error:Boom:validation"


@pytest.mark.parametrize(
    ("source", "exception"),
    [("def f(:\n    pass\n", "SyntaxError"), ("if True:\nx = 1\n", "IndentationError")],
)
def test_a_script_that_does_not_compile_raised_its_syntax_error(
    tmp_path: Path, source: str, exception: str
) -> None:
    """CPython prints the compile error of the script it was asked to run with no
    `Traceback` header (there is no frame): read as no exception, `expect: {exception:
    SyntaxError}` could never match, and minimize's refusal said only `error exit 1`."""
    script = tmp_path / "bad.py"
    script.write_text(source)
    outcome = classify(run_child(tmp_path, [sys.executable, str(script)]))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.exception) == ("error", 1, exception)
    assert outcome.message is not None
    assert outcome.message.startswith(
        "invalid syntax" if exception == "SyntaxError" else "expected an indented block"
    )


@pytest.mark.skipif(importlib.util.find_spec("rich") is None, reason="rich is not installed")
def test_an_exception_rich_printed_is_the_outcomes(tmp_path: Path) -> None:
    """rich's excepthook prints a box, not CPython's traceback: read as none, the outcome
    was `error exit 1` with no exception, and `expect: {exception: ValueError}` missed."""
    script = tmp_path / "app.py"
    script.write_text(
        "from rich.traceback import install\ninstall(width=80)\n\n"
        "def main():\n    raise ValueError('batch size 16 exceeds buffer of 8 rows')\n\nmain()\n"
    )
    outcome = classify(run_child(tmp_path, [sys.executable, str(script)]))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.exception) == ("error", 1, "ValueError")
    assert outcome.message == "batch size 16 exceeds buffer of 8 rows"


@pytest.mark.skipif(importlib.util.find_spec("rich") is None, reason="rich is not installed")
def test_an_exception_rich_printed_in_colour_is_the_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under FORCE_COLOR (a CI job's, passed through by the local runner) every line of
    rich's box and the exception line carry escapes: the live run read `error exit 1`,
    where a pasted copy read the exception."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    script = tmp_path / "app.py"
    script.write_text(
        "from rich.traceback import install\ninstall(width=80)\n\n"
        "def main():\n    try:\n        raise ValueError('bad shape')\n"
        "    except ValueError as error:\n        raise RuntimeError('wrapped') from error\n\n"
        "main()\n"
    )
    outcome = classify(run_child(tmp_path, [sys.executable, str(script)]))
    assert "\x1b[" in (tmp_path / "stderr.log").read_text()
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exception) == ("error", "RuntimeError")
    assert outcome.message == "wrapped"
    assert [(link.type, link.link) for link in outcome.chain] == [
        ("ValueError", "cause"),
        ("RuntimeError", None),
    ]


def test_chained_exception_takes_the_last(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "chained"))
    assert isinstance(outcome, Outcome)
    assert outcome.exception == "RuntimeError"
    assert outcome.message == "loss is NaN at step 3\nsecond line of the message"


def test_exception_chain_is_kept_primary_first(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "accelerator-chain"))
    assert isinstance(outcome, Outcome)
    # What ended the process stays the outcome's exception...
    assert (outcome.exception, outcome.message) == ("RuntimeError", "emergency checkpoint failed")
    # ...and the whole chain is kept, primary first, with how each led to the next.
    assert [(link.type, link.link) for link in outcome.chain] == [
        ("AcceleratorError", "context"),
        ("FileNotFoundError", "cause"),
        ("RuntimeError", None),
    ]
    assert outcome.chain[0].message == "CUDA error: an illegal memory access was encountered"
    assert "No such file or directory" in (outcome.chain[1].message or "")
    assert outcome.exceptions == outcome.chain
    # A lone exception has no chain.
    (tmp_path / "single").mkdir()
    single = classify(behave(tmp_path / "single", "raise"))
    assert isinstance(single, Outcome)
    assert single.chain == ()
    assert [link.type for link in single.exceptions] == ["Boom"]


def test_expect_exception_and_message_match_any_link_of_the_chain(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "accelerator-chain"))
    assert isinstance(outcome, Outcome)

    def matched(**keys: str) -> bool:
        # No evidence given: the chain alone must carry the match, not the log's tail.
        return judge_attempt(outcome, Expectation("error", **keys)).matched  # type: ignore[arg-type]

    assert matched(exception="AcceleratorError", message="illegal memory access")
    assert matched(exception="FileNotFoundError", message="No such file")
    assert matched(exception="RuntimeError", message="emergency checkpoint")
    assert not matched(exception="KeyError")
    verdict = judge_attempt(outcome, Expectation("error", exception="KeyError"))
    assert verdict.mismatches == ("exception: expected KeyError, got RuntimeError",)
    assert not matched(message="out of memory")


def test_report_shows_the_exception_chain(tmp_path: Path) -> None:
    from reprospec.core.inputs import Cell
    from reprospec.core.results import AttemptResult, CellResult, RunResult
    from reprospec.outcome.judge import judge_cell
    from reprospec.report import render

    execution = behave(tmp_path, "accelerator-chain")
    evidence = Evidence.read(execution)
    outcome = classify(execution, evidence)
    expectation = Expectation("error", exception="AcceleratorError")
    verdict = judge_attempt(outcome, expectation, evidence)
    attempt = AttemptResult(1, 1.0, outcome, verdict.matched, verdict.mismatches, "cells/x/1/")
    cell = CellResult.judged(
        Cell("default", 0, {}), expectation, judge_cell(expectation, [attempt]), (attempt,)
    )
    run = RunResult("r1", "chain", "chain.yaml", "", "local", "", "", {}, (cell,))
    report = render(run, "md")
    assert cell.verdict == "reproduced"
    assert (
        "Exception chain, primary first:\n\n"
        "- `AcceleratorError`: `CUDA error: an illegal memory access was encountered`\n"
        "- raised while handling it: `FileNotFoundError`: `[Errno 2] No such file or directory:"
    ) in report
    last = "- raised from it (direct cause): `RuntimeError`: `emergency checkpoint failed`"
    assert last in report


def test_stage_of_the_step_is_in_the_outcome_and_can_be_expected(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "backward-segv"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.phase, outcome.step, outcome.stage) == (
        "crash",
        "SIGSEGV",
        "validation",
        3,
        "backward",
    )
    assert outcome.module is None
    assert outcome_phrase(outcome) == "crash SIGSEGV @ validation:3 (backward)"
    assert judge_attempt(outcome, Expectation("crash", stage="backward")).matched
    assert judge_attempt(outcome, Expectation("crash", stage="forward")).mismatches == (
        "stage: expected forward, got backward",
    )
    # SIGSEGV-or-SIGBUS: a list of signals matches any of them.
    assert judge_attempt(outcome, Expectation("crash", signal=("SIGBUS", "SIGSEGV"))).matched
    verdict = judge_attempt(outcome, Expectation("crash", signal=("SIGBUS", "SIGABRT")))
    assert verdict.mismatches == ("signal: expected SIGBUS or SIGABRT, got SIGSEGV",)


def test_hang_at_import_names_the_module(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "import-hang", timeout=1.0, ready='"wandb"'))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.phase, outcome.module, outcome.stage) == (
        "hang",
        "import",
        "wandb",
        None,
    )
    assert outcome_phrase(outcome) == "hang @ import (wandb)"
    assert judge_attempt(outcome, Expectation("hang", phase="import", module="wandb")).matched
    assert judge_attempt(outcome, Expectation("hang", module="json")).mismatches == (
        "module: expected json, got wandb",
    )


def test_a_pass_has_no_stage_or_module(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "pass"))
    assert isinstance(outcome, Outcome)
    assert (outcome.stage, outcome.module, outcome.chain) == (None, None, ())


def test_system_exit_message(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "systemexit"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code) == ("error", 1)
    assert outcome.exception is None
    assert outcome.message == "fatal: no dataset found"


def test_a_warning_printed_last_is_no_message_of_the_exit(tmp_path: Path) -> None:
    """`warnings.warn(...)` then `sys.exit(1)`: the message read the warning's source line
    (`warnings.warn("numpy is missing")`), and capture wrote it as `expect.message`."""
    script = tmp_path / "warns.py"
    script.write_text('import sys, warnings\nwarnings.warn("numpy is missing")\nsys.exit(1)\n')
    outcome = classify(run_child(tmp_path, [sys.executable, str(script)]))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.exception) == ("error", 1, None)
    assert "UserWarning: numpy is missing" in (tmp_path / "stderr.log").read_text()
    assert outcome.message is None
    # A message printed after the warning is still the exit's.
    script.write_text('import sys, warnings\nwarnings.warn("slow")\nsys.exit("fatal: no data")\n')
    outcome = classify(run_child(tmp_path, [sys.executable, str(script)]))
    assert isinstance(outcome, Outcome)
    assert outcome.message == "fatal: no data"


def test_real_segfault(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "segv"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main")
    assert outcome.exit_code is None
    assert (outcome.phase, outcome.step) == ("validation", 3)
    assert outcome.signature == "crash:SIGSEGV:main:validation"
    # faulthandler's "Fatal Python error" dump is no Python exception.
    assert outcome.exception is None


def test_real_abort(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "abort"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGABRT", "main")


def test_traceback_then_segfault_is_a_crash_with_the_last_traceback(tmp_path: Path) -> None:
    """The traceback was printed and the process went on: the signal ended it, and the
    RuntimeError is named as the last traceback printed, not as the crash's exception."""
    outcome = classify(behave(tmp_path, "traceback-segv"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGSEGV")
    assert (outcome.exception, outcome.message) == (None, None)
    assert outcome.last_traceback == ChainLink(
        "RuntimeError", "CUDA error: an illegal memory access was encountered"
    )
    # Still what `expect.exception` and `expect.message` can name.
    expectation = Expectation("crash", exception="RuntimeError", message="illegal memory access")
    assert judge_attempt(outcome, expectation).matched


def test_a_logged_exception_then_exit_2_is_no_exception_of_the_outcome(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "logged-exit2"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.exception) == ("error", 2, None)
    assert outcome.last_traceback == ChainLink("KeyError", "'missing'")
    assert outcome.message == "checkpoint dir not writable"
    assert outcome.signature == "error:exit-2:validation"


def test_shell_wrapper_139_is_sigsegv(tmp_path: Path) -> None:
    command = f"{sys.executable} {BEHAVE} segv; exit $?"
    execution = run_child(tmp_path, ["/bin/sh", "-c", command])
    assert execution.returncode == 139
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main")
    assert "139" in (outcome.detail or "")


@pytest.mark.parametrize("name", ["SIGHUP", "SIGALRM", "SIGUSR2"])
def test_a_death_dash_reports_by_its_description_alone_is_a_crash(
    tmp_path: Path, name: str
) -> None:
    """dash says `Hangup` (no pid, as bash's `4242 Hangup` has) for a program dead
    of a signal outside the conventional crash set: that is the proof, and 129 was read as
    `error exit 129`."""
    code = f"import os, signal; os.kill(os.getpid(), signal.{name})"
    execution = run_child(tmp_path, ["/bin/sh", "-c", f'{sys.executable} -c "{code}"; exit $?'])
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", name), outcome


def test_a_death_dash_reports_with_its_core_is_a_crash(tmp_path: Path) -> None:
    """dash says `File size limit exceeded (core dumped)` for a program dead of SIGXFSZ (a
    signal outside the conventional crash set whose default writes a core): the words
    with their `(core dumped)` are the proof too, and 153 was read as `error exit 153`."""
    # (Python ignores SIGXFSZ from its start: its default is given back first.)
    code = (
        "import os, signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
        "os.kill(os.getpid(), signal.SIGXFSZ)"
    )
    line = f'cd {tmp_path} && ulimit -c unlimited; {sys.executable} -c "{code}"; exit $?'
    execution = run_child(tmp_path, ["/bin/sh", "-c", line])
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGXFSZ"), outcome


def test_a_description_the_program_printed_mid_line_is_no_proof(tmp_path: Path) -> None:
    """Only a line that is the description alone is dash's word: `got Hangup from the
    modem` and exit 129 stay the program's own status."""
    code = "import sys; print('got Hangup from the modem', file=sys.stderr); sys.exit(129)"
    execution = run_child(tmp_path, [sys.executable, "-c", code])
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code) == ("error", 129), outcome


def test_shell_wrapper_134_is_sigabrt(tmp_path: Path) -> None:
    execution = run_child(tmp_path, ["/bin/sh", "-c", f"{sys.executable} {BEHAVE} abort; exit $?"])
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGABRT")


def test_keyboard_interrupt_is_a_sigint_crash(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "keyboardinterrupt"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGINT")
    assert outcome.exception == "KeyboardInterrupt"
    assert outcome.message is None


def test_sigkill(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "sigkill"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGKILL")


def test_hang(tmp_path: Path) -> None:
    # Killed 1 s after its last event (validation step 3), however long it took to get there.
    execution = behave(tmp_path, "hang", timeout=1.0, ready='"step": 3}')
    assert execution.timed_out
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.exit_code) == ("hang", None, None)
    assert (outcome.phase, outcome.step) == ("validation", 3)
    assert outcome.signature == "hang:validation"
    assert "timeout" in (outcome.detail or "")


def test_output_tail_has_stdout_and_stderr(tmp_path: Path) -> None:
    tail = Evidence.read(behave(tmp_path, "raise")).output_tail()
    assert "validation step 3, mode raise" in tail
    assert "Boom: widget 7" in tail


def test_evidence_is_read_once_and_classified_from_memory(tmp_path: Path) -> None:
    execution = run_child(tmp_path, [sys.executable, str(BEHAVE), "raise"])
    evidence = Evidence.read(execution)
    for name in ("stdout.log", "stderr.log", "events.jsonl"):
        (tmp_path / name).unlink()
    outcome = classify(execution, evidence)
    assert isinstance(outcome, Outcome)
    assert outcome.exception == "Boom"
    assert (outcome.phase, outcome.step) == ("validation", 3)
    assert "Boom: widget 7" in evidence.excerpt()


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed in the test interpreter")
def test_live_dataloader_worker_crash(tmp_path: Path) -> None:
    # One live run (~3 s, mostly importing torch); the recorded files cover the variants.
    expected = "SIGSEGV"
    execution = run_child(
        tmp_path, [sys.executable, str(CHILDREN / "dataloader_crash.py"), "segv"], timeout=120
    )
    assert execution.returncode == 1
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", expected, "worker")
    assert outcome.phase == "validation"
    assert outcome.signature == f"crash:{expected}:worker:validation"


def test_exception_group() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "raise ExceptionGroup('two failed', [ValueError('x'), KeyError(1)])",
        ],
        capture_output=True,
        text=True,
    )
    exception = parse_exception(proc.stderr)
    assert exception is not None
    assert exception.type == "ExceptionGroup"
    assert exception.message == "two failed (2 sub-exceptions)"
