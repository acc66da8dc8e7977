"""Running gdb: `gdb -batch` on a core, and one gdb attached in turn to a hung tree's processes.

One gdb rather than one per process at a hang: the processes of an attempt share
their libraries, and gdb shares a library's symbols between the processes it
attaches to, which is most of its cost (libtorch_cpu alone takes about 4 s of CPU
to read; a second torch process attached in the same gdb costs about 0.1 s). Its
output is read as it comes, so at the deadline every process finished so far keeps
its stacks. gdb never goes to the network (no debuginfod) and reads no gdbinit.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.pythonargs import is_interpreter_file
from reprospec.native.backtrace import (
    CURRENT,
    LWP,
    demangled,
    gdb_error,
    parse_backtrace,
    proc_maps,
    python_text,
)
from reprospec.native.coreinfo import CoreInfo
from reprospec.native.readers import (
    CORE_GDB_TIMEOUT_S,
    GDB_INSTALL_HINT,
    HANG_DEADLINE_S,
    gdb_path,
    unavailable_reason,
)
from reprospec.native.stacks import NativeStacks, ProcessStacks

_MARK = "@@reprospec:"
# What is kept of gdb's output (head + a quarter of it as tail), and the frames it prints
# of each thread: enough for every real crash, bounded for a runaway recursion.
GDB_OUTPUT_BYTES = 8 << 20
_GDB_SETTINGS = (
    "set backtrace limit 2000",
    "set width 0",
    "set height 0",
    "set print frame-arguments presence",
    "set print frame-info location-and-address",
    "set print entry-values no",
)


def _gdb_base(gdb: str) -> list[str]:
    # -nx: no user or system gdbinit; no debuginfod: gdb must never go to the network.
    # No demangling: gdb demangles every symbol of every library it loads (about 3 s of
    # CPU for libtorch_cpu alone); c++filt demangles the few frames printed (_demangle).
    return [
        *(gdb, "-batch", "-nx"),
        *("-iex", "set debuginfod enabled off", "-iex", "set confirm off"),
        *("-iex", "set demangle-style none"),
    ]


def _echo(mark: str) -> list[str]:
    return ["-ex", f"echo \\n{_MARK}{mark}@@\\n"]


@frozen
class _GdbRun:
    output: str
    finished: bool
    seconds: float


def _run_gdb(argv: Sequence[str], timeout_s: float) -> _GdbRun:
    """Run gdb (stderr into stdout), killing it at the timeout; what it printed is kept.

    Head + tail and at most GDB_OUTPUT_BYTES: a crash a million frames deep (a runaway
    recursion) makes `thread apply all bt` print a million lines.
    """
    begin = time.monotonic()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    env.pop("PYTHONPATH", None)  # gdb's embedded Python must not see the engine's modules
    done = capped.run(
        argv, limit=GDB_OUTPUT_BYTES, timeout_s=max(0.05, timeout_s), env=env, merge_stderr=True
    )
    return _GdbRun(
        done.stdout.decode("utf-8", "replace"), not done.timed_out, time.monotonic() - begin
    )


def _sections(output: str) -> dict[str, str]:
    """gdb's output split at our `echo` marks: {mark: text after it}."""
    parts: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in output.splitlines():
        if line.startswith(_MARK) and line.endswith("@@"):
            if current is not None:
                parts[current] = "\n".join(lines)
            current, lines = line[len(_MARK) : -2], []
        elif current is not None:
            lines.append(line)
    if current is not None:
        parts[current] = "\n".join(lines)
    return parts


def core_stacks(info: CoreInfo, timeout_s: float = CORE_GDB_TIMEOUT_S) -> ProcessStacks:
    """`gdb -batch` on one core: every thread's backtrace, which thread crashed, and `py-bt`."""
    gdb = gdb_path()
    if gdb is None:
        return ProcessStacks(info.pid or 0, "core", info.command, info.signal,
                             error=f"gdb not found ({GDB_INSTALL_HINT})")  # fmt: skip
    run = _run_gdb(core_gdb_argv(info, str(info.path), gdb=gdb), timeout_s)
    return core_gdb_stacks(info, run.output, finished=run.finished, timeout_s=timeout_s)


def core_gdb_argv(
    info: CoreInfo, core: str, *, gdb: str = "gdb", exists: Callable[[str], bool] = os.path.isfile
) -> list[str]:
    """The gdb command line that reads the core at `core` (the path where gdb runs).

    `exists` says whether a path exists where gdb runs (a container's files cannot be
    checked from here: the docker runner passes one that says yes).
    """
    argv = _gdb_base(gdb)
    for _start, _end, name in info.files:
        # CPython's gdb extension (py-bt) sits next to the interpreter: python3.11-gdb.py,
        # or its library's: libpython3.13t.so.1.0-gdb.py (pythonargs' one name rule).
        helper = f"{name}-gdb.py"
        if is_interpreter_file(name) and exists(helper):
            argv += ["-iex", f"add-auto-load-safe-path {helper}"]
    for setting in _GDB_SETTINGS:
        argv += ["-ex", setting]
    argv += [*_echo("thread"), "-ex", "thread"]
    argv += [*_echo("bt"), "-ex", "thread apply all bt"]
    argv += [*_echo("py-bt"), "-ex", "thread apply all py-bt", *_echo("end")]
    if info.executable and exists(info.executable):
        argv.append(info.executable)
    return [*argv, "-c", core]


def core_gdb_stacks(
    info: CoreInfo, output: str, *, finished: bool, timeout_s: float
) -> ProcessStacks:
    """The stacks in what gdb printed for `core_gdb_argv` (stderr included); `finished`
    False when it was stopped at `timeout_s`."""
    parts = _sections(output)
    current = CURRENT.search(parts.get("thread", "")) or CURRENT.search(output)
    crashed = LWP.search(current["what"]) if current else None
    threads = demangled(parse_backtrace(parts.get("bt", ""), info.files))
    error = None
    if not finished:
        error = f"gdb did not finish within {timeout_s:g}s"
    elif not threads:
        error = gdb_error(output) or "gdb printed no stack"
    return ProcessStacks(
        pid=info.pid or 0,
        source="core",
        command=info.command,
        signal=info.signal,
        crashed_lwp=int(crashed.group(1)) if crashed else info.lwp,
        threads=threads,
        python=python_text(parts.get("py-bt", "")),
        error=error,
    )


def attach_stacks(pids: Mapping[int, str], budget_s: float = HANG_DEADLINE_S) -> NativeStacks:
    """Native stacks of live processes `{pid: command}`: one gdb attaches to each, bounded."""
    reason = unavailable_reason(crash=False)
    if reason is not None:
        return NativeStacks(unavailable=reason)
    gdb = gdb_path()
    if gdb is None:
        return NativeStacks(
            unavailable=f"native stacks unavailable: gdb not found ({GDB_INSTALL_HINT})"
        )
    maps = {pid: proc_maps(pid) for pid in pids}  # read before gdb stops them
    run = _run_gdb(attach_gdb_argv(list(pids), gdb=gdb), budget_s)
    return attach_gdb_stacks(pids, maps, run.output, finished=run.finished, budget_s=budget_s)


def attach_gdb_argv(pids: Sequence[int], *, gdb: str = "gdb") -> list[str]:
    """The command line of one gdb that attaches to each of `pids` in turn (the order given)."""
    # Not --readnever, though it took a third of the time: with it gdb reads no unwind
    # tables either (.eh_frame included: "backtraces may become incomplete or inaccurate",
    # its manual says), and below a thread's first frames it guessed, naming a mutex's
    # address in its library, or libpython's _PyRuntime, as the caller of a lock wait.
    # eu-stack, where installed, reads a hang from .eh_frame in a fraction of either.
    argv = _gdb_base(gdb)
    for setting in _GDB_SETTINGS:
        argv += ["-ex", setting]
    for number, pid in enumerate(pids, start=1):
        if number > 1:
            argv += ["-ex", "add-inferior", "-ex", f"inferior {number}"]
        argv += [*_echo(f"pid:{pid}"), "-ex", f"attach {pid}", "-ex", f"thread apply {number}.* bt"]
    return [*argv, *_echo("end")]


def attach_gdb_script(gdb: str = "gdb") -> str:
    """A sh fragment that execs the gdb attach_gdb_argv(`$pids`) is, its stderr merged into
    its stdout; `$pids`: the pids, in order, space-separated; nothing where there are none.
    The docker runner lists a hung container's processes and attaches to them in one
    `docker exec` (attach.py), where two execs cost a round trip through the engine more."""
    head = [*_gdb_base(gdb), *(word for setting in _GDB_SETTINGS for word in ("-ex", setting))]
    return (
        "case $pids in *[0-9]*) ;; *) exit 0 ;; esac\n"
        "set --; n=0\n"
        "for pid in $pids; do\n"
        "  n=$((n + 1))\n"
        '  if [ "$n" -gt 1 ]; then set -- "$@" -ex add-inferior -ex "inferior $n"; fi\n'
        f'  set -- "$@" -ex "echo \\n{_MARK}pid:$pid@@\\n" -ex "attach $pid"'
        ' -ex "thread apply $n.* bt"\n'
        "done\n"
        f'exec {shlex.join(head)} "$@" {shlex.join(_echo("end"))} 2>&1\n'
    )


def attach_gdb_stacks(
    pids: Mapping[int, str],
    maps: Mapping[int, Sequence[tuple[int, int, str]]],
    output: str,
    *,
    finished: bool,
    budget_s: float,
) -> NativeStacks:
    """The stacks in what gdb printed for `attach_gdb_argv(pids)`; `finished` False when it
    was stopped at `budget_s`. `maps` (pid -> parse_maps) name the libraries of addresses."""
    parts = _sections(output)
    order = list(pids)
    reached = [pid for pid in order if f"pid:{pid}" in parts]
    # At the deadline only the last process reached can be cut short; the others are whole.
    cut = reached[-1] if reached and not finished and "end" not in parts else None
    processes = []
    for pid in order:
        text = parts.get(f"pid:{pid}")
        threads = demangled(parse_backtrace(text or "", maps.get(pid, ())))
        error = None
        if text is None:
            error = f"gdb did not reach this process within {budget_s:g}s"
        elif not threads:
            error = gdb_error(text) or (
                f"gdb did not finish within {budget_s:g}s" if pid == cut else "gdb printed no stack"
            )
        elif pid == cut:
            error = f"gdb was stopped after {budget_s:g}s: these stacks may be incomplete"
        processes.append(
            ProcessStacks(pid=pid, source="attach", command=pids[pid], threads=threads, error=error)
        )
    notes: tuple[str, ...] = ()
    if not finished:
        notes = (f"gdb stopped after {budget_s:g}s: the hang report does not wait longer",)
    return NativeStacks(processes=tuple(processes), notes=notes)
