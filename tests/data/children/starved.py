"""Runnable but starved: held to one CPU at nice 19 beside a busy process of its own at nice 0
(one session, so one autogroup, where nice weighs: about 1.4% of the CPU), it computes for 3 s
after its last line without a line more, getting tens of milliseconds of CPU in them: past a
`run.stall` of 1 s by the wall clock, well within it by the time it could run."""

import os
import subprocess
import sys
import time

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
os.nice(19)
print("start", flush=True)
end = time.monotonic() + 3.0
while time.monotonic() < end:
    pass
print("done", flush=True)
hog.kill()
hog.wait()
