"""`reprospec minimize` of a program that rebuilds a cache folder of the workdir it names
(`"cache"`): the file its runs wrote is its output, not its input, and DIR neither carries
a copy of it nor lists it in minimized.yaml's `files` (driver._written), as capture leaves
out what a program wrote and read back."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import json_verb

# The index is written, then read back; the workdir's own cache/index.json, left by an
# earlier run of an older version, holds the key, so only the file the run wrote fails.
PROGRAM = """\
import json, os, shutil
shutil.rmtree("cache", ignore_errors=True)
os.makedirs("cache")
with open("cache/index.json", "w") as f:
    f.write(json.dumps({"offsets": [1, 2]}))
with open("cache/index.json") as f:
    index = json.load(f)
if os.environ.get("X") == "1":
    print(index["count"])
print("fine")
"""

SPEC = """\
reprospec: 1
name: rebuilt-cache
environment:
  env:
    X: "${{ matrix.x }}"
matrix:
  x: ["1", "0"]
command: python load.py
run:
  timeout: 30s
expect:
  outcome: error
  exception: KeyError
  cases:
    - {when: {x: "0"}, outcome: pass}
"""


def test_a_file_the_program_wrote_is_not_carried_into_the_minimized_spec(
    tmp_path: Path,
) -> None:
    # minimized.yaml gained `files: [cache/index.json]` and DIR a copy of the workdir's,
    # which the program removes and writes anew in every run.
    work = tmp_path / "work"
    (work / "cache").mkdir(parents=True)
    stale = work / "cache" / "index.json"
    stale.write_text('{"count": 1}', encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    (work / "load.py").write_text(PROGRAM, encoding="utf-8")
    (work / "spec.yaml").write_text(SPEC, encoding="utf-8")
    result = tmp_path / "result"
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(work / "spec.yaml"),
        "--format", "json", "--out", str(tmp_path / "out"), "-o", str(result),
        "--budget", "30",
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    assert "open('cache/index.json', 'w')" in (result / "load.py").read_text(encoding="utf-8")
    document = load_spec(str(result / "minimized.yaml")).document
    assert "files" not in document, document["files"]
    assert not (result / "cache").exists()
    assert data.get("written") == ["cache/index.json"], data
    assert "DIR leaves out 1 file its rerun wrote itself (the program's output, not its " in (
        (result / "minimize.md").read_text(encoding="utf-8")
    )
