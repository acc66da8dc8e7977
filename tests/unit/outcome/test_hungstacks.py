"""Where a hang sits, read from its stack dump: the DataLoader workers told from their parent
(one command line for all), the worker stuck fetching an item, the user's innermost frame."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reprospec.core.results import Outcome
from reprospec.core.words import outcome_phrase
from reprospec.outcome.classify import classify
from reprospec.outcome.hungstacks import (
    WORKER_LABEL,
    Frame,
    hung_processes,
    label_workers,
    stuck_worker,
    where_stuck,
)
from tests.support.paths import DATA
from tests.support.plans import execution_in

# A real dump (nu22's dl2, workers=2, mode=hang: a worker deadlocked on a lock it holds,
# train.py:19), its interpreter and workdir paths renamed: the main process waits in
# torch's queue, worker 6257 waits for an index, worker 6264 is stuck in __getitem__.
DUMP = (DATA / "stacks" / "dataloader-worker-hang.stack.txt").read_text()

# py-spy's way of writing a process that did not answer SIGUSR1 (process/stacks.py).
PY_SPY = """\
--- pid 77 (python train.py) [py-spy] ---
Process 77: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 77 (idle): "MainThread"
    __getitem__ (/work/proj/train.py:19)
    <listcomp> (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py:54)
    fetch (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py:54)
    _worker_loop (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py:374)
    run (/usr/lib/python3.11/multiprocessing/process.py:108)
    <module> (/work/proj/train.py:22)
"""


def test_the_workers_are_told_from_their_parent_by_their_stacks() -> None:
    processes = hung_processes(DUMP)
    assert [(p.pid, p.worker, p.fetching) for p in processes] == [
        (6053, False, False),
        (6257, True, False),  # idle: waiting for an index, torch's fetch not on its stack
        (6264, True, True),
    ]
    assert processes[0].frame == Frame("/work/proj/train.py", 22, "<module>")
    assert processes[2].frame == Frame("/work/proj/train.py", 19, "__getitem__")


def test_the_hang_sits_in_the_worker_fetching_an_item() -> None:
    stuck = where_stuck(DUMP)
    assert stuck == stuck_worker(DUMP)
    assert stuck is not None
    assert stuck.describe() == (
        "the DataLoader worker pid 6264 was fetching an item, in "
        "/work/proj/train.py:19 in __getitem__"
    )


def test_without_a_stuck_worker_the_hang_sits_in_the_first_process_in_user_code() -> None:
    main_only = DUMP.split("--- pid 6257", 1)[0]
    assert stuck_worker(main_only) is None
    stuck = where_stuck(main_only)
    assert stuck is not None
    assert stuck.describe() == "pid 6053 was in /work/proj/train.py:22 in <module>"
    assert where_stuck("") is None


def test_py_spy_dumps_are_read_too() -> None:
    stuck = stuck_worker(PY_SPY)
    assert stuck is not None
    assert (stuck.pid, stuck.frame) == (77, Frame("/work/proj/train.py", 19, "__getitem__"))
    assert "--- pid 77 (python train.py) [py-spy] [DataLoader worker] ---" in label_workers(PY_SPY)


def test_only_the_workers_headers_are_labelled() -> None:
    labelled = label_workers(DUMP)
    headers = [line for line in labelled.splitlines() if line.startswith("--- pid")]
    assert [h.endswith(f"{WORKER_LABEL} ---") for h in headers] == [False, True, True]
    assert labelled.replace(f" {WORKER_LABEL}", "") == DUMP
    assert label_workers("no dump") == "no dump"


def test_a_commands_hang_in_a_worker_is_where_worker_its_signature_unchanged(
    tmp_path: Path,
) -> None:
    """No harness wrote events (a command's own DataLoader): the stacks name the worker. The
    signature stays `hang`, so expect, compare and history match it as before (nu22 MED-3:
    `where: main`, no word of the worker)."""
    for log in ("stdout.log", "stderr.log", "events.jsonl"):
        (tmp_path / log).write_text("")
    (tmp_path / "stack.txt").write_text(DUMP)
    hung = dataclasses.replace(
        execution_in(tmp_path, None, timed_out=True), stack_path=tmp_path / "stack.txt"
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.pid, outcome.signature) == (
        "hang",
        "worker",
        6264,
        "hang",
    )
    assert outcome.detail is not None
    assert outcome.detail.endswith(
        "; the DataLoader worker pid 6264 was fetching an item, in "
        "/work/proj/train.py:19 in __getitem__"
    )
    assert outcome_phrase(outcome) == "hang (worker)"
    # Stacks with no worker stuck: the main process's hang, as before.
    (tmp_path / "stack.txt").write_text(DUMP.split("--- pid 6257", 1)[0])
    main = classify(hung)
    assert isinstance(main, Outcome)
    assert (main.where, main.pid, main.signature) == ("main", None, "hang")
