"""minimize's first step, the settings: what isolate found the failure needs, and whether
the program's passes can keep it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reprospec.core.inputs import Cell
from reprospec.isolation.candidates import AttemptKind
from reprospec.isolation.differences import Difference
from reprospec.isolation.state import StoredProbe
from reprospec.minimize import settings
from reprospec.minimize.hangplace import NOWHERE
from reprospec.minimize.settings import Reduced
from reprospec.outcome.hangsource import on_disk

FAILING = Cell("b=1,d=1", 0, {"b": 1, "d": 1})
NONE_SET = Cell("b=0,d=0", 1, {"b": 0, "d": 0})
D_ALONE = Cell("b=0,d=1", 2, {"b": 0, "d": 1})
B_ALONE = Cell("b=1,d=0", 3, {"b": 1, "d": 0})
PAIR = (Difference("matrix.b", 0, 1), Difference("matrix.d", 0, 1))


def test_an_and_no_passing_cell_guards_is_a_caveat() -> None:
    """isolate: b=1 AND d=1; the passing cells set neither, so a candidate that stops
    reading `b` (crashing with d=1 alone) passes every check."""
    reduced = Reduced(FAILING, FAILING, NONE_SET, needed=PAIR)
    caveat = reduced.unguarded([NONE_SET])
    assert caveat.startswith(
        "isolate found the failure needs b=1 AND d=1, and no passing cell sets all of them "
        "but b, nor all of them but d, so"
    )
    assert "the result may fail where the original does not" in caveat
    # d=1 alone passing holds candidates to b, not to d (a candidate that stops reading d,
    # passes it): still said, of d alone. Both one-smaller cells: no caveat.
    assert "sets all of them but d, so" in reduced.unguarded([NONE_SET, D_ALONE])
    assert reduced.unguarded([NONE_SET, D_ALONE, B_ALONE]) == ""
    # One needed value, or none found, is no AND to lose.
    assert Reduced(FAILING, FAILING, NONE_SET, needed=PAIR[:1]).unguarded([NONE_SET]) == ""
    assert Reduced(FAILING, FAILING, NONE_SET).unguarded([NONE_SET]) == ""
    # Out of isolate's budget the AND is its best guess, as the settings line says; the
    # caveat said "isolate found the failure needs b=1 AND d=1" beside that line.
    guessed = Reduced(FAILING, FAILING, NONE_SET, needed=PAIR, status="budget")
    assert guessed.unguarded([NONE_SET]).startswith(
        "isolate's best guess is that the failure needs b=1 AND d=1, and no passing cell sets"
    )


def test_a_settings_step_out_of_budget_says_its_answer_is_a_guess() -> None:
    """isolate ran out of its share of the budget (a 4% failure, 40 attempts) with setup=full
    at 98.6%, short of its 99.5%: the line said `log=quiet -> loud (does not matter; the
    failure needs setup=full, ...)` as of an answer. It says what is known: seen failing
    without log=quiet, and the rest is isolate's best guess."""
    setup, log = Difference("matrix.setup", "none", "full"), Difference("matrix.log", "a", "b")
    failing = Cell("setup=full,log=b", 0, {"setup": "full", "log": "b"})
    reduced_cell = Cell("setup=full,log=a", 0, {"setup": "full", "log": "a"})
    passing = Cell("setup=none,log=a", 1, {"setup": "none", "log": "a"})
    guess = Reduced(
        reduced_cell, failing, passing, kept=(setup,), reset=(log,), status="budget", attempts=40
    )
    assert guess.sentence() == (
        "log=b -> a (seen failing without it; isolate's best guess, its budget spent before "
        "it was sure: the failure needs setup=full, isolate against setup=none,log=a, 40 attempts)"
    )
    answer = Reduced(
        reduced_cell, failing, passing, kept=(setup,), reset=(log,), status="isolated", attempts=9
    )
    assert answer.sentence() == (
        "log=b -> a (does not matter; the failure needs setup=full, isolate against "
        "setup=none,log=a, 9 attempts)"
    )


def test_step_1_compares_the_places_of_every_matched_attempt_not_the_first_of_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A main thread busy in `while not done: check()` reads `check` in one dump and
    `<module>` in another: the smaller configuration's first hang in `<module>` against
    the cell's first in `check` was refused, where both sides hung in both."""
    runs: dict[str, list[str]] = {}
    MATCH: tuple[AttemptKind, ...] = ("match",)

    def attempt(n: int, place: str) -> SimpleNamespace:
        ran = SimpleNamespace(signature="hang")
        return SimpleNamespace(attempt=n, matched=True, ran=ran, native=None, place=place)

    def same(full: list[str], chosen: list[str]) -> str | None:
        runs.update(full=full, chosen=chosen)
        probes = [
            StoredProbe(name, candidate, "failing", MATCH * len(runs[name]), name)
            for name, candidate in (("full", (0, 1)), ("chosen", (0,)))
        ]
        monkeypatch.setattr(settings, "stored_probes", lambda _folder: probes)
        return settings._same_failure(Path("state"), (0, 1), (0,), Path("out"), on_disk)

    def load(path: Path) -> SimpleNamespace:
        attempts = [attempt(n, p) for n, p in enumerate(runs[path.parent.name])]
        return SimpleNamespace(cells=[SimpleNamespace(attempts=attempts)])

    monkeypatch.setattr(settings, "find_run", lambda run_id, out: out / run_id / "results.json")
    monkeypatch.setattr(settings, "load_run", load)
    monkeypatch.setattr(settings, "attempt_place", lambda _folder, a, _source: a.place)
    assert same(["check", "<module>"], ["<module>", "check"]) is None
    # Its places are a set (hangplace.moved): one attempt where the cell's hung and one
    # elsewhere is taken, as step 2 takes a busy thread seen in both.
    assert same(["spin"], ["spin", "step"]) is None
    # Step 1 does not look again: one sighting elsewhere alone is refused.
    assert same(["spin"], ["step"]) == "as a hang in step, not in spin as the failing cell's"
    # A hang none of whose attempts sits as any of the cell's did is still refused.
    assert same(["check", "<module>"], ["w2 -> threading.py:wait"]) == (
        "as a hang in w2 -> threading.py:wait, not in check / in <module> as the failing cell's"
    )
    # A place in no frame of the program's own code, said as the report says it (review).
    assert same([NOWHERE], ["w1, w2"]) == (
        "as a hang in w1, w2, not outside the program's code as the failing cell's"
    )
    assert same(["w1, w2"], [NOWHERE]) == (
        "as a hang outside the program's code, not in w1, w2 as the failing cell's"
    )


@pytest.mark.parametrize("interrupted", [True, False])
def test_step_1_refused_on_an_unwritable_out_says_why_and_what_to_give(
    monkeypatch: pytest.MonkeyPatch, interrupted: bool
) -> None:
    """An interrupted step 1 rerun on a read-only --out goes on from where it stopped, under
    the --budget just given: `the earlier run's --budget` looped the user back to the same
    refusal, and `past its earlier run` was not what happened."""
    import threading

    from reprospec.core.jsontypes import JsonValue
    from reprospec.core.runoptions import RunOptions
    from reprospec.errors import UsageError
    from reprospec.isolation import driver
    from reprospec.isolation.state import CannotGoOn

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise CannotGoOn("refused", "Read-only", interrupted=interrupted)

    monkeypatch.setattr(driver, "isolate_spec", refuse)
    document: dict[str, JsonValue] = {
        "matrix": {"b": [0, 1], "d": [0, 1]},
        "command": "python prog.py",
    }
    with pytest.raises(UsageError) as told:
        settings.reduce_settings(
            Path("spec.yaml"),
            document,
            FAILING,
            [NONE_SET],
            SimpleNamespace(),  # type: ignore[arg-type]
            RunOptions(out=Path("out")),
            budget=40,
            min_rate=None,
            progress=lambda _line: None,
            cancel=threading.Event(),
            workdir=Path(),
        )
    said = str(told.value)
    assert said.startswith("--out out: cannot be written (Read-only), and ")
    if interrupted:
        assert (
            "minimize's step 1 (isolating the settings, at most 8 attempts) goes on from its "
            "interrupted run, whose new attempts' runs go there: give an --out that can be"
        ) in said
        assert "--budget" not in said
    else:
        assert "a --budget of 40 continues minimize's step 1" in said
        assert "(or the earlier run's --budget to see its answer again)" in said
