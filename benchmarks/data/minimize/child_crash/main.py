"""Preprocessing in a child process through a C library (ctypes): with the native fast
path on, the child reads a freed buffer and dies of SIGSEGV; the parent reports it."""

import argparse
import ctypes
import multiprocessing
import statistics
import sys


def normalize(values: list[float]) -> list[float]:
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values) or 1.0
    return [(v - mean) / spread for v in values]


def native_sum(values: list[float]) -> float:
    buffer = (ctypes.c_double * len(values))(*values)
    address = ctypes.addressof(buffer)
    del buffer
    # The "freed" buffer: read through a null pointer, as the C library does.
    ctypes.string_at(0 if address else 1)
    return sum(values)


def preprocess(native: bool) -> None:
    values = normalize([float(i) for i in range(100)])
    total = native_sum(values) if native else sum(values)
    print(f"total={total:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--native", default="false")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    child = multiprocessing.get_context("fork").Process(
        target=preprocess, args=(args.native == "true",), name="preprocess"
    )
    child.start()
    child.join()
    if args.verbose:
        print(f"child exit code {child.exitcode}", file=sys.stderr)
    if child.exitcode != 0:
        raise RuntimeError(f"preprocessing failed (exit code {child.exitcode})")
    print("done")


if __name__ == "__main__":
    main()
