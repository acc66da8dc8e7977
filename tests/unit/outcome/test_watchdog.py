"""A faulthandler watchdog's dump at the end of stderr: the program timed itself out."""

from __future__ import annotations

from reprospec.core.results import PythonFrame
from reprospec.outcome.watchdog import hung_frame, watchdog_timeout

DUMP = """\
Timeout (0:00:00.500000)!
Thread 0x00007f46c9a636c0 (most recent call first):
  File "/work/job.py", line 4 in worker
  File "/usr/lib/python3.11/threading.py", line 982 in run

Thread 0x00007f46cadd8b80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1119 in join
  File "/work/job.py", line 6 in <module>
"""


def test_a_dump_that_ends_stderr_is_the_watchdogs_end_and_says_where_it_sat() -> None:
    found = watchdog_timeout("loading\nstep 1\n" + DUMP)
    assert found is not None
    assert found.header == "Timeout (0:00:00.500000)!"
    # The main thread joins the worker thread: the hang sits in the worker's frame.
    assert hung_frame(found) == PythonFrame("/work/job.py", 4, "worker")


def test_a_dump_the_program_went_on_after_is_no_watchdogs_end() -> None:
    # exit=False: it dumped and went on, and what it printed after ended it.
    assert watchdog_timeout(DUMP + "Traceback (most recent call last):\nValueError: x\n") is None
    assert watchdog_timeout(DUMP + "done\n") is None
    # A header alone, a program's own words, is no dump.
    assert watchdog_timeout("Timeout (0:00:05)!\n") is None
    assert watchdog_timeout("") is None
