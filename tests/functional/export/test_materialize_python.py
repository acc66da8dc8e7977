"""`materialize --python`: the bundle pins the torch build of the interpreter the cells ran with.

The images pin the runner's torch release as the build that ran (`2.13.0+cpu` from PyTorch's
cpu index, not PyPI's CUDA build). That build was read from reprospec's own interpreter even
where the cells ran on another (`run --python`), whose torch may be another build (note47).
The other interpreter here is a real venv; its torch is a distribution's metadata alone (a
CUDA build cannot be installed on this machine, and only its version is read).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import Cli

SPEC = "reprospec: 1\nname: t\ncommand: python -c 'import torch'\nexpect: {outcome: pass}\n"


def _venv_with_torch(root: Path, version: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    (site,) = root.glob("lib/python*/site-packages")
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return root / "bin" / "python"


def test_the_images_pin_the_torch_build_of_the_interpreter_given(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "t.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    python = _venv_with_torch(tmp_path / "cuda-venv", "2.13.0+cu121")
    done = cli("materialize", str(spec), "-o", str(tmp_path / "b"), "--python", str(python))
    assert done.code == 0, done.stderr
    wanted = (tmp_path / "b" / "images" / "1" / "requirements.txt").read_text().splitlines()
    assert wanted[:2] == [
        "--extra-index-url https://download.pytorch.org/whl/cu121",
        "torch==2.13.0+cu121",
    ]
    # An interpreter that is not there: said, exit 3, as `run --python` says it.
    missing = cli("materialize", str(spec), "-o", str(tmp_path / "m"), "--python", "/nope/py")
    assert missing.code == 3, missing.stderr
    assert "interpreter not found: /nope/py" in missing.stderr
