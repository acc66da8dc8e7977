"""Whether a command runs shells and their builtins alone: `sh -c 'exit 139'`.

Rule 4 of the classifier (classify.py) reads an exit status 128+N where a process besides
the root ran as a shell's report of a death by N: `/bin/sh -c "sh -c './segv; exit $?'"`
exits 139 because its segv died of SIGSEGV, and the engine, which reaps orphans only,
never sees that death itself. But `sh -c 'exit 139'` ran a second process too (dash forks
the inner `sh`), which died of nothing: it ran the builtin `exit 139`. Where the command's
words show that every process it can start is a shell running builtins (a program would
be a word that is no builtin, a substitution, a redirection, a pipeline, a subshell: any
of them makes this answer no), no process could die of N unseen: a shell that reaps a
child killed by a signal says so on stderr (dash `Segmentation fault`, bash `1234
Segmentation fault`), which the caller checks first. So its 128+N is an `exit` status.

Read from the words alone, conservatively: whatever it cannot read whole is "may run a
program", which leaves rule 4 as it was.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath

from reprospec.core import shellline

# Builtins of every POSIX /bin/sh (dash, bash, busybox) that start no process.
_BUILTINS = frozenset(
    {":", "true", "false", "exit", "return", "cd", "export", "unset", "set", "shift",
     "umask", "echo", "printf", "test", "["}
)  # fmt: skip
_SHELLS = frozenset({"sh", "ash", "dash", "bash", "ksh", "mksh", "zsh", "busybox"})
# The list operators a line may hold; anything else of the shell's own makes it unread.
_LIST = frozenset({";", "&&", "||"})
# A line's characters that may start a process or run what no word shows: a subshell or
# group, a redirection or here-document, a pipeline or background job, a newline (read
# as a space by shlex), an expansion that may be a command word, a glob.
_UNREAD = frozenset("(){}<>|&\n$`*?[")
_MAX_DEPTH = 4


def runs_shells_alone(argv: Sequence[str]) -> bool:
    """Whether `argv` (a string command's `/bin/sh -c LINE`, or a list command) runs shells
    and their builtins alone, every shell's script given literally with `-c`."""
    return _shell_call(list(argv), 0)


def _shell_call(words: list[str], depth: int) -> bool:
    """`SHELL [-e|-u|-x...] -c SCRIPT [ARG...]` whose script runs shells and builtins alone."""
    if depth > _MAX_DEPTH or not words or PurePosixPath(words[0]).name not in _SHELLS:
        return False
    at = 1
    while at < len(words) and words[at] != "-c":
        if not (words[at].startswith("-") and words[at][1:].isalpha() and "c" not in words[at]):
            return False  # an option that is not a plain flag, or a script file to run
        at += 1
    return at + 1 < len(words) and _script(words[at + 1], depth + 1)


def _script(line: str, depth: int) -> bool:
    """Whether a `-c` script is a list (`;`, `&&`, `||`) of builtins and shell calls."""
    skeleton = shellline.skeleton(line)
    if skeleton is None or _UNREAD & set(skeleton.replace("&&", "").replace("||", "")):
        return False
    if "&" in skeleton.replace("&&", "") or "|" in skeleton.replace("||", ""):
        return False
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return False
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _LIST:
            command.append(token)
            continue
        if any(set(token) <= set(";&|") for token in command):
            return False  # `;;`, `|&`: not a plain list
        while command and shellline.ASSIGNMENT.match(command[0]):
            command.pop(0)
        if command and command[0] not in _BUILTINS and not _shell_call(command, depth):
            return False
        command = []
    return True


__all__ = ["runs_shells_alone"]
