"""The amplification search against seeded simulated arms: the winner, combinations, limits."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from reprospec.amplify.search import (
    FREQUENT_ATTEMPTS,
    Amplification,
    AmplifyResult,
    Arm,
    Probe,
    Settings,
)
from reprospec.isolation import AttemptKind

SI = Arm((("switch_interval", 1e-6),), "single")
CPUS = Arm((("cpus", 1),), "single")
GC = Arm((("gc", "aggressive"),), "single")
MALLOC = Arm((("malloc", "perturb"),), "single")

Rates = Callable[[Arm], tuple[float, float]]  # (match rate, other-failure rate)


def fixed(rates: Mapping[str, float], others: Mapping[str, float] | None = None) -> Rates:
    return lambda arm: (rates.get(arm.label, rates["base"]), (others or {}).get(arm.label, 0.0))


def simulate(
    singles: list[Arm],
    rates: Rates,
    seed: int,
    settings: Settings | None = None,
    infra: frozenset[str] = frozenset(),
) -> tuple[AmplifyResult, list[Probe]]:
    rng = random.Random(seed)
    search = Amplification(singles, settings or Settings(budget=300, step=4))
    asked: list[Probe] = []
    while search.result is None:
        for probe in search.next_probes():
            asked.append(probe)
            arm = search.arms[probe.arm]
            if arm.label in infra:
                search.record(probe, ["infra"] * probe.attempts, reason="cannot apply")
                continue
            match, other = rates(arm)
            kinds: list[AttemptKind] = []
            phrases: list[str] = []
            for _ in range(probe.attempts):
                roll = rng.random()
                if roll < match:
                    kinds.append("match")
                elif roll < match + other:
                    kinds.append("other")
                    phrases.append("crash SIGABRT")
                else:
                    kinds.append("pass")
            search.record(probe, kinds, phrases)
    assert search.result is not None
    return search.result, asked


@pytest.mark.parametrize("seed", range(6))
def test_the_one_perturbation_that_matters_is_named_within_300_attempts(seed: int) -> None:
    result, _ = simulate(
        [SI, CPUS, GC, MALLOC], fixed({"base": 0.02, "switch_interval=1e-06": 0.35}), seed
    )
    assert result.status == "amplified"
    assert result.winner is not None
    assert result.winner.arm.label == "switch_interval=1e-06"
    assert result.winner.rate.low >= 0.2 - 0.05
    assert result.winner.rate.low > result.base.rate.high
    assert result.used <= 300


def test_attempts_go_where_the_upper_bound_is_high_not_evenly() -> None:
    result, _ = simulate(
        [SI, CPUS, GC, MALLOC], fixed({"base": 0.0, "switch_interval=1e-06": 0.5}), seed=1
    )
    by_label = {a.arm.label: a.tally.attempts for a in result.arms}
    # The useless arms stop near their first attempts; the winner gets the most.
    assert by_label["switch_interval=1e-06"] == max(by_label.values())
    assert by_label["gc=aggressive"] < by_label["switch_interval=1e-06"]
    assert result.established


def test_nothing_helps_is_not_amplified_and_spends_at_most_the_budget() -> None:
    result, _ = simulate([SI, CPUS], fixed({"base": 0.0}), seed=2, settings=Settings(budget=60))
    assert result.status == "not-amplified"
    assert result.best is None
    assert result.used == 60


def test_two_perturbations_that_help_together_are_combined() -> None:
    def rates(arm: Arm) -> tuple[float, float]:
        fields = arm.fields
        if {"switch_interval", "cpus"} <= fields:
            return 0.7, 0.0
        if fields & {"switch_interval", "cpus"}:
            return 0.25, 0.0
        return 0.01, 0.0

    result, _ = simulate([SI, CPUS, GC], rates, seed=3)
    assert result.status == "amplified"
    assert result.winner is not None
    assert result.winner.arm.role == "combined"
    assert result.winner.arm.fields == {"switch_interval", "cpus"}


def test_a_different_failure_does_not_count_and_is_reported() -> None:
    result, _ = simulate(
        [SI, MALLOC],
        fixed({"base": 0.0}, others={"malloc=perturb": 0.6}),
        seed=4,
        settings=Settings(budget=80),
    )
    assert result.status == "not-amplified"
    malloc = next(a for a in result.arms if a.arm.label == "malloc=perturb")
    assert malloc.rate.matched == 0
    assert malloc.tally.other > 0
    assert malloc.others[0][0] == "crash SIGABRT"


def test_a_perturbation_that_cannot_be_applied_is_dropped_with_its_reason() -> None:
    result, asked = simulate(
        [SI, CPUS],
        fixed({"base": 0.0, "switch_interval=1e-06": 0.5}),
        seed=5,
        infra=frozenset({"cpus=1"}),
    )
    cpus = next(a for a in result.arms if a.arm.label == "cpus=1")
    assert cpus.dropped
    assert cpus.infra_reason == "cannot apply"
    assert sum(p.attempts for p in asked if p.arm == 2) <= Settings().first
    assert result.status == "amplified"


def test_the_base_that_cannot_run_is_an_infra_error() -> None:
    result, _ = simulate([SI], fixed({"base": 0.0}), seed=6, infra=frozenset({"base"}))
    assert result.status == "infra-error"
    assert result.note == "cannot apply"


def test_a_base_that_cannot_run_stops_the_search_before_any_other_arm_runs() -> None:
    # A command that is not there fails every arm alike: with --budget 8 the arms' first
    # attempts spent it and the answer was "not amplified" (exit 1), naming an arm that
    # never ran as the best; with 30, 24 attempts went before the infra error.
    every = frozenset({"base", SI.label})
    result, asked = simulate([SI], fixed({"base": 0.0}), seed=6, infra=every,
                             settings=Settings(budget=8, step=4))  # fmt: skip
    assert result.status == "infra-error"
    assert {probe.arm for probe in asked} == {0}


def test_the_same_records_ask_the_same_probes() -> None:
    # What resuming relies on: replaying the stored answers asks for exactly them again.
    rates = fixed({"base": 0.05, "cpus=1": 0.3})
    _, first = simulate([SI, CPUS], rates, seed=7)
    _, second = simulate([SI, CPUS], rates, seed=7)
    assert first == second


def test_the_base_is_measured_first_and_labels_read_as_settings() -> None:
    search = Amplification([SI, CPUS], Settings(step=4, first=8))
    assert search.next_probes() == [Probe(0, 4)]
    assert Arm((("switch_interval", 1e-6), ("cpus", [0, 1])), "combined").label == (
        "switch_interval=1e-06 + cpus=0,1"
    )
    with pytest.raises(ValueError, match="twice"):
        Amplification([SI, SI])


def test_a_damaged_amplify_state_file_is_refused_named(tmp_path: Path) -> None:
    # The same reader as isolate's: garbage or JSON nested too deep is a located usage
    # error (exit 2), never a traceback, and a state file of another search starts over.
    from reprospec.amplify.state import StateFile
    from reprospec.errors import UsageError

    state = tmp_path / "state.json"
    for text in ("{not json", "[" * 100_000 + "]" * 100_000):
        state.write_text(text)
        with pytest.raises(UsageError, match=r"state\.json: a damaged amplify state file"):
            StateFile(tmp_path, {"spec": "s"})
    state.write_text('{"format": 1, "header": {"spec": "other"}, "probes": []}')
    assert StateFile(tmp_path, {"spec": "s"}).stored == 0
    # A probe's attempt of a kind this version does not know: refused, where it was
    # dropped and the arm replayed fewer attempts than it ran.
    probe = {"arm": "base", "kinds": ["match", "bogus"], "others": [], "run_id": "r"}
    state.write_text(json.dumps({"format": 1, "header": {"spec": "s"}, "probes": [probe]}))
    with pytest.raises(UsageError, match=r"damaged amplify state file .*'bogus'"):
        StateFile(tmp_path, {"spec": "s"})


def test_an_interrupted_search_does_not_print_its_leader_as_the_answer() -> None:
    # Stdout is what a script reads: "with switch_interval=1e-06: 4/4" after Ctrl-C read as
    # the answer (exit 130 on stderr only).
    from reprospec.amplify.report import AmplifyReport
    from reprospec.core.inputs import Cell, Expectation

    search = Amplification([SI], Settings(budget=300, step=4))
    while search.tallies[1].attempts < 4:  # the base's first attempts, then the arm's
        for probe in search.next_probes():
            search.record(probe, ["match" if probe.arm else "pass"] * probe.attempts)
    search.interrupt()
    assert search.result is not None
    assert search.result.winner is not None  # 4/4 against 0/8: clear of the base already
    report = AmplifyReport(
        "id", Path("f"), "s", "s.yaml", Cell("default", 0, {}), Expectation("error"),
        search.result, (), 0, True, 300,
    )  # fmt: skip
    said = report.sentence()
    assert said.endswith(": interrupted before it was established"), said


def test_a_base_that_always_fails_ends_once_it_is_shown_frequent() -> None:
    # 74/74 of the base and 28/28 of the best arm, 180 attempts in all, then "not
    # amplified": no arm's interval can lie above a base that failed every time.
    result, asked = simulate([SI, CPUS], fixed({"base": 1.0}), seed=3)
    assert result.status == "not-amplified"
    # The base alone: its last round's spare attempt went to an arm, and the answer
    # called that arm's 1/1 "best".
    assert [probe.arm for probe in asked if probe.arm != 0] == []
    assert result.used == FREQUENT_ATTEMPTS
    assert result.note == (
        f"the base already fails in {FREQUENT_ATTEMPTS}/{FREQUENT_ATTEMPTS} attempts (at "
        "least 90%): amplify is for a rarer failure"
    )


def test_a_frequent_base_that_a_perturbation_makes_certain_is_still_amplified() -> None:
    # Stopping once the base failed its first 8 attempts missed this in 16% of searches:
    # the base, measured on, comes down from 8/8.
    hits = 0
    for seed in range(40):
        result, _ = simulate([SI], fixed({"base": 0.8, SI.label: 1.0}), seed=seed,
                             settings=Settings(budget=400))  # fmt: skip
        hits += result.status == "amplified"
    assert hits >= 36, hits


def test_a_budget_spent_on_the_base_alone_says_so() -> None:
    result, _ = simulate([SI], fixed({"base": 0.0}), seed=3, settings=Settings(budget=3))
    assert result.status == "not-amplified"
    assert result.note == (
        "the budget of 3 attempts ran out before any perturbation was tried: raise --budget"
    )
    # nu-a: a base failing every time (20/20) was told to raise --budget, where a larger one
    # only measures it on to 35/35 and ends "amplify is for a rarer failure".
    result, _ = simulate([SI], fixed({"base": 1.0}), seed=3, settings=Settings(budget=20))
    assert result.status == "not-amplified"
    assert result.note == (
        "the budget of 20 attempts ran out on the base, which failed in every one (20/20): "
        "amplify is for a rarer failure"
    )


def test_a_search_the_budget_ended_says_so() -> None:
    # What the report's "a larger --budget continues" line rests on: said where the budget
    # ended the search, not where the leader was established or the base could not run.
    rates = fixed({"base": 0.0, SI.label: 1.0})
    short, _ = simulate([SI, CPUS], rates, seed=1, settings=Settings(budget=10, step=4))
    assert short.used == 10
    assert short.budget_spent
    done, _ = simulate([SI, CPUS], rates, seed=1)
    assert (done.status, done.established) == ("amplified", True)
    assert not done.budget_spent
    every = frozenset({"base", SI.label, CPUS.label})
    broken, _ = simulate([SI, CPUS], rates, seed=1, infra=every)
    assert broken.status == "infra-error"
    assert not broken.budget_spent


def test_a_leader_established_by_the_budgets_last_attempts_is_established() -> None:
    # A real deadlock amplified with --try switch_interval=1e-6 --budget 24: base 1/12
    # (0.01-0.36), the arm 8/12 (0.39-0.87), clear of the base, the only other arm. The
    # budget's end was read before the rule, and the answer said "the best setting is not
    # established: (no arm) may be as good" and "a larger --budget continues".
    search = Amplification([SI], Settings(budget=24, step=2))  # -j 2
    kinds: dict[str, AttemptKind] = {"m": "match", "p": "pass"}
    outcomes = {0: list("m" + "p" * 11), 1: list("mmmpmpmpmpmm")}
    while search.result is None:
        for probe in search.next_probes():
            search.record(probe, [kinds[outcomes[probe.arm].pop(0)] for _ in range(probe.attempts)])
    result = search.result
    assert (result.status, result.used) == ("amplified", 24)
    assert (result.arms[0].tally.matched, result.arms[1].tally.matched) == (1, 8)
    assert result.established
    assert not result.budget_spent
    assert result.undecided_with == ()


def _played(search: Amplification, outcomes: dict[int, str]) -> AmplifyResult:
    kinds: dict[str, AttemptKind] = {"m": "match", "p": "pass"}
    left = {arm: list(text) for arm, text in outcomes.items()}
    while search.result is None:
        for probe in search.next_probes():
            search.record(probe, [kinds[left[probe.arm].pop(0)] for _ in range(probe.attempts)])
    assert search.result is not None
    return search.result


def test_the_budgets_end_is_no_stop_before_every_arm_is_measured_and_combined() -> None:
    # Budget 20 spent with the second arm at 0/4 of its first 8: the rule (step 1: every
    # arm measured before any is compared) never judged this state, yet it ended
    # "established"; likewise with two arms above the base and their combination not
    # yet added (step 2), or run once.
    unmeasured = _played(
        Amplification([SI, CPUS], Settings(budget=20, step=4)),
        {0: "p" * 20, 1: "m" * 20, 2: "p" * 20},
    )
    assert [a.tally.ran for a in unmeasured.arms] == [8, 8, 4]
    assert (unmeasured.status, unmeasured.established) == ("amplified", False)
    assert unmeasured.budget_spent
    for budget in (60, 61):
        uncombined = _played(
            Amplification([SI, CPUS], Settings(budget=budget, step=4, first=20)),
            {0: "p" * 40, 1: "m" * 40, 2: "m" * 8 + "p" * 12 + "mp" * 10, 3: "m" * 40},
        )
        assert len(uncombined.arms) == (3 if budget == 60 else 4)
        assert (uncombined.established, uncombined.budget_spent) == (False, True)


def test_a_stored_arm_replays_at_most_the_attempts_asked_across_its_probes(
    tmp_path: Path,
) -> None:
    # A larger budget asks more of an arm than the smaller one's last, cut round stored: the
    # stored attempts are replayed and the caller runs the rest. A smaller one asks fewer:
    # a stored probe is cut, its rest first in line for the arm's next probe, with the
    # phrases of its `other` attempts where they belong.
    from reprospec.amplify.state import StateFile, StoredProbe
    from reprospec.core.jsontypes import JsonValue

    header: dict[str, JsonValue] = {"spec": "s", "cell": "c", "tries": [SI.label]}
    state = StateFile(tmp_path, header)
    state.add(StoredProbe("base", ("pass", "other", "pass", "other"), ("A", "B"), "run-1"))
    state.add(StoredProbe("base", ("match", "pass"), (), "run-2"))
    state.add(StoredProbe(SI.label, ("match", "match"), (), "run-3"))
    state = StateFile(tmp_path, header)  # as a rerun reads it
    assert state.stored == 3
    cut = state.take("base", 2)
    assert [(p.kinds, p.others, p.run_id) for p in cut] == [(("pass", "other"), ("A",), "run-1")]
    across = state.take("base", 3)
    assert [(p.kinds, p.others, p.run_id) for p in across] == [
        (("pass", "other"), ("B",), "run-1"),
        (("match",), (), "run-2"),
    ]
    short = state.take("base", 4)  # one stored attempt left of the four asked
    assert [(p.kinds, p.run_id) for p in short] == [(("pass",), "run-2")]
    assert state.take("base", 4) == []
    assert [p.kinds for p in state.take(SI.label, 4)] == [("match", "match")]
    assert state.runs() == ["run-1", "run-2", "run-3"]


def test_only_perturbations_clearly_above_the_base_are_combined() -> None:
    # lo35: a perturbation joined the combined arm once its lower bound lay above the base's
    # observed rate: cpus=1 at 2/8 (0.07-0.59) beside a base at 0/8 (0.00-0.32), whose
    # intervals overlap, was combined with switch_interval (6/8: 0.41-0.93), which amplified.
    search = Amplification([SI, CPUS, GC], Settings(first=8, step=8))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"] * 8
    six, two = match * 6 + clean[:2], match * 2 + clean[:6]
    first = {0: clean, 1: six, 2: two, 3: clean}
    for arm in range(4):
        assert search.next_probes() == [Probe(arm, 8)]
        search.record(Probe(arm, 8), first[arm])
    assert search.next_probes()
    assert [arm.role for arm in search.arms] == ["base", "single", "single", "single"]
    # Once cpus=1 is clearly above the base too (6/8 more: 8/16, 0.28-0.72), both are.
    search.record(Probe(2, 8), six)
    search.record(Probe(0, 8), clean)
    search.next_probes()
    assert search.arms[-1].role == "combined"
    assert search.arms[-1].fields == {"switch_interval", "cpus"}


FRESH_MALLOC = Arm((("malloc", "perturb"),), "single", fresh=True)


def test_a_fresh_arm_above_the_forked_base_but_not_the_fresh_one_is_not_amplified() -> None:
    # Under run.preload the base forks and malloc=perturb's attempts start fresh: a failure
    # that comes with a fresh start (8/8 fresh, 0/8 forked) made malloc=perturb "amplified"
    # against the forked base, for the start's sake, not the perturbation's.
    result, _ = simulate(
        [SI, FRESH_MALLOC],
        fixed({"base": 0.0, "base (fresh)": 1.0, "malloc=perturb": 1.0}),
        seed=3,
        settings=Settings(budget=80),
    )
    by_label = {a.arm.label: a for a in result.arms}
    malloc, fresh = by_label["malloc=perturb"], by_label["base (fresh)"]
    assert [a.arm.label for a in result.arms][:2] == ["base", "base (fresh)"]
    assert malloc.rate.low > result.base.rate.high  # above the forked base...
    assert result.base_for(malloc) is fresh  # ...but judged against the fresh one
    assert result.status == "not-amplified"
    assert result.best is None
    # Ranked against its own base, malloc=perturb stands no higher than the base does.
    assert result.note.startswith("no perturbation failed more often than its base")
    # A reference, never the answer: the forked arm is no one's "undecided" neighbour.
    assert result.base_for(by_label["switch_interval=1e-06"]) is result.base


def test_a_fresh_arm_above_the_fresh_base_is_amplified_against_it() -> None:
    result, _ = simulate(
        [SI, FRESH_MALLOC],
        fixed({"base": 0.0, "base (fresh)": 0.0, "malloc=perturb": 0.9}),
        seed=4,
    )
    assert result.status == "amplified"
    assert result.winner is not None
    assert result.winner.arm.label == "malloc=perturb"
    against = result.base_for(result.winner)
    assert against.arm.label == "base (fresh)"
    assert result.winner.rate.low > against.rate.high


def test_the_fresh_base_is_measured_only_while_a_fresh_arm_is_live() -> None:
    # No fresh arm (no run.preload, or every perturbation forks): one base, as ever.
    search = Amplification([SI, MALLOC])
    assert [a.label for a in search.arms] == ["base", "switch_interval=1e-06", "malloc=perturb"]
    # A fresh arm that cannot run at all needs no fresh base: its first attempts come
    # after the singles', and it is never measured.
    rates = fixed({"base": 0.02, "switch_interval=1e-06": 0.5})
    dropped, asked = simulate(
        [SI, FRESH_MALLOC], rates, seed=5, infra=frozenset({"malloc=perturb"})
    )
    assert dropped.arms[1].arm.label == "base (fresh)"
    assert dropped.arms[1].tally.attempts == 0
    assert all(p.arm != 1 for p in asked)
    # A live one: the fresh base gets its first attempts after every single's.
    live, asked = simulate([SI, FRESH_MALLOC], rates, seed=5)
    first_fresh = next(n for n, p in enumerate(asked) if p.arm == 1)
    assert {p.arm for p in asked[:first_fresh]} == {0, 2, 3}
    assert live.arms[1].tally.attempts >= Settings().first


def test_a_combination_holding_a_fresh_perturbation_is_judged_against_the_fresh_base() -> None:
    search = Amplification([SI, FRESH_MALLOC, GC], Settings(first=8, step=8))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"] * 8
    six = match * 6 + clean[:2]
    # base, then the singles (switch_interval, malloc, gc), then the fresh base.
    for arm, kinds in ((0, clean), (2, six), (3, six), (4, clean), (1, clean)):
        assert search.next_probes() == [Probe(arm, 8)]
        search.record(Probe(arm, 8), kinds)
    search.next_probes()
    combined = search.arms[-1]
    assert combined.role == "combined"
    assert combined.fields == {"switch_interval", "malloc"}
    assert combined.fresh
    assert search.base_of(len(search.arms) - 1) == 1
    assert search.base_of(2) == 0


def test_a_fresh_arm_is_ranked_by_how_far_it_stands_above_its_own_base() -> None:
    # malloc=perturb 7/8 fresh beside its base 6/8 fresh, switch_interval 4/8 forked beside
    # the base's 0/8: malloc led by its rate, which a fresh start lifted (its base's too),
    # and the forked arm that amplified was no one's best.
    search = Amplification([SI, FRESH_MALLOC], Settings(first=8, step=8))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"]
    first = {0: clean * 8, 2: match * 4 + clean * 4, 3: match * 7 + clean, 1: match * 6 + clean * 2}
    for arm, kinds in first.items():
        assert search.next_probes() == [Probe(arm, 8)]
        search.record(Probe(arm, 8), kinds)
    assert search.leader() == 2  # +0.50 over its base, where malloc stands +0.12 over its
    assert search.challenger(2) == 3
    # Over the whole search: the forked arm's gain is the greater, and it is the answer.
    rates = {"base": 0.0, "base (fresh)": 0.6, "malloc=perturb": 0.75, "switch_interval=1e-06": 0.5}
    for seed in range(3):
        result, _ = simulate([SI, FRESH_MALLOC], fixed(rates), seed)
        assert result.status == "amplified", (seed, result.note)
        assert result.winner is not None
        assert result.winner.arm.label == "switch_interval=1e-06"
        assert result.base_for(result.winner) is result.base


def test_the_combination_takes_the_best_by_how_far_each_stands_above_its_base() -> None:
    # Of three that amplified, two combined: malloc=perturb 15/16 fresh over its base's 4/16
    # (+0.69) was taken by its rate before gc=aggressive 13/16 forked over 0/16 (+0.81).
    search = Amplification([SI, FRESH_MALLOC, GC], Settings(first=16, step=16, combine=2))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"]
    first = {0: 0, 2: 14, 3: 15, 4: 13, 1: 4}  # arm: matched of 16
    for arm, matched in first.items():
        assert search.next_probes() == [Probe(arm, 16)]
        search.record(Probe(arm, 16), match * matched + clean * (16 - matched))
    assert all(search.above_base(i) for i in (2, 3, 4))
    search.next_probes()
    combined = search.arms[-1]
    assert combined.role == "combined"
    assert combined.fields == {"switch_interval", "gc"}
    assert not combined.fresh


def test_a_fresh_arm_is_undecided_with_a_forked_winner_by_their_gains() -> None:
    # A fresh arm's upper bound is set on the winner's scale: its gain's upper bound (its own
    # less its base's lower bound) over the forked base's upper bound.
    search = Amplification([SI, FRESH_MALLOC], Settings(first=8, step=8))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"]
    for arm, kinds in (
        (0, clean * 40),
        (2, match * 30 + clean * 10),  # 0.75 (0.60-0.86) over 0/40 (0.00-0.09)
        (3, match * 8),  # 8/8 fresh (0.68-1.00)...
        (1, match * 2 + clean * 6),  # ...over 2/8 (0.07-0.59): a gain of 0.09 to 0.93
    ):
        search.record(Probe(arm, len(kinds)), kinds)
    assert search.leader() == 2
    assert not search.established()
    search.interrupt()
    assert search.result is not None
    assert search.result.status == "interrupted"
    assert [a.arm.label for a in search.result.undecided_with] == ["malloc=perturb"]


def test_a_fresh_base_that_fails_every_attempt_stops_the_fresh_arms_as_the_base_would() -> None:
    # The base failing every attempt is measured on alone to FREQUENT_ATTEMPTS, then the
    # search ends; `base (fresh)` at 8/8, 9/9, ... went on beside malloc=perturb to the
    # budget, which no fresh arm could ever beat.
    rates = {"base": 0.0, "base (fresh)": 1.0, "malloc=perturb": 1.0, "switch_interval=1e-06": 0.6}
    result, asked = simulate([SI, FRESH_MALLOC], fixed(rates), seed=2)
    by_label = {a.arm.label: a for a in result.arms}
    fresh, malloc = by_label["base (fresh)"], by_label["malloc=perturb"]
    assert fresh.tally.attempts == fresh.tally.matched == FREQUENT_ATTEMPTS
    assert malloc.tally.attempts == Settings().first
    # Measured on while it kept failing, before anything else was compared.
    first_fresh = next(n for n, p in enumerate(asked) if p.arm == 1)
    assert {p.arm for p in asked[first_fresh:]}.isdisjoint({3})
    # The forked arms go on: switch_interval amplifies against the forked base.
    assert result.status == "amplified"
    assert result.winner is not None
    assert result.winner.arm.label == "switch_interval=1e-06"
    assert malloc not in result.undecided_with
    # Not amplified, the note says why the fresh arms stopped.
    rates = {"base": 0.0, "base (fresh)": 1.0, "malloc=perturb": 1.0}
    result, _ = simulate([SI, FRESH_MALLOC], fixed(rates), seed=2, settings=Settings(budget=80))
    assert result.status == "not-amplified"
    assert result.note == (
        "no perturbation failed more often than its base; base (fresh) already fails in 35/35 "
        "attempts (at least 90%): no arm that runs fresh (malloc=perturb) can fail clearly "
        "more often"
    )


def test_a_base_that_runs_fresh_too_drops_the_fresh_base_before_it_ran() -> None:
    # Under run.preload a base whose attempts ran fresh all the same (a shell line, docker, a
    # server that could not import) made `base (fresh)` measure the base again: the caller
    # says so after the base's first round, which never holds the fresh base's attempts.
    search = Amplification([SI, FRESH_MALLOC], Settings(first=8, step=32))
    first = search.next_probes()
    assert first == [Probe(0, 8), Probe(2, 8), Probe(3, 8)]
    for probe in first:
        search.record(probe, ["pass"] * probe.attempts)
    assert search.base_runs_fresh()
    assert [a.label for a in search.arms] == ["base", "switch_interval=1e-06", "malloc=perturb"]
    assert not any(a.fresh for a in search.arms)
    assert search.fresh_base is None
    assert search.base_of(2) == 0
    assert [t.attempts for t in search.tallies] == [8, 8, 8]
    assert not search.base_runs_fresh()  # once only
    # Measured already, it is kept (and judged as before).
    search = Amplification([SI, FRESH_MALLOC], Settings(first=8, step=8))
    for arm in (0, 2, 3, 1):
        assert search.next_probes() == [Probe(arm, 8)]
        search.record(Probe(arm, 8), ["pass"] * 8)
    assert not search.base_runs_fresh()
    assert search.arms[1].label == "base (fresh)"


def test_a_fresh_challenger_of_a_forked_leader_has_its_base_measured_too() -> None:
    # switch_interval 6/8 over the base's 0/8 leads; malloc=perturb 12/12 fresh over its base's
    # 3/8 challenges it, told apart by their gains, and the fresh base's 8 attempts bound
    # malloc's gain as much as its own 12: the fresh base was measured only for a fresh leader.
    search = Amplification([SI, FRESH_MALLOC], Settings(first=8, step=4, combine=1))
    match: list[AttemptKind] = ["match"]
    clean: list[AttemptKind] = ["pass"]
    for arm, kinds in (
        (0, clean * 8),
        (2, match * 6 + clean * 2),
        (3, match * 12),
        (1, match * 3 + clean * 5),
    ):
        search.record(Probe(arm, len(kinds)), kinds)
    assert search.leader() == 2
    assert search.next_probes() == [Probe(1, 1), Probe(2, 2), Probe(3, 1)]
    # Measured as often as the fresh arm, it is left to the search's rule again.
    search.record(Probe(1, 4), clean * 4)
    assert search.next_probes() == [Probe(2, 2), Probe(3, 2)]


def test_a_search_whose_base_fails_most_often_says_so_in_its_note() -> None:
    # "base 12/16; best cpus=1: 10/14 (0.45–0.89): not amplified" gave no reason
    # where no perturbation failed more often than the base and the budget ran out.
    result, _ = simulate(
        [CPUS, GC], fixed({"base": 0.6, "cpus=1": 0.3, "gc=aggressive": 0.2}), seed=1,
        settings=Settings(budget=60),
    )  # fmt: skip
    assert result.status == "not-amplified"
    assert result.note == "no perturbation failed more often than the base"


def test_a_base_that_failed_where_no_perturbation_ever_did_says_so_in_its_note() -> None:
    # nu-a: "base 2/35 (0.01–0.19); best malloc=perturb: 0/22 (0.00–0.15): not amplified"
    # named as best an arm that never failed and gave no reason: the note was said only
    # where some perturbation had failed too.
    result, _ = simulate(
        [MALLOC, GC], fixed({"base": 0.15, "malloc=perturb": 0.0, "gc=aggressive": 0.0}),
        seed=1, settings=Settings(budget=80),
    )  # fmt: skip
    assert result.status == "not-amplified"
    assert result.base.tally.matched > 0
    assert not any(a.tally.matched for a in result.arms if a.arm.settings)
    assert result.note == "no perturbation failed more often than the base"


def test_a_state_whose_every_attempt_could_not_run_is_run_again(tmp_path: Path) -> None:
    # nu-a: a base whose command was not on PATH ended infra-error (exit 3); once it was,
    # the same command replayed "command not found" and never ran it again.
    from reprospec.amplify.state import StateFile, StoredProbe
    from reprospec.core.jsontypes import JsonValue

    header: dict[str, JsonValue] = {"spec": "s", "cell": "c", "tries": [SI.label]}
    state = StateFile(tmp_path, header)
    state.add(StoredProbe("base", ("infra",) * 4, (), "run-1", "command not found: x"))
    again = StateFile(tmp_path, header)
    assert again.stored == 0
    assert again.could_not_run == "command not found: x"
    # Where any attempt ran, an arm that could not (a perturbation this machine cannot
    # apply) is the answer's, replayed as it was.
    state = StateFile(tmp_path / "mixed", header)
    state.add(StoredProbe("base", ("pass",) * 4, (), "run-1"))
    state.add(StoredProbe(SI.label, ("infra",) * 4, (), "run-2", "cannot apply"))
    mixed = StateFile(tmp_path / "mixed", header)
    assert mixed.stored == 2
    assert mixed.could_not_run == ""


def test_a_search_with_no_perturbation_to_try_does_not_say_none_failed_more_often() -> None:
    # Where every --try was the spec's own perturbation, no arm ran: "no perturbation failed
    # more often than the base" spoke of perturbations never tried (the driver now refuses).
    result, _ = simulate([], fixed({"base": 0.5}), seed=0, settings=Settings(budget=20))
    assert result.status == "not-amplified"
    assert "no perturbation failed more often" not in result.note


def test_a_search_where_nothing_failed_as_expected_says_so_in_its_note() -> None:
    # "base 0/14 (0.00-0.22); best switch_interval=1e-06: 0/10 (0.00-0.28): not amplified"
    # gave no reason where the failure never came, with a perturbation or without.
    result, _ = simulate(
        [SI, GC], fixed({"base": 0.0, SI.label: 0.0, "gc=aggressive": 0.0}), seed=1,
        settings=Settings(budget=40),
    )  # fmt: skip
    assert result.status == "not-amplified"
    assert result.note == "no attempt failed as expected, with a perturbation or without"


def test_a_search_where_every_failure_was_another_says_so_in_its_note() -> None:
    # A wrong `expect.exception`: every arm failed, each "another way", and the answer read
    # "not amplified" with no reason to look at the expect.
    result, _ = simulate(
        [SI, GC], fixed({"base": 0.0, SI.label: 0.0, "gc=aggressive": 0.0}, {"base": 1.0,
        SI.label: 1.0, "gc=aggressive": 1.0}), seed=1, settings=Settings(budget=24),
    )  # fmt: skip
    assert result.status == "not-amplified"
    assert result.note == (
        "no attempt failed as expected, with a perturbation or without; 24 attempts failed "
        "another way (each arm says how): is that the failure the cell's expect should say?"
    )
