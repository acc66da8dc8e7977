"""A program that hangs while importing its plugin when the start method is fork."""

import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--start-method", default="spawn")
parser.add_argument("--items", type=int, default=3)
args = parser.parse_args()
os.environ["PLUGIN_START_METHOD"] = args.start_method
print("loading the plugin", flush=True)

import plugin  # noqa: E402

print(plugin.process(args.items))
