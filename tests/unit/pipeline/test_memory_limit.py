"""reached_memory_limit: a MemoryError (by its type) under environment.memory is said."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import ChainLink, GroupMember, Outcome
from reprospec.pipeline.attempt import reached_memory_limit


def _plan(tmp_path: Path) -> AttemptPlan:
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nenvironment:\n  memory: 200m\ncommand: 'true'\n"
        "expect: {outcome: pass}\n"
    )
    plan = reprospec.plan_run(reprospec.load_spec(spec), reprospec.RunOptions(out=tmp_path / "o"))
    return plan.attempts[0]


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        (Outcome("error", exit_code=1, exception="MemoryError"), True),
        (Outcome("error", exit_code=1, exception="builtins.MemoryError"), True),
        (Outcome("error", exit_code=3, message="MemoryError"), True),
        (Outcome("error", exit_code=3, message="MemoryError: out of room"), True),
        # A GPU's out of memory is no host limit's: environment.memory does not bound it.
        (Outcome("error", exit_code=1, exception="torch.OutOfMemoryError"), False),
        (
            Outcome("error", exit_code=1, exception="torch.cuda.OutOfMemoryError", message="x"),
            False,
        ),
        (Outcome("error", exit_code=3, message="torch.OutOfMemoryError: CUDA out"), False),
        # A message that mentions a MemoryError is not one.
        (
            Outcome("error", exit_code=1, exception="RuntimeError", message="no MemoryError seen"),
            False,
        ),
        (Outcome("error", exit_code=3, message="worker said MemoryError"), False),
        (
            Outcome(
                "error",
                exit_code=1,
                exception="RuntimeError",
                chain=(ChainLink("RuntimeError", "wrapped"), ChainLink("MemoryError", None)),
            ),
            True,
        ),
        # A group in the chain (`raise RuntimeError(...) from group`): its member was not
        # read, where `expect.exception: MemoryError` met it.
        (
            Outcome(
                "error",
                exit_code=1,
                exception="RuntimeError",
                chain=(
                    ChainLink(
                        "ExceptionGroup",
                        "g (1 sub-exception)",
                        "cause",
                        (GroupMember("MemoryError"),),
                    ),
                    ChainLink("RuntimeError", "wrapped"),
                ),
            ),
            True,
        ),
    ],
)
def test_a_memory_error_by_type_only(tmp_path: Path, outcome: Outcome, said: bool) -> None:
    found = reached_memory_limit(_plan(tmp_path), outcome)
    assert bool(found) == said, found
    if said:
        assert "memory limit (200.0 MiB, environment.memory): MemoryError" in found[0]


def test_cxxs_bad_alloc_is_read_from_the_crashs_exception_not_from_stderrs_words(
    tmp_path: Path,
) -> None:
    """C++'s uncaught std::bad_alloc is the crash's exception (outcome/cxxterminate.py), and
    only that: a SIGABRT whose exception is another type is no limit's. Whether a bad_alloc
    that another abort follows is the crash's exception is the classifier's to say
    (tests/functional/outcome/test_cxx_terminate.py runs one)."""
    plan = _plan(tmp_path)
    bad_alloc = Outcome("crash", signal="SIGABRT", exception="std::bad_alloc", message="x")
    (said,) = reached_memory_limit(plan, bad_alloc)
    assert "memory limit (200.0 MiB, environment.memory): std::bad_alloc" in said
    other = Outcome("crash", signal="SIGABRT", exception="std::logic_error")
    assert reached_memory_limit(plan, other) == ()
