"""`python -m reprospec.process.launch [--shm-size N] [--memory N] [--barrier DIR --instance I]
[--init RECORD] -- ARGV...`

Apply limits, wait at the start barrier, exec ARGV. Stdlib only and tiny, because it
runs before every limited attempt and every instance. `shm_size`: a private mount
namespace with its own tmpfs on /dev/shm (needs CAP_SYS_ADMIN; the namespace, and
every file in it, dies with the attempt's last process). `memory`: RLIMIT_AS,
inherited by every descendant. A limit that cannot be applied is reported on stderr
and the command runs without it.

`--barrier DIR --instance I` (an instance of `run.instances`, barrier.py is the engine's
side): open the FIFO `DIR/go`, check that ARGV can be started, say `I ok` (or
`I error WHY`, then exit 127) on the FIFO `DIR/ready`, and block reading `go` until
the engine closes it: every instance wakes from that one close, and only then execs.
When and how long it waited goes to `DIR/instance-I.json` (CLOCK_MONOTONIC ns).

Perturbations (`environment.perturb`, perturb/apply.py): `--cpus 0,1` (affinity),
`--nice N`, `--cgroup DIR` (join the memory cgroup the engine made for the attempt).
Unlike a limit, a perturbation that cannot be applied stops the attempt: the reason
goes to the file `--refused PATH` and launch exits 126 without running ARGV, and the
engine records an infra-error (a plain run would read as "the perturbation did not help").

`--init RECORD` (the docker runner's container init, in place of docker-init): ARGV runs as
this process's child instead of replacing it; every orphan of the container is reaped, the
signals a `docker kill` may send are passed on to ARGV, and ARGV's wait status, as
subprocess gives it (`-10`: killed by SIGUSR1; `138`: it exited 138), goes to the JSON file
RECORD with ARGV's pid. The exit status that follows is docker-init's (128 + N for a
signal), which cannot tell `exit 138` from a SIGUSR1: the record can. RECORD.started is
written right before ARGV starts: without either file, the engine knows ARGV never ran. An
image's python3 runs this path: it must compile and run on 3.7 (no posix_spawnp there).
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time
from collections.abc import Sequence

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000


USAGE = (
    "usage: python -m reprospec.process.launch [--shm-size BYTES] [--memory BYTES] [--probe] "
    "[--barrier DIR --instance N] [--cpus LIST] [--nice N] [--cgroup DIR] [--refused PATH] "
    "[--init RECORD] -- COMMAND..."
)
# The instance was not released: the engine gave up on the start (another instance
# could not start), or the barrier is gone.
EXIT_ABORTED = 3
EXIT_CANNOT_RUN = 127
EXIT_NOT_PERTURBED = 126


def _libc() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not glibc: ask the slower way (imports subprocess)
        from ctypes import util

        return ctypes.CDLL(util.find_library("c"), use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(f"{what}: {os.strerror(errno)}")


def private_shm(size: int) -> None:
    """Give this process (and its descendants) a fresh /dev/shm tmpfs of `size` bytes."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Without this, the tmpfs mount would propagate back to the host's /dev/shm.
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    options = f"size={size},mode=1777".encode()
    _check(
        libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, options),
        "mount tmpfs /dev/shm",
    )


def limit_memory(size: int) -> None:
    """RLIMIT_AS: allocations past `size` bytes of address space fail (MemoryError, bad_alloc)."""
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


def set_cpus(cpus: str) -> None:
    os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def set_nice(value: str) -> None:
    os.setpriority(os.PRIO_PROCESS, 0, int(value))


def join_cgroup(folder: str) -> None:
    fd = os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


PERTURB = {"cpus": set_cpus, "nice": set_nice, "cgroup": join_cgroup}


def _cannot_start(command: Sequence[str]) -> str | None:
    """Why exec would fail on `command[0]` (as the local runner words it); None if it can run."""
    name = command[0]
    if os.sep in name:
        candidates = [name]
    else:
        path = os.environ.get("PATH", os.defpath)
        candidates = [os.path.join(folder or ".", name) for folder in path.split(os.pathsep)]
    found = [c for c in candidates if os.path.isfile(c)]
    if not found:
        return f"cannot start {name}: No such file or directory"
    if not any(os.access(c, os.X_OK) for c in found):
        return f"cannot start {name}: Permission denied"
    return None


def wait_at_barrier(folder: str, instance: int, command: Sequence[str]) -> None:
    """Say this instance is ready, block until the engine releases every instance at once.

    Exits (EXIT_ABORTED) when the engine did not release it, and (EXIT_CANNOT_RUN)
    after saying why when `command` cannot be started.
    """
    try:
        # Non-blocking opens: the engine holds both FIFOs open from the start; when it
        # does not (it gave up), the open fails at once instead of waiting forever.
        go = os.open(os.path.join(folder, "go"), os.O_RDONLY | os.O_NONBLOCK)
        ready = os.open(os.path.join(folder, "ready"), os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        sys.stderr.write(f"reprospec: start barrier {folder} is gone: {exc}\n")
        raise SystemExit(EXIT_ABORTED) from None
    problem = _cannot_start(command)
    ready_ns = time.monotonic_ns()
    # One write of less than PIPE_BUF bytes: the engine never reads two instances interleaved.
    line = f"{instance} ok\n" if problem is None else f"{instance} error {problem}\n"
    os.write(ready, line.encode("utf-8", "replace")[:500])
    os.close(ready)
    if problem is not None:
        sys.stderr.write(f"reprospec: {problem}\n")
        raise SystemExit(EXIT_CANNOT_RUN)
    os.set_blocking(go, True)
    said = os.read(go, 1)  # b"": the engine closed `go`, which wakes every instance
    released_ns = time.monotonic_ns()
    os.close(go)
    if said:
        raise SystemExit(EXIT_ABORTED)
    fields = (
        f'"instance": {instance}, "pid": {os.getpid()}, '
        f'"ready_ns": {ready_ns}, "released_ns": {released_ns}'
    )
    fd = os.open(
        os.path.join(folder, f"instance-{instance}.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    )
    os.write(fd, f"{{{fields}}}\n".encode())
    os.close(fd)
    # The instance's own record of its start, kept in its folder (the barrier's is removed).
    events = os.environ.get("REPROSPEC_EVENTS")
    if events:
        line = f'{{"t": {time.time():.6f}, "event": "instance_start", {fields}}}\n'
        try:
            fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, line.encode())
            os.close(fd)
        except OSError:
            pass  # the record is a courtesy: the command runs all the same


def parse(
    argv: Sequence[str],
) -> tuple[dict[str, int], bool, list[str], tuple[str, int] | None, dict[str, str]]:
    """(limits, probe, command, barrier, perturbations); by hand: argparse costs more."""
    limits: dict[str, int] = {}
    perturb: dict[str, str] = {}
    probe = False
    barrier: str | None = None
    instance: int | None = None
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--probe":
            probe = True
        elif option in ("--shm-size", "--memory") and args and args[0].isdigit():
            limits[option[2:].replace("-", "_")] = int(args.pop(0))
        elif option in ("--cpus", "--nice", "--cgroup", "--refused", "--init") and args:
            perturb[option[2:]] = args.pop(0)
        elif option == "--barrier" and args:
            barrier = args.pop(0)
        elif option == "--instance" and args and args[0].isdigit():
            instance = int(args.pop(0))
        else:
            raise SystemExit(f"{USAGE}\nunexpected argument {option!r}")
    if (barrier is None) != (instance is None):
        raise SystemExit(f"{USAGE}\n--barrier and --instance go together")
    at = (barrier, instance) if barrier is not None and instance is not None else None
    return limits, probe, args[1:], at, perturb


def apply_perturbations(perturb: dict[str, str]) -> None:
    """Apply each perturbation, or say why not in the --refused file and exit 126."""
    refused = perturb.pop("refused", None)
    for name, value in perturb.items():
        try:
            PERTURB[name](value)
        except Exception as exc:
            reason = f"perturb {name} {value} not applied: {exc}"
            sys.stderr.write(f"reprospec: {reason}\n")
            if refused:
                fd = os.open(refused, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, reason.encode("utf-8", "replace"))
                os.close(fd)
            raise SystemExit(EXIT_NOT_PERTURBED) from None


APPLY = {"shm_size": private_shm, "memory": limit_memory}

# What `docker kill -s` or a runtime's stop may send the container's init, passed on to the
# command as docker-init passes them (SIGKILL needs no passing: the whole container dies).
FORWARDED = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGWINCH")


def returncode_of(status: int) -> int:
    """A wait status as subprocess gives it: -N for a death by signal N, else the exit code
    (os.waitstatus_to_exitcode, by hand: it is 3.9+, and an image's python3 may be 3.7)."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    raise ValueError(f"not an end: wait status {status}")


def _spawn(command: Sequence[str], reset: Sequence[int]) -> int:
    """Start `command` in its own process group, as docker-init does, with the signals of
    `reset` back at their default (Python ignores SIGPIPE and SIGXFSZ, and exec keeps what is
    ignored); posix_spawnp where there is one (3.8+), fork and exec on 3.7."""
    spawn = getattr(os, "posix_spawnp", None)
    if spawn is not None:
        return int(spawn(command[0], list(command), os.environ, setpgroup=0, setsigdef=reset))
    import signal

    # The child says why exec failed on a pipe that exec closes: an OSError here, as spawn's.
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, False)
    child = os.fork()
    if child == 0:  # pragma: no cover (the child, on 3.7 only)
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            for number in reset:
                signal.signal(number, signal.SIG_DFL)
            os.execvp(command[0], list(command))
        except OSError as exc:
            os.write(write_end, str(exc.errno or 0).encode())
        finally:
            os._exit(EXIT_CANNOT_RUN)
    os.close(write_end)
    said = os.read(read_end, 32)
    os.close(read_end)
    if said:
        os.waitpid(child, 0)
        errno = int(said)
        raise OSError(errno, os.strerror(errno))
    return child


def run_as_init(command: Sequence[str], record: str) -> int:
    """Run `command` as this init's child to its end, its wait status written to `record`;
    the exit status a shell (and docker-init) would give for it: its code, or 128 + N.

    `record`.started is written first, before the command starts: a container that ended with
    neither file ended before the command could run (the engine's fallback is docker-init)."""
    # Here, not at the top: signal imports enum, a cost every other launch would pay.
    import signal

    try:
        os.close(os.open(f"{record}.started", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    except OSError as exc:
        sys.stderr.write(f"reprospec: the command's start was not marked: {exc}\n")
    try:
        child = _spawn(command, (signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        sys.stderr.write(f"reprospec: cannot start {command[0]}: {exc.strerror}\n")
        return EXIT_CANNOT_RUN

    def forward(number: int, _frame: object) -> None:
        try:  # noqa: SIM105 (no contextlib: an import more for every launch)
            os.kill(child, number)
        except ProcessLookupError:
            pass  # it ended meanwhile: its status is next

    for name in FORWARDED:
        signal.signal(getattr(signal, name), forward)
    returncode = None
    while returncode is None:
        try:
            pid, status = os.wait()  # every orphan too: pid 1 reaps what the kernel hands it
        except ChildProcessError:  # not reached: the child is ours until it is reaped
            return EXIT_CANNOT_RUN
        if pid == child:
            returncode = returncode_of(status)
    # Whole or not at all: a record cut short by the container's kill is no record. One that
    # cannot be written leaves the engine its older reading of the exit status.
    partial = f"{record}.partial"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, f'{{"pid": {child}, "returncode": {returncode}}}\n'.encode())
        os.close(fd)
        os.replace(partial, record)
    except OSError as exc:
        sys.stderr.write(f"reprospec: the command's exit status was not recorded: {exc}\n")
    # The command's end is the container's, as with docker-init: what it left running dies.
    return 128 - returncode if returncode < 0 else returncode


def main(argv: Sequence[str] | None = None) -> int:
    limits, probe, command, barrier, perturb = parse(sys.argv[1:] if argv is None else argv)
    # Parsed with the perturbations (an option with a value), but how the command runs.
    init = perturb.pop("init", None)
    # The cgroup first: the limits below then hold in it, and its processes are all ours.
    apply_perturbations(perturb)
    failed = False
    for name, size in limits.items():
        try:
            APPLY[name](size)
        except (
            Exception
        ) as exc:  # whatever went wrong, the attempt still runs, unlimited and said so
            failed = True
            sys.stderr.write(f"reprospec: {name} not applied: {exc}\n")
    if probe:
        return 1 if failed else 0
    if not command:
        raise SystemExit(f"{USAGE}\nno command given after --")
    if barrier is not None:
        wait_at_barrier(barrier[0], barrier[1], command)
    sys.stderr.flush()
    if init is not None:
        return run_as_init(command, init)
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced us


if __name__ == "__main__":
    sys.exit(main())
