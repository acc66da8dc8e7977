"""Native stacks of an attempt in a container: gdb runs in the attempt's own image.

Crash: the container runs with an unlimited core size (its own rlimit), so a process
that dies of SIGSEGV, SIGBUS, SIGABRT, ... leaves a core where `kernel.core_pattern`
says. That setting is the host's (the kernel has one for every container): a relative
pattern (`core`, `core.%p`) puts the core in the crashing process's working
directory, the spec's workdir, which is bind-mounted from the host, so the engine
finds it there as the local runner does (native.find_cores: the attempt's token is in
the core's memory). The core is moved into the attempt folder and read by `gdb -batch`
in a fresh container of the same image with the same mounts: the same executable and
libraries at the same paths, so the symbols resolve as they did in the process that
crashed. gdb on the host would read the host's libc against the container's addresses
and print a wrong stack; that is never done.

Hang: before the timed-out container is killed, one `docker exec` lists its processes
(their pids as the container sees them, and their maps), and a second one runs one gdb
that attaches to each in turn (native.attach_gdb_argv), stopped 4 s after the timeout
(the container's kill and removal come after it, within timeout + 5 s). Where Yama
refuses the attach (gdb is no ancestor of the processes), gdb runs again in a
privileged exec: it gets CAP_SYS_PTRACE, the attempt's own processes keep the
container's capabilities.

Whether an image has gdb is asked once per image (gdb's version, in a container).
Without it nothing can read a core, so none is written (unless `keep_cores`), and the
attempt folder says why native stacks are missing. The results are the local runner's
values (`native.NativeStacks`), written to the same files, so classify, the report and
the failure signature treat both runners alike.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reprospec import native
from reprospec.container import IN_ATTEMPT
from reprospec.errors import FatalError
from reprospec.runners.dockerengine import LABEL, fresh_container, wait_for_exit

GDB_LABEL = "org.reprospec.gdb"
GDB_HINT = "install gdb in the image, e.g. RUN apt-get install -y gdb"
PROBE_TIMEOUT_S = 60.0
# However late the Python stacks came, gdb gets this long at a hang.
MIN_BUDGET_S = 0.5
# gdb at a hang is stopped this long after the timeout: half a second before the local
# runner's deadline, since killing and removing a container takes longer than killing a
# process tree, and the report must still arrive within timeout + 5 s.
HANG_DEADLINE_S = native.HANG_DEADLINE_S - 0.5
# gdb's environment: the image's PYTHONPATH (the harness, the stack dumper's
# sitecustomize) must not reach gdb's embedded Python; gdb's messages in English.
GDB_ENV = {"PYTHONPATH": "", "PYTHONFAULTHANDLER": "", "PYTHONSTARTUP": "",
           "LC_ALL": "C", "LANG": "C"}  # fmt: skip

# Runs in the container at a hang: every live process but docker-init (pid 1) and this
# shell, as `@ PID PPID CMDLINE`, then its file-backed maps as `START-END PATH` lines.
# Shell builtins only, but for `tr`: the processes it starts are never in the list.
_LIST = r"""
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  case $pid in 1|$$) continue ;; esac
  ppid= state=
  while read -r key value rest; do
    case $key in PPid:) ppid=$value ;; State:) state=$value ;; esac
  done < "$d/status" 2>/dev/null || continue
  case $state in Z|X|"") continue ;; esac
  echo "@ $pid $ppid $(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)"
  while read -r range perms offset dev inode path; do
    case $path in /*) echo "$range $path" ;; esac
  done < "$d/maps" 2>/dev/null
done
"""


@dataclass(frozen=True)
class ContainerProcess:
    """One live process of a hung container, as the container sees it."""

    pid: int
    ppid: int
    command: str
    maps: tuple[tuple[int, int, str], ...] = ()


def parse_listing(text: str) -> list[ContainerProcess]:
    """The processes `_LIST` printed, the attempt's root (docker-init's child) first."""
    found: list[ContainerProcess] = []
    lines: list[str] = []

    def close() -> None:
        if found and lines:
            found[-1] = replace(found[-1], maps=native.parse_maps("\n".join(lines)))
        lines.clear()

    for line in text.splitlines():
        if line.startswith("@ "):
            close()
            fields = line[2:].split(" ", 2)
            if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
                command = fields[2].strip() if len(fields) > 2 else ""
                found.append(ContainerProcess(int(fields[0]), int(fields[1]), command))
        elif found:
            # `START-END PATH` as a maps line with the fields parse_maps skips.
            range_, _, path = line.partition(" ")
            lines.append(f"{range_} r--p 0 0:0 0 {path}")
    close()
    return sorted(found, key=lambda p: (p.ppid != 1, p.pid))


def is_root(info: native.CoreInfo, root_signal: str | None) -> bool:
    """Whether a core is the attempt's own process: docker-init's child (pid 1 is the init)
    that died of the signal the container ended with. A process orphaned to the init has
    the same parent, but then the container did not end with its signal."""
    return info.ppid == 1 and root_signal is not None and info.signal == root_signal


class ContainerNative:
    """Native stacks for the docker runner's attempts; one per runner, safe across threads."""

    def __init__(self, keep_cores: bool = False) -> None:
        self.keep_cores = keep_cores
        self._lock = threading.Lock()
        # image -> why gdb cannot run in it (None: it can)
        self._reasons: dict[str, str | None] = {}

    # -- the image -----------------------------------------------------------------------

    def gdb_missing(self, client: Any, image: str) -> str | None:
        """Why gdb cannot run in `image` (asked once per image); None when it can."""
        with self._lock:
            if image in self._reasons:
                return self._reasons[image]
        reason = self._probe(client, image)
        with self._lock:
            self._reasons[image] = reason
        return reason

    def _probe(self, client: Any, image: str) -> str | None:
        import docker.errors

        token = uuid.uuid4().hex
        config = {
            "image": image,
            "entrypoint": ["gdb"],
            "command": ["-nx", "-batch", "-ex", "show version"],
            "name": f"reprospec-gdbprobe-{token[:12]}",
            "detach": True,
            "environment": GDB_ENV,
            "network_mode": "none",
            "labels": {LABEL: token, GDB_LABEL: "probe"},
        }
        missing = f"native stacks unavailable: gdb not found in image {image} ({GDB_HINT})"
        try:
            with fresh_container(client, config) as container:
                try:
                    container.start()
                except docker.errors.APIError as exc:
                    text = str(exc.explanation or exc)
                    if "not found" in text or "no such file" in text.lower():
                        return missing
                    return f"native stacks unavailable: gdb does not start in {image}: {text}"
                status = wait_for_exit(container, PROBE_TIMEOUT_S, None)
        except (FatalError, docker.errors.APIError) as exc:
            return f"native stacks unavailable: cannot run gdb in {image}: {exc}"
        if status is None:
            return (
                f"native stacks unavailable: gdb in {image} did not answer "
                f"in {PROBE_TIMEOUT_S:g}s"
            )
        if status in (126, 127):
            return missing
        if status != 0:
            return f"native stacks unavailable: gdb in {image} exits with {status}"
        return None

    def core_limit(self, client: Any, image: str) -> list[Any]:
        """The container's `ulimits`: core size unlimited when its cores can be read (or kept)."""
        from docker.types import Ulimit

        pattern = native.core_pattern()
        if pattern.piped or os.path.isabs(pattern.raw):
            return []  # cores would not reach the workdir: write none
        if self.gdb_missing(client, image) is not None and not self.keep_cores:
            return []  # nothing could read a core: write none
        return [Ulimit(name="core", soft=-1, hard=-1)]

    # -- a hang --------------------------------------------------------------------------

    def hang(
        self, client: Any, container: Any, image: str, timed_out_at: float
    ) -> native.NativeStacks:
        """Native stacks of every live process of the timed-out `container`, before its kill.

        gdb is stopped HANG_DEADLINE_S after `timed_out_at` (time.monotonic()).
        """
        import docker.errors

        missing = self.gdb_missing(client, image)
        if missing is not None:
            return native.NativeStacks(unavailable=missing)
        try:
            listed = container.exec_run(["sh", "-c", _LIST], stdout=True, stderr=False)
        except docker.errors.APIError as exc:
            return native.NativeStacks(
                unavailable=f"native stacks unavailable: the container's processes: {exc}"
            )
        processes = parse_listing(listed.output.decode("utf-8", "replace"))
        if not processes:
            return native.NativeStacks(notes=("no live process in the container to attach to",))
        pids = {p.pid: p.command for p in processes}
        maps = {p.pid: p.maps for p in processes}
        budget = max(MIN_BUDGET_S, timed_out_at + HANG_DEADLINE_S - time.monotonic())
        argv = native.attach_gdb_argv(list(pids))
        try:
            output, finished = _exec_bounded(client, container, argv, budget)
            left = timed_out_at + HANG_DEADLINE_S - time.monotonic()
            if finished and _ptrace_refused(output) and left > MIN_BUDGET_S:
                # Yama (ptrace_scope 1) lets only an ancestor attach, or CAP_SYS_PTRACE: a
                # privileged exec has it, the attempt's processes keep their capabilities.
                again = _exec_bounded(client, container, argv, left, privileged=True)
                if not _exec_failed(again[0]):  # an engine may refuse privileged execs
                    (output, finished), budget = again, left
        except docker.errors.APIError as exc:
            return native.NativeStacks(
                unavailable=f"native stacks unavailable: gdb could not run in the container: "
                f"{exc.explanation or exc}"
            )
        if _exec_failed(output):
            return native.NativeStacks(
                unavailable=f"native stacks unavailable: {output.strip().splitlines()[0]}"
            )
        return native.attach_gdb_stacks(pids, maps, output, finished=finished, budget_s=budget)

    # -- a crash -------------------------------------------------------------------------

    def crash(
        self,
        client: Any,
        config: Mapping[str, Any],
        *,
        log_dir: Path,
        workdir: Path,
        token: str,
        started: float,
        returncode: int | None,
        read_cores: bool = True,
        shared: bool = False,
    ) -> native.NativeStacks | None:
        """Native stacks from the cores the container's processes left in `workdir`.

        `shared`: other containers (the attempt's other instances) share the workdir.

        `config` is the attempt container's (its image and mounts: gdb runs in a copy);
        `started` its time.time() at start. None when there were no cores and none were
        expected; with `read_cores` False (an interrupted run) cores are only cleared away.
        """
        image = str(config["image"])
        pattern = native.core_pattern()
        root_signal = native_signal(returncode)
        dumped = root_signal in native.CORE_SIGNALS
        if pattern.piped:
            return native.NativeStacks(unavailable=_piped(pattern)) if dumped else None
        if os.path.isabs(pattern.raw):
            return native.NativeStacks(unavailable=_absolute(pattern)) if dumped else None
        missing = self.gdb_missing(client, image)
        if missing is not None and not self.keep_cores:
            return native.NativeStacks(unavailable=missing) if dumped else None
        cores = native.find_cores(token, workdir, None, started, pattern)
        if not cores:
            if not dumped:
                return None
            why = "the folder must be writable by the container's user"
            if shared:
                # Each container numbers its pids from 1: `core.%p` collides as `core` does.
                why = "another instance's core may have overwritten it, in the shared workdir"
            return native.NativeStacks(
                unavailable=(
                    f"native stacks unavailable: the process died of {root_signal} but left no "
                    f"core (kernel.core_pattern={pattern.raw!r}, looked in {workdir}; {why})"
                )
            )
        processes: list[native.ProcessStacks] = []
        for index, info in enumerate(cores):
            kept = _move_core(info.path, log_dir, info.pid)
            info = replace(info, path=kept)
            moved = kept.parent == log_dir
            if read_cores and index < native.MAX_CORES and missing is None and moved:
                stacks = self._read_core(client, config, info, token, index)
            else:
                if not read_cores:
                    why = "not read: the run was interrupted"
                elif missing is not None:
                    why = f"not read: {missing.removeprefix('native stacks unavailable: ')}"
                elif not moved:
                    why = f"not read: the core could not be moved into {log_dir}"
                else:
                    why = (
                        f"not read: only the first {native.MAX_CORES} cores of an attempt are read"
                    )
                stacks = native.ProcessStacks(
                    info.pid or 0, "core", info.command, info.signal, error=why
                )
            stacks = replace(stacks, root=is_root(info, root_signal))
            if self.keep_cores:
                stacks = replace(stacks, core=str(kept))
            else:
                with contextlib.suppress(OSError):
                    kept.unlink()
            processes.append(stacks)
        notes: tuple[str, ...] = ()
        if len(cores) > native.MAX_CORES:
            notes = (f"{len(cores)} processes left cores; the first {native.MAX_CORES} were read",)
        return native.NativeStacks(processes=tuple(processes), notes=notes)

    def _read_core(
        self, client: Any, config: Mapping[str, Any], info: native.CoreInfo, token: str, index: int
    ) -> native.ProcessStacks:
        """`gdb -batch` on one core in a fresh container of the attempt's image and mounts."""
        import docker.errors

        timeout_s = native.CORE_GDB_TIMEOUT_S
        argv = native.core_gdb_argv(
            info, f"{IN_ATTEMPT}/{info.path.name}", exists=lambda _path: True
        )
        gdb_config: dict[str, Any] = {
            "image": config["image"],
            "entrypoint": argv[:1],
            "command": argv[1:],
            "name": f"reprospec-gdb-{token[:12]}-{index}",
            "init": True,
            "detach": True,
            "environment": GDB_ENV,
            "working_dir": IN_ATTEMPT,
            "mounts": config["mounts"],
            "network_mode": "none",
            "labels": {LABEL: token, GDB_LABEL: "core"},
        }
        if "user" in config:
            gdb_config["user"] = config["user"]
        finished = True
        try:
            with fresh_container(client, gdb_config) as container:
                container.start()
                if wait_for_exit(container, timeout_s, None) is None:
                    finished = False
                    with contextlib.suppress(docker.errors.APIError):
                        container.kill()
                    wait_for_exit(container, 10.0, None)
                output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        except (FatalError, docker.errors.APIError) as exc:
            return native.ProcessStacks(
                info.pid or 0, "core", info.command, info.signal,
                error=f"gdb could not run in {config['image']}: {exc}",
            )  # fmt: skip
        return native.core_gdb_stacks(info, output, finished=finished, timeout_s=timeout_s)


def native_signal(returncode: int | None) -> str | None:
    """The signal's name for a negative returncode (subprocess's convention); else None."""
    import signal

    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return None


def _piped(pattern: native.CorePattern) -> str:
    return (
        "native stacks of crashes unavailable: kernel.core_pattern pipes cores to "
        f"{pattern.handler} on the host "
        "(`sysctl kernel.core_pattern=core` lets reprospec read them)"
    )


def _absolute(pattern: native.CorePattern) -> str:
    return (
        f"native stacks of crashes unavailable: kernel.core_pattern={pattern.raw!r} writes cores "
        "inside the container, which goes with it (`sysctl kernel.core_pattern=core` puts them "
        "in the workdir, where reprospec reads them)"
    )


def _move_core(path: Path, out_dir: Path, pid: int | None) -> Path:
    """The core moved into the attempt folder (the gdb container sees that folder)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (f"core.{pid}" if pid else path.name)
    try:
        os.replace(path, target)
    except OSError:
        import shutil

        try:
            shutil.move(str(path), target)  # another file system
        except OSError:
            return path  # cannot move it: it is not read (and deleted where it lies)
    return target


def _ptrace_refused(output: str) -> bool:
    """Whether gdb was refused every attach (`ptrace: Operation not permitted.`)."""
    attaches = output.count("@@reprospec:pid:")
    return attaches > 0 and output.count("ptrace: Operation not permitted") >= attaches


def _exec_failed(output: str) -> bool:
    """Whether the engine could not start the exec at all (it says so in the output)."""
    return "@@reprospec:" not in output and output.lstrip().startswith("OCI runtime exec failed")


def _exec_bounded(
    client: Any, container: Any, argv: Sequence[str], budget_s: float, privileged: bool = False
) -> tuple[str, bool]:
    """Run `argv` in the running container for at most `budget_s`: (its output so far, finished).

    Past the budget the exec is left running: the caller kills the container next,
    which ends it. The output read by then is kept. Raises docker's APIError when the
    exec cannot start.
    """
    chunks: list[bytes] = []
    created = client.api.exec_create(
        container.id, list(argv), stdout=True, stderr=True,
        environment=GDB_ENV, privileged=privileged,
    )  # fmt: skip
    stream = client.api.exec_start(created["Id"], stream=True, demux=False)

    def pump() -> None:
        with contextlib.suppress(Exception):  # a stream closed by the kill ends the pump
            for chunk in stream:
                chunks.append(chunk)

    reader = threading.Thread(target=pump, name="reprospec-docker-gdb", daemon=True)
    reader.start()
    reader.join(max(0.05, budget_s))
    finished = not reader.is_alive()
    return b"".join(list(chunks)).decode("utf-8", "replace"), finished


__all__ = [
    "ContainerNative",
    "ContainerProcess",
    "is_root",
    "native_signal",
    "parse_listing",
]
