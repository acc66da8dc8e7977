"""Prints what the child sees: interpreter, cwd and the environment, as JSON."""

import json
import os
import sys

json.dump(
    {"executable": sys.executable, "cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv},
    sys.stdout,
)
