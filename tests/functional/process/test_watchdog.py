"""The engine's watchdog (watchdog.py), run for real: what it is told, it ends when the
engine's end closes its stdin, and it is not woken by each line it is told."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from reprospec.process import leftovers, watchdog


def _switches(pid: int) -> int:
    """How many times process `pid` has gone to sleep and been woken (a wait each)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def _told(tmp_path: Path, first: bytes = b"") -> tuple[int, float]:
    """Tell a watchdog of 200 folders, a line every 2 ms, and one of them done; end its
    stdin. How many times it was woken meanwhile, and in how many seconds; each folder not
    done is removed."""
    folders = [tmp_path / f"f{i}" for i in range(200)]
    for folder in folders:
        folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(leftovers.WATCHDOG)],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(first)
        proc.stdin.flush()
        time.sleep(0.5)  # its start, and its first wait
        before = _switches(proc.pid)
        began = time.monotonic()
        for folder in folders:
            proc.stdin.write(f"path {folder}\n".encode())
            proc.stdin.flush()
            time.sleep(0.002)
        proc.stdin.write(f"done-path {folders[-1]}\n".encode())
        proc.stdin.flush()
        woken = _switches(proc.pid) - before
        elapsed = time.monotonic() - began
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert [f.name for f in tmp_path.iterdir()] == [folders[-1].name]
    return woken, elapsed


def test_the_watchdog_reads_its_lines_in_batches_and_loses_none(tmp_path: Path) -> None:
    """Woken at every line (an attempt's start: one a millisecond with `true`), the watchdog
    spent about 70 us of CPU per attempt beside the engine's 1.4 ms. It reads what is there a
    few times a second, and at its stdin's end every line told is in: each folder named in
    a `path` line is removed, the one told done is kept."""
    woken, elapsed = _told(tmp_path)
    # About 2 per DRAIN_S (0.25 s), where it was 200: the lines' time is the machine's (the
    # 2 ms sleeps overshoot on a loaded one), so the bound grows with it.
    assert woken < 10 + 2 * elapsed / watchdog.DRAIN_S, (woken, elapsed)


def test_an_engine_whose_pipe_stayed_small_has_each_line_read(tmp_path: Path) -> None:
    """Where the engine could not enlarge the pipe (pipe-max-size, the user's pipe quota),
    a small pipe would fill between two reads: its first line asks for each line to be read
    as it comes, as before."""
    woken, _ = _told(tmp_path, watchdog.EACH + b"\n")
    assert woken > 100, woken
