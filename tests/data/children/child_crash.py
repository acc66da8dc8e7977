"""A main process that survives its child's real crash and exits 1 (or hangs), as MODE says.

Usage: python child_crash.py MODE [ARGS...]

    mp-fork, mp-spawn  a multiprocessing.Process segfaults; the main raises RuntimeError
    pool               a ProcessPoolExecutor worker segfaults; the main gets BrokenProcessPool
    pool-hang          a multiprocessing.Pool worker segfaults mid-task; the pool never
                       notices, and its map waits for the lost result forever (a hang)
    mp-kill[-METHOD]   a multiprocessing.Process (fork, or METHOD) is SIGKILLed (no core,
                       no report): by the OOM killer where CHILD_CRASH_MEMCG names a
                       memory cgroup, which it joins and fills; else by itself, a
                       process's doing; the main raises RuntimeError
    pool-kill          a multiprocessing.Pool worker is SIGKILLed mid-task (a hang), so
    mp-parent-kill     the main process kill()s its own multiprocessing.Process, then
                       raises RuntimeError (a death it caused: no crash)
    mp-parent-oskill   the same with os.kill(pid, SIGKILL), as torchrun ends its ranks
    mp-parent-killpg   the same with os.killpg: the child leads a process group of its own
    subprocess CMD...  runs CMD with subprocess.run(check=True): CalledProcessError
    orphan             a child segfaults; the main exits without reaping it (the engine does)
    fork-kill          an os.fork() child is SIGKILLed by the main process's os.kill, which
                       raises RuntimeError without reaping it (the engine does): no crash
    daemon-kill        the same of a double-forked daemon (a test's teardown of its server)
    daemon-killpg      the same by os.killpg of the daemon's session (it leads its group)
    fork-selfkill      an os.fork() child SIGKILLs itself (a process's doing: no crash
                       where no OOM kill was counted); the main raises RuntimeError
                       without reaping it
    main               the main process itself segfaults (a main crash, for contrast)
    killed             the main process itself is SIGKILLed as mp-kill's child is (by the
                       OOM killer under CHILD_CRASH_MEMCG, else by itself): a shell that
                       ran it exits 137
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.synchronize import Event
from pathlib import Path


def crash(*_: object) -> None:
    ctypes.string_at(0)


# A memory cgroup's folder (the test makes it, with a limit): `killed` joins it and fills
# memory a MiB at a time until the kernel's OOM killer kills it, a real OOM kill.
MEMCG_VAR = "CHILD_CRASH_MEMCG"


def killed(*_: object) -> None:
    folder = os.environ.get(MEMCG_VAR)
    if folder:
        Path(folder, "cgroup.procs").write_text("0")
        hoard = [b"x" * (1 << 20) for _ in range(3072)]  # written: charged to the cgroup
        print(f"not killed at {len(hoard)} MiB", file=sys.stderr)
    os.kill(os.getpid(), signal.SIGKILL)


def run_process(method: str, target: Callable[..., None] = crash) -> None:
    process = multiprocessing.get_context(method).Process(target=target, name="crasher")
    process.start()
    process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"worker process failed with exit code {process.exitcode}")


def run_pool() -> None:
    with ProcessPoolExecutor(max_workers=1) as pool:
        list(pool.map(crash, [1]))


def run_pool_hang(target: Callable[..., None] = crash) -> None:
    # The pool starts a new worker in the dead one's place, but the task it held is lost:
    # map() never returns. Its result is printed should it ever return.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        print(pool.map(target, [1]), flush=True)


def orphan() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import ctypes; ctypes.string_at(0)", "orphan-crasher"]
    )
    # Wait until the child is dead but not reaped (a zombie), then leave it to the
    # engine: our exit re-parents it to the subreaper, which reaps its wait status.
    while True:
        state = Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        if state == b"Z":
            break
        time.sleep(0.01)
    sys.stderr.write("the launcher gives up\n")
    sys.stderr.flush()
    os._exit(1)


def forked(kill_itself: bool = False) -> int:
    """A child of os.fork() that sleeps (or SIGKILLs itself); the parent reaps it never."""
    pid = os.fork()
    if pid == 0:
        if kill_itself:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
        os._exit(0)
    return pid


def daemon() -> int:
    """A double-forked daemon's pid (`redis-server --daemonize yes`); the parent's child exits."""
    read, write = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write, str(os.getpid()).encode())
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.wait()
    os.close(write)
    return int(os.read(read, 32))


def lead_a_group(ready: Event) -> None:
    os.setpgid(0, 0)
    ready.set()
    time.sleep(60)


def main() -> None:
    mode = sys.argv[1]
    if mode == "mp-parent-killpg":
        context = multiprocessing.get_context("fork")
        ready = context.Event()
        process = context.Process(target=lead_a_group, args=(ready,))
        process.start()
        ready.wait(30)
        os.killpg(process.pid or 0, signal.SIGKILL)
        process.join()
        raise RuntimeError(f"gave up on the worker group: exit code {process.exitcode}")
    if mode in ("mp-parent-kill", "mp-parent-oskill"):
        process = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
        process.start()
        if mode == "mp-parent-kill":
            process.kill()
        else:
            os.kill(process.pid or 0, signal.SIGKILL)
        process.join()
        raise RuntimeError(f"gave up on the worker: exit code {process.exitcode}")
    if mode in ("fork-kill", "daemon-kill", "daemon-killpg", "fork-selfkill"):
        pid = daemon() if mode.startswith("daemon") else forked(mode == "fork-selfkill")
        time.sleep(0.3)
        if mode == "daemon-killpg":
            os.killpg(os.getpgid(pid), signal.SIGKILL)  # the session its setsid began
        elif mode != "fork-selfkill":
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        raise RuntimeError("the test failed after its teardown")
    if mode.startswith("mp-kill"):
        run_process(mode.removeprefix("mp-kill").lstrip("-") or "fork", killed)
    elif mode.startswith("mp-"):
        run_process(mode[3:])
    elif mode == "pool":
        run_pool()
    elif mode == "pool-hang":
        run_pool_hang()
    elif mode == "pool-kill":
        run_pool_hang(killed)
    elif mode == "subprocess":
        subprocess.run(sys.argv[2:], check=True)
    elif mode == "orphan":
        orphan()
    elif mode == "main":
        crash()
    elif mode == "killed":
        killed()


if __name__ == "__main__":
    main()
