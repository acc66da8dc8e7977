"""Child: a DataLoader worker dies of a real signal while fetching item 5.

Usage: python dataloader_crash.py segv|bus|fpe|abort
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import torch
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1] if len(sys.argv) > 1 else "segv"


class Crashing(Dataset):
    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 5:
            if MODE == "segv":
                ctypes.string_at(0)  # a real invalid read
            elif MODE == "bus":
                os.kill(os.getpid(), signal.SIGBUS)
            elif MODE == "fpe":
                os.kill(os.getpid(), signal.SIGFPE)
            elif MODE == "abort":
                os.abort()
        return torch.zeros(4)


def main() -> None:
    loader = DataLoader(Crashing(), batch_size=2, num_workers=2)
    for step, _batch in enumerate(loader):
        print(f"validation step {step}", flush=True)


if __name__ == "__main__":
    main()
