"""A pool worker's exception raised again in the parent: multiprocessing (and
concurrent.futures' process pool) quotes the worker's traceback between `\"\"\"` lines as
its RemoteTraceback's message, the cause of the exception the parent raises. The worker's
exception read from that quote is the chain's first link; its message ended at the
closing `\"\"\"`, which it took as a line of its own ('bad item 2\\n\"\"\"')."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import judged, run_attempt

POOLS = {
    "multiprocessing": (
        "import multiprocessing as mp\n"
        "def f(x):\n"
        "    if x == 2:\n"
        "        raise ValueError(f'bad item {x}')\n"
        "    return x\n"
        "if __name__ == '__main__':\n"
        "    with mp.Pool(2) as p:\n"
        "        p.map(f, range(4))\n"
    ),
    "concurrent.futures": (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "def f(x):\n"
        "    if x == 2:\n"
        "        raise ValueError(f'bad item {x}')\n"
        "    return x\n"
        "if __name__ == '__main__':\n"
        "    with ProcessPoolExecutor(2) as ex:\n"
        "        list(ex.map(f, range(4)))\n"
    ),
}


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner(native_stacks=False)
    r.prepare([])
    return r


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_a_workers_quoted_traceback_ends_at_its_closing_quotes(
    runner: LocalRunner, tmp_path: Path, pool: str
) -> None:
    script = tmp_path / "pool.py"
    script.write_text(POOLS[pool])
    expectation = Expectation("error", exception="ValueError", message="bad item 2")
    result, _ = run_attempt(runner, [sys.executable, str(script)], tmp_path, expectation)
    outcome = judged(result, "error", None, "main")
    assert (outcome.exception, outcome.message) == ("ValueError", "bad item 2")
    assert [(link.type, link.message) for link in outcome.chain] == [
        ("ValueError", "bad item 2"),
        ("ValueError", "bad item 2"),
    ]
