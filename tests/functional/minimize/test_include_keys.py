"""`reprospec minimize` of a spec whose `include` entries set a value the minimized command
no longer reads: the key leaves the entries, as an axis nothing reads leaves the matrix
(report._drop_unread_entry_keys)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reprospec.core.jsontypes import JsonValue
from reprospec.spec.load import load_spec
from tests.support.cli import json_verb

PROGRAM = """\
import argparse
p = argparse.ArgumentParser()
p.add_argument("--bad", action="store_true")
p.add_argument("--records", type=int, default=1)
a = p.parse_args()
if a.bad:
    raise ValueError("bad export")
print("fine")
"""

SPEC = """\
reprospec: 1
name: export-pair
matrix:
  setup: [full, small]
  include:
    - {setup: full, bad: true, records: 2000}
    - {setup: small, bad: false, records: 100}
command: python job.py ${{ matrix.bad and '--bad' or '' }} --records ${{ matrix.records }}
run:
  timeout: 30s
expect:
  outcome: error
  exception: ValueError
  cases:
    - {when: {setup: small}, outcome: pass}
"""


def _minimized(
    tmp_path: Path, program: str, spec: str
) -> tuple[dict[str, Any], Mapping[str, JsonValue]]:
    """`reprospec minimize --format json` of `spec` running `program` as job.py; it
    succeeded: its JSON and the minimized spec's document."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(program, encoding="utf-8")
    (work / "spec.yaml").write_text(spec, encoding="utf-8")
    result = tmp_path / "result"
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(work / "spec.yaml"),
        "--format", "json", "--out", str(tmp_path / "out"), "-o", str(result),
        "--budget", "30",
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    return data, load_spec(str(result / "minimized.yaml")).document


def test_an_include_key_the_minimized_command_no_longer_reads_leaves_the_entries(
    tmp_path: Path,
) -> None:
    # `--records` went from the command, and minimized.yaml kept `records: 2000` and
    # `records: 100` in its include entries: settings that changed nothing.
    data, document = _minimized(tmp_path, PROGRAM, SPEC)
    assert document["command"] == "python job.py ${{ matrix.bad and '--bad' or '' }}"
    assert document["matrix"] == {
        "setup": ["full", "small"],
        "include": [{"setup": "full", "bad": True}, {"setup": "small", "bad": False}],
    }
    assert "records" not in data["cell_after"], data["cell_after"]


WHOLE_PROGRAM = """\
import json, sys
cell = json.loads(sys.argv[1])
if cell.get("records") == 2000:
    raise ValueError("bad export")
print("fine")
"""

WHOLE_SPEC = """\
reprospec: 1
name: export-pair
matrix:
  setup: [full, small]
  include:
    - {setup: full, records: 2000}
    - {setup: small, records: 100}
command: python job.py '${{ matrix }}'
run:
  timeout: 30s
expect:
  outcome: error
  exception: ValueError
  cases:
    - {when: {setup: small}, outcome: pass}
"""


def test_a_command_reading_the_matrix_whole_keeps_every_key(tmp_path: Path) -> None:
    # `${{ matrix }}` renders the cell as JSON: `records` is read without its name. It left
    # the entries, and the minimized spec no longer failed (exit 1, "did not fail").
    _, document = _minimized(tmp_path, WHOLE_PROGRAM, WHOLE_SPEC)
    assert document["matrix"] == {
        "setup": ["full", "small"],
        "include": [{"setup": "full", "records": 2000}, {"setup": "small", "records": 100}],
    }
