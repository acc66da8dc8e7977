"""Regular expressions compiled at their first use, not when their module is imported.

A module-level `re.compile` runs at import whether or not anything is ever matched. The
readers of failures (tracebacks, fatal errors, dead workers and children, missing
commands) and the report's sections hold dozens of patterns that a run whose attempts
pass never uses; compiling them at import was part of a short run's fixed cost (issue 30,
item 4). `Lazy` keeps the pattern's text and compiles it once, at the first match; the
methods are `re.Pattern`'s, so a module-level constant changes in one place.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import AnyStr, Generic


class Lazy(Generic[AnyStr]):
    """`re.compile(source, flags)`, done at the first call of a method (then kept).

    Two threads that match at once may both compile it; either result is the same pattern.
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self._source: AnyStr = source
        self._flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    @property
    def compiled(self) -> re.Pattern[AnyStr]:
        """The compiled pattern (compiled now if it was not yet)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    @property
    def pattern(self) -> AnyStr:
        return self._source

    @property
    def flags(self) -> int:
        """As `re.Pattern.flags`: those given, with the ones re adds (UNICODE for text)."""
        return self.compiled.flags

    def search(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled.search(string, pos, endpos)

    def match(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[AnyStr]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(
        self,
        repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr],
        string: AnyStr,
        count: int = 0,
    ) -> AnyStr:
        return self.compiled.sub(repl, string, count)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr | None]:
        return self.compiled.split(string, maxsplit)

    def __repr__(self) -> str:
        return f"Lazy({self._source!r}, {self._flags!r})"


__all__ = ["Lazy"]
