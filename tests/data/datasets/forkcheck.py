"""A dataset that shows what the harness does in the main process (tests/test_harness_parent.py).

Every `__getitem__` appends its process id to `log`. The first call in a process opens
a lazy "handle" (as an LMDB environment, a CUDA context or a CFFI library would be
opened), remembering the pid that opened it; using it from another process, which
can only have inherited it across fork, aborts, as such handles do.
"""

from __future__ import annotations

import os
import threading

import torch
from torch.utils.data import Dataset


class ForkCheck(Dataset):
    def __init__(self, log: str, size: int = 32, fail: bool = False, hang: bool = False) -> None:
        self.log, self.size, self.fail, self.hang = log, size, fail, hang
        self.handle_pid: int | None = None

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        if self.handle_pid is None:
            self.handle_pid = os.getpid()
        elif self.handle_pid != os.getpid():
            os.abort()  # a handle inherited across fork: unusable, as a real one would be
        if self.fail:
            raise ValueError(f"item {index} is unreadable")
        if self.hang:  # a real self-deadlock: the second acquire of a held lock never returns
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()
        return torch.full((2, 3), float(index)), index % 3


def make(log: str, size: int = 32, fail: bool = False, hang: bool = False) -> ForkCheck:
    return ForkCheck(log, size, fail, hang)
