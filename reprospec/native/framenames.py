"""eu-addr2line's answers kept per library build, so a crash hunt names each frame once.

Naming a core's frames outside the big libraries (eustack._core_run) costs eu-addr2line
0.1-0.15 s of CPU per core, nearly all of it libdwfl opening DWARF: 55-60 ms for the two
frames every main thread ends in (`__libc_start_call_main`, `__libc_start_main_impl`: libc's
separate debug info), 20 ms for libpython's. A flaky crash hunt's cores share nearly every
such frame (the interpreter's loop, libc's start, ctypes and libffi), so the answers are kept
in the user's cache, one file per library build (`<build id>.names`), by the frame's offset
in its module: the same build and offset have the same name, inlined frames and source lines.
Only eu-addr2line is then spared; eu-stack still unwinds every core.

A library whose separate debug info (`/usr/lib/debug/.build-id/...`) appears or goes away
answers differently (source lines, libc's internal names): its key says which it had.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.native.symindex import cache_folder, separate_debug, write_whole

# A frame's names: innermost first (an inlined function, then what it was inlined into),
# each a name and `file:line:column` (None where eu-addr2line had none).
Entries = list[tuple[str | None, str | None]]
_MAGIC = "reprospec-frame-names-1"


def folder() -> Path:
    """Where the answers are kept: beside the symbol indexes (a benchmark moves it)."""
    return cache_folder()


def _file(build_id: str) -> Path:
    debug = "dbg" if separate_debug(build_id).exists() else "nodbg"
    return folder() / f"{build_id}.{debug}.names"


def load(build_ids: Sequence[str]) -> dict[str, dict[int, Entries]]:
    """The kept answers of each build in `build_ids`: {build id: {offset: entries}}."""
    kept: dict[str, dict[int, Entries]] = {}
    for build_id in build_ids:
        answers: dict[int, Entries] = {}
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data = json.loads(_file(build_id).read_text("utf-8"))
            if data.get("magic") == _MAGIC:
                for offset, entries in data["frames"].items():
                    answers[int(offset)] = [(name, source) for name, source in entries]
        kept[build_id] = answers
    return kept


def store(found: Mapping[str, Mapping[int, Entries]]) -> None:
    """Keep the new answers `found` ({build id: {offset: entries}}) beside the kept ones."""
    for build_id, answers in found.items():
        if not answers:
            continue
        merged = {**load([build_id])[build_id], **answers}
        path = _file(build_id)
        text = json.dumps(
            {"magic": _MAGIC, "frames": {str(k): v for k, v in sorted(merged.items())}}
        )
        write_whole(path, text.encode("utf-8"))
