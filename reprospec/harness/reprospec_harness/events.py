"""Progress events: one JSON line per `os.write` on an O_APPEND fd (the last survives a crash).

In a distributed workload every event of a rank (and of its DataLoader workers) carries
`"rank": N`; the supervising harness process writes events without one.
"""

from __future__ import annotations

import json
import os
import time

_fd: int | None = None
RANK_VAR = "REPROSPEC_RANK"
# Set by `set_rank` in a rank; inherited (environment) by its spawned DataLoader workers.
_rank: int | None = int(os.environ[RANK_VAR]) if os.environ.get(RANK_VAR, "").isdigit() else None


def set_rank(rank: int) -> None:
    """From now on every event of this process and its children says `"rank": rank`."""
    global _rank
    _rank = rank
    os.environ[RANK_VAR] = str(rank)


def _open() -> int | None:
    global _fd
    path = os.environ.get("REPROSPEC_EVENTS")
    if not path:
        return None
    # A forked DataLoader worker shares the parent's fd (same O_APPEND file
    # description, so lines never interleave); a spawned one opens its own.
    if _fd is None:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    return _fd


def emit(event: str, **fields: object) -> None:
    """Append `{"t", "event", **fields}`; unbuffered, one write, never raises."""
    try:
        fd = _open()
        if fd is None:
            return
        if _rank is not None:
            fields.setdefault("rank", _rank)
        line = json.dumps({"t": round(time.time(), 4), "event": event, **fields}, default=str)
        os.write(fd, (line + "\n").encode())
    except OSError:
        pass
