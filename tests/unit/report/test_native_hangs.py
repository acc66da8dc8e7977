"""A C program's hangs in the report: grouped as the judge counts them (signature `hang`),
their native place (`Outcome.hung_native`) said on the Failure list's line."""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.results import Outcome, PythonFrame, RunResult
from reprospec.report import render
from reprospec.report.signatures import group_key, shared_phrase
from tests.support.runs import hang_run

_ALPHA = Outcome("hang", duration_s=2.0, signature="hang", hung_native="alpha@busy")
_BETA = replace(_ALPHA, hung_native="beta@busy")


def test_hangs_differing_only_in_their_native_place_count_as_one() -> None:
    # busy.c, alternating alpha() and beta(), sampled in each once under --repeat 6: its
    # report said "2 ways" and `Expected as well: hang in alpha@busy`, where the judge,
    # compare, amplify and minimize counted one failure (`hang`).
    assert group_key("hang", _ALPHA) == group_key("hang", _BETA)
    # Worded by neither's frame: the first's named a frame the other was not in.
    assert shared_phrase([_ALPHA, _BETA]) == "hang"
    assert shared_phrase([_ALPHA, _ALPHA]) == "hang in alpha@busy"
    # A Python hang's frame still counts apart by its function and file, as before.
    work = replace(_ALPHA, hung_native=None, hung_in=PythonFrame("/w/a.py", 3, "work"))
    other = replace(work, hung_in=PythonFrame("/w/b.py", 3, "work"))
    assert group_key("hang", work) != group_key("hang", other)


def _c_hangs(*places: str) -> RunResult:
    """hang_run's cell, its attempts a C program's hangs (no Python stack) at `places`."""
    base = hang_run()
    cell = base.cells[0]
    attempts = []
    for n, place in enumerate(places):
        attempt = cell.attempts[n % len(cell.attempts)]
        outcome = replace(_ALPHA, hung_native=place)
        attempts.append(replace(attempt, attempt=n + 1, stack=None, outcome=outcome))
    return replace(base, cells=(replace(cell, attempts=tuple(attempts)),))


def test_a_c_programs_hang_says_where_it_sat_on_the_failure_list() -> None:
    # Its line read "- `hang` (3 attempts)" with no place: only a Python stack was read.
    text = render(_c_hangs("lll_lock_wait@libc<-stuck@reap", "nanosleep@libc<-main@reap"), "md")
    failure = text.split("## Failure", 1)[1].split("\n## ", 1)[0]
    said = "- `hang` (2 attempts): in `lll_lock_wait@libc<-stuck@reap` (cell `default`, attempt 1)"
    assert said in failure, failure
    assert "Expected as well" not in text  # one failure, as the judge counts it
