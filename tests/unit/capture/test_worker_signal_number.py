"""A pasted "DataLoader worker (pid N) is killed by signal: 11" (older torch, some
wrappers: the number, not torch's words) is a worker's SIGSEGV, as the live outcome reads it."""

from __future__ import annotations

from reprospec.capture.ticket import read_ticket


def test_a_pasted_worker_death_by_number() -> None:
    ticket = read_ticket(
        "$ python train.py\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: 11. \n"
    )
    assert (ticket.failure.signal, ticket.failure.where) == ("SIGSEGV", "worker")
