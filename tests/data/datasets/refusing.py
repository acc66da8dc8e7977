"""A dataset whose DataLoader worker 0 fails on its own ConnectionRefusedError (a dataset
that reads from a socket nobody serves) while worker 1 has already exited with code 0
(tests/functional/harness/test_worker_exits.py).

torch re-raises worker 0's error in the main process ("Caught ConnectionRefusedError in
DataLoader worker process 0"): the user's own error, which the harness must not take for
the read of a dead worker's batch (torch's `exited unexpectedly`), though a worker is dead.
"""

from __future__ import annotations

import os
import socket
import time

import torch
from torch.utils.data import Dataset, get_worker_info


class Refusing(Dataset[tuple[torch.Tensor, int]]):
    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        info = get_worker_info()
        if info is not None and info.id == 1:
            os._exit(0)  # torch's own check ignores an exit with code 0
        if info is not None and info.id == 0:
            time.sleep(1.0)  # worker 1 gone first
            with socket.socket() as unserved:
                unserved.bind(("127.0.0.1", 0))  # a port of ours no one listens on
                port = unserved.getsockname()[1]
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return torch.full((4,), float(index)), index % 2


def make() -> Refusing:
    return Refusing()
