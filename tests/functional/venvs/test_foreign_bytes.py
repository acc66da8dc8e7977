"""`pip config list` in bytes that are not UTF-8 (a pip.conf value in latin-1): read
replaced, never a UnicodeDecodeError that ends a venv run with a traceback. A real pip
here decodes its config files strictly itself; a fake interpreter (sys.executable, which
runs `-m pip`) prints what a pip whose files it could read would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.venvs.index import _pip_config


def test_pip_configs_foreign_bytes_are_read_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nprintf \"global.find-links='/srv/wh\\200eels'\\n\"\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    assert _pip_config() == {"find-links": "/srv/wh\ufffdeels"}
