"""gdb attached to every process of a running container, through `docker exec`.

One `docker exec` lists the container's processes (their pids as the container sees
them, and their maps, which name the libraries of addresses), then execs one gdb that
attaches to each in turn (native.attach_gdb_script: native.attach_gdb_argv's gdb), and
is stopped at a deadline (its output so far kept). One exec, not one to list and one for
gdb: each costs a round trip through the engine, 0.1-0.3 s of a hang's report on a loaded
machine (benchmarks/native_stacks.py --runner docker). The container is killed right
after by the caller, which also ends a gdb cut short.

Where Yama refuses the attach (gdb is no ancestor of the processes), gdb runs again
in a privileged exec: it gets CAP_SYS_PTRACE, the attempt's own processes keep the
container's capabilities. An engine that refuses privileged execs leaves the first
answer (`ptrace: Operation not permitted.` for each process).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.core.frozen import frozen

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import Container, DockerClient

# gdb's environment: the image's PYTHONPATH (the harness, the stack dumper's
# sitecustomize) must not reach gdb's embedded Python; gdb's messages in English.
GDB_ENV = {"PYTHONPATH": "", "PYTHONFAULTHANDLER": "", "PYTHONSTARTUP": "",
           "LC_ALL": "C", "LANG": "C"}  # fmt: skip
# However late the Python stacks came, gdb gets this long.
MIN_BUDGET_S = 0.5

# Runs in the container at a hang: every live process but the init (pid 1) and this
# shell, as `@ PID PPID CMDLINE`, then its file-backed maps as `START-END PATH` lines,
# then LISTED; `$pids` the listed, the init's children first, then by pid (parse_listing's
# order; unsorted in an image without `sort`), for the gdb the script execs next. Shell
# builtins only, but for `tr` and `sort`: the processes they start are never in the list.
LISTED = "@@reprospec:listed@@"
_LIST = r"""
roots= others=
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  case $pid in 1|$$) continue ;; esac
  ppid= state=
  while read -r key value rest; do
    case $key in PPid:) ppid=$value ;; State:) state=$value ;; esac
  done < "$d/status" 2>/dev/null || continue
  case $state in Z|X|"") continue ;; esac
  echo "@ $pid $ppid $(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)"
  while read -r range perms offset dev inode path; do
    case $path in /*) echo "$range $path" ;; esac
  done < "$d/maps" 2>/dev/null
  if [ "$ppid" = 1 ]; then roots="$roots $pid"; else others="$others $pid"; fi
done
echo "@@reprospec:listed@@"
pids="$(for p in $roots; do echo "$p"; done | sort -n || echo "$roots")
$(for p in $others; do echo "$p"; done | sort -n || echo "$others")"
"""


@frozen
class ContainerProcess:
    """One live process of a hung container, as the container sees it."""

    pid: int
    ppid: int
    command: str
    maps: tuple[tuple[int, int, str], ...] = ()


def parse_listing(text: str) -> list[ContainerProcess]:
    """The processes `_LIST` printed, the attempt's root (the init's child) first, then by
    pid: the order the script's gdb attaches in."""
    found: list[ContainerProcess] = []
    lines: list[str] = []

    def close() -> None:
        if found and lines:
            found[-1] = replace(found[-1], maps=native.parse_maps("\n".join(lines)))
        lines.clear()

    for line in text.splitlines():
        if line.startswith("@ "):
            close()
            fields = line[2:].split(" ", 2)
            if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
                command = fields[2].strip() if len(fields) > 2 else ""
                found.append(ContainerProcess(int(fields[0]), int(fields[1]), command))
        elif found:
            # `START-END PATH` as a maps line with the fields parse_maps skips.
            range_, _, path = line.partition(" ")
            lines.append(f"{range_} r--p 0 0:0 0 {path}")
    close()
    return sorted(found, key=lambda p: (p.ppid != 1, p.pid))


def attach_all(client: DockerClient, container: Container, deadline: float) -> native.NativeStacks:
    """Native stacks of every live process of the running `container`; gdb is stopped at
    `deadline` (time.monotonic()), or MIN_BUDGET_S from now if that is later."""
    import docker.errors

    budget = max(MIN_BUDGET_S, deadline - time.monotonic())
    # gdb's errors (`ptrace: ...`) go to stderr, which the engine streams apart from stdout:
    # merged at the source (the script's `2>&1`), each stays in the section of the process
    # it is about. The listing's own errors (a process gone meanwhile) are dropped.
    argv = ["sh", "-c", f"exec 2>/dev/null\n{_LIST}{native.attach_gdb_script()}"]
    try:
        output, finished = _exec_bounded(client, container, argv, budget)
        left = deadline - time.monotonic()
        if finished and _ptrace_refused(output) and left > MIN_BUDGET_S:
            # Yama (ptrace_scope 1) lets only an ancestor attach, or CAP_SYS_PTRACE: a
            # privileged exec has it, the attempt's processes keep their capabilities.
            again = _exec_bounded(client, container, argv, left, privileged=True)
            if not _exec_failed(again[0]):  # an engine may refuse privileged execs
                (output, finished), budget = again, left
    except docker.errors.APIError as exc:
        return native.NativeStacks(
            unavailable=f"native stacks unavailable: gdb could not run in the container: "
            f"{exc.explanation or exc}"
        )
    if _exec_failed(output):
        return native.NativeStacks(
            unavailable=f"native stacks unavailable: {output.strip().splitlines()[0]}"
        )
    listing, marked, output = output.partition(LISTED)
    processes = parse_listing(listing)
    if not marked and not finished:
        return native.NativeStacks(
            unavailable=f"native stacks unavailable: the container's processes were not "
            f"listed within {budget:g}s"
        )
    if not processes:
        return native.NativeStacks(notes=("no live process in the container to attach to",))
    pids = {p.pid: p.command for p in processes}
    maps = {p.pid: p.maps for p in processes}
    found = native.attach_gdb_stacks(pids, maps, output, finished=finished, budget_s=budget)
    # The parents as the container sees them: a hang's place is a hung descendant's, not
    # its parent's `read` of the child's output (native.hung_frame).
    return native.with_parents(found, {p.pid: p.ppid for p in processes})


def _ptrace_refused(output: str) -> bool:
    """Whether gdb was refused every attach (`ptrace: Operation not permitted.`)."""
    attaches = output.count("@@reprospec:pid:")
    return attaches > 0 and output.count("ptrace: Operation not permitted") >= attaches


def _exec_failed(output: str) -> bool:
    """Whether the engine could not start the exec at all (it says so in the output)."""
    return "@@reprospec:" not in output and output.lstrip().startswith("OCI runtime exec failed")


def _exec_bounded(
    client: DockerClient,
    container: Container,
    argv: Sequence[str],
    budget_s: float,
    privileged: bool = False,
) -> tuple[str, bool]:
    """Run `argv` in the running container for at most `budget_s`: (its output so far, finished).

    Past the budget the exec is left running: the caller kills the container next,
    which ends it. The output read by then is kept. Raises docker's APIError when the
    exec cannot start.
    """
    chunks: list[bytes] = []
    created = client.api.exec_create(
        container.id, list(argv), stdout=True, stderr=True,
        environment=GDB_ENV, privileged=privileged,
    )  # fmt: skip
    stream = client.api.exec_start(created["Id"], stream=True, demux=False)

    def pump() -> None:
        with contextlib.suppress(Exception):  # a stream closed by the kill ends the pump
            for chunk in stream:
                chunks.append(chunk)

    reader = threading.Thread(target=pump, name="reprospec-docker-gdb", daemon=True)
    reader.start()
    reader.join(max(0.05, budget_s))
    finished = not reader.is_alive()
    return b"".join(list(chunks)).decode("utf-8", "replace"), finished
