from __future__ import annotations

from reprospec.capture.fromlog import skeleton
from reprospec.capture.ticket import read_ticket
from reprospec.capture.writer import render_spec
from tests.unit.capture.test_ticket import POOL_WORKER_DUMP

_HANGS = "It segfaults in a child and then hangs forever:\n\n```\n"


def test_a_hung_parent_of_a_dead_child_names_a_pool_only_where_the_dump_shows_one() -> None:
    # Any multiprocessing child reads `where: child`: a plain Process's dump was said to
    # leave "a Pool" waiting, which the log never showed.
    pool = render_spec(skeleton(read_ticket(_HANGS + POOL_WORKER_DUMP + "```\n"), "t.md"))
    assert "as a live run reads a Pool left waiting for it (a Pool's map never" in pool
    plain_dump = "".join(
        line
        for line in POOL_WORKER_DUMP.splitlines(keepends=True)
        if "multiprocessing/pool.py" not in line and "context.py" not in line
    )
    read = read_ticket(_HANGS + plain_dump + "```\n")
    assert (read.failure.outcome, read.failure.where) == ("hang", "child")
    plain = render_spec(skeleton(read, "t.md"))
    assert "as a live run reads a parent left waiting for it" in plain
    assert "Pool" not in plain
