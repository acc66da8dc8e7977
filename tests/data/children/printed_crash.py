"""A program that only prints what reads as a child's death, then fails its own way.

Usage: python printed_crash.py MODE [--ran-a-child]

    shell-stdout   bash's report of a segfault, on stdout (a CI log it echoes)
    faulthandler   a faulthandler report, on stderr (a crash handler's test output)
    cpe            subprocess's CalledProcessError "died with", on stderr
    worker         torch's word of a DataLoader worker's death, on stderr
    exit139        no text: `sys.exit(139)`, a status a shell gives a SIGSEGV death
    os_exit139     the same by `os._exit(139)`, which skips the interpreter's exit

No process of it dies of a signal. With --ran-a-child it first runs `true` to its end,
so a child existed (the engine cannot tell the printed death from a real one then).
"""

from __future__ import annotations

import os
import subprocess
import sys

SHELL = "./run.sh: line 3:  4242 Segmentation fault      ./test_ops --gtest_filter=Conv*"
FAULTHANDLER = (
    "Fatal Python error: Segmentation fault\n\n"
    "Current thread 0x00007f (most recent call first):\n"
    '  File "old.py", line 3 in <module>\n'
)
CPE = "subprocess.CalledProcessError: Command '['./a.out']' died with <Signals.SIGSEGV: 11>.\n"

WORKER = "DataLoader worker (pid 4242) is killed by signal: Segmentation fault.\n"


def main() -> None:
    mode = sys.argv[1]
    if "--ran-a-child" in sys.argv:
        subprocess.run(["true"], check=True)
    if mode == "shell-stdout":
        print(SHELL, flush=True)
    elif mode == "faulthandler":
        sys.stderr.write(FAULTHANDLER)
    elif mode == "cpe":
        sys.stderr.write(CPE)
    elif mode == "worker":
        sys.stderr.write(WORKER)
    elif mode == "exit139":
        print("step 1", flush=True)
        sys.exit(139)
    elif mode == "os_exit139":
        print("step 1", flush=True)
        os._exit(139)
    raise ValueError("triage found no owner")


if __name__ == "__main__":
    main()
