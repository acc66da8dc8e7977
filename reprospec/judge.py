"""Judge outcomes against an expectation: per attempt (matched?) and per cell (verdict, rate).

A cell without `expect.rate` is reproduced when every attempt matched. With a
rate (`">=0.3"`) the verdict follows the observed fraction; when the Wilson 95%
interval still contains the threshold the reason says the result is
intermittent and undecided, so nobody mistakes 6/20 for proof.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK
from reprospec.models import (
    AttemptResult,
    CellResult,
    Expectation,
    Outcome,
    Rate,
    RunResult,
    VerdictKind,
)
from reprospec.plan import RunPlan
from reprospec.rates import rate_decided, rate_of, rate_satisfied
from reprospec.signals import canonical_signal
from reprospec.units import RateBound


def judge_attempt(
    outcome: Outcome, expectation: Expectation, output_tail: str = ""
) -> tuple[bool, tuple[str, ...]]:
    """Whether one attempt's outcome meets the expectation, and each way it does not."""
    misses: list[str] = []
    expected_kind = expectation.outcome
    if not _kind_matches(expected_kind, outcome.kind):
        misses.append(f"expected outcome {expected_kind}, got {outcome.kind}")
    if expectation.signal is not None:
        want = canonical_signal(expectation.signal) or expectation.signal
        got = canonical_signal(outcome.signal) if outcome.signal else None
        if want != got:
            misses.append(f"expected signal {want}, got {got or _no_signal(outcome)}")
    if expectation.exit_code is not None and expectation.exit_code != outcome.exit_code:
        got_code = "none" if outcome.exit_code is None else str(outcome.exit_code)
        misses.append(f"expected exit code {expectation.exit_code}, got {got_code}")
    if expectation.exception is not None and not exception_matches(
        expectation.exception, outcome.exception
    ):
        misses.append(
            f"expected exception {expectation.exception}, got {outcome.exception or 'none'}"
        )
    if expectation.message is not None:
        miss = _message_miss(expectation.message, outcome.message, output_tail)
        if miss:
            misses.append(miss)
    if expectation.phase is not None and expectation.phase != outcome.phase:
        misses.append(f"expected phase {expectation.phase}, got {outcome.phase or 'none'}")
    if expectation.step is not None and outcome.step not in expectation.step:
        got_step = "none" if outcome.step is None else str(outcome.step)
        misses.append(f"expected step {expectation.step}, got {got_step}")
    return not misses, tuple(misses)


def exception_matches(expected: str, got: str | None) -> bool:
    """`AcceleratorError` matches `torch.AcceleratorError` (and back); otherwise exact."""
    if got is None:
        return False
    return expected == got or got.endswith("." + expected) or expected.endswith("." + got)


def judge_cell(
    expectation: Expectation, attempts: Sequence[AttemptResult]
) -> tuple[VerdictKind, str, Rate]:
    """A cell's verdict, a one-line human reason, and its rate of matching attempts."""
    usable = [a for a in attempts if a.outcome is not None and a.infra_error is None]
    broken = [a for a in attempts if a.outcome is None or a.infra_error is not None]
    rate = rate_of(sum(a.matched for a in usable), len(usable))
    if not usable:
        if broken:
            reason = broken[0].infra_error or "the attempt produced no outcome"
            return "infra-error", f"could not run: {reason}", rate
        return "infra-error", "no attempt ran", rate

    if expectation.rate is None:
        verdict: VerdictKind = "reproduced" if rate.matched == rate.attempts else "not-reproduced"
        reason = _plain_reason(expectation, usable, rate)
    else:
        verdict = "reproduced" if rate_satisfied(rate, expectation.rate) else "not-reproduced"
        reason = _rate_reason(expectation, expectation.rate, usable, rate)
    if broken:
        reason += f" ({len(broken)} more could not run)"
    return verdict, reason, rate


def describe_expectation(expectation: Expectation) -> str:
    """`crash SIGSEGV in validation step 6..8`: what the spec asked for, in words."""
    words: list[str] = [expectation.outcome]
    if expectation.signal:
        words.append(canonical_signal(expectation.signal) or expectation.signal)
    if expectation.exception:
        words.append(expectation.exception)
    if expectation.exit_code is not None:
        words.append(f"exit code {expectation.exit_code}")
    if expectation.message:
        words.append(f"matching {expectation.message!r}")
    words += _where_words(expectation.phase, expectation.step, expectation)
    return " ".join(words)


def describe_outcome(outcome: Outcome, expectation: Expectation | None = None) -> str:
    """`crash SIGSEGV in validation step 7`: an outcome in the terms of an expectation."""
    words: list[str] = [outcome.kind]
    if outcome.signal:
        words.append(outcome.signal)
    # A worker crash's RuntimeError is noise unless the expectation asks for an exception.
    wants_exception = expectation is None or expectation.exception is not None
    if outcome.exception and (outcome.kind == "error" or wants_exception):
        words.append(outcome.exception)
    elif outcome.kind == "error" and outcome.exit_code is not None:
        words.append(f"exit code {outcome.exit_code}")
    if expectation is not None and expectation.message and outcome.message:
        words.append(repr(_shorten(outcome.message.splitlines()[0], 60)))
    words += _where_words(outcome.phase, outcome.step, expectation)
    return " ".join(words)


def _plain_reason(expectation: Expectation, usable: list[AttemptResult], rate: Rate) -> str:
    n = rate.attempts
    if rate.matched == n:
        return f"{n}/{n} attempts {_as_expected(usable, expectation)} as expected"
    misses = [a for a in usable if not a.matched]
    actual, count = _most_common(misses, expectation)
    reason = f"expected {describe_expectation(expectation)}, got {actual} in {count}/{n} attempts"
    if len(misses) == 1 and misses[0].mismatches and not _kind_differs(misses[0]):
        reason += f" ({misses[0].mismatches[0]})"
    if rate.matched:
        reason += f"; {rate.matched}/{n} matched"
    return reason


def _rate_reason(
    expectation: Expectation, bound: RateBound, usable: list[AttemptResult], rate: Rate
) -> str:
    fraction = rate.matched / rate.attempts
    observed = (
        f"{rate.matched}/{rate.attempts} = {fraction:.2f}, 95% CI {rate.low:.2f}-{rate.high:.2f}"
    )
    what = describe_expectation(expectation)
    if not rate_decided(rate, bound):
        # "intermittent" only when it did happen sometimes and not always.
        label = "intermittent" if 0 < rate.matched < rate.attempts else "undecided"
        return f"{label}: {observed} straddles {bound}; run more attempts ({what})"
    if rate_satisfied(rate, bound):
        return f"{observed} meets {bound} ({what})"
    return f"{observed} fails {bound} ({what})"


def _as_expected(usable: list[AttemptResult], expectation: Expectation) -> str:
    outcomes = [a.outcome for a in usable if a.outcome is not None]
    signatures = {o.signature for o in outcomes}
    if len(signatures) != 1:
        return "matched"
    first = outcomes[0]
    verb = {"pass": "passed", "error": "failed", "crash": "crashed", "hang": "hung"}[first.kind]
    words = [verb]
    if first.kind == "crash" and first.signal:
        words.append(f"with {first.signal}")
        if first.where == "worker":
            words.append("in a DataLoader worker")
    elif first.kind == "error":
        words.append(f"with {first.exception}" if first.exception else f"exit {first.exit_code}")
    steps = {o.step for o in outcomes}
    step = first.step if len(steps) == 1 else None
    words += _where_words(first.phase, step, None)
    return " ".join(words)


def _most_common(misses: list[AttemptResult], expectation: Expectation) -> tuple[str, int]:
    counts = Counter(
        describe_outcome(a.outcome, expectation) if a.outcome else "no outcome" for a in misses
    )
    return counts.most_common(1)[0]


def _kind_differs(attempt: AttemptResult) -> bool:
    # "got pass" says it all; a detail helps only when the kind was right.
    return any(m.startswith("expected outcome ") for m in attempt.mismatches)


def _where_words(phase: str | None, step: object, expectation: Expectation | None) -> list[str]:
    # Against an expectation, show where only when the expectation cares where.
    if expectation is not None and expectation.phase is None and expectation.step is None:
        return []
    words = []
    if phase:
        words.append(f"in {phase}")
    if step is not None:
        words.append(f"step {step}")
    return words


def _kind_matches(expected: str, got: str) -> bool:
    return got != "pass" if expected == "fail" else expected == got


def _message_miss(pattern: str, message: str | None, output_tail: str) -> str | None:
    try:
        regex = re.compile(pattern)
    except re.error as error:
        return f"expected message matching {pattern!r}, but that is no valid regex ({error})"
    if message and regex.search(message):
        return None
    if output_tail and regex.search(output_tail):
        return None
    shown = repr(_shorten(message.splitlines()[0], 80)) if message else "no message"
    return f"expected message matching {pattern!r}, got {shown}"


def _no_signal(outcome: Outcome) -> str:
    if outcome.kind == "error" and outcome.exit_code is not None:
        return f"none (exit code {outcome.exit_code})"
    return f"none ({outcome.kind})"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def judge_cells(
    plan: RunPlan,
    attempts_by_cell: Mapping[str, Sequence[AttemptResult]],
    *,
    interrupted: bool = False,
) -> tuple[CellResult, ...]:
    """Turn each planned cell's attempts into its verdict."""
    commands = {attempt.cell.id: attempt.command_text for attempt in reversed(plan.attempts)}
    planned_count = Counter(attempt.cell.id for attempt in plan.attempts)
    cells = []
    for cell in plan.cells:
        attempts = tuple(attempts_by_cell.get(cell.id, ()))
        expectation = plan.expectations[cell.id]
        verdict, reason, rate = judge_cell(expectation, attempts)
        if interrupted and not attempts:
            reason = "not run: the run was interrupted first (--resume finishes it)"
        elif interrupted and len(attempts) < planned_count[cell.id]:
            reason += (
                f" (interrupted after {len(attempts)} of {planned_count[cell.id]} attempts;"
                " --resume finishes it)"
            )
        cells.append(
            CellResult(
                cell=cell,
                expected=expectation,
                verdict=verdict,
                reason=reason,
                rate=rate,
                attempts=attempts,
                command=commands.get(cell.id, ""),
            )
        )
    return tuple(cells)


def exit_code_for(run: RunResult) -> int:
    """0 every cell reproduced; 3 any infra-error; 1 some cell not reproduced; 130 interrupted."""
    if run.interrupted:
        return EXIT_INTERRUPTED
    summary = run.summary
    if summary["infra_error"]:
        return EXIT_INFRA
    if summary["not_reproduced"]:
        return EXIT_NOT_REPRODUCED
    return EXIT_OK
