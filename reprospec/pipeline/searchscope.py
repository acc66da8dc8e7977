"""What every search (isolate, minimize, amplify, bisect) holds for its whole run.

A search runs tens to hundreds of small runs of one program, each its own engine run, one
after another or a few at once; each run alone would capture the environment again, and
close the store as the last connection (a checkpoint and an fsync). The search holds both
open from its first run to its last, so that its runs cost what its attempts cost:

- `shared_captures()` (environment/probe.py): its runs share one environment capture;
- `held_open()` (store/db.py): the store is checkpointed once, as the search ends;
- `remembered_failures()` (venvs/build.py): a python its spec names that is not here is
  searched for once (`uv python find`, up to 120 s), not once a probe (a timeout of it is
  kept for the one run it came in);
- `kept_servers` (runners/__init__.py), with `servers=True`: under run.preload (or
  --preload), every run of the search forks from the same servers, one import for the
  whole search. Bisect leaves it out: each version it tries is an interpreter of its own,
  whose servers would only pile up.

One decorator, so that a new search cannot hold one and forget another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from reprospec.environment.probe import shared_captures
from reprospec.runners import kept_servers
from reprospec.store.db import held_open
from reprospec.venvs.build import remembered_failures

P = ParamSpec("P")
R = TypeVar("R")


def search_scope(*, servers: bool = True) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The search's entry point run inside its holds (the module docstring)."""

    def wrap(search: Callable[P, R]) -> Callable[P, R]:
        inner = kept_servers(search) if servers else search

        @functools.wraps(search)
        def held(*args: P.args, **kwargs: P.kwargs) -> R:
            with shared_captures(), held_open(), remembered_failures():
                return inner(*args, **kwargs)

        # What it holds, said on the entry point (a test reads that every search's is held).
        held.search_scope = {"servers": servers}  # type: ignore[attr-defined]
        return held

    return wrap
