"""A build context's `.dockerignore`, read as docker reads it: which files a build never sees.

A spec's Dockerfile is built by the docker runner from its folder, and docker leaves out
what the folder's `.dockerignore` excludes (`data/raw/`, `*.ckpt`, `secrets.env`). What
`bundle` and `materialize` carry of that context (carry.py `dockerfile_context`) must
leave out the same files: a folder a COPY names whole carried them all, an excluded
checkpoint or secret included, to whoever the archive was sent to.

The rules are docker's (moby's patternmatcher, as `docker build` and BuildKit apply them):
one pattern a line, `#` starts a comment line, blank lines are skipped; each pattern is
cleaned as a path (`./a//b/` is `a/b`, a leading `/` dropped) and matched against the
file's path in the context with Go's `filepath.Match` syntax (`*` and `?` within one
folder, `[...]` a class, `\\` escapes) plus `**`, any number of folders (none too); a
pattern that matches a folder excludes all under it; `!` makes an exception; the last
pattern that matches a file decides. The Dockerfile itself is always sent, as docker
sends it. BuildKit's `<Dockerfile name>.dockerignore` is not read: the docker runner's
builds (docker-py's, from the context's `.dockerignore` alone) did not read it, so the
image the run ran had those files, and a rerun needs what it had.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path, PurePosixPath

from reprospec.core.frozen import frozen

# A `.dockerignore` larger than this is read no further (a list of patterns, not data).
MAX_IGNORE_BYTES = 1 << 20


@frozen
class _Pattern:
    regex: re.Pattern[str]
    exception: bool


@frozen
class DockerIgnore:
    """The patterns of one build context's ignore file; `excludes(rel)` asks of a file."""

    patterns: tuple[_Pattern, ...] = ()
    source: str = ""  # the ignore file's name, "" where the context has none

    def excludes(self, rel: str | PurePosixPath) -> bool:
        """Whether the file at `rel` (its path in the context) is left out of the build."""
        path = PurePosixPath(rel).as_posix()
        parents = [str(p) for p in reversed(PurePosixPath(path).parents) if str(p) != "."]
        excluded = False
        for pattern in self.patterns:
            if pattern.regex.match(path) or any(pattern.regex.match(p) for p in parents):
                excluded = not pattern.exception
        return excluded


def read_dockerignore(context: Path) -> DockerIgnore:
    """The ignore file of a build from `context`, `context/.dockerignore`; none (nothing
    excluded) where it is not there or cannot be read."""
    candidate = context / ".dockerignore"
    try:
        with candidate.open("rb") as handle:
            data = handle.read(MAX_IGNORE_BYTES)
    except OSError:
        return DockerIgnore()
    text = data.decode("utf-8", errors="replace")
    return DockerIgnore(tuple(_patterns(text)), candidate.name)


def _patterns(text: str) -> list[_Pattern]:
    found: list[_Pattern] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        if exception:
            line = line[1:].strip()
            if not line:
                continue
        line = posixpath.normpath(line)
        if len(line) > 1 and line.startswith("/"):
            line = line.lstrip("/") or "/"
        found.append(_Pattern(re.compile(_regex(line), re.DOTALL), exception))
    return found


def _regex(pattern: str) -> str:
    """A pattern as moby's patternmatcher writes it as a regular expression (anchored)."""
    out = ["^"]
    at = 0
    while at < len(pattern):
        ch = pattern[at]
        at += 1
        if ch == "*":
            if pattern[at : at + 1] == "*":
                at += 1
                if pattern[at : at + 1] == "/":
                    at += 1  # `**/` is `**`: any folders, none too
                out.append(".*" if at >= len(pattern) else "(.*/)?")
            else:
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\":
            out.append(re.escape(pattern[at]) if at < len(pattern) else r"\\")
            at += 1
        elif ch == "[":
            end = pattern.find("]", at + 1)
            if end < 0:
                out.append(r"\[")
                continue
            body = pattern[at:end]
            if body.startswith("^"):
                body = "^" + body[1:].replace("\\", "\\\\")
            else:
                body = body.replace("\\", "\\\\")
            out.append("[" + body + "]")
            at = end + 1
        else:
            out.append(re.escape(ch))
    out.append("$")
    return "".join(out)


__all__ = ["DockerIgnore", "read_dockerignore"]
