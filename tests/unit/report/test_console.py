"""The consoles human output goes through."""

from __future__ import annotations

import contextlib
import os

import pytest

from reprospec.report.console import make_console


def test_a_console_whose_reader_has_gone_raises_broken_pipe_for_the_cli() -> None:
    # rich's on_broken_pipe raised SystemExit(1): `reprospec compare A B | head -3` exited 1,
    # silently, where cli.main exits 141 for a closed pipe (cli.md, exit codes).
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w")
    console = make_console(stream)
    try:
        with pytest.raises(BrokenPipeError):
            console.print("a line", markup=False, highlight=False)
        assert console.quiet
    finally:
        with contextlib.suppress(BrokenPipeError):  # what it still buffers, written nowhere
            stream.close()
    assert stream.closed
