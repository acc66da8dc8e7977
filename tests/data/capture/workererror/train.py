"""A DataLoader worker raises ValueError from deep in the dataset's own code.

torch raises it again in the main process as `Caught ValueError in DataLoader worker
process 0.`, true of any ValueError in any worker; the worker's own message is the last
line of the worker's traceback, more than 30 lines below (the dataset's frames).
"""

import argparse

import torch
from torch.utils.data import DataLoader, Dataset


def label_of(index: int, depth: int) -> int:
    if depth:
        return checked(index, depth - 1)
    if index == 27:
        raise ValueError(f"bad sample {index}: label -1 is out of range [0, 10)")
    return index % 10


def checked(index: int, depth: int) -> int:
    # Two functions in turn: CPython folds a run of one repeated frame into one line.
    return label_of(index, depth)


class Samples(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 40

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((4,), float(label_of(index, 15)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    loader = DataLoader(Samples(), batch_size=4, num_workers=args.workers)
    for step, batch in enumerate(loader, start=1):
        print(f"step {step}/{len(loader)} mean={batch.mean():.1f}", flush=True)


if __name__ == "__main__":
    main()
