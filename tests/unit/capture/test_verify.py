"""capture's verify: what of a rerun's attempts counts as the failure capture saw."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprospec.capture.verify import Rerun, _beside, _flaky, same_as
from reprospec.core.results import AttemptResult, Outcome
from reprospec.core.words import PASSED_BESIDE_A_CRASH
from tests.support.runs import segfault_matrix

PASS = Outcome(kind="pass", exit_code=0, signature="pass")
SEGV = Outcome(kind="crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
EXPECT = {"outcome": "error", "exception": "RuntimeError", "message": "boom"}
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


def test_a_control_cell_whose_spec_does_not_load_is_dropped_and_the_one_cell_spec_kept(
    tmp_path: Path,
) -> None:
    """`CACHE_BACKEND=null` wrote `cache_backend: ['null', null]` (two cells of one id),
    `INCLUDE=1` a `matrix: {include: [...]}`: specs the loader refused, and capture exit 2
    on a spec it wrote itself. `_control` refuses both; whatever it does not foresee, the
    spec with the control is loaded before it is kept, and one that does not load is
    dropped, said, and the spec written without it."""
    from reprospec.capture.narrowing import Needed
    from reprospec.capture.verify import _control, _loaded
    from reprospec.capture.writer import Control, Draft, EnvLine, render_spec
    from reprospec.spec.load import load_spec

    def draft(name: str, value: str) -> Draft:
        line = EnvLine(name, value, "your shell set it: the failure needs it")
        return Draft(name="prog", command="python prog.py", env=(line,), expect=EXPECT)

    for name, value, why in [
        ("CACHE_BACKEND", "null", "CACHE_BACKEND's value `null` names its cell as the control's"),
        ("INCLUDE", "1", "INCLUDE's matrix axis would be `include`, a name the matrix keeps"),
    ]:
        control, said = _control(draft(name, value), Needed((name,), True, 1), "error:X", ())
        assert control is None
        assert said.startswith(f"no control cell (the command with {name} empty): {why}")
        assert f"`env -u {name}` (unset, not empty)" in said
        # Past `_control`: the loader is the last word, and the spec on disk loads.
        path = tmp_path / f"{name}.yaml"
        kept, said = _loaded(path, draft(name, value), Control((name,), "the control"), "")
        assert kept is None
        assert "the spec with it did not load (" in said, said
        assert path.read_text(encoding="utf-8") == render_spec(draft(name, value))
        assert "matrix" not in load_spec(path).document
    # One that loads is kept.
    path = tmp_path / "fused.yaml"
    kept, said = _loaded(path, draft("FUSED", "1"), Control(("FUSED",), "the control"), "")
    assert kept == Control(("FUSED",), "the control")
    assert said == ""
    assert load_spec(path).document["matrix"] == {"fused": ["1", None]}
