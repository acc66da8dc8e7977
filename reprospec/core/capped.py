"""What a child wrote, read in bounded memory: files, lines and pipes, head + tail.

A stranger's spec controls every byte its children write: a 300 MB stack dump,
a 512 MB events line, a gdb backtrace of a million frames, an interpreter whose
`.pth` file prints a gigabyte. The engine reads all of them, so it reads them
only through here: the first and the last bytes of a file (`head_tail`), its
lines with overlong ones skipped without being held (`lines`), a helper
process's output kept head + tail while it runs (`run`).

It is also the rule by which a helper's process group is ended when the engine ends it
(`stop_group`): run in a session of its own (a site's sbatch or squeue is often a wrapper
whose child holds the pipe; uv starts build backends), a helper is ended with everything
it started, or a timeout, a stop or a Ctrl-C left those running, orphans
(slurm/queue.py's squeue and sacct, slurm/submit.py's sbatch and scancel, venvs/build.py's
uv). A long-lived helper the engine asks to exit by its own protocol and waits for (the
preload fork server: process/start.py's stop_helper) is not ended so: it is given time to
end its group itself, and only one still running is killed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

from reprospec.core.safepoint import SLICE_S

_CHUNK = 1 << 16


def omission(omitted: int) -> bytes:
    """The line put where bytes were left out (never valid JSON: a reader skips it)."""
    return f"[... {omitted} bytes omitted ...]\n".encode()


def join_head_tail(first: bytes, last: bytes, total: int) -> bytes:
    """`first` and `last` cut at line ends, with the omission line between them.

    Cut at line ends so a half line cannot pose as an exception line or an event.
    A head without any line end is kept whole (it is all there is of the start), and
    so is a tail that is the end of one long line (it is all there is of the end).
    """
    first = first[: first.rfind(b"\n") + 1] or first
    cut = last.find(b"\n")
    if 0 <= cut < len(last.rstrip(b"\n")):
        last = last[cut + 1 :]
    return first + omission(total - len(first) - len(last)) + last


def size(path: Path) -> int:
    """How many bytes `path` holds now; 0 where it is missing or cannot be read (a log not
    written yet, a stack file being removed): what a bounded read of it would find."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def head_tail(path: Path | str, head: int, tail: int) -> bytes:
    """The file's first `head` and last `tail` bytes, whole when it is no longer.

    Raises OSError when the file cannot be opened. Only a regular file's size can
    be trusted: anything else (a FIFO, a device) is read up to `head` bytes.
    """
    # os calls, no file object: the engine reads three or four files per attempt, most
    # of them empty or small, and a buffered file adds three system calls to each.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _read_upto(fd, head, None)
        size = info.st_size
        if size <= head + tail:
            return _read_upto(fd, head + tail, 0)
        first = _read_upto(fd, head, 0)
        return join_head_tail(first, _read_upto(fd, tail, size - tail), size)
    finally:
        os.close(fd)


def _read_upto(fd: int, count: int, offset: int | None) -> bytes:
    """Up to `count` bytes from `offset` (None: where the descriptor is), fewer at the end."""
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.read(fd, count) if offset is None else os.pread(fd, count, offset)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
        if offset is not None:
            offset += len(chunk)
    return b"".join(chunks)


def lines(handle: BinaryIO, max_line: int) -> Iterator[bytes]:
    """The handle's lines (each with its newline); a line past `max_line` bytes is skipped.

    A skipped line is read through in chunks, never held: a newline-less flood of a
    gigabyte costs `max_line` bytes of memory, not a gigabyte.
    """
    while True:
        line = handle.readline(max_line + 1)
        if not line:
            return
        if len(line) <= max_line:
            yield line
            continue
        # Too long: drop the rest of it, chunk by chunk.
        while not line.endswith(b"\n"):
            line = handle.readline(_CHUNK)
            if not line:
                return


class HeadTail:
    """A stream kept as its first `head` and last `tail` bytes, in memory."""

    def __init__(self, head: int, tail: int) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._head_max = head
        self._tail_max = tail

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_max - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self._tail_max:
            self.tail += data
            if len(self.tail) > 2 * self._tail_max:
                del self.tail[: len(self.tail) - self._tail_max]

    @property
    def cut(self) -> bool:
        """Whether bytes were left out: the stream passed its head and tail."""
        return self.total > len(self.head) + min(len(self.tail), self._tail_max)

    def value(self) -> bytes:
        tail = bytes(self.tail[-self._tail_max :]) if self._tail_max else b""
        kept = len(self.head) + len(tail)
        if kept == self.total:
            return bytes(self.head) + tail
        return join_head_tail(bytes(self.head), tail, self.total)


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class Completed(NamedTuple):
    """A helper process's end: its status and its output, each capped head + tail.
    `timed_out`: ended at its timeout; `stopped`: ended because its `stop` said so (its
    group killed either way, `returncode` then the SIGKILL's). `cut`: a stream passed
    what is kept (`limit` + `tail`), bytes of it left out: an answer read whole (squeue's
    list of jobs) is then no answer, its missing lines not "none"."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stopped: bool = False
    cut: bool = False


# Why `_read_to_end` returned: the process ended, its timeout came, or its `stop` said so;
# or, "answered", the process had ended with its answer when the timeout or the stop came,
# the pipes still held by what it left running in its group (a site's sbatch wrapper's
# `logger &`): its end, the group's lingering members killed.
_End = Literal["ended", "answered", "timeout", "stop"]


def run(
    argv: Sequence[str],
    *,
    limit: int,
    timeout_s: float | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    merge_stderr: bool = False,
    tail: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> Completed:
    """Run `argv` to its end (or `timeout_s`; None: no limit), keeping at most `limit` +
    `tail` bytes per stream.

    The process gets its own session, so the timeout kills its whole process group;
    what it printed before is kept. `tail` defaults to a quarter of `limit`.
    `merge_stderr` sends stderr into stdout (gdb). `stop`, asked at every slice of the
    wait (SLICE_S), ends it as the timeout would (`Completed.stopped`): a second Ctrl-C,
    which a stop handler only records, cuts a wait that no signal reaches (the helper has
    a session of its own). Raises OSError when it cannot start.
    """
    keep_tail = limit // 4 if tail is None else tail
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    outputs = {"stdout": HeadTail(limit, keep_tail), "stderr": HeadTail(limit, keep_tail)}
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    try:
        end = _read_to_end(proc, outputs, deadline, stop)
    except BaseException:
        # A Ctrl-C raised mid-read: the process has a session of its own, so the user's
        # Ctrl-C never reached it, and it would run on, an orphan (gdb on a large core).
        _kill_and_close(proc)
        raise
    _kill_and_close(proc, group=end != "ended")
    return Completed(
        proc.returncode,
        outputs["stdout"].value(),
        outputs["stderr"].value(),
        timed_out=end == "timeout",
        stopped=end == "stop",
        cut=outputs["stdout"].cut or outputs["stderr"].cut,
    )


def _read_to_end(
    proc: subprocess.Popen[bytes],
    outputs: Mapping[str, HeadTail],
    deadline: float | None,
    stop: Callable[[], bool] | None,
) -> _End:
    """Read `proc`'s pipes until both close and it exits, or `deadline` or `stop` comes first
    ("answered" where it had exited by then, what its pipes held read).

    Every wait is a slice of at most SLICE_S: a signal the kernel hands another thread of
    the engine wakes no wait of the main thread, whose handler would otherwise run only
    when the helper next wrote or ended (core/safepoint.py); and `stop` is asked as often."""
    with selectors.DefaultSelector() as selector:
        for name in ("stdout", "stderr"):
            pipe = getattr(proc, name)
            if pipe is not None:
                selector.register(pipe, selectors.EVENT_READ, outputs[name])
        while selector.get_map():
            left = _left(deadline)
            cut: _End | None = "timeout" if left <= 0 else None
            if cut is None and stop is not None and stop():
                cut = "stop"
            if cut is not None:
                # The leader may have answered and exited, its pipes held by a member of
                # its group it left running: that answer is its end, not lost to the cut
                # (a second Ctrl-C dropped the job id a site's sbatch wrapper had printed).
                if not _exited(proc):
                    return cut
                _drain(selector)
                return "answered"
            for key, _ in selector.select(left):
                _read_one(selector, key)
    # Both pipes are closed; the process may still run (it closed them itself).
    while (left := _left(deadline)) > 0:
        if stop is not None and stop():
            return "ended" if proc.poll() is not None else "stop"
        try:
            proc.wait(left)
            return "ended"
        except subprocess.TimeoutExpired:
            continue
    return "ended" if proc.poll() is not None else "timeout"


def _read_one(selector: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
    """One read of a ready pipe into its HeadTail; at its EOF it is no longer watched."""
    chunk = os.read(key.fd, _CHUNK)
    if chunk:
        key.data.write(chunk)
    else:
        selector.unregister(key.fileobj)


def _drain(selector: selectors.BaseSelector) -> None:
    """What the pipes hold now, read without waiting: the answer of a leader that exited.
    Bounded by a slice: a member of its group writing on would otherwise keep it here."""
    until = time.monotonic() + SLICE_S
    while selector.get_map() and time.monotonic() < until:
        ready = selector.select(0)
        if not ready:
            return
        for key, _ in ready:
            _read_one(selector, key)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `proc` has exited, left unreaped (WNOWAIT): its pid, its group's id, stays
    its own until stop_group has SIGKILLed the group."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True  # reaped already


def _left(deadline: float | None) -> float:
    """The next wait: a slice, or less where the deadline is nearer."""
    if deadline is None:
        return SLICE_S
    return min(SLICE_S, deadline - time.monotonic())


def _kill_and_close(proc: subprocess.Popen[bytes], *, group: bool = True) -> None:
    """Reap `proc` and close its pipes, its whole process group SIGKILLed first where
    `group` (a timeout, a stop), and always where it still runs."""
    if group or proc.poll() is None:
        stop_group(proc)
    for name in ("stdout", "stderr"):
        pipe = getattr(proc, name)
        if pipe is not None:
            pipe.close()
    proc.wait()


def stop_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str], grace_s: float = 0) -> None:
    """End `proc`, the leader of a process group of its own (`start_new_session`), and all
    it started, and reap it: SIGTERM to the group first where `grace_s` (uv obeys it at
    once and cleans up), waited for that long, then SIGKILL to the group, its last members
    too (a build backend, the real squeue under a wrapper). `proc` is reaped only after
    that SIGKILL: its pid, the group's id, cannot have been given to another process
    meanwhile. Its pipes are not read: a member of the group that outlived it (one that
    left the group) would make an EOF wait its own.

    The SIGKILL is sent however the wait ends: a second Ctrl-C during it (where no stop
    handler holds it back) skipped it, and uv's build backend built on, an orphan."""
    try:
        if grace_s > 0:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline:
                try:
                    # WNOWAIT: seen ended, left a zombie (its pid kept) until proc.wait below.
                    ended = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    break  # reaped already
                if ended is not None:
                    break
                time.sleep(0.02)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


__all__ = [
    "Completed",
    "head_tail",
    "join_head_tail",
    "lines",
    "omission",
    "run",
    "size",
    "stop_group",
]
