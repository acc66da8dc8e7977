"""Load a spec: YAML (or a report.md embedding one) -> `--set` overrides -> schema ->
semantic checks -> defaults -> a frozen `Spec`.

Every problem of a file is collected and raised at once as a SpecError, each
line `FILE:LINE:COL: PATH: MESSAGE` with FILE the path as given. A problem that
comes from a `--set` ends with `(from --set PATH=VALUE)`; when the file has no
line for it (a key only the override brings) it is `FILE: PATH: MESSAGE (from --set ...)`.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprospec import cellcheck, expr, patterns, schema
from reprospec.bounds import MAX_FILE_BYTES
from reprospec.errors import SpecError, UsageError
from reprospec.expr import same
from reprospec.matrix import MatrixError, all_axes, axes, expand_matrix, render_value
from reprospec.models import Cell, Spec
from reprospec.reportspec import MarkerError, find_marked_spec
from reprospec.sections import DEFAULT_PHASES
from reprospec.units import parse_duration, parse_step
from reprospec.yamlsource import (
    JsonPath,
    Location,
    Problem,
    YamlSourceError,
    format_path,
    load_value,
    load_yaml,
    locate,
    shorten,
)

SPEC_SUFFIXES = (".yaml", ".yml")
# The store's database: a folder holding one is a store, not specs (store.py).
STORE_DB = "results.db"

# Sections shown in the report, never evaluated: `${{` there is just text.
_NOT_INTERPOLATED = ("title", "description", "labels", "links", "matrix", "reprospec", "name")


def load_spec(path: str | Path, overrides: Sequence[str] = ()) -> Spec:
    """Read, override, validate and complete one spec; raise SpecError with every problem."""
    file = str(path)
    yaml_text, offset, hint = _read(Path(path))
    report = Path(path).suffix.lower() == ".md"
    origin = report_origin(hint, Path(path)) if report else None
    try:
        source = load_yaml(yaml_text, line_offset=offset)
    except YamlSourceError as exc:
        raise SpecError([p.format(file) for p in exc.problems]) from None
    data = copy.deepcopy(source.data)
    # Paths an override brings that the file does not have are located at
    # (0, N): "from the Nth --set", so a problem there never points at line 1.
    locations = dict(source.locations)
    targets: list[JsonPath | None] = []
    for index, override in enumerate(overrides):
        data = apply_override(data, override)
        target = _override_target(data, override)
        targets.append(target)
        for depth in range(1, len(target or ()) + 1):
            locations.setdefault(tuple(target or ())[:depth], (0, index + 1))
    # A report without its original spec has no folder to resolve relative paths against.
    base_dir = (origin.parent if origin else None) if report else Path(path).parent
    problems = check(data, locations, source.key_locations, base_dir=base_dir)
    if problems:
        raise SpecError(_annotate(file, problems, overrides, targets))
    return Spec(
        path=Path(path),
        name=data["name"],
        document=data,
        source_text=yaml_text,
        locations=dict(source.locations),
        origin=origin,
        overrides=tuple(overrides),
    )


def report_origin(hint: str | None, report: Path) -> Path | None:
    """The spec file a report was made from (its marker's `path`), when it may be used.

    Relative paths in the spec (workdir) resolve against that file's folder, as they
    did when the report was made. The path is the report's word, so it is honoured
    only when it names a file under the folder `run` was started in or under the
    report's own folder: a report cannot move the workdir to `/etc` or `../..`.
    """
    if not hint:
        return None
    origin = Path(hint)
    try:
        resolved = origin.resolve()
        roots = (Path.cwd().resolve(), report.resolve().parent)
        inside = any(resolved.is_relative_to(root) for root in roots)
        return origin if inside and resolved.is_file() else None
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL in the path
        return None


def spec_files(paths: Iterable[str | Path]) -> list[str]:
    """The files `validate` checks: files as given, folders' *.yaml/*.yml recursively.

    A folder search skips hidden folders (`.reprospec/`, `.git/`, `.venv/`) and
    folders holding a `results.db` (a store, whose runs keep copies of specs).
    """
    files: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            files.extend(str(p) for p in sorted(_search(Path(path))))
        else:
            files.append(str(path))
    return files


def _search(root: Path) -> Iterable[Path]:
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".") and not os.path.exists(os.path.join(folder, name, STORE_DB))
        ]
        for name in names:
            if Path(name).suffix in SPEC_SUFFIXES:
                yield Path(folder) / name


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
    for path in paths:
        files = spec_files([path])
        if not files:
            found.problems.append(f"{path}: no *.yaml or *.yml files in this folder")
            found.empty_folders.append(str(path))
        for file in files:
            found.files.append(file)
            try:
                load_spec(file)
            except SpecError as exc:
                found.problems.extend(exc.problems)
                found.bad_files.append(file)
    return found


def validate_paths(paths: Iterable[str | Path]) -> list[str]:
    """The problems of every spec in `paths` (files, or folders searched recursively)."""
    return validate(paths).problems


def _read(path: Path) -> tuple[str, int, str | None]:
    """(the YAML text, lines before it, the path a report's marker names)."""
    text = decode_spec(path, read_spec_bytes(path))
    if path.suffix.lower() != ".md":
        return text, 0, None
    try:
        marked = find_marked_spec(text)
    except MarkerError as exc:
        raise SpecError([f"{path}: {exc}"]) from None
    if marked is not None:
        return marked.text, marked.line_offset, marked.path
    block = _first_spec_block(text)
    if block is None:
        raise SpecError([f"{path}: no ```yaml block with a top-level 'reprospec:' key"])
    return block[0], block[1], None


_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_spec_bytes(path: Path) -> bytes:
    """The bytes of a spec file: a regular file of at most MAX_FILE_BYTES, else SpecError.

    Opened non-blocking, so a FIFO cannot hang us waiting for a writer; `/dev/zero`
    and other devices are refused before a byte is read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SpecError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise SpecError([f"{path}: is a folder, not a spec file"]) from None
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    try:
        mode = os.fstat(fd).st_mode
        for test, kind in _FILE_KINDS:
            if test(mode):
                raise SpecError([f"{path}: is {kind}, not a spec file"])
        if not stat.S_ISREG(mode):
            raise SpecError([f"{path}: not a regular file"])
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise SpecError(
            [f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not read (docs/limits.md)"]
        )
    return b"".join(chunks)


def decode_spec(path: Path, data: bytes) -> str:
    """UTF-8 text of a spec file; SpecError at the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        col = len(data[line_start : exc.start].decode("utf-8")) + 1
        byte = data[exc.start]
        raise SpecError(
            [f"{path}:{line}:{col}: not UTF-8 text: byte 0x{byte:02x} ({exc.reason})"]
        ) from None


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)")
_SPEC_KEY = re.compile(r"^reprospec\s*:")


def extract_markdown_spec(text: str) -> tuple[str, int] | None:
    """The spec a markdown file embeds, and its line offset: the block a report's marker
    names (reportspec.py), else the first fenced yaml block with a top-level `reprospec:`."""
    try:
        marked = find_marked_spec(text)
    except MarkerError:
        return None
    if marked is not None:
        return marked.text, marked.line_offset
    return _first_spec_block(text)


def _first_spec_block(text: str) -> tuple[str, int] | None:
    """The first fenced yaml block holding a top-level `reprospec:` key, and its line offset."""
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence, info = opening.group(1), opening.group(2).lower()
        start = index
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            index += 1
        body = lines[start:index]
        index += 1
        if info in ("yaml", "yml") and any(_SPEC_KEY.match(line) for line in body):
            return "".join(body), start
    return None


# ---------------------------------------------------------------- overrides


def apply_override(data: Any, override: str) -> Any:
    """Apply one `--set PATH=VALUE` (VALUE read as YAML, list indexes as numbers) or `~PATH`."""
    if override.startswith("~"):
        return _delete(data, override)
    dotted, sep, raw = override.partition("=")
    _no_brackets(override, dotted)
    parts = [p.strip() for p in dotted.split(".")]
    if not sep or not all(parts):
        raise UsageError(f"--set {override}: expected PATH=VALUE, like run.timeout=5m")
    try:
        value = load_value(raw)
    except YamlSourceError as exc:
        raise UsageError(f"--set {override}: the value is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--set {override}: the spec is not a mapping")
    node: Any = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[: depth + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise UsageError(
                    f"--set {override}: '{where}': expected a list index below {len(node)}"
                )
            if last:
                node[int(part)] = value
            node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            elif node.get(part) is None:
                node[part] = {}
            node = node[part]
        else:
            parent = ".".join(parts[:depth])
            raise UsageError(f"--set {override}: '{parent}' is a value, not a mapping or list")
    return data


def _delete(data: Any, override: str) -> Any:
    """`~PATH` removes a key or list item (Hydra style), e.g. `~workload` to swap in a command."""
    _no_brackets(override, override[1:])
    parts = [p.strip() for p in override[1:].split(".")]
    node: Any = data
    for depth, part in enumerate(parts):
        key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
        present = (
            key in node
            if isinstance(node, dict)
            else (isinstance(node, list) and isinstance(key, int) and key < len(node))
        )
        if not present:
            where = ".".join(parts[: depth + 1])
            raise UsageError(f"--set {override}: '{where}' is not in the spec")
        if depth == len(parts) - 1:
            del node[key]
        else:
            node = node[key]
    return data


_BRACKETS = re.compile(r"\[([^\]]*)\]")


def _no_brackets(override: str, dotted: str) -> None:
    """`matrix.mode[9]=x` is a natural guess; say the dotted spelling instead of 'not found'."""
    if _BRACKETS.search(dotted):
        fixed = override.replace(dotted, _BRACKETS.sub(r".\1", dotted), 1)
        raise UsageError(f"--set {override}: use dots for list indexes, like {fixed}")


def _override_target(data: Any, override: str) -> JsonPath | None:
    """The JSON path an applied `--set PATH=VALUE` wrote (list indexes as ints); None for `~`."""
    if override.startswith("~"):
        return None
    node: Any = data
    path: list[Any] = []
    for part in (p.strip() for p in override.partition("=")[0].split(".")):
        key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
        path.append(key)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            node = None
    return tuple(path)


def _annotate(
    file: str,
    problems: list[Problem],
    overrides: Sequence[str],
    targets: Sequence[JsonPath | None],
) -> list[str]:
    """Format problems, saying which `--set` a problem comes from.

    A problem located at (0, N) is at a path only the Nth override has (an
    unknown key it created): it has no line in the file, so none is shown.
    """
    out = []
    for problem in problems:
        if problem.line == 0 and 0 < problem.col <= len(overrides):
            where = format_path(problem.path) if problem.path is not None else "(top level)"
            override = overrides[problem.col - 1]
            out.append(f"{file}: {where}: {problem.message} (from --set {override})")
            continue
        for override, target in reversed(list(zip(overrides, targets, strict=True))):
            if target and problem.path is not None and problem.path[: len(target)] == target:
                problem = Problem(
                    problem.line,
                    problem.col,
                    problem.path,
                    f"{problem.message} (from --set {override})",
                )
                break
        out.append(problem.format(file))
    return out


# ---------------------------------------------------------------- checks


def check(
    data: Any,
    locations: Mapping[JsonPath, Location],
    key_locations: Mapping[JsonPath, Location],
    *,
    base_dir: Path | None = None,
) -> list[Problem]:
    """Every schema and semantic problem of a document, sorted by position.

    `base_dir` is the folder relative paths resolve against (None: unknown, not checked).
    """
    if not isinstance(data, dict):
        line, col = locate(locations, ())
        what = "empty" if data is None else f"a {type(data).__name__}"
        return [Problem(line, col, (), f"expected a mapping of spec keys, the file is {what}")]
    problems = schema.validate(data, locations, key_locations)
    semantics = _Semantics(data, locations, key_locations, base_dir)
    problems.extend(semantics.problems())
    problems.extend(cellcheck.run_value_problems(data, locations))
    if not problems:
        # Only a well-formed matrix can be expanded; its errors (no cells, ids that collide,
        # too many cells: counted, never expanded) belong in `validate` too, not just in `run`.
        problems.extend(semantics.matrix_problems())
    if not problems and semantics.cells is not None:
        problems.extend(cellcheck.run_size_problems(data, locations, len(semantics.cells)))
    if not problems and semantics.cells is not None:
        # Every `${{ }}` of every cell, evaluated as plan will: bad values name their cells.
        problems.extend(cellcheck.cell_problems(data, locations, semantics.cells))
    return schema.sort_problems(problems)


class _Semantics:
    """What the schema cannot say: names in expressions, axes, ranges, regexes."""

    def __init__(
        self,
        data: dict[str, Any],
        locations: Mapping[JsonPath, Location],
        key_locations: Mapping[JsonPath, Location],
        base_dir: Path | None = None,
    ) -> None:
        self.data = data
        self.base_dir = base_dir
        self.locations = locations
        self.key_locations = key_locations
        matrix = data.get("matrix")
        self.matrix = matrix if isinstance(matrix, dict) else None
        include = self.matrix.get("include") if self.matrix else None
        sane = not isinstance(include, list) or all(isinstance(e, dict) for e in include)
        self.axes = axes(self.matrix)
        self.all_axes = all_axes(self.matrix) if sane else self.axes
        self.found: list[Problem] = []
        self.cells: list[Cell] | None = None

    def add(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        where = self.key_locations.get(path) if key else None
        line, col = where or locate(self.locations, path)
        self.found.append(Problem(line, col, path[:-1] if key else path, message))

    def problems(self) -> list[Problem]:
        for key, value in self.data.items():
            if key not in _NOT_INTERPOLATED:
                self.expressions((key,), value)
        self.exclude_keys()
        self.expect()
        self.run()
        self.markers()
        self.messages()
        self.faults()
        self.workdir()
        self.nul_characters()
        return self.found

    def matrix_problems(self) -> list[Problem]:
        """Problems of the matrix as a whole; without any, `self.cells` holds its cells."""
        try:
            self.cells = expand_matrix(self.matrix)
        except MatrixError as exc:
            line, col = locate(self.locations, exc.path)
            return [Problem(line, col, exc.path, exc.message)]
        return []

    def unknown_axis(self, name: str, choices: list[str]) -> str:
        if not choices:
            return f"unknown matrix axis '{shorten(name)}' (the spec has no matrix)"
        hint = schema.suggest(name, choices) or f" (axes: {', '.join(choices)})"
        return f"unknown matrix axis '{shorten(name)}'{hint}"

    def expressions(self, path: JsonPath, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if not (key == "when" and path[:2] == ("expect", "cases")):
                    self.expressions((*path, key), item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.expressions((*path, index), item)
        elif isinstance(value, str) and expr.OPEN in value:
            self.expression_string(path, value)

    def expression_string(self, path: JsonPath, value: str) -> None:
        try:
            found = expr.find_expressions(value)
            nodes = [(e.text, expr.parse(e.text)) for e in found]
        except expr.ExprError as exc:
            self.add(path, f"bad expression {exc}")
            return
        for text, node in nodes:
            for name in expr.iter_names(node):
                if name.parts[0] == "matrix" and len(name.parts) > 1:
                    if name.parts[1] not in self.all_axes:
                        message = self.unknown_axis(name.parts[1], self.all_axes)
                        self.add(path, f"{message} in '${{{{ {text} }}}}'")
                elif name.parts[0] == "attempt" and path[0] == "expect":
                    self.add(
                        path, "'attempt' cannot be used in expect (an expectation is per cell)"
                    )

    def exclude_keys(self) -> None:
        exclude = self.matrix.get("exclude") if self.matrix else None
        if not isinstance(exclude, list):
            return
        for index, entry in enumerate(exclude):
            for key in entry if isinstance(entry, dict) else ():
                if key in self.axes:
                    continue
                path = ("matrix", "exclude", index, key)
                if key in self.all_axes:
                    self.add(
                        path, f"exclude can only name axes; '{key}' comes from include", key=True
                    )
                else:
                    self.add(path, self.unknown_axis(key, self.axes), key=True)

    def expect(self) -> None:
        expect = self.data.get("expect")
        if not isinstance(expect, dict):
            return
        self.step(("expect", "step"), expect.get("step"))
        outcome = expect.get("outcome")
        self.contradictions(("expect",), expect, outcome)
        self.expected_phase(("expect", "phase"), expect.get("phase"))
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if not isinstance(case, dict):
                continue
            path = ("expect", "cases", index)
            self.step((*path, "step"), case.get("step"))
            # Merged as plan.expectation_for does: a case with its own outcome drops the
            # base's details, one without keeps them (those are checked with the base).
            if "outcome" in case:
                self.contradictions(path, case, case["outcome"])
            else:
                self.contradictions(path, case, outcome, inherited=True)
            self.expected_phase((*path, "phase"), case.get("phase"))
            when = case.get("when")
            for key, value in when.items() if isinstance(when, dict) else ():
                if key not in self.all_axes:
                    self.add((*path, "when", key), self.unknown_axis(key, self.all_axes), key=True)
                else:
                    self.when_value((*path, "when", key), key, value)

    def axis_values(self, axis: str) -> list[Any] | None:
        """Every value `axis` can take: its list, then what include entries give it."""
        if self.matrix is None:
            return None
        values: list[Any] = []
        if axis in self.axes:
            listed = self.matrix.get(axis)
            if not isinstance(listed, list):
                return None
            values.extend(listed)
        include = self.matrix.get("include")
        for entry in include if isinstance(include, list) else ():
            if isinstance(entry, dict) and axis in entry:
                values.append(entry[axis])
        unique: list[Any] = []
        for value in values:
            if not any(same(value, seen) for seen in unique):
                unique.append(value)
        return unique

    def when_value(self, path: JsonPath, axis: str, value: Any) -> None:
        """A `when` value no cell can have makes its case dead: compared as the matrix does."""
        values = self.axis_values(axis)
        if not values or any(same(value, v) for v in values):
            return
        # Strings bare ("values: ok, crash") unless a number or boolean could be mistaken for one.
        bare = isinstance(value, (str, list, dict)) and all(isinstance(v, str) for v in values)
        shown = ", ".join(v if bare else _show(v) for v in values)
        if isinstance(value, (list, dict)) and not any(isinstance(v, (list, dict)) for v in values):
            got = schema.render_instance(value)
            self.add(path, f"expected one value of axis '{axis}' ({shown}), got {got}")
            return
        alike = [v for v in values if render_value(v) == render_value(value)]
        if alike:
            fix = (
                f"write {render_value(alike[0])} without quotes"
                if isinstance(value, str)
                else f"quote it: {_show(alike[0])}"
            )
            self.add(
                path, f"{_show(value)} is {_kind(value)}, but axis '{axis}' holds {shown} ({fix})"
            )
            return
        close = isinstance(value, str) and difflib.get_close_matches(
            value, [v for v in values if isinstance(v, str)], n=1, cutoff=0.6
        )
        hint = f"; did you mean '{close[0]}'?" if close else ""
        self.add(path, f"{_show(value)} is not a value of axis '{axis}' (values: {shown}{hint})")

    def contradictions(
        self, path: JsonPath, fields: Mapping[str, Any], outcome: Any, *, inherited: bool = False
    ) -> None:
        """Details that can never come with the outcome they are merged with."""
        if outcome not in _OUTCOMES:
            return  # the schema reported it (or a case inherits an invalid one)
        source = " (the outcome of expect)" if inherited else ""
        for key, (allowed, what) in _DETAIL_OUTCOMES.items():
            if key in fields and outcome not in allowed:
                self.add((*path, key), f"{what}, not '{outcome}'{source}")

    def workload_phases(self) -> list[tuple[str, Any]] | None:
        """(name, steps) of the workload's phases; None when not a workload or not known."""
        workload = self.data.get("workload")
        if not isinstance(workload, dict):
            return None
        phases = workload.get("phases", list(DEFAULT_PHASES))
        if not isinstance(phases, list):
            return None
        return [
            (p["name"], p.get("steps"))
            for p in phases
            if isinstance(p, dict) and isinstance(p.get("name"), str)
        ]

    def expected_phase(self, path: JsonPath, phase: Any) -> None:
        """`expect.phase` of a workload: one of its phases, the harness's own, or a marker's."""
        phases = self.workload_phases()
        if phases is None or not isinstance(phase, str) or expr.OPEN in phase:
            return
        names = list(dict.fromkeys([name for name, _ in phases] + list(_HARNESS_PHASES)))
        markers = self.data.get("markers")
        for marker in markers if isinstance(markers, list) else ():
            if not isinstance(marker, dict):
                continue
            pattern, fixed = marker.get("pattern"), marker.get("phase")
            if not isinstance(pattern, str) or expr.OPEN in pattern or "phase" in _groups(pattern):
                return  # a marker can report any phase
            if isinstance(fixed, str):
                if expr.OPEN in fixed:
                    return
                names.append(fixed)
        if phase not in names:
            hint = schema.suggest(phase, names) or f" (phases: {', '.join(names)})"
            self.add(path, f"unknown phase '{phase}'{hint}")

    def step(self, path: JsonPath, value: Any) -> None:
        if isinstance(value, str) and ".." in value:
            try:
                parse_step(value)
            except ValueError as exc:
                if "reversed" in str(exc):
                    self.add(path, str(exc))

    def run(self) -> None:
        run = self.data.get("run")
        timeout = run.get("timeout") if isinstance(run, dict) else None
        if isinstance(timeout, float) and not math.isfinite(timeout):
            # .nan and .inf pass the schema's `> 0` and would disable the timeout.
            shown = schema.render_instance(timeout)
            self.add(("run", "timeout"), f"expected a finite duration > 0, got {shown}")
            return
        if isinstance(timeout, (str, int, float)) and not isinstance(timeout, bool):
            try:
                seconds = parse_duration(timeout)
            except ValueError:
                return  # the schema reported it
            if seconds <= 0:
                self.add(("run", "timeout"), f"expected a duration > 0, got {timeout!r}")
            elif not math.isfinite(seconds):
                # .nan and .inf pass the schema's `> 0` and would disable the timeout.
                shown = schema.render_instance(timeout)
                self.add(("run", "timeout"), f"expected a finite duration > 0, got {shown}")

    def markers(self) -> None:
        markers = self.data.get("markers")
        for index, marker in enumerate(markers if isinstance(markers, list) else ()):
            pattern = marker.get("pattern") if isinstance(marker, dict) else None
            if not isinstance(pattern, str) or expr.OPEN in pattern:
                continue
            bad = patterns.problem(pattern)
            if bad is not None:
                self.add(("markers", index, "pattern"), bad)
                continue
            groups = _groups(pattern)
            for group in groups:
                if group not in _MARKER_GROUPS:
                    hint = schema.suggest(group, _MARKER_GROUPS)
                    self.add(
                        ("markers", index, "pattern"),
                        f"unknown group '{group}'{hint}; markers understand (?P<phase>...)"
                        " and (?P<step>...)",
                    )
            if not groups and marker.get("phase") is None and marker.get("step") is None:
                self.add(
                    ("markers", index),
                    "this marker does nothing: give its pattern a (?P<phase>...) or"
                    " (?P<step>...) group, or the marker a fixed phase or step",
                )

    def messages(self) -> None:
        """`expect.message` (and each case's) is a regex: one that cannot compile never matches."""
        expect = self.data.get("expect")
        if not isinstance(expect, dict):
            return
        paths: list[tuple[JsonPath, Any]] = [(("expect", "message"), expect.get("message"))]
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if isinstance(case, dict):
                paths.append((("expect", "cases", index, "message"), case.get("message")))
        for path, message in paths:
            if isinstance(message, str) and expr.OPEN not in message:
                bad = patterns.problem(message)
                if bad is not None:
                    self.add(path, bad)

    def nul_characters(self) -> None:
        """A NUL (a `\\0` escape) cannot be in an argv, an environment variable or a path."""
        environment = self.data.get("environment")
        environment = environment if isinstance(environment, dict) else {}
        env = environment.get("env")
        command = self.data.get("command")
        places: list[tuple[JsonPath, Any]] = [
            (("environment", "workdir"), environment.get("workdir"))
        ]
        if isinstance(command, list):
            places += [(("command", i), part) for i, part in enumerate(command)]
        else:
            places.append((("command",), command))
        if isinstance(env, dict):
            places += [(("environment", "env", key), value) for key, value in env.items()]
        for path, value in places:
            if isinstance(value, str) and "\0" in value:
                self.add(path, "contains a NUL character, which no argv, variable or path can hold")

    def faults(self) -> None:
        workload = self.data.get("workload")
        phases = self.workload_phases()
        if not isinstance(workload, dict) or phases is None:
            return
        names = [name for name, _ in phases]
        faults = workload.get("faults")
        for index, fault in enumerate(faults if isinstance(faults, list) else ()):
            at = fault.get("at") if isinstance(fault, dict) else None
            if not isinstance(at, dict):
                continue
            path = ("workload", "faults", index, "at")
            phase = at.get("phase")
            if isinstance(phase, str) and expr.OPEN in phase:
                continue
            if names and isinstance(phase, str) and phase not in names:
                hint = schema.suggest(phase, names) or f" (phases: {', '.join(names)})"
                self.add((*path, "phase"), f"unknown phase '{phase}'{hint}")
                continue
            step = at.get("step")
            if not _is_int(step):
                continue
            # Steps count from 1 to `steps`; a phase without `steps` runs one pass of the data.
            counts = [steps for name, steps in phases if phase is None or name == phase]
            if not counts or not all(_is_int(n) for n in counts):
                continue
            most = max(counts)
            if step > most:
                where = f"phase '{phase}' has" if phase is not None else "no phase has more than"
                self.add((*path, "step"), f"step {step} never comes: {where} {most} steps")

    def workdir(self) -> None:
        environment = self.data.get("environment")
        workdir = environment.get("workdir") if isinstance(environment, dict) else None
        if self.base_dir is None or not isinstance(workdir, str) or not workdir:
            return
        if expr.OPEN in workdir:
            return
        folder = os.path.abspath(self.base_dir / workdir)
        if not os.path.isdir(folder):
            what = "not a folder" if os.path.exists(folder) else "folder not found"
            self.add(("environment", "workdir"), f"{what}: {folder}")


_OUTCOMES = ("pass", "error", "crash", "hang", "fail")
# expect keys that only some outcomes can have, and what to say otherwise.
_DETAIL_OUTCOMES: Mapping[str, tuple[tuple[str, ...], str]] = {
    "signal": (("crash", "fail"), "a signal only happens with outcome crash (or fail)"),
    "exit_code": (("error", "fail"), "an exit code only happens with outcome error (or fail)"),
    "exception": (
        ("error", "crash", "fail"),
        "an exception only happens with outcome error or crash (or fail)",
    ),
    "message": (
        ("error", "crash", "hang", "fail"),
        "a message is only looked for with outcome error, crash or hang (or fail)",
    ),
    # A pass ran to its end: it stopped in no import and no step's stage.
    "module": (
        ("error", "crash", "hang", "fail"),
        "a module is only recorded with outcome error, crash or hang (or fail)",
    ),
    "stage": (
        ("error", "crash", "hang", "fail"),
        "a stage is only recorded with outcome error, crash or hang (or fail)",
    ),
}
# Phases the harness reports before the workload's own (reprospec_harness/run.py).
_HARNESS_PHASES = ("import", "setup")
_MARKER_GROUPS = ("phase", "step")


def _groups(pattern: str) -> list[str]:
    """The named groups of a regex (none when it does not compile: reported elsewhere)."""
    try:
        return list(re.compile(pattern).groupindex)
    except re.error:
        return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else "a collection"


def _show(value: Any) -> str:
    """A matrix value in a message: strings quoted, others as a cell id shows them."""
    return repr(value) if isinstance(value, str) else render_value(value)


def plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (for yaml.safe_dump and JSON)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value
