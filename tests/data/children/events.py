"""Appends progress events to $REPROSPEC_EVENTS like the harness does, then exits 3."""

import json
import os
import sys

fd = os.open(os.environ["REPROSPEC_EVENTS"], os.O_WRONLY | os.O_APPEND)
for step in range(3):
    os.write(fd, (json.dumps({"event": "step", "phase": "train", "step": step}) + "\n").encode())
sys.exit(3)
