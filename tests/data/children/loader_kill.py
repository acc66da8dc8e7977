"""A DataLoader worker SIGKILLed (as by the OOM killer) where torch's SIGCHLD handler does
not say so first: the main process's error names no signal.

torch learns of a dead worker two ways, and they race: its SIGCHLD handler raises "DataLoader
worker (pid N) is killed by signal: Killed.", while a main process already waiting on the
data queue fails on its own: a ConnectionResetError where it was fetching a batch the worker
had just sent, or, at its next check of the workers, "DataLoader worker (pid(s) N) exited
unexpectedly" (no signal). This program takes the second way every time: it puts the default
SIGCHLD action back once the loader's workers have started (as a library that sets its own
handler does), so only the main process's check sees the death.

Usage: python loader_kill.py
"""

from __future__ import annotations

import os
import signal

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 9:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.zeros(4)


def main() -> None:
    # timeout: the main process checks its workers after 1 s without a batch, not 5.
    batches = iter(DataLoader(Items(), batch_size=4, num_workers=2, timeout=1))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for _ in batches:
        pass
    print("every batch loaded")


if __name__ == "__main__":
    main()
