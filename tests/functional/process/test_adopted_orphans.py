"""The test processes' reaper (tests/support/orphans.py), run in a child of its own: a
subreaper's adopted orphan is reaped, a Popen still to be waited for is left to its owner."""

from __future__ import annotations

from tests.support.script import json_of

CHILD = """
import json, os, subprocess, sys, time
from reprospec.process import tree
from tests.support import orphans

assert tree.become_subreaper()
# sh starts a sleep in the background and exits: the sleep is orphaned, re-parented to us.
shell = subprocess.run(["sh", "-c", "sleep 0.2 & echo $!"], capture_output=True, text=True)
orphan = int(shell.stdout)
owned = subprocess.Popen(["sh", "-c", "exit 3"])  # ours, not waited for yet

def zombie(pid):
    text = open(f"/proc/{pid}/stat").read()
    return text[text.rindex(")") + 2] == "Z"

deadline = time.monotonic() + 30
while not (zombie(orphan) and zombie(owned.pid)):
    assert time.monotonic() < deadline, "the children never exited"
    time.sleep(0.02)
reaped = orphans.reap_adopted()
print(json.dumps({"orphan": orphan, "reaped": reaped, "owned": owned.wait(timeout=10),
                  "again": orphans.reap_adopted()}))
"""


def test_an_adopted_orphan_is_reaped_and_a_popen_keeps_its_status() -> None:
    seen = json_of(CHILD)
    assert seen["reaped"] == [seen["orphan"]]  # the orphan, and only it
    assert seen["owned"] == 3  # the Popen's own wait still got its exit status
    assert seen["again"] == []
