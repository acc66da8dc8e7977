"""Shrink a failing program to the smallest one that still fails the same way, flakily.

- `program.py`: a candidate as plain values (`Program`: the command's words, the
  environment variables, the Python files) and the content hash that names it.
- `source.py`: the reduction passes (`reduce`), a generator of smaller candidates
  over the command's words and the files' ASTs; no processes.
- `settings.py`: step 1, the failing cell's smallest configuration: `isolate`'s own
  search (`isolate_spec`) against the farthest passing cell; what it does not need
  goes back to the passing cell's values.
- `workload.py`: step 4 for workload specs: their numbers (steps, sizes, width,
  workers) as the candidate's `fields`, and a reducer that lowers each one.
- `search.py`: the flaky-aware search around it, a pure state machine
  (`Minimization`, `minimize`): the rate, each candidate's verdict from its
  attempts, the passing cells, the cache, the budget, the final check.
"""

from __future__ import annotations

from reprospec.minimize.program import Program
from reprospec.minimize.search import Minimization, MinimizeResult, Probe, Settings, minimize
from reprospec.minimize.source import reduce

__all__ = ["Minimization", "MinimizeResult", "Probe", "Program", "Settings", "minimize", "reduce"]
