"""Paths in a report named the short way: `<venv>/...`, `<python>/...`, `<home>/...`, relative.

A stack or a log excerpt is full of absolute paths (`/home/alice/proj/.venv/lib/...`)
that say who ran it and where, and make two machines' reports differ where the
failure does not. The run records where its paths point (`RunResult.paths`,
absolute path -> label); a report shows each path under the most specific of
them. results.json keeps the text as the child printed it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reprospec.core.lazyre import Lazy

# A path starts where no path character precedes it (so `/a/b` inside `/x/a/b` is not one).
_BEFORE = r"(?<![\w.~/-])"
# ... and ends at a separator or at a character that cannot continue the name.
_AFTER = r"(?=/|$|[^\w.-])"


# The engine's short scratch folders (process/scratch.py ORPHAN_PREFIX), each attempt's pair.
_SCRATCH = Lazy(_BEFORE + r"(?:/[\w.~-]+)*/reprospec-tmp-\d+-[\w]+/\d+/(tmp|cache)" + _AFTER)
_SCRATCH_NAMES = {"tmp": "<TMPDIR>", "cache": "<XDG_CACHE_HOME>"}


class PathNames:
    """Shortens the paths of one run: `shorten(text)`; no labels, no change."""

    def __init__(self, labels: Mapping[str, str]) -> None:
        roots = sorted(
            ((path.rstrip("/"), label) for path, label in labels.items() if path.strip("/")),
            key=lambda item: len(item[0]),
            reverse=True,  # the most specific first: a venv inside the project is `<venv>`
        )
        self._labels = dict(roots)
        self._pattern = (
            re.compile(
                _BEFORE
                + "("
                + "|".join(re.escape(path) for path, _ in roots)
                + ")"
                + _AFTER
                + "(/?)"
            )
            if roots
            else None
        )

    def shorten(self, text: str) -> str:
        """`text` with every path under a known root named by its label.

        An attempt's private TMPDIR and XDG_CACHE_HOME in the engine's own temporary
        folder (process/scratch.py: `/tmp/reprospec-tmp-PID-XXXX/N/tmp`) are named by
        their variable, wherever the machine's temporary directory is.
        """
        if not text:
            return text
        text = _SCRATCH.sub(lambda m: _SCRATCH_NAMES[m[1]], text)
        if self._pattern is None:
            return text
        return self._pattern.sub(self._name, text)

    def _name(self, match: re.Match[str]) -> str:
        label = self._labels[match[1]]
        if label:
            return label + match[2]
        # The project: relative to it, and the project itself is `.`.
        return "" if match[2] else "."


__all__ = ["PathNames"]
