"""A program that timed itself out with faulthandler.dump_traceback_later(T, exit=True): a
live run, a capture of the command and a capture of its log all read the hang it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import Cli

WATCHED = """\
import faulthandler, threading, time
faulthandler.dump_traceback_later(0.3, exit=True)
def worker():
    time.sleep(30)
t = threading.Thread(target=worker)
t.start()
t.join()
"""


def test_a_watchdogs_own_timeout_is_a_hang_live_and_from_its_log(cli: Cli, tmp_path: Path) -> None:
    # Live it was `error exit 1` with the dump's last frame line as its message; from
    # its log, a hang: the spec capture wrote from one never matched the other.
    (tmp_path / "job.py").write_text(WATCHED)
    made = cli("capture", "-o", "spec.yaml", "--", "python", "job.py", cwd=tmp_path)
    assert made.code == 0, made.stdout + made.stderr
    assert "wrote spec.yaml: hang in 1/1 attempt" in made.stdout
    assert "verdict reproduced" in made.stdout
    # The attempts ended themselves: nothing waited the 5m timeout.
    assert "waited the spec's timeout" not in made.stdout
    live = load_spec(str(tmp_path / "spec.yaml")).document
    assert live["expect"] == {"outcome": "hang"}
    assert "its own faulthandler watchdog" in str(live["description"])
    ran = subprocess.run(
        [sys.executable, "job.py"], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 1
    (tmp_path / "job.log").write_text(f"$ python job.py\n{ran.stderr}$ echo $?\n1\n")
    logged = cli("capture", "--from-log", "job.log", "-o", "log.yaml", cwd=tmp_path)
    assert logged.code == 0, logged.stdout + logged.stderr
    from_log = load_spec(str(tmp_path / "log.yaml")).document
    assert from_log["expect"] == live["expect"]
    rerun = cli("run", "log.yaml", cwd=tmp_path)
    assert rerun.code == 0, rerun.stdout + rerun.stderr
    assert "reproduced" in rerun.stdout


def test_a_stack_dumped_before_an_exit_is_no_expected_message(cli: Cli, tmp_path: Path) -> None:
    # Its message was the dump's last frame line, with the workdir's path in it: the verify
    # in a copy (another path) missed it and blamed a file the copy lacked.
    (tmp_path / "job.py").write_text(
        "import faulthandler, sys\n"
        "def check():\n"
        "    faulthandler.dump_traceback()\n"
        "    sys.exit(3)\n"
        "check()\n"
    )
    made = cli("capture", "-o", "spec.yaml", "--", "python", "job.py", cwd=tmp_path)
    assert made.code == 0, made.stdout + made.stderr
    assert "verdict reproduced" in made.stdout
    spec = load_spec(str(tmp_path / "spec.yaml")).document
    assert spec["expect"] == {"outcome": "error", "exit_code": 3}
