"""The machine's count of OOM kills, for tests whose verdict holds only where none happened.

A SIGKILL (a child's, or the 137 a shell gives for one) is no crash where the kernel counted
no OOM kill on the whole machine while the attempt ran (spec-format.md, rules 4 and 6). The
suite's own real OOM kills (in memory cgroups it makes) may run beside such a test under
`-n 2`: it reads this count around its attempt and tries again where it rose.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def machine_oom_kills() -> int | None:
    """/proc/vmstat's `oom_kill`: the machine's OOM kills so far (None: not readable)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    return None
