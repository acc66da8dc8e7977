"""process/pipes.py on real processes: what a held process can read and write, joined across
a socket pair, and the processes whose pipes are not known (they may learn of a child's end
by other means than its output), as render's `hung_frame` reads them at a hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reprospec.process import pipes as pipes_module
from reprospec.process.pipes import held_pipes, unix_peers

# A Python child that says it is ready, after `setup` ran, then waits to be killed.
_WAIT = "import sys, time\n{setup}\nprint('ready', flush=True)\ntime.sleep(60)\n"


@contextmanager
def _child(setup: str = "", **popen: object) -> Iterator[int]:
    """A live child that ran `setup`; killed and reaped on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WAIT.format(setup=setup)],
        stdout=popen.pop("stdout", subprocess.PIPE),
        **popen,  # type: ignore[call-overload]
    )
    try:
        if proc.stdout is not None:
            assert proc.stdout.readline() == b"ready\n"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _inode(fd: int) -> int:
    return os.fstat(fd).st_ino


def test_a_socket_pair_s_two_ends_are_one_id() -> None:
    # A child's stdout that is a socket pair's end (libuv's stdio) and the end its launcher
    # reads are two inodes: the launcher's read was taken for a wait on nobody's socket.
    peers = unix_peers()
    if peers is None:
        pytest.skip("the kernel's socket listing (NETLINK_SOCK_DIAG) cannot be asked here")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        peers = unix_peers()
        assert peers is not None
        assert peers[_inode(ours.fileno())] == _inode(theirs.fileno())
        joined = min(_inode(ours.fileno()), _inode(theirs.fileno()))
        with _child(stdout=theirs.fileno()) as pid:
            said = b""
            while not said.endswith(b"\n"):
                said += ours.recv(64)
            assert said == b"ready\n"
            # Its stdout is what it writes, never a wait of its own.
            assert joined in held_pipes([pid])[pid].writes
            assert joined not in held_pipes([pid])[pid].reads


def test_a_pipe_s_write_end_at_any_descriptor_is_written() -> None:
    # A status pipe the child holds at a descriptor past 2 (systemd's notify, gpg's
    # --status-fd): only fd 1 and 2 were read as what a child writes.
    import fcntl

    read_end, write_end = os.pipe()
    # (a free descriptor of 100 or more: a fixed 9 of this process overwrote a plugin's
    # socket there, pytest-rerunfailures', whose thread then failed a later test)
    status = fcntl.fcntl(write_end, fcntl.F_DUPFD, 100)
    try:
        with _child(pass_fds=(status,)) as pid:
            pipes = held_pipes([pid])[pid]
            assert _inode(read_end) in pipes.writes
            assert _inode(read_end) not in pipes.reads
    finally:
        for fd in (read_end, write_end, status):
            os.close(fd)


@pytest.mark.parametrize(
    "setup",
    [
        "import signal; signal.signal(signal.SIGCHLD, lambda *a: None)",
        "import os; fd = os.pidfd_open(os.getpid())",
        "import os; fd = os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)",
        "import os; os.mkfifo('TMP/f'); fd = os.open('TMP/f', os.O_RDONLY | os.O_NONBLOCK)",
        "import os; fd = os.eventfd(0)",
    ],
    ids=["sigchld", "pidfd", "ptmx", "fifo", "eventfd"],
)
def test_a_process_that_may_learn_of_a_child_otherwise_is_not_known(
    setup: str, tmp_path: Path
) -> None:
    # A self-pipe's SIGCHLD handler, GNU make's jobserver wait, a pidfd's poll, `script`'s pty
    # master, a FIFO its child opens by path, an eventfd its child inherits: its wait on a
    # descriptor may be fed by a child, not by its output. Its own wait was taken for the hang
    # (`poll@libc<-main@pf`, `chld@sl`; a FIFO's and an eventfd's were links not followed).
    for call in ("pidfd_open", "eventfd"):
        if call in setup and not hasattr(os, call):
            pytest.skip(f"no os.{call}")
    with _child() as plain, _child(setup.replace("TMP", str(tmp_path))) as other:
        found = held_pipes([plain, other])
    assert plain in found
    assert other not in found


def test_a_process_holding_files_a_folder_and_dev_null_is_known() -> None:
    # Nothing below feeds a regular file, a directory or an ordinary character device: they
    # are the allowlist's, beside pipes and sockets; any other kind is not known.
    setup = (
        "import os; a = open(os.devnull); b = open(sys.executable, 'rb');"
        " c = os.open('/', os.O_RDONLY | os.O_DIRECTORY)"
    )
    with _child(setup) as pid:
        assert pid in held_pipes([pid])


def test_the_socket_listing_is_asked_once_and_only_at_a_socket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A dump of every Unix socket of the host (~12.5 us each) was asked at each hang a reader
    # waited in, though no process of the tree held a socket. Counted, not replaced: the
    # real listing answers each call.
    asked: list[dict[int, int] | None] = []

    def counted() -> dict[int, int] | None:
        asked.append(unix_peers())
        return asked[-1]

    monkeypatch.setattr(pipes_module, "unix_peers", counted)
    with _child() as plain:
        assert plain in held_pipes([plain])
    assert asked == []
    ours, theirs = socket.socketpair()
    with ours, theirs, _child(stdout=theirs.fileno()) as one, _child(stdout=theirs.fileno()) as two:
        held_pipes([one, two])
    assert len(asked) == 1
