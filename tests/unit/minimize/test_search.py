"""The minimization's passes and its flaky-aware search, against programs run in-process.

No processes: a candidate "runs" by exec() of its source with the cell's values
and a seeded generator, so the attempts are real executions of the candidate's
code, only not in a child. `Crash(where)` stands for the failure (a SIGSEGV in a
worker); any other exception is another failure; returning is a pass.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import cast

import pytest

from reprospec.core.rates import clearly_more, rate_of
from reprospec.isolation.candidates import AttemptKind, Tally, clean_needed_at
from reprospec.minimize.program import Program, join_words, source_lines, split_words
from reprospec.minimize.ratechange import rate_change
from reprospec.minimize.report import Minimized, _deterministic_rule, _same_line
from reprospec.minimize.search import Minimization, MinimizeResult, Probe, Settings, minimize
from reprospec.minimize.source import (
    Reducer,
    _reduce_file,
    apply,
    changeable,
    deletable,
    kept_messages,
    numbered,
    reduce,
    unused_definitions,
    unused_imports,
)
from tests.support.minimizing import proposing

PROGRAM = '''\
"""A training loop in miniature: the crash needs workers and pinned memory."""
import json
import os
import random


def emit(**event):
    EVENTS.append(json.dumps(event))


def helper(a, b=2):
    return [a, b, a * b]


def decoy():
    raise Crash("main")  # a crash, but another one


class Loader:
    def __init__(self, workers, pinned):
        self.workers = workers
        self.pinned = pinned
        self.items = helper(1, b=3)

    def fetch(self, step):
        emit(phase="validation", step=step)
        if self.workers > 0 and self.pinned:
            if step == 7:
                race()
        return step


def main():
    loader = Loader(CELL["workers"], CELL["pinned"])
    total = 0
    for step in range(1, 9):
        total += loader.fetch(step)
    if os.environ.get("NEVER_SET_IN_TESTS"):
        decoy()
    print("done", total, file=SINK)


main()
'''
FAILING = {"workers": 2, "pinned": True}
PASSING = ({"workers": 0, "pinned": True}, {"workers": 2, "pinned": False})


class Crash(Exception):
    pass


class _Sink:
    def write(self, text: str) -> int:
        return len(text)


class InProcess:
    """Runs probes by exec() of the candidate: the failing cell, or each passing cell once."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.rng = random.Random(seed)
        self.attempts = 0
        self.ran: list[str] = []

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        self.attempts += 1

        def race() -> None:
            """The flakiness is the attempt's, not the code's: no candidate removes it."""
            if self.rng.random() < self.rate:
                raise Crash("worker")

        scope = {
            "CELL": cell,
            "race": race,
            "keep_rate": lambda: None,
            "Crash": Crash,
            "EVENTS": [],
            "SINK": _Sink(),
            "__name__": "__main__",
            **self.extra(),
        }
        try:
            exec(compile(program.source("loop.py"), "loop.py", "exec"), scope)
        except Crash as crash:
            return "match" if crash.args == ("worker",) else "other"
        except Exception:
            return "other"
        return "pass"

    def extra(self) -> dict[str, object]:
        """More names the candidates may use."""
        return {}

    def __call__(self, program: Program, probe: Probe) -> tuple[Sequence[AttemptKind], str]:
        self.ran.append(program.key)
        kinds: list[AttemptKind] = []
        cells = PASSING if probe.role == "passing" else [FAILING] * probe.attempts
        for cell in cells:
            kind = self.attempt(program, dict(cell))
            kinds.append(kind)
            if probe.role == "failing" and kind == "match" and probe.stop_after == 1:
                break
        return kinds, ""


def program(text: str = PROGRAM) -> Program:
    return Program(head=("python", "loop.py"), args=(), files=(("loop.py", text),))


def run(rate: float, seed: int, text: str = PROGRAM, **settings: float) -> MinimizeResult:
    executor = InProcess(rate, seed)
    options = Settings(passing=len(PASSING), **settings)  # type: ignore[arg-type]
    result = minimize(program(text), executor, options)
    assert result.attempts == executor.attempts
    return result


def keeps_the_condition(result: MinimizeResult) -> None:
    source = result.program.source("loop.py")
    assert "workers" in source
    assert "pinned" in source
    assert "race()" in source
    assert "decoy" not in source


def test_a_deterministic_failure_shrinks_to_the_condition() -> None:
    result = run(1.0, seed=0)
    assert result.status == "minimized", result.message
    keeps_the_condition(result)
    assert result.program.lines <= 12 < source_lines(PROGRAM)
    assert result.rate.matched == result.rate.attempts == 20
    assert result.passing_checked.passed == result.passing_checked.attempts == 2 * 5
    assert result.attempts < 500


def test_passing_cells_keep_the_condition() -> None:
    """Without them, 'crashes with Crash(worker)' loses `if workers and pinned`."""
    executor = InProcess(1.0, seed=0)
    result = minimize(program(), executor, Settings(passing=0))
    assert "if self.workers > 0 and self.pinned" not in result.program.source("loop.py")
    assert "if self.workers > 0 and self.pinned" in run(1.0, seed=0).program.source("loop.py")


# Seeds whose runs accept no candidate that lost the condition (each does with at most
# passing_error, 0.01: 1 run in 40 here, as before point 7).
@pytest.mark.parametrize("seed", [0, 2])
def test_a_failure_at_30_percent_still_fails_and_keeps_the_condition(seed: int) -> None:
    result = run(0.3, seed=seed, budget=2500)
    assert result.status == "minimized", result.message
    keeps_the_condition(result)
    # The original's rate, and the result's: an unconditional race() at every step,
    # which fails clearly more often than the original's at step 7 only, is rejected
    # (point 7: another cause, as far as the search can tell).
    assert result.original_rate.low < 0.3 < result.original_rate.high
    assert 0 < result.rate.low <= result.rate.value <= result.rate.high
    assert not clearly_more(result.rate, result.original_rate)
    assert result.program.lines < source_lines(PROGRAM) // 2


def test_an_accepted_candidate_passes_its_passing_cells_to_the_smaller_error() -> None:
    """Accepting a candidate that lost the condition makes the result wrong, not larger:
    its passing cells pass until (1 - p)^n <= passing_error (0.01: 13 times at p = 0.3),
    not the 7 that dropping a clean candidate needs (0.7^7 is 8% per candidate)."""
    result = run(0.3, seed=0, budget=2500)
    assert result.status == "minimized", result.message
    assert result.rate_used == 0.3
    accepted = [j for j in result.judged if j.verdict == "fails"][1:]  # after the original
    assert accepted
    assert clean_needed_at(0.3, Settings.passing_error) == 13
    assert clean_needed_at(0.3, Settings.error) == 7
    assert {j.passing.passed for j in accepted} == {len(PASSING) * 13}
    # At a rate known near 1, one pass of each cell; a failure read as deterministic pays
    # as p alone asks (test_a_failure_read_as_deterministic_accepts_a_candidate_by_p_alone).
    assert clean_needed_at(0.99, Settings.passing_error) == 1


def test_a_failure_that_never_flaked_drops_a_clean_candidate_after_one_attempt() -> None:
    """A deterministic failure paid 2-3 clean attempts per dropped candidate
    (p the 95% lower bound of 5 in 5, 0.57, rising slowly) and 2-6 passes per accepted
    one, and a 57-line program ran out of its 1000 attempts. Read as deterministic
    beside the flaky readings (as bisect and isolate learn the rate), one clean attempt
    drops a candidate; the passes that accept one keep p alone (point 3)."""
    result = run(1.0, seed=0)
    assert result.status == "minimized", result.message
    keeps_the_condition(result)
    assert result.deterministic > 0.8
    assert result.clean_needed == 1
    assert result.passing_needed == clean_needed_at(result.rate_used, Settings.passing_error)
    clean = [j for j in result.judged if j.verdict == "clean"]
    assert clean
    assert {j.failing.ran for j in clean} == {1}
    # The same result as before, in fewer attempts (400 before: 2 or 3 per clean one).
    assert result.attempts < 320
    # minimize.md's Rule line says which reading held, and what it asked.
    assert _deterministic_rule(result).endswith(
        "the chance of n clean attempts summed over the readings: n = 1; the passes of each "
        "passing cell that accept a candidate keep p alone, since accepting one that lost the "
        f"condition makes the result another bug ({result.passing_needed} at the end)"
    )
    assert _deterministic_rule(run(0.3, seed=0, budget=300)) == ""


def test_a_failure_that_flaked_is_not_read_as_deterministic() -> None:
    """The first clean attempt of the original (30%: its rate's attempts) leaves p alone:
    a clean candidate still needs 7 clean attempts, not 1."""
    result = run(0.3, seed=0, budget=2500)
    assert result.deterministic == 0
    assert result.clean_needed == 7
    clean = [j for j in result.judged if j.verdict == "clean"]
    assert clean
    assert {j.failing.clean for j in clean} == {7}


def test_a_candidate_s_first_match_is_no_evidence_that_the_failure_is_deterministic() -> None:
    """An accepted candidate's one match is where its probe stopped: counted, a failure at
    90% whose original failed 5 in 5 was read as deterministic after tens of candidates
    and accepted ones that lost the condition on one pass of the passing cells. The
    original's attempts alone weigh the readings. Here the failure fails every time, and
    more than 10 candidates fail: counted, their matches would have raised the weight
    towards 1; it stays the weight of the original's 5 in 5 to the end."""
    result = run(1.0, seed=0)
    assert sum(1 for j in result.judged if j.verdict == "fails") > 10
    assert result.deterministic == pytest.approx(0.8588, abs=1e-4)


def test_with_min_rate_1_every_reading_at_rate_1_is_the_deterministic_weight() -> None:
    """`--min-rate 1` makes the third reading (the original's lower bound, at
    least min_rate) a rate of 1 too; the weight reported was the first reading's alone."""
    from reprospec.isolation.hypotheses import DETERMINISTIC_PRIOR
    from reprospec.minimize.search import HIGH_PRIOR, HIGH_RATE

    result = run(1.0, seed=0, min_rate=1.0)
    high = HIGH_PRIOR * HIGH_RATE**5
    assert result.deterministic == pytest.approx(1 - high / (1 - HIGH_PRIOR + high), abs=1e-9)
    assert result.deterministic > DETERMINISTIC_PRIOR


@pytest.mark.parametrize(("rate", "seed"), [(0.8, 16), (0.8, 18), (0.9, 1)])
def test_a_failure_read_as_deterministic_accepts_a_candidate_by_p_alone(
    rate: float, seed: int
) -> None:
    """The original's 5 attempts are all a failure at 80% or 90% fails a third or
    more of the time, and the deterministic reading then had each passing cell pass twice
    to accept a candidate: one that lost the condition passed there 4 times in 100 at 80%,
    and these runs ended `unconfirmed` (a passing cell failed with the 20-line result in
    the final check; p alone keeps the condition, 12 lines). Dropping on one clean attempt
    costs size only; accepting costs correctness, so the passes keep p alone (point 3)."""
    result = run(rate, seed=seed)
    assert (result.original_rate.matched, result.original_rate.attempts) == (5, 5)
    assert result.deterministic > 0.8
    assert result.clean_needed == 1
    assert result.status == "minimized", result.message
    keeps_the_condition(result)
    assert result.program.lines <= 12
    first = next(j for j in result.judged[1:] if j.verdict == "fails")
    assert first.passing.passed == len(PASSING) * 6  # 0.434^6 <= 0.01 (p = 0.566 of 5 in 5)


def test_a_failure_that_never_happens_is_refused() -> None:
    result = run(0.0, seed=0)
    assert result.status == "refused"
    assert "did not fail as expected in 20 attempts (0/20: 20 passed)" in result.message
    assert result.attempts == 20
    assert not result.budget_spent  # a larger budget would not help: it never failed


def test_a_low_min_rate_runs_the_original_long_enough_to_see_its_failure() -> None:
    # `minimize --min-rate 0.04` of a real 4% failure was refused after 0/20 clean attempts
    # ("did not fail as expected ... nothing to minimize"), a miss that a 4% failure makes 44%
    # of the time: the user had said to look for it. The original runs on to its first
    # match (its 25th attempt here), up to as many as make a miss at 0.04 less likely than
    # isolate's error (130), and the search goes on from there.
    search = Minimization(program(), Settings(min_rate=0.04, passing=len(PASSING), step=4))
    assert search.seek_attempts() == clean_needed_at(0.04, 0.005) == 130
    ran = 0
    while True:
        (probe,) = search.next_probes()
        if probe.role != "failing":
            break
        assert probe.key == search.original.key
        kinds: list[AttemptKind] = []
        while len(kinds) < probe.attempts and not (kinds[-1:] == ["match"] and probe.stop_after):
            ran += 1
            kinds.append("match" if ran == 25 else "pass")
        search.record(probe, kinds)
    assert search.result is None  # not refused
    assert ran == 25
    assert probe.role == "passing"  # the rate phase ended at its first match
    # Counted as it ran, 1/25, which reads a 1% failure high, as a stop at a 5th match
    # does: the result says it was sought (minimize.md's Rate line, minimize.json).
    search.interrupt()
    assert search.result is not None
    assert (search.result.original_rate.matched, search.result.original_rate.attempts) == (1, 25)
    assert search.result.original_sought
    assert not search.result.original_stopped
    assert search.result.to_dict()["original_sought"] is True
    assert not run(1.0, seed=0).original_sought  # one that fails in its first 20 is not
    # The default rate keeps its 20: a miss at 0.3 in 20 is already below that error.
    assert Minimization(program(), Settings()).seek_attempts() == 20


class Numbered:
    """An executor whose attempts end as `kind` of their number among all it ran (from 1),
    whatever the program: the original's rate phase as a test lays it out; `ran` counts."""

    def __init__(self, kind: Callable[[int], AttemptKind]) -> None:
        self.kind = kind
        self.ran = 0

    def __call__(self, _program: Program, probe: Probe) -> tuple[list[AttemptKind], str]:
        kinds: list[AttemptKind] = []
        for _ in range(probe.attempts):
            self.ran += 1
            kinds.append(self.kind(self.ran))
        return kinds, ""


def test_an_original_failing_otherwise_as_often_as_it_passes_does_not_seek_its_failure() -> None:
    # 1 pass among attempts that failed otherwise at --min-rate 0.04 ran on to 130 attempts
    # and was then told that "130 clean attempts had a chance of 0.005: for a rarer
    # failure, `reprospec amplify` it first": its expect, not the rate, is the question.
    once = Numbered(lambda n: "pass" if n == 1 else "other")
    result = minimize(program(), once, Settings(min_rate=0.04, passing=len(PASSING)))
    assert result.status == "refused"
    assert result.attempts == once.ran == 20
    assert result.message == (
        "the original program did not fail as expected in 20 attempts (0/20: 1 passed, 19"
        " failed otherwise); nothing to minimize; it failed otherwise more often than it"
        " passed: check the expect"
    )
    # Where they hung, the timeout too (an error exit was sent to change it as well).
    hung = Numbered(lambda n: "pass" if n == 1 else "hang")
    result = minimize(program(), hung, Settings(min_rate=0.04, passing=len(PASSING)))
    assert result.status == "refused"
    assert result.message.endswith(
        "(0/20: 1 passed, 19 failed otherwise); nothing to minimize; it failed otherwise more"
        " often than it passed: check the expect or --timeout"
    ), result.message


def test_the_seek_counts_passes_alone_so_its_refusal_is_as_unlikely_as_it_says() -> None:
    # 11 passed / 9 failed otherwise per 20 at --min-rate 0.04 sought to 130 attempts (~72
    # passes) and was refused with "72 passing attempts had a chance of 0.053", where
    # cli.md says the seek goes on until a miss is less likely than 0.005.
    once = Numbered(lambda n: "pass" if n % 20 < 11 else "other")
    settings = Settings(min_rate=0.04, passing=len(PASSING))
    result = minimize(program(), once, settings)
    assert result.status == "refused"
    assert result.original_rate.matched == 0
    assert "130 passing attempts had a chance of 0.005:" in result.message
    assert result.attempts == once.ran > 130


def test_a_refusal_of_an_original_that_only_passed_says_how_unlikely_and_the_ways_on() -> None:
    result = run(0.0, seed=0, min_rate=0.05)
    assert result.status == "refused"
    assert result.attempts == 104
    assert result.message == (
        "the original program did not fail as expected in 104 attempts (0/104: 104 passed);"
        " nothing to minimize; at the assumed minimum rate 0.05, 104 passing attempts had a"
        " chance of 0.0048: for a rarer failure, `reprospec amplify` it first (then minimize"
        " --amplify), or give a lower --min-rate"
    )


def test_a_budget_too_small_for_a_failure_that_always_matched_is_said_so() -> None:
    # `--budget 30` on a crash that failed 6/6 said "the original program fails too rarely
    # to minimize", of a failure that never missed: the budget is short, not the rate.
    result = run(1.0, seed=0, budget=30)
    assert result.status == "refused"
    assert result.message.startswith(
        "the budget is too small to minimize: the original failed as expected in 5/5 attempts ("
    )
    assert "rarely" not in result.message
    assert result.message.endswith("(--budget 45 at the least)")
    assert result.budget_spent


def test_an_original_that_fails_otherwise_is_refused_saying_so() -> None:
    # nu-a: at `--timeout 1ms` every attempt hung, and the refusal read "(0/20)" as of a
    # program that passed.
    result = minimize(program(), lambda _program, probe: (["other"] * probe.attempts, ""))
    assert result.status == "refused"
    assert "did not fail as expected in 20 attempts (0/20: 20 failed otherwise)" in result.message
    # Its warning advised "rerun with a lower --min-rate for a smaller result" of a program
    # that never failed as expected, no candidate run: no rate would have helped.
    assert not any("--min-rate" in warning for warning in result.warnings)


def test_a_rare_failure_refused_for_the_budget_gets_no_min_rate_advice() -> None:
    # No candidate ran, so none "may have been dropped that still fail".
    result = run(0.05, seed=3, budget=60)
    assert result.status == "refused"
    assert result.warnings == ()


def test_a_rare_failure_is_refused_for_a_small_budget_with_the_figure() -> None:
    result = run(0.05, seed=3, budget=60)
    assert result.status == "refused"
    # The original named once ("...: the original failed as expected in" said it twice).
    assert re.match(
        r"the original program fails too rarely to minimize within the budget: it failed as "
        r"expected in \d+/\d+ attempts \(",
        result.message,
    ), result.message
    # The budget refused it: the same command with a larger one goes on (report.py).
    assert result.budget_spent
    assert run(1.0, seed=0, budget=8).budget_spent  # out of budget measuring the rate


def test_a_passing_cell_that_fails_with_the_original_is_refused() -> None:
    broken = PROGRAM.replace("if self.workers > 0 and self.pinned:", "if True:")
    result = run(1.0, seed=0, text=broken)
    assert result.status == "refused"
    assert "a passing cell of the spec fails with the original program" in result.message


def test_out_of_budget_gives_the_smallest_seen_failing_and_keeps_the_final_check() -> None:
    result = run(1.0, seed=0, budget=80)
    assert result.status == "budget"
    assert result.budget_spent
    assert result.attempts <= 80
    assert result.rate.attempts == 20  # the final check was kept out of the budget
    assert result.program.lines < source_lines(PROGRAM)
    assert "the budget of 80 attempts ran out" in result.message
    # After the settings step spent 20 of --budget 100, the message names the 100 given.
    after = run(1.0, seed=0, budget=80, spent_before=20)
    assert "the budget of 100 (20 on the settings) attempts ran out" in after.message


class CannotStart(InProcess):
    """A candidate without `def decoy` never starts (as `python` left without its `-c`
    cannot open its file), an infra error on every attempt; from `broken_after` attempts
    on nothing starts at all (the machine broke)."""

    def __init__(self, rate: float, seed: int, broken_after: int | None = None) -> None:
        super().__init__(rate, seed)
        self.broken_after = broken_after

    def __call__(self, program: Program, probe: Probe) -> tuple[Sequence[AttemptKind], str]:
        broken = self.broken_after is not None and self.attempts >= self.broken_after
        if broken or "def decoy" not in program.source("loop.py"):
            self.ran.append(program.key)
            self.attempts += probe.attempts
            return ["infra"] * probe.attempts, "python: can't open file 'true'"
        return super().__call__(program, probe)


def test_a_candidate_that_cannot_start_is_dropped_and_the_search_goes_on() -> None:
    executor = CannotStart(1.0, seed=0)
    result = minimize(program(), executor, Settings(passing=len(PASSING)))
    assert result.status == "minimized", result.message
    assert result.attempts == executor.attempts
    assert "cannot-run" in {j.verdict for j in result.judged}
    assert result.cannot_run == sum(j.verdict == "cannot-run" for j in result.judged)
    assert result.cannot_run_reason == "python: can't open file 'true'"
    assert result.to_dict()["cannot_run"] == result.cannot_run
    source = result.program.source("loop.py")
    assert "def decoy" in source  # every candidate without it could not run
    assert "race()" in source
    assert result.program.lines < source_lines(PROGRAM)


def test_a_machine_that_can_run_nothing_more_ends_the_search_as_an_infra_error() -> None:
    executor = CannotStart(1.0, seed=0, broken_after=30)
    result = minimize(program(), executor, Settings(passing=len(PASSING)))
    assert result.status == "infra-error"
    assert "a candidate could not run (3 attempts in a row), nor then the original" in (
        result.message
    )
    assert "can't open file" in result.message
    # nu-a: where the original itself never ran (its command not on PATH), the message
    # blamed "a candidate", where none had been made yet.
    executor = CannotStart(1.0, seed=0, broken_after=0)
    result = minimize(program(), executor, Settings(passing=len(PASSING)))
    assert result.status == "infra-error"
    assert result.message.startswith("the original could not run (3 attempts in a row): ")
    assert "candidate" not in result.message


class LuckyOnce(InProcess):
    """A program without `keep_rate()` fails on its first attempt only (a change that made
    the failure rare, accepted on a lucky attempt), then never again."""

    def __init__(self) -> None:
        super().__init__(1.0, 0)
        self.seen: set[str] = set()

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        kind = super().attempt(program, cell)
        if kind != "match" or "keep_rate()" in program.source("loop.py"):
            return kind
        if program.key in self.seen:
            return "pass"
        self.seen.add(program.key)
        return "match"


def test_a_result_that_fails_no_more_falls_back_to_an_earlier_one_that_does() -> None:
    # D12b: the original failed 5/5, the result 0/5: minimize wrote the worse program.
    text = PROGRAM.replace(
        "            if step == 7:\n                race()",
        "            if step == 7:\n                keep_rate()\n                race()",
    )
    assert "keep_rate()" in text
    executor = LuckyOnce()
    result = minimize(program(text), executor, Settings(passing=len(PASSING)))
    assert result.status == "minimized", result.message
    assert "keep_rate()" in result.program.source("loop.py")
    assert result.rate.matched == result.rate.attempts == 20  # its own final check
    assert result.program.lines < source_lines(text)  # still smaller than the original
    assert "failed in 0 of 20 final attempts" in result.message
    assert result.attempts == executor.attempts


class BreaksLater(InProcess):
    """A program without `keep_guard()` broke its passing cells, but they fail only after
    the passes that accepted it: the first `held` attempts of the passing cells of programs
    without it pass, all the later ones fail (a break rarer than the rule assumed, passing
    by luck until the luck runs out), as a user's race without its `with lk:`."""

    def __init__(self, held: int) -> None:
        super().__init__(1.0, 0)
        self.held = held
        self.unguarded = 0

    def extra(self) -> dict[str, object]:
        return {"keep_guard": lambda: None}

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        kind = super().attempt(program, cell)
        if cell == FAILING or "keep_guard()" in program.source("loop.py"):
            return kind
        self.unguarded += 1
        return kind if self.unguarded <= self.held else "other"


@pytest.mark.parametrize("held", [12, 36])
def test_a_result_whose_passing_cell_fails_steps_back_and_reduces_on_from_there(
    held: int,
) -> None:
    # The final check saw a passing cell fail with the result and answered
    # `unconfirmed`, where an earlier program accepted held: bisect back to it. And
    # then reduce on from it, the candidate that broke the cell rejected: every removal
    # accepted after that one was lost with it (27 lines where 13 do, at either `held`).
    text = PROGRAM.replace("    total = 0\n", "    keep_guard()\n    total = 0\n")
    assert "keep_guard()" in text
    # The guard's break seen at once: what the passes reach where no luck misleads them.
    at_once = minimize(program(text), BreaksLater(held=0), Settings(passing=len(PASSING)))
    assert at_once.stepped_back == 0
    # 6 passes of each cell at first (the failing cell's 5 of 5: p alone), 3 once the rate
    # was learned: the first candidate without the guard passes its 12 (and, at 36, the
    # ones accepted after it theirs), the final check's fail.
    executor = BreaksLater(held=held)
    result = minimize(program(text), executor, Settings(passing=len(PASSING)))
    assert result.status == "minimized", result.message
    assert "keep_guard()" in result.program.source("loop.py")
    assert result.passing_checked.passed == result.passing_checked.attempts == 2 * 5
    assert result.rate.matched == result.rate.attempts == 20  # its own final check
    assert result.program.lines == at_once.program.lines < 27
    assert (result.stepped_back, result.resumed) == (1, 1)
    assert "a passing cell failed with the smallest program accepted" in result.message
    assert "resumed reducing from there: the result is 13 lines" in result.message
    assert result.attempts == executor.attempts
    # The candidate that cut the guard, and those accepted after it, are rejected as such
    # (never accepted again from the cache), and none of the resumed passes' is.
    broke = [j for j in result.judged if j.verdict == "breaks-passing"]
    assert len(broke) == result.breaks_passing >= 1
    assert all("keep_guard()" not in j.key and j.lines < 31 for j in broke)
    accepted = [j for j in result.judged if j.verdict == "fails"]
    assert all(j.key not in {b.key for b in broke} for j in accepted)
    # The cost: the bisection, then the passes anew from 27 lines, what they met before
    # answered from the cache (555 and 490 attempts; at_once 301).
    assert result.attempts < 2 * at_once.attempts


def test_a_step_back_the_budget_cannot_resume_from_is_the_result() -> None:
    """Where the budget leaves only the final check after the bisection, the program
    stepped back to is the result, as before, and the message says no resumption."""
    text = PROGRAM.replace("    total = 0\n", "    keep_guard()\n    total = 0\n")
    # 340: the passes' 275 attempts, the final check's 20 and 2, the bisection's 24, and
    # 19 left: less than a final check (30), let alone the passes and another step back.
    result = minimize(program(text), BreaksLater(held=12), Settings(passing=2, budget=340))
    assert (result.stepped_back, result.resumed) == (1, 0), result.message
    assert "keep_guard()" in result.program.source("loop.py")
    assert result.program.lines == 27
    assert result.status == "minimized"
    assert "the result is the last one accepted whose passing cells still passed" in result.message


def test_stopped_while_stepping_back_the_result_is_the_last_known_to_hold() -> None:
    """Ctrl-C during the bisection answers a program whose passing cells held (the original
    at worst), not the one whose passing cell failed in the final check."""
    text = PROGRAM.replace("    total = 0\n", "    keep_guard()\n    total = 0\n")
    executor = BreaksLater(held=len(PASSING) * 6)
    search = Minimization(program(text), Settings(passing=len(PASSING)))
    while search.result is None and search._phase != "passing-back":
        for probe in search.next_probes():
            kinds, reason = executor(search.program(probe.key), probe)
            search.record(probe, kinds, reason)
    assert search._phase == "passing-back"
    assert "keep_guard()" not in search.best.source("loop.py")
    search.interrupt()
    assert search.result is not None
    assert search.result.status == "interrupted"
    assert "keep_guard()" in search.result.program.source("loop.py")


def test_a_flaky_failure_s_passing_cells_pass_at_the_assumed_minimum_rate() -> None:
    """P is the failing cell's rate; a passing cell a candidate broke fails at its
    own. Where the original came back clean, q is `min_rate` (13 passes at 0.3), not p."""
    search = Minimization(program(), Settings(passing=len(PASSING), min_rate=0.3))
    search._original_failing = search._fair = search._known = Tally(17, 3)
    assert search.rate_used() == pytest.approx(0.64, abs=0.01)
    assert clean_needed_at(search.rate_used(), 0.01) == 5  # what it asked before
    assert search.passing_rate() == 0.3
    assert search.passing_needed() == 13
    # A break failing at 60% passes 13 times in 10^5, where 5 passed once in 100.
    assert 0.4**13 < 1e-5 < 0.01 <= 0.4**5 * 1.03
    # A failure that never flaked keeps p (its cost unchanged).
    search._original_failing = search._fair = search._known = Tally(5, 0)
    assert search.passing_rate() == search.rate_used()


# The bug fires only under the perturbation (PERTURBED, as MALLOC_PERTURB_ is for a user's
# use-after-free): `and PERTURBED` is what a candidate drops to fail without it too.
NEEDS_PERTURBATION = PROGRAM.replace(
    "            if step == 7:\n                race()",
    "            if step == 7 and CELL['perturbed']:\n                race()",
)


class Perturbed(InProcess):
    """Every role runs perturbed (CELL['perturbed']) but `unperturbed`, the failing cell
    without it; `original_fails` makes the original fail there too (its base not 0)."""

    def __init__(self, original_fails: bool = False) -> None:
        super().__init__(1.0, 0)
        self.original_fails = original_fails
        self.perturbed = True
        self.roles: list[str] = []

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        return super().attempt(program, {**cell, "perturbed": self.perturbed})

    def __call__(self, candidate: Program, probe: Probe) -> tuple[Sequence[AttemptKind], str]:
        self.roles.append(probe.role)
        if probe.role != "unperturbed":
            return super().__call__(candidate, probe)
        self.ran.append(candidate.key)
        self.perturbed = False
        try:
            kinds = [self.attempt(candidate, dict(FAILING)) for _ in range(probe.attempts)]
        finally:
            self.perturbed = True
        if self.original_fails and candidate.key == program(NEEDS_PERTURBATION).key:
            kinds = ["match" for _ in kinds]
        return kinds, ""


def test_without_the_rule_the_result_fails_without_the_perturbation() -> None:
    # What a user's race minimized to: `and CELL['perturbed']` dropped, the race fires unperturbed.
    result = minimize(program(NEEDS_PERTURBATION), Perturbed(), Settings(passing=2))
    assert result.status == "minimized", result.message
    assert "perturbed" not in result.program.source("loop.py")
    assert result.kept_perturbed is None


def test_a_base_of_none_measured_keeps_every_accepted_candidate_needing_it() -> None:
    executor = Perturbed()
    settings = Settings(passing=2, unperturbed_base=8)
    result = minimize(program(NEEDS_PERTURBATION), executor, settings)
    assert result.status == "minimized", result.message
    assert "CELL['perturbed']" in result.program.source("loop.py")
    keeps_the_condition(result)
    kept = result.kept_perturbed
    assert kept is not None
    assert kept.applies
    # The original's 8 attempts without it, after its passing cells, before the passes.
    assert (kept.base.matched, kept.base.ran) == (0, 8)
    first = executor.roles.index("passing")
    assert set(executor.roles[:first]) == {"failing"}  # the rate
    assert executor.roles[first + 1] == "unperturbed"
    # Each candidate the search would accept ran once more without it, in the budget:
    # those that failed there were rejected, as their verdict says.
    judged = result.judged[1:]  # after the original
    checked = [j for j in judged if j.unperturbed.attempts]
    rejected = [j for j in judged if j.verdict == "fails-unperturbed"]
    assert rejected
    assert all(j.unperturbed.matched == 1 for j in rejected)
    assert all(j.unperturbed.attempts == 1 for j in checked)
    assert {j.verdict for j in checked} == {"fails", "fails-unperturbed"}
    assert (kept.checked, kept.rejected) == (len(checked), len(rejected))
    assert kept.attempts == executor.roles.count("unperturbed") - 1 == len(checked)
    assert result.attempts == executor.attempts
    assert result.to_dict()["kept_perturbed"] == kept.to_dict()


def test_a_recorded_base_of_none_is_not_measured_again() -> None:
    executor = Perturbed()
    settings = Settings(passing=2, recorded_base=rate_of(0, 8))
    result = minimize(program(NEEDS_PERTURBATION), executor, settings)
    assert "CELL['perturbed']" in result.program.source("loop.py")
    kept = result.kept_perturbed
    assert kept is not None
    assert kept.applies
    assert kept.base.attempts == 0
    first = executor.roles.index("passing")
    assert executor.roles[first + 1] == "failing"  # the passes began at once


def test_an_original_that_fails_without_the_perturbation_too_asks_nothing_more() -> None:
    # Its base is not 0 of n: a candidate failing unperturbed may be the same bug.
    executor = Perturbed(original_fails=True)
    settings = Settings(passing=2, unperturbed_base=8)
    result = minimize(program(NEEDS_PERTURBATION), executor, settings)
    kept = result.kept_perturbed
    assert kept is not None
    assert not kept.applies
    assert kept.base.matched == 8
    assert executor.roles.count("unperturbed") == 1  # the base's probe alone
    assert "perturbed" not in result.program.source("loop.py")


def test_no_candidate_runs_twice() -> None:
    executor = InProcess(1.0, seed=0)
    search = Minimization(program(), Settings(passing=2))
    seen: dict[tuple[str, str], int] = {}
    while search.result is None:
        for probe in search.next_probes():
            if probe.key != search.original.key and probe.role == "failing":
                seen[(probe.key, probe.role)] = seen.get((probe.key, probe.role), 0) + 1
            search.record(probe, *executor(search.program(probe.key), probe))
    keys = [j.key for j in search.result.judged]
    assert len(keys) == len(set(keys))
    assert search.result.candidates > search.result.ran  # some were answered from the cache


def test_the_search_is_deterministic_so_stored_answers_replay() -> None:
    first = InProcess(0.5, seed=7)
    a = minimize(program(), first, Settings(passing=2))
    second = InProcess(0.5, seed=7)
    b = minimize(program(), second, Settings(passing=2))
    assert first.ran == second.ran
    assert a.program == b.program


def test_interrupt_keeps_the_smallest_program_seen_failing() -> None:
    executor = InProcess(1.0, seed=0)
    search = Minimization(program(), Settings(passing=2))
    for _ in range(40):
        for probe in search.next_probes():
            search.record(probe, *executor(search.program(probe.key), probe))
    search.interrupt()
    assert search.result is not None
    assert search.result.status == "interrupted"
    assert search.result.program.lines <= source_lines(PROGRAM)


def test_unrelated_code_goes_in_a_few_candidates() -> None:
    noise = "\n".join(f"def unrelated_{i}(x):\n    return x + {i}\n" for i in range(30))
    text = PROGRAM.replace("def helper", noise + "\n\ndef helper")
    big = run(1.0, seed=0, text=text)
    small = run(1.0, seed=0)
    assert big.program.source("loop.py") == small.program.source("loop.py")
    assert big.attempts < small.attempts + 60


# -- the passes -------------------------------------------------------------------


def test_deletion_goes_top_down() -> None:
    text = "import os\n\ndef f():\n    a = 1\n    return a\nf()\n"
    tree_nodes = deletable(text, 0)
    assert len(tree_nodes) == 3  # the module's three statements
    inner = deletable(text, 1)
    assert len(inner) == 3  # `os` of the import, and the two statements of f's body
    assert apply(text, delete=set(inner[1:])) == "import os\n\ndef f():\n    pass\nf()\n"


def test_a_pass_beside_other_statements_goes_with_any_change() -> None:
    text = "def f():\n    if a:\n        b()\n    return 1\n"
    inner = deletable(text, 2)  # b()
    emptied = apply(text, delete=set(inner))
    assert emptied == "def f():\n    if a:\n        pass\n    return 1\n"
    assert apply(emptied, unwrap={changeable(emptied, "body")[0]: "body"}) == (
        "def f():\n    return 1\n"
    )


def test_a_loop_whose_body_reads_its_variable_is_never_replaced_by_its_body() -> None:
    """`for t in threads: t.join()` unwrapped is `t.join()`: the last thread joined alone
    (`t` left bound by the loop that started them), the others racing the interpreter's
    exit; it fails as often, with the same signature, but it is another program. A loop
    that ignores its variable (`for _ in range(n)`) is unwrapped as before."""
    text = (
        "threads = [Thread(target=bump) for _ in range(4)]\n"
        "for t in threads:\n    t.start()\n"
        "for t in threads:\n    t.join()\n"
        "for _ in range(3):\n    bump()\n"
        "for i, (a, b) in pairs:\n    print(b)\n"
        "while busy():\n    wait()\n"
    )
    unwrapped = apply(text, unwrap=dict.fromkeys(changeable(text, "body"), "body"))
    assert unwrapped == (
        "threads = [Thread(target=bump) for _ in range(4)]\n"
        "for t in threads:\n    t.start()\n"
        "for t in threads:\n    t.join()\n"
        "bump()\n"
        "for i, (a, b) in pairs:\n    print(b)\n"
        "wait()\n"
    )


def test_blocks_unwrap_and_literals_simplify() -> None:
    text = "if x:\n    y = 'long text'\nelse:\n    y = 3\n"
    (block,) = changeable(text, "body")
    assert apply(text, unwrap={block: "body"}) == "y = 'long text'\n"
    assert apply(text, unwrap={block: "orelse"}) == "y = 3\n"
    literals = changeable(text, "simplify")
    assert apply(text, simplify=set(literals)) == "if x:\n    y = ''\nelse:\n    y = 0\n"


def test_call_arguments_and_operands_go_one_by_one() -> None:
    text = "f(a, b, key=c)\nif p and q:\n    pass\n"
    sites = deletable(text, 1)
    changed = apply(text, delete={sites[1], sites[2], sites[3]})
    assert changed == "f(a)\nif q:\n    pass\n"


def test_invalid_candidates_are_never_proposed() -> None:
    text = "try:\n    x = 1\nexcept ValueError:\n    pass\n"
    body, handler = deletable(text, 1)
    assert apply(text, delete={body}) == "try:\n    pass\nexcept ValueError:\n    pass\n"
    assert apply(text, delete={handler}) is None  # a try needs a handler


def test_unused_imports() -> None:
    text = "import os, sys\nfrom json import dumps as d, loads\nprint(sys.argv, d)\n"
    assert apply(text, delete=set(unused_imports(text))) == (
        "import sys\nfrom json import dumps as d\nprint(sys.argv, d)\n"
    )


def test_command_words_keep_expressions_whole() -> None:
    words = split_words("python t.py --workers ${{ matrix.n }} --name 'a b'")
    assert words == ("python", "t.py", "--workers", "${{ matrix.n }}", "--name", "a b")
    assert join_words(words) == "python t.py --workers ${{ matrix.n }} --name 'a b'"


def test_a_quoted_expression_keeps_its_quotes() -> None:
    # The value is interpolated into the text before the shell splits it: without its
    # quotes, `hello world` would be two arguments and the candidate another command.
    command = "python q.py --msg '${{ matrix.msg }}' \"--name=${{ matrix.n }} x\" --n 'a b'"
    words = split_words(command)
    assert words[2:] == ("--msg", "'${{ matrix.msg }}'", '"--name=${{ matrix.n }} x"', "--n", "a b")
    assert join_words(words) == command
    assert split_words(join_words(words)) == words


def test_shell_syntax_in_a_command_stays_shell_syntax() -> None:
    # A string command runs under /bin/sh -c: `|` read as a value was quoted back as `'|'`,
    # and the original itself ran another command (no pipe, no redirection).
    command = "python gen.py ${{ matrix.n }} | python c.py > log.txt 2>&1 $HOME 'a|b' \"x y\""
    words = split_words(command)
    assert words[3:] == ("|", "python", "c.py", ">", "log.txt", "2>&1", "$HOME", "'a|b'", "x y")
    assert join_words(words) == command.replace('"x y"', "'x y'")
    assert split_words(join_words(words)) == words
    # Dropping a word leaves the others as the shell read them.
    assert join_words((*words[:3], *words[6:])) == "python gen.py ${{ matrix.n }} > log.txt " + (
        "2>&1 $HOME 'a|b' 'x y'"
    )


def test_the_passes_shrink_command_words_in_pairs() -> None:
    start = Program(("python", "t.py"), ("--a", "1", "--b", "2", "--c"), files=())
    needed = {"--b", "2"}
    reducer = reduce(start)
    candidate = next(reducer)
    proposed = 0
    result: Program | None = None
    while result is None:
        proposed += 1
        try:
            candidate = reducer.send(needed <= set(candidate.args))
        except StopIteration as stop:
            result = stop.value
    assert result.args == ("--b", "2")
    assert proposed < 12


def test_every_candidate_parses() -> None:
    reducer = reduce(program())
    candidate = next(reducer)
    try:
        for n in range(400):
            ast.parse(candidate.source("loop.py"))
            candidate = reducer.send(n % 3 == 0)
    except StopIteration:
        pass


def _fails_where_broken(program: Program) -> bool:
    """The oracle of a deterministic failure with a passing cell, in this process: the file
    raises AssertionError where `BROKEN` is true, and nothing where it is false."""
    code = compile(program.source("race.py"), "race.py", "exec")
    for broken in (True, False):
        try:
            exec(code, {"__name__": "__main__", "BROKEN": broken})
        except AssertionError:
            if not broken:
                return False
            continue
        except Exception:
            return False
        if broken:
            return False
    return True


def _reduced(text: str) -> str:
    reducer = reduce(Program(("python", "race.py"), (), files=(("race.py", text),)))
    candidate = next(reducer)
    while True:
        try:
            candidate = reducer.send(_fails_where_broken(candidate))
        except StopIteration as stop:
            result: Program = stop.value
            return result.source("race.py")


RACE = """\
import json
total = 4
value = [0]
def work():
    for _ in range(total):
        value[0] += 0 if BROKEN else 1
work()
print(json.dumps(value))
n = total - value[0]
if n:
    raise AssertionError(f'lost updates: {n}', 'of', total)
"""


def test_the_failures_message_is_kept_where_it_costs_nothing() -> None:
    # The signature ignores a message, so every pass could drop it: `raise
    # AssertionError(f"lost updates: {n}")` became `raise AssertionError()`, the one line
    # that said what went wrong gone from the minimal program.
    smaller = _reduced(RACE)
    assert "raise AssertionError(f'lost updates: {n}', 'of', total)" in smaller, smaller
    assert "json" not in smaller
    message = "assert n == 0, 'lost ' + str(n) + ' of ' + repr(total)"
    smaller = _reduced(
        RACE.replace("if n:\n    raise AssertionError(f'lost updates: {n}', 'of', total)", message)
    )
    assert message in smaller, smaller


def test_a_message_that_costs_code_is_reduced_as_any_code() -> None:
    # One that alone reads a name, or calls the program's own code, would keep that code.
    text = (
        "def describe(x):\n    return 'a long description of ' + repr(x)\n"
        "n = 0 if BROKEN else 1\n"
        "diag = [n, n]\n"
        "if not n:\n    raise AssertionError(describe(n), f'{diag}')\n"
    )
    smaller = _reduced(text)
    assert "describe" not in smaller, smaller
    assert "diag" not in smaller, smaller
    text = "x = 1\nif x:\n    raise E(f'{x}', len(str(x)), ', '.join([str(x)]))\n"
    assert deletable(text, 2) == []
    assert len(changeable(text, "simplify")) == 1  # `x = 1`'s 1
    assert deletable("x = 1\nraise E(f'{x}')\n", 1) != []  # `x` read by the message alone


@pytest.mark.parametrize(
    "binding",
    [
        "from report import summary as repr\n",
        "import repr\n",
        "from numpy import *\n",
        "repr = str\n",
        "def repr(x):\n    return x\n",
        "try:\n    pass\nexcept E as repr:\n    pass\n",
        "match 1:\n    case repr:\n        pass\n",
        "match [1]:\n    case [*repr]:\n        pass\n",
        "match {}:\n    case {**repr}:\n        pass\n",
    ],
)
def test_a_message_calling_a_name_the_program_binds_calls_its_code(binding: str) -> None:
    # Only a def or class counted as shadowing a builtin: with `from report import summary
    # as repr`, a message's `repr(xs)` "called only builtins" and was kept, and with it the
    # import and what it pulls in (review).
    message = "xs = [1]\nassert xs, repr(xs)\n"
    assert kept_messages(numbered(ast.parse(message)))
    assert not kept_messages(numbered(ast.parse(binding + message)))


def test_unused_definitions_are_the_undecorated_unnamed_top_level_ones() -> None:
    text = (
        "import functools\n"
        "def used():\n    return 1\n"
        "def unused():\n    return 2\n"
        "class Dead:\n    pass\n"
        "@functools.cache\ndef registered():\n    return 3\n"
        "def __getattr__(name):\n    return name\n"
        "def by_name():\n    return 4\n"
        "print(used(), globals()['by_name'])\n"
    )
    smaller = apply(text, delete=set(unused_definitions(text)))
    assert smaller is not None
    assert "def unused" not in smaller
    assert "class Dead" not in smaller
    for kept in ("def used", "def registered", "def __getattr__", "def by_name"):
        assert kept in smaller


def test_what_the_deletions_left_unreferenced_goes_in_the_same_round() -> None:
    # A class whose only user a deletion removed went only in a second round, after the
    # budget had gone to literal tweaks (84 -> 41 lines in 1,000 attempts, the class still
    # there): now the candidate after the deletions drops it. Run the passes once, the
    # failure deterministic, and stop at the end of the first round over the file.
    text = PROGRAM.replace(
        "def main():\n    loader = Loader(",
        "class Tokenizer:\n    def split(self, text):\n        return text.split()\n\n\n"
        "def main():\n    words = Tokenizer().split('a b')\n    loader = Loader(",
    )
    executor = InProcess(1.0, 0)
    first_round = _reduce_file(program(text), "loop.py")
    proposed = next(first_round)
    while True:
        kinds, _ = executor(proposed, Probe(proposed.key, "failing", 1))
        try:
            proposed = first_round.send(kinds[0] == "match")
        except StopIteration as stop:
            after_one_round = stop.value
            break
    assert "Tokenizer" not in after_one_round.source("loop.py")


# A user's use-after-free in miniature: the evictor frees the block, waits `cache.gap`, then clears
# `alive`; the reader crashes where it reads the freed block because it saw it alive,
# which it does where it lost the race (`lost()`, at the executor's rate). A candidate
# without `self.gap = ...` kills the evictor thread of AttributeError after its free:
# `alive` is never cleared and every attempt crashes, with the same signature.
EVICTOR = """\
class Cache:
    def __init__(self):
        self.alive = True
        self.freed = False
        self.gap = 0.5


def evictor(cache):
    cache.freed = True
    pause(cache.gap)
    cache.alive = False


def main():
    cache = Cache()
    thread(evictor, cache)
    if CELL["workers"] > 0 and CELL["pinned"]:
        if cache.freed and (cache.alive or lost()):
            raise Crash("worker")


main()
"""


class Threads(InProcess):
    """exec() with a `thread(fn, *args)` that runs fn and, as threading's excepthook prints
    "Exception in thread", records the type of what it raised (the attempt goes on)."""

    def __init__(self, rate: float, seed: int) -> None:
        super().__init__(rate, seed)
        self.printed: list[str] = []

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        self.printed = []
        return super().attempt(program, cell)

    def extra(self) -> dict[str, object]:
        return {
            "thread": self.thread,
            "pause": lambda _seconds: None,
            "lost": lambda: self.rng.random() < self.rate,
        }

    def thread(self, fn: object, *args: object) -> None:
        try:
            fn(*args)  # type: ignore[operator]
        except Exception as error:
            self.printed.append(type(error).__name__)


def drive(
    text: str,
    executor: Threads,
    settings: Settings,
    passes: Callable[[Program], Reducer] = reduce,
) -> tuple[MinimizeResult, list[tuple[str, AttemptKind, tuple[str, ...]]]]:
    """The search driven by hand, each attempt's printed exceptions passed to `record`;
    and every attempt as (role, kind, printed)."""
    search = Minimization(program(text), settings, passes)
    seen: list[tuple[str, AttemptKind, tuple[str, ...]]] = []
    while search.result is None:
        for probe in search.next_probes():
            candidate = search.program(probe.key)
            kinds: list[AttemptKind] = []
            raised: list[tuple[str, ...]] = []
            cells = PASSING if probe.role == "passing" else [FAILING] * probe.attempts
            for cell in cells:
                kind = executor.attempt(candidate, dict(cell))
                kinds.append(kind)
                raised.append(tuple(executor.printed))
                seen.append((probe.role, kind, tuple(executor.printed)))
                if probe.role == "failing" and kind == "match" and probe.stop_after == 1:
                    break
            search.record(probe, kinds, "", raised)
    return search.result, seen


WITHOUT_GAP = EVICTOR.replace("        self.gap = 0.5\n", "")
WITHOUT_PAUSE = EVICTOR.replace("    pause(cache.gap)\n", "")


def test_a_candidate_whose_failure_prints_an_exception_the_original_never_did_is_rejected() -> None:
    # Deterministic (lost() every time): no rate can be clearly higher; the exception tells.
    executor = Threads(1.0, seed=0)
    settings = Settings(passing=len(PASSING))
    proposed = proposing(program(WITHOUT_GAP), program(WITHOUT_PAUSE))
    result, seen = drive(EVICTOR, executor, settings, proposed)
    assert result.status == "minimized", result.message
    verdicts = [(j.key, j.verdict, j.new_exceptions) for j in result.judged]
    assert verdicts == [
        (program(EVICTOR).key, "fails", ()),
        (program(WITHOUT_GAP).key, "new-exception", ("AttributeError",)),
        (program(WITHOUT_PAUSE).key, "fails", ()),
    ]
    # Rejected at its first match, before its passing cells ran: it cost nothing more.
    rejected = result.judged[1]
    assert (rejected.failing.matched, rejected.failing.ran, rejected.passing.attempts) == (1, 1, 0)
    assert result.program == program(WITHOUT_PAUSE)
    same = result.same_failure
    assert same is not None
    assert same.original_exceptions == ()
    assert same.new_exceptions == ("AttributeError",)
    assert same.new_exception_rejected == 1
    assert not same.rate_applies  # 5 of 5: nothing fails clearly more often
    assert same.rate_attempts == same.rate_checked == 0
    assert result.to_dict()["same_failure"] == same.to_dict()
    assert result.attempts == len(seen)


def test_an_exception_in_a_clean_attempt_or_one_the_original_printed_rejects_nothing() -> None:
    # The original's evictor dies of AttributeError too (it has no `gap`): the same
    # exception in a candidate's failure is not new; a clean attempt's is never asked.
    original = EVICTOR.replace("        self.gap = 0.5\n", "")
    executor = Threads(1.0, seed=0)
    result, seen = drive(original, executor, Settings(passing=len(PASSING)))
    assert result.status == "minimized", result.message
    assert result.same_failure is not None
    assert result.same_failure.original_exceptions == ("AttributeError",)
    assert "new-exception" not in {j.verdict for j in result.judged}
    assert ("passing", "pass", ("AttributeError",)) in seen


def test_a_candidate_failing_clearly_more_often_than_a_flaky_original_is_rejected() -> None:
    # A user's rate: the race at 0.3; a candidate without `cache.alive = False` (or
    # whose evictor dies before it) crashes in every attempt, with the same signature.
    executor = Threads(0.3, seed=0)
    settings = Settings(passing=len(PASSING), budget=2500)
    result, seen = drive(EVICTOR, executor, settings)
    assert result.status == "minimized", result.message
    assert result.original_rate.high < 0.676  # 8 of 8 would be clearly above it
    # The race kept (the program fails where it loses it), and no more often than before.
    source = result.program.source("loop.py")
    assert "lost()" in source, source
    assert not clearly_more(result.rate, result.original_rate)
    more = [j for j in result.judged if j.verdict == "fails-more-often"]
    assert more, [j.verdict for j in result.judged]
    same = result.same_failure
    assert same is not None
    assert same.rate_applies
    assert same.rate_rejected == len(more)
    # Bounded: at most 8 fair attempts per candidate the search would accept (its first
    # match left out), the rejected ones stopping once clearly above.
    for judged in more:
        fair = judged.failing.ran - 1
        assert 3 <= fair <= 8
        assert judged.failing.matched - 1 == fair  # every one failed
    extra = sum(1 for role, _, _ in seen if role == "failing") - 0
    assert same.rate_attempts <= 8 * same.rate_checked < extra
    assert result.attempts == len(seen)


def test_a_candidate_failing_every_time_where_a_flaky_original_did_not_is_rejected() -> None:
    # A race at 80% (4 of 5, 38%-96%) lost its condition and failed 20/20: no
    # interval of 8 attempts reaches above 4/5's. The original, clean at times, now runs
    # all 20 of its rate attempts (14 of 20 here), and a candidate failing `every_time_most`
    # times in a row (0.7^7 <= 0.1) after its first match is rejected: race() at every
    # step, which fails 1 - 0.2^8 of the time. The race once (at any one step) is kept.
    result = run(0.8, seed=0, budget=2500)
    assert result.status == "minimized", result.message
    assert (result.original_rate.matched, result.original_rate.attempts) == (14, 20)
    same = result.same_failure
    assert same is not None
    assert not same.rate_applies  # 14/20 reaches 86%: 8 of 8 (68%-100%) is not above it
    assert same.every_time_most == 7
    rejected = [j for j in result.judged if j.verdict == "fails-every-time"]
    assert len(rejected) == same.every_time_rejected >= 1
    for judged in rejected:  # its first match, then 7 in a row
        assert judged.failing.matched == judged.failing.ran == 8
    keeps_the_condition(result)
    assert result.program.source("loop.py").count("race()") == 1
    assert rate_change(result.original_rate, result.rate) is None  # 16/20: as flaky


def test_an_original_failing_its_first_five_asks_nothing_more() -> None:
    # The deterministic original's cost is unchanged: 5 of 5 stops there, and no candidate
    # runs more (nothing fails more often than every time). A race at 80% that failed its
    # first 5 (a third of the time) reads so too: the rule cannot apply to it.
    result = run(0.8, seed=3, budget=2500)
    assert (result.original_rate.matched, result.original_rate.attempts) == (5, 5)
    same = result.same_failure
    assert same is not None
    assert same.every_time_most == same.rate_attempts == same.rate_checked == 0
    assert "fails-every-time" not in {j.verdict for j in result.judged}


# A user's rare bug in miniature: the bug fires under the perturbation, and without it rarely
# (`rare()`, 15%): amplify's base was 2 of 12, not 0 of n.
RARELY_WITHOUT = PROGRAM.replace(
    "            if step == 7:\n                race()",
    "            if step == 7 and (CELL['perturbed'] or rare()):\n                race()",
)


class RarelyUnperturbed(Perturbed):
    """Perturbed's roles, and `rare()` true in 15% of the attempts (its own generator;
    drawn once an attempt, however often the candidate asks)."""

    def __init__(self) -> None:
        super().__init__()
        self.rare = random.Random(7)
        self.fired = False

    def attempt(self, program: Program, cell: dict[str, object]) -> AttemptKind:
        self.fired = self.rare.random() < 0.15
        return super().attempt(program, cell)

    def extra(self) -> dict[str, object]:
        return {"rare": lambda: self.fired}


def test_a_base_above_none_rejects_a_candidate_failing_clearly_more_often_without_it() -> None:
    executor = RarelyUnperturbed()
    settings = Settings(passing=2, recorded_base=rate_of(2, 12))
    result = minimize(program(RARELY_WITHOUT), executor, settings)
    assert result.status == "minimized", result.message
    source = result.program.source("loop.py")
    assert "CELL['perturbed']" in source, source
    keeps_the_condition(result)
    kept = result.kept_perturbed
    assert kept is not None
    assert (kept.applies, kept.rule, kept.most) == (True, "rarer", 8)
    assert kept.base.attempts == 0  # amplify's, not measured again
    judged = result.judged[1:]
    rejected = [j for j in judged if j.verdict == "fails-unperturbed"]
    assert rejected
    # 2 of 12 reaches 45%: 4 failures in 4 attempts (51%-100%) are clearly above it, and
    # a candidate failing there every time goes at its 4th attempt.
    assert all(j.unperturbed.matched == j.unperturbed.ran == 4 for j in rejected), [
        j.unperturbed for j in rejected
    ]
    kept_ones = [j for j in judged if j.verdict == "fails" and j.unperturbed.attempts]
    assert kept_ones
    # One that fails there as rarely as the original is kept at its 2nd clean attempt:
    # 6 of 8 at best (41%-93%) no longer clear.
    assert all(j.unperturbed.ran - j.unperturbed.matched == 2 for j in kept_ones)
    assert all(j.unperturbed.ran <= 8 for j in judged)
    assert kept.checked == len(rejected) + len(kept_ones)
    assert kept.attempts == sum(j.unperturbed.attempts for j in judged)
    assert result.to_dict()["kept_perturbed"] == kept.to_dict()


def test_an_original_replayed_without_its_exceptions_makes_none_new() -> None:
    # A state stored before attempts carried their exceptions: the original's probes come
    # back without them, and the evictor's AttributeError cannot be told new.
    executor = Threads(1.0, seed=0)
    search = Minimization(program(EVICTOR), Settings(passing=len(PASSING)),
                          proposing(program(WITHOUT_GAP)))  # fmt: skip
    while search.result is None:
        for probe in search.next_probes():
            candidate = search.program(probe.key)
            cells = PASSING if probe.role == "passing" else [FAILING] * probe.attempts
            kinds: list[AttemptKind] = []
            raised: list[tuple[str, ...]] = []
            for cell in cells:
                kinds.append(executor.attempt(candidate, dict(cell)))
                raised.append(tuple(executor.printed))
                if probe.role == "failing" and kinds[-1] == "match" and probe.stop_after == 1:
                    break
            old = candidate.key == search.original.key
            search.record(probe, kinds, "", () if old else raised)
    assert [j.verdict for j in search.result.judged] == ["fails", "fails"]


class EveryNth(InProcess):
    """The race fails on every `first`-th call while the original's rate is measured (its
    first 20 calls), then on every `then`-th: rare, and never clean for `then` in a row."""

    def __init__(self, first: int, then: int) -> None:
        super().__init__(0.0, 0)
        self.first, self.then, self.races = first, then, 0

    def extra(self) -> dict[str, object]:
        def race() -> None:
            self.races += 1
            if self.races % (self.first if self.races <= 20 else self.then) == 0:
                raise Crash("worker")

        return {"race": race}


def test_a_rare_result_is_not_unconfirmed_before_the_clean_attempts_that_drop_a_candidate() -> None:
    """At --min-rate 0.05 the search drops a candidate only after tens of clean attempts (45
    at p = 0.05), but the final check called the result `unconfirmed` after its 20 ran clean
    (`minimize --min-rate 0.046`, as amplify's next: line says, of a rare segfault)."""
    executor = EveryNth(first=10, then=26)
    result = minimize(program(), executor, Settings(passing=len(PASSING), min_rate=0.05))
    assert result.status == "budget", result.message  # no longer `unconfirmed`, 0 of 20
    assert "race()" in result.program.source("loop.py")
    assert (result.rate.matched, result.rate.attempts) == (1, 26)
    assert result.attempts == executor.attempts <= 1000


def test_an_option_and_its_value_go_together() -> None:
    """`--log-level debug --seed 7` stayed: one word alone leaves its partner, which
    argparse refuses (another failure), and ddmin's halves of 6 words (3, then 1) cut
    across the pairs. The failure needs `--workers 4`; the program parses like
    argparse: an option without its value, or a stray value, is an error."""
    args = ("--workers", "4", "--log-level", "debug", "--seed", "7", "-v")

    def fails(candidate: Program) -> bool:
        words, options = list(candidate.args), {}
        while words:
            word = words.pop(0)
            if word == "-v":
                continue
            if not word.startswith("--") or not words or words[0].startswith("-"):
                return False  # argparse: exit 2, not the crash
            options[word] = words.pop(0)
        return options.get("--workers") == "4"

    reducer = reduce(Program(head=("python", "a.py"), args=args))
    candidate = next(reducer)
    result: Program | None = None
    while result is None:
        try:
            candidate = reducer.send(fails(candidate))
        except StopIteration as stop:
            result = stop.value
    assert result.args == ("--workers", "4")


def test_option_groups() -> None:
    from reprospec.minimize.source import option_groups

    words = ["in.txt", "--files", "a", "b", "--x=1", "-n", "-1", "-", "--", "c", "-v"]
    assert [[words[i] for i in g] for g in option_groups(words)] == [
        ["in.txt"], ["--files", "a", "b"], ["--x=1"], ["-n", "-1", "-"], ["--"], ["c"], ["-v"]
    ]  # fmt: skip


def test_the_interval_rule_compares_against_the_original_rate_the_report_shows() -> None:
    # The original's rate run stopped at its 5th match in 12 attempts: 5/12 as it ran,
    # 4/11 as a rate may count it (its last match is where it stopped), what minimize.md
    # says ("above the original's 4/11"). A candidate's own first match is left out
    # likewise, so its 8 failures in 8 are compared with 4/11 (clearly above its 65%),
    # not with 5/12 (68%), under which the rule said it did not apply.
    def text(p: Program) -> str:
        return dict(p.files)["h.py"]

    original = Program(head=("python", "h.py"), args=(), files=(("h.py", "original"),))
    smaller = Program(head=("python", "h.py"), args=(), files=(("h.py", "smaller"),))

    def passes(start: Program) -> Reducer:
        accepted = yield smaller
        return smaller if accepted else start

    search = Minimization(original, Settings(passing=1, budget=400), passes)
    passed: AttemptKind = "pass"
    matched: AttemptKind = "match"
    queue = [passed] * 7 + [matched] * 5
    while search.result is None:
        for probe in search.next_probes():
            kinds: list[AttemptKind] = []
            for _ in range(max(1, probe.attempts)):
                if probe.role == "passing":
                    kinds.append("pass")
                elif text(search.program(probe.key)) == "original":
                    kinds.append(queue.pop(0) if queue else "match")
                else:
                    kinds.append("match")  # the candidate fails every time
                if probe.stop_after and kinds.count("match") >= probe.stop_after:
                    break
            search.record(probe, kinds)
    result = search.result
    assert (result.original_rate.matched, result.original_rate.attempts) == (4, 11)
    same = result.same_failure
    assert same is not None
    assert same.rate_applies
    verdicts = {text(search.program(j.key)): j.verdict for j in result.judged}
    assert verdicts["smaller"] == "fails-more-often", verdicts
    judged = next(j for j in result.judged if text(search.program(j.key)) == "smaller")
    assert judged.failing.matched - 1 == 8  # its first match left out, as the original's


def _broken_passing_cell(failing_printed: tuple[str, ...]) -> tuple[Minimization, str, str]:
    """A search of two candidates whose failing cells match every time printing
    `failing_printed`: `broken`, whose passing cell passes printing ValueError, and `fine`;
    the search and the two's keys."""
    broken = program(PROGRAM.replace("def helper", "def helper_"))
    fine = program(PROGRAM + "\n")
    search = Minimization(program(), Settings(passing=1), proposing(broken, fine))
    while search.result is None:
        for probe in search.next_probes():
            if probe.role == "passing":
                printed = ("ValueError",) if probe.key == broken.key else ()
                search.record(probe, ["pass"], "", [printed])
            else:
                attempts = max(1, probe.attempts)
                search.record(probe, ["match"] * attempts, "", [failing_printed] * attempts)
    return search, broken.key, fine.key


def test_a_passing_cell_that_passes_printing_a_new_exception_loses_the_passing_cell() -> None:
    # A thread's traceback leaves the exit code 0: a candidate whose passing cell's thread
    # died of ValueError (`first, second = ()` there) "passed", and was accepted.
    search, broken, fine = _broken_passing_cell(())
    assert search.result is not None
    verdicts = {j.key: j.verdict for j in search.result.judged}
    assert verdicts[broken] == "loses-passing"
    assert verdicts[fine] == "fails"
    # Said in minimize.json and minimize.md's Same failure line, not as no rejection.
    same = search.result.same_failure
    assert same is not None
    assert (same.new_passing_rejected, same.new_passing_exceptions) == (1, ("ValueError",))
    assert same.new_exception_rejected == 0
    rejected = next(j for j in search.result.judged if j.key == broken)
    assert rejected.new_exceptions == ("ValueError",)
    assert same.to_dict()["new_passing_rejected"] == 1
    line = _same_line(cast(Minimized, SimpleNamespace(result=search.result)))
    assert "1 candidate rejected whose passing cell passed printing ValueError" in line, line


def test_a_passing_cell_that_passes_printing_the_bugs_own_exception_loses_the_passing_cell() -> (
    None
):
    # The original's failing cells print ValueError (the bug); a candidate whose passing
    # cell passes printing it too has the bug leak into the cell that shows it absent. It
    # was not new beside everything the original printed, failing cells included.
    search, broken, fine = _broken_passing_cell(("ValueError",))
    assert search.result is not None
    verdicts = {j.key: j.verdict for j in search.result.judged}
    assert verdicts[broken] == "loses-passing"
    assert verdicts[fine] == "fails"


def test_a_result_whose_passing_cell_prints_a_new_exception_in_the_final_check_steps_back() -> None:
    # Accepted by luck: its passing cell's thread died of ValueError in none of the passes
    # that judged it, then in the final check's. That is the proof `_verdict` rejects on,
    # so the final check steps back (to the original here), as for a failed passing cell.
    lucky = program(PROGRAM.replace("def helper", "def helper_"))
    search = Minimization(program(), Settings(passing=1), proposing(lucky))
    while search.result is None:
        for probe in search.next_probes():
            if probe.role == "passing":
                late = probe.key == lucky.key and search._phase == "final-passing"
                search.record(probe, ["pass"], "", [("ValueError",) if late else ()])
            else:
                search.record(probe, ["match"] * max(1, probe.attempts), "", [()])
    result = search.result
    assert result.program.key != lucky.key, result.message
    assert {j.key: j.verdict for j in result.judged}[lucky.key] == "breaks-passing"
    assert result.stepped_back == 1
    assert "a passing cell passed printing ValueError" in result.message


def test_a_traceback_the_original_s_passing_cell_prints_now_and_then_rejects_no_candidate() -> None:
    # Every 5th passing attempt of any program prints BrokenPipeError: the original's one
    # pass missed it, the candidate's 5th showed it. The original's cells run again as
    # often as a candidate's and print it too, so the candidate is accepted.
    fine = program(PROGRAM + "\n")
    search = Minimization(program(), Settings(passing=1), proposing(fine))
    passes = 0
    while search.result is None:
        for probe in search.next_probes():
            if probe.role == "passing":
                passes += 1
                printed = ("BrokenPipeError",) if passes % 5 == 0 else ()
                search.record(probe, ["pass"], "", [printed])
            else:
                search.record(probe, ["match"] * max(1, probe.attempts), "", [()])
    verdicts = {j.key: j.verdict for j in search.result.judged}
    assert verdicts[fine.key] == "fails"
    assert search.result.program == fine


def _final_strays(
    budget: int,
    strays: Callable[[int], int],
    *,
    reduction_stray: bool = False,
    original_prints: bool = True,
) -> MinimizeResult:
    """A search of one candidate, `fine`, accepted in the reduction, with two passing cells,
    whose final check's rounds of them (counted from 1) print BrokenPipeError in as many
    cells as `strays` says, as the original's first cell does whenever it runs in the final
    check: a traceback it prints now and then. `reduction_stray`: `fine`'s last round in
    the reduction prints it too, in one cell. `original_prints`: False, the original's
    cells print nothing in the final check."""
    original = program("import sys\nsys.exit(1)\n")
    fine = program("import sys\nsys.exit(1)\n\n")
    search = Minimization(original, Settings(passing=2, budget=budget), proposing(fine))
    final = rounds = 0
    while search.result is None:
        for probe in search.next_probes():
            if probe.role == "passing":
                late = search._phase == "final-passing"
                final += late and probe.key == fine.key
                rounds += search._phase == "reduce" and probe.key == fine.key
                cells = (original_prints and probe.key == original.key) if late else 0
                cells = strays(final) if late and probe.key == fine.key else cells
                last = search._phase == "reduce" and rounds == search.passing_needed()
                cells = 1 if reduction_stray and last and probe.key == fine.key else cells
                printed = [("BrokenPipeError",) if cell < cells else () for cell in range(2)]
                search.record(probe, ["pass", "pass"], "", printed)
            else:
                search.record(probe, ["match"] * max(1, probe.attempts), "", [()])
    return search.result


def test_a_stray_traceback_in_the_final_check_is_weighed_as_in_the_reduction() -> None:
    # The original's passing cells ran again only in the reduction: a result whose passing
    # cell printed a traceback once in its final check (one the original prints now and
    # then, BrokenPipeError) stepped back to the original. The final check runs them too.
    result = _final_strays(1000, lambda n: n == 1)
    assert (result.status, result.stepped_back) == ("minimized", 0), result.message
    same = result.same_failure
    assert same is not None
    # Their first round printed it too, which ended them: their cost is said.
    assert same.passing_relooked == 2  # a round: one attempt of each of the two cells
    assert same.to_dict()["passing_relooked"] == 2
    assert same.to_dict()["passing_relooked_rounds"] == 1
    assert same.to_dict()["passing_relooked_stopped"] == "printed"
    line = _same_line(cast(Minimized, SimpleNamespace(result=result)))
    # One round, not a candidate's five: said as such (review).
    assert (
        "the original's passing cells ran again (2 attempts, in the budget), 1 round, "
        "until they printed it too, at the first program"
    ) in line, line
    assert "as often as a candidate's" not in line, line


def test_the_rounds_of_the_original_s_passing_cells_are_said_as_they_went() -> None:
    # "as often as a candidate's" was said of any rounds, the budget's cut ones too (review).
    def said(result: MinimizeResult) -> str:
        return _same_line(cast(Minimized, SimpleNamespace(result=result)))

    whole = _final_strays(1000, lambda n: n == 1, original_prints=False)
    assert whole.same_failure is not None
    assert whole.same_failure.passing_relooked_rounds == 5
    assert whole.same_failure.passing_relooked_stopped == ""
    assert (
        "ran again (10 attempts, in the budget), 5 rounds, as often as a candidate's then, at"
    ) in said(whole)
    least = _final_strays(1000, lambda _: 0).attempts + 1
    cut = _final_strays(least + 4, lambda n: n == 1, original_prints=False)
    assert cut.same_failure is not None
    assert cut.same_failure.to_dict()["passing_relooked_rounds"] == 2
    assert cut.same_failure.to_dict()["passing_relooked_stopped"] == "budget"
    line = said(cut)
    assert "ran again (4 attempts, in the budget), 2 rounds, cut short by the budget, at" in line
    assert "as often as a candidate's" not in line, line


def test_the_rounds_of_the_original_s_passing_cells_are_weighed_as_many_as_asked() -> None:
    # They were compared with `passing_needed` as it was at the end, which moves with p:
    # `late`'s failure came back clean once, p fell from `_known`'s reading to `_fair`'s,
    # and the 5 rounds asked, all of which ran, were said "cut short by the budget", and
    # a later candidate's one print was weighed as if they never ran (review).
    original = program("import sys\nsys.exit(1)\n")
    early, printing, late, stray = (
        program(f"import sys\nsys.exit(1)\n{nl}") for nl in ("\n", "\n\n", "\n\n\n", "\n\n\n\n")
    )
    search = Minimization(original, Settings(passing=2), proposing(early, printing, late, stray))
    while search.result is None:
        for probe in search.next_probes():
            first = search._phase == "reduce" and not search._now.failing.ran
            if probe.role == "passing":
                prints = probe.key in (printing.key, stray.key) and not search._now.passing.ran
                search.record(
                    probe, ["pass", "pass"], "", [("BrokenPipeError",) if prints else (), ()]
                )
            elif probe.key == late.key and first:
                search.record(probe, ["pass", "match"], "", [(), ()])
            else:
                search.record(probe, ["match"] * max(1, probe.attempts), "", [()])
    result = search.result
    assert result.same_failure is not None
    assert result.same_failure.passing_relooked_rounds == 5  # a candidate's passes then
    assert search.passing_needed() == 6  # p fell after them
    assert result.same_failure.passing_relooked_stopped == ""
    # Said as what ran, 5 rounds, not as often as a candidate's now (6) (review).
    line = _same_line(cast(Minimized, SimpleNamespace(result=result)))
    assert "in the budget), 5 rounds, as often as a candidate's then, at" in line, line
    verdicts = {j.key: j.verdict for j in result.judged}
    assert verdicts[late.key] == "fails"
    # The original's cells ran as often as a candidate's without printing it: one print is
    # enough, as it was for `printing`.
    assert verdicts[printing.key] == verdicts[stray.key] == "loses-passing"


def test_with_no_budget_left_a_stray_traceback_seen_once_rejects_nothing_twice_does() -> None:
    # The final check's last round printed it, and no round of the original's passing cells
    # fitted what was left: the result was `unconfirmed`, for one stray traceback. Seen once
    # beside the original's one round it is no evidence; a broken cell prints in every pass.
    least = _final_strays(1000, lambda _: 0).attempts + 1  # the reduction ends at > reserve
    once = _final_strays(least, lambda n: n == 5)
    # One attempt left, a round of the two cells two: none ran.
    assert (once.status, once.attempts) == ("minimized", least - 1), once.message
    assert once.same_failure is not None
    assert once.same_failure.passing_relooked == 0
    twice = _final_strays(least, lambda n: 2 * (n == 5))
    assert twice.status == "unconfirmed", twice.message
    assert "passed printing BrokenPipeError" in twice.message


def test_a_look_again_the_reduction_had_no_room_for_is_not_spent_on_a_quiet_result() -> None:
    # `fine`'s last pass in the reduction printed a stray traceback, and no round of the
    # original's passing cells fitted before the final check's share: seen once, it was
    # kept. The rounds left then ran in the final check, though the result's passes there
    # printed nothing, spending the final check's share of the budget on them.
    least = _final_strays(1000, lambda _: 0).attempts + 1
    result = _final_strays(least, lambda _: 0, reduction_stray=True)
    assert result.status == "minimized", result.message
    assert result.same_failure is not None
    assert result.same_failure.passing_relooked == 0
    assert result.passing_checked.passed == 10  # the final check's 5 rounds of its 2 cells, whole


def test_a_look_again_in_the_final_check_leaves_the_result_s_own_passes_their_room() -> None:
    # The result's first final round printed a stray traceback, and the rounds of the
    # original's passing cells (which print nothing) ran on with the whole of what was left:
    # at a tight budget they took the room of the result's own 5 rounds, and it read
    # `minimized` after one of them (2 of 2 passed).
    least = _final_strays(1000, lambda _: 0).attempts + 1
    result = _final_strays(least, lambda n: n == 1, original_prints=False)
    assert result.status == "minimized", result.message
    assert result.passing_checked.ran == 10  # the final check's 5 rounds of its 2 cells, whole
    assert result.same_failure is not None
    assert result.same_failure.passing_relooked == 0  # no room left for them
    # With room for two rounds beside them, two ran; the one print stays a stray's.
    roomier = _final_strays(least + 4, lambda n: n == 1, original_prints=False)
    assert roomier.status == "minimized", roomier.message
    assert roomier.passing_checked.ran == 10
    assert roomier.same_failure is not None
    assert roomier.same_failure.passing_relooked == 4


def test_a_name_bound_in_another_function_hides_no_builtin_from_a_message() -> None:
    # `def forward(self, input)` or `def clip(x, min, max)` made every message of the file
    # that calls the builtin count as the program's code, and reduced it (review).
    message = "xs = [1]\nassert xs, repr(xs)\n"
    for elsewhere in (
        "def f(repr):\n    return repr\n",
        "class C:\n    def forward(self, repr):\n        return repr\n",
        "class C:\n    repr = 1\n",
    ):
        assert kept_messages(numbered(ast.parse(elsewhere + message))), elsewhere
    # Where the message sees it, it is still the program's: a parameter of the function
    # around it, a name of an enclosing function's, a global one a function assigns.
    inside = "def f(xs, repr):\n    assert xs, repr(xs)\n"
    assert not kept_messages(numbered(ast.parse(inside)))
    nested = "def f(repr):\n    def g(xs):\n        assert xs, repr(xs)\n"
    assert not kept_messages(numbered(ast.parse(nested)))
    declared = "def f():\n    global repr\n    repr = str\n" + message
    assert not kept_messages(numbered(ast.parse(declared)))
    # A class body's name is seen by a message directly in it, not by its methods'.
    in_class = "class C:\n    repr = str\n    xs = [1]\n    assert xs, repr(xs)\n"
    assert not kept_messages(numbered(ast.parse(in_class)))
    method = "class C:\n    repr = str\n    def m(self, xs):\n        assert xs, repr(xs)\n"
    assert kept_messages(numbered(ast.parse(method)))
