"""A descendant of an attempt that the engine reaped: what only an attempt that started
processes of its own has (`Execution.child_exits`).

Its own module, imported where a child is reaped (process/tree.py) or read
(outcome/children.py): a run of a program that starts none never builds the class (a
frozen dataclass compiles six methods as it is made; issue 30, item 4).
"""

from __future__ import annotations

from reprospec.core.frozen import frozen


@frozen
class ChildExit:
    """A descendant of the attempt whose wait status the engine reaped (as the subreaper).

    `signal` when it was killed by a signal, else `exit_code`; `cmdline` as /proc
    showed it (a zombie's is only `[comm]`); `group` its process group (a signal the
    program sent the group, `os.killpg`, is its doing).
    """

    pid: int
    cmdline: str
    signal: str | None = None
    exit_code: int | None = None
    group: int | None = None
