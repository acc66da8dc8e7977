"""`validate`: every spec file in files and folders loaded, every problem collected.

Apart from spec.py, which loads one spec: `plan` and `run` load one and never need this
result's class (a dataclass is built when its module is imported, at ~0.5 ms of a start-up
that issue 15 holds to 2x `python -c "import yaml"`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reprospec.core.inputs import Spec
from reprospec.core.words import plural
from reprospec.errors import SpecError
from reprospec.spec.checks.cells import (
    silent_fault_message,
    silent_faults,
    unread_axes,
    unread_axis_message,
)
from reprospec.spec.files import spec_files
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import expand
from reprospec.spec.todo import todo_block, unfilled
from reprospec.spec.yamlsource import locate


@dataclass
class Validation:
    """What `validate` found: every problem, the files checked, which of them are bad."""

    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    bad_files: list[str] = field(default_factory=list)
    empty_folders: list[str] = field(default_factory=list)
    # What is valid but not done: capture's TODO block still in a spec (spec/todo.py).
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: how many problems, in how many files (and folders without specs)."""
        if not self.problems:
            return f"{plural(len(self.files), 'spec file')} valid"
        if not self.files:
            return f"{plural(len(self.problems), 'problem')}: no spec files found"
        bad, files = len(self.bad_files), len(self.files)
        text = f"{plural(len(self.problems), 'problem')} in {bad} of {plural(files, 'file')}"
        if self.empty_folders:
            text += f", and {plural(len(self.empty_folders), 'folder')} without spec files"
        return text


def _no_notes(file: str, spec: Spec) -> list[str]:  # noqa: ARG001
    return []


def validate(
    paths: Iterable[str | Path], notes_of: Callable[[str, Spec], list[str]] = _no_notes
) -> Validation:
    """Check every spec in `paths` (files, or folders searched recursively). `notes_of`: more
    notes on a valid spec from a later stage (plan/missing.py's scripts the workdir lacks),
    which this stage cannot import."""
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
                spec = load_spec(file)
            except SpecError as exc:
                found.problems.extend(exc.problems)
                found.bad_files.append(file)
                continue
            note = _todo_note(file, spec.source_text)
            if note:
                found.notes.append(note)
            found.notes += _unread_axes(file, spec)
            found.notes += _numbers_written_as_versions(file, spec)
            found.notes += _secret_public_env(file, spec)
            found.notes += _silent_faults(file, spec)
            found.notes += notes_of(file, spec)
    return found


def _unread_axes(file: str, spec: Spec) -> list[str]:
    """A note, at its place, for each matrix axis that nothing reads (`unread_axes`)."""
    notes = []
    for axis in unread_axes(spec.document):
        line, column = locate(spec.locations, ("matrix", axis))
        notes.append(f"{file}:{line}:{column}: {unread_axis_message(axis)}")
    return notes


def _numbers_written_as_versions(file: str, spec: Spec) -> list[str]:
    """A note, at its place, for each matrix value written like a version that YAML reads
    as another number (`python: [3.9, 3.10]`: 3.10 is 3.1, its cell `python=3.1`). It was
    said only where a text field read it, and not at all where none did (an axis only
    `expect.cases` or a cell id names)."""
    matrix = spec.document.get("matrix")
    floats = [
        (axis, index, value)
        for axis, values in (matrix.items() if isinstance(matrix, dict) else ())
        if axis not in ("include", "exclude") and isinstance(values, list)
        for index, value in enumerate(values)
        if isinstance(value, float)
    ]
    if not floats:
        return []  # no number to read as written: the file is not read again
    # The file's own lines, which its locations count (a report.md's YAML block's included).
    try:
        lines = Path(file).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return []
    notes = []
    for axis, index, value in floats:
        line, column = locate(spec.locations, ("matrix", axis, index))
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        written = _VERSION_LIKE.match(text[column - 1 :])
        if written is None or float(written.group()) != value:
            continue
        shown = written.group()
        if shown != repr(value):
            notes.append(
                f"{file}:{line}:{column}: matrix.{axis}[{index}]: {shown} is the number "
                f"{value!r} to YAML (its cell is {axis}={value!r}): quote it, "
                f"'{shown}', if it is a version"
            )
    return notes


# A number written like a version: digits, a point, digits that end in 0 (3.10, 11.0).
_VERSION_LIKE = re.compile(r"[1-9]\d*\.\d*0(?![\w.])")


def _secret_public_env(file: str, spec: Spec) -> list[str]:
    """A note, at its place, for each `public_env` name that looks secret: public_env
    cannot unmask such a name (a stranger's spec must not publish your token), so listing
    it changed nothing, and nothing said so (its value stayed `***` in every output)."""
    from reprospec.core.redact import holds_secret

    section = spec.document.get("environment")
    names = section.get("public_env") if isinstance(section, dict) else None
    notes = []
    for index, name in enumerate(names if isinstance(names, list) else ()):
        # (A count's name, `MAX_TOKENS`, shows a number: public or not, it is no secret.)
        if isinstance(name, str) and holds_secret(name, "2048"):
            line, column = locate(spec.locations, ("environment", "public_env", index))
            notes.append(
                f"{file}:{line}:{column}: environment.public_env[{index}]: {name} looks "
                "secret, and public_env cannot unmask such a name: its value stays *** in "
                "every output"
            )
    return notes


def _silent_faults(file: str, spec: Spec) -> list[str]:
    """A note, at its `when`, for each fault left out of every cell (`silent_faults`)."""
    cells = expand(spec)  # a spec that loaded has a matrix that expands
    notes = []
    for index in silent_faults(spec.document, cells):
        line, column = locate(spec.locations, ("workload", "faults", index, "when"))
        notes.append(f"{file}:{line}:{column}: {silent_fault_message(index, len(cells))}")
    return notes


def _todo_note(file: str, text: str) -> str | None:
    """What capture's TODO block in `text` still asks, or that it is done and can go: the
    skeleton's header says `validate` checks the rest, and a block left in place told every
    report's reader that keys the spec sets were still to fill in."""
    block = todo_block(text)
    if block is None:
        return None
    left = unfilled(block, text)
    where = f"{file}:{block.first}"
    if left:
        return (
            f"{where}: still to fill in ({plural(len(left), 'item')} of capture's TODO): "
            f"{', '.join(left)}"
        )
    return (
        f"{where}: every key capture's TODO block lists is set: delete the block (lines "
        f"{block.first}-{block.last}), or every report and bundle of it shows it still"
    )
