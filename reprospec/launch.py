"""`python -m reprospec.launch [--shm-size N] [--memory N] -- ARGV...`: apply limits, exec ARGV.

Stdlib only and tiny, because it runs before every limited attempt. `shm_size`:
a private mount namespace with its own tmpfs on /dev/shm (needs CAP_SYS_ADMIN;
the namespace, and every file in it, dies with the attempt's last process).
`memory`: RLIMIT_AS, inherited by every descendant. A limit that cannot be
applied is reported on stderr and the command runs without it.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from collections.abc import Sequence

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000


USAGE = (
    "usage: python -m reprospec.launch [--shm-size BYTES] [--memory BYTES] [--probe] -- COMMAND..."
)


def _libc() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not glibc: ask the slower way (imports subprocess)
        from ctypes import util

        return ctypes.CDLL(util.find_library("c"), use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(f"{what}: {os.strerror(errno)}")


def private_shm(size: int) -> None:
    """Give this process (and its descendants) a fresh /dev/shm tmpfs of `size` bytes."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Without this, the tmpfs mount would propagate back to the host's /dev/shm.
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    options = f"size={size},mode=1777".encode()
    _check(
        libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, options),
        "mount tmpfs /dev/shm",
    )


def limit_memory(size: int) -> None:
    """RLIMIT_AS: allocations past `size` bytes of address space fail (MemoryError, bad_alloc)."""
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


def parse(argv: Sequence[str]) -> tuple[dict[str, int], bool, list[str]]:
    """(limits, probe, command); by hand: argparse costs more than the rest of the launch."""
    limits: dict[str, int] = {}
    probe = False
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--probe":
            probe = True
        elif option in ("--shm-size", "--memory") and args and args[0].isdigit():
            limits[option[2:].replace("-", "_")] = int(args.pop(0))
        else:
            raise SystemExit(f"{USAGE}\nunexpected argument {option!r}")
    return limits, probe, args[1:]


APPLY = {"shm_size": private_shm, "memory": limit_memory}


def main(argv: Sequence[str] | None = None) -> int:
    limits, probe, command = parse(sys.argv[1:] if argv is None else argv)
    failed = False
    for name, size in limits.items():
        try:
            APPLY[name](size)
        except (
            Exception
        ) as exc:  # whatever went wrong, the attempt still runs, unlimited and said so
            failed = True
            sys.stderr.write(f"reprospec: {name} not applied: {exc}\n")
    if probe:
        return 1 if failed else 0
    if not command:
        raise SystemExit(f"{USAGE}\nno command given after --")
    sys.stderr.flush()
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced us


if __name__ == "__main__":
    sys.exit(main())
