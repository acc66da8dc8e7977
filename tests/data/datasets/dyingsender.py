"""A dataset whose DataLoader worker 0 dies while the main process reads the batch it sent
(tests/functional/harness/test_worker_exits.py).

The race it forces: a worker that exits just after sending a batch (the `exit` fault's
`os._exit` on an item of its next batch) can be dying when the main process unpickles that
batch, whose shared memory it asks of the worker's resource sharer (multiprocessing's
`DupFd`): the read fails (EOFError, ConnectionResetError) while the worker is not yet
reapable, so torch's own check of its workers finds none dead and re-raises the read's
error. Left to chance that is 1 run in 50; here, deterministically: worker 0's first item
arms its resource sharer so that the first request for a handle it shares (the first
batch's, which the main process reads first) is answered by closing the connection (the
main process's read ends in EOFError), and the worker exits with `code` (or dies of
`signal`, sent to itself) `linger` seconds later: still alive while torch checks, as a
worker whose exit takes time (a core written, a stack dumped) is.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from multiprocessing import resource_sharer
from multiprocessing.connection import Connection

import torch
from torch.utils.data import Dataset, get_worker_info

Send = Callable[[Connection, int], None]


class DyingSender(Dataset[tuple[torch.Tensor, int]]):
    def __init__(self, code: int, signal: str | None, linger: float, size: int = 32) -> None:
        self.code, self.signal, self.linger, self.size = code, signal, linger, size
        self.armed = False

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        info = get_worker_info()
        if info is not None and info.id == 0 and not self.armed:
            self.armed = True
            self._break_shares()
        return torch.full((4,), float(index)), index % 2

    def _break_shares(self) -> None:
        """Every handle this worker shares from now on dies with it when asked for."""
        # The process's one sharer, which DupFd registers with (private: no stub declares it).
        sharer = resource_sharer._resource_sharer  # type: ignore[attr-defined]
        register = sharer.register

        def dying(_send: Send, close: Callable[[], None]) -> object:
            def send_and_die(conn: Connection, _pid: int) -> None:
                conn.close()  # the main process's recv of the handle reads EOF
                time.sleep(self.linger)
                if self.signal is not None:
                    # To the process: this thread (the sharer's) blocks every signal.
                    os.kill(os.getpid(), signal.Signals[self.signal])
                    time.sleep(60)
                os._exit(self.code)

            return register(send_and_die, close)

        sharer.register = dying


def make(
    code: int = 3, signal: str | None = None, linger: float = 5.0, size: int = 32
) -> DyingSender:
    return DyingSender(code, signal, linger, size)
