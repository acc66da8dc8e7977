"""This process's environment changed for a block, and put back as it was.

The local runner hands its attempts the engine's environment, so a verb that wants its
runs to see a variable (capture's import record, bisect's uv cut-off date) or not to see
one (capture's verify, without the shell's own variables) changes `os.environ` around
those runs. Each put it back by hand; one block does it for all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping


@contextlib.contextmanager
def changed(changes: Mapping[str, str | None]) -> Iterator[None]:
    """Set each variable of `changes` (None: unset it) for the block; then each is as it
    was before, set or not."""
    before = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
