"""Whether a shell's 128+N is its own `exit N`: a command that runs no program at all.

A shell reports a process it ran that died of signal N as 128 + N, and exits with it
(classify.py rule 4 reads it as that death). But 128 + N is also an ordinary exit status,
which a shell exits with when it is told to: `sh -c 'exit 139'`, `bash -c 'set -e; sh -c
"exit 139"; echo never'`. Nothing died there. The engine cannot see the statuses a shell
reaped (only its own children's, and the root's), and a script that reaped a death often
passes it on in words of its own (`rc=${PIPESTATUS[0]}; [ $rc -eq 139 ] && exit 139`, a
`trap '...; exit 143' TERM`), in a pipeline or a substitution where bash prints no report
of the death. So the reading is conservative: a literal `exit N` (or `return N`) counts
only where the command runs no program at all, so that no death can have made the status.

That is where every command of the line (comments stripped) is a shell builtin that runs
no program (`:`, `true`, `false`, `echo`, `printf`, `set`, `export`, `unset`, `shift`,
assignments, `exit`, `return`, a function defined of such and called), a nested `sh -c`,
`dash -c` or `bash -c` (with no flag but -e, -u, -x: not a login or interactive shell, which
reads profiles first) whose line is such, or a sh, dash or bash script (named by its
`.sh`/`.bash` suffix or its `#!` line) whose whole text is such. Any `trap`, any other
program, any `$?` or PIPESTATUS, any pipeline, background job, subshell, substitution or
here-document, a line that cannot be read: not the shell's own exit (the crash rule 4
reads). zsh, ksh and the rest are not read: their reports of a death are not known.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from reprospec.core.shellline import ASSIGNMENT, REPORTING_SHELLS, runs_a_substitution, shebang

# The builtins that run no program (`exit` and `return` apart: what they say is read).
_BUILTINS = frozenset({":", "true", "false", "echo", "printf", "set", "export", "unset", "shift"})
# A script read for it is read this far, and a `-c` line or script within one this deep.
_SCRIPT_BYTES = 256 * 1024
_DEPTH = 4
# The shell's operators, longest first: what separates commands, and redirections.
_OPERATORS = ("&>>", "&&", "||", ";;", ">>", ">&", "<&", "&>", ">|", "<>", "|&", "<<")
_OPERATOR_CHARS = frozenset(";&|()<>")
_SEPARATORS = frozenset({";", "&&", "||", "\n"})
_REDIRECTIONS = frozenset({">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<>"})


class _Unread(Exception):
    """The text holds what this reading does not take: it may run a program."""


class _Said(NamedTuple):
    """The first `exit N` (or `return N`) that names the status, and the script it is in."""

    words: str
    script: str | None


def own_exit(returncode: int, argv: Sequence[str] | None, workdir: Path | None) -> str | None:
    """Where the command `argv` (run in `workdir`) runs no program and tells a shell to exit
    with `returncode`: the words that do (`exit 139`, or `exit 139 in run.sh` for a script
    it names); None where it may run a program, says no such exit, or `argv` is not known."""
    if not argv:
        return None
    reader = _Reader(returncode, workdir)
    try:
        reader.command(list(argv), None, 0)
    except _Unread:
        return None
    said = reader.said
    if said is None:
        return None
    return said.words if said.script is None else f"{said.words} in {said.script}"


class _Reader:
    """Reads a command's words, lines and scripts, raising _Unread at what may run a program."""

    def __init__(self, returncode: int, workdir: Path | None) -> None:
        self.returncode = returncode
        self.workdir = workdir
        self.said: _Said | None = None

    def text(self, text: str, script: str | None, depth: int) -> None:
        """Every command of a line or script's text: none may run a program."""
        if depth > _DEPTH:
            raise _Unread
        functions: set[str] = set()
        for words in _commands(_tokens(text), functions):
            self.command(words, script, depth, functions)

    def command(
        self,
        words: list[str],
        script: str | None,
        depth: int,
        functions: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """One simple command's words (its assignments and redirections gone)."""
        if not words:
            return
        name = words[0]
        if name in ("exit", "return"):
            if len(words) > 2:
                raise _Unread
            # ASCII digits only: `²` is a digit to isdigit() but not to int() or a shell.
            asks = len(words) == 2 and words[1].isascii() and words[1].isdigit()
            if asks and int(words[1]) % 256 == self.returncode and self.said is None:
                self.said = _Said(f"{name} {words[1]}", script)
            return
        if name in _BUILTINS or name in functions:
            return
        if os.path.basename(name) in REPORTING_SHELLS:  # noqa: PTH119 (a word, not a Path)
            self._shell(words, depth)
            return
        path = self._file(name) if "/" in name else None  # else a program on PATH
        if path is None or not _is_read_script(path):
            raise _Unread
        self.text(_read(path), path.name, depth + 1)

    def _shell(self, words: list[str], depth: int) -> None:
        """`sh -c LINE`, `bash -e run.sh`: the line or the script, read the same way."""
        for index, word in enumerate(words[1:], start=1):
            if word in ("-o", "+o"):
                continue
            if words[index - 1] in ("-o", "+o"):
                continue
            if word.startswith(("-", "+")) and not word.startswith("--"):
                flags = word.lstrip("-+")
                # -c with -e/-u/-x alone: -lc, -ic read profiles and rc files first.
                if "c" in flags and set(flags) - {"c"} <= set("eux") and index + 1 < len(words):
                    self.text(words[index + 1], None, depth + 1)
                    return
                if flags and set(flags) <= set("eux"):
                    continue  # -e, -u, -x: no program, no other input
                raise _Unread
            path = self._file(word)
            if not path.is_file():
                raise _Unread
            self.text(_read(path), path.name, depth + 1)
            return
        raise _Unread  # commands from stdin

    def _file(self, word: str) -> Path:
        """The file a word names, relative to the workdir (an absolute one as itself)."""
        return self.workdir / word if self.workdir is not None else Path(word)


def _is_read_script(path: Path) -> bool:
    """A sh, dash or bash script: a `.sh` or `.bash` file, or one whose `#!` line names one
    of them (`#!/bin/bash`, `#!/usr/bin/env bash`); a `#!` naming another shell is not."""
    words = shebang(path, 256)
    if words:
        return any(os.path.basename(word) in REPORTING_SHELLS for word in words[:2])  # noqa: PTH119
    return path.is_file() and path.name.endswith((".sh", ".bash"))


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(_SCRIPT_BYTES + 1)
    except OSError:
        raise _Unread from None
    if len(data) > _SCRIPT_BYTES:
        raise _Unread
    return data.decode("utf-8", "replace")


def _commands(tokens: list[str], functions: set[str]) -> list[list[str]]:
    """The simple commands of a line's tokens, each its words less its assignments and
    redirections; a function's definition (`f() {`, `function f {`) adds its name to
    `functions`, its body read as commands of the line. A pipeline, a background job, a
    subshell or a case: _Unread."""
    commands: list[list[str]] = []
    current: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _SEPARATORS:
            commands.append(current)
            current = []
        elif token in _REDIRECTIONS:
            index += 1  # its file or descriptor
            if index >= len(tokens) or tokens[index] in _OPERATOR_SET:
                raise _Unread
        elif token == "(" and len(current) == 1 and tokens[index + 1 : index + 2] == [")"]:
            functions.add(current.pop())  # `f() {`
            index += 1
        elif token in _OPERATOR_SET:
            raise _Unread  # `|`, `&`, `(`, `;;`, `<<`
        elif token in ("{", "}") and not current:
            pass  # a function's body or a group: its commands are the line's
        elif token == "function" and not current and index + 1 < len(tokens):
            functions.add(tokens[index + 1])
            index += 1
        elif (
            token.isascii()
            and token.isdigit()
            and tokens[index + 1 : index + 2]
            and (tokens[index + 1] in _REDIRECTIONS)
        ):
            pass  # the descriptor of `2>`, `2>&1`
        elif not current and ASSIGNMENT.match(token) and token.isascii():
            pass  # `A=1` before the command, or alone
        else:
            current.append(token)
        index += 1
    commands.append(current)
    return commands


_OPERATOR_SET = frozenset(_OPERATORS) | _OPERATOR_CHARS


def _tokens(text: str) -> list[str]:
    """A line's words and operators, quotes removed, comments dropped, each newline a `\\n`
    token; _Unread at a substitution (`$(`, a backquote), `$?`, PIPESTATUS, a quote left
    open. Not the shell's grammar: only what `_commands` then reads."""
    if "PIPESTATUS" in text:
        raise _Unread
    tokens: list[str] = []
    word: list[str] = []
    started = False  # a word is begun (`''` is one, empty)
    index = 0
    quote = ""

    def end() -> None:
        nonlocal started
        if started:
            tokens.append("".join(word))
            word.clear()
            started = False

    while index < len(text):
        char = text[index]
        if quote != "'" and (
            runs_a_substitution(text, index) or text.startswith(("$?", "${?"), index)
        ):
            raise _Unread
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                word.append(char)
        elif char == "\\":
            following = text[index + 1 : index + 2]
            if following != "\n":  # a line's continuation is nothing
                word.append(following)
                started = True
            index += 1
        elif quote == '"':
            if char == '"':
                quote = ""
            else:
                word.append(char)
        elif char in "'\"":
            quote, started = char, True
        elif char in " \t\r":
            end()
        elif char == "\n":
            end()
            tokens.append("\n")
        elif char == "#" and not started:
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
            continue
        elif char in _OPERATOR_CHARS:
            end()
            operator = next((op for op in _OPERATORS if text.startswith(op, index)), char)
            tokens.append(operator)
            index += len(operator)
            continue
        else:
            word.append(char)
            started = True
        index += 1
    if quote:
        raise _Unread
    end()
    return tokens
