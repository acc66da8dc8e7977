"""gdb's text read back: threads and frames of `thread apply all bt`, `py-bt`, gdb's errors.

gdb runs with demangling off (it would demangle every symbol of every library it
loads); the few frames printed are demangled here with `c++filt`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from reprospec.native.stacks import Frame, Thread

_THREAD = re.compile(r"^Thread (?P<id>\d+(?:\.\d+)?) \((?P<what>.*)\):$")
LWP = re.compile(r"\bLWP (\d+)\)?")
_THREAD_NAME = re.compile(r'\) "(?P<name>[^"]*)"$')
_FRAME = re.compile(r"^#(?P<n>\d+)\s+(?:(?P<addr>0x[0-9a-fA-F]+) in )?(?P<rest>.*)$")
_FROM = re.compile(r" from (?P<lib>\S+)$")
_AT = re.compile(r" at (?P<file>\S+):(?P<line>\d+)$")
CURRENT = re.compile(r"^\[Current thread is (?P<id>\d+(?:\.\d+)?) \((?P<what>.*)\)\]$", re.M)


def _strip_args(text: str) -> str:
    """`foo (a=1, b=...)` -> `foo`: drop gdb's argument list (after a space, balanced)."""
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                return text[: index - 1] if index > 0 and text[index - 1] == " " else text
    return text


def demangle(names: Iterable[str]) -> dict[str, str]:
    """C++ symbol names demangled by `c++filt` (binutils); those it cannot read are left out."""
    mangled = sorted({name for name in names if name.startswith("_Z")})
    exe = shutil.which("c++filt")
    if not mangled or exe is None:
        return {}
    try:
        done = subprocess.run(
            [exe],
            input="\n".join(mangled) + "\n",
            capture_output=True,
            text=True,
            # What it demangles came from a binary's symbols, any bytes: replaced both ways.
            errors="replace",
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(mangled):
        return {}
    return {name: plain for name, plain in zip(mangled, lines, strict=True) if plain != name}


def demangled(threads: tuple[Thread, ...]) -> tuple[Thread, ...]:
    names = demangle(f.function for t in threads for f in t.frames if f.function)
    if not names:
        return threads
    return tuple(
        replace(
            thread,
            frames=tuple(
                replace(frame, function=names.get(frame.function, frame.function))
                if frame.function
                else frame
                for frame in thread.frames
            ),
        )
        for thread in threads
    )


def path_at(address: int | None, maps: Sequence[tuple[int, int, str]]) -> str | None:
    """The file mapped at `address` in `maps` (start, end, path), or None."""
    if address is None:
        return None
    for start, end, path in maps:
        if start <= address < end:
            return path
    return None


def library_at(address: int | None, maps: Sequence[tuple[int, int, str]]) -> str | None:
    """The name of the file mapped at `address`: how a frame's library is named (gdb's
    frames here, eu-stack's in eustack.py)."""
    path = path_at(address, maps)
    return PurePosixPath(path).name if path else None


def parse_backtrace(text: str, maps: Sequence[tuple[int, int, str]] = ()) -> tuple[Thread, ...]:
    """Threads and frames from gdb's `thread apply all bt`; `maps` name each address's library."""
    threads: list[Thread] = []
    header: re.Match[str] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if header is not None:
            what = header["what"]
            lwp = LWP.search(what)
            name = _THREAD_NAME.search(what)
            threads.append(
                Thread(
                    # gdb numbers a thread `2.1` once it has held a second inferior (the
                    # process it read before, in one session): the thread's number is `1`.
                    id=header["id"].rpartition(".")[2],
                    lwp=int(lwp.group(1)) if lwp else None,
                    name=name["name"] if name else None,
                    frames=tuple(frames),
                )
            )

    for line in text.splitlines():
        line = line.rstrip()
        started = _THREAD.match(line)
        if started is not None:
            close()
            header, frames = started, []
            continue
        match = _FRAME.match(line)
        if match is None or header is None:
            continue
        number = int(match["n"])
        address = int(match["addr"], 16) if match["addr"] else None
        rest = match["rest"]
        if rest.startswith("<signal handler called>"):
            frames.append(Frame(number, None, None, address, signal_handler=True))
            continue
        library: str | None = None
        found = _FROM.search(rest)
        if found is not None:
            library = PurePosixPath(found["lib"]).name
            rest = rest[: found.start()]
        source_file: str | None = None
        source_line: int | None = None
        found = _AT.search(rest)
        if found is not None:
            source_file, source_line = found["file"], int(found["line"])
            rest = rest[: found.start()]
        function = _strip_args(rest.strip())
        frames.append(
            Frame(
                number=number,
                function=None if function in ("??", "") else function,
                library=library_at(address, maps) or library,
                address=address,
                file=source_file,
                line=source_line,
            )
        )
    close()
    return tuple(threads)


_PY_NOISE = re.compile(r"^(warning: |\[New |\[Thread debugging|Using host libthread_db)")


def python_text(text: str) -> str:
    if "Undefined command" in text or "Traceback (most recent call first)" not in text:
        return ""
    lines = [line.rstrip() for line in text.splitlines() if not _PY_NOISE.match(line)]
    return "\n".join(lines).strip()


def gdb_error(text: str) -> str | None:
    """The reason gdb gives for producing nothing (attach refused, core unreadable)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("ptrace:", "Could not attach", "Can't attach", "Cannot access")):
            return line
        if "is not a core dump" in line or "not in executable format" in line:
            return line
    return None


def proc_maps(pid: int) -> tuple[tuple[int, int, str], ...]:
    try:
        text = Path(f"/proc/{pid}/maps").read_text(errors="replace")  # a path need not be UTF-8
    except OSError:
        return ()
    return parse_maps(text)


def parse_maps(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, path) of every file-backed line of a `/proc/PID/maps` text."""
    maps = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            start, end = fields[0].split("-")
            maps.append((int(start, 16), int(end, 16), fields[5]))
    return tuple(maps)
