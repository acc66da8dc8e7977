"""An attempt's view of itself, as JSON into argv[1]; argv[2]: exit status; argv[3]: `torch`."""

import json
import os
import random
import sys
from pathlib import Path

if sys.argv[3:] == ["torch"]:
    import torch
else:
    torch = None

names = ("PRELOAD_MARK", "TMPDIR", "REPROSPEC_EVENTS", "SPEC_VAR", "OMP_NUM_THREADS")
facts = {
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "sid": os.getsid(0),
    "pgid": os.getpgid(0),
    "cwd": str(Path.cwd()),
    "argv": sys.argv,
    "path0": sys.path[0],
    "file": __file__,
    "name": __name__,
    "stdin": sys.stdin.read(),
    "env": {name: os.environ.get(name) for name in names},
    "mark": getattr(sys.modules.get("marked"), "MARK", "not preloaded"),
    "random": random.random(),
    "torch_rand": torch.rand(1).item() if torch is not None else None,
    "torch_threads": torch.get_num_threads() if torch is not None else None,
}
with Path(sys.argv[1]).open("w") as f:
    json.dump(facts, f)
print("facts written", flush=True)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
