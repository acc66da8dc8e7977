"""`reprospec minimize` of a program that reads a folder linked into its workdir (`data ->
/datasets/x`): each candidate's folder mirrors the workdir (probes.link_tree), and os.walk
lists a linked folder with the folders without walking it, so it was in none, and the
original's `open("data/cfg.txt")` failed with FileNotFoundError in every attempt: refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.cli import json_verb

PROGRAM = """\
import os
import sys

word = open("data/cfg.txt").read().strip()
if os.environ.get("X") == "1":
    raise ValueError(word)
print("fine")
"""

SPEC = """\
reprospec: 1
name: linked-data
environment:
  env:
    X: "${{ matrix.x }}"
matrix:
  x: ["1", "0"]
command: python prog.py
run:
  timeout: 30s
expect:
  outcome: error
  exception: ValueError
  cases:
    - {when: {x: "0"}, outcome: pass}
"""


def test_a_folder_linked_into_the_workdir_is_in_every_candidates_folder(tmp_path: Path) -> None:
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "cfg.txt").write_text("boom\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(tmp_path / "datasets")
    (work / "prog.py").write_text(PROGRAM, encoding="utf-8")
    (work / "spec.yaml").write_text(SPEC, encoding="utf-8")
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(work / "spec.yaml"),
        "--format", "json", "--out", str(tmp_path / "out"), "-o", str(tmp_path / "result"),
        "--budget", "30", "-j", "2",
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    assert data["message_before"] == "boom", data  # its ValueError, the linked file read
    assert data["lines_after"] < data["lines_before"]
    assert "import sys" not in (tmp_path / "result" / "prog.py").read_text(encoding="utf-8")
    # The dataset itself is the user's, untouched.
    assert (tmp_path / "datasets" / "cfg.txt").read_text(encoding="utf-8") == "boom\n"
