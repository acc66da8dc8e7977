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
    assert loop_at(Frame("job.py", line, "f"), {"job.py": _TEXT}.get) == loop


def test_a_loop_too_far_above_or_text_unknown_is_none() -> None:
    far = "while True:\n" + "    x = 1\n" * 20 + "    time.sleep(1)\n"
    assert loop_at(Frame("job.py", 22, "f"), {"job.py": far}.get) == ()
    assert loop_at(Frame("job.py", 2, "f"), lambda _: None) == ()
