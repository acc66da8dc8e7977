"""Leaves processes behind: a setsid'd grandchild that ignores SIGTERM and a double-forked daemon.

Each writes its pid into FOLDER/<name>.pid; the main process waits for all of them,
then either exits (argv[2] == "exit") or hangs.
"""

import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

folder = Path(sys.argv[1])
(folder / "token").write_text(os.environ["REPROSPEC_ATTEMPT_TOKEN"])


def note(name: str) -> None:
    path = folder / f"{name}.pid"
    partial = folder / f"{name}.pid.tmp"
    partial.write_text(str(os.getpid()))
    partial.rename(path)


def linger() -> NoReturn:
    while True:
        time.sleep(0.05)


if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note("setsid")
    linger()

if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        note("daemon")
        linger()
    os._exit(0)

if os.fork() == 0:
    # Drops the token from its environment: found only through its process group.
    os.execve("/bin/sh", ["/bin/sh", "-c", f"echo $$ > {folder}/noenv.pid; exec sleep 1000"], {})

for name in ("setsid", "daemon", "noenv"):
    while not (folder / f"{name}.pid").exists():
        time.sleep(0.01)
print("children ready", flush=True)
if sys.argv[2] == "exit":
    sys.exit(0)
note("main")
linger()
