"""A materialized cell that needs a secret refuses to start without it (a real child)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.materialize import secret_bundle


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, tuple[str, ...]]:
    return secret_bundle(tmp_path, monkeypatch)


def test_a_cell_refuses_to_start_without_the_secret_it_needs(
    bundle: tuple[Path, tuple[str, ...]],
) -> None:
    root, _ = bundle
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "DATASET_URL")}
    done = subprocess.run(
        ["bash", str(root / "run.sh"), "1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3  # docker could not run a cell: run.sh exits 3
    said = [line for line in done.stdout.splitlines() if line.startswith("== cell ")]
    assert len(said) == 1
    assert said[0].startswith("== cell 1 [workers=0]: HF_TOKEN is unset: export it first (a secret")
    assert said[0].endswith("; not run")
    assert not (root / "results").exists(), "nothing ran, nothing was built"
