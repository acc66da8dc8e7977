"""A run made with `RunOptions.read_only` (a minimize candidate's: the workdir its links
name) whose folder is gone since: `bundle` and a local run's `--resume` never read it, and
were refused 'read_only: ...: no such folder; give an existing folder', a folder the user
never gave."""

from __future__ import annotations

import json
import shutil
import tarfile
import threading
from pathlib import Path

import reprospec
from tests.support.cli import Cli

SPEC = "reprospec: 1\nname: ro\ncommand: 'true'\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"


def test_a_gone_read_only_folder_is_no_matter_to_bundle_or_a_local_resume(
    cli: Cli, tmp_path: Path
) -> None:
    spec, out, folder = tmp_path / "ro.yaml", tmp_path / "out", tmp_path / "workdir"
    spec.write_text(SPEC)
    folder.mkdir()
    cancel = threading.Event()
    cancel.set()  # nothing runs: the attempts are left to the resume
    first = reprospec.run(spec, reprospec.RunOptions(out=out, read_only=folder), cancel=cancel)
    assert first.interrupted
    shutil.rmtree(folder)

    resumed = cli("run", "--resume", first.run_id, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    data = json.loads((out / "runs" / first.run_id / "results.json").read_text())
    assert [a["outcome"]["kind"] for a in data["cells"][0]["attempts"]] == ["pass", "pass"]

    archive = tmp_path / "ro.tar.gz"
    bundled = cli("bundle", first.run_id, "-o", str(archive), "--out", str(out), timeout=300)
    assert bundled.code == 0, bundled.stderr
    assert "read_only" not in bundled.stderr
    with tarfile.open(archive) as tar:
        assert tar.getnames()
