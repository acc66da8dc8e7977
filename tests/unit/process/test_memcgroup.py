"""The OOM killer's count in a memory cgroup, read as the kernel writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.process import memcgroup

# As this machine's kernel (6.18) writes them: cgroup v1's memory.oom_control, and
# cgroup v2's memory.events.local.
V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill {n}\n"
V2_EVENTS = "low 0\nhigh 0\nmax 12\noom 3\noom_kill {n}\noom_group_kill 0\nsock_throttled 0\n"


@pytest.mark.parametrize(
    ("counter", "text", "limit_file", "limit", "said_limit"),
    [
        ("memory.oom_control", V1_OOM_CONTROL, "memory.limit_in_bytes", "314572800", "300.0 MiB"),
        # v1 writes a number near 2^63 for no limit; v2 writes `max`.
        ("memory.oom_control", V1_OOM_CONTROL, "memory.limit_in_bytes", "9223372036854771712", ""),
        ("memory.events.local", V2_EVENTS, "memory.max", "max", ""),
        ("memory.events.local", V2_EVENTS, "memory.max", "1073741824", "1.0 GiB"),
    ],
)
def test_a_watch_says_the_kills_counted_since_it_began(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    counter: str,
    text: str,
    limit_file: str,
    limit: str,
    said_limit: str,
) -> None:
    path = tmp_path / counter
    path.write_text(text.format(n=2))
    (tmp_path / limit_file).write_text(limit + "\n")
    monkeypatch.setattr(memcgroup, "own_counter", lambda: path)
    watch = memcgroup.OomWatch()
    assert (watch.killed(), watch.said()) == (0, None)  # the kills before it are not its
    path.write_text(text.format(n=3))
    assert watch.killed() == 1
    said = "the kernel's OOM killer killed 1 process in the attempt's memory cgroup"
    assert watch.said() == (f"{said} (its limit: {said_limit})" if said_limit else said)


def test_a_kill_while_attempts_ran_at_once_is_no_ones_for_certain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under -j the attempts share the engine's cgroup, and one attempt's OOM kill
    was every other's too (a passing one got the warning, a self-SIGKILL was "by the OOM
    killer"). Watches that overlapped say the kill is not known to be theirs."""
    path = tmp_path / "memory.oom_control"
    path.write_text(V1_OOM_CONTROL.format(n=0))
    monkeypatch.setattr(memcgroup, "own_counter", lambda: path)
    first = memcgroup.OomWatch()
    second = memcgroup.OomWatch()
    path.write_text(V1_OOM_CONTROL.format(n=1))
    assert first.shared
    assert second.shared
    said = first.said()
    assert said is not None
    assert said.endswith("shared with others running at once (-j): not known to be this attempt's")
    assert second.said() == said
    alone = memcgroup.OomWatch()  # both ended before it began
    path.write_text(V1_OOM_CONTROL.format(n=2))
    assert not alone.shared
    assert alone.said() == "the kernel's OOM killer killed 1 process in the attempt's memory cgroup"


def test_no_counter_is_no_kill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memcgroup, "own_counter", lambda: None)
    assert memcgroup.OomWatch().said() is None
    # A counter that went away (the cgroup removed under the engine) is no kill either.
    path = tmp_path / "memory.oom_control"
    path.write_text(V1_OOM_CONTROL.format(n=0))
    monkeypatch.setattr(memcgroup, "own_counter", lambda: path)
    watch = memcgroup.OomWatch()
    path.unlink()
    assert watch.killed() == 0


def test_a_cgroups_count_is_read_from_either_kinds_file(tmp_path: Path) -> None:
    assert memcgroup.oom_kills(tmp_path) == 0
    (tmp_path / "memory.oom_control").write_text(V1_OOM_CONTROL.format(n=4))
    assert memcgroup.oom_kills(tmp_path) == 4
    (tmp_path / "memory.events").write_text(V2_EVENTS.format(n=5))
    assert memcgroup.oom_kills(tmp_path) == 5


def test_this_engines_counter_is_its_own_cgroups() -> None:
    """Where this machine has a memory controller, the file is in the engine's own cgroup."""
    path = memcgroup.own_counter()
    if path is None:
        pytest.skip("no memory cgroup counter readable here")
    assert path.name in ("memory.oom_control", "memory.events.local")
    assert "oom_kill " in path.read_text()


def test_no_oom_kill_anywhere_is_read_from_the_machines_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/vmstat's `oom_kill` counts every OOM kill of the machine, whatever its
    cgroup. Unchanged while the attempt ran: no process of it was the OOM killer's, so a
    SIGKILL was a process's doing. A kill counted (anyone's), or no count to read, says
    nothing of the kind."""
    vmstat = tmp_path / "vmstat"
    lines = "nr_free_pages 1\n" * 300 + "oom_kill {n}\nnr_unstable 0\n"  # 6 KB: past 4 KB
    vmstat.write_text(lines.format(n=7))
    monkeypatch.setattr(memcgroup, "_MACHINE_COUNTER", vmstat)
    quiet = memcgroup.OomWatch()
    assert quiet.none_anywhere()
    vmstat.write_text(lines.format(n=8))
    assert not quiet.none_anywhere()
    assert memcgroup.OomWatch().none_anywhere()  # the kill was before it began
    monkeypatch.setattr(memcgroup, "_MACHINE_COUNTER", tmp_path / "missing")
    assert not memcgroup.OomWatch().none_anywhere()


def test_a_watch_takes_the_machines_count_read_a_moment_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/vmstat costs 17 us of CPU a read (the kernel sums every counter of it): a
    watch that begins within MACHINE_FRESH_S of a read (the attempt before's end) takes that
    count as its start's, one read per attempt where there were two; a kill counted since
    that read counts as the attempt's, as another's kill while it ran does. An older read is
    not taken: the count is read again."""
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("oom_kill 7\n")
    monkeypatch.setattr(memcgroup, "_MACHINE_COUNTER", vmstat)
    first = memcgroup.OomWatch()
    assert first.none_anywhere()  # read at its end: 7
    vmstat.write_text("oom_kill 8\n")  # a kill after that read, before the next watch began
    second = memcgroup.OomWatch()
    assert not second.none_anywhere()  # 8 against 7: the kill may have been its
    vmstat.write_text("oom_kill 9\n")
    monkeypatch.setattr(memcgroup, "MACHINE_FRESH_S", -1.0)  # every read too old
    third = memcgroup.OomWatch()  # reads 9 itself
    assert third.none_anywhere()


def test_this_machines_count_is_read() -> None:
    """The real /proc/vmstat (Linux 4.13+): an engine that runs nothing sees no kill."""
    if "oom_kill " not in Path("/proc/vmstat").read_text():
        pytest.skip("this kernel counts no OOM kills")
    watch = memcgroup.OomWatch()
    assert watch._machine_before is not None
