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

The search assumes the failure needs a set of differences together (a
conjunction: every configuration holding the culprits fails at the same rate,
every other one passes) and checks its answer against that assumption at the
end. Measured against ddmin and one-difference-at-a-time in
benchmarks/isolate_simulation.py.

1. **Rate.** The failing configuration runs until it fails as expected
   `rate_matches` times (at most `rate_attempts` attempts). No match, or a rate
   too low to isolate within the budget, refuses with the figure (ClusterFuzz
   does the same before it minimizes: "crashes, but not consistently, 1/10").
2. **Chunks** (generalized binary splitting, Hwang 1972, sized for a pair): one
   candidate per chunk leaves that chunk out. Leaving out a chunk without a
   culprit still fails, usually within a few attempts, so failing is the cheap
   verdict and passing the expensive one. Every such chunk is dropped at once
   (a conjunction survives the union of harmless removals).
3. **Bisection** of each chunk that holds a culprit: leave out its first half;
   if that still fails drop it, else keep bisecting the first half. The second
   halves left untested are left out together in one candidate at the end, and
   bisected only if that passes (two culprits in one chunk).
4. **Check** (the one-minimality test of ddmin, "re-check each kept toggle"):
   the set found fails, and each set one difference smaller passes at the
   strict level, on attempts made for the check only: the passes of the search
   are what let a harmless difference in, and must not vouch for it again. A
   difference whose removal still fails is dropped and the check repeats. If
   the set found passes (the failure needs one of several differences, not all),
   the search starts again dropping one chunk at a time.

Flakiness. A candidate fails at its first matching failure: a configuration
that does not reproduce never shows one, so that verdict is never wrong. It
passes after n clean attempts (passes and different failures); infra errors
count neither way. The rate p is measured over every tested configuration that
holds the search's current set (if that set holds the culprits, exactly those
reproduce). Inside the search n = ceil(ln(search_alpha) / ln(1 - p)): the
(1 - p)^n <= alpha rule at the measured p, where a wrong pass costs attempts,
not the answer, since step 4 removes what it let in. For the answer's checks n
is the smallest with E[(1 - p)^n] <= alpha over the Beta(1 + matches, 1 + clean)
posterior of p, so a one-smaller set that does reproduce at the measured rate
passes its check with probability at most alpha however few attempts measured
it. The measured rate runs a little high (a set is kept because it failed
within its window, and the sets that reproduce but stayed clean that long are
missing), which is why alpha is 0.003 and not 0.01: the simulation measures
what that buys (99.5% exact for a pair among 16 toggles at rate 0.3).

Literature: ddmin (Zeller and Hildebrandt, TSE 2002) asks for many passing
verdicts, the expensive kind under flakiness; ProbDD (Wang et al., FSE 2021)
sizes deletions by each element's probability of mattering, which is what
favouring cheap failing verdicts does here; ClusterFuzz refuses to minimize a
testcase that crashes in fewer than half of its retries and ignores crashes
with another state; syzkaller retries candidates a fixed number of times. Group
testing (Hwang; Du and Hwang, Combinatorial Group Testing) gives the chunk size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field

from reprospec.isolation.candidates import (
    AttemptKind,
    Candidate,
    IsolationResult,
    Level,
    Probe,
    Rate,
    Role,
    Settings,
    Status,
    Tally,
    chunk_size,
    clean_needed,
    clean_needed_at,
    clean_probability,
)
from reprospec.rates import wilson

_CHECK_ROLES = ("minimal", "one-smaller")


@dataclass(frozen=True)
class _Question:
    candidate: frozenset[int]
    level: Level
    role: Role


_Answers = Mapping[frozenset[int], bool]
_Plan = Generator[tuple[_Question, ...], _Answers, None]


@dataclass
class Isolation:
    """The search as a state machine: ask `next_probes`, `record` each, until `result` is set."""

    count: int
    settings: Settings = field(default_factory=Settings)

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("nothing to isolate: the configurations do not differ")
        self.full = frozenset(range(self.count))
        self.tallies: dict[frozenset[int], Tally] = {}
        self.roles: dict[frozenset[int], Role] = {}
        self.verdicts: dict[frozenset[int], bool] = {}
        self.used = 0
        self.result: IsolationResult | None = None
        # Attempts made by the answer's checks, apart: their verdicts count nothing else.
        self._checked: dict[frozenset[int], Tally] = {}
        # The search's hypothesis: every difference the failure may need; see _rate.
        self._current = self.full
        self._questions: tuple[_Question, ...] = ()
        self._outstanding: list[Probe] = []
        self._plan: _Plan = self._search()
        self._started = False
        self._infra_reason = ""

    # -- the protocol --------------------------------------------------------

    def next_probes(self) -> tuple[Probe, ...]:
        """The probes to run now, independent of each other; () once `result` is set."""
        if self._outstanding:
            raise RuntimeError("record every probe of the last round first")
        while self.result is None:
            pending = [q for q in self._questions if self._decided(q) is None]
            if pending:
                probes = self._probes_for(pending)
                if not probes:
                    self._finish_budget()
                    break
                self._outstanding = list(probes)
                return probes
            answers = {q.candidate: bool(self._decided(q)) for q in self._questions}
            self.verdicts.update(answers)
            try:
                self._questions = self._plan.send(answers) if self._started else next(self._plan)
            except StopIteration:
                if self.result is None:  # pragma: no cover - every path of the plan finishes
                    raise RuntimeError("the search ended without a result") from None
            self._started = True
        return ()

    def interrupt(self) -> None:
        """Stop here (Ctrl-C): the result says so and names the smallest set seen failing."""
        if self.result is None:
            self._outstanding.clear()
            self._finish_smallest("interrupted", "interrupted before the answer was checked")

    def record(self, probe: Probe, kinds: Sequence[AttemptKind], infra_reason: str = "") -> None:
        """What the attempts of `probe` did, in order (more than asked is fine: -j overshoots)."""
        self._outstanding.remove(probe)
        tally = self.tallies.get(probe.candidate, Tally()).add(kinds)
        self.tallies[probe.candidate] = tally
        if probe.role in _CHECK_ROLES:
            self._checked[probe.candidate] = self._checked.get(probe.candidate, Tally()).add(kinds)
        self.used += len(kinds)
        if infra_reason:
            self._infra_reason = infra_reason
        streak = 0
        for kind in reversed(kinds):
            if kind != "infra":
                break
            streak += 1
        if streak and streak == len(kinds) and tally.infra >= self.settings.max_infra:
            self._outstanding.clear()
            self._finish(
                "infra-error",
                (),
                f"candidate {_name(probe.candidate)} could not run ({tally.infra} attempts): "
                f"{self._infra_reason or 'infra error'}",
            )

    # -- verdicts ------------------------------------------------------------

    def _rate(self) -> tuple[int, int]:
        """(matches, clean attempts) of every tested set that holds the current set.

        If the current set holds the culprits, exactly the sets that hold it reproduce,
        and all their attempts sample the rate, clean ones included.
        """
        matched = clean = 0
        for candidate, tally in self.tallies.items():
            if candidate >= self._current:
                matched += tally.matched
                clean += tally.clean
        return matched, clean

    def _needed(self, level: Level) -> int:
        """Clean attempts a passing verdict needs at this level (see the module doc)."""
        matched, clean = self._rate()
        if level == "final":
            return clean_needed(matched, clean, self.settings.alpha)
        return clean_needed_at((matched + 1) / (matched + clean + 2), self.settings.search_alpha)

    def _decided(self, q: _Question) -> bool | None:
        """True: reproduces; False: passes at the question's level; None: needs more attempts."""
        tally = self.tallies.get(q.candidate, Tally())
        if q.level == "rate":
            s = self.settings
            done = tally.matched >= s.rate_matches or tally.ran >= s.rate_attempts
            return bool(tally.matched) if done else None
        if self._reproduces(q.candidate):
            return True
        return (
            False if self._clean_evidence(q.candidate, q.level) >= self._needed(q.level) else None
        )

    def _reproduces(self, candidate: frozenset[int]) -> bool:
        """Seen failing as expected, itself or a set it holds (differences act together)."""
        return any(t.matched and c <= candidate for c, t in self.tallies.items())

    def _clean_evidence(self, candidate: frozenset[int], level: Level) -> int:
        """Clean attempts that speak against `candidate` reproducing.

        Those of every tested set that holds `candidate` and is not known to fail: had
        `candidate` reproduced, so would each of them. The answer's checks count only the
        attempts made for the checks.
        """
        pool = self._checked if level == "final" else self.tallies
        return sum(t.clean for c, t in pool.items() if c >= candidate and not self._reproduces(c))

    def _probes_for(self, pending: Sequence[_Question]) -> tuple[Probe, ...]:
        left = self.settings.budget - self.used
        probes: list[Probe] = []
        for q in pending:
            if left <= 0:
                break
            tally = self.tallies.get(q.candidate, Tally())
            if q.level == "rate":
                want = self.settings.rate_attempts - tally.ran
                stop = self.settings.rate_matches - tally.matched
            else:
                want = self._needed(q.level) - self._clean_evidence(q.candidate, q.level)
                want, stop = min(want, self.settings.step), 1
            want = min(want, left)
            left -= want
            probes.append(Probe(q.candidate, want, stop, q.role))
        return tuple(probes)

    # -- the search ----------------------------------------------------------

    def _ask(self, *questions: _Question) -> tuple[_Question, ...]:
        for q in questions:
            self.roles.setdefault(q.candidate, q.role)  # the first role names it in reports
        return questions

    def _search(self) -> _Plan:
        yield self._ask(_Question(self.full, "rate", "failing"))
        refusal = self._refusal()
        if refusal:
            self._finish("refused", (), refusal)
            return
        yield from self._narrow(self.full, compose=True)

    def _narrow(self, start: frozenset[int], compose: bool) -> _Plan:
        """Steps 2 and 3 from `start` (a set seen failing), then step 4."""
        current = self._move(start)
        order = sorted(current)
        size = self.settings.chunk or chunk_size(len(order))
        chunks = [frozenset(order[i : i + size]) for i in range(0, len(order), size)]
        holding = chunks  # groups that hold a culprit, tested or inferred
        if len(chunks) > 1:
            answers = yield self._ask(*(self._without(current, c) for c in chunks))
            holding = [c for c in chunks if not answers[current - c]]
            harmless = [c for c in chunks if answers[current - c]]
            current, needed = yield from self._drop(current, harmless, compose)
            holding += needed
        unsure: list[frozenset[int]] = []  # halves left untested beside a half that holds one
        while True:
            while any(len(g) > 1 for g in holding):
                split = [_halves(g) for g in holding if len(g) > 1]
                answers = yield self._ask(*(self._without(current, first) for first, _ in split))
                next_holding = [g for g in holding if len(g) == 1]
                harmless = []
                for first, rest in split:
                    if answers[current - first]:
                        harmless.append(first)
                        next_holding.append(rest)  # the group holds one and `first` does not
                    else:
                        next_holding.append(first)
                        unsure.append(rest)  # may hold a second one: settled below, together
                current, needed = yield from self._drop(current, harmless, compose)
                holding = next_holding + needed
            if not unsure:
                break
            rest = frozenset().union(*unsure)
            answers = yield self._ask(self._without(current, rest))
            if answers[current - rest]:
                current = self._move(current - rest)
                break
            answers = yield self._ask(*(self._without(current, g) for g in unsure))
            harmless = [g for g in unsure if answers[current - g]]
            holding += [g for g in unsure if not answers[current - g]]
            unsure = []
            current, needed = yield from self._drop(current, harmless, compose)
            holding += needed
        yield from self._check(current, start, compose)

    def _drop(
        self, current: frozenset[int], harmless: list[frozenset[int]], compose: bool
    ) -> Generator[tuple[_Question, ...], _Answers, tuple[frozenset[int], list[frozenset[int]]]]:
        """Leave out groups whose removal alone still fails; returns (current, groups needed).

        With `compose` they go all at once, untested: a conjunction survives that, and
        step 4 tests the result. Otherwise each further group is tested on what is left.
        """
        if compose or len(harmless) <= 1:
            return self._move(current - frozenset().union(*harmless)), []
        needed: list[frozenset[int]] = []
        for i, group in enumerate(harmless):
            if i > 0:
                answers = yield self._ask(self._without(current, group))
                if not answers[current - group]:
                    needed.append(group)
                    continue
            current = self._move(current - group)  # the first was tested on this very set
        return current, needed

    def _check(self, current: frozenset[int], start: frozenset[int], composed: bool) -> _Plan:
        """Step 4: `current` must fail and every one-smaller set must pass, strictly."""
        while True:
            # The set found fails at once if the search was right; if not, the search's
            # level suffices to start again.
            questions = [_Question(current, "search", "minimal")]
            questions += [_Question(current - {x}, "final", "one-smaller") for x in sorted(current)]
            answers = yield self._ask(*questions)
            if not answers[current]:
                if composed:
                    # Groups harmless one by one were not harmless together: the failure
                    # needs one of several differences. Again, one group at a time.
                    yield from self._narrow(start, compose=False)
                else:
                    self._finish(
                        "inconclusive",
                        tuple(sorted(current)),
                        "the smallest failing set found stopped failing: the failure does not "
                        "follow these differences",
                    )
                return
            removable = [x for x in sorted(current) if answers[current - {x}]]
            if not removable:
                break
            if not composed:
                removable = removable[:1]
            current = self._move(current - frozenset(removable))
        if not current:
            self._finish("base-reproduces", (), "the passing configuration fails the same way")
            return
        self._finish("isolated", tuple(sorted(current)), "")

    def _without(self, current: frozenset[int], group: frozenset[int]) -> _Question:
        return _Question(current - group, "search", "search")

    def _move(self, current: frozenset[int]) -> frozenset[int]:
        self._current = current
        return current

    def _refusal(self) -> str:
        """Why the failing configuration reproduces too rarely to isolate within the budget."""
        s = self.settings
        tally = self.tallies.get(self.full, Tally())
        figure = f"{tally.matched}/{tally.ran}"
        if tally.matched == 0:
            return (
                f"the failing configuration did not fail as expected in {tally.ran} attempts "
                f"({figure}); nothing to isolate"
            )
        matched, clean = self._rate()
        rate = (matched + 1) / (matched + clean + 2)
        # A projection, not a verdict: at the rate measured so far.
        strict = clean_needed_at(rate, s.alpha)
        loose = clean_needed_at(rate, s.search_alpha)
        fail_cost = min(1 / rate, loose)
        # The cheapest isolation: one culprit, a bisection whose steps pass or fail
        # equally often, then its check.
        steps = math.ceil(math.log2(self.count)) if self.count > 1 else 0
        projected = math.ceil(steps * (loose + fail_cost) / 2 + strict + fail_cost)
        left = s.budget - self.used
        if projected > left:
            low, high = wilson(tally.matched, tally.ran)
            return (
                f"the failing configuration reproduces too rarely to isolate within the budget: "
                f"{figure} attempts ({low:.0%}-{high:.0%}); a passing check needs {strict} clean "
                f"attempts at that rate, isolating {self.count} difference"
                f"{'s' if self.count != 1 else ''} at least about {projected} attempts, and "
                f"{left} of the budget of {s.budget} are left"
            )
        return ""

    # -- the answer ----------------------------------------------------------

    def _evidence(self, candidate: frozenset[int], role: Role | None = None) -> Candidate | None:
        tally = self.tallies.get(candidate)
        if tally is None and role != "one-smaller":
            return None
        decided = True if self._reproduces(candidate) else self.verdicts.get(candidate)
        level: Level = "final" if role in _CHECK_ROLES or role == "failing" else "search"
        return Candidate(
            tuple(sorted(candidate)),
            role or self.roles.get(candidate, "search"),
            tally or Tally(),
            decided,
            self._clean_evidence(candidate, level),
        )

    def _finish_budget(self) -> None:
        self._finish_smallest(
            "budget",
            f"the budget of {self.settings.budget} attempts ran out before the answer was checked",
        )

    def _finish_smallest(self, status: Status, why: str) -> None:
        reproducing = [c for c, t in self.tallies.items() if t.matched]
        smallest = min(reproducing, key=lambda c: (len(c), sorted(c)), default=self.full)
        self._finish(
            status,
            tuple(sorted(smallest)),
            f"{why}; the smallest set seen failing is {_name(smallest)}",
        )

    def _finish(self, status: Status, culprits: tuple[int, ...], message: str) -> None:
        matched, clean = self._rate()
        low, high = wilson(matched, matched + clean)
        chosen = frozenset(culprits)
        one_smaller: list[Candidate] = []
        confidence = 0.0
        if status == "isolated":
            confidence = 1.0
            for x in culprits:
                evidence = self._evidence(chosen - {x}, "one-smaller")
                assert evidence is not None
                one_smaller.append(evidence)
                confidence -= clean_probability(matched, clean, evidence.clean_evidence)
            confidence = max(0.0, confidence)
        self.result = IsolationResult(
            status=status,
            culprits=culprits,
            message=message,
            attempts=self.used,
            rate=Rate(matched, matched + clean, low, high),
            confidence=confidence,
            clean_needed=clean_needed(matched, clean, self.settings.alpha),
            alpha=self.settings.alpha,
            failing=self._evidence(self.full, "failing"),
            base=self._evidence(frozenset(), "base"),
            minimal=self._evidence(chosen, "minimal") if status == "isolated" else None,
            one_smaller=tuple(one_smaller),
            tested=tuple(e for c in self.tallies if (e := self._evidence(c)) is not None),
        )


def _halves(group: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    order = sorted(group)
    middle = len(order) // 2
    return frozenset(order[:middle]), frozenset(order[middle:])


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
