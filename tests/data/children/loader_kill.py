"""A DataLoader worker SIGKILLed (as by the OOM killer) where torch's SIGCHLD handler does
not say so first: the main process's error names no signal.

torch learns of a dead worker two ways, and they race: its SIGCHLD handler raises "DataLoader
worker (pid N) is killed by signal: Killed.", while a main process already waiting on the
data queue fails on its own: a ConnectionResetError where it was fetching a batch the worker
had just sent, an EOFError where it was taking that batch's shared-memory handle from the
worker, or, at its next check of the workers, "DataLoader worker (pid(s) N) exited
unexpectedly" (no signal). This program takes the second way every time: it puts the default
SIGCHLD action back once the loader's workers have started (as a library that sets its own
handler does), so only the main process's check sees the death.

The worker is SIGKILLed by the kernel's OOM killer where CHILD_CRASH_MEMCG names a memory
cgroup (the test makes it, with a limit): it joins it and fills it. Without one it kills
itself, a SIGKILL no OOM killer sent (as a `kill -9` from outside would be).

Usage: python loader_kill.py
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 9:
            folder = os.environ.get("CHILD_CRASH_MEMCG")
            if folder:
                Path(folder, "cgroup.procs").write_text("0")
                hoard = [b"x" * (1 << 20) for _ in range(3072)]  # charged to the cgroup
                print(f"not killed at {len(hoard)} MiB", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.zeros(4)


def main() -> None:
    # No `timeout`: the main process checks its workers every 5 s without a batch (torch's
    # MP_STATUS_CHECK_INTERVAL) and finds the dead one. A timeout of 1 s ended it with
    # "DataLoader timed out after 1 seconds" where a loaded machine kept a live worker
    # (the one filling its memory cgroup) from its batch that long.
    batches = iter(DataLoader(Items(), batch_size=4, num_workers=2))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for _ in batches:
        pass
    print("every batch loaded")


if __name__ == "__main__":
    main()
