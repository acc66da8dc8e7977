"""A descendant's death read from the shell's own words and from signals that are no crash."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("line", "signal", "pid", "command"),
    [
        # bash right-aligns the pid in 5 columns, pads the description, may add "(core dumped)".
        (
            "./run.sh: line 4:  5975 Segmentation fault      ./t --gtest_filter=A.B",
            "SIGSEGV",
            5975,
            "./t --gtest_filter=A.B",
        ),
        (
            "bash: line 1: 123456 Bus error               (core dumped) ./a b",
            "SIGBUS",
            123456,
            "./a b",
        ),
        ("bash: 13884 Aborted                 ./crasher", "SIGABRT", 13884, "./crasher"),
    ],
)
def test_shell_reports_of_a_childs_death(line: str, signal: str, pid: int, command: str) -> None:
    from reprospec.outcome.children import _reported

    assert _reported(f"some output\n{line}\nmore output\n") == (
        signal,
        pid,
        command,
        "as the shell reports it",
    )


def test_terminated_children_are_no_crash() -> None:
    from reprospec.outcome.children import _reported

    # A parent stopping its child with SIGTERM (`kill %1`, a pool's terminate()) is no crash.
    assert _reported("bash: line 1:  4242 Terminated              sleep 100\n") is None
