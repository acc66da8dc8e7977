"""core/words.py: the rate intervals (the printed bounds hold the true ones, so that what is
printed beside a verdict agrees with the verdict), and commands named short."""

from __future__ import annotations

import pytest

from reprospec.core.rates import judge_rate, rate_of, wilson
from reprospec.core.units import RateBound
from reprospec.core.words import (
    Deciding,
    PrintedInterval,
    a_shells_own_exit,
    agree,
    interval_bounds,
    interval_phrase,
    missed_chance,
    more_attempts_phrase,
    percent_bounds,
    percent_interval,
    plural_verb,
    rate_phrase,
    shorten_command,
)


def test_a_count_its_noun_and_its_verb_agree() -> None:
    assert plural_verb(1, "cell") == "1 cell was"
    assert plural_verb(4, "cell", "is", "are") == "4 cells are"
    assert plural_verb(2, "process", many="processes") == "2 processes were"
    # `instances: ${{ matrix.n }}` over [1, 4]: never "the 1 instances".
    assert plural_verb(1, "instance", the=True) == "the instance was"
    assert plural_verb(3, "instance", the=True) == "the 3 instances were"
    # A verb said apart from its count: `the 2 ranks ... are`, `its a.json is`.
    assert [agree(1), agree(0), agree(2, "is", "are"), agree(1, "has", "have")] == [
        "was",
        "were",
        "are",
        "has",
    ]


def test_a_lower_bound_under_the_bound_is_printed_under_it() -> None:
    # 2/6 is 0.0968-0.7000, undecided against >=0.1; rounded to the nearest it
    # read 0.10-0.70, an interval that does not straddle 0.1.
    rate = rate_of(2, 6)
    assert judge_rate(rate, RateBound(">=", 0.1)) == "undecided"
    assert rate_phrase(rate, fraction=True) == "2/6 = 0.33 (95% CI 0.09–0.71)"
    assert percent_interval(rate.low, rate.high) == "9%-71%"
    assert interval_bounds(rate.low, rate.high, digits=3) == ("0.096", "0.701")


def test_an_exact_bound_stays_where_it_is() -> None:
    assert interval_phrase(0.3, 0.7) == "0.30–0.70"
    assert interval_phrase(0.0, 1.0, dash="..") == "0.00..1.00"
    assert percent_interval(0.3, 0.7) == "30%-70%"


def test_minimize_and_isolate_print_an_interval_in_one_spelling() -> None:
    """minimize's PrintedInterval spelled `low-high` itself beside this module's
    percent_interval, isolate's: a change to one left the other's report on the old one."""
    from reprospec.minimize.ratechange import interval_text, printed_interval

    rate = rate_of(2, 6)
    assert percent_bounds(rate.low, rate.high) == PrintedInterval("9%", "71%")
    assert printed_interval(rate) == percent_bounds(rate.low, rate.high)
    assert interval_text(rate) == percent_interval(rate.low, rate.high) == "9%-71%"


@pytest.mark.parametrize("digits", [0, 2, 3])
def test_every_printed_interval_holds_the_true_one(digits: int) -> None:
    for n in range(1, 61):
        for matched in range(n + 1):
            low, high = wilson(matched, n)
            shown = interval_bounds(low, high, digits=digits, percent=digits == 0)
            shown_low, shown_high = (
                float(b.rstrip("%")) / (100 if digits == 0 else 1) for b in shown
            )
            assert shown_low <= low + 1e-9, (matched, n, shown)
            assert high - 1e-9 <= shown_high, (matched, n, shown)


def test_a_shard_phrase_says_a_share_and_the_merge_that_judges_on_all() -> None:
    from reprospec.core.words import shard_phrase

    assert shard_phrase("2/3") == (
        "shard 2/3: each cell judged on this shard's share of its attempts; "
        "`reprospec merge` of the 3 shards judges them on all"
    )
    # The one shard of 1/1 holds every attempt ("the merge of the 1 shards").
    assert shard_phrase("1/1") == "shard 1/1: the only shard, every attempt of each cell"


def test_a_count_reads_one_attempt_and_three_attempts() -> None:
    from reprospec.core.words import noun, plural

    assert [plural(n, "attempt") for n in (0, 1, 3)] == ["0 attempts", "1 attempt", "3 attempts"]
    assert plural(1, "process", "processes") == "1 process"
    assert plural(2, "process", "processes") == "2 processes"
    # The word after a count written apart from it: `1/1 cell`, `3/4 cells`.
    assert (noun(1, "cell"), noun(4, "cell")) == ("cell", "cells")


def test_no_count_is_worded_with_a_parenthesised_plural() -> None:
    """lo40: about 54 places printed `1 attempt(s)`, `3 cell(s)`, which a person reads
    past and a test asserting `2 attempt(s)` could not tell from a wrong count; every count
    goes through `plural` (or `noun`). The harness runs in the workload's Python, without
    reprospec, and spells its few counts itself (`config.cuda_devices`): held the same."""
    import re
    from pathlib import Path

    import reprospec

    root = Path(reprospec.__file__).parent
    # `{count} file(s)`, `{n} leaked {root} file(s)`, `{} of {} cell(s)`: a value, up to two
    # words, and a word with (s) or (es).
    counted = re.compile(r"\}\s(?:\S+ ){0,2}[A-Za-z]+\((?:s|es)\)")
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if counted.search(line)
    ]
    assert found == []


def test_a_launch_summary_counts_a_reason_only_where_the_fresh_attempts_had_several() -> None:
    """`preload: 2 ran fresh: ... only as a process starts (2)` said the count twice."""
    from dataclasses import replace

    from reprospec.core.results import AttemptResult, Outcome
    from reprospec.core.words import launch_summary

    plain = AttemptResult(1, 0.1, Outcome(kind="pass"), True, (), "")
    seed = replace(plain, launch="fresh", launch_note="ran fresh: perturb.hash_seed: why")
    malloc = replace(seed, launch_note="ran fresh: perturb.malloc: other")
    forked = replace(plain, launch="forked")
    assert launch_summary([seed, seed]) == "2 ran fresh: perturb.hash_seed: why"
    assert launch_summary([seed, seed, malloc]) == (
        "3 ran fresh: perturb.hash_seed: why (2); perturb.malloc: other (1)"
    )
    assert str(launch_summary([forked, seed])).endswith("; 1 ran fresh: perturb.hash_seed: why")
    # One forked attempt `was` forked, where it read `1 of 1 attempt were forked`.
    assert str(launch_summary([forked])).startswith("1 of 1 attempt was forked from a server ")
    assert str(launch_summary([forked, forked])).startswith("2 of 2 attempts were forked ")


def test_a_multiprocessing_childs_bootstrap_is_named_for_what_it_is() -> None:
    """A spawned child's command line is multiprocessing's bootstrap: a crash's headline read
    `crash SIGSEGV (child: <venv>/bin/python3 -B -c from ...)`."""
    spawned = (
        "<venv>/bin/python3 -B -c from multiprocessing.spawn import spawn_main; "
        "spawn_main(tracker_fd=6, pipe_handle=8) --multiprocessing-fork"
    )
    assert shorten_command(spawned, 60) == "<venv>/bin/python3 [multiprocessing spawn]"
    tracker = "python -c from multiprocessing.resource_tracker import main;main(5)"
    assert shorten_command(tracker, 60) == "python [multiprocessing resource tracker]"
    # A program of the user's that names the module is its own command line.
    own = "python -c import multiprocessing.spawn; print(1)"
    assert shorten_command(own, 80) == own


def test_an_attempt_that_reached_its_limit_says_so_beside_its_outcome() -> None:
    """A process limit or a memory limit reached was one of the report's warnings alone:
    the verdict's phrase (console, table, junit) says it too; another warning adds nothing."""
    from reprospec.core.results import AttemptResult, Outcome
    from reprospec.core.words import LIMIT_REACHED, attempt_phrase, limit_reached

    def attempt(*warnings: str) -> AttemptResult:
        return AttemptResult(
            attempt=1,
            duration_s=0.1,
            outcome=Outcome(kind="error", exit_code=2),
            matched=True,
            mismatches=(),
            logs="",
            warnings=warnings,
        )

    hit = attempt("leaked 2 files", f"{LIMIT_REACHED}process limit (1 process): refused")
    assert limit_reached(hit) == "its process limit (1 process)"
    assert attempt_phrase(hit) == "error exit 2, at its process limit (1 process)"
    assert attempt_phrase(attempt("leaked 2 files")) == "error exit 2"


def test_a_launch_summary_says_when_a_preload_server_was_started_again() -> None:
    """The Preload line said "forked from a server that imported run.preload once" after
    the server died and a new one imported the modules again: it counts the servers, and
    the restarts among them, from the servers' numbers in the forked attempts' notes."""
    from dataclasses import replace

    from reprospec.core.results import AttemptResult, Outcome
    from reprospec.core.words import launch_summary, preload_note

    plain = AttemptResult(1, 0.1, Outcome(kind="pass"), True, (), "")
    first = replace(plain, launch="forked", launch_note=preload_note(1, None, ["torch"]))
    again = replace(plain, launch="forked", launch_note=preload_note(2, 1, ["torch"]))
    assert again.launch_note == (
        "forked from preload server 2 (started again after server 1 died), which preloaded torch"
    )
    assert str(launch_summary([first, first])).startswith(
        "2 of 2 attempts were forked from a server that imported run.preload once: "
    )
    assert str(launch_summary([first, again, again])).startswith(
        "3 of 3 attempts were forked from 2 servers (1 restart after a server died), each of "
        "which imported run.preload once: "
    )
    assert str(launch_summary([again])).startswith(
        "1 of 1 attempt was forked from a server started again after another died, which "
        "imported run.preload once: "
    )


def test_a_shells_own_exit_claims_no_core_it_did_not_look_for() -> None:
    """It said `no core` with native stacks off, where no core was looked for: a core not
    read is all the engine knows (off, or piped away by apport or systemd-coredump)."""
    said = a_shells_own_exit("exit 139")
    assert "(no shell's report, no core read)" in said
    assert "no core)" not in said


def test_what_more_attempts_do_is_worded_here_for_every_renderer() -> None:
    # judge.py said these itself, shared by report.md, JUnit, pytest, GitHub and the
    # terminal; the vocabulary is here, the judge only works out the case (review).
    # Each case with a bound it comes of (judge.deciding picks them: test_judge.py's
    # test_each_case_of_what_more_attempts_do_is_the_judge_s).
    bound = RateBound(">=", 0.3)
    assert more_attempts_phrase(Deciding("count", 40, "reproduced"), bound) == (
        "at the rate seen, about 40 attempts decide it (reproduced)"
    )
    assert more_attempts_phrase(
        Deciding("above-zero", refuted=0.1, attempts=29), RateBound(">", 0)
    ) == (
        "one failure meets >0 and no count of clean attempts refutes it: "
        "expect.rate: '>=0.1' is refuted by 29 clean attempts"
    )
    assert "'<=0.9' is refuted by 29 failing attempts" in more_attempts_phrase(
        Deciding("below-one", refuted=0.9, attempts=29), RateBound("<", 1)
    )
    assert more_attempts_phrase(Deciding("none-ran"), bound) == "run more attempts"
    assert "the bound itself" in more_attempts_phrase(Deciding("at-bound"), bound)
    assert "(--repeat's limit)" in more_attempts_phrase(Deciding("past-limit"), bound)


def test_the_vocabulary_makes_no_dataclass_as_it_is_imported() -> None:
    # Every run imports words.py, and a frozen dataclass's methods are compiled as it is
    # made (issue 30, item 4): its values are NamedTuples (Deciding was made @frozen, and
    # is one again: review).
    from dataclasses import is_dataclass

    from reprospec.core import words

    made_here = [
        name
        for name, value in vars(words).items()
        if isinstance(value, type) and value.__module__ == words.__name__ and is_dataclass(value)
    ]
    assert made_here == []


def test_missed_chance_names_the_timeout_only_where_an_attempt_hung() -> None:
    # An error exit was sent to change the timeout, and "more often than it passed" was said
    # of one that never passed.
    assert missed_chance(0, 3, 0.3, "w", hung=0) == (
        "; it failed otherwise in every attempt: check the expect"
    )
    assert missed_chance(1, 9, 0.3, "w", hung=9, timeout="--timeout") == (
        "; it failed otherwise more often than it passed: check the expect or --timeout"
    )
    assert missed_chance(2, 2, 0.3, "w", hung=1, timeout="timeout=...") == (
        "; it failed otherwise as often as it passed: check the expect or timeout=..."
    )
    # Where the caller counts no hangs, the timeout is named beside the expect.
    assert missed_chance(0, 1, 0.3, "w").endswith("every attempt: check the expect or --timeout")
    assert missed_chance(0, 0, 0.3, "w") == ""


def test_cells_not_run_is_one_sentence_whatever_the_cells_are_of() -> None:
    from reprospec.core.words import cells_not_run

    assert cells_not_run() == "every cell of it is an infra error, not run"
    assert cells_not_run("workload", of="python 3.9 (cell py=3.9)") == (
        "every workload cell of python 3.9 (cell py=3.9) is an infra error, not run"
    )
    # A package's: the cells that name it, not every cell of the spec (review).
    assert cells_not_run(that="names it") == "every cell that names it is an infra error, not run"
    assert cells_not_run("such", of="", why="torch is not installed in the cell's venv") == (
        "every such cell is an infra error (torch is not installed in the cell's venv), not run"
    )
