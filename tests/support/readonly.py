"""A command line run with a folder made read-only, for the searches' reruns on an --out
that cannot be written since (test_isolate_readonly.py, test_search_readonly.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def read_only(out: Path, argv: list[str]) -> list[str]:
    """`argv` run with `out` read-only: chmod for a user, a read-only bind mount of its own
    (unshare) for root, whom no mode stops."""
    if os.geteuid() != 0:
        for root, dirs, files in os.walk(out):
            for name in [*dirs, *files]:
                (Path(root) / name).chmod(0o555 if name in dirs else 0o444)
        out.chmod(0o555)
        return argv
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: no way to make --out read-only")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m refused: {probe.stderr.decode(errors='replace').strip()}")
    mount = f'mount --bind -o ro "{out}" "{out}" && exec "$0" "$@"'
    return ["unshare", "-m", "sh", "-c", mount, *argv]
