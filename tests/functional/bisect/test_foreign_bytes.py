"""pip's answer in bytes that are not UTF-8 (an index's page or a path it quotes): read
replaced, a located error, never a UnicodeDecodeError that ends `bisect` with a traceback.
A real pip here cannot be made to print such a byte without an index that serves one: a
fake interpreter (sys.executable, which runs `-m pip`) stands in for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.bisect.releases import list_versions
from reprospec.errors import InfraError
from reprospec.venvs import IndexConfig


def test_pips_refusal_in_foreign_bytes_is_an_infra_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nprintf 'ERROR: index \\200 unreachable\\n' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(InfraError, match="cannot list the versions of torch: ERROR: index \ufffd"):
        list_versions("torch", IndexConfig())
