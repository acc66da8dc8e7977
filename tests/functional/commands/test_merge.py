"""`reprospec merge` as a user runs it: what a refused merge leaves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SPEC = (
    "reprospec: 1\nname: sh\nmatrix: {a: [1, 2]}\ncommand: echo ${{ matrix.a }}\n"
    "expect: {outcome: pass}\n"
)


def _reprospec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_a_refused_merge_leaves_no_store_it_made(tmp_path: Path) -> None:
    # nu45 F10: a merge refused for a missing shard removed its run folder but left the empty
    # `OUT/runs/` (and OUT) it had made for it, a store with nothing in it.
    (tmp_path / "sh.yaml").write_text(SPEC)
    shard = _reprospec("run", "sh.yaml", "--shard", "1/2", "--out", "s1", cwd=tmp_path)
    assert shard.returncode == 0, shard.stderr
    (run,) = (tmp_path / "s1" / "runs").iterdir()
    merged = _reprospec("merge", str(run), "--out", "m", cwd=tmp_path)
    assert merged.returncode == 2, merged.stderr
    assert "missing shard 2/2" in merged.stderr
    assert not (tmp_path / "m").exists()
    # Nor the folders it made above OUT (`--out new/m`: an empty `new/` stayed).
    deeper = _reprospec("merge", str(run), "--out", "new/m", cwd=tmp_path)
    assert deeper.returncode == 2, deeper.stderr
    assert not (tmp_path / "new").exists()
    # A store that was there before stays, as it was.
    (tmp_path / "m" / "runs").mkdir(parents=True)
    again = _reprospec("merge", str(run), "--out", "m", cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert list((tmp_path / "m").iterdir()) == [tmp_path / "m" / "runs"]
    assert list((tmp_path / "m" / "runs").iterdir()) == []
