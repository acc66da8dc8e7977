"""The contract between the engine and every child it runs, whatever the runner.

A child (local process, container, or a materialized bundle's `docker run`)
gets the same variables and writes the same files into its attempt folder;
only the paths differ, as the child sees them. This module is the one place
that builds those variables and names those files.

    REPROSPEC_EVENTS      events.jsonl: one JSON object per line (progress, faults, infra errors;
                          the stack dumper's `child_exit`: a child reaped dead of a signal)
    REPROSPEC_ENV_JSON    env.json: the environment the harness captured
    REPROSPEC_STACK_DIR   the attempt folder: each Python process dumps stack-<pid>.txt there on
                          SIGURG (removed after the attempt, once stack.txt holds them), and
                          writes ended-<pid>.txt as it exits normally (whether it reaped a
                          child, the status it asked for: process/tree.py's
                          program_ran_alone reads it, then removed; begun at its start with
                          its parent's pid alone, which a death by a signal leaves:
                          program_died; each with the parent's executable as it began, a
                          shell's where the root forked it), and raised-<pid>.txt
                          as its main thread dies of an uncaught exception (the traceback
                          the default hook prints), or at exit where it died of none (the
                          program's is kept as raised.txt, process/stacks.py's
                          keep_program_raised; the rest removed), and cwds.txt: each folder
                          a process moved to (os.chdir) or started a child in (subprocess's
                          cwd=), where a relative core_pattern
                          puts its core (native/cores.py's moved_to reads it, then removed)
    REPROSPEC_CELL        cell.json: the cell a workload runs (workloads only)
    REPROSPEC_ATTEMPT_TOKEN  a uuid every descendant inherits (finds escaped processes)
    PYTHONPATH            stackdump/ (and the harness for a workload) first: its sitecustomize
                          arms the SIGURG dump above and faulthandler, so a Python crash
                          prints the stack of the thread that took the signal (not
                          PYTHONFAULTHANDLER=1, whose dump of every thread can fault itself
                          and turn the signal into a SIGSEGV)
    TMPDIR, XDG_CACHE_HOME  tmp/ and cache/: the attempt's own, unless environment.shared_tmp
                          (the runner creates them and removes them after: scratch.py)

An instance of `run.instances` (one of N copies of the attempt started together)
also gets, as torchrun would set them for a job of N processes on one machine:

    REPROSPEC_INSTANCE    its number, 0..N-1 (also RANK and LOCAL_RANK)
    REPROSPEC_INSTANCES   N (also WORLD_SIZE and LOCAL_WORLD_SIZE)
    MASTER_ADDR, MASTER_PORT  127.0.0.1 and a port that was free when the attempt began,
                          below the kernel's ephemeral range (barrier.free_port)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan

# The kinds of event that say where a child got to (a line with no `event` says it too):
# any process of an attempt may write them. outcome/evidence.py reads the phase, step,
# stage and module from them; a `run.stall` watch (progress.py) counts them as progress.
PROGRESS_EVENTS = frozenset({"phase", "step", "stage", "import", "marker", "done"})

STDOUT = "stdout.log"
STDERR = "stderr.log"
EVENTS = "events.jsonl"
ENV_JSON = "env.json"
CELL_JSON = "cell.json"
STACK_TXT = "stack.txt"
# The uncaught exception that ended the attempt's program, as its own interpreter printed it
# (stackdump/sitecustomize.py's raised-<pid>.txt, kept by process/stacks.py): what
# outcome/classify.py reads the exception from before stderr, where threads interleave.
RAISED = "raised.txt"
TMP_DIR = "tmp"
CACHE_DIR = "cache"

TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
INSTANCE_VAR = "REPROSPEC_INSTANCE"
INSTANCES_VAR = "REPROSPEC_INSTANCES"
STACK_DIR_VAR = "REPROSPEC_STACK_DIR"
CELL_VAR = "REPROSPEC_CELL"

PACKAGE_DIR = Path(__file__).resolve().parent.parent
HARNESS_DIR = PACKAGE_DIR / "harness"
STACKDUMP_DIR = PACKAGE_DIR / "stackdump"


@frozen
class ChildPaths:
    """Where the child finds the attempt folder, the harness and the stack dumper."""

    attempt_dir: str
    harness_dir: str = str(HARNESS_DIR)
    stackdump_dir: str = str(STACKDUMP_DIR)
    # TMPDIR when not ATTEMPT/tmp (a local attempt folder too deep for Unix sockets: the
    # engine's own, or the attempt's folder shared by its instances, each with its own).
    tmp_dir: str | None = None
    # XDG_CACHE_HOME when not ATTEMPT/cache (the engine's own, as TMPDIR; the attempt's,
    # shared by its instances).
    cache_dir: str | None = None

    def file(self, name: str) -> str:
        return f"{self.attempt_dir}/{name}"


@frozen
class Instance:
    """One of `count` copies of an attempt (`run.instances`), as its variables say it."""

    number: int
    count: int
    master_port: int
    master_addr: str = "127.0.0.1"

    def variables(self) -> dict[str, str]:
        """REPROSPEC_INSTANCE and the torch.distributed variables of a job of `count` processes."""
        return {
            INSTANCE_VAR: str(self.number),
            INSTANCES_VAR: str(self.count),
            "RANK": str(self.number),
            "LOCAL_RANK": str(self.number),
            "WORLD_SIZE": str(self.count),
            "LOCAL_WORLD_SIZE": str(self.count),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def child_env(
    plan: AttemptPlan,
    paths: ChildPaths,
    *,
    gpu_ids: Sequence[str] = (),
    token: str | None = None,
    pythonpath_after: Sequence[str] = (),
    harness: bool | None = None,
    instance: Instance | None = None,
) -> dict[str, str]:
    """The spec's `env` for the cell plus the protocol's variables, as the child must see them.

    `pythonpath_after`: entries kept after ours (the caller's or the image's own).
    `harness`: put the harness on PYTHONPATH (default: for a workload).
    `instance`: the instance of `run.instances` this child is (its variables win over
    the spec's: only the engine knows which copy a process is).
    """
    env = dict(plan.env)
    # The GPU diagnostics' variables, their files named into the attempt folder as the child
    # sees it (validation refuses a spec that also sets one of them in `env`).
    env.update(plan.environment.debug.variables(paths.attempt_dir))
    ours = [paths.stackdump_dir]
    if harness or (harness is None and plan.workload is not None):
        ours.append(paths.harness_dir)
    if plan.workload is not None:
        env[CELL_VAR] = paths.file(CELL_JSON)
    theirs = [p for p in (env.get("PYTHONPATH", ""), *pythonpath_after) if p]
    env["PYTHONPATH"] = ":".join([*ours, *theirs])
    env["REPROSPEC_EVENTS"] = paths.file(EVENTS)
    env["REPROSPEC_ENV_JSON"] = paths.file(ENV_JSON)
    # The attempt folder itself: a folder of their own would cost a mkdir and an rmdir per
    # attempt, for files that exist only until the attempt ends.
    env[STACK_DIR_VAR] = paths.attempt_dir
    env["PYTHONUNBUFFERED"] = "1"
    if not plan.environment.shared_tmp:
        # The spec's own env wins: an incident may need a particular TMPDIR.
        env.setdefault("TMPDIR", paths.tmp_dir or paths.file(TMP_DIR))
        env.setdefault("XDG_CACHE_HOME", paths.cache_dir or paths.file(CACHE_DIR))
    if instance is not None:
        env.update(instance.variables())
    if token is not None:
        env[TOKEN_VAR] = token
    if gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_ids)
    return env


def cell_document(plan: AttemptPlan) -> dict[str, object]:
    """cell.json: what the harness reads through REPROSPEC_CELL (the same for every runner)."""
    return {
        "spec": plan.spec_name,
        "cell_id": plan.cell.id,
        "matrix": dict(plan.cell.matrix),
        "attempt": plan.attempt,
        "workload": plan.workload,
        "environment": plan.environment.to_json(),
    }


def write_cell(plan: AttemptPlan, path: Path) -> None:
    """Write cell.json for `plan` at `path`."""
    path.write_text(cell_json(plan), "utf-8")


def cell_json(plan: AttemptPlan) -> str:
    """cell.json's text for `plan`."""
    return json.dumps(cell_document(plan), indent=2, default=_json_default)


def _json_default(value: object) -> object:
    """JSON for the mappings and tuples that frozen plans hold."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return str(value)
