"""`Recent`: an answer is kept for the time each read names, then asked again."""

from __future__ import annotations

from reprospec.core.recent import Recent


def test_a_kept_value_stands_within_its_time_and_not_after() -> None:
    recent: Recent[str, str] = Recent()
    assert recent.get("a", 60.0) is None
    assert recent.put("a", "x") == "x"
    assert recent.get("a", 60.0) == "x"
    assert recent.get("a", 0.0) is None  # older than no time at all


def test_it_starts_over_past_its_size() -> None:
    recent: Recent[int, int] = Recent(size=2)
    recent.put(1, 1)
    recent.put(2, 2)
    recent.put(3, 3)
    assert [recent.get(k, 60.0) for k in (1, 2, 3)] == [None, None, 3]
