"""The order the suite is handed to xdist's workers (tests/support/schedule.py): the same
tests, each slice starting with its share of the long modules, modules kept whole."""

from __future__ import annotations

from tests.support import schedule


def module(item: str) -> str:
    return item.split("::")[0]


def items(**counts: int) -> list[str]:
    return [f"{m}::t{i}" for m, n in counts.items() for i in range(n)]


def test_slices_are_the_sizes_worksteal_hands_out() -> None:
    assert schedule.slice_sizes(10, 3) == [3, 3, 4]
    assert schedule.slice_sizes(1828, 2) == [914, 914]
    assert sum(schedule.slice_sizes(1829, 3)) == 1829


def test_long_modules_start_the_slices_longest_to_the_least_loaded() -> None:
    collected = items(a=4, b=4, big=2, c=4, huge=2, mid=2)
    seconds = {"big": 100.0, "huge": 150.0, "mid": 60.0, "a": 1.0}
    ordered = schedule.spread(collected, module, seconds, workers=2)
    assert sorted(ordered) == sorted(collected)
    first, second = ordered[:9], ordered[9:]
    # huge to slice 1; big to slice 2; mid to slice 2 (100 < 150); then the short ones fill.
    assert [module(i) for i in first[:2]] == ["huge", "huge"]
    assert [module(i) for i in second[:4]] == ["big", "big", "mid", "mid"]
    assert [module(i) for i in first[2:]] == ["a"] * 4 + ["b"] * 3
    assert [module(i) for i in second[4:]] == ["b"] + ["c"] * 4
    for name in ("a", "b", "c", "big"):  # each module's tests in their own order
        mine = [i for i in ordered if module(i) == name]
        assert mine == [i for i in collected if module(i) == name]


def test_a_serial_run_or_no_record_keeps_collection_order() -> None:
    collected = items(a=3, big=3, b=3)
    assert schedule.spread(collected, module, {"big": 100.0}, workers=1) == collected
    assert schedule.spread(collected, module, {}, workers=3) == collected


def test_the_record_names_modules_that_exist() -> None:
    seconds = schedule.recorded()
    assert seconds, schedule.DURATIONS
    root = schedule.DURATIONS.parent.parent
    assert [m for m in seconds if not (root / m).is_file()] == []
