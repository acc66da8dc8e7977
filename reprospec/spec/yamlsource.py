"""Safe YAML loading that remembers where every node came from.

Specs are data, never code: only JSON's tags are accepted (null, bool, int,
float, str, seq, map), so `!!python/object` and friends are refused with a
located problem, and so are SafeLoader's `!!timestamp`, `!!binary`, `!!set`,
`!!omap` and `!!pairs`: what loads is a `JsonValue`, nothing a JSON file (or
results.json, or an expression) could not hold. Duplicate
keys are refused too (pyyaml silently keeps the last one, which hides typos).

Plain scalars are read with the YAML 1.2 core schema, not pyyaml's YAML 1.1:
only `true`/`false` (any case variant of those) are booleans, so `[on, off]`
and `yes`/`no` stay strings; `0755` is the integer 755, `1e3` a float, `1_000`
and `2024-01-01` strings. Nesting, size and node count are bounded
(`reprospec/core/bounds.py`), and a text the YAML reader refuses (control
characters) is a located problem, never an internal error.
"""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Mapping
from typing import NamedTuple

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from reprospec.core.bounds import MAX_YAML_CHARS, MAX_YAML_DEPTH, MAX_YAML_NODES
from reprospec.core.frozenjson import FrozenDict, FrozenList
from reprospec.core.jsontypes import JsonPath, JsonValue

Location = tuple[int, int]

# Aliases can make a tiny file expand into a huge tree ("billion laughs"):
# we walk every node to record locations, so cap the walk.
MAX_NODES = MAX_YAML_NODES
MAX_DEPTH = MAX_YAML_DEPTH


# Problem and Document are NamedTuples, like expr's nodes: records that stay inside the
# loading stage (a SpecError carries formatted lines), whose classes are built at every
# start of `validate` and `plan`, where a frozen dataclass's cost three times as much.
class Problem(NamedTuple):
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
    """The text is not an acceptable YAML document; every problem found is attached.

    `document`: where every problem is a key given twice or a key that is not a string,
    the document as YAML reads it anyway (the last value kept, the other keys left out),
    so a reader can report the rest of its problems at once; `duplicated`, the paths it
    should not judge: the keys given twice, and the mappings that lost their only keys;
    `first`, the same document with each key given twice holding its first value: a problem
    of the rest that depends on which value the user means (`run.stall` against a `timeout`
    given twice) is one only one reading has.
    """

    def __init__(
        self,
        problems: list[Problem],
        document: Document | None = None,
        duplicated: tuple[JsonPath, ...] = (),
        first: Document | None = None,
    ) -> None:
        self.problems = problems
        self.document = document
        self.duplicated = duplicated
        self.first = first
        super().__init__("; ".join(p.message for p in problems))


class Document(NamedTuple):
    """Loaded data plus the 1-based (line, col) of each value and of each mapping key."""

    data: JsonValue
    locations: Mapping[JsonPath, Location]
    key_locations: Mapping[JsonPath, Location]


class _CoreResolver(yaml.resolver.BaseResolver):
    """Implicit tags of the YAML 1.2 core schema (plus `<<` merge keys, which specs use)."""


_CORE_IMPLICIT = (
    ("bool", "^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", "^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
    ("null", "^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("merge", "^(?:<<)$", "<"),
)
for _name, _pattern, _first in _CORE_IMPLICIT:
    _CoreResolver.add_implicit_resolver(
        f"tag:yaml.org,2002:{_name}", re.compile(_pattern), list(_first)
    )


class _SpecLoader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    yaml.constructor.SafeConstructor,
    _CoreResolver,
):
    """SafeLoader with core-schema scalars: the place for restrictions, never powers."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _CoreResolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # pyyaml composes recursively: bound the depth before Python's stack is.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> JsonValue:
        try:
            value: JsonValue = super().construct_object(node, deep)
            return value
        except yaml.MarkedYAMLError:
            raise
        except Exception as exc:  # an explicit tag on a value it cannot read (`!!float x`)
            raise ConstructorError(
                None,
                None,
                f"cannot read this {node.tag.rsplit(':', 1)[-1]}: {exc}",
                node.start_mark,
            ) from None


def _construct_core_int(loader: _SpecLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node)).strip()  # type: ignore[arg-type]
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    base = 10
    if digits[:2] in ("0o", "0x"):
        base, digits = (8 if digits[1] == "o" else 16), digits[2:]
    if len(digits) > 100:
        # Python refuses to convert more than 4300 digits; no spec field wants more than a few.
        raise ConstructorError(
            None, None, f"integer too long ({len(digits)} digits)", node.start_mark
        )
    return sign * int(digits, base)


def _construct_core_float(loader: _SpecLoader, node: yaml.Node) -> float:
    text = str(loader.construct_scalar(node)).strip().lower()  # type: ignore[arg-type]
    if text.lstrip("+-") == ".inf":
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


_SAFE = yaml.constructor.SafeConstructor.yaml_constructors
_SpecLoader.yaml_constructors = {
    **{
        f"tag:yaml.org,2002:{tag}": _SAFE[f"tag:yaml.org,2002:{tag}"]
        for tag in ("null", "bool", "str", "seq", "map")
    },
    "tag:yaml.org,2002:int": _construct_core_int,
    "tag:yaml.org,2002:float": _construct_core_float,
    None: _SAFE[None],  # any other tag: refused (the walk names it first)
}

# What the YAML reader refuses (pyyaml's Reader.NON_PRINTABLE): C0 and C1 controls but
# tab, newlines and NEL, lone surrogates, U+FFFE and U+FFFF.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def format_path(path: JsonPath) -> str:
    """`("matrix", "include", 2, "pin_memory")` -> `matrix.include[2].pin_memory`."""
    if not path:
        return "(top level)"
    if len(path) > 12:
        # A path 100 levels deep says no more than its two ends.
        head, tail = format_path(path[:6]), format_path(path[-4:])
        return f"{head}...{tail if tail.startswith('[') else '.' + tail}"
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += f".{shorten(str(part))}" if out else shorten(str(part))
    return out


def shorten(text: str, limit: int = 60) -> str:
    """`text` cut to `limit` characters with `...`: a key from a stranger's file may be huge."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def locate(locations: Mapping[JsonPath, Location], path: JsonPath) -> Location:
    """The location of `path`, or of its nearest located ancestor, else (1, 1)."""
    path = tuple(path)
    while path:
        if path in locations:
            return locations[path]
        path = path[:-1]
    return locations.get((), (1, 1))


class _SpecDumper(
    yaml.emitter.Emitter,
    yaml.serializer.Serializer,
    yaml.representer.SafeRepresenter,
    _CoreResolver,
):
    """SafeDumper that quotes by the core schema: what it writes, load_yaml reads back the same."""

    def __init__(self, stream: io.StringIO) -> None:
        # Block style, keys in the order given, non-ASCII text as itself.
        yaml.emitter.Emitter.__init__(self, stream, allow_unicode=True)
        yaml.serializer.Serializer.__init__(self)
        yaml.representer.SafeRepresenter.__init__(self, default_flow_style=False, sort_keys=False)
        _CoreResolver.__init__(self)


def _represent_str(dumper: _SpecDumper, data: str) -> yaml.Node:
    # pyyaml writes NEL and the Unicode line separators raw inside quotes, where a reader
    # folds them into spaces; double quotes escape them. A string of several lines is a
    # literal block (`description: |`), as a spec writes it, where pyyaml wrote it one
    # escaped double-quoted line (`"a\nb\n"`); the emitter keeps quotes where a block
    # could not hold it (trailing spaces, a tab before a break).
    if any(c in data for c in "\x85\u2028\u2029"):
        style: str | None = '"'
    else:
        # Not one ending in a blank line: its `|+` would end the document with `...`.
        block = "\n" in data and data.strip("\n") != "" and not data.endswith("\n\n")
        style = "|" if block else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_SpecDumper.add_representer(str, _represent_str)
# A loaded spec's document is read-only (core/frozenjson.py: dict and list subclasses), and
# pyyaml finds representers by exact type: without these a part of it written as it is
# (not thawed first) raised "cannot represent an object".
_SpecDumper.add_representer(FrozenDict, yaml.representer.SafeRepresenter.represent_dict)
_SpecDumper.add_representer(FrozenList, yaml.representer.SafeRepresenter.represent_list)


def dump_yaml(data: JsonValue) -> str:
    """YAML text for plain data that `load_yaml` reads back equal (strings like `1e3` quoted).

    pyyaml's safe_dump quotes by YAML 1.1 rules and leaves `1e3` or `0o17` plain,
    which the core schema reads as numbers: a saved spec would not mean the same.
    """
    stream = io.StringIO()
    dumper = _SpecDumper(stream)
    try:
        dumper.open()
        dumper.represent(data)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


def line_col(text: str, index: int) -> Location:
    """1-based (line, column) of character `index` in `text`, lines split at newlines."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def load_yaml(text: str, *, line_offset: int = 0) -> Document:
    """Parse one YAML document safely; raise YamlSourceError with every located problem."""
    if len(text) > MAX_YAML_CHARS:
        raise YamlSourceError(
            [
                Problem(
                    1 + line_offset,
                    1,
                    None,
                    f"the YAML text is {len(text)} characters long; "
                    f"at most {MAX_YAML_CHARS} are read",
                )
            ]
        )
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        line, col = line_col(text, bad.start())
        char = f"U+{ord(bad.group()):04X}"
        raise YamlSourceError(
            [
                Problem(
                    line + line_offset,
                    col,
                    None,
                    f"control character {char} is not allowed in YAML text "
                    '(write it as an escape in a double-quoted string, like "\\x07")',
                )
            ]
        )
    loader = _SpecLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise YamlSourceError([_from_marked(exc, line_offset)]) from None
        except yaml.YAMLError as exc:  # the reader's own errors carry no mark
            raise YamlSourceError(
                [Problem(1 + line_offset, 1, None, f"invalid YAML: {exc}")]
            ) from None
        if node is None:
            return Document(None, {(): (1 + line_offset, 1)}, {})
        walk = _Walk(loader, line_offset)
        walk.visit(node, (), ())
        if walk.problems and len(walk.problems) > len(walk.duplicated) + walk.not_strings:
            raise YamlSourceError(walk.problems)
        try:
            data = loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            raise YamlSourceError([_from_marked(exc, line_offset)]) from None
        emptied = _drop_keys_not_strings(data) if walk.not_strings else []
        document = Document(data, walk.locations, walk.key_locations)
        if walk.problems:
            first = None
            if walk.firsts:
                first = document._replace(data=_with_firsts(loader, data, walk.firsts))
            raise YamlSourceError(walk.problems, document, (*walk.duplicated, *emptied), first)
        return document
    finally:
        loader.dispose()


def load_value(text: str) -> JsonValue:
    """Parse a small YAML value (a `--set` or `-m` value) safely; raise YamlSourceError."""
    return load_yaml(text).data


def _from_marked(exc: yaml.MarkedYAMLError, line_offset: int) -> Problem:
    opened = exc.context_mark
    if (
        opened is not None
        and "quoted scalar" in (exc.context or "")
        and "end of stream" in (exc.problem or "")
    ):
        # pyyaml points at the end of the file, where the scan gave up: the mistake is
        # the quote that opened the string, maybe many lines above.
        return Problem(
            opened.line + 1 + line_offset,
            opened.column + 1,
            None,
            "invalid YAML: the quoted string that starts here is never closed "
            "(the file ends before its closing quote)",
        )
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    context = exc.context or ""
    if context.startswith("while ") and opened and mark and opened.line < mark.line:
        # "while parsing a flow sequence": the `[` left open is on an earlier line.
        where = f"line {opened.line + 1 + line_offset}, column {opened.column + 1}"
        context += f" that starts at {where}"
    what = exc.problem or context or "invalid YAML"
    if context and exc.problem:
        # pyyaml splits some sentences in two: "expected X" + "but found Y".
        joined = exc.problem.startswith("but ")
        what = f"{context}, {exc.problem}" if joined else f"{exc.problem} ({context})"
    at = line + line_offset
    if "'\\t'" in what:
        what += f"; YAML indents with spaces, never tabs: check the indentation of line {at}"
    elif any(sign in what for sign in _INDENTATION_SIGNS):
        what += f"; check the indentation of line {at} and the lines above it"
    return Problem(line + line_offset, col, None, f"invalid YAML: {what}")


# pyyaml's words for a line indented more or less than its block allows.
_INDENTATION_SIGNS = (
    "mapping values are not allowed here",
    "expected <block end>",
    "did not find expected key",
    "did not find expected '-' indicator",
    "could not find expected ':'",
)


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _joined(pair: re.Match[str]) -> str:
    """The character a high and a low surrogate escape stand for together."""
    return pair.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le")


class _Walk:
    """Walk the composed node graph: record locations, find duplicates and foreign tags."""

    def __init__(self, loader: _SpecLoader, line_offset: int) -> None:
        self.loader = loader
        self.offset = line_offset
        self.locations: dict[JsonPath, Location] = {}
        self.key_locations: dict[JsonPath, Location] = {}
        self.problems: list[Problem] = []
        self.duplicated: list[JsonPath] = []  # keys given twice: problems, yet plain data
        # The first value node of each key given twice (the data holds the last).
        self.firsts: dict[JsonPath, yaml.Node] = {}
        # Keys that are not strings (`1: x`, `true: 1`): problems, left out of the data so
        # that the rest of the document is still judged (every problem at once).
        self.not_strings = 0
        self.count = 0
        self.stopped = False

    def _loc(self, node: yaml.Node) -> Location:
        return (node.start_mark.line + 1 + self.offset, node.start_mark.column + 1)

    def _problem(self, node: yaml.Node, path: JsonPath, message: str) -> None:
        line, col = self._loc(node)
        self.problems.append(Problem(line, col, path, message))

    def visit(self, node: yaml.Node, path: JsonPath, stack: tuple[int, ...]) -> None:
        self.count += 1
        if self.count == MAX_NODES:
            self._problem(node, path, f"document too large (more than {MAX_NODES} nodes)")
        if self.count >= MAX_NODES or self.stopped:
            return
        if id(node) in stack:
            self._problem(node, path, "recursive alias (a node that contains itself)")
            return
        if len(stack) >= MAX_DEPTH:
            # Aliases and merge keys can nest what the composer saw as shallow.
            self._problem(node, path, f"nested deeper than {MAX_DEPTH} levels (through aliases)")
            self.stopped = True  # one such problem is enough
            return
        self.locations.setdefault(path, self._loc(node))
        if node.tag not in _SpecLoader.yaml_constructors:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            self._problem(node, path, f"tag '{tag}' is not allowed: a spec is plain data")
            return
        if isinstance(node, yaml.ScalarNode) and _SURROGATE.search(node.value):
            # A pair of escapes (`"\\ud83d\\ude00"`, as JSON with ensure_ascii writes a
            # character past U+FFFF) is that character: pyyaml leaves the halves apart.
            node.value = _PAIR.sub(_joined, node.value)
        if isinstance(node, yaml.ScalarNode) and (half := _SURROGATE.search(node.value)):
            # `"a\\udc80b"` is a lone surrogate, no character: it validated, then ended a run
            # with an internal UnicodeEncodeError once its attempts had run (nothing UTF-8
            # holds it), and no bytes the program could be given are meant by it.
            self._problem(
                node,
                path,
                f"\\u{ord(half.group()):04x} is half of a UTF-16 surrogate pair, no character: "
                "write the character itself (or its \\U escape)",
            )
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
        seen: dict[str, yaml.Node] = {}
        values: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                # `<<: *defaults` legitimately repeats keys; pyyaml resolves it on construction.
                self.visit(value_node, path, stack)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                # `timeout: {{ matrix.t }}`, the `$` forgotten, is a flow mapping whose key
                # is another: say the expression it was meant to be, not only the YAML.
                forgot = (
                    isinstance(key_node, yaml.MappingNode)
                    and node.flow_style
                    and key_node.flow_style
                    and node.start_mark.index + 1 == key_node.start_mark.index
                )
                hint = (
                    " ('{{ }}' is a mapping to YAML: an expression is '${{ }}')" if forgot else ""
                )
                self._problem(
                    key_node, path, "a mapping key must be a plain value, not a collection" + hint
                )
                continue
            try:
                key = self.loader.construct_object(key_node)
            except yaml.MarkedYAMLError as exc:
                self.problems.append(_from_marked(exc, self.offset))
                continue
            if not isinstance(key, str):
                self._problem(key_node, path, _non_string_key(key_node.value, key))
                self.not_strings += 1
                continue
            child = (*path, key)
            if key in seen:
                first = seen[key].start_mark.line + 1 + self.offset
                self._problem(
                    key_node, path, f"duplicate key '{shorten(key)}' (first given on line {first})"
                )
                self.duplicated.append(child)
                self.firsts.setdefault(child, values[key])
                continue
            seen[key] = key_node
            values[key] = value_node
            self.key_locations.setdefault(child, self._loc(key_node))
            self.visit(value_node, child, stack)


def _with_firsts(
    loader: _SpecLoader, data: JsonValue, firsts: Mapping[JsonPath, yaml.Node]
) -> JsonValue:
    """A copy of `data` whose keys given twice hold their first value. A key given twice
    under another one given twice is in neither reading's data where its mapping is not."""
    copied = copy.deepcopy(data)
    for path, node in sorted(firsts.items(), key=lambda item: len(item[0])):
        holder: object = copied
        for part in path[:-1]:
            if isinstance(holder, dict) and part in holder:  # noqa: SIM114 (two types)
                holder = holder[part]
            elif isinstance(holder, list) and isinstance(part, int) and part < len(holder):
                holder = holder[part]
            else:
                holder = None
                break
        if isinstance(holder, dict):
            try:
                holder[path[-1]] = loader.construct_object(node, deep=True)
            except yaml.YAMLError:
                continue  # (what the data reading constructed too, or it had raised)
    return copied


def _drop_keys_not_strings(data: object) -> list[JsonPath]:
    """Remove, in place, every mapping entry whose key is not a string (each one already a
    problem); return the paths of the mappings that this left empty, whose emptiness is no
    problem of its own (`matrix: {1: [x, y]}` also said "the matrix is empty": review). A
    node an alias shares is done once."""
    seen: set[int] = set()
    emptied: list[JsonPath] = []
    todo: list[tuple[object, JsonPath]] = [(data, ())]
    while todo:
        value, path = todo.pop()
        if id(value) in seen or not isinstance(value, (dict, list)):
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            dropped = [k for k in value if not isinstance(k, str)]
            for key in dropped:
                del value[key]
            if dropped and not value:
                emptied.append(path)
            todo.extend((item, (*path, key)) for key, item in value.items())
        else:
            todo.extend((item, (*path, index)) for index, item in enumerate(value))
    return emptied


def _non_string_key(raw: str, key: JsonValue) -> str:
    if isinstance(key, bool):
        return f"key {raw} is read as the boolean {str(key).lower()}; quote it: '{raw}'"
    return f"key {raw} is not a string; quote it: '{raw}'"
