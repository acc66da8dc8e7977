"""A core's whole command line, read from the process's initial stack (`coreinfo.read_core`).

NT_PRPSINFO keeps only the first 80 bytes of the command line (the kernel's pr_psargs,
ELF_PRARGSZ): a program run from a venv under a long path was cut inside that path, so
the report could not name the venv `<venv>` and the script and its arguments were lost.
The core holds the whole argv: the kernel dumps the stack, and execve laid it out as the
ELF ABI fixes (from low addresses up):

    argc, argv[0..argc-1], NULL, envp[...], NULL, auxv pairs ending in AT_NULL,
    ..., the argv and environment strings, the file name (AT_EXECFN), the stack's top

NT_AUXV is a copy of that auxv, byte for byte. So the auxv's bytes are found in the
dumped memory just below AT_EXECFN's string, the two pointer arrays are walked back from
them to argc, and each argv string is read through the PT_LOAD segments. Anything that
does not add up (the stack not dumped, the auxv not found, a pointer outside dumped
memory, argc not where the walk ends, strings that are not pr_psargs' bytes) says None,
and the caller keeps pr_psargs: never a guess. Every read is a seek and a bounded read,
so a multi-GB core costs a few kilobytes.

Imported with coreinfo.py, where a core is read: a run whose attempts leave none never
loads it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import BinaryIO, NamedTuple

# The most of the argv strings read; an argv longer is its first arguments and ` ...`.
MAX_ARGV_BYTES = 64 << 10
# The most arguments read: a pointer each, walked one by one.
MAX_ARGS = 4096
# How far below AT_EXECFN's string the auxv is looked for (the argv and environment strings
# lie between: execve allows a quarter of the stack limit, 2 MiB by default), and how far
# below the auxv the two pointer arrays are walked.
MAX_SCAN_BYTES = 4 << 20
# One read, walking down the stack: the auxv of a short environment is in the first.
_CHUNK = 64 << 10
# Below this a word is no pointer into the stack: the walk met argc, or nothing it knows.
_LOWEST_POINTER = 1 << 16
# What ends an argv that was cut at MAX_ARGV_BYTES or MAX_ARGS (words.shorten_command's mark).
MORE = " ..."


class Segment(NamedTuple):
    """A PT_LOAD: `filesz` bytes of memory from `vaddr` are at `offset` in the core."""

    vaddr: int
    offset: int
    filesz: int

    def holds(self, address: int, size: int = 1) -> bool:
        """Whether `size` bytes from `address` were dumped (a segment not dumped has
        filesz 0: coredump_filter left it out)."""
        return self.vaddr <= address and address + size <= self.vaddr + self.filesz


def argv_command(
    handle: BinaryIO, segments: Sequence[Segment], auxv: bytes, execfn: int, psargs: bytes
) -> str | None:
    """The command line as /proc/PID/cmdline reads (the arguments joined by spaces), read
    from the core's stack; None where anything does not add up.

    `auxv` is NT_AUXV's bytes, `execfn` AT_EXECFN's value, `psargs` NT_PRPSINFO's
    pr_psargs as the kernel wrote it (NUL-ended): the first bytes of the same memory, which
    the arguments read must begin with."""
    if len(auxv) < 16 or len(auxv) % 16:
        return None
    stack = next((s for s in segments if s.holds(execfn)), None)
    if stack is None:
        return None
    found = _auxv_at(handle, stack, auxv, execfn)
    if found is None:
        return None
    argv = _argv_pointers(handle, stack, found)
    if argv is None:
        return None
    arguments = _strings(handle, segments, argv)
    if arguments is None:
        return None
    if not arguments[0]:
        return None
    raw = b" ".join(arguments[0])
    shown = psargs.split(b"\0", 1)[0]
    # pr_psargs is argv's memory with its NULs made spaces (the last one too, where the
    # whole command fits): the walk must have found these very strings.
    if not shown or (raw + b" ")[: len(shown)] != shown:
        return None
    text = raw.decode("utf-8", "replace")
    return text + MORE if arguments[1] else text


def _read(handle: BinaryIO, segment: Segment, address: int, size: int) -> bytes | None:
    """`size` bytes of memory at `address`, None unless all were dumped."""
    if size <= 0 or not segment.holds(address, size):
        return None
    handle.seek(segment.offset + (address - segment.vaddr))
    data = handle.read(size)
    return data if len(data) == size else None


def _auxv_at(handle: BinaryIO, stack: Segment, auxv: bytes, execfn: int) -> int | None:
    """The address of the auxv on the stack: the highest copy of NT_AUXV's bytes below
    AT_EXECFN's string (a program's own copy would lie lower, in its frames)."""
    lowest = max(stack.vaddr, execfn - MAX_SCAN_BYTES)
    top = execfn
    while top > lowest:
        start = max(lowest, top - _CHUNK)
        # Overlap the chunk above by the auxv's length less one: a copy across the two.
        data = _read(handle, stack, start, min(top + len(auxv) - 1, execfn) - start)
        if data is None:
            return None
        at = data.rfind(auxv)
        if at >= 0:
            return start + at
        top = start
    return None


def _words_down(handle: BinaryIO, stack: Segment, below: int) -> Iterator[int]:
    """The 8-byte words of the stack below `below`, the highest first, within MAX_SCAN_BYTES."""
    lowest = max(stack.vaddr, below - MAX_SCAN_BYTES)
    top = below
    while top - 8 >= lowest:
        start = max(lowest, top - _CHUNK)
        start += (top - start) % 8
        data = _read(handle, stack, start, top - start)
        if data is None:
            return
        for at in range(len(data) - 8, -1, -8):
            yield struct.unpack_from("<Q", data, at)[0]
        top = start


def _argv_pointers(handle: BinaryIO, stack: Segment, auxv_at: int) -> list[int] | None:
    """argv[0..argc-1], walked back from the auxv: the environment's NULL, its pointers,
    argv's NULL, argv's pointers, and argc, which must count them."""
    words = _words_down(handle, stack, auxv_at)
    if next(words, None) != 0:  # envp's NULL, just below the auxv
        return None
    for word in words:  # envp's pointers, down to argv's NULL
        if word == 0:
            break
        if word < _LOWEST_POINTER:
            return None
    else:
        return None
    argv: list[int] = []
    for word in words:
        if word == len(argv) and argv:
            return argv[::-1]
        if word < _LOWEST_POINTER:
            return None
        argv.append(word)
    return None


def _strings(
    handle: BinaryIO, segments: Sequence[Segment], argv: list[int]
) -> tuple[list[bytes], bool] | None:
    """Each argument's bytes (the first MAX_ARGS, within MAX_ARGV_BYTES), and whether some
    were left out; None where a pointer is outside dumped memory or a string has no end."""
    out: list[bytes] = []
    left = MAX_ARGV_BYTES
    block_at, block = 0, b""
    for pointer in argv[:MAX_ARGS]:
        at = pointer - block_at
        if not (block and 0 <= at < len(block)):
            # execve wrote the strings one after the other: one read holds them all,
            # unless the program pointed an argument elsewhere.
            segment = next((s for s in segments if s.holds(pointer)), None)
            if segment is None:
                return None
            size = min(left + 1, segment.vaddr + segment.filesz - pointer)
            data = _read(handle, segment, pointer, size)
            if data is None:
                return None
            block_at, block, at = pointer, data, 0
        end = block.find(b"\0", at)
        if end < 0 and len(block) - at <= left:
            return None  # the string runs off the dumped memory
        if end < 0 or end - at >= left:
            return out, True
        out.append(block[at:end])
        left -= end - at + 1
    return out, len(argv) > MAX_ARGS


__all__ = ["MAX_ARGS", "MAX_ARGV_BYTES", "MAX_SCAN_BYTES", "MORE", "Segment", "argv_command"]
