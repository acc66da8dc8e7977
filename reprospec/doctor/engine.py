"""The engine's own checks: how it starts attempts on this machine (starter.py), and
whether a crash or hang gets native stacks here (native/)."""

from __future__ import annotations

from reprospec.doctor.check import Check
from reprospec.native.cores import CorePattern


def check_starter(ready: bool, how: str) -> Check:
    """The attempt starter: built (each attempt starts through it), or why not."""
    if ready:
        return Check("starter", "pass", f"attempts start through {how}")
    return Check(
        "starter",
        "warn",
        f"attempts start through Python's preexec_fn ({how}): same guarantees, "
        "about 2 ms more of the engine's CPU per attempt",
        "install a C compiler (apt install gcc), or set CC",
    )


def check_native_stacks(
    gdb: str | None,
    pattern: CorePattern,
    core_limit: int,
    eustack: str | None = None,
    pyspy: str | None = None,
) -> Check:
    """Whether crashes and hangs get native stacks: eu-stack or gdb, where cores go, the hard
    core limit (`core_limit`, bytes; resource.RLIM_INFINITY is -1) the attempts can raise
    theirs to; and whether py-spy reads a crashed process's Python stack from its core."""
    if gdb is None and eustack is None:
        return Check(
            "native-stacks",
            "warn",
            "gdb not found: crashes and hangs get Python stacks only",
            "apt-get install gdb binutils elfutils (eu-stack reads them in a fraction of gdb's "
            "time; libc6-dbg names libc's internal functions)",
        )
    if pattern.piped:
        return Check(
            "native-stacks",
            "warn",
            f"kernel.core_pattern pipes cores to {pattern.handler}: crashes get no native "
            "stacks (hangs do)",
            "sysctl kernel.core_pattern=core (as root) writes them where reprospec reads them",
        )
    if core_limit == 0:
        return Check(
            "native-stacks",
            "warn",
            "the hard core size limit (ulimit -Hc) is 0: crashes leave no core, so they get "
            "no native stacks (hangs do)",
            "raise the hard limit (limits.conf, or ulimit -Hc unlimited as root)",
        )
    if eustack is not None:
        why = f"eu-stack at {eustack}" + (f" (gdb at {gdb})" if gdb else "")
    else:
        # Every crash of a torch process then costs seconds of gdb instead of a fraction.
        why = f"gdb at {gdb} (eu-stack not found: apt-get install elfutils reads them faster)"
    why += f"; cores go to kernel.core_pattern={pattern.raw!r}"
    if pyspy is None:
        # A DataLoader worker's crash leaves no faulthandler stack (torch sets the worker's
        # own SIGSEGV handler): its core is where its Python frames are, and only py-spy
        # reads them. A user of the plain install lost the most useful frame, unsaid.
        why += (
            "; py-spy not found: a crashed process whose faulthandler stack is lost (a "
            "DataLoader worker's) gets no Python frames from its core (pip install py-spy)"
        )
    if pattern.shared_name:
        # Not a failure: one attempt at a time never collides. Said so a user of -j knows.
        why += (
            ", one name per folder: crashes a few ms apart in one workdir (-j, "
            "run.instances) can still replace each other's core (sysctl "
            "kernel.core_uses_pid=1 gives each its own)"
        )
    return Check("native-stacks", "pass", why)
