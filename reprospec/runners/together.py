"""The instances of one attempt (`run.instances`), started together: what every runner shares.

A runner says how one instance runs (`RunOne`: a process tree for the local runner, a
container for the docker runner); this module runs all of them, one thread each, and
releases them from one start barrier (barrier.py) once every one of them waits there.
When one cannot get there (its command cannot start, it died, the run is cancelled),
no instance is released and the attempt did not run (InfraError); so too where a process
outside the engine took MASTER_PORT before a rank bound it (`_port_taken`; on this
machine's network: a docker pod's is its own). The run's cancel reaches every instance;
no instance outlives the return.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.lazyre import Lazy
from reprospec.core.results import Execution
from reprospec.core.words import plural, plural_verb
from reprospec.errors import InfraError
from reprospec.process.barrier import StartBarrier, bound_now, free_port, release_port
from reprospec.process.childprotocol import Instance
from reprospec.process.scratch import Scratch


@frozen
class InstanceStart:
    """How one instance starts: its variables, the barrier it waits at, the shared scratch."""

    instance: Instance
    barrier: Path  # the barrier's folder (launch.py --barrier)
    scratch: Scratch | None  # the attempt's TMPDIR and XDG_CACHE_HOME, shared by its instances

    @property
    def launch_options(self) -> tuple[str, ...]:
        """launch.py's options that make this instance wait at the barrier (host paths)."""
        return ("--barrier", str(self.barrier), "--instance", str(self.instance.number))


# Runs instance N (its own folder, slot and stop event) to its end; blocking.
RunOne = Callable[[int, InstanceStart, threading.Event], Execution]


def run_together(
    plan: AttemptPlan,
    log_dir: Path,
    *,
    run_one: RunOne,
    scratch_dirs: Scratch | None,
    cancel: threading.Event | None = None,
    cleanup: Callable[[], Sequence[str]] = tuple,
    own_network: bool = False,
) -> tuple[Execution, ...]:
    """Run `plan.copies` instances with `run_one`, released together; one Execution each.

    `own_network`: the instances share a network of their own (the docker runner's pod),
    not this machine's, so no process outside the attempt can take MASTER_PORT from them
    and the machine's port says nothing of theirs (`_port_taken` is not asked).

    `cleanup` runs once every instance is gone; what it says goes with instance 0
    (what the instances shared is said once). Raises InfraError when the instances
    could not all be started.
    """
    count = plan.copies
    cancel = cancel or threading.Event()
    barrier = StartBarrier(log_dir / "barrier", count)
    port = free_port()
    stops = [threading.Event() for _ in range(count)]
    done: list[Execution | None] = [None] * count

    def work(number: int) -> None:
        start = InstanceStart(Instance(number, count, port), barrier.folder, scratch_dirs)
        done[number] = run_one(number, start, stops[number])

    threads = [
        threading.Thread(target=work, args=(n,), name=f"reprospec-instance-{n}", daemon=True)
        for n in range(count)
    ]

    def stop() -> str | None:
        if cancel.is_set():
            return "the run was cancelled"
        for number, thread in enumerate(threads):
            if not thread.is_alive():
                return _never_ready(number, done[number])
        return None

    warnings: list[str] = []
    problem: str | None = None
    try:
        for thread in threads:
            thread.start()
        problem = barrier.wait_ready(stop)
        if problem is None:
            barrier.release()
        else:
            barrier.abort()
            for event in stops:
                event.set()
        # The run's cancel reaches every instance (each watches its own event).
        while any(thread.is_alive() for thread in threads):
            for thread in threads:
                thread.join(timeout=0.05)
            if cancel.is_set():
                for event in stops:
                    event.set()
        starts = barrier.starts()
    finally:
        started = [thread for thread in threads if thread.ident is not None]
        if any(thread.is_alive() for thread in started):
            # Only on an exception in the engine itself: never leave an instance behind.
            barrier.abort()
            for event in stops:
                event.set()
        for thread in started:
            thread.join()
        # Read before the port is given back, every process of the attempt gone.
        clash = _port_taken(port, done) if problem is None and not own_network else None
        barrier.close()
        release_port(port)
        # Every instance is gone: what they left is no one's.
        warnings.extend(cleanup())
    executions = [execution for execution in done if execution is not None]
    if problem is not None and not cancel.is_set():
        # `instances: ${{ matrix.n }}` over [1, 4] runs one instance too: "the 1 instances".
        raise InfraError(f"{plural_verb(count, 'instance', the=True)} not started: {problem}")
    if len(executions) != count:
        raise InfraError(f"{count - len(executions)} of {plural(count, 'instance')} did not run")
    if clash is not None and not cancel.is_set():
        raise InfraError(clash)
    out = []
    for number, execution in enumerate(executions):
        start = starts.get(number)
        out.append(
            dataclasses.replace(
                execution,
                instance=number,
                ready_at=start.ready_at if start is not None else None,
                released_at=start.released_at if start is not None else None,
                # What the instances shared is said once, with instance 0.
                warnings=(
                    *(f"instance {number}: {warning}" for warning in execution.warnings),
                    *(warnings if number == 0 else ()),
                ),
            )
        )
    return tuple(out)


def instance_slots(
    plan: AttemptPlan, gpu_slots: Sequence[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """Each instance's GPU slot (none given: no GPUs); InfraError when the count is wrong."""
    count = plan.copies
    none: tuple[str, ...] = ()
    slots = list(gpu_slots) if gpu_slots else [none] * count
    if len(slots) != count:
        raise InfraError(f"{count} instances need {count} GPU slots, {len(slots)} given")
    return slots


# What a rank says of a MASTER_PORT another process holds: Python's OSError (errno 98),
# torch's TCPStore (`... errno: 98 - Address already in use`, `name: EADDRINUSE`).
_IN_USE = Lazy(r"(?i)address already in use|EADDRINUSE")
# How much of the end of an instance's output is read for it.
_TAIL_BYTES = 64 << 10


def _port_taken(port: int, done: Sequence[Execution | None]) -> str | None:
    """Why the attempt did not run as its spec says, where MASTER_PORT was taken by a
    process outside the engine between its pick (free then, below the ephemeral range,
    handed to no other attempt: barrier.free_port) and the rank's bind: an instance that
    failed says the address was in use, and with every process of the attempt gone the
    port is bound still, so by another process. A program that binds it twice itself
    (two ranks as the store's server) leaves it unbound: its failure is its own, an
    error as it ran. None where nothing says so."""
    said = [
        number
        for number, execution in enumerate(done)
        if execution is not None and execution.returncode not in (0, None)
        if not execution.timed_out and _says_in_use(execution)
    ]
    if not said or not bound_now(port):
        return None
    return (
        f"MASTER_PORT {port} was taken by another process before instance {said[0]} bound "
        "it (its output says the address was in use, and the port is bound still, by no "
        "process of the attempt): the instances did not run as the spec says; run again"
    )


def _says_in_use(execution: Execution) -> bool:
    for path in (execution.stderr_path, execution.stdout_path):
        try:
            tail = capped.head_tail(path, 0, _TAIL_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        if _IN_USE.search(tail):
            return True
    return False


def _never_ready(number: int, execution: Execution | None) -> str:
    """Why instance `number`, whose run already returned, never reached the start barrier."""
    if execution is None:
        return f"instance {number} failed in the engine"
    if execution.infra_error:
        return f"instance {number}: {execution.infra_error}"
    if execution.returncode is not None and execution.returncode < 0:
        how = f"died of signal {-execution.returncode}"
    else:
        how = f"exited with code {execution.returncode}"
    return f"instance {number} {how} before it reached the start barrier"
