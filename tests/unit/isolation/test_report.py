"""isolate's evidence table: what each row's verdict rests on, worded so it checks against
the table beside it."""

from __future__ import annotations

from reprospec.isolation.candidates import Candidate, Tally
from reprospec.isolation.report import _verdict


def test_a_passing_row_names_the_clean_attempts_it_rests_on_not_every_set_holding_it() -> None:
    """nu22 LOW-9: `workers=2 alone`, 2 clean attempts, read "passes (0/2 on the sets holding
    it)", where the failing cell (10/10) holds it too; the passing cell, never run itself,
    read "passes" beside its 0 attempts."""
    alone = Candidate((0,), "one-smaller", Tally(passed=2), False, clean_evidence=2)
    assert _verdict(alone) == "passes (2 clean attempts on the sets that hold it and never failed)"
    base = Candidate((), "base", Tally(), False, clean_evidence=5)
    assert _verdict(base) == (
        "passes (not run itself: 5 clean attempts on the sets that hold it and never failed)"
    )
    one = Candidate((1,), "one-smaller", Tally(other=1), False, clean_evidence=1)
    assert _verdict(one) == "passes (1 clean attempt on the sets that hold it and never failed)"
    assert _verdict(Candidate((0, 1), "minimal", Tally(matched=9), True)) == "fails"
    assert _verdict(Candidate((0,), "one-smaller", Tally(passed=1), None)) == "undecided"
