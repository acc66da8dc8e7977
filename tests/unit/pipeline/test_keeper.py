"""`_Keeper`: an attempt's row is committed before its progress line is said."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from reprospec.core.results import Outcome
from reprospec.pipeline.stages import HELD_UNDER_S, _Keeper


class _Store:
    """A stand-in for the results store: `record_attempt(commit=False)` holds a row,
    `commit` writes those held; `between` runs inside a committed write (another job
    thread's attempt ending then, under -j)."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.committed: list[str] = []
        self.between: list[Callable[[], None]] = []

    def record_attempt(self, _run: str, cell_id: str, _result: object, *, commit: bool) -> None:
        self.held.append(cell_id)
        if commit:
            self.commit()
            while self.between:
                self.between.pop()()

    def commit(self) -> int:
        held, self.held = self.held, []
        self.committed += held
        return len(held)


def _attempt(name: str, duration_s: float, kind: str = "pass") -> tuple[Any, Any]:
    return SimpleNamespace(cell=SimpleNamespace(id=name)), SimpleNamespace(
        name=name,
        duration_s=duration_s,
        outcome=Outcome(kind=kind),  # type: ignore[arg-type]
    )


def test_a_short_attempt_that_did_not_pass_is_committed_as_it_ends() -> None:
    # Held like a pass, a rare crash of a short program was lost with a killed engine or a
    # full disk before its line was said; --resume's rerun would not bring it back.
    store = _Store()
    keeper = _Keeper(store, "run")  # type: ignore[arg-type]
    for name, kind in [("p", "pass"), ("c", "crash"), ("e", "error"), ("h", "hang")]:
        keeper.record(*_attempt(name, HELD_UNDER_S / 10, kind))
    assert store.committed == ["p", "c", "e", "h"]
    assert store.held == []
    keeper.record(*_attempt("q", HELD_UNDER_S / 10))
    assert store.held == ["q"]


def test_a_short_attempt_held_while_a_long_one_commits_is_committed_before_it_is_said() -> None:
    # Thread B (long) commits; thread A (short) is held before B's keeper is done with its
    # record: A's row was then said uncommitted, which a killed engine loses.
    store = _Store()
    keeper = _Keeper(store, "run")  # type: ignore[arg-type]
    plan_a, short = _attempt("a", HELD_UNDER_S / 10)
    plan_b, long = _attempt("b", HELD_UNDER_S * 10)
    store.between.append(lambda: keeper.record(plan_a, short))
    keeper.record(plan_b, long)
    assert store.held == ["a"]
    keeper.before_line("attempt", short)  # what execute's progress callback calls first
    assert store.committed == ["b", "a"]
    assert keeper.stored == 2


class _FullStore(_Store):
    """A store whose disk is full: each commit takes back the rows it held."""

    def commit(self) -> int:
        from reprospec.store.db import StoreError

        error = StoreError("the results store s.db: cannot write to it: disk is full")
        error.lost, self.held = len(self.held), []
        raise error


def test_a_row_held_as_a_failure_stopped_the_run_is_written_or_said_at_its_end() -> None:
    # Another job's attempt, held as the failure came: `flush` returned early once the run
    # had failed, the store's close wrote it after the run had read its warnings, and its
    # failure went into a list no one read (review).
    for store, committed, unstored in [
        (_Store(), ["b"], ()),
        (
            _FullStore(),
            [],
            (
                "1 attempt not stored (the results store s.db: cannot write to it: disk is"
                " full); --resume runs it again",
            ),
        ),
    ]:
        keeper = _Keeper(store, "run")  # type: ignore[arg-type]
        plan_b, short = _attempt("b", HELD_UNDER_S / 10)
        keeper.record(plan_b, short)
        keeper.failed("a write failed")
        keeper.flush()
        assert store.held == ["b"]
        keeper.flush(at_end=True)
        assert (store.committed, store.held, keeper.unstored) == (committed, [], unstored)
        assert keeper.stored == len(committed)
        assert keeper.failure == "a write failed"
