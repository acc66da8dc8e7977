"""What the search simulations (isolate_simulation.py, bisect_simulation.py) share."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """A rate, or a failure deterministic for a trial's first `steady` attempts, then `rate`
    (written `1:STEADY:RATE`): how a search that learns the rate is tried on a failure that
    looked deterministic and then flakes."""

    rate: float
    steady: int = 0

    @classmethod
    def parse(cls, text: str) -> Case:
        if ":" in text:
            _, steady, rate = text.split(":")
            return cls(float(rate), int(steady))
        return cls(float(text))

    def __str__(self) -> str:
        return f"1:{self.steady}:{self.rate:g}" if self.steady else f"{self.rate:g}"


def source_at(before: str, relpath: str) -> str:
    """`relpath` (reprospec/bisect/search.py) as `--before` has it: a git revision of this
    checkout, or a folder holding a checkout (`git worktree add DIR REV`, or a copy with
    uncommitted changes) whose file is read as it is. A folder only where `before` is
    written as a path (`./wt`, `/tmp/wt`, `../copy`): `--before main` from /work read
    /work/main's working tree, edits and all, not the branch; one that is both a folder and
    a revision is refused as ambiguous. Neither, refused in one line, exit 2, that says which
    it missed (a folder or a typo ended in git's CalledProcessError traceback)."""
    if _written_as_path(before):
        folder = Path(before)
        if folder.is_dir():
            if _is_revision(before):
                _refuse(
                    f"--before {before}: both a folder and a git revision; write the folder "
                    f"as {folder.resolve()}/ or the revision as {before}^{{commit}}"
                )
            source = folder / relpath
            if not source.is_file():
                _refuse(f"--before {before}: a folder without {relpath}")
            return source.read_text()
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{before}:{relpath}"],
        capture_output=True,
        text=True,
    )
    if shown.returncode:
        _refuse(_not_found(before, relpath, shown.stderr.strip()))
    return shown.stdout


def _not_found(before: str, relpath: str, stderr: str) -> str:
    """Why `before` names no search: a revision without `relpath` (a branch named like a
    path, feature/x, or one with a folder of its name here, `git worktree add 7a8caec1
    7a8caec1`, which was told "no git revision"), a path that is no folder, a folder written
    bare (where the `./` is the fix), or no revision at all."""
    if _is_revision(before):
        return f"--before {before}: git revision {before} has no {relpath} ({stderr})"
    if _written_as_path(before):
        return f"--before {before}: no folder {before} (and no git revision)"
    if Path(before).is_dir():
        return f"--before {before}: no git revision; {before} is a folder here: write it ./{before}"
    return f"--before {before}: no git revision {before} ({stderr})"


def _written_as_path(before: str) -> bool:
    """Whether `before` is written as a path (`./wt`, `/tmp/wt`, `../copy`): only such is
    read as a folder."""
    return os.sep in before or before.startswith(".")


def _is_revision(before: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", "-q", f"{before}^{{commit}}"],
            capture_output=True,
        ).returncode
        == 0
    )


def _refuse(message: str) -> NoReturn:
    """A `--before` that names no search: said in one line, exit 2 (bad usage)."""
    print(f"{Path(sys.argv[0]).name}: {message}", file=sys.stderr)
    raise SystemExit(2)
