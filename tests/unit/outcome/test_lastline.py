"""An error's message from stderr's last line: never a stack's frame."""

from __future__ import annotations

import pytest

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


def test_a_sanitizers_abort_gives_its_summarys_finding() -> None:
    # ASan's report ends with its shadow bytes and `==PID==ABORTING`: a pid, no message.
    report = (
        "==23370==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x7f\n"
        "    #0 0x7f876fcb41d9 in overflow /w/heap.c:3\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow /w/heap.c:3 in overflow\n"
        "Shadow bytes around the buggy address:\n"
        "  Right alloca redzone:    cb\n"
        "==23370==ABORTING\n"
    )
    # The finding's kind and function: the source's path as compiled and its line are
    # another in a copy of the project, a rebuild elsewhere, a minimized program.
    assert last_line(report) == "AddressSanitizer: heap-buffer-overflow heap.c in overflow"
    # With no symbolizer: the library's path and offset, its name alone.
    unsymbolized = report.replace(
        "/w/heap.c:3 in overflow\n", "(/w/build/libheap.so+0x11d9) \n", 1
    ).replace("/w/heap.c:3\n", "(/w/build/libheap.so+0x11d9)\n")
    assert last_line(unsymbolized) == "AddressSanitizer: heap-buffer-overflow libheap.so"
    assert last_line("==7==ERROR: UndefinedBehaviorSanitizer: SEGV\n==7==ABORTING\n") is None
    # A summary that is the last line (LeakSanitizer at exit) is read as any last line.
    leak = "SUMMARY: AddressSanitizer: 8 byte(s) leaked in 1 allocation(s).\n"
    assert last_line(leak) == leak.strip()


@pytest.mark.parametrize(
    ("summary", "finding"),
    [
        (
            "UndefinedBehaviorSanitizer: undefined-behavior ../src/x.c:5:3 in",
            "UndefinedBehaviorSanitizer: undefined-behavior x.c in",
        ),
        ("ThreadSanitizer: data race race.c:7 in t1", "ThreadSanitizer: data race race.c in t1"),
        (
            "AddressSanitizer: SEGV (/lib/libc.so.6+0x18b9c0) in strlen",
            "AddressSanitizer: SEGV libc.so.6 in strlen",
        ),
        ("AddressSanitizer: SEGV /w/a.cc:3:14 in f(int)", "AddressSanitizer: SEGV a.cc in f(int)"),
        ("AddressSanitizer: 8 byte(s) leaked in 1 allocation(s).", None),
    ],
)
def test_a_sanitizers_finding_has_no_path_line_or_offset(summary: str, finding: str | None) -> None:
    assert last_line(f"SUMMARY: {summary}\n==7==ABORTING\n") == (finding or summary)
