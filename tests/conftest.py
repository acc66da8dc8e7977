"""Fixtures shared by every kind of test (unit/, functional/, real/); helpers live in
the tests.support package."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Cli, CliResult, run_cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run `python -m reprospec ARGS` as a user would; `--out` defaults into tmp_path."""

    def invoke(
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 180,
        cwd: Path | None = None,
        stdin: str | None = None,
    ) -> CliResult:
        return run_cli(tmp_path / "out", *args, env=env, timeout=timeout, cwd=cwd, stdin=stdin)

    return invoke
