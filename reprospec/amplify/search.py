"""Which perturbation makes a rare failure frequent: a best-arm search over failure rates.

Pure logic: no processes, no files. Each *arm* is one perturbation setting (the
base, a perturbation alone, or the best ones combined); an executor runs a
`Probe` (some attempts of one arm) and hands back what each attempt did: `match`
(the spec's own failure), `pass`, `other` (a different failure: not the bug, so
it does not count, but it is reported) or `infra` (could not run: a perturbation
this machine cannot apply).

    search = Amplification(arms, Settings(budget=300, step=4))
    while search.result is None:
        for probe in search.next_probes():
            search.record(probe, run(probe))     # e.g. ("pass", "match", "other")
    search.result.best

Why a bandit and not a fixed sweep: at a base rate of 2%, a fixed 30 attempts
per perturbation spends most of its budget confirming that the useless ones are
useless. The rule is LUCB (Kalyanakrishnan et al., ICML 2012), the
best-arm-identification form of "spend attempts where the upper confidence
bound of the failure rate is highest":

1. **First attempts.** The base, then each perturbation alone, gets `first`
   attempts (no bound means anything before some attempts).
2. **Combination.** Once every single perturbation has its first attempts, the
   ones clearly above the base (each amplified: its lower bound above the base's
   upper bound) are combined, the best `combine` of them, into one more arm: two
   perturbations that each help often help more together (a thread race wants
   both a short switch interval and one CPU), and sometimes they cancel, which
   the arm then measures.
3. **Allocation.** Each round goes half to the *leader* (the highest observed
   rate; with two bases, below, the highest above its own base) and half to the
   *challenger* (the highest Wilson 95% upper bound among the others): the
   leader's interval narrows from below while the arm most likely to beat it is
   tried.
4. **Stop.** When the leader's lower bound reaches every other arm's upper
   bound, less `epsilon`: the best setting is established. Or when the budget
   is spent: then the answer says which arms it could not tell apart.

The answer is *amplified* when the best arm is a perturbation whose lower bound
lies above the base's upper bound: the gain is not noise, whatever else is
undecided. An arm whose attempts all could not run is dropped with its reason.

**Two bases.** An arm marked `fresh` starts its attempts another way than the base
(under run.preload the base forks from a preloaded server, and a perturbation only a
process's start applies, `malloc`, runs fresh): its gain over the base could be the
start's, not the perturbation's. So where a single arm is fresh, a second base,
`base (fresh)`, the spec as written started as those arms are, joins at arm 1, and each
fresh arm (a combined one holding a fresh perturbation too) is judged against it: in
`above_base`, the combination, the stop and the answer. It is a reference, never a
candidate (not the leader, not a challenger), measured as the base is (its first
attempts, after the singles', and one attempt a round while a fresh leader is not above
it, or while a fresh arm and a forked one are compared by their gains, below, and it has
fewer attempts than the fresh one) and only while a fresh arm is live; never in the base's
first round, so that where the base's attempts turn out to run fresh too
(`base_runs_fresh`: run.preload asked of a command no fork can run, a runner that does not
fork, a server that could not import) it is dropped before it spent an attempt measuring
the base again. One that fails every one of its first attempts is measured on as the base
is (step 1, to FREQUENT_ATTEMPTS while it keeps failing); once its lower bound reaches
FREQUENT, no fresh arm can be clearly above it, and the fresh arms are measured no more
(the answer's note says why).

With two bases the arms are ranked like with like, each by how far it stands above its
own base (`standing`: its rate less its base's, the base's own 0): a fresh start that fails
more often by itself lifts a fresh arm's rate and its base's alike, and a fresh arm ranked
by its rate among forked ones was "best" for the start's sake. Two arms judged against one
base are compared by their rates as ever (the same base subtracted from both); a fresh arm
and a forked one by their gains, each gain's bounds its own bound less its base's other
bound (`_reach`): the leader is established over such an arm once its gain's lower bound
reaches the other's upper bound. The combination takes the best so ranked. Without a fresh
arm the ranking is the rates'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from reprospec.core.caller import argument
from reprospec.core.frozen import frozen
from reprospec.core.rates import clearly_more, rate_of
from reprospec.core.results import Rate
from reprospec.core.words import plural
from reprospec.isolation.candidates import AttemptKind, Tally

Status = Literal[
    "amplified",  # a perturbation's rate lies wholly above the base's
    "not-amplified",  # the search ended and no perturbation is clearly above the base
    "infra-error",  # the base itself could not run
    "interrupted",
]
ArmRole = Literal["base", "single", "combined"]
# One perturbation field and its value as the spec writes it (`switch_interval`, 1e-06).
Setting = tuple[str, object]


@frozen
class Arm:
    """A perturbation setting: () is the base (the spec as written)."""

    settings: tuple[Setting, ...] = ()
    role: ArmRole = "base"
    # Its attempts start fresh where the base's fork (the caller says which: driver.py);
    # judged against the base started alike, `base (fresh)`.
    fresh: bool = False

    @property
    def label(self) -> str:
        """`switch_interval=1e-06 + cpus=1`, or `base` (`base (fresh)`)."""
        if not self.settings:
            return "base (fresh)" if self.fresh else "base"
        return " + ".join(f"{name}={_shown(value)}" for name, value in self.settings)

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.settings)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(v) for v in value)
    return str(value)


# A base whose 95% interval lies at or above this is no rare failure; FREQUENT_ATTEMPTS
# matching attempts in a row show it (n / (n + 1.96^2) >= 0.9).
FREQUENT = 0.9
FREQUENT_ATTEMPTS = 35


@frozen
class Settings:
    """The budget and the stopping rule of one amplification."""

    budget: int = 300  # attempts in all, infra errors included
    first: int = 8  # attempts every arm gets before the arms are compared
    step: int = 4  # attempts per round (at least -j: they run at once)
    epsilon: float = 0.05  # the leader is established within this much of any other arm
    precision: float = 0.1  # ...or once its own interval is no wider than +/- this
    combine: int = 3  # at most this many perturbations in the combined arm
    max_infra: int = 2  # attempts of an arm that could not run before it is dropped

    def __post_init__(self) -> None:
        if self.budget < 1 or self.first < 1 or self.step < 1:
            raise ValueError("budget, first and step must be >= 1")
        if not 0 <= self.epsilon < 1:
            raise ValueError("epsilon must be in [0, 1)")


@frozen
class Probe:
    """Run `attempts` attempts of arm number `arm`."""

    arm: int
    attempts: int


@frozen
class ArmResult:
    """One arm's evidence: its matching rate, what else it did, why it could not run."""

    arm: Arm
    rate: Rate  # matching failures over attempts that ran
    tally: Tally
    others: tuple[tuple[str, int], ...] = ()  # different failures: (phrase, count)
    infra_reason: str = ""

    @property
    def dropped(self) -> bool:
        return self.tally.ran == 0 and self.tally.infra > 0


@frozen
class AmplifyResult:
    """The answer: the best arm (None: the base stays best), every arm's evidence."""

    status: Status
    arms: tuple[ArmResult, ...]
    best: int | None  # index into arms; None when nothing beats the base
    established: bool  # the leader's interval separates it from every other arm
    used: int
    note: str = ""
    # The budget ended the search (not an established leader, nor an interruption): the
    # same command with a larger --budget goes on from here.
    budget_spent: bool = False

    @property
    def base(self) -> ArmResult:
        return self.arms[0]

    def standing(self, arm: ArmResult) -> tuple[float, float]:
        """How far `arm` stands above the base it was judged against (search.py
        `standing`): what ranks the arms, like with like."""
        return standing(arm.rate, self.base_for(arm).rate)

    def base_for(self, arm: ArmResult) -> ArmResult:
        """The base `arm` was judged against: `base (fresh)` for a fresh arm, where there
        is one, else the base."""
        if arm.arm.fresh and arm.arm.settings:
            for other in self.arms:
                if other.arm.role == "base" and other.arm.fresh:
                    return other
        return self.base

    @property
    def winner(self) -> ArmResult | None:
        return None if self.best is None else self.arms[self.best]

    @property
    def undecided_with(self) -> tuple[ArmResult, ...]:
        """The arms whose upper bound still reaches the winner's lower bound (an arm judged
        against the other base: its gain's upper bound the winner's gain's lower bound)."""
        if self.best is None:
            return ()
        winner = self.arms[self.best]
        theirs = self.base_for(winner)

        def reach(arm: ArmResult) -> float:
            own = self.base_for(arm)
            high = arm.rate.high
            return high if own is theirs else across(high, own.rate, theirs.rate)

        return tuple(
            a
            for i, a in enumerate(self.arms)
            if i != self.best
            and a.arm.settings
            and not a.dropped
            and reach(a) > winner.rate.low
            # (a fresh arm beside a frequent fresh base was measured no more: none can win)
            and self.base_for(a).rate.low < FREQUENT
        )


def standing(rate: Rate, base: Rate) -> tuple[float, float]:
    """How far an arm stands above its own base, what ranks the arms (module docstring):
    its rate and its lower bound, each less the base's observed rate. Arms of one base rank
    as their rates do."""
    return rate.value - base.value, rate.low - base.value


def across(high: float, own: Rate, theirs: Rate) -> float:
    """An upper bound `high` of an arm judged against base `own`, on the scale of an arm
    judged against base `theirs`: its gain's upper bound (`high` less `own`'s lower bound)
    over `theirs`' upper bound, so that the other arm's lower bound reaches it only where
    its gain's lower bound reaches this arm's gain's upper bound."""
    return high - own.low + theirs.high


@dataclass
class Amplification:
    """The search as a state machine: ask `next_probes`, `record` each, until `result` is set.

    `singles` are the perturbations to try alone; arm 0 is always the base, and arm 1
    `base (fresh)` where a single is `fresh` (the module's docstring: two bases).
    """

    singles: Sequence[Arm]
    settings: Settings = field(default_factory=Settings)

    def __post_init__(self) -> None:
        singles = [Arm(a.settings, "single", a.fresh) for a in self.singles]
        fresh = [Arm((), "base", fresh=True)] if any(a.fresh for a in singles) else []
        self.arms: list[Arm] = [Arm(), *fresh, *singles]
        self.fresh_base: int | None = 1 if fresh else None
        labels = [a.label for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError("the same perturbation is given twice")
        self.tallies: list[Tally] = [Tally() for _ in self.arms]
        self.others: list[Counter[str]] = [Counter() for _ in self.arms]
        self.reasons: list[str] = ["" for _ in self.arms]
        self.used = 0
        self.combined = False
        self.result: AmplifyResult | None = None

    def base_runs_fresh(self) -> bool:
        """The base's attempts ran fresh too (module docstring: two bases): every arm starts
        as the base does, so `base (fresh)` is dropped and the fresh arms are judged against
        the base. Called between rounds (the arms after it are renumbered); False where it
        is measured already (kept) or there is none."""
        arm = self.fresh_base
        if arm is None or self.tallies[arm].attempts:
            return False
        for kept in (self.arms, self.tallies, self.others, self.reasons):
            del kept[arm]
        self.arms = [replace(a, fresh=False) for a in self.arms]
        self.fresh_base = None
        return True

    # -- what the search believes ------------------------------------------------------

    def rate(self, arm: int, extra_clean: int = 0) -> Rate:
        """The arm's matching rate over the attempts that ran (plus `extra_clean` imagined)."""
        tally = self.tallies[arm]
        return rate_of(tally.matched, tally.ran + extra_clean)

    def live(self) -> list[int]:
        """The arms still compared (not dropped for infra errors); `base (fresh)` only while
        a fresh arm is, and none of the fresh ones once it fails too often to be beaten."""
        live = [i for i in range(len(self.arms)) if not self._dropped(i)]
        if self._fresh_frequent():
            return [i for i in live if not self.arms[i].fresh]
        needed = any(self.arms[i].fresh and self.arms[i].settings for i in live)
        return [i for i in live if needed or i != self.fresh_base]

    def _candidates(self) -> list[int]:
        """The live arms that may be the best: all but `base (fresh)`, a reference only."""
        return [i for i in self.live() if i != self.fresh_base]

    def base_of(self, arm: int) -> int:
        """The base `arm` is judged against: `base (fresh)` for a fresh arm, else arm 0."""
        if self.fresh_base is not None and self.arms[arm].fresh:
            return self.fresh_base
        return 0

    def _fresh_frequent(self) -> bool:
        """`base (fresh)` fails in at least FREQUENT of its attempts (95% confidence): no
        fresh arm can be clearly above it."""
        return self.fresh_base is not None and self.rate(self.fresh_base).low >= FREQUENT

    def _always(self, arm: int) -> bool:
        """A base (either) that failed every one of at least its first attempts."""
        tally = self.tallies[arm]
        return tally.ran >= self.settings.first and tally.matched == tally.ran

    def _dropped(self, arm: int) -> bool:
        tally = self.tallies[arm]
        return tally.ran == 0 and tally.infra >= self.settings.max_infra

    def leader(self) -> int:
        """The live arm that stands highest above its own base (`standing`: without a fresh
        arm, the highest observed rate; ties: the higher lower bound, then the earlier)."""
        return max(
            self._candidates(),
            key=lambda i: (*standing(self.rate(i), self.rate(self.base_of(i))), -i),
        )

    def challenger(self, leader: int, pending: dict[int, int] | None = None) -> int | None:
        """The live arm other than `leader` whose upper bound comes nearest to beating it.

        The base is held to its upper bound itself, the others to it less epsilon: the
        gain over the base must be clear, a tie between two perturbations need not be.
        """
        pending = pending or {}
        others = [i for i in self._candidates() if i != leader]
        if not others:
            return None
        return max(others, key=lambda i: (self._reach(i, leader, pending.get(i, 0)), -i))

    def above_base(self, arm: int) -> bool:
        """The arm fails clearly more often than its base (`base_of`): its lower bound above
        the base's upper bound (core/rates.py `clearly_more`, as minimize and compare judge)."""
        return clearly_more(self.rate(arm), self.rate(self.base_of(arm)))

    def _reach(self, arm: int, leader: int, extra_clean: int = 0) -> float:
        """The upper bound `leader`'s lower bound must reach to be above `arm`, on the
        leader's scale (module docstring: an arm of the other base by its gain, `across`);
        the base itself, beside a fresh leader, is the fresh base."""
        own, theirs = self.base_of(arm), self.base_of(leader)
        if arm == 0:
            return self.rate(theirs, extra_clean if theirs == 0 else 0).high
        high = self.rate(arm, extra_clean).high - self.settings.epsilon
        if own == theirs:
            return high
        return across(high, self.rate(own), self.rate(theirs))

    def established(self) -> bool:
        """The leader is clearly above the base, and its rate is known.

        Known: its lower bound reaches every other arm's upper bound less epsilon, or its
        interval is no wider than 2 x `precision` (two arms equally good are not told
        apart at any cost; the answer names the ones it could not separate).
        """
        leader = self.leader()
        if self.tallies[leader].matched == 0:
            return False
        if leader != 0 and not self.above_base(leader):
            return False
        rate = self.rate(leader)
        challenger = self.challenger(leader)
        if challenger is None or rate.low >= self._reach(challenger, leader):
            return True
        return leader != 0 and (rate.high - rate.low) / 2 <= self.settings.precision

    # -- the protocol --------------------------------------------------------------

    def next_probes(self) -> list[Probe]:
        """The next round: attempts for the arms that need them; [] once `result` is set."""
        if self.result is not None:
            return []
        if self._dropped(0):
            # The base could not run (no interpreter, no command): no arm can tell anything,
            # and running each of them first only spent the budget (then "not amplified").
            self._finish(established=False, infra=True)
            return []
        left = self.settings.budget - self.used
        if left <= 0:
            # The last round may have established the leader: the rule's own stop, reached
            # with the budget's last attempt. Read as spent, a winner clearly above the only
            # other arm, the base, was "not established: (no arm) may be as good". Only
            # where the rule itself reaches its stop: every arm measured (step 1) and the
            # combination, if any, added (step 2); else 8/8 beside a 0/4 arm was
            # "established" over an arm the rule had not yet compared.
            pending = not self.combined and self._combination() is not None
            done = not self._first_wants(self.settings.step) and not pending
            done = done and self.established()
            self._finish(established=done, budget_spent=not done)
            return []
        base = self.rate(0)
        if base.low >= FREQUENT:
            # 74/74 of the base, then 180 attempts to say "not amplified": a failure seen in
            # at least 90% of attempts (95% confidence) is frequent already.
            self._finish(
                established=False,
                note=f"the base already fails in {base.matched}/{base.attempts} attempts (at "
                f"least {FREQUENT:.0%}): amplify is for a rarer failure",
            )
            return []
        step = min(self.settings.step, left)
        # 1. First attempts, the base first: every arm is measured before any is compared.
        wants = self._first_wants(step)
        if wants:
            return self._probes(wants)
        if self.tallies[0].ran == 0:
            self._finish(established=False, infra=True)
            return []
        # 2. The combination of the perturbations clearly above the base, once there are two.
        if not self.combined:
            arm = self._combination()
            if arm is not None:
                self.combined = True
                self.arms.append(arm)
                self.tallies.append(Tally())
                self.others.append(Counter())
                self.reasons.append("")
                return self.next_probes()
        # 4. Stop when the leader is established.
        if self.established():
            self._finish(established=True)
            return []
        # 3. Half to the leader, half to the challenger (which is re-chosen as if the
        #    attempts already given to it came back clean: a wide arm does not take all).
        leader = self.leader()
        wants = {leader: (step + 1) // 2}
        if leader != 0 and step > 1 and not self.above_base(leader):
            # The gain over the base is the claim: keep measuring the base (`base (fresh)`
            # for a fresh leader).
            wants[self.base_of(leader)] = 1
        for _ in range(step - sum(wants.values())):
            others = {k: v for k, v in wants.items() if k != leader}
            challenger = self.challenger(leader, others)
            if challenger is None:
                wants[leader] += 1
            else:
                wants[challenger] = wants.get(challenger, 0) + 1
        self._across_to_fresh_base(leader, wants)
        return self._probes(wants)

    def _across_to_fresh_base(self, leader: int, wants: dict[int, int]) -> None:
        """Where the leader and a challenger are of different bases, they are told apart by
        their gains, and a fresh arm's gain is as uncertain as `base (fresh)`'s rate: one of
        the challenger's attempts goes to that base while it has fewer than the fresh arm."""
        fresh_base = self.fresh_base
        if fresh_base is None or fresh_base in wants:
            return
        theirs = self.base_of(leader)
        for arm in sorted(wants):
            if arm in (0, leader) or self.base_of(arm) == theirs:
                continue
            fresh = leader if theirs == fresh_base else arm
            if self.tallies[fresh_base].attempts < self.tallies[fresh].attempts:
                wants[arm] -= 1
                wants[fresh_base] = 1
            return

    def record(
        self,
        probe: Probe,
        kinds: Sequence[AttemptKind],
        others: Sequence[str] = (),
        reason: str = "",
    ) -> None:
        """What `probe`'s attempts did; `others`: a phrase per `other` attempt (the report's)."""
        if self.result is not None:
            return
        self.tallies[probe.arm] = self.tallies[probe.arm].add(kinds)
        self.others[probe.arm].update(others)
        self.used += len(kinds)
        if reason:
            self.reasons[probe.arm] = reason
        if len(kinds) < probe.attempts and "infra" not in kinds:
            # Fewer attempts came back than were asked: the run was stopped.
            self.interrupt()

    def interrupt(self) -> None:
        """Stopped from outside (Ctrl-C): the answer so far."""
        if self.result is None:
            self._finish(established=False, interrupted=True)

    # -- internals -----------------------------------------------------------------

    def _first_wants(self, step: int) -> dict[int, int]:
        """Step 1's attempts for a round of `step` (empty once every arm has had them).

        A base that failed every one of them is measured on, while it keeps failing, to
        FREQUENT_ATTEMPTS (the fewest that show 90%): then nothing is left to amplify, and
        the first clean attempt sends the search on (a base at 80% does so by then, but
        for 0.8^35, one search in 2,500). `base (fresh)` likewise, for the fresh arms.
        """
        wants: dict[int, int] = {}
        # `base (fresh)` last: a fresh arm that cannot run at all needs no base.
        live = self.live()
        order = [i for i in live if i != self.fresh_base] + [
            i for i in live if i == self.fresh_base
        ]
        for i in order:
            if i == self.fresh_base and 0 in wants:
                break  # not in the base's first round (module docstring: two bases)
            always = i in (0, self.fresh_base) and self._always(i)
            first = FREQUENT_ATTEMPTS if always else self.settings.first
            need = first - self.tallies[i].attempts
            if need > 0:
                wants[i] = min(need, step - sum(wants.values()))
                # A base failing every attempt is measured alone: its last round's spare
                # attempts went to an arm, whose 1/1 the answer then called "best".
                if sum(wants.values()) >= step or always:
                    break
        return wants

    def _probes(self, wants: dict[int, int]) -> list[Probe]:
        return [Probe(arm, n) for arm, n in sorted(wants.items()) if n > 0]

    def _combination(self) -> Arm | None:
        # Only the perturbations that each amplified (`above_base`: their interval above the
        # base's): a lower bound above the base's observed rate let 2/8 beside 0/8 join.
        helping = [
            i
            for i in self.live()
            if self.arms[i].role == "single" and self.tallies[i].matched >= 2 and self.above_base(i)
        ]
        # The best first, each by how far it stands above its own base (as the leader).
        helping.sort(key=lambda i: (-standing(self.rate(i), self.rate(self.base_of(i)))[0], i))
        chosen: list[int] = []
        fields: set[str] = set()
        for i in helping:
            if fields.isdisjoint(self.arms[i].fields):
                chosen.append(i)
                fields |= self.arms[i].fields
            if len(chosen) == self.settings.combine:
                break
        if len(chosen) < 2:
            return None
        settings = tuple(s for i in sorted(chosen) for s in self.arms[i].settings)
        # One fresh perturbation makes the whole arm start fresh: judged as fresh arms are.
        return Arm(settings, "combined", any(self.arms[i].fresh for i in chosen))

    def _why_not(self, leader: int, interrupted: bool) -> str:
        """Why nothing was amplified, where the arms say more than "not amplified"; and
        where the fresh arms were measured no more, why."""
        why = self._why_not_amplified(leader, interrupted)
        if not self._fresh_frequent():
            return why
        assert self.fresh_base is not None
        fresh = self.rate(self.fresh_base)
        labels = ", ".join(a.label for a in self.arms if a.fresh and a.settings)
        said = (
            f"base (fresh) already fails in {fresh.matched}/{fresh.attempts} attempts (at least "
            f"{FREQUENT:.0%}): no arm that runs fresh ({labels}) can fail clearly more often"
        )
        return f"{why}; {said}" if why else said

    def _why_not_amplified(self, leader: int, interrupted: bool) -> str:
        if (
            not interrupted
            and self.used >= self.settings.budget
            and len(self.arms) > 1
            and not any(
                t.attempts for t, a in zip(self.tallies, self.arms, strict=True) if a.settings
            )
        ):
            measured = self.rate(0)
            if measured.attempts and measured.matched == measured.attempts:
                # It fails every time: a larger budget measures the base alone on to 35 and
                # ends "amplify is for a rarer failure", never trying a perturbation; "raise
                # --budget" sent the user there beside `next:`'s "go on without one" (nu-a).
                return (
                    f"the budget of {plural(self.settings.budget, 'attempt')} ran out on the "
                    f"base, which failed in every one ({measured.matched}/{measured.attempts}): "
                    "amplify is for a rarer failure"
                )
            return (
                f"the budget of {plural(self.settings.budget, 'attempt')} ran out before any "
                f"perturbation was tried: raise {argument('--budget', 'budget')}"
            )
        # With two bases each arm is ranked against its own (module docstring).
        two = self.fresh_base is not None
        its = " against its base" if two else ""
        if leader != 0 and self.tallies[leader].matched:
            base = "base's" if self.base_of(leader) == 0 else "fresh base's (both start fresh)"
            return (
                f"{self.arms[leader].label} fails most often{its}, but its interval still "
                f"overlaps the {base}"
            )
        tried = any(t.attempts for t, a in zip(self.tallies, self.arms, strict=True) if a.settings)
        if tried and not any(t.matched for t in self.tallies):
            # "base 0/14; best switch_interval=1e-06: 0/10: not amplified" gave no reason
            # where the failure never came at all, and where every attempt failed, but
            # another way than the cell's expect says (a wrong `exception:`).
            other = sum(t.other for t in self.tallies)
            said = "no attempt failed as expected, with a perturbation or without"
            if other:
                said += (
                    f"; {plural(other, 'attempt')} failed another way (each arm says how): "
                    "is that the failure the cell's expect should say?"
                )
            return said
        if leader == 0 and tried:  # (and some attempt matched: said above where none did)
            # The answer names the best perturbation's rate beside the base's: without
            # this, "best cpus=1: 10/14: not amplified" gave no reason, and nor did
            # "base 2/35; best malloc=perturb: 0/22: not amplified", where no perturbation
            # failed at all (nu-a).
            return "no perturbation failed more often than " + ("its base" if two else "the base")
        return ""

    def _finish(
        self,
        *,
        established: bool,
        infra: bool = False,
        interrupted: bool = False,
        note: str = "",
        budget_spent: bool = False,
    ) -> None:
        arms = tuple(
            ArmResult(
                arm=arm,
                rate=self.rate(i),
                tally=self.tallies[i],
                others=tuple(self.others[i].most_common()),
                infra_reason=self.reasons[i],
            )
            for i, arm in enumerate(self.arms)
        )
        if infra:
            reason = self.reasons[0] or "the base attempts could not run"
            self.result = AmplifyResult("infra-error", arms, None, False, self.used, note=reason)
            return
        leader = self.leader()
        amplified = leader != 0 and self.above_base(leader)
        if interrupted:
            status: Status = "interrupted"
        else:
            status = "amplified" if amplified else "not-amplified"
        if not note and not amplified:  # else said by the caller, or needs no note
            note = self._why_not(leader, interrupted)
        self.result = AmplifyResult(
            status,
            arms,
            leader if amplified else None,
            established and amplified,
            self.used,
            note=note,
            budget_spent=budget_spent and not interrupted,
        )
