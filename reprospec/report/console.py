"""Where human output goes: rich consoles that respect NO_COLOR and non-terminals."""

from __future__ import annotations

import functools
import os
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def make_console(stream: IO[str] | None = None) -> Console:
    """A rich Console on `stream` (stdout by default); plain text unless it is a colour tty."""
    stream = stream or sys.stdout
    no_color = "NO_COLOR" in os.environ
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    return _console_class()(
        file=stream,
        no_color=no_color,
        color_system=None if (no_color or not is_tty) else "auto",
        highlight=False,
        # No `:name:` emoji codes: none is ours, a user's `:x:` stays as written, and
        # their table (rich._emoji_codes) was a tenth of a one-attempt run's imports.
        emoji=False,
        soft_wrap=not is_tty,
        width=None if is_tty else 160,
    )


@functools.cache
def _console_class() -> type[Console]:
    """rich's Console, ending on a closed pipe as the CLI's other output does. Made at the
    first console, once: rich is imported only by a command that prints through it."""
    from rich.console import Console

    class PipedConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich's own exits 1, silently: `compare A B | head` read as a failure. The CLI
            # exits as a program SIGPIPE ends, 141, as for any other closed pipe.
            self.quiet = True
            raise BrokenPipeError

    return PipedConsole


def live_progress_enabled(stream: IO[str] | None = None) -> bool:
    """Live progress only for a terminal, and never with NO_COLOR (CLI.md)."""
    stream = stream or sys.stderr
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()
