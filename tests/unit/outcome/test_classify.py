"""Outcome classification from hand-built executions and recorded DataLoader output."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import ChainLink, Execution, NotRun, Outcome
from reprospec.core.signals import (
    canonical_signal,
    describe_signal,
    exit_status_signal,
    signal_from_description,
    signal_name,
    signal_number,
)
from reprospec.core.words import (
    A_SHELLS_137_OR_AN_EXIT_STATUS,
    A_SHELLS_SIGKILL_SENT_BY_A_PROCESS,
    AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN,
    KNOWN_FROM_THE_OUTPUT_ALONE,
    NO_OTHER_PROCESS_RAN,
    POOL_WORKER_NO_CRASH,
    SENT_BY_A_PROCESS,
    THREADS_ARE_NOT_THE_END,
    outcome_phrase,
)
from reprospec.outcome.classify import classify, normalize_message, worker_death
from reprospec.outcome.evidence import iter_events, read_log
from reprospec.outcome.judge import judge_attempt
from reprospec.outcome.tracebacks import (
    PythonException,
    crash_reported,
    headline,
    last_printed,
    parse_chain,
    parse_exception,
    raised_types,
    recorded_chain,
    thread_exceptions,
    unboxed,
    went_on,
)
from tests.support.paths import DATA
from tests.support.plans import execution_in

RECORDED = DATA / "recorded"


def recorded_execution(
    tmp_path: Path, stderr: bytes, returncode: int, events: str = "", harness: bool = True
) -> Execution:
    """A recorded attempt: by default the harness's (a workload), whose events are believed."""
    (tmp_path / "stderr.log").write_bytes(stderr)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text(events)
    return execution_in(tmp_path, returncode, harness=harness)


def execution_in_with(
    tmp_path: Path, stderr: bytes, returncode: int | None, *, timed_out: bool = False
) -> Execution:
    """A command's attempt with this stderr (a hang: `timed_out`, no exit status)."""
    recorded_execution(tmp_path, stderr, 0, harness=False)
    return execution_in(tmp_path, returncode, timed_out=timed_out)


# --- infrastructure errors --------------------------------------------------------------


def test_infra_error_is_not_run(tmp_path: Path) -> None:
    execution = execution_in(tmp_path, None, infra_error="interpreter /nope not found")
    assert classify(execution) == NotRun("interpreter /nope not found")


def test_python_dash_m_never_started_only_where_the_command_runs_it(tmp_path: Path) -> None:
    # A program that ran `python -m black_tool` itself, then exited 1, failed: no infra-error.
    stderr = b"/usr/bin/python3: No module named black_tool\n"
    execution = execution_in_with(tmp_path, stderr, 1)
    outcome = classify(execution, argv=("python3", "t.py"))
    assert isinstance(outcome, Outcome)
    assert outcome.kind == "error"
    said = classify(execution, argv=("python3", "-m", "black_tool"))
    assert isinstance(said, NotRun)
    assert said.reason.startswith("/usr/bin/python3 -m black_tool: no module named black_tool")


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


def test_a_hang_in_the_dataset_probe_is_not_run_but_a_hang_after_it_is_a_hang(
    tmp_path: Path,
) -> None:
    # A real hang while the harness's spawned probe read item 0 was judged `hang @ setup`,
    # though a probe that fails is documented as infra-error: the training never began.
    events = [
        {"t": 1.0, "event": "phase", "phase": "setup"},
        {"t": 1.1, "event": "dataset_probe", "pid": 4250},
    ]
    lines = "".join(json.dumps(e) + "\n" for e in events)
    recorded_execution(tmp_path, b"", 0, lines)
    hung = execution_in(tmp_path, None, timed_out=True, harness=True)
    result = classify(hung)
    assert isinstance(result, NotRun)
    assert "reading item 0 in a probe process (pid 4250) never answered" in result.reason
    assert "declare `shape` and `classes`" in result.reason
    # Once the probe answered, a hang is the training's own.
    ended = {"t": 1.5, "event": "dataset_probe", "pid": 4250, "ended": True}
    recorded_execution(tmp_path, b"", 0, lines + json.dumps(ended) + "\n")
    after = classify(execution_in(tmp_path, None, timed_out=True, harness=True))
    assert isinstance(after, Outcome)
    assert (after.kind, after.phase) == ("hang", "setup")
    # Two ranks' probes: the one that ended does not hide the one still reading.
    ranks = [
        {"t": 1.1, "event": "dataset_probe", "pid": 4250, "rank": 0},
        {"t": 1.2, "event": "dataset_probe", "pid": 4251, "rank": 1},
        {"t": 1.3, "event": "dataset_probe", "pid": 4250, "rank": 0, "ended": True},
    ]
    recorded_execution(tmp_path, b"", 0, "".join(json.dumps(e) + "\n" for e in ranks))
    other = classify(execution_in(tmp_path, None, timed_out=True, harness=True))
    assert isinstance(other, NotRun)
    assert "(pid 4251) never answered" in other.reason
    # Only the harness's word counts: a command cannot call its own hang a probe's.
    recorded_execution(tmp_path, b"", 0, lines, harness=False)
    command = classify(execution_in(tmp_path, None, timed_out=True))
    assert isinstance(command, Outcome)
    assert command.kind == "hang"


def test_no_exit_status_is_not_run(tmp_path: Path) -> None:
    assert classify(execution_in(tmp_path, None)) == NotRun("the runner recorded no exit status")
    interrupted = classify(execution_in(tmp_path, None, interrupted=True))
    assert interrupted == NotRun("interrupted before it finished")
    assert isinstance(classify(execution_in(tmp_path, 0)), Outcome)


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


def test_a_compile_error_is_read_only_where_no_traceback_holds_it() -> None:
    """The script's own compile error has no header; a module's that an import did not
    compile is a traceback's last frames, read as that traceback (its frames' `File`
    lines follow a header or another frame, never read as a headerless error)."""
    script = '  File "/w/bad.py", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n'
    assert parse_exception(script) == PythonException("SyntaxError", "invalid syntax")
    imported = (
        "Traceback (most recent call last):\n"
        '  File "/w/main.py", line 1, in <module>\n'
        "    import bad\n" + script.replace("SyntaxError", "IndentationError")
    )
    assert parse_chain(imported) == (PythonException("IndentationError", "invalid syntax"),)
    # A `File` line with no compile error under it (a program's own output) is none.
    assert parse_chain('  File "/w/x.py", line 3\n    x = 1\nValueError: no\n') == ()


def test_a_blank_source_line_inside_a_traceback_does_not_end_it() -> None:
    """Recorded (the suite, a loaded machine): torch's SIGCHLD handler ran on a `def` line,
    whose frame CPython printed with an empty line under it, and the traceback was read as
    ending there: the worker's exit with code 3 was `error exit 1` with no exception, where
    the spec expects RuntimeError."""
    text = read_log(RECORDED / "dataloader-exit-blank-frame.stderr.log")
    assert "\n\n  File " in text
    exception = parse_exception(text)
    assert exception is not None
    assert exception.type == "RuntimeError"
    assert exception.message is not None
    assert "exited unexpectedly with exit code 3" in exception.message


def test_an_exception_raised_again_from_a_worker_is_headed_by_the_workers_own_message() -> None:
    """Recorded (torch 2.13): torch's `Caught ValueError in DataLoader worker process 0.`
    is true of any ValueError in any worker; the worker's message is its traceback's last
    line, 107 lines below, past the 30 a message was read to."""
    text = read_log(RECORDED / "dataloader-reraised-deep.stderr.log")
    exception = parse_exception(text)
    assert exception is not None
    assert exception.message is not None
    assert exception.type == "ValueError"
    assert exception.message.startswith("Caught ValueError in DataLoader worker process 0.")
    assert len(exception.message.splitlines()) > 100
    assert headline(exception.message) == "bad sample 27: label -1 is out of range [0, 10)"
    # Any other message is headed by its first line.
    assert headline("CUDA error: out of memory\nCompile with TORCH_USE_CUDA_DSA") == (
        "CUDA error: out of memory"
    )
    # A worker's traceback whose own line was lost (cut) keeps torch's.
    cut = "Caught KeyError in DataLoader worker process 3.\nOriginal Traceback (most recent"
    assert headline(cut) == "Caught KeyError in DataLoader worker process 3."


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


def test_a_worker_crash_is_located_at_the_batch_the_worker_died_fetching(tmp_path: Path) -> None:
    """The main process heard of the death at validation step 5 (a loaded machine: its
    prefetching workers ran ahead); the worker died fetching item 96, the batch of step 7."""
    stderr = (RECORDED / "dataloader-segv-1.stderr.log").read_bytes()
    lines = [
        {"event": "step", "phase": "validation", "step": 5},
        {"event": "stage", "phase": "validation", "step": 5, "stage": "forward"},
        {"event": "worker_exit", "worker": 0, "pid": 4242, "signal": "SIGSEGV", "index": 96,
         "phase": "validation", "step": 7},
    ]  # fmt: skip
    events = "".join(json.dumps(line) + "\n" for line in lines)
    outcome = classify(recorded_execution(tmp_path, stderr, 1, events))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.phase, outcome.step, outcome.stage) == (
        "crash",
        "worker",
        "validation",
        7,
        "data",
    )
    assert "fetching item 96 (validation step 7)" in (outcome.detail or "")


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


def test_a_worker_death_the_main_process_reaped_is_the_workers_crash(tmp_path: Path) -> None:
    """A DataLoader worker SIGKILLed just after it sent a batch: the main process died of a
    ConnectionResetError it could not even print (its stderr lost), no word of torch's.
    Recorded real (tests/data/recorded/dataloader-sigkill-lost-stderr.*), with the
    `child_exit` event the engine's sitecustomize wrote as the main process reaped it."""
    name = "dataloader-sigkill-lost-stderr"
    stderr = (RECORDED / f"{name}.stderr.log").read_bytes()
    events = (RECORDED / f"{name}.events.jsonl").read_text()
    assert b"DataLoader" not in stderr
    alone = classify(recorded_execution(tmp_path, stderr, 1, harness=False))
    assert isinstance(alone, Outcome)
    assert (alone.kind, alone.where) == ("error", "main")  # the output alone tells nothing
    outcome = classify(recorded_execution(tmp_path, stderr, 1, events, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGKILL", "worker")
    assert outcome.detail == (
        "a DataLoader worker pid 24758 died of SIGKILL (Killed); the main process exited 1"
    )


def _reaped(signal: str, dataloader: bool = True, pid: int = 31) -> dict[str, JsonValue]:
    return {"event": "child_exit", "pid": pid, "signal": signal, "dataloader": dataloader}


def test_only_a_crash_signal_reaped_is_a_workers_death() -> None:
    # SIGTERM is torch's shutdown of a worker that did not exit in time (the main process
    # failing on its own): never the failure. The first crash of a DataLoader worker counts.
    assert worker_death("", None, [_reaped("SIGTERM")]) is None
    assert worker_death("", None, [_reaped("SIGKILL", dataloader=False)]) is None
    death = worker_death("", None, [_reaped("SIGTERM"), _reaped("SIGSEGV", pid=32)])
    assert death is not None
    assert (death.signal, death.pid, death.exit_code) == ("SIGSEGV", 32, None)


def test_a_reaped_child_of_another_kind_is_a_child_crash(tmp_path: Path) -> None:
    event = {**_reaped("SIGKILL", dataloader=False), "name": "ForkPoolWorker-3", "parent": 30}
    stderr = b'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: lost\n'
    execution = recorded_execution(tmp_path, stderr, 1, json.dumps(event) + "\n", harness=False)
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGKILL", "child")
    assert (outcome.pid, outcome.cmdline, outcome.exception) == (
        31,
        "ForkPoolWorker-3",
        "ValueError",
    )
    assert (outcome.detail or "").startswith(
        "child pid 31 (ForkPoolWorker-3) died of SIGKILL (Killed), reaped by its parent (pid 30)"
    )


def test_worker_crash_when_main_also_segfaults_is_a_main_crash(tmp_path: Path) -> None:
    stderr = (RECORDED / "dataloader-bus-1.stderr.log").read_bytes()
    outcome = classify(recorded_execution(tmp_path, stderr, -11))
    assert isinstance(outcome, Outcome)
    assert (outcome.signal, outcome.where) == ("SIGSEGV", "main")
    assert "SIGBUS" in (outcome.detail or "")


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
    outcome = classify(execution_in(tmp_path / "nothing-here", 5))
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
    outcome = classify(execution_in(tmp_path, 1))
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


LOGGED = (
    b"ERROR:root:lookup failed, falling back\n"
    b"Traceback (most recent call last):\n"
    b'  File "handled.py", line 4, in <module>\n'
    b'    {}["missing"]\n'
    b"KeyError: 'missing'\n"
    b"checkpoint dir not writable\n"
)


def test_a_traceback_the_process_went_on_from_is_only_the_last_one_printed(
    tmp_path: Path,
) -> None:
    """`logging.exception` then `sys.exit(2)`: it read `error exit 2 KeyError`, signature
    `error:KeyError`, message "'missing'\ncheckpoint dir not writable"."""
    outcome = classify(recorded_execution(tmp_path, LOGGED, 2, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.exception) == ("error", 2, None)
    assert outcome.last_traceback == ChainLink("KeyError", "'missing'")
    assert outcome.message == "checkpoint dir not writable"  # stderr's last line, as for any exit
    assert outcome.signature == "error:exit-2"
    assert outcome_phrase(outcome) == "error exit 2 (last traceback: KeyError)"
    assert "the last traceback printed (KeyError) did not end the process" in (outcome.detail or "")
    # `expect.exception` still matches it: `make` exits 2 after its recipe's traceback.
    assert judge_attempt(outcome, Expectation("error", exception="KeyError")).matched
    missed = judge_attempt(outcome, Expectation("error", exception="ValueError"))
    assert missed.mismatches == (
        "exception: expected ValueError, got none (last traceback: KeyError)",
    )
    # A hang went on too; a traceback that ended the process (exit 1) is its exception.
    hang = classify(execution_in_with(tmp_path, LOGGED, None, timed_out=True))
    assert isinstance(hang, Outcome)
    assert (hang.kind, hang.exception, hang.message) == ("hang", None, None)
    assert hang.last_traceback == ChainLink("KeyError", "'missing'")
    # Not in its words: a traceback the process went on from says nothing of where it hung
    # (`hang (last traceback: PermissionError)` named a child's, ended long before).
    assert outcome_phrase(hang) == "hang"
    uncaught = b"Traceback (most recent call last):\n  File \"u.py\", line 1\nKeyError: 'missing'\n"
    ended = classify(recorded_execution(tmp_path, uncaught, 1, harness=False))
    assert isinstance(ended, Outcome)
    assert (ended.exception, ended.message, ended.last_traceback) == ("KeyError", "'missing'", None)
    assert ended.signature == "error:KeyError"


def test_a_traceback_went_on_from_keeps_its_indented_lines() -> None:
    exception = PythonException(
        "RuntimeError",
        "Error(s) in loading state_dict for Net:\n\tMissing key(s): fc.bias\nresuming from scratch",
    )
    assert went_on(exception).message == (
        "Error(s) in loading state_dict for Net:\n\tMissing key(s): fc.bias"
    )


def test_a_threads_exception_is_never_what_ended_the_process() -> None:
    # A thread's exception ends its thread; the process goes on (or exits its own
    # way). It is the threads' to show (thread_exceptions), not the process's.
    thread = (
        "Exception in thread Thread-1:\nTraceback (most recent call last):\n"
        '  File "t.py", line 1, in run\nZeroDivisionError: division by zero\n\n'
    )
    main = 'Traceback (most recent call last):\n  File "t.py", line 2\nValueError: bad\n'
    assert parse_exception(thread + main) == parse_exception(main)
    assert parse_exception(thread) is None
    assert thread_exceptions(thread + main) == (
        PythonException("ZeroDivisionError", "division by zero"),
    )


def test_a_threads_traceback_cut_from_its_header_is_still_the_threads() -> None:
    # The threads' reports interleave on stderr: `Exception in thread` stands lines away
    # from its traceback, whose first frame (threading's _bootstrap_inner) says whose it is.
    boot = '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
    text = (
        "Exception in thread Exception in thread Thread-1 (work):\n"
        "Traceback (most recent call last):\n"
        f"{boot}    Thread-2 (work):\n"
        "Traceback (most recent call last):\n"
        f"{boot}    self.run()\n"
        "TypeError: worker failed\n"
        "Traceback (most recent call last):\n"
        '  File "conc.py", line 5, in <module>\n'
        "RuntimeError: main failed\n"
        "Traceback (most recent call last):\n"
        f"{boot}    self.run()\n"
        "TypeError: worker failed\n"
    )
    assert parse_chain(text) == (PythonException("RuntimeError", "main failed"),)
    assert [e.type for e in thread_exceptions(text)] == ["TypeError", "TypeError"]


def test_the_programs_record_of_its_exception_is_read_before_stderr(tmp_path: Path) -> None:
    # raised.txt (the sitecustomize's record, kept by the engine) holds the main
    # thread's traceback whole; stderr's copy is cut by the threads' interleaved reports.
    stderr = (
        b"Exception in thread Thread-1 (work):\nTraceback (most recent call last):\n"
        b'  File "conc.py", line 2, in work\nTypeError: worker failed\n'
        b"Traceback (most recent call last):\n"
        b'  File "conc.py", line 9, in <module>\nException in thread Thread-2 (work):\n'
    )
    execution = recorded_execution(tmp_path, stderr, 1, harness=False)
    (tmp_path / "raised.txt").write_text(
        "4242\nTraceback (most recent call last):\n"
        "  File \"conc.py\", line 7, in <module>\nKeyError: 'k'\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "conc.py", line 9, in <module>\nRuntimeError: main failed\n'
    )
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.exception, outcome.message) == ("RuntimeError", "main failed")
    assert outcome.chain == (
        ChainLink("KeyError", "'k'", "cause"),
        ChainLink("RuntimeError", "main failed"),
    )
    assert outcome.detail == (
        f"exit code 1; 2 threads died of an exception (TypeError; {THREADS_ARE_NOT_THE_END})"
    )


def test_a_threads_exception_line_last_is_no_message_of_the_process(tmp_path: Path) -> None:
    # The main thread exited 1 itself after its threads died: no exception ended it, and
    # the thread's `TypeError: worker failed`, last on stderr, is not its message.
    stderr = (
        b"Exception in thread Thread-1 (work):\nException in thread Thread-2 (work):\n"
        b"Traceback (most recent call last):\nTraceback (most recent call last):\n"
        b'  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
        b"self.run()\nTypeError: worker failed\n"
    )
    outcome = classify(recorded_execution(tmp_path, stderr, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.exception, outcome.message) == (None, None)
    assert (
        outcome.detail == f"exit code 1; 2 threads died of an exception ({THREADS_ARE_NOT_THE_END})"
    )
    # Its record says its main thread died of none (raised.txt, its pid only): a traceback
    # on stderr cut from its thread's header is a thread's too.
    cut = stderr + (
        b'Traceback (most recent call last):\n  File "t.py", line 2, in work\n'
        b"TypeError: worker failed\n"
    )
    outcome = classify(recorded_execution(tmp_path, cut, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.exception == "TypeError"  # no record: stderr's word, as before
    (tmp_path / "raised.txt").write_text("4242\n")
    outcome = classify(recorded_execution(tmp_path, cut, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.exception, outcome.message) == (None, None)
    (tmp_path / "raised.txt").unlink()
    # A message of the program's own, `sys.exit("...")`, is still read.
    said = stderr + b"could not finish: 2 workers failed\n"
    outcome = classify(recorded_execution(tmp_path, said, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.message == "could not finish: 2 workers failed"


def test_a_sys_exit_message_after_threads_died_is_read_though_it_begins_error(
    tmp_path: Path,
) -> None:
    # `sys.exit("Error: 2 workers failed")` after the threads died: `Error` names no class
    # (tracebacks.named_as_a_class, the one rule), so this is the program's message, not a
    # thread's exception line cut from its report; `StopIteration: x` is one.
    stderr = (
        b"Exception in thread Thread-1 (work):\nException in thread Thread-2 (work):\n"
        b"Traceback (most recent call last):\nTraceback (most recent call last):\n"
        b'  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
        b"self.run()\nTypeError: worker failed\n"
    )
    said = stderr + b"Error: 2 workers failed\n"
    outcome = classify(recorded_execution(tmp_path, said, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.message == "Error: 2 workers failed"
    cut = stderr + b"StopIteration: queue drained\n"
    outcome = classify(recorded_execution(tmp_path, cut, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.message is None
    # A module's dotted `Error` (shutil.Error, csv's `_csv.Error`) is a class, a thread's
    # line whose block the interleaving cut (no thread read of that type).
    for line in (b"shutil.Error: copy failed\n", b"_csv.Error: bad row\n"):
        outcome = classify(recorded_execution(tmp_path, stderr + line, 1, harness=False))
        assert isinstance(outcome, Outcome)
        assert outcome.message is None, line


@pytest.mark.parametrize(
    ("recorded", "last"),
    [
        ("threads-interleaved-message-alone", "worker failed"),
        ("threads-interleaved-types-run-together", "TypeErrorworker failed: worker failed"),
    ],
)
def test_a_threads_exception_line_cut_past_reading_is_no_message_of_the_process(
    tmp_path: Path, recorded: str, last: str
) -> None:
    # Recorded stderr of eight threads that died as the main thread exited 1 itself
    # (tests/support/threadexc.py `exit1`), in about 1 attempt in 70: the last line a
    # thread's message with its type cut away or run into another's. Other lines print
    # that message too: the threads', not a `sys.exit` message (which prints once).
    stderr = (RECORDED / f"{recorded}.stderr.log").read_bytes()
    assert stderr.decode().strip().splitlines()[-1] == last
    (tmp_path / "raised.txt").write_text("4242\n")
    outcome = classify(recorded_execution(tmp_path, stderr, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exception, outcome.message) == ("error", None, None)
    assert (outcome.detail or "").startswith("exit code 1; 8 threads died of an exception ("), (
        outcome.detail
    )
    # The same with a message of the program's own after it: that one is read.
    said = stderr + b"worker pool failed\n"
    outcome = classify(recorded_execution(tmp_path, said, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.message == "worker pool failed"


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
    # A faulthandler report of that signal proves it too (tracebacks.FatalError.signal).
    report = b"Fatal Python error: User defined signal 1\n\nStack (most recent call first):\n"
    outcome = classify(recorded_execution(tmp_path, report, 138))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGUSR1")
    outcome = classify(recorded_execution(tmp_path, b"", 137))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal) == ("crash", "SIGKILL")


def test_exit_128_plus_n_of_a_program_that_ran_alone_is_its_own_status(tmp_path: Path) -> None:
    # `sys.exit(139)`, where the runner knows no process besides the program ran
    # (and, exiting 139, it was not killed): an error, expectable by its exit code.
    ran = recorded_execution(tmp_path, b"", 139, harness=False)
    alone = dataclasses.replace(ran, descendants=False)
    outcome = classify(alone)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 139, None)
    assert (
        outcome.detail
        == f"exit code 139; 139 = 128 + SIGSEGV{AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN}"
    )
    assert judge_attempt(outcome, Expectation("error", exit_code=139)).matched
    # Not even the output's word makes it a death: it printed it (138 = 128 + SIGUSR1).
    (tmp_path / "stderr.log").write_bytes(b"sh: 1: 4242 User defined signal 1\n")
    said = classify(dataclasses.replace(alone, returncode=138))
    assert isinstance(said, Outcome)
    assert (said.kind, said.exit_code) == ("error", 138)
    # Where a process besides it ran, or the runner cannot tell: the shell's rule, as before.
    for descendants in (True, None):
        (tmp_path / "stderr.log").write_bytes(b"")
        wrapped = classify(dataclasses.replace(ran, descendants=descendants))
        assert isinstance(wrapped, Outcome)
        assert (wrapped.kind, wrapped.signal) == ("crash", "SIGSEGV")


PRINTED_CRASHES = [
    ("./run.sh: line 3:  4242 Segmentation fault      ./test_ops --gtest_filter=Conv*\n", 4242),
    (
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call "
        'first):\n  File "old.py", line 3 in <module>\n',
        None,
    ),
    (
        "subprocess.CalledProcessError: Command '['./a.out']' died with <Signals.SIGSEGV: 11>.\n",
        None,
    ),
    ("A process in the process pool was terminated abruptly while the future was running\n", None),
]
RAISED = (
    b'Traceback (most recent call last):\n  File "f.py", line 5, in <module>\nValueError: done\n'
)


@pytest.mark.parametrize(("printed", "pid"), PRINTED_CRASHES)
def test_a_childs_death_the_output_reports_is_none_where_no_child_ran(
    tmp_path: Path, printed: str, pid: int | None
) -> None:
    """A triage script printed an old CI log's crash report, then raised
    ValueError, with no child at all: it was `crash SIGSEGV (child pid 4242: ./test_ops)`."""
    ran = recorded_execution(tmp_path, printed.encode() + RAISED, 1, harness=False)
    outcome = classify(dataclasses.replace(ran, descendants=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.where) == ("error", 1, "main")
    assert (outcome.exception, outcome.message, outcome.pid) == ("ValueError", "done", None)
    assert (outcome.detail or "").startswith("exit code 1; the output reports a death (")
    assert (outcome.detail or "").endswith(NO_OTHER_PROCESS_RAN)
    # Nor a hang's crashed child.
    hung = classify(dataclasses.replace(ran, descendants=False, returncode=None, timed_out=True))
    assert isinstance(hung, Outcome)
    assert (hung.kind, hung.crashed_child) == ("hang", None)
    # A child ran, or the runner cannot tell (a container): the text counts, as before; the
    # detail says only the text tells of it, against the main process's own exception.
    for descendants in (True, None):
        crashed = classify(dataclasses.replace(ran, descendants=descendants))
        assert isinstance(crashed, Outcome)
        assert (crashed.kind, crashed.where, crashed.pid) == ("crash", "child", pid)
        assert (crashed.detail or "").endswith(
            "the main process exited 1 with its own uncaught ValueError; "
            + KNOWN_FROM_THE_OUTPUT_ALONE
        )


def test_a_dataloader_workers_death_the_output_reports_is_none_where_no_child_ran(
    tmp_path: Path,
) -> None:
    # torch's words about a worker, printed by a program that started none (a log it echoes).
    printed = b"DataLoader worker (pid 4242) is killed by signal: Segmentation fault.\n"
    ran = recorded_execution(tmp_path, printed + RAISED, 1, harness=False)
    outcome = classify(dataclasses.replace(ran, descendants=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.exception) == ("error", "main", "ValueError")
    assert outcome.detail == (
        "exit code 1; the output reports a death (a DataLoader worker pid 4242 died of SIGSEGV "
        f"(Segmentation fault)), {NO_OTHER_PROCESS_RAN}"
    )
    for descendants in (True, None):  # as before
        crashed = classify(dataclasses.replace(ran, descendants=descendants))
        assert isinstance(crashed, Outcome)
        assert (crashed.kind, crashed.where, crashed.signal) == ("crash", "worker", "SIGSEGV")


def test_a_death_the_main_process_raised_for_needs_no_word_of_doubt(tmp_path: Path) -> None:
    # subprocess's CalledProcessError ended the process: its own exception names the death.
    raised = (
        b'Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
        b"subprocess.CalledProcessError: Command '['./a.out']' died with <Signals.SIGSEGV: 11>.\n"
    )
    outcome = classify(recorded_execution(tmp_path, raised, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.cmdline) == ("crash", "child", "./a.out")
    assert outcome.detail == (
        "a child process (./a.out) died of SIGSEGV (Segmentation fault), as subprocess "
        "reports it; the main process exited 1"
    )


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
    # Its pid, which the native stacks list first (the report named it only in words).
    assert outcome.pid == 42
    # The slow item that was done after all is not blamed.
    freed = "".join(json.dumps(e) + "\n" for e in lines[:4])
    (tmp_path / "events.jsonl").write_text(freed)
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert outcome.where == "main"
    assert "worker" not in (outcome.detail or "")


# --- a hang after a descendant's death ----------------------------------------------------

# A multiprocessing.Pool worker's own report of its SIGSEGV (the stackdump's faulthandler).
POOL_WORKER_FATAL = (
    b"Fatal Python error: Segmentation fault\n\n"
    b"Stack (most recent call first):\n"
    b'  File "/w/pool.py", line 9 in work\n'
    b'  File "/usr/lib/python3.11/multiprocessing/pool.py", line 48 in mapstar\n'
    b'  File "/usr/lib/python3.11/multiprocessing/pool.py", line 125 in worker\n'
)


def test_hang_after_a_childs_death_names_it_and_stays_a_hang(tmp_path: Path) -> None:
    from reprospec.core.results import CrashedChild

    hung = execution_in_with(tmp_path, POOL_WORKER_FATAL, None, timed_out=True)
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("hang", None, "main")
    assert outcome.crashed_child == CrashedChild(
        "SIGSEGV", None, None, "as its faulthandler report says"
    )
    assert (outcome.pid, outcome.cmdline) == (None, None)  # a crashed child's, for `where: child`
    assert outcome.signature == "hang:after-child-SIGSEGV"
    assert (outcome.detail or "").startswith(
        "a child process died of SIGSEGV (Segmentation fault), as its faulthandler report "
        "says, before the hang: whatever waited for its work may wait forever"
    )
    assert "; no exit within the timeout" in (outcome.detail or "")
    assert outcome_phrase(outcome) == "hang after a child died of SIGSEGV"
    # Judged as before: `expect: hang` is met, a signal asked of the outcome is not.
    assert judge_attempt(outcome, Expectation("hang")).matched
    assert not judge_attempt(outcome, Expectation("fail", signal="SIGSEGV")).matched


def test_hang_after_a_reaped_childs_death_names_its_pid_and_command(tmp_path: Path) -> None:
    from reprospec.core.childexit import ChildExit

    hung = dataclasses.replace(
        execution_in_with(tmp_path, b"", None, timed_out=True),
        child_exits=(
            ChildExit(4100, "python pool.py", exit_code=0),
            ChildExit(4242, "/usr/bin/python3 pool.py --workers 2", signal="SIGSEGV"),
        ),
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert outcome.crashed_child is not None
    assert (outcome.crashed_child.pid, outcome.crashed_child.cmdline) == (
        4242,
        "/usr/bin/python3 pool.py --workers 2",
    )
    assert (outcome.detail or "").startswith(
        "child pid 4242 (/usr/bin/python3 pool.py --workers 2) died of SIGSEGV"
    )
    assert outcome_phrase(outcome) == (
        "hang after a child died of SIGSEGV (pid 4242: /usr/bin/python3 pool.py --workers 2)"
    )
    # Alike attempts count together without the pid; a grid cell's phrase has none either.
    assert outcome_phrase(outcome, pid=False) == (
        "hang after a child died of SIGSEGV (/usr/bin/python3 pool.py --workers 2)"
    )
    assert outcome_phrase(outcome, where=False).endswith(
        "SIGSEGV (/usr/bin/python3 pool.py --workers 2)"
    )


def test_hang_without_a_crashed_child_is_a_plain_hang(tmp_path: Path) -> None:
    from reprospec.core.childexit import ChildExit

    # A pool's terminate() stops its workers with SIGTERM: no crash, and no cause to name.
    hung = dataclasses.replace(
        execution_in_with(tmp_path, b"waiting\n", None, timed_out=True),
        child_exits=(ChildExit(4242, "python pool.py", signal="SIGTERM"),),
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert outcome.crashed_child is None
    assert outcome.signature == "hang"
    assert outcome_phrase(outcome) == "hang"
    assert (outcome.detail or "").startswith("no exit within the timeout")


def test_hang_after_a_broken_process_pool_says_terminated_abruptly(tmp_path: Path) -> None:
    stderr = (
        b"concurrent.futures.process.BrokenProcessPool: "
        b"A process in the process pool was terminated abruptly\n"
    )
    outcome = classify(execution_in_with(tmp_path, stderr, None, timed_out=True))
    assert isinstance(outcome, Outcome)
    assert outcome.crashed_child is not None
    assert outcome.crashed_child.signal is None
    assert outcome.signature == "hang:after-child-crash"
    assert outcome_phrase(outcome) == "hang after a child terminated abruptly"


# --- a worker's exit 0 ----------------------------------------------------


def test_a_worker_that_exited_with_0_is_an_error_of_the_worker(tmp_path: Path) -> None:
    event = {
        "event": "worker_exit",
        "worker": 0,
        "pid": 4250,
        "exit_code": 0,
        "index": 4,
        "phase": "train",
        "step": 2,
    }
    stderr = (
        b"Traceback (most recent call last):\n"
        b'  File "loop.py", line 1, in next\n'
        b"RuntimeError: DataLoader worker (pid(s) 4250) exited unexpectedly\n"
    )
    outcome = classify(recorded_execution(tmp_path, stderr, 1, json.dumps(event) + "\n"))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.exit_code) == ("error", None, 1)
    assert (outcome.exception, outcome.where) == ("RuntimeError", "worker")
    assert outcome.signature.startswith("error:RuntimeError:worker")
    assert "DataLoader worker 0 (pid 4250) exited with code 0" in (outcome.detail or "")


# --- the harness's own teardown -----------------------------------------------

_RANK_FAILED = (
    b"DataLoader worker (pid 4250) is killed by signal: Killed.\n"
    b"reprospec harness: rank 1 failed first:\n"
    b"Traceback (most recent call last):\n"
    b'  File "train.py", line 3, in step\n'
    b"ValueError: bad item\n"
)


def _teardown_events(pids: list[int]) -> str:
    lines = [
        {"event": "distributed", "world_size": 2, "backend": "gloo"},
        {"event": "ranks", "pids": [4242, 4243]},
        {"event": "step", "phase": "train", "step": 2, "rank": 1},
        {"event": "teardown", "pids": pids},
        {"event": "rank_exit", "rank": 1, "pid": 4243, "exit_code": 1, "phase": "train", "step": 2},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_the_harness_teardown_kills_are_no_crash_the_failed_rank_decides(
    tmp_path: Path,
) -> None:
    from reprospec.core.childexit import ChildExit

    killed = [4242, 4250, 4251]  # the surviving rank, its worker, the failed rank's worker
    execution = dataclasses.replace(
        recorded_execution(tmp_path, _RANK_FAILED, 1, _teardown_events(killed)),
        child_exits=(
            ChildExit(4251, "[pt_data_worker]", signal="SIGKILL"),
            ChildExit(4250, "[pt_data_worker]", signal="SIGKILL"),
        ),
    )
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.exit_code) == ("error", None, 1)
    assert (outcome.exception, outcome.message) == ("ValueError", "bad item")
    assert (outcome.phase, outcome.step, outcome.where) == ("train", 2, "main")
    assert "SIGKILL" not in (outcome.detail or "")
    # A SIGKILL the harness did not send (the OOM killer's) is still a crash...
    other = dataclasses.replace(
        execution, child_exits=(ChildExit(4999, "[pt_data_worker]", signal="SIGKILL"),)
    )
    crashed = classify(other)
    assert isinstance(crashed, Outcome)
    assert (crashed.kind, crashed.signal, crashed.where) == ("crash", "SIGKILL", "child")
    # ...and a command cannot declare its own crashes a teardown: only the harness may.
    command = dataclasses.replace(execution, harness=False)
    not_believed = classify(command)
    assert isinstance(not_believed, Outcome)
    assert (not_believed.kind, not_believed.signal) == ("crash", "SIGKILL")


def test_a_sigkill_with_no_oom_kill_counted_is_a_process_doing(tmp_path: Path) -> None:
    """A SIGKILL is a crash as the OOM killer's; where the kernel counted no OOM kill
    on the machine while the attempt ran, a process sent it (a script's `timeout -s KILL`,
    a shell's `Killed` line of it), and the main process's exit is the outcome."""
    from reprospec.core.childexit import ChildExit

    stderr = b"./ci.sh: line 2:  5310 Killed                  timeout -s KILL 1 python3 x.py\n"
    execution = dataclasses.replace(
        recorded_execution(tmp_path, stderr, 1, harness=False),
        child_exits=(ChildExit(5311, "[python3]", signal="SIGKILL"),),
        descendants=True,
    )
    crashed = classify(execution)  # no count read: as before
    assert isinstance(crashed, Outcome)
    assert (crashed.kind, crashed.signal, crashed.where) == ("crash", "SIGKILL", "child")
    sent = classify(dataclasses.replace(execution, no_oom_kill=True))
    assert isinstance(sent, Outcome)
    assert (sent.kind, sent.exit_code, sent.where) == ("error", 1, "main")
    assert sent.detail == (
        "exit code 1; child pid 5311 ([python3]) died of SIGKILL (Killed), reaped by the "
        f"engine, {SENT_BY_A_PROCESS}"
    )
    # Which process sent it is not known (a `kill -9` from outside is one): the words
    # said it was the main process's own doing.
    assert "the main process's own doing" not in (sent.detail or "")
    # The shell's word alone (the engine reaped nothing) is the same SIGKILL.
    printed = classify(dataclasses.replace(execution, child_exits=(), no_oom_kill=True))
    assert isinstance(printed, Outcome)
    assert (printed.kind, printed.exit_code) == ("error", 1)
    assert (printed.detail or "").endswith(SENT_BY_A_PROCESS)
    # A segfault beside it is a crash all the same: only SIGKILL is the OOM killer's.
    segv = ChildExit(5312, "./test_ops", signal="SIGSEGV")
    both = dataclasses.replace(
        execution, child_exits=(*execution.child_exits, segv), no_oom_kill=True
    )
    crash = classify(both)
    assert isinstance(crash, Outcome)
    assert (crash.kind, crash.signal, crash.pid) == ("crash", "SIGSEGV", 5312)


def test_a_137_with_no_oom_kill_counted_reports_a_sigkill_a_process_sent(tmp_path: Path) -> None:
    """A shell's (or `timeout --foreground`'s) 137 = 128 + SIGKILL where the kernel
    counted no OOM kill on the machine while the attempt ran reports a SIGKILL a process
    sent (`timeout -s KILL` of the step), as a child's is under rule 6: the status is the
    program's, `error` exit 137. Counted, or not read, it stays rule 4's crash."""
    from reprospec.core.childexit import ChildExit

    stderr = b"Killed\n"  # dash's word for timeout's own death, alone on its line
    execution = dataclasses.replace(
        recorded_execution(tmp_path, stderr, 137, harness=False),
        child_exits=(ChildExit(5311, "[python3]", signal="SIGKILL"),),
        descendants=True,
    )
    crashed = classify(execution)  # no count read (docker, an old kernel): as before
    assert isinstance(crashed, Outcome)
    assert (crashed.kind, crashed.signal, crashed.where) == ("crash", "SIGKILL", "main")
    sent = classify(dataclasses.replace(execution, no_oom_kill=True))
    assert isinstance(sent, Outcome)
    assert (sent.kind, sent.exit_code, sent.signal, sent.where) == ("error", 137, None, "main")
    assert sent.signature == "error:exit-137"
    # Why it is no crash, said once; then the child the engine reaped, named.
    assert sent.detail == (
        f"exit code 137; 137 = 128 + SIGKILL{A_SHELLS_SIGKILL_SENT_BY_A_PROCESS}; child pid "
        "5311 ([python3]) died of SIGKILL (Killed), reaped by the engine"
    )
    assert judge_attempt(sent, Expectation("error", exit_code=137)).matched
    assert not judge_attempt(sent, Expectation("crash", signal="SIGKILL")).matched
    # No child reaped (`timeout --foreground` reaps its own): the status alone says it.
    alone = classify(dataclasses.replace(execution, child_exits=(), no_oom_kill=True))
    assert isinstance(alone, Outcome)
    assert alone.detail == f"exit code 137; 137 = 128 + SIGKILL{A_SHELLS_SIGKILL_SENT_BY_A_PROCESS}"
    # Nor the shell's `Killed`: nothing shows a kill (`sh -c 'exit 137'`, a program a Python
    # one exec'd), and the status may be a program's own; it said `sent by a process`.
    (tmp_path / "quiet").mkdir()
    quiet = recorded_execution(tmp_path / "quiet", b"", 137, harness=False)
    unseen = classify(dataclasses.replace(quiet, descendants=True, no_oom_kill=True))
    assert isinstance(unseen, Outcome)
    assert (unseen.kind, unseen.exit_code) == ("error", 137)
    assert unseen.detail == f"exit code 137; 137 = 128 + SIGKILL{A_SHELLS_137_OR_AN_EXIT_STATUS}"
    # A DataLoader worker's SIGKILL the engine reaped is a kill seen: the words said none
    # was seen, then named the worker's death sent by a process.
    (tmp_path / "worker").mkdir()
    reaped = _reaped("SIGKILL", pid=77)
    worker = recorded_execution(tmp_path / "worker", b"", 137, json.dumps(reaped) + "\n")
    by_worker = classify(
        dataclasses.replace(worker, harness=False, descendants=True, no_oom_kill=True)
    )
    assert isinstance(by_worker, Outcome)
    assert (by_worker.kind, by_worker.exit_code, by_worker.where) == ("error", 137, "worker")
    assert A_SHELLS_SIGKILL_SENT_BY_A_PROCESS in (by_worker.detail or "")
    assert A_SHELLS_137_OR_AN_EXIT_STATUS not in (by_worker.detail or "")
    # The OOM killer's kill counted in the attempt's cgroup: no_oom_kill is then False.
    oom = "the kernel's OOM killer killed 1 process in the attempt's memory cgroup"
    killed = classify(dataclasses.replace(execution, oom=oom))
    assert isinstance(killed, Outcome)
    assert (killed.kind, killed.signal, killed.oom_killed) == ("crash", "SIGKILL", True)
    # Another signal's 128+N is a death as before, and the main process's own SIGKILL too.
    segv = classify(dataclasses.replace(execution, returncode=139, no_oom_kill=True))
    assert isinstance(segv, Outcome)
    assert (segv.kind, segv.signal) == ("crash", "SIGSEGV")
    own = classify(dataclasses.replace(execution, returncode=-9, no_oom_kill=True))
    assert isinstance(own, Outcome)
    assert (own.kind, own.signal, own.where) == ("crash", "SIGKILL", "main")
    # A segfault of a child beside it is rule 6's crash, which the 137 no longer hides.
    child = ChildExit(5312, "./test_ops", signal="SIGSEGV")
    both = dataclasses.replace(
        execution, child_exits=(*execution.child_exits, child), no_oom_kill=True
    )
    crash = classify(both)
    assert isinstance(crash, Outcome)
    assert (crash.kind, crash.signal, crash.where, crash.pid) == ("crash", "SIGSEGV", "child", 5312)


def test_the_types_an_attempt_printed_before_its_crash_are_every_threads_and_chains() -> None:
    # minimize's point 7: a user's evictor thread died of AttributeError before the
    # main thread's SIGSEGV; a chain counts whole; shutdown noise and what follows the
    # crash report (a DataLoader's EOFError once its worker died) do not.
    text = (
        "Exception in thread Thread-1 (evictor):\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner\n'
        "    self.run()\n"
        "AttributeError: 'Namespace' object has no attribute 'gap'\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 3, in <module>\n'
        "KeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 5, in <module>\n'
        "ValueError: bad\n"
        "Exception ignored in: <function Pool.__del__ at 0x7f>\n"
        "Traceback (most recent call last):\n"
        '  File "pool.py", line 1, in __del__\n'
        "OSError: closed\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f3a (most recent call first):\n"
        '  File "uaf.py", line 30 in <module>\n'
        "Traceback (most recent call last):\n"
        '  File "connection.py", line 399, in _recv\n'
        "EOFError\n"
    )
    assert raised_types(text) == ("AttributeError", "KeyError", "ValueError")
    worker = "ERROR: Unexpected segmentation fault encountered in worker.\n" + text
    assert raised_types(worker) == ()
    assert raised_types("") == ()
    assert raised_types("Fatal Python error: Segmentation fault\n") == ()


def test_a_record_without_a_traceback_is_read_as_its_exceptions_lines() -> None:
    # `sys.tracebacklimit = 0`: the hook prints each exception's lines and the links alone.
    assert recorded_chain("ValueError: bad\nwhile loading x.yaml\n") == (
        PythonException("ValueError", "bad\nwhile loading x.yaml"),
    )
    chained = (
        "KeyError: 'k'\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "RuntimeError: lookup failed\n"
    )
    assert recorded_chain(chained) == (
        PythonException("KeyError", "'k'", "cause"),
        PythonException("RuntimeError", "lookup failed"),
    )
    assert recorded_chain("KeyboardInterrupt\n") == (PythonException("KeyboardInterrupt", None),)
    # What is no exception's line is not read (a record of none is "").
    assert recorded_chain("") == ()
    assert recorded_chain("  + Exception Group\n") == ()
    # A record with a traceback is read as stderr is.
    whole = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nOSError: x\n'
    assert recorded_chain(whole) == parse_chain(whole) == (PythonException("OSError", "x"),)


def test_raised_types_reads_a_chain_whose_first_block_was_cut_off_as_a_chain() -> None:
    # A log cut at its head can start at a chain's link: its block starts a chain of
    # its own, read as whose its frames say (_chains), as every other chain is. An
    # ordinary one counts; a weakref finalizer's at exit (`_exitfunc`) is shutdown noise
    # whether or not its first block survived the cut.
    linked = (
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 5, in <module>\n'
        "ValueError: bad\n"
    )
    assert raised_types(linked) == ("ValueError",)
    at_exit = (
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/weakref.py", line 666, in _exitfunc\n'
        "    f()\n"
        "OSError: closed\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 9, in <module>\n'
        "KeyError: 'x'\n"
    )
    assert raised_types(at_exit) == ("KeyError",)


# --- the kernel's OOM killer ------------------------------------------------------------

# As the local runner says it (memcgroup.OomWatch) where the count of its cgroup rose.
OOM_SAID = (
    "the kernel's OOM killer killed 1 process in the attempt's memory cgroup (its limit: 300.0 MiB)"
)


def test_a_sigkill_is_the_oom_killers_only_where_the_runner_saw_it_count_a_kill(
    tmp_path: Path,
) -> None:
    killed = dataclasses.replace(execution_in_with(tmp_path, b"Killed\n", -9), oom=OOM_SAID)
    outcome = classify(killed)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGKILL", "main")
    assert outcome.oom_killed
    assert outcome.detail == f"killed by SIGKILL (Killed); {OOM_SAID}"
    assert outcome_phrase(outcome) == "crash SIGKILL by the OOM killer"
    # The signature is the signal's: `expect: crash SIGKILL` still matches it.
    assert outcome.signature == "crash:SIGKILL:main"
    # No kill counted: a SIGKILL is anyone's (`kill -9`, a batch system, a timeout).
    anyone = classify(dataclasses.replace(killed, oom=None))
    assert isinstance(anyone, Outcome)
    assert not anyone.oom_killed
    assert outcome_phrase(anyone) == "crash SIGKILL"
    # The OOM killer sends only SIGKILL: a segfault beside a counted kill is no OOM kill.
    segfault = classify(dataclasses.replace(killed, returncode=-11))
    assert isinstance(segfault, Outcome)
    assert not segfault.oom_killed
    assert OOM_SAID not in (segfault.detail or "")


def test_a_shells_137_with_an_oom_kill_counted_is_no_exit_of_its_own(tmp_path: Path) -> None:
    """A shell's 137 where the runner counted an OOM kill for the attempt shows the death
    (a SIGKILL leaves no core, and bash prints no report of a pipeline's member): its
    `exit 137` is no exit of its own, as it was where nothing showed the kill (`error`
    exit 137, the OOM words lost). Without the count, the line's own exit still reads."""
    line = "sh -c 'exit 137'"
    quiet = dataclasses.replace(
        execution_in_with(tmp_path, b"", 137), descendants=True, oom=OOM_SAID
    )
    killed = classify(quiet, argv=["/bin/sh", "-c", line])
    assert isinstance(killed, Outcome)
    assert (killed.kind, killed.signal, killed.where) == ("crash", "SIGKILL", "main")
    assert killed.oom_killed
    own = classify(dataclasses.replace(quiet, oom=None), argv=["/bin/sh", "-c", line])
    assert isinstance(own, Outcome)
    assert (own.kind, own.exit_code) == ("error", 137)


def test_a_dataloader_worker_the_oom_killer_killed_is_named(tmp_path: Path) -> None:
    """Recorded from torch 2.13: a worker decoding a 2 GiB sample in a 300 MiB cgroup. Its
    main process says only `is killed by signal: Killed.`, as for any `kill -9`."""
    name = "dataloader-oom-killed"
    execution = recorded_execution(
        tmp_path,
        (RECORDED / f"{name}.stderr.log").read_bytes(),
        1,
        (RECORDED / f"{name}.events.jsonl").read_text(),
        harness=False,
    )
    outcome = classify(dataclasses.replace(execution, oom=OOM_SAID))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGKILL", "worker")
    assert outcome.oom_killed
    assert outcome_phrase(outcome) == "crash SIGKILL by the OOM killer (worker)"
    assert outcome.detail is not None
    assert outcome.detail.endswith(f"; {OOM_SAID}")
    assert "DataLoader worker pid 22829 died of SIGKILL" in outcome.detail


def test_hang_after_a_pool_worker_was_sigkilled_by_a_process_says_so(tmp_path: Path) -> None:
    """nu-c: a Pool worker SIGKILLed with no OOM kill counted is no crash, but the pool's
    map then waits forever: the hang's detail names the lost worker, where it said only
    'no exit within the timeout' and the stacks showed the wait."""
    from reprospec.core.childexit import ChildExit

    hung = dataclasses.replace(
        execution_in_with(tmp_path, b"", None, timed_out=True),
        child_exits=(ChildExit(4242, "python pool.py", signal="SIGKILL"),),
        descendants=True,
        no_oom_kill=True,
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.crashed_child) == ("hang", None, None)
    assert outcome.signature == "hang"
    detail = outcome.detail or ""
    assert detail.startswith("no exit within the timeout"), detail
    assert (
        "; before the hang, child pid 4242 (python pool.py) died of SIGKILL (Killed), reaped "
        f"by the engine, {SENT_BY_A_PROCESS}; whatever waited for its work"
    ) in detail
    # Where an OOM kill may have been its death, it is the hang's likely cause, as before.
    oom = classify(dataclasses.replace(hung, no_oom_kill=False))
    assert isinstance(oom, Outcome)
    assert oom.signature == "hang:after-child-SIGKILL"


def test_last_printed_names_the_last_traceback_a_program_went_on_from() -> None:
    """nu-c: what a pass's warning quotes of a traceback it printed and exited 0 after."""
    from reprospec.outcome.tracebacks import last_printed

    stderr = (
        "Traceback (most recent call last):\n"
        '  File "tb0.py", line 3, in <module>\n'
        "    1 / 0\n"
        "ZeroDivisionError: division by zero\n"
        "done\n"
    )
    assert last_printed(stderr) == "ZeroDivisionError: division by zero"
    assert last_printed("all good\n") is None
    assert last_printed("") is None


def test_last_printed_names_whose_exception_python_ignored() -> None:
    """A `__del__`'s error read `(Python ignored it: Exception ignored in)`, the line cut at
    its first colon; a weakref finalizer's at exit took no name, or the program's own line
    printed before it (`note: ...` read `note`)."""
    from reprospec.outcome.tracebacks import last_printed

    def ignored(before: str, frame: str = "__del__") -> str | None:
        return last_printed(
            f"{before}Traceback (most recent call last):\n"
            f'  File "x.py", line 3, in {frame}\n'
            "ValueError: bad\n"
        )

    said = "ValueError: bad (Python ignored it: {})"
    assert ignored("Exception ignored in: <function A.__del__ at 0x7f>\n") == said.format(
        "Exception ignored in A.__del__"
    )
    assert ignored("Exception ignored in: <finalize object at 0x7f; dead>\n") == said.format(
        "Exception ignored in a finalize object"
    )
    assert ignored("Exception ignored in atexit callback: <function f at 0x7f>\n") == (
        said.format("Exception ignored in atexit callback")
    )
    assert ignored("note: here\n", "_exitfunc") == said.format(
        "a weakref.finalize callback at exit"
    )
    # Python 3.14 names the object after its words, with no `: ` and a colon at the end;
    # 3.13 names a file by its dotted class: neither leaves an address in the label.
    assert ignored(
        "Exception ignored while calling deallocator <function A.__del__ at 0x7f748f420040>:\n"
    ) == said.format("Exception ignored while calling deallocator A.__del__")
    assert ignored(
        "Exception ignored while closing generator <generator object gen at 0x7f1>:\n"
    ) == said.format("Exception ignored while closing generator a generator object")
    assert ignored("Exception ignored in atexit callback <function f at 0x7f36>:\n") == (
        said.format("Exception ignored in atexit callback")
    )
    assert ignored(
        "Exception ignored in: <_io.FileIO name='x.bin' mode='wb' closefd=True>\n"
    ) == said.format("Exception ignored in a _io.FileIO object")
    assert ignored("Error in atexit._run_exitfuncs:\n") == said.format(
        "Error in atexit._run_exitfuncs"
    )


def test_a_process_pool_broken_by_a_sigkill_a_process_sent_is_no_crash(tmp_path: Path) -> None:
    """nu-c: a ProcessPoolExecutor worker SIGKILLed with no OOM kill counted read `crash
    (child)` from concurrent.futures' 'terminated abruptly', where a Pool's or a reaped
    child's SIGKILL is the main process's doing: its error, the kill in the detail."""
    stderr = (
        b"Traceback (most recent call last):\n"
        b'  File "ppe.py", line 9, in <module>\n'
        b"    print(list(ex.map(work, range(8))))\n"
        b"concurrent.futures.process.BrokenProcessPool: A process in the process pool was "
        b"terminated abruptly while the future was running or pending.\n"
    )
    event = {"event": "child_exit", "pid": 4242, "signal": "SIGKILL", "name": "ForkProcess-1"}
    execution = dataclasses.replace(
        recorded_execution(tmp_path, stderr, 1, json.dumps(event) + "\n", harness=False),
        descendants=True,
        no_oom_kill=True,
    )
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exit_code, outcome.where) == ("error", 1, "main")
    assert outcome.exception == "concurrent.futures.process.BrokenProcessPool"
    assert (
        "child pid 4242 (ForkProcess-1) died of SIGKILL (Killed), reaped by its parent, "
        f"{SENT_BY_A_PROCESS}"
    ) in (outcome.detail or "")
    # Where an OOM kill may have been its death, a crash of the child, as before.
    crashed = classify(dataclasses.replace(execution, no_oom_kill=False))
    assert isinstance(crashed, Outcome)
    assert (crashed.kind, crashed.signal, crashed.where) == ("crash", "SIGKILL", "child")
    # No kill the engine saw, and no record of the program's (no Python with the engine's
    # hooks, a container's): the text alone is the death, as before.
    (tmp_path / "events.jsonl").write_text("")
    text = classify(execution)
    assert isinstance(text, Outcome)
    assert (text.kind, text.where) == ("crash", "child")
    # The program's own record (a Python process whose multiprocessing reaping the hooks
    # watch, and which would have written a worker's death by a crash signal): none was,
    # so the worker exited (os._exit) or was terminated (SIGTERM): rule 6 counts no crash.
    (tmp_path / "raised.txt").write_text("4242\n" + stderr.decode())
    watched = classify(execution)
    assert isinstance(watched, Outcome)
    assert (watched.kind, watched.exit_code, watched.where) == ("error", 1, "main")
    assert watched.detail == f"exit code 1; {POOL_WORKER_NO_CRASH}"
    # A record of another exception (the program's CalledProcessError: the pool was a child
    # Python's, run without the hooks, whose workers' deaths nobody wrote): a crash.
    (tmp_path / "raised.txt").write_text(
        "4242\nsubprocess.CalledProcessError: Command '['python3', '-I', 'inner.py']' "
        "returned non-zero exit status 1.\n"
    )
    other = classify(execution)
    assert isinstance(other, Outcome)
    assert (other.kind, other.where) == ("crash", "child"), other


# A real attempt's stderr (torch 2.x, a spawn DataLoader): the main process raised, and
# multiprocessing's atexit terminate() of its daemonic workers made torch's SIGCHLD
# handler raise in the atexit callback. 1 run in 2 read `crash SIGTERM (worker)`.
ATEXIT_TERMINATED = b"""\
Traceback (most recent call last):
  File "/tmp/t.py", line 6, in <module>
    raise ValueError("bad batch")
ValueError: bad batch
Exception ignored in atexit callback: <function _exit_function at 0x7f682279c860>
Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/util.py", line 357, in _exit_function
    p.join()
  File "/venv/torch/utils/data/_utils/signal_handling.py", line 73, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 9075) is killed by signal: Terminated.\x20
"""


def test_a_worker_its_main_process_terminated_at_exit_is_no_crash(tmp_path: Path) -> None:
    """torch's "is killed by signal: Terminated." of a worker multiprocessing's atexit
    stopped, after the main process's own ValueError, read `crash SIGTERM (worker)`: a
    SIGTERM is how a parent stops a child (as a reaped one's is not counted), and the
    outcome is the main process's error."""
    assert worker_death(ATEXIT_TERMINATED.decode()) is None
    outcome = classify(recorded_execution(tmp_path, ATEXIT_TERMINATED, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.exception) == ("error", "main", "ValueError")
    assert outcome.message == "bad batch"
    # A crash signal in the same words is still the worker's crash.
    segv = ATEXIT_TERMINATED.replace(b"Terminated", b"Segmentation fault")
    death = worker_death(segv.decode())
    assert death is not None
    assert (death.signal, death.pid) == ("SIGSEGV", 9075)


# A real rich traceback (rich 15, `rich.traceback.install(width=100)`) of an uncaught
# ValueError, raised from `main` called at module level, the way it prints to stderr.
RICH_TRACEBACK = """\
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /tmp/areaF/r/app.py:14 in <module>                                           │
│                                                                              │
│ ❱ 14 main()                                                                  │
│                                                                              │
│ /tmp/areaF/r/app.py:12 in main                                               │
│                                                                              │
│   11 │   if bs > 8:                                                          │
│ ❱ 12 │   │   raise ValueError(f"batch size {bs} exceeds buffer of 8 rows")   │
╰──────────────────────────────────────────────────────────────────────────────╯
ValueError: batch size 16 exceeds buffer of 8 rows
"""


def test_a_rich_traceback_is_its_exception_as_cpythons_is() -> None:
    # Read as no traceback: `error exit 1` with the message `ValueError: ...`, where the
    # program raised a ValueError, and a ticket that pasted it said `no failure found`.
    assert parse_chain(RICH_TRACEBACK) == (
        PythonException("ValueError", "batch size 16 exceeds buffer of 8 rows"),
    )


def _coloured(text: str) -> str:
    """`text` as rich writes it under FORCE_COLOR: box characters red, the exception's type
    bold (rich 15's own escapes)."""
    out = []
    for line in text.splitlines():
        if line[:1] in "╭│╰":
            line = f"\x1b[31m{line[0]}\x1b[0m{line[1:-1]}\x1b[31m{line[-1]}\x1b[0m"
        elif ": " in line:
            kind, _, message = line.partition(": ")
            line = f"\x1b[1;91m{kind}: \x1b[0m{message}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_a_coloured_rich_traceback_is_its_exception() -> None:
    # Under FORCE_COLOR every box line and the exception line carry escapes: a live run
    # (raw stderr) read no traceback, where a pasted copy (escapes taken out) read one.
    coloured = _coloured(RICH_TRACEBACK)
    assert "\x1b[1;91mValueError: \x1b[0mbatch" in coloured
    assert parse_chain(coloured) == (
        PythonException("ValueError", "batch size 16 exceeds buffer of 8 rows"),
    )


def test_a_frame_path_rich_folded_over_two_lines_is_one_file() -> None:
    # rich folds a path too long for the box: the second half alone read as the file.
    folded = RICH_TRACEBACK.replace(
        "│ /tmp/areaF/r/app.py:12 in main                                               │",
        "│ /tmp/areaF/r/deep/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/more_directories_here/fram │\n"
        "│ es/helper_module_name.py:2 in inner_function_with_long_name                  │",
    )
    frames = [line for line in unboxed(folded.splitlines()) if line.startswith("  File")]
    assert frames[-1] == (
        '  File "/tmp/areaF/r/deep/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/more_directories_here/'
        'frames/helper_module_name.py", line 2, in inner_function_with_long_name'
    )
    # Wrapped at a space (`:1736 in` + `_call_impl`): the space comes back.
    wrapped = unboxed(
        [
            "╭── Traceback (most recent call last) ──╮",
            "│ /v/site-packages/torch/module.py:1736 in │",
            "│ _call_impl                               │",
            "╰──────────────────────────────────────────╯",
        ]
    )
    assert wrapped[1] == '  File "/v/site-packages/torch/module.py", line 1736, in _call_impl'


def test_a_rich_box_cut_before_its_end_leaves_the_rest_of_the_log() -> None:
    # Head+tail stderr cut inside a box, or a program killed while printing it: every
    # later line, the real traceback included, was dropped.
    cut = (
        "╭───── Traceback (most recent call last) ─────╮\n"
        "│ /tmp/app.py:14 in <module>                  │\n"
        "... 2048 bytes left out ...\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/app.py", line 3, in <module>\n'
        "    d['k']\n"
        "KeyError: 'k'\n"
    )
    assert parse_chain(cut) == (PythonException("KeyError", "'k'"),)


def test_a_square_rich_box_a_legacy_windows_console_prints_is_read() -> None:
    square = RICH_TRACEBACK.replace("╭", "┌").replace("╮", "┐").replace("╰", "└").replace("╯", "┘")
    assert parse_chain(square) == (
        PythonException("ValueError", "batch size 16 exceeds buffer of 8 rows"),
    )


def test_a_rich_traceback_is_seen_by_the_other_readers() -> None:
    # A pass that logged one (RichHandler(rich_tracebacks=True)) got no warning: the gate
    # looked for CPython's header, with its colon.
    assert last_printed(RICH_TRACEBACK) == "ValueError: batch size 16 exceeds buffer of 8 rows"
    assert last_printed(_coloured(RICH_TRACEBACK)) == (
        "ValueError: batch size 16 exceeds buffer of 8 rows"
    )
    assert raised_types(_coloured(RICH_TRACEBACK) + "Fatal Python error: Aborted\n") == (
        "ValueError",
    )
    assert crash_reported("\x1b[31mFatal Python error: Aborted\x1b[0m\n")


def test_a_workers_traceback_quoted_by_its_pool_ends_at_the_closing_quotes() -> None:
    text = (
        "multiprocessing.pool.RemoteTraceback: \n"
        '"""\n'
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 4, in f\n'
        "ValueError: bad item 2\n"
        '"""\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 8, in <module>\n'
        "ValueError: bad item 2\n"
    )
    assert parse_chain(text) == (
        PythonException("ValueError", "bad item 2", "cause"),
        PythonException("ValueError", "bad item 2"),
    )


class _CountedMatches:
    """A pattern that counts the lines it is asked to match."""

    def __init__(self, pattern: object) -> None:
        self.pattern = pattern
        self.asked = 0

    def match(self, line: str) -> object:
        self.asked += 1
        return self.pattern.match(line)  # type: ignore[attr-defined]


def test_a_logs_lines_are_read_for_a_pools_quote_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a traceback is one a pool quoted was asked by a walk back from each header
    to the nearest `\"\"\"` line, up to 1000 lines: 1000 matches a header, and 20,000 chained
    tracebacks took 15 s (benchmarks/chained_tracebacks.py measures it). The quotes are
    looked for once per log; a pool's quote past the chains is still read as one, and one
    more than 1000 lines above a header is still too far to be its."""
    from reprospec.outcome import tracebacks

    counted = _CountedMatches(tracebacks._QUOTES)
    monkeypatch.setattr(tracebacks, "_QUOTES", counted)
    chained = (
        "Traceback (most recent call last):\n"
        '  File "/w/job.py", line 3, in load\n'
        "KeyError: 'x'\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/w/job.py", line 7, in main\n'
        "RuntimeError: top\n"
    )
    pool = (
        "multiprocessing.pool.RemoteTraceback: \n"
        '"""\n'
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 4, in f\n'
        "ValueError: bad item 2\n"
        '"""\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 8, in <module>\n'
        "ValueError: bad item 2\n"
    )
    text = chained * 500 + pool
    assert parse_chain(text) == (
        PythonException("ValueError", "bad item 2", "cause"),
        PythonException("ValueError", "bad item 2"),
    )
    assert counted.asked <= len(text.splitlines())
    far = pool.replace('"""\nTraceback', '"""\n' + "progress\n" * 1000 + "Traceback", 1)
    assert parse_chain(far)[0] == PythonException("ValueError", 'bad item 2\n"""', "cause")


def test_a_quoted_block_in_a_message_is_the_messages_own() -> None:
    """Only a pool's quote of a worker's traceback ends at a `\"\"\"` line: a message that
    quotes a block was cut to its first line."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/t.py", line 3, in <module>\n'
        "ValueError: template did not parse:\n"
        '"""\n'
        "{{ name }\n"
        '"""\n'
    )
    assert parse_chain(text) == (
        PythonException("ValueError", 'template did not parse:\n"""\n{{ name }\n"""'),
    )


def test_a_workers_chain_quoted_by_its_pool_ends_at_the_closing_quotes() -> None:
    """The worker's own chain inside the quotes: its last exception's message ends there."""
    text = (
        "concurrent.futures.process._RemoteTraceback: \n"
        '"""\n'
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 4, in f\n'
        "KeyError: 2\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 6, in f\n'
        "ValueError: bad item 2\n"
        '"""\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/w/pool.py", line 8, in <module>\n'
        "ValueError: bad item 2\n"
    )
    assert parse_chain(text) == (
        PythonException("KeyError", "2", "context"),
        PythonException("ValueError", "bad item 2", "cause"),
        PythonException("ValueError", "bad item 2"),
    )
