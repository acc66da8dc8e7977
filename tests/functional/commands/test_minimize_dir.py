"""`minimize -o DIR` where DIR holds an earlier minimize's answer: its own, or another's.

A DIR that held spec-a's answer (prog_a.py, helper_a.py) took spec-b's over it: spec-b's
minimized.yaml and minimize.md sat beside spec-a's program, and a reader saw a mix; so did
spec-a's own answer after its program changed (helper_a.py left, named by nothing).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _minimize(tmp_path: Path, spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reprospec", "minimize", spec, "-o", "D", "--out", "out",
         "--budget", "30", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip


def _files(folder: Path) -> dict[str, bytes]:
    """The files of `folder` by name: not the __pycache__ its program's check run may leave
    (the full suite writes bytecode; PYTHONDONTWRITEBYTECODE hid it where the test was made)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_dir_holding_another_specs_answer_is_refused_its_own_rewritten(tmp_path: Path) -> None:
    for name, program, error in (("a", "import helper_a\nhelper_a.boom()\n", "ValueError"),
                                 ("b", "z = 3\nraise KeyError('b')\n", "KeyError")):  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / f"prog_{name}.py").write_text(program)
        (tmp_path / f"{name}.yaml").write_text(
            f"reprospec: 1\nname: spec-{name}\ncommand: python prog_{name}.py\n"
            f"environment: {{workdir: {name}}}\nexpect: {{outcome: error, exception: {error}}}\n"
        )
    (tmp_path / "a" / "helper_a.py").write_text("def boom():\n    raise ValueError('a')\n")
    first = _minimize(tmp_path, "a.yaml")
    assert first.returncode == 0, first.stderr
    dir_ = tmp_path / "D"
    held = _files(dir_)
    assert {"prog_a.py", "helper_a.py", "minimize.json"} <= set(held)
    assert json.loads(held["minimize.json"])["spec_path"] == str(tmp_path / "a.yaml")
    runs = len(list((tmp_path / "out" / "runs").iterdir()))
    other = _minimize(tmp_path, "b.yaml")
    assert other.returncode == 2, other.stderr
    assert other.stderr == (
        "reprospec: -o D: the folder holds the answer of another minimization (spec "
        f"'spec-a' ({tmp_path / 'a.yaml'}), cell default), not of 'spec-b' (b.yaml) in cell "
        "default: this one's files would be written among its files, and no reader could "
        "tell which are whose; give another folder, or remove that one first\n"
    )
    assert _files(dir_) == held  # nothing lost or mixed
    assert len(list((tmp_path / "out" / "runs").iterdir())) == runs  # nothing ran
    again = _minimize(tmp_path, "a.yaml")  # its own answer: rewritten, as a rerun does
    assert again.returncode == 0, again.stderr
    # The same spec's program changed (helper_a.py no longer imported): its answer would
    # have left helper_a.py in DIR beside a program that no longer names it.
    (tmp_path / "a" / "prog_a.py").write_text("raise ValueError('a')\n")
    held = _files(dir_)
    changed = _minimize(tmp_path, "a.yaml")
    assert changed.returncode == 2, changed.stderr
    assert (
        f"(spec 'spec-a' ({tmp_path / 'a.yaml'}), cell default, before its program or its "
        "settings changed), not of 'spec-a' (a.yaml) in cell default"
    ) in changed.stderr
    assert _files(dir_) == held
