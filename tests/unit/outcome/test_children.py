"""A descendant's death read from the shell's own words and from signals that are no crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.results import Outcome
from reprospec.outcome.children import elastic_exit, rank_exception
from tests.support.torchrun import child_failed_report


@pytest.mark.parametrize(
    ("line", "signal", "pid", "command"),
    [
        # bash right-aligns the pid in 5 columns, pads the description, may add "(core dumped)".
        (
            "./run.sh: line 4:  5975 Segmentation fault      ./t --gtest_filter=A.B",
            "SIGSEGV",
            5975,
            "./t --gtest_filter=A.B",
        ),
        (
            "bash: line 1: 123456 Bus error               (core dumped) ./a b",
            "SIGBUS",
            123456,
            "./a b",
        ),
        ("bash: 13884 Aborted                 ./crasher", "SIGABRT", 13884, "./crasher"),
    ],
)
def test_shell_reports_of_a_childs_death(line: str, signal: str, pid: int, command: str) -> None:
    from reprospec.outcome.children import _reported

    assert _reported(f"some output\n{line}\nmore output\n") == (
        signal,
        pid,
        command,
        "as the shell reports it",
    )


def test_terminated_children_are_no_crash() -> None:
    from reprospec.outcome.children import _reported

    # A parent stopping its child with SIGTERM (`kill %1`, a pool's terminate()) is no crash.
    assert _reported("bash: line 1:  4242 Terminated              sleep 100\n") is None


def test_a_rank_torchrun_started_raised_the_failure_not_torchrun(tmp_path: Path) -> None:
    # Recorded: torch 2.13's torchrun of two ranks, rank 1 raising RuntimeError. The
    # launcher ends with its own ChildFailedError, which a live run read as the failure, so
    # the spec capture wrote from the ticket (`exception: RuntimeError`) never matched.
    from reprospec.outcome.classify import classify
    from reprospec.outcome.tracebacks import PythonException
    from tests.support.paths import DATA
    from tests.support.plans import execution_in

    recorded = (DATA / "children" / "torchrun-rank-error.stderr.log").read_bytes()
    for name, stderr in (
        ("as printed", recorded),
        # torchrun's `--log-line-prefix-template` / `--tee` prefix on each rank line.
        ("prefixed", _prefixed(recorded)),
    ):
        (tmp_path / "stderr.log").write_bytes(stderr)
        (tmp_path / "stdout.log").write_bytes(b"")
        (tmp_path / "events.jsonl").write_text("")
        outcome = classify(execution_in(tmp_path, 1, harness=False))
        assert isinstance(outcome, Outcome), name
        assert (outcome.kind, outcome.exception, outcome.where) == (
            "error",
            "RuntimeError",
            "child",
        ), name
        assert outcome.message == "CUDA error: device-side assert triggered", name
        assert "local rank 1 raised it (torchrun ended with ChildFailedError" in (
            outcome.detail or ""
        ), name
    # A rank killed by a signal is a crash, said by its exit code: no exception to read.
    signalled = recorded.replace(b"(exitcode: 1)", b"(exitcode: -6)")
    assert rank_exception(signalled.decode()) is None
    # Without torchrun's line, nothing is a rank's.
    assert rank_exception("Traceback (most recent call last):\nValueError: x\n") is None
    rank = rank_exception(recorded.decode())
    assert rank is not None
    assert rank.local_rank == 1
    assert rank.chain == (
        PythonException("RuntimeError", "CUDA error: device-side assert triggered"),
    )


def test_a_ranks_message_ends_at_torchruns_next_log_line() -> None:
    """Recorded: torch 2.13's torchrun of two gloo ranks, rank 1 raising ValueError; torchrun
    logs `W1207 08:01:13.909000 21127 torch/distributed/elastic/multiprocessing/api.py:1028]
    Sending process 21254 closing signal SIGTERM` before its `failed` line. The message ran
    on into it: 'rank 1: bad shard\nW1207 ...', a time and pids that differ in each run."""
    from reprospec.outcome.tracebacks import PythonException
    from tests.support.paths import DATA

    recorded = (DATA / "children" / "torchrun-rank-then-launcher-log.stderr.log").read_text()
    rank = rank_exception(recorded)
    assert rank is not None
    assert rank.local_rank == 1
    assert rank.chain == (PythonException("ValueError", "rank 1: bad shard"),)


@pytest.mark.parametrize(
    "log_line",
    [
        # every level torch's Python log formatter writes (V with TORCH_LOGS=+..., C: critical)
        "V1207 08:01:13.909000 21127 torch/_dynamo/convert_frame.py:100] [0/0] compiling",
        "I1207 08:01:13.909000 21127 torch/distributed/run.py:792] starting",
        "E1207 08:01:13.909000 21127 torch/distributed/elastic/api.py:869] failed",
        "C1207 08:01:13.909000 21127 torch/_logging/x.py:1] critical",
        # c10's warning as a plain python's process group prints it at exit, rank-tagged
        "[rank0]:[W1207 08:01:13.909000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: "
        "process group has NOT been destroyed before we destruct ProcessGroupNCCL.",
    ],
)
def test_a_message_ends_at_torchs_log_lines_of_every_level(log_line: str) -> None:
    from reprospec.outcome.tracebacks import PythonException, parse_chain

    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "ValueError: bad shard\n"
        f"{log_line}\n"
    )
    assert parse_chain(text) == (PythonException("ValueError", "bad shard"),)


def test_a_rank_that_exits_first_is_the_cause_its_peers_errors_the_consequence(
    tmp_path: Path,
) -> None:
    # Recorded: torch 2.13's torchrun of two ranks (gloo), rank 1 `sys.exit(3)` after an
    # all-reduce, rank 0's next all-reduce then `RuntimeError: Connection closed by peer`.
    # The last traceback before torchrun's `failed (exitcode: 3) local_rank: 1` was rank
    # 0's, read as rank 1's: `RuntimeError (child)`, "local rank 1 raised it".
    from reprospec.outcome.classify import classify
    from tests.support.paths import DATA
    from tests.support.plans import execution_in

    recorded = (DATA / "children" / "torchrun-rank-exit3.stderr.log").read_bytes()
    rank = rank_exception(recorded.decode())
    assert rank is not None
    assert (rank.local_rank, rank.chain, rank.exit_code, rank.peers) == (
        1,
        (),
        3,
        ((0, "RuntimeError"),),
    )
    (tmp_path / "stderr.log").write_bytes(recorded)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert outcome.exception is not None
    assert (outcome.kind, outcome.exception.rsplit(".")[-1], outcome.where) == (
        "error",
        "ChildFailedError",
        "child",
    )
    assert (outcome.detail or "").endswith(
        "local rank 1 failed first: it exited with code 3, with no traceback (torchrun's root "
        "cause, its ChildFailedError); rank 0's RuntimeError came after it (its peer had gone)"
    )


def _prefixed(stderr: bytes) -> bytes:
    """The rank's traceback lines as torchrun prefixes them (`[rank1]: ...`)."""
    lines = stderr.decode().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("Traceback"))
    end = next(i for i, line in enumerate(lines) if line.startswith("RuntimeError"))
    for index in range(start, end + 1):
        lines[index] = "[rank1]: " + lines[index]
    return "\n".join(lines).encode()


# bash's report of a pipeline's job, as `bash -c 'set -o pipefail; echo hi | python3 -c
# "..." | cat'` prints it where the middle process segfaulted: the job's first line carries
# the shell's prefix, each later process's line begins with its `| `, and a process still
# running when the report was made has no description at all.
_PIPELINE_REPORT = (
    "bash: 23352 Done                    echo hi\n"
    "     23353 Segmentation fault      | python3 -c 'import ctypes; ctypes.string_at(0)'\n"
    "     23354                       | cat\n"
)


def test_bashs_report_of_a_pipeline_lists_the_crashed_process_as_one_of_it() -> None:
    from reprospec.outcome.children import (
        _reported,
        a_pipelines_child,
        pipeline_death,
        pipeline_stage,
    )

    text = f"hi\n{_PIPELINE_REPORT}"
    # The dead process and its command, the pipeline's `| ` cut from it.
    assert _reported(text) == (
        "SIGSEGV",
        23353,
        "python3 -c 'import ctypes; ctypes.string_at(0)'",
        "as the shell reports it",
    )
    assert [pipeline_stage(text, pid) for pid in (23352, 23353)] == [0, 1]
    assert a_pipelines_child(text, 23353)
    assert not a_pipelines_child(text, 23352)  # the first process: the command's program
    assert pipeline_stage(text, 4242) is None  # a pid the report does not name
    death = pipeline_death(text)
    assert death is not None
    assert (death[0].signal, death[0].pid, death[0].cmdline, death[1]) == (
        "SIGSEGV",
        23353,
        "python3 -c 'import ctypes; ctypes.string_at(0)'",
        1,
    )
    # A process the shell ran alone: its report is one line, no pipeline.
    alone = "bash: line 1: 23353 Segmentation fault      (core dumped) python3 x.py\n"
    assert pipeline_stage(alone, 23353) is None
    assert pipeline_death(alone) is None
    # Nor a lone report beside another job's line that is no pipeline's.
    assert pipeline_stage(f"bash: 23350 Done  echo hi\n{alone}", 23353) is None


def test_a_pipelines_first_process_that_crashed_is_the_commands_program() -> None:
    # `set -o pipefail; python3 crash.py 2>&1 | tee log.txt`, as bash 5.2 reports it.
    from reprospec.outcome.children import pipeline_death

    text = (
        "run.sh: line 2: 25793 Segmentation fault      python3 crash.py 2>&1\n"
        "     25794 Done                    | tee log.txt\n"
    )
    death = pipeline_death(text)
    assert death is not None
    assert (death[0].pid, death[0].cmdline, death[1]) == (25793, "python3 crash.py 2>&1", 0)


def test_a_ranks_prefixes_name_its_global_rank_as_torchruns_root_cause_says() -> None:
    # The second node of two (two ranks each): local rank 1 is global rank 3, and torch's
    # excepthook prefixes its lines `[rank3]:`. The root cause entry says which is which;
    # read as `[rank1]:`, rank 3's ValueError was another rank's and rank 2's a peer's.
    text = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/work/train.py", line 5, in <module>\n'
        '[rank3]:     raise ValueError("bad shard")\n'
        "[rank3]: ValueError: bad shard\n"
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/work/train.py", line 7, in <module>\n'
        "[rank2]:     dist.barrier()\n"
        "[rank2]: RuntimeError: Connection closed by peer\n"
        "E1206 09:14:31.551000 32431 torch/distributed/elastic/multiprocessing/api.py:1002] "
        "failed (exitcode: 1) local_rank: 1 (pid: 32651) of binary: /usr/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-12-06_09:14:31\n"
        "  host      : node2\n"
        "  rank      : 3 (local_rank: 1)\n"
        "  exitcode  : 1 (pid: 32651)\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n"
    )
    rank = rank_exception(text)
    assert rank is not None
    assert (rank.local_rank, [(e.type, e.message) for e in rank.chain]) == (
        1,
        [("ValueError", "bad shard")],
    )


def test_a_launcher_that_wraps_torchruns_failure_is_read_as_the_ranks_live_and_from_a_log(
    tmp_path: Path,
) -> None:
    # A launcher that runs torchrun's main and re-raises its ChildFailedError (`raise
    # RuntimeError("training failed") from e`): capture read the rank's ValueError (where:
    # child), a live run the main process's RuntimeError, so the captured spec never held.
    from reprospec.capture.ticket import read_ticket
    from reprospec.outcome.classify import classify
    from tests.support.paths import DATA
    from tests.support.plans import execution_in

    recorded = (DATA / "children" / "torchrun-rank-record.stderr.log").read_text()
    wrapped = recorded.rstrip("\n") + (
        "\n\nThe above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/work/launch.py", line 12, in <module>\n'
        '    raise RuntimeError("training failed") from e\n'
        "RuntimeError: training failed\n"
    )
    (tmp_path / "stderr.log").write_text(wrapped)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    live = classify(execution_in(tmp_path, 1, harness=False))
    assert isinstance(live, Outcome)
    ticket = read_ticket(wrapped).failure
    read = ("error", "ValueError", "bad shard on rank 1", "child")
    assert (live.kind, live.exception, live.message, live.where) == read
    assert (ticket.outcome, ticket.exception, ticket.message, ticket.where) == read


def test_torchruns_root_cause_names_the_rank_and_its_recorded_traceback(tmp_path: Path) -> None:
    # Recorded: torch 2.13's torchrun of two ranks (gloo), rank 1 raising ValueError in a
    # `@record` main, rank 0's barrier then `RuntimeError: Connection closed by peer`.
    # torchrun's report copies rank 1's error file under `Root Cause (first observed
    # failure)`; a paste of the report alone (the ranks' output in its `--log-dir`, or the
    # paste's start cut) read as torchrun's own ChildFailedError "with no traceback".
    from reprospec.outcome.classify import classify
    from reprospec.outcome.tracebacks import PythonException
    from tests.support.paths import DATA
    from tests.support.plans import execution_in

    recorded = (DATA / "children" / "torchrun-rank-record.stderr.log").read_text()
    raised = (PythonException("ValueError", "bad shard on rank 1"),)
    start = recorded.index('Traceback (most recent call last):\n  File "/venv/bin/torchrun"')
    # Unprefixed (an older torch, a `--log-line-prefix-template` of ''), the last traceback
    # before torchrun's line is rank 0's: the error file says whose is the cause.
    unprefixed = "".join(
        line.split("]: ", 1)[-1] if line.startswith("[rank") else line
        for line in recorded.splitlines(keepends=True)
    )
    for name, text in (
        ("as printed", recorded),
        ("the report alone", recorded[start:]),
        ("with torchrun's log line", recorded[recorded.index("E1206") :]),
        ("unprefixed", unprefixed),
    ):
        rank = rank_exception(text)
        assert rank is not None, name
        assert (rank.local_rank, rank.chain, rank.exit_code) == (1, raised, 1), name
    (tmp_path / "stderr.log").write_text(recorded[start:])
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 1, harness=False))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.exception, outcome.message, outcome.where) == (
        "error",
        "ValueError",
        "bad shard on rank 1",
        "child",
    )
    # A signal's root cause is a crash, said by its exit code: no exception to read.
    signalled = recorded[start:].replace("exitcode  : 1 (pid", "exitcode  : -11 (pid")
    assert rank_exception(signalled) is None


# torchrun's report alone (the ranks' output went to its --log-dir): the other rank's entry,
# ended by torchrun (SIGTERM), comes first, then the root cause, rank 1's exit 1.
_REPORT = child_failed_report()


def test_torchruns_first_failed_exit_is_read_once_for_a_run_and_a_ticket() -> None:
    """capture/ticket.py kept a regex of its own for torchrun's root-cause block beside this
    module's reader; both read it here: the failed rank's code (not the -15 torchrun gave
    the other rank) and where its word begins (the ranks' own lines are before it)."""
    found = elastic_exit(_REPORT)
    assert found is not None
    assert (found.code, _REPORT[found.start :].split("\n")[0]) == (
        1,
        "Root Cause (first observed failure):",
    )
    line = "E1206 api.py:1002] failed (exitcode: -6) local_rank: 1 (pid: 9) of binary: python3\n"
    found = elastic_exit("[rank1]: boom\n" + line + _REPORT.replace(": 1 (pid: 3159)", ": -6"))
    assert found is not None
    assert (found.code, found.start) == (-6, len("[rank1]: boom\nE1206 api.py:1002] "))
    assert elastic_exit("Traceback (most recent call last):\nValueError: x\n") is None
