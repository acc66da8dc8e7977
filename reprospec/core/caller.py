"""Who asked: the CLI or the Python API, for the words an error uses (`said`).

A user of the CLI typed `--set` and `--passing-set`; a caller of the Python API passed
`overrides` and `passing_sets`, and an error naming the CLI's options sent that caller to
options it never used. Kept apart from runoptions.py (dataclasses, inspect): the CLI's
`main` imports it before anything else, `--version` included.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar

# Not typing's: importing typing costs `--version` 3 ms (mypy reads this name the same).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ParamSpec, TypeVar

    _P = ParamSpec("_P")
    _R = TypeVar("_R")

# Who asked, for the errors' words (`said`): the Python API (reprospec.api,
# reprospec.investigate), whose caller passed `overrides` and `passing_sets`, or the CLI,
# whose user typed `--set` and `--passing-set`. The CLI's flag is the process's while its
# `main` runs, threads included: the CLI's searches call the API's own functions (isolate's
# driver loads each side with api.load_spec), where the user typed `--set` all the same.
_FROM_API: ContextVar[bool] = ContextVar("reprospec_from_api", default=False)
_CLI_RUNNING: list[bool] = []


def from_api(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """`function`, an entry of the Python API: while it runs, `said` names arguments."""

    @functools.wraps(function)
    def called(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        token = _FROM_API.set(True)
        try:
            return function(*args, **kwargs)
        finally:
            _FROM_API.reset(token)

    return called


@contextlib.contextmanager
def from_cli() -> Iterator[None]:
    """While the CLI's `main` runs: `said` names the options typed, whatever it calls."""
    _CLI_RUNNING.append(True)
    try:
        yield
    finally:
        _CLI_RUNNING.pop()


def said(option: str, argument: str) -> str:
    """How an error names what the user gave: the CLI's `option` (`--set`), or, in a call
    of the Python API made outside the CLI, the API's `argument` (`overrides`)."""
    return argument if _FROM_API.get() and not _CLI_RUNNING else option


def resuming(run_id: str) -> str:
    """How an error names the resume asked for: the CLI's `--resume RUN`, or the API's
    `resume('RUN')`, where a caller of `reprospec.resume` was told of an option it never
    typed (nu68 7)."""
    return said(f"--resume {run_id}", f"resume({run_id!r})")


def run_again() -> str:
    """How an error that refuses a resume says to start over instead."""
    return said("run the spec again (without --resume)", "run the spec again (reprospec.run)")
