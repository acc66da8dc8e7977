"""Every example spec in specs/ reproduces as its `expect` says, run for real."""

from __future__ import annotations

import pytest

from tests.support.cli import SPECS, ExampleRun, is_workload_example

EXAMPLES = sorted(p.name for p in SPECS.glob("*.yaml"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_reproduces_as_its_expect_says(example_run: ExampleRun, name: str) -> None:
    pytest.importorskip("torch") if is_workload_example(name) else None
    result = example_run(name)
    data = result.results()
    verdicts = {cell["id"]: (cell["verdict"], cell["reason"]) for cell in data["cells"]}
    assert result.code == 0, verdicts
    assert data["summary"]["reproduced"] == data["summary"]["cells"] > 0


def test_workload_segfault_names_the_worker_signal_phase_and_step(
    example_run: ExampleRun,
) -> None:
    pytest.importorskip("torch")
    result = example_run("segfault.yaml")  # the example's run: all four cells
    assert result.code == 0, result.stderr
    cells = {cell["id"]: cell for cell in result.results()["cells"]}
    crashed = cells["num_workers=2,pin_memory=true"]["attempts"][0]["outcome"]
    assert (crashed["kind"], crashed["signal"], crashed["where"]) == ("crash", "SIGSEGV", "worker")
    assert (crashed["phase"], crashed["step"]) == ("validation", 7)
    assert cells["num_workers=2,pin_memory=false"]["attempts"][0]["outcome"]["kind"] == "pass"
    assert "crash SIGSEGV (worker) @ validation:7" in result.stdout
    report = (result.latest_run() / "report.md").read_text()
    assert "SIGSEGV" in report
    assert "worker" in report
