"""The process layer against real processes: the stack-dump sitecustomize, process trees."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprospec.process import run, stacks, tree
from reprospec.process.output import (
    CappedLog,
    output_sink,
)
from tests.support.deadline import until_reached
from tests.support.paths import CHILDREN

# -- the stack-dump sitecustomize --------------------------------------------------------


def python_with_stackdump(
    code: str, extra_path: str = "", stack_dir: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROSPEC_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(stacks.STACKDUMP_DIR), extra_path) if p)
    if stack_dir is not None:
        env["REPROSPEC_STACK_DIR"] = stack_dir
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30
    )


SELF_DUMP = """
import os, signal, time
path = os.path.join(os.environ["REPROSPEC_STACK_DIR"], "stack-%d.txt" % os.getpid())
def marker_function():
    os.kill(os.getpid(), signal.SIGURG)
    time.sleep(0.1)
marker_function()
print(open(path).read())
"""


def test_sitecustomize_dumps_on_sigurg(tmp_path: Path) -> None:
    done = python_with_stackdump(SELF_DUMP, stack_dir=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "marker_function" in done.stdout
    assert done.stderr == ""


def test_sitecustomize_chains_to_the_one_it_shadows(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("USER_SITE = True\nprint('user sitecustomize ran')\n")
    code = SELF_DUMP + "import sitecustomize; print(sitecustomize.USER_SITE)\n"
    done = python_with_stackdump(code, extra_path=str(user), stack_dir=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("user sitecustomize ran\n")
    assert "marker_function" in done.stdout
    assert done.stdout.rstrip().endswith("True")


# A forked multiprocessing child prints its own stack: started through Popen.__init__.
FORKED_STACK = """
import faulthandler, multiprocessing, sys
def in_child():
    faulthandler.dump_traceback(sys.stdout, all_threads=False); sys.stdout.flush()
process = multiprocessing.get_context("fork").Process(target=in_child)
process.start(); process.join()
"""


def test_a_second_copy_of_the_sitecustomize_installs_nothing(tmp_path: Path) -> None:
    """The docker runner's PYTHONPATH holds the mounted stackdump/ before the image's own
    copy, which the first chains to: both wrapped multiprocessing's Popen, so a dead
    worker's stack showed `sitecustomize.py ... in __init__` twice. Once now."""
    copy = tmp_path / "image" / "stackdump"
    copy.mkdir(parents=True)
    (copy / "sitecustomize.py").write_bytes(
        (stacks.STACKDUMP_DIR / "sitecustomize.py").read_bytes()
    )
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    done = python_with_stackdump(FORKED_STACK, extra_path=str(copy), stack_dir=str(dumps))
    assert done.returncode == 0, done.stderr
    assert "in in_child" in done.stdout
    ours = [line for line in done.stdout.splitlines() if "sitecustomize.py" in line]
    assert len(ours) == 1, done.stdout
    assert str(stacks.STACKDUMP_DIR) in ours[0]  # the first on the path installed them


def test_sitecustomize_reports_a_broken_user_sitecustomize(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("raise ValueError('boom')\n")
    done = python_with_stackdump("print('alive')", extra_path=str(user))
    assert done.returncode == 0
    assert done.stdout == "alive\n"
    assert "ValueError: boom" in done.stderr


def test_sitecustomize_is_harmless_without_a_usable_folder(tmp_path: Path) -> None:
    sigcgt = (
        "import signal\n"
        "line = [l for l in open('/proc/self/status') if l.startswith('SigCgt')][0]\n"
        "print(bool(int(line.split()[1], 16) & (1 << (signal.SIGURG - 1))))\n"
    )
    done = python_with_stackdump(sigcgt)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")
    done = python_with_stackdump(sigcgt, stack_dir=str(tmp_path / "missing"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")
    done = python_with_stackdump(sigcgt, stack_dir=str(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


def test_a_record_not_begun_leaves_the_other_hooks_in(tmp_path: Path) -> None:
    """The record of a program's end is begun at its start (a record left begun: a death by
    a signal); a folder it could not be written to left os._exit and os.execv unwrapped
    (2bd34aba), where a failure there must cost that record only."""
    check = "import os, sys; print(os._exit.__module__, os.execv.__module__)"
    done = python_with_stackdump(check, stack_dir=str(tmp_path / "missing"))
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "sitecustomize sitecustomize\n",
        "",
    )
    done = python_with_stackdump("import os; os.kill(os.getpid(), 9)", stack_dir=str(tmp_path))
    assert done.returncode == -9
    (record,) = tmp_path.glob("ended-*.txt")
    # Begun: its parent (this process) and the parent's executable, as it began.
    assert record.read_text() == f"{os.getpid()}\n{Path('/proc/self/exe').readlink()}\n"


def test_forked_child_dumps_into_its_own_file(tmp_path: Path) -> None:
    code = (
        "import os, signal, time\n"
        "def in_parent(): pass\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    def in_child():\n"
        "        os.kill(os.getpid(), signal.SIGURG); time.sleep(0.1)\n"
        "    in_child(); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(pid)\n"
    )
    done = python_with_stackdump(code, stack_dir=str(tmp_path))
    assert done.returncode == 0, done.stderr
    child = int(done.stdout)
    assert "in_child" in (tmp_path / f"stack-{child}.txt").read_text()
    parent = [p for p in tmp_path.glob("stack-*.txt") if p.name != f"stack-{child}.txt"]
    assert len(parent) == 1
    assert parent[0].read_text() == ""


# -- process trees -----------------------------------------------------------------------


def test_orphans_reparent_to_the_engine() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    assert tree.become_subreaper() is True
    code = (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    null = os.open(os.devnull, os.O_RDWR)\n"
        "    os.dup2(null, 1); os.dup2(null, 2)\n"
        "    time.sleep(60)\n"
        "print(pid, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    orphan = int(done.stdout)
    try:
        # Its parent is gone: it is our child now, so we (and only we) can reap it.
        stat = Path(f"/proc/{orphan}/stat").read_bytes()
        assert int(stat[stat.rfind(b")") + 2 :].split()[1]) == os.getpid()
    finally:
        os.kill(orphan, 9)
    assert os.waitpid(orphan, 0)[0] == orphan


def test_run_process_timeout_collects_stacks_and_kills(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(stacks.STACKDUMP_DIR)

    def attempt(timeout_s: float, folder: Path) -> run.ProcessResult:
        return run.run_process(
            [sys.executable, str(CHILDREN / "hang.py"), str(folder / "ready")],
            env=env,
            cwd=folder,
            stdout=output_sink(folder / "out.log"),
            stderr=output_sink(folder / "err.log"),
            timeout_s=timeout_s,
            stack_dir=folder,
            stack_path=folder / "stack.txt",
        )

    # 1 s to reach deep_hang, doubled while a loaded machine kept the child from it.
    last = until_reached(attempt, lambda f: (f / "ready").exists(), 1.0, tmp_path)
    result, folder = last.result, last.folder
    assert result.timed_out
    assert not result.interrupted
    assert result.returncode == -9
    assert result.stack_path == folder / "stack.txt"
    assert "deep_hang" in result.stack_path.read_text()
    assert (folder / "out.log").read_text() == "hanging\n"
    assert last.timeout_s <= result.duration_s < last.timeout_s + 10  # killed at the timeout
    # The per-process dumps are gone once stack.txt holds them; the logs stay.
    assert not list(folder.glob("stack-*.txt"))
    left = sorted(p.name for p in folder.iterdir())
    assert left == ["err.log", "out.log", "ready", "stack.txt"]


def test_find_and_kill_processes_by_token() -> None:
    token = tree.new_token()
    env = {**os.environ, tree.TOKEN_VAR: token}
    # Its own session and its parent gone: only the token finds it.
    done = subprocess.run(
        ["/bin/sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    stray = int(done.stdout)
    try:
        deadline = time.monotonic() + 10
        # Until `setsid` has exec'd `sleep`, the cmdline still names setsid.
        while (
            info := (found := tree.find_attempt_processes(token)).get(stray)
        ) is None or info.cmdline != "sleep 60":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert set(found) == {stray}
        tree.kill_attempt(token, None, None)
        assert not Path(f"/proc/{stray}").exists()
        assert tree.find_attempt_processes(token) == {}
    finally:
        if Path(f"/proc/{stray}").exists():
            os.kill(stray, 9)


def test_unstartable_program_raises_and_closes_sinks(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "out.log")
    with pytest.raises(FileNotFoundError):
        run.run_process(
            [str(tmp_path / "missing")],
            env=dict(os.environ),
            cwd=tmp_path,
            stdout=log,
            stderr=CappedLog(tmp_path / "err.log"),
            timeout_s=5,
            stack_dir=tmp_path,
            stack_path=tmp_path / "stack.txt",
        )
    assert log.closed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["err.log", "out.log"]


def test_engine_modules_do_not_import_torch() -> None:
    code = (
        "import sys, reprospec.runners.local, reprospec.process.tree, reprospec.process.output\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.stdout == "False\n", done.stderr


def test_an_ended_roots_stat_is_read_whole_in_one_read(tmp_path: Path) -> None:
    """`waited_for_children` read the root's /proc/PID/stat to the end: a second read that
    found nothing, at every attempt's end. One read of a page takes the whole line, even
    of a program whose name is a full command name's length and spaces and parentheses."""
    program = tmp_path / "a (long) name here"
    program.symlink_to("/bin/sh")
    proc = subprocess.Popen([str(program), "-c", "sleep 0.2 & wait"])
    try:
        assert wait_for_zombie(proc.pid)
        whole = tree.read_proc(f"/proc/{proc.pid}/stat")
        assert b"(a (long) name " in whole
        assert tree.read_stat(proc.pid) == whole
        assert whole.endswith(b"\n")
        assert tree.waited_for_children(proc.pid) is True  # it waited for its sleep
    finally:
        proc.wait()


def wait_for_zombie(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if tree.read_proc(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[0] == b"Z":
            return True
        time.sleep(0.01)
    return False
