"""An asyncio program's hang read from its dump: the tasks the stackdump sitecustomize
appends after the threads (`Task NAME (most recent call first):`), read as the threads a
join waits for where the main thread runs the event loop."""

from __future__ import annotations

from reprospec.outcome.hangsource import unread
from reprospec.outcome.hungstacks import Frame, hung_frame, hung_processes, hung_threads

# `asyncio.run(main())`, main awaiting `waiter(ev)` on an Event no one sets, beside a task
# that sleeps in a loop: the main thread in the loop's select, then the tasks the stackdump
# sitecustomize appends (`_dump_tasks`), the sleeper dumped first.
_ASYNC = """\
--- pid 77 (python aio.py) ---
Current thread 0x00007fc416de3b80 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 468 in select
  File "/usr/lib/python3.11/asyncio/base_events.py", line 1884 in _run_once
  File "/usr/lib/python3.11/asyncio/base_events.py", line 607 in run_forever
  File "/usr/lib/python3.11/asyncio/base_events.py", line 640 in run_until_complete
  File "/usr/lib/python3.11/asyncio/runners.py", line 118 in run
  File "/usr/lib/python3.11/asyncio/runners.py", line 190 in run
  File "/w/aio.py", line 14 in <module>

Task Task-2 (most recent call first):
  File "/usr/lib/python3.11/asyncio/tasks.py", line 649 in sleep
  File "/w/aio.py", line 8 in beat

Task Task-1 (most recent call first):
  File "/usr/lib/python3.11/asyncio/locks.py", line 213 in wait
  File "/w/aio.py", line 4 in waiter
  File "/w/aio.py", line 12 in main
"""


def test_a_coroutine_deadlock_is_read_in_its_task_not_the_event_loop() -> None:
    # The tasks were no thread: the hang read `hang in <module>` at `asyncio.run(main())`.
    assert hung_frame(_ASYNC, source=unread) == Frame("/w/aio.py", 4, "waiter")
    (process,) = hung_processes(_ASYNC, source=unread)
    assert process.awaits
    assert process.joined == (Frame("/w/aio.py", 4, "waiter"), Frame("/w/aio.py", 8, "beat"))
    assert process.describe() == (
        "pid 77's asyncio tasks were in /w/aio.py:4 in waiter, /w/aio.py:8 in beat, its main "
        "thread running the event loop that awaits them in /w/aio.py:14 in <module>"
    )
    # Minimize's place: the task's coroutine, outermost first, as a thread's.
    threads = hung_threads(_ASYNC, source=unread)
    assert threads is not None
    assert [t[2].function for t in threads] == ["main", "beat"]
    # The tasks are no threads of the process: a dump without them reads as before.
    plain = _ASYNC.split("\nTask ", 1)[0]
    assert hung_frame(plain, source=unread) == Frame("/w/aio.py", 14, "<module>")


# The dump tags a task that awaits another task (`[awaits a task]`) and keeps asyncio's
# order; the engine ranks: an asyncio Event's wait (a lock's, a queue's) first, as a
# thread's lock, then a task awaiting a future no one sets, then one awaiting a task,
# then the sleeper. The child had ordered the tagged ones last, by asyncio's private
# `_fut_waiter`, and the engine ranked the Event's wait with a busy task's (review).
_TAGGED = """\
--- pid 78 (python aio.py) ---
Current thread 0x00007fc416de3b80 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 468 in select
  File "/usr/lib/python3.11/asyncio/base_events.py", line 1884 in _run_once
  File "/usr/lib/python3.11/asyncio/base_events.py", line 607 in run_forever
  File "/usr/lib/python3.11/asyncio/base_events.py", line 640 in run_until_complete
  File "/usr/lib/python3.11/asyncio/runners.py", line 118 in run
  File "/usr/lib/python3.11/asyncio/runners.py", line 190 in run
  File "/w/aio.py", line 30 in <module>

Task Task-1 (most recent call first): [awaits a task]
  File "/w/aio.py", line 25 in main

Task Task-2 (most recent call first):
  File "/usr/lib/python3.11/asyncio/tasks.py", line 649 in sleep
  File "/w/aio.py", line 8 in beat

Task Task-3 (most recent call first):
  File "/w/aio.py", line 18 in orphan

Task Task-4 (most recent call first):
  File "/usr/lib/python3.11/asyncio/locks.py", line 213 in wait
  File "/w/aio.py", line 4 in waiter
"""


def test_the_engine_ranks_the_tasks_the_dump_tags_in_its_order() -> None:
    (process,) = hung_processes(_TAGGED, source=unread)
    assert process.awaits
    assert [f.function for f in process.joined] == ["waiter", "orphan", "main", "beat"]
    assert hung_frame(_TAGGED, source=unread) == Frame("/w/aio.py", 4, "waiter")
    threads = hung_threads(_TAGGED, source=unread)
    assert threads is not None
    assert [t[0].function for t in threads] == ["waiter", "orphan", "main", "beat"]


# A task whose Event wait is in a timeout's `async with` (3.11+'s `asyncio.timeout`, which
# leaves no frame), dumped before a task stuck on an Event for good: the timed one ranked
# with it, for good too, and as the first dumped titled the hang (review).
_TIMED_TEXT = """\
import asyncio


async def timed(ev):
    while True:
        async with asyncio.timeout(1):
            await ev.wait()


async def stuck(ev):
    await ev.wait()
"""
_TIMED = """\
--- pid 79 (python aio.py) ---
Current thread 0x00007fc416de3b80 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 468 in select
  File "/usr/lib/python3.11/asyncio/base_events.py", line 607 in run_forever
  File "/usr/lib/python3.11/asyncio/base_events.py", line 640 in run_until_complete
  File "/usr/lib/python3.11/asyncio/runners.py", line 118 in run
  File "/usr/lib/python3.11/asyncio/runners.py", line 190 in run
  File "/w/aio.py", line 20 in <module>

Task Task-2 (most recent call first):
  File "/usr/lib/python3.11/asyncio/locks.py", line 213 in wait
  File "/w/aio.py", line 7 in timed

Task Task-3 (most recent call first):
  File "/usr/lib/python3.11/asyncio/locks.py", line 213 in wait
  File "/w/aio.py", line 11 in stuck
"""


def test_a_task_waiting_under_a_timeouts_async_with_ranks_after_one_stuck_for_good() -> None:
    def source(path: str) -> str:
        return _TIMED_TEXT if path == "/w/aio.py" else ""

    assert hung_frame(_TIMED, source=source) == Frame("/w/aio.py", 11, "stuck")
    # Unread, nothing tells them apart: the dump's order stands.
    assert hung_frame(_TIMED, source=unread) == Frame("/w/aio.py", 7, "timed")
