"""The plain data objects that flow between the pipeline's stages.

    load -> validate -> expand -> plan
    Spec    (schema)    Cell      AttemptPlan

What ran, and what it means (Execution, Outcome, Verdict, RunResult), is in
`runmodels.py`: `validate` and `plan` need only this side.

Every object is a frozen dataclass and JSON-serializable through `to_dict`.
A stage knows only the objects to its left: runners know nothing of
expectations, the renderer knows nothing of processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.frozenjson import freeze_mapping
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.sections import Command, Environment, Job, Workload
from reprospec.core.units import RateBound, StepRange

# "any" is no spec value: it is what a cell expects in observe mode (`run --observe`, or
# a spec without `expect`), where every attempt that ran is recorded, none judged.
ExpectedOutcome = Literal["pass", "error", "crash", "hang", "fail", "any"]


@frozen
class Spec:
    """A loaded, schema-valid spec: the document as written (no defaults filled in: the
    sections apply theirs as they are read, and a spec written again stays as short as its
    author wrote it), not interpolated.

    `locations` maps a JSON path (tuple of keys/indexes) to (line, column), both
    1-based, so later stages can point at the source of a problem.
    """

    path: Path
    name: str
    document: Mapping[str, JsonValue]
    source_text: str
    locations: Mapping[tuple[str | int, ...], tuple[int, int]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # The spec file a report was made from, when `path` is that report (report.md):
    # relative paths in the spec (workdir) keep meaning what they meant there.
    origin: Path | None = None
    # The `--set PATH=VALUE` overrides applied to the file, in order.
    overrides: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Read-only, deep (core/frozenjson.py): the document is the one `load_spec`
        # checked, and a caller's edit of it after (`spec.document["command"] = ...`) was
        # planned and run unchecked; frozen, the spec hashes as every value at a seam does.
        object.__setattr__(self, "document", freeze_mapping(self.document))
        object.__setattr__(self, "locations", freeze_mapping(self.locations))

    @property
    def title(self) -> str:
        return str(self.document.get("title") or self.name)

    @property
    def description(self) -> str:
        return str(self.document.get("description") or "")

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in the spec are resolved against."""
        return (self.origin or self.path).parent


@frozen
class Cell:
    """One matrix combination. `matrix` keeps axis order (include-only keys last).

    Hashed by its id and index alone (`matrix`, a dict, still counts for equality): a cell
    is a key, `{cell.cell: cell.verdict for cell in result.cells}`, where its hash raised
    "unhashable type: 'dict'". Equal cells have equal ids, so equal hashes.
    """

    id: str
    index: int
    matrix: Mapping[str, JsonValue] = field(hash=False)


@frozen
class Marker:
    """An output regex that turns a matching line into a progress event."""

    pattern: str
    phase: str | None = None
    step: int | None = None


# The process a failure happened in (an outcome's, and `expect.where`): main, the attempt's
# own process; worker, a DataLoader worker; child, any other descendant.
Where = Literal["main", "worker", "child"]
# A `where` read from text (results.json, a spec's value) by its name; unknown: not one.
WHERES: Mapping[str, Where] = {"main": "main", "worker": "worker", "child": "child"}


@frozen
class Expectation:
    """What "reproduced" means for one cell, after `expect.cases` were applied.

    `signal` is one signal name or several (`("SIGSEGV", "SIGBUS")`: any of them).
    `where` the process the failure must happen in (a worker's SIGSEGV is not the main
    process's, though the signal is the same).
    """

    outcome: ExpectedOutcome
    signal: str | tuple[str, ...] | None = None
    exit_code: int | None = None
    exception: str | None = None
    message: str | None = None
    phase: str | None = None
    step: StepRange | None = None
    rate: RateBound | None = None
    module: str | None = None
    stage: str | None = None
    where: Where | None = None

    @property
    def signals(self) -> tuple[str, ...]:
        """The accepted signals, as written (empty: any or none)."""
        if self.signal is None:
            return ()
        return (self.signal,) if isinstance(self.signal, str) else tuple(self.signal)

    @property
    def observes(self) -> bool:
        """Observe mode: no expectation, whatever happens is recorded."""
        return self.outcome == "any"

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"outcome": self.outcome}
        if self.signal is not None:
            signals = self.signals
            out["signal"] = signals[0] if len(signals) == 1 else list(signals)
        for key in ("exit_code", "exception", "message", "phase"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.step is not None:
            out["step"] = self.step.to_json()
        for key in ("module", "stage", "where"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.rate is not None:
            out["rate"] = str(self.rate)
        return out


@frozen
class AttemptPlan:
    """Exactly what one attempt runs: everything interpolated for this cell and attempt.

    `job` is the command (a string command is `("/bin/sh", "-c", command)`) or
    the workload the harness runs; `environment` is the cell's resolved, typed
    `environment` section. `instances` (`run.instances`) is how many copies of the
    attempt start together at a start barrier; None: one plain process tree.
    """

    spec_name: str
    cell: Cell
    attempt: int
    job: Job
    timeout_s: float
    markers: tuple[Marker, ...]
    environment: Environment
    expectation: Expectation
    # Modules a fork server imports once, the attempt being forked from it (run.preload).
    preload: tuple[str, ...] = ()
    instances: int | None = None
    # `files`: workdir files the job needs that its command does not name (relative).
    files: tuple[str, ...] = ()
    # `run.stall`: no progress for this long after the first is a hang (None: the timeout only).
    stall_s: float | None = None

    @property
    def argv(self) -> tuple[str, ...] | None:
        """The command's argument vector; None for a workload (the runner builds its argv)."""
        return self.job.argv if isinstance(self.job, Command) else None

    @property
    def workload(self) -> JsonObject | None:
        """The resolved workload section the harness reads; None for a command."""
        return self.job.document if isinstance(self.job, Workload) else None

    @property
    def env(self) -> Mapping[str, str]:
        """The spec's environment variables for this cell (`environment.env`)."""
        return self.environment.env

    @property
    def workdir(self) -> Path:
        return self.environment.workdir

    @property
    def command_text(self) -> str:
        """What the attempt runs, for people: the command, or the harness for a workload."""
        if isinstance(self.job, Command):
            return self.job.text
        return "python -m reprospec_harness  (built-in PyTorch workload)"

    @property
    def gpus(self) -> int:
        """How many GPU slots one process tree of the attempt takes (`environment.gpus`)."""
        return self.environment.gpus

    @property
    def uses_torch(self) -> bool:
        """Whether the spec says it uses torch: a workload (the harness runs torch), torch
        in `run.preload` or `environment.packages`, or a GPU.

        Only then does the environment capture import torch (1-3 s and 200 MiB in a
        child): a command that imports torch without saying so gets torch's version
        (from its package metadata) in the report, not its build details.
        """
        if self.workload is not None or self.environment.wants_gpu:
            return True
        names = [*self.preload, *self.environment.packages]
        return any(name.lstrip().lower().startswith("torch") for name in names)

    @property
    def copies(self) -> int:
        """How many process trees the attempt runs at once (its instances, else one)."""
        return self.instances or 1

    @property
    def gpu_slots_needed(self) -> int:
        """GPU slots the whole attempt takes: `environment.gpus` for each instance."""
        return self.environment.gpus * self.copies
