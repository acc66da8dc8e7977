"""Maps its items over a multiprocessing.Pool whose worker segfaults on one of them.

The pool never notices the dead worker's lost task: map() waits forever (a hang).
"""

import argparse
import ctypes
import multiprocessing


def square(item: int) -> int:
    if item == 3:
        ctypes.string_at(0)  # a real SIGSEGV in the worker
    return item * item


parser = argparse.ArgumentParser()
parser.add_argument("--items", type=int, default=4)
args = parser.parse_args()
if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(pool.map(square, range(args.items)), flush=True)
