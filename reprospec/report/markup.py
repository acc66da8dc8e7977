"""Markdown syntax that survives any text: fences, inline code, table cells, matrix values."""

from __future__ import annotations

import json
import re

from reprospec.core.lazyre import Lazy


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


def html_text(text: str) -> str:
    """`text` inside an HTML element of a report (`<summary>`): `&`, `<` and `>` written as
    entities, as `html.escape(text, quote=False)` writes them. Not that function: its module
    imports `html.entities`, a table of 2,231 names no escape reads, about 2 ms of every
    run, whose report names where its versions were captured (issue 30, item 4)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def show_value(value: object) -> str:
    """A matrix value as the spec would spell it (YAML-ish scalars, compact JSON otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return str(value)


# A line that opens a code fence: up to 3 spaces, then ``` or ~~~ (a backtick fence's
# info string has no backtick).
_FENCE_OPEN = Lazy(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
# HTML that runs until its own end marker, not a blank line (CommonMark HTML blocks
# 1-5): a comment, <script>, <pre>, <style>, <textarea>, <?...?>, <!X...>.
_LONG_HTML = Lazy(r"<(?=!|\?|(?:script|pre|style|textarea)\b)", re.IGNORECASE)


def plain_markdown(text: str) -> str:
    """Markdown from a spec (its description) that cannot reach past its own end.

    It is shown as written (emphasis, lists, links, its own code blocks), but a code
    fence it opens and never closes is closed where it ends, and outside its code
    blocks `<` is written `&lt;` where it would start a comment or another HTML block
    that runs to its own end marker. So nothing in it swallows the rest of the report
    or hides text in a comment; and a spec block of its own is only text, since the
    spec a report runs is found by its marker (reportspec.py), never by position.
    """
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            out.append(line)
            stripped = line.strip()
            if (
                stripped.startswith(fence)
                and not stripped.strip(fence[0])
                and len(line) - len(line.lstrip(" ")) <= 3
            ):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
            out.append(line)
        else:
            out.append(_LONG_HTML.sub("&lt;", line))
    if fence is not None:
        out.append(fence)
    return "\n".join(out)


def printable_report(text: str) -> str:
    """A rendered report with control characters written out, except inside the embedded
    spec, which stays byte for byte what runs (YAML itself admits none of C0 or C1)."""
    from reprospec.core.logtext import printable
    from reprospec.core.reportspec import MarkerError, find_marked_spec

    try:
        marked = find_marked_spec(text)
    except MarkerError:
        marked = None
    if marked is None:
        return printable(text)
    lines = text.split("\n")
    end = marked.line_offset + marked.text.count("\n")
    before = "\n".join(lines[: marked.line_offset])
    after = "\n".join(lines[end:])
    return f"{printable(before)}\n{marked.text}{printable(after)}"
