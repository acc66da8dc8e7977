"""isolate's evidence table: what each row's verdict rests on, worded so it checks against
the table beside it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.rates import rate_of
from reprospec.isolation.candidates import Candidate, IsolationResult, Tally
from reprospec.isolation.differences import Difference
from reprospec.isolation.report import (
    IsolateResult,
    Side,
    _verdict,
    markdown,
    sentence,
    set_in_words,
    text,
    write,
)


def test_a_passing_row_names_the_clean_attempts_it_rests_on_not_every_set_holding_it() -> None:
    """`workers=2 alone`, 2 clean attempts, read "passes (0/2 on the sets holding
    it)", where the failing cell (10/10) holds it too; the passing cell, never run itself,
    read "passes" beside its 0 attempts."""
    alone = Candidate((0,), "one-smaller", Tally(passed=2), False, clean_evidence=2)
    assert _verdict(alone) == (
        "passes (2 clean attempts on the sets that hold it and never failed as expected)"
    )
    base = Candidate((), "base", Tally(), False, clean_evidence=5)
    assert _verdict(base) == (
        "passes (not run itself: 5 clean attempts on the sets that hold it and never failed "
        "as expected)"
    )
    one = Candidate((1,), "one-smaller", Tally(other=1), False, clean_evidence=1)
    assert _verdict(one) == (
        "fails otherwise (1 clean attempt on the sets that hold it and never failed as expected)"
    )
    assert _verdict(Candidate((0, 1), "minimal", Tally(matched=9), True)) == "fails"
    assert _verdict(Candidate((0,), "one-smaller", Tally(passed=1), None)) == "undecided"


def _pair(alone_fused: Candidate, alone_cache: Candidate) -> IsolateResult:
    """A user's isolation: a crash that needs fused AND cache (4 differences)."""
    differences = tuple(
        Difference(f"matrix.{name}", 0, 1) for name in ("fused", "amp", "cache", "compile")
    )
    minimal = Candidate((0, 2), "minimal", Tally(matched=6, passed=4), True)
    result = IsolationResult(
        status="isolated",
        culprits=(0, 2),
        message="",
        attempts=44,
        rate=rate_of(12, 20),
        confidence=0.996,
        error=0.005,
        min_rate=0.3,
        rate_used=0.3,
        max_culprits=2,
        failing=Candidate((0, 1, 2, 3), "failing", Tally(matched=6, passed=4), True),
        base=None,
        minimal=minimal,
        # one_smaller[i] leaves out culprit i: [0] is "cache alone", [1] "fused alone".
        one_smaller=(alone_cache, alone_fused),
        tested=(),
    )
    side = Side(Cell("fused=1", 0, {"fused": 1}), {}, {})
    return IsolateResult(
        id="x",
        folder=Path("iso"),
        spec_name="fused-cache-crash",
        spec_path="job.yaml",
        expectation=Expectation(outcome="crash", signal="SIGSEGV"),
        failing=side,
        passing=side,
        differences=differences,
        result=result,
        runs=(),
        reused=0,
        interrupted=False,
    )


def test_the_headline_counts_a_set_s_attempts_as_the_table_beside_it_does() -> None:
    """`either alone passes (0/20, 0/20)` beside the table's `fused=1 alone | 19
    | 0`: the headline counted the clean attempts of the sets holding it (its own 19 and a
    larger set's 1); the table, its own. Both now say its own; a set never run itself says
    what it rests on."""
    fused = Candidate((0,), "one-smaller", Tally(passed=19), False, clean_evidence=20)
    cache = Candidate((2,), "one-smaller", Tally(passed=18, other=2), False, clean_evidence=20)
    found = _pair(fused, cache)
    assert sentence(found) == (
        "crashes when fused=1 AND cache=1; neither alone fails as expected "
        "(0/19; 0/20: 18 passed, 2 failed otherwise)"
    )
    table = text(found)
    assert re.search(r"^ *fused=1 alone +19 +0 +passes \(20 clean attempts", table, re.M), table
    assert re.search(
        r"^ *cache=1 alone +20 +0 +passes or fails otherwise "
        r"\(18 passed, 2 failed otherwise; 20 clean\b",
        table,
        re.M,
    )
    assert "| fused=1 alone | 19 | 0 |" in markdown(found)
    unrun = Candidate((0,), "one-smaller", Tally(), False, clean_evidence=7)
    clean = replace(cache, tally=Tally(passed=20))
    assert sentence(_pair(unrun, clean)) == (
        "crashes when fused=1 AND cache=1; either alone passes (0/7 on the sets that hold it, 0/20)"
    )


def test_a_set_whose_attempts_failed_otherwise_is_not_said_to_pass() -> None:
    """A user's DataLoader crash: `prefetch=4 alone` (workers=0) raised ValueError in each
    of its 17 attempts, and isolate said "either alone passes (0/17, 0/17)", the table
    `passes`: a clean attempt is a pass or another failure, and these were all the latter."""
    workers = Candidate((0,), "one-smaller", Tally(passed=17), False, clean_evidence=17)
    prefetch = Candidate((2,), "one-smaller", Tally(other=17), False, clean_evidence=17)
    found = _pair(workers, prefetch)
    assert sentence(found) == (
        "crashes when fused=1 AND cache=1; neither alone fails as expected "
        "(0/17; 0/17: 17 failed otherwise)"
    )
    assert re.search(r"^ *cache=1 alone +17 +0 +fails otherwise \(17 clean", text(found), re.M)
    assert "| cache=1 alone | 17 | 0 | fails otherwise (17 clean" in markdown(found)
    # One culprit: its passing side "does not", rather than "passes".
    one = replace(
        found,
        result=replace(found.result, culprits=(0,), one_smaller=(prefetch,)),
    )
    assert (
        sentence(one) == "crashes when fused=1; with fused=0, it does not fail as expected "
        "(0/17: 17 failed otherwise)"
    )


def test_a_set_that_failed_otherwise_is_counted_in_the_tally_s_own_words() -> None:
    """The sentence said "0/20, 2 failing otherwise" where isolate's refusal says "0/20: 18
    passed, 2 failed otherwise", and the row's "(2 of 20)" counted the attempts that ran
    beside an attempts column of 21 (one infra error): both say the tally's words, over the
    row's attempts (the sentence's "0/20" of the attempts that ran, beside a set without
    other failures counted as "0/21", and its own row's 21, was two denominators)."""
    fused = Candidate((0,), "one-smaller", Tally(passed=20, infra=1), False, clean_evidence=20)
    cache = Candidate(
        (2,), "one-smaller", Tally(passed=18, other=2, infra=1), False, clean_evidence=20
    )
    found = _pair(fused, cache)
    # The figure's 21 attempts are all said: the infra error too.
    assert "(0/21; 0/21: 18 passed, 2 failed otherwise, 1 infra error)" in sentence(found)
    row = next(line for line in text(found).splitlines() if "cache=1 alone" in line)
    assert re.search(r" 21 +0 +passes or fails otherwise \(18 passed, 2 failed otherwise; 20 ", row)
    assert "2 of 20" not in row


def test_a_set_that_failed_otherwise_does_not_fail_as_expected_whatever_the_verb() -> None:
    """With `expect.outcome: error` the sentence read "errors when fused=1; with fused=0, it
    does not (0/5, 5 failing otherwise)": its 5 attempts did error, otherwise. Each form says
    they did not fail as expected, the table's column."""
    other = Candidate((1,), "one-smaller", Tally(other=5), False, clean_evidence=5)
    clean = Candidate((0,), "one-smaller", Tally(passed=19), False, clean_evidence=19)
    found = replace(_pair(clean, other), expectation=Expectation(outcome="error"))
    assert sentence(found).startswith("errors when fused=1 AND cache=1; neither alone fails as")
    one = replace(found, result=replace(found.result, culprits=(0,), one_smaller=(other,)))
    assert sentence(one) == (
        "errors when fused=1; with fused=0, it does not fail as expected (0/5: 5 failed otherwise)"
    )
    three = replace(
        found, result=replace(found.result, culprits=(0, 1, 2), one_smaller=(clean, clean, other))
    )
    assert "; leaving out any one, it does not fail as expected (0/19; " in sentence(three)


def test_a_set_never_run_itself_whose_holders_failed_otherwise_is_not_said_to_pass() -> None:
    """A one-smaller set never run itself rests on the clean attempts of the sets that hold
    it; where those all failed otherwise, it read "either alone passes (0/7 on the sets that
    hold it, ...)" and its row "passes (not run itself: 7 clean attempts ...)"."""
    unrun = Candidate((0,), "one-smaller", Tally(), False, clean_evidence=7, clean_other=7)
    clean = Candidate((2,), "one-smaller", Tally(passed=20), False, clean_evidence=20)
    found = _pair(unrun, clean)
    assert sentence(found) == (
        "crashes when fused=1 AND cache=1; neither alone fails as expected "
        "(0/7 on the sets that hold it: 7 failed otherwise; 0/20)"
    )
    row = next(line for line in text(found).splitlines() if "fused=1 alone" in line)
    assert row.split(" 0  ")[-1] == (
        "fails otherwise (not run itself: 7 clean attempts on the sets that hold it and never "
        "failed as expected: 7 failed otherwise)"
    )
    some = replace(unrun, clean_other=2)
    assert _verdict(some).startswith("passes or fails otherwise (not run itself: 7 clean")
    assert _verdict(some).endswith(": 5 passed, 2 failed otherwise)")
    assert some.to_dict()["clean_other"] == 2


def test_a_pair_of_cells_one_difference_apart_is_worded_in_the_singular() -> None:
    # `failing cell (all 1 differences) (culprits)` in isolate's table.
    (one,) = [Difference("matrix.num_workers", 0, 4)]
    assert set_in_words([one], [0]) == "failing cell (the 1 difference)"
    assert set_in_words([one], []) == "passing cell (without the 1 difference)"
    two = [one, Difference("matrix.pin_memory", False, True)]
    assert set_in_words(two, [0, 1]) == "failing cell (all 2 differences)"
    assert set_in_words(two, []) == "passing cell (none of the 2 differences)"


def test_one_attempt_of_a_budget_of_one_is_in_the_singular() -> None:
    # A new user's `reprospec isolate SPEC --budget 1`: `1 attempts of a budget of 1`.
    found = _pair(
        Candidate((0,), "one-smaller", Tally(passed=1), False),
        Candidate((2,), "one-smaller", Tally(passed=1), False),
    )
    one = replace(found, result=replace(found.result, attempts=1), budget=1)
    assert "\n1 attempt of a budget of 1;" in text(one), text(one)


def test_an_answer_whose_report_could_not_be_written_names_the_file_not_saved(
    tmp_path: Path,
) -> None:
    """isolate.json written and isolate.md not: the warning said "its isolate.json and
    isolate.md are not this run's" (the json was), and the printed table still sent the
    reader to isolate.md for the sets on the way, a file that does not hold this answer."""
    found = _pair(
        Candidate((0,), "one-smaller", Tally(passed=3), False),
        Candidate((2,), "one-smaller", Tally(passed=3), False),
    )
    on_the_way = Candidate((1,), "search", Tally(passed=2), False)
    found = replace(found, folder=tmp_path, result=replace(found.result, tested=(on_the_way,)))
    assert "1 other set on the way (each in isolate.md)" in text(found)
    (tmp_path / "isolate.md").mkdir()  # a rename onto it fails
    saved = write(found)
    assert saved.unsaved.startswith(f"the answer could not be saved in {tmp_path} (")
    assert saved.unsaved.endswith("): its isolate.md is not this run's"), saved.unsaved
    assert (tmp_path / "isolate.json").is_file()
    printed = text(saved)
    assert "1 other set on the way" in printed
    assert "(each in isolate.md)" not in printed
    assert "report: " not in printed  # no file holds this answer


def test_the_api_text_ends_with_the_report_line_the_cli_prints() -> None:
    """`reprospec isolate` printed `report: .../isolate.md` after the answer; the API's
    render(found, "text"), documented as what the verb prints, had no such line (bisect's
    text had it): a script that logged the text lost where the report was."""
    found = _pair(
        Candidate((0,), "one-smaller", Tally(passed=3), False),
        Candidate((2,), "one-smaller", Tally(passed=3), False),
    )
    assert found.render("text").splitlines()[-1] == "report: iso/isolate.md"


def test_a_search_of_many_probes_folds_their_run_ids() -> None:
    """isolate.md ended in one line of every probe's run id, `Runs (106): ...`, 4,000
    characters after a search of 120 attempts; past 5 they are folded as amplify.md's are."""
    fused = Candidate((0,), "one-smaller", Tally(passed=19), False, clean_evidence=20)
    cache = Candidate((2,), "one-smaller", Tally(passed=20), False, clean_evidence=20)
    runs = tuple(f"20261207-0736{n:02d}-s-{n:04x}" for n in range(106))
    md = markdown(replace(_pair(fused, cache), runs=runs))
    assert "Runs (106)" not in md
    assert (
        "<details><summary>106 runs, one per probe: `20261207-073600-s-0000`, "
        "`20261207-073601-s-0001`, `20261207-073602-s-0002`, …</summary>"
    ) in md
    assert md.count("- `20261207-07") == 106
    assert max(len(line) for line in md.splitlines() if "20261207-07" in line) < 200
    few = markdown(replace(_pair(fused, cache), runs=runs[:2]))
    assert "Runs:\n\n`20261207-073600-s-0000`, `20261207-073601-s-0001`" in few
