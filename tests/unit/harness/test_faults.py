"""Fault injection's rules in-process: matching, probability, disarming, refusals."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from reprospec.harness import HARNESS_ROOT

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import injection
from reprospec_harness.config import ConfigError
from reprospec_harness.faults import builtin_exception, exception_class


def test_exception_class_refuses_non_exceptions() -> None:
    assert exception_class("ValueError") is ValueError
    with pytest.raises(ValueError, match="not an exception class"):
        exception_class("os.path")


def test_the_spec_refuses_the_undotted_fault_exceptions_the_harness_refuses() -> None:
    """Twins: the harness (stdlib only, it cannot import the engine) looks an undotted fault
    `exception` up among the builtins, and the spec's validation refuses, before a run, a
    name it would not find. Drifted apart, a spec validates and its fault fails at start,
    or a fault the harness raises is refused. Every name `builtins` holds, and a few it
    does not, get one answer from both."""
    import builtins

    from reprospec.spec.checks.expect import _is_builtin_exception

    names = [*dir(builtins), "NotAnError", "", "os", "Warning", "BaseExceptionGroup"]
    differ = [n for n in names if _is_builtin_exception(n) != (builtin_exception(n) is not None)]
    assert differ == []
    assert builtin_exception("KeyError") is KeyError
    assert builtin_exception("print") is None


# ---- which faults fire where (pure) --------------------------------------------------------


def plan(*faults: dict[str, Any], attempt: int = 1, seed: int = 0) -> injection.FaultPlan:
    return injection.FaultPlan(
        [injection.decide(n, f, seed, attempt) for n, f in enumerate(faults)]
    )


def test_probability_is_decided_once_per_seed_attempt_and_fault() -> None:
    spec = {"kind": "segfault", "probability": 0.5}
    first = [plan(spec, attempt=a).faults[0].armed for a in range(1, 41)]
    again = [plan(spec, attempt=a).faults[0].armed for a in range(1, 41)]
    assert first == again  # rerunning attempt N does what attempt N did
    assert 10 < sum(first) < 30
    assert not plan({**spec, "probability": 0}).faults[0].armed
    assert plan({**spec, "probability": 1}).faults[0].armed


def test_when_false_disarms() -> None:
    fault = plan({"kind": "abort", "when": False}).faults[0]
    assert (fault.armed, fault.reason) == (False, "when is false")


@pytest.mark.parametrize(
    ("when", "armed"),
    [
        *[(when, False) for when in ("no", " OFF ", "", "0", 0, "false")],
        *[(when, True) for when in ("yes", "On", "1", 1, True)],
    ],
)
def test_when_reads_the_words_the_schema_accepts(when: object, armed: bool) -> None:
    assert plan({"kind": "abort", "when": when}).faults[0].armed is armed


def test_when_of_another_word_is_refused_not_read_as_true() -> None:
    with pytest.raises(ConfigError, match=r"^workload.faults\[0\].when: expected true or false"):
        plan({"kind": "abort", "when": "flase"})


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("NotAnError", "not an exception class"),
        ("os.path", "not an exception class"),
        ("reprospec_no_such_module.Error", "No module named 'reprospec_no_such_module'"),
    ],
)
def test_a_raise_fault_of_no_class_is_refused_up_front(name: str, why: str) -> None:
    # It was refused only when the fault fired, by a ValueError of its own, which the run
    # judged an `error` as if the incident's: a typo reproduced `outcome: error`.
    with pytest.raises(ConfigError, match=why) as caught:
        plan({"kind": "raise", "exception": name})
    assert caught.value.field == "workload.faults[0].exception"
    # A fault this cell leaves out is not this cell's to judge.
    assert not plan({"kind": "raise", "exception": name, "when": False}).faults[0].armed


def test_a_skip_allreduce_left_out_of_a_cell_without_ranks_is_no_error() -> None:
    # `when` comes first, as for `rank`: a matrix whose other cells are distributed.
    fault = plan({"kind": "skip_allreduce", "when": False}).faults[0]
    assert (fault.armed, fault.reason) == (False, "when is false")
    with pytest.raises(ConfigError, match=r"skip_allreduce needs workload\.distributed"):
        plan({"kind": "skip_allreduce", "at": {"step": 2}})


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^workload.faults\[0\].kind: unknown fault kind 'boom'"):
        plan({"kind": "boom"})


def test_main_matching_rules() -> None:
    match = injection._main_matches
    assert match({}, None, None, None)  # no `at`: after setup
    assert not match({}, "train", None, None)
    assert match({"phase": "train"}, "train", None, None)  # phase start only
    assert not match({"phase": "train"}, "train", 1, "start")
    assert match({"phase": "validation", "step": 7}, "validation", 7, "start")
    assert not match({"phase": "validation", "step": 7}, "validation", 7, "forward")
    assert not match({"phase": "validation", "step": 7}, "train", 7, "start")
    assert match({"phase": "train", "step": 3, "stage": "loss"}, "train", 3, "loss")


def test_worker_faults_match_every_given_key_and_fire_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fired: list[dict[str, Any]] = []
    monkeypatch.setitem(injection.TRIGGERS, "segfault", lambda spec: fired.append(dict(spec)))
    faults = plan(
        {"kind": "segfault", "where": "worker", "at": {"phase": "validation", "index": 5}}
    )
    faults.fire_worker(worker=0, phase="train", step=1, index=5)
    faults.fire_main(
        phase="validation", step=1, stage="start"
    )  # a worker fault never fires in main
    assert fired == []
    faults.fire_worker(worker=1, phase="validation", step=1, index=5)
    faults.fire_worker(worker=1, phase="validation", step=2, index=5)
    assert len(fired) == 1
    assert fired[0]["where"] == "worker"


def test_when_false_disarms_a_rank_fault_outside_distributed() -> None:
    # A matrix over `distributed` on and off: the rank fault is left out of the plain cells.
    fault = injection.decide(0, {"kind": "abort", "rank": 1, "when": False}, 0, 1)
    assert (fault.armed, fault.reason) == (False, "when is false")
    with pytest.raises(ConfigError, match=r"rank needs workload\.distributed"):
        injection.decide(0, {"kind": "abort", "rank": 1, "when": True}, 0, 1)


def test_an_undotted_name_this_python_lacks_says_which_python_it_is() -> None:
    # The spec's builtins were checked on the engine's Python: ExceptionGroup validates on
    # 3.11 and a 3.10 attempt has none. "is not an exception class" alone read as a typo.
    version = ".".join(str(part) for part in sys.version_info[:3])
    with pytest.raises(ValueError, match=f"not a builtin of this attempt's Python {version}$"):
        exception_class("NotAnErrorHere")
