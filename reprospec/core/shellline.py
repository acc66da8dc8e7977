"""A `/bin/sh -c` line's own operators, its quoted strings set aside: read, not parsed.

Two stages ask what a string command's line does as the shell runs it: the outcome (does
it fork one program, whose own exit record then tells its status: process/tree.py) and
the standalone repro (do `NAME=value` words before it reach all it runs:
plan/standalone.py). Both read the line's skeleton, with what is quoted made one word,
so `python -c "import sys; sys.exit(f())"` is one command, not a list and a subshell.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from reprospec.core.lazyre import Lazy
from reprospec.core.pythonargs import is_python

_NAME = Lazy(r"[A-Za-z_][A-Za-z0-9_]*")
# A word that sets a variable for the command after it (`A=1 python x.py`).
ASSIGNMENT = Lazy(r"[A-Za-z_][A-Za-z0-9_]*=")
# The shells a command may run its line or script under, by their executable's name: a
# process the report folds where it only waits for its child (native/render.py), the
# parent a program's record names as the shell that forked it (process/tree.py).
SHELLS = frozenset(
    {"sh", "ash", "dash", "bash", "ksh", "ksh93", "mksh", "lksh", "pdksh", "oksh", "zsh",
     "yash", "posh", "busybox"}
)  # fmt: skip
# Of them, those whose `-c SCRIPT` holds a command line that plan/shellwords.py reads for
# the files it names (`[bash, -o, pipefail, -c, "python train.py | tee log"]`).
COMMAND_SHELLS = SHELLS & {"sh", "bash", "dash", "zsh", "ksh"}
# Of them, those whose report of a death the outcome knows (bash's `4242 Segmentation
# fault`, dash's `Segmentation fault`): the only ones whose `exit N` outcome/shellexit.py
# reads as a shell's own.
REPORTING_SHELLS = SHELLS & {"sh", "dash", "bash"}
# A redirection to or from a descriptor (`2>&1`, `<&3`, `>&-`): no background job.
DUPLICATE = Lazy(r"[0-9]*[<>]&[0-9]*-?")


def runs_a_substitution(text: str, at: int) -> bool:
    """Whether `text` at `at` begins a command substitution, `$(...)` (an arithmetic
    `$((...))` taken as one) or a backquote: a program of its own runs there. Asked only
    outside single quotes, where the shell expands it; the one rule of skeleton() and
    outcome/shellexit.py's reader."""
    return text.startswith(("$(", "`"), at)


def skeleton(line: str, names: Collection[str] = ()) -> str | None:
    """`line` with every quoted string made the letter `q` and every escaped character
    dropped: what is left holds the shell's own operators. None where a part would read
    otherwise than its characters say: a command substitution (`$(...)`, a backquote,
    quoted or not: it runs a program of its own), an expansion of one of `names` (a
    variable set before the line is expanded before that assignment), or a quote left
    open."""
    out: list[str] = []
    index = 0
    quote = ""
    while index < len(line):
        char = line[index]
        if quote != "'" and char == "\\":
            index += 2
            continue
        if quote != "'" and runs_a_substitution(line, index):
            return None
        if quote != "'" and char == "$" and names:
            found = _NAME.match(line, index + 1 + line.startswith("${", index))
            if found and found.group(0) in names:
                return None
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
            if not quote:
                out.append("q")
        elif not quote:
            out.append(char)
        index += 1
    return None if quote else "".join(out)


def shebang(path: Path, limit: int) -> list[str]:
    """The words of a file's `#!` line (its first `limit` bytes); [] for none, or a file
    that cannot be read: what marks a shell script (plan/shellwords.py is_shell_script,
    outcome/shellexit.py)."""
    try:
        with path.open("rb") as file:
            first = file.readline(limit)
    except OSError:
        return []
    return [os.fsdecode(w) for w in first[2:].split()] if first.startswith(b"#!") else []


# What uv and distlib write instead of a `#!` line longer than the kernel takes:
#   #!/bin/sh
#   '''exec' '/long/path/bin/python' "$0" "$@"
_TRAMPOLINE = b"'''exec' "
# Enough for the `#!` line and the trampoline's second line.
_HEAD_BYTES = 1024


def shebang_python(path: Path) -> str | None:
    """The Python a script runs by its `#!` line, as the line names it: `/usr/bin/python3`;
    `python3` after env (`#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -u`: the first
    on PATH); the interpreter uv's and distlib's `#!/bin/sh` trampoline execs (a path too
    long for a `#!` line). None for anything else: a binary, a shell script, an unreadable
    file. The one reading of a script's Python: the runner's (runners/programs'
    `script_interpreter`, its absolute ones) and a ticket's (a `./train` of the sender's)."""
    try:
        with path.open("rb") as file:
            head = file.read(_HEAD_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    lines = head.split(b"\n", 2)
    words = [os.fsdecode(word) for word in lines[0][2:].split()]
    if not words:
        return None
    if is_python(words[0]):  # the one rule for an interpreter's name (python3.13t, pypy3)
        return words[0]
    base = os.path.basename(words[0])  # noqa: PTH119 (a word, not a path of this machine)
    if base == "env":  # the program env runs, past its options (`-S`, `-u HOME`)
        program = _env_program(words[1:])
        return program if is_python(program) else None
    if base == "sh" and len(lines) > 1 and lines[1].startswith(_TRAMPOLINE):
        try:
            parts = shlex.split(os.fsdecode(lines[1]))
        except ValueError:
            return None
        # `'''exec' '/x/python' "$0" "$@"` splits to ["exec", "/x/python", "$0", "$@"].
        return parts[1] if len(parts) > 1 else None
    return None


# The programs that run a program the command names, Python or any (`torchrun train.py`,
# `pytest`, `uv run x.py`, `srun`, `mpirun`): a command run by one runs Python as far as
# its reader can tell (capture/ticket.py's `_PROGRAMS`, the launchers a ticket shows).
LAUNCHERS = frozenset(
    {"torchrun", "accelerate", "deepspeed", "pytest", "lightning", "uv", "srun", "mpirun"}
)
# The launchers that run any program, Python or not: the program they run answers.
RUNS_ANY = frozenset({"srun", "mpirun"})
# Their common options that take the next word as their value (`-np 2`, `-p debug`,
# `--hostfile hosts`), and those that take two (`--mca btl self`, `-genv VAR value`): a
# value was read as the program (`srun -p test ./x`: `test` on PATH, a file).
_LAUNCH_VALUED = frozenset(
    {"-n", "-np", "-N", "-p", "-c", "-t", "-A", "-J", "-o", "-e", "-w", "-x", "-G", "-C",
     "-q", "-D", "-H", "-f", "-ppn", "-npernode", "-host", "-hosts", "-hostfile",
     "-machinefile", "-wdir", "-map-by", "-bind-to", "--partition", "--nodes", "--ntasks",
     "--time", "--account", "--job-name", "--output", "--error", "--nodelist", "--exclude",
     "--gpus", "--gpus-per-node", "--gpus-per-task", "--cpus-per-task", "--mem", "--gres",
     "--ntasks-per-node", "--qos", "--constraint", "--mpi", "--chdir", "--export",
     "--cpu-bind", "--host", "--hostfile", "--machinefile", "--wdir", "--map-by",
     "--bind-to", "--rank-by", "--npernode"}
)  # fmt: skip
_LAUNCH_TWO_VALUED = frozenset({"--mca", "-mca", "--gmca", "-gmca", "-genv", "-env"})


def launched_at(rest: Sequence[str]) -> int | None:
    """Where the program srun or mpirun runs is among the words after it (`rest`): the
    first past the launcher's options, their values and bare numbers; None where none is.
    Only it answers what the line runs, not its own arguments (`./a.out input.py`)."""
    at = 0
    while at < len(rest):
        word = rest[at]
        if word in _LAUNCH_TWO_VALUED:
            at += 3
        elif word in _LAUNCH_VALUED:
            at += 2
        elif word.startswith("-") or word.isdigit():
            at += 1
        else:
            return at
    return None


def program_name(word: str) -> str:
    """The name a program's word (a path or a name) is run by: its last part, without
    Windows' `.exe` (`.../Scripts/torchrun.exe` as `torchrun`, `python.exe` as `python`)."""
    name = word.rsplit("/", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _no_file(word: str) -> Path | None:
    del word
    return None


def runs_python(
    word: str,
    path: Path | None,
    rest: Sequence[str] = (),
    file_of: Callable[[str], Path | None] = _no_file,
) -> bool:
    """Whether a command's program word (past its variables and wrappers) runs Python, or
    may: an interpreter (`python3`, `/opt/py/bin/python`, Windows' `python.exe`), a `.py`
    script, a shell or a shell script (`run.sh`), a launcher (`LAUNCHERS`); or `path`, the
    word's file where it is here, whose `#!` names Python (`shebang_python`: env's `-S`, uv's
    trampoline) or a shell. srun and mpirun run any program: the program they run
    (`launched_at` in `rest`, its file here by `file_of`) answers, Python where it runs
    Python or is no file here (`mpirun -np 2 ./a.out`, an ELF `a.out`, runs no Python). The
    one answer of capture's (does a `python -I` run's spec keep its python) and a ticket's
    (is its program native: capture/ticket.py `_runs_native`)."""
    name = program_name(word)
    if name in RUNS_ANY:
        at = launched_at(rest)
        if at is None:
            return True
        found = file_of(rest[at])
        return runs_python(rest[at], found) or found is None or not found.is_file()
    if is_python(name) or name in SHELLS or name in LAUNCHERS:
        return True
    if name.lower().endswith((".py", ".pyw", ".sh")):
        return True
    if path is None:
        return False
    if shebang_python(path) is not None:
        return True
    line = shebang(path, _HEAD_BYTES)
    if not line:
        return False
    name = os.path.basename(line[0])  # noqa: PTH119 (the #! line's word)
    if name == "env":  # `#!/usr/bin/env bash`, `#!/usr/bin/env -S bash -e`
        name = _env_program(line[1:])
    return name in SHELLS


# GNU env's options that take a value: `-u NAME`, `-C DIR`, `-S STRING`, `-a ARG0`; the
# one list of them, for plan/wrappers.py's grammar of env (core imports no plan) and
# capture's reader of a command's env (capture/toggles.py).
ENV_VALUE_LETTERS = "uCSa"
ENV_VALUE_LONG = ("--unset", "--chdir", "--split-string", "--argv0")
# Those that take the next word in a `#!` line: not `-S`, whose string its words already
# hold split.
_ENV_VALUED = frozenset(
    {f"-{letter}" for letter in ENV_VALUE_LETTERS if letter != "S"}
    | {option for option in ENV_VALUE_LONG if option != "--split-string"}
)


def _env_program(words: Sequence[str]) -> str:
    """The program a `#!/usr/bin/env` line's words run: past env's options, their values
    and its `VAR=value` words (`-u HOME bash` runs bash: HOME was read as the program)."""
    at = 0
    while at < len(words):
        word = words[at]
        if word in _ENV_VALUED:
            at += 2
        elif word.startswith("-") or "=" in word:
            at += 1
        else:
            return word
    return ""
