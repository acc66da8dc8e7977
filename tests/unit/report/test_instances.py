"""`run.instances` in the plan and the scheduler: N places of -j per attempt, bad counts refused."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest

import reprospec
from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import AttemptResult
from reprospec.errors import SpecError
from reprospec.plan.attempt import describe


def _spec(tmp_path: Path, run: str, matrix: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"reprospec: 1\nname: s\n{matrix}command: 'true'\nrun:\n{run}\nexpect: {{outcome: pass}}\n"
    )
    return path


@pytest.mark.parametrize(
    ("run", "matrix", "message"),
    [
        ("  instances: 0", "", "s.yaml:5:14: run.instances: expected an integer >= 1, got 0"),
        ("  instances: 300", "", "300 instances; at most 256 are allowed (docs/limits.md)"),
        (
            "  instances: ${{ matrix.n }}",
            "matrix:\n  n: [2, 0]\n",
            "(in cell n=0)",
        ),
        (
            "  instances: ${{ matrix.n }}",
            "matrix:\n  n: [2, 1000]\n",
            "1000 instances; at most 256 are allowed (docs/limits.md) (in cell n=1000)",
        ),
    ],
)
def test_bad_instance_counts_are_located_errors(
    tmp_path: Path, run: str, matrix: str, message: str
) -> None:
    with pytest.raises(SpecError) as error:
        reprospec.load_spec(_spec(tmp_path, run, matrix))
    assert any(message in problem for problem in error.value.problems), error.value.problems


def test_the_plan_shows_each_cells_instances(tmp_path: Path) -> None:
    spec = reprospec.load_spec(
        _spec(tmp_path, "  instances: ${{ matrix.n }}", "matrix:\n  n: [1, 4]\n")
    )
    plan = reprospec.plan_run(spec, reprospec.RunOptions(out=tmp_path / "out"))
    assert [(a.cell.id, a.instances) for a in plan.attempts] == [("n=1", 1), ("n=4", 4)]
    assert describe(plan.attempts[1])["instances"] == 4
    plain = reprospec.plan_run(
        reprospec.load_spec(_spec(tmp_path, "  timeout: 5s")),
        reprospec.RunOptions(out=tmp_path / "out"),
    )
    assert plain.attempts[0].instances is None
    assert "instances" not in describe(plain.attempts[0])


def test_an_attempt_of_n_instances_takes_n_of_the_j_places(tmp_path: Path) -> None:
    from reprospec.core.results import Outcome
    from reprospec.pipeline.scheduler import Scheduler

    spec = tmp_path / "places.yaml"
    spec.write_text(
        "reprospec: 1\nname: places\ncommand: 'true'\n"
        "matrix:\n  include:\n    - {cell: a, count: 1}\n    - {cell: b, count: 2}\n"
        "    - {cell: c, count: 1}\n"
        "run: {instances: '${{ matrix.count }}'}\nexpect: {outcome: pass}\n"
    )
    plan = reprospec.plan_run(reprospec.load_spec(spec), reprospec.RunOptions(out=tmp_path, jobs=2))
    lock = threading.Condition()
    in_flight: dict[str, int] = {}
    seen: list[dict[str, int]] = []

    def attempt(
        plan: AttemptPlan, _slot: tuple[str, ...], _cancel: threading.Event
    ) -> AttemptResult:
        with lock:
            in_flight[plan.cell.id] = plan.copies
            seen.append(dict(in_flight))
            lock.notify_all()
            # A one-copy attempt waits a moment for company: without the places, the
            # two-copy attempt would join it and 3 processes would run at -j 2.
            lock.wait_for(lambda: len(in_flight) > 1, timeout=0.5)
            seen.append(dict(in_flight))
            del in_flight[plan.cell.id]
        return AttemptResult(plan.attempt, 0.0, Outcome(kind="pass"), True, (), logs="")

    results = Scheduler(plan, attempt).run()
    assert sorted(results) == ["cell=a,count=1", "cell=b,count=2", "cell=c,count=1"]
    assert max(sum(now.values()) for now in seen) <= 2
    assert all(now == {"cell=b,count=2": 2} for now in seen if "cell=b,count=2" in now)


def test_instances_that_failed_two_ways_are_named_by_how_each_failed() -> None:
    # One instance crashed and the other hung until the timeout: the detail read
    # `instances 0, 1 failed`, which said neither which hung nor that one did.
    from reprospec.core.results import InstanceResult, Outcome
    from reprospec.report.instances import first_failure

    def one(instance: int, kind: Literal["pass", "crash", "hang"]) -> InstanceResult:
        return InstanceResult(instance, Outcome(kind), matched=kind == "pass")

    mixed = [one(0, "hang"), one(1, "crash"), one(2, "crash"), one(3, "pass")]
    assert first_failure(mixed, 1) == (
        "instance 1 of 4 crashed first; instance 0 hung, instances 1, 2 crashed, instance 3 passed"
    )
    alike = [one(0, "pass"), one(1, "crash"), one(2, "crash")]
    assert (
        first_failure(alike, 2)
        == "instance 2 of 3 crashed first; instances 1, 2 crashed, instance 0 passed"
    )


def test_an_instance_that_passed_before_the_first_failure_says_when_it_ended() -> None:
    # Instance 1 exited 0 at once and its peers hung waiting for it: the detail read
    # `instance 0 of 3 hung first; instances 0, 2 hung, instance 1 passed`, as if instance
    # 1 had run with them to the end, where its early exit is the likely cause.
    from reprospec.core.results import InstanceResult, Outcome
    from reprospec.report.instances import first_failure

    hung = [
        InstanceResult(0, Outcome("hang"), matched=False, end_s=3.0),
        InstanceResult(1, Outcome("pass", exit_code=0), matched=True, end_s=0.21),
        InstanceResult(2, Outcome("hang"), matched=False, end_s=3.01),
        InstanceResult(3, Outcome("pass", exit_code=0), matched=True, end_s=3.2),
    ]
    assert first_failure(hung, 0) == (
        "instance 0 of 4 hung; instances 0, 2 hung, instance 3 passed, instance 1 passed "
        "but ended before instance 0 (instance 1 exited with code 0 at 0.21s; instance 0 at "
        "3.00s, from the start barrier's release)"
    )
    # Instances that all hung were each killed at their deadline: none hung `first`; a
    # crash ends when the program does, and is first.
    crashed = [replace(hung[0], outcome=Outcome("crash", signal="SIGSEGV"), end_s=1.0), *hung[1:]]
    assert first_failure(crashed, 0).startswith("instance 0 of 4 crashed first; ")


def test_of_instances_that_all_hung_the_lowest_numbered_is_reported() -> None:
    """Each hung instance was killed at its own deadline, so which was killed first is the
    engine's order, not the program's: the attempt reported the hang killed first (instance
    2 here) as its outcome and logs, only the word `first` dropped. The lowest numbered
    now; a crash, which ends when the program does, is still chosen by time."""
    from reprospec.core.results import InstanceResult, NotRun, Outcome
    from reprospec.pipeline.attempt import chosen_instance

    hung = [
        InstanceResult(0, Outcome("pass", exit_code=0), matched=True, end_s=0.2),
        InstanceResult(1, Outcome("hang"), matched=False, end_s=3.02),
        InstanceResult(2, Outcome("hang"), matched=False, end_s=3.0),
        InstanceResult(3, Outcome("hang"), matched=False, end_s=3.01),
    ]
    assert chosen_instance(hung).instance == 1
    crashed = [*hung[:3], replace(hung[3], outcome=Outcome("crash", signal="SIGSEGV"), end_s=1.0)]
    assert chosen_instance(crashed).instance == 3
    assert chosen_instance(hung[:1]).instance == 0
    not_run = [*hung[:2], replace(hung[2], outcome=NotRun("no GPU")), hung[3]]
    assert chosen_instance(not_run).instance == 2
