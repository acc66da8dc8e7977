"""What Python a shell script runs, read from its words (never run): for materialize's
runner packages (`runnerpackages`), which drop torch only where a cell provably lacks it.

The script's text was searched for the words torch and numpy: `python train.py` in run.sh
was no mention (train.py's imports are read as a carried file, which is right), but a
comment or an `echo` naming torch kept it, and `python -c "import pandas"` or
`python -` fed a heredoc named nothing while running Python no one read. So each Python
the script starts is read as the command's own are: its `-c` code with the one reader of
imports (`plan.pyimports`), its `-m` module by name, its file as the carried Python it
must be. What cannot be followed is said (`ScriptPython.unsure`), and the image keeps the
runner's packages: Python from standard input (`python -`, a heredoc), a program or file
named at run time (`$PY`, `python "$1"`), `eval`, a file the bundle does not carry as
Python, a script too big to read.

A cell's own command is read by the same reader (`command_python`), and each command's
program is found past its wrappers as `plan.wrappers` reads them (`timeout 60`, `nice -n
5`, `env -i A=1`): the command's words were read for `torchrun` only as its first word, so
`timeout 60 torchrun app.py` of a program importing only the standard library got an
image without torch, and `nice -n 5 $PY app.py` in a script ran a program named at run
time that nothing said.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from collections.abc import Collection, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.pythonargs import is_python, python_program
from reprospec.plan.pyimports import Imports, parse_imports
from reprospec.plan.shellwords import (
    MAX_PARSE_BYTES,
    SHELLS,
    is_assignment,
    script_operand,
    shell_script,
)
from reprospec.plan.wrappers import program_file, program_start

# The characters of the shell's operators, newline among them (see _commands): a run of
# them (`;\n`, `&&`, `|`) ends one command, bar a redirection's `<` and `>`.
_OPERATOR = frozenset("();<>|&\n")
# Words before a command's program that run it (`exec python app.py`, `if python -c ...`).
_BEFORE = frozenset(
    {"if", "then", "elif", "else", "while", "until", "do", "!", "{", "time", "exec", "nohup"}
)
# Programs that name another without running it.
_NOT_RUN = frozenset({"echo", "printf", "which", "type", "hash", "whereis"})
# How deep `bash -c "sh -c '...'"` is read, as the command's own words are.
_NESTED = 3


@frozen
class ScriptPython:
    """What the Python a shell script starts imports, as far as its words show."""

    # (where, its imports; None: not Python to the host) of each `-c` program.
    reads: tuple[tuple[str, Imports | None], ...] = ()
    # Top-level modules run by name: `-m torch.distributed.run`, `torchrun`'s torch.
    modules: frozenset[str] = frozenset()
    # Why what it runs is not known (None: it is), for the README: "runs Python from its
    # input (`python -`)".
    unsure: str | None = None


def script_python(path: Path, workdir: Path, carried: Collection[Path]) -> ScriptPython:
    """What the Python the shell script at `path` starts imports. `carried`: the files the
    bundle carries, whose Python files' imports are read (a file it runs must be one of
    them, a script it runs another carried file); names are the workdir's, where it runs."""
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return ScriptPython(unsure=f"is over {MAX_PARSE_BYTES >> 20} MiB, not read")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return ScriptPython(unsure=f"could not be read ({exc.strerror or exc})")
    reader = _Reader(workdir, _known(carried))
    reader.read(text, 0)
    return ScriptPython(tuple(reader.reads), frozenset(reader.modules), reader.unsure)


def command_python(argv: Sequence[str], workdir: Path, carried: Collection[Path]) -> ScriptPython:
    """What the Python a cell's command (`argv`: `/bin/sh -c LINE` for a string command,
    read as the script it is) starts imports, by the reader of a script's commands, so a
    command and a line of its script are read alike, wrappers and all. A carried script it
    runs (`sh run.sh`) is not read here: the caller reads each carried script itself."""
    reader = _Reader(workdir, _known(carried), scripts=False)
    code = shell_script(list(argv))
    if code is not None:
        # The command's words are literal (no shell made them): its `sh -c LINE`'s `$OUT`
        # is expanded inside LINE, never a script made at run time as a script's `-c "$X"`.
        reader.read(code, 1)
    else:
        reader.command(list(argv), 0)
    return ScriptPython(tuple(reader.reads), frozenset(reader.modules), reader.unsure)


def _known(carried: Collection[Path]) -> frozenset[str]:
    return frozenset({os.path.normpath(p) for p in carried} | {str(p.resolve()) for p in carried})


class _Reader:
    """One script's words read command by command; the first unknown stops it."""

    def __init__(self, workdir: Path, known: frozenset[str], *, scripts: bool = True) -> None:
        self.workdir = workdir
        self.known = known
        # Whether a carried script it runs is read here; a command's is not: the bundle's
        # every carried script is read in its own right (`runner_packages`), and what it
        # cannot follow is said of that script, not of the command that runs it.
        self.scripts = scripts
        self.reads: list[tuple[str, Imports | None]] = []
        self.modules: set[str] = set()
        self.unsure: str | None = None

    def read(self, text: str, depth: int) -> None:
        for command in _commands(text):
            if self.unsure is None:
                self.command(command, depth)

    def command(self, words: list[str], depth: int) -> None:
        start = 0
        while start < len(words) and (words[start] in _BEFORE or is_assignment(words[start])):
            start += 1  # `exec`, `then`, `OMP_NUM_THREADS=1`
        # Past its wrappers, by their own options (`timeout 60`, `nice -n 5`, `env -i A=1`):
        # the program is what the checks below read. Where a wrapper's word is one its
        # grammar lacks, the scan below starts at the wrapper, as it did before.
        past = program_start(words[start:])
        start += past or 0
        if start == len(words) or Path(words[start]).name in _NOT_RUN:
            return  # `echo python`, `which python3`
        program = words[start]
        if _at_run_time(program):
            self.unsure = f"runs a program named at run time (`{program}`)"
        elif program == "eval":
            self.unsure = "runs a command made at run time (`eval`)"
        elif program in ("source", "."):
            self.script(words[start + 1] if start + 1 < len(words) else None, depth)
        else:
            # Any word, not only the program: a wrapper runs the Python after it (`env`,
            # `srun`, `uv run`); a word taken for one wrongly only keeps torch.
            for index in range(start, len(words)):
                name = Path(words[index]).name
                if name == "torchrun":
                    self.modules.add("torch")
                elif is_python(name):
                    self.python(words[index + 1 :])
                elif name in SHELLS:
                    self.shell(words[index:], depth)
                else:
                    continue
                return  # what follows is the program's arguments

    def python(self, args: list[str]) -> None:
        """An interpreter's arguments: its options, then the program (`-c`, `-m`, a file)."""
        # A redirection ends its words: `python <<EOF`, `python - < x.py` read standard input.
        found = python_program(list(itertools.takewhile(lambda w: not set(w) <= {"<", ">"}, args)))
        if found.kind == "nothing":
            return  # `python --version`: it runs nothing
        if found.kind == "script":
            self.file(found.target)
        elif found.kind == "code":
            self.reads.append(("`python -c` code", _code(found.target)))
        elif found.kind == "module":
            self.module(found.target)
        else:
            self.unsure = "runs Python from its standard input (`python -`, a heredoc)"

    def file(self, word: str | None) -> None:
        if word is None:
            self.unsure = "runs Python from its standard input (`python -`, a heredoc)"
        elif _at_run_time(word):
            self.unsure = f"runs a Python file named at run time (`python {word}`)"
        else:
            path = program_file(word, self.workdir)
            if path.suffix != ".py" or not self.carries(path):
                # A carried file is read as Python only by its .py (`runner_packages`).
                self.unsure = f"runs {word}, which the bundle does not carry as Python"

    def module(self, word: str | None) -> None:
        if word is None or _at_run_time(word):
            self.unsure = f"runs a module named at run time (`python -m {word or ''}`)"
        else:
            self.modules.add(word.split(".", 1)[0])

    def shell(self, words: list[str], depth: int) -> None:
        """`bash -c "python -c '...'"` read as the script it is, `bash other.sh` as that."""
        code = shell_script(words)
        if code is None:
            self.script(script_operand(words), depth)
        elif _at_run_time(code):
            self.unsure = f"runs a shell script made at run time (`-c {code}`)"
        elif depth < _NESTED:
            self.read(code, depth + 1)

    def script(self, word: str | None, depth: int) -> None:
        """A script file it runs (`bash other.sh`, `source env.sh`): read where carried."""
        if word is None:
            return  # `bash` alone, `bash -s`: its input; no Python of it is in sight
        path = program_file(word, self.workdir)
        if _at_run_time(word) or not self.carries(path):
            self.unsure = f"runs {word}, a script the bundle does not carry"
        elif depth < _NESTED and self.scripts:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            self.read(text, depth + 1)

    def carries(self, path: Path) -> bool:
        return os.path.normpath(path) in self.known or str(path.resolve()) in self.known


def _at_run_time(word: str) -> bool:
    """A word the shell expands (`$PY`, `"$@"`, `` `which python` ``): not known here."""
    return "$" in word or "`" in word


def _code(code: str | None) -> Imports | None:
    return None if code is None or _at_run_time(code) else parse_imports(code)


def _commands(text: str) -> list[list[str]]:
    """A script's commands, each its words, operators apart; a comment left out.

    A newline ends a command as `;` does: shlex takes it for a space, which made
    `echo hi` and the next line's `python -c CODE` one command. A comment is dropped to
    its line's end by hand, since shlex's own would take the newline with it."""
    lexer = shlex.shlex(text.replace("\\\n", " "), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: the shell will say so; take plain words
        words = re.findall(r"\n|[^\s]+", text)
    commands: list[list[str]] = [[]]
    comment = False
    for word in words:
        if set(word) <= _OPERATOR and set(word) - {"<", ">"}:  # `;`, `&&`, `;\n\n`, `|`
            comment = comment and "\n" not in word
            if commands[-1]:
                commands.append([])
        elif comment or word.startswith("#"):
            comment = True
        else:
            commands[-1].append(word)
    return [c for c in commands if c]
