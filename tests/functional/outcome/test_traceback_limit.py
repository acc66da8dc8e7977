"""A program that sets `sys.tracebacklimit = 0` (a CLI that hides tracebacks from its
users) prints its uncaught exception as its lines alone: `ValueError: bad config value`,
no `Traceback` header, no frame. Its own record of the exception it died of (stackdump's
raised-PID.txt) is that text and nothing else: the attempt is `error` with that exception,
where it read `error exit 1`, no exception, its message the exception's line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import judged, run_attempt

PROGRAMS = [
    ("import sys\nsys.tracebacklimit = 0\nraise ValueError('bad config value')\n", None),
    (
        "import sys\nsys.tracebacklimit = 0\ntry:\n    {}['k']\nexcept KeyError as e:\n"
        "    raise RuntimeError('lookup failed') from e\n",
        "KeyError",
    ),
]


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner(native_stacks=False)
    r.prepare([])
    return r


@pytest.mark.parametrize(("program", "primary"), PROGRAMS)
def test_an_exception_printed_without_its_traceback_is_the_attempts(
    runner: LocalRunner, tmp_path: Path, program: str, primary: str | None
) -> None:
    script = tmp_path / "cli.py"
    script.write_text(program)
    result, _ = run_attempt(runner, [sys.executable, str(script)], tmp_path, Expectation("error"))
    outcome = judged(result, "error", None, "main")
    if primary is None:
        assert (outcome.exception, outcome.message) == ("ValueError", "bad config value")
        assert outcome.signature == "error:ValueError"
    else:
        assert (outcome.exception, outcome.message) == ("RuntimeError", "lookup failed")
        assert [link.type for link in outcome.chain] == [primary, "RuntimeError"]
    assert outcome.exit_code == 1
