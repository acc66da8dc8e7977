"""What an attempt runs under, as JSON into argv[1]; argv[2] `torch`: torch's pools too."""

import gc
import json
import os
import resource
import sys
from pathlib import Path

facts = {
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "switch": sys.getswitchinterval(),
    "gc": list(gc.get_threshold()),
    "cpus": sorted(os.sched_getaffinity(0)),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "cgroup": Path("/proc/self/cgroup").read_text(),
    "address_space": resource.getrlimit(resource.RLIMIT_AS)[0],
    "hash_seed": os.environ.get("PYTHONHASHSEED"),
    "omp": os.environ.get("OMP_NUM_THREADS"),
    "perturb": os.environ.get("REPROSPEC_PERTURB"),
    "mark": getattr(sys.modules.get("marked"), "MARK", "not preloaded"),
}
if sys.argv[2:] == ["torch"]:
    import torch

    facts["torch_threads"] = torch.get_num_threads()
    facts["interop_threads"] = torch.get_num_interop_threads()
    facts["sum"] = float(torch.ones(64, 64).matmul(torch.ones(64, 64)).sum())
with Path(sys.argv[1]).open("w") as f:
    json.dump(facts, f)
