"""A DataLoader worker that dies of a real SIGSEGV (an invalid read): worker 1, at its first
item, while worker 0 loads its own. Which worker died is known only from the worker's start
(torch's `worker_id`), which the engine's sitecustomize reads into the `child_exit` event.

Usage: python loader_segv.py
"""

from __future__ import annotations

import ctypes

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Items(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        info = get_worker_info()
        if info is not None and info.id == 1:
            ctypes.string_at(0)
        return torch.zeros(4)


def main() -> None:
    for _ in DataLoader(Items(), batch_size=4, num_workers=2):
        pass
    print("every batch loaded")


if __name__ == "__main__":
    main()
