"""The flaky-aware minimization: a pure state machine over candidates; no processes.

The passes of `source.py` propose candidates one at a time and want a yes/no:
does it still fail the same way? Here that answer is judged from attempts an
executor runs, as `isolate` judges its candidates (isolation/search.py):

    search = Minimization(program, Settings(budget=1000, passing=2))
    while search.result is None:
        for probe in search.next_probes():       # run them concurrently
            search.record(probe, run(search.program(probe.key), probe))
    search.result.program

A probe asks for attempts of one candidate (`key`, its content hash) in one
role: `failing` runs the spec's failing cell, `passing` runs each sampled
passing cell once. Each attempt comes back as `match` (the failing cell's
expectation and the original's signature), `pass`, `other` (failed another way)
or `infra` (could not run).

1. **Rate.** The original runs until it fails as expected `rate_matches` times
   (at most `rate_attempts` attempts), all `rate_attempts` where one came back clean
   and the rate is too high for point 7's interval rule (its every-time rule needs the
   rate); where none matched and more passed than failed otherwise, on to its first
   match, up to as many as make a miss at `min_rate` less likely than `RATE_MISS`
   (`seek_attempts`: 20 at 0.3, 130 at 0.04); then its passing cells run once. No match,
   or a passing cell that fails, refuses; so does a rate too low for the budget to
   judge even one pass over the program's top-level units (with the figure).
2. **Verdict of a candidate.** A matching failure is proof that it still fails:
   then its passing cells must pass (a candidate that fails there lost the
   condition, or is another bug: the nearest segfault is not this one; so does one
   whose pass printed an exception the original never did, `_new_passing`), each
   until (1 - q)^n <= `passing_error` (point 3), q `passing_rate`. A clean
   attempt is evidence against it: after n clean attempts the chance that a
   candidate failing at rate p stayed clean is (1 - p)^n, and the candidate is
   dropped once that is at most `error`. p is `min_rate`, raised to the 95%
   Wilson lower bound of the rate measured (`measured`: the original's attempts
   and every candidate's known to fail while all of them failed, else the
   original's alone, counted as its rate is) (one at 30% needs 7 clean
   attempts); 95%, not isolate's 99%, because a rate guessed high here costs
   size only. The rate is learned, as bisect and isolate
   learn it (`readings`): while the original failed in every attempt of its rate
   and no candidate known to fail has come back clean, "deterministic" competes
   with "flaky at 0.9" and "flaky at the original's lower bound", and the chance
   of n clean attempts is summed over them: after the original's 5 failures in 5
   one clean attempt drops a candidate (p alone needed 3, then 2 until some 35
   candidates had failed: a user's 57-line program ran out of its 1000 attempts, two
   of them per candidate, where the passes need about 850). That reading drops
   candidates only: the passes that accept one keep p alone (point 3). The original's
   attempts are the evidence, not the candidates': a candidate's first match, at
   which its probe stopped, is no fair sample (point 7), and counting them read a
   failure at 90% as deterministic and accepted candidates that lost the condition
   on one pass. The first clean attempt of a candidate known to fail (or of the
   original) leaves p alone, as before: a flaky failure's candidates are weighed as
   they were. In practice only the original's can: under the reading a candidate
   runs one attempt (the driver's repeat is what a probe asks, at any -j), so an
   accepted one has one match and no clean attempt to show.
   A failure of another kind is clean, as in isolate: not this bug (a candidate
   whose clean runs end in a NameError still fails the same way when it fails).
3. **Asymmetric errors.** A candidate wrongly dropped (it still fails, but
   stayed clean) only makes the result larger: so `error` is a per-candidate
   0.1, not isolate's 0.005 over the whole answer. A candidate wrongly accepted
   makes it wrong: one that lost the condition, whose passing cells stayed
   clean by chance, is the nearest bug and not this one. That side has its own
   bound, `passing_error` (0.01 per accepted candidate): at p = 0.3 its passing
   cells pass 13 times, not the 7 that `error` would ask (0.7^7 is 8%, and a
   run accepts tens of candidates). p alone, even while the failure reads as
   deterministic (point 2): that reading rests on the original's 5 attempts, which a
   failure at 80% fails every one of a third of the time, and there 2 passes (what
   the readings ask) accept a candidate that lost the condition 4 times in 100, and
   simulated runs ended `unconfirmed` (2 of 14), where p alone asks 6 at first.
   q, the rate a broken passing cell fails at, is not p where the original came back
   clean: p is the failing cell's rate, and a cell a candidate broke fails at its own
   (a race at 85% asked 5 passes; 39 candidates failed its `lock=true` cell, and
   one that cut its `with lk:`, failing there about 60% of the time, passed all 5 (0.4^5
   = 1% each, over tens of candidates), in two runs of two). There q is `min_rate` (13
   passes at 0.3); a failure that never flaked keeps p, its cost unchanged, with point 5's
   step back as the net.
4. **Cache.** A candidate is known by its content: one judged already (the passes
   meet the same program again, after a round that changed nothing) is answered
   from its verdict and costs nothing.
5. **Answer.** When the passes are done (or the budget reaches what the final
   check needs), the smallest program seen failing runs `final_attempts` more
   attempts for its rate and interval, and its passing cells `final_passing`
   times each. Where none of them failed, it runs on to its first failure, up to
   `clean_needed()` clean attempts in all (the passes drop a candidate no sooner),
   while the budget lasts, before it is `unconfirmed` or falls back. Where a passing
   cell fails with it, the programs accepted are bisected for the last whose passing
   cells pass `passing_needed` times each (a reduction only removes, so a break is
   inherited by every program accepted after it), while the budget allows; else
   `unconfirmed`. The search then resumes reducing from that program (`_resume`): the
   candidate accepted right after it broke the passing cell, so it and every program
   accepted after it (each inherits the break) are rejected (`breaks-passing`, cached:
   never accepted again), and every other removal that came after it is tried anew.
   It ends as always, in the final check, which may step back again: a program only
   shrinks and each step back rejects one more candidate, so this ends, and the budget
   bounds it (tests/unit/minimize's loop stepped back to 27 lines where 13 do).
6. **Still needs the perturbation.** Where the failing cell runs under
   environment.perturb, the oracle asks nothing of the program without it, and
   the passes can drop what made the failure need it (a user's use-after-free lost
   its `free` and kept an assert that a fresh block's bytes fail every time).
   Where the original fails in 0 of n attempts without it (`Settings.keep_perturbed`:
   amplify's recorded base; or `unperturbed_base` attempts of the original run
   here, after its passing cells), a candidate the search would accept runs once
   more without it (role `unperturbed`) and is rejected (`fails-unperturbed`)
   where that attempt fails as the expect says: a rejection only makes the result
   larger. One attempt catches a candidate that fails so every time, not one that
   does only sometimes: the driver's check of the result stays the safety net.
   Where the original fails without it rarely but not never (a user's use-after-free,
   2 of 12), a candidate the search would accept runs without it until it fails there
   clearly more often than the original (`clearly_more`: its Wilson 95% interval above
   the base's; rejected, `fails-unperturbed`) or can no longer do so within
   `rate_check` attempts (kept): a wild read of address 1 with the same signature failed
   12 of 12 without it and was the answer after the whole budget. A candidate at the
   original's rate is kept after 2 clean attempts; a deterministic one goes after 4.
7. **The same failure, for the same reason.** The signature is where a failure
   ends, not why. Two things tell another cause, each rejecting a candidate the
   search would accept:
   - an exception the original never printed (`record`'s `raised`: any thread, any
     chain, read from every attempt of the original) in an attempt of the candidate
     that failed as the bug (`new-exception`; free, at its first match): a user's
     minimize dropped `add_argument("--gap")`, the evictor thread died of
     AttributeError after its free, and the race became a crash in every attempt. An
     exception in a clean attempt only ends that attempt otherwise, as before;
   - a hang that sits elsewhere (`hangs-elsewhere`; at its first match, or its second): its
     attempts' places (`record`'s `places`, minimize/hangplace.py: each hung thread's
     outermost function of the program's own, the main thread's below its `<module>`,
     and the library frames it waits in where that is a blocking call; no line numbers)
     where each one's threads hold less than half of those of each of the original's
     places (`moved`), seen so in `LOOKS` (2) attempts: a thread busy around a blocking
     call is caught in it at one dump and out of it at the next, and one caught so where
     no attempt of the original's showed it was rejected on that one sighting; it is
     looked at again, -j attempts at a time (fewer where its clean attempts still needed
     or the budget left are), stopped at the next hang, while its clean attempts leave
     room, and kept where one sits as the original's; LOOKS hangs, read or not, end the
     looking. A hang's signature is `hang` wherever it sits: a user's two-lock
     deadlock became one thread waiting on a Barrier no other thread reached, "fails
     as hang in 20/20". An unread place (no stacks) is no difference, on either side;
   - a rate clearly above the original's (`fails-more-often`): where the original's
     upper bound is below what `rate_check` attempts could show (a flaky original:
     3 of 20), the candidate runs until its interval is above the original's or can
     no longer get there, as point 6's rare base. A deterministic original never
     pays: nothing fails clearly more often than every time;
   - failing every time where the original came back clean (`fails-every-time`), where
     the interval cannot reach (a user's race at 80%, 4 of 5, lost its `--lock false`
     branch and failed 20/20; 8 of 8 is never above 16 of 20's 92%): the candidate runs
     until its first clean attempt (kept) or `every_time_most` failures in a row
     (rejected), the fewest that one at the original's rate fails in a row with at most
     `error`'s chance.
   The final check's rate change and the driver's unperturbed check stay the safety net.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from reprospec.core.caller import argument
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.pysource import UNREADABLE
from reprospec.core.rates import attempts_to_see, clearly_more, log_sum, rate_of, wilson
from reprospec.core.results import Rate
from reprospec.core.words import agree, interval_bounds, plural
from reprospec.isolation.candidates import DEFAULT_ERROR, AttemptKind, Tally, clean_needed_at
from reprospec.isolation.hypotheses import DETERMINISTIC_PRIOR
from reprospec.minimize.hangplace import LOOKS, moved
from reprospec.minimize.program import Program
from reprospec.minimize.source import Reducer, reduce

# recheck: the original, one attempt, after a candidate could not run `max_infra` times in a
# row: whether the machine can still run anything (infra-error) or the candidate alone not.
Role = Literal["failing", "passing", "unperturbed", "recheck"]
# Point 2: beside "deterministic", a failure that never flaked may be flaky at a high rate
# (bisect's HIGH_RATE and HIGH_PRIOR): what keeps one clean attempt honest at first.
HIGH_RATE = 0.9
HIGH_PRIOR = 0.1
# Point 1: the chance, at `min_rate`, that the original's attempts miss a failure that is
# there, and the search is refused for it: isolate's default error. `error` is a
# candidate's (a wrong drop only makes the result larger); a refusal ends the search.
RATE_MISS = DEFAULT_ERROR
Status = Literal[
    "minimized",  # the passes shrank all they could
    "budget",  # the budget ran out first: the smallest program seen failing
    "refused",  # the original does not fail as expected often enough
    "unconfirmed",  # the final check did not see the result fail, or a passing cell failed
    "infra-error",  # a candidate could not be run
    "interrupted",  # stopped (Ctrl-C): the same command resumes
]
# fails-unperturbed: fails as the original does, and without the perturbation too (point
# 6); new-exception: its failure came with an exception the original never printed, and
# hangs-elsewhere: its hang sits in another place than any of the original's (point 7),
# fails-more-often: it fails clearly more often than the original, and fails-every-time:
# in every attempt, where the original came back clean at times (point 7); cannot-run:
# it never ran (`python` left without its `-c`, a file it needs gone) while the original
# still does, so it is no smaller program of this failure; breaks-passing: accepted, but
# a passing cell failed with it in the final check's step back (point 5), or it was
# accepted after one that did and inherits its break
Verdict = Literal[
    "fails",
    "clean",
    "loses-passing",
    "fails-unperturbed",
    "new-exception",
    "hangs-elsewhere",
    "fails-more-often",
    "fails-every-time",
    "cannot-run",
    "breaks-passing",
]
# Point 6 as it applies: `never` (the original's base is 0 of n: one attempt), `rarer`
# (above 0 but clearly below what `rate_check` attempts can show), "" (not at all).
BaseRule = Literal["never", "rarer", ""]


@frozen
class Settings:
    """The budget and the rate assumption of one minimization."""

    budget: int = 1000  # attempts in all, passing cells and infra errors included
    error: float = 0.1  # a candidate that still fails is dropped with at most this chance
    # A candidate that lost the condition is accepted with at most this chance (point 3).
    passing_error: float = 0.01
    min_rate: float = 0.3  # a candidate that still fails does so at least this often
    passing: int = 0  # passing cells sampled per candidate (0: the spec has none)
    rate_matches: int = 5  # the original runs until this many matches...
    rate_attempts: int = 20  # ...or this many attempts
    final_attempts: int = 20  # attempts of the result for its rate
    final_passing: int = 5  # attempts of each sampled passing cell with the result
    max_infra: int = 3  # infra errors of one candidate in a row before giving up
    step: int = 1  # attempts at once (-j)
    # Attempts the settings step (isolate) spent out of --budget before this search: its
    # messages name the budget the user gave, not what was left of it.
    spent_before: int = 0
    # Point 6. The original's attempts without the perturbation before the passes (where
    # the failing cell is perturbed and no base was recorded; 0: none), or the base
    # recorded (amplify's): candidates must keep needing it as the base says.
    unperturbed_base: int = 0
    recorded_base: Rate | None = None
    # Points 6 and 7: a candidate's attempts at most (failing, or without the perturbation)
    # to tell that it fails clearly more often than the original; 0: never asked.
    rate_check: int = 8
    # Point 7's every-time rule: a candidate's failing attempts in a row at most that reject
    # it where the original came back clean (`every_time_most`); 0: never asked.
    every_time_check: int = 16

    @property
    def given(self) -> str:
        """The budget as the user gave it, in words (`1000`, or `1000 (26 on the settings)`)."""
        total = self.budget + self.spent_before
        return f"{total}" + (f" ({self.spent_before} on the settings)" if self.spent_before else "")

    @property
    def reserve(self) -> int:
        """What the final check costs: kept out of the budget of the passes."""
        return self.final_attempts + self.passing * self.final_passing


@frozen
class Probe:
    """Run `attempts` attempts of candidate `key` in `role`; stop after `stop_after` matches."""

    key: str
    role: Role
    attempts: int
    stop_after: int = 1  # 0: never stop early
    # Point 7's look again at a hang seen elsewhere (`_looking_again`): the match it stops
    # at is left out of the candidate's rate as its first one is (`_Judging.looked`).
    looking: bool = False


@frozen
class Judged:
    """One candidate as judged: its tallies and the verdict (what the report lists)."""

    key: str
    lines: int
    failing: Tally
    passing: Tally
    verdict: Verdict
    unperturbed: Tally = field(default_factory=Tally)  # its attempts without the perturbation
    # The exceptions its failures printed that the original's attempts never did (point 7);
    # for `loses-passing` by those alone, the ones its passing cells' passes printed.
    new_exceptions: tuple[str, ...] = ()
    # Where its hangs sat that the original's never did (point 7, hangs-elsewhere).
    hung_elsewhere: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        return {
            "key": self.key,
            "lines": self.lines,
            "verdict": self.verdict,
            "failing": self.failing.to_dict(),
            "passing": self.passing.to_dict(),
            "unperturbed": self.unperturbed.to_dict(),
            "new_exceptions": list(self.new_exceptions),
            **({"hung_elsewhere": list(self.hung_elsewhere)} if self.hung_elsewhere else {}),
        }


@frozen
class KeptPerturbed:
    """Point 6 as it went: the original's base without the perturbation (measured here, or
    recorded), whether the rule applied, and what it cost and rejected."""

    applies: bool  # accepted candidates ran without it (`rule`)
    base: Tally  # the original's attempts without it here (empty where it was recorded)
    attempts: int  # the candidates' attempts without it (in the budget, as passing cells')
    rejected: int  # candidates that failed without it (clearly more often), rejected
    checked: int  # candidates that ran without it
    rule: BaseRule = ""  # never: once each, rejected at a failure; rarer: clearly more often
    most: int = 0  # rarer: a candidate's attempts without it at most

    def to_dict(self) -> JsonObject:
        return {
            "applies": self.applies,
            "rule": self.rule,
            "most": self.most,
            "base_measured": self.base.to_dict() if self.base.attempts else None,
            "attempts": self.attempts,
            "checked": self.checked,
            "rejected": self.rejected,
        }


@frozen
class SameFailure:
    """Point 7 as it went: the exceptions the original printed, the rate rule's reach, and
    the candidates each rule rejected and what that cost."""

    original_exceptions: tuple[str, ...]  # every type the original's attempts printed
    new_exception_rejected: int  # candidates rejected for an exception it never printed
    new_exceptions: tuple[str, ...]  # those exceptions' types
    rate_applies: bool  # the original's rate leaves room for a clearly higher one
    rate_most: int  # a candidate's failing attempts at most, for that
    rate_checked: int  # candidates whose rate was checked
    rate_rejected: int  # candidates that failed clearly more often, rejected
    rate_attempts: int  # the attempts that check added (in the budget), every-time's too
    # The every-time rule: its failing attempts in a row at most (0: not asked), and the
    # candidates that failed in every one of them, rejected (counted in rate_checked too).
    every_time_most: int = 0
    every_time_rejected: int = 0
    # Where the original's hangs sat (minimize/hangplace.py; () where none was read), and
    # the candidates rejected for a hang elsewhere, with those places.
    original_places: tuple[str, ...] = ()
    hangs_elsewhere_rejected: int = 0
    hung_elsewhere: tuple[str, ...] = ()
    # The candidates rejected (`loses-passing`) where a passing cell passed printing an
    # exception the original's attempts never did (`_new_passing`), with those types.
    new_passing_rejected: int = 0
    new_passing_exceptions: tuple[str, ...] = ()
    # The attempts of the original's passing cells run again (`_relook`; in the budget),
    # their rounds, and why they stopped short of a candidate's `passing_needed` as they
    # began: "" (they did not: as often as a candidate's then, or none ran), "printed" (the
    # original's printed the type too) or "budget" (the budget had no room for the rest).
    passing_relooked: int = 0
    passing_relooked_rounds: int = 0
    passing_relooked_stopped: Literal["", "printed", "budget"] = ""

    def to_dict(self) -> JsonObject:
        return {
            "original_exceptions": list(self.original_exceptions),
            "new_exception_rejected": self.new_exception_rejected,
            "new_exceptions": list(self.new_exceptions),
            "rate_applies": self.rate_applies,
            "rate_most": self.rate_most,
            "rate_checked": self.rate_checked,
            "rate_rejected": self.rate_rejected,
            "rate_attempts": self.rate_attempts,
            "every_time_most": self.every_time_most,
            "every_time_rejected": self.every_time_rejected,
            "original_places": list(self.original_places),
            "hangs_elsewhere_rejected": self.hangs_elsewhere_rejected,
            "hung_elsewhere": list(self.hung_elsewhere),
            "new_passing_rejected": self.new_passing_rejected,
            "new_passing_exceptions": list(self.new_passing_exceptions),
            "passing_relooked": self.passing_relooked,
            "passing_relooked_rounds": self.passing_relooked_rounds,
            "passing_relooked_stopped": self.passing_relooked_stopped,
        }


@frozen
class MinimizeResult:
    """The smallest program seen failing the same way, and what that rests on."""

    status: Status
    message: str
    original: Program
    program: Program  # the result (the original when nothing was accepted)
    attempts: int
    candidates: int  # candidates the passes proposed (cached ones included)
    ran: int  # candidates that needed attempts
    rate: Rate  # the result's rate: its final attempts
    original_rate: Rate
    rate_used: float  # p at the end
    error: float
    min_rate: float
    passing_checked: Tally  # the result's passing cells in the final check
    judged: tuple[Judged, ...] = ()
    warnings: tuple[str, ...] = ()
    # The budget ended the search (the passes cut short, or refused as too little for
    # the rate measured): the same command with a larger --budget goes on from here.
    budget_spent: bool = False
    kept_perturbed: KeptPerturbed | None = None  # point 6, where the cell is perturbed
    same_failure: SameFailure | None = None  # point 7, once the original's rate was measured
    # Points 2 and 3 at the end: the weight of "deterministic" (0 once the failure flaked),
    # the clean attempts that dropped a candidate and the passes that accepted one (p alone).
    deterministic: float = 0.0
    clean_needed: int = 0
    passing_needed: int = 0
    # q: the rate a broken passing cell is assumed to fail at least (`passing_rate`).
    passing_rate: float = 0.0
    # Candidates that never started while the original still did (`python` without its
    # `-c`), and the last one's reason: dropped, as any that is no program of this failure.
    cannot_run: int = 0
    cannot_run_reason: str = ""
    # original_rate leaves out the match its rate attempts stopped at (unbiased_rate).
    original_stopped: bool = False
    # Its attempts ran on past `rate_attempts` until their first match (`seek_attempts`):
    # counted as they ran ((k-1)/(n-1) is 0), which reads the rate high, as stopping does.
    original_sought: bool = False
    # Point 5: how often the final check stepped back along the programs accepted, how
    # often the passes then resumed from the program stepped back to, and the candidates
    # those step backs rejected (`breaks-passing`: the one that broke a passing cell and
    # those accepted after it).
    stepped_back: int = 0
    resumed: int = 0
    breaks_passing: int = 0

    def to_dict(self) -> JsonObject:
        return {
            "original_stopped": self.original_stopped,
            "original_sought": self.original_sought,
            "stepped_back": self.stepped_back,
            "resumed": self.resumed,
            "breaks_passing": self.breaks_passing,
            "status": self.status,
            "message": self.message,
            "budget_spent": self.budget_spent,
            "attempts": self.attempts,
            "candidates": self.candidates,
            "ran": self.ran,
            "rate": self.rate.to_dict(),
            "original_rate": self.original_rate.to_dict(),
            "rate_used": self.rate_used,
            "deterministic": self.deterministic,
            "clean_needed": self.clean_needed,
            "passing_needed": self.passing_needed,
            "passing_rate": self.passing_rate,
            "error": self.error,
            "min_rate": self.min_rate,
            "passing_checked": self.passing_checked.to_dict(),
            "cannot_run": self.cannot_run,
            "cannot_run_reason": self.cannot_run_reason,
            "warnings": list(self.warnings),
            "kept_perturbed": self.kept_perturbed.to_dict() if self.kept_perturbed else None,
            "same_failure": self.same_failure.to_dict() if self.same_failure else None,
        }


Phase = Literal[
    "rate",
    "original-passing",
    "original-unperturbed",
    "reduce",
    "final",
    "final-passing",
    "passing-back",
    "done",
]
# The phases whose attempts are the result's (or, stepping back, an earlier program's).
FINAL_PHASES: tuple[Phase, ...] = ("final", "final-passing", "passing-back")


@dataclass
class _Judging:
    """The candidate being judged now."""

    program: Program
    failing: Tally = field(default_factory=Tally)
    passing: Tally = field(default_factory=Tally)
    unperturbed: Tally = field(default_factory=Tally)
    infra_streak: int = 0
    # The exception types its attempts that failed as the bug printed (point 7).
    raised: frozenset[str] = frozenset()
    # Where its attempts that failed as the bug hung (point 7; "" unread).
    places: frozenset[str] = frozenset()
    # The exception types its passing cells printed where they passed, each with the passes
    # that printed it: a thread's traceback leaves the exit code 0, so a cell whose program
    # broke there still "passed" (`_new_passing` counts them).
    passing_raised: dict[str, int] = field(default_factory=dict)
    looked: int = 0  # matches its looks again stopped at: point 7's rate leaves them out
    rate_probed: bool = False  # point 7's attempts asked: its failing ones since are theirs
    recheck: bool = False  # it could not run `max_infra` times in a row: the original asked
    cannot_run: bool = False  # ...and the original ran: the candidate's own, not the machine's


class Minimization:
    """The search as a state machine: ask `next_probes`, `record` each, until `result` is set."""

    def __init__(
        self,
        original: Program,
        settings: Settings | None = None,
        passes: Callable[[Program], Reducer] = reduce,
    ) -> None:
        self.settings = settings or Settings()
        self._reducer = passes  # point 5 resumes the passes from an earlier program
        if not 0 < self.settings.error < 1 or not 0 < self.settings.min_rate <= 1:
            raise ValueError("error and min_rate must be between 0 and 1")
        if not 0 < self.settings.passing_error < 1:
            raise ValueError("passing_error must be between 0 and 1")
        self.original = original
        self.best = original
        self.used = 0
        self.result: MinimizeResult | None = None
        self.programs: dict[str, Program] = {original.key: original}
        self.verdicts: dict[str, Verdict] = {}
        self.judged: list[Judged] = []
        self.proposed = 0
        self._passes = passes(original)
        self._phase: Phase = "rate"
        self._now = _Judging(original)
        self._original_failing = Tally()
        self._sought = False  # the original ran on past `rate_attempts` (`seek_attempts`)
        self._final = _Judging(original)
        self._known = Tally()  # attempts of the candidates seen failing, as they ran
        self._fair = Tally()  # the original's, counted as its rate is: a fair sample (`measured`)
        self._outstanding: list[Probe] = []
        self._infra_reason = ""
        self._done_passing = False
        # Each program that became the smallest seen failing, in order (the original
        # first): where the final check falls back to when the smallest fails no more.
        self._accepted: list[Program] = []
        self._fell_back: tuple[Program, Tally] | None = None
        # Point 5's step back on the passing side: the smallest accepted whose passing cells
        # failed in the final check (that tally, and the exceptions its passes printed that
        # the original never did: `_new_passing`), the bisection's (lo, hi) along
        # `_accepted` (lo held, hi failed) and the attempts it cost.
        self._passing_broke: tuple[Program, Tally, tuple[str, ...]] | None = None
        self._back = (0, 0)
        self._back_attempts = 0
        # Whether the bisection's hi was seen failing a passing cell (the final check's
        # program, or a midpoint that failed), not only given up on for the budget: only
        # then is the candidate after lo known to break it, and the passes resume.
        self._back_proven = False
        # Each step back, in order: (the program stepped back to, the candidate that broke
        # a passing cell, the candidates it rejected, whether the passes resumed from it).
        self._steps: list[tuple[Program, Program, int, bool]] = []
        self._breaks_passing = 0
        # Attempts the resumed passes leave unspent beside the final check's: what another
        # step back like the last costs, so that a break the resumed passes accept by luck
        # can still be stepped back from to a program known to hold, not end `unconfirmed`.
        self._held_back = 0
        self._back_start = 0  # `_back_attempts` when this step back began
        self._budget_spent = False
        # Point 6: on from the start where a base was recorded, else once the original's
        # own attempts without the perturbation are in.
        recorded = self.settings.recorded_base
        self._base_rate: Rate | None = recorded
        self._base_rule: BaseRule = self._rule_for(recorded) if recorded else ""
        self._base = Tally()
        self._unperturbed_attempts = 0
        self._unperturbed_checked = 0
        self._unperturbed_rejected = 0
        # Point 7: every exception type the original's attempts printed, and the rules' toll.
        self._original_raised: dict[str, None] = {}
        # Of those, what its passing cells printed where they passed: `_new_passing` asks
        # these alone, or the bug's own exception, printed by the failing cells, leaked into
        # a candidate's passing cell unseen (final read).
        self._original_passing_raised: dict[str, None] = {}
        self._raised_unknown = False
        self._new_exception_rejected = 0
        self._new_exceptions: dict[str, None] = {}
        self._original_places: dict[str, None] = {}
        self._hangs_elsewhere_rejected = 0
        self._hung_elsewhere: dict[str, None] = {}
        self._new_passing_rejected = 0
        self._new_passing_exceptions: dict[str, None] = {}
        # The rounds of the original's passing cells left to ask, run again `passing_needed`
        # times each at the first candidate whose passes printed a new exception (`_relook`).
        self._relook_left = 0
        # `passing_needed` when they began (0 before: it is at least 1), so whether they
        # began, and what they are measured against to the end. It moves during the search
        # (p follows `measured`, `_known` then `_fair`), and rounds that all ran were said
        # "cut short by the budget" (review).
        self._relook_wanted = 0
        self._relook_rounds = 0  # the rounds of them that ran
        self._relook_attempts = 0  # what they cost (in the budget)
        self._relook_printed = False  # they printed the type too, which ended them
        self._rate_checked = 0
        self._rate_rejected = 0
        self._rate_attempts = 0
        self._every_time_rejected = 0
        self._cannot_run_reason = ""

    # -- the protocol --------------------------------------------------------

    def program(self, key: str) -> Program:
        """The candidate a probe names."""
        return self.programs[key]

    def next_probes(self) -> tuple[Probe, ...]:
        """The probes to run now; () once `result` is set."""
        if self._outstanding:
            raise RuntimeError("record every probe of the last round first")
        while self.result is None:
            probe = self._next()
            if probe is not None:
                self._outstanding = [probe]
                return (probe,)
        return ()

    def record(
        self,
        probe: Probe,
        kinds: Sequence[AttemptKind],
        infra_reason: str = "",
        raised: Sequence[Sequence[str]] = (),
        places: Sequence[str] = (),
    ) -> None:
        """What the attempts of `probe` did, in order (more than asked is fine: -j overshoots),
        the exception types each printed (`raised`, beside `kinds`; () where not read:
        point 7 then sees none) and where each that hung sat (`places`, beside `kinds`,
        hangplace.py's; "" or () where not read: no difference)."""
        self._outstanding.remove(probe)
        self.used += len(kinds)
        if infra_reason:
            self._infra_reason = infra_reason
        if probe.role == "recheck":
            self._rechecked(kinds)
            return
        judging = self._final if self._phase in FINAL_PHASES else self._now
        if probe.key == self.original.key and judging.program.key != self.original.key:
            # `_reduce_probe`'s look again at the original's passing cells: what they
            # print is the original's, none of the candidate's tallies.
            self._raised_unknown = self._raised_unknown or (bool(kinds) and not raised)
            self._relook_attempts += len(kinds)
            self._relook_rounds += 1
            for names in raised:
                self._original_raised.update(dict.fromkeys(names))
                self._original_passing_raised.update(dict.fromkeys(names))
            if not self._unexplained(judging):
                self._relook_left = 0  # the original printed it too: no more to ask
                self._relook_printed = True
            return
        if self._phase == "passing-back":
            self._back_attempts += len(kinds)
        streak = judging.infra_streak
        for kind in kinds:
            streak = streak + 1 if kind == "infra" else 0
        judging.infra_streak = streak
        if judging.program.key == self.original.key:
            # A probe stored before its exceptions were (an earlier version's state,
            # replayed): what the original printed is unknown, so nothing is new.
            self._raised_unknown = self._raised_unknown or (bool(kinds) and not raised)
            for names in raised:
                self._original_raised.update(dict.fromkeys(names))
                if probe.role == "passing":
                    self._original_passing_raised.update(dict.fromkeys(names))
            if probe.role == "failing":
                self._original_places.update(
                    dict.fromkeys(
                        place
                        for kind, place in zip(kinds, places, strict=False)
                        if kind == "match" and place
                    )
                )
        elif probe.role == "passing":
            for kind, names in zip(kinds, raised, strict=False):
                for name in dict.fromkeys(names) if kind == "pass" else ():
                    judging.passing_raised[name] = judging.passing_raised.get(name, 0) + 1
        else:
            # A failure as the bug's, with or without the perturbation: why it failed.
            judging.raised = judging.raised.union(
                *(names for kind, names in zip(kinds, raised, strict=False) if kind == "match")
            )
            if probe.role == "failing":
                judging.places = judging.places.union(
                    place
                    for kind, place in zip(kinds, places, strict=False)
                    if kind == "match" and place
                )
                if probe.looking and "match" in kinds:
                    judging.looked += 1  # a look again's: it ran until this match
        if probe.role == "failing":
            if self._phase == "reduce" and judging.rate_probed:
                self._rate_attempts += len(kinds)
            judging.failing = judging.failing.add(kinds)
        elif probe.role == "unperturbed":
            judging.unperturbed = judging.unperturbed.add(kinds)
            if self._phase == "reduce":
                self._unperturbed_attempts += len(kinds)
        else:
            judging.passing = judging.passing.add(kinds)
        if streak >= self.settings.max_infra:
            if self._phase == "reduce" and judging.program.key != self.original.key:
                # A reduction can leave a command that cannot start (`python` without its
                # `-c`): ask the original, which ran, before calling the machine broken.
                judging.recheck = True
                return
            # The original itself, before any candidate (its command not on PATH): "a
            # candidate" blamed one that was never made.
            which = "the original" if judging.program.key == self.original.key else "a candidate"
            self._finish(
                "infra-error",
                f"{which} could not run ({plural(streak, 'attempt')} in a row): "
                f"{self._infra_reason or 'infra error'}",
            )

    def _rechecked(self, kinds: Sequence[AttemptKind]) -> None:
        """The original's attempt after a candidate could not run: an infra error again is
        the machine's (the search ends `infra-error`); one that ran makes the candidate
        `cannot-run`, as any other that is no smaller program of this failure."""
        if not kinds:
            return  # stopped before it ran: asked again, or the search is interrupted
        if all(kind == "infra" for kind in kinds):
            self._finish(
                "infra-error",
                f"a candidate could not run ({plural(self.settings.max_infra, 'attempt')} in a "
                f"row), nor then the original: {self._infra_reason or 'infra error'}",
            )
        else:
            self._now.cannot_run = True
            self._cannot_run_reason = self._infra_reason

    def interrupt(self) -> None:
        """Stop here (Ctrl-C): the result is the smallest program seen failing so far."""
        if self.result is None:
            self._outstanding.clear()
            if self._phase == "passing-back":
                # Stopped while stepping back: the last program known to hold, not the one
                # whose passing cell failed.
                self.best = self._accepted[self._back[0]]
            self._finish("interrupted", "interrupted; the same command resumes from stored results")

    # -- the phases ----------------------------------------------------------

    def _next(self) -> Probe | None:
        """The next probe of the current phase, or None after moving to another phase."""
        s = self.settings
        left = s.budget - self.used
        if self._phase == "rate":
            tally = self._now.failing
            # A flaky original (a clean attempt among them) too frequent for the interval
            # rule of point 7 runs all `rate_attempts`, not stopping at its 5th match: the
            # every-time rule needs its rate, and 4 of 5 (38%-96%) could not tell a race at
            # 80% from a candidate failing always. One the interval rule reaches (4 of 14)
            # stops as before: its rate is enough for that rule.
            frequent = bool(tally.clean) and not self._reachable(
                unbiased_rate(tally, s.rate_matches, s.rate_attempts)
            )
            measuring = tally.ran < s.rate_attempts and (tally.matched < s.rate_matches or frequent)
            # A failure rarer than `rate_attempts` see: on to its first match, up to as many
            # passes as make a miss at `min_rate` unlikely (`seek_attempts`), where it passed
            # more than it failed otherwise: isolate's rule too (Tally.seek_short says why).
            seeking = tally.seek_short(s.rate_attempts, self.seek_attempts())
            if measuring or seeking:
                if left <= 0:
                    self._budget_spent = True
                    self._finish("refused", "the budget ran out while measuring the rate")
                    return None
                self._sought = self._sought or not measuring
                short = s.rate_attempts - tally.ran if measuring else seeking
                want = min(short, left, max(s.step, 1))
                return Probe(self.original.key, "failing", want, 0 if measuring else 1)
            self._original_failing = tally
            self._known = tally
            self._fair = fair(tally, s.rate_matches, s.rate_attempts)
            refusal = self._refusal(tally)
            if refusal:
                self._budget_spent = tally.matched > 0  # too rare for what is left of it
                self._finish("refused", refusal)
                return None
            self._phase = "original-passing"
            return None
        if self._phase == "original-passing":
            if s.passing and self._now.passing.attempts == 0:
                return Probe(self.original.key, "passing", s.passing)
            if self._now.passing.matched or self._now.passing.other:
                self._finish(
                    "refused",
                    "a passing cell of the spec fails with the original program "
                    f"({self._now.passing.clean - self._now.passing.other} of "
                    f"{self._now.passing.ran} passed): the spec does not describe this bug",
                )
                return None
            self._phase = "original-unperturbed"
            return None
        if self._phase == "original-unperturbed":
            # Point 6: the original without the perturbation, where no base was recorded;
            # only as much of it as leaves the final check its share of the budget.
            tally = self._now.unperturbed
            want = min(s.unperturbed_base - tally.attempts, left - s.reserve)
            if want > 0 and tally.infra < s.max_infra:
                return Probe(self.original.key, "unperturbed", want, 0)
            if s.unperturbed_base:
                self._base = tally
                if tally.ran:
                    self._base_rate = rate_of(tally.matched, tally.ran)
                    self._base_rule = self._rule_for(self._base_rate)
            self.verdicts[self.original.key] = "fails"
            self._judge_done("fails")
            self._phase = "reduce"
            self._advance(None)
            return None
        if self._phase == "reduce":
            return self._reduce_probe(left - self._held_back)
        if self._phase == "final":
            tally = self._final.failing
            if tally.ran < s.final_attempts and left > 0:
                want = min(s.final_attempts - tally.ran, left)
                return Probe(self.best.key, "failing", want, 0)
            # No match in fewer clean attempts than drop a candidate is no sign that the
            # result fails no more: at --min-rate 0.046 it read `unconfirmed` after 5 or 20,
            # where the search's own rule asks 49. Run on to its first match.
            more = self.clean_needed() - tally.clean
            if tally.matched == 0 and more > 0 and left > 0:
                return Probe(self.best.key, "failing", min(more, left), 1)
            if tally.matched == 0 and self._fall_back(left):
                return None
            self._phase = "final-passing"
            return None
        if self._phase == "final-passing":
            # The rounds of the original's passing cells leave the final check's own passes
            # their room, as the reduction's leave it the reserve: else a tight budget
            # concluded `minimized` on a round or two of the result's passes.
            wanted = s.passing * s.final_passing
            room = left - max(0, wanted - self._final.passing.ran)
            relook = self._relook(self._final, room)
            if relook is not None:
                return relook
            if self._passing_lost(self._final) and self._step_back(left):
                return None
            if self._final.passing.ran < wanted and left >= s.passing:
                return Probe(self.best.key, "passing", s.passing)
            self._conclude()
            return None
        if self._phase == "passing-back":
            return self._back_probe(left)
        return None

    def _step_back(self, left: int) -> bool:
        """The result's passing cells failed in the final check: bisect the programs accepted
        (`_accepted`, the original first, whose passing cells passed) for the last whose
        passing cells still hold, when the budget allows a step and the final check after
        it. True when the search steps back (phase `passing-back`).

        A reduction only removes, so a candidate that broke a passing cell (a user's race
        lost its `with lk:` and its passing cell, run under the perturbation, failed 60% of
        the time) hands the break to every program accepted after it: the chain is held up
        to some point and broken after it, which is what a bisection finds, in about
        log2(chain) steps of `passing_needed` passes each. Only from the final check's first
        failure of a passing cell: that is proof, where the passes before were evidence."""
        chain = self._accepted
        if self.best not in chain:
            return False
        hi = chain.index(self.best)
        if hi == 0 or left < self.settings.reserve + self.settings.passing:
            return False
        if self._passing_broke is None:
            self._passing_broke = (
                self.best,
                self._final.passing,
                self._new_passing(self._final),
            )
        self._back = (0, hi)
        self._back_proven = True  # its passing cell failed in the final check
        self._back_start = self._back_attempts
        self._final = _Judging(chain[hi // 2])
        self._phase = "passing-back"
        return True

    def _back_probe(self, left: int) -> Probe | None:
        """One step of `_step_back`'s bisection: the midpoint's passing cells run until one
        fails (broken: hi) or they passed `passing_needed` times each (held: lo); out of
        budget it counts as broken, so the result is one known to hold. At the end the
        passes resume from lo (`_resume`), or where they cannot, lo is the result and runs
        the final check anew (it may fail there too: then back again, from it, so the chain
        only shortens)."""
        s = self.settings
        chain = self._accepted
        lo, hi = self._back
        mid = (lo + hi) // 2
        if mid > lo:
            relook = self._relook(self._final, left - s.reserve)
            if relook is not None:
                return relook
            passing = self._final.passing
            failed = self._passing_lost(self._final)
            held = passing.passed >= s.passing * self.passing_needed()
            if not failed and not held and left >= s.reserve + s.passing:
                return Probe(chain[mid].key, "passing", s.passing)
            lo, hi = (mid, hi) if held and not failed else (lo, mid)
            if hi == mid:
                self._back_proven = bool(failed)
            self._back = (lo, hi)
            mid = (lo + hi) // 2
            if mid > lo:
                self._final = _Judging(chain[mid])
                return None
        broken = chain[lo + 1 :]
        del chain[lo + 1 :]
        self.best = chain[lo]
        self._final = _Judging(self.best)
        self._phase = "final"
        self._resume(broken, left)
        return None

    def _resume(self, broken: list[Program], left: int) -> None:
        """Point 5 after the bisection: reduce on from the program stepped back to (`best`),
        the candidate that broke a passing cell (`broken[0]`, accepted right after it) and
        those accepted after that one rejected, where the break was seen and the budget
        leaves more than the final check.

        Without this every removal accepted after the break was lost with it (a
        loop whose guard's cut passed its first passes stepped back to 27 lines where 13
        do; a real race to its 11 where 7 do). They are rejected as
        `breaks-passing` by content, so the cache never accepts them again: the first
        failed its passing cell, and the others inherit its break (the bisection's own
        premise) and would otherwise come back from the cache as `fails` unchecked, where
        the passes meet one by another road (a larger removal that covers the break's).
        Everything else the passes meet again is answered from the cache as before, so
        what is known costs nothing. A step back rejects at least one candidate that was
        accepted, and only those the cache ever answers `fails` can be accepted unchecked,
        so the passes cannot go round forever; the budget bounds what they cost. The resumed
        passes hold back what this step back cost (`_held_back`) beside the final check's
        share: the program stepped back to is known to hold, and a break they accept by
        luck again must still find its way back to one, not end `unconfirmed`."""
        s = self.settings
        proven = self._back_proven and bool(broken)
        # Held back beside the resumed passes' own final check: what another step back
        # needs after it, as `_step_back` asks (a round of the passing cells and the final
        # check of the program it steps back to), and a bisection as long as this one's.
        cost = self._back_attempts - self._back_start + s.reserve + s.passing
        resume = proven and left - cost > s.reserve
        keys = {program.key for program in broken} if proven else set()
        self._steps.append((self.best, broken[0] if broken else self.best, len(keys), resume))
        if not proven:
            return  # given up on for the budget: nothing known to break, nothing to resume
        for key in keys:
            self.verdicts[key] = "breaks-passing"
        self._breaks_passing += len(keys)
        self.judged = [
            replace(j, verdict="breaks-passing") if j.key in keys else j for j in self.judged
        ]
        if not resume:
            return
        self._held_back = cost
        self._passes = self._reducer(self.best)
        self._phase = "reduce"
        self._advance(None)

    def _reduce_probe(self, left: int) -> Probe | None:
        s = self.settings
        judging = self._now
        if left <= s.reserve:
            self._end_reduction("budget")
            return None
        if judging.recheck and not judging.cannot_run:
            return Probe(self.original.key, "recheck", 1, 0)
        relook = self._relook(judging, left - s.reserve)
        if relook is not None:
            return relook
        # Once per call: the readings it rests on change only with a verdict (`_known`).
        needed = self.clean_needed()
        verdict = self._verdict(judging, needed)
        if verdict == "fails":
            # Point 7: no clearly higher rate than the original's.
            # Its first match is left out: the probe stopped at it, so it is no fair sample;
            # so is each match a look again stopped at (point 7's hang seen elsewhere).
            f = judging.failing
            counted = Tally(
                max(0, f.matched - 1 - judging.looked), f.passed, f.other, f.infra, f.hung
            )
            more = self._more_often(counted, self._original_rate())
            if more is None:
                if left - s.reserve < 1:
                    self._end_reduction("budget")
                    return None
                judging.rate_probed = True
                want = min(s.step, s.rate_check - counted.ran, left - s.reserve)
                return Probe(judging.program.key, "failing", max(1, want), 0)
            if not more:
                # Point 7's every-time rule, where the interval rule cannot reach.
                every = self._every_time(counted)
                if every is None:
                    if left - s.reserve < 1:
                        self._end_reduction("budget")
                        return None
                    judging.rate_probed = True
                    want = min(s.step, self.every_time_most() - counted.ran, left - s.reserve)
                    return Probe(judging.program.key, "failing", max(1, want), 0)
                if every:
                    verdict = "fails-every-time"
                    self._every_time_rejected += 1
            if judging.rate_probed:
                self._rate_checked += 1
            if more:
                verdict = "fails-more-often"
                self._rate_rejected += 1
        if verdict == "fails" and self._base_rule:
            # Point 6: accepted only where it does not fail without the perturbation too
            # (never: at one attempt; rarer: clearly more often than the original).
            more = (
                (judging.unperturbed.matched > 0 if judging.unperturbed.ran else None)
                if self._base_rule == "never"
                else self._more_often(judging.unperturbed, self._base_rate)
            )
            if more is None:
                if left - s.reserve < 1:
                    self._end_reduction("budget")
                    return None
                want = 1 if self._base_rule == "never" else s.rate_check - judging.unperturbed.ran
                want = min(want, s.step, left - s.reserve)
                return Probe(judging.program.key, "unperturbed", max(1, want), 0)
            self._unperturbed_checked += 1
            if more:
                verdict = "fails-unperturbed"
                self._unperturbed_rejected += 1
        if verdict is None:
            # Point 7: a hang seen elsewhere once is looked at again (a busy thread is caught
            # wherever it runs) before its passing cells run; its attempts are the
            # candidate's failing ones, -j at a time as the ordinary probe's (one at a time
            # ran a rarely hanging one serially, each clean attempt waited for), stopped at
            # the next match.
            looking = self._looking_again(judging, needed)
            if judging.failing.matched and not looking:
                if left - s.reserve < s.passing:
                    self._end_reduction("budget")
                    return None
                return Probe(judging.program.key, "passing", s.passing)
            want = max(1, min(needed - judging.failing.clean, s.step, left - s.reserve))
            return Probe(judging.program.key, "failing", want, looking=looking)
        self.verdicts[judging.program.key] = verdict
        self._judge_done(verdict)
        if verdict == "fails":
            self._known = self._known.add(_kinds(judging.failing))
        self._advance(verdict == "fails")
        return None

    def _verdict(self, judging: _Judging, needed: int) -> Verdict | None:
        """The candidate's verdict, or None while its attempts cannot tell yet (`needed`:
        `clean_needed()`)."""
        if judging.cannot_run:
            return "cannot-run"
        f = judging.failing
        if f.matched:
            if self._new(judging):
                return "new-exception"  # point 7: before its passing cells, at no cost
            if self._elsewhere(judging):
                if self._looking_again(judging, needed):
                    return None
                return "hangs-elsewhere"  # point 7 too, at LOOKS sightings
            if not self.settings.passing:
                return "fails"
            if self._passing_lost(judging):
                return "loses-passing"
            if judging.passing.passed >= self.settings.passing * self.passing_needed():
                return "fails"
            return None
        if f.clean >= needed:
            return "clean"
        return None

    def _advance(self, answer: bool | None) -> None:
        """Give the passes their answer; move on to the next new candidate, or to the end."""
        while True:
            try:
                candidate = next(self._passes) if answer is None else self._passes.send(answer)
            except StopIteration as stop:
                value = stop.value
                self.best = value if isinstance(value, Program) else self.best
                self._end_reduction("minimized")
                return
            self.proposed += 1
            known = self.verdicts.get(candidate.key)
            if known is not None:
                answer = known == "fails"
                continue
            self.programs[candidate.key] = candidate
            self._now = _Judging(candidate)
            return

    def _new(self, judging: _Judging) -> tuple[str, ...]:
        """The exception types its failures printed that the original's attempts never did
        (point 7); () for the original itself."""
        if judging.program.key == self.original.key or self._raised_unknown:
            return ()
        return tuple(sorted(judging.raised.difference(self._original_raised)))

    def _relook(self, judging: _Judging, left: int) -> Probe | None:
        """A round of the original's passing cells, where `judging`'s passes printed a type
        the original's never did (`_unexplained`) and `left` has room for it; None otherwise.

        The original's passing cells ran once each, a candidate's `passing_needed` times: a
        traceback a passing program prints now and then (a daemon thread's at shutdown, a
        BrokenPipeError) missed by the original's one pass would reject every candidate. At
        the first program whose passes printed such a type, in the reduction or in the final
        check, its step back or its conclusion alike (each asks `_passing_lost`), the
        original's run as many times (a round, one attempt a cell, at a time, until they
        print it too), once per search. Where the budget has no room for them, the type
        counts once seen in two passes (`_new_passing`)."""
        unexplained = bool(self._unexplained(judging))
        if not self._relook_wanted and unexplained:
            self._relook_left = self._relook_wanted = self.passing_needed()
        # Only for a program that asks: rounds the reduction's budget cut short would
        # otherwise spend the final check's share on a result whose passes printed nothing.
        if unexplained and self._relook_left > 0 and left >= self.settings.passing:
            self._relook_left -= 1
            return Probe(self.original.key, "passing", self.settings.passing)
        return None

    def _relook_stopped(self) -> Literal["", "printed", "budget"]:
        """Why `_relook`'s rounds stopped short of a candidate's `passing_needed` when
        they began (`_relook_wanted`): the original's printed the type too, or else the
        budget had no room for the rest (a program's passes ask them until one of those);
        "" where they did not, or none ran."""
        if self._relook_printed:
            return "printed"
        if 0 < self._relook_rounds < self._relook_wanted:
            return "budget"
        return ""

    def _unexplained(self, judging: _Judging) -> tuple[str, ...]:
        """The exception types its passing cells printed where they passed that the
        original's passing cells never did; () for the original, or where its exceptions
        are unknown."""
        if judging.program.key == self.original.key or self._raised_unknown:
            return ()
        return tuple(sorted(set(judging.passing_raised).difference(self._original_passing_raised)))

    def _new_passing(self, judging: _Judging) -> tuple[str, ...]:
        """Those of `_unexplained` that tell a passing cell lost: a two-lock deadlock was
        minimized to `first, second = () if ORDERED else (b, a)`, whose passing cell
        (ORDERED=1) died in its thread of ValueError, exit code 0, and "passed"; the
        condition that is the bug was gone from the cell that shows it. One pass that printed
        it is enough once the original's passing cells ran as often as a candidate's
        (`_relook`) without printing it; before that, or where the budget had no room for
        them, two passes must have: a stray traceback seen once, beside one pass of the
        original's, is no evidence against the candidate, and a broken cell prints its
        exception in every pass."""
        relooked = 0 < self._relook_wanted <= self._relook_rounds
        return tuple(
            name
            for name in self._unexplained(judging)
            if relooked or judging.passing_raised[name] >= 2
        )

    def _passing_lost(self, judging: _Judging) -> bool:
        """Whether its passing cells were lost: one failed, or passed printing an exception
        the original's attempts never did (`_new_passing`). The one rule of `_verdict`, the
        final check, `_back_probe`'s bisection and `_conclude`."""
        p = judging.passing
        return bool(p.matched or p.other or self._new_passing(judging))

    def _elsewhere(self, judging: _Judging) -> tuple[str, ...]:
        """The places its hangs sat in that none of the original's did (point 7); () for
        the original itself, or where either side's were not read."""
        if judging.program.key == self.original.key:
            return ()
        return moved(judging.places, self._original_places)

    def _looking_again(self, judging: _Judging, needed: int) -> bool:
        """Whether a candidate whose hangs all sat elsewhere was seen so fewer than LOOKS
        times, and may still be: a lone busy thread caught in another function than in any
        of the original's attempts, on one sighting, was rejected as another hang. It is
        looked at again while its clean attempts leave room (clean_needed): one that rarely
        hangs is rejected on what was seen. Looks are counted by its matches, read or not:
        where a later hang's stack is unread, each look saw nothing, and counting the read
        ones alone looked again until the budget ran out (each look a hang's full timeout)."""
        return (
            judging.failing.matched < LOOKS
            and judging.failing.clean < needed
            and bool(self._elsewhere(judging))
        )

    def _original_rate(self) -> Rate:
        """The original's rate as point 7's rules compare a candidate with it: its fair
        count (`fair`, the match its rate attempts stopped at left out: 4/11 of a run that
        stopped at its 5th match in 12), what the report shows (`original_rate`,
        `unbiased_rate`). A candidate's own first match is left out the same way, its probe
        having stopped there; against the raw 5/12 (upper bound 68%, not 65%) a candidate
        failing 8 times in 8 was not clearly above, and the report said the rule left no
        room where the 4/11 it printed did."""
        return rate_of(self._fair.matched, self._fair.ran)

    def _more_often(self, tally: Tally, than: Rate | None) -> bool | None:
        """Whether `tally` fails clearly more often than `than` (points 6 and 7): True once
        its Wilson 95% interval is above `than`'s, False once even `rate_check` attempts
        failing every time from here could not put it there (or nothing to compare), None
        while more attempts could tell."""
        if than is None or than.attempts == 0 or not self.settings.rate_check:
            return False
        if tally.ran and clearly_more(rate_of(tally.matched, tally.ran), than):
            return True
        left = self.settings.rate_check - tally.ran
        if left <= 0 or not clearly_more(rate_of(tally.matched + left, tally.ran + left), than):
            return False
        return None

    def every_time_most(self) -> int:
        """Point 7's every-time rule: the failing attempts in a row (its first match left
        out) that reject a candidate of a flaky original, 0 where it does not apply.

        n is the smallest with r^n <= `error`, r the original's fair rate (its point
        estimate, `fair`): a candidate at the original's rate fails n in a row with at most
        that chance, and is wrongly rejected so (only a larger result, point 3). Not its
        upper bound: 16 of 20 reach 92%, which asks 28 attempts of each candidate. Not
        where the original never came back clean (nothing fails more often than every
        time), where the interval rule reaches (it rejects a candidate failing every time
        sooner), nor where n is above `every_time_check` (a race at 95% looks
        deterministic to any few attempts: the final check's warning is what is left)."""
        s = self.settings
        tally = self._fair
        if not tally.clean or not tally.matched or self._reachable(self._original_rate()):
            return 0
        rate = tally.matched / tally.ran
        n = math.ceil(math.log(s.error) / math.log(rate))
        return n if n <= s.every_time_check else 0

    def _every_time(self, counted: Tally) -> bool | None:
        """Whether a candidate's fair failing attempts (`counted`) failed every time where
        the original came back clean (point 7): True after `every_time_most` in a row, False
        at its first clean one (it is flaky too) or where the rule does not apply, None
        while more attempts could tell."""
        most = self.every_time_most()
        if not most or counted.clean:
            return False
        if counted.matched >= most:
            return True
        return None

    def _rule_for(self, base: Rate) -> BaseRule:
        """Point 6's rule on a base without the perturbation: `never` where it is 0 of n,
        `rarer` where `rate_check` attempts could show a candidate clearly above it."""
        if base.attempts == 0:
            return ""
        if base.matched == 0:
            return "never"
        return "rarer" if self._reachable(base) else ""

    def _reachable(self, than: Rate) -> bool:
        """Whether `rate_check` attempts, all failing, would be clearly more than `than`."""
        most = self.settings.rate_check
        return most > 0 and than.attempts > 0 and clearly_more(rate_of(most, most), than)

    def _judge_done(self, verdict: Verdict) -> None:
        j = self._now
        new = self._new(j) if verdict == "new-exception" else ()
        if new:
            self._new_exception_rejected += 1
            self._new_exceptions.update(dict.fromkeys(new))
        if verdict == "loses-passing" and not (j.passing.matched or j.passing.other):
            # Lost by what its passes printed alone (`_new_passing`): said, as point 7's.
            new = self._new_passing(j)
            self._new_passing_rejected += 1
            self._new_passing_exceptions.update(dict.fromkeys(new))
        elsewhere = self._elsewhere(j) if verdict == "hangs-elsewhere" else ()
        if elsewhere:
            self._hangs_elsewhere_rejected += 1
            self._hung_elsewhere.update(dict.fromkeys(elsewhere))
        self.judged.append(
            Judged(
                j.program.key,
                j.program.lines,
                j.failing,
                j.passing,
                verdict,
                j.unperturbed,
                new,
                elsewhere,
            )
        )
        if verdict == "fails" and j.program.lines <= self.best.lines:
            self.best = j.program
            self._accepted.append(j.program)

    def _fall_back(self, left: int) -> bool:
        """The smallest program seen failing failed in none of its final attempts: check an
        earlier one instead (half way back along the programs accepted), when the budget
        allows one more final check. True when one is to be checked.

        A candidate is accepted at its first matching failure (that is proof it still
        fails), so a change that made the failure rare can pass on one lucky attempt, and
        the candidates after it inherit that: the original failed 5/5, the result 0/5. An
        earlier program that fails in its own final check is the better answer.
        """
        chain = self._accepted
        if self.best not in chain or left < self.settings.final_attempts:
            return False
        at = chain.index(self.best)
        if at == 0:
            return False  # the original itself: nothing earlier to fall back to
        if self._fell_back is None:
            self._fell_back = (self.best, self._final.failing)
        back = at // 2
        del chain[back + 1 :]
        self.best = chain[back]
        self._final = _Judging(self.best)
        return True

    def _end_reduction(self, status: Status) -> None:
        self._reduction_status: Status = status
        self._budget_spent = status == "budget"
        self._phase = "final"
        self._final = _Judging(self.best)

    def _conclude(self) -> None:
        s = self.settings
        final = self._final
        status = self._reduction_status
        message = ""
        if final.failing.matched == 0:
            status = "unconfirmed"
            message = (
                f"the result did not fail as expected in {final.failing.ran} final attempts; "
                f"it failed while it was judged, so it fails rarely: run it with a larger "
                f"{argument('--budget', 'budget')}"
            )
        elif self._passing_lost(final):
            status = "unconfirmed"
            lost = _lost_words(final.passing, self._new_passing(final))
            message = (
                f"a passing cell {lost} with the result in the final check "
                f"({final.passing.passed} of {final.passing.ran} passed)"
            )
        elif status == "budget":
            message = (
                f"the budget of {s.given} attempts ran out before the reduction passes were done: "
                f"the result is the smallest program seen failing"
            )
        if self._passing_broke is not None and status != "unconfirmed":
            message = (message + "; " if message else "") + self._stepped_back_story()
        if self._fell_back is not None and status != "unconfirmed":
            smallest, tally = self._fell_back
            message = (
                (message + "; " if message else "")
                + f"the smallest program seen failing ({smallest.lines} lines) failed in "
                f"{tally.matched} of {tally.ran} final attempts (a change made the failure "
                f"rare and passed on a lucky attempt): the result is an earlier one "
                f"({self.best.lines} lines) that failed in its own"
            )
        self._finish(status, message)

    def _stepped_back_story(self) -> str:
        """Point 5 in words: where the final check stepped back to, the candidate rejected
        for breaking a passing cell, and whether the passes resumed from there."""
        broke, tally, new = self._passing_broke or (self.best, Tally(), ())
        head = (
            f"a passing cell {_lost_words(tally, new)} with the smallest program accepted "
            f"({broke.lines} lines; {tally.passed} of {tally.ran} passed in the final check): "
        )
        back = f"found along the programs accepted in {plural(self._back_attempts, 'attempt')}"
        resumed = [step for step in self._steps if step[3]]
        if not resumed:
            return head + (
                f"the result is the last one accepted whose passing cells still passed "
                f"({self.best.lines} lines), {back}"
            )
        to, breaking, rejected, _ = resumed[0]
        after = rejected - 1
        times = len(self._steps)
        return head + (
            f"stepped back to the last one accepted whose passing cells still passed "
            f"({to.lines} lines), {back}, rejected the candidate accepted after it "
            f"({breaking.lines} lines: breaks-passing)"
            + (f" and the {after} accepted after that (each inherits its break)" if after else "")
            + ", and resumed reducing from there"
            + (f" ({times} step backs in all)" if times > 1 else "")
            + f": the result is {self.best.lines} lines"
        )

    # -- the rate ------------------------------------------------------------

    def measured(self) -> Tally:
        """The attempts the measured rate rests on (p's, and the warning's): every attempt
        of the original and the candidates seen failing while each of them failed (nothing
        reads higher than every time: a deterministic failure's count grows with each
        candidate, as it ran), else the fair part of them, which is the original's, counted
        as its rate is (`fair`). A candidate's attempts are each a run stopped at its first
        match, kept only where that came within `clean_needed` attempts, and read a rate
        high: a race failing every third attempt, minimized at `--min-rate 0.9` (one
        attempt each), read 10/25 where the original read 4/14. Leaving out each one's
        match instead reads 0 of j for its j clean attempts before it, far too low (a 50%
        race read 11%, simulated), and point 7's attempts after it stop where no clearly
        higher rate is within reach, after clean ones (the same race read 4/20)."""
        return self._known if not self._known.clean else self._fair

    def rate_used(self) -> float:
        """p: the assumed minimum, raised to the 95% lower bound of the measured rate."""
        tally = self.measured()
        low = wilson(tally.matched, tally.ran)[0] if tally.matched else 0.0
        return min(0.99, max(self.settings.min_rate, low))

    def readings(self) -> tuple[tuple[float, float], ...]:
        """(posterior weight, rate) of each reading of the failure's rate (point 2).

        While every attempt of the candidates known to fail has failed, three readings
        compete, as in bisect and isolate: deterministic (rate 1, prior
        `DETERMINISTIC_PRIOR`), flaky at `HIGH_RATE` (prior `HIGH_PRIOR`), and flaky at
        the original's 95% lower bound, at least `min_rate` (the rest); the original's f
        failures in f weigh them 1, HIGH_RATE^f and that rate^f. Only the original's: an
        accepted candidate's one match is where its probe stopped, and a candidate still
        failing that came back clean once was dropped unseen, so counting the matches
        would read a failure at 90% as deterministic. The first clean attempt of a
        candidate known to fail (the failure flaked) leaves p alone, as before: a flaky
        failure's candidates are weighed as they were."""
        f = self._original_failing.matched
        if self._known.clean or not f:
            return ((1.0, self.rate_used()),)
        p = max(self.settings.min_rate, wilson(f, f)[0])
        logs = (
            math.log(DETERMINISTIC_PRIOR),
            math.log(HIGH_PRIOR) + f * math.log(HIGH_RATE),
            math.log(1 - DETERMINISTIC_PRIOR - HIGH_PRIOR) + f * math.log(p),
        )
        total = log_sum(logs)
        return tuple(
            (math.exp(w - total), rate) for w, rate in zip(logs, (1.0, HIGH_RATE, p), strict=True)
        )

    def deterministic(self) -> float:
        """The posterior weight of "the failure is deterministic" (0 once it flaked): of
        every reading at rate 1, where `--min-rate 1` makes the third reading one too (the
        first's alone was reported, its prior's share of the certainty)."""
        return sum(w for w, rate in self.readings() if rate >= 1.0)

    def clean_needed(self) -> int:
        """Clean attempts that drop a candidate: the chance that one still failing stayed
        clean that often, over the readings of the rate, is at most `error` ((1 - p)^n once
        the failure flaked; 1 while it looks deterministic)."""
        return self._needed(self.settings.error)

    def passing_needed(self) -> int:
        """Passes of each passing cell that accept a failing candidate: (1 - q)^n <=
        passing_error, q `passing_rate` (point 3: a wrong acceptance makes the result
        another bug)."""
        return clean_needed_at(self.passing_rate(), self.settings.passing_error)

    def passing_rate(self) -> float:
        """q, the rate a broken passing cell is assumed to fail at least: `min_rate` where
        the original came back clean in its rate's attempts, else p (`rate_used`), alone
        even while the failure reads as deterministic (point 3).

        Not p where the program is flaky: p is the failing cell's rate, and a passing cell
        a candidate broke fails at its own, which nothing measured says. A user's race (p =
        0.64, 17 of 20) asked 5 passes; 39 of its candidates failed the `lock=true` cell,
        and one that cut its `with lk:` (failing there some 60% of the time: 0.4^5 = 1%
        each, over tens of candidates) was accepted in two runs of two (its successors
        all failed there, the final check did, and the answer was `unconfirmed` after 789
        attempts). At `min_rate` (13 at 0.3) a break at 60% passes 13 times in 10^5. A
        failure that never flaked keeps p: its passes (6 after 5 of 5) cost what they did,
        and the final check's step back (`_step_back`) is the net for a break that fails
        rarer than that."""
        if self._original_failing.clean:
            return self.settings.min_rate
        return self.rate_used()

    def _needed(self, alpha: float) -> int:
        """Smallest n with sum(w (1 - rate)^n) <= alpha over the readings."""
        readings = self.readings()
        most = clean_needed_at(min(rate for _, rate in readings), alpha)
        for n in range(1, most):
            if sum(w * (1 - rate) ** n for w, rate in readings) <= alpha:
                return n
        return most

    def seek_attempts(self) -> int:
        """How long the original runs before a miss reads as "it does not fail here", in
        passing attempts, the first `rate_attempts`' passes counted too (one that failed
        otherwise cannot show the failure): `rate_attempts`, or more where `min_rate` is
        low, as many as make a miss at that rate less likely than `RATE_MISS` (isolate's
        rule and its default error: 104 at 0.05). 20 attempts miss a 4% failure 44% of the time, and
        refused one that `--min-rate 0.04` had said to look for. Past `rate_attempts` the
        original runs only until its first match, which the rate then counts as it ran
        (`fair` leaves out a 5th match only: a first's (k-1)/(n-1) is 0). That reads it
        high (a 1% failure first seen at the 25th attempt reads 1/25), so the result says
        it was sought (`original_sought`), as it says a rate that stopped at its 5th
        match."""
        s = self.settings
        return max(s.rate_attempts, attempts_to_see(s.min_rate, RATE_MISS))

    def _refusal(self, tally: Tally) -> str:
        s = self.settings
        figure = f"{tally.matched}/{tally.ran}"
        if tally.matched == 0:
            return tally.missed_at(
                "the original program", "minimize", s.min_rate, "MinimizeOptions"
            )
        # A projection at the rate's optimistic end (95% upper bound): one pass over the
        # top-level units, each dropped after its clean attempts, plus the final check.
        low, high = wilson(tally.matched, tally.ran)
        shown_low, shown_high = interval_bounds(low, high, digits=0, percent=True)
        units = max(1, _top_level_units(self.original))
        projected = math.ceil(units * clean_needed_at(high, s.error)) + s.reserve
        left = s.budget - self.used
        if projected <= left:
            return ""
        # Every attempt failed as expected: the budget is short, not the rate. `--budget 30`
        # on a crash that failed 6/6 said it "fails too rarely". The figure says what it
        # counts: "the budget is too small to minimize: 6/6 attempts (60%-100%)" read as
        # six attempts of a budget.
        # The original named once: "the original program fails too rarely ...: the
        # original failed as expected in 3/10 attempts" said it twice.
        why = (
            "the budget is too small to minimize: the original failed"
            if tally.matched == tally.ran
            else "the original program fails too rarely to minimize within the budget: it failed"
        )
        least = s.spent_before + self.used + projected
        return (
            f"{why} as expected in {figure} attempts ({shown_low}-"
            f"{shown_high}); even at {shown_high} one "
            f"pass over its {units} top-level units takes about {plural(projected, 'attempt')}, "
            f"and {left} of the budget of {s.given} {agree(left, 'is', 'are')} left "
            f"({argument('--budget', 'budget', str(least))} at the least)"
        )

    # -- the answer ----------------------------------------------------------

    def _finish(self, status: Status, message: str) -> None:
        s = self.settings
        final = (
            self._final.failing if self._phase in ("final", "final-passing", "done") else Tally()
        )
        self._phase = "done"
        warnings: list[str] = []
        measured = self.measured()
        # Advice for a search that ran candidates at too high a rate: a refused one ran
        # none, and one whose original never failed as expected (0/20) has no rate a lower
        # --min-rate would fit; it said "rerun with a lower --min-rate for a smaller result"
        # of a program that failed otherwise in every attempt.
        if (
            status != "refused"
            and measured.matched
            and wilson(measured.matched, measured.ran)[1] < self.settings.min_rate
        ):
            warnings.append(
                f"the original reproduced in {measured.matched}/{measured.ran} attempts "
                f"(counted without the failure they stopped at; the candidates' attempts, "
                f"each stopped at its first failure, read a rate high), clearly below the "
                f"assumed minimum rate "
                f"{self.settings.min_rate:g}: candidates may have been dropped that still "
                f"fail; rerun with a lower "
                f"{argument('--min-rate', 'min_rate')} for a smaller result"
            )
        self.result = MinimizeResult(
            status=status,
            message=message,
            original=self.original,
            program=self.best,
            attempts=self.used,
            candidates=self.proposed,
            ran=len(self.judged),
            rate=rate_of(final.matched, final.ran),
            original_rate=unbiased_rate(self._original_failing, s.rate_matches, s.rate_attempts),
            original_stopped=stopped_at_match(
                self._original_failing, s.rate_matches, s.rate_attempts
            ),
            original_sought=self._sought and self._original_failing.matched > 0,
            stepped_back=len(self._steps),
            resumed=sum(resumed for *_, resumed in self._steps),
            breaks_passing=self._breaks_passing,
            rate_used=self.rate_used(),
            deterministic=self.deterministic(),
            clean_needed=self.clean_needed(),
            passing_needed=self.passing_needed(),
            passing_rate=self.passing_rate(),
            error=self.settings.error,
            min_rate=self.settings.min_rate,
            passing_checked=self._final.passing,
            judged=tuple(self.judged),
            cannot_run=sum(j.verdict == "cannot-run" for j in self.judged),
            cannot_run_reason=self._cannot_run_reason,
            warnings=tuple(warnings),
            budget_spent=self._budget_spent and status != "interrupted",
            kept_perturbed=(
                KeptPerturbed(
                    applies=bool(self._base_rule),
                    base=self._base,
                    attempts=self._unperturbed_attempts,
                    rejected=self._unperturbed_rejected,
                    checked=self._unperturbed_checked,
                    rule=self._base_rule,
                    most=self.settings.rate_check if self._base_rule == "rarer" else 0,
                )
                if self.settings.unperturbed_base or self.settings.recorded_base
                else None
            ),
            same_failure=(
                SameFailure(
                    original_exceptions=tuple(self._original_raised),
                    new_exception_rejected=self._new_exception_rejected,
                    new_exceptions=tuple(self._new_exceptions),
                    rate_applies=self._reachable(self._original_rate()),
                    rate_most=self.settings.rate_check,
                    rate_checked=self._rate_checked,
                    rate_rejected=self._rate_rejected,
                    rate_attempts=self._rate_attempts,
                    every_time_most=self.every_time_most(),
                    every_time_rejected=self._every_time_rejected,
                    original_places=tuple(self._original_places),
                    hangs_elsewhere_rejected=self._hangs_elsewhere_rejected,
                    hung_elsewhere=tuple(self._hung_elsewhere),
                    new_passing_rejected=self._new_passing_rejected,
                    new_passing_exceptions=tuple(self._new_passing_exceptions),
                    passing_relooked=self._relook_attempts,
                    passing_relooked_rounds=self._relook_rounds,
                    passing_relooked_stopped=self._relook_stopped(),
                )
                if self._original_failing.ran
                else None
            ),
        )


def stopped_at_match(tally: Tally, matches: int, most: int) -> bool:
    """Whether the original's rate attempts stopped at their `matches`-th match, short of
    `most`, with a clean attempt among them: a flaky rate that a stopping rule ended. One
    whose 5th match came at the 20th attempt ran as many as a fixed count would."""
    return tally.matched >= matches and tally.matched < tally.ran < most


def fair(tally: Tally, matches: int, most: int) -> Tally:
    """The attempts of a run as a rate may count them: where they ran until `matches`
    matches (stopped_at_match), the last match is where they stopped, no fair sample, and
    k/n reads high (a race at 20%, 8 of 40, read 5/10), so it is left out: (k-1)/(n-1),
    the unbiased count under that stopping rule. A deterministic failure (5 of 5) is
    counted as it ran: nothing reads higher than every time.

    The original's rate (`unbiased_rate`) and the rate the search learns and warns with
    (`Minimization.measured`, where the candidates' own runs are no fair sample) both
    count the original so."""
    if stopped_at_match(tally, matches, most):
        return Tally(tally.matched - 1, tally.passed, tally.other, tally.infra, tally.hung)
    return tally


def unbiased_rate(tally: Tally, matches: int, most: int) -> Rate:
    """The original's rate as its attempts allow it (`fair`): what the report and the final
    check's size use."""
    counted = fair(tally, matches, most)
    return rate_of(counted.matched, counted.ran)


def _lost_words(tally: Tally, new: tuple[str, ...]) -> str:
    """How a passing cell was lost, as `Minimization._passing_lost` reads it: "failed", or
    passed printing what the original's attempts never did."""
    if tally.matched or tally.other or not new:
        return "failed"
    return f"passed printing {', '.join(new)} (which the original's attempts never printed)"


def _kinds(tally: Tally) -> list[AttemptKind]:
    kinds: list[AttemptKind] = ["match"] * tally.matched
    hung: list[AttemptKind] = ["hang"] * tally.hung
    return kinds + ["pass"] * tally.passed + hung + ["other"] * (tally.other - tally.hung)


def _top_level_units(program: Program) -> int:
    """The command's words, a workload's fields and every file's top-level statements: the
    first pass's units."""
    import ast

    count = len(program.args) + len(program.env) + len(program.fields)
    for _, text in program.files:
        try:
            count += len(ast.parse(text).body)
        except UNREADABLE:
            continue
    return count


ProbeRunner = Callable[[Program, Probe], tuple[Sequence[AttemptKind], str]]


def minimize(
    original: Program,
    run: ProbeRunner,
    settings: Settings | None = None,
    passes: Callable[[Program], Reducer] = reduce,
) -> MinimizeResult:
    """Drive a `Minimization` to its end; `run(program, probe)` gives the attempts' kinds."""
    search = Minimization(original, settings, passes)
    while search.result is None:
        for probe in search.next_probes():
            kinds, reason = run(search.program(probe.key), probe)
            search.record(probe, kinds, reason)
    return search.result
