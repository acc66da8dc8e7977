"""The TODO block `reprospec capture --from-log` writes above a skeleton spec: what the ticket
did not say, each item a spec key and what to put there.

The block stayed once its keys were filled: in the user's spec, and from it in every
amplified.yaml and minimized.yaml, where it told a maintainer that keys the file sets were
still to fill in. `validate` now names the block and the items whose keys are still not
set, and a spec written again drops a block whose every key is set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import yaml

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.comments import comments_after
from reprospec.spec.yamlsource import YamlSourceError, load_yaml

# capture/writer.py writes this heading, then `#   - KEY: what to put there`, wrapped under
# a deeper indent.
HEADING = "# TODO (left to fill in):"
_ITEM = re.compile(r"^#   - ([A-Za-z_][\w.]*):")
_CONTINUED = re.compile(r"^#     \S")
# The item of a command that names the sender's paths (capture --from-log's reading of a
# core's command line, `/home/alice/proj/train.py`), each in backquotes: the command is not
# filled while it names one. Its key is set all along, and no `# TODO` comment is beside it.
_SENDERS_PATHS = "it names the sender's"
_PATHS_END = ", on no other machine"


def senders_paths_item(paths: Sequence[str]) -> str:
    """The TODO item of a command that names `paths`, the sender's, found nowhere here."""
    listed = ", ".join(f"`{path}`" for path in paths)
    noun, them = ("path", "it") if len(paths) == 1 else ("paths", "them")
    return (
        f"command: {_SENDERS_PATHS} {noun} {listed}{_PATHS_END}: name {them} by a path the"
        " reader has (relative to the workdir)"
    )


@frozen
class TodoBlock:
    """Where the block is in a spec's text (1-based lines, both included) and its keys, in
    its order (`environment.workdir`, `files`); `items`, each key's item whole, its wrapped
    lines joined (`command: it names ...`)."""

    first: int
    last: int
    keys: tuple[str, ...]
    items: tuple[str, ...] = ()


def todo_block(text: str) -> TodoBlock | None:
    """The TODO block of `text`, or None."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.rstrip() != HEADING:
            continue
        keys: list[str] = []
        items: list[str] = []
        last = index
        for after in range(index + 1, len(lines)):
            item = _ITEM.match(lines[after])
            if item:
                keys.append(item.group(1))
                items.append(lines[after][len("#   - ") :].rstrip())
            elif _CONTINUED.match(lines[after]):
                if items:  # a hand-edited block may continue no item
                    items[-1] += " " + lines[after][len("#     ") :].rstrip()
            else:
                break
            last = after
        return TodoBlock(first=index + 1, last=last + 1, keys=tuple(keys), items=tuple(items))
    return None


def unfilled(block: TodoBlock, source: str) -> tuple[str, ...]:
    """The block's keys `source` (the spec's text) does not fill: not set (a default is no
    answer), set to capture's stand-in (`TODO-...`), or still beside capture's `# TODO`
    comment (`outcome: fail  # TODO: what the failure is`), or a command that still names a
    sender's path its item lists. `source` is parsed once, for its values and its comments
    both."""
    try:
        doc = load_yaml(source)
    except (YamlSourceError, yaml.YAMLError):
        return block.keys  # a text that does not read sets no key
    # What the text itself sets, before defaults: a default `workdir` is no answer.
    data = doc.data if isinstance(doc.data, dict) else {}
    marked = {path for path, comment in comments_after(source, doc).items() if _marked(comment)}
    items = block.items or ("",) * len(block.keys)
    return tuple(
        key
        for key, item in zip(block.keys, items, strict=True)
        if not _is_set(data, key)
        or tuple(key.split(".")) in marked
        or _names_senders_paths(data, key, item)
    )


def _names_senders_paths(data: Mapping[str, JsonValue], key: str, item: str) -> bool:
    """Whether `data`'s command still names a path of the sender's that `item` lists."""
    said = item.partition(f"command: {_SENDERS_PATHS} ")[2].partition(_PATHS_END)[0]
    command = data.get("command")
    if key != "command" or not said:
        return False
    words = command if isinstance(command, list) else [command]
    text = " ".join(word for word in words if isinstance(word, str))
    return any(
        re.search(rf"(?<![^\s='\"]){re.escape(path)}(?=[\s'\"]|$)", text)
        for path in re.findall(r"`([^`]+)`", said)
    )


def _marked(comment: str) -> bool:
    return comment.lstrip("#").lstrip().startswith("TODO")


def without_filled_todo(text: str, source: str) -> str:
    """`text` (a spec written again from `source`: amplified.yaml, minimized.yaml, their
    comments carried) without the TODO block where `source` sets every key it lists; as it
    is otherwise. The `#` line above the heading, which only set it apart, goes with it."""
    block = todo_block(text)
    if block is None or unfilled(block, source):
        return text
    lines = text.split("\n")
    first = block.first - 1
    if first > 0 and lines[first - 1].rstrip() == "#":
        first -= 1
    return "\n".join(lines[:first] + lines[block.last :])


def _is_set(data: Mapping[str, JsonValue], key: str) -> bool:
    value: JsonValue = dict(data)
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    # capture's stand-in for a command the ticket did not show, alone or as argv's first word
    first = value[0] if isinstance(value, list) and value else value
    if isinstance(first, str) and first.startswith("TODO"):
        return False
    return value is not None
