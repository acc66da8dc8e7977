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
        # Until the file holds the number: rank 0's open() makes it empty before its
        # write(), and a reading between the two (a loaded machine) bound nothing.
        while (port := _port(folder)) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if take and port is not None:
            with contextlib.suppress(OSError):
                other = socket.socket()
                other.bind(("", port))
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


def _port(folder: Path) -> int | None:
    """The MASTER_PORT rank 0 wrote to `folder/port`; None while it is not there whole."""
    try:
        return int((folder / "port").read_text())
    except (OSError, ValueError):
        return None
