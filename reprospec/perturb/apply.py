"""Apply `environment.perturb` to one attempt: its variables, its launch options, its helpers.

Three places carry a perturbation, each where it is cheapest and certain:

- **variables** of the child (`variables`): glibc reads `MALLOC_PERTURB_` and
  `GLIBC_TUNABLES` at startup, Python `PYTHONHASHSEED`, OpenMP `OMP_NUM_THREADS`,
  torch `PYTORCH_*`; `REPROSPEC_PERTURB` tells the stackdump sitecustomize, which
  every Python process of the attempt imports before user code, to set the switch
  interval, the gc thresholds and torch's thread pools;
- **launch.py options** (`prepare`): CPU affinity, nice, joining a memory cgroup or
  RLIMIT_AS, all inherited by every descendant because they are set before exec;
- **helpers beside the attempt** (competitors.py): busy and writing competitors.

What this machine cannot apply raises `PerturbRefused` before anything starts,
and the attempt is an infra-error with the reason: a perturbed attempt that ran
plain would read as evidence that the perturbation does not help.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.sections import MALLOC_PERTURB_BYTE, Perturb
from reprospec.core.units import format_size
from reprospec.core.words import noun, oom_killed, plural
from reprospec.errors import InfraError
from reprospec.process import memcgroup

PERTURB_VAR = "REPROSPEC_PERTURB"
CGROUP_ROOT = Path("/sys/fs/cgroup")


class PerturbRefused(InfraError):
    """A perturbation this machine (or runner) cannot apply: the attempt does not run."""


@frozen
class Applied:
    """How one attempt's perturbations are applied, and what to undo after it."""

    launch_options: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # each perturbation and how it was applied, for the report
    cgroup: Path | None = None  # made for this attempt: removed after it
    cpu_list: tuple[int, ...] = ()  # the affinity, which the competitors share

    @property
    def note(self) -> str | None:
        return "perturbed: " + "; ".join(self.notes) if self.notes else None


def variables(perturb: Perturb, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's variables that carry `perturb` (merged into `base`'s GLIBC_TUNABLES)."""
    env: dict[str, str] = {}
    inside: list[str] = []
    if perturb.switch_interval is not None:
        inside.append(f"switch_interval={perturb.switch_interval!r}")
    if perturb.gc is not None:
        inside.append("gc=" + ",".join(str(n) for n in perturb.gc))
    torch = perturb.torch
    if torch.num_threads is not None:
        inside.append(f"torch_threads={torch.num_threads}")
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(torch.num_threads)
    if torch.interop_threads is not None:
        inside.append(f"torch_interop_threads={torch.interop_threads}")
    if torch.caching_allocator is False:
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    if torch.alloc_conf is not None:
        env["PYTORCH_CUDA_ALLOC_CONF"] = torch.alloc_conf
    if inside:
        env[PERTURB_VAR] = ";".join(inside)
    if perturb.hash_seed is not None:
        env["PYTHONHASHSEED"] = str(perturb.hash_seed)
    malloc = perturb.malloc
    if malloc is not None:
        tunables: list[str] = []
        if malloc != "check":
            byte = malloc if isinstance(malloc, int) else MALLOC_PERTURB_BYTE
            env["MALLOC_PERTURB_"] = str(byte)
            # A freed chunk that goes to the thread cache is never perturbed (glibc fills
            # only chunks that reach the bins): without the cache every free is.
            tunables.append("glibc.malloc.tcache_count=0")
        if malloc in ("check", "strict"):
            env["MALLOC_CHECK_"] = "3"
            debug = _malloc_debug()
            if debug is not None:
                preload = (base or {}).get("LD_PRELOAD", "")
                env["LD_PRELOAD"] = f"{debug} {preload}".strip()
        if tunables:
            theirs = (base or {}).get("GLIBC_TUNABLES", "")
            env["GLIBC_TUNABLES"] = ":".join([p for p in (theirs,) if p] + tunables)
    return env


def prepare(perturb: Perturb, *, token: str, wants_gpu: bool = False) -> Applied:
    """The launch options and notes for `perturb`, with its cgroup made; PerturbRefused if not.

    `token` names the attempt's cgroup (one per attempt: the limit is the attempt's alone).
    """
    if not perturb.active:
        return Applied()
    options: list[str] = []
    env = variables(perturb)
    notes = variable_notes(perturb)
    if perturb.malloc is not None and _libc() != "glibc":
        raise PerturbRefused(
            f"perturb.malloc={perturb.malloc} not applied: glibc's malloc settings need "
            f"glibc, and this is {_libc() or 'another C library'}"
        )
    cpu_list: tuple[int, ...] = ()
    if perturb.cpus is not None:
        cpu_list = cpu_list_of(perturb.cpus)
        options += ["--cpus", ",".join(str(c) for c in cpu_list)]
        notes.append(cpus_note(perturb.cpus, cpu_list, "affinity"))
    if perturb.nice is not None:
        current = os.nice(0)
        if perturb.nice < current and os.geteuid() != 0:
            raise PerturbRefused(
                f"perturb.nice={perturb.nice} not applied: lowering the nice value below "
                f"this engine's ({current}) needs privilege (CAP_SYS_NICE)"
            )
        options += ["--nice", str(perturb.nice)]
        notes.append(f"nice={perturb.nice}")
    if perturb.cpu_load:
        notes.append(f"cpu_load={perturb.cpu_load} (busy processes beside the attempt)")
    if perturb.io_load:
        notes.append(f"io_load={perturb.io_load} (writers beside the attempt)")
    cgroup: Path | None = None
    if perturb.memory_limit is not None:
        size = perturb.memory_limit
        cgroup, how = make_memory_cgroup(size, f"reprospec-{token}")
        if cgroup is not None:
            options += ["--cgroup", str(cgroup)]
            notes.append(f"memory_limit={format_size(size)} ({how})")
        elif wants_gpu:
            raise PerturbRefused(
                f"perturb.memory_limit={format_size(size)} not applied: no memory cgroup can "
                f"be made here ({how}), and RLIMIT_AS breaks CUDA initialization"
            )
        else:
            options += ["--memory", str(size)]
            notes.append(
                f"memory_limit={format_size(size)} (address-space limit RLIMIT_AS: "
                f"no memory cgroup can be made here: {how})"
            )
    return Applied(tuple(options), env, tuple(notes), cgroup, cpu_list)


def variable_notes(perturb: Perturb, *, malloc_by: str = "") -> list[str]:
    """The notes of the perturbations that `variables` carries, one per field (`malloc_by`:
    whose C library reads the malloc settings, when not this machine's)."""
    notes: list[str] = []
    for name, value in perturb.settings():
        if name in ("switch_interval", "gc", "hash_seed") or name.startswith("torch."):
            notes.append(f"{name}={_shown(value)}")
    if perturb.malloc is not None:
        how = _malloc_note(variables(perturb)) + (f"; {malloc_by}" if malloc_by else "")
        notes.append(f"malloc={perturb.malloc} ({how})")
    return notes


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _malloc_note(env: Mapping[str, str]) -> str:
    keys = ("MALLOC_PERTURB_", "MALLOC_CHECK_", "GLIBC_TUNABLES")
    return ", ".join(f"{k}={env[k]}" for k in keys if k in env)


def _libc() -> str:
    import platform  # (and its nine regular expressions) only where malloc is perturbed

    return platform.libc_ver()[0]


@functools.cache
def _malloc_debug() -> str | None:
    """glibc >= 2.34 honours MALLOC_CHECK_ only with libc_malloc_debug.so preloaded."""
    for folder in (
        "/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
    ):
        path = Path(folder) / "libc_malloc_debug.so.0"
        if path.exists():
            return str(path)
    return None


def cpus_note(cpus: int | tuple[int, ...], cpu_list: tuple[int, ...], how: str) -> str:
    """`cpus=1 (affinity: CPU 0)`: the field as the spec wrote it, then the CPUs it chose.
    The note said `cpus=0 (affinity)` for `cpus: 1`, which reads as zero CPUs."""
    shown = ",".join(str(c) for c in cpu_list)
    if isinstance(cpus, int):
        return f"cpus={cpus} ({how}: CPU {shown})"
    return f"cpus={shown} ({how})"


def cpu_list_of(cpus: int | tuple[int, ...]) -> tuple[int, ...]:
    """The CPUs `perturb.cpus` names: a count takes the first N this engine may use."""
    allowed = sorted(os.sched_getaffinity(0))
    shown = ",".join(str(c) for c in allowed)
    if isinstance(cpus, int):
        if cpus > len(allowed):
            raise PerturbRefused(
                f"perturb.cpus={cpus} not applied: this engine may use "
                f"{plural(len(allowed), 'CPU')} ({shown})"
            )
        return tuple(allowed[:cpus])
    missing = [c for c in cpus if c not in allowed]
    if missing:
        raise PerturbRefused(
            f"perturb.cpus={','.join(str(c) for c in cpus)} not applied: "
            f"{noun(len(missing), 'CPU')} "
            f"{','.join(str(c) for c in missing)} not available to this engine ({shown})"
        )
    return cpus


# -- memory cgroups ------------------------------------------------------------------


def make_memory_cgroup(size: int, name: str) -> tuple[Path | None, str]:
    """A fresh cgroup limited to `size` bytes: (its folder, how) or (None, why not).

    cgroup v2 where our cgroup's children may have the memory controller, else a v1
    memory hierarchy; swap is limited too where the kernel accounts it, so the limit
    cannot be escaped into swap.
    """
    reasons: list[str] = []
    for mount, kind, options in memcgroup.mounts():
        if kind == "cgroup2":
            parent = memcgroup.parent_for(mount, memcgroup.own_cgroup(None))
            try:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
            except OSError as exc:
                reasons.append(f"cgroup v2 at {parent}: {exc.strerror or exc}")
                continue
            if "memory" not in enabled:
                reasons.append(
                    f"cgroup v2 at {parent}: the memory controller is not delegated "
                    f"(cgroup.subtree_control: {' '.join(enabled) or 'empty'})"
                )
                continue
            made = _make(parent / name, {"memory.max": str(size), "memory.swap.max": "0"})
            if isinstance(made, Path):
                return made, "cgroup v2 memory.max"
            reasons.append(f"cgroup v2 at {parent}: {made}")
        elif "memory" in options.split(","):
            parent = memcgroup.parent_for(mount, memcgroup.own_cgroup("memory"))
            made = _make(
                parent / name,
                {"memory.limit_in_bytes": str(size), "memory.memsw.limit_in_bytes": str(size)},
            )
            if isinstance(made, Path):
                return made, "cgroup v1 memory.limit_in_bytes"
            reasons.append(f"cgroup v1 at {parent}: {made}")
    return None, "; ".join(reasons) or "no cgroup filesystem is mounted"


def _make(folder: Path, limits: Mapping[str, str]) -> Path | str:
    """Make `folder` with `limits` (the first required; the rest where the kernel has them)."""
    try:
        folder.mkdir()
    except OSError as exc:
        return f"cannot make a cgroup: {exc.strerror or exc}"
    for index, (name, value) in enumerate(limits.items()):
        try:
            (folder / name).write_text(value)
        except OSError as exc:
            # The first is the limit itself: without it the cgroup limits nothing. The
            # rest (swap) exist only where the kernel accounts swap.
            if index == 0:
                remove_cgroup(folder)
                return f"cannot set {name}: {exc.strerror or exc}"
    return folder


def remove_cgroup(folder: Path) -> None:
    """Remove an attempt's cgroup (its processes are gone; a stray one is moved out first)."""
    with contextlib.suppress(OSError):
        procs = (folder / "cgroup.procs").read_text().split()
        parent = folder.parent / "cgroup.procs"
        for pid in procs:
            with contextlib.suppress(OSError):
                parent.write_text(pid)
    with contextlib.suppress(OSError):
        folder.rmdir()


def finish(applied: Applied) -> str | None:
    """After the attempt: remove its cgroup; what the OOM killer did in it, if anything."""
    if applied.cgroup is None:
        return None
    kills = memcgroup.oom_kills(applied.cgroup)
    remove_cgroup(applied.cgroup)
    if kills:
        return f"{oom_killed(kills)} at perturb.memory_limit"
    return None


def refused_reason(path: Path) -> str | None:
    """What launch.py could not apply (it writes the reason to `path` and does not run)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None
