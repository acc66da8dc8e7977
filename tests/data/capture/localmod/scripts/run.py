"""A script that imports local modules from its own folder, one of them by name at run time."""

import argparse
import importlib

import helpers

parser = argparse.ArgumentParser()
parser.add_argument("--precision", default="32")
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()
losses = importlib.import_module("losses_" + ("half" if args.precision == "16" else "full"))
for step in range(1, args.steps + 1):
    print(f"train step {step}/{args.steps} loss={helpers.fmt(losses.loss(step))}", flush=True)
