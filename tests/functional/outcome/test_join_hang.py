"""A hang in a join names the thread the program is stuck on, not one that sleeps beside it.

A real program through the CLI: its main thread joins `w`, which waits forever for a lock
held by the main thread, beside a daemon `heartbeat` that sleeps in a loop. faulthandler
dumps the newest thread first, the heartbeat, and both wait in C code below their own
line: the hang read `hang in beat`, the thread that is stuck on nothing.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.cli import Cli

_JOB = textwrap.dedent(
    """
    import queue, threading, time
    lock = threading.Lock()
    lock.acquire()
    q, stop = queue.Queue(), threading.Event()
    def beat():
        while {beat}:
            time.sleep(0)
    def work():
        {work}
    w = threading.Thread(target=work, name="w")
    w.start()
    threading.Thread(target=beat, name="heartbeat", daemon=True).start()
    {end}
    """
)


# `work`'s body: a consumer polling an empty queue, lines 10 to 14.
_POLLS = (
    "while True:\n"
    "        try:\n"
    "            q.get(timeout=0.2)\n"
    "        except queue.Empty:\n"
    "            continue"
)


@pytest.mark.parametrize(
    ("beat", "work", "end"),
    [
        # A heartbeat that sleeps between beats; `w` on a held lock.
        ("not time.sleep(0.05)", "lock.acquire()", "w.join()"),
        # The main thread leaves the program's code and waits at exit for `w`: a join too.
        ("not time.sleep(0.05)", "lock.acquire()", "pass"),
        # A heartbeat that waits on an Event with a timeout, as `w` waits in q.get(): the
        # same threading frames, but the heartbeat's wakes (its own line passes a timeout).
        ("not stop.wait(0.05)", "q.get()", "w.join()"),
        # The main thread polls `w` in a sleep loop instead of joining it: a join too.
        ("not time.sleep(0.05)", "lock.acquire()", "while w.is_alive(): time.sleep(0.05)"),
        # `w` a consumer that polls its queue with a timeout, forever (a thread that never
        # ends): its timed wait wakes, but below a queue's get it is no heartbeat's, and
        # ranks above the heartbeat's sleep (it read `hang in beat`, review).
        ("not time.sleep(0.05)", _POLLS, "w.join()"),
    ],
)
def test_a_join_hang_names_the_thread_it_waits_for_not_the_heartbeat(
    cli: Cli, tmp_path: Path, beat: str, work: str, end: str
) -> None:
    (tmp_path / "job.py").write_text(_JOB.format(beat=beat, work=work, end=end))
    spec = tmp_path / "spec.yaml"
    # The timeout counts from the spawn, and the stacks are read at it: the program must be
    # at its hang by then (the interpreter started, `w` in `work`). At a load of 12 on two
    # cores it got there 0.2-0.3 s in (a dump before that reads `hang in <module>`): 1 s
    # left a more loaded machine's slow start little room (flaky in full runs, alone not).
    spec.write_text(
        "reprospec: 1\nname: join-hang\ncommand: python job.py\n"
        "run: {timeout: 3s}\nexpect: {outcome: hang}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert outcome["hung_in"]["function"] == "work", outcome
    # Where in `work` it was caught: its one line, or a line of the polling loop.
    line = outcome["hung_in"]["line"]
    assert 10 <= line <= 10 + work.count("\n"), outcome
    assert f"hang in work (job.py:{line})" in result.stdout, result.stdout
