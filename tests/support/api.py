"""The spec the Python API's tests load: its unit tests (refusals, plan_run) and its
functional tests (real runs) read the same two-cell segfault spec."""

from __future__ import annotations

from pathlib import Path

SPEC = """\
reprospec: 1
name: api-segv
matrix:
  crash: [false, true]
command: >-
  python -c "import os, signal, sys;
  os.kill(os.getpid(), signal.SIGSEGV) if sys.argv[1] == 'true' else None" ${{ matrix.crash }}
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {crash: false}
      outcome: pass
"""


def write(tmp_path: Path, text: str = SPEC) -> Path:
    """`text` (default: SPEC) as tmp_path/api.yaml."""
    path = tmp_path / "api.yaml"
    path.write_text(text)
    return path


# Two toggles, one of which makes a real SIGSEGV: what `reprospec.isolate` is given.
TOGGLES = """\
reprospec: 1
name: api-toggles
matrix:
  crash: [false, true]
  verbose: [false, true]
command: >-
  python -c "import os, signal, sys;
  print('verbose') if sys.argv[2] == 'true' else None;
  os.kill(os.getpid(), signal.SIGSEGV) if sys.argv[1] == 'true' else None"
  ${{ matrix.crash }} ${{ matrix.verbose }}
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {crash: false}
      outcome: pass
"""
