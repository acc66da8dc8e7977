"""NT_PRPSINFO's 80 bytes as the command line where a core's stack could not be read: the
kernel's own pr_psargs (fs/binfmt_elf.c fill_psinfo: the first 79 bytes of the argument
area, each NUL made a space, then a NUL). The real cores: functional/native/test_coreargv.py."""

from __future__ import annotations

import pytest

from reprospec.native.coreinfo import _psargs_command


def _psargs(argv: list[str]) -> bytes:
    """pr_psargs as the kernel fills it for a process run as `argv`."""
    area = b"".join(arg.encode() + b"\0" for arg in argv)
    shown = area[:79].replace(b"\0", b" ")
    return shown + b"\0" * (80 - len(shown))


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["python3", "train.py", "--seed", "7"], "python3 train.py --seed 7"),
        # Cut inside the last argument it holds: that one is left out, `...` says so.
        (["python3", "train.py", "--output=" + "o" * 80], "python3 train.py ..."),
        # Cut where an argument ended: every argument shown is whole.
        (["python3", "t" * 70, "--seed", "7"], "python3 " + "t" * 70 + " ..."),
        # One word cut: its first bytes, all there is.
        (["/" + "v" * 100 + "/python3", "x.py"], "/" + "v" * 78),
    ],
)
def test_pr_psargs_shows_whole_arguments_only(argv: list[str], command: str) -> None:
    assert _psargs_command(_psargs(argv)) == command


def test_a_command_line_rewritten_over_padding_is_whole() -> None:
    # The preload server's forked attempt writes its command over the server's, padded
    # with NULs (harness/reprospec_forkserver.py `_write_argv`); the stack's argv pointers
    # still point into the server's, so pr_psargs is what is shown: whole, not cut.
    area = b"python\0train.py\0--seed\0" + b"7" + b"\0" * 2048
    psargs = area[:79].replace(b"\0", b" ") + b"\0"
    assert _psargs_command(psargs) == "python train.py --seed 7"
