"""A pasted log's rank prefixes (`[rank1]: `, torchrun's `[default0]:`) are read by the
outcome's rule (outcome/children.py), which reads the same lines of a live run: capture's
ticket reader kept two copies of its own, free to drift from it."""

from __future__ import annotations

import inspect

from reprospec.capture import ticket
from reprospec.outcome import children


def test_the_ticket_reader_has_no_rank_pattern_of_its_own() -> None:
    assert "rank|default" not in inspect.getsource(ticket)
    assert r"\[rank\d" not in inspect.getsource(ticket)


def test_a_ranks_line_loses_its_prefix_as_the_outcome_strips_it() -> None:
    for line in (
        "[rank1]: Traceback (most recent call last):",
        "[default0]:  File x",
        "[rank12]:y",
    ):
        assert ticket._unprefixed(line) == children.RANK_PREFIX.sub("", line, count=1)
    assert ticket._unprefixed("[rank1]: [rank1]: twice") == "[rank1]: twice"  # one prefix


def test_a_pytest_summary_line_names_its_test_where_no_failure_was_read() -> None:
    # c3bcf1b3 bound a second _PYTEST_FAILED (no `test` group) at the module's end, which
    # replaced the first for every reader: this raised IndexError ('no such group').
    assert ticket._test_name("FAILED tests/t.py::test_x\n") == "tests/t.py::test_x"
    summary = "FAILED tests/t.py::test_x - ValueError: bad\n"
    assert ticket._test_name(summary) == "tests/t.py::test_x"
