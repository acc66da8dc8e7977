"""The MASTER_PORT of a job of instances (barrier.free_port): below the kernel's ephemeral
range, never one bound, never one handed to another running attempt (pt40 item 4)."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprospec.process import barrier
from reprospec.process.barrier import free_port, release_port


def _ephemeral() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


# A machine whose range leaves too few ports below it gets the kernel's pick (tested alone).
below_the_range = pytest.mark.skipif(
    _ephemeral()[0] - barrier._LOWEST_PORT < barrier._FEWEST_PORTS,
    reason="this machine's ephemeral range leaves too few ports below it",
)


@below_the_range
def test_the_port_lies_below_the_range_the_kernel_hands_out_itself() -> None:
    # The kernel's own pick (bind to 0) was a port any process's connect could take as
    # its local port before the rank bound it.
    low, high = _ephemeral()
    ports = [free_port() for _ in range(20)]
    try:
        assert all(not low <= port <= high for port in ports), ports
        assert len(set(ports)) == len(ports)  # none handed out twice while held
    finally:
        for port in ports:
            release_port(port)


@below_the_range
def test_a_bound_port_or_one_handed_out_is_not_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    low, _ = _ephemeral()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        bound = taken.getsockname()[1]
        monkeypatch.setattr(barrier, "_ephemeral_low", lambda: max(low, bound + 2))
        # The first call: the bound port, then a free one; the second: only those two.
        picks: Iterator[int] = iter([bound, bound + 1, *[bound + 1, bound] * 32])

        class Chooser(random.Random):
            def randrange(self, *_: object, **__: object) -> int:
                return next(picks)

        monkeypatch.setattr(random, "SystemRandom", Chooser)
        first = free_port()
        assert first == bound + 1  # the bound one skipped
        # Handed to a running attempt: not again (the kernel's pick instead), until it is
        # given back.
        second = free_port()
        release_port(first)
        release_port(second)
        assert second not in (bound, bound + 1)


def test_the_kernels_pick_is_not_one_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # A machine whose ephemeral range leaves too few ports below it: the kernel's pick,
    # which may be a port handed to a running attempt whose rank has not bound it yet.
    monkeypatch.setattr(barrier, "_ephemeral_low", lambda: barrier._LOWEST_PORT + 10)
    picks = iter([40001, 40001, 40002])

    class Probe:
        def __enter__(self) -> Probe:
            return self

        def __exit__(self, *_: object) -> None:
            pass

        def bind(self, _: object) -> None:
            pass

        def getsockname(self) -> tuple[str, int]:
            return "127.0.0.1", next(picks)

    kernel = SimpleNamespace(AF_INET=socket.AF_INET, SOCK_STREAM=socket.SOCK_STREAM)
    kernel.socket = lambda *_: Probe()
    monkeypatch.setattr(barrier, "socket", kernel)
    first = free_port()
    second = free_port()
    release_port(first)
    release_port(second)
    assert (first, second) == (40001, 40002)
