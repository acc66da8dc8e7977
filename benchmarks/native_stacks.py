"""Native stacks: what a crash's and a hang's native stacks cost, gdb (old) against eu-stack (new).

1. Crash cost: one attempt that dies of SIGSEGV in libc's strlen (plain Python, and a
   torch op on a bad pointer when torch is installed), through the local runner without
   native stacks (bare), with them read by gdb (eu-stack hidden from PATH: the fallback,
   and what every crash paid before eu-stack) and by eu-stack (+ py-spy's Python stacks);
   the three alternate in every round, figures are medians. Per core: what each adds to
   bare, in wall time and in CPU of the process tree (this process's reaped children: the
   attempt, gdb or eu-stack, py-spy, c++filt).
2. Hang report: a tree of 10 processes deadlocked in C (pthread mutexes through ctypes;
   plain Python, and the same after `import torch`), timed out; the time from the timeout
   to the attempt's end (Python stacks, every process read, tree killed) and its CPU, bare,
   gdb and eu-stack alternating; per process: what reading the 10 adds, divided by 10.
3. The readers alone (`--only readers`): one real core of each crash above, read again and
   again by gdb and by eu-stack (+ py-spy), alternating; and a live 10-process deadlocked
   tree, read whole by gdb and by eu-stack, alternating: per core and per process, the
   median wall and CPU of the reader's processes, without an attempt's own noise.
4. Crash hunt (`--only hunt`, issue 30 item 2): `reprospec run` of
   benchmarks/data/torch-intermittent.yaml (a small torch loop that dies of a real SIGSEGV
   in about 30% of attempts), `--repeat 20`, fresh (`--preload none`) and preloaded
   (`--preload torch`), each with gdb and with eu-stack reading the crashes' cores; the
   four alternate, --rounds times; the CPU of the whole run (engine, server, attempts,
   readers) and fresh / preloaded CPU for each reader (`--hunt-bare`: beside the same
   without native stacks).

With `--runner docker` the crash and hang run in containers of the runner image
(scripts/docker-setup.sh), where gdb reads them (inside the image): bare against gdb.

    python benchmarks/native_stacks.py [--rounds 5] [--no-torch] [--runner local|docker]
                                       [--only crash|hang|readers|hunt] [--no-gdb]

`--only readers` reads each core with eu-stack three times: naming every frame itself ("own
lookups", as before issue 30's symbol index), and as the runner does now (a library of
100,000+ symbols without DWARF named by reprospec/native/symindex.py, the other frames by
eu-addr2line) for a first core (no names kept) and for a later one (the names eu-addr2line
gave for the same builds kept, reprospec/native/framenames.py: a crash hunt's later cores).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.runners.base import Runner

T = TypeVar("T")
HUNT_SPEC = ROOT / "benchmarks" / "data" / "torch-intermittent.yaml"
# The tools each reader may find on PATH (c++filt demangles for both; py-spy takes the
# Python stacks of a hang's silent processes for both; eu-addr2line names the frames of a
# core that maps a big library, beside eu-stack).
COMMON_TOOLS = ("c++filt", "py-spy")
READERS = {"gdb": ("gdb",), "eu-stack": ("eu-stack", "eu-addr2line")}

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


def tool_folders(root: Path) -> dict[str, Path]:
    """A PATH folder per reader, holding only that reader and the common tools."""
    folders = {}
    for reader, tools in READERS.items():
        folder = root / f"path-{reader}"
        folder.mkdir()
        for tool in (*tools, *COMMON_TOOLS):
            found = shutil.which(tool) or str(Path(sys.executable).parent / tool)
            if not Path(found).exists():
                raise SystemExit(f"{tool} not found: cannot measure the {reader} reader")
            (folder / tool).symlink_to(found)
        folders[reader] = folder
    return folders


@contextmanager
def on_path(folder: Path | None) -> Iterator[None]:
    """The engine's PATH is `folder` alone (None: unchanged) while the block runs."""
    before = os.environ.get("PATH", "")
    if folder is not None:
        os.environ["PATH"] = str(folder)
    try:
        yield
    finally:
        os.environ["PATH"] = before


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


def order(modes: list[T], round_number: int) -> list[T]:
    """The modes of one round, rotated each round: none keeps a place in the sequence."""
    shift = round_number % len(modes)
    return modes[shift:] + modes[:shift]


def crash_once(
    runner: Runner, python: str, kind: str, work: Path
) -> tuple[float, float, str | None]:
    """One crashing attempt: wall, children's CPU, and its signature frame."""
    from reprospec import native as native_stacks

    work.mkdir()
    start, used = time.perf_counter(), cpu()
    ex = runner.run(plan([python, "-c", CRASH, kind], work, 120), work / "logs")
    wall, spent = time.perf_counter() - start, cpu() - used
    assert ex.returncode == -11, ex.stderr_path.read_text()
    stacks = native_stacks.read(work / "logs")
    return wall, spent, native_stacks.signature_frame(stacks) if stacks else None


def crash_costs(
    kind: str, rounds: int, runner_name: str, folders: dict[str, Path | None]
) -> dict[str, tuple[float, float, set[str | None]]]:
    """Per mode: median wall and CPU of one crashing attempt, and the signature frames seen."""
    modes = ["none", *folders]
    runners = {mode: make_runner(runner_name, mode != "none") for mode in modes}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    cpus: dict[str, list[float]] = {m: [] for m in modes}
    frames: dict[str, set[str | None]] = {m: set() for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            for mode in order(modes, n):
                runner, python = runners[mode]
                with on_path(folders.get(mode)):
                    wall, spent, frame = crash_once(runner, python, kind, Path(tmp) / f"{mode}{n}")
                walls[mode].append(wall)
                cpus[mode].append(spent)
                frames[mode].add(frame)
    return {m: (statistics.median(walls[m]), statistics.median(cpus[m]), frames[m]) for m in modes}


def hang_once(
    runner: Runner, python: str, kind: str, work: Path, timeout_s: float
) -> tuple[float, float, int, float]:
    """One 10-process deadlock: seconds from the timeout to the end, children's CPU, the
    processes read, seconds from the timeout to the kill."""
    from reprospec import native as native_stacks

    (work / "ready").mkdir(parents=True)
    start, used = time.perf_counter(), cpu()
    ex = runner.run(plan([python, "-c", TREE, kind], work, timeout_s), work / "logs")
    delay, spent = time.perf_counter() - start - timeout_s, cpu() - used
    ready = len(list((work / "ready").glob("*.ready")))
    assert ex.timed_out, "the deadlock did not time out"
    assert ready == 10, f"{ready} of 10 processes reached the deadlock"
    stacks = native_stacks.read(work / "logs")
    reached = sum(1 for p in stacks.processes if p.threads and not p.error) if stacks else 0
    return delay, spent, reached, ex.duration_s - timeout_s


def hang_costs(
    kind: str, rounds: int, timeout_s: float, runner_name: str, folders: dict[str, Path | None]
) -> dict[str, tuple[float, float, int, float]]:
    """Per mode: median delay after the timeout, CPU, fewest processes read, kill delay."""
    modes = ["none", *folders]
    runners = {mode: make_runner(runner_name, mode != "none") for mode in modes}
    seen: dict[str, list[tuple[float, float, int, float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            for mode in order(modes, n):
                runner, python = runners[mode]
                with on_path(folders.get(mode)):
                    work = Path(tmp) / f"{mode}{n}"
                    seen[mode].append(hang_once(runner, python, kind, work, timeout_s))
    return {
        m: (
            statistics.median(s[0] for s in seen[m]),
            statistics.median(s[1] for s in seen[m]),
            min(s[2] for s in seen[m]),
            statistics.median(s[3] for s in seen[m]),
        )
        for m in modes
    }


def hunt_run(
    preload: str, reader: Path | None, empty: Path, out: Path, repeat: int
) -> dict[str, Any]:
    """One `reprospec run` of the torch crash hunt; its wall, CPU and crashes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NO_COLOR="1", PYTHONPATH=str(ROOT), PATH=str(reader or empty))
    argv = [sys.executable, "-m", "reprospec", "run", str(HUNT_SPEC), "--repeat", str(repeat)]
    argv += ["--preload", preload, "--out", str(out), "--format", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 4):  # 4: undecided (a one-attempt warm-up may be)
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-3000:]}")
    result = json.loads(done.stdout[done.stdout.index("{") :])
    (cell,) = result["cells"]
    crashes = sum(1 for a in cell["attempts"] if (a.get("outcome") or {}).get("kind") == "crash")
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "crashes": crashes,
        "launch": sorted({a.get("launch", "fresh") for a in cell["attempts"]}),
    }


def make_core(kind: str, folder: Path) -> Path:
    """A real core of the CRASH script (`kind`) in `folder`."""
    from reprospec import native as native_stacks

    folder.mkdir()

    def allow() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)

    subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", CRASH, kind],
        cwd=folder, preexec_fn=allow, capture_output=True, check=False,
    )  # fmt: skip
    cores = list(folder.glob("core*"))
    if not cores or native_stacks.read_core(cores[0]) is None:
        raise SystemExit(f"no core of the {kind} crash in {folder} (kernel.core_pattern?)")
    return cores[0]


def readers_alone(kinds: list[str], rounds: int, no_gdb: bool) -> None:
    """gdb and eu-stack (with and without the symbol index of big libraries) on the same
    cores, and gdb and eu-stack on the same hung tree, alternating."""
    from reprospec import native as native_stacks
    from reprospec.native import framenames, symindex

    def whole(info: native_stacks.CoreInfo) -> native_stacks.ProcessStacks:
        """eu-stack naming every frame itself (before the symbol index: symindex.py)."""
        big = symindex.BIG_SYMBOLS
        symindex.BIG_SYMBOLS = 1 << 62  # no library is big enough to be indexed
        try:
            return native_stacks.eustack_core_stacks(info, 120)
        finally:
            symindex.BIG_SYMBOLS = big

    fresh_names = iter(range(1 << 30))

    def first(info: native_stacks.CoreInfo) -> native_stacks.ProcessStacks:
        """The index and eu-stack -q, but no names kept from an earlier core (framenames.py):
        a hunt's first core, eu-addr2line naming every frame outside the big libraries."""
        kept = framenames.folder
        empty = Path(tmp) / f"names-{next(fresh_names)}"
        framenames.folder = lambda: empty
        try:
            return native_stacks.eustack_core_stacks(info, 120)
        finally:
            framenames.folder = kept

    readers: dict[str, Callable[[native_stacks.CoreInfo], native_stacks.ProcessStacks]] = {
        "gdb": lambda info: native_stacks.core_stacks(info, 120),
        "eu-stack (own lookups)": whole,
        "eu-stack + index (first core)": first,
        "eu-stack + index + kept names": lambda info: native_stacks.eustack_core_stacks(info, 120),
    }
    if no_gdb:
        del readers["gdb"]
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            info = native_stacks.read_core(make_core(kind, Path(tmp) / kind))
            assert info is not None
            seen: dict[str, list[tuple[float, float]]] = {r: [] for r in readers}
            frames: dict[str, set[str | None]] = {r: set() for r in readers}
            for n in range(rounds):
                for name in order(list(readers), n):
                    start, used = time.perf_counter(), cpu()
                    stacks = readers[name](info)
                    seen[name].append((time.perf_counter() - start, cpu() - used))
                    frames[name].add(
                        native_stacks.signature_frame(native_stacks.NativeStacks((stacks,)))
                    )
            print(
                f"one core ({kind}, {info.path.stat().st_size >> 20} MiB): "
                + "; ".join(
                    f"{name} {statistics.median(w for w, _ in got) * 1000:.0f} ms wall, "
                    f"{statistics.median(c for _, c in got) * 1000:.0f} ms CPU "
                    f"(frame {' | '.join(sorted(str(f) for f in frames[name]))})"
                    for name, got in seen.items()
                ),
                flush=True,
            )
        for kind in kinds:
            work = Path(tmp) / f"tree-{kind}"
            (work / "ready").mkdir(parents=True)
            tree = subprocess.Popen(
                [sys.executable, "-c", TREE, kind], cwd=work, start_new_session=True
            )
            try:
                deadline = time.monotonic() + 300
                while len(list((work / "ready").glob("*.ready"))) < 10:
                    if time.monotonic() > deadline:
                        raise SystemExit("the tree did not reach its deadlock")
                    time.sleep(0.05)
                pids = {int(p.stem): "tree" for p in (work / "ready").glob("*.ready")}
                live = {
                    "gdb": native_stacks.attach_stacks,
                    "eu-stack": native_stacks.attach_eustack,
                }
                if no_gdb:
                    del live["gdb"]
                got_live: dict[str, list[tuple[float, float, int]]] = {r: [] for r in live}
                for n in range(rounds):
                    for name in order(list(live), n):
                        start, used = time.perf_counter(), cpu()
                        found = live[name](pids, 120)
                        read = sum(1 for p in found.processes if p.threads and not p.error)
                        got_live[name].append((time.perf_counter() - start, cpu() - used, read))
            finally:
                os.killpg(tree.pid, signal.SIGKILL)  # the tree's own process group
                tree.wait()
            print(
                f"a hung 10-process tree ({kind}), per process: "
                + "; ".join(
                    f"{name} {statistics.median(w for w, _, _ in got) * 100:.0f} ms wall, "
                    f"{statistics.median(c for _, c, _ in got) * 100:.0f} ms CPU "
                    f"(read {min(r for _, _, r in got)} of 10 at least)"
                    for name, got in got_live.items()
                ),
                flush=True,
            )


def crash_hunt(rounds: int, repeat: int, folders: dict[str, Path], bare: bool) -> None:
    """Fresh against preloaded CPU of a flaky torch crash hunt, for each reader."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        empty = tmp / "empty-path"
        empty.mkdir()
        out = tmp / "out"
        readers: dict[str, Path | None] = {**({"none": None} if bare else {}), **folders}
        configs = [(r, p) for r in readers for p in ("none", "torch")]
        hunt_run("torch", None, empty, out, 1)  # a warm environment cache, as for -j figures
        seen: dict[tuple[str, str], list[dict[str, Any]]] = {c: [] for c in configs}
        for n in range(rounds):
            for reader, preload in order(configs, n):
                got = hunt_run(preload, readers[reader], empty, out, repeat)
                seen[(reader, preload)].append(got)
                print(
                    f"round {n + 1} {reader:8} preload {preload:5}: {got['wall']:6.1f} s wall, "
                    f"{got['cpu']:6.1f} s CPU, {got['crashes']} crashes, launch {got['launch']}",
                    flush=True,
                )
    print(f"\ncrash hunt, {repeat} attempts, median of {rounds}; load {os.getloadavg()[0]:.1f}")
    for reader in readers:
        fresh = statistics.median(s["cpu"] for s in seen[(reader, "none")])
        forked = statistics.median(s["cpu"] for s in seen[(reader, "torch")])
        fresh_wall = statistics.median(s["wall"] for s in seen[(reader, "none")])
        forked_wall = statistics.median(s["wall"] for s in seen[(reader, "torch")])
        name = "no native stacks" if reader == "none" else f"cores read by {reader}"
        print(
            f"{name:22}: CPU fresh {fresh:6.1f} s, preloaded {forked:6.1f} s: "
            f"{fresh / forked:.2f}x less CPU preloaded; wall {fresh_wall:.1f} s / "
            f"{forked_wall:.1f} s ({fresh_wall / forked_wall:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20, help="attempts of the crash hunt")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--runner", choices=("local", "docker"), default="local")
    parser.add_argument(
        "--only", choices=("crash", "hang", "readers", "hunt"), help="one of the measures"
    )
    parser.add_argument(
        "--hunt-bare", action="store_true", help="the crash hunt without native stacks too"
    )
    parser.add_argument(
        "--no-gdb", action="store_true", help="eu-stack alone (the readers, the crash hunt)"
    )
    args = parser.parse_args()
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
    local = args.runner == "local"
    with tempfile.TemporaryDirectory() as folder:
        # Docker reads in the image with gdb: the engine's PATH does not choose its reader.
        folders = tool_folders(Path(folder)) if local else {}
        readers: dict[str, Path | None] = {**folders} if local else {"gdb": None}
        if args.only == "readers":
            readers_alone(kinds, args.rounds, args.no_gdb)
            print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            return
        if args.only == "hunt":
            hunted = {k: v for k, v in folders.items() if k != "gdb" or not args.no_gdb}
            crash_hunt(args.rounds, args.repeat, hunted, args.hunt_bare)
            return
        print(f"median of {args.rounds} rounds, {args.runner} runner, modes alternating")
        for kind in kinds if args.only != "hang" else ():
            costs = crash_costs(kind, args.rounds, args.runner, readers)
            bare, bare_cpu, _ = costs["none"]
            parts = [f"crash ({kind}): bare {bare * 1000:.0f} ms"]
            for mode, (wall, spent, frames) in costs.items():
                if mode != "none":
                    parts.append(
                        f"{mode} +{(wall - bare) * 1000:.0f} ms wall"
                        + (f", +{(spent - bare_cpu) * 1000:.0f} ms CPU" if local else "")
                        + f" per core (frame {' | '.join(sorted(str(f) for f in frames))})"
                    )
            print("; ".join(parts))
        timeout_s = 3.0 if args.no_torch else 8.0  # 10 processes importing torch need a while
        if not local and not args.no_torch:
            timeout_s = 15.0  # and a container on a loaded machine longer
        for kind in kinds if args.only != "crash" else ():
            delays = hang_costs(kind, args.rounds, timeout_s, args.runner, readers)
            bare, bare_cpu, _, _ = delays["none"]
            parts = [f"hang report, 10-process tree ({kind}): bare {bare * 1000:.0f} ms after it"]
            for mode, (delay, spent, reached, kill) in delays.items():
                if mode != "none":
                    parts.append(
                        f"{mode} {delay * 1000:.0f} ms (+{(delay - bare) * 100:.0f} ms wall"
                        + (f", +{(spent - bare_cpu) * 100:.0f} ms CPU" if local else "")
                        + f" per process), read {reached} of 10 at least"
                        + ("" if local else f", killed {kill * 1000:.0f} ms after it")
                    )
            print("; ".join(parts))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
