"""A program a compiler sanitizer ended (AddressSanitizer in a ctypes library, preloaded
into Python): its report names the finding on its `SUMMARY:` line, then prints its shadow
memory and `==PID==ABORTING` last and exits 1. The error's message is the finding, where
it was `==23370==ABORTING`, a pid that differs in each run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import judged, run_attempt

SOURCE = """
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) int overflow(int n) {
    char *p = malloc(8); memset(p, 1, 8); int v = p[n]; free(p); return v;
}
int entry(int n) { return overflow(n); }
"""


def _libasan() -> str | None:
    if shutil.which("gcc") is None:
        return None
    found = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return found if found and Path(found).is_file() else None


@pytest.mark.skipif(_libasan() is None, reason="needs gcc with AddressSanitizer (libasan)")
@pytest.mark.parametrize(("symbolize", "place"), [(1, "heap.c in overflow"), (0, "libheap.so")])
def test_an_address_sanitizer_finding_is_the_errors_message(
    tmp_path: Path, symbolize: int, place: str
) -> None:
    """No path, line or offset: where it was built and where the code stands."""
    runner = LocalRunner(native_stacks=False)
    runner.prepare([])
    (tmp_path / "heap.c").write_text(SOURCE)
    lib = tmp_path / "libheap.so"
    subprocess.run(
        ["gcc", "-g", "-fsanitize=address", "-shared", "-fPIC", "-o", str(lib), "heap.c"],
        cwd=tmp_path,
        check=True,
    )
    script = tmp_path / "run.py"
    script.write_text(f"import ctypes\nctypes.CDLL({str(lib)!r}).entry(16)\n")
    options = f"detect_leaks=0:symbolize={symbolize}"
    env = {"LD_PRELOAD": str(_libasan()), "ASAN_OPTIONS": options}
    result, _ = run_attempt(
        runner, [sys.executable, str(script)], tmp_path, Expectation("error"), env=env
    )
    outcome = judged(result, "error", None, "main")
    assert outcome.exit_code == 1
    assert outcome.message == f"AddressSanitizer: heap-buffer-overflow {place}"
