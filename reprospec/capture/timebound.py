"""A command's `timeout DURATION` wrapper, taken out of it to be the run's timeout.

GNU timeout ends its program at DURATION and exits 124 (137 with `-s KILL`; the program's
own status with `--preserve-status`): a run reads that as the program's own end, `error
exit 124`, with no stacks, so a hang captured
under `timeout 300` was written as an exit code, and a ticket's skeleton of a hang under
it was not-reproduced by every attempt. The engine's own timeout is the same bound
and reads a hang as one, with its stacks: DURATION becomes the run's timeout, the command
runs without the wrapper. Used by `capture -- CMD` (capture/command.py) and, for a hang,
by `capture --from-log` (capture/fromlog.py).
"""

from __future__ import annotations

import re
import shlex

from reprospec.core.frozen import frozen
from reprospec.core.units import format_duration
from reprospec.plan.wrappers import command_wrappers

# What the run's timeout is for a hang whose command's `timeout` wrapper says no bound.
HANG_TIMEOUT = "10m"
# coreutils timeout's DURATION: a number (`1e3` too), then s, m, h or d (seconds without one).
_TIMEOUT_DURATION = re.compile(
    r"(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?P<unit>[smhd]?)"
)
_TIMEOUT_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@frozen
class Bound:
    """A `timeout` wrapper taken out of a command (`unbound`): its words as written, and its
    DURATION in seconds (None: `timeout 0`, no bound)."""

    words: str
    seconds: float | None

    def note(self, timeout: str) -> str:
        """What the spec's header says of it; `timeout`: the run's timeout written."""
        bound = (
            f"the run's timeout ({timeout})"
            if self.seconds is not None
            else f"no bound (the run's timeout, {timeout}, instead)"
        )
        return (
            f"`{self.words}` of the command is {bound}: at its end timeout's signal made a "
            "hang read as the program's own end (`error exit 124`), where the run's timeout "
            "reads a hang, with its stacks"
        )

    def timeout(self, default: str = HANG_TIMEOUT) -> str:
        """DURATION written as a run's timeout (`300s`), `default` where it is no bound."""
        return format_duration(self.seconds) if self.seconds is not None else default


def unbound(argv: list[str], *, hang: bool = False) -> tuple[list[str], Bound | None]:
    """`argv` without its `timeout DURATION` wrapper, and the wrapper (`Bound`), where it has
    one whose end reads as its own exit (124, or 137 for `-s KILL`): not
    `--preserve-status`, whose exit is the program's
    (its own handling of the signal is what ran), but where the failure is known to be a
    hang (`hang`: a ticket's), which only the run's timeout reads as one."""
    read = command_wrappers(argv)  # past the leading `VAR=value` words to the first wrapper
    if read is None:
        return argv, None  # a wrapper's word its grammar lacks: kept as written
    lead, found = read
    for begin, end in found.spans:
        if argv[lead + begin].rsplit("/", 1)[-1] != "timeout":
            continue
        words = argv[lead + begin : lead + end]
        duration = _TIMEOUT_DURATION.fullmatch(words[-1])  # its operand ends its words
        if duration is None or ("--preserve-status" in words and not hang):
            return argv, None
        seconds = float(duration["number"]) * _TIMEOUT_UNITS[duration["unit"]]
        return (
            argv[: lead + begin] + argv[lead + end :],
            Bound(shlex.join(words), seconds if seconds > 0 else None),
        )
    return argv, None
