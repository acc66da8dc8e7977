"""The pipes and sockets a held process has open, read from /proc at a hang.

A launcher that reads its child's output waits in `read` or `poll` as a process that waits
on a descriptor of its own does (a pipe nobody writes, a socket pair's end it holds both
ends of): its stacks cannot tell the two apart, its descriptors can. The parent's own wait
is the place only where we are sure nothing below it feeds what it waits on (native/
render.py's `hung_frame`); anything not known passes the place to the child, as before.
Each live process of a hung tree is read here while it is stopped.

Known are only the descriptors read here and those nothing can feed: a pipe, a socket as
below, a regular file, a directory, a character device but a pty's master (/dev/null, a
terminal). Any other makes the process not known (None): a FIFO opened by its path (its
writers are not followed), an eventfd, an epoll, a pidfd, a signalfd, a timerfd, a pty's
master (`script -qec ./nap`) all may be fed by a child otherwise than its output. So are a
process that holds more descriptors than are read (`_MOST`), one with a SIGCHLD handler (a
self-pipe's writer, GNU make's jobserver wait), one with a socket other than a Unix one
that does not listen (a TCP connection's peer is not followed), or any socket where the
kernel's socket listing cannot be asked.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from collections.abc import Callable, Iterable, Mapping

from reprospec.core.lazyre import Lazy
from reprospec.native.stacks import Pipes
from reprospec.process.tree import read_proc

# /proc/PID/fd's link of a pipe or a socket (`pipe:[4026]`, `socket:[4027]`): its inode.
_INODE = Lazy(r"^(pipe|socket):\[(\d+)\]$")
# /proc/PID/fdinfo's `flags:` (octal open flags) and its access mode's write-only value.
_FLAGS = Lazy(r"^flags:\s*([0-7]+)$")
_O_ACCMODE = 0o3
# A process holds more than this many descriptors only when it leaks them: it is not read
# (their links are one system call each, at a hang's deadline), and not known, since a
# partial list could miss the very end a child writes.
_MOST = 4096
# A pty's master (/dev/ptmx, /dev/pts/ptmx), the one character device known to be fed: it
# reads what a child writes to its terminal.
_PTY_MASTER = "ptmx"
# /proc/PID/status's SigCgt (the signals it catches, hex): SIGCHLD's bit (signal 17).
_SIGCHLD_BIT = 1 << (17 - 1)
# /proc/net/tcp's state of a listening socket (TCP_LISTEN, 0x0A).
_LISTEN = "0A"

# NETLINK_SOCK_DIAG's dump of every Unix socket with its peer (ss -x's question).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST_DUMP = 0x301
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_UDIAG_SHOW_PEER = 4
_UNIX_DIAG_PEER = 2
# How long the socket listing may take to answer (seconds): a dump of every Unix socket of the
# host, ~12.5 us each, read at a hang's deadline; past it, no socket is known.
_ASK_TIMEOUT = 1.0


def held_pipes(pids: Iterable[int]) -> dict[int, Pipes]:
    """Each of `pids`' pipes and sockets (`Pipes`); a process whose descriptors cannot be
    read or are not known (the module's docstring) is left out, which its reader takes as
    not known: the place passes to the child. The host's socket listing is asked once, at
    the first socket of the tree: a tree of pipes alone costs no dump of every socket."""
    asked: list[dict[int, int] | None] = []

    def peers() -> dict[int, int] | None:
        if not asked:
            asked.append(unix_peers())
        return asked[0]

    found: dict[int, Pipes] = {}
    for pid in pids:
        pipes = _pipes(pid, peers)
        if pipes is not None:
            found[pid] = pipes
    return found


def _pipes(pid: int, peers: Callable[[], Mapping[int, int] | None]) -> Pipes | None:
    # str paths and os calls, as tree.py reads /proc: no Path object per descriptor.
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)  # noqa: PTH208
    except OSError:
        return None
    if len(names) > _MOST:
        return None
    reads: set[int] = set()
    writes: set[int] = set()
    mounts = _Mounts(pid)
    others: list[tuple[int, int]] = []  # sockets no Unix one: (fd, inode)
    ids: dict[int, int] = {}  # each descriptor's pipe or socket id
    for name in names:
        try:
            link = os.readlink(f"{folder}/{name}")  # noqa: PTH115
        except OSError:
            continue  # closed since the listing
        found = _INODE.match(link)
        if found is None or not name.isdigit():
            if not _inert(pid, name, link, mounts):
                return None
            continue
        fd, inode = int(name), int(found.group(2))
        ids[fd] = inode
        if found.group(1) == "pipe":
            # A write end at any descriptor keeps its reader waiting: a status pipe at fd 9,
            # dash's saved copy of its stdout while it runs `./nap > /dev/null`.
            if _readable(pid, fd):
                reads.add(inode)
            else:
                writes.add(inode)
            continue
        table = peers()
        if table is None:
            return None
        if inode not in table:
            others.append((fd, inode))
            continue
        # A socket pair's two ends are one id (the lower inode), as a pipe's are; a socket
        # is read and written both, so any process holding it may feed its reader.
        joined = ids[fd] = min(inode, table[inode] or inode)
        writes.add(joined)
        reads.add(joined)
    if others:
        listening = _listening(pid)
        if any(inode not in listening for _, inode in others):
            return None
        # A server's listening socket: fed by no child unless that child holds it too.
        writes.update(inode for _, inode in others)
        reads.update(inode for _, inode in others)
    if _catches_sigchld(pid):
        return None
    # Its own stdout and stderr are no wait of its own (a socket pair as its stdout).
    reads -= {ids[fd] for fd in (1, 2) if fd in ids}
    return Pipes(reads=tuple(sorted(reads)), writes=tuple(sorted(writes)))


def _inert(pid: int, name: str, link: str, mounts: _Mounts) -> bool:
    """Whether descriptor `name` of `pid` (its link `link`), neither a pipe nor a socket, is
    one nothing below may feed: a regular file, a directory, a character device but a pty's
    master. An allowlist: a FIFO, an eventfd, an epoll, any kind not named is not. A
    descriptor closed since the listing (its `stat` fails) is none of the process's.

    The `stat` follows the link into its file system, asked only of a local one
    (`_LOCAL_FS`): a FUSE file's daemon in the stopped tree never answers it (the engine
    waited for good, the attempt's tree left stopped), nor may a network mount's server."""
    if not link.startswith("/"):
        return False  # anon_inode:[eventfd], [eventpoll], [pidfd], net:[...]: not followed
    if not name.isdigit() or mounts.fstype(int(name)) not in _LOCAL_FS:
        return False
    try:
        mode = os.stat(f"/proc/{pid}/fd/{name}").st_mode  # noqa: PTH116 - through the link
    except OSError:
        return True
    if stat.S_ISCHR(mode):
        return not link.endswith(_PTY_MASTER)
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


# File systems whose `stat` no process of the stopped tree answers (FUSE's, a network
# mount's are left out: `_inert`).
_LOCAL_FS = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "tmpfs", "ramfs", "overlay",
        "devtmpfs", "devpts", "proc", "sysfs", "cgroup", "cgroup2", "mqueue", "hugetlbfs",
        "squashfs", "erofs", "iso9660", "vfat", "exfat",
    }
)  # fmt: skip
_MNT_ID = Lazy(r"^mnt_id:\s*(\d+)$")


class _Mounts:
    """The file system type of a process's descriptors (fdinfo's `mnt_id`, its
    mountinfo's type), mountinfo read once, at the first asked."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._types: dict[int, str] | None = None

    def fstype(self, fd: int) -> str:
        """The type of the file system `fd` is open on; "" where it cannot be read."""
        try:
            info = read_proc(f"/proc/{self._pid}/fdinfo/{fd}").decode("ascii", "replace")
        except OSError:
            return ""
        found = next((m for m in map(_MNT_ID.match, info.splitlines()) if m), None)
        if found is None:
            return ""
        if self._types is None:
            self._types = _mount_types(self._pid)
        return self._types.get(int(found.group(1)), "")


def _mount_types(pid: int) -> dict[int, str]:
    """Each mount id of `pid`'s mount namespace and its file system type (mountinfo: the id
    first, the type after the ` - ` that ends the optional fields)."""
    try:
        text = read_proc(f"/proc/{pid}/mountinfo").decode("utf-8", "replace")
    except OSError:
        return {}
    types: dict[int, str] = {}
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        if sep and head.split(" ", 1)[0].isdigit() and tail:
            types[int(head.split(" ", 1)[0])] = tail.split(" ", 1)[0]
    return types


def _readable(pid: int, fd: int) -> bool:
    """Whether `fd` was opened for reading: a pipe's read end, not its write end. True
    where its flags cannot be read: a read end is what a reader waits on, not known."""
    try:
        text = read_proc(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
    except OSError:
        return True
    for line in text.splitlines():
        found = _FLAGS.match(line)
        if found is not None:
            return int(found.group(1), 8) & _O_ACCMODE != os.O_WRONLY
    return True


def _catches_sigchld(pid: int) -> bool:
    """Whether `pid` has a SIGCHLD handler (True where its status cannot be read)."""
    try:
        text = read_proc(f"/proc/{pid}/status").decode("ascii", "replace")
    except OSError:
        return True
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & _SIGCHLD_BIT)
    return True


def _listening(pid: int) -> set[int]:
    """The inodes of the TCP sockets listening in `pid`'s network namespace."""
    found: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            text = read_proc(f"/proc/{pid}/net/{name}").decode("ascii", "replace")
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and fields[9].isdigit():
                found.add(int(fields[9]))
    return found


def unix_peers() -> dict[int, int] | None:
    """Each Unix socket's peer inode (0: none, a listening or unconnected one), by the
    kernel's socket listing (NETLINK_SOCK_DIAG, as `ss -x` asks), whole: a socket absent
    from it is no Unix one (a TCP one, read as such), and {} says the host has none open.
    None where it cannot be asked (no such netlink family, a sandbox), answered an error or
    ended its dump unfinished, or did not answer in `_ASK_TIMEOUT`: then no socket is known,
    and a process holding one is not."""
    try:
        asking = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
    except OSError:
        return None
    # A timeout is an OSError (TimeoutError) of send or recv: None, as any failure is.
    asking.settimeout(_ASK_TIMEOUT)
    peers: dict[int, int] = {}
    with asking:
        # struct unix_diag_req: family, protocol, pad, states (all), ino, show, cookie[2].
        request = struct.pack(
            "=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, _UDIAG_SHOW_PEER, 0, 0
        )
        header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY,
                             _NLM_F_REQUEST_DUMP, 1, 0)  # fmt: skip
        try:
            asking.send(header + request)
            while _read_messages(asking.recv(1 << 16), peers):
                pass
        except OSError:
            return None
    return peers


def _read_messages(data: bytes, peers: dict[int, int]) -> bool:
    """One answer's netlink messages into `peers`; False at the dump's end. An error's
    message, a malformed one or an empty answer (the dump cut short) raise OSError: a partial
    listing would read a Unix socket left out of it as a TCP one."""
    if not data:
        raise OSError("the socket listing ended before its dump was done")
    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if kind == _NLMSG_DONE:
            return False
        if kind == _NLMSG_ERROR or length < 16:
            raise OSError("the socket listing answered an error")
        # struct unix_diag_msg (16 bytes: family, type, state, pad, ino, cookie[2]), then
        # its attributes (len, type, value; each aligned to 4).
        body = data[at + 16 : at + length]
        inode = struct.unpack_from("=I", body, 4)[0]
        peers[inode] = 0
        attribute = 16
        while attribute + 4 <= len(body):
            size, kind = struct.unpack_from("=HH", body, attribute)
            if size < 4:
                break
            if kind == _UNIX_DIAG_PEER and size >= 8:
                peers[inode] = struct.unpack_from("=I", body, attribute + 4)[0]
            attribute += (size + 3) & ~3
        at += (length + 3) & ~3
    return True
