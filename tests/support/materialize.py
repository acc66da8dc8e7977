"""A materialized bundle of a spec that reads secrets, shared by the unit test (what the
bundle holds) and the functional one (a cell that runs without its secret)."""

from __future__ import annotations

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


def secret_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, tuple[str, ...]]:
    """The secrets set in the environment, the spec materialized: (bundle root, warnings)."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    spec_path = tmp_path / "secret.yaml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    written = write_bundle(spec, plans, tmp_path / "bundle")
    return written.root, written.warnings
