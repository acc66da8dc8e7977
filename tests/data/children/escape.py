"""Leaves processes behind: a setsid'd grandchild that ignores SIGTERM and a double-forked daemon.

Each writes its pid into FOLDER/<name>.pid; the main process waits for all of them,
then either exits (argv[2] == "exit") or hangs.
"""

import os
import signal
import sys
import time

folder = sys.argv[1]
with open(os.path.join(folder, "token"), "w") as f:
    f.write(os.environ["REPROSPEC_ATTEMPT_TOKEN"])


def note(name):
    path = os.path.join(folder, name + ".pid")
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)


def linger():
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
    while not os.path.exists(os.path.join(folder, name + ".pid")):
        time.sleep(0.01)
print("children ready", flush=True)
if sys.argv[2] == "exit":
    sys.exit(0)
note("main")
linger()
