"""results.json's cell entries, written to the run folder as each cell is judged.

A finished cell's entry in results.json holds every attempt's timestamps, log folder and
outcome: about 1 KiB of objects per cell, most of the engine's memory at the end of a
large matrix (docs/performance.md, "Memory and the run folder as the matrix grows"). The
run writes each entry here the moment its cell is judged (`add`), keeps of the cell only
what the report and the console read, and results.json then takes the entries back in
plan order (`entries`): the same bytes as when every cell was held until the end.

The spool is `RunFolder.results_spool`, removed once results.json is written; a run killed
before that leaves it behind, and `--resume` (which judges again from the store) starts
a new one.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

from reprospec.core.results import CellResult
from reprospec.store.resultsjson import cell_json


class CellSpool:
    """The entries of a run's `cells` positions 0..cells-1, each written once, in any order."""

    def __init__(self, path: Path, cells: int) -> None:
        self.path = path
        # Unbuffered: an entry is in the file once `add` says so, or not at all (a buffer
        # flushed later could fail on a full disk after its offsets were recorded).
        self._file = path.open("w+b", buffering=0)
        self._end = 0
        # Where each position's entry is (-1: not written): 16 bytes a cell, not a dict.
        self._offsets = array("q", [-1]) * cells
        self._sizes = array("q", [0]) * cells
        # The scheduler's threads judge cells side by side.
        self._lock = threading.Lock()

    def add(self, position: int, cell: CellResult) -> bool:
        """Write `cell` (redacted: as results.json shows it) as entry `position`.

        False when it could not be written (a full disk): the caller then keeps the cell
        whole, and results.json takes it from there, as it takes an unjudged cell.
        """
        data = cell_json(cell).encode("utf-8")
        with self._lock:
            try:
                self._file.seek(self._end)  # over what a failed write left, if any
                done = 0
                while done < len(data):
                    done += self._file.write(data[done:]) or 0
            except (OSError, ValueError):  # ValueError: closed (the run ended meanwhile)
                return False
            self._offsets[position] = self._end
            self._sizes[position] = len(data)
            self._end += len(data)
        return True

    def spooled(self, position: int) -> bool:
        """Whether entry `position` was written here."""
        return self._offsets[position] >= 0

    def entries(self, cells: Sequence[CellResult]) -> Iterator[str]:
        """`cell_json` of each of `cells` (all the run's, in plan order): read back from the
        spool where it was written, else made from the cell itself."""
        # By position: a cell that was spooled is not read (a large run's cells are made as
        # they are read: outcome/judgedcells.py).
        for position in range(len(cells)):
            offset = self._offsets[position]
            if offset < 0:
                yield cell_json(cells[position])
                continue
            # (read once every cell is judged: no entry is added meanwhile)
            yield os.pread(self._file.fileno(), self._sizes[position], offset).decode("utf-8")

    def close(self) -> None:
        """Close and remove the spool (results.json holds its entries, or the run failed)."""
        with self._lock:
            self._file.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> CellSpool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["CellSpool"]
