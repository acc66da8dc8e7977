"""Command lines and archive names holding bytes that are not UTF-8: recorded as a shell
reads them back, never an internal UnicodeEncodeError after the attempts ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.support.cli import ROOT, Cli

SPEC = "reprospec: 1\nname: foreign\ncommand: python -c pass\n"


def test_a_bundle_named_with_a_byte_not_utf8_is_written_verified_and_rerun(
    cli: Cli, tmp_path: Path
) -> None:
    # `bundle -o b$'\xfe'.tar.gz` ended with an internal UnicodeEncodeError writing its
    # README; --verify and `run b$'\xfe'.tar.gz` did storing their command line.
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    ran = cli("run", str(spec))
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "b\udcfe.tar.gz"
    # Its lines name the archive by its bytes (a terminal shows them): read as bytes.
    packed = subprocess.run(
        [sys.executable, "-m", "reprospec", "bundle", ran.latest_run().name, "-o", str(archive),
         "--verify", "--out", str(ran.out)],
        capture_output=True, timeout=300, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    stderr = packed.stderr.decode("utf-8", "replace")
    assert packed.returncode == 0, stderr
    assert "internal error" not in stderr
    with tarfile.open(archive) as tar:
        (readme,) = (m for m in tar.getmembers() if m.name.endswith("/README.md"))
        handle = tar.extractfile(readme)
        assert handle is not None
        assert "b\\xfe.tar.gz" in handle.read().decode("utf-8")
    rerun = cli("run", str(archive), "--yes")
    assert rerun.code == 0, rerun.stderr
    results = json.loads((rerun.latest_run() / "results.json").read_bytes().decode("utf-8"))
    assert f"reprospec run $'{tmp_path}/b\\xfe.tar.gz' --yes" in results["command_line"]


def test_an_interpreter_in_a_folder_whose_path_is_not_utf8_runs(cli: Cli, tmp_path: Path) -> None:
    # `--python python3` found by PATH in such a folder, and no --python where the engine's
    # own interpreter lives in one: the local runner's shims ended the run with an internal
    # UnicodeEncodeError; the resolved path is named by its bytes.
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    found = tmp_path / "bin\udcfe"
    found.mkdir()
    (found / "python3").symlink_to(sys.executable)
    path = f"{found}{os.pathsep}{os.environ.get('PATH', '')}"
    ran = cli("run", str(spec), "--python", "python3", env={"PATH": path})
    assert ran.code == 0, ran.stderr
    assert "internal error" not in ran.stderr
    # The venv itself reached through a folder so named: sys.executable is that path.
    venv = tmp_path / "v\udcfe"
    venv.symlink_to(sys.prefix, target_is_directory=True)
    own = venv / Path(sys.executable).relative_to(sys.prefix)
    done = subprocess.run(
        [own, "-m", "reprospec", "run", str(spec), "--out", str(tmp_path / "own")],
        capture_output=True, timeout=300, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "internal error" not in stderr
