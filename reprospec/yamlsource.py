"""Safe YAML loading that remembers where every node came from.

Specs are data, never code: only the tags SafeLoader knows are accepted, so
`!!python/object` and friends are refused with a located problem. Duplicate
keys are refused too (pyyaml silently keeps the last one, which hides typos).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

JsonPath = tuple[Any, ...]
Location = tuple[int, int]

# Aliases can make a tiny file expand into a huge tree ("billion laughs"):
# we walk every node to record locations, so cap the walk.
MAX_NODES = 200_000


@dataclass(frozen=True)
class Problem:
    """One located problem in a spec: line and column are 1-based, path None when unknown."""

    line: int
    col: int
    path: JsonPath | None
    message: str

    def format(self, file: str) -> str:
        """Render as `FILE:LINE:COL: PATH: MESSAGE` (no PATH part when the path is unknown)."""
        if self.path is None:
            return f"{file}:{self.line}:{self.col}: {self.message}"
        return f"{file}:{self.line}:{self.col}: {format_path(self.path)}: {self.message}"


class YamlSourceError(Exception):
    """The text is not an acceptable YAML document; every problem found is attached."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))


@dataclass(frozen=True)
class Document:
    """Loaded data plus the 1-based (line, col) of each value and of each mapping key."""

    data: Any
    locations: Mapping[JsonPath, Location] = field(default_factory=dict)
    key_locations: Mapping[JsonPath, Location] = field(default_factory=dict)


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader without any extension: the place to add restrictions, never powers."""


# libyaml's parser with the same safe constructor: about 5x faster on valid files (collecting
# a hundred specs in pytest), but its syntax errors read worse, so those are re-parsed.
_FastLoader: type | None = getattr(yaml, "CSafeLoader", None)


def format_path(path: JsonPath) -> str:
    """`("matrix", "include", 2, "pin_memory")` -> `matrix.include[2].pin_memory`."""
    if not path:
        return "(top level)"
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def locate(locations: Mapping[JsonPath, Location], path: JsonPath) -> Location:
    """The location of `path`, or of its nearest located ancestor, else (1, 1)."""
    path = tuple(path)
    while path:
        if path in locations:
            return locations[path]
        path = path[:-1]
    return locations.get((), (1, 1))


def load_yaml(text: str, *, line_offset: int = 0) -> Document:
    """Parse one YAML document safely; raise YamlSourceError with every located problem."""
    if _FastLoader is not None:
        try:
            return _load(_FastLoader, text, line_offset)
        except YamlSourceError:
            pass  # the pure-Python parser words the problems better: let it report them
    return _load(_SpecLoader, text, line_offset)


def _load(loader_class: Any, text: str, line_offset: int) -> Document:
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise YamlSourceError([_from_marked(exc, line_offset)]) from None
        if node is None:
            return Document(None, {(): (1 + line_offset, 1)}, {})
        walk = _Walk(loader, line_offset)
        walk.visit(node, (), ())
        if walk.problems:
            raise YamlSourceError(walk.problems)
        try:
            data = loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            raise YamlSourceError([_from_marked(exc, line_offset)]) from None
        return Document(data, walk.locations, walk.key_locations)
    finally:
        loader.dispose()


def load_value(text: str) -> Any:
    """Parse a small YAML value (a `--set` or `-m` value) safely; raise YamlSourceError."""
    return load_yaml(text).data


def _from_marked(exc: yaml.MarkedYAMLError, line_offset: int) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    what = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        # pyyaml splits some sentences in two: "expected X" + "but found Y".
        joined = exc.problem.startswith("but ")
        what = f"{exc.context}, {exc.problem}" if joined else f"{exc.problem} ({exc.context})"
    return Problem(line + line_offset, col, None, f"invalid YAML: {what}")


class _Walk:
    """Walk the composed node graph: record locations, find duplicates and foreign tags."""

    def __init__(self, loader: Any, line_offset: int) -> None:
        self.loader = loader
        self.offset = line_offset
        self.locations: dict[JsonPath, Location] = {}
        self.key_locations: dict[JsonPath, Location] = {}
        self.problems: list[Problem] = []
        self.count = 0

    def _loc(self, node: yaml.Node) -> Location:
        return (node.start_mark.line + 1 + self.offset, node.start_mark.column + 1)

    def _problem(self, node: yaml.Node, path: JsonPath, message: str) -> None:
        line, col = self._loc(node)
        self.problems.append(Problem(line, col, path, message))

    def visit(self, node: yaml.Node, path: JsonPath, stack: tuple[int, ...]) -> None:
        self.count += 1
        if self.count == MAX_NODES:
            self._problem(node, path, f"document too large (more than {MAX_NODES} nodes)")
        if self.count >= MAX_NODES:
            return
        if id(node) in stack:
            self._problem(node, path, "recursive alias (a node that contains itself)")
            return
        self.locations.setdefault(path, self._loc(node))
        if node.tag not in _SpecLoader.yaml_constructors:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            self._problem(node, path, f"tag '{tag}' is not allowed: a spec is plain data")
            return
        stack = (*stack, id(node))
        if isinstance(node, yaml.MappingNode):
            self._visit_mapping(node, path, stack)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.visit(item, (*path, index), stack)

    def _visit_mapping(
        self, node: yaml.MappingNode, path: JsonPath, stack: tuple[int, ...]
    ) -> None:
        seen: dict[Any, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                # `<<: *defaults` legitimately repeats keys; pyyaml resolves it on construction.
                self.visit(value_node, path, stack)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self._problem(
                    key_node, path, "a mapping key must be a plain value, not a collection"
                )
                continue
            try:
                key = self.loader.construct_object(key_node)
            except yaml.MarkedYAMLError as exc:
                self.problems.append(_from_marked(exc, self.offset))
                continue
            if not isinstance(key, str):
                self._problem(key_node, path, _non_string_key(key_node.value, key))
                continue
            child = (*path, key)
            if key in seen:
                first = seen[key].start_mark.line + 1 + self.offset
                self._problem(
                    key_node, path, f"duplicate key '{key}' (first given on line {first})"
                )
                continue
            seen[key] = key_node
            self.key_locations.setdefault(child, self._loc(key_node))
            self.visit(value_node, child, stack)


def _non_string_key(raw: str, key: Any) -> str:
    if isinstance(key, bool):
        # YAML 1.1 reads on/off/yes/no as booleans, a classic surprise in keys.
        return f"key {raw} is read as the boolean {str(key).lower()}; quote it: '{raw}'"
    return f"key {raw} is not a string; quote it: '{raw}'"
