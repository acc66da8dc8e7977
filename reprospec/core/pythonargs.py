"""What a Python interpreter's command line runs: its own options read past, then the program
(`-c CODE`, `-m MODULE`, a script, standard input) and where the program's arguments begin.

One reader for every place that asks: validate's missing script (plan/missing.py), capture's
axes and footprint (capture/toggles.py, capture/footprint.py), the pytest a command runs
(outcome/pytestreport.py) and the bundle's script reader (export/scriptpython.py); `is_python`
also for capture's interpreter by path or shebang and its ticket reader. Each had
its own, and each missed a different part of the interpreter's grammar: `-uc CODE` (flags
joined), `-Wignore` and `-mpkg` (a value joined to its flag), `--check-hash-based-pycs
always`, `python3.12` (a two-digit minor version) or Python 2's `-Q`. `is_interpreter_file`,
by the same name rule, is an interpreter's executable or shared library as the stacks see
them: a hang's processes to ask py-spy about (process/stacks.py), a core's mapped files
whose gdb helper to load (native/gdb.py), the frames that are no user's code
(native/render.py). `INTERPRETER_LIB`
and `LIBRARY_CODE`, where an interpreter's and a package's code lies, by the same name rule,
serve the stacks' user frames (outcome/hungstacks.py), the capture's crash frame and its
data files (capture/footprint.py, capture/datafiles.py), each of which had its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy

# An interpreter's file name: python, python3, python3.12, PyPy's `pypy3`, a build's ABI
# flags after its version (free-threaded `python3.13t`, debug `python3.11d` and
# `python3.13td`, Python 3.7's `python3.7m`), PyPy's own binary, which `pypy3` links to
# and /proc/PID/exe names (`pypy3.10-c`), Debian's names for its debug build
# (`python3.11-dbg`, `python3-dbg`: links to `python3.11d`, which /proc/PID/exe names, but a
# command or a process's argv[0] says them), Windows' `python.exe` (not python3-config,
# python3.11-dbg-config, pythonw).
_VERSION = r"(?:\d+(?:\.\d+)*(?:td|dm|[tdm])?)?"
_PYTHON_NAME = Lazy(rf"(?:python{_VERSION}(?:-dbg)?|pypy{_VERSION}(?:-c)?)(?:\.exe)?")
# An interpreter's shared library: `libpython3.11.so.1.0`, `libpython3.13t.so`, PyPy's
# `libpypy3.10-c.so`, macOS' `.dylib`, or as native/symbols.short_library shortens one
# (`libpython3.11`); `name` is then an interpreter's name by the rule above.
_PYTHON_LIBRARY = Lazy(r"lib(?P<name>.+?)(?:\.so(?:\.\d+)*|\.dylib)?")
# Where an interpreter's standard library lies (`/usr/lib/python3.11/`, a free-threaded
# build's `lib/python3.13t/`, PyPy's `lib/pypy3.10/`), by the name rule above: no user's
# code, and no data of a program's (capture's data files, the stacks' user frames).
INTERPRETER_LIB = r"/lib(?:64)?/(?:python|pypy)\d+(?:\.\d+)*t?/"
# And an installed distribution's (site-packages, Debian's dist-packages): a library's code.
# One group, so that a pattern written around it (`"^.*" + LIBRARY_CODE`) keeps its meaning.
LIBRARY_CODE = r"(?:" + INTERPRETER_LIB + r"|/(?:site|dist)-packages/)"
# It compiled, once for every module that searches a path for it alone.
LIBRARY_CODE_RE = Lazy(LIBRARY_CODE)
# A Windows drive (`C:`): the one spelling of it, in a ticket's prompt, a program's path,
# a path the command reader wrote with slashes (`C:/Users/me/...`) and a stack's file.
DRIVE = r"[A-Za-z]:"
# An absolute path: POSIX's, a Windows drive's as the command reader writes it (slashes),
# or one in the sender's home (`~/proj/train.py`, which a reader's shell makes its own).
ABSOLUTE_PATH = Lazy(rf"^(?:/|~/|{DRIVE}/)")
# Short options whose value is the rest of the word or the next one (`-W ignore`, `-Xdev`).
_VALUED = frozenset("WX")
# Long options whose value is the next word.
_VALUED_LONG = frozenset({"--check-hash-based-pycs"})
# Options after which the interpreter runs no program, which only ask it about itself (a
# ticket's `$ build/tool -h` too: capture/ticket.py `_shows_machine`).
NO_PROGRAM = frozenset({"-V", "--version", "-VV", "-h", "--help", "-?"})

# What the interpreter runs: code given as a word, a module, a script file, its standard
# input (`python -`, no program word: a heredoc, a pipe, an interactive session), nothing.
ProgramKind = Literal["code", "module", "script", "stdin", "nothing"]


@frozen
class PythonProgram:
    """What one interpreter's arguments run: `kind`, its `target` (the code, the module, the
    script; None for standard input, nothing, or a flag whose value is missing), and
    `end`, the index of the arguments where the program's own begin."""

    kind: ProgramKind
    target: str | None
    end: int


def is_python(program: str) -> bool:
    """Whether a command's program word names a Python interpreter (`/usr/bin/python3.12`)."""
    return _PYTHON_NAME.fullmatch(program.replace("\\", "/").rsplit("/", 1)[-1]) is not None


def is_interpreter_file(name: str) -> bool:
    """Whether a file, by its name or path, is an interpreter's executable (`python3.11d`)
    or its shared library (`libpython3.13t.so.1.0`, `libpypy3.10-c.so`)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    library = _PYTHON_LIBRARY.fullmatch(base)
    return is_python(library["name"] if library else base)


def python_program(args: Sequence[str]) -> PythonProgram:
    """What `python ARGS` runs, `args` being the words after the interpreter's own."""
    index = 0
    while index < len(args):
        word = args[index]
        following = args[index + 1] if index + 1 < len(args) else None
        if word in NO_PROGRAM:
            return PythonProgram("nothing", None, len(args))
        if word == "-":
            return PythonProgram("stdin", None, index + 1)
        if word == "--":  # the end of its options: the script follows
            if following is None:
                return PythonProgram("stdin", None, index + 1)
            return PythonProgram("script", following, index + 2)
        if not word.startswith("-"):
            return PythonProgram("script", word, index + 1)
        if word.startswith("--"):
            index += 2 if word in _VALUED_LONG else 1
            continue
        for at, flag in enumerate(word[1:], start=2):  # `-u`, `-uc CODE`, `-W ignore`
            rest = word[at:]
            if flag in "cm":
                kind: ProgramKind = "code" if flag == "c" else "module"
                end = index + 1 if rest else min(index + 2, len(args))
                return PythonProgram(kind, rest or following, end)
            if flag in _VALUED:
                index += 0 if rest else 1  # its value: the rest of the word, or the next
                break
        index += 1
    return PythonProgram("stdin", None, len(args))


__all__ = [
    "ABSOLUTE_PATH",
    "DRIVE",
    "INTERPRETER_LIB",
    "LIBRARY_CODE",
    "LIBRARY_CODE_RE",
    "NO_PROGRAM",
    "ProgramKind",
    "PythonProgram",
    "is_interpreter_file",
    "is_python",
    "python_program",
]
