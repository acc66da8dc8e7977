"""Datasets and the DataLoader: synthetic or entry-point data, items tagged with phase and step.

Every dataset index travels with the phase and step of the batch it belongs to,
so a worker can fire a fault at `{phase, step}` or `{index}` and records the
item it is fetching in shared memory: when a worker dies, the main process can
say which item killed it (prefetching makes the main loop's own step differ).
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence, Sized
from multiprocessing.context import BaseContext
from multiprocessing.sharedctypes import RawArray
from typing import TYPE_CHECKING, TypedDict, cast

import torch
from torch.utils import data as tud

from . import config, entrypoints, events, stackdump
from .injection import FaultPlan
from .values import Int64Array, JsonValue

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "float": torch.float32,
    "long": torch.int64,
}


class SyntheticDataset(tud.Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """`size` items of `shape`, each generated from its index alone (cheap to send to any worker).

    Integer dtypes give token ids in [1, classes) with a zero-padded tail of random length.
    """

    def __init__(
        self,
        size: int = 256,
        shape: Sequence[int] = (3, 32, 32),
        classes: int = 10,
        dtype: str = "float32",
        seed: int = 0,
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
        self.size, self.shape, self.classes = int(size), tuple(int(n) for n in shape), int(classes)
        self.dtype, self.seed = DTYPES[dtype], int(seed)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = torch.randint(self.classes, (), generator=generator)
        if self.dtype == torch.uint8:
            x = torch.randint(256, self.shape, generator=generator, dtype=torch.uint8)
        elif not self.dtype.is_floating_point:
            x = torch.randint(
                1, max(self.classes, 2), self.shape, generator=generator, dtype=self.dtype
            )
            length = self.shape[-1]
            keep = int(torch.randint(1, length + 1, (), generator=generator))
            x[..., keep:] = 0
        else:
            x = torch.randn(self.shape, generator=generator).to(self.dtype)
        return x, label


class FetchTracker:
    """Per worker, in shared memory: (phase number, step, index) of the item being fetched."""

    def __init__(self, workers: int) -> None:
        self.slots: Int64Array = RawArray("q", 3 * max(workers, 1))
        for i in range(len(self.slots)):
            self.slots[i] = -1

    def record(self, worker: int, phase: int, step: int, index: int) -> None:
        self.slots[3 * worker : 3 * worker + 3] = [phase, step, index]

    def fetching(self, worker: int) -> tuple[int, int, int] | None:
        phase, step, index = self.slots[3 * worker : 3 * worker + 3]
        return None if index < 0 else (phase, step, index)


class TaggedBatchSampler(tud.Sampler[list[tuple[int, int, int]]]):
    """Batches of `(phase number, step, index)`; `start(phase, step)` before each new iterator."""

    def __init__(self, sampler: tud.Sampler[int], batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batches = tud.BatchSampler(sampler, batch_size, drop_last)
        self.phase, self.first_step = 0, 1
        self.passes = 0

    def start(self, phase: int, step: int) -> None:
        self.phase, self.first_step = phase, step
        set_epoch = getattr(self.sampler, "set_epoch", None)
        if set_epoch is not None:  # DistributedSampler: a new shuffle for every pass
            set_epoch(self.passes)
        self.passes += 1

    def __iter__(self) -> Iterator[list[tuple[int, int, int]]]:
        phase, step = self.phase, self.first_step
        for batch in self.batches:
            yield [(phase, step, index) for index in batch]
            step += 1

    def __len__(self) -> int:
        return len(self.batches)


_worker_id: int | None = None

# A worker still fetching one item after this long says so: a `worker_busy` event.
BUSY_AFTER = 2.0


class _Fetch:
    """The item a worker is fetching: when it started, and whether it was reported busy."""

    __slots__ = ("index", "phase", "reported", "started", "started_wall", "step")

    def __init__(self, phase: str, step: int, index: int) -> None:
        self.phase, self.step, self.index = phase, step, index
        self.started, self.started_wall = time.monotonic(), time.time()
        self.reported = False


class BusyWatch:
    """In a worker: a daemon thread that reports an item fetched for longer than BUSY_AFTER.

    `{"event": "worker_busy", "worker", "pid", "phase", "step", "index", "seconds", "since"}`
    once per slow item, and `{"event": "worker_free", "worker", "pid", "index", "seconds"}`
    when that item is done after all: a `worker_busy` with no `worker_free` is an item the
    worker was still stuck on when the attempt ended (the classifier names it for a hang).
    A worker blocked while holding the GIL cannot report (its stack dump still shows it).
    """

    def __init__(self, worker: int, interval: float = 0.25) -> None:
        self.worker, self.interval = worker, interval
        self.lock = threading.Lock()
        self.current: _Fetch | None = None
        thread = threading.Thread(target=self._watch, name="reprospec-busy-watch", daemon=True)
        thread.start()

    def begin(self, phase: str, step: int, index: int) -> _Fetch:
        fetch = _Fetch(phase, step, index)
        self.current = fetch
        return fetch

    def end(self, fetch: _Fetch) -> None:
        with self.lock:  # so an item is never reported busy after it was done
            self.current = None
            if fetch.reported:
                events.emit(
                    "worker_free",
                    worker=self.worker,
                    pid=os.getpid(),
                    index=fetch.index,
                    seconds=round(time.monotonic() - fetch.started, 2),
                )

    def _watch(self) -> None:
        while True:
            time.sleep(self.interval)
            with self.lock:
                fetch = self.current
                if fetch is None or fetch.reported:
                    continue
                seconds = time.monotonic() - fetch.started
                if seconds < BUSY_AFTER:
                    continue
                fetch.reported = True
                events.emit(
                    "worker_busy",
                    worker=self.worker,
                    pid=os.getpid(),
                    phase=fetch.phase,
                    step=fetch.step,
                    index=fetch.index,
                    seconds=round(seconds, 2),
                    since=round(fetch.started_wall, 4),
                )


_busy: BusyWatch | None = None


class WorkerInit:
    """DataLoader `worker_init_fn`: the worker's own stack-dump file, its id for the tracker,
    its busy watch, and faulthandler in front of torch's fatal-signal handlers."""

    def __call__(self, worker_id: int) -> None:
        global _worker_id, _busy
        _worker_id = worker_id
        stackdump.register()
        _busy = BusyWatch(worker_id)
        rearm_faulthandler()


def rearm_faulthandler() -> None:
    """Let a dying worker print its own Python stack, then die as torch makes it die.

    torch's worker loop replaces the fatal-signal handlers (faulthandler's, inherited
    from the main process) with its own, which print one line and re-raise: the stack of
    the process that died would be lost. faulthandler.enable() is a no-op while it thinks
    it is enabled, so: disable it (back to the default action), put torch's handlers back,
    enable it again. faulthandler then keeps torch's handlers as the previous ones and
    calls them after its report, so torch's message and the death by the signal stay.
    (The stack of the thread that took the signal: stackdump.arm_fatal says why not all.)
    """
    import faulthandler

    set_torch_handlers = getattr(torch._C, "_set_worker_signal_handlers", None)
    if set_torch_handlers is None:
        return
    faulthandler.disable()
    set_torch_handlers()
    stackdump.arm_fatal()


class TaggedDataset(tud.Dataset[object]):
    """Unwraps tagged indexes; in a worker, records the item and fires the worker faults."""

    def __init__(
        self,
        inner: tud.Dataset[object],
        tracker: FetchTracker,
        faults: FaultPlan,
        phases: Sequence[str],
    ) -> None:
        self.inner, self.tracker, self.faults, self.phases = inner, tracker, faults, list(phases)

    def __len__(self) -> int:
        # A map-style dataset has a length; torch's Dataset does not declare one.
        return len(cast(Sized, self.inner))

    def __getitem__(self, tag: tuple[int, int, int]) -> object:
        phase, step, index = tag
        if _worker_id is None:
            return self.inner[index]
        self.tracker.record(_worker_id, phase, step, index)
        watch = _busy
        fetch = watch.begin(self.phases[phase], step, index) if watch is not None else None
        try:
            self.faults.fire_worker(
                worker=_worker_id, phase=self.phases[phase], step=step, index=index
            )
            return self.inner[index]
        finally:
            if watch is not None and fetch is not None:
                watch.end(fetch)


def build_dataset(section: Mapping[str, JsonValue], seed: int) -> tud.Dataset[object]:
    """The spec's `data.dataset`: `builtin: synthetic` or an entry point returning a Dataset."""
    if section.get("entrypoint"):
        return entrypoints.build(section, "workload.data.dataset", "dataset", tud.Dataset)
    return SyntheticDataset(seed=seed, **synthetic_options(section))


class SyntheticOptions(TypedDict, total=False):
    """The spec's settings of `builtin: synthetic`: SyntheticDataset's keyword arguments."""

    size: int
    shape: list[int]
    classes: int
    dtype: str


def synthetic_options(section: Mapping[str, JsonValue]) -> SyntheticOptions:
    """`size`, `shape`, `classes`, `dtype` of `builtin: synthetic`, checked (ConfigError)."""
    field = "workload.data.dataset"
    config.choice(
        section.get("builtin", "synthetic"), f"{field}.builtin", "dataset", ("synthetic",)
    )
    if section.get("params"):
        raise config.ConfigError(
            f"{field}.params",
            "the synthetic dataset takes size, shape, classes and dtype directly, not params",
        )
    options: SyntheticOptions = {}
    if section.get("size") is not None:
        options["size"] = config.integer(section["size"], f"{field}.size", 1)
    if section.get("classes") is not None:
        options["classes"] = config.integer(section["classes"], f"{field}.classes", 1)
    if section.get("shape") is not None:
        shape = section["shape"]
        if not isinstance(shape, (list, tuple)) or not shape:
            raise config.ConfigError(
                f"{field}.shape", f"expected a non-empty list of sizes, got {shape!r}"
            )
        options["shape"] = [
            config.integer(n, f"{field}.shape[{i}]", 1) for i, n in enumerate(shape)
        ]
    if section.get("dtype") is not None:
        options["dtype"] = config.choice(section["dtype"], f"{field}.dtype", "dtype", DTYPES)
    return options


def describe(
    dataset: tud.Dataset[object], section: Mapping[str, JsonValue]
) -> tuple[list[int], int]:
    """(input shape, number of classes) for sizing a built-in model; never reads an item here.

    A real training script does not read its dataset in the main process before the
    DataLoader forks its workers, so neither does the harness: whatever a dataset
    initialises lazily on first access (an LMDB handle, a CUDA context, a CFFI library)
    would otherwise be created here and inherited by every forked worker. The synthetic
    dataset's shape and classes come from the spec; an entrypoint dataset's from its
    declared `shape`/`classes`, else from `probe`, a spawned process that reads item 0.
    """
    if isinstance(dataset, SyntheticDataset):
        return list(dataset.shape), dataset.classes
    field = "workload.data.dataset"
    shape = _declared_shape(section.get("shape"), f"{field}.shape")
    classes = (
        config.integer(section["classes"], f"{field}.classes", 1)
        if section.get("classes") is not None
        else _plain_classes(dataset)
    )
    if shape is None:
        shape, probed = probe(section)
        classes = classes or probed
    return shape, classes or DEFAULT_CLASSES


DEFAULT_CLASSES = 10


def _declared_shape(value: JsonValue, field: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise config.ConfigError(field, f"expected a non-empty list of sizes, got {value!r}")
    return [config.integer(n, f"{field}[{i}]", 1) for i, n in enumerate(value)]


def _plain_classes(dataset: tud.Dataset[object]) -> int | None:
    """`dataset.classes` when it is a plain int attribute: read without running user code
    (no property, no `__getattr__`)."""
    return _positive_int(inspect.getattr_static(dataset, "classes", None))


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class _ProbeAnswer(TypedDict, total=False):
    """What the probe process sends back: item 0's input shape and the classes, or the error."""

    shape: list[int]
    classes: int | None
    error: str


def probe(section: Mapping[str, JsonValue]) -> tuple[list[int], int | None]:
    """(shape of item 0's input, the dataset's `classes` if it has one), read in a spawned
    process that builds the dataset itself: nothing it initialises reaches this process.

    A probe that fails (the item raises, the process dies) is a ConfigError telling the
    user to declare `shape` and `classes`: the training never ran, so it is no verdict.
    One that never answers is ended by the engine's timeout or stall, which reads the
    `dataset_probe` event without its `ended` twin as the same infra error.
    """
    context = multiprocessing.get_context("spawn")
    receive: Connection[object, _ProbeAnswer]
    send: Connection[_ProbeAnswer, object]
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_probe_child, args=(dict(section), send), name="reprospec-dataset-probe"
    )
    process.start()
    send.close()
    events.emit("dataset_probe", pid=process.pid)
    try:
        answer: _ProbeAnswer | None = receive.recv()
    except EOFError:  # the probe died before answering
        answer = None
    finally:
        receive.close()
        process.join()
    # The engine reads a hang called between the two events as the probe's, not the
    # training's: an infra error (item 0 never came), never a `hang @ setup` verdict.
    events.emit("dataset_probe", pid=process.pid, ended=True)
    if answer is not None and "shape" in answer:
        return [int(n) for n in answer["shape"]], answer.get("classes")
    if answer is not None:
        reason = str(answer.get("error"))
    elif process.exitcode is not None and process.exitcode < 0:
        reason = f"the probe process died of {_signal_name(-process.exitcode)}"
    else:
        reason = f"the probe process exited with {process.exitcode}"
    raise config.ConfigError(
        "workload.data.dataset",
        f"cannot size the built-in model: reading item 0 in a probe process failed ({reason}); "
        "declare `shape` and `classes` under workload.data.dataset",
    )


def _probe_child(section: dict[str, JsonValue], send: Connection[_ProbeAnswer, object]) -> None:
    """In the spawned probe: build the dataset, read item 0, send back its input's shape."""
    try:
        dataset = build_dataset(section, 0)
        item = dataset[0]
        x = item[0] if isinstance(item, (tuple, list)) else item
        shape = list(x.shape) if isinstance(x, torch.Tensor) else [1]
        send.send({"shape": shape, "classes": _positive_int(getattr(dataset, "classes", None))})
    except BaseException as exc:  # reported to the harness, which names it in the error
        send.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        send.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def build_loader(
    dataset: tud.Dataset[object],
    options: Mapping[str, JsonValue],
    faults: FaultPlan,
    phases: Sequence[str],
    seed: int,
    ranks: tuple[int, int] | None = None,
) -> tuple[tud.DataLoader[object], TaggedBatchSampler, FetchTracker]:
    """The DataLoader with every argument of the spec's `data.loader`.

    `ranks`: (rank, world size) of a distributed workload: each rank loads its own part
    of the data (DistributedSampler).
    """
    field = "workload.data.loader"
    workers = config.integer(_given(options, "num_workers", 0), f"{field}.num_workers", 0)
    batch_size = config.integer(_given(options, "batch_size", 1), f"{field}.batch_size", 1)
    flags = {
        key: config.boolean(options.get(key), f"{field}.{key}")
        for key in ("shuffle", "pin_memory", "persistent_workers", "drop_last")
    }
    timeout = config.number(_given(options, "timeout", 0), f"{field}.timeout", 0)
    generator = torch.Generator().manual_seed(seed)
    sampler: tud.Sampler[int]
    if ranks is not None:
        sampler = tud.DistributedSampler(
            dataset,
            num_replicas=ranks[1],
            rank=ranks[0],
            shuffle=flags["shuffle"],
            seed=seed,
            drop_last=flags["drop_last"],
        )
    elif flags["shuffle"]:
        sampler = tud.RandomSampler(cast(Sized, dataset), generator=generator)
    else:
        sampler = tud.SequentialSampler(cast(Sized, dataset))
    batches = TaggedBatchSampler(sampler, batch_size, flags["drop_last"])
    tracker = FetchTracker(workers)
    extra: _LoaderOptions = {}
    if workers > 0:
        # With no workers torch refuses these two; a matrix over num_workers should not care.
        if options.get("prefetch_factor") is not None:
            extra["prefetch_factor"] = config.integer(
                options["prefetch_factor"], f"{field}.prefetch_factor", 1
            )
        if options.get("persistent_workers") is not None:
            extra["persistent_workers"] = flags["persistent_workers"]
        context = options.get("multiprocessing_context")
        if context:
            methods = tuple(multiprocessing.get_all_start_methods())
            name = config.choice(
                context, f"{field}.multiprocessing_context", "start method", methods
            )
            extra["multiprocessing_context"] = _context(name)
    try:
        loader = tud.DataLoader(
            TaggedDataset(dataset, tracker, faults, phases),
            batch_sampler=batches,
            num_workers=workers,
            pin_memory=flags["pin_memory"],
            timeout=timeout,
            worker_init_fn=WorkerInit(),
            **extra,
        )
    except (TypeError, ValueError) as exc:  # torch's own argument checks; no user code runs here
        raise config.ConfigError(field, str(exc)) from None
    events.emit(
        "loader",
        num_workers=workers,
        batches=len(batches),
        multiprocessing_context=str(
            options.get("multiprocessing_context")
            or multiprocessing.get_start_method(allow_none=True)
            or "default"
        ),
    )
    return loader, batches, tracker


class _LoaderOptions(TypedDict, total=False):
    """The DataLoader arguments given only with workers (torch refuses them without)."""

    prefetch_factor: int
    persistent_workers: bool
    multiprocessing_context: BaseContext


def _given(options: Mapping[str, JsonValue], key: str, default: JsonValue) -> JsonValue:
    """The option, or `default` when it is absent or null (0 stays 0, and is checked)."""
    value = options.get(key)
    return default if value is None else value


def _context(name: str) -> BaseContext:
    context = multiprocessing.get_context(name)
    if name == "forkserver":
        # Without it each forkserver worker imports torch again (~2 s), and CPython 3.11's
        # own __main__ preload is broken; with it a worker starts in ~0.07 s.
        context.set_forkserver_preload(["torch", __name__])
    return context


def epoch_steps(loader: tud.DataLoader[object]) -> int:
    """Steps in one pass over the data (the default for a phase without `steps`)."""
    return max(1, len(loader))
