"""An attempt as seen from inside a container: mounts, paths, workdir, argv, limits.

Shared by the docker runner (through the SDK) and `reprospec materialize`
(as `docker run` options in a script), so a bundle runs its cells exactly as
the runner would.
"""

from __future__ import annotations

from pathlib import Path

from reprospec.core.inputs import AttemptPlan
from reprospec.core.runoptions import folder_as_mounted
from reprospec.core.sections import Environment
from reprospec.process.childprotocol import CELL_JSON, ChildPaths

IN_ATTEMPT = "/reprospec/attempt"
IN_HARNESS = "/reprospec/harness"
IN_STACKDUMP = "/reprospec/stackdump"
IN_CELL = f"{IN_ATTEMPT}/{CELL_JSON}"
# process/launch.py: an instance's start barrier, and every attempt's init (`--init`).
IN_LAUNCH = "/reprospec/launch.py"
# The attempt's command's wait status as its init recorded it (launch.py's `--init RECORD`):
# the container's own status, 128 + N, cannot tell a death by signal N from an exit 128 + N.
EXIT_JSON = "exit.json"
IN_EXIT = f"{IN_ATTEMPT}/{EXIT_JSON}"
# Written by that init right before it starts the command: a container that ended with
# neither file (and not killed by the engine) ended before the command could run.
EXIT_STARTED = f"{EXIT_JSON}.started"
PATHS = ChildPaths(attempt_dir=IN_ATTEMPT, harness_dir=IN_HARNESS, stackdump_dir=IN_STACKDUMP)

# Paths a workdir must not shadow inside the container: such a workdir goes to /work.
_SYSTEM_ROOTS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/reprospec",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)


def container_workdir(host: Path) -> str:
    """The workdir's path inside the container: the same path unless it would shadow the system.
    A relative `host` is taken from the current folder (`Path.absolute`, links kept, as the
    plan's workdir is), so every caller maps one path one way (review)."""
    text = host.absolute().as_posix()
    if text == "/" or any(text == r or text.startswith(r + "/") for r in _SYSTEM_ROOTS):
        return "/work"
    return text


# Below these, a folder mounted at its own path is inside the kernel's file systems or the
# runner's own mounts (IN_ATTEMPT, IN_LAUNCH, ...): never a user's project.
_NOT_BELOW = ("/dev", "/proc", "/sys", "/reprospec")


def read_only_clash(folder: Path, workdir: Path) -> str | None:
    """Why `folder` (RunOptions.read_only) cannot be mounted read-only at its own path in a
    container whose workdir is `workdir`'s (`container_workdir`), or None where it can.
    `container_workdir`'s rule moves a workdir off the system's paths; this mount, at the
    folder's own path so that links naming it resolve, cannot move: at `/tmp` (a non-root
    user's HOME there, and every program's scratch) or a system root (`/var`, `/root`) it
    hid the image's own, read-only; `/work` or a folder under it, where the attempt's own
    workdir is `/work` too, was docker's 'Duplicate mount point' or a folder mounted into
    the workdir (docker made it, empty and root's, in the host's folder): one infra-error,
    or a broken attempt, each time. The caller refuses the run before any attempt."""
    # Normalised first: `/tmp/rvwd/a/../../../tmp` passed as text and mounted the host's /tmp.
    text = folder_as_mounted(folder).as_posix()
    if text in ("/", "/tmp") or text in _SYSTEM_ROOTS:
        return f"{text} is the system's own there"
    if any(text.startswith(root + "/") for root in _NOT_BELOW):
        return f"{text} is below /{text.split('/')[1]}, the container's own"
    if container_workdir(workdir) == "/work" and (text == "/work" or text.startswith("/work/")):
        return (
            f"{text} is at or below /work, where the attempt's own folder (under a system "
            "folder: --out's) is mounted"
        )
    return None


def attempt_argv(plan: AttemptPlan) -> list[str] | None:
    """What the container runs: the harness for a workload, else the plan's argv."""
    if plan.workload is not None:
        return ["python3", "-m", "reprospec_harness"]
    return list(plan.argv) if plan.argv else None


def run_options(environment: Environment) -> dict[str, object]:
    """The limits and devices of `environment`, as `docker run`/the SDK name them."""
    options: dict[str, object] = {"network": "bridge" if environment.network else "none"}
    if environment.shm_size is not None:
        options["shm_size"] = environment.shm_size
    if environment.memory is not None:
        # The swap limit too: docker's default (twice the memory) let a container of a host
        # with swap use as much again, swapping, before the OOM kill the limit stands for.
        options["memory"] = options["memory_swap"] = environment.memory
    if environment.gpus:
        options["gpus"] = environment.gpus
    return options
