"""Whether a shell's 128+N may be its own `exit N`: the command's text, or a script it names.

A shell reports a process it ran that died of signal N as 128 + N, and exits with it
(classify.py rule 4 reads it as that death). But 128 + N is also an ordinary exit status,
which a shell exits with when it is told to: `sh -c 'exit 139'`, a `run.sh` ending
`exit 139`, `bash -c 'set -e; sh -c "exit 139"'` (its set -e passes the inner shell's
status on). Nothing died there. The engine cannot see the statuses a shell reaped (only
its own children's, and the root's), so what tells the two apart is what the shells were
told to do: only a literal `exit N` (or a function's `return N`) makes a shell exit with
128 + N of its own. A status passed on (`exit`, `exit $?`, the end of the script, set -e)
is a death's report where a death made it. So a shell's 128 + N reads as a death unless
the command's own text, or a shell script it names, says `exit N` for that very N, and
then only where nothing else shows the death (classify.py: the shell's report of it, a
core, the program's own record).

Reading the text is not parsing it: `echo exit 139` counts too. The error is toward
`error`, which the detail states with its reason, and only where the output holds no
shell's report of a death by that signal (bash and dash print one for every foreground
death but SIGINT's and SIGPIPE's).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path

# A script read for it is read this far: a shell script is text, and short.
_SCRIPT_BYTES = 256 * 1024
# What marks a file named on the command line as a shell script: its name's suffix, or
# its `#!` line naming a shell (`#!/bin/bash`, `#!/usr/bin/env bash`).
_SCRIPT_SUFFIXES = (".sh", ".bash", ".ksh", ".zsh", ".dash")
_SHEBANG = re.compile(rb"#![ \t]*\S*?(?:/|\s)(?:ba|da|k|mk|z|a|po|ya)?sh(?:\s|$)")
# Where a command word may begin: the start of a line, a blank, an operator, or a quote
# (`sh -c 'exit 139'`, whose inner line is read where it is written, quoted), and where
# it ends: a blank, an operator, a quote, an escaped one (`sh -c \"exit 139\"`).
_BEFORE = r"(?:(?<=[\s;&|(){}'\"`])|^)"
_AFTER = r"(?=[\s;&|)}'\"`\\]|$)"


def own_exit(returncode: int, argv: Sequence[str] | None, workdir: Path | None) -> str | None:
    """Where the command `argv` (run in `workdir`) tells a shell to exit with `returncode`:
    the words that do (`exit 139`, or `exit 139 in run.sh` for a script it names); None
    where neither its words nor a shell script it names say so, or `argv` is not known."""
    if not argv:
        return None
    said = re.compile(rf"{_BEFORE}(?:exit|return)[ \t]+0*{returncode}{_AFTER}", re.MULTILINE)
    for text in argv:
        found = said.search(text)
        if found is not None:
            return found.group(0)
    for script in _scripts(argv, workdir):
        try:
            with script.open("rb") as handle:
                text = handle.read(_SCRIPT_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        found = said.search(text)
        if found is not None:
            return f"{found.group(0)} in {script.name}"
    return None


def _scripts(argv: Sequence[str], workdir: Path | None) -> Iterator[Path]:
    """The shell scripts the command names: each word (a `/bin/sh -c` line's words too)
    that is a file under `workdir` or an absolute one, marked as a shell script by its
    suffix or its `#!` line."""
    seen: set[Path] = set()
    for word in _words(argv):
        if not word or word.startswith("-") or "=" in word.split("/", 1)[0]:
            continue
        # An absolute word stays itself: pathlib's join starts over at it.
        path = workdir / word if workdir is not None else Path(word)
        if path in seen:
            continue
        seen.add(path)
        try:
            if not path.is_file():
                continue
            if path.name.endswith(_SCRIPT_SUFFIXES):
                yield path
                continue
            with path.open("rb") as handle:
                first = handle.readline(256)
        except OSError:
            continue
        if _SHEBANG.match(first):
            yield path


def _words(argv: Sequence[str]) -> Iterator[str]:
    """`argv`'s words, and the words of each that a shell would split further (a `-c`
    line, whose script is its first program word, `./run.sh`); a line shlex cannot split
    (a quote left open) by its blanks."""
    for word in argv:
        yield word
        if any(char.isspace() for char in word):
            try:
                yield from shlex.split(word)
            except ValueError:
                yield from word.split()
