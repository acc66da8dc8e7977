"""Progress events: one JSON line per `os.write` on an O_APPEND fd (the last survives a crash)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

_fd: int | None = None


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


def emit(event: str, **fields: Any) -> None:
    """Append `{"t", "event", **fields}`; unbuffered, one write, never raises."""
    try:
        fd = _open()
        if fd is None:
            return
        line = json.dumps({"t": round(time.time(), 4), "event": event, **fields}, default=str)
        os.write(fd, (line + "\n").encode())
    except OSError:
        pass
