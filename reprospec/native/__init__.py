"""Native (C/C++) stacks of an attempt: from core dumps after a crash, from gdb attached at a hang.

Crash: a process of the attempt that dies of SIGSEGV/SIGBUS/SIGABRT/... leaves a core
(`cores.py`: where, whose, what it says), which is moved into the attempt folder and read
by eu-stack (`eustack.py`, with py-spy's Python stacks: `pyspy.py`), or with `gdb -batch`
where eu-stack is missing (`gdb.py`, its text parsed by `backtrace.py`). Hang: before a
timed-out attempt is killed, every live process of the tree is read the same way.
`capture.py` is what the process layer calls for both, and chooses the reader.

Results are typed frozen values (`stacks.py`: `NativeStacks` -> `ProcessStacks` ->
`Thread` -> `Frame`), written into the attempt folder as `native-stacks.txt` (for people)
and `native-stacks.json` (read back by `read`). `render.py` gives the top frames of the
crashing thread, the full text, and the frame that goes into the failure signature, with
the short names of `symbols.py`. Engine side only: never imports torch.

This package's namespace is its API: `native.read`, `native.Capture`, ...
"""

from __future__ import annotations

from reprospec.native.backtrace import demangle, parse_backtrace, parse_maps
from reprospec.native.capture import (
    GDB_FALLBACK,
    MAX_CORES,
    Capture,
    can_read,
    collect_crash_stacks,
    core_stacks_of,
    live_stacks,
    say_once,
)
from reprospec.native.cores import (
    CORE_SIGNALS,
    REPLACED,
    CoreInfo,
    CorePattern,
    allow_cores,
    core_pattern,
    dumped_signal,
    find_cores,
    move_core,
    move_cores,
    read_core,
)
from reprospec.native.corewatch import WATCH
from reprospec.native.eustack import (
    EUSTACK_INSTALL_HINT,
    attach_eustack,
    core_eustack_argv,
    eustack_core_stacks,
    eustack_path,
    parse_eustack,
)
from reprospec.native.gdb import (
    CORE_GDB_TIMEOUT_S,
    GDB_INSTALL_HINT,
    HANG_DEADLINE_S,
    attach_gdb_argv,
    attach_gdb_stacks,
    attach_stacks,
    core_gdb_argv,
    core_gdb_stacks,
    core_stacks,
    gdb_path,
    unavailable_reason,
)
from reprospec.native.pyspy import pyspy_path, python_text_of
from reprospec.native.render import (
    TOP_FRAMES,
    agrees,
    crashed_process,
    fault_frames,
    full_text,
    read_none,
    render_markdown,
    signature_frame,
    thread_tops,
    top_frames,
    with_native_frame,
    write,
)
from reprospec.native.stacks import (
    JSON_NAME,
    TEXT_NAME,
    Frame,
    NativeStacks,
    ProcessStacks,
    Thread,
    merge,
    read,
)
from reprospec.native.symbols import short_library, short_symbol

__all__ = [
    "CORE_GDB_TIMEOUT_S",
    "CORE_SIGNALS",
    "EUSTACK_INSTALL_HINT",
    "GDB_FALLBACK",
    "GDB_INSTALL_HINT",
    "HANG_DEADLINE_S",
    "JSON_NAME",
    "MAX_CORES",
    "REPLACED",
    "TEXT_NAME",
    "TOP_FRAMES",
    "WATCH",
    "Capture",
    "CoreInfo",
    "CorePattern",
    "Frame",
    "NativeStacks",
    "ProcessStacks",
    "Thread",
    "agrees",
    "allow_cores",
    "attach_eustack",
    "attach_gdb_argv",
    "attach_gdb_stacks",
    "attach_stacks",
    "can_read",
    "collect_crash_stacks",
    "core_eustack_argv",
    "core_gdb_argv",
    "core_gdb_stacks",
    "core_pattern",
    "core_stacks",
    "core_stacks_of",
    "crashed_process",
    "demangle",
    "dumped_signal",
    "eustack_core_stacks",
    "eustack_path",
    "fault_frames",
    "find_cores",
    "full_text",
    "gdb_path",
    "live_stacks",
    "merge",
    "move_core",
    "move_cores",
    "parse_backtrace",
    "parse_eustack",
    "parse_maps",
    "pyspy_path",
    "python_text_of",
    "read",
    "read_core",
    "read_none",
    "render_markdown",
    "say_once",
    "short_library",
    "short_symbol",
    "signature_frame",
    "thread_tops",
    "top_frames",
    "unavailable_reason",
    "with_native_frame",
    "write",
]
