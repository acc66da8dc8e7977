"""Outcome classification: real child processes for every kind, recorded DataLoader output."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.results import Execution, NotRun, Outcome
from reprospec.core.signals import (
    canonical_signal,
    describe_signal,
    exit_status_signal,
    signal_from_description,
    signal_name,
    signal_number,
)
from reprospec.core.words import outcome_phrase
from reprospec.outcome.classify import classify, fine_signature, normalize_message, worker_death
from reprospec.outcome.evidence import Evidence, iter_events, read_log
from reprospec.outcome.judge import judge_attempt
from reprospec.outcome.tracebacks import parse_exception

DATA = Path(__file__).resolve().parent / "data"
CHILDREN = DATA / "outcome_children"
RECORDED = DATA / "recorded"
BEHAVE = CHILDREN / "behave.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def run_child(tmp_path: Path, argv: list[str], timeout: float = 30.0) -> Execution:
    """Run argv as the runner would (own session, logs in files, events file) -> Execution."""
    events = tmp_path / "events.jsonl"
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    env = {**os.environ, "REPROSPEC_EVENTS": str(events), "PYTHONFAULTHANDLER": "1"}
    start = time.monotonic()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True)
        timed_out = False
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait()
    return make_execution(
        tmp_path, returncode, timed_out=timed_out, duration_s=time.monotonic() - start
    )


def make_execution(
    folder: Path,
    returncode: int | None,
    *,
    timed_out: bool = False,
    duration_s: float = 1.0,
    infra_error: str | None = None,
    interrupted: bool = False,
    harness: bool = False,
) -> Execution:
    return Execution(
        cell_id="cell",
        attempt=1,
        log_dir=folder,
        returncode=returncode,
        timed_out=timed_out,
        duration_s=duration_s,
        started="",
        finished="",
        stdout_path=folder / "stdout.log",
        stderr_path=folder / "stderr.log",
        events_path=folder / "events.jsonl",
        infra_error=infra_error,
        interrupted=interrupted,
        harness=harness,
    )


def recorded_execution(
    tmp_path: Path, stderr: bytes, returncode: int, events: str = "", harness: bool = True
) -> Execution:
    """A recorded attempt: by default the harness's (a workload), whose events are believed."""
    (tmp_path / "stderr.log").write_bytes(stderr)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text(events)
    return make_execution(tmp_path, returncode, harness=harness)


def behave(tmp_path: Path, mode: str, timeout: float = 30.0) -> Execution:
    return run_child(tmp_path, [sys.executable, str(BEHAVE), mode], timeout=timeout)


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
    assert fine_signature(outcome) == "error:Boom:validation:widget <N> exploded at <hex>"


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
    assert verdict.mismatches == ("expected exception KeyError, got RuntimeError",)
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
        "expected stage forward, got backward",
    )
    # SIGSEGV-or-SIGBUS: a list of signals matches any of them.
    assert judge_attempt(outcome, Expectation("crash", signal=("SIGBUS", "SIGSEGV"))).matched
    verdict = judge_attempt(outcome, Expectation("crash", signal=("SIGBUS", "SIGABRT")))
    assert verdict.mismatches == ("expected signal SIGBUS or SIGABRT, got SIGSEGV",)


def test_hang_at_import_names_the_module(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "import-hang", timeout=3.0))
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
        "expected module json, got wandb",
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


def test_traceback_then_segfault_is_a_crash_with_the_exception(tmp_path: Path) -> None:
    outcome = classify(behave(tmp_path, "traceback-segv"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGSEGV")
    assert outcome.exception == "RuntimeError"
    assert outcome.message == "CUDA error: an illegal memory access was encountered"


def test_shell_wrapper_139_is_sigsegv(tmp_path: Path) -> None:
    command = f"{sys.executable} {BEHAVE} segv; exit $?"
    execution = run_child(tmp_path, ["/bin/sh", "-c", command])
    assert execution.returncode == 139
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main")
    assert "139" in (outcome.detail or "")


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
    execution = behave(tmp_path, "hang", timeout=1.0)
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


# --- infrastructure errors --------------------------------------------------------------


def test_infra_error_is_not_run(tmp_path: Path) -> None:
    execution = make_execution(tmp_path, None, infra_error="interpreter /nope not found")
    assert classify(execution) == NotRun("interpreter /nope not found")


def test_infra_error_event_is_not_run_when_the_harness_says_so(tmp_path: Path) -> None:
    event = {"event": "infra_error", "reason": "device cuda requested but no CUDA device"}
    execution = recorded_execution(tmp_path, b"", 3, json.dumps(event) + "\n")
    assert classify(execution) == NotRun("device cuda requested but no CUDA device")
    # The event alone is not enough: the harness exits with EXIT_INFRA after writing it...
    crashed = recorded_execution(tmp_path, b"", -11, json.dumps(event) + "\n")
    assert isinstance(classify(crashed), Outcome)
    # ...and only the harness may write it: a command's own claim is ignored.
    command = recorded_execution(tmp_path, b"", 3, json.dumps(event) + "\n", harness=False)
    outcome = classify(command)
    assert isinstance(outcome, Outcome)
    assert outcome.exit_code == 3


def test_no_exit_status_is_not_run(tmp_path: Path) -> None:
    assert classify(make_execution(tmp_path, None)) == NotRun("the runner recorded no exit status")
    interrupted = classify(make_execution(tmp_path, None, interrupted=True))
    assert interrupted == NotRun("interrupted before it finished")
    assert isinstance(classify(make_execution(tmp_path, 0)), Outcome)


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


# --- DataLoader worker crashes: recorded real output, and live ----------------------------

MANIFEST = json.loads((RECORDED / "manifest.json").read_text())


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_recorded_dataloader_worker_crash(tmp_path: Path, name: str) -> None:
    entry = MANIFEST[name]
    execution = recorded_execution(tmp_path, (RECORDED / name).read_bytes(), entry["returncode"])
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", entry["signal"], "worker")
    assert outcome.exit_code is None
    assert outcome.signature == f"crash:{entry['signal']}:worker"
    # The main process's last exception varies from run to run; it is kept as printed.
    if outcome.exception is not None:
        assert outcome.exception in ("RuntimeError", "ConnectionResetError", "EOFError")


def test_recorded_variants_cover_the_known_shapes() -> None:
    shapes = " ".join(entry["shape"] for entry in MANIFEST.values())
    for text in ("exited unexpectedly", "ConnectionResetError", "EOFError", "Bus error"):
        assert text in shapes


def test_recorded_stderr_has_the_nul_byte_and_still_parses() -> None:
    raw = (RECORDED / "dataloader-segv-1.stderr.log").read_bytes()
    assert b"\0" in raw
    text = read_log(RECORDED / "dataloader-segv-1.stderr.log")
    assert "\0" not in text
    exception = parse_exception(text)
    assert exception is not None
    assert exception.type == "RuntimeError"
    assert exception.message is not None
    assert "exited unexpectedly" in exception.message


def test_shutdown_reports_are_not_the_main_exception() -> None:
    # Recorded: ConnectionResetError uncaught, then a weakref finalizer's RuntimeError
    # printed at shutdown with no header line.
    text = read_log(RECORDED / "dataloader-segv-large-3.stderr.log")
    exception = parse_exception(text)
    assert exception is not None
    assert exception.type == "ConnectionResetError"
    ignored = (
        'Traceback (most recent call last):\n  File "t.py", line 1\nValueError: main\n'
        "Exception ignored in: <function f at 0x1>\n"
        'Traceback (most recent call last):\n  File "t.py", line 2\nOSError: late\n'
    )
    exception = parse_exception(ignored)
    assert exception is not None
    assert exception.type == "ValueError"


def test_lost_stderr_object_dump_still_names_the_exception() -> None:
    text = read_log(RECORDED / "dataloader-segv-large-2.stderr.log")
    assert "lost sys.stderr" in text
    exception = parse_exception(text)
    assert exception is not None
    assert exception.type == "ConnectionResetError"


def test_worker_exit_event_is_preferred(tmp_path: Path) -> None:
    stderr = (RECORDED / "dataloader-segv-1.stderr.log").read_bytes()
    events = "\n".join(
        [
            json.dumps({"event": "step", "phase": "validation", "step": 7}),
            json.dumps({"event": "worker_exit", "worker": 1, "pid": 4242, "signal": "SIGBUS"}),
        ]
    )
    outcome = classify(recorded_execution(tmp_path, stderr, 1, events + "\n"))
    assert isinstance(outcome, Outcome)
    assert (outcome.signal, outcome.where, outcome.phase, outcome.step) == (
        "SIGBUS",
        "worker",
        "validation",
        7,
    )
    assert outcome.signature == "crash:SIGBUS:worker:validation"
    assert "4242" in (outcome.detail or "")


def test_worker_exited_with_exit_code_is_an_error(tmp_path: Path) -> None:
    stderr = (
        b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        b"RuntimeError: DataLoader worker (pid 77) exited unexpectedly with exit code 3. "
        b"Details are lost due to multiprocessing.\n"
    )
    outcome = classify(recorded_execution(tmp_path, stderr, 1))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.where) == ("error", 1, "worker")
    assert outcome.signature == "error:RuntimeError:worker"


def test_worker_exited_unexpectedly_without_a_code_is_a_crash() -> None:
    text = "RuntimeError: DataLoader worker (pid(s) 12, 13) exited unexpectedly\n"
    death = worker_death(text)
    assert death is not None
    assert (death.signal, death.exit_code, death.pid) == (None, None, 12)


def test_worker_crash_when_main_also_segfaults_is_a_main_crash(tmp_path: Path) -> None:
    stderr = (RECORDED / "dataloader-bus-1.stderr.log").read_bytes()
    outcome = classify(recorded_execution(tmp_path, stderr, -11))
    assert isinstance(outcome, Outcome)
    assert (outcome.signal, outcome.where) == ("SIGSEGV", "main")
    assert "SIGBUS" in (outcome.detail or "")


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


# --- parsing details ------------------------------------------------------------------------


def test_events_skip_malformed_and_truncated_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"event": "phase", "phase": "train"}\n'
        b"not json\n"
        b"[1, 2]\n"
        b'{"event": "step", "step": 4}\n'
        b'{"event": "step", "phase": "validation", "st'
    )
    assert [e.get("step") for e in iter_events(path)] == [None, 4]
    execution = recorded_execution(tmp_path, b"", 0, path.read_text())
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.phase, outcome.step) == ("train", 4)


def test_new_phase_resets_the_step(tmp_path: Path) -> None:
    events = "\n".join(
        json.dumps(e)
        for e in [
            {"event": "step", "phase": "train", "step": 9},
            {"event": "phase", "phase": "validation"},
            {"event": "import", "module": "wandb"},
        ]
    )
    outcome = classify(recorded_execution(tmp_path, b"", 1, events + "\n"))
    assert isinstance(outcome, Outcome)
    assert (outcome.phase, outcome.step) == ("validation", None)


def test_stage_resets_with_each_step_and_module_only_while_importing() -> None:
    from reprospec.core.jsontypes import JsonValue
    from reprospec.outcome.evidence import Events

    train: list[dict[str, JsonValue]] = [
        {"event": "import", "module": "wandb", "phase": "import"},
        {"event": "phase", "phase": "train"},
        {"event": "step", "phase": "train", "step": 1},
        {"event": "stage", "phase": "train", "step": 1, "stage": "backward"},
        {"event": "step", "phase": "train", "step": 2},
    ]
    assert (Events.of(train).stage, Events.of(train).module) == (None, None)
    assert Events.of(train[:4]).stage == "backward"
    assert Events.of(train[:1]).module == "wandb"


def test_missing_logs_and_events(tmp_path: Path) -> None:
    outcome = classify(make_execution(tmp_path / "nothing-here", 5))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.phase, outcome.message) == (
        "error",
        5,
        None,
        None,
    )


def test_huge_log_keeps_head_and_tail(tmp_path: Path) -> None:
    path = tmp_path / "stderr.log"
    with path.open("wb") as handle:
        handle.write(b"ERROR: Unexpected bus error encountered in worker.\0\n")
        handle.write(b"noise \xff\xfe line\n" * 200_000)
        handle.write(b'Traceback (most recent call last):\n  File "t.py", line 1\n')
        handle.write(b"torch.AcceleratorError: CUDA error: misaligned address\n")
    text = read_log(path)
    assert len(text) < 400_000
    assert "bytes omitted" in text
    outcome = classify(make_execution(tmp_path, 1))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGBUS", "worker")
    assert outcome.exception == "torch.AcceleratorError"
    assert outcome.message == "CUDA error: misaligned address"


def test_multiline_message_stops_at_noise() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "t.py", line 1, in <module>\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "[W1121 12:00:00.000000 1 ProcessGroup.cpp:1] Warning: something\n"
    )
    exception = parse_exception(text)
    assert exception is not None
    assert exception.message == (
        "CUDA error: an illegal memory access was encountered\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    )


def test_thread_exception_only_when_nothing_else() -> None:
    thread = (
        "Exception in thread Thread-1:\nTraceback (most recent call last):\n"
        '  File "t.py", line 1, in run\nZeroDivisionError: division by zero\n\n'
    )
    main = 'Traceback (most recent call last):\n  File "t.py", line 2\nValueError: bad\n'
    assert parse_exception(thread + main) == parse_exception(main)
    only = parse_exception(thread)
    assert only is not None
    assert only.type == "ZeroDivisionError"


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


def test_interleaved_output_is_not_an_exception() -> None:
    text = 'Traceback (most recent call last):\n  File "t.py"\n>>> progress 50%\n'
    assert parse_exception(text) is None


def test_exit_128_plus_n_rule(tmp_path: Path) -> None:
    # 138 = 128 + SIGUSR1 is no conventional crash code: an error unless the output proves it.
    outcome = classify(recorded_execution(tmp_path, b"done\n", 138))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code) == ("error", 138)
    proof = b"sh: 1: 4242 User defined signal 1\n"
    outcome = classify(recorded_execution(tmp_path, proof, 138))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGUSR1")
    outcome = classify(recorded_execution(tmp_path, b"", 137))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGKILL")


def test_normalize_message() -> None:
    text = (
        "\x1b[31mDataLoader worker (pid(s) 5355, 5356) exited\x1b[0m at 0x7fd395f78240 "
        "in /tmp/pytest-1/x.py run 3f2c1a9e-1d2b-4c3d-8e9f-0a1b2c3d4e5f float32 cuda:0"
    )
    assert normalize_message(text) == (
        "DataLoader worker (pid(s) <N>, <N>) exited at <hex> in <path> run <uuid> float32 cuda:<N>"
    )


# --- signals ----------------------------------------------------------------------------------


def test_signal_helpers() -> None:
    assert signal_name(11) == "SIGSEGV"
    assert signal_name(6) == "SIGABRT"
    assert signal_number("segv") == signal_number("SIGSEGV") == signal_number("11") == 11
    assert signal_number("SIGNOPE") is None
    assert signal_number(0) is None
    assert canonical_signal("bus") == "SIGBUS"
    assert canonical_signal("SIGIOT") == "SIGABRT"
    assert describe_signal("SIGSEGV") == "Segmentation fault"
    assert signal_from_description("Segmentation fault") == "SIGSEGV"
    assert signal_from_description("floating-point exception") == "SIGFPE"
    assert signal_from_description("Killed") == "SIGKILL"
    assert signal_from_description("Aborted (core dumped)") == "SIGABRT"
    assert signal_from_description("nothing like it") is None
    assert exit_status_signal(139) == "SIGSEGV"
    assert exit_status_signal(130) == "SIGINT"
    assert exit_status_signal(138) is None
    assert exit_status_signal(138, any_signal=True) == "SIGUSR1"
    assert exit_status_signal(1) is None
    assert exit_status_signal(128) is None


def test_hang_names_the_worker_still_stuck_on_an_item(tmp_path: Path) -> None:
    lines = [
        {"event": "step", "phase": "train", "step": 6},
        {"event": "worker_busy", "worker": 1, "pid": 77, "index": 5, "seconds": 2.1, "since": 1.0},
        {"event": "worker_free", "worker": 1, "pid": 77, "index": 5, "seconds": 2.5},
        {"event": "stage", "phase": "train", "step": 6, "stage": "data"},
        {
            "event": "worker_busy",
            "worker": 0,
            "pid": 42,
            "index": 37,
            "phase": "train",
            "step": 6,
            "seconds": 2.0,
            "since": 100.0,
        },
    ]
    events = "".join(json.dumps(e) + "\n" for e in lines)
    execution = recorded_execution(tmp_path, b"", 0, events)
    hung = dataclasses.replace(
        execution, returncode=None, timed_out=True, finished="1970-01-01T00:01:45+00:00"
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.phase, outcome.step) == (
        "hang",
        "worker",
        "train",
        6,
    )
    assert outcome.signature == "hang:train"
    assert "DataLoader worker 0 (pid 42) stuck fetching item 37 (train step 6) for 5.0s" in (
        outcome.detail or ""
    )
    # The slow item that was done after all is not blamed.
    freed = "".join(json.dumps(e) + "\n" for e in lines[:4])
    (tmp_path / "events.jsonl").write_text(freed)
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert outcome.where == "main"
    assert "worker" not in (outcome.detail or "")
