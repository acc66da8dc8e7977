"""A DataLoader worker that exits with a code, through the CLI: real workers, real exits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Cli

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

SPEC = """\
reprospec: 1
name: worker-exit-zero
environment: {device: cpu}
workload:
  model: {builtin: mlp, params: {hidden: 8}}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 4, num_workers: 2}
  phases: [{name: train, steps: 3}]
  faults:
    - {kind: exit, code: 0, where: worker, at: {phase: train, step: 2}}
run: {timeout: 60s, stall: 10s, preload: [torch]}
expect: {outcome: error, exception: RuntimeError}
"""


def test_a_worker_that_exits_with_0_is_an_error_of_the_worker(cli: Cli, tmp_path: Path) -> None:
    """spec-format.md: `exit` in a worker is `error` `RuntimeError`, `where: worker`, whatever
    its code. Code 0 was `crash (worker)` with no signal, since the harness named
    only non-zero exits; and under a 10 s `run.stall` a hang, the harness waiting its whole
    10 s grace for a worker to die that torch had already seen dead (at its 5 s check)."""
    spec = tmp_path / "exit0.yaml"
    spec.write_text(SPEC)
    result = cli("run", str(spec))
    (cell,) = result.results()["cells"]
    outcome = cell["attempts"][0]["outcome"]
    assert result.code == 0, (cell["verdict"], outcome)
    assert (outcome["kind"], outcome["signal"], outcome["where"]) == ("error", None, "worker")
    assert (outcome["exception"], outcome["exit_code"]) == ("RuntimeError", 1)
    assert outcome["signature"].startswith("error:RuntimeError:worker"), outcome["signature"]
    assert "exited with code 0" in outcome["detail"], outcome["detail"]
