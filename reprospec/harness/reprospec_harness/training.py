"""Loss, optimizer, autocast, and the phases step by step: an event at every phase, step, stage."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import data as tud

from . import config, entrypoints, events
from .data import FetchTracker, TaggedBatchSampler, epoch_steps
from .injection import FaultPlan
from .values import JsonValue, to_int
from .workers import WorkerExit, report_dead_workers

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Rank(Protocol):
    """This process's rank of a distributed workload, as setup and training use it
    (distributed.py's Rank: its place in the job, the step agreement, DDP).

    A Protocol, so neither module imports distributed.py, which runs them.
    """

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    def track(self, phase: str | None, step: int | None, stage: str) -> None: ...

    def agree(self, phase: str | None, step: int) -> None: ...

    def wrap(self, model: nn.Module) -> nn.Module: ...


def _as_target(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Class labels become one-hot floats for the regression-style losses."""
    if not target.is_floating_point() and output.dim() == target.dim() + 1:
        return F.one_hot(target.long(), output.shape[-1]).to(output.dtype)
    return target.to(output.dtype)


BUILTIN_LOSSES: dict[str, LossFn] = {
    "cross-entropy": lambda out, y: F.cross_entropy(out, y),
    "mse": lambda out, y: F.mse_loss(out, _as_target(out, y)),
    "bce": lambda out, y: F.binary_cross_entropy_with_logits(out, _as_target(out, y)),
}


def build_loss(name: JsonValue) -> LossFn:
    """`cross-entropy` | `mse` | `bce`, or `module:callable`: a loss function, or a class such as
    `torch.nn:CrossEntropyLoss` (instantiated without arguments)."""
    field = "workload.model.loss"
    if name is None:
        return BUILTIN_LOSSES["cross-entropy"]
    if isinstance(name, str) and name in BUILTIN_LOSSES:
        return BUILTIN_LOSSES[name]
    if not isinstance(name, str) or ":" not in name:
        raise config.ConfigError(
            field,
            f"unknown loss {name!r} (expected one of {', '.join(BUILTIN_LOSSES)} "
            "or an entrypoint 'module:callable')",
        )
    loss = entrypoints.resolve(name, field)
    # The user's loss, called as the built-ins are: (output, target) -> a tensor.
    return cast(LossFn, loss() if isinstance(loss, type) else loss)


OPTIMIZERS = ("sgd", "adam")


def build_optimizer(section: JsonValue, model: nn.Module) -> torch.optim.Optimizer | None:
    """`sgd` | `adam` or `{name, lr, momentum, weight_decay}`; None when nothing is trainable."""
    field = "workload.optimizer"
    options: dict[str, JsonValue] = (
        dict(section) if isinstance(section, Mapping) else {"name": section or "sgd"}
    )
    unknown = sorted(set(options) - {"name", "lr", "momentum", "weight_decay"})
    if unknown:
        raise config.ConfigError(
            f"{field}.{unknown[0]}", "unknown option (expected name, lr, momentum, weight_decay)"
        )
    name_field = f"{field}.name" if isinstance(section, Mapping) else field
    name = config.choice(options.get("name") or "sgd", name_field, "optimizer", OPTIMIZERS)
    default_lr = 0.01 if name == "sgd" else 1e-3
    lr = config.number(options.get("lr", default_lr), f"{field}.lr", 0, exclusive=True)
    decay = config.number(options.get("weight_decay") or 0, f"{field}.weight_decay")
    momentum = config.number(options.get("momentum") or 0, f"{field}.momentum")
    if momentum and name != "sgd":
        raise config.ConfigError(f"{field}.momentum", f"{name} has no momentum option")
    parameters = [p for p in model.parameters() if p.requires_grad]
    if not parameters:
        return None
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=momentum, weight_decay=decay)
    return torch.optim.Adam(parameters, lr=lr, weight_decay=decay)


AMP_DTYPES = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
}


@dataclass
class Workload:
    """Everything the phases need, built once by `run.setup`."""

    model: nn.Module
    loader: tud.DataLoader[object]
    batches: TaggedBatchSampler
    tracker: FetchTracker
    loss: LossFn
    optimizer: torch.optim.Optimizer | None
    device: torch.device
    amp: torch.dtype | None
    faults: FaultPlan
    phases: Sequence[Mapping[str, JsonValue]]
    non_blocking: bool = False
    rank: Rank | None = None  # this process's rank of a distributed workload

    @property
    def tracked(self) -> Callable[[str | None, int | None, str], None] | None:
        return self.rank.track if self.rank is not None else None

    @property
    def phase_names(self) -> list[str]:
        return [str(p["name"]) for p in self.phases]


class Position:
    """Where the main loop is; every move is an event (the classifier reads the last one)."""

    def __init__(
        self,
        faults: FaultPlan,
        track: Callable[[str | None, int | None, str], None] | None = None,
    ) -> None:
        self.faults = faults
        # A rank of a distributed workload also tells its supervisor where it is.
        self.track = track or (lambda _phase, _step, _stage: None)
        self.phase: str | None = None
        self.step: int | None = None

    def enter_phase(self, phase: str) -> None:
        self.phase, self.step = phase, None
        self.track(phase, None, "phase")
        events.emit("phase", phase=phase)
        self.faults.fire_main(phase=phase)

    def enter_step(self, step: int) -> None:
        self.step = step
        self.track(self.phase, step, "start")
        events.emit("step", phase=self.phase, step=step)
        self.faults.fire_main(phase=self.phase, step=step, stage="start")

    def enter_stage(self, stage: str) -> None:
        self.track(self.phase, self.step, stage)
        events.emit("stage", phase=self.phase, step=self.step, stage=stage)
        self.faults.fire_main(phase=self.phase, step=self.step, stage=stage)


def _to(value: object, device: torch.device, non_blocking: bool) -> object:
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=non_blocking)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device, non_blocking) for v in value)
    if isinstance(value, Mapping):
        return {k: _to(v, device, non_blocking) for k, v in value.items()}
    return value


def _split(batch: object) -> tuple[object, object]:
    """(input, target) from a `(x, y)` pair or an `{"input", "target"}` mapping."""
    if isinstance(batch, Mapping):
        return batch["input"], batch.get("target")
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    return batch, None


def run_phases(work: Workload) -> None:
    """Every phase, step by step; a DataLoader failure is reported per dead worker, re-raised."""
    position = Position(work.faults, work.tracked)
    iterator: Iterator[object] | None = None
    scaler = (
        torch.amp.GradScaler(work.device.type)
        if work.amp == torch.float16 and work.device.type == "cuda"
        else None
    )
    fetching = False  # in the DataLoader's next(): a broken pipe there is a worker's death
    try:
        for number, phase in enumerate(work.phases):
            name = str(phase["name"])
            train = str(phase.get("mode") or ("train" if name == "train" else "eval")) == "train"
            position.enter_phase(name)
            work.model.train(train)
            iterator = None  # each phase starts its own pass, as a validation loader does
            steps = (
                epoch_steps(work.loader) if phase.get("steps") is None else to_int(phase["steps"])
            )
            with contextlib.nullcontext() if train else torch.no_grad():
                for step in range(1, steps + 1):
                    position.enter_step(step)
                    if work.rank is not None:
                        work.rank.agree(position.phase, step)
                    position.enter_stage("data")
                    if iterator is None:
                        work.batches.start(number, step)
                        iterator = iter(work.loader)
                    fetching = True
                    try:
                        batch = next(iterator)
                    except StopIteration:  # more steps than one pass: start the next epoch
                        work.batches.start(number, step)
                        iterator = iter(work.loader)
                        batch = next(iterator)
                    fetching = False
                    with _collectives(work, position, train):
                        _step(work, position, batch, train, scaler)
        events.emit("done")
    except BaseException as error:
        dead = _report_workers(work, iterator, position, error)
        # Not an error torch re-raised from a worker ("Caught ConnectionRefusedError in
        # DataLoader worker process 0"): that is the user's dataset's own, whatever died.
        reissued = _REISSUED in str(error)
        if fetching and dead and isinstance(error, BROKEN_PIPE_ERRORS) and not reissued:
            raise _worker_died(dead) from error
        raise


class _DistributedModel(Protocol):
    def no_sync(self) -> contextlib.AbstractContextManager[None]: ...


def _collectives(
    work: Workload, position: Position, train: bool
) -> contextlib.AbstractContextManager[None]:
    """DDP's no_sync() when this rank leaves out this step's gradient all-reduce (the fault)."""
    if (
        train
        and work.rank is not None
        and work.faults.skips_allreduce(position.phase, position.step)
    ):
        # A rank's model is in DistributedDataParallel (under torch.compile's wrapper, which
        # hands attribute lookups on to it): no_sync is DDP's.
        return cast(_DistributedModel, work.model).no_sync()
    return contextlib.nullcontext()


# The broken pipe: the main process's read of a batch the dying worker had just sent (its
# shared memory's handle, asked of the worker's resource sharer) failing before torch's
# own check of its workers saw the worker dead.
BROKEN_PIPE_ERRORS = (ConnectionError, EOFError)
# What the main process sees when a worker dies: torch's own error, or the broken pipe first.
WORKER_DEATH_ERRORS = (RuntimeError, *BROKEN_PIPE_ERRORS)
# torch's ExceptionWrapper.reraise: "Caught {type} in DataLoader worker process {n}."
_REISSUED = "in DataLoader worker process"


def _worker_grace(error: BaseException) -> float:
    """How long to wait for a worker to be seen dead after `error` ended the loop.

    The wait ends at the first dead worker, so a long one costs only where none died. A
    broken pipe (or torch's own word for a dead worker) says one is dying, and a dying worker
    can take seconds to be reapable on a loaded machine (its message and stack dump, a core
    written): 2 s once left a test's worker_exit out under load. Any other RuntimeError (the
    `raise` fault's default, a user's) keeps the short wait: no worker needs to be dying.
    An exception a worker raised and torch raised again here ("Caught ValueError in
    DataLoader worker process 0") needs none: that worker is alive. It named a
    DataLoader worker, so it waited the whole 10 s, no event meanwhile: under a 10 s
    `run.stall` a `raise` in a worker was a hang.
    """
    if _REISSUED in str(error):
        return 0.0
    if isinstance(error, BROKEN_PIPE_ERRORS) or "DataLoader worker" in str(error):
        return 10.0
    return 2.0 if isinstance(error, WORKER_DEATH_ERRORS) else 0.0


def _report_workers(
    work: Workload, iterator: Iterator[object] | None, position: Position, error: BaseException
) -> list[WorkerExit]:
    """The workers found dead after `error` (each a `worker_exit` event), waited for."""
    if iterator is None or not getattr(iterator, "_workers", None):
        return []
    grace = _worker_grace(error)
    for _ in range(3):  # a late SIGCHLD from another worker may interrupt the first try
        try:
            return report_dead_workers(
                iterator, work.tracker, work.phase_names, position.phase, position.step, grace=grace
            )
        except RuntimeError:
            continue
    return []


def _worker_died(dead: Sequence[WorkerExit]) -> RuntimeError:
    """torch's own error for workers found dead, in its exact words (`_try_get_data`).

    A worker that dies just after sending a batch races the main process's read of it:
    torch checks its workers when the read fails, and where the dying worker is not yet
    reapable it re-raises the read's ConnectionResetError or EOFError instead (3 runs in
    150, about 1 in 50, of the `exit` fault in a worker). The harness has waited for the
    worker to be reapable: it completes torch's check, so a worker's exit is the same
    RuntimeError every time (spec-format.md's `exit` fault), raised from the read's error,
    which stays in the chain. So for a signal's death too, as torch's check words both: its
    crash is read from the `worker_exit` event, and its exception no longer varies from run
    to run.
    """
    pids = ", ".join(str(record["pid"]) for record in dead)
    return RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")


def _step(
    work: Workload,
    position: Position,
    batch: object,
    train: bool,
    scaler: torch.amp.GradScaler | None,
) -> None:
    x, y = _split(_to(batch, work.device, work.non_blocking))
    autocast = (
        torch.autocast(work.device.type, dtype=work.amp)
        if work.amp is not None
        else contextlib.nullcontext()
    )
    with autocast:
        position.enter_stage("forward")
        output = work.model(x)
        if y is None:
            return
        position.enter_stage("loss")
        # The target is what the batch holds: a tensor for a built-in loss, whatever the
        # dataset gives for a user's loss (the call does not look).
        loss = work.loss(output, cast(torch.Tensor, y))
    if not train or work.optimizer is None:
        return
    position.enter_stage("backward")
    work.optimizer.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        position.enter_stage("optimizer")
        scaler.step(work.optimizer)
        scaler.update()
    else:
        loss.backward()
        position.enter_stage("optimizer")
        work.optimizer.step()
