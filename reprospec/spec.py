"""Load a spec: YAML (or a report.md embedding one) -> `--set` overrides -> schema ->
semantic checks -> defaults -> a frozen `Spec`.

Every problem of a file is collected and raised at once as a SpecError, each
line `FILE:LINE:COL: PATH: MESSAGE` with FILE the path as given.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reprospec import expr, schema
from reprospec.errors import SpecError, UsageError
from reprospec.matrix import MatrixError, all_axes, axes, expand_matrix
from reprospec.models import Spec
from reprospec.plan import parse_duration, parse_step
from reprospec.yamlsource import (
    JsonPath,
    Location,
    Problem,
    YamlSourceError,
    format_path,
    load_value,
    load_yaml,
    locate,
)

SPEC_SUFFIXES = (".yaml", ".yml")

# Applied after validation, so a spec on disk stays as short as its author wrote it.
DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "environment": {"workdir": ".", "env": {}, "gpus": 0},
    "run": {"timeout": "10m", "repeat": 1, "stop_on": "never"},
}

# Sections shown in the report, never evaluated: `${{` there is just text.
_NOT_INTERPOLATED = ("title", "description", "labels", "links", "matrix", "reprospec", "name")


def load_spec(path: str | Path, overrides: Sequence[str] = ()) -> Spec:
    """Read, override, validate and complete one spec; raise SpecError with every problem."""
    file = str(path)
    text, yaml_text, offset = _read(Path(path))
    origin = _report_origin(text) if Path(path).suffix.lower() == ".md" else None
    try:
        source = load_yaml(yaml_text, line_offset=offset)
    except YamlSourceError as exc:
        raise SpecError([p.format(file) for p in exc.problems]) from None
    data = copy.deepcopy(source.data)
    for override in overrides:
        data = apply_override(data, override)
    problems = check(data, source.locations, source.key_locations)
    if problems:
        raise SpecError([p.format(file) for p in _annotate(problems, overrides)])
    return Spec(
        path=Path(path),
        name=data["name"],
        document=apply_defaults(data),
        source_text=yaml_text,
        locations=dict(source.locations),
        origin=origin,
    )


_ORIGIN = re.compile(r"<!-- reprospec:spec path=(.+?) -->")


def _report_origin(text: str) -> Path | None:
    """The spec file a report was rendered from, when it is still there (relative to cwd)."""
    match = _ORIGIN.search(text)
    if match is None:
        return None
    origin = Path(match.group(1).strip())
    return origin if origin.is_file() else None


def spec_files(paths: Iterable[str | Path]) -> list[str]:
    """The files `validate` checks: files as given, folders' *.yaml/*.yml recursively."""
    files: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            found = sorted(p for p in Path(path).rglob("*") if p.suffix in SPEC_SUFFIXES)
            files.extend(str(p) for p in found)
        else:
            files.append(str(path))
    return files


def validate_paths(paths: Iterable[str | Path]) -> list[str]:
    """The problems of every spec in `paths` (files, or folders searched recursively)."""
    problems: list[str] = []
    for path in paths:
        files = spec_files([path])
        if not files:
            problems.append(f"{path}: no *.yaml or *.yml files in this folder")
        for file in files:
            try:
                load_spec(file)
            except SpecError as exc:
                problems.extend(exc.problems)
    return problems


def _read(path: Path) -> tuple[str, str, int]:
    """(whole text, the YAML part, lines before the YAML part)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([f"{path}: no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([f"{path}: cannot read: {exc}"]) from None
    if path.suffix.lower() != ".md":
        return text, text, 0
    block = extract_markdown_spec(text)
    if block is None:
        raise SpecError([f"{path}: no ```yaml block with a top-level 'reprospec:' key"])
    return text, block[0], block[1]


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)")
_SPEC_KEY = re.compile(r"^reprospec\s*:")


def extract_markdown_spec(text: str) -> tuple[str, int] | None:
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


def _annotate(problems: list[Problem], overrides: Sequence[str]) -> list[Problem]:
    """Say which `--set` a problem comes from, since its location is the original file's."""
    out = []
    for problem in problems:
        for override in overrides:
            dotted = override.partition("=")[0].strip()
            if problem.path is not None and format_path(problem.path).replace("[", ".").replace(
                "]", ""
            ).startswith(dotted):
                problem = Problem(
                    problem.line,
                    problem.col,
                    problem.path,
                    f"{problem.message} (from --set {override})",
                )
                break
        out.append(problem)
    return out


def apply_defaults(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a valid document with the defaults of SPEC-FORMAT.md filled in."""
    out = copy.deepcopy(dict(data))
    for section, defaults in DEFAULTS.items():
        merged = dict(defaults)
        merged.update(out.get(section) or {})
        out[section] = merged
    out.setdefault("markers", [])
    return out


# ---------------------------------------------------------------- checks


def check(
    data: Any,
    locations: Mapping[JsonPath, Location],
    key_locations: Mapping[JsonPath, Location],
) -> list[Problem]:
    """Every schema and semantic problem of a document, sorted by position."""
    if not isinstance(data, dict):
        line, col = locate(locations, ())
        what = "empty" if data is None else f"a {type(data).__name__}"
        return [Problem(line, col, (), f"expected a mapping of spec keys, the file is {what}")]
    problems = schema.validate(data, locations, key_locations)
    semantics = _Semantics(data, locations, key_locations)
    problems.extend(semantics.problems())
    if not problems:
        # Only a well-formed matrix can be expanded; its errors (no cells, ids that collide)
        # belong in `validate` too, not just in `run`.
        problems.extend(semantics.matrix_problems())
    return schema.sort_problems(problems)


class _Semantics:
    """What the schema cannot say: names in expressions, axes, ranges, regexes."""

    def __init__(
        self,
        data: dict[str, Any],
        locations: Mapping[JsonPath, Location],
        key_locations: Mapping[JsonPath, Location],
    ) -> None:
        self.data = data
        self.locations = locations
        self.key_locations = key_locations
        matrix = data.get("matrix")
        self.matrix = matrix if isinstance(matrix, dict) else None
        include = self.matrix.get("include") if self.matrix else None
        sane = not isinstance(include, list) or all(isinstance(e, dict) for e in include)
        self.axes = axes(self.matrix)
        self.all_axes = all_axes(self.matrix) if sane else self.axes
        self.found: list[Problem] = []

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
        self.faults()
        return self.found

    def matrix_problems(self) -> list[Problem]:
        try:
            expand_matrix(self.matrix)
        except MatrixError as exc:
            line, col = locate(self.locations, exc.path)
            return [Problem(line, col, exc.path, exc.message)]
        return []

    def unknown_axis(self, name: str, choices: list[str]) -> str:
        if not choices:
            return f"unknown matrix axis '{name}' (the spec has no matrix)"
        hint = schema.suggest(name, choices) or f" (axes: {', '.join(choices)})"
        return f"unknown matrix axis '{name}'{hint}"

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
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if not isinstance(case, dict):
                continue
            self.step(("expect", "cases", index, "step"), case.get("step"))
            when = case.get("when")
            for key in when if isinstance(when, dict) else ():
                if key not in self.all_axes:
                    path = ("expect", "cases", index, "when", key)
                    self.add(path, self.unknown_axis(key, self.all_axes), key=True)

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
        if isinstance(timeout, (str, int, float)) and not isinstance(timeout, bool):
            try:
                seconds = parse_duration(timeout)
            except ValueError:
                return  # the schema reported it
            if seconds <= 0:
                self.add(("run", "timeout"), f"expected a duration > 0, got {timeout!r}")

    def markers(self) -> None:
        markers = self.data.get("markers")
        for index, marker in enumerate(markers if isinstance(markers, list) else ()):
            pattern = marker.get("pattern") if isinstance(marker, dict) else None
            if isinstance(pattern, str) and expr.OPEN not in pattern:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    self.add(("markers", index, "pattern"), f"bad regular expression: {exc}")

    def faults(self) -> None:
        workload = self.data.get("workload")
        if not isinstance(workload, dict):
            return
        phases = workload.get("phases")
        names = (
            [
                str(p["name"])
                for p in phases
                if isinstance(p, dict) and isinstance(p.get("name"), str)
            ]
            if isinstance(phases, list)
            else []
        )
        faults = workload.get("faults")
        for index, fault in enumerate(faults if isinstance(faults, list) else ()):
            at = fault.get("at") if isinstance(fault, dict) else None
            phase = at.get("phase") if isinstance(at, dict) else None
            if names and isinstance(phase, str) and expr.OPEN not in phase and phase not in names:
                hint = schema.suggest(phase, names) or f" (phases: {', '.join(names)})"
                self.add(
                    ("workload", "faults", index, "at", "phase"), f"unknown phase '{phase}'{hint}"
                )
