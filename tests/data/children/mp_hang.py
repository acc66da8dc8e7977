"""A fork-started multiprocessing worker and its parent both hang."""

import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import NoReturn


def worker_hang(folder: str) -> NoReturn:
    (Path(folder) / "worker.pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)


def parent_hang(folder: str) -> NoReturn:
    (Path(folder) / "parent.pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    folder = sys.argv[1]
    worker = multiprocessing.get_context("fork").Process(target=worker_hang, args=(folder,))
    worker.start()
    while not (Path(folder) / "worker.pid").exists():
        time.sleep(0.01)
    parent_hang(folder)
