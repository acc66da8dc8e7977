"""capture's verify: what of a rerun's attempts counts as the failure capture saw."""

from __future__ import annotations

from dataclasses import replace

from reprospec.capture.verify import Rerun, _beside, _flaky, same_as
from reprospec.core.results import AttemptResult, Outcome
from reprospec.core.words import PASSED_BESIDE_A_CRASH
from tests.support.runs import segfault_matrix

PASS = Outcome(kind="pass", exit_code=0, signature="pass")
SEGV = Outcome(kind="crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
DIED = (
    f"{PASSED_BESIDE_A_CRASH} SIGSEGV (pid 42: python parse.py): the attempt's status is its root's"
)


def _attempt(outcome: Outcome, *warnings: str) -> AttemptResult:
    return AttemptResult(1, 0.1, outcome, True, (), "cells/1", warnings=warnings)


def test_a_pass_over_a_crash_is_not_the_clean_pass_capture_saw() -> None:
    # A rerun's pass beside a process's SIGSEGV was "the same signature (pass)": the
    # verify compared the root's status alone.
    assert same_as(_attempt(PASS), "pass")
    assert not same_as(_attempt(PASS, DIED), "pass")
    assert _beside([_attempt(PASS, DIED), _attempt(PASS)], "pass") == (
        " (1 of them passed, but a process died of SIGSEGV)"
    )
    assert _beside([_attempt(PASS)], "pass") == ""
    # A failure's signature is compared as before.
    assert same_as(_attempt(SEGV), "crash:SIGSEGV:main")
    assert not same_as(_attempt(PASS), "crash:SIGSEGV:main")


def test_a_rerun_whose_failure_came_back_but_missed_the_expect_is_not_called_flaky() -> None:
    """A worker crash came back in 5 of 6 attempts of the rerun as the first run ran, each
    at a step the written `expect.step` did not hold: the line said "it did not come back in
    the workdir either (0/6 attempts)", the failure "may be flaky", and the variable it
    needed went unwritten."""
    crashed = replace(_attempt(SEGV), matched=False, mismatches=("step: expected 9..11, got 7",))
    passed = replace(_attempt(PASS), matched=False, mismatches=("outcome: expected crash",))
    attempts = (crashed,) * 5 + (passed,)
    result = replace(segfault_matrix(), run_id="r1")
    line = _flaky(Rerun(result, attempts, 5, "not-reproduced", False), "reprospec capture ...")
    assert line == (
        "in the workdir, run as the first run ran, the same signature came back in 5/6 "
        "attempts (run r1), but the spec's expect did not match: step: expected 9..11, got 7 "
        "(and 1 more): edit the spec's expect to what the failure does each time; no variable "
        "or file is named as its cause"
    )
    # A rerun where nothing came back is the flaky reading, as before.
    missed = _flaky(Rerun(result, (passed,) * 6, 0, "not-reproduced", False), "X")
    assert missed.startswith("it did not come back in the workdir either, run as the first run ")
    assert "(0/6 attempts, run r1)" in missed
