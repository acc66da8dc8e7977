"""Distributed workloads: the built-in training loop on N ranks under torch.distributed.

`workload.distributed: {world_size: N, backend: gloo|nccl}`. The harness process becomes a
supervisor: it hosts the rendezvous (a TCPStore on a free port of 127.0.0.1), starts one
process per rank (forked on CPU, spawned for CUDA), and watches them. Each rank runs the
usual phases with a DistributedSampler and the model in DistributedDataParallel; its
events say `"rank": N`.

Every step starts with a step agreement: a one-number all-reduce on a second process
group. A rank that left out a collective of the default group (the `skip_allreduce`
fault, or a real bug) would otherwise pair its next collective with the other ranks'
pending one and go on silently out of step; with the agreement it blocks there, the
others block in the collective it left out, and the hang happens at the step it
happened. The supervisor sees each rank's position in shared memory; when none moves
for STUCK_AFTER seconds it writes a `ranks_stuck` event: every rank's phase, step and
stage, and which ranks are out of step (the last event, so the hang is located there).

When a rank dies the supervisor kills the others and ends as that rank did: the same
signal, or its exit code after printing its traceback last (stderr is shared, so the
others' errors about a lost peer must not be taken for the cause).
"""

from __future__ import annotations

import contextlib
import datetime
import faulthandler
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from . import cell as cell_module
from . import config, events, stackdump
from .config import ConfigError, InfraError, cuda_devices, infra_error, resolve_device
from .values import Int64Array, JsonValue, array, to_int

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.distributed import ProcessGroup

BACKENDS = ("gloo", "nccl")
# A rank's position in shared memory: a counter bumped at every move, phase index
# (-1 before the first phase), step, stage index, and when it failed (ms since the epoch).
SLOT = 5
_SEQ, _PHASE, _STEP, _STAGE, _FAILED = range(SLOT)
STAGES = ("setup", "phase", "start", "sync", "data", "forward", "loss", "backward", "optimizer",
          "finish")  # fmt: skip
STUCK_AFTER = 2.0
POLL_S = 0.25
# Collectives wait this long before torch gives up: the attempt's timeout comes first.
COLLECTIVE_TIMEOUT = datetime.timedelta(days=1)
RENDEZVOUS_TIMEOUT = datetime.timedelta(seconds=120)


@dataclass(frozen=True)
class Settings:
    """`workload.distributed`, checked."""

    world_size: int
    backend: str


def settings(workload: Mapping[str, JsonValue]) -> Settings | None:
    """The workload's `distributed` section, or None for a single process."""
    section = workload.get("distributed")
    if section is None:
        return None
    fields = config.mapping(section, "workload.distributed")
    unknown = sorted(set(fields) - {"world_size", "backend"})
    if unknown:
        raise ConfigError(f"workload.distributed.{unknown[0]}", "unknown option")
    world = config.integer(fields.get("world_size"), "workload.distributed.world_size", 1)
    backend = config.choice(
        fields.get("backend") or "gloo", "workload.distributed.backend", "backend", BACKENDS
    )
    for number, fault in enumerate(array(workload.get("faults"))):
        if not isinstance(fault, Mapping):
            continue
        # A fault its `when` leaves out of this cell is not this cell's: a matrix over
        # world_size arms a rank-2 fault only where there is a rank 2. (Validation refuses
        # an armed one at spec load, per cell; this is the harness's own guard.)
        if "when" in fault and not config.boolean(fault["when"], f"workload.faults[{number}].when"):
            continue
        rank = fault.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool) and rank >= world:
            raise ConfigError(
                f"workload.faults[{number}].rank",
                f"rank {rank} does not exist: world_size is {world} (ranks 0..{world - 1})",
            )
    return Settings(world, backend)


def check_backend(dist: Settings, requested_device: str) -> None:
    """Can this machine run the ranks? InfraError (never a crash) when it cannot."""
    import torch
    import torch.distributed

    if not torch.distributed.is_available():
        raise InfraError(f"torch {torch.__version__} was built without torch.distributed")
    if dist.backend == "gloo" and not torch.distributed.is_gloo_available():
        raise InfraError(f"torch {torch.__version__} was built without the gloo backend")
    if dist.backend == "nccl":
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "a CPU-only build"
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if visible < dist.world_size:
            raise InfraError(
                f"backend nccl needs {cuda_devices(dist.world_size)}, one per rank; "
                f"{visible} visible (torch {torch.__version__}, {build})"
            )
        if not torch.distributed.is_nccl_available():
            raise InfraError(f"torch {torch.__version__} was built without NCCL")
        if str(requested_device).startswith(("cpu", "mps")):
            raise ConfigError("workload.device", "backend nccl runs on CUDA devices: use cuda")


# -- in a rank ---------------------------------------------------------------------------


@dataclass
class Rank:
    """This process's place in the job: what the workload and training loop need of it."""

    rank: int
    world_size: int
    backend: str
    slots: Int64Array  # the shared positions
    phases: Sequence[str]
    agreement: ProcessGroup | None = None  # the process group of the step agreement
    seq: int = 0
    device: torch.device | None = None

    def track(self, phase: str | None, step: int | None, stage: str) -> None:
        """Publish this rank's position to the supervisor."""
        base = self.rank * SLOT
        self.seq += 1
        index = self.phases.index(phase) if phase in self.phases else -1
        self.slots[base + _PHASE] = index
        self.slots[base + _STEP] = -1 if step is None else step
        self.slots[base + _STAGE] = STAGES.index(stage) if stage in STAGES else -1
        self.slots[base + _SEQ] = self.seq

    def agree(self, phase: str | None, step: int) -> None:
        """The step agreement: every rank must be at this step of this phase to go on."""
        import torch
        import torch.distributed as dist

        self.track(phase, step, "sync")
        here = (self.phases.index(phase) if phase in self.phases else 0) * 1_000_000 + step
        value = torch.tensor([here, -here], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MAX, group=self.agreement)
        highest, lowest = int(value[0]), -int(value[1])
        if highest != lowest:
            raise RuntimeError(
                f"ranks out of step: rank {self.rank} is at {phase} step {step}, "
                f"another rank at {self._describe(highest if highest != here else lowest)}"
            )

    def _describe(self, value: int) -> str:
        phase, step = divmod(value, 1_000_000)
        name = self.phases[phase] if 0 <= phase < len(self.phases) else f"phase {phase}"
        return f"{name} step {step}"

    def wrap(self, model: nn.Module) -> nn.Module:
        """The model in DistributedDataParallel."""
        from torch.nn.parallel import DistributedDataParallel

        device = self.device
        ids = [device.index] if device is not None and device.type == "cuda" else None
        try:
            return DistributedDataParallel(model, device_ids=ids)
        except (RuntimeError, ValueError) as exc:  # e.g. a model with nothing to train
            raise ConfigError("workload.distributed", f"DistributedDataParallel: {exc}") from None


def rank_main(
    rank: int,
    dist: Settings,
    port: int,
    slots: Int64Array,
    phases: Sequence[str],
    report_dir: str,
) -> None:
    """One rank (a forked or spawned process): rendezvous, build the workload, run the phases."""
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(dist.world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    events.set_rank(rank)
    stackdump.register()
    if not faulthandler.is_enabled():
        stackdump.arm_fatal()
    me = Rank(rank, dist.world_size, dist.backend, slots, list(phases))
    code = 1
    try:
        code = _run_rank(me, port)
    except SystemExit as done:  # a fault's exit, or the harness's own
        if isinstance(done.code, str):
            sys.stderr.write(done.code + "\n")
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
    except BaseException as error:
        # Said before the traceback is printed: the supervisor tells who failed first.
        slots[rank * SLOT + _FAILED] = int(time.time() * 1000)
        text = traceback.format_exc()
        with (
            contextlib.suppress(OSError),
            (Path(report_dir) / f"rank-{rank}.txt").open("w") as handle,
        ):
            handle.write(text)
        events.emit("rank_error", exception=type(error).__name__, message=str(error)[:500])
        sys.stderr.write(f"reprospec harness: rank {rank} failed:\n{text}")
        code = 1
    if code and not slots[rank * SLOT + _FAILED]:
        slots[rank * SLOT + _FAILED] = int(time.time() * 1000)
    _leave(code)


def _leave(code: int) -> None:
    """End this rank now: no destructors (a process group torn down after its peer has gone
    can wait for it forever), no DataLoader worker left behind.

    The kills are recorded first (`teardown`): the engine adopts and reaps these
    workers, and must not take their SIGKILL for the failure. torch's SIGCHLD handler,
    still installed while the DataLoader lives, could raise "DataLoader worker ... is
    killed by signal: Killed" for them here, and that error escape into Python's own exit
    (destructors, the process group's teardown): it is defaulted first, and the exit
    comes whatever happens on the way."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        _kill(_children([os.getpid()]))
    finally:
        os._exit(code)


def _run_rank(me: Rank, port: int) -> int:
    cell = cell_module.load()
    workload, environment = cell.workload, cell.environment
    me.track(None, None, "setup")
    import torch
    import torch.distributed as tdist

    if "OMP_NUM_THREADS" not in os.environ:
        # Ranks share the machine's cores, as torchrun arranges it.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // me.world_size))
    requested = str(workload.get("device") or environment.get("device") or "cpu")
    try:
        if me.backend == "nccl" or requested == "cuda":
            requested = f"cuda:{me.rank}"
        device = me.device = resolve_device(requested)
    except InfraError as exc:
        return infra_error(exc)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    store = tdist.TCPStore("127.0.0.1", port, is_master=False, timeout=RENDEZVOUS_TIMEOUT)
    tdist.init_process_group(
        me.backend,
        store=store,
        rank=me.rank,
        world_size=me.world_size,
        timeout=COLLECTIVE_TIMEOUT,
    )
    # The step agreement runs beside the default group, so it can never pair with its ops.
    me.agreement = tdist.new_group(backend="gloo", timeout=COLLECTIVE_TIMEOUT)
    from .setup import build
    from .training import run_phases

    events.emit("phase", phase="setup")
    try:
        work = build(
            workload,
            device,
            seed=to_int(workload.get("seed") or 0),
            attempt=cell.attempt,
            rank=me,
        )
    except ConfigError as exc:
        return infra_error(exc)
    run_phases(work)
    me.track(me.phases[-1] if me.phases else None, None, "finish")
    # Every rank leaves together; the process group is not torn down (see _leave).
    tdist.barrier(group=me.agreement)
    return 0


# -- the supervisor ----------------------------------------------------------------------


class _Position(TypedDict):
    """Where a rank is, as the supervisor reads it from the shared slots."""

    rank: int
    pid: int | None
    phase: str
    step: int | None
    stage: str | None


@dataclass
class _Ranks:
    processes: list[BaseProcess]
    slots: Int64Array
    phases: Sequence[str]
    exits: dict[int, int] = field(default_factory=dict)

    def position(self, rank: int) -> _Position:
        base = rank * SLOT
        phase = self.slots[base + _PHASE]
        step = self.slots[base + _STEP]
        stage = self.slots[base + _STAGE]
        return {
            "rank": rank,
            "pid": self.processes[rank].pid,
            "phase": self.phases[phase] if 0 <= phase < len(self.phases) else "setup",
            "step": None if step < 0 else step,
            "stage": STAGES[stage] if 0 <= stage < len(STAGES) else None,
        }

    def moves(self) -> tuple[int, ...]:
        return tuple(self.slots[r * SLOT + _SEQ] for r in range(len(self.processes)))


def supervise(dist: Settings, phases: Sequence[str], requested_device: str) -> int:
    """Start the ranks, watch them, end as the job did: 0, a rank's exit code, or its signal.

    On CPU the ranks are forked from this process, which has imported torch and DDP
    but run nothing in parallel yet (one thread): a rank starts in milliseconds instead
    of importing torch again, which on a busy 2-core machine took 10 s per rank. CUDA
    cannot be forked: with nccl or a CUDA device the ranks are spawned.
    """
    import torch.distributed as tdist

    on_cuda = dist.backend == "nccl" or str(requested_device).startswith("cuda")
    context = (
        multiprocessing.get_context("spawn") if on_cuda else multiprocessing.get_context("fork")
    )
    if not on_cuda:
        # Imported once here rather than in every rank: DDP's constructor imports
        # torch._dynamo, several seconds of CPU (and still one thread: safe to fork).
        import torch._dynamo  # noqa: F401
        from torch.nn.parallel import DistributedDataParallel  # noqa: F401
    store = tdist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    slots: Int64Array = context.RawArray("q", SLOT * dist.world_size)
    for index in range(len(slots)):
        slots[index] = 0
    report_dir = tempfile.mkdtemp(prefix="reprospec-ranks-")
    events.emit(
        "distributed",
        world_size=dist.world_size,
        backend=dist.backend,
        master_addr="127.0.0.1",
        master_port=store.port,
        start_method=context.get_start_method(),
    )
    processes: list[BaseProcess] = [
        context.Process(
            target=rank_main,
            args=(rank, dist, store.port, slots, list(phases), report_dir),
            name=f"rank-{rank}",
        )
        for rank in range(dist.world_size)
    ]
    for process in processes:
        process.start()
    events.emit("ranks", pids=[p.pid for p in processes])
    ranks = _Ranks(processes, slots, list(phases))
    try:
        return _watch(ranks, report_dir)
    finally:
        for process in processes:
            if process.exitcode is None and process.pid is not None:  # (started: it has one)
                _kill_tree([process.pid])
                process.join()
        _remove_reports(report_dir)
        del store


def _remove_reports(report_dir: str) -> None:
    """The ranks' report folder, emptied and removed (none left in a shared TMPDIR)."""
    with contextlib.suppress(OSError):
        for path in list(Path(report_dir).iterdir()):
            path.unlink()
        Path(report_dir).rmdir()


def _watch(ranks: _Ranks, report_dir: str) -> int:
    last_moves = ranks.moves()
    last_move = time.monotonic()
    reported = False
    while True:
        # One reading of every rank's exit decides both questions. Read twice, the ranks
        # could all end between the readings (one segfaults, its peer errors on the closed
        # connection) and the job be called a pass: seen once in CI under load.
        codes = [p.exitcode for p in ranks.processes]
        failed = [(rank, code) for rank, code in enumerate(codes) if code]
        if failed:
            return _first_failure(ranks, failed, report_dir)
        running = [p for p, code in zip(ranks.processes, codes, strict=True) if code is None]
        if not running:
            return 0
        multiprocessing.connection.wait([p.sentinel for p in running], timeout=POLL_S)
        moves = ranks.moves()
        if moves != last_moves:
            last_moves, last_move, reported = moves, time.monotonic(), False
        elif (
            not reported
            and all(moves)
            and all(p.exitcode is None for p in ranks.processes)
            and time.monotonic() - last_move >= STUCK_AFTER
        ):
            _report_stuck(ranks, time.monotonic() - last_move)
            reported = True


def _report_stuck(ranks: _Ranks, seconds: float) -> None:
    """`ranks_stuck`: where each rank is; the earliest (phase, step), at the earliest stage of
    the ranks there, is where the hang is."""
    positions = [ranks.position(rank) for rank in range(len(ranks.processes))]

    def order(position: _Position) -> tuple[int, int]:
        phase = position["phase"]
        index = ranks.phases.index(phase) if phase in ranks.phases else -1
        return index, position["step"] if position["step"] is not None else -1

    def stage(position: _Position) -> int:
        name = position["stage"]
        return STAGES.index(name) if name is not None and name in STAGES else len(STAGES)

    earliest = min(order(p) for p in positions)
    waiting = [p for p in positions if order(p) == earliest]
    diverged = [p["rank"] for p in positions if order(p) != earliest]
    # Of the ranks at that step, the one at its earliest stage is where it stopped: the
    # others went on to the step's next collective and wait there for it (a rank whose
    # DataLoader worker hangs sits in `data` while its peer waits in `backward`). The
    # first rank's stage located the hang in its peer's all-reduce.
    behind = min(waiting, key=stage)
    events.emit(
        "ranks_stuck",
        phase=behind["phase"],
        step=behind["step"],
        stage=behind["stage"],
        seconds=round(seconds, 2),
        diverged=diverged,
        ranks=positions,
    )


def _first_failure(ranks: _Ranks, failed: list[tuple[int, int]], report_dir: str) -> int:
    """Kill the other ranks; end as the rank that failed first did."""
    killed: set[int] = set()
    for rank, process in enumerate(ranks.processes):
        if process.exitcode is None and process.pid is not None:  # (started: it has one)
            _kill_tree([process.pid])
            killed.add(rank)
    for process in ranks.processes:
        process.join()
    # A rank that died of a signal may be reaped after the peer it took down (the peer
    # sees the closed connection while the kernel still writes the core): look again.
    seen = {rank for rank, _ in failed}
    failed = [
        (rank, process.exitcode or 0)  # joined: an exit code, never None
        for rank, process in enumerate(ranks.processes)
        if rank in seen
        or (process.exitcode and not (rank in killed and process.exitcode == -signal.SIGKILL))
    ]

    def when(item: tuple[int, int]) -> int:
        stamp = ranks.slots[item[0] * SLOT + _FAILED]
        # A signal leaves no time stamp: the rank died before it could say anything.
        return stamp if stamp > 0 else (0 if item[1] < 0 else 1 << 62)

    rank, code = min(failed, key=when)
    position = ranks.position(rank)
    detail: dict[str, object] = {"rank": rank, "pid": ranks.processes[rank].pid}
    where = (("phase", position["phase"]), ("step", position["step"]), ("stage", position["stage"]))
    detail.update({key: value for key, value in where if value is not None})
    # A rank that exited 0 before the final barrier left the job under its peers (a
    # `return` or `sys.exit(0)` in one rank): their errors about a lost peer are what
    # fails, and without this the rank that left was named nowhere.
    left = [
        ranks.position(other)
        for other, process in enumerate(ranks.processes)
        if process.exitcode == 0 and ranks.position(other)["stage"] != "finish"
    ]
    if left:
        detail["left"] = [dict(p) for p in left]
    if code < 0:
        name = signal.Signals(-code).name
        events.emit("rank_exit", signal=name, **detail)
        sys.stderr.write(f"reprospec harness: rank {rank} (pid {detail['pid']}) died of {name}\n")
        # The signal ends this process inside supervise's try: its finally never runs.
        _remove_reports(report_dir)
        _die_of(-code)
    events.emit("rank_exit", exit_code=code, **detail)
    with contextlib.suppress(OSError), (Path(report_dir) / f"rank-{rank}.txt").open() as handle:
        # Printed last: the classifier takes the last traceback for the cause.
        sys.stderr.write(f"reprospec harness: rank {rank} failed first:\n{handle.read()}")
    sys.stderr.flush()
    return code


def _die_of(number: int) -> None:
    """End this process with the signal a rank died of (no core, no faulthandler report)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    faulthandler.disable()
    with contextlib.suppress(OSError, ValueError):
        # The rank's core is the one that tells something; this process only mirrors it.
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    time.sleep(5)
    os._exit(128 + number)


def _children(pids: Sequence[int]) -> list[int]:
    """The descendants of `pids` (DataLoader workers of a rank), from /proc."""
    parents: dict[int, list[int]] = {}
    # /proc through str paths and os calls, no Path per process of the machine (issue 15).
    for name in os.listdir("/proc"):  # noqa: PTH208
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:  # noqa: PTH123
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(name))
    found: list[int] = []
    todo = list(pids)
    while todo:
        for child in parents.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pids: Sequence[int]) -> None:
    """SIGKILL `pids` and their descendants, the parents first.

    The descendants are listed before any dies (a dead rank's workers are re-parented
    away from it); a rank killed after its workers could see them die and print torch's
    "DataLoader worker ... is killed by signal: Killed" as its own failure.
    """
    _kill([*pids, *_children(pids)])


def _kill(pids: Sequence[int]) -> None:
    """SIGKILL `pids`, said first in a `teardown` event: the engine reaps those the harness
    itself killed (its subreaper adopts them), and must not take them for a crash."""
    if not pids:
        return
    events.emit("teardown", pids=list(pids))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
