"""The start barrier of `run.instances`: N copies of an attempt released at one moment.

Launching N processes one after another spreads their starts over the time each
interpreter takes to come up (tens of milliseconds each, more on a loaded
machine): a race between the copies would then depend on that spread. So every
instance is created first and waits, in launch.py, before it execs the command:

    engine                              instance I (launch.py --barrier DIR --instance I)
    mkfifo DIR/ready, DIR/go; open both
                                        open go; check the command can start
                                        write "I ok" (or "I error WHY") to ready
    read N "ok" lines from ready
    close go  ───────────────────────▶  read(go) returns: every instance wakes at once
                                        write DIR/instance-I.json, exec the command

Closing `go` is one event that wakes every blocked reader; `ready` tells the
engine that all N are blocked before it does. Each instance records when it
reached the barrier and when it was released (CLOCK_MONOTONIC, one clock for
every process of the machine), so the spread of the starts is measured, and
`max(ready) <= min(released)` holds by construction: no instance ran its
command before every instance existed.

When an instance cannot get there (its command cannot start, its process died,
the run is cancelled), the engine aborts: it closes `ready` (a late instance's
open fails), writes one byte per instance to `go` (a waiting instance reads it
and exits without running anything) and closes it. The runner then stops the
instances' process trees; the attempt did not run.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import select
import shutil
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from reprospec.core.frozen import frozen

READY = "ready"
GO = "go"
POLL_S = 0.05


@frozen
class Start:
    """When one instance reached the barrier and was released (CLOCK_MONOTONIC seconds)."""

    instance: int
    pid: int
    ready_at: float
    released_at: float


# MASTER_PORT is picked below the kernel's ephemeral range (ip_local_port_range), from here
# up: a port the kernel hands out itself (bind to 0, every connect's local port) could be
# any process's between the pick and the rank that binds it, seconds later (pt40). One
# below the range is taken only by a process that names it.
_LOWEST_PORT = 20000
# Fewer ports than this below the range (a machine that widened it): the kernel's pick.
_FEWEST_PORTS = 1000
_TRIES = 64
_PROC_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# The ports handed to running attempts of this engine (`release_port` gives one back).
_HANDED: set[int] = set()
_HANDED_LOCK = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing is bound to now (MASTER_PORT of a job of instances): one below the
    kernel's ephemeral range, which no other process's connection or `bind(0)` takes in
    the seconds before the rank binds it, and not one handed to another running attempt of
    this engine (`-j`) until `release_port` gives it back. Where too few ports lie below
    the range, the kernel's own pick for `host`."""
    low = _ephemeral_low()
    with _HANDED_LOCK:
        if low - _LOWEST_PORT >= _FEWEST_PORTS:
            chooser = random.SystemRandom()
            for _ in range(_TRIES):
                port = chooser.randrange(_LOWEST_PORT, low)
                if port not in _HANDED and _unbound(port):
                    _HANDED.add(port)
                    return port
        # The kernel's pick is any port unbound now, one handed out and not yet bound by
        # its rank too: asked again (it picks anew each time) until it is none of those.
        for _ in range(_TRIES):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((host, 0))
                picked: int = probe.getsockname()[1]
            if picked not in _HANDED:
                break
        _HANDED.add(picked)
        return picked


def release_port(port: int) -> None:
    """`port`'s attempt ended: `free_port` may hand it out again."""
    with _HANDED_LOCK:
        _HANDED.discard(port)


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (Linux's default where unread)."""
    try:
        return int(_PROC_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bound_now(port: int) -> bool:
    """Whether a live socket holds `port` now, on any address: one a store's bind (with
    SO_REUSEADDR, as torch's TCPStore binds) would fail on. A connection of the port's
    own server that it closed first stays in TIME_WAIT on the port for a minute: no
    process holds it, and a bind of a store is not refused by it."""
    return not _unbound(port, reuse=True)


def _unbound(port: int, *, reuse: bool = False) -> bool:
    """Whether no socket is bound to `port` on any address: a rank's store binds every
    address (IPv6's too where the machine has it), so one bound on any is a clash. Without
    `reuse` a connection of the port's in TIME_WAIT counts as bound too (a pick stays
    clear of it)."""
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6
        with probe:
            if reuse:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return False
    return True


class StartBarrier:
    """The engine's side of the barrier in `folder` (created; `close` removes it)."""

    def __init__(self, folder: Path, count: int) -> None:
        self.folder = folder
        self.count = count
        folder.mkdir(parents=True, exist_ok=True)
        for name in (READY, GO):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
            os.mkfifo(folder / name, 0o600)
        # O_RDWR (Linux): opening never blocks, and the engine is a writer of `ready` too,
        # so select() never sees an end of file while instances come and go.
        self._ready: int | None = os.open(folder / READY, os.O_RDWR | os.O_NONBLOCK)
        self._go: int | None = os.open(folder / GO, os.O_RDWR | os.O_NONBLOCK)
        self._buffer = b""
        self._ok: set[int] = set()
        self._lock = threading.Lock()

    def launch_options(self, instance: int) -> list[str]:
        """launch.py's options that make instance `instance` wait here."""
        return ["--barrier", str(self.folder), "--instance", str(instance)]

    def wait_ready(self, stop: Callable[[], str | None]) -> str | None:
        """Block until every instance waits at the barrier (None), or why they never will.

        `stop` is asked every POLL_S seconds: a reason (an instance ended before it
        got there, the run was cancelled) ends the wait with that reason.
        """
        assert self._ready is not None
        while len(self._ok) < self.count:
            readable, _, _ = select.select([self._ready], [], [], POLL_S)
            if readable:
                with contextlib.suppress(BlockingIOError):
                    self._buffer += os.read(self._ready, 4096)
                problem = self._take_lines()
                if problem is not None:
                    return problem
                continue
            reason = stop()
            if reason is not None:
                return reason
        return None

    def _take_lines(self) -> str | None:
        while b"\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n", 1)
            number, _, said = raw.decode("utf-8", "replace").partition(" ")
            if said == "ok" and number.isdigit():
                self._ok.add(int(number))
            elif said.startswith("error "):
                return said.removeprefix("error ")
        return None

    def release(self) -> None:
        """Wake every instance at once: close `go` (each blocked read returns end of file)."""
        with self._lock:
            self._close_ready()
            if self._go is not None:
                os.close(self._go)
                self._go = None

    def abort(self) -> None:
        """Release no one: a late instance cannot say it is ready, a waiting one reads a byte."""
        with self._lock:
            self._close_ready()
            if self._go is not None:
                with contextlib.suppress(OSError):
                    os.write(self._go, b"x" * self.count)
                os.close(self._go)
                self._go = None

    def _close_ready(self) -> None:
        if self._ready is not None:
            os.close(self._ready)
            self._ready = None

    def starts(self) -> dict[int, Start]:
        """What each released instance recorded (instance -> Start); unreadable ones left out."""
        found: dict[int, Start] = {}
        for instance in range(self.count):
            try:
                data = json.loads((self.folder / f"instance-{instance}.json").read_text("utf-8"))
                found[instance] = Start(
                    instance=instance,
                    pid=int(data["pid"]),
                    ready_at=int(data["ready_ns"]) / 1e9,
                    released_at=int(data["released_ns"]) / 1e9,
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    def close(self) -> None:
        """Abort if nothing was released yet, and remove the barrier's folder."""
        self.abort()
        shutil.rmtree(self.folder, ignore_errors=True)
