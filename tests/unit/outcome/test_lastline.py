"""An error's message from stderr's last line: never a stack's frame."""

from __future__ import annotations

from reprospec.outcome.tracebacks import last_line


def test_a_stack_printed_last_gives_no_message() -> None:
    # faulthandler.dump_traceback() then sys.exit(3): its last line is a frame line.
    dump = (
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/w/job.py", line 5 in <module>\n'
    )
    assert last_line(dump) is None
    # traceback.print_stack(): a frame line, then its source line.
    stack = '  File "/w/job.py", line 5, in <module>\n    traceback.print_stack()\n'
    assert last_line(stack) is None
    # sys.exit("msg") prints only the message; an indented line under no frame is one.
    assert last_line("loading\nconfig missing: a.yaml\n\n") == "config missing: a.yaml"
    assert last_line("usage: x\n    see --help\n") == "see --help"
    assert last_line("") is None
