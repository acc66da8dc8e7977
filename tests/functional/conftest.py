"""Fixtures of the functional tests: engine runs shared by the tests that read them."""

from __future__ import annotations

import pytest

from tests.support.cli import SPECS, CliResult, ExampleRun, run_cli

# Timeouts that bound a hang are the examples' own; where a cell that must pass can take
# longer than that on a loaded machine, its example runs with room (-> `--timeout`). The
# skipped-allreduce example's passing cell is two ranks that each import torch and train.
ROOM = {"distributed-skipped-allreduce.yaml": "60s"}


@pytest.fixture(scope="session")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    """`reprospec run specs/NAME -j 2`, run once per example for the whole session.

    The examples' own test (each reproduces as its `expect` says) and the tests that read
    more of the same run (its results.json, table, report and stacks) share it: one engine
    run, many assertions. A test that writes must write elsewhere (a rerun gets its own
    `--out`, as the `cli` fixture gives it)."""
    done: dict[str, CliResult] = {}

    def run(name: str) -> CliResult:
        if name not in done:
            out = tmp_path_factory.mktemp("example") / "out"
            room = ("--timeout", ROOM[name]) if name in ROOM else ()
            done[name] = run_cli(out, "run", str(SPECS / name), "-j", "2", *room, timeout=300)
        return done[name]

    return run
