"""Writes a ready file, then sleeps until killed."""

import sys
import time

with open(sys.argv[1], "w") as f:
    f.write("ready")
while True:
    time.sleep(0.05)
