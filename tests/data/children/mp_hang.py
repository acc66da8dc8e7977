"""A fork-started multiprocessing worker and its parent both hang."""

import multiprocessing
import os
import sys
import time


def worker_hang(folder):
    with open(os.path.join(folder, "worker.pid"), "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.05)


def parent_hang(folder):
    with open(os.path.join(folder, "parent.pid"), "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    folder = sys.argv[1]
    worker = multiprocessing.get_context("fork").Process(target=worker_hang, args=(folder,))
    worker.start()
    while not os.path.exists(os.path.join(folder, "worker.pid")):
        time.sleep(0.01)
    parent_hang(folder)
