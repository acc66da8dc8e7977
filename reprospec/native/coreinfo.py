"""What an ELF core file says about the process that left it (`cores.read_core`).

Its own module, imported where a core is read: a run whose attempts leave none never
builds the class (a frozen dataclass compiles six methods as it is made; issue 30, item 4).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen

if TYPE_CHECKING:
    from reprospec.native.corewatch import FileId


@frozen
class CoreInfo:
    """What an ELF core file says about the process that left it."""

    path: Path
    pid: int | None
    signal: str | None
    executable: str | None  # the mapped file holding the entry point
    command: str  # the first 80 bytes of the command line (NT_PRPSINFO)
    files: tuple[tuple[int, int, str], ...]  # (start, end, path) of every mapped file
    ppid: int | None = None  # the parent's pid (in a container: 1 for the attempt's root)
    file: FileId | None = None  # (device, inode), from find_cores: which file it was
