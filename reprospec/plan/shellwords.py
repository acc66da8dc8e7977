"""The words of a shell command line or script, as what they run and name is read.

A command's words name the files it needs (`python train.py --config cfg.yaml`); a shell
script's do too (`cat data.txt | python app.py` in run.sh), but for the files it writes
(`> log.txt`, `| tee out.txt`), which a run creates and a rerun does not need.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from reprospec.core.sections import Command

# Python files and scripts bigger than this are not read for what they name.
MAX_PARSE_BYTES = 1 << 20

# Shells whose `-c SCRIPT` holds the command line: a list command `[bash, -o, pipefail, -c,
# "python train.py | tee log"]` names its files inside that one word.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


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


def shell_script(words: list[str]) -> str | None:
    """The script of `sh -c SCRIPT` (a string command) or `[bash, -o, pipefail, -c, SCRIPT]`."""
    return _shell_run(words)[0]


def script_operand(words: list[str]) -> str | None:
    """The script file a shell runs: `run.sh` of `bash -x run.sh` or `sh -o pipefail run.sh`;
    None for `sh -c SCRIPT` and for a program that is no shell."""
    return _shell_run(words)[1]


def _shell_run(words: list[str]) -> tuple[str | None, str | None]:
    """(the `-c` script, the script file) of a shell's words, past its options: one or
    neither, (None, None) for a program that is no shell."""
    if not words or Path(words[0]).name not in SHELLS:
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


def shebang(path: Path, limit: int) -> list[str]:
    """The words of a file's `#!` line (its first `limit` bytes); [] for none, or a file
    that cannot be read."""
    try:
        with path.open("rb") as file:
            first = file.readline(limit)
    except OSError:
        return []
    return [os.fsdecode(w) for w in first[2:].split()] if first.startswith(b"#!") else []


def shell_words(text: str) -> list[str]:
    """A shell script's words, its operators apart (`a.txt|b` is three words)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes, a heredoc's text: take plain words
        return text.split()
