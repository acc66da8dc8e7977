"""Markdown syntax that survives any text: fences, inline code, table cells, matrix values."""

from __future__ import annotations

import json
import re
from typing import Any


def fence_for(text: str, char: str = "`") -> str:
    """A code fence longer than any run of `char` inside `text`, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(f"{re.escape(char)}+", text)), default=0)
    return char * max(3, longest + 1)


def table_cell(value: object) -> str:
    """Text safe inside a markdown table cell: pipes escaped, newlines made visible breaks."""
    text = str(value).strip().replace("\\|", "|").replace("|", "\\|")
    return re.sub(r"\r?\n", "<br>", text)


def inline_code(value: object) -> str:
    """Inline code that survives backticks in the text."""
    text = str(value)
    ticks = "`" * (max((len(m) for m in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def show_value(value: Any) -> str:
    """A matrix value as the spec would spell it (YAML-ish scalars, compact JSON otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return str(value)
