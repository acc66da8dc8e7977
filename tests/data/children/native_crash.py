"""Dies of a real SIGSEGV inside a named native function (argv[1]), while a second thread sleeps.

strlen, memmove: libc's own functions called through ctypes on a bad pointer.
torch: a torch reduction over a tensor whose data pointer is unmapped memory.
child: a forked child dies inside strlen; the parent sees it and exits 1 (no core of its own).
thread: a thread the program started dies inside strlen while the main thread waits for it
(its pid and LWP printed first, so that a test can tell the process from the thread).
"""

import ctypes
import os
import sys
import threading
import time

BAD = 4096  # the first page is never mapped


def crash(kind: str) -> None:
    if kind == "strlen":
        libc = ctypes.CDLL(None)
        libc.strlen.argtypes = [ctypes.c_void_p]
        libc.strlen(BAD)
    elif kind == "memmove":
        ctypes.memmove(BAD, BAD * 2, 64)
    elif kind == "torch":
        import torch

        torch.set_num_threads(1)  # the fault happens on the calling thread
        floats = (ctypes.c_float * (1 << 20)).from_address(BAD)
        torch.frombuffer(floats, dtype=torch.float32).sum()
    raise AssertionError(f"{kind}: no crash")


if __name__ == "__main__":
    threading.Thread(target=time.sleep, args=(60,), name="sleeper", daemon=True).start()
    kind = sys.argv[1]
    print(f"crashing in {kind}", flush=True)
    if kind == "thread":
        print(f"pid {os.getpid()}", flush=True)
        crasher = threading.Thread(target=crash, args=("strlen",), name="decoder")
        crasher.start()
        crasher.join()
    if kind == "child":
        pid = os.fork()
        if pid == 0:
            crash("strlen")
        _, status = os.waitpid(pid, 0)
        print(f"child {pid} died of signal {os.WTERMSIG(status)}", flush=True)
        sys.exit(1)
    crash(kind)
