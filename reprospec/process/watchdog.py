"""The engine's watchdog: when the engine dies, what it was running dies too.

An engine killed with SIGKILL (the OOM killer, `kill -9`, a batch system) runs no
cleanup: its attempts' processes would run on past their timeout, their
containers stay up, their temporary folders stay on disk. So the engine starts
this program once (`python -I -S watchdog.py`, in a session of its own) and tells
it, on its stdin, what it has running:

    attempt TAG TOKEN      an attempt's processes: the token in their environment,
    done TAG               the tag in their RLIMIT_LOCKS (see below)
    container NAME         a container the engine created
    done-container NAME
    path PATH              a temporary folder of the engine
    done-path PATH

It reads them a few times a second (`DRAIN_S`), not as each comes: only its stdin's end
wakes it at once (unless the engine's first line is `each`: its pipe stayed small).

When stdin ends (the engine exited, however it exited), everything still
registered is killed or removed, and the watchdog exits. The engine's in-flight
records in the run folder (leftovers.py) cover a watchdog that died with it:
`--resume` reaps them with `kill_tagged` from here.

The tag: a process that calls setsid and clears its environment loses both the
process group and the token, but not its resource limits, which every descendant
inherits through fork, exec, setsid and a cleared environment. RLIMIT_LOCKS has
done nothing since Linux 2.4.25, so its soft limit carries a tag (TAG_MAGIC in
the high bits, random below) at no cost to the attempt; /proc/PID/limits shows
it, for zombies too.

Standard library only: it runs with `-I -S`, outside the engine's imports.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterator

TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
TAG_RESOURCE = 10  # RLIMIT_LOCKS (Python's resource module has no name for it)
TAG_MAGIC = 0x2E5D << 44
TAG_MASK = 0xFFFF << 44
_LIMITS_LINE = b"Max file locks"
KILL_WAIT_S = 3.0


def is_tag(value: int | None) -> bool:
    """Whether a RLIMIT_LOCKS soft limit is an attempt's tag."""
    return value is not None and value & TAG_MASK == TAG_MAGIC


def tag_of(pid: int) -> int | None:
    """The RLIMIT_LOCKS soft limit of `pid` (None: unlimited, gone, or unreadable)."""
    try:
        with open(f"/proc/{pid}/limits", "rb") as handle:
            for line in handle:
                if line.startswith(_LIMITS_LINE):
                    soft = line[len(_LIMITS_LINE) :].split()[0]
                    return int(soft) if soft.isdigit() else None
    except (OSError, ValueError, IndexError):
        return None
    return None


def _holds_token(pid: int, needles: Collection[bytes]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read(1 << 20)
    except OSError:
        return False
    return any(needle in environ.split(b"\0") for needle in needles)


def _our_pids() -> Iterator[int]:
    me, uid = os.getpid(), os.getuid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{name}").st_uid == uid:
                yield int(name)


def alive(pid: int) -> bool:
    """Whether `pid` runs (exists and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X", b"x")


def tagged(tokens: Collection[str], tags: Collection[int]) -> list[int]:
    """This user's live processes that carry one of `tokens` (environment) or `tags`."""
    needles = [f"{TOKEN_VAR}={token}".encode() for token in tokens]
    found = []
    for pid in _our_pids():
        if not alive(pid):
            continue
        if (tags and tag_of(pid) in tags) or (needles and _holds_token(pid, needles)):
            found.append(pid)
    return found


def kill_tagged(tokens: Collection[str], tags: Collection[int], wait_s: float = KILL_WAIT_S) -> int:
    """SIGKILL every process carrying one of `tokens` or `tags` until none is left; how many."""
    if not tokens and not tags:
        return 0
    killed: set[int] = set()
    deadline = time.monotonic() + wait_s
    while True:
        pids = tagged(tokens, tags)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        if not pids or time.monotonic() > deadline:
            return len(killed)
        time.sleep(0.02)


def remove_container(name: str) -> None:
    """`docker rm -f NAME` (best effort: no docker CLI, no daemon, already gone)."""
    docker = shutil.which("docker")
    if docker is None:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [docker, "rm", "-f", "-v", name],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )


# How often the watchdog reads what the engine told it while the engine lives (seconds).
DRAIN_S = 0.25
# The engine's first line where it could not enlarge the pipe: read each line as it comes
# (a small pipe would fill between two reads, and the engine wait for the next).
EACH = b"each"


def _told(fd: int) -> Iterator[bytes]:
    """The lines the engine writes to `fd` (stdin), to its end (the engine exited).

    Read a few times a second, not as each comes: the watchdog waits for the end of its
    stdin alone (a poll for no event: the kernel then wakes it at the pipe's close, not at
    each write), and reads what is there every DRAIN_S, so the engine's pipe never fills
    (its lines, about 90 bytes an attempt, in a pipe the engine enlarges to 1 MiB). Woken at
    every line, the watchdog spent about 70 us of CPU per attempt of `true`, beside the
    engine's 1.4 ms (issue 30, item 5). What is written before the engine dies is in the
    pipe when the watchdog reads it at the end, so nothing told is lost. Told EACH (the pipe
    could not be enlarged), it reads blocking from then on: woken by each line again.
    """
    import select

    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, 0)  # POLLHUP and POLLERR only, which poll reports unasked
    pending = b""
    hangup = select.POLLHUP | select.POLLERR
    while True:
        ended = any(event & hangup for _, event in poller.poll(DRAIN_S * 1000))
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                if pending:
                    yield pending
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if line == EACH:
                    # From now on a blocking read returns each line as it comes (and the
                    # end at the pipe's close): this loop reads to the end, no poll.
                    os.set_blocking(fd, True)
                else:
                    yield line
        if ended:
            # Hung up: the next read returns what is left, then the end (no busy poll).
            os.set_blocking(fd, True)


def main() -> int:
    attempts: dict[int, str] = {}
    containers: set[str] = set()
    paths: set[str] = set()
    for raw in _told(sys.stdin.fileno()):
        words = raw.decode("utf-8", "surrogateescape").rstrip("\n").split(" ", 2)
        verb, args = words[0], words[1:]
        with contextlib.suppress(ValueError, IndexError):
            if verb == "attempt":
                attempts[int(args[0])] = args[1]
            elif verb == "done":
                attempts.pop(int(args[0]), None)
            elif verb == "container":
                containers.add(args[0])
            elif verb == "done-container":
                containers.discard(args[0])
            elif verb == "path":
                paths.add(" ".join(args))
            elif verb == "done-path":
                paths.discard(" ".join(args))
    # The engine is gone: nothing registered may outlive it.
    kill_tagged(set(attempts.values()), set(attempts))
    for name in containers:
        remove_container(name)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
