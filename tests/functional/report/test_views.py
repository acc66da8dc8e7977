"""Every view of a run names this machine's paths alike: report.md, HTML, JUnit, GitHub."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import pytest

from tests.support.cli import Cli

CHILD_SEGFAULT = """\
import subprocess, sys
subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"], check=True)
"""


@pytest.mark.parametrize("fmt", ["md", "html", "junit", "github"])
def test_a_crashed_childs_command_is_named_short_in_every_view(
    cli: Cli, tmp_path: Path, fmt: str
) -> None:
    """the child's command line (`crash SIGSEGV (child: CMD)`) named the venv
    `<venv>` in report.md's headline, and by its absolute path in report.md's standalone
    line, the HTML page's summary and table, the GitHub summary and the JUnit properties."""
    (tmp_path / "modes.py").write_text(CHILD_SEGFAULT)
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "reprospec: 1\nname: childsegv\n"
        f"command: [{sys.executable}, modes.py]\n"
        "environment: {workdir: .}\n"
        "expect: {outcome: crash, signal: SIGSEGV, where: child}\n"
    )
    ran = cli("run", str(spec))
    assert ran.code == 0, ran.stderr
    shown = cli("report", "latest", "--format", fmt)
    assert shown.code == 0, shown.stderr
    text = html.unescape(shown.stdout)  # HTML, JUnit and the GitHub summary escape `<`
    assert "<venv>/bin/python" in text
    # The spec names the interpreter as its author wrote it (its YAML, its command): no more.
    for written in (f"[{sys.executable}, modes.py]", f"{sys.executable} modes.py"):
        text = text.replace(written, "")
    assert f"{sys.prefix}/bin" not in text
