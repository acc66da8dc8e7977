"""Find which differences between a passing and a failing configuration make it fail.

- `search.py`: the search, a pure state machine over numbered differences
  (`Isolation`, `isolate`), flaky-aware; no processes.
- `hypotheses.py`: its belief, a posterior over the culprit sets, and the choice
  of the next configuration to try.
- `candidates.py`: what it runs and concludes (`Probe`, `Tally`, `Candidate`,
  `IsolationResult`) and the passing rule.
- `differences.py`: configurations as flat path -> value mappings, what differs
  between two, and the `--set` overrides that run a mix of them.
"""

from __future__ import annotations

from reprospec.core.results import Rate  # the isolation's rate is the engine's
from reprospec.isolation.candidates import (
    AttemptKind,
    Candidate,
    IsolationResult,
    Probe,
    Settings,
    Status,
    Tally,
    clean_needed_at,
    rule_text,
)
from reprospec.isolation.search import Isolation, ProbeRunner, isolate

__all__ = [
    "AttemptKind",
    "Candidate",
    "Isolation",
    "IsolationResult",
    "Probe",
    "ProbeRunner",
    "Rate",
    "Settings",
    "Status",
    "Tally",
    "clean_needed_at",
    "isolate",
    "rule_text",
]
