"""An uncaught KeyboardInterrupt: CPython dies of SIGINT's default action after printing
it (a shell says 130), and the attempt is that death, `crash SIGINT` (classify.py rule 2),
as the program ends without the engine. The engine's sitecustomize formatted the record of
the main thread's exception with `traceback`, whose first import evaluates strings
(tokenize's namedtuple), which clears CPython's note of the KeyboardInterrupt: the program
exited 1, `error exit 1 KeyboardInterrupt`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import judged, run_attempt

PROGRAMS = [
    "raise KeyboardInterrupt\n",
    # A program that printed an exception through the hook and went on (`traceback`
    # imported, a record written) before it was interrupted: the record is the interrupt's.
    "import sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
    "    sys.excepthook(*sys.exc_info())\nraise KeyboardInterrupt('stop')\n",
]


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner(native_stacks=False)
    r.prepare([])
    return r


@pytest.mark.parametrize("program", PROGRAMS)
def test_an_uncaught_keyboard_interrupt_dies_of_sigint_as_without_the_engine(
    runner: LocalRunner, tmp_path: Path, program: str
) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text(program)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, check=False)
    assert alone.returncode == -2, alone
    result, execution = run_attempt(
        runner,
        [sys.executable, str(script)],
        tmp_path,
        Expectation("crash", signal="SIGINT"),
    )
    assert execution.returncode == -2, execution.stderr_path.read_text()
    outcome = judged(result, "crash", "SIGINT", "main")
    assert outcome.exception == "KeyboardInterrupt"
