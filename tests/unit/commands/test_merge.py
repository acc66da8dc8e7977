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
    # Its cells held only the attempts it ran, merged as the cells' own (1/1 where
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
        f"cannot merge shard 2/2 ({second.run_id}): it was interrupted before it ran all its "
        f"attempts; finish it first with `reprospec run --resume {second.run_id} --out {out}`, "
        "then merge"
    ) in said
    assert sorted(p.name for p in (out / "runs").iterdir()) == [first.run_id, second.run_id]


def test_merge_says_which_runs_are_shards_and_which_run_is_the_merged_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `cannot merge B into A` named the first shard as the run merged into (the merge makes
    # a new one), `missing shard 2/2` and `shard 1/2 is given more than once` named no run
    # given, and the success line said `merged 2 runs into M`, not which runs.
    from reprospec.cli import main

    whole = segfault_matrix()
    out = tmp_path / "out"
    # Shard K of N holds every N-th attempt from the K-th (plan/run.py).
    first = replace(whole, run_id="20261121-214500-s-0001", cells=whole.cells[0::2], shard="1/2")
    second = replace(whole, run_id="20261121-214500-s-0002", cells=whole.cells[1::2], shard="2/2")
    other = replace(second, run_id="20261121-214500-s-0003", options={"repeat": 2})
    for run in (first, second, other):
        write_run(out / "runs" / run.run_id, run)
    a, b, c = first.run_id, second.run_id, other.run_id

    def refused(*refs: str) -> str:
        assert main(["merge", *refs, "--out", str(out)]) == 2
        return capsys.readouterr().err

    assert f"cannot merge shard 2/2 ({c}) with shard 1/2 ({a}), the first run given: " in (
        refused(a, c)
    )
    assert f"missing shard 2/2: merge all 2 shards of the run (given: shard 1/2 ({a}))" in (
        refused(a)
    )
    assert f"shard 1/2 is given more than once ({a}, {a})" in refused(a, a)
    assert main(["merge", a, b, "--out", str(out)]) in (0, 1)
    said = capsys.readouterr().err
    merged = next(p for p in (out / "runs").iterdir() if p.name not in (a, b, c))
    assert (
        f"merged shard 1/2 {out / 'runs' / a}, shard 2/2 {out / 'runs' / b} "
        f"into the merged run {merged}"
    ) in said


def test_a_shard_run_not_found_is_said_as_the_shard_run_it_was_to_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `no run 'nothere'` alone said neither which argument nor that it was to be a shard run.
    from reprospec.cli import main

    whole = segfault_matrix()
    out = tmp_path / "out"
    first = replace(whole, run_id="20261121-214500-s-0001", cells=whole.cells[:2], shard="1/2")
    write_run(out / "runs" / first.run_id, first)
    assert main(["merge", first.run_id, "nothere", "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert "RUN 2 of 2 (a shard run to merge): no run 'nothere': not a run folder" in said
    assert "Traceback" not in said
    assert sorted(p.name for p in (out / "runs").iterdir()) == [first.run_id]
