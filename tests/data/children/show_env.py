"""Prints what the child sees: interpreter, cwd and the environment, as JSON."""

import json
import os
import sys
from pathlib import Path

json.dump(
    {
        "executable": sys.executable,
        "cwd": str(Path.cwd()),
        "env": dict(os.environ),
        "argv": sys.argv,
    },
    sys.stdout,
)
