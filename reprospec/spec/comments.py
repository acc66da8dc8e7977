"""A spec's comments carried onto the same document written again (`amplified.yaml`).

A spec rewritten from its data (`dump_yaml`) loses every comment: capture's header (the
`--python` note), its `# your shell set it: the failure needs it` beside a variable, the
reasons beside `expect`. `carry_comments` reads where each comment of the source sits (by
pyyaml's scanner: a `#` outside every token, so never one inside a string or a block
scalar) and puts it back at the same key of the new text: the comment lines above a key
above it, a comment after a key's value after it, those before the first key at the top.
A comment whose key the new text lacks is left out. The result is read back and must
hold the same data; where it would not (a value the dump wrapped over lines), the
comments after values go above their keys instead, and failing that only the top ones
are kept. `schema_moved` makes the relative path of an editor's schema line name the same
file from the folder the spec is written into (amplified.yaml, a materialized spec.yaml).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import yaml

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonPath
from reprospec.spec.yamlsource import Document, YamlSourceError, load_yaml

# capture's note, in a captured spec's header, on widening its matrix axes (capture/command.py
# writes it; minimize and amplify, which carry the header onto the spec they write, find it
# by these same lines and keep it true of that spec): one text, so that a rewording of it
# cannot leave the carried note stale with no test failing.
AXES_NOTE = (
    "Each matrix axis is one of the command's own settings, at the value it ran with.",
    "To see which of them matter, widen an axis as its comment says and observe:",
)
_OBSERVE_HEAD = "  reprospec run "
_OBSERVE_TAIL = " --observe --set 'matrix.AXIS=[OLD, NEW]'"


def _wrapped_anywhere(text: str) -> str:
    """A pattern of `text` where each blank may also be where capture wrapped the comment:
    the line's end, then `#` and the four blanks its continuation lines start with."""
    return r"(?: |\n#     )".join(re.escape(word) for word in text.split(" "))


# The note's last line as a header comment, its spec's path (as typed) the group: one line,
# or, as capture wrote it before it kept the command whole, wrapped over several at a
# long path (each still the note of the spec it names), a wrap also inside the path at
# one of its blanks (`'dir with<wrap>space/crash.yaml'`). The line's own indent is no
# wrap. The group is never read: `sub` writes the line again.
_INDENT = _OBSERVE_HEAD[: len(_OBSERVE_HEAD) - len(_OBSERVE_HEAD.lstrip(" "))]
OBSERVE_COMMENT = re.compile(
    rf"^# {_INDENT}{_wrapped_anywhere(_OBSERVE_HEAD.lstrip(' '))}((?:[^\n]|\n#     )+?)"
    rf"{_wrapped_anywhere(_OBSERVE_TAIL)}\n",
    re.MULTILINE,
)


def observe_line(spec: str) -> str:
    """The note's last line: the command that observes `spec` (a path, quoted as typed)
    with an axis widened."""
    return f"{_OBSERVE_HEAD}{spec}{_OBSERVE_TAIL}"


def axes_note_for(commented: str, dumped: str, name: str) -> str:
    """capture's note on widening the axes in `commented` (`carry_comments` of `dumped`),
    true of the spec written: gone with its matrix, else its command naming `name` (a shell
    word), the file written (minimized.yaml, run from its DIR; amplified.yaml's path), as
    the other commands beside it do.
    Carried as it was, a minimized hang whose command lost every axis said "Each matrix
    axis is one of the command's own settings" over a spec with none, and both named the
    original spec's file to observe."""
    if OBSERVE_COMMENT.search(commented) is None:
        return commented
    data = load_yaml(dumped).data
    if not (isinstance(data, dict) and isinstance(data.get("matrix"), dict)):
        for line in AXES_NOTE:
            commented = commented.replace(f"# {line}\n", "", 1)
        return OBSERVE_COMMENT.sub("", commented, count=1)
    # The line built again, not its path replaced: a path that is a part of the head
    # (`run`, `e`) was replaced there ("#   ramplified.yamlprospec run e --observe").
    return OBSERVE_COMMENT.sub(lambda _: f"# {observe_line(name)}\n", commented, count=1)


# An editor's schema line (docs/spec-format.md#editors), as the YAML language server reads
# it: `$schema=` then the path or URL, up to the first space.
_SCHEMA_LINE = re.compile(r"^([ \t]*#[ \t]*yaml-language-server:.*?\$schema=)(\S+)", re.MULTILINE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def schema_moved(text: str, source_dir: Path, target_dir: Path) -> str:
    """`text` (a spec of `source_dir`, written again into `target_dir`: amplified.yaml, a
    materialized bundle's spec.yaml) with the relative path of its editor's schema line
    (`# yaml-language-server: $schema=../schemas/...`) made to name the same file from
    `target_dir`: copied as written, it named nothing there. A URL, an absolute path and a
    path that named no file where the spec was (nothing to point at) are kept as written."""

    def moved(match: re.Match[str]) -> str:
        named = match.group(2)
        if _URL.match(named) or named.startswith("~") or Path(named).is_absolute():
            return match.group(0)
        schema = Path(os.path.normpath(source_dir.absolute() / named))
        if not schema.is_file():
            return match.group(0)
        # normpath, not resolve: a link on the way is kept, as amplify keeps the workdir's.
        relative = os.path.relpath(schema, os.path.normpath(target_dir.absolute()))
        return match.group(1) + Path(relative).as_posix()

    return _SCHEMA_LINE.sub(moved, text)


def carry_comments(
    source: str,
    dumped: str,
    after: Callable[[JsonPath, str | None], str | None] | None = None,
) -> str:
    """`dumped` (the new text of a document) with `source`'s comments at the same keys.
    `after`: given each key's path of the new text and the comment after its value in
    `source` (None: none), the comment to write there instead (None: none); amplify's
    for `expect.rate`, whose `# observed 1/10` was of the spec before its perturbation."""
    try:
        found = _comments(source)
        new = load_yaml(dumped)
    except (YamlSourceError, yaml.YAMLError):
        return dumped
    if after is not None:
        kept = {path: after(path, found.after.get(path)) for path in new.locations}
        found = replace(found, after={path: c for path, c in kept.items() if c})
    lines_of = _line_paths(new)
    for inline in (True, False):
        text = _placed(dumped, lines_of, found, inline=inline)
        if _same(text, new.data):
            return text
    return "".join(f"{c}\n" for c in found.top) + dumped


def comments_after(source: str, doc: Document | None = None) -> Mapping[JsonPath, str]:
    """The comment after each key's value in `source` (`outcome: fail  # TODO: ...`), by the
    key's path; none where `source` does not read. `doc`: `source` already parsed, which is
    not parsed again."""
    try:
        return _comments(source, doc).after
    except (YamlSourceError, yaml.YAMLError):
        return {}


@frozen
class Comments:
    """A source's comments: those before its first key, the lines of their own above each
    key (by its path), the one after each key's value, and those after its last key."""

    top: tuple[str, ...]
    above: Mapping[JsonPath, tuple[str, ...]]
    after: Mapping[JsonPath, str]
    tail: tuple[str, ...]


def _comments(source: str, doc: Document | None = None) -> Comments:
    doc = load_yaml(source) if doc is None else doc
    covered = _token_spans(source)
    path_at = _line_paths(doc)
    top: list[str] = []
    above: dict[JsonPath, list[str]] = defaultdict(list)
    after: dict[JsonPath, str] = {}
    pending: list[str] = []
    seen_key = False
    offset = 0
    for number, line in enumerate(source.split("\n"), start=1):
        start = _comment_start(line, offset, covered)
        offset += len(line) + 1
        if start is not None:
            comment = line[start:].rstrip()
            if not line[:start].strip():
                pending.append(comment)
                continue
            path = path_at.get(number)
            if path is not None:
                after.setdefault(path, comment)
        key = path_at.get(number)
        if key is not None:
            (above[key] if seen_key else top).extend(pending)
            pending = []
            seen_key = True
    return Comments(tuple(top), {k: tuple(v) for k, v in above.items()}, after, tuple(pending))


def _token_spans(text: str) -> list[tuple[int, int]]:
    """Where pyyaml's tokens lie (start and end offsets): a `#` inside one is no comment."""
    spans = []
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        start, end = token.start_mark.index, token.end_mark.index
        if end > start:
            spans.append((start, end))
    return spans


def _comment_start(line: str, offset: int, covered: list[tuple[int, int]]) -> int | None:
    """Where a comment starts on `line` (at `offset` in the text), or None."""
    at = -1
    while (at := line.find("#", at + 1)) >= 0:
        if at and line[at - 1] not in " \t":
            continue
        index = offset + at
        if not any(start <= index < end for start, end in covered):
            return at
    return None


def _line_paths(doc: Document) -> dict[int, JsonPath]:
    """Each line's path: of what starts on it, the first (the smallest column): a key, a
    list's item or a scalar (an item before its own first key: `- name: a`). A collection
    other than an item is no line's: its first key or item stands for it (`labels:` then
    `- {name: a}`: the item's line, not the list's). So `env: {a: 1, b: 2}  # c` is `env`'s
    line, where it was `env.b`'s (the last key on it): the comment went after `b: 2` once
    the dump wrote `env` a key per line."""
    parents = {path[:-1] for path in doc.locations if path}
    first: dict[int, tuple[int, int, JsonPath]] = {}
    starts = [
        *((at, 1, path) for path, at in doc.key_locations.items()),
        *(
            (at, 0, path)
            for path, at in doc.locations.items()
            if path and (isinstance(path[-1], int) or path not in parents)
        ),
    ]
    for (line, column), rank, path in starts:
        if line not in first or (column, rank) < first[line][:2]:
            first[line] = (column, rank, path)
    return {line: path for line, (_, _, path) in first.items()}


def _placed(dumped: str, lines_of: Mapping[int, JsonPath], found: Comments, *, inline: bool) -> str:
    """`dumped` with the comments at their keys; `inline`: a value's after it, else above."""
    out = list(found.top)
    for number, line in enumerate(dumped.rstrip("\n").split("\n"), start=1):
        path = lines_of.get(number)
        if path is None:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" -"))].replace("-", " ")
        out += [indent + c for c in found.above.get(path, ())]
        comment = found.after.get(path)
        if comment and not inline:
            out.append(indent + comment)
        out.append(f"{line}  {comment}" if comment and inline else line)
    return "\n".join([*out, *found.tail]) + "\n"


def _same(text: str, data: object) -> bool:
    try:
        return load_yaml(text).data == data
    except YamlSourceError:
        return False
