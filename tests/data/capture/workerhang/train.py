"""A training loop whose DataLoader worker deadlocks fetching one item, only in a worker.

The dataset's __getitem__ takes a lock it already holds (a real self-deadlock) for item 5
when it runs in a worker process: the main process waits for that batch forever.
"""

import argparse
import threading

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

lock = threading.Lock()


class Samples(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 5 and get_worker_info() is not None:
            lock.acquire()
            lock.acquire()
        return torch.full((2,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    loader = DataLoader(
        Samples(),
        batch_size=2,
        num_workers=args.workers,
        multiprocessing_context="fork" if args.workers else None,
    )
    for step, batch in enumerate(loader, start=1):
        print(f"step {step}/{len(loader)} mean={batch.mean():.1f}", flush=True)
    print("done")


if __name__ == "__main__":
    main()
