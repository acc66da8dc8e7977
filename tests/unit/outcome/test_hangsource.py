"""The text a hung thread's own line is read from: the loop a sleep sits in."""

from __future__ import annotations

import pytest

from reprospec.core.results import PythonFrame as Frame
from reprospec.outcome.hangsource import loop_at

_TEXT = """\
import time
while w.is_alive(): time.sleep(0.1)  # one line
def main():
    while True:
        if ready():

            time.sleep(1)
        if not w.is_alive():  # polled
            break
    time.sleep(2)
for _ in range(3):
    time.sleep(3)
"""


@pytest.mark.parametrize(
    ("line", "loop"),
    [
        (2, ("while w.is_alive(): time.sleep(0.1)",)),
        (
            7,
            (
                "while True:",
                "if ready():",
                "time.sleep(1)",
                "if not w.is_alive():",
                "break",
            ),
        ),
        (10, ()),  # in a function, in no loop
        (12, ("for _ in range(3):", "time.sleep(3)")),
        (1, ()),
        (99, ()),
    ],
)
def test_the_loop_a_line_is_in(line: int, loop: tuple[str, ...]) -> None:
    assert loop_at(Frame("job.py", line, "f"), source={"job.py": _TEXT}.get) == loop


def test_a_loop_is_read_whole_by_its_syntax() -> None:
    # Each was cut by the indentation walk (the `):` of a split header stopped it, a sleep
    # or break past 12 lines was not reached, an inner `for` hid the `while`): `hang in
    # <module>` where the loop waits on `w` (review).
    split = "while (\n    w.is_alive()\n    and not done\n):\n    time.sleep(0.1)\n"
    assert loop_at(Frame("job.py", 5, "f"), source={"job.py": split}.get) == (
        "while (",
        "w.is_alive()",
        "and not done",
        "):",
        "time.sleep(0.1)",
    )
    far = "while True:\n" + "    x = 1\n" * 20 + "    time.sleep(1)\n    if not w.is_alive():\n"
    far += "        break\n"
    loop = loop_at(Frame("job.py", 22, "f"), source={"job.py": far}.get)
    assert (loop[0], loop[-2:]) == ("while True:", ("if not w.is_alive():", "break"))
    nested = "while w.is_alive():\n    for t in pending:\n        t.step(); time.sleep(0.1)\n"
    assert (
        loop_at(Frame("job.py", 3, "f"), source={"job.py": nested}.get)[0] == "while w.is_alive():"
    )
    # A function's loop is its own: a loop around the `def` is not the line's.
    inner = "while w.is_alive():\n    def f():\n        time.sleep(1)\n    f()\n"
    assert loop_at(Frame("job.py", 3, "f"), source={"job.py": inner}.get) == ()


def test_a_loop_too_far_above_in_no_python_or_text_unknown_is_none() -> None:
    # A text `ast` cannot parse is read by indentation, as near as `_LOOP_REACH`.
    far = "while True:\n" + "    x = 1\n" * 20 + "    time.sleep(1)\n    print 'x'\n"
    assert loop_at(Frame("job.py", 22, "f"), source={"job.py": far}.get) == ()
    near = "while True:\n    time.sleep(1)\n    print 'x'\n"
    assert loop_at(Frame("job.py", 2, "f"), source={"job.py": near}.get) == (
        "while True:",
        "time.sleep(1)",
        "print 'x'",
    )
    assert loop_at(Frame("job.py", 2, "f"), source=lambda _: None) == ()


def test_every_hang_reader_must_be_told_whose_text_it_reads() -> None:
    # `source` defaulted to this host's files (`on_disk`): a new caller that left it out
    # read today's files where the attempt ran another's (a docker container's `/work`, a
    # stored run's since edited), and the place it read was another line's.
    import inspect

    from reprospec.minimize.hangplace import place_of
    from reprospec.outcome import hangsource, hungstacks, watchdog

    readers = (
        hangsource.code_at,
        hangsource.loop_at,
        hangsource.blocking_line,
        hungstacks.hung_processes,
        hungstacks.stuck_child,
        hungstacks.where_stuck,
        hungstacks.hung_frame,
        hungstacks.hung_threads,
        hungstacks._stuck_rank,
        watchdog.hung_frame,
        place_of,
    )
    for reader in readers:
        source = inspect.signature(reader).parameters["source"]
        assert source.kind is inspect.Parameter.KEYWORD_ONLY, reader.__qualname__
        assert source.default is inspect.Parameter.empty, reader.__qualname__
