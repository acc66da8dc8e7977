"""Native stacks as typed frozen values: `NativeStacks` -> `ProcessStacks` -> `Thread` -> `Frame`.

What gdb found, kept as data (the attempt folder's `native-stacks.json`); `render.py`
words it, writes it and reads it back, `gdb.py` and `capture.py` take it. Imported at a
crash or a hang to read, or where an attempt folder holds stacks: not by an attempt that
passed (these classes are a few milliseconds of a short run's start).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import (
    JsonObject,
    JsonValue,
    as_text,
    as_texts,
    checked_array,
    checked_integer,
    checked_object,
)
from reprospec.native.symbols import short_symbol

Source = Literal["core", "attach"]


@frozen
class Frame:
    """One frame of a native backtrace as gdb printed it."""

    number: int
    function: str | None  # None for gdb's `??`
    library: str | None  # basename of the shared object or executable (`libc.so.6`)
    address: int | None = None
    file: str | None = None
    line: int | None = None
    signal_handler: bool = False  # gdb's `<signal handler called>`

    @property
    def symbol(self) -> str:
        """The function's short name: no C++ parameters, no libc `__GI_`/CPU-variant decorations."""
        if self.signal_handler:
            return "<signal handler called>"
        if self.function is None:
            return "??"
        return short_symbol(self.function, self.library)

    def describe(self) -> str:
        """`strlen (libc.so.6)`."""
        if self.signal_handler:
            return self.symbol
        return f"{self.symbol} ({self.library})" if self.library else self.symbol


@frozen
class Thread:
    """One thread's frames, innermost first. `id` is gdb's thread id (`2`, or `3.1`)."""

    id: str
    lwp: int | None
    name: str | None
    frames: tuple[Frame, ...]


@frozen
class ProcessStacks:
    """The native stacks of one process, from its core (crash) or a live attach (hang)."""

    pid: int
    source: Source
    command: str = ""
    signal: str | None = None  # core: the signal that killed the process
    crashed_lwp: int | None = None  # core: the thread that took the signal
    threads: tuple[Thread, ...] = ()
    python: str = ""  # `py-bt` of every thread, where the Python gdb extensions loaded
    error: str | None = None  # why there are no (or only some) stacks
    core: str | None = None  # the kept core's path (keep_cores)
    # The attempt's own process, or the program its `/bin/sh -c` root ran and reported the
    # death of (cores.main_core): not a worker or other descendant.
    root: bool = False

    @property
    def crashing_thread(self) -> Thread | None:
        """The thread that took the fatal signal (cores only)."""
        for thread in self.threads:
            if self.crashed_lwp is not None and thread.lwp == self.crashed_lwp:
                return thread
        return None


@frozen
class NativeStacks:
    """All native stacks of one attempt; `unavailable` says why there are none."""

    processes: tuple[ProcessStacks, ...] = ()
    unavailable: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        """The JSON of native-stacks.json (`from_dict` reads it back equal)."""
        return {
            "version": 1,
            "processes": [_process_json(p) for p in self.processes],
            "unavailable": self.unavailable,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> NativeStacks:
        """What `to_dict` wrote; KeyError or TypeError when it is not that."""
        return cls(
            processes=tuple(_process(p) for p in checked_array(data.get("processes"))),
            unavailable=as_text(data.get("unavailable")),
            notes=as_texts(data.get("notes")),
        )


def _frame_json(frame: Frame) -> JsonObject:
    return {
        "number": frame.number,
        "function": frame.function,
        "library": frame.library,
        "address": frame.address,
        "file": frame.file,
        "line": frame.line,
        "signal_handler": frame.signal_handler,
    }


def _process_json(process: ProcessStacks) -> JsonObject:
    threads: list[JsonValue] = [
        {
            "id": t.id,
            "lwp": t.lwp,
            "name": t.name,
            "frames": [_frame_json(f) for f in t.frames],
        }
        for t in process.threads
    ]
    return {
        "pid": process.pid,
        "source": process.source,
        "command": process.command,
        "signal": process.signal,
        "crashed_lwp": process.crashed_lwp,
        "threads": threads,
        "python": process.python,
        "error": process.error,
        "core": process.core,
        "root": process.root,
    }


def _frame(data: JsonValue) -> Frame:
    fields = checked_object(data)
    return Frame(
        number=checked_integer(fields["number"]) or 0,
        function=as_text(fields.get("function")),
        library=as_text(fields.get("library")),
        address=checked_integer(fields.get("address")),
        file=as_text(fields.get("file")),
        line=checked_integer(fields.get("line")),
        signal_handler=fields.get("signal_handler") is True,
    )


def _thread(data: JsonValue) -> Thread:
    fields = checked_object(data)
    return Thread(
        id=str(fields["id"]),
        lwp=checked_integer(fields.get("lwp")),
        name=as_text(fields.get("name")),
        frames=tuple(_frame(f) for f in checked_array(fields.get("frames"))),
    )


def _process(data: JsonValue) -> ProcessStacks:
    fields = checked_object(data)
    source: Source
    if fields.get("source") == "core":
        source = "core"
    elif fields.get("source") == "attach":
        source = "attach"
    else:
        raise TypeError(f"unknown source {fields.get('source')!r}")
    return ProcessStacks(
        pid=checked_integer(fields["pid"]) or 0,
        source=source,
        command=str(fields.get("command") or ""),
        signal=as_text(fields.get("signal")),
        crashed_lwp=checked_integer(fields.get("crashed_lwp")),
        threads=tuple(_thread(t) for t in checked_array(fields.get("threads"))),
        python=str(fields.get("python") or ""),
        error=as_text(fields.get("error")),
        core=as_text(fields.get("core")),
        root=fields.get("root") is True,
    )
