"""`tree.only_known_children` asked from an attempt's thread (run in a child of its own: the
test process has children of other tests): an attempt's orphan is the engine's main
thread's child and is seen; a child another live thread started is that thread's and is not
looked at."""

from __future__ import annotations

from tests.support.script import json_of

CHILD = """
import json, os, signal, subprocess, threading
from reprospec.process import tree

assert tree.become_subreaper()
seen = {}
started, finish = threading.Event(), threading.Event()

def other():
    # Another attempt's thread: its child lives while it does (a thread's children go to
    # another thread only when it exits).
    proc = subprocess.Popen(["sleep", "30"])
    started.set()
    finish.wait()
    proc.kill()
    proc.wait()

def attempt():
    seen["another thread's child"] = tree.only_known_children()
    # sh starts a sleep in the background and exits: the kernel gives the orphan to the
    # subreaper's main thread, not to this one, which started sh.
    shell = subprocess.run(
        ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
    )
    orphan = int(shell.stdout)
    seen["an orphan"] = tree.only_known_children()
    os.kill(orphan, signal.SIGKILL)
    os.waitpid(orphan, 0)
    own = subprocess.Popen(["sleep", "30"])
    seen["its own child"] = tree.only_known_children()
    tree.RUNNING_ROOTS.add(own.pid)
    seen["its own root"] = tree.only_known_children()
    own.kill()
    own.wait()
    tree.RUNNING_ROOTS.discard(own.pid)

threading.Thread(target=other).start()
started.wait()
asking = threading.Thread(target=attempt)
asking.start()
asking.join()
finish.set()
print(json.dumps(seen))
"""


def test_an_orphan_is_seen_and_another_threads_child_is_not_looked_at() -> None:
    seen = json_of(CHILD)
    assert seen == {
        # Another attempt's root, or a helper: never a process of this attempt.
        "another thread's child": True,
        "an orphan": False,
        "its own child": False,
        "its own root": True,
    }


# The engine's watchdog is its main thread's child from its first attempt on: the file that
# lists it was read twice at every attempt's end, to tell a steady list from one that skipped
# a child reaped meanwhile; no one reaps the watchdog, so one read that lists only it is
# steady. Each read of a `children` file is counted as it is made (the real read).
WATCHED = """
import json, os, signal, subprocess, tempfile
from reprospec.process import leftovers, tree

assert tree.become_subreaper()
leftovers.watch_path(tempfile.mkdtemp())  # starts the watchdog, as an attempt's start does
assert leftovers.watchdog_pid() is not None
reads = []
real = tree.read_proc

def counted(path):
    reads.append(path)
    return real(path)

tree.read_proc = counted
seen = {"alone": tree.only_known_children(), "reads": len(reads)}
shell = subprocess.run(
    ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
)
orphan = int(shell.stdout)
seen["an orphan after it"] = tree.only_known_children()
os.kill(orphan, signal.SIGKILL)
os.waitpid(orphan, 0)
print(json.dumps(seen))
"""


def test_the_watchdog_alone_is_read_once() -> None:
    seen = json_of(WATCHED)
    assert seen == {"alone": True, "reads": 1, "an orphan after it": False}
