"""What `materialize` tells the reader of run.sh about the limits it cannot apply."""

from __future__ import annotations

from pathlib import Path

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: stuck
matrix:
  ranks: [1, 2]
command: python -c "import time; print('step 1', flush=True); time.sleep(1000)"
run: {timeout: 1m, stall: 10s}
expect: {outcome: hang}
"""


def _warnings(tmp_path: Path, text: str) -> tuple[str, ...]:
    (tmp_path / "stuck.yaml").write_text(text)
    spec = load_spec(tmp_path / "stuck.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    return write_bundle(spec, plans, tmp_path / "bundle").warnings


def test_a_stall_limit_is_named_as_not_applied_by_run_sh(tmp_path: Path) -> None:
    assert _warnings(tmp_path, SPEC) == tuple(
        f"cell {n} (ranks={n}): run.stall (10s) is not applied by run.sh: a hang ends at "
        "the timeout (1m)"
        for n in (1, 2)
    )
    # The whole-cell limit is what run.sh does apply.
    assert "timeout --kill-after=5 60 docker run" in (tmp_path / "bundle" / "run.sh").read_text()


def test_a_spec_without_a_stall_limit_is_not_warned_about(tmp_path: Path) -> None:
    assert _warnings(tmp_path, SPEC.replace(", stall: 10s", "")) == ()


def test_a_bundle_inside_its_workdir_does_not_copy_itself(tmp_path: Path) -> None:
    # `materialize stuck.yaml -o bundle` in the spec's folder: the workdir holds the bundle.
    # Only the files the cells name are carried (a `python -c` names none): not the bundle
    # half written, not the spec (it is spec.yaml at the top).
    _warnings(tmp_path, SPEC)
    copied = tmp_path / "bundle" / "workdirs" / "1"
    assert list(copied.iterdir()) == []
