"""`reprospec merge` of runs read from their folders (none runs here)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.store.resultsjson import write_run
from tests.support.runs import segfault_matrix


def test_an_interrupted_run_is_not_merged_and_the_message_says_how_to_finish_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # nu32 F7: its cells held only the attempts it ran, merged as the cells' own (1/1 where
    # 2 were asked), and the merged report said `reprospec run --resume MERGED-ID`, which
    # no store holds ("a run the store does not hold ... is not resumed").
    from reprospec.cli import main

    whole = segfault_matrix()
    out = tmp_path / "out"
    first = replace(whole, run_id="20261121-214500-s-0001", cells=whole.cells[:2], shard="1/2")
    second = replace(
        whole,
        run_id="20261121-214500-s-0002",
        cells=whole.cells[2:],
        shard="2/2",
        interrupted=True,
    )
    for run in (first, second):
        write_run(out / "runs" / run.run_id, run)
    assert main(["merge", first.run_id, second.run_id, "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert (
        f"cannot merge {second.run_id}: it was interrupted before it ran all its attempts; "
        f"finish it first with `reprospec run --resume {second.run_id} --out {out}`, then merge"
    ) in said
    assert sorted(p.name for p in (out / "runs").iterdir()) == [first.run_id, second.run_id]
