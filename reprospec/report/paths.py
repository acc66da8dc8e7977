"""Paths in a report named the short way: `<venv>/...`, `<python>/...`, `<home>/...`, relative.

A stack or a log excerpt is full of absolute paths (`/home/alice/proj/.venv/lib/...`)
that say who ran it and where, and make two machines' reports differ where the
failure does not. The run records where its paths point (`RunResult.paths`,
absolute path -> label); a report shows each path under the most specific of
them. results.json keeps the text as the child printed it.

A bundle is shared further than a report, and its copies of results.json and of the
attempts' logs name paths by the same labels (`PathNames.for_bundle`): the home folder
`<home>`, the venv `<venv>`, the interpreter `<python>`, the harness `<harness>`, and
the user's name as a path's folder elsewhere (`/work/alice/repo`) `<user>`. The project
keeps its path there (under `<home>` where it is in the home folder): a report made from
that copy names it relative, through the labelled `paths` it carries.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from reprospec.core.lazyre import Lazy
from reprospec.core.results import alike

if TYPE_CHECKING:
    from reprospec.core.results import AttemptResult, Outcome, RunResult

# A path starts where no path character precedes it (so `/a/b` inside `/x/a/b` is not one),
# or after a JSON string's escaped line break or tab: a bundle's results.json holds a log
# excerpt's lines as `...\n../../work/main/.venv/...`, where the `n` read as a word's.
_BEFORE = r"(?:(?<![\w.~/-])|(?<=\\[nrt]))"
# ... and ends at a separator or at a character that cannot continue the name.
_AFTER = r"(?=/|$|[^\w.-])"


# The `..`s a relative spelling of a labelled root begins with (`_relative_spellings`).
_UPS = Lazy(r"^(?:\.\./)+")

# The engine's short scratch folders (process/scratch.py ORPHAN_PREFIX), each attempt's pair.
_SCRATCH = Lazy(
    "(?=/)" + _BEFORE + r"(?:/[\w.~-]+)*/reprospec-tmp-\d+-[\w]+/\d+/(tmp|cache)" + _AFTER
)
_SCRATCH_NAMES = {"tmp": "<TMPDIR>", "cache": "<XDG_CACHE_HOME>"}
# The label of the user's name where it is a folder of a path outside the home folder.
USER = "<user>"
HOME = "<home>"
# Account names no person is told by (`/proc/1/root`, `/var/lib/docker/.../root` are no
# user's folder): never taken for the user's name in a path.
_NOT_PERSONAL = frozenset({"root", "nobody"})


class PathNames:
    """Shortens the paths of one run: `shorten(text)`; no labels, no change."""

    def __init__(
        self,
        labels: Mapping[str, str],
        users: Iterable[str] = (),
        bases: Iterable[str] | None = None,
    ) -> None:
        names = sorted({u for u in users if _personal(u)}, key=len, reverse=True)
        # `/work/alice/repo`: the name as a whole folder of a path, not inside a word.
        self._users = (
            re.compile(r"(?<=/)(?:" + "|".join(map(re.escape, names)) + r")(?=/|$|[^\w.-])")
            if names
            else None
        )
        roots = sorted(
            ((path.rstrip("/"), label) for path, label in labels.items() if path.strip("/")),
            key=lambda item: len(item[0]),
            reverse=True,  # the most specific first: a venv inside the project is `<venv>`
        )
        self._labels = dict(roots)
        if bases is None:  # the project's folder: what a child's own tools print relative to
            bases = [path for path, label in labels.items() if not label]
        self._relative = _relative_spellings(roots, bases)
        spellings = [
            *(re.escape(path) for path, _ in roots),
            *(
                rf"(?:\.\./){{{ups},}}{re.escape(tail)}"
                for tail, (ups, _) in self._relative.items()
            ),
        ]
        # `/`, `.` of `../`, `<` of a copy's labelled root (`<home>/proj`).
        firsts = re.escape(
            "".join({path[0] for path, _ in roots} | ({"."} if self._relative else set()))
        )
        self._pattern = (
            # (its first character looked at first: most of a text's characters start no
            # path, and the two ways `_BEFORE` lets one start cost each of them twice as much)
            re.compile(f"(?=[{firsts}])" + _BEFORE + f"({'|'.join(spellings)}){_AFTER}(/?)")
            if spellings
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
        if self._pattern is not None:
            text = self._pattern.sub(self._name, text)
        if self._users is not None:
            text = self._users.sub(USER, text)
        return text

    def data(self, data: bytes) -> bytes:
        """`data` (a file's bytes) shortened as `shorten` does its text; bytes that are no
        UTF-8 are kept as they are."""
        if not data:
            return data
        text = data.decode("utf-8", "surrogateescape")
        shortened = self.shorten(text)
        return data if shortened == text else shortened.encode("utf-8", "surrogateescape")

    def _name(self, match: re.Match[str]) -> str:
        found = match[1]
        if found.startswith("../"):
            return self._relative[_UPS.sub("", found)][1] + match[2]
        label = self._labels[found]
        if label:
            return label + match[2]
        # The project: relative to it, and the project itself is `.`.
        return "" if match[2] else "."

    @classmethod
    def for_bundle(cls, labels: Mapping[str, str], users: Iterable[str] = ()) -> PathNames:
        """The names a bundle's copies of results.json and of the logs give paths: the
        run's labels (`labels`, its `paths`) but the project's, which keeps its path (a
        copy of results.json named relative to a project it no longer says would not
        read back); and the user's name, `users` and the home folder's own name, as a
        folder of any other path (`<user>`)."""
        home = [path for path, label in labels.items() if label == HOME]
        kept = {path: label for path, label in labels.items() if label}
        bases = [path for path, label in labels.items() if not label]
        users = [*users, *_this_user(), *(PurePosixPath(p).name for p in home)]
        return cls(kept, users, bases)


def _relative_spellings(
    roots: Iterable[tuple[str, str]], bases: Iterable[str]
) -> dict[str, tuple[int, str]]:
    """The relative spellings of the labelled `roots` that name them by their folders' names,
    as a tool prints a path relative to the project (`bases`): pytest's rootdir at
    /tmp/h5/inc_a heads a warning from the venv's file `../../../work/main/.venv/lib/...`,
    which named the venv's place (or, `../../../home/alice/...`, the user) where the line
    below it said `<venv>`. Each is kept as the text after its `..`s -> (the fewest `..`s
    that reach the root's own folders from a base, its label); more `..`s are a base below
    the project (a workdir, an ini file's folder), `..` above `/` stays there.

    Only a spelling that names folders is one: a root above a base is `..`s alone (the
    project's `../data/x.csv` names no one, and which `..` a tool meant is not known), and a
    root inside a base is the project's own relative path. Labelled roots only: a copy's
    (`<home>/proj`) are already named."""
    spellings: dict[str, tuple[int, str]] = {}
    bases = [base.rstrip("/") for base in bases if base.startswith("/") and base.strip("/")]
    for root, label in roots:  # the most specific first: it keeps a tail two roots share
        if not label or not root.startswith("/"):
            continue
        for base in bases:
            common = posixpath.commonpath([root, base])
            if common in (root, base):
                continue
            ups = len(PurePosixPath(base).relative_to(common).parts)
            tail = posixpath.relpath(root, common)
            fewest, named = spellings.get(tail, (ups, label))
            spellings[tail] = (min(ups, fewest), named)
    return dict(sorted(spellings.items(), key=lambda item: len(item[0]), reverse=True))


def shared(labels: Mapping[str, str]) -> bool:
    """Whether `labels` (a run's `paths`) are a bundle's copy's: named by their labels."""
    return any(path.startswith("<") for path in labels)


def _this_user() -> list[str]:
    """This process's user's name (its passwd entry), where it has one."""
    import os
    import pwd

    try:
        return [pwd.getpwuid(os.getuid()).pw_name]
    except (KeyError, OSError):
        return []


def _personal(name: str) -> bool:
    """Whether `name` may be a person's account in a path: not a system's, not a label."""
    return (
        bool(name)
        and name not in _NOT_PERSONAL
        and "/" not in name
        and name not in (".", "..")
        and not name.startswith("<")  # a copy's own labels (`<home>`'s name)
    )


__all__ = ["HOME", "USER", "PathNames", "shared"]


def with_short_commands(run: RunResult) -> RunResult:
    """`run` with the command lines its outcomes name (`crash SIGSEGV (child: CMD)`, a hang
    after a child died) shortened as the report's paths are: every view of the run names
    them alike. report.md's headline said `<venv>/bin/python3` where its standalone line,
    the HTML page, the GitHub summary and the JUnit properties said the absolute path.
    results.json keeps them as they were."""
    # Each distinct result once (`alike`): a large run's cells are made as they are read
    # (outcome/judgedcells.py), and a copy of them all, made to shorten nothing (no outcome
    # of a passing run names a command line), held every one: 12 MiB of the engine's peak
    # at 16,384 cells of `true`, and the report's passes then read every cell again.
    if not run.paths or not any(
        a.ran is not None and _named(a.ran) for cell, _n in alike(run.cells) for a in cell.attempts
    ):
        return run
    names = PathNames(run.paths)

    def shown(outcome: Outcome) -> Outcome:
        child = outcome.crashed_child
        if child is not None and child.cmdline:
            child = replace(child, cmdline=names.shorten(child.cmdline))
        cmdline = names.shorten(outcome.cmdline) if outcome.cmdline else outcome.cmdline
        return replace(outcome, cmdline=cmdline, crashed_child=child)

    def attempts(found: tuple[AttemptResult, ...]) -> tuple[AttemptResult, ...]:
        return tuple(
            replace(a, outcome=shown(a.ran)) if a.ran is not None and _named(a.ran) else a
            for a in found
        )

    cells = tuple(
        replace(c, attempts=attempts(c.attempts))
        if any(a.ran is not None and _named(a.ran) for a in c.attempts)
        else c
        for c in run.cells
    )
    return replace(run, cells=cells)


def _named(outcome: Outcome) -> bool:
    """Whether the outcome names a command line (most name none: nothing to copy)."""
    child = outcome.crashed_child
    return bool(outcome.cmdline or (child is not None and child.cmdline))
