"""The spec's sections as typed, frozen values, with their defaults in this one place.

The validated document stays a plain mapping until the plan stage has
evaluated its `${{ }}` expressions for a cell; then each section becomes one
of these objects. Values are parsed once here (sizes to bytes, durations to
seconds), so no later stage reads a raw string or restates a default.

    environment -> Environment      (where and with what the attempt runs)
    command     -> Command          \
    workload    -> Workload          > Job: exactly one of the two
    run         -> RunPolicy        (how often, how long, how many at once)
    expect      -> models.Expectation
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Literal, TypeAlias

from reprospec.core.expr import render
from reprospec.core.frozen import frozen
from reprospec.core.gpudebug import GpuDebug, GpuDebugError

# Re-exported: models.py and tests import the aliases from here.
from reprospec.core.jsontypes import JsonObject as JsonObject
from reprospec.core.jsontypes import JsonValue as JsonValue
from reprospec.core.units import format_duration, parse_duration, parse_size

StopOn = Literal["never", "first-reproduction", "first-miss"]

# The harness runs these phases when `workload.phases` is not given; validation
# checks `expect.phase`/`faults[].at` against the same list.
DEFAULT_PHASES: tuple[JsonObject, ...] = ({"name": "train", "steps": 10},)
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MAX_REPEAT = 30
# `repeat: auto` starts with this many attempts, then adds one at a time.
AUTO_FIRST_ATTEMPTS = 5


class SectionError(ValueError):
    """A section value that cannot be used; `path` is where it is in the spec."""

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


MallocMode = Literal["perturb", "check", "strict"]
# glibc's perturb byte for `malloc: perturb`: 0xa5 makes a freed pointer 0xa5a5...,
# never a valid address on a 64-bit machine.
MALLOC_PERTURB_BYTE = 165
# `gc: aggressive`: a collection at every allocation past the last one.
AGGRESSIVE_GC = (1, 1, 1)


@frozen
class TorchPerturb:
    """`environment.perturb.torch`: torch's thread pools and CUDA allocator."""

    num_threads: int | None = None
    interop_threads: int | None = None
    caching_allocator: bool | None = None  # False: PYTORCH_NO_CUDA_MEMORY_CACHING=1
    alloc_conf: str | None = None  # PYTORCH_CUDA_ALLOC_CONF


@frozen
class Perturb:
    """`environment.perturb`: what the attempt runs under to make a rare failure frequent.

    Each field provokes one class of bug (docs/spec-format.md#perturb); None or 0 is
    "as the machine is". Applying them is the runner's (perturb/apply.py): one it
    cannot apply makes the attempt an infra-error, never a silent plain run.
    """

    switch_interval: float | None = None  # seconds
    cpus: int | tuple[int, ...] | None = None  # a count, or the CPU numbers
    cpu_load: int = 0
    io_load: int = 0
    memory_limit: int | None = None  # bytes
    malloc: MallocMode | int | None = None  # a mode, or a perturb byte
    hash_seed: int | Literal["random"] | None = None
    gc: tuple[int, int, int] | None = None
    nice: int | None = None
    torch: TorchPerturb = field(default_factory=TorchPerturb)

    @property
    def active(self) -> bool:
        # Against one default made once: asked a few times per attempt.
        return self != _NO_PERTURB

    def describe(self) -> tuple[str, ...]:
        """`switch_interval=1e-06`, ...: each perturbation as the spec would set it."""
        out: list[str] = []
        for name, value in self.settings():
            if name == "memory_limit" and isinstance(value, int):
                from reprospec.core.units import format_size

                out.append(f"{name}={format_size(value)}")
            else:
                out.append(f"{name}={_phrase(value)}")
        return tuple(out)

    def settings(self) -> tuple[tuple[str, JsonValue], ...]:
        """(field path under perturb, value as the spec writes it) for each one set."""
        out: list[tuple[str, JsonValue]] = []
        if self.switch_interval is not None:
            out.append(("switch_interval", self.switch_interval))
        if self.cpus is not None:
            out.append(("cpus", self.cpus if isinstance(self.cpus, int) else list(self.cpus)))
        if self.cpu_load:
            out.append(("cpu_load", self.cpu_load))
        if self.io_load:
            out.append(("io_load", self.io_load))
        if self.memory_limit is not None:
            out.append(("memory_limit", self.memory_limit))
        if self.malloc is not None:
            out.append(("malloc", self.malloc))
        if self.hash_seed is not None:
            out.append(("hash_seed", self.hash_seed))
        if self.gc is not None:
            out.append(("gc", "aggressive" if self.gc == AGGRESSIVE_GC else self.gc[0]))
        if self.nice is not None:
            out.append(("nice", self.nice))
        for key in ("num_threads", "interop_threads", "caching_allocator", "alloc_conf"):
            value = getattr(self.torch, key)
            if value is not None:
                out.append((f"torch.{key}", value))
        return tuple(out)

    def to_json(self) -> JsonObject:
        """The section as the spec writes it (only what is set)."""
        out: JsonObject = {}
        torch: JsonObject = {}
        for name, value in self.settings():
            if name.startswith("torch."):
                torch[name.removeprefix("torch.")] = value
            else:
                out[name] = value
        if torch:
            out["torch"] = torch
        return out

    @classmethod
    def from_section(cls, section: object) -> Perturb:
        """A resolved `environment.perturb` mapping -> Perturb (SectionError: where it is wrong)."""
        if section is None:
            return cls()
        where = ("environment", "perturb")
        if not isinstance(section, Mapping):
            raise SectionError(where, f"expected a mapping, got {section!r}")

        def number(key: str, low: int, high: int | None = None) -> int | None:
            value = section.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise SectionError(
                    (*where, key), f"expected a whole number >= {low}, got {value!r}"
                )
            if high is not None and value > high:
                raise SectionError((*where, key), f"expected {low} to {high}, got {value!r}")
            return value

        interval = section.get("switch_interval")
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0
        ):
            raise SectionError(
                (*where, "switch_interval"), f"expected seconds > 0 like 1e-6, got {interval!r}"
            )
        cpus = section.get("cpus")
        parsed_cpus: int | tuple[int, ...] | None
        if cpus is None:
            parsed_cpus = None
        elif (
            isinstance(cpus, list)
            and cpus
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus)
        ):
            parsed_cpus = tuple(sorted({int(str(c)) for c in cpus}))
        else:
            parsed_cpus = number("cpus", 1)
        memory = section.get("memory_limit")
        malloc = section.get("malloc")
        parsed_malloc: MallocMode | int | None
        if malloc is None:
            parsed_malloc = None
        elif malloc == "perturb" or malloc == "check" or malloc == "strict":
            parsed_malloc = malloc
        else:
            parsed_malloc = number("malloc", 1, 255)
        seed = section.get("hash_seed")
        gc = section.get("gc")
        threshold = None if gc == "aggressive" else number("gc", 1)
        torch = section.get("torch") or {}
        if not isinstance(torch, Mapping):
            raise SectionError((*where, "torch"), f"expected a mapping, got {torch!r}")
        caching = torch.get("caching_allocator")
        if caching is not None and not isinstance(caching, bool):
            raise SectionError(
                (*where, "torch", "caching_allocator"), f"expected true or false, got {caching!r}"
            )
        threads: dict[str, int | None] = {}
        for key in ("num_threads", "interop_threads"):
            value = torch.get(key)
            if value is not None and not _positive_int(value):
                raise SectionError(
                    (*where, "torch", key), f"expected a whole number >= 1, got {value!r}"
                )
            threads[key] = None if value is None else int(str(value))
        conf = torch.get("alloc_conf")
        return cls(
            switch_interval=None if interval is None else float(str(interval)),
            cpus=parsed_cpus,
            cpu_load=number("cpu_load", 0) or 0,
            io_load=number("io_load", 0) or 0,
            memory_limit=None if memory is None else _size_at((*where, "memory_limit"), memory),
            malloc=parsed_malloc,
            hash_seed="random" if seed == "random" else number("hash_seed", 0, 2**32 - 1),
            gc=AGGRESSIVE_GC
            if gc == "aggressive"
            else (None if threshold is None else (threshold, 1, 1)),
            nice=number("nice", -20, 19),
            torch=TorchPerturb(
                num_threads=threads["num_threads"],
                interop_threads=threads["interop_threads"],
                caching_allocator=caching,
                alloc_conf=None if conf is None else str(conf),
            ),
        )


def _phrase(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(_phrase(v) for v in value)
    return str(value)


_NO_PERTURB = Perturb()


# A docker image reference as the docker runner takes one (`pytorch/pytorch:2.4.0`,
# `name@sha256:...`): it lands in a FROM line, where a newline would smuggle in instructions.
# Docker's own reference grammar (distribution/reference): a registry host (any case, an
# optional port), lowercase path components, a tag and/or a digest. A looser pattern let
# `Reprospec-Base:bookworm` or `img:a:b` validate, and the engine's refusal came mid-run as
# a raw HTTP error ("400 Client Error for http+docker://...") naming no spec line.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REF = re.compile(
    rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?$"
)


def image_problem(image: str) -> str | None:
    """Why `image` is no image reference the docker runner takes (None: it is one)."""
    if IMAGE_REF.match(image):
        return None
    why = ""
    if IMAGE_REF.match(image.lower()):
        why = ": a repository name is lowercase"
    elif "@" in image:
        why = ": a digest is ALGORITHM:HEX, at least 32 hex digits (@sha256:...)"
    return f"{image!r} is not a docker image reference (like pytorch/pytorch:2.4.0){why}"


# The image the docker runner runs a cell in when the spec names no `image` nor `dockerfile`
# (and builds a cell's `packages` on): built on this machine by `reprospec docker setup`.
# Here, where an Environment is, so that what says which image a cell ran in (the
# standalone repro's notes, the runner, materialize) names the same one.
DEFAULT_IMAGE = "reprospec-runner:latest"


@frozen
class Environment:
    """The resolved `environment` section of one cell."""

    workdir: Path
    python: str | None = None
    packages: tuple[str, ...] = ()
    image: str | None = None
    dockerfile: str | None = None
    device: str | None = None
    gpus: int = 0
    shm_size: int | None = None  # bytes
    memory: int | None = None  # bytes
    network: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    # False: the attempt gets its own TMPDIR and XDG_CACHE_HOME in its folder, cleaned
    # after it, and its /dev/shm leaks are removed (scratch.py); True: shared, as a script's.
    shared_tmp: bool = False
    # `environment.debug`: the GPU diagnostics (launch blocking, core dumps, compute-sanitizer,
    # NCCL's log and flight recorder), all off by default.
    debug: GpuDebug = field(default_factory=GpuDebug)
    perturb: Perturb = field(default_factory=Perturb)

    @property
    def wants_gpu(self) -> bool:
        """Whether the attempt asks for a GPU (a CUDA device, GPU slots or a GPU diagnostic)."""
        return (self.device or "cpu").startswith("cuda") or self.gpus > 0 or self.debug.any

    def to_json(self) -> JsonObject:
        """The section as the harness reads it from cell.json (sizes in bytes)."""
        out: JsonObject = {"workdir": str(self.workdir), "gpus": self.gpus}
        for key in ("python", "image", "dockerfile", "device", "shm_size", "memory"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.packages:
            out["packages"] = list(self.packages)
        if self.network:
            out["network"] = True
        if self.shared_tmp:
            out["shared_tmp"] = True
        if self.debug.any:
            out["debug"] = self.debug.to_json()
        if self.perturb.active:
            out["perturb"] = self.perturb.to_json()
        out["env"] = dict(self.env)
        return out

    @classmethod
    def from_section(cls, section: Mapping[str, object], base_dir: Path) -> Environment:
        """A resolved `environment` mapping (every expression evaluated) -> Environment."""

        def text(key: str) -> str | None:
            value = section.get(key)
            return None if value is None else str(value)

        gpus = section.get("gpus", 0)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise SectionError(
                ("environment", "gpus"), f"expected a whole number >= 0, got {gpus!r}"
            )
        env = section.get("env") or {}
        assert isinstance(env, Mapping)  # the schema says so
        debug = section.get("debug") or {}
        if not isinstance(debug, Mapping):
            raise SectionError(("environment", "debug"), f"expected a mapping, got {debug!r}")
        try:
            gpu_debug = GpuDebug.from_section(debug)
        except GpuDebugError as exc:
            raise SectionError(("environment", "debug", exc.key), str(exc)) from None
        return cls(
            workdir=Path(base_dir / str(section.get("workdir") or ".")).absolute(),
            python=text("python"),
            packages=tuple(str(p) for p in _sequence(section.get("packages"))),
            image=text("image"),
            dockerfile=text("dockerfile"),
            device=text("device"),
            gpus=gpus,
            shm_size=_size(section, "shm_size"),
            memory=_size(section, "memory"),
            network=_flag(section, "network"),
            shared_tmp=_flag(section, "shared_tmp"),
            perturb=Perturb.from_section(section.get("perturb")),
            env={str(k): render(v) for k, v in env.items()},
            debug=gpu_debug,
        )


@frozen
class Command:
    """`command`: an argument vector; a string command runs under `/bin/sh -c`."""

    argv: tuple[str, ...]

    @property
    def shell(self) -> str | None:
        """A string command's text (what `/bin/sh -c` runs); None for an argument vector."""
        if self.argv[:2] == ("/bin/sh", "-c") and len(self.argv) == 3:
            return self.argv[2]
        return None

    @property
    def text(self) -> str:
        """The command as a person would type it."""
        import shlex

        shell = self.shell
        return shell if shell is not None else shlex.join(self.argv)


@frozen
class Workload:
    """`workload`: the built-in PyTorch workload, run by the harness in the child.

    The engine passes the resolved section through to the harness (cell.json),
    which owns its meaning; the engine reads only what it needs to plan.
    """

    document: JsonObject

    @classmethod
    def from_section(cls, section: JsonObject) -> Workload:
        """A resolved `workload` mapping, with the engine's defaults filled in for the harness."""
        document = dict(section)
        if not document.get("phases"):
            document["phases"] = [dict(phase) for phase in DEFAULT_PHASES]
        return cls(document)

    @property
    def phases(self) -> tuple[JsonObject, ...]:
        phases = self.document.get("phases")
        assert isinstance(phases, list)  # from_section fills them in
        return tuple(p for p in phases if isinstance(p, dict))


Job: TypeAlias = Command | Workload


@frozen
class RunPolicy:
    """The spec's `run` section: attempts per cell, time limit, stop rule, parallelism.

    `instances`: copies of each attempt started together at a start barrier; None when
    the spec does not ask for instances (one plain process tree per attempt).
    `stall_s` (`run.stall`): an attempt that made progress and then none for this long
    is a hang at once, without waiting out the timeout; None: only the timeout.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    stall_s: float | None = None
    repeat: int | Literal["auto"] = 1
    max_repeat: int = DEFAULT_MAX_REPEAT
    stop_on: StopOn = "never"
    parallel: int = 1
    # Modules a fork server imports once; attempts are forked from it (forkserver.py).
    preload: tuple[str, ...] = ()
    instances: int | None = None

    @property
    def adaptive(self) -> bool:
        """`repeat: auto`: attempts are added while the rate's interval is undecided."""
        return self.repeat == "auto"

    @property
    def first_attempts(self) -> int:
        """How many attempts per cell are planned before any result is known."""
        if self.repeat == "auto":
            return min(AUTO_FIRST_ATTEMPTS, self.max_repeat)
        return self.repeat

    @property
    def most_attempts(self) -> int:
        return self.max_repeat if self.repeat == "auto" else self.repeat

    @classmethod
    def from_section(cls, section: Mapping[str, object]) -> RunPolicy:
        """A resolved `run` mapping -> RunPolicy (defaults for what it leaves out)."""
        timeout = section.get("timeout")
        try:
            timeout_s = DEFAULT_TIMEOUT_S if timeout is None else parse_duration(timeout)
        except ValueError as exc:
            raise SectionError(("run", "timeout"), str(exc)) from None
        if not timeout_s > 0:
            raise SectionError(("run", "timeout"), f"expected a duration > 0, got {timeout!r}")
        stall_s = stall_seconds(section.get("stall"), timeout_s)
        repeat = section.get("repeat", 1)
        if repeat != "auto" and not _positive_int(repeat):
            raise SectionError(
                ("run", "repeat"), f"expected a whole number >= 1 or auto, got {repeat!r}"
            )
        stop_on = section.get("stop_on", "never")
        if stop_on not in ("never", "first-reproduction", "first-miss"):
            raise SectionError(("run", "stop_on"), f"unknown stop_on {stop_on!r}")
        max_repeat = section.get("max_repeat", DEFAULT_MAX_REPEAT)
        parallel = section.get("parallel", 1)
        instances = section.get("instances")
        for key, value in (("max_repeat", max_repeat), ("parallel", parallel)):
            if not _positive_int(value):
                raise SectionError(("run", key), f"expected a whole number >= 1, got {value!r}")
        if instances is not None and not _positive_int(instances):
            raise SectionError(
                ("run", "instances"), f"expected a whole number >= 1, got {instances!r}"
            )
        preload = section.get("preload") or []
        if not isinstance(preload, list) or not all(
            isinstance(name, str) and _module_name(name) for name in preload
        ):
            raise SectionError(
                ("run", "preload"), f"expected a list of module names, got {preload!r}"
            )
        return cls(
            timeout_s=timeout_s,
            stall_s=stall_s,
            repeat="auto" if repeat == "auto" else int(str(repeat)),
            max_repeat=int(str(max_repeat)),
            stop_on=stop_on,
            parallel=int(str(parallel)),
            preload=tuple(str(name) for name in preload),
            instances=None if instances is None else int(str(instances)),
        )


# The text a fault's `when` may be that leaves the fault out, as the harness reads it
# (reprospec_harness/config.py `boolean`; the schema accepts only its words).
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def fault_armed(when: JsonValue) -> bool:
    """Whether a fault's evaluated `when` leaves it in (its coin and `rank` aside): false,
    0 and the words for false leave it out, as the harness reads them."""
    if isinstance(when, str):
        return when.strip().lower() not in _FALSE_WORDS
    return bool(when)


def same_python(ran: str, wanted: str) -> bool:
    """`3.11.7` is the `3.11` a spec's `environment.python` names (and `3.11.7`), not `3.1`
    or `3.10`. A path (`/opt/py/bin/python3.11`, which the venv runner builds each cell's
    venv on) names an interpreter, not a version: no version of it to hold `ran` to, where
    `doctor --runner venv` and the run warned `the spec names Python /opt/...; this run had
    3.11.7` of the very interpreter it names. A program's name names the version in it
    (`python3.10`, which the venv runner finds on PATH, is 3.10; `python`, none): the run
    warned `the spec names Python python3.10; this run had 3.10.13`."""
    if "/" in wanted:
        return True
    wanted = wanted.removeprefix("python")
    if not wanted:
        return True
    return ran == wanted or ran.startswith(f"{wanted}.")


def stall_seconds(stall: object, timeout_s: float) -> float | None:
    """`run.stall` in seconds (None when unset), or a SectionError at `run.stall`.

    It must be below the timeout: a stall limit at or past it could never fire first,
    and a spec that says one says something it does not do.
    """
    if stall is None:
        return None
    try:
        seconds = parse_duration(stall)
    except ValueError as exc:
        raise SectionError(("run", "stall"), str(exc)) from None
    if not seconds > 0:
        raise SectionError(("run", "stall"), f"expected a duration > 0, got {stall!r}")
    if seconds >= timeout_s:
        raise SectionError(
            ("run", "stall"),
            f"{stall} is not below run.timeout ({format_duration(timeout_s)}): "
            "the timeout would always end the attempt first",
        )
    return seconds


def _module_name(name: str) -> bool:
    """`torch`, `torch.nn`: dotted Python identifiers."""
    return bool(name) and all(part.isidentifier() for part in name.split("."))


def _sequence(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _flag(section: Mapping[str, object], key: str) -> bool:
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise SectionError(("environment", key), f"expected true or false, got {value!r}")
    return value


def _size(section: Mapping[str, object], key: str) -> int | None:
    value = section.get(key)
    return None if value is None else _size_at(("environment", key), value)


def _size_at(path: tuple[str, ...], value: object) -> int:
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise SectionError(path, str(exc)) from None
    if size <= 0:
        raise SectionError(path, f"expected a size > 0, got {value!r}")
    return size
