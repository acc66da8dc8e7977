"""Apply `environment.perturb` to one container: the docker runner's counterpart of apply.py.

The variables are the same as the local runner's (`apply.variables`). What the local
runner sets with launch.py before exec, a container gets from the engine instead:

- `cpus`: `--cpuset-cpus` (the container's cgroup holds every process in it);
- `memory_limit`: `--memory` with `--memory-swap` equal to it (no swap to escape into),
  the smaller of it and `environment.memory` when both are given; the kernel's OOM kill
  is the engine's `OOMKilled`;
- `nice`: the command runs under `nice -n N` (coreutils, in any Debian-based image): the
  engine has no option for it. Only N >= 0: a lower value needs CAP_SYS_NICE, which the
  container does not have, and coreutils `nice` would then run the command un-niced with
  a warning, a plain run that reads as a perturbed one;
- `cpu_load`, `io_load`: the same competitors as the local runner's, on this machine
  beside the container (the daemon is this machine's: the attempt folder is bind-mounted),
  on the container's CPUs.

What cannot be applied raises `PerturbRefused` before the container is made, as on the
local runner: the attempt is an infra-error that names the perturbation.
"""

from __future__ import annotations

from reprospec.core.frozen import frozen
from reprospec.core.sections import Perturb
from reprospec.core.units import format_size
from reprospec.perturb.apply import PerturbRefused, cpu_list_of, cpus_note, variable_notes


@frozen
class ContainerPerturb:
    """How one container applies `environment.perturb` (beside its variables)."""

    cpuset: str | None = None  # `--cpuset-cpus`
    memory: int | None = None  # `--memory` and `--memory-swap` (bytes), from memory_limit
    prefix: tuple[str, ...] = ()  # put before the command: `nice -n N`
    notes: tuple[str, ...] = ()  # each perturbation and how it was applied
    cpu_list: tuple[int, ...] = ()  # the competitors' CPUs (the container's)


def for_container(perturb: Perturb, *, memory: int | None = None) -> ContainerPerturb:
    """How a container applies `perturb` (`memory`: the spec's `environment.memory`)."""
    if not perturb.active:
        return ContainerPerturb()
    # The image's C library reads the malloc settings; only glibc does (Debian-based images).
    notes = variable_notes(perturb, malloc_by="the image's glibc")
    cpuset: str | None = None
    cpus: tuple[int, ...] = ()
    if perturb.cpus is not None:
        cpus = cpu_list_of(perturb.cpus)
        cpuset = ",".join(str(c) for c in cpus)
        notes.append(cpus_note(perturb.cpus, cpus, "docker --cpuset-cpus"))
    prefix: tuple[str, ...] = ()
    if perturb.nice is not None:
        if perturb.nice < 0:
            raise PerturbRefused(
                f"perturb.nice={perturb.nice} not applied: the docker runner runs containers "
                "without CAP_SYS_NICE, which a negative nice value needs; run with "
                "--runner local (as root), or a value >= 0"
            )
        prefix = ("nice", "-n", str(perturb.nice))
        notes.append(f"nice={perturb.nice} (nice -n {perturb.nice} in the container)")
    if perturb.cpu_load:
        notes.append(f"cpu_load={perturb.cpu_load} (busy processes beside the container)")
    if perturb.io_load:
        notes.append(f"io_load={perturb.io_load} (writers beside the container)")
    limit: int | None = None
    if perturb.memory_limit is not None:
        limit, how = perturb.memory_limit, "docker --memory, no swap"
        if memory is not None and memory < limit:
            # The spec's own limit is lower: the perturbation cannot raise it.
            limit, how = memory, f"environment.memory {format_size(memory)} is lower"
        notes.append(f"memory_limit={format_size(perturb.memory_limit)} ({how})")
    return ContainerPerturb(cpuset, limit, prefix, tuple(notes), cpus)
