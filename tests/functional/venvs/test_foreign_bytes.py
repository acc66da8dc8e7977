"""`pip config list` in bytes that are not UTF-8 (a pip.conf value in latin-1): read
replaced, never a UnicodeDecodeError that ends a venv run with a traceback, and the
value left out, said: never a path that does not exist passed to uv. A real pip
here decodes its config files strictly itself; a fake interpreter (sys.executable, which
runs `-m pip`) prints what a pip whose files it could read would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.venvs.index import _pip_config


def test_pip_configs_foreign_bytes_are_read_replaced_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\nprintf \"global.find-links='/srv/wh\\200eels'\\n"
        "global.index-url='https://pypi.example/simple'\\n\"\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    # It read {"find-links": "/srv/wh\ufffdeels"}: a folder that does not exist, for uv.
    assert _pip_config() == {"index-url": "https://pypi.example/simple"}
    said = capsys.readouterr().err
    assert "global.find-links" in said
    assert "not UTF-8; not used" in said
