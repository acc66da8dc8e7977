"""The SQLite store survives an engine SIGKILLed mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from reprospec.store.db import Store
from tests.support.paths import ROOT
from tests.support.runs import hang_run

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from tests.support.runs import hang_run
    from reprospec.store.db import Store

    run = hang_run()
    store = Store(Path({root!r}))
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {{}}, {{}})
    for attempt in run.cells[0].attempts[:2]:
        store.record_attempt(run.run_id, "default", attempt)
    # An attempt being written when the engine dies: begun, never committed.
    store._db.execute("BEGIN IMMEDIATE")
    store._db.execute("INSERT INTO attempts (run_id, cell_id, attempt, started, finished, "
                      "duration_s, matched, mismatches, gpu_slot, logs, warnings) "
                      "VALUES (?, 'default', 3, '', '', 0, 0, '[]', '[]', '', '[]')",
                      (run.run_id,))
    Path({marker!r}).write_text("ready")
    time.sleep(60)
    """
)


def test_store_survives_sigkill_mid_run(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    root = ROOT
    code = CHILD.format(tests=str(root), root=str(tmp_path), marker=str(marker))
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, "child died before recording its attempts"
            assert time.monotonic() < deadline, "child never got ready"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    store = Store(tmp_path)
    run = hang_run()
    assert store.finished_attempts(run.run_id) == {
        ("default", a.attempt): a for a in run.cells[0].attempts[:2]
    }
    info = store.run_info(run.run_id)
    assert info is not None
    assert info.status == "running"
    # The store is writable again after the crash: the resumed run finishes it.
    store.record_attempt(run.run_id, "default", run.cells[0].attempts[2])
    store.finish_run(run.run_id, "finished")
    assert len(store.finished_attempts(run.run_id)) == 3
