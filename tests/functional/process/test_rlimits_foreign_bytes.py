"""The private /dev/shm probe's refusal in bytes that are not UTF-8 (the kernel's or a
mount's words, a path among them): read replaced, never a UnicodeDecodeError that ends a run
with a traceback. This machine's probe says nothing such: a fake interpreter
(sys.executable, which runs the probe) prints it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.process.rlimits import namespaces_permitted


def test_the_shm_probes_refusal_in_foreign_bytes_is_read_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\nprintf 'reprospec: shm_size not applied: mount /d\\200v/shm: denied\\n' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    if not sys.platform.startswith("linux"):
        pytest.skip("the probe runs on Linux only")
    assert namespaces_permitted.__wrapped__() == "mount /d\ufffdv/shm: denied"
