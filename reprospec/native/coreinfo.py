"""What an ELF core file says about the process that left it: `read_core`, `CoreInfo`.

Its own module, imported where a core is read (`cores.find_cores` found a file where cores
land): a run whose attempts leave none never builds the class (a frozen dataclass compiles
six methods as it is made; issue 30, item 4) nor loads the reader.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from reprospec.core.frozen import frozen
from reprospec.core.signals import canonical_signal
from reprospec.native.coreargv import MORE, Segment, argv_command

if TYPE_CHECKING:
    from reprospec.native.corewatch import FileId


@frozen
class CoreInfo:
    """What an ELF core file says about the process that left it."""

    path: Path
    pid: int | None  # the process's (NT_PRPSINFO's pr_pid: its thread group), as ps shows it
    signal: str | None
    executable: str | None  # the mapped file holding the entry point
    # The command line as /proc/PID/cmdline reads, from the stack's argv (coreargv.py);
    # where that does not add up, NT_PRPSINFO's first 79 bytes, a cut argument as ` ...`.
    command: str
    files: tuple[tuple[int, int, str], ...]  # (start, end, path) of every mapped file
    ppid: int | None = None  # the parent's pid (in a container: 1 for the attempt's root)
    file: FileId | None = None  # (device, inode), from find_cores: which file it was
    # The thread that took the signal (the first NT_PRSTATUS's pr_pid, an LWP): the pid where
    # the main thread crashed, another number where a thread it started did (an OpenMP
    # worker in a torch op, a decoder's pool in a DataLoader worker).
    lwp: int | None = None


_ELF_MAGIC = b"\x7fELF"
_ET_CORE = 4
# A real core's notes (every thread's registers, the mapped files) are far below this.
MAX_NOTE_BYTES = 64 << 20
_PT_NOTE = 4
_NT_PRSTATUS = 1
_NT_PRPSINFO = 3
_NT_AUXV = 6
_NT_FILE = 0x46494C45
_AT_ENTRY = 9
_AT_EXECFN = 31  # the address of the file name execve ran, at the top of the stack
_PT_LOAD = 1


def read_core(path: Path) -> CoreInfo | None:
    """Pid, signal, executable, command line and mapped files of an ELF core (64-bit LE);
    None if not one."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
            if len(head) < 64 or head[:4] != _ELF_MAGIC or head[4] != 2 or head[5] != 1:
                return None
            (e_type,) = struct.unpack_from("<H", head, 16)
            if e_type != _ET_CORE:
                return None
            phoff, phentsize, phnum = (
                struct.unpack_from("<Q", head, 32)[0],
                *struct.unpack_from("<HH", head, 54),
            )
            notes: list[tuple[int, bytes]] = []
            segments: list[Segment] = []
            for index in range(phnum):
                handle.seek(phoff + index * phentsize)
                p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack(
                    "<IIQQQQ", handle.read(40)
                )
                if p_type == _PT_NOTE:
                    handle.seek(offset)
                    # The core may be the child's own forgery: a note is read within a bound.
                    notes.extend(_notes(handle.read(min(filesz, MAX_NOTE_BYTES))))
                elif p_type == _PT_LOAD and filesz:
                    segments.append(Segment(vaddr, offset, filesz))
            return _core_info(path, handle, notes, segments)
    except (OSError, struct.error):
        return None


def _core_info(
    path: Path, handle: BinaryIO, notes: list[tuple[int, bytes]], segments: list[Segment]
) -> CoreInfo:
    """What the notes say; the command line read from the stack where it adds up."""
    pid: int | None = None
    ppid: int | None = None
    lwp: int | None = None
    thread_ppid: int | None = None
    sig: str | None = None
    psargs = b""
    auxv = b""
    entry: int | None = None
    execfn: int | None = None
    files: list[tuple[int, int, str]] = []
    for kind, desc in notes:
        if kind == _NT_PRSTATUS and lwp is None and len(desc) >= 48:
            # The first NT_PRSTATUS is the thread that took the signal; its pr_pid is that
            # thread's id, the process's only where the main thread crashed.
            cursig = struct.unpack_from("<h", desc, 12)[0]
            sig = canonical_signal(cursig)
            lwp, thread_ppid = struct.unpack_from("<II", desc, 32)
        elif kind == _NT_PRPSINFO and len(desc) >= 136:
            # pr_pid and pr_ppid are the thread group's (fs/binfmt_elf.c fill_psinfo).
            pid, ppid = struct.unpack_from("<II", desc, 24)
            psargs = desc[56:136]
        elif kind == _NT_AUXV:
            auxv = desc
            for at in range(0, len(desc) - 15, 16):
                key, value = struct.unpack_from("<QQ", desc, at)
                if key == _AT_ENTRY:
                    entry = value
                elif key == _AT_EXECFN:
                    execfn = value
        elif kind == _NT_FILE and len(desc) >= 16:
            count = struct.unpack_from("<Q", desc, 0)[0]
            names = desc[16 + 24 * count :].split(b"\0")
            for index in range(min(count, len(names))):
                start, end, _ = struct.unpack_from("<QQQ", desc, 16 + 24 * index)
                files.append((start, end, names[index].decode("utf-8", "replace")))
    executable = None
    if entry is not None:
        executable = next((name for start, end, name in files if start <= entry < end), None)
    command = None
    if execfn is not None and psargs:
        command = argv_command(handle, segments, auxv, execfn, psargs)
    if command is None:
        command = _psargs_command(psargs)
    if pid is None:  # no NT_PRPSINFO: the crashed thread's numbers are all there are
        pid, ppid = lwp, thread_ppid
    return CoreInfo(path, pid, sig, executable, command, tuple(files), ppid, lwp=lwp)


# pr_psargs: the kernel copies the command line's first 79 bytes and a NUL (ELF_PRARGSZ).
_PSARGS_CHARS = 79


def _psargs_command(psargs: bytes) -> str:
    """NT_PRPSINFO's command line, where the stack's could not be read: without the
    argument the kernel cut in two (`--a-long-`), `...` in its place; a command of one
    word cut is that word's first bytes, all there is to show.

    The kernel makes each NUL a space, the last too where the command fits: 79 bytes
    ending in a space were cut between two arguments (or are a command of exactly that
    length, which cannot be told apart), so the last is whole and kept. Ending in two
    spaces or more, they end in the NULs a process padded its rewritten command line with
    (the preload server's forked attempts, setproctitle): that command is whole, where
    `...` said it was cut (`python train.py ...`)."""
    shown = psargs.split(b"\0", 1)[0]
    text = shown.decode("utf-8", "replace").strip()
    if len(shown) < _PSARGS_CHARS or shown.endswith(b"  "):
        return text
    if shown.endswith(b" "):
        return text + MORE
    return text.rsplit(" ", 1)[0] + MORE if " " in text else text


def _notes(data: bytes) -> Iterable[tuple[int, bytes]]:
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        at += 12 + ((namesz + 3) & ~3)
        yield kind, data[at : at + descsz]
        at += (descsz + 3) & ~3
