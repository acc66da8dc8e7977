"""py-spy on a core: the Python stacks of every thread of a crashed process, beside eu-stack's.

gdb's `py-bt` needs CPython's gdb extension next to the interpreter and DWARF for it, and
gdb's seconds; `py-spy dump --core` reads the interpreter's own structures in a few
hundredths of a second for a plain process. It reads the core whole into memory (0.2 s
of system time for a 150 MB torch core), so a core over PY_SPY_CORE_MAX_BYTES is not
given to it: its Python stack is faulthandler's, on the attempt's stderr. The text is
written as `py-bt` writes it (`Thread N (Thread 0x... (LWP L)):`, `Traceback (most
recent call first):`, `File "...", line N, in f`), which outcome.classify reads, the
crashing thread first.
"""

from __future__ import annotations

import functools
import json
import os
import shutil

from reprospec.core import capped
from reprospec.core.jsontypes import JsonValue
from reprospec.native.coreinfo import CoreInfo

PY_SPY_CORE_MAX_BYTES = 1 << 30
PY_SPY_OUTPUT_BYTES = 4 << 20


def pyspy_path() -> str | None:
    """The py-spy executable (the engine's own environment first, then PATH), or None."""
    return _which(os.environ.get("PATH", os.defpath))


@functools.lru_cache(maxsize=16)
def _which(path: str) -> str | None:
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")  # noqa: PTH118, PTH120
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy", path=path)


def core_python(info: CoreInfo, timeout_s: float) -> str:
    """The Python stacks in the core at `info.path` as `py-bt` text; '' where py-spy is not
    installed, the core is too large for it, or it is not a Python process's."""
    exe = pyspy_path()
    try:
        size = info.path.stat().st_size
    except OSError:
        return ""
    if exe is None or size > PY_SPY_CORE_MAX_BYTES:
        return ""
    try:
        done = capped.run(
            [exe, "dump", "--core", str(info.path), "--json"],
            limit=PY_SPY_OUTPUT_BYTES,
            tail=0,
            timeout_s=timeout_s,
        )
    except OSError:
        return ""
    if done.timed_out or done.returncode != 0:
        return ""
    return python_text_of(done.stdout.decode("utf-8", "replace"), info.lwp)


def python_text_of(text: str, crashed: int | None) -> str:
    """py-spy's `--json` dump as `py-bt` text, the thread `crashed` (an LWP) first."""
    try:
        threads = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(threads, list):
        return ""
    blocks = [block for item in threads if (block := _thread_block(item))]
    blocks.sort(key=lambda block: block[0] != crashed)
    return "\n\n".join(
        f"Thread {number} {text}" for number, (_, text) in enumerate(blocks, start=1)
    )


def _thread_block(item: JsonValue) -> tuple[int | None, str] | None:
    if not isinstance(item, dict):
        return None
    lwp = item.get("os_thread_id")
    ident = item.get("thread_id")
    frames = item.get("frames")
    if not isinstance(frames, list):
        return None
    lines = []
    for frame in frames:
        if not isinstance(frame, dict):
            continue
        name, filename, line = frame.get("name"), frame.get("filename"), frame.get("line")
        if isinstance(name, str) and isinstance(filename, str):
            where = f", line {line}" if isinstance(line, int) and line > 0 else ""
            # py-spy names a frame by its qualified name (`Items.__getitem__`); gdb's py-bt
            # and faulthandler by the code's own (`__getitem__`), which is what the
            # classifier and the reports match: the last part is that name.
            lines.append(f'  File "{filename}"{where}, in {name.rsplit(".", 1)[-1]}')
    if not lines:
        return None
    lwp_number = lwp if isinstance(lwp, int) else None
    thread = f"Thread {ident:#x}" if isinstance(ident, int) else "Thread"
    header = f"({thread} (LWP {lwp_number})):" if lwp_number is not None else f"({thread}):"
    return lwp_number, "\n".join([header, "Traceback (most recent call first):", *lines])
