"""capture's verify: what of a rerun's attempts counts as the failure capture saw."""

from __future__ import annotations

from reprospec.capture.verify import _beside, same_as
from reprospec.core.results import AttemptResult, Outcome
from reprospec.core.words import PASSED_BESIDE_A_CRASH

PASS = Outcome(kind="pass", exit_code=0, signature="pass")
SEGV = Outcome(kind="crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
DIED = (
    f"{PASSED_BESIDE_A_CRASH} SIGSEGV (pid 42: python parse.py): the attempt's status is its root's"
)


def _attempt(outcome: Outcome, *warnings: str) -> AttemptResult:
    return AttemptResult(1, 0.1, outcome, True, (), "cells/1", warnings=warnings)


def test_a_pass_over_a_crash_is_not_the_clean_pass_capture_saw() -> None:
    # A rerun's pass beside a process's SIGSEGV was "the same signature (pass)": the
    # verify compared the root's status alone (nu18 N1).
    assert same_as(_attempt(PASS), "pass")
    assert not same_as(_attempt(PASS, DIED), "pass")
    assert _beside([_attempt(PASS, DIED), _attempt(PASS)], "pass") == (
        " (1 of them passed, but a process died of SIGSEGV)"
    )
    assert _beside([_attempt(PASS)], "pass") == ""
    # A failure's signature is compared as before.
    assert same_as(_attempt(SEGV), "crash:SIGSEGV:main")
    assert not same_as(_attempt(PASS), "crash:SIGSEGV:main")
