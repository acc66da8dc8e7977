"""The isolate state's replay: a probe answers with no more attempts than the search asks.

A rerun under a smaller budget than the stored run's asks for fewer attempts near its
end (its last round is cut to what the budget has left); replaying a stored probe whole
spent past the budget. The rest of that probe answers the next probe of the same
configuration."""

from __future__ import annotations

from pathlib import Path

from reprospec.isolation.state import StateFile, StoredProbe

HEADER = {"spec": "s", "failing": "f", "passing": "p"}


def stored(tmp_path: Path) -> StateFile:
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("full", (0, 1), "failing", ("pass", "pass", "match"), "run-1"))
    state.add(StoredProbe("half", (0,), "search", ("pass",), "run-2"))
    state.add(StoredProbe("full", (0, 1), "failing", ("match",), "run-3"))
    return StateFile(tmp_path, HEADER)  # as a rerun reads it


def test_a_probe_replays_at_most_the_attempts_asked_and_keeps_the_rest(tmp_path: Path) -> None:
    state = stored(tmp_path)
    assert state.stored == 3
    first = state.take("full", 2)
    assert first is not None
    assert (first.kinds, first.run_id) == (("pass", "pass"), "run-1")
    # The rest of that probe comes first for the same configuration, then the next one.
    rest = state.take("full", 5)
    assert rest is not None
    assert (rest.kinds, rest.run_id) == (("match",), "run-1")
    last = state.take("full", 5)
    assert last is not None
    assert (last.kinds, last.run_id) == (("match",), "run-3")
    assert state.take("full", 5) is None
    # Nothing of the file changed: the runs are still every stored probe's.
    assert state.runs() == ["run-1", "run-2", "run-3"]


def test_without_a_limit_a_probe_replays_whole(tmp_path: Path) -> None:
    # minimize's probes: its searches are keyed on their budget, and replay exactly.
    state = stored(tmp_path)
    whole = state.take("full")
    assert whole is not None
    assert whole.kinds == ("pass", "pass", "match")


def test_a_header_that_names_another_search_replays_nothing(tmp_path: Path) -> None:
    stored(tmp_path)
    other = StateFile(tmp_path, {**HEADER, "failing": "g"})
    assert other.stored == 0
    assert other.take("full", 5) is None
