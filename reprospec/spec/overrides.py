"""`--set PATH=VALUE` and `~PATH` overrides, applied to a loaded document before validation.

VALUE is read as YAML (`--set run.repeat=3` sets a number), list indexes are
dotted numbers (`matrix.include.0.x=1`). A problem an override causes names it:
`annotate` adds `(from --set PATH=VALUE)` to the problems at the path it wrote, and to
those above it that the document without it does not have.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeAlias

from reprospec.core.caller import said
from reprospec.core.jsontypes import JsonPath, JsonValue
from reprospec.errors import UsageError
from reprospec.spec.yamlsource import (
    Location,
    Problem,
    YamlSourceError,
    format_path,
    load_value,
    locate,
)


def _set() -> str:
    """How a problem names the override: `--set`, or `overrides` to the Python API's caller."""
    return said("--set", "overrides")


def apply_override(data: JsonValue, override: str) -> JsonValue:
    """Apply one `--set PATH=VALUE` (VALUE read as YAML, list indexes as numbers) or `~PATH`."""
    if override.startswith("~"):
        return _delete(data, override)
    dotted, sep, raw = override.partition("=")
    _no_brackets(override, dotted)
    parts = [p.strip() for p in dotted.split(".")]
    if not sep or not all(parts):
        raise UsageError(f"{_set()} {override}: expected PATH=VALUE, like run.timeout=5m")
    value = option_value(_set(), override, dotted, raw)
    if not isinstance(data, dict):
        raise UsageError(f"{_set()} {override}: the spec is not a mapping")
    node: JsonValue = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[: depth + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise UsageError(
                    f"{_set()} {override}: '{where}': expected a list index below {len(node)}"
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
            raise UsageError(f"{_set()} {override}: '{parent}' is a value, not a mapping or list")
    return data


# What YAML reads as its own syntax at a value's start: `>=0.3` (a rate) is a folded block
# scalar's indicator, `*x` an alias, `!x` a tag. Quoted, each is the text it looks like.
_YAML_INDICATORS = tuple(">|*&!%@`")


def option_value(option: str, item: str, path: str, raw: str) -> JsonValue:
    """VALUE of `OPTION PATH=VALUE` (`--set`, `--failing-set`, `--try`), read as YAML; a
    value YAML cannot read is a usage error, with the quoting that makes it text where it
    starts with YAML's own syntax (`--set expect.rate=>=0.3`: a rate's `>`)."""
    try:
        return load_value(raw)
    except YamlSourceError as exc:
        hint = ""
        if raw.lstrip().startswith(_YAML_INDICATORS):
            quoted = raw.replace("\\", "\\\\").replace('"', '\\"')
            hint = f"; quote it to mean the text: {option} '{path}=\"{quoted}\"'"
        raise UsageError(f"{option} {item}: the value is not valid YAML: {exc}{hint}") from None


def _delete(data: JsonValue, override: str) -> JsonValue:
    """`~PATH` removes a key or list item (Hydra style), e.g. `~workload` to swap in a command."""
    _no_brackets(override, override[1:])
    parts = [p.strip() for p in override[1:].split(".")]
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, dict) and part in node:
            if last:
                del node[part]
            else:
                node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            if last:
                del node[int(part)]
            else:
                node = node[int(part)]
        else:
            where = ".".join(parts[: depth + 1])
            raise UsageError(f"{_set()} {override}: '{where}' is not in the spec")
    return data


# Compiled on first use (re caches it): only a `--set` needs it.
_BRACKETS = r"\[([^\]]*)\]"


def _no_brackets(override: str, dotted: str) -> None:
    """`matrix.mode[9]=x` is a natural guess; say the dotted spelling instead of 'not found'."""
    if re.search(_BRACKETS, dotted):
        # `mode[0]` and `mode.[0]` both mean `mode.0` (the second read `mode..0`).
        fixed = override.replace(dotted, re.sub(r"\.?" + _BRACKETS, r".\1", dotted), 1)
        raise UsageError(f"{_set()} {override}: use dots for list indexes, like {fixed}")


def override_target(data: JsonValue, override: str) -> JsonPath | None:
    """The JSON path an applied `--set PATH=VALUE` wrote (list indexes as ints); None for `~`."""
    if override.startswith("~"):
        return None
    node = data
    path: list[str | int] = []
    for part in (p.strip() for p in override.partition("=")[0].split(".")):
        if isinstance(node, list) and part.isdigit():
            index = int(part)
            path.append(index)
            node = node[index] if index < len(node) else None
        else:
            path.append(part)
            node = node.get(part) if isinstance(node, dict) else None
    return tuple(path)


# The paths of the problems of the document without one override (by its index), or None
# when that cannot be told (a later override needs what this one wrote).
Without: TypeAlias = "Callable[[int], Collection[JsonPath | None] | None]"


def annotate(
    file: str,
    problems: list[Problem],
    overrides: Sequence[str],
    targets: Sequence[JsonPath | None],
    without: Without | None = None,
    locations: Mapping[JsonPath, Location] | None = None,
) -> list[str]:
    """Format problems, saying which `--set` a problem comes from.

    A problem located at (0, N) is at a path only the Nth override has (an
    unknown key it created): the key has no line in the file, so the problem is
    located at the mapping it landed in, as the file has it (`locations`, the file's
    own: `run:` for `--set run.timout=5s`, the top level's start for a new section),
    where a problem of that mapping is; never at the override's key. A
    problem at or below the path an override wrote is that override's. A problem
    at a path above it (`matrix: cells 1 and 3 have the same id` after `--set
    matrix.a=[1, 1]`), or elsewhere (an `exclude` value `--set matrix.python=["3.11"]`
    took away from its axis), is the override's only when the document without it has no
    problem at that path (`without`): the file may have had it anyway, and then
    "from --set" would send the reader to the wrong place. The path, not the message,
    is compared: a message that quotes values (a cell id) changes with the override
    where the problem does not.
    """
    cache: dict[int, Collection[JsonPath | None] | None] = {}

    def absent_without(index: int, problem: Problem) -> bool:
        if without is None:
            return False
        if index not in cache:
            cache[index] = without(index)
        found = cache[index]
        return found is not None and problem.path not in found

    written = [_written(o, target) for o, target in zip(overrides, targets, strict=True)]
    out = []
    for problem in problems:
        if problem.line == 0 and 0 < problem.col <= len(overrides):
            where = format_path(problem.path) if problem.path is not None else "(top level)"
            override = overrides[problem.col - 1]
            place = f"{file}: "
            if locations is not None:
                line, col = locate(locations, problem.path or ())
                place = f"{file}:{line}:{col}: "
            out.append(f"{place}{where}: {problem.message} (from {_set()} {override})")
            continue
        path = problem.path
        cause = None
        for index in reversed(range(len(overrides))):
            target = targets[index]
            if target and path is not None and path[: len(target)] == target:
                cause = overrides[index]
                break
        else:
            for index in reversed(range(len(overrides))):
                changed = written[index]
                above = path is not None and changed is not None and changed[: len(path)] == path
                if above and absent_without(index, problem):
                    cause = overrides[index]
                    break
            else:
                # Elsewhere in the document: a value checked against what the override
                # changed (an `exclude` entry or a `when` naming a value `--set
                # matrix.python=["3.11"]` took away from its axis) is its problem where the
                # document without it has none there; the file's line alone sent the reader
                # to a spec that validates as written.
                for index in reversed(range(len(overrides))):
                    if written[index] is not None and absent_without(index, problem):
                        cause = overrides[index]
                        break
        if cause is not None:
            problem = Problem(
                problem.line, problem.col, path, f"{problem.message} (from {_set()} {cause})"
            )
        out.append(problem.format(file))
    return out


def _written(override: str, target: JsonPath | None) -> JsonPath | None:
    """The path an override changed: the one it set, or the one `~PATH` removed."""
    if target is not None or not override.startswith("~"):
        return target
    parts = (p.strip() for p in override[1:].split("."))
    return tuple(int(part) if part.isdigit() else part for part in parts)
