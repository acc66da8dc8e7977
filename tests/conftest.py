"""Fixtures shared by every kind of test (unit/, functional/, real/); helpers live in
the tests.support package."""

from __future__ import annotations

import compileall
import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import orphans, schedule
from tests.support.cli import CLI_TIMEOUT_S, ROOT, SPECS, Cli, CliResult, ExampleRun, run_cli
from tests.support.paths import session_folder


def pytest_sessionstart() -> None:
    """Compile the package's bytecode once, before any child imports it.

    Hundreds of tests start `python -m reprospec` and harness children; where
    PYTHONDONTWRITEBYTECODE is set (CI images, these machines) none of them writes its
    .pyc, so each compiled all ~300 modules again: measured 1.1 s of CPU for a
    one-attempt `reprospec run` against 0.7 s with the bytecode there. The files are
    checked against their sources as always (a stale one is recompiled), written
    atomically (xdist workers may race), and ignored by git and by every copy the
    engine makes of a tree."""
    compileall.compile_dir(ROOT / "reprospec", quiet=2)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the long modules first, spread over the workers
    (tests/support/schedule.py says why). Every worker computes the same order from the
    same collection and record, as xdist requires; a serial run keeps collection order."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = schedule.spread(
        items, lambda item: item.nodeid.split("::")[0], schedule.recorded(), workers
    )


@pytest.fixture(autouse=True)
def _reap_adopted_orphans() -> Iterator[None]:
    """After each test, wait for the orphans this process adopted as a subreaper
    (tests/support/orphans.py): otherwise they stay zombies until the session ends."""
    yield
    orphans.reap_adopted()


@pytest.fixture
def kill_after() -> Iterator[list[int]]:
    """Pids to SIGKILL after the test whatever happened (a failing test leaves nothing)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run `python -m reprospec ARGS` as a user would; `--out` defaults into tmp_path."""

    def invoke(
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = CLI_TIMEOUT_S,
        cwd: Path | None = None,
        stdin: str | None = None,
    ) -> CliResult:
        return run_cli(tmp_path / "out", *args, env=env, timeout=timeout, cwd=cwd, stdin=stdin)

    return invoke


@pytest.fixture(scope="session")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    """`reprospec run specs/NAME -j 2`, run once per example for the whole session.

    The examples' own test (each reproduces as its `expect` says), the pytest plugin's
    every-example test and the tests that read more of the same run (its results.json,
    table, report and stacks) share it: one engine run, many assertions. Under pytest-xdist
    the workers share it too: the first to ask runs the example under an exclusive lock on a
    file of the session's folder and writes down what the command returned; the others wait
    on that lock and read it (the distributed example alone is a minute of waiting on its
    hang). A test that writes must write elsewhere (a rerun gets its own `--out`, as the
    `cli` fixture gives it)."""
    shared = session_folder(tmp_path_factory, "example-runs")
    done: dict[str, CliResult] = {}

    def run(name: str) -> CliResult:
        if name in done:
            return done[name]
        key = name.replace("/", "-")
        record = shared / f"{key}.json"
        with (shared / f"{key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if record.is_file():
                saved = json.loads(record.read_text(encoding="utf-8"))
                result = CliResult(
                    saved["code"], saved["stdout"], saved["stderr"], Path(saved["out"])
                )
            else:
                out = shared / key / "out"
                result = run_cli(out, "run", str(SPECS / name), "-j", "2", timeout=CLI_TIMEOUT_S)
                saved = {
                    "code": result.code,
                    "stdout": result.stdout,
                    "stderr": result.stderr,
                    "out": str(out),
                }
                record.write_text(json.dumps(saved), encoding="utf-8")
        done[name] = result
        return result

    return run
