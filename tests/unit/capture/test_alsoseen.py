"""The failures a capture saw besides the one its spec expects (capture/alsoseen.py)."""

from __future__ import annotations

import shlex
from dataclasses import replace

import yaml

from reprospec.capture.alsoseen import as_often, came_back, matched_by, set_expect
from reprospec.capture.command import _also_seen, _description, _judged, observe
from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import AttemptResult, NotRun, Outcome

SEGV = "crash:SIGSEGV:main:strlen@libc"


def attempt(number: int, outcome: Outcome | NotRun) -> AttemptResult:
    return AttemptResult(
        attempt=number, duration_s=0.1, outcome=outcome, matched=False, mismatches=(), logs=""
    )


def value_error() -> Outcome:
    return Outcome(
        "error", exception="ValueError", message="bad batch", step=2, signature="error:ValueError"
    )


def segv(signature: str = SEGV) -> Outcome:
    return Outcome("crash", signal="SIGSEGV", where="main", step=2, signature=signature)


def mixed_attempts() -> list[AttemptResult]:
    """A user's t.py over 10 attempts: 5 ValueError, 4 SIGSEGV, 1 pass."""
    kinds = [value_error()] * 5 + [segv()] * 4 + [Outcome("pass", signature="pass")]
    return [attempt(n, o) for n, o in enumerate(kinds, 1)]


def test_two_counts_chance_could_swap_are_as_often() -> None:
    assert as_often(5, 4)
    assert as_often(5, 5)
    assert as_often(3, 1)  # 4 attempts of either: 3 to 1 says little
    assert not as_often(9, 1)
    assert not as_often(40, 10)


def test_the_set_argument_reads_back_as_the_expect_it_was_made_from() -> None:
    expect: JsonObject = {
        "outcome": "error",
        "exception": "ValueError",
        "message": r"loss is nan at step \d+, 'x'",
        "step": "2..4",
        "rate": ">0",
        "signal": ["SIGSEGV", "SIGBUS"],
    }
    argument = set_expect(expect)
    (word,) = shlex.split(argument)  # one word for a shell
    key, _, value = word.partition("=")
    assert key == "expect"
    assert yaml.safe_load(value) == expect
    assert (
        set_expect({"outcome": "fail", "rate": ">0"}) == """'expect={outcome: fail, rate: ">0"}'"""
    )


def test_what_else_came_back_is_counted_most_common_first() -> None:
    attempts = [
        attempt(1, value_error()),
        attempt(2, segv()),
        attempt(3, segv()),
        attempt(4, Outcome("pass", signature="pass")),
        attempt(5, NotRun("no image")),
    ]
    assert came_back(attempts, "error:ValueError") == f"{SEGV} in 2, pass in 1, infra-error in 1"
    assert came_back(attempts[:1], "error:ValueError") == ""


def test_the_failure_the_spec_does_not_expect_is_said_with_how_to_target_it() -> None:
    # 4 of 10 attempts crashed with SIGSEGV and neither the console nor the spec
    # said so; the spec was about the ValueError, 5 to 4 by chance.
    observed = observe(mixed_attempts())
    assert (observed.signature, observed.matched, observed.attempts) == ("error:ValueError", 5, 10)
    (other,) = observed.others
    assert (other.signature, other.matched, other.attempts) == (SEGV, 4, 10)
    said = _also_seen(observed, "reprospec run two.yaml")
    assert said[0] == (
        f"also seen: {SEGV} in 4/10 attempts, which the spec's expect does not match; for it: "
        "reprospec run two.yaml --set "
        """'expect={outcome: crash, signal: SIGSEGV, where: main, step: 2, rate: ">0"}'"""
    )
    assert said[1].startswith(
        f"error:ValueError is not surely more common than {SEGV}: 5 to 4 of 10 attempts is "
        "within chance, so which one the spec expects may be chance; to chase the other"
    )
    assert said[2] == (
        "for any failure (9/10): reprospec run two.yaml --set "
        """'expect={outcome: fail, rate: ">0"}'"""
    )
    description = _description(("python", "t.py"), observed, None)
    assert f"It also ended `{SEGV}` in 4 of 10 attempts, which `expect` does not match" in (
        description
    )
    assert (
        f"`error:ValueError` is not surely more common than `{SEGV}`: 5 to 4 of 10 attempts "
        "is within chance, so which one the spec expects may be chance."
    ) in description


def test_a_far_rarer_failure_is_said_but_not_called_as_often() -> None:
    attempts = [attempt(n, value_error()) for n in range(1, 10)] + [attempt(10, segv())]
    said = _also_seen(observe(attempts), "reprospec run s.yaml")
    assert said[0].startswith(f"also seen: {SEGV} in 1/10 attempts")
    assert not any("chance" in line for line in said)


def test_a_crash_whose_native_frame_went_unread_is_not_another_failure() -> None:
    attempts = [attempt(1, segv()), attempt(2, segv()), attempt(3, segv("crash:SIGSEGV:main"))]
    observed = observe(attempts)
    assert observed.signature == SEGV
    assert observed.others == ()
    assert _also_seen(observed, "reprospec run s.yaml") == []


def test_one_failure_says_nothing_more() -> None:
    observed = observe([attempt(1, value_error()), attempt(2, Outcome("pass", signature="pass"))])
    assert observed.others == ()
    assert "also" not in _description(("python", "t.py"), observed, None)


def test_two_failures_as_common_are_said_to_be_so() -> None:
    observed = observe([attempt(1, segv()), attempt(2, value_error())])
    assert observed.signature == SEGV  # the first seen of two as common
    assert _also_seen(observed, "reprospec run s.yaml")[1] == (
        f"{SEGV} and error:ValueError came as often (1 of 2 each): which one the spec expects "
        "is chance; to chase the other, run the spec for it as above, or capture again"
    )


def test_a_hang_at_a_phase_that_the_written_expect_matches_is_counted_as_its_own() -> None:
    # `expect: {outcome: hang}` matches a hang at any phase, as the run judges:
    # 3 hangs and 1 hang:epoch are 4/4 of the spec's failure, no "also seen".
    hangs = [Outcome("hang", signature="hang")] * 3
    kinds = [*hangs, Outcome("hang", phase="epoch", step=0, signature="hang:epoch")]
    attempts = [attempt(n, o) for n, o in enumerate(kinds, 1)]
    assert matched_by(attempts, "hang:epoch", {"outcome": "hang"}) == 1
    assert matched_by(attempts, "hang:epoch", {"outcome": "hang", "phase": "load"}) == 0
    judged = _judged(observe(attempts), attempts)
    assert (judged.signature, judged.matched, judged.attempts) == ("hang", 4, 4)
    assert judged.others == ()
    assert _also_seen(judged, "reprospec run spec.yaml") == []


def test_a_failure_the_written_expect_does_not_match_stays_another_one() -> None:
    attempts = mixed_attempts()
    judged = _judged(observe(attempts), attempts)
    assert (judged.matched, [(o.signature, o.matched) for o in judged.others]) == (5, [(SEGV, 4)])


def test_the_description_names_no_pid_of_the_capture_s_own_processes() -> None:
    # `a DataLoader worker pid 23263 died of SIGSEGV` went into the spec, and every
    # report of its runs showed that stale pid above its own failure's.
    worker = Outcome(
        "crash",
        signal="SIGSEGV",
        where="worker",
        signature="crash:SIGSEGV:worker",
        detail="a DataLoader worker pid 23263 died of SIGSEGV (Segmentation fault); "
        "the main process exited 1",
    )
    description = _description(("python", "t.py"), observe([attempt(1, worker)]), None)
    assert description.splitlines()[1] == (
        "It ended `crash:SIGSEGV:worker` in 1 of 1 attempt: a DataLoader worker died of "
        "SIGSEGV (Segmentation fault); the main process exited 1"
    )
    child = replace(worker, detail="child pid 4242 (./test_ops) died of SIGSEGV, its core")
    description = _description(("python", "t.py"), observe([attempt(1, child)]), None)
    assert "a child process (./test_ops) died of SIGSEGV, its core" in description
    numbered = replace(worker, detail="DataLoader worker 1 (pid 42) died of SIGSEGV")
    description = _description(("python", "t.py"), observe([attempt(1, numbered)]), None)
    assert description.endswith(": DataLoader worker 1 died of SIGSEGV")
