"""A training loop whose DataLoader worker segfaults, but only with workers and pinned memory.

The dataset's __getitem__ makes a real invalid read (ctypes) for one item of the
validation set when it runs in a worker process and memory is pinned.
"""

import argparse
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Samples(Dataset):
    def __init__(self, size: int, poison: int | None) -> None:
        self.size, self.poison = size, poison

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == self.poison and get_worker_info() is not None:
            ctypes.string_at(0)
        return torch.full((4,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    poison = 7 * 4 - 1 if args.pin_memory else None  # an item of validation step 7
    for phase, dataset in (("train", Samples(8, None)), ("validation", Samples(40, poison))):
        loader = DataLoader(
            dataset,
            batch_size=4,
            num_workers=args.workers,
            pin_memory=args.pin_memory,
            multiprocessing_context="fork" if args.workers else None,
        )
        for step, batch in enumerate(loader, start=1):
            print(f"{phase} step {step}/{len(loader)} mean={batch.mean():.1f}", flush=True)
    print("done")


if __name__ == "__main__":
    main()
