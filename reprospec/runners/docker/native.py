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

Hang: before the timed-out container is killed, gdb attaches to each of its processes
through `docker exec` (dockerattach.py), stopped 3.5 s after the timeout (the
container's kill and removal come after it, within timeout + 5 s).

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
import uuid
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.errors import FatalError
from reprospec.process import leftovers
from reprospec.runners.docker.attach import GDB_ENV, attach_all
from reprospec.runners.docker.container import IN_ATTEMPT
from reprospec.runners.docker.engine import ENGINE_LABEL, LABEL, fresh_container, wait_for_exit

if TYPE_CHECKING:
    from docker.types import Ulimit

    from reprospec.runners.docker.sdk import Container, ContainerConfig, DockerClient

GDB_LABEL = "org.reprospec.gdb"
GDB_HINT = "install gdb in the image, e.g. RUN apt-get install -y gdb"
PROBE_TIMEOUT_S = 60.0
# How a gdb check that could not run begins: a failure of the check, not a finding.
_NOT_CHECKED = "native stacks unavailable: the check for gdb in "
# gdb at a hang is stopped this long after the timeout: a second before the local
# runner's deadline, since killing and removing a container takes about that long on a
# loaded machine (benchmarks/native_stacks.py), and the report must still arrive within
# timeout + 5 s.
HANG_DEADLINE_S = native.HANG_DEADLINE_S - 1.0


def is_root(info: native.CoreInfo, root_signal: str | None) -> bool:
    """Whether a core is the attempt's own process: the init's child (pid 1: launch.py, or
    docker-init in an image without python3) that died of the signal the container ended
    with. A process orphaned to the init has the same parent, but then the container did not
    end with its signal."""
    return info.ppid == 1 and root_signal is not None and info.signal == root_signal


class ContainerNative:
    """Native stacks for the docker runner's attempts; one per runner, safe across threads."""

    def __init__(self, keep_cores: bool = False) -> None:
        self.keep_cores = keep_cores
        self._lock = threading.Lock()
        # image -> why gdb cannot run in it (None: it can)
        self._reasons: dict[str, str | None] = {}

    # -- the image -----------------------------------------------------------------------

    def gdb_missing(self, client: DockerClient, image: str) -> str | None:
        """Why gdb cannot run in `image` (asked once per image); None when it can."""
        with self._lock:
            if image in self._reasons:
                return self._reasons[image]
        reason = self._probe(client, image)
        if reason is not None and reason.startswith(_NOT_CHECKED):
            return reason  # a check that could not run is asked again, never remembered
        with self._lock:
            self._reasons[image] = reason
        return reason

    def _probe(self, client: DockerClient, image: str) -> str | None:
        import docker.errors

        token = uuid.uuid4().hex
        config: ContainerConfig = {
            "image": image,
            "entrypoint": ["gdb"],
            "command": ["-nx", "-batch", "-ex", "show version"],
            "name": f"reprospec-gdbprobe-{token[:12]}",
            "detach": True,
            "environment": GDB_ENV,
            "network_mode": "none",
            "labels": {LABEL: token, GDB_LABEL: "probe", ENGINE_LABEL: str(os.getpid())},
        }
        missing = f"native stacks unavailable: gdb not found in image {image} ({GDB_HINT})"
        try:
            with fresh_container(client, config) as container:
                try:
                    container.start()
                except docker.errors.APIError as exc:
                    text = str(exc.explanation or exc)
                    if _gdb_not_found(text):
                        return missing
                    # The engine refused the probe (under load, a runtime error): the check
                    # did not run, which says nothing about the image.
                    return f"{_NOT_CHECKED}{image} could not run: {text}"
                status = wait_for_exit(container, PROBE_TIMEOUT_S, None)
        except (FatalError, docker.errors.APIError) as exc:
            return f"{_NOT_CHECKED}{image} could not run: {exc}"
        if status is None:
            return (
                f"native stacks unavailable: gdb in {image} did not answer in {PROBE_TIMEOUT_S:g}s"
            )
        if status == 127:  # gdb is the entrypoint: 127 is the runtime's "not found"
            return missing
        if status != 0:
            return f"native stacks unavailable: gdb in {image} exits with {status}"
        return None

    def core_limit(self, client: DockerClient, image: str) -> list[Ulimit]:
        """The container's `ulimits`: core size unlimited when its cores can be read (or kept)."""
        from docker.types import Ulimit

        pattern = native.core_pattern()
        if pattern.piped or Path(pattern.raw).is_absolute():
            return []  # cores would not reach the workdir: write none
        if self.gdb_missing(client, image) is not None and not self.keep_cores:
            return []  # nothing could read a core: write none
        return [Ulimit(name="core", soft=-1, hard=-1)]

    def watch(
        self, workdir: Path, *, shared: bool, elsewhere: tuple[Path, ...] = ()
    ) -> tuple[Path, ...]:
        """Hold each core created in the bind-mounted `workdir`, and in the folders under it
        the shell line moves to (`elsewhere`: `cd build && ./prog`), from its creation while
        the container runs (corewatch.py): where every core there has one name, and for the
        instances of an attempt (`shared`) also with `core.%p`, since each container
        numbers its processes from 1. The folders watched, each for WATCH.release."""
        pattern = native.core_pattern()
        if Path(pattern.raw).is_absolute() or not (pattern.shared_name or shared):
            return ()
        inside = [f for f in elsewhere if f.is_relative_to(workdir)]
        found = [pattern.watched(folder) for folder in dict.fromkeys([workdir, *inside])]
        return tuple(w[0] for w in found if w is not None and native.WATCH.acquire(*w))

    # -- a hang --------------------------------------------------------------------------

    def hang(
        self, client: DockerClient, container: Container, image: str, timed_out_at: float
    ) -> native.NativeStacks:
        """Native stacks of every live process of the timed-out `container`, before its kill.

        gdb is stopped HANG_DEADLINE_S after `timed_out_at` (time.monotonic()), stretched
        on a loaded machine as the local runner's reader is (`native.load_stretch`).
        """
        missing = self.gdb_missing(client, image)
        if missing is not None:
            return native.NativeStacks(unavailable=missing)
        deadline = timed_out_at + HANG_DEADLINE_S * native.load_stretch()
        return attach_all(client, container, deadline=deadline)

    # -- a crash -------------------------------------------------------------------------

    def crash(
        self,
        client: DockerClient,
        config: ContainerConfig,
        *,
        log_dir: Path,
        workdir: Path,
        token: str,
        started: float,
        returncode: int | None,
        read_cores: bool = True,
        shared: bool = False,
        cd_folders: tuple[Path, ...] = (),
        root_pid: int | None = None,
        stderr: Path | None = None,
    ) -> native.NativeStacks | None:
        """Native stacks from the cores the container's processes left in `workdir`.

        `shared`: other containers (the attempt's other instances) share the workdir.
        `cd_folders`: the folders the command's shell line moves to (`cd build && ./prog`,
        runners.base.cd_folders), where a crash there leaves its core. `root_pid`: the
        command's pid in the container, as its init recorded it (None: unknown). `stderr`:
        the attempt's stderr log, where bash reports a pipeline's processes (main_core).

        `config` is the attempt container's (its image and mounts: gdb runs in a copy);
        `started` its time.time() at start. None when there were no cores and none were
        expected; with `read_cores` False (an interrupted run) cores are only cleared away.
        """
        image = str(config["image"])
        pattern = native.core_pattern()
        # Where its processes moved (its shell line's `cd`s; os.chdir, subprocess's cwd=,
        # read (and removed) first, whatever is found): only the workdir's folders,
        # bind-mounted at their own path, are the host's too; a core elsewhere in the
        # container went with it.
        went = dict.fromkeys([*cd_folders, *native.moved_to(log_dir, workdir)])
        elsewhere = [f for f in went if f != workdir and f.is_relative_to(workdir)]
        root_signal = native.dumped_signal(returncode)
        dumped = root_signal is not None
        if pattern.piped:
            return native.NativeStacks(unavailable=_piped(pattern)) if dumped else None
        if Path(pattern.raw).is_absolute():
            return native.NativeStacks(unavailable=_absolute(pattern)) if dumped else None
        missing = self.gdb_missing(client, image)
        if missing is not None and not self.keep_cores:
            return native.NativeStacks(unavailable=missing) if dumped else None
        cores = native.find_cores(token, workdir, None, started, pattern, elsewhere)
        cut = False  # whether the walk under the workdir stopped at its bound
        if not cores and dumped:
            # None where the records say: a process moved without one (a C program's
            # chdir(), a child started in another folder), its core under the workdir.
            walked, cut = native.walked_to(workdir, started, pattern)
            walked = [f for f in walked if f not in elsewhere]
            if walked:
                cores = native.find_cores(token, workdir, None, started, pattern, walked)
        if not cores:
            if not dumped:
                return None
            why = "the folder must be writable by the container's user"
            if shared:
                # Each container numbers its pids from 1: `core.%p` collides as `core` does.
                why = "another instance's core may have overwritten it, in the shared workdir"
            return native.NativeStacks(
                unavailable=(
                    f"native stacks unavailable: a process died of {root_signal} but left no "
                    f"core (kernel.core_pattern={pattern.raw!r}, "
                    f"{native.looked_in(workdir, pattern, len(elsewhere), cut)}; {why})"
                )
            )
        processes: list[native.ProcessStacks] = []
        main = native.main_core(cores, root_pid, returncode, stderr)
        # Into the attempt folder, every one before any is read: the gdb container sees it.
        for index, (info, kept) in enumerate(native.move_cores(cores, log_dir)):
            moved = kept is not None and kept.parent == log_dir
            readable = read_cores and index < native.MAX_CORES and missing is None
            if kept is not None and moved and readable:
                stacks = self._read_core(client, config, replace(info, path=kept), token, index)
            else:
                if kept is None:
                    why = native.REPLACED
                elif not read_cores:
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
            stacks = replace(stacks, root=is_root(info, root_signal) or index == main)
            if kept is None:
                pass  # nothing of it to keep or delete
            elif self.keep_cores:
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
        self,
        client: DockerClient,
        config: ContainerConfig,
        info: native.CoreInfo,
        token: str,
        index: int,
    ) -> native.ProcessStacks:
        """`gdb -batch` on one core in a fresh container of the attempt's image and mounts."""
        import docker.errors

        timeout_s = native.CORE_GDB_TIMEOUT_S
        argv = native.core_gdb_argv(
            info, f"{IN_ATTEMPT}/{info.path.name}", exists=lambda _path: True
        )
        gdb_config: ContainerConfig = {
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
            # The attempt's labels (its token, cell and engine): whose gdb this is.
            "labels": {**config["labels"], GDB_LABEL: "core"},
        }
        if "user" in config:
            gdb_config["user"] = config["user"]
        finished = True
        try:
            record = info.path.parent / f"{leftovers.INFLIGHT_PREFIX}gdb-{index}.json"
            with fresh_container(client, gdb_config, record) as container:
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


__all__ = [
    "ContainerNative",
    "is_root",
]


def _gdb_not_found(text: str) -> bool:
    """Whether the engine's start error says the image has no gdb to execute (and not
    that something else was not found: a network, a cgroup, the container itself)."""
    lowered = text.lower()
    return '"gdb"' in lowered and (
        "executable file not found" in lowered or "no such file or directory" in lowered
    )
