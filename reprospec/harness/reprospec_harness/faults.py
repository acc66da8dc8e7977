"""The faults themselves, each one real: an invalid read, a real SIGBUS, a real deadlock."""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import importlib
import mmap
import os
import platform
import resource
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

from .values import JsonValue, to_int

# x86-64 machine code run from an executable page: real faults raised by the CPU.
_UD2 = b"\x0f\x0b"  # ud2: undefined instruction -> SIGILL
_IDIV_BY_ZERO = (
    b"\x31\xc9\xb8\x01\x00\x00\x00\x99\xf7\xf9\xc3"  # xor ecx,ecx; mov eax,1; cdq; idiv ecx; ret
)


def _say(message: str) -> None:
    sys.stderr.write(f"reprospec fault: {message}\n")
    sys.stderr.flush()


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _run_machine_code(code: bytes, fallback: signal.Signals) -> NoReturn:
    """Execute `code` on x86-64; elsewhere (or if W^X forbids it) send `fallback` and say so."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        try:
            page = mmap.mmap(
                -1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC
            )
            page.write(code)
            address = ctypes.addressof(ctypes.c_char.from_buffer(page))
            _flush()
            ctypes.CFUNCTYPE(ctypes.c_int)(address)()
        except (OSError, ValueError) as exc:
            _say(f"cannot execute machine code ({exc}); sending {fallback.name} instead")
    else:
        _say(f"no machine code for {platform.machine()}; sending {fallback.name} instead")
    _flush()
    os.kill(os.getpid(), fallback)
    raise SystemExit(128 + fallback)  # not reached: the signal's default action kills us


# Every trigger takes the fault's settings (TRIGGERS calls them alike); most need none.


def segfault(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real invalid memory access: read address 0."""
    _flush()
    ctypes.string_at(0)
    raise AssertionError("unreachable")


def abort(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """abort(3): SIGABRT, as a failed C++ assertion does."""
    _flush()
    os.abort()


def bus_error(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real SIGBUS: touch a mapped page of a file truncated under the mapping."""
    with tempfile.TemporaryFile() as handle:
        handle.truncate(mmap.PAGESIZE)
        mapping = mmap.mmap(handle.fileno(), mmap.PAGESIZE)
        handle.truncate(0)
        _flush()
        mapping[0]
    raise AssertionError("unreachable")


def illegal_instruction(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real SIGILL: execute `ud2`."""
    _run_machine_code(_UD2, signal.SIGILL)


def fpe(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real SIGFPE: integer division by zero in native code."""
    _run_machine_code(_IDIV_BY_ZERO, signal.SIGFPE)


def hang(_fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real deadlock: two threads each hold the lock the other one waits for."""
    first, second = threading.Lock(), threading.Lock()
    holding = threading.Event()

    def other_thread() -> None:
        with second:
            holding.set()
            first.acquire()

    with first:
        threading.Thread(target=other_thread, name="reprospec-deadlock", daemon=True).start()
        holding.wait()
        second.acquire()
    raise AssertionError("unreachable")


def builtin_exception(name: str) -> type[BaseException] | None:
    """The builtin exception class an undotted fault `exception` names, else None. The
    spec's validation (spec/checks/expect.py, `_is_builtin_exception`) refuses the names
    this refuses, before a run: tests/unit/harness/test_faults.py holds the two to one
    answer for every name of `builtins`, since this side cannot import the engine."""
    found = getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def exception_class(name: str) -> type[BaseException]:
    """`ValueError` or a dotted importable name like `torch.OutOfMemoryError`."""
    if "." not in name:
        found = builtin_exception(name)
    else:
        module_name, _, attribute = name.rpartition(".")
        found = getattr(importlib.import_module(module_name), attribute, None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        if "." not in name:
            # The spec was validated by the engine's builtins, not this interpreter's: an
            # ExceptionGroup (3.11) validates on a 3.11 engine and a 3.10 target has none.
            version = ".".join(str(part) for part in sys.version_info[:3])
            raise ValueError(
                f"fault exception {name!r} is not an exception class: not a builtin of "
                f"this attempt's Python {version}"
            )
        raise ValueError(f"fault exception {name!r} is not an exception class")
    return found


def raise_(fault: Mapping[str, JsonValue]) -> NoReturn:
    """Raise the named exception with the given message."""
    cls = exception_class(str(fault.get("exception") or "RuntimeError"))
    message = str(fault.get("message", "injected fault"))
    try:
        error = cls(message)
    except TypeError:  # classes with a different constructor still carry the message
        error = cls.__new__(cls)
        error.args = (message,)
    raise error


def _cap_address_space() -> None:
    """Without a memory limit, cap our own address space so OOM stays ours, not the machine's."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return
    with Path("/proc/self/status").open() as status:
        vm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    cap = vm_kb * 1024 + 512 * 2**20
    _say(f"no memory limit set; capping this process's address space at {cap // 2**20} MiB")
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def oom(fault: Mapping[str, JsonValue]) -> NoReturn:
    """A real allocation failure: allocate and touch tensors until the allocator fails."""
    import torch

    device = torch.device(str(fault.get("device") or "cpu"))
    if device.type == "cpu":
        _cap_address_space()
    hoard = []
    chunk = 64 * 2**20
    while True:
        hoard.append(torch.ones(chunk // 4, dtype=torch.float32, device=device))


def exit_(fault: Mapping[str, JsonValue]) -> NoReturn:
    """Exit with `code`: sys.exit in the main process, os._exit in a worker (no cleanup there)."""
    code = to_int(fault.get("code", 1))
    _flush()
    if fault.get("where") == "worker":
        os._exit(code)
    sys.exit(code)


TRIGGERS: dict[str, Callable[[Mapping[str, JsonValue]], NoReturn]] = {
    "segfault": segfault,
    "abort": abort,
    "bus_error": bus_error,
    "illegal_instruction": illegal_instruction,
    "fpe": fpe,
    "hang": hang,
    "raise": raise_,
    "oom": oom,
    "exit": exit_,
}
