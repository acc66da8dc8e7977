"""A materialized cell that needs a secret refuses to start without it (a real child)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: secret-bundle
matrix:
  workers: [0, 2]
command: python -c "import os; print(len(os.environ['HF_TOKEN']))" ${{ env.SERVICE_URL }}
environment:
  env:
    HF_TOKEN: ${{ env.HF_TOKEN }}
    DATASET_URL: https://user:${{ env.DB_PASS }}@example.org/data
    WORKERS: "${{ matrix.workers }}"
expect: {outcome: pass}
"""


SECRETS = {
    "HF_TOKEN": "hf_abcdefSECRET",
    "DB_PASS": "pw-9876-xyz",
    "SERVICE_URL": "https://svc.example.org/v1",
}


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, tuple[str, ...]]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    spec_path = tmp_path / "secret.yaml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    written = write_bundle(spec, plans, tmp_path / "bundle")
    return written.root, written.warnings


def test_a_cell_refuses_to_start_without_the_secret_it_needs(
    bundle: tuple[Path, tuple[str, ...]],
) -> None:
    root, _ = bundle
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "DATASET_URL")}
    done = subprocess.run(
        ["bash", str(root / "run.sh"), "1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 125
    assert "cell 1: export HF_TOKEN first" in done.stderr
    assert not (root / "results").exists(), "nothing ran, nothing was built"
