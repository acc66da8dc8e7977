"""The logs of failed builds kept under the environments folder (`.failed/KEY.build.log`,
slurm's preflight keeps one per environment whose build failed): `envs prune` never removed
them and `envs list` never said them, so they piled up unseen. They are listed (how many,
their size) and pruned by the environments' rule: by age, or every one with --all."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from reprospec import venvs
from tests.functional.venvs.test_unreadable import envs_cli


def test_failed_build_logs_are_listed_and_pruned_by_age(tmp_path: Path) -> None:
    root = tmp_path / "envs"
    old = venvs.failed_build_log(root, "0" * 16)
    new = venvs.failed_build_log(root, "1" * 16)
    old.parent.mkdir(parents=True)
    old.write_text("error: No solution found\n")
    new.write_text("error: the build backend returned an error\n")
    month = time.time() - 40 * 86400
    os.utime(old, (month, month))
    listed = envs_cli(root, tmp_path, "list")
    assert f"2 failed build logs in {root / venvs.FAILED}: " in listed.stdout, listed.stdout
    rows = json.loads(envs_cli(root, tmp_path, "list", "--format", "json").stdout)
    assert [(r["kind"], r["key"]) for r in rows] == [
        ("failed-build-log", "1" * 16),
        ("failed-build-log", "0" * 16),
    ]
    assert rows[1]["path"] == str(old)
    # The default rule (unused for 30 days): the old one goes, the new one stays.
    pruned = envs_cli(root, tmp_path, "prune")
    assert f"removed failed build log {old}  " in pruned.stdout, pruned.stdout
    assert "removed 0 environments and 1 failed build log, " in pruned.stderr, pruned.stderr
    assert not old.exists()
    assert new.exists()
    kept = envs_cli(root, tmp_path, "prune", "--all", "--dry-run")
    assert f"would remove failed build log {new}  " in kept.stdout, kept.stdout
    assert new.exists()
    envs_cli(root, tmp_path, "prune", "--all")
    assert not new.exists()
    assert "failed build log" not in envs_cli(root, tmp_path, "list").stdout
