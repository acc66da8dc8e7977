"""Writes a ready file, then sleeps until killed."""

import sys
import time
from pathlib import Path

Path(sys.argv[1]).write_text("ready")
while True:
    time.sleep(0.05)
