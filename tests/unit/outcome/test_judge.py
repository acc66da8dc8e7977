"""Judging: each expectation field matching and missing, cell verdicts, rates with Wilson."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.rates import judge_rate, rate_decided, rate_of, rate_satisfied, wilson
from reprospec.core.results import AttemptResult, AttemptVerdict, NotRun, Outcome, Rate
from reprospec.core.units import RateBound, StepRange
from reprospec.core.words import PRIVATE_TMP_LEFT, expectation_phrase
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.judge import exception_matches, judge_attempt, judge_cell
from reprospec.store.resultsjson import expectation_from_dict

SEGV_WORKER = Outcome(
    kind="crash",
    signal="SIGSEGV",
    where="worker",
    exception="RuntimeError",
    message="DataLoader worker (pid 4242) is killed by signal: Segmentation fault.",
    phase="validation",
    step=7,
    signature="crash:SIGSEGV:worker:validation",
)
CUDA_ERROR = Outcome(
    kind="error",
    exit_code=1,
    exception="torch.AcceleratorError",
    message="CUDA error: an illegal memory access was encountered\nmore text",
    phase="train",
    step=2,
    signature="error:torch.AcceleratorError:train",
)
PASSED = Outcome(kind="pass", exit_code=0, phase="validation", step=9, signature="pass")
HUNG = Outcome(kind="hang", phase="import", signature="hang:import")


def attempt(outcome: Outcome | None, expectation: Expectation, number: int = 1) -> AttemptResult:
    """An AttemptResult judged the way the engine does it."""
    if outcome is None:
        return AttemptResult.not_run(number, "docker engine not available")
    verdict = judge_attempt(outcome, expectation)
    return AttemptResult(number, 1.0, outcome, verdict.matched, verdict.mismatches, logs="")


# --- judge_attempt: one field at a time -----------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "outcome", "matched"),
    [
        ("crash", SEGV_WORKER, True),
        ("error", SEGV_WORKER, False),
        ("fail", SEGV_WORKER, True),
        ("fail", CUDA_ERROR, True),
        ("fail", HUNG, True),
        ("fail", PASSED, False),
        ("pass", PASSED, True),
        ("hang", HUNG, True),
        ("hang", PASSED, False),
    ],
)
def test_outcome_kind(expected: str, outcome: Outcome, matched: bool) -> None:
    result = judge_attempt(outcome, Expectation(outcome=expected))  # type: ignore[arg-type]
    assert result.matched is matched
    if not matched:
        assert result.mismatches == (f"outcome: expected {expected}, got {outcome.kind}",)


def test_an_attempt_that_did_not_run_matches_nothing() -> None:
    assert judge_attempt(NotRun("no GPU"), Expectation("fail")) == AttemptVerdict(False, ())


def test_signal() -> None:
    segv = Expectation("crash", signal="SIGSEGV")
    assert judge_attempt(SEGV_WORKER, segv) == AttemptVerdict(True)
    assert judge_attempt(SEGV_WORKER, Expectation("crash", signal="segv")).matched
    assert judge_attempt(SEGV_WORKER, Expectation("crash", signal="SIGBUS")) == AttemptVerdict(
        False,
        ("signal: expected SIGBUS, got SIGSEGV",),
    )
    assert judge_attempt(CUDA_ERROR, Expectation("fail", signal="SIGSEGV")) == AttemptVerdict(
        False,
        ("signal: expected SIGSEGV, got none (exit code 1)",),
    )


def test_where_names_the_process_the_failure_happened_in() -> None:
    """A spec could not ask for a worker's SIGSEGV; the main process's matched."""
    in_worker = Expectation("crash", signal="SIGSEGV", where="worker")
    assert judge_attempt(SEGV_WORKER, in_worker) == AttemptVerdict(True)
    assert judge_attempt(replace(SEGV_WORKER, where="main"), in_worker) == AttemptVerdict(
        False, ("where: expected worker, got main",)
    )
    assert judge_attempt(replace(SEGV_WORKER, where=None), in_worker) == AttemptVerdict(
        False, ("where: expected worker, got none",)
    )
    assert expectation_phrase(in_worker) == "crash SIGSEGV (worker)"
    assert in_worker.to_dict() == {"outcome": "crash", "signal": "SIGSEGV", "where": "worker"}
    assert expectation_from_dict(in_worker.to_dict()) == in_worker  # results.json read back


def test_exit_code() -> None:
    exited = Outcome(kind="error", exit_code=3, signature="error:exit-3")
    assert judge_attempt(exited, Expectation("error", exit_code=3)) == AttemptVerdict(True)
    assert judge_attempt(exited, Expectation("error", exit_code=2)) == AttemptVerdict(
        False,
        ("exit_code: expected 2, got 3",),
    )
    assert judge_attempt(SEGV_WORKER, Expectation("crash", exit_code=1)).mismatches == (
        "exit_code: expected 1, got none",
    )


def test_exception_exact_or_last_dotted_component() -> None:
    assert judge_attempt(CUDA_ERROR, Expectation("error", exception="AcceleratorError")).matched
    dotted = Expectation("error", exception="torch.AcceleratorError")
    assert judge_attempt(CUDA_ERROR, dotted).matched
    other = Expectation("error", exception="RuntimeError")
    assert judge_attempt(CUDA_ERROR, other) == AttemptVerdict(
        False,
        ("exception: expected RuntimeError, got torch.AcceleratorError",),
    )
    assert exception_matches("torch.AcceleratorError", "AcceleratorError")
    assert not exception_matches("other.AcceleratorError", "torch.AcceleratorError")
    assert not exception_matches("Error", "RuntimeError")  # a suffix is not a component
    assert not exception_matches("ValueError", None)


def test_message_in_exception_then_output_tail() -> None:
    assert judge_attempt(CUDA_ERROR, Expectation("error", message=r"illegal memory")).matched
    assert judge_attempt(CUDA_ERROR, Expectation("error", message=r"^more text")).matched is False
    assert judge_attempt(CUDA_ERROR, Expectation("error", message=r"(?m)^more text")).matched
    # Not in the exception message, but printed: the output tail counts.
    expectation = Expectation("error", message=r"Validation step \d+")
    assert judge_attempt(CUDA_ERROR, expectation, Evidence(stdout="Validation step 7\n")).matched
    verdict = judge_attempt(CUDA_ERROR, expectation, Evidence(stderr="nothing"))
    matched, misses = verdict.matched, verdict.mismatches
    assert not matched
    assert misses == (
        "message: expected a match of 'Validation step \\\\d+', "
        "got 'CUDA error: an illegal memory access was encountered'",
    )
    assert judge_attempt(PASSED, Expectation("pass", message="x")).mismatches == (
        "message: expected a match of 'x', got no message",
    )


def test_invalid_message_regex_is_a_mismatch_not_a_crash() -> None:
    verdict = judge_attempt(CUDA_ERROR, Expectation("error", message="(unclosed"))
    matched, misses = verdict.matched, verdict.mismatches
    assert not matched
    assert "no valid regex" in misses[0]


def test_phase_and_step_range() -> None:
    expectation = Expectation("crash", phase="validation", step=StepRange(6, 8))
    assert judge_attempt(SEGV_WORKER, expectation) == AttemptVerdict(True)
    assert judge_attempt(SEGV_WORKER, Expectation("crash", step=StepRange(7, 7))).matched
    early = Outcome(kind="crash", signal="SIGSEGV", phase="train", step=3, signature="x")
    assert judge_attempt(early, expectation) == AttemptVerdict(
        False,
        ("phase: expected validation, got train", "step: expected 6..8, got 3"),
    )
    assert judge_attempt(HUNG, Expectation("hang", step=StepRange(1, 2))).mismatches == (
        "step: expected 1..2, got none (no event or marker reported one)",
    )


def test_every_miss_is_listed() -> None:
    expectation = Expectation(
        "crash", signal="SIGSEGV", exception="MemoryError", phase="validation"
    )
    verdict = judge_attempt(PASSED, expectation)
    matched, misses = verdict.matched, verdict.mismatches
    assert not matched
    assert misses == (
        "outcome: expected crash, got pass",
        "signal: expected SIGSEGV, got none (pass)",
        "exception: expected MemoryError, got none",
    )


# --- Wilson interval and rates ------------------------------------------------------------------


def test_wilson() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(3, 3)
    assert round(low, 2) == 0.44
    assert high == 1.0
    low, high = wilson(6, 20)
    assert (round(low, 2), round(high, 2)) == (0.15, 0.52)
    low, high = wilson(0, 10)
    assert low == 0.0
    assert round(high, 3) == 0.278
    low, high = wilson(50, 100)
    assert low == pytest.approx(1 - high)


def test_no_failure_seen_never_meets_more_than_zero() -> None:
    # 0/11 and 0/22 once had a low end of 2.8e-17, so `>0` was met (a cell that never failed
    # judged reproduced), and 6/6 a high end under 1, so `<1` was met with no clean attempt.
    for n in range(1, 501):
        assert judge_rate(rate_of(0, n), RateBound(">", 0.0)) == "undecided", n
        assert judge_rate(rate_of(n, n), RateBound("<", 1.0)) == "undecided", n
        assert wilson(0, n)[0] == 0.0
        assert wilson(n, n)[1] == 1.0


def test_rate_decided_and_satisfied() -> None:
    at_least = RateBound(">=", 0.3)
    assert not rate_decided(rate_of(6, 20), at_least)  # 0.15-0.52 contains 0.3
    assert rate_decided(rate_of(18, 20), at_least)  # low 0.70 > 0.3
    assert rate_decided(rate_of(0, 20), at_least)  # high 0.16 < 0.3
    assert not rate_decided(rate_of(0, 0), at_least)
    assert rate_satisfied(rate_of(6, 20), at_least)
    assert not rate_satisfied(rate_of(5, 20), at_least)
    assert not rate_satisfied(rate_of(0, 0), at_least)
    assert rate_satisfied(rate_of(1, 10), RateBound("<", 0.2))
    assert rate_satisfied(rate_of(1, 2), RateBound("==", 0.5))
    assert not rate_satisfied(rate_of(3, 10), RateBound(">", 0.3))


# --- judge_cell --------------------------------------------------------------------------------


def test_cell_reproduced_every_attempt() -> None:
    expectation = Expectation("crash", signal="SIGSEGV", phase="validation")
    attempts = [attempt(SEGV_WORKER, expectation, n) for n in (1, 2, 3)]
    verdict = judge_cell(expectation, attempts)
    assert verdict.kind == "reproduced"
    rate = verdict.rate
    assert (rate.matched, rate.attempts, round(rate.low, 2), rate.high) == (3, 3, 0.44, 1.0)
    assert verdict.reason == "3/3 attempts as expected: crash SIGSEGV (worker) @ validation:7"


def test_cell_not_reproduced() -> None:
    expectation = Expectation("crash", signal="SIGSEGV")
    verdict = judge_cell(expectation, [attempt(PASSED, expectation, n) for n in (1, 2)])
    assert verdict.kind == "not-reproduced"
    # The expectation does not ask where, so where the passes ended is left out.
    assert verdict.reason == "expected crash SIGSEGV, got pass in 2/2 attempts"
    assert (verdict.rate.matched, verdict.rate.attempts) == (0, 2)


def test_cell_one_miss_out_of_three_is_not_reproduced_without_a_rate() -> None:
    expectation = Expectation("crash", signal="SIGSEGV")
    attempts = [attempt(o, expectation, n) for n, o in enumerate([SEGV_WORKER, HUNG, SEGV_WORKER])]
    verdict = judge_cell(expectation, attempts)
    assert verdict.kind == "not-reproduced"
    assert verdict.reason == "expected crash SIGSEGV, got hang in 1/3 attempts; 2/3 matched"


def test_the_key_every_attempt_missed_leads_before_the_private_tmp_hint() -> None:
    # A worker's SIGSEGV is worded without the main process's exception, so
    # "expected crash SIGSEGV RuntimeError @ train:7, got crash SIGSEGV (worker) @ train:7"
    # hid the one key that missed, and the only explanation left was the TMPDIR hint.
    expectation = Expectation(
        "crash", signal="SIGSEGV", exception="RuntimeError", phase="train", step=StepRange(7, 7)
    )
    reset = replace(SEGV_WORKER, exception="ConnectionResetError", phase="train")
    left = (f"{PRIVATE_TMP_LEFT}TMPDIR: cache.bin",)
    attempts = [replace(attempt(reset, expectation, n), warnings=left) for n in (1, 2, 3)]
    verdict = judge_cell(expectation, attempts)
    assert verdict.kind == "not-reproduced"
    missed = "(exception: expected RuntimeError, got ConnectionResetError)"
    assert verdict.reason.startswith(
        "expected crash SIGSEGV RuntimeError @ train:7, got crash SIGSEGV (worker) @ train:7"
        f" in 3/3 attempts {missed}; "
    )
    assert verdict.reason.index(missed) < verdict.reason.index("environment.shared_tmp")
    # Judged by a rate, the misses say the same.
    rated = replace(expectation, rate=RateBound(">=", 0.8))
    rated_verdict = judge_cell(rated, [attempt(reset, rated, n) for n in range(1, 6)])
    assert rated_verdict.kind == "not-reproduced"
    assert rated_verdict.reason.endswith(
        "fails >=0.8 (crash SIGSEGV RuntimeError @ train:7); "
        "missed exception: expected RuntimeError, got ConnectionResetError"
    )


def test_cell_miss_on_a_detail_says_which() -> None:
    expectation = Expectation("crash", signal="SIGSEGV", phase="validation", step=StepRange(1, 2))
    verdict = judge_cell(expectation, [attempt(SEGV_WORKER, expectation)])
    assert verdict.kind == "not-reproduced"
    assert verdict.reason == (
        "expected crash SIGSEGV @ validation:1..2, got crash SIGSEGV (worker) @ validation:7"
        " in 1/1 attempts (step: expected 1..2, got 7)"
    )


def test_cell_pass_expected() -> None:
    expectation = Expectation("pass")
    verdict = judge_cell(expectation, [attempt(PASSED, expectation)])
    assert (verdict.kind, verdict.reason) == (
        "reproduced",
        "1/1 attempts as expected: pass @ validation:9",
    )


def test_cell_error_reason_names_the_exception() -> None:
    expectation = Expectation("error", exception="AcceleratorError")
    verdict = judge_cell(expectation, [attempt(CUDA_ERROR, expectation)])
    assert verdict.kind == "reproduced"
    assert verdict.reason == (
        "1/1 attempts as expected: error exit 1 torch.AcceleratorError @ train:2"
    )
    verdict = judge_cell(expectation, [attempt(PASSED, expectation)])
    assert verdict.reason == "expected error AcceleratorError, got pass in 1/1 attempts"


def test_cell_asking_for_a_message_names_the_one_it_got() -> None:
    expectation = Expectation("error", message="out of memory")
    verdict = judge_cell(expectation, [attempt(CUDA_ERROR, expectation)])
    assert verdict.reason.startswith(
        "expected error /out of memory/, got error exit 1 torch.AcceleratorError"
        " 'CUDA error: an illegal memory access was encountered' in 1/1 attempts"
    )


def test_cell_attempts_that_agree_but_for_the_step_share_a_phrase() -> None:
    expectation = Expectation("crash")
    later = replace(SEGV_WORKER, step=8)
    attempts = [attempt(SEGV_WORKER, expectation), attempt(later, expectation)]
    verdict = judge_cell(expectation, attempts)
    assert verdict.reason == "2/2 attempts as expected: crash SIGSEGV (worker)"


def test_cell_infra_error() -> None:
    expectation = Expectation("crash")
    verdict = judge_cell(expectation, [attempt(None, expectation)])
    assert verdict.kind == "infra-error"
    assert verdict.reason == "could not run: docker engine not available"
    assert (verdict.rate.attempts, verdict.rate.low, verdict.rate.high) == (0, 0.0, 1.0)
    assert judge_cell(expectation, []).kind == "infra-error"


def test_cell_with_some_infra_attempts_judges_the_rest() -> None:
    expectation = Expectation("crash")
    attempts = [attempt(SEGV_WORKER, expectation, 1), attempt(None, expectation, 2)]
    verdict = judge_cell(expectation, attempts)
    assert verdict.kind == "reproduced"
    assert (verdict.rate.matched, verdict.rate.attempts) == (1, 1)
    assert verdict.reason.endswith("(1 more could not run)")


def _rate_cell(matched: int, n: int, bound: str) -> tuple[str, str]:
    op, value = bound[:2], float(bound[2:])
    expectation = Expectation("crash", signal="SIGSEGV", rate=RateBound(op, value))  # type: ignore[arg-type]
    outcomes = [SEGV_WORKER] * matched + [PASSED] * (n - matched)
    verdict = judge_cell(expectation, [attempt(o, expectation, i) for i, o in enumerate(outcomes)])
    assert (verdict.rate.matched, verdict.rate.attempts) == (matched, n)
    return verdict.kind, verdict.reason


def test_rate_straddling_threshold_is_undecided_whatever_the_point_estimate() -> None:
    # 6/20 = 0.30 meets >=0.3, 2/10 = 0.20 does not: both intervals contain 0.3.
    verdict, reason = _rate_cell(6, 20, ">=0.3")
    assert verdict == "undecided"
    assert reason == (
        "undecided (intermittent): 6/20 = 0.30 (95% CI 0.14–0.52) straddles >=0.3"
        " (crash SIGSEGV); the rate seen is the bound itself: more attempts may not decide it"
    )
    verdict, reason = _rate_cell(2, 10, ">=0.3")
    assert verdict == "undecided"
    assert reason.startswith("undecided (intermittent): 2/10 = 0.20")


def test_an_undecided_reason_says_how_many_attempts_decide_it() -> None:
    """The reason (report.md's, JUnit's, the pytest plugin's) said "run more attempts"
    where `run`'s undecided line said how many: it says the same count, and which way."""
    verdict, reason = _rate_cell(3, 5, ">=0.3")
    assert verdict == "undecided"
    assert reason == (
        "undecided (intermittent): 3/5 = 0.60 (95% CI 0.23–0.89) straddles >=0.3"
        " (crash SIGSEGV); at the rate seen, about 9 attempts decide it (reproduced)"
    )
    assert _rate_cell(2, 10, ">=0.3")[1].endswith("about 81 attempts decide it (not reproduced)")


@pytest.mark.parametrize(
    ("matched", "n", "bound", "case", "said"),
    [
        (3, 5, RateBound(">=", 0.3), "count", "about 9 attempts decide it (reproduced)"),
        (0, 3, RateBound(">", 0), "above-zero", "no count of clean attempts refutes it"),
        (3, 3, RateBound("<", 1), "below-one", "no count of failures refutes it"),
        (0, 0, RateBound(">=", 0.3), "none-ran", "; run more attempts"),
        (10, 100, RateBound(">=", 0.1), "at-bound", "the rate seen is the bound itself"),
        (21, 200, RateBound(">=", 0.1), "past-limit", "(--repeat's limit)"),
    ],
)
def test_each_case_of_what_more_attempts_do_is_the_judge_s(
    matched: int, n: int, bound: RateBound, case: str, said: str
) -> None:
    """judge.deciding picks each of words.Deciding's cases from a rate and its bound, and
    the cell's reason says it (words.more_attempts_phrase; test_words.py words each)."""
    from reprospec.outcome.judge import _rate_reason, deciding

    expectation = Expectation("crash", signal="SIGSEGV", rate=bound)
    rate = rate_of(matched, n)
    decides = deciding(rate, bound)
    assert decides.case == case
    assert (decides.needed is not None) == (case == "count")
    assert said in _rate_reason(expectation, bound, rate, "")


def test_every_attempt_missing_one_key_alike_says_the_expect_is_what_misses() -> None:
    """20 of 20 attempts crashed with SIGSEGV in the worker, against `rate: >0` and a
    `where: main` no attempt had: "straddles >0; run more attempts" where no number of them
    settles it; a mix of misses says what more attempts do to `>0`."""
    expectation = Expectation("crash", signal="SIGSEGV", where="main", rate=RateBound(">", 0))
    alike = [attempt(SEGV_WORKER, expectation, i) for i in range(20)]
    verdict = judge_cell(expectation, alike)
    assert verdict.kind == "undecided"
    assert verdict.reason.startswith("undecided: 0/20 = 0.00 (95% CI 0.00–0.17) straddles >0")
    assert "every attempt failed that way but missed where: " in verdict.reason
    assert verdict.reason.endswith("more attempts will not settle it")
    mixed = judge_cell(expectation, [*alike[:19], attempt(PASSED, expectation, 19)])
    assert "one failure meets >0 and no count of clean attempts refutes it" in mixed.reason


def test_one_in_three_is_no_proof_of_a_30_percent_rate() -> None:
    # Judged on the observed fraction this was "reproduced"; the interval is 0.06-0.79.
    verdict, reason = _rate_cell(1, 3, ">=0.3")
    assert verdict == "undecided"
    assert "1/3 = 0.33 (95% CI 0.06–0.80) straddles >=0.3" in reason


def test_a_straddle_reads_as_one_in_the_printed_interval() -> None:
    # 2/6's interval is 0.0968-0.7000; rounded to the nearest it read 0.10-0.70
    # beside "straddles >=0.1". Its bounds are printed rounded outward.
    verdict, reason = _rate_cell(2, 6, ">=0.1")
    assert verdict == "undecided"
    assert "2/6 = 0.33 (95% CI 0.09–0.71) straddles >=0.1" in reason
    verdict, reason = _rate_cell(4, 6, ">=0.3")  # low 0.29998...
    assert verdict == "undecided"
    assert "4/6 = 0.67 (95% CI 0.29–0.91) straddles >=0.3" in reason


def test_rate_clearly_met_and_clearly_missed() -> None:
    verdict, reason = _rate_cell(18, 20, ">=0.3")
    assert verdict == "reproduced"
    assert reason == "18/20 = 0.90 (95% CI 0.69–0.98) meets >=0.3 (crash SIGSEGV)"
    verdict, reason = _rate_cell(0, 20, ">=0.3")
    assert verdict == "not-reproduced"
    assert reason == "0/20 = 0.00 (95% CI 0.00–0.17) fails >=0.3 (crash SIGSEGV)"


@pytest.mark.parametrize(
    ("matched", "n", "bound", "judged"),
    [
        (4, 6, ">=0.2", "met"),  # low 0.30
        (4, 6, ">=0.3", "undecided"),  # low 0.29998...
        (1, 1, ">0", "met"),  # low 0.21 > 0
        (0, 20, ">0", "undecided"),  # no interval excludes a rate of 0.01
        (0, 20, "<0.2", "met"),  # high 0.16
        (10, 20, "<0.2", "failed"),  # low 0.30
        (5, 5, "==1", "met"),  # exact: every attempt
        (4, 5, "==1", "failed"),
        (0, 0, ">=0.3", "undecided"),
        (9, 20, "<=0.5", "undecided"),
        (20, 20, ">0.8", "met"),  # low 0.84
    ],
)
def test_judge_rate_on_the_interval(matched: int, n: int, bound: str, judged: str) -> None:
    op = bound[:2] if bound[1] == "=" else bound[:1]
    parsed = RateBound(op, float(bound[len(op) :]))  # type: ignore[arg-type]
    assert judge_rate(rate_of(matched, n), parsed) == judged
    assert rate_decided(rate_of(matched, n), parsed) == (judged != "undecided")


def test_exit_code_4_when_a_cell_is_undecided_and_none_failed() -> None:
    from reprospec.core.inputs import Cell
    from reprospec.core.results import CellResult, RunResult
    from reprospec.outcome.judge import exit_code_for

    judged = {"undecided": (1, 3), "reproduced": (18, 20), "not-reproduced": (0, 20)}

    def run(*kinds: str) -> RunResult:
        cells = []
        for index, kind in enumerate(kinds):
            matched, n = judged[kind]
            expectation = Expectation("crash", signal="SIGSEGV", rate=RateBound(">=", 0.3))
            outcomes = [SEGV_WORKER] * matched + [PASSED] * (n - matched)
            attempts = tuple(attempt(o, expectation, i) for i, o in enumerate(outcomes, 1))
            verdict = judge_cell(expectation, attempts)
            assert verdict.kind == kind
            cells.append(CellResult.judged(Cell(kind, index, {}), expectation, verdict, attempts))
        return RunResult("r", "s", "", "", "local", "", "", {}, tuple(cells))

    assert exit_code_for(run("reproduced", "undecided")) == 4
    assert exit_code_for(run("undecided", "not-reproduced")) == 1  # a definite miss says more
    assert exit_code_for(run("reproduced")) == 0
    assert run("undecided", "reproduced").summary["undecided"] == 1


def test_expectation_phrase() -> None:
    expectation = Expectation(
        "error",
        exception="ValueError",
        exit_code=1,
        message="bad.*",
        phase="train",
        step=StepRange(2, 4),
        rate=RateBound(">=", 0.3),
    )
    assert expectation_phrase(expectation) == (
        "error exit 1 ValueError /bad.*/ @ train:2..4 rate >=0.3"
    )
    assert expectation_phrase(expectation, rate=False).endswith("@ train:2..4")
    assert expectation_phrase(Expectation("crash", signal="segv")) == "crash SIGSEGV"


def test_a_backtracking_message_pattern_gives_up_instead_of_hanging_the_judge() -> None:
    # `(a+)+b` against forty `a`s backtracks for hours with `re`; the judge is bounded.
    outcome = Outcome(
        kind="error", exit_code=1, where="main", exception="ValueError", message="a" * 40
    )
    verdict = judge_attempt(outcome, Expectation("error", message="(a+)+b"))
    # Returning at all is the point (the regex engine either optimises it or times out).
    assert not verdict.matched
    assert verdict.mismatches[0].startswith("message: expected a match of '(a+)+b'")


@pytest.mark.parametrize(
    "build", ["segfault_matrix", "hang_run", "error_run", "infra_run", "large_matrix"]
)
def test_the_hand_built_runs_are_judged_as_the_judge_judges(build: str) -> None:
    """tests/support/runs.py builds the runs the report tests read; a verdict or a rate there
    that the judge never gives (2/3 of a `>=0.5` hang called reproduced, an infra cell rated
    0/1) makes the reports' golden files say what no run says."""
    from tests.support import runs

    def rate(cell: Rate) -> tuple[int, int, float, float]:
        return cell.matched, cell.attempts, round(cell.low, 2), round(cell.high, 2)

    for cell in getattr(runs, build)().cells:
        judged = judge_cell(cell.expected, cell.attempts)
        assert cell.verdict == judged.kind, (cell.cell.id, judged.reason)
        assert rate(cell.rate) == rate(judged.rate), cell.cell.id
