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
_BEFORE_PLAIN = r"(?<![\w.~/-])"
_BEFORE = r"(?:" + _BEFORE_PLAIN + r"|(?<=\\[nrt]))"
# ... and ends at a separator or at a character that cannot continue the name.
_AFTER = r"(?=/|$|[^\w.-])"
# A terminal's colour code right before a path (`\x1b[33m/work/main/.venv/x`, pytest's or a
# logger's coloured line; `\u001b[33m` as JSON escapes it): its `m` read as a word's, and
# the path was left as it was. No lookbehind can be of its varying width, so it is matched,
# kept (`_name` gives it back), in a pattern of its own that starts at the ESC, run only on a
# text that holds one (`_coloured`): as one alternative of the main pattern's start, every
# `/` of a text holding one ESC tried it too, lines of `/` 3x. A run of codes, of any final
# letter: gcc's `\x1b[01m\x1b[K` (bold, then erase to the line's end) before a file's path.
# Each spelling of ESC its own pattern, which starts with it as a literal (the engine then
# skips to each ESC; an alternation of the two tried every character, 15x slower).
_ESCAPES = ("\x1b", "\\u001b")


def _sgr(esc: str) -> str:
    """The pattern of the colour code right before a path, its ESC spelled `esc`
    (`_ESCAPES`). One code, not a run of them: the codes before it are left as they are
    either way, and a run matched whole was tried again from each of its ESCs where no path
    followed it, backing off a code at a time (16,000 codes in a row, 7 s)."""
    code = re.escape(esc) + r"\[[0-9;:]*[A-Za-z]"
    return f"(?P<sgr>{code})"


# The engine's short scratch folders (process/scratch.py ORPHAN_PREFIX), each attempt's pair.
_SCRATCH_PATH = r"(?:/[\w.~-]+)*/reprospec-tmp-\d+-[\w]+/\d+/(?P<kind>tmp|cache)" + _AFTER
_SCRATCH = Lazy("(?=/)" + _BEFORE + _SCRATCH_PATH)
_SCRATCH_COLOURED = {esc: Lazy(_sgr(esc) + "(?=/)" + _SCRATCH_PATH) for esc in _ESCAPES}
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
        self._absolute = [re.escape(path) for path, _ in roots]
        # `/`, `<` of a copy's labelled root (`<home>/proj`); never `.`: a relative spelling
        # is looked for only at `../` (`_compiled`).
        self._firsts = re.escape("".join({path[0] for path, _ in roots}))
        # (relative, escaped, the ESC of a colour code before the path or "")
        self._patterns: dict[tuple[bool, bool, str], re.Pattern[str] | None] = {}

    def _compiled(self, text: str) -> re.Pattern[str] | None:
        """The pattern `text` needs: the relative spellings only where it holds a `../`, and
        a start after a JSON string's escaped line break only where it holds a `\\`.

        Each alternative costs every character a path could start at: with `.` a start and
        both ways of `_BEFORE`, 20 MB of pytest's progress dots took 1.48 s, not 0.53 s,
        lines of `/` 2.08 s, not 0.68 s. A text with neither (most logs) costs what it did
        before relative spellings were named; a text with a `../` pays for them."""
        relative = bool(self._relative) and "../" in text
        escaped = "\\" in text
        return self._pattern((relative, escaped, ""))

    def _coloured(self, text: str) -> list[re.Pattern[str]]:
        """The patterns of a path right after a colour code (`_sgr`), one per spelling of
        ESC `text` holds (one character's test, 0.03 ms of 2 MB: `"\x1b[" in text` took 3
        ms, a tenth of masking a plain log; the escaped one looked for only in an escaped
        text): none in most texts. Each starts at its ESC, so only those places are tried."""
        escaped = "\\" in text
        held = [esc for esc in _ESCAPES if (escaped or esc == "\x1b") and esc in text]
        if not held:
            return []
        relative = bool(self._relative) and "../" in text
        return [p for esc in held if (p := self._pattern((relative, False, esc))) is not None]

    def _pattern(self, key: tuple[bool, bool, str]) -> re.Pattern[str] | None:
        if key not in self._patterns:
            self._patterns[key] = self._pattern_for(*key)
        return self._patterns[key]

    def _pattern_for(self, relative: bool, escaped: bool, esc: str) -> re.Pattern[str] | None:
        firsts = self._firsts + ("." if relative else "")
        spellings = [f"(?P<absolute>{'|'.join(self._absolute)})"] if self._absolute else []
        if relative:
            # Every `..` taken at once and never given back (a lookahead's group, as an
            # atomic group is before Python 3.11): a run of `../` is then read once, not once
            # per tail and per `..` given back; `_name` counts them.
            tails = "|".join(re.escape(tail) for tail in self._relative)
            spellings.append(rf"(?=(?P<ups>(?:\.\./)+))(?P=ups)(?P<tail>{tails})")
        if not spellings:
            return None
        # The character before first (one test, failed by most of a text's characters),
        # then the first character of a path; or the colour code before it, its ESC `esc`.
        before = _sgr(esc) if esc else _BEFORE if escaped else _BEFORE_PLAIN
        return re.compile(before + f"(?=[{firsts}])(?:{'|'.join(spellings)}){_AFTER}(?P<slash>/?)")

    def shorten(self, text: str) -> str:
        """`text` with every path under a known root named by its label.

        An attempt's private TMPDIR and XDG_CACHE_HOME in the engine's own temporary
        folder (process/scratch.py: `/tmp/reprospec-tmp-PID-XXXX/N/tmp`) are named by
        their variable, wherever the machine's temporary directory is.
        """
        if not text:
            return text
        if "/reprospec-tmp-" in text:  # (a pattern's scan costs every `/` of a text)
            text = _SCRATCH.sub(lambda m: _SCRATCH_NAMES[m["kind"]], text)
            for esc in _ESCAPES:
                if esc in text:
                    named = _SCRATCH_COLOURED[esc]
                    text = named.sub(lambda m: m["sgr"] + _SCRATCH_NAMES[m["kind"]], text)
        # (they never meet: a path the main pattern names has no letter before it, and one
        # after a colour code has its code's)
        for pattern in (self._compiled(text), *self._coloured(text)):
            if pattern is not None:
                text = pattern.sub(self._name, text)
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
        slash = match["slash"]
        groups = match.groupdict()
        sgr = groups.get("sgr") or ""  # (a colour code matched before the path, given back)
        found = groups.get("absolute")
        if found is None:  # a relative spelling: its label where its `..`s reach the root
            need, more, label = self._relative[match["tail"]]
            ups = len(match["ups"]) // 3
            return sgr + label + slash if ups == need or (more and ups > need) else match[0]
        label = self._labels[found]
        if label:
            return sgr + label + slash
        # The project: relative to it, and the project itself is `.`.
        return sgr + ("" if slash else ".")

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
) -> dict[str, tuple[int, bool, str]]:
    """The relative spellings of the labelled `roots` that name them by their folders' names,
    as a tool prints a path relative to the project (`bases`): pytest's rootdir at
    /tmp/h5/inc_a heads a warning from the venv's file `../../../work/main/.venv/lib/...`,
    which named the venv's place (or, `../../../home/alice/...`, the user) where the line
    below it said `<venv>`. Each is kept as the text after its `..`s -> (the `..`s that
    reach the root's own folders from a base, whether more may, its label).

    More `..`s name the root only where the base and the root share nothing but `/`: `..`
    above `/` stays there, so a base below the project (a workdir, an ini file's folder)
    still reaches it. Where they share a folder (/tmp/x/proj, /tmp/x/.venv), each more `..`
    leaves it: `../../.venv` is /tmp/.venv, no venv of the run, and only `../.venv` is one.

    Only a spelling that names folders is one: a root above a base is `..`s alone (the
    project's `../data/x.csv` names no one, and which `..` a tool meant is not known), and a
    root inside a base is the project's own relative path. Labelled roots only: a copy's
    (`<home>/proj`) are already named."""
    spellings: dict[str, tuple[int, bool, str]] = {}
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
            spelled = spellings.get(tail)
            if spelled is None:
                spellings[tail] = (ups, common == "/", label)
            elif spelled[0] != ups or spelled[1] != (common == "/"):
                # Two bases reach it by different `..`s (two projects in a bundle's
                # labels): the fewest or more, as it was before a count was exact.
                spellings[tail] = (min(ups, spelled[0]), True, spelled[2])
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
