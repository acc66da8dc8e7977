"""`reprospec run` of a pytest spec whose test hangs: the hang's detail names what pytest
was doing, read from its stack (pt40).

Real pytest runs through the CLI, under a short timeout: the first of five tests hangs in a
spec's own `pytest -q` (no `-v` line names any test), a test module's import hangs at
collection (an `import wandb` that never returns), and, under `-v`, whose line names the
hung test, only the test's place is added (pt42). Before, both were a bare `hang`. Each
hang touches `ready` as it starts (on the line it hangs at, so the lines said are its
own): a pytest starved of a CPU for its start-up on a loaded machine was killed before it
got there, and the try runs again with the timeout doubled (tests/support/deadline.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli import Cli, CliResult
from tests.support.deadline import until_reached

_FIRST_OF_FIVE = (
    "import time\n\n\ndef test_one():\n    open('ready', 'w').close(); time.sleep(1000)\n"
) + "".join(f"\n\ndef test_{n}():\n    pass\n" for n in range(2, 6))


def _spec(tmp_path: Path, files: dict[str, str], args: str, timeout_s: float) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: pytest-hang\nenvironment: {workdir: work}\n"
        f"command: {sys.executable} -m pytest -p no:cacheprovider {args}\n"
        "markers: [{preset: pytest}]\n"
        f"run: {{timeout: {timeout_s:g}s}}\nexpect: {{outcome: hang}}\n"
    )
    return spec


@pytest.mark.parametrize(
    ("files", "args", "said"),
    [
        (
            {"test_h.py": _FIRST_OF_FIVE},
            "-q test_h.py",
            "pytest was running test_one (test_h.py:5)",
        ),
        (
            {
                "slowmod.py": "import time\n\nopen('ready', 'w').close(); time.sleep(1000)\n",
                "test_a.py": "def test_a():\n    pass\n",
                "test_c.py": "import slowmod\n\n\ndef test_c():\n    pass\n",
            },
            "-q .",
            "pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:3)",
        ),
        (
            # pt42: `-v`'s line named the hung test (the phase): only its place is added.
            {"test_h.py": "def test_zero():\n    pass\n\n\n" + _FIRST_OF_FIVE},
            "-v test_h.py",
            "the test was at test_h.py:9",
        ),
    ],
    ids=["first-test", "collecting", "named-by-v"],
)
def test_a_pytest_hang_says_what_pytest_was_doing(
    cli: Cli, tmp_path: Path, files: dict[str, str], args: str, said: str
) -> None:
    def attempt(timeout_s: float, here: Path) -> CliResult:
        return cli("run", str(_spec(here, files, args, timeout_s)))

    last = until_reached(attempt, lambda here: (here / "work" / "ready").exists(), 6.0, tmp_path)
    result = last.result
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert outcome["kind"] == "hang"
    assert outcome["detail"].endswith(f"; {said}"), outcome["detail"]
    if args.startswith("-v"):
        assert outcome["phase"] == "test_h.py::test_one", outcome
        assert "test_one" not in outcome["detail"], outcome["detail"]
    assert said in (result.latest_run() / "report.md").read_text()
