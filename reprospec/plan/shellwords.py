"""The words of a shell command line or script, as what they run and name is read.

A command's words name the files it needs (`python train.py --config cfg.yaml`); a shell
script's do too (`cat data.txt | python app.py` in run.sh), but for the files it writes
(`> log.txt`, `| tee out.txt`), which a run creates and a rerun does not need.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import NamedTuple

from reprospec.core import shellline
from reprospec.core.sections import Command
from reprospec.core.shellline import shebang

# Python files and scripts bigger than this are not read for what they name.
MAX_PARSE_BYTES = 1 << 20

# Shells whose `-c SCRIPT` holds the command line: a list command `[bash, -o, pipefail, -c,
# "python train.py | tee log"]` names its files inside that one word (core/shellline.py).
SHELLS = shellline.COMMAND_SHELLS


def is_assignment(word: str) -> bool:
    """A `NAME=value` word before a command's program (`MY_FLAG=1 python app.py`)."""
    name, sep, _ = word.partition("=")
    return bool(sep) and name.isidentifier()


def command_words(command: Command) -> list[str]:
    """The command's words, or its shell script's (`sh -c SCRIPT`) less the files it writes,
    a script's own `sh -c SCRIPT` read the same way: the string command
    `sh -c 'cat data.txt | python parse.py'` runs under `/bin/sh -c`, and its words were
    `sh`, `-c` and the inner script whole, so no bundle or verify copy carried data.txt."""
    words = list(command.argv)
    for _ in range(_NESTED_SHELLS):
        script = shell_script(words)
        if script is None:
            break
        try:
            split = shlex.split(script, comments=True)
        except ValueError:  # unbalanced quotes: the shell will say so; take plain words
            split = script.split()
        words = without_written(split)
    return words


# How deep `sh -c "bash -c '...'"` is read: a script three shells down is no one's command.
_NESTED_SHELLS = 3


def shell_script(words: list[str], shells: frozenset[str] = SHELLS) -> str | None:
    """The script of `sh -c SCRIPT` (a string command) or `[bash, -o, pipefail, -c, SCRIPT]`,
    for a program named in `shells` (a ticket's reader asks of every shell there is,
    core/shellline.SHELLS, where a command's files are read of SHELLS')."""
    return _shell_run(words, shells)[0]


def script_operand(words: list[str]) -> str | None:
    """The script file a shell runs: `run.sh` of `bash -x run.sh` or `sh -o pipefail run.sh`;
    None for `sh -c SCRIPT` and for a program that is no shell."""
    return _shell_run(words)[1]


def _shell_run(words: list[str], shells: frozenset[str] = SHELLS) -> tuple[str | None, str | None]:
    """(the `-c` script, the script file) of a shell's words, past its options: one or
    neither, (None, None) for a program that is no shell of `shells`."""
    if not words or Path(words[0]).name not in shells:
        return None, None
    for index, word in enumerate(words[1:], start=1):
        following = words[index + 1] if index + 1 < len(words) else None
        if word == "--":
            return None, following
        if words[index - 1] in _WITH_ARGUMENT:
            continue  # the option's argument: `-o pipefail`, `-O extglob`, `--rcfile my.rc`
        if word.startswith(("-", "+")):
            flags = "" if word.startswith("--") else word.lstrip("-+")
            if "c" in flags:
                return following, None  # `-c`, `-xc`: the script is the next word
            if "s" in flags:
                return None, None  # `-s`: commands from stdin; the words are its arguments
            continue
        return None, word  # `bash script.sh -c`: an argument of the script, not the shell's
    return None, None


# A shell's options that take the next word as their argument.
_WITH_ARGUMENT = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


# A shell's redirections that write the word after them, and what ends a `tee`'s files.
_WRITES = frozenset({">", ">>", ">|", "1>", "1>>", "2>", "2>>", "&>", "&>>"})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "|&"})


def without_written(words: list[str]) -> list[str]:
    """A shell command's words less the files it writes: `> log.txt`, `| tee out.txt`.

    The run itself creates them in the workdir, so they exist when the repro is made,
    yet a rerun does not need them: `python train.py | tee out.txt` needs train.py only.
    """
    kept: list[str] = []
    teeing = False
    for index, word in enumerate(words):
        if index > 0 and words[index - 1] in _WRITES:
            continue
        if word in _SEPARATORS:
            teeing = False
        elif teeing and not word.startswith("-"):
            continue
        elif (word == "tee" or word.endswith("/tee")) and (
            index == 0 or words[index - 1] in _SEPARATORS
        ):
            teeing = True  # the program of its pipeline stage, not a word named tee
        kept.append(word)
    return kept


# A NamedTuple, as workfiles.py's `_WordFiles` is and for its reason: made as every run
# starts, where the program's files are read.
class Located(NamedTuple):
    """Words of a shell line that run in one folder: `folder` as its `cd`s name it (joined,
    relative to the line's own working directory, or absolute), "" for that directory."""

    folder: str
    words: tuple[str, ...]


# The operators after which a `cd` runs in the line's own shell, once the command before
# it has ended (`;`) or succeeded (`&&`): what comes after it runs in its folder. A `cd`
# after `||` may not run: it is not followed. (A line with a pipeline or a background job
# is not read for its `cd`s at all: _SUBSHELLS. After the `cd` any operator may come: past
# `cd sub || exit 1`, the rest runs in sub or not at all.)
_SEQUENCE = frozenset({"&&", ";"})
_CD_OPTIONS = frozenset({"-L", "-P", "--"})
# The operators whose commands run in a subshell of their own (a background job, the stages
# of a pipeline): a `cd` among them moves no command after them.
_SUBSHELLS = frozenset({"&", "|", "|&"})


def located_words(words: list[str]) -> list[Located]:
    """`command_words`' words by the folder each runs in, the `cd` commands themselves
     left out: `cd sub && python x.py data.csv` runs x.py in sub/, where it opens data.csv,
     and a finder that read them in the working directory found neither, so a bundle went
     without sub/x.py and its rerun failed on "can't open file".

     A `cd` is followed where it starts the line or a command after `&&` or `;`, to one
     plain folder (quoted or not, relative or absolute, `~` expanded), several in sequence
     joined (`cd a && cd b`: a/b). One whose folder cannot be told (`cd` alone: the home,
     `cd -`, `cd "$DIR"`, a glob, a `cd` that may not run) ends the following: the words
     after it are read in the line's own working directory again, as they were before any
     `cd` was followed, and nothing is said (the shell knows; this reading does not).

     A line with a background job, a pipeline or a subshell (`&`, `|`, parentheses) is read
     whole in the working directory, as before any `cd` was followed: a `cd` there changes
     the folder of its own subshell alone, and `cd server && python3 serve.py & python3
     client.py` runs client.py in the working directory, which a bundle then went without
    ."""
    if any(w in _SUBSHELLS for w in words) or _opens_subshell(words):
        return [Located("", tuple(words))] if words else []
    located: list[Located] = []
    folder = ""
    current: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        before = words[index - 1] if index else ";"
        if word != "cd" or not _starts_command(before):
            current.append(word)
            index += 1
            continue
        target, index = _cd_target(words, index + 1)
        if index < len(words) and words[index] in _SEQUENCE:
            index += 1  # its `&&`: no word of the command after it
        if current:
            located.append(Located(folder, tuple(current)))
            current = []
        sequential = before in _SEQUENCE or before.endswith(";")
        # Joined as words: the workdir they are read in is the finder's to add.
        folder = os.path.join(folder, target) if target and sequential else ""  # noqa: PTH118
    if current:
        located.append(Located(folder, tuple(current)))
    return located


def _starts_command(before: str) -> bool:
    """Whether the word after `before` is where a command starts: after an operator, or a
    word that ends one (`sub;`: shlex keeps the `;` on the word)."""
    return before in _SEPARATORS or before.endswith(";")


def _opens_subshell(words: list[str]) -> bool:
    """Whether a word where a command starts opens a subshell: `(cd a && x)`, `a; (b)`.

    Only there: the words come split, their quotes gone, so a quoted argument ending in a
    parenthesis (`python -c 'import ctypes; ctypes.string_at(8)'`) is one word like a
    subshell's last, and a line holding one was read whole, its `cd` not followed (the
    core of `cd build && python -c '...'` was looked for in the wrong folder).
    """
    before = ";"
    for word in words:
        if word.startswith("(") and _starts_command(before):
            return True
        before = word
    return False


def _cd_target(words: list[str], index: int) -> tuple[str | None, int]:
    """The folder of the `cd` whose arguments start at `index` (None where it cannot be
    told) and the index of the word after the `cd` command: its separator, if any."""
    while index < len(words) and words[index] in _CD_OPTIONS:
        index += 1
    if index >= len(words) or words[index] in _SEPARATORS:
        return None, index  # `cd` alone: the home folder
    target = words[index]
    index += 1
    if target.endswith(";"):
        target = target[:-1]  # `cd sub; python x.py`: shlex keeps the `;` on the word
    elif index < len(words) and words[index] not in _SEPARATORS:
        return None, index  # `cd a b`, `cd sub 2>/dev/null`: not read
    if not target or target == "-" or any(mark in target for mark in "$`*?[;"):
        return None, index
    return os.path.expanduser(target), index  # noqa: PTH111 (a word, not a Path)


def is_shell_script(path: Path) -> bool:
    """A `.sh` file, or one whose `#!` line names a shell; small enough to read."""
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return False
    except OSError:
        return False
    if path.suffix in (".sh", ".bash"):
        return True
    program = shebang(path, 256)
    names = [Path(w).name for w in program[:2]]  # `#!/usr/bin/env bash`
    return any(name in SHELLS for name in names)


def shell_words(text: str) -> list[str]:
    """A shell script's words, its operators apart (`a.txt|b` is three words)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes, a heredoc's text: take plain words
        return text.split()
