"""What the benchmarks that report the engine's own CPU share (parent_costs.py, preload.py)."""

from __future__ import annotations

# `python -c SELF_CPU ARGS` is `python -m reprospec ARGS` that writes the engine process's
# own CPU seconds (user + system, its threads included, its children not) to the file named
# by $ENGINE_CPU at its exit: the tree's CPU (RUSAGE_CHILDREN) counts the attempts too.
SELF_CPU = (
    "import atexit, os, resource, runpy, sys\n"
    "def _cpu():\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(os.environ['ENGINE_CPU'], 'w') as f:\n"
    "        f.write(str(u.ru_utime + u.ru_stime))\n"
    "atexit.register(_cpu)\n"
    "sys.argv[0] = 'reprospec'\n"
    "runpy.run_module('reprospec', run_name='__main__', alter_sys=True)\n"
)
