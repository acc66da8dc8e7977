"""A search folder (amplify, isolate, minimize, bisect) held by another real process, as a
second reprospec of the same search holds it (core/trylock.py's `search_held`), and the
refusal a search started meanwhile answers: one holder and one wording for every verb."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import ROOT

HOLDER = """
import sys, time
from pathlib import Path
from reprospec.core.trylock import search_held
with search_held(Path(sys.argv[1]), "the first"):
    print("held", flush=True)
    time.sleep(60)
"""


@contextlib.contextmanager
def held_elsewhere(folder: Path) -> Iterator[int]:
    """`folder` held by another process while the block runs (its pid given); SIGKILLed
    after it, its lock file left behind with its pid, as a killed search leaves it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def refused_as_held(search: str, folder: Path, pid: int) -> str:
    """What a search (`bisect ID`, `isolation ID`) started while `pid` holds its folder says."""
    return (
        f"reprospec: {search} is running now in another reprospec ({folder} is held by pid "
        f"{pid}): wait for it to end"
    )
