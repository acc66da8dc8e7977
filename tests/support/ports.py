"""A process outside the engine that takes an attempt's MASTER_PORT: the test itself."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def port_taker(folder: Path, *, take: bool = True) -> Iterator[list[socket.socket]]:
    """While the block runs, a thread of the test's waits (50 s at most) for `folder/port`,
    the MASTER_PORT rank 0 writes there; binds and listens on it where `take`; and touches
    `folder/go`, rank 0's sign to bind it itself. Yields the sockets it holds (one once it
    took the port), closed on leaving, its thread joined."""
    held: list[socket.socket] = []

    def run() -> None:
        deadline = time.monotonic() + 50
        while not (folder / "port").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if take:
            with contextlib.suppress(ValueError, OSError):
                other = socket.socket()
                other.bind(("", int((folder / "port").read_text())))
                other.listen()
                held.append(other)
        (folder / "go").touch()

    thread = threading.Thread(target=run, name="test-port-taker", daemon=True)
    thread.start()
    try:
        yield held
    finally:
        thread.join()
        for sock in held:
            sock.close()
