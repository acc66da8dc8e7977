"""Find the smallest set of differences that turns a passing configuration into a failing one.

Pure search logic: no processes, no files. The differences between the passing
configuration (the *base*) and the failing one are numbered 0..N-1; a *candidate*
is a subset of them applied onto the base. An executor runs a `Probe` (up to
`attempts` attempts of one candidate, stopping after `stop_after` matching
failures) and hands back what each attempt did: `match` (the expected failure),
`pass`, `other` (a different failure: not the bug) or `infra` (could not run).

    iso = Isolation(len(differences), Settings(budget=100))
    while iso.result is None:
        probes = iso.next_probes()          # independent of each other: run them concurrently
        for probe in probes:
            iso.record(probe, run(probe))   # e.g. ("pass", "pass", "match")
    iso.result.culprits

The search is Bayesian adaptive group testing, the same rule as `bisect`'s
(bisection.py) over a larger space of answers:

1. **Rate.** The failing configuration runs until it fails as expected
   (`rate_matches` times, at most `rate_attempts` attempts, or where it passed more
   than it failed otherwise, `rate_attempts` passes, or as many as make a miss at
   `min_rate` less likely than `error` where that is more: passes alone, before its
   first match, minimize's rule, `Tally.seek_short`). No match refuses;
   so does a rate that cannot finish within the budget even by the cheapest
   isolation (one culprit), with the figure (ClusterFuzz does the same before
   it minimizes: "crashes, but not consistently, 1/10").
2. **Belief.** The answer is one of the sets of at most `max_culprits`
   differences (hypotheses.py; the empty set stands for "the passing side
   fails too"), a priori one difference likelier than two, two than three. A
   matching failure of a candidate rules out every set it does not hold (no
   false positives); each clean attempt multiplies every set it holds by
   (1 - p). Nothing is forgotten: every attempt weighs on every set, so a
   check needs no attempts of its own (the last search's clean attempts often
   are the check).
3. **Choice.** Each attempt goes to the candidate with the most mutual
   information about the culprit; with -j, a round holds -j attempts, each
   chosen as if the ones before it came back clean. Candidates stay inside the
   sets seen failing (the differences outside them cannot matter to a
   conjunction, and leaving them at the base keeps a disjunction from
   contradicting the model: the search then finds one of its minimal sets).
4. **Answer.** It stops when one set holds at least 1 - `error` of the
   posterior and was itself seen failing (its own matching failure: that rules
   out every larger set at once, and it is the "minimal set fails" row of the
   report). Its one-smaller sets then have posterior probability at most
   `error` of reproducing, on the clean attempts of every tested set that holds
   them. And the passing side must have been shown to pass: "the passing
   side fails too" needs odds of at most `error` against the answer on the
   attempts alone (even prior, the rate most favourable to it; see
   `Hypotheses.base_odds`). With one difference the posterior is near 1 from
   the start and only this check decides (an irrelevant
   difference was named after two clean attempts of a 30% crash). If the
   passing side fails as expected meanwhile, the answer is base-reproduces.
   Out of budget, the answer is undecided: the most probable set with its
   probability, and the smallest set seen failing.

Flakiness. p is `min_rate`, an assumption (the spec's expect.rate bound, else
0.3, as for bisect), raised to the 99% Wilson lower bound of the measured rate
when that is higher. A clean attempt weighed at a rate no higher than the true
one counts for less than it is worth, which is meant to keep the posterior honest
at true rates at or above p; that was measured near p and, with p at 0.1, for a
pair among 16 at rates up to 1.0 (99.5-100% exact, performance.md, "Below the
assumed rate"). Bisect, weighing the same way beside its deterministic reading, was
answered wrong more often than stated at rates several times p until its stop also
asked a second model (performance.md, "A rate far above the assumed one"). A warning
says when the measured rate is clearly below the assumption. The rate is measured on
the sets known to reproduce (seen failing, or holding one that was), plus the
attempts of the other tested sets in proportion to the belief that they hold the
culprits: the known sets alone run high (a set holding the culprits that happened
to stay clean is not known). It is not fitted per hypothesis: a wrong larger set would fit a higher
rate on the very failures that made it look right (a winner's curse), which in
the simulation bought confident wrong answers at rate 0.3. For a deterministic
failure the 99% bound rises slowly (5 failures in 5: 43%; 10 in 10: 60%), so
while the answer is likely, one more attempt of it is made whenever the
failure it brings is expected to save more clean attempts of its one-smaller
sets than it costs (never near the assumed minimum).

The rate is learned, as bisect learns it: beside "flaky at p" the belief holds
"deterministic" for every set no clean attempt has held (hypotheses.py). While
the failures never flaked, each one makes that reading 1/p likelier, and under it
one clean attempt rules a set out, so a deterministic pair among 12 costs about
a binary search (18 attempts, where the flaky reading alone needed 35: clean
attempts counted at the assumed 30% until the slow 99% bound rose). The first
clean attempt of a set that failed before (a failure that looked deterministic,
then flaked) leaves every possible set with a clean attempt: the flaky reading
alone weighs them, earlier attempts included, and the search goes on as for any
flaky failure. Nothing about the rate is taken from the spec but its minimum.

Why not ddmin and chunks (the previous search, kept in the git history): ddmin
(Zeller and Hildebrandt, TSE 2002) asks for many passing verdicts, the
expensive kind under flakiness; generalized binary splitting (Hwang 1972) then
re-checking each kept difference on attempts of its own was exact but needed
about 94 attempts for a pair among 16 at rate 0.3, because every passing verdict
stood alone, at a strict level, and nothing the search saw counted for the
check. ProbDD (Wang et al., FSE 2021) keeps a probability per element and
assumes independence between them; here the belief is over whole sets, so a
pair that fails only together is one hypothesis, not two half-believed ones.
`benchmarks/isolate_simulation.py` measures it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reprospec.core.caller import argument
from reprospec.core.rates import attempts_to_see, rate_of, wilson
from reprospec.core.words import agree, interval_bounds, plural
from reprospec.isolation.candidates import (
    RATE_Z,
    AttemptKind,
    Candidate,
    IsolationResult,
    Probe,
    Role,
    Settings,
    Status,
    Tally,
    clean_needed_at,
)
from reprospec.isolation.hypotheses import (
    NEGLIGIBLE,
    Belief,
    Hypotheses,
    largest_size,
    mask_of,
    members,
)


@dataclass
class Isolation:
    """The search as a state machine: ask `next_probes`, `record` each, until `result` is set."""

    count: int
    settings: Settings = field(default_factory=Settings)
    # A set in the user's words, for a message (`{2, 3}` without the driver's names).
    describe: Callable[[frozenset[int]], str] = field(default=lambda c: _name(c))

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("nothing to isolate: the configurations do not differ")
        if not 0 < self.settings.error < 1 or not 0 < self.settings.min_rate < 1:
            raise ValueError("error and min_rate must be between 0 and 1")
        self.full = frozenset(range(self.count))
        self.size = largest_size(self.count, self.settings.max_culprits)
        self.model = Hypotheses(self.count, self.size)
        self.tallies: dict[frozenset[int], Tally] = {}
        self.roles: dict[frozenset[int], Role] = {}
        self.used = 0
        self.result: IsolationResult | None = None
        self._universe = mask_of(self.full)  # every set seen failing holds the culprits
        self._outstanding: list[Probe] = []
        self._searching = False  # past the rate phase
        self._infra_reason = ""

    # -- the protocol --------------------------------------------------------

    def next_probes(self) -> tuple[Probe, ...]:
        """The probes to run now, independent of each other; () once `result` is set."""
        if self._outstanding:
            raise RuntimeError("record every probe of the last round first")
        if self.result is not None:
            return ()
        left = self.settings.budget - self.used
        if not self._searching:
            s = self.settings
            tally = self.tallies.get(self.full, Tally())
            # Before its first match, minimize's rule (Tally.seek_short): past
            # `rate_attempts` in passes, where it passed more than it failed otherwise.
            # After it, on to `rate_matches` within `rate_attempts`.
            if tally.matched == 0:
                short = tally.seek_short(s.rate_attempts, self._rate_attempts())
            elif tally.matched < s.rate_matches:
                short = s.rate_attempts - tally.ran
            else:
                short = 0
            if short > 0:
                if left <= 0:
                    self._finish_budget()
                    return ()
                # In probes of at most `rate_attempts`: a low min_rate's 130 attempts of a
                # command that cannot run would all run before the infra streak is read.
                want = min(short, s.rate_attempts, left)
                return self._issue([Probe(self.full, want, s.rate_matches - tally.matched)])
            refusal = self._refusal()
            if refusal:
                # Refused on the budget's projection (a match seen): a larger one goes on.
                self._finish("refused", (), refusal, budget_spent=tally.matched > 0)
                return ()
            self._searching = True
        if left <= 0:
            self._finish_budget()
            return ()
        rate = self._rate_used()
        belief = self.model.belief(rate)
        top, probability = belief.top
        answer = self.model.masks[top]
        if probability >= 1 - self.settings.error:
            if self._seen_failing(answer):
                if answer == 0:
                    self._finish(
                        "base-reproduces", (), "the passing configuration fails the same way"
                    )
                    return ()
                if self.model.base_odds(answer, rate) <= self.settings.error:
                    self._finish("isolated", tuple(sorted(members(answer))), "")
                    return ()
                # Likely, but the passing side has not yet been shown to pass: see _show_base.
                return self._issue([self._show_base(answer, rate, min(self.settings.step, left))])
            # Sure enough, but not yet seen failing itself: that is the next question.
            return self._issue([Probe(members(answer), min(self.settings.step, left))])
        if self._measure_first(belief, answer, rate):
            return self._issue([Probe(members(answer), min(self.settings.step, left))])
        return self._issue(self._round(belief, rate, min(self.settings.step, left)))

    def interrupt(self) -> None:
        """Stop here (Ctrl-C): the result says so and names the smallest set seen failing."""
        if self.result is None:
            self._outstanding.clear()
            self._finish_undecided("interrupted", "interrupted before the answer was sure")

    def record(self, probe: Probe, kinds: Sequence[AttemptKind], infra_reason: str = "") -> None:
        """What the attempts of `probe` did, in order (more than asked is fine: -j overshoots)."""
        self._outstanding.remove(probe)
        ran = Tally().add(kinds)
        self.tallies[probe.candidate] = self.tallies.get(probe.candidate, Tally()).add(kinds)
        self.used += len(kinds)
        candidate = mask_of(probe.candidate)
        self.model.record(candidate, ran.matched, ran.clean)
        if ran.matched:
            self._universe &= candidate
        if infra_reason:
            self._infra_reason = infra_reason
        streak = 0
        for kind in reversed(kinds):
            if kind != "infra":
                break
            streak += 1
        tally = self.tallies[probe.candidate]
        if streak and streak == len(kinds) and tally.infra >= self.settings.max_infra:
            self._outstanding.clear()
            self._finish(
                "infra-error",
                (),
                f"candidate {self.describe(probe.candidate)} could not run ({tally.infra} "
                "attempts): "
                f"{self._infra_reason or 'infra error'}",
            )

    # -- choosing ------------------------------------------------------------

    def _round(self, belief: Belief, rate: float, attempts: int) -> list[Probe]:
        """`attempts` attempts, each on the best candidate if those before it come back clean."""
        picks: list[int] = []
        clean = list(self.model.clean)
        for n in range(attempts):
            if n:
                belief = self.model.belief(rate, clean)
                if belief.top[1] >= 1 - self.settings.error:
                    break  # what the round already holds may settle it
            candidate = self.model.choose(belief, rate, self._universe)
            picks.append(candidate)
            for i in self.model.alive:
                if self.model.masks[i] & ~candidate == 0:
                    clean[i] += 1
        counts: dict[int, int] = {}
        for candidate in picks:
            counts[candidate] = counts.get(candidate, 0) + 1
        return [Probe(members(c), n) for c, n in counts.items()]

    def _show_base(self, answer: int, rate: float, attempts: int) -> Probe:
        """The probe that best shows the passing side passes: the base, or `answer` again.

        Before a culprit is named, "the passing side fails too" must be as improbable
        as the stated error on the evidence alone (`Hypotheses.base_odds`): each clean
        attempt of the base divides its odds by 1 / (1 - p). While the failures of
        `answer` have never flaked, a further failure of it divides them by about 1 / p
        instead (a deterministic failure is no flaky base's doing), the cheaper
        question for a deterministic failure; its first clean attempt ends that, and
        the base runs until its clean attempts are enough at the rate learned so far.
        """
        base = Probe(frozenset(), attempts)
        if self.model.clean[self.model.masks.index(answer)]:
            return base
        matched, ran = self._measured()
        again = self.model.base_odds(answer, self._rate_from(matched + 1, ran + 1), matched=1)
        if again < self.model.base_odds(answer, rate, clean=1):
            return Probe(members(answer), attempts)
        return base

    def _measure_first(self, belief: Belief, answer: int, rate: float) -> bool:
        """Whether another attempt of the likeliest set, seen failing, saves attempts.

        Its sets one smaller need clean attempts, fewer the higher p is known to be,
        and p rises only with matching failures of sets known to reproduce. A
        deterministic failure seen 5 times is known to fail in at least 43% of
        attempts (99% bound); seen 10 times, 60%: an attempt of the answer that
        fails (as it will) can save more than the attempt. At a rate near the assumed
        minimum it never pays, and this never runs.
        """
        if belief.top[1] < 0.5 or not self._seen_failing(answer):
            return False
        matched, ran = self._known()
        if not ran or (matched == ran and rate >= 0.99):
            return False
        now = self._checks_needed(belief, answer, rate)
        seen = matched / ran
        after = (
            1
            + seen * self._checks_needed(belief, answer, self._rate_from(matched + 1, ran + 1))
            + (1 - seen) * self._checks_needed(belief, answer, self._rate_from(matched, ran + 1))
        )
        return after < now

    def _checks_needed(self, belief: Belief, answer: int, rate: float) -> float:
        """Clean attempts the sets one smaller than `answer` still need at `rate` (about)."""
        mass = dict(belief.ranked)
        top = mass[belief.top[0]]
        share = self.settings.error * top / max(1, bin(answer).count("1"))
        needed = 0.0
        for x in members(answer):
            smaller = answer & ~(1 << x)
            rivals = sum(p for i, p in belief.ranked if self.model.masks[i] & ~smaller == 0)
            if rivals > share:
                needed += math.log(share / rivals) / math.log(1 - rate)
        return needed

    def _issue(self, probes: Sequence[Probe]) -> tuple[Probe, ...]:
        named: list[Probe] = []
        for probe in probes:
            role = self._role(probe.candidate)
            self.roles.setdefault(probe.candidate, role)  # the first role names it in reports
            named.append(Probe(probe.candidate, probe.attempts, probe.stop_after, role))
        self._outstanding = list(named)
        return tuple(named)

    def _role(self, candidate: frozenset[int]) -> Role:
        if candidate == self.full:
            return "failing"
        if not candidate:
            return "base"
        return "search"

    # -- evidence ------------------------------------------------------------

    def _seen_failing(self, candidate: int) -> bool:
        tally = self.tallies.get(members(candidate))
        return tally is not None and tally.matched > 0

    def _known(self) -> tuple[int, int]:
        """(matches, attempts that ran) of the tested sets known to reproduce."""
        failing = [c for c, t in self.tallies.items() if t.matched]
        matched = ran = 0
        for candidate, tally in self.tallies.items():
            if any(f <= candidate for f in failing):
                matched += tally.matched
                ran += tally.ran
        return matched, ran

    def _measured(self) -> tuple[int, float]:
        """(matches, attempts) of the sets that hold the culprits, as far as known.

        The sets known to reproduce (seen failing, or holding one that was) alone run
        high: a set that holds the culprits but happened to stay clean is missing. So
        the attempts of every other tested set count too, in proportion to the belief
        (at the rate of the known sets) that it holds them.
        """
        matched, ran = self._known()
        extra = 0.0
        unknown = [(mask_of(c), t.ran) for c, t in self.tallies.items() if not self._reproduces(c)]
        if matched and unknown:
            belief = self.model.belief(self._rate_from(matched, ran))
            live = [(self.model.masks[i], p) for i, p in belief.ranked if p >= NEGLIGIBLE]
            for candidate, attempts in unknown:
                extra += attempts * sum(p for m, p in live if m & ~candidate == 0)
        return matched, ran + extra

    def _rate_used(self) -> float:
        """p: the assumed minimum, raised to the 99% lower bound of the measured rate."""
        return self._rate_from(*self._measured())

    def _rate_from(self, matched: float, ran: float) -> float:
        low = wilson(matched, ran, z=RATE_Z)[0] if matched else 0.0
        return min(0.99, max(self.settings.min_rate, low))

    def _reproduces(self, candidate: frozenset[int]) -> bool:
        """Seen failing as expected, itself or a set it holds (differences act together)."""
        return any(t.matched and c <= candidate for c, t in self.tallies.items())

    def _clean_evidence(self, candidate: frozenset[int]) -> Tally:
        """The clean attempts of every tested set that holds `candidate` and is not known to
        fail, summed (passes and other failures apart: a set never run itself whose holders
        all failed otherwise does not pass).

        Had `candidate` reproduced, so would each of them.
        """
        held = [t for c, t in self.tallies.items() if c >= candidate and not self._reproduces(c)]
        return Tally(passed=sum(t.passed for t in held), other=sum(t.other for t in held))

    def _rate_attempts(self) -> int:
        """How long the failing configuration runs before a miss is read as "it does not
        fail here": `rate_attempts`, or more where `min_rate` is low, as many as make a miss
        at that rate less likely than `error` (`next_probes` counts them in passes before
        the first match, and only where it passed more than it failed otherwise:
        `Tally.seek_short`, minimize's rule too). 20
        attempts miss a 5% failure 36% of the time, and refused one that `--min-rate 0.05`
        had said to look for. The question bisect asks of its bad end
        (core.rates.attempts_to_see), at isolate's error itself (bisect's a fifth of it:
        bisect/search.py says why)."""
        s = self.settings
        return max(s.rate_attempts, attempts_to_see(s.min_rate, s.error))

    def _refusal(self) -> str:
        """Why the failing configuration reproduces too rarely to isolate within the budget."""
        s = self.settings
        tally = self.tallies.get(self.full, Tally())
        figure = f"{tally.matched}/{tally.ran}"
        if tally.matched == 0:
            return tally.missed_at(
                "the failing configuration", "isolate", s.min_rate, "IsolateOptions"
            )
        # A projection, not a verdict: the cheapest isolation finds one culprit (a
        # failure per halving, 1/p attempts each), then the clean attempts that make the
        # base unlikely. At the rate's optimistic end (95% upper bound): one early match
        # says little, and a real rate of 0.3 often starts 1/10.
        low, high = wilson(tally.matched, tally.ran)
        shown_low, shown_high = interval_bounds(low, high, digits=0, percent=True)
        halvings = math.log2(self.count)
        projected = math.ceil(halvings / high + clean_needed_at(high, s.error))
        left = s.budget - self.used
        if projected <= left:
            return ""
        # Every attempt failed as expected: the budget is short, not the rate.
        why = (
            "the budget is too small to isolate"
            if tally.matched == tally.ran
            else "the failing configuration reproduces too rarely to isolate within the budget"
        )
        return (
            f"{why}: {figure} attempts ({shown_low}-{shown_high}); even at {shown_high} "
            f"isolating one of {plural(self.count, 'difference')} "
            f"takes about {plural(projected, 'attempt')}, and {left} of the budget of "
            f"{s.budget} {agree(left, 'is', 'are')} left "
            f"({argument('--budget', 'budget', str(self.used + projected))} at the least)"
        )

    # -- the answer ----------------------------------------------------------

    def _evidence(
        self, candidate: frozenset[int], belief: Belief, role: Role | None = None
    ) -> Candidate | None:
        tally = self.tallies.get(candidate)
        if tally is None and role is None:
            return None  # untested: only the named rows (base, one smaller) show such sets
        decided: bool | None = True
        if not self._reproduces(candidate):
            inside = self.model.inside(belief, mask_of(candidate))
            decided = False if inside <= self.settings.error else None
        clean = self._clean_evidence(candidate)
        return Candidate(
            tuple(sorted(candidate)),
            role or self.roles.get(candidate, "search"),
            tally or Tally(),
            decided,
            clean.clean,
            clean.other,
        )

    def _finish_budget(self) -> None:
        budget = f"the budget of {plural(self.settings.budget, 'attempt')} ran out before"
        full = self.tallies.get(self.full, Tally())
        if not self._searching and not full.matched and full.ran:
            # Spent in the rate phase (a low min_rate's long one) before any failure: no
            # answer is near, and what the answer is was never the question yet.
            self._finish_undecided(
                "budget",
                f"{budget} the failing configuration failed as expected ({full.figure()})",
            )
            return
        self._finish_undecided("budget", f"{budget} the answer was sure")

    def _finish_undecided(self, status: Status, why: str) -> None:
        reproducing = [c for c, t in self.tallies.items() if t.matched]
        # None seen failing yet (stopped in the rate phase): no set is named as seen failing,
        # where the failing cell was, beside a table row of 0 attempts.
        smallest = min(reproducing, key=lambda c: (len(c), sorted(c)), default=frozenset())
        self._finish(status, tuple(sorted(smallest)), why)

    def _finish(
        self,
        status: Status,
        culprits: tuple[int, ...],
        message: str,
        *,
        budget_spent: bool = False,
    ) -> None:
        matched, ran = self._known()
        if not ran:
            # No set seen failing (refused in the rate phase): the failing configuration
            # holds every difference, so whatever the culprits are its attempts are of a
            # set holding them. Left out, a refusal after 20 clean attempts said
            # "rate 0/0 (0%)", as if none had run.
            full = self.tallies.get(self.full, Tally())
            matched, ran = full.matched, full.ran
        rate = self._rate_used()
        belief = self.model.belief(rate)
        top, probability = belief.top
        chosen = frozenset(culprits)
        isolated = status == "isolated"
        # A guess is the posterior's, said only where attempts back it: with none ended (a
        # stop in the first seconds), the top set's probability is the prior's, and an
        # interrupted search said `best guess: X (99%)` beside a table of 0 attempts.
        # Nor where no attempt failed as expected: the clean attempts of the failing
        # configuration weigh every set alike, and the prior's favourite was named.
        guessed = not isolated and self.used > 0 and any(t.matched for t in self.tallies.values())
        one_smaller: list[Candidate] = []
        for x in culprits if isolated else ():
            evidence = self._evidence(chosen - {x}, belief, "one-smaller")
            assert evidence is not None
            one_smaller.append(evidence)
        self.result = IsolationResult(
            status=status,
            culprits=culprits,
            message=message,
            attempts=self.used,
            rate=rate_of(matched, ran),
            confidence=probability if isolated else 0.0,
            error=self.settings.error,
            min_rate=self.settings.min_rate,
            rate_used=rate,
            max_culprits=self.size,
            failing=self._evidence(self.full, belief, "failing"),
            base=self._evidence(frozenset(), belief, "base"),
            minimal=self._evidence(chosen, belief, "minimal") if isolated else None,
            one_smaller=tuple(one_smaller),
            tested=tuple(e for c in self.tallies if (e := self._evidence(c, belief)) is not None),
            guess=() if not guessed else tuple(sorted(members(self.model.masks[top]))),
            guess_probability=probability if guessed else 0.0,
            pending=self._pending(self.model.masks[top], probability, rate) if guessed else "",
            warnings=self._warnings(*self._measured()),
            budget_spent=budget_spent or status == "budget",
        )

    def _pending(self, answer: int, probability: float, rate: float) -> str:
        """What an unfinished search still had to see of a guess already sure enough
        (next_probes' two checks before `isolated`); "" where it was not sure enough."""
        if probability < 1 - self.settings.error or answer == 0:
            return ""
        if not self._seen_failing(answer):
            return "the best guess has not yet been seen failing by itself"
        odds = self.model.base_odds(answer, rate)
        if odds > self.settings.error:
            return (
                "the passing configuration has not yet passed often enough to rule out that "
                f"it fails too (odds {odds:.3f}, above the error {self.settings.error:g})"
            )
        return ""

    def _warnings(self, matched: int, ran: float) -> tuple[str, ...]:
        if ran and wilson(matched, ran)[1] < self.settings.min_rate:
            return (
                f"the sets holding the culprits reproduced in about {matched}/{ran:.0f} "
                f"attempts, clearly below the assumed minimum rate {self.settings.min_rate:g}: "
                f"the error may be larger than stated; rerun with a lower "
                f"{argument('--min-rate', 'min_rate')} (and a larger "
                f"{argument('--budget', 'budget')})",
            )
        return ()


def _name(candidate: frozenset[int]) -> str:
    return "{" + ", ".join(str(i) for i in sorted(candidate)) + "}"


ProbeRunner = Callable[[Sequence[Probe]], Sequence[tuple[Sequence[AttemptKind], str]]]


def isolate(count: int, run: ProbeRunner, settings: Settings | None = None) -> IsolationResult:
    """Drive an `Isolation` to its end; `run` runs one round of probes (concurrently if it can).

    `run` returns, per probe and in order, the kinds of its attempts and an infra
    error's reason ("" when none).
    """
    iso = Isolation(count, settings or Settings())
    while iso.result is None:
        probes = iso.next_probes()
        if not probes:
            break
        for probe, (kinds, reason) in zip(probes, run(probes), strict=True):
            if iso.result is not None:
                break
            iso.record(probe, kinds, reason)
    assert iso.result is not None
    return iso.result
