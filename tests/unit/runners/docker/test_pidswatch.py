"""The docker runner's watch of a container's pids.events (runners/docker/pidswatch.py),
on files standing in for a cgroup's: threads, no process."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from reprospec.process import memcgroup, pidlimit
from reprospec.runners.docker import pidswatch
from reprospec.runners.docker.pidswatch import PidsWatch


def _watching(monkeypatch: pytest.MonkeyPatch, events: Path) -> PidsWatch:
    monkeypatch.setattr(pidlimit, "events_of", lambda _pid: str(events))
    return PidsWatch(1)


def _alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "pids-watch"]


def test_a_v1_count_is_read_as_it_grows_and_once_more_as_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = tmp_path / "pids.events"
    events.write_text("max 2\n")
    watch = _watching(monkeypatch, events)
    assert watch.refused == 2
    events.write_text("max 5\n")
    deadline = time.monotonic() + 5
    while watch.refused != 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watch.refused == 5
    events.write_text("max 7\n")
    assert watch.stop() == 7
    assert watch.stop() == 7  # again (the runner's finally): the count it said
    assert not _alive()


def test_a_v2_watch_ends_at_once_as_it_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under cgroup v2 the thread waits for the kernel's word of a change (POLLPRI), not
    a clock; stop() wakes it at once, and its last read counts."""
    (tmp_path / "cgroup.controllers").write_text("pids\n")
    events = tmp_path / "pids.events"
    events.write_text("max 0\n")
    monkeypatch.setattr(pidswatch, "NOTIFIED_CHECK_S", 60.0)
    watch = _watching(monkeypatch, events)
    events.write_text("max 1\n")
    began = time.monotonic()
    assert watch.stop() == 1
    assert time.monotonic() - began < 5
    assert not _alive()


def test_a_watch_ends_where_its_file_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = tmp_path / "pids.events"
    events.write_text("max 3\n")
    watch = _watching(monkeypatch, events)
    events.unlink()
    deadline = time.monotonic() + 5
    while _alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive()
    assert watch.stop() == 3  # the count it read while it was there


def test_no_file_no_thread() -> None:
    watch = PidsWatch(None)
    assert not _alive()
    assert watch.stop() == 0


def test_a_process_in_this_engines_own_cgroup_is_not_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container's process whose cgroup reads as the engine's own (not seen from here):
    that pids.events outlives the container and counts the engine's forks, and a watch
    of it read on until it went, which it never does. Another cgroup's is the container's."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "pids.events").write_text("max 0\n")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "pids.events").write_text("max 0\n")
    mountinfo = [f"30 25 0:26 / {tmp_path} rw,relatime - cgroup cgroup rw,pids"]
    monkeypatch.setattr(memcgroup, "mounts", lambda: memcgroup.cgroup_mounts(mountinfo))
    proc = {
        "self/cgroup": ["8:pids:/mine"],
        "7/cgroup": ["8:pids:/mine"],
        "8/cgroup": ["8:pids:/theirs"],
    }
    monkeypatch.setattr(pidlimit, "_proc_lines", lambda name: proc[name])

    assert pidlimit.events_of(7) is None
    assert pidlimit.events_of(8) == str(tmp_path / "theirs" / "pids.events")
