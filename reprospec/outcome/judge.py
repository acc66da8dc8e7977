"""Judge outcomes against an expectation: per attempt (`AttemptVerdict`) and per cell (`Verdict`).

A cell without `expect.rate` is reproduced when every attempt matched. With a
rate (`">=0.3"`) the verdict follows the Wilson 95% interval of the match
rate (rates.judge_rate): `reproduced` when all of it meets the bound,
`not-reproduced` when none of it does, `undecided` while it straddles the
threshold, so nobody mistakes 2/6 for proof either way. Attempts that did not
run (`NotRun`) are no evidence either way: a cell of only those is
`infra-error`. Reasons are worded with words.py, like every other view.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from reprospec.core import patterns
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject
from reprospec.core.rates import RateJudgement, judge_rate, rate_of
from reprospec.core.results import (
    AttemptResult,
    AttemptVerdict,
    CellResult,
    ChainLink,
    GroupMember,
    NotRun,
    Outcome,
    Rate,
    RunResult,
    Verdict,
    VerdictKind,
)
from reprospec.core.signals import canonical_signal
from reprospec.core.units import RateBound
from reprospec.core.words import (
    NOT_RUN,
    PRIVATE_TMP_HINT,
    PRIVATE_TMP_LEFT,
    Deciding,
    attempts_phrase,
    expectation_phrase,
    interrupted_phrase,
    mismatch,
    missed_keys,
    more_attempts_phrase,
    outcome_phrase,
    rate_phrase,
    shorten,
    signals_phrase,
    stopped_phrase,
)
from reprospec.errors import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_NOT_REPRODUCED,
    EXIT_OK,
    EXIT_UNDECIDED,
)
from reprospec.outcome.evidence import Evidence
from reprospec.plan.run import RunPlan
from reprospec.spec.matrix import position_of

_RATE_VERDICTS: dict[RateJudgement, VerdictKind] = {
    "met": "reproduced",
    "failed": "not-reproduced",
    "undecided": "undecided",
}


def judge_attempt(
    outcome: Outcome | NotRun, expectation: Expectation, evidence: Evidence | None = None
) -> AttemptVerdict:
    """Whether one attempt's outcome meets the expectation, and each way it does not.

    `signal` may list several signals (any of them matches). `exception` and
    `message` match any exception of the chain (the primary, a link, or the last
    one), any member of an exception group in it (the one that ended it, or one a
    library raised from: `raise RuntimeError(...) from group`), or the last traceback
    printed where none ended the process (`python train.py` run by `make`, which exits
    2), and its group's members where it is one (`_printed`); `message` is then looked
    for in the end of the attempt's output (`evidence`). An attempt that did not run
    matches nothing.
    """
    if isinstance(outcome, NotRun):
        return AttemptVerdict(False)
    if expectation.observes:
        return AttemptVerdict(True)  # observe mode: recorded, not judged
    misses: list[str] = []
    expected_kind = expectation.outcome
    if not _kind_matches(expected_kind, outcome.kind):
        misses.append(mismatch("outcome", expected_kind, outcome.kind))
    if expectation.signals:
        wanted = [canonical_signal(s) or s for s in expectation.signals]
        got = canonical_signal(outcome.signal) if outcome.signal else None
        if got not in wanted:
            misses.append(mismatch("signal", signals_phrase(wanted), got or _no_signal(outcome)))
    if expectation.exit_code is not None and expectation.exit_code != outcome.exit_code:
        got_code = "none" if outcome.exit_code is None else str(outcome.exit_code)
        misses.append(mismatch("exit_code", str(expectation.exit_code), got_code))
    if expectation.exception is not None and not any(
        exception_matches(expectation.exception, link.type) for link in _printed(outcome)
    ):
        got_exception = outcome.named_exception or "none"
        if outcome.last_traceback is not None and not outcome.exception:
            printed = outcome.last_traceback
            got_exception += f" (last traceback: {printed.named})"
        misses.append(mismatch("exception", expectation.exception, got_exception))
    if expectation.message is not None:
        miss = _message_miss(expectation.message, outcome, evidence)
        if miss:
            misses.append(miss)
    # Nothing reported where it was: say why, not only "none" (a spec with `step:` and
    # no markers, of a program that writes no events, can never meet it).
    unreported = "none (no event or marker reported one)"
    if expectation.phase is not None and expectation.phase != outcome.phase:
        misses.append(mismatch("phase", expectation.phase, outcome.phase or unreported))
    if expectation.step is not None and outcome.step not in expectation.step:
        got_step = unreported if outcome.step is None else str(outcome.step)
        misses.append(mismatch("step", str(expectation.step), got_step))
    for key in ("module", "stage", "where"):
        want_value, got_value = getattr(expectation, key), getattr(outcome, key)
        if want_value is not None and want_value != got_value:
            misses.append(mismatch(key, str(want_value), got_value or "none"))
    return AttemptVerdict(not misses, tuple(misses))


def exception_matches(expected: str, got: str | None) -> bool:
    """`AcceleratorError` matches `torch.AcceleratorError` (and back); otherwise exact."""
    if got is None:
        return False
    return expected == got or got.endswith("." + expected) or expected.endswith("." + got)


def judge_cell(expectation: Expectation, attempts: Sequence[AttemptResult]) -> Verdict:
    """A cell's verdict, a one-line human reason, and its rate of matching attempts."""
    usable = [a for a in attempts if isinstance(a.outcome, Outcome)]
    broken = [a.outcome for a in attempts if isinstance(a.outcome, NotRun)]
    rate = rate_of(sum(a.matched for a in usable), len(usable))
    if not usable:
        if broken:
            return Verdict("infra-error", f"could not run: {broken[0].reason}", rate)
        return Verdict("infra-error", "no attempt ran", rate)

    if expectation.observes:
        reason = attempts_phrase(usable)
        if broken:
            reason += f" ({len(broken)} more could not run)"
        return Verdict("observed", reason, rate)
    kind: VerdictKind
    if expectation.rate is None:
        kind = "reproduced" if rate.matched == rate.attempts else "not-reproduced"
        reason = _plain_reason(expectation, usable, rate)
    else:
        kind = rate_verdict(judge_rate(rate, expectation.rate))
        reason = _rate_reason(
            expectation, expectation.rate, rate, _missed(usable), _missed_alike(usable)
        )
    if broken:
        reason += f" ({len(broken)} more could not run)"
    if kind != "reproduced" and expectation.outcome != "pass" and _left_private_tmp(usable):
        reason += f"; {PRIVATE_TMP_HINT}"
    return Verdict(kind, reason, rate)


def _left_private_tmp(attempts: Sequence[AttemptResult]) -> bool:
    """Whether an attempt left files in its private TMPDIR (removed: the next never saw them)."""
    # An instance's warning is `instance N: ...` (pipeline/attempt.py).
    return any(PRIVATE_TMP_LEFT in w for a in attempts for w in a.warnings)


def _plain_reason(expectation: Expectation, usable: list[AttemptResult], rate: Rate) -> str:
    n = rate.attempts
    if rate.matched == n:
        same = _common_phrase([a.outcome for a in usable if isinstance(a.outcome, Outcome)])
        return f"{n}/{n} attempts as expected" + (f": {same}" if same else "")
    misses = [a for a in usable if not a.matched]
    actual, count = _most_common(misses, expectation)
    reason = (
        f"expected {expectation_phrase(expectation, rate=False)}, got {actual} "
        f"in {count}/{n} attempts"
    )
    missed = _missed(misses)
    if missed:
        reason += f" ({missed})"
    if rate.matched:
        reason += f"; {rate.matched}/{n} matched"
    return reason


# Attempts that all failed as expected but for one same key, none matching, before the
# reason says the expect is what misses rather than to run more (see `_missed_alike`).
ALIKE_MISSES = 3


def _missed_alike(usable: Sequence[AttemptResult]) -> bool:
    """Whether no attempt matched and every one missed the same keys the same way with the
    outcome's kind right (`phase: expected training, got none` in 20 of 20 crashes): the
    failure happens and the expect does not describe it, so more attempts change nothing,
    where the reason of an undecided `>0` said to run them."""
    if len(usable) < ALIKE_MISSES or any(a.matched or _kind_differs(a) for a in usable):
        return False
    return len({a.mismatches for a in usable}) == 1 and bool(usable[0].mismatches)


def missed_alike(attempts: Sequence[AttemptResult]) -> str:
    """The keys every attempt that ran missed the same way (`_missed_alike`), '' where they
    did not: `run`'s undecided line points such a cell to its expect, as its reason does,
    not to more attempts."""
    usable = [a for a in attempts if isinstance(a.outcome, Outcome)]
    return _missed(usable) if _missed_alike(usable) else ""


def alike_phrase(missed: str) -> str:
    """What a cell whose attempts all missed the same `missed` keys (`_missed_alike`) is
    told in place of more attempts: its reason, and `run`'s undecided line."""
    return (
        f"every attempt failed that way but missed {missed}: the expect does not describe "
        "the failure that happens; more attempts will not settle it"
    )


def deciding(rate: Rate, bound: RateBound) -> Deciding:
    """What more attempts do to an undecided `rate` against `bound` (words.Deciding; said by
    words.more_attempts_phrase): how many decide it and which way at the rate seen; that
    none refutes `>0` where no failure was seen, and the bound that clean attempts would
    (`refuting_bound`), or `<1` where every attempt failed, and the bound that failures
    would; that the rate seen is the bound itself; or that it takes more than `--repeat`'s
    limit. The cell's reason and `run`'s undecided line both say it: report.md said "run
    more attempts" where the terminal said how many."""
    import math

    from reprospec.core.bounds import MAX_REPEAT
    from reprospec.core.rates import attempts_to_decide, refuting_bound

    seen = rate.matched / rate.attempts if rate.attempts else 0.0
    if rate.attempts and (decided := attempts_to_decide(seen, bound, rate.attempts, MAX_REPEAT)):
        needed, judged = decided
        return Deciding("count", needed, rate_verdict(judged).replace("-", " "))
    if rate.matched == 0 and bound.op == ">" and bound.value <= 0:
        floor, clean = refuting_bound(0, max(rate.attempts, 1))
        return Deciding("above-zero", refuted=floor, attempts=clean)
    if rate.attempts and rate.matched == rate.attempts and bound.op == "<" and bound.value >= 1:
        # The mirror of `>0`: no count of failures refutes `<1`, one clean attempt meets it.
        floor, failing = refuting_bound(0, rate.attempts)
        return Deciding("below-one", refuted=1 - floor, attempts=failing)
    if not rate.attempts:
        return Deciding("none-ran")
    if math.isclose(seen, bound.value):
        return Deciding("at-bound")
    return Deciding("past-limit")


def rate_verdict(judgement: RateJudgement) -> VerdictKind:
    """The verdict a rate judged against its bound gives the cell (`met`: reproduced)."""
    return _RATE_VERDICTS[judgement]


def _rate_reason(
    expectation: Expectation, bound: RateBound, rate: Rate, missed: str, alike: bool = False
) -> str:
    observed = rate_phrase(rate, fraction=True)
    what = expectation_phrase(expectation, rate=False)
    judged = judge_rate(rate, bound)
    # What the misses missed, when a key other than the outcome's kind did (`_missed`).
    if alike and judged == "undecided":
        return f"undecided: {observed} straddles {bound} ({what}), and {alike_phrase(missed)}"
    missed = f"; missed {missed}" if missed else ""
    if judged == "undecided":
        # "intermittent" when it did happen sometimes and not always.
        flaky = " (intermittent)" if 0 < rate.matched < rate.attempts else ""
        more = more_attempts_phrase(deciding(rate, bound), bound)
        return f"undecided{flaky}: {observed} straddles {bound} ({what}); {more}{missed}"
    if judged == "met":
        return f"{observed} meets {bound} ({what})"
    return f"{observed} fails {bound} ({what}){missed}"


def _missed(misses: Sequence[AttemptResult]) -> str:
    """The `expect` keys the missing attempts missed, each with what was expected and got
    (`exception: expected RuntimeError, got ConnectionResetError`): the first explanation
    of a miss, ahead of any hint about the environment (a private TMPDIR), since the two
    whole phrases can read alike (a worker's crash is worded without the main process's
    exception) and leave the one key that differs unsaid. The misses' most common set of
    mismatches; none where an attempt's kind already differs (`got pass` says it all)."""
    counts = Counter(
        a.mismatches for a in misses if not a.matched and a.mismatches and not _kind_differs(a)
    )
    if not counts:
        return ""
    return "; ".join(counts.most_common(1)[0][0])


def _common_phrase(outcomes: list[Outcome]) -> str:
    """The phrase every outcome shares: in full, else without where; '' when they differ."""
    for where in (True, False):
        phrases = {outcome_phrase(o, where=where, pid=False) for o in outcomes}
        if len(phrases) == 1:
            return phrases.pop()
    return ""


def _most_common(misses: list[AttemptResult], expectation: Expectation) -> tuple[str, int]:
    # Against an expectation, say where only when it asks where, and the message
    # only when it asks for one: otherwise misses at different steps split the count.
    where = expectation.phase is not None or expectation.step is not None
    message = expectation.message is not None
    counts = Counter(
        outcome_phrase(a.outcome, where=where, message=message, pid=False) for a in misses
    )
    return counts.most_common(1)[0]


def _kind_differs(attempt: AttemptResult) -> bool:
    # "got pass" says it all; a detail helps only when the kind was right.
    return "outcome" in missed_keys(attempt.mismatches)


def _kind_matches(expected: str, got: str) -> bool:
    return got != "pass" if expected == "fail" else expected == got


# A spec's `expect.message` from a ticket may backtrack for hours: matching is bounded.
MESSAGE_MATCH_TIMEOUT_S = 1.0


def _message_miss(pattern: str, outcome: Outcome, evidence: Evidence | None) -> str | None:
    """None when the pattern is in a message of the chain or the output's end; else the miss."""
    problem = patterns.problem(pattern)
    if problem is not None:
        return f"message: expected a match of {pattern!r}, but that is no valid regex ({problem})"
    message = outcome.message
    messages = [link.message for link in _printed(outcome) if link.message]
    if message and message not in messages:
        messages.append(message)
    try:
        for text in messages:
            if patterns.search(pattern, text, MESSAGE_MATCH_TIMEOUT_S):
                return None
        tail = evidence.output_tail() if evidence is not None else ""
        if tail and patterns.search(pattern, tail, MESSAGE_MATCH_TIMEOUT_S):
            return None
    except patterns.PatternTimeout:
        return (
            f"message: expected a match of {pattern!r}, but matching gave up after "
            f"{MESSAGE_MATCH_TIMEOUT_S:g}s (the pattern backtracks too much)"
        )
    shown = repr(shorten(message.splitlines()[0], 80)) if message else "no message"
    return mismatch("message", f"a match of {pattern!r}", shown)


def _printed(outcome: Outcome) -> tuple[ChainLink | GroupMember, ...]:
    """The exceptions `expect.exception` and `expect.message` may match: the chain that
    ended the process, the members of the exception groups in it (`ValueError` is met by
    an `asyncio.TaskGroup`'s `ExceptionGroup` that holds one), and the last
    traceback printed where it went on after one."""
    last = outcome.last_traceback
    # Printed: the chain and its groups' members (Outcome.raised), and the last traceback's.
    printed: list[ChainLink | GroupMember] = list(outcome.raised())
    if last is not None:
        printed += [last, *last.members]
    return tuple(printed)


def _no_signal(outcome: Outcome) -> str:
    if outcome.kind == "error" and outcome.exit_code is not None:
        return f"none (exit code {outcome.exit_code})"
    return f"none ({outcome.kind})"


class CellJudge:
    """Judges the cells of one planned run, one at a time, as each cell's attempts are in.

    The pipeline gives it each cell the moment its last attempt ends, so the attempts of a
    finished cell are held once, in its `CellResult`, and not also by the scheduler until
    the whole run is over (docs/performance.md, "Memory and the run folder as the matrix
    grows"). What each cell ran (its command, its environment) is its first attempt's,
    planned again here, since the plan keeps no attempt (run.PlannedAttempts); equal
    environments, commands, reasons and rates are one object each, as most cells of a
    large matrix ran and scored the same. Safe to call from the scheduler's threads.
    """

    def __init__(self, plan: RunPlan) -> None:
        self._plan = plan
        self._environments: dict[str, JsonObject] = {}
        # Equal values, one object (a dict's setdefault holds under the GIL: two threads
        # may at worst each keep an equal copy, never a wrong one).
        self._texts: dict[str, str] = {}
        self._rates: dict[Rate, Rate] = {}

    def judge(
        self,
        cell: Cell,
        attempts: Sequence[AttemptResult],
        *,
        interrupted: bool = False,
    ) -> CellResult:
        """`cell`'s verdict from its finished attempts.

        `interrupted`: the run stopped before every planned attempt of the cell ran (a
        cell judged as its last attempt ends never is).
        """
        planned = self._plan.attempts
        position = position_of(planned.cells, cell)
        numbers = tuple(planned.numbers_of(position)) if position is not None else ()
        command, environment = "", None
        if numbers and position is not None:
            first = planned.planned(position, numbers[0])
            command = self._texts.setdefault(first.command_text, first.command_text)
            as_json = first.environment.to_json()
            key = json.dumps(as_json, sort_keys=True)
            environment = self._environments.setdefault(key, as_json)
        expectation = self._plan.expectation(cell)
        verdict = judge_cell(expectation, attempts)
        # Judged short of its planned attempts because stop_on stopped it (the scheduler's
        # rule, `stopped_by`), in a run that went on or was interrupted: said, so that the
        # attempts it never ran read as skipped on purpose, not lost; and not "--resume
        # finishes it", which a resume would not (it keeps a stopped cell stopped).
        stopped = (
            bool(attempts)
            and len(attempts) < len(numbers)
            and stopped_by(self._plan.stop_on, expectation, attempts)
        )
        if interrupted and not attempts:
            # Nothing went wrong in this cell: the run stopped before it (no infra-error).
            verdict = Verdict("not-run", f"{NOT_RUN}: --resume finishes it", verdict.rate)
        elif stopped:
            missed = stopped_misses(expectation, attempts)
            verdict = replace(
                verdict,
                reason=f"{verdict.reason} "
                f"({stopped_phrase(self._plan.stop_on, len(attempts), len(numbers), missed)})",
            )
        elif interrupted and len(attempts) < len(numbers):
            verdict = replace(
                verdict,
                reason=f"{verdict.reason} "
                f"({interrupted_phrase(len(attempts), len(numbers))}; --resume finishes it)",
            )
        reason = self._texts.setdefault(verdict.reason, verdict.reason)
        verdict = Verdict(verdict.kind, reason, self._rates.setdefault(verdict.rate, verdict.rate))
        return CellResult.judged(cell, expectation, verdict, tuple(attempts), command, environment)


def stopped_by(stop_on: str, expectation: Expectation, attempts: Sequence[AttemptResult]) -> bool:
    """Whether run.stop_on stops a cell with these attempts: the scheduler's rule, read on
    all of them. An attempt that could not run neither reproduces nor misses; with a rate,
    the cell's interval decides (met for first-reproduction, failed for first-miss); an
    observed cell is never stopped (nothing is expected of it)."""
    if stop_on == "never" or expectation.observes:
        return False
    if expectation.rate is not None:
        judged = judge_rate(ran_rate(attempts), expectation.rate)
        return (stop_on == "first-reproduction" and judged == "met") or (
            stop_on == "first-miss" and judged == "failed"
        )
    ran = [a for a in attempts if a.infra_error is None]
    if stop_on == "first-reproduction":
        return any(a.matched for a in ran)
    return not all(a.matched for a in ran)


def stopped_misses(expectation: Expectation, attempts: Sequence[AttemptResult]) -> int:
    """The attempts that ran and missed, of a cell without `expect.rate` (`stopped_phrase`
    says them of one first-reproduction stopped); 0 with a rate, whose interval decided."""
    if expectation.rate is not None:
        return 0
    return sum(not a.matched for a in attempts if a.infra_error is None)


def ran_rate(attempts: Iterable[AttemptResult]) -> Rate:
    """The matching rate of the attempts that ran, as `judge_cell` counts it: one that
    could not run (infra-error) is in neither count. The rule run.stop_on and `repeat:
    auto` decide a rate cell on, in the scheduler."""
    ran = [a for a in attempts if a.infra_error is None]
    return rate_of(sum(a.matched for a in ran), len(ran))


def judge_cells(
    plan: RunPlan,
    attempts_by_cell: Mapping[str, Sequence[AttemptResult]],
    *,
    interrupted: bool = False,
) -> tuple[CellResult, ...]:
    """Turn each planned cell's attempts into its verdict."""
    judge = CellJudge(plan)
    return tuple(
        judge.judge(cell, attempts_by_cell.get(cell.id, ()), interrupted=interrupted)
        for cell in plan.cells
    )


def exit_code_for(run: RunResult) -> int:
    """0 all reproduced (or observed); 3 any infra-error; 1 any not reproduced; 4 any undecided.

    The first that applies, in that order; 130 before all of them when interrupted.
    """
    if run.interrupted:
        return EXIT_INTERRUPTED
    summary = run.summary
    if summary["infra_error"]:
        return EXIT_INFRA
    if summary["not_reproduced"]:
        return EXIT_NOT_REPRODUCED
    if summary["undecided"]:
        return EXIT_UNDECIDED
    return EXIT_OK
