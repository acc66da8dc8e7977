"""A preload server whose import hangs holds an attempt no longer than the attempt's own
timeout (it was 120 s past a 3 s one), and the attempt says why it ran fresh. A real
server, a real hanging import."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: preload-hangs
environment: {env: {PYTHONPATH: "%s"}}
command: python main.py
run: {timeout: 3s, preload: [hangs_at_import]}
expect: {outcome: pass}
"""


def test_a_hanging_preload_import_is_bounded_by_the_attempts_timeout(
    tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "hangs_at_import.py").write_text("import time\ntime.sleep(600)\n")
    (tmp_path / "main.py").write_text("print('ran')\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC % tmp_path)
    ran = cli("run", str(spec), timeout=90)  # the import sleeps 600 s: bounded, or this raises
    attempt = ran.results()["cells"][0]["attempts"][0]
    assert "in 3s (the attempt's timeout)" in json.dumps(attempt), attempt
