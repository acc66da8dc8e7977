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


MODULE = """\
import os
import sys


def helper():
    return sys.argv


def f():
    if os.environ.get("X") == "1":
        raise ValueError("boom")
    print("fine")
"""


def test_a_link_to_a_folder_of_the_workdir_is_the_candidates_own(tmp_path: Path) -> None:
    # `pkg -> src/pkg`: the program's module is src/pkg/mod.py by its real path, which
    # each candidate rewrites; a link to the original's pkg had `import pkg` load the
    # original's module in every candidate, and mod.py was minimized to nothing of the bug
    # (status budget, the result unconfirmed).
    work = tmp_path / "work"
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "src" / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (work / "src" / "pkg" / "mod.py").write_text(MODULE, encoding="utf-8")
    (work / "pkg").symlink_to(Path("src") / "pkg")
    (work / "prog.py").write_text("from pkg.mod import f\n\nf()\n", encoding="utf-8")
    (work / "spec.yaml").write_text(SPEC.replace("linked-data", "linked-pkg"), encoding="utf-8")
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(work / "spec.yaml"),
        "--format", "json", "--out", str(tmp_path / "out"), "-o", str(tmp_path / "result"),
        "--budget", "60", "-j", "2",
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr  # DIR's check passed: DIR links pkg to its own src/pkg
    assert data["message_before"] == "boom", data
    assert data["lines_after"] < data["lines_before"], data
    module = (tmp_path / "result" / "src" / "pkg" / "mod.py").read_text(encoding="utf-8")
    assert "raise ValueError" in module, module  # the bug kept, as the candidates ran it
    assert (tmp_path / "result" / "pkg").readlink() == Path("src") / "pkg"


def test_a_workdir_docker_cannot_mount_read_only_at_its_own_path_is_refused_first(
    tmp_path: Path,
) -> None:
    # Under docker each candidate's run mounts the original workdir read-only at its own
    # path (its folder's links name it): at /tmp, a non-root user's HOME in the container
    # and every program's scratch, step 1 ran and then every candidate's attempt failed.
    # Refused before anything runs, the user's mistake to mend (exit 2). No engine is asked.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: ro\nenvironment:\n  workdir: /tmp\n"
        "command: python -c \"raise ValueError('x')\"\nexpect:\n  outcome: error\n",
        encoding="utf-8",
    )
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(spec), "--runner", "docker",
        "--format", "json", "--out", str(tmp_path / "out"), "--budget", "30",
    ]  # fmt: skip
    code, _, stderr = json_verb(argv, timeout=120)
    assert code == 2, stderr
    assert stderr == (
        "reprospec: minimize under docker: the workdir /tmp cannot be mounted read-only at its "
        "own path in the container (/tmp is the system's own there): move the project under "
        "another folder\n"
    )
    assert not (tmp_path / "out" / "runs").exists()  # nothing ran
    # Compared folded: `../../../tmp` from a spec's folder passed as text, and 12
    # candidates' runs mounted the host's /tmp read-only over the container's.
    nested = tmp_path / "a"
    nested.mkdir()
    up = "../" * len(nested.parts[1:])
    (nested / "spec.yaml").write_text(
        spec.read_text(encoding="utf-8").replace("workdir: /tmp", f"workdir: {up}tmp"),
        encoding="utf-8",
    )
    argv[argv.index(str(spec))] = str(nested / "spec.yaml")
    code, _, stderr = json_verb(argv, timeout=120)
    assert code == 2, stderr
    assert "cannot be mounted read-only at its own path in the container (/tmp is the " in (stderr)
    assert not (tmp_path / "out" / "runs").exists()
