"""c++filt's answer in bytes that are not UTF-8: read replaced, never a UnicodeDecodeError
that ends a crash's report with a traceback. binutils' c++filt echoes what it cannot
demangle as it got it, and the names come from a binary's symbols; a fake on PATH that
prints such a byte stands in for a symbol no real binary here has."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprospec.native.backtrace import demangle


def test_cxxfilts_foreign_bytes_are_read_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "c++filt"
    tool.write_text("#!/bin/sh\nwhile read -r line; do printf 'f\\200(int)\\n'; done\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert demangle(["_Z1fi"]) == {"_Z1fi": "f\ufffd(int)"}
