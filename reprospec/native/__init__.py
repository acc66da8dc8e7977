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

from typing import TYPE_CHECKING

from reprospec.core.lazynames import lazy_getattr

if TYPE_CHECKING:
    from reprospec.native.backtrace import demangle, parse_backtrace, parse_maps
    from reprospec.native.capture import (
        GDB_FALLBACK,
        MAX_CORES,
        Capture,
        collect_crash_stacks,
        core_stacks_of,
        live_stacks,
        main_core,
        merge,
        say_once,
    )
    from reprospec.native.coreinfo import CoreInfo, read_core
    from reprospec.native.cores import (
        CORE_SIGNALS,
        REPLACED,
        CorePattern,
        allow_cores,
        core_pattern,
        dumped_signal,
        find_cores,
        looked_in,
        move_core,
        move_cores,
        moved_to,
        walked_to,
    )
    from reprospec.native.corewatch import WATCH
    from reprospec.native.eustack import (
        attach_eustack,
        core_eustack_argv,
        eustack_core_stacks,
        parse_eustack,
    )
    from reprospec.native.gdb import (
        attach_gdb_argv,
        attach_gdb_script,
        attach_gdb_stacks,
        attach_stacks,
        core_gdb_argv,
        core_gdb_stacks,
        core_stacks,
    )
    from reprospec.native.pyspy import pyspy_path, python_text_of
    from reprospec.native.readers import (
        CORE_GDB_TIMEOUT_S,
        EUSTACK_INSTALL_HINT,
        GDB_INSTALL_HINT,
        HANG_DEADLINE_S,
        can_read,
        eustack_path,
        gdb_path,
        load_stretch,
        unavailable_reason,
    )
    from reprospec.native.render import (
        JSON_NAME,
        TEXT_NAME,
        TOP_FRAMES,
        agrees,
        attempt_agrees,
        crashed_process,
        fault_frames,
        full_text,
        hung_below,
        hung_descendant,
        hung_frame,
        hung_process,
        read,
        read_none,
        render_markdown,
        runs_own_code,
        signature_frame,
        thread_tops,
        top_frames,
        unnamed_agrees,
        unnamed_frame,
        waits_on_a_descriptor,
        with_native_frame,
        write,
        write_text,
    )
    from reprospec.native.stacks import (
        Frame,
        NativeStacks,
        ProcessStacks,
        Thread,
        with_parents,
    )
    from reprospec.native.symbols import short_library, short_symbol

# Name -> the submodule that defines it, imported at the first use of a name: a run whose
# attempts neither crash nor hang never reads a core or attaches a debugger, and importing
# every reader (eu-stack's and gdb's parsers, the core finder, their regular expressions)
# was a tenth of a one-attempt run's CPU (issue 30, item 4).
_WHERE = {
    "CORE_GDB_TIMEOUT_S": "readers",
    "CORE_SIGNALS": "cores",
    "Capture": "capture",
    "CoreInfo": "coreinfo",
    "CorePattern": "cores",
    "EUSTACK_INSTALL_HINT": "readers",
    "Frame": "stacks",
    "GDB_FALLBACK": "capture",
    "GDB_INSTALL_HINT": "readers",
    "HANG_DEADLINE_S": "readers",
    "load_stretch": "readers",
    "JSON_NAME": "render",
    "MAX_CORES": "capture",
    "NativeStacks": "stacks",
    "ProcessStacks": "stacks",
    "REPLACED": "cores",
    "TEXT_NAME": "render",
    "TOP_FRAMES": "render",
    "Thread": "stacks",
    "WATCH": "corewatch",
    "agrees": "render",
    "attempt_agrees": "render",
    "allow_cores": "cores",
    "attach_eustack": "eustack",
    "attach_gdb_argv": "gdb",
    "attach_gdb_script": "gdb",
    "attach_gdb_stacks": "gdb",
    "attach_stacks": "gdb",
    "can_read": "readers",
    "collect_crash_stacks": "capture",
    "core_eustack_argv": "eustack",
    "core_gdb_argv": "gdb",
    "core_gdb_stacks": "gdb",
    "core_pattern": "cores",
    "core_stacks": "gdb",
    "core_stacks_of": "capture",
    "crashed_process": "render",
    "demangle": "backtrace",
    "dumped_signal": "cores",
    "eustack_core_stacks": "eustack",
    "eustack_path": "readers",
    "fault_frames": "render",
    "find_cores": "cores",
    "moved_to": "cores",
    "looked_in": "cores",
    "main_core": "capture",
    "walked_to": "cores",
    "full_text": "render",
    "gdb_path": "readers",
    "hung_below": "render",
    "hung_descendant": "render",
    "hung_frame": "render",
    "hung_process": "render",
    "live_stacks": "capture",
    "merge": "capture",
    "move_core": "cores",
    "move_cores": "cores",
    "parse_backtrace": "backtrace",
    "parse_eustack": "eustack",
    "parse_maps": "backtrace",
    "pyspy_path": "pyspy",
    "python_text_of": "pyspy",
    "read": "render",
    "read_core": "coreinfo",
    "read_none": "render",
    "render_markdown": "render",
    "runs_own_code": "render",
    "say_once": "capture",
    "short_library": "symbols",
    "short_symbol": "symbols",
    "signature_frame": "render",
    "thread_tops": "render",
    "top_frames": "render",
    "unnamed_agrees": "render",
    "unnamed_frame": "render",
    "unavailable_reason": "readers",
    "waits_on_a_descriptor": "render",
    "with_native_frame": "render",
    "with_parents": "stacks",
    "write": "render",
    "write_text": "render",
}

_SUBMODULES = frozenset(_WHERE.values()) | {"cudagdb"}


__getattr__ = lazy_getattr(__name__, _WHERE, _SUBMODULES, globals())


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
    "attach_gdb_script",
    "attach_gdb_stacks",
    "attach_stacks",
    "attempt_agrees",
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
    "hung_below",
    "hung_descendant",
    "hung_frame",
    "hung_process",
    "live_stacks",
    "load_stretch",
    "looked_in",
    "main_core",
    "merge",
    "move_core",
    "move_cores",
    "moved_to",
    "parse_backtrace",
    "parse_eustack",
    "parse_maps",
    "pyspy_path",
    "python_text_of",
    "read",
    "read_core",
    "read_none",
    "render_markdown",
    "runs_own_code",
    "say_once",
    "short_library",
    "short_symbol",
    "signature_frame",
    "thread_tops",
    "top_frames",
    "unavailable_reason",
    "unnamed_agrees",
    "unnamed_frame",
    "waits_on_a_descriptor",
    "walked_to",
    "with_native_frame",
    "with_parents",
    "write",
    "write_text",
]
