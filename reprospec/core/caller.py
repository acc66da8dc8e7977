"""Who asked: the CLI or the Python API, for the words an error uses (`said`).

A user of the CLI typed `--set` and `--passing-set`; a caller of the Python API passed
`overrides` and `passing_sets`, and an error naming the CLI's options sent that caller to
options it never used. Kept apart from runoptions.py (dataclasses, inspect): the CLI's
`main` imports it before anything else, `--version` included.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
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
# The API call's options class and its field of matrix filters, for `filters_said` and
# `argument`: `reprospec.run`'s caller passed `matrix_filters=(...)`, minimize_spec's
# `MinimizeOptions(cell=(...))`, where each error said `-m`. Set by `naming`.
_OPTIONS: ContextVar[tuple[str, str]] = ContextVar(
    "reprospec_options", default=("", "matrix_filters")
)


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
def naming(options: str, filters: str = "matrix_filters") -> Iterator[None]:
    """While a search of the Python API runs: its arguments are fields of `options` (the
    class, `MinimizeOptions`), its matrix filters the field `filters` (`cell`)."""
    token = _OPTIONS.set((options, filters))
    try:
        yield
    finally:
        _OPTIONS.reset(token)


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


def made(option: str, argument: str) -> str:
    """`said` of a value checked where the caller's own constructor makes it (`Shard(0, 8)`,
    `RunOptions(shard="9/8")`), outside any call of the API: the CLI's `option` while its
    `main` runs, else the API's `argument`, the one a constructor's caller passed."""
    return option if _CLI_RUNNING else argument


def argument(option: str, field: str, value: str = "...") -> str:
    """`said` of an option its search's options class holds as `field`: the CLI's
    `option` (`--budget`), or the API's `AmplifyOptions(budget=...)` (`field=...` where
    the call takes no options class, `reprospec.run`'s); with a `value`, `--budget 40`
    or `AmplifyOptions(budget=40)`."""
    options, _filters = _OPTIONS.get()
    typed = option if value == "..." else f"{option} {value}"
    return said(typed, f"{options}({field}={value})" if options else f"{field}={value}")


def filters_option() -> str:
    """How an error names the option that keeps cells: `-m`, or `matrix_filters=...`."""
    return argument("-m", _OPTIONS.get()[1])


def filters_said(filters: Sequence[str]) -> str:
    """`filters` as the user gave them: `-m a=1 -m b=2` (each quoted as a shell word, to
    be typed again), or the API's `matrix_filters=('a=1', 'b=2')`."""
    if _FROM_API.get() and not _CLI_RUNNING:
        return argument("-m", _OPTIONS.get()[1], repr(tuple(filters)))
    import shlex  # here, not above: `--version` imports this module

    return " ".join(f"-m {shlex.quote(f)}" for f in filters)


def resuming(run_id: str) -> str:
    """How an error names the resume asked for: the CLI's `--resume RUN`, or the API's
    `resume('RUN')`, where a caller of `reprospec.resume` was told of an option it never
    typed."""
    return said(f"--resume {run_id}", f"resume({run_id!r})")


def run_again() -> str:
    """How an error that refuses a resume says to start over instead."""
    return said("run the spec again (without --resume)", "run the spec again (reprospec.run)")
