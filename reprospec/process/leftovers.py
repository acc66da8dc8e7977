"""What a dead engine leaves running, and who cleans it up.

Three layers, so that no attempt outlives its engine:

1. The attempt's leader dies with the thread that started it (PR_SET_PDEATHSIG,
   start.py), and every process of the attempt carries its tag (watchdog.py).
2. The watchdog (watchdog.py, one per engine process) is told what runs; when the
   engine dies it kills the tagged processes, removes the containers and the
   temporary folders.
3. Each attempt in flight has a record in its attempt folder (`inflight.json`:
   token, tag, container, the engine). A record left behind means the engine
   died there: `--resume` (`reap`) kills what still carries the token or tag
   (never a process named by its pid alone: a recycled pid is someone else's)
   and removes the container, before anything runs again. A record of an engine
   still alive refuses the resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import random
import subprocess
import sys
import threading
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import NamedTuple

from reprospec.core.caller import resuming
from reprospec.core.frozen import frozen
from reprospec.core.words import plural
from reprospec.errors import UsageError
from reprospec.process import watchdog

INFLIGHT = "inflight.json"
# An attempt's record in a folder the run folder reuses (`Flight(reuse=True)`): padded with
# spaces to this size, and all spaces once its attempt is over. A blank record ends nothing.
RECORD_SIZE = 256
# A container that is no attempt (the environment capture, a package check) has its
# record beside the attempt's or the run's: `inflight-envinfo.json`, `inflight-probe.json`.
INFLIGHT_PREFIX = "inflight-"
# Every container the docker runner creates carries its token under this label.
CONTAINER_LABEL = "org.reprospec.attempt"
WATCHDOG = Path(__file__).resolve().with_name("watchdog.py")


def new_tag() -> int:
    """A fresh attempt tag (the soft RLIMIT_LOCKS of every process of the attempt)."""
    return watchdog.TAG_MAGIC | random.getrandbits(44)


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22)."""
    try:
        # /proc through str paths, no Path per pid (as tree.py).
        with open(f"/proc/{pid}/stat", "rb") as handle:  # noqa: PTH123
            stat = handle.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@frozen
class Engine:
    """One engine process, told apart from a later one with a recycled pid."""

    pid: int
    started: int | None
    boot: str

    @classmethod
    def me(cls) -> Engine:
        """This engine process (read from /proc once per process: every attempt asks)."""
        return _engine_of(os.getpid())

    def alive(self) -> bool:
        return (
            self.boot == _boot_id()
            and self.started is not None
            and start_time(self.pid) == self.started
        )

    def to_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "started": self.started, "boot": self.boot}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Engine:
        """Inverse of `to_dict`; KeyError, TypeError or ValueError for what it did not write."""
        return cls(int(str(data["pid"])), _int(data.get("started")), str(data["boot"]))


@functools.cache
def _engine_of(pid: int) -> Engine:
    # Keyed by pid: a forked child that asks is another engine.
    return Engine(pid, start_time(pid), _boot_id())


# -- the watchdog ------------------------------------------------------------------------


class _Watchdog:
    """The client end: started on first use, then told each thing that starts and ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._broken = False
        self._later: list[str] = []

    def pid(self) -> int | None:
        """The watchdog's pid while it is not reaped (it is never a process of an attempt)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    def tell(self, line: str, *, later: bool = False) -> None:
        """Send one line; best effort (without a watchdog, the records remain).

        `later`: a line that may wait for the next one (an attempt that ended: its tag
        names no live process any more, so a watchdog that never hears it kills nothing
        for it). Both then go in one write per attempt, which the watchdog reads with others
        a few times a second (watchdog.DRAIN_S).
        """
        with self._lock:
            if self._broken:
                return
            if later:
                self._later.append(line)
                return
            if self._proc is None:
                try:
                    self._proc = subprocess.Popen(
                        [sys.executable, "-I", "-S", str(WATCHDOG)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,  # a signal to the engine's group spares it
                        close_fds=True,
                    )
                except OSError:
                    self._broken = True
                    return
                assert self._proc.stdin is not None
                try:
                    # The watchdog reads it a few times a second (watchdog.DRAIN_S): room
                    # for about 11,000 attempts' lines between two reads.
                    fcntl.fcntl(self._proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
                except OSError:
                    # Past pipe-max-size or the user's pipe quota: read as each line comes.
                    self._later.insert(0, watchdog.EACH.decode())
            assert self._proc.stdin is not None
            lines, self._later = [*self._later, line], []
            try:
                self._proc.stdin.write(
                    "".join(f"{text}\n" for text in lines).encode("utf-8", "surrogateescape")
                )
                self._proc.stdin.flush()
            except OSError:
                self._broken = True


_WATCHDOG = _Watchdog()


def watchdog_pid() -> int | None:
    return _WATCHDOG.pid()


def watch_path(path: Path | str) -> None:
    """A temporary folder of the engine: removed by the watchdog if the engine dies."""
    _WATCHDOG.tell(f"path {path}")


def unwatch_path(path: Path | str) -> None:
    _WATCHDOG.tell(f"done-path {path}")


def watch_container(name: str) -> None:
    """A container the engine created: removed by the watchdog if the engine dies."""
    _WATCHDOG.tell(f"container {name}")


def unwatch_container(name: str) -> None:
    _WATCHDOG.tell(f"done-container {name}")


# -- an attempt in flight ----------------------------------------------------------------


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class InFlight(NamedTuple):
    """An attempt the engine has running: what `--resume` needs to end it."""

    token: str
    tag: int | None = None
    container: str | None = None
    engine: Engine | None = None

    def to_dict(self) -> dict[str, object]:
        engine = self.engine
        return {
            "token": self.token,
            "tag": self.tag,
            "container": self.container,
            "engine": None if engine is None else engine.to_dict(),
        }

    def to_json(self) -> str:
        """`json.dumps(self.to_dict())`, made without the encoder's walk: every attempt
        writes one, and the engine's part, the same in all of them, is encoded once."""
        return (
            f'{{"token": {_json_text(self.token)}, "tag": {_json_int(self.tag)}, '
            f'"container": {_json_text(self.container)}, '
            f'"engine": {"null" if self.engine is None else _engine_json(self.engine)}}}'
        )

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> InFlight:
        engine = data.get("engine")
        return cls(
            token=str(data["token"]),
            tag=_int(data.get("tag")),
            container=str(data["container"]) if data.get("container") else None,
            engine=Engine.from_dict(engine) if isinstance(engine, dict) else None,
        )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _json_text(value: str | None) -> str:
    # json.dumps's own encoder of a string (ensure_ascii, its default).
    return "null" if value is None else encode_basestring_ascii(value)


def _json_int(value: int | None) -> str:
    return "null" if value is None else int.__repr__(value)


@functools.cache
def _engine_json(engine: Engine) -> str:
    return json.dumps(engine.to_dict())


class Flight:
    """An attempt's registration with the watchdog and in its record file, begin to end.

    `reuse`: the record stays where it is when the attempt ends, overwritten with spaces
    (`RECORD_SIZE` of them), and a record already there is overwritten in place: a silent
    pass's folder is handed to its cell's next attempt with its blank record
    (store/runfolder.py), and a file created and unlinked per attempt cost the engine
    about four times the overwrites (26 against 8 us on ext4; issue 30, item 5).
    """

    def __init__(
        self,
        record: Path | str | None,
        token: str,
        tag: int | None,
        container: str | None = None,
        *,
        reuse: bool = False,
    ) -> None:
        # A str: the os calls of begin and end take it without a conversion each.
        self.path = None if record is None else os.fspath(record)
        self.data = InFlight(token, tag, container=container, engine=Engine.me())
        self.reuse = reuse
        # The record's descriptor from begin to end, where it was written padded.
        self._fd = -1

    def begin(self) -> None:
        """Before anything of the attempt starts: the watchdog is told, the record written.

        Written once: what `--resume` ends is found by the token and the tag, never by a
        pid, so the leader's pid (known only after the start) is not worth a second write.
        """
        if self.data.tag is not None:
            _WATCHDOG.tell(f"attempt {self.data.tag} {self.data.token}")
        if self.data.container is not None:
            watch_container(self.data.container)
        self._write()

    def end(self) -> None:
        """After every process (and container) of the attempt is gone."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                # One write, as the record's: a blank record ends nothing (`reap`).
                blanked = os.pwrite(fd, _BLANK, 0) == RECORD_SIZE
            except OSError:
                blanked = False
            finally:
                os.close(fd)
            if not blanked and self.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)  # noqa: PTH108
        elif self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # noqa: PTH108
        if self.data.tag is not None:
            _WATCHDOG.tell(f"done {self.data.tag}", later=True)
        if self.data.container is not None:
            unwatch_container(self.data.container)

    def _write(self) -> None:
        if self.path is None:
            return
        text = self.data.to_json().encode("utf-8")
        # In place, with one write(): a process that dies lands the whole of a small write
        # or none of it, and this one is made before anything of the attempt starts, so an
        # empty (or blank) record (the engine killed between open and write) has nothing to
        # end. No write aside and rename: a rename per attempt costs more than the rest of
        # it. os calls, no file object: a file object costs three more calls.
        if self.reuse and len(text) <= RECORD_SIZE:
            # Over the blank record a reused folder holds, all of it (no O_TRUNC: that
            # frees the file's block for the write to take another), or into a new file.
            with contextlib.suppress(OSError):
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    os.pwrite(fd, text.ljust(RECORD_SIZE), 0)
                    if os.fstat(fd).st_size > RECORD_SIZE:
                        # Longer than a blank record (one `reap` could not read and kept):
                        # what is past this one would make it unreadable too.
                        os.ftruncate(fd, RECORD_SIZE)
                except OSError:
                    os.close(fd)
                    raise
                self._fd = fd
            return
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, text)
            finally:
                os.close(fd)


_BLANK = b" " * RECORD_SIZE


def blank(text: str) -> bool:
    """Whether a record's text ends nothing: empty (the engine died between creating it and
    its one write) or spaces (its attempt is over, `Flight(reuse=True)`)."""
    return not text.strip()


# -- what a dead engine left -------------------------------------------------------------


def reap(run_dir: Path) -> tuple[str, ...]:
    """End what the interrupted run's dead engine left running; a notice of what was found.

    A record sits in a folder the attempt's own command could write to, so nothing in
    it is trusted to name a victim: a process is ended only if it carries the record's
    token or tag (a recycled pid, or any pid the record names, carries neither), and a
    container only if its label holds the record's token. Raises UsageError when the
    engine of a record is still alive (the run is not interrupted, it is running).
    """
    records: list[tuple[Path, InFlight]] = []
    paths = [
        *run_dir.glob(f"{INFLIGHT_PREFIX}*.json"),
        *run_dir.glob("cells/*/*/inflight*.json"),
        *run_dir.glob("cells/*/*/instance-*/inflight*.json"),
    ]
    for path in sorted(paths):
        try:
            text = path.read_text("utf-8")
        except (OSError, ValueError):
            continue
        if blank(text):
            # The engine died between creating the record and its one write, before
            # anything of the attempt started (Flight.begin), or the attempt was over and
            # its record blanked (Flight.end): nothing to end, nothing to keep.
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            records.append((path, InFlight.from_dict(json.loads(text))))
        except (ValueError, KeyError, TypeError):
            continue
    me = os.getpid()
    for path, record in records:
        engine = record.engine
        # Its pid with its start time and boot: a recycled pid is not taken for the engine.
        if engine is not None and engine.pid != me and engine.alive():
            raise UsageError(
                f"{resuming(run_dir.name)}: the run is still running (engine pid {engine.pid}, "
                f"recorded in {path}); stop it first"
            )
    tokens = {record.token for _, record in records}
    tags = {
        record.tag
        for _, record in records
        if record.tag is not None and watchdog.is_tag(record.tag)
    }
    killed = watchdog.kill_tagged(tokens, tags)
    removed = sum(
        _remove_container(record.container, record.token)
        for _, record in records
        if record.container
    )
    for path, _ in records:
        with contextlib.suppress(OSError):
            path.unlink()
    if not killed and not removed:
        return ()
    found = [plural(killed, "process", "processes")] if killed else []
    if removed:
        found.append(plural(removed, "container"))
    return (
        f"the interrupted run's engine had left {' and '.join(found)} running: "
        "ended before resuming",
    )


def _remove_container(name: str, token: str) -> bool:
    """Force-remove the attempt's container `name`, if its label holds `token`; whether it did."""
    try:
        import docker
        import docker.errors
    except ImportError:
        return False
    try:
        client = docker.from_env()
    except docker.errors.DockerException:
        return False
    try:
        container = client.containers.get(name)
        if container.labels.get(CONTAINER_LABEL) != token:
            return False  # not the one the record's attempt made
        container.remove(force=True, v=True)
        return True
    except docker.errors.DockerException:
        return False
    finally:
        client.close()


__all__ = [
    "INFLIGHT",
    "RECORD_SIZE",
    "Engine",
    "Flight",
    "InFlight",
    "blank",
    "new_tag",
    "reap",
    "start_time",
    "unwatch_container",
    "unwatch_path",
    "watch_container",
    "watch_path",
]
