"""Runs its work in a child process, which segfaults when workers are asked for."""

import argparse
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--batch", type=int, default=4)
args = parser.parse_args()
print(f"step 1: starting the child with {args.workers} worker(s)", flush=True)
subprocess.run([sys.executable, "work.py", str(args.workers)], check=True)
print("done")
