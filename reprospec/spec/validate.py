"""`validate`: every spec file in files and folders loaded, every problem collected.

Apart from spec.py, which loads one spec: `plan` and `run` load one and never need this
result's class (a dataclass is built when its module is imported, at ~0.5 ms of a start-up
that issue 15 holds to 2x `python -c "import yaml"`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reprospec.errors import SpecError
from reprospec.spec.files import spec_files
from reprospec.spec.load import load_spec


@dataclass
class Validation:
    """What `validate` found: every problem, the files checked, which of them are bad."""

    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    bad_files: list[str] = field(default_factory=list)
    empty_folders: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: how many problems, in how many files (and folders without specs)."""
        if not self.problems:
            return f"{len(self.files)} spec file(s) valid"
        if not self.files:
            return f"{len(self.problems)} problem(s): no spec files found"
        bad, files = len(self.bad_files), len(self.files)
        text = f"{len(self.problems)} problem(s) in {bad} of {files} file(s)"
        if self.empty_folders:
            text += f", and {len(self.empty_folders)} folder(s) without spec files"
        return text


def validate(paths: Iterable[str | Path]) -> Validation:
    """Check every spec in `paths` (files, or folders searched recursively)."""
    found = Validation()
    seen: set[str] = set()  # a file two of the paths reach is checked and counted once
    for path in paths:
        files = spec_files([path])
        if not files:
            found.problems.append(f"{path}: no *.yaml or *.yml files in this folder")
            found.empty_folders.append(str(path))
        for file in files:
            same = os.path.realpath(file)
            if same in seen:
                continue
            seen.add(same)
            found.files.append(file)
            try:
                load_spec(file)
            except SpecError as exc:
                found.problems.extend(exc.problems)
                found.bad_files.append(file)
    return found
