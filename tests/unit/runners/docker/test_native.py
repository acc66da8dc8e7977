"""The docker runner's native-stack helpers without an engine: /proc listings, the root process,
core limits."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec import native
from reprospec.runners.docker.attach import parse_listing
from reprospec.runners.docker.native import ContainerNative, is_root

# -- pure functions ----------------------------------------------------------------------


def test_parse_listing_puts_the_root_first_with_its_maps() -> None:
    text = "\n".join(
        [
            "@ 9 7 python3 worker.py ",
            "7f0000000000-7f0000001000 /usr/lib/x86_64-linux-gnu/libc.so.6",
            "@ 7 1 python3 main.py --x ",
            "555555554000-555555556000 /usr/bin/python3.11",
            "555555556000-555555558000 /usr/bin/python3.11",
            "@ 12 7 ",
        ]
    )
    root, worker, bare = parse_listing(text)
    assert (root.pid, root.ppid, root.command) == (7, 1, "python3 main.py --x")
    assert root.maps == (
        (0x555555554000, 0x555555556000, "/usr/bin/python3.11"),
        (0x555555556000, 0x555555558000, "/usr/bin/python3.11"),
    )
    assert (worker.pid, worker.command) == (9, "python3 worker.py")
    assert worker.maps == ((0x7F0000000000, 0x7F0000001000, "/usr/lib/x86_64-linux-gnu/libc.so.6"),)
    assert (bare.pid, bare.command, bare.maps) == (12, "", ())
    assert parse_listing("") == []


def test_the_root_is_init_s_child_that_died_of_the_containers_signal() -> None:
    def core(pid: int, ppid: int, signal: str) -> native.CoreInfo:
        return native.CoreInfo(Path("core"), pid, signal, None, "", (), ppid)

    assert is_root(core(7, 1, "SIGSEGV"), "SIGSEGV")
    assert not is_root(core(9, 7, "SIGSEGV"), "SIGSEGV")  # a worker
    assert not is_root(core(9, 1, "SIGSEGV"), None)  # an orphan; the root exited
    assert not is_root(core(9, 1, "SIGBUS"), "SIGSEGV")


class _NoEngine:
    """A client that fails the test whatever it is asked."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the engine was asked ({name})")


def test_no_core_limit_when_cores_would_not_reach_the_workdir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for raw in ("|/usr/share/apport/apport %p", "/var/crash/core.%p"):
        monkeypatch.setattr(native, "core_pattern", lambda raw=raw: native.CorePattern(raw))
        # No engine is asked: the pattern alone rules cores out.
        assert ContainerNative().core_limit(_NoEngine(), "any-image") == []


def test_a_hung_containers_stacks_keep_each_processs_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A launcher reading its child's pipe (`./pp` in `read`, `./nap` asleep below it) is
    # placed in the child by the parents the stacks keep: the container's listing has them
    # (`@ PID PPID`), and the stacks it attached to kept none, so its hang read `read@libc`.
    from reprospec.runners.docker import attach

    listing = "@ 7 1 ./pp\n@ 8 7 ./nap\n"
    gdb = "\n".join(
        [
            "@@reprospec:pid:7@@",
            "Thread 1 (LWP 7):",
            "#0  0x00007f0000001000 in __GI___libc_read () from /lib/libc.so.6",
            "#1  0x0000555555555000 in main ()",
            "@@reprospec:pid:8@@",
            "Thread 1 (LWP 8):",
            "#0  0x00007f0000002000 in clock_nanosleep () from /lib/libc.so.6",
            "#1  0x0000555555556000 in main ()",
            "@@reprospec:end@@",
        ]
    )

    def exec_bounded(*_args: object, **_kwargs: object) -> tuple[str, bool]:
        return f"{listing}{attach.LISTED}\n{gdb}\n", True

    monkeypatch.setattr(attach, "_exec_bounded", exec_bounded)
    stacks = attach.attach_all(None, None, deadline=0.0)  # type: ignore[arg-type]
    assert [(p.pid, p.ppid) for p in stacks.processes] == [(7, 1), (8, 7)]
    assert native.hung_frame(stacks) == "clock_nanosleep@libc"
