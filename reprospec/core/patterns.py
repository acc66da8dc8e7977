"""Regular expressions from a spec (`markers[].pattern`, `expect.message`), checked and run bounded.

A spec from a ticket can hold a pattern that backtracks for hours on one line
(`(a|aa)+b` against forty `a`s). Patterns are written in Python's `re` syntax
(docs/spec-format.md) and run with the `regex` package, which takes a timeout and
releases the GIL while it matches: a slow pattern costs at most its timeout and
never stalls another thread. `problem` accepts only what both engines compile.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

# `regex` is imported when a pattern is first checked or run: a spec without one never
# pays for it (validate's start-up).
PatternTimeout = TimeoutError


def problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used (as `bad regular expression: ...`), or None."""
    import regex

    for engine in (re, regex):
        try:
            engine.compile(pattern)
        except (re.error, regex.error, ValueError, OverflowError, RecursionError) as exc:
            return f"bad regular expression: {exc}"
    return None


@functools.lru_cache(maxsize=256)
def compile_bounded(pattern: str) -> regex.Pattern[str]:
    """The `regex` Pattern for `pattern` (V0, the `re`-compatible flavour); raise regex.error."""
    import regex

    return regex.compile(pattern)


def search(
    pattern: str | regex.Pattern[str], text: str, timeout_s: float
) -> regex.Match[str] | None:
    """`pattern.search(text)` within `timeout_s` seconds, GIL released; PatternTimeout past it."""
    compiled = compile_bounded(pattern) if isinstance(pattern, str) else pattern
    return compiled.search(text, timeout=timeout_s, concurrent=True)
