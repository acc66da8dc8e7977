"""stack.txt holds the program's frames: the stackdump sitecustomize's own (its wrappers of
multiprocessing's Popen) are left out, in faulthandler's words and in py-spy's."""

from __future__ import annotations

from reprospec.outcome.hungstacks import hung_processes
from reprospec.process.stacks import without_our_frames
from tests.support.paths import DATA

# A real dump: a multiprocessing child hung, its parent joining it (an editable install's
# paths, so the sitecustomize is no library file by its path).
CHILD = (DATA / "stacks" / "multiprocessing-child-hang.stack.txt").read_text()

PY_SPY = """\
Thread 26180 (idle): "MainThread"
    poll (/usr/lib/python3.11/multiprocessing/popen_fork.py:27)
    watched (/src/reprospec/reprospec/stackdump/sitecustomize.py:450)
    wait (/usr/lib/python3.11/multiprocessing/popen_fork.py:43)
    <module> (/work/proj/childhang.py:12)
"""


def test_the_sitecustomizes_own_frames_are_left_out_and_every_other_line_kept() -> None:
    cleaned = without_our_frames(CHILD)
    assert "sitecustomize.py" not in cleaned
    kept = [line for line in CHILD.split("\n") if "sitecustomize.py" not in line]
    assert cleaned.split("\n") == kept
    assert len(kept) == len(CHILD.split("\n")) - 2
    # The frames read from it are the same: the wrappers were never the user's code.
    assert hung_processes(cleaned) == hung_processes(CHILD)
    spied = without_our_frames(PY_SPY)
    assert "watched" not in spied
    assert "<module> (/work/proj/childhang.py:12)" in spied
    # A program's own file of that name, outside a stackdump folder, stays.
    own = '  File "/work/proj/sitecustomize.py", line 3 in <module>'
    assert without_our_frames(own) == own
