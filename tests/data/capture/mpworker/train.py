"""A training loop whose batches a forked worker process loads one step ahead; the worker
loading batch 6 makes a real invalid read (ctypes) and dies of SIGSEGV, and the loop, at
step 5, finds it dead and exits 1, as a DataLoader's main process does."""

import argparse
import ctypes
import multiprocessing
import sys


def load_batch(step: int, poison: int) -> None:
    if step == poison:
        ctypes.string_at(0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--poison", type=int, default=6)
    args = parser.parse_args()
    context = multiprocessing.get_context("fork")
    ahead = context.Process(target=load_batch, args=(1, args.poison))
    ahead.start()
    for step in range(1, args.steps + 1):
        ahead.join()
        if ahead.exitcode != 0:
            print(f"worker (pid {ahead.pid}) died: exit code {ahead.exitcode}", file=sys.stderr)
            sys.exit(1)
        ahead = context.Process(target=load_batch, args=(step + 1, args.poison))
        ahead.start()  # the next batch loads while this step trains
        print(f"train step {step}/{args.steps} loss=0.5", flush=True)
    ahead.join()
    print("done")


if __name__ == "__main__":
    main()
