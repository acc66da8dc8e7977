"""What `minimize` shrinks: a program as plain values, and the key that names it.

A `Program` is everything of a command spec that the minimizer may change: the
command's arguments (the tokens after the script, `${{ }}` expressions kept whole),
the spec's environment variables, and the Python files it runs (the script and
the local modules it imports from the workdir). Two candidates with the same
content are the same candidate: `key` is a hash of the content, so a candidate
already judged is never run again, and a stored result finds its candidate
after a restart.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shlex
from dataclasses import dataclass, replace

_EXPR = re.compile(r"\$\{\{.*?\}\}", re.S)
# Folders of a workdir that no candidate needs (caches, version control, the results store).
SKIPPED = frozenset(
    {".git", ".hg", ".reprospec", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
)


@dataclass(frozen=True)
class Program:
    """One candidate: the command's words, its environment variables, its Python files."""

    head: tuple[str, ...]  # the words kept as they are (`python train_loop.py`)
    args: tuple[str, ...]  # the words after them, each one a unit of the search
    env: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = ()  # (path relative to the workdir, source)
    # A workload spec's numbers (`--set` path, value): what minimize lowers there (workload.py).
    fields: tuple[tuple[str, int], ...] = ()
    # A workload spec's program: its numbers and variables, no command, no files.
    workload: bool = False

    @property
    def key(self) -> str:
        """A hash of the content: equal programs, equal keys (16 hex digits)."""
        content: list[object] = [self.head, self.args, self.env, self.files]
        if self.fields or self.workload:  # absent from a command's key (stored keys stay)
            content.append(self.fields)
        text = json.dumps(content)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def command(self) -> str:
        """The command line again, `${{ }}` expressions as written."""
        return join_words((*self.head, *self.args))

    def source(self, path: str) -> str:
        return dict(self.files)[path]

    def with_source(self, path: str, text: str) -> Program:
        return replace(self, files=tuple((p, text if p == path else s) for p, s in self.files))

    @property
    def lines(self) -> int:
        """Lines of Python, blank lines and comments excluded."""
        return sum(source_lines(text) for _, text in self.files)

    @property
    def file_lines(self) -> int:
        """Lines of the files as `wc -l` counts them."""
        return sum(len(text.splitlines()) for _, text in self.files)

    @property
    def nodes(self) -> int:
        """AST nodes of every file (0 for one that does not parse)."""
        return sum(ast_nodes(text) for _, text in self.files)


def source_lines(text: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def ast_nodes(text: str) -> int:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 0
    return sum(1 for _ in ast.walk(tree)) - 1  # the Module itself is no node of the program


def split_words(command: str) -> tuple[str, ...]:
    """A command line's words as a shell splits them, each `${{ ... }}` expression kept whole."""
    found: list[str] = []

    def hold(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return f"\0{len(found) - 1}\0"

    words = shlex.split(_EXPR.sub(hold, command))
    return tuple(re.sub(r"\0(\d+)\0", lambda m: found[int(m.group(1))], w) for w in words)


def join_words(words: tuple[str, ...]) -> str:
    """The inverse of `split_words`: words quoted for the shell, expressions left as written."""
    out: list[str] = []
    for word in words:
        if _EXPR.search(word):
            outside = _EXPR.sub("", word)
            out.append(
                word if shlex.quote(outside) == outside or not outside else shlex.quote(word)
            )
        else:
            out.append(shlex.quote(word))
    return " ".join(out)
