"""Child: a DataLoader worker dies of a real signal while fetching one item.

Usage: python dataloader_crash.py MODE [BATCH_SIZE ITEM_SIZE CRASH_INDEX]
MODE is segv (a real invalid read), bus, fpe (the signal sent to itself) or abort.
Small items mostly end in "exited unexpectedly"; large items with batch size 1
race the dead worker's fd sharing and end in ConnectionResetError or EOFError.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import torch
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1] if len(sys.argv) > 1 else "segv"
BATCH_SIZE, ITEM_SIZE, CRASH_INDEX = (int(a) for a in (sys.argv[2:5] or ("2", "4", "5")))


class Crashing(Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == CRASH_INDEX:
            if MODE == "segv":
                ctypes.string_at(0)
            elif MODE == "bus":
                os.kill(os.getpid(), signal.SIGBUS)
            elif MODE == "fpe":
                os.kill(os.getpid(), signal.SIGFPE)
            elif MODE == "abort":
                os.abort()
        return torch.zeros(ITEM_SIZE)


def main() -> None:
    events = os.environ.get("REPROSPEC_EVENTS")
    fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT) if events else None
    if fd is not None:
        os.write(fd, b'{"event": "phase", "phase": "validation"}\n')
    loader = DataLoader(Crashing(), batch_size=BATCH_SIZE, num_workers=2)
    for step, _batch in enumerate(loader):
        if fd is not None:
            os.write(fd, f'{{"event": "step", "phase": "validation", "step": {step}}}\n'.encode())
        print(f"validation step {step}", flush=True)


if __name__ == "__main__":
    main()
