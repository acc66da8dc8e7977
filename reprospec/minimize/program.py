"""What `minimize` shrinks: a program as plain values, and the key that names it.

A `Program` is everything of a command spec that the minimizer may change: the
command's arguments (the tokens after the script; a word that holds a `${{ }}` expression
is kept as the shell text it was written as, quotes and all, since the expression is
interpolated into that text before the shell splits it: `'${{ matrix.msg }}'` is one
argument whatever the value holds, `${{ matrix.msg }}` as many as its words),
the spec's environment variables, and the Python files it runs (the script and
the local modules it imports from the workdir). Two candidates with the same
content are the same candidate: `key` is a hash of the content, so a candidate
already judged is never run again, and a stored result finds its candidate
after a restart.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import shlex
import warnings
from dataclasses import replace
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.pysource import UNREADABLE
from reprospec.spec.files import STORE_DB
from reprospec.store.runfolder import RunFolder

# A `${{ }}` expression of a spec, kept whole where a command is read as words.
EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)
# What the shell reads as syntax, not as a word's letters: a word whose value holds one is
# kept as written (`split_words`), so a value never holds one and `join_words` tells the
# two apart by it (a plain value is quoted again, shell text left as it was).
_SHELL = frozenset("|&;<>()$`\\\"'*?[#~{}!")
# Folders of a workdir that no candidate needs (caches, version control, the results store).
SKIPPED = frozenset(
    {".git", ".hg", ".reprospec", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
)


def left_out(folder: Path) -> bool:
    """No candidate needs `folder`: a cache or version control by its name, or a results
    store whatever its name (`--out .rs2`, an older one). A store under the workdir grows
    with every probe's run, and each candidate mirrored all of it: thousands of links per
    candidate, more with each (nu62a). Its runs folder beside the database tells it from a
    program's own `results.db`."""
    return folder.name in SKIPPED or (
        (folder / STORE_DB).is_file() and RunFolder.runs_under(folder).is_dir()
    )


def link_inside(link: Path, root: Path, folder: Path) -> tuple[Path, str] | None:
    """Where the symlink `link`, in the workdir's folder `folder` (relative to the
    workdir), points inside the workdir, whose real path is `root`: (its target relative
    to `root`, the link's text that points a copy of the workdir's layout at its own copy
    of that target); None for no link or one out of the workdir. The one rule of a
    candidate's folder (probes._mirrored) and DIR (named._link_inner), which differ only in
    the links they give it: a candidate's folder mirrors the whole workdir, so every target
    it holds; DIR holds the minimized files alone, so only a link to one of them (or to a
    folder above one) is DIR's own, the others the user's as they were."""
    if not link.is_symlink():
        return None
    try:
        inside = link.resolve().relative_to(root)
    except ValueError:
        return None
    return inside, os.path.relpath(inside, folder)


@frozen
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
        """Lines of Python, blank lines and comments excluded, of the files as minimize
        writes them (`as_written`): the original's and a candidate's alike."""
        return sum(source_lines(as_written(text)) for _, text in self.files)

    @property
    def file_lines(self) -> int:
        """Lines of the files as `wc -l` counts them, once written as minimize writes them
        (`as_written`): the original's and a candidate's alike."""
        return sum(len(as_written(text).splitlines()) for _, text in self.files)

    def shown_lines(self, original: Program) -> int:
        """Lines of Python as the result's report counts them (report.sizes, by
        `counted_as`). The progress said `smallest 142 lines` (`lines`: every file as
        minimize writes it, a long call on one line) of a search whose answer read
        `153 -> 143`."""
        before = dict(original.files)
        return sum(source_lines(counted_as(text, before.get(path))) for path, text in self.files)

    @property
    def given_lines(self) -> tuple[int, int]:
        """(`lines`, `file_lines`) of the files as they are, in their own layout."""
        texts = [text for _, text in self.files]
        return sum(map(source_lines, texts)), sum(len(t.splitlines()) for t in texts)

    @property
    def nodes(self) -> int:
        """AST nodes of every file (0 for one that does not parse)."""
        return sum(ast_nodes(text) for _, text in self.files)


def counted_as(text: str, other: str | None) -> str:
    """`text` in the layout a result's sizes count it in, beside `other`, the same file on
    the other side (the original's, or the result's): as it is where the two are the same
    (a file minimize left alone, as DIR holds it), else as minimize writes it
    (`as_written`), so that a changed file and its original compare in one layout. The
    one rule of the answer's `153 -> 143` (report.sizes) and the progress's `smallest`."""
    return text if text == other else as_written(text)


@functools.lru_cache(maxsize=64)
def as_written(text: str) -> str:
    """`text` in the layout minimize writes a file it changed in (`ast.unparse`: comments
    gone, one statement a line, a blank line before a nested def, a long call on one line),
    or as it is when it does not parse. The search compares candidates' sizes on this, the
    original's too, and the report a changed file's original (report.sizes): counted in
    the original's own layout, a 28-line file cut by one statement counted 29 lines after
    (unparse's blank lines), and a five-line dict literal read as four lines cut."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape's SyntaxWarning, once more
            return ast.unparse(ast.parse(text)) + "\n"
    except (SyntaxError, ValueError, TypeError, AttributeError, RecursionError):
        return text


def source_lines(text: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def ast_nodes(text: str) -> int:
    try:
        tree = ast.parse(text)
    except UNREADABLE:
        return 0
    return sum(1 for _ in ast.walk(tree)) - 1  # the Module itself is no node of the program


def split_words(command: str) -> tuple[str, ...]:
    """A command line's words as a shell splits them; a word with a `${{ }}` expression as written.

    A plain word is its value (`'a b'` is `a b`), which `join_words` quotes again. A word
    that holds an expression stays the shell text it was (`'${{ matrix.msg }}'`, quotes
    included): the value is interpolated into the command's text and only then split by
    the shell, so the quotes around it decide how many arguments it becomes, and a word
    without them would run a different command once the value holds a space.
    """
    found: list[str] = []

    def hold(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return f"\0{len(found) - 1}\0"

    def restore(text: str) -> str:
        return re.sub(r"\0(\d+)\0", lambda m: found[int(m.group(1))], text)

    words: list[str] = []
    for raw in _shell_words(EXPRESSION.sub(hold, command)):
        values = shlex.split(raw)  # also refuses an unclosed quote, as the shell does
        # A word with shell syntax in its value (`|`, `2>&1`, `$HOME`, `*.csv`, or a quoted
        # `'a|b'`) stays as written too: as a value, `join_words` quoted it, and the
        # original itself ran `python gen.py 8 '|' python consume.py` (it passed 20 of 20
        # where `reprospec run` failed: "refused").
        held = "\0" in raw or any(_SHELL.intersection(value) for value in values)
        words.extend([restore(raw)] if held else values)
    return tuple(words)


def _shell_words(text: str) -> list[str]:
    """`text` cut where the shell cuts words (unquoted, unescaped blanks); each word as written."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\" and i + 1 < len(text):
            current.append(char)
            i += 1
            char = text[i]
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char.isspace():
            if current:
                words.append("".join(current))
                current = []
            i += 1
            continue
        current.append(char)
        i += 1
    if current:
        words.append("".join(current))
    return words


def join_words(words: tuple[str, ...]) -> str:
    """The inverse of `split_words`: plain words quoted for the shell, a word with an
    expression left as written (its quotes are the spec's, and the command's meaning)."""
    return " ".join(
        word if EXPRESSION.search(word) or _SHELL.intersection(word) else shlex.quote(word)
        for word in words
    )
