"""A crash in a library stripped on one machine and built with symbols on another: its
signature's native frame names the library's function on one (`strlen@libc<-inner_len@
libcrash`) and not on the other (`strlen@libc<-??@libcrash`). An unknown name is no other
crash, at the top of the frame or at its caller (native/render.py's unnamed_agrees); nor
is a library whose file was removed once loaded, mapped as `libcrash.so (deleted)`
(native/symbols.py's short_library)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec import native
from tests.support.cli import Cli

# The library's function that calls libc is hidden, so `strip` leaves it no name at all
# (an exported one keeps its .dynsym name); the fault is in libc's strlen, its caller that
# function: the signature's frame is both.
SOURCE = """
#include <string.h>
__attribute__((noinline, visibility("hidden"))) size_t inner_len(const char *p) {
    return strlen(p) + 1;
}
size_t entry(const char *p) { return inner_len(p) * 2; }
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
@pytest.mark.skipif(shutil.which("strip") is None, reason="needs binutils' strip")
@pytest.mark.skipif(
    native.gdb_path() is None and shutil.which("eu-stack") is None,
    reason="needs gdb or eu-stack to read a core",
)
@pytest.mark.skipif(native.core_pattern().piped, reason="cores piped to a handler")
def test_a_stripped_caller_is_the_same_crash_as_its_named_build(cli: Cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "named").mkdir(parents=True)
    (work / "stripped").mkdir()
    (work / "crash.c").write_text(SOURCE)
    (work / "deleted").mkdir()
    for folder in ("named", "stripped", "deleted"):
        flags = [] if folder == "stripped" else ["-g"]
        lib = str(work / folder / "libcrash.so")
        subprocess.run(
            ["gcc", *flags, "-O0", "-shared", "-fPIC", "-o", lib, str(work / "crash.c")],
            check=True,
        )
    subprocess.run(["strip", str(work / "stripped" / "libcrash.so")], check=True)
    # The third build's file is removed once loaded (an extension built into a temporary
    # folder): its mapping is `libcrash.so (deleted)`, its names unread.
    (work / "crash.py").write_text(
        "import ctypes, os\n"
        "path = os.path.abspath(os.environ['LIB'])\n"
        "lib = ctypes.CDLL(path)\n"
        "if 'deleted' in path:\n    os.remove(path)\n"
        "lib.entry(None)\n"
    )
    spec = work / "spec.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: stripped\n"
        f"command: {json.dumps([sys.executable, 'crash.py'])}\n"
        "matrix:\n  build: [named, stripped, deleted]\n"
        "environment:\n  env:\n    LIB: ${{ matrix.build }}/libcrash.so\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    run = result.latest_run()
    cells = json.loads((run / "results.json").read_text())["cells"]
    signatures = {c["matrix"]["build"]: c["attempts"][0]["outcome"]["signature"] for c in cells}
    named, stripped = signatures["named"], signatures["stripped"]
    assert named == "crash:SIGSEGV:main:strlen@libc<-inner_len@libcrash", named
    assert stripped == "crash:SIGSEGV:main:strlen@libc<-??@libcrash", stripped
    # (Named where a reader finds the file's symbols all the same: then it is `named`.)
    assert signatures["deleted"] in (stripped, named), signatures["deleted"]
    for other in (stripped, signatures["deleted"]):
        assert native.agrees(other, named, native_unknown=False, across_builds=True)
        assert native.agrees(named, other, native_unknown=False, across_builds=True)
    # The run's report counts them one failure, under the named frame.
    report = (run / "report.md").read_text()
    assert f"`{named}` (3 attempts)" in report, report
    assert stripped not in report
