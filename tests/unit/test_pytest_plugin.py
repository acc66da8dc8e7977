"""The pytest plugin's items in-process: each cell's line, GPU ids split across xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.pytest_plugin import cell_alone, recorded_command_line, worker_gpus
from reprospec.spec.lines import cell_lines


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GPU_SPEC = """\
reprospec: 1
name: needs-a-gpu
environment: {gpus: 1}
command: "true"
expect: {outcome: pass}
"""


def test_each_cell_points_at_its_own_line(tmp_path: Path) -> None:
    from reprospec import api

    spec = api.load_spec(
        write(
            tmp_path / "lines.yaml",
            """\
reprospec: 1
name: lines
matrix:
  workers:
    - 0
    - 2
  include:
    - {workers: 4, extra: x}
command: "true"
expect: {outcome: pass}
""",
        )
    )
    cells = api.plan_run(spec, api.RunOptions(repeat=1)).cells
    assert cell_lines(spec, cells) == {"workers=0": 5, "workers=2": 6, "workers=4,extra=x": 8}
    one = api.load_spec(write(tmp_path / "one.yaml", GPU_SPEC))
    assert cell_lines(one, api.plan_run(one).cells) == {"default": 4}


def test_each_item_runs_its_own_cell_alone(tmp_path: Path) -> None:
    """The filters of an item's run keep its cell alone: `x=7` of {x: 7} also kept the
    cell {x: 7, d: 1} an include adds, and `x=3.10` of "3.10" the number 3.1."""
    from reprospec import api
    from reprospec.spec.matrix import expand, known_axes, select

    spec = api.load_spec(
        write(
            tmp_path / "alone.yaml",
            """\
reprospec: 1
name: alone
matrix:
  x: ["3.10", 3.1, "a,b", 7]
  include:
    - {x: 8}
    - {x: 8, d: 1}
command: "true"
expect: {outcome: pass}
""",
        )
    )
    cells = expand(spec)
    axes = known_axes(cells)
    assert len(cells) == 6
    for cell in cells:
        assert list(select(cells, cell_alone(cell, axes))) == [cell], cell.id


def test_xdist_workers_split_the_outer_gpu_ids() -> None:
    outer = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4"}
    assert worker_gpus(outer) is None  # not under xdist: the engine's own default
    shares = [
        worker_gpus({**outer, "PYTEST_XDIST_WORKER": f"gw{i}", "PYTEST_XDIST_WORKER_COUNT": "2"})
        for i in range(2)
    ]
    assert shares == ["0,2,4", "1,3"]
    lone = {"CUDA_VISIBLE_DEVICES": "7", "PYTEST_XDIST_WORKER_COUNT": "2"}
    assert worker_gpus({**lone, "PYTEST_XDIST_WORKER": "gw1"}) == ""


def test_xdist_workers_of_a_machine_without_gpus_record_no_gpus_option() -> None:
    """No GPU visible: each worker's share was `''`, recorded as `--gpus ''`, and compare of
    a cell's run under xdist with its run without said `gpus: (none) -> ''`."""
    none = {"CUDA_VISIBLE_DEVICES": "", "PYTEST_XDIST_WORKER_COUNT": "2"}
    assert worker_gpus({**none, "PYTEST_XDIST_WORKER": "gw0"}) is None


def test_a_run_records_the_pytest_command_line_less_the_machines_paths() -> None:
    # The record was a synthetic `reprospec run /abs/flaky.yaml -m ...` nobody typed.
    assert recorded_command_line(["--reprospec", "flaky.yaml"]) == "pytest --reprospec flaky.yaml"
    args = ["--reprospec-out", "/tmp/o", "-k", "a and b", "--reprospec-python=/v/bin/python", "-n2"]
    assert recorded_command_line(args) == "pytest -k 'a and b' -n2"
    assert recorded_command_line([]) == "pytest"


def test_every_runner_of_reprospec_run_is_an_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--reprospec-runner venv` was refused ('invalid choice'), as was every
    runner besides local and docker. Collected in-process: nothing runs."""
    from reprospec.core.runoptions import RUNNER_NAMES

    spec = write(tmp_path / "one.repro.yaml", GPU_SPEC)
    for runner in RUNNER_NAMES:
        args = ["-p", "no:cacheprovider", "--co", "-q", f"--reprospec-runner={runner}"]
        assert pytest.main([*args, "--reprospec", str(spec)]) == 0, capsys.readouterr().err
        assert "one.repro.yaml::default" in capsys.readouterr().out
