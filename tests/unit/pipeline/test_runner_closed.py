"""stages.execute closes its runner as anything fails before the run: a runner holds the
process's remembered failures (venvs.remembered_failures) until it closes. The runner is
a stub: no process is started."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.core.runoptions import RunOptions
from reprospec.errors import InterruptedBeforeRun
from reprospec.pipeline import stages
from reprospec.plan.run import plan_run
from reprospec.store.db import Store, StoreError


class _Runner:
    def __init__(self, fails: BaseException | None) -> None:
        self.fails = fails
        self.closed = 0

    def prepare(self, attempts: object) -> None:
        del attempts
        if self.fails is not None:
            raise self.fails

    def close(self) -> None:
        self.closed += 1


def _refused(_: Path, **__: object) -> None:
    raise StoreError("the store is damaged")


def _unreadable(*_: object) -> None:
    raise OSError(5, "Input/output error")


def _full(*_: object, **__: object) -> None:
    raise StoreError("database or disk is full", full=True)


@pytest.mark.parametrize(
    "where", ["prepare interrupted", "prepare failed", "store", "files", "begin_run"]
)
def test_a_failure_before_the_run_closes_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # Only the run's end closed it: a Ctrl-C in a venv build, a damaged store or any failure
    # before the run left it open, and "python 3.12 not found" stayed for later runs (review).
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    options = RunOptions(out=tmp_path / "store", gpus="")
    plan = plan_run(reprospec.load_spec(spec), options)
    fails: BaseException | None = {
        "prepare interrupted": KeyboardInterrupt(),
        "prepare failed": RuntimeError("uv died"),
    }.get(where)
    runner = _Runner(fails)
    monkeypatch.setattr(stages, "create_runner", lambda *_, **__: runner)
    if where == "store":
        monkeypatch.setattr(stages, "Store", _refused)
    if where == "files":
        monkeypatch.setattr(stages, "program_files", _unreadable)
    if where == "begin_run":
        # A full disk as the run begins: the store refuses it after `opened` began.
        monkeypatch.setattr(Store, "begin_run", _full)
    raised = {
        "prepare interrupted": InterruptedBeforeRun,
        "prepare failed": RuntimeError,
        "store": StoreError,
        "files": OSError,
        "begin_run": StoreError,
    }[where]
    with pytest.raises(raised):
        stages.execute(plan, options)
    assert runner.closed == 1
