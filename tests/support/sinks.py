"""An output sink of the test's own: it keeps what it is given."""

from __future__ import annotations


class KeptSink:
    """A sink that keeps what it is given (process/output.py's Sink)."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass
