"""No process of an attempt outlives it, nor its engine.

Real processes throughout: a grandchild that calls setsid and execs with an empty
environment (no process group, no token), orphans that die while their attempt
still runs (zombies under the engine), an engine killed with SIGKILL in the middle
of an attempt (its processes, its temporary folders, its container), a dead engine
whose watchdog died too (`--resume` ends what it left, and never a recycled pid),
and a resume while the engine still runs. Rendezvous on files, never on sleeps;
the waits below are generous bounds for a loaded machine, not timings.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from reprospec.process import leftovers, watchdog
from reprospec.process import tree as process
from reprospec.process.start import _child_setup
from reprospec.runners.local import LocalRunner
from tests.support.cli import ROOT
from tests.support.deadline import until_reached
from tests.support.engine import ENV, kill_with_its_watchdog, wait_until
from tests.support.plans import attempt_plan

PY = sys.executable


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone(pid: int) -> bool:
    return not alive(pid)


def read_pids(path: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in path.glob("*.pid")}


# A command that leaves a setsid'd grandchild with an empty environment, notes its pid,
# and either exits or hangs once the grandchild is `sleep 1000` (its shell's exec done: a
# loaded machine let the root exit before it, and the warning named the shell).
ESCAPER = """\
import os, subprocess, sys, time
folder = sys.argv[1]
child = subprocess.Popen(
    ["/bin/sh", "-c", f"echo $$ > {folder}/.escapee; mv {folder}/.escapee {folder}/escapee.pid;"
     " exec sleep 1000"],
    env={}, start_new_session=True,
)
while not os.path.exists(os.path.join(folder, "escapee.pid")):
    time.sleep(0.01)
while not open(f"/proc/{child.pid}/cmdline", "rb").read().startswith(b"sleep"):
    time.sleep(0.01)
if sys.argv[2] == "hang":
    with open(os.path.join(folder, ".leader"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(folder, ".leader"), os.path.join(folder, "leader.pid"))
    time.sleep(1000)
"""


@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_a_setsid_grandchild_with_no_environment_does_not_survive_its_attempt(
    tmp_path: Path, mode: str, kill_after: list[int]
) -> None:
    runner = LocalRunner()
    # The hang is killed at its timeout once its grandchild is out (leader.pid is written
    # after escapee.pid): 3 s, doubled while a loaded machine kept it from there. The exit
    # never waits for its timeout: a long one costs nothing.
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            attempt_plan([PY, "-c", ESCAPER, str(folder), mode], folder, timeout_s=timeout_s),
            folder / "logs",
        ),
        lambda folder: mode == "exit" or (folder / "leader.pid").exists(),
        3.0 if mode == "hang" else 120.0,
        tmp_path,
    )
    ex, folder = last.result, last.folder
    escapee = int((folder / "escapee.pid").read_text())
    kill_after.append(escapee)
    # It left the process group and the environment (no token): the tag found it.
    assert not alive(escapee), f"the setsid'd, environment-less grandchild {escapee} survived"
    if mode == "exit":
        assert ex.returncode == 0
        assert any("left behind" in w and "sleep 1000" in w for w in ex.warnings), ex.warnings
    else:
        assert ex.timed_out
    # Nothing left in flight: the record is blank (the run folder reuses or removes it).
    record = folder / "logs" / leftovers.INFLIGHT
    assert not record.exists() or leftovers.blank(record.read_text())


def test_a_process_re_parented_while_a_kill_pass_reads_the_tree_is_killed_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_after: list[int]
) -> None:
    """The race behind a CI failure, made certain: the first pass of the kill reads the
    engine's children while the leader still lives and the leader's children after it
    died, so the setsid'd grandchild, re-parented to the engine in between, is in
    neither list. Only that one read of the tree is stale; the processes are real."""
    process.become_subreaper()
    token, tag = process.new_token(), leftovers.new_tag()
    leader = subprocess.Popen(
        [PY, "-c", ESCAPER, str(tmp_path), "hang"],
        env={**os.environ, process.TOKEN_VAR: token},
        start_new_session=True,
        preexec_fn=_child_setup(tag, os.getpid(), None, None),
    )
    try:
        assert wait_until(lambda: (tmp_path / "leader.pid").exists())
        escapee = int((tmp_path / "escapee.pid").read_text())
        kill_after.append(escapee)
        real_tree = process.own_tree
        stale: list[int] = []

        def tree_read_across_the_leaders_death() -> list[int] | None:
            tree = real_tree()
            if stale or tree is None:
                return tree
            # The killpg of this pass has reached the leader: once it is a zombie, its
            # children are the engine's.
            assert wait_until(lambda: psutil.Process(leader.pid).status() == "zombie")
            stale.append(escapee)
            return [pid for pid in tree if pid != escapee]

        monkeypatch.setattr(process, "own_tree", tree_read_across_the_leaders_death)
        process.kill_attempt(token, leader.pid, leader.pid, tag)
        assert stale == [escapee], "the stale read was never made"
        assert not alive(escapee), f"the re-parented grandchild {escapee} survived the kill"
    finally:
        leader.kill()
        leader.wait()


# Orphans that die while the attempt still runs: each exits with code 3 after its parent
# (a short-lived middle process, which hands the root its pid) is gone, so the engine
# inherits it. The root says they are dead once each is a zombie or reaped: one still
# running when the attempt ends is killed as left behind (its exit 3 then not its own).
ORPHANS = """\
import os, sys, time
folder = sys.argv[1]
orphans = []
for n in range(6):
    read, write = os.pipe()
    if os.fork() == 0:
        orphan = os.fork()
        if orphan == 0:
            time.sleep(0.2)
            os._exit(3)
        os.write(write, str(orphan).encode())
        os._exit(0)
    os.close(write)
    orphans.append(int(os.read(read, 32)))
    os.close(read)
    os.wait()
def dead(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True
while orphans:  # each looked at until seen dead, never after (its pid may be reused)
    orphans = [pid for pid in orphans if not dead(pid)]
    time.sleep(0.01)
open(os.path.join(folder, "orphans-dead"), "w").close()
while not os.path.exists(os.path.join(folder, "finish")):
    time.sleep(0.02)
"""


def _zombie_children() -> list[int]:
    """Our dead children that were attempt processes (tagged): an engine's to reap.

    The engine reaps them in a thread of this process while this looks: a child listed,
    then reaped before its status is read, is no zombie (psutil says NoSuchProcess)."""
    zombies = []
    for child in psutil.Process().children():
        try:
            dead = child.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            continue
        if dead and watchdog.is_tag(watchdog.tag_of(child.pid)):
            zombies.append(child.pid)
    return zombies


def test_dead_orphans_are_reaped_while_the_attempt_runs(tmp_path: Path) -> None:
    runner = LocalRunner()
    plan = attempt_plan([PY, "-c", ORPHANS, str(tmp_path)], tmp_path, timeout_s=120)
    result: dict[str, object] = {}

    def run() -> None:
        result["ex"] = runner.run(plan, tmp_path / "logs")

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert wait_until(lambda: (tmp_path / "orphans-dead").exists())
        # The attempt still runs (it waits for "finish"); its dead orphans are reaped by now.
        reaped = wait_until(lambda: not _zombie_children())
        still_running = thread.is_alive()
    finally:
        (tmp_path / "finish").touch()
        thread.join()
    assert reaped, f"zombies under the engine while the attempt ran: {_zombie_children()}"
    assert still_running
    ex = result["ex"]
    exits = [e for e in ex.child_exits if e.exit_code == 3]  # type: ignore[attr-defined]
    assert len(exits) == 6, ex.child_exits  # type: ignore[attr-defined]


# The root of an attempt that leaves a process behind (a setsid'd sleeper) and one whose
# child is a zombie it never waited for, while another attempt of the engine runs on.
LEAVER = """\
import os, subprocess, sys, time
folder = sys.argv[1]
subprocess.Popen(["sleep", "1000"], start_new_session=True, env={})
child = os.fork()
if child == 0:
    os._exit(7)
# A zombie before the root leaves, never waited for: one still running when the root
# exits is a process left behind (killed, its status no longer its own).
while open(f"/proc/{child}/stat").read().rpartition(")")[2].split()[0] != "Z":
    time.sleep(0.005)
"""


WAITER = """\
import os, sys, time
folder = sys.argv[1]
open(os.path.join(folder, "waiting"), "w").close()
while not os.path.exists(os.path.join(folder, "finish")):
    time.sleep(0.02)
"""


def test_what_an_attempt_leaves_is_found_while_other_attempts_run(tmp_path: Path) -> None:
    """The engine's children are the other attempts' roots, and the strays: a stray of the
    attempt that ended is never taken for a running attempt's process, nor missed."""
    runner = LocalRunner()
    other: dict[str, object] = {}
    waiting = tmp_path / "other"
    waiting.mkdir()
    thread = threading.Thread(
        target=lambda: other.update(
            ex=runner.run(attempt_plan([PY, "-c", WAITER, str(waiting)], tmp_path),
                          tmp_path / "other-logs")
        )
    )  # fmt: skip
    thread.start()
    try:
        assert wait_until(lambda: (waiting / "waiting").exists())
        leaver = attempt_plan([PY, "-c", LEAVER, str(tmp_path)], tmp_path)
        ex = runner.run(leaver, tmp_path / "logs")
        assert thread.is_alive()  # the other attempt still ran when this one ended
    finally:
        (waiting / "finish").touch()
        thread.join()
    assert ex.returncode == 0
    left = [w for w in ex.warnings if "left behind by the attempt" in w]
    assert len(left) == 1, ex.warnings
    assert "sleep 1000" in left[0]
    assert [e.exit_code for e in ex.child_exits if e.exit_code == 7] == [7], ex.child_exits
    assert other["ex"].returncode == 0  # type: ignore[attr-defined]
    assert other["ex"].warnings == ()  # type: ignore[attr-defined]
    assert other["ex"].child_exits == ()  # type: ignore[attr-defined]
    sleeper = int(left[0].rpartition(": ")[2].split()[0])
    assert gone(sleeper)


ZOMBIE_SPEC = """\
reprospec: 1
name: zombies
matrix:
  n: [1, 2, 3, 4, 5, 6]
command: >-
  python -c "import subprocess;
  [subprocess.Popen(['sleep', '0.3'], start_new_session=True, env={}) for _ in range(4)]"
expect: {outcome: pass}
"""


COUNT_ZOMBIES = """\
import json, sys, time, psutil
from reprospec.cli import main
code = main(["run", sys.argv[1], "--out", sys.argv[2], "-j", "2"])
time.sleep(1.5)  # the children outlived their attempts by 0.3 s at most
zombies = [c.pid for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE]
print(json.dumps({"code": code, "zombies": zombies}))
"""


def test_a_six_cell_run_leaves_no_zombies_under_the_engine(tmp_path: Path) -> None:
    spec = tmp_path / "zombies.yaml"
    spec.write_text(ZOMBIE_SPEC)
    done = subprocess.run(
        [PY, "-c", COUNT_ZOMBIES, str(spec), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=ENV,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0
    assert result["zombies"] == []


# -- the engine killed -------------------------------------------------------------------

HANG_SPEC = """\
reprospec: 1
name: killed-engine
command: python {script} {folder}
run: {{timeout: 600s}}
expect: {{outcome: hang}}
"""


# The leader's child (same group, token), a setsid'd grandchild with no environment,
# then the leader hangs. Each pid file appears whole (written aside, then renamed): the
# test reads it as soon as it exists. A second run (resume) finds FIRST-DONE and exits at once.
TREE = """\
import os, subprocess, sys, time
folder = sys.argv[1]
if os.path.exists(os.path.join(folder, "FIRST-DONE")):
    sys.exit(0)
subprocess.Popen(["/bin/sh", "-c",
                  f"echo $$ > {folder}/.child; mv {folder}/.child {folder}/child.pid;"
                  " exec sleep 1000"])
subprocess.Popen(["/bin/sh", "-c",
                  f"echo $$ > {folder}/.escapee; mv {folder}/.escapee {folder}/escapee.pid;"
                  " exec sleep 1000"],
                 env={}, start_new_session=True)
while not all(os.path.exists(os.path.join(folder, n)) for n in ("child.pid", "escapee.pid")):
    time.sleep(0.01)
with open(os.path.join(folder, ".leader"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(folder, ".leader"), os.path.join(folder, "leader.pid"))
open(os.path.join(folder, "FIRST-DONE"), "w").close()
time.sleep(1000)
"""


def _start_engine(
    tmp_path: Path, kill_after: list[int], *extra: str, env: dict[str, str] = ENV
) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "tree.py").write_text(TREE)
    spec = tmp_path / "killed.yaml"
    spec.write_text(HANG_SPEC.format(script=tmp_path / "tree.py", folder=tmp_path))
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [PY, "-m", "reprospec", "run", str(spec), "--out", str(out), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    kill_after.append(engine.pid)
    assert wait_until(lambda: (tmp_path / "leader.pid").exists() or engine.poll() is not None)
    assert engine.poll() is None, engine.communicate()[1]
    return engine, out


def _attempt_pids(tmp_path: Path) -> dict[str, int]:
    pids = read_pids(tmp_path)
    assert set(pids) == {"leader", "child", "escapee"}
    return pids


def test_an_engine_killed_with_sigkill_takes_its_attempt_and_temporary_folders_along(
    tmp_path: Path, kill_after: list[int]
) -> None:
    engine, out = _start_engine(tmp_path, kill_after)
    pids = _attempt_pids(tmp_path)
    kill_after.extend(pids.values())
    shims = list(Path("/tmp").glob(f"reprospec-python-{engine.pid}-*"))
    assert shims, "the engine's interpreter shims are named after its pid"
    engine.kill()
    engine.wait()
    for name, pid in pids.items():
        assert wait_until(functools.partial(gone, pid)), f"{name} {pid} outlived its engine"
    assert wait_until(lambda: not any(p.exists() for p in shims)), shims
    # The record stays: it is how --resume knows (and the processes are gone already).
    assert list(out.glob(f"runs/*/cells/*/*/{leftovers.INFLIGHT}"))


@pytest.mark.parametrize("way", ["starter", "preexec_fn"])
def test_resume_ends_what_a_dead_engine_and_its_watchdog_left(
    tmp_path: Path, kill_after: list[int], way: str
) -> None:
    # The leader's death with its engine is set by the starter (starter.c), or, on a
    # machine without a C compiler, by a preexec_fn (CC naming none, an empty cache).
    cache = tmp_path / "cache"
    env = {**ENV, "XDG_CACHE_HOME": str(cache)}
    if way == "preexec_fn":
        env["CC"] = "/no/such/cc"
    engine, out = _start_engine(tmp_path, kill_after, env=env)
    assert bool(list(cache.glob("reprospec/starter-*"))) is (way == "starter")
    pids = _attempt_pids(tmp_path)
    kill_after.extend(pids.values())
    shims = list(Path("/tmp").glob(f"reprospec-python-{engine.pid}-*"))
    assert shims
    # The attempt's leader: the shell running the command, the script's parent.
    leader = psutil.Process(pids["leader"]).ppid()
    assert psutil.Process(leader).ppid() == engine.pid
    # Both at once: nothing of the engine's side is left to clean up.
    kill_with_its_watchdog(engine)
    # The attempt's leader (the shell running the command) died with its engine
    # (PR_SET_PDEATHSIG); the rest is left running: the script, its child, the escapee.
    assert list(out.glob(f"runs/*/cells/*/*/{leftovers.INFLIGHT}"))
    assert leader not in pids.values()
    assert wait_until(lambda: not alive(leader))
    assert all(alive(pid) for pid in pids.values())
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    resumed = subprocess.run(
        [PY, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )  # fmt: skip
    # The resumed attempt exits at once (its script sees FIRST-DONE): a pass, not the hang.
    assert resumed.returncode == 1, resumed.stderr
    assert "had left 3 processes running" in resumed.stderr
    assert not any(alive(pid) for pid in pids.values())
    # The dead engine's interpreter shims: swept by the next engine (named after its pid).
    assert not any(p.exists() for p in shims)
    assert not list(out.glob(f"runs/*/cells/*/*/{leftovers.INFLIGHT}"))


def test_resume_refuses_while_the_engine_still_runs(tmp_path: Path, kill_after: list[int]) -> None:
    engine, out = _start_engine(tmp_path, kill_after)
    kill_after.extend(_attempt_pids(tmp_path).values())
    try:
        (run_id,) = [p.name for p in (out / "runs").iterdir()]
        resumed = subprocess.run(
            [PY, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)],
            capture_output=True, text=True, timeout=300, cwd=ROOT, env=ENV,
        )  # fmt: skip
        assert resumed.returncode == 2, resumed.stderr
        # The engine holds its run folder: the first guard a resume meets names it.
        assert f"another engine is running this run now (engine pid {engine.pid})" in (
            resumed.stderr
        )
        assert engine.poll() is None
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.communicate(timeout=120)


def test_reap_refuses_while_the_engine_still_runs_by_its_in_flight_records(
    tmp_path: Path, kill_after: list[int]
) -> None:
    # The guard behind the run folder's hold, for a folder no lock can be taken on (a
    # filesystem without flock): the live engine named in an attempt's in-flight record.
    from reprospec.errors import UsageError

    engine, out = _start_engine(tmp_path, kill_after)
    kill_after.extend(_attempt_pids(tmp_path).values())
    try:
        (run_dir,) = list((out / "runs").iterdir())
        with pytest.raises(
            UsageError, match=rf"still running \(engine pid {engine.pid}, recorded in"
        ):
            leftovers.reap(run_dir)
        assert engine.poll() is None
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.communicate(timeout=120)


def test_resume_never_kills_a_recycled_pid(tmp_path: Path, kill_after: list[int]) -> None:
    # A record naming a live process by pid, with its true start time, as a recycled pid
    # (or a record an attempt forged in its own folder) would: a process is ended only if
    # it carries the record's token or tag, so this one is left alone.
    stranger = subprocess.Popen(["sleep", "1000"])
    kill_after.append(stranger.pid)
    tag = leftovers.new_tag()
    setup = _child_setup(tag, os.getpid(), None, None)
    tagged = subprocess.Popen(["sleep", "1000"], preexec_fn=setup)
    kill_after.append(tagged.pid)
    record = tmp_path / "run" / "cells" / "c" / "1" / leftovers.INFLIGHT
    record.parent.mkdir(parents=True)
    dead_engine = {"pid": 1 << 22, "started": 1, "boot": "gone"}
    record.write_text(json.dumps({
        "token": "f" * 32, "tag": tag, "leader": stranger.pid,
        "leader_started": leftovers.start_time(stranger.pid), "container": None,
        "engine": dead_engine,  # leader and leader_started: what records of earlier versions held
    }))  # fmt: skip
    said = leftovers.reap(tmp_path / "run")
    assert not record.exists()
    # The tagged process was the attempt's: ended, and counted.
    assert tagged.wait(timeout=30) == -signal.SIGKILL
    assert said == (
        "the interrupted run's engine had left 1 process running: ended before resuming",
    )
    assert stranger.poll() is None, "a process the record named by pid alone was killed"


def test_the_tag_survives_setsid_and_an_empty_environment(tmp_path: Path) -> None:
    tag = leftovers.new_tag()
    setup = _child_setup(tag, os.getpid(), None, None)
    proc = subprocess.Popen(
        ["/bin/sh", "-c", f"setsid env -i /bin/sh -c 'echo $$ > {tmp_path}/p; exec sleep 30' &"],
        preexec_fn=setup,
    )
    proc.wait()
    assert wait_until(lambda: (tmp_path / "p").exists() and bool((tmp_path / "p").read_text()))
    pid = int((tmp_path / "p").read_text())
    try:
        assert watchdog.tag_of(pid) == tag
        assert watchdog.is_tag(tag)
        assert watchdog.tagged((), {tag}) == [pid]
    finally:
        assert watchdog.kill_tagged((), {tag}) == 1
    assert wait_until(lambda: not alive(pid))
