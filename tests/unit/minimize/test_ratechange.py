"""The result's rate against the original's (ratechange.py): said where the two Wilson 95%
intervals are apart, either way, and not where they overlap."""

from __future__ import annotations

from reprospec.core.rates import clearly_more, rate_of
from reprospec.core.words import PrintedInterval
from reprospec.minimize.ratechange import (
    interval_text,
    printed_interval,
    rate_change,
)


def test_a_rare_failure_become_certain_is_clearly_more_and_says_both_rates() -> None:
    # The race failed in 6 of 20 runs (15%-52%), its result in 5 of 5 (57%-100%).
    change = rate_change(rate_of(6, 20), rate_of(5, 5))
    assert change is not None
    assert change.direction == "more"
    assert change.warning().startswith(
        "the result fails clearly MORE often than the original (5/5 (56%-100%) against the "
        "original's 6/20 (14%-52%), their 95% intervals apart): a strong sign that the "
        "passes cut out the bug"
    )
    assert change.to_dict()["original"] == rate_of(6, 20).to_dict()


def test_a_frequent_failure_become_rare_is_clearly_less() -> None:
    change = rate_change(rate_of(5, 5), rate_of(1, 20))
    assert change is not None
    assert change.direction == "less"
    assert change.warning().startswith(
        "the result fails clearly LESS often than the original (1/20 (0%-24%) against the "
        "original's 5/5 (56%-100%), their 95% intervals apart): a weaker repro"
    )


def test_a_flaky_failure_become_one_failing_every_time_is_said() -> None:
    # The race at 80% (16 of 20, 58%-92%) and its result 20/20 (84%-100%): the
    # intervals overlap, yet 20 failures in a row happen 1% of the time at 80%.
    change = rate_change(rate_of(16, 20), rate_of(20, 20))
    assert change is not None
    assert change.direction == "every"
    assert change.warning().startswith(
        "the result failed in EVERY one of its 20 final attempts (20/20 (83%-100%)), where "
        "the original came back clean in 4 of its 20 (16/20 (58%-92%); at its 80%, 20 "
        "failures in a row happen 1% of the time): a flaky failure became one that fails "
        "every time"
    )
    assert change.to_dict()["direction"] == "every"
    # Not where 20 in a row are likely at the original's rate (0.9^20 = 12%), nor where
    # the original never came back clean, nor where the result did.
    assert rate_change(rate_of(18, 20), rate_of(20, 20)) is None
    assert rate_change(rate_of(5, 5), rate_of(20, 20)) is None
    assert rate_change(rate_of(16, 20), rate_of(19, 20)) is None


def test_overlapping_intervals_or_a_side_that_ran_nothing_say_nothing() -> None:
    # A user's 5/6 (44%-97%) -> 1/5 (4%-62%): the intervals overlap.
    assert rate_change(rate_of(5, 6), rate_of(1, 5)) is None
    assert rate_change(rate_of(5, 5), rate_of(5, 5)) is None
    assert rate_change(rate_of(0, 0), rate_of(5, 5)) is None
    assert rate_change(rate_of(5, 20), rate_of(0, 0)) is None


def test_no_failure_is_never_clearly_more() -> None:
    assert not clearly_more(rate_of(0, 20), rate_of(0, 20))
    assert clearly_more(rate_of(20, 20), rate_of(0, 20))
    assert not clearly_more(rate_of(20, 20), rate_of(0, 0))


def test_an_intervals_bounds_are_carried_as_printed_not_cut_from_its_text() -> None:
    # minimize.md's "up to 52%" was cut from the printed `14%-52%` (rpartition('-')): any
    # change of how an interval is printed (a dash, a `<1%`) said another number.
    interval = printed_interval(rate_of(6, 20))
    assert interval == PrintedInterval("14%", "52%")
    assert (interval.high, str(interval), interval_text(rate_of(6, 20))) == (
        "52%",
        "14%-52%",
        "14%-52%",
    )
    assert printed_interval(rate_of(5, 5)).high == "100%"
