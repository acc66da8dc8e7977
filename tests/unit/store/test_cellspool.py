"""The cell spool: results.json's entries written as cells are judged, read back in order."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

from reprospec.store.cellspool import CellSpool
from reprospec.store.resultsjson import cell_json, run_json
from tests.support.runs import segfault_matrix


def test_entries_come_back_in_plan_order_whatever_order_they_were_judged(tmp_path: Path) -> None:
    run = segfault_matrix()
    cells = run.cells
    assert len(cells) >= 3
    with CellSpool(tmp_path / "results.spool", len(cells)) as spool:
        # The last cell ended first; the first was never spooled (judged at the end).
        for position in reversed(range(1, len(cells))):
            assert spool.add(position, cells[position])
        assert not spool.spooled(0)
        assert spool.spooled(1)
        assert list(spool.entries(cells)) == [cell_json(c) for c in cells]
        # results.json from the entries is the text made from every cell.
        assert "".join(run_json(run, spool.entries(cells))) == "".join(run_json(run))
    assert not (tmp_path / "results.spool").exists()


def test_an_entry_that_cannot_be_written_is_said_so(tmp_path: Path) -> None:
    cells = segfault_matrix().cells
    spool = CellSpool(tmp_path / "results.spool", len(cells))
    spool.close()
    # A run's last cell judged after the run's end closed it: the caller keeps it whole.
    assert spool.add(0, cells[0]) is False
    assert not spool.spooled(0)


def test_an_entry_the_file_system_refuses_partway_is_not_counted(tmp_path: Path) -> None:
    # A real refusal, as a full disk's: the file size limit (EFBIG) stops the second entry
    # 10 bytes in; the spool says so, and the next entry is written over what it left.
    cells = segfault_matrix().cells
    spool = CellSpool(tmp_path / "results.spool", len(cells))
    first = len(cell_json(cells[0]).encode("utf-8"))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (first + 10, hard))
    try:
        assert spool.add(0, cells[0])
        assert not spool.add(1, cells[1])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, ignored)
    assert not spool.spooled(1)
    assert spool.add(2, cells[2])
    assert list(spool.entries(cells)) == [cell_json(c) for c in cells]
    spool.close()
