"""A core's command line is its whole argv, read from the process's stack (native/coreargv.py),
and NT_PRPSINFO's first 80 bytes only where the stack does not add up: real crashes of real
processes whose argv is long, each leaving its core as `core` in its working directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from reprospec import native

pytestmark = pytest.mark.skipif(
    native.core_pattern().raw != "core", reason="kernel.core_pattern does not write `core` here"
)

CRASH = "import ctypes; ctypes.string_at(8)"
# The stack's argv[1] pointed at an address no segment of the core holds, then the crash:
# /proc/PID/stat's startstack is the address of argc, argv's pointers follow it.
POINT_ARGV_AWAY = (
    "import ctypes, struct\n"
    "start = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[25])\n"
    "with open('/proc/self/mem', 'r+b') as mem:\n"
    "    mem.seek(start + 16)\n"
    "    mem.write(struct.pack('<Q', 0x10000))\n"
    "ctypes.string_at(8)\n"
)
# Anonymous memory, the stack with it, left out of the core (core(5), coredump_filter);
# no space in it: pr_psargs' 79 bytes end inside it, never between two arguments.
UNDUMPED_STACK = (
    "open('/proc/self/coredump_filter','w').write('0');__import__('ctypes').string_at(8)"
)


def _interpreter(tmp_path: Path) -> str:
    """This interpreter under a venv-like path 130 bytes long: pr_psargs cuts inside it."""
    folder = tmp_path / ("projects-" + "p" * 60) / ("experiment-" + "x" * 40) / ".venv" / "bin"
    folder.mkdir(parents=True)
    (folder / "python3").symlink_to(sys.executable)
    return str(folder / "python3")


def _core_of(argv: list[str], workdir: Path) -> native.CoreInfo:
    """The core a real SIGSEGV of `argv` left in `workdir`, read."""
    done = subprocess.run(
        argv, cwd=workdir, preexec_fn=native.allow_cores, capture_output=True, check=False
    )
    assert done.returncode == -11, done.stderr[-2000:]
    info = native.read_core(workdir / "core")
    assert info is not None, sorted(p.name for p in workdir.iterdir())
    return info


def _long_argv(tmp_path: Path, program: str) -> list[str]:
    return [
        _interpreter(tmp_path),
        "-c",
        program,
        "--config",
        "configs/a config with spaces.yaml",
        "--seed",
        "7",
        "--output-directory=" + "o" * 40,
    ]


def test_a_core_holds_the_whole_command_line(tmp_path: Path) -> None:
    argv = _long_argv(tmp_path, CRASH)
    info = _core_of(argv, tmp_path)
    assert len(info.command) > 200
    # As /proc/PID/cmdline reads: every argument whole, the one with spaces too.
    assert info.command == " ".join(argv)
    assert info.signal == "SIGSEGV"


def test_a_core_whose_argv_points_outside_its_memory_keeps_pr_psargs(tmp_path: Path) -> None:
    argv = _long_argv(tmp_path, POINT_ARGV_AWAY)
    info = _core_of(argv, tmp_path)
    # The kernel's first 79 bytes, cut inside the interpreter's path: one word, as it is.
    assert info.command == argv[0][:79]


def test_a_core_without_its_stack_keeps_pr_psargs_without_the_argument_cut(
    tmp_path: Path,
) -> None:
    short = Path(tempfile.mkdtemp(prefix="rs-"))  # /tmp/rs-XXXXXXXX: its length is fixed
    try:
        (short / "py").symlink_to(sys.executable)
        argv = [str(short / "py"), "-c", UNDUMPED_STACK, "--config", "a config.yaml"]
        info = _core_of(argv, tmp_path)
    finally:
        shutil.rmtree(short)
    # The words pr_psargs holds whole, and `...` where the kernel cut one in two.
    assert info.command == f"{short}/py -c ..."
