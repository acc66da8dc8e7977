"""The harness calls no dataset code in the main process that a real training script would not.

Through the CLI, as a user runs it: a dataset entry point records the pid of every
`__getitem__` call, and aborts when it is used through a handle that a forked worker
inherited from the main process (as an LMDB handle or a CUDA context would fail).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import ROOT, Cli, CliResult

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

DATASETS = ROOT / "tests" / "data" / "datasets"


def write_spec(folder: Path, dataset: dict[str, Any]) -> Path:
    spec = {
        "reprospec": 1,
        "name": "parent-touches-nothing",
        "environment": {"device": "cpu", "workdir": str(DATASETS)},
        "workload": {
            "model": {"builtin": "mlp", "params": {"hidden": 8}},
            "data": {
                "dataset": dataset,
                "loader": {"batch_size": 4, "num_workers": 2, "multiprocessing_context": "fork"},
            },
            "phases": [{"name": "train", "steps": 4}],
        },
        "run": {"timeout": "120s"},
        "expect": {"outcome": "pass"},
    }
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def attempt_events(result: CliResult) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    attempt = result.results()["cells"][0]["attempts"][0]
    events_path = result.latest_run() / attempt["logs"] / "events.jsonl"
    return attempt, [json.loads(line) for line in events_path.read_text().splitlines()]


def main_pid(events: list[dict[str, Any]]) -> int:
    return int(next(e["pid"] for e in events if e["event"] == "start"))


def recorded_pids(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()]


def test_no_item_is_read_in_the_main_process_and_a_lazy_handle_is_not_inherited(
    cli: Cli, tmp_path: Path
) -> None:
    # No shape declared: the model is sized by a spawned probe that reads item 0.
    log = tmp_path / "getitem.pids"
    spec = write_spec(tmp_path, {"entrypoint": "forkcheck:make", "params": {"log": str(log)}})
    result = cli("run", str(spec))
    attempt, events = attempt_events(result)
    assert result.code == 0, (attempt, result.stderr)
    assert attempt["outcome"]["kind"] == "pass"
    pids = recorded_pids(log)
    assert main_pid(events) not in pids
    probes = [e["pid"] for e in events if e["event"] == "dataset_probe"]
    assert len(probes) == 2  # the probe's start, and its `ended` twin
    assert len(set(probes)) == 1
    assert pids.count(probes[0]) == 1
    # Every other call was in one of the two workers: 4 steps of 4 items.
    workers = [pid for pid in pids if pid != probes[0]]
    assert len(workers) >= 16
    assert 1 <= len(set(workers)) <= 2


def test_a_declared_shape_needs_no_probe(cli: Cli, tmp_path: Path) -> None:
    log = tmp_path / "getitem.pids"
    dataset = {
        "entrypoint": "forkcheck:make",
        "params": {"log": str(log)},
        "shape": [2, 3],
        "classes": 3,
    }
    result = cli("run", str(write_spec(tmp_path, dataset)))
    attempt, events = attempt_events(result)
    assert result.code == 0, (attempt, result.stderr)
    assert not [e for e in events if e["event"] == "dataset_probe"]
    pids = recorded_pids(log)
    assert main_pid(events) not in pids
    assert 1 <= len(set(pids)) <= 2


def test_a_probe_that_cannot_read_the_dataset_is_an_infra_error_naming_the_remedy(
    cli: Cli, tmp_path: Path
) -> None:
    log = tmp_path / "getitem.pids"
    dataset = {"entrypoint": "forkcheck:make", "params": {"log": str(log), "fail": True}}
    result = cli("run", str(write_spec(tmp_path, dataset)))
    assert result.code == 3, result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "infra-error"
    reason = cell["attempts"][0]["infra_error"]
    assert "ValueError: item 0 is unreadable" in reason
    assert "declare `shape` and `classes`" in reason
    _, events = attempt_events(result)
    assert main_pid(events) not in recorded_pids(log)


def test_a_probe_that_hangs_is_an_infra_error_not_a_hang_at_setup(cli: Cli, tmp_path: Path) -> None:
    # Item 0 deadlocks: the spawned probe never answers. The training never began, so the
    # stall ends the attempt as infra-error (it was `hang @ setup`, a verdict on nothing).
    log = tmp_path / "getitem.pids"
    dataset = {"entrypoint": "forkcheck:make", "params": {"log": str(log), "hang": True}}
    spec = write_spec(tmp_path, dataset)
    data = yaml.safe_load(spec.read_text())
    data["run"]["stall"] = "5s"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    result = cli("run", str(spec))
    assert result.code == 3, result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "infra-error"
    reason = cell["attempts"][0]["infra_error"]
    assert "reading item 0 in a probe process" in reason
    assert "never answered (no progress for 5 s (run.stall))" in reason
    assert "declare `shape` and `classes`" in reason
    _, events = attempt_events(result)
    probe = next(e["pid"] for e in events if e["event"] == "dataset_probe")
    assert recorded_pids(log) == [probe]
