"""Symbol names in a very large library without a linear search per frame (libtorch_cpu).

eu-stack (libdwfl) names a frame by scanning its library's whole symbol table, once per
frame: libtorch_cpu's `.symtab` holds 530,000 symbols, about 20 ms a frame, 0.3 s for
the dozen libtorch frames of a crash in a torch op, more than the unwinding and py-spy
together. This index sorts a library's symbols by address once (about 0.5 s for
libtorch_cpu), keeps the order in the user's cache under the library's build id, and
answers each frame with a binary search; the symbol chosen is the one libdwfl's
`dwfl_module_addrsym` chooses (globals first, sized symbols before labels, the closest
start, the stronger binding), so the names are eu-stack's.

Only a library without DWARF (no `.debug_info`, no `.gnu_debuglink`, no separate debug
file by build id) and with at least BIG_SYMBOLS symbols is answered here: eu-stack's
inlined frames and source lines come from DWARF, which this does not read.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import struct
import threading
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from reprospec.core.frozen import frozen

# A library with fewer symbols costs eu-stack a few milliseconds a frame: not worth an index.
BIG_SYMBOLS = 100_000
# Libraries smaller than this cannot hold BIG_SYMBOLS symbols and are not opened at all.
BIG_FILE_BYTES = 16 << 20
DEBUG_ROOT = Path("/usr/lib/debug")
# A symbol's index sits in the low bits of its sort key, its address above them.
_INDEX_BITS = 24
_INDEX_MASK = (1 << _INDEX_BITS) - 1
_MAX_ADDRESS = 1 << (64 - _INDEX_BITS)
# How far below an address the search walks for the symbol that holds it.
_WALK = 4096
_SHT_SYMTAB = 2
_SHT_NOTE = 7
_PT_LOAD = 1
_STT_SECTION, _STT_FILE, _STT_TLS = 3, 4, 6
_CACHE_MAGIC = b"reprospec-symindex-1\n"


@frozen
class ElfFacts:
    """What decides whether a library is indexed here, read from its ELF headers."""

    symtab: tuple[int, int, int, int] | None  # offset, size, first global, string table offset
    dwarf: bool  # DWARF of its own, or a pointer to separate debug info
    build_id: str | None
    load_base: int  # the lowest PT_LOAD's address, page-aligned: eu-stack's offsets start there


def elf_facts(path: str) -> ElfFacts | None:
    """The ELF facts of `path` (None: not a 64-bit little-endian ELF we read)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return _elf_facts(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _elf_facts(path: str, size: int, mtime_ns: int) -> ElfFacts | None:
    del size, mtime_ns  # the cache key: a rebuilt library is read again
    try:
        with Path(path).open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return _read_facts(m)
    except (OSError, ValueError, struct.error):
        return None


def _read_facts(m: mmap.mmap) -> ElfFacts | None:
    if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:  # ELFCLASS64, ELFDATA2LSB
        return None
    phoff, shoff = struct.unpack_from("<QQ", m, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", m, 0x36)
    loads = []
    for i in range(phnum):
        p_type, _, _, p_vaddr = struct.unpack_from("<IIQQ", m, phoff + i * phentsize)
        if p_type == _PT_LOAD:
            loads.append(p_vaddr)
    sections = [struct.unpack_from("<IIQQQQIIQQ", m, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4] if shstrndx < len(sections) else 0

    def name(section: tuple[int, ...]) -> bytes:
        start = names_at + section[0]
        return m[start : m.find(b"\0", start)]

    symtab = None
    dwarf = False
    build_id = None
    for section in sections:
        kind, offset, size, link, info = section[1], section[4], section[5], section[6], section[7]
        label = name(section)
        if label in (b".debug_info", b".gnu_debuglink", b".gnu_debugdata"):
            dwarf = True  # (minidebuginfo too: libdwfl would read a second table there)
        if kind == _SHT_SYMTAB and link < len(sections):
            symtab = (offset, size, info, sections[link][4])
        if kind == _SHT_NOTE and label == b".note.gnu.build-id" and size >= 16:
            namesz, descsz, _ = struct.unpack_from("<III", m, offset)
            start = offset + 12 + ((namesz + 3) & ~3)
            build_id = m[start : start + descsz].hex()
    base = min(loads) & ~0xFFF if loads else 0
    return ElfFacts(symtab, dwarf, build_id, base)


def indexed(path: str) -> ElfFacts | None:
    """The facts of `path` when its frames are named here; None when eu-stack names them."""
    try:
        if Path(path).stat().st_size < BIG_FILE_BYTES:
            return None
    except OSError:
        return None
    facts = elf_facts(path)
    if facts is None or facts.symtab is None or facts.dwarf or facts.build_id is None:
        return None
    if facts.symtab[1] // 24 < BIG_SYMBOLS:
        return None
    if separate_debug(facts.build_id).exists():
        return None  # libdwfl reads DWARF (and its symbol table) from there
    return facts


class Candidate(NamedTuple):
    """One symbol at or below a looked-up address: its position in the table, name offset, binding,
    address and size (what libdwfl's choice reads)."""

    position: int
    name: int
    binding: int
    value: int
    size: int


class SymbolIndex:
    """One library's symbols sorted by address, and libdwfl's choice of name for an address."""

    def __init__(self, path: str, facts: ElfFacts, keys: array[int]) -> None:
        assert facts.symtab is not None
        self._file = Path(path).open("rb")  # noqa: SIM115 (kept for the names it reads)
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        self._symtab, _, self._first_global, self._strings = facts.symtab
        self._keys = keys
        self.base = facts.load_base

    def close(self) -> None:
        self._map.close()
        self._file.close()

    def _symbol(self, index: int) -> Candidate:
        name, info, _, _, value, size = struct.unpack_from(
            "<IBBHQQ", self._map, self._symtab + 24 * index
        )
        return Candidate(index, name, info >> 4, value, size)

    def _name(self, offset: int) -> str:
        start = self._strings + offset
        return self._map[start : self._map.find(b"\0", start)].decode("utf-8", "replace")

    def name_at(self, offset: int) -> str | None:
        """The symbol name eu-stack prints for the address `offset` past the module's start
        (eu-stack's `-b` offset, already moved back into the call for a return address)."""
        address = offset + self.base
        if address >= _MAX_ADDRESS:
            return None
        # The symbols at or below `address`, nearest first, until one holds it and every
        # symbol at that start is taken (aliases: libdwfl chooses among them).
        position = bisect_right(self._keys, (address << _INDEX_BITS) | _INDEX_MASK)
        window: list[Candidate] = []
        held_at: int | None = None
        for key in reversed(self._keys[max(0, position - _WALK) : position]):
            value, index = key >> _INDEX_BITS, key & _INDEX_MASK
            if held_at is not None and value < held_at:
                break
            symbol = self._symbol(index)
            window.append(symbol)
            if symbol.size and address - symbol.value < symbol.size:
                held_at = symbol.value
        window.sort()  # libdwfl scans in table order: its tie-breaks depend on it
        chosen = choose(window, address, self._first_global)
        return self._name(chosen) if chosen is not None else None


def _binding_value(binding: int) -> int:
    return {1: 3, 2: 2, 0: 1}.get(binding, 0)  # STB_GLOBAL, STB_WEAK, STB_LOCAL


def choose(window: list[Candidate], address: int, first_global: int) -> int | None:
    """libdwfl's __libdwfl_addrsym over the symbols of `window`: the chosen name's offset."""
    closest: tuple[int, int, int] | None = None  # value, binding, name
    sizeless: tuple[int, int, int] | None = None
    closest_size = 0
    min_label = 0

    def scan(globals_only: bool) -> None:
        nonlocal closest, sizeless, closest_size, min_label
        for position, name, binding, value, size in window:
            if (position >= first_global) != globals_only or position == 0 or value > address:
                continue
            if value + size > min_label:
                min_label = value + size
            if size != 0 and address - value >= size:
                continue
            if (
                closest is None
                or closest[0] < value
                or _binding_value(closest[1]) < _binding_value(binding)
            ):
                if size != 0:
                    closest, closest_size = (value, binding, name), size
                elif (
                    sizeless is None
                    or sizeless[0] < value
                    or _binding_value(sizeless[1]) < _binding_value(binding)
                ):
                    sizeless = (value, binding, name)
            elif size != 0 and closest[0] == value and closest_size == 0:
                closest, closest_size = (value, binding, name), size

    scan(globals_only=True)
    if closest is None and first_global > 1 and (sizeless is None or sizeless[0] != address):
        scan(globals_only=False)
    if closest is not None:
        return closest[2]
    if sizeless is not None and sizeless[0] >= min_label:
        return sizeless[2]
    return None


def _eligible_keys(m: mmap.mmap, offset: int, size: int) -> array[int]:
    """The sort keys (address << _INDEX_BITS | index) of the symbols libdwfl may name a frame by."""
    words = memoryview(m)[offset : offset + size - size % 24].cast("Q")
    try:
        heads, values = words[0::3].tolist(), words[1::3].tolist()
    finally:
        words.release()
    keys = array("Q")
    if len(values) > _INDEX_MASK:
        return keys
    excluded = (_STT_SECTION, _STT_FILE, _STT_TLS)
    keys.extend(
        sorted(
            (value << _INDEX_BITS) | index
            for index, (head, value) in enumerate(zip(heads, values, strict=True))
            # a name, a defined section, not a section/file/TLS symbol, an address that fits
            if head & 0xFFFFFFFF
            and head >> 48
            and (head >> 32) & 0xF not in excluded
            and value < _MAX_ADDRESS
        )
    )
    return keys


def cache_folder() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "reprospec" / "symbols"


def separate_debug(build_id: str) -> Path:
    """Where a build's separate debug file is installed (libdwfl looks there)."""
    return DEBUG_ROOT / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"


def write_whole(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all (OSError is swallowed: a cache may go unwritten).

    Another engine may read it at once, and the cores of parallel attempts are read in
    threads of one engine: each writer gets a partial file of its own (pid and thread),
    so two writers never interleave in one file that is then moved into place.
    """
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
        partial.write_bytes(data)
        partial.replace(path)


def open_index(path: str, facts: ElfFacts) -> SymbolIndex | None:
    """The index of `path`: from the cache by build id, or built (and cached) now."""
    assert facts.symtab is not None
    assert facts.build_id is not None
    cached = cache_folder() / f"{facts.build_id}.idx"
    keys = array("Q")
    with contextlib.suppress(OSError, ValueError):
        data = cached.read_bytes()
        if data.startswith(_CACHE_MAGIC):
            keys.frombytes(data[len(_CACHE_MAGIC) :])
    if not keys:
        try:
            with Path(path).open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                keys = _eligible_keys(m, facts.symtab[0], facts.symtab[1])
        except (OSError, ValueError):
            return None
        if not keys:
            return None
        write_whole(cached, _CACHE_MAGIC + keys.tobytes())
    try:
        return SymbolIndex(path, facts, keys)
    except (OSError, ValueError):
        return None
