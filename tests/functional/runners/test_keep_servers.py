"""`keep_servers()`: the runs of a search verb fork from one preload server, not one each.

Real runs through the Python API; the program writes the pid of the process that imported
the preloaded module (tests/data/preload/marked.py): a forked attempt's server.
"""

from __future__ import annotations

import json
from pathlib import Path

from reprospec import api
from reprospec.core.runoptions import RunOptions
from reprospec.runners.local import keep_servers
from tests.support.paths import DATA

WHO = """\
import sys
import marked
open(sys.argv[1], "w").write(str(marked.IMPORTED_IN))
"""


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "who.py").write_text(WHO)
    spec = {
        "reprospec": 1,
        "name": "keep-servers",
        "command": "python who.py out",
        "environment": {"env": {"PYTHONPATH": str(DATA / "preload")}},
        "run": {"preload": ["marked"], "timeout": "60s"},
        "expect": {"outcome": "pass"},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(spec))
    return path


def _server_of(spec: Path, tmp_path: Path, name: str) -> tuple[str, str]:
    """(the pid that imported `marked`, how the attempt started); the environment is the
    same for every run, as a server's key wants it, and only the command's argument moves."""
    out = tmp_path / name
    loaded = api.load_spec(spec, [f"command=python who.py {out}"])
    result = api.run(loaded, RunOptions(out=tmp_path / "store", purpose="minimize"))
    attempt = result.cells[0].attempts[0]
    assert attempt.ran is not None, attempt.infra_error
    assert attempt.ran.kind == "pass"
    return out.read_text(), attempt.launch


def test_runs_inside_the_block_share_one_server(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    with keep_servers():
        first, launch = _server_of(spec, tmp_path, "a")
        second, _ = _server_of(spec, tmp_path, "b")
    assert launch == "forked"
    assert first == second  # the same server imported `marked` once for both runs
    # Outside the block each run starts (and stops) its own.
    third, launch = _server_of(spec, tmp_path, "c")
    fourth, _ = _server_of(spec, tmp_path, "d")
    assert launch == "forked"
    assert third != fourth
    assert first not in (third, fourth)  # the block's server stopped at its end
