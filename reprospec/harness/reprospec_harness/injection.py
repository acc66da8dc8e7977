"""Which faults fire where: `when`, `probability` (seeded per attempt and fault), `at`."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import config, events
from .faults import TRIGGERS, exception_class
from .values import JsonValue, obj

STAGES = ("start", "data", "forward", "loss", "backward", "optimizer")
# Faults that are not a trigger but a change of what the training loop does.
SKIP_ALLREDUCE = "skip_allreduce"
KINDS = (*TRIGGERS, SKIP_ALLREDUCE)


@dataclass
class Fault:
    """One entry of the spec's `faults`, with the attempt's decision made once, up front."""

    number: int
    spec: Mapping[str, JsonValue]
    armed: bool
    reason: str
    fired: bool = False

    @property
    def kind(self) -> str:
        return str(self.spec["kind"])

    @property
    def where(self) -> str:
        return str(self.spec.get("where") or "main")

    @property
    def at(self) -> Mapping[str, JsonValue]:
        return obj(self.spec.get("at"))


def decide(
    number: int, spec: Mapping[str, JsonValue], seed: int, attempt: int, rank: int | None = None
) -> Fault:
    """Arm a fault or not: `when` must hold, `rank` be this one, the coin fall under `probability`.

    `rank` is this process's rank in a distributed workload (None otherwise).
    """
    field = f"workload.faults[{number}]"
    kind = config.choice(spec.get("kind"), f"{field}.kind", "fault kind", KINDS)
    where = config.choice(
        spec.get("where") or "main", f"{field}.where", "fault place", ("main", "worker")
    )
    # `when` is usually an expression, and `${{ env.X }}` or a matrix value is text: the
    # words config.boolean knows count ("no", "off", "0", "" are false); the engine's
    # schema accepts exactly these, so a typo is refused, never read as true. It comes
    # before `rank` and skip_allreduce's needs: a fault left out of this cell says nothing of
    # this cell's ranks.
    if "when" in spec and not config.boolean(spec["when"], f"{field}.when"):
        return Fault(number, spec, False, "when is false")
    if kind == SKIP_ALLREDUCE:
        if rank is None:
            raise config.ConfigError(f"{field}.kind", "skip_allreduce needs workload.distributed")
        if where != "main" or "step" not in obj(spec.get("at")):
            raise config.ConfigError(
                f"{field}.at",
                "skip_allreduce happens in a rank's main process at a step: "
                "give at: {phase, step} and no where: worker",
            )
    if "rank" in spec:
        wanted = config.integer(spec["rank"], f"{field}.rank", 0)
        if rank is None:
            raise config.ConfigError(f"{field}.rank", "rank needs workload.distributed")
        if wanted != rank:
            return Fault(number, spec, False, f"rank {wanted} only")
    probability = config.number(spec.get("probability", 1.0), f"{field}.probability")
    if probability > 1:
        raise config.ConfigError(
            f"{field}.probability", f"expected a number between 0 and 1, got {probability:g}"
        )
    # One coin per (seed, attempt, fault): rerunning attempt 3 does what attempt 3 did.
    coin = random.Random(f"{seed}:{attempt}:{number}").random()
    if coin >= probability:
        return Fault(
            number, spec, False, f"probability {probability:g}: not this attempt ({coin:.3f})"
        )
    if kind == "raise":
        # Resolved up front, as every workload setting is: a class that is not there made
        # the fault raise a ValueError of its own when it fired, judged an `error` like the
        # incident's; a mistake in the spec is infra-error.
        name = str(spec.get("exception") or "RuntimeError")
        try:
            exception_class(name)
        except ImportError as exc:
            raise config.ConfigError(
                f"{field}.exception", f"{name!r} names no exception class: {exc}"
            ) from exc
        except ValueError as exc:
            raise config.ConfigError(f"{field}.exception", str(exc)) from exc
    return Fault(number, spec, True, "armed")


@dataclass
class FaultPlan:
    """The attempt's faults; picklable, so DataLoader workers (fork or spawn) get their own copy."""

    faults: list[Fault] = field(default_factory=list)
    device: str = "cpu"

    @classmethod
    def from_spec(
        cls,
        specs: Sequence[Mapping[str, JsonValue]],
        seed: int,
        attempt: int,
        rank: int | None = None,
    ) -> FaultPlan:
        plan = cls([decide(n, spec, seed, attempt, rank) for n, spec in enumerate(specs)])
        if plan.faults:
            events.emit(
                "faults",
                faults=[
                    {
                        "number": f.number,
                        "kind": f.kind,
                        "where": f.where,
                        "armed": f.armed,
                        "reason": f.reason,
                    }
                    for f in plan.faults
                ],
            )
        return plan

    def fire_main(
        self, phase: str | None = None, step: int | None = None, stage: str | None = None
    ) -> None:
        """Fire the armed main-process faults whose `at` matches this point of the loop."""
        for fault in self.faults:
            if (
                fault.armed
                and not fault.fired
                and fault.where == "main"
                and fault.kind != SKIP_ALLREDUCE
                and _main_matches(fault.at, phase, step, stage)
            ):
                self._fire(fault, where="main", phase=phase, step=step, stage=stage)

    def skips_allreduce(self, phase: str | None, step: int | None) -> bool:
        """Whether this rank leaves out this step's gradient all-reduce (said as a fault event)."""
        for fault in self.faults:
            at = fault.at
            if (
                fault.armed
                and not fault.fired
                and fault.kind == SKIP_ALLREDUCE
                and at.get("phase", phase) == phase
                and at.get("step") == step
            ):
                fault.fired = True
                events.emit(
                    "fault",
                    kind=fault.kind,
                    number=fault.number,
                    pid=os.getpid(),
                    where="main",
                    phase=phase,
                    step=step,
                )
                return True
        return False

    def fire_worker(self, worker: int, phase: str, step: int, index: int) -> None:
        """Fire the armed worker faults whose `at` matches the item being fetched."""
        position = {"phase": phase, "step": step, "index": index}
        for fault in self.faults:
            if (
                fault.armed
                and not fault.fired
                and fault.where == "worker"
                and all(position.get(key) == value for key, value in fault.at.items())
            ):
                self._fire(
                    fault, where="worker", worker=worker, phase=phase, step=step, index=index
                )

    def _fire(self, fault: Fault, **position: str | int | None) -> None:
        fault.fired = True
        events.emit(
            "fault",
            kind=fault.kind,
            number=fault.number,
            pid=os.getpid(),
            **{k: v for k, v in position.items() if v is not None},
        )
        TRIGGERS[fault.kind]({"device": self.device, **fault.spec, "where": position["where"]})


def _main_matches(
    at: Mapping[str, JsonValue], phase: str | None, step: int | None, stage: str | None
) -> bool:
    """`{}`: after setup; `{phase}`: at the phase start; `{phase, step[, stage]}`: at that step."""
    if "phase" in at and at["phase"] != phase:
        return False
    if "step" in at:
        return step == at["step"] and stage == at.get("stage", "start")
    if "stage" in at:
        return step is not None and stage == at["stage"]
    if "phase" in at:
        return step is None and stage is None
    return phase is None
