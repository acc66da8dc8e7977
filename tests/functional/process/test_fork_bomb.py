"""A fork bomb is contained: it fills its attempt's own process limit, the engine keeps
working, and nothing of it outlives the run.

Only ever inside a limit this test sets up: the engine runs in a pids cgroup the test
makes (pids.max=SAFETY), and the attempt's own limit (REPROSPEC_MAX_PROCESSES) is below
it. A machine where the test cannot make one skips it: a bomb is never let loose here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprospec.process import pidlimit
from tests.support.cli import ROOT
from tests.support.engine import wait_until

SAFETY = 64
ATTEMPT_LIMIT = 24

BOMB = """\
reprospec: 1
name: fork-bomb
command: sh -c 'b() { b | b & }; b; sleep 30'
run: {timeout: 4s}
expect: {outcome: crash}
"""


def _kill_all(folder: Path) -> None:
    """Stop, then kill, every process in `folder` and the cgroups under it; remove them."""
    for _ in range(500):
        left = False
        for group in [folder, *folder.rglob("*/")]:
            procs = group / "cgroup.procs"
            if not procs.is_file():
                continue
            pids = [int(w) for w in procs.read_text().split()]
            left = left or bool(pids)
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
        if not left:
            break
        time.sleep(0.02)
    for group in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            group.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


@pytest.fixture
def cage() -> Iterator[Path]:
    """A pids cgroup of this test's own, with pids.max=SAFETY; skipped where none can be made."""
    pidlimit._root_cache.clear()
    root = pidlimit._own_pids_root()
    pidlimit._root_cache.clear()
    if root is None:
        pytest.skip("no writable cgroup v1 pids hierarchy: a fork bomb is not run without one")
    folder = root / f"reprospec-test-bomb-{os.getpid()}"
    folder.mkdir()
    try:
        (folder / "pids.max").write_text(f"{SAFETY}\n")
        yield folder
    finally:
        _kill_all(folder)


def _alive(folder: Path) -> int:
    return sum(
        len((g / "cgroup.procs").read_text().split())
        for g in [folder, *folder.rglob("*/")]
        if (g / "cgroup.procs").is_file()
    )


def _pythons(folder: Path) -> list[int]:
    """The Python processes in `folder`'s cgroups. Once the engine has exited, of the bomb
    (sh, sleep) none: its watchdog (process/watchdog.py), which leaves on its own. By its
    name, which an exiting process keeps, not its command line, which it does not."""
    pids = [
        int(pid)
        for g in [folder, *folder.rglob("*/")]
        if (g / "cgroup.procs").is_file()
        for pid in (g / "cgroup.procs").read_text().split()
    ]
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().startswith("python"):
                found.append(pid)
    return found


def _run_caged(spec: Path, out: Path, cage: Path, limit: int) -> subprocess.CompletedProcess[str]:
    """`reprospec run SPEC` to its end, started in `cage` (the pids cgroup the test made, so
    that whatever it leaves is found there) under the engine's process limit `limit`."""
    procs = str(cage / "cgroup.procs")

    def join_cage() -> None:
        with open(procs, "w") as fh:  # noqa: PTH123 - between fork and exec
            fh.write("0\n")

    env = {**os.environ, "NO_COLOR": "1", pidlimit.MAX_PROCESSES_VAR: str(limit)}
    return subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        preexec_fn=join_cage,
    )


def test_a_fork_bomb_fills_its_own_limit_and_nothing_outlives_the_run(
    tmp_path: Path, cage: Path
) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB)
    out = tmp_path / "out"
    engine = _run_caged(spec, out, cage, ATTEMPT_LIMIT)
    # The engine has exited: nothing it started may be left in the cage. Its watchdog
    # leaves on its own once it reads the engine's end (its stdin closed), 0-50 ms later
    # here: waited for, where it was given 0.5 s, which a loaded machine need not keep
    # (under load it was seen still leaving as the engine's exit was seen).
    assert wait_until(lambda: not _pythons(cage)), _pythons(cage)
    assert _alive(cage) == 0, engine.stderr
    results = json.loads(next(out.glob("runs/*/results.json")).read_text())
    attempt = results["cells"][0]["attempts"][0]
    text = json.dumps(attempt)
    assert "cannot start" not in text, text
    assert "process limit" in text, text
    assert engine.returncode in (0, 1), engine.stderr


SLEEPER = """\
reprospec: 1
name: sleeper
command: sleep 60
run: {timeout: 2m}
"""

QUICK = """\
reprospec: 1
name: quick
command: "true"
"""


def _engine(spec: Path, out: Path, cage: Path) -> subprocess.Popen[str]:
    procs = str(cage / "cgroup.procs")

    def join_cage() -> None:
        with open(procs, "w") as fh:  # noqa: PTH123 - between fork and exec
            fh.write("0\n")

    return subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        preexec_fn=join_cage,
    )


def _members(cgroup: Path) -> list[int]:
    return [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "(gone)"


def test_the_cgroup_of_a_killed_engine_is_swept_by_the_next(tmp_path: Path, cage: Path) -> None:
    sleeper, quick = tmp_path / "sleeper.yaml", tmp_path / "quick.yaml"
    sleeper.write_text(SLEEPER)
    quick.write_text(QUICK)
    killed = _engine(sleeper, tmp_path / "out", cage)
    left = cage / "missing"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(cage.glob(f"reprospec-{killed.pid}-*"))
        # The attempt's `sleep` itself, not the engine's thread that forks it from inside.
        if found and any(_command(pid) == "sleep" for pid in _members(found[0])):
            left = found[0]
            break
        time.sleep(0.05)
    assert left.is_dir(), "the attempt never started in its cgroup"
    killed.kill()  # SIGKILL: no cleanup of its own; its watchdog kills the attempt's tree
    killed.communicate(timeout=30)
    deadline = time.monotonic() + 30
    while _members(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    held = {pid: _command(pid) for pid in _members(left)}
    assert not held, f"the killed engine's attempt outlived it: {held}"
    follower = _engine(quick, tmp_path / "out2", cage)
    _, stderr = follower.communicate(timeout=120)
    assert follower.returncode == 0, stderr
    assert not left.exists()
    assert list(cage.glob("reprospec-*")) == []


def test_a_limit_of_one_process_is_worded_in_the_singular(tmp_path: Path, cage: Path) -> None:
    """`REPROSPEC_MAX_PROCESSES=1`: the shell's one fork fails, and the warning said
    "(1 processes)"; it says "(1 process)". No bomb: one fork, refused."""
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "reprospec: 1\nname: one\ncommand: sh -c 'true; true'\nrun: {timeout: 10s}\n"
        "expect: {outcome: error}\n"
    )
    out = tmp_path / "out"
    engine = _run_caged(spec, out, cage, 1)
    assert wait_until(lambda: not _pythons(cage)), _pythons(cage)
    results = json.loads(next(out.glob("runs/*/results.json")).read_text())
    text = json.dumps(results["cells"][0]["attempts"][0])
    assert "process limit (1 process)" in text, (text, engine.stderr)
    # The verdict says it, where only the report's warnings did.
    assert "error exit 2, at its process limit (1 process)" in engine.stdout, engine.stdout
