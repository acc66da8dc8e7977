"""Native stacks: what a crash costs for its gdb stacks, and how late a hang report arrives.

1. Crash cost: one attempt that dies of SIGSEGV in libc's strlen (plain Python, and a
   torch op on a bad pointer when torch is installed), through the local runner with
   native stacks (core dumped, claimed, read by gdb, deleted) and without; the median
   wall time of each and the difference.
2. Hang report delay: a tree of 10 processes deadlocked in C (pthread mutexes through
   ctypes; plain Python, and the same after `import torch`), timed out; the median time
   from the timeout to the attempt's end (Python stacks, gdb attached to every process,
   tree killed), with native stacks and without. The budget is timeout + 5 s.

With `--runner docker` the same attempts run in containers of the runner image
(scripts/docker-setup.sh): the core is read by gdb in a fresh container of the image,
and gdb attaches to a hung container's processes through `docker exec`.

    python benchmarks/native_stacks.py [--rounds 5] [--no-torch] [--runner local|docker]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.runners.base import Runner

CRASH = """
import ctypes, sys
if sys.argv[1] == "torch":
    import torch
    torch.set_num_threads(1)
    floats = (ctypes.c_float * (1 << 20)).from_address(4096)
    torch.frombuffer(floats, dtype=torch.float32).sum()
libc = ctypes.CDLL(None)
libc.strlen.argtypes = [ctypes.c_void_p]
libc.strlen(4096)
"""

# 10 processes: the root forks 9 children; each locks a mutex twice (self-deadlock).
TREE = """
import ctypes, os, sys
if sys.argv[1] == "torch":
    import torch
for _ in range(9):
    if os.fork() == 0:
        break
libc = ctypes.CDLL(None)
mutex = ctypes.create_string_buffer(64)
libc.pthread_mutex_lock(mutex)
open(f"ready/{os.getpid()}.ready", "w").close()
libc.pthread_mutex_lock(mutex)
"""


def plan(argv: list[str], workdir: Path, timeout_s: float) -> AttemptPlan:
    from reprospec.core.inputs import AttemptPlan, Cell, Expectation
    from reprospec.core.sections import Command, Environment

    return AttemptPlan(
        spec_name="bench",
        cell=Cell(id="c", index=0, matrix={}),
        attempt=1,
        job=Command(tuple(argv)),
        timeout_s=timeout_s,
        markers=(),
        environment=Environment.from_section({}, workdir),
        expectation=Expectation(outcome="crash"),
    )


def make_runner(name: str, native: bool) -> tuple[Runner, str]:
    """The runner and the interpreter its attempts run (the container's python3 for docker)."""
    if name == "docker":
        from reprospec.runners.docker.runner import DockerRunner

        docker: Any = DockerRunner(native_stacks=native)
        docker.prepare([])
        return docker, "python3"
    from reprospec.runners.local import LocalRunner

    local = LocalRunner(native_stacks=native)
    local.prepare([])
    return local, sys.executable


def cpu() -> float:
    """CPU seconds of this process's reaped children (the attempts' processes, gdb, c++filt)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def crash_cost(kind: str, rounds: int, native: bool, runner_name: str) -> tuple[float, float]:
    """Median wall seconds and children's CPU seconds of one crashing attempt (the engine's
    children only: a container's processes are the Docker daemon's)."""
    runner, python = make_runner(runner_name, native)
    samples, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            work = Path(tmp) / f"w{n}"
            work.mkdir()
            start, used = time.perf_counter(), cpu()
            ex = runner.run(plan([python, "-c", CRASH, kind], work, 120), work / "logs")
            samples.append(time.perf_counter() - start)
            cpus.append(cpu() - used)
            assert ex.returncode == -11, ex.stderr_path.read_text()
    return statistics.median(samples), statistics.median(cpus)


def hang_delay(
    kind: str, rounds: int, native: bool, timeout_s: float, runner_name: str
) -> tuple[float, float, int, float]:
    """Median seconds from the timeout to the attempt's end and children's CPU seconds;
    the fewest processes gdb read in a round; the median seconds from the timeout to the
    kill (Execution.duration_s: for docker, without creating and removing the container)."""
    from reprospec import native as native_stacks

    runner, python = make_runner(runner_name, native)
    samples, cpus, kills = [], [], []
    reached = [0]
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            work = Path(tmp) / f"w{n}"
            (work / "ready").mkdir(parents=True)
            argv = [python, "-c", TREE, kind]
            start, used = time.perf_counter(), cpu()
            ex = runner.run(plan(argv, work, timeout_s), work / "logs")
            samples.append(time.perf_counter() - start - timeout_s)
            cpus.append(cpu() - used)
            kills.append(ex.duration_s - timeout_s)
            ready = len(list((work / "ready").glob("*.ready")))
            assert ex.timed_out, "the deadlock did not time out"
            assert ready == 10, f"{ready} of 10 processes reached the deadlock"
            stacks = native_stacks.read(work / "logs")
            if stacks is not None:
                reached.append(sum(1 for p in stacks.processes if p.threads and not p.error))
    return (
        statistics.median(samples),
        statistics.median(cpus),
        min(reached[1:] or reached),
        statistics.median(kills),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--runner", choices=("local", "docker"), default="local")
    parser.add_argument("--only", choices=("crash", "hang"), help="one of the two measures")
    args = parser.parse_args()
    from reprospec import native

    if args.runner == "local" and native.gdb_path() is None:
        raise SystemExit("gdb not found (apt-get install gdb): nothing to measure")
    kinds = ["python"]
    if args.runner == "docker" and not args.no_torch:
        kinds.append("torch")  # the runner image has torch
    elif not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch not installed: plain Python only")
        else:
            kinds.append("torch")
    print(f"median of {args.rounds} rounds, {args.runner} runner")
    # A container's processes (and its gdb) are the Docker daemon's children, not ours.
    local = args.runner == "local"
    for kind in kinds if args.only != "hang" else ():
        bare, bare_cpu = crash_cost(kind, args.rounds, native=False, runner_name=args.runner)
        full, full_cpu = crash_cost(kind, args.rounds, native=True, runner_name=args.runner)
        print(
            f"crash ({kind}): {bare * 1000:.0f} ms bare, {full * 1000:.0f} ms with native stacks: "
            f"+{(full - bare) * 1000:.0f} ms ({full / bare:.2f}x)"
            + (f"; +{(full_cpu - bare_cpu) * 1000:.0f} ms of CPU (gdb, core)" if local else "")
        )
    timeout_s = 3.0 if args.no_torch else 8.0  # 10 processes importing torch need a while
    if not local and not args.no_torch:
        timeout_s = 15.0  # and a container on a loaded machine longer
    for kind in kinds if args.only != "crash" else ():
        bare, bare_cpu, _, bare_kill = hang_delay(kind, args.rounds, False, timeout_s, args.runner)
        full, full_cpu, reached, kill = hang_delay(kind, args.rounds, True, timeout_s, args.runner)
        print(
            f"hang report, 10-process tree ({kind}): {bare * 1000:.0f} ms after the timeout "
            f"without native stacks, {full * 1000:.0f} ms with them (budget 5000 ms); "
            + (f"gdb used {(full_cpu - bare_cpu) * 1000:.0f} ms of CPU and " if local else "")
            + f"read at least {reached} of 10 processes in every round"
            + ("" if local else f"; killed {bare_kill * 1000:.0f} / {kill * 1000:.0f} ms after it")
        )


if __name__ == "__main__":
    main()
