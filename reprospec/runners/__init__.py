"""Runners: one interface (`base.Runner`), several implementations, chosen by name.

`RUNNERS` is the registry the CLI reads its `--runner` choices from. Each entry
builds its runner from the run's options; a runner's module is imported only
when it is asked for (the docker SDK is an optional dependency).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from reprospec.errors import UsageError

if TYPE_CHECKING:  # the CLI reads the names at start-up: nothing more is imported then
    from reprospec.core.runoptions import RunOptions
    from reprospec.runners.base import Runner

RunnerFactory = Callable[["RunOptions", Path], "Runner"]


def _local(options: RunOptions, _spec_dir: Path) -> Runner:  # a RunnerFactory
    from reprospec.runners.local import LocalRunner

    return LocalRunner(
        python=options.python, cache_dir=options.cache_dir, keep_cores=options.keep_cores
    )


def _docker(options: RunOptions, spec_dir: Path) -> Runner:
    from reprospec.runners.docker.runner import DockerRunner

    return DockerRunner(
        find_links=options.find_links,
        spec_dir=spec_dir,
        keep_cores=options.keep_cores,
        say=options.say,
        read_only=options.read_only,
    )


def _venv(options: RunOptions, spec_dir: Path) -> Runner:
    # Issue 11: each cell in a venv built for its packages (minimal registration).
    from reprospec.runners.venv import VenvRunner

    return VenvRunner(
        python=options.python,
        cache_dir=options.cache_dir,
        find_links=options.find_links,
        spec_dir=spec_dir,
        say=options.say,
    )


# The same names as core/runoptions.py's RUNNER_NAMES (tests/unit/runners hold them equal).
RUNNERS: Mapping[str, RunnerFactory] = {
    "local": _local,
    "docker": _docker,
    "venv": _venv,
}


def create_runner(options: RunOptions, spec_dir: Path) -> Runner:
    """The runner `options.runner` names, built for this run."""
    factory = RUNNERS.get(options.runner)
    if factory is None:
        names = ", ".join(repr(name) for name in RUNNERS)
        raise UsageError(f"unknown runner {options.runner!r}: expected one of {names}")
    return factory(options, spec_dir)


P = ParamSpec("P")
R = TypeVar("R")


def kept_servers(search: Callable[P, R]) -> Callable[P, R]:
    """`search` (isolate, minimize, amplify) run inside `runners.local.keep_servers()`: under
    run.preload every run of the search forks from the same servers, one import for the
    whole search, not one per candidate's run. The local runner's module is imported when
    the search runs, not when its module is."""

    @functools.wraps(search)
    def kept(*args: P.args, **kwargs: P.kwargs) -> R:
        from reprospec.runners.local import keep_servers

        with keep_servers():
            return search(*args, **kwargs)

    return kept


def read_only_refused(runner: str, folder: Path, workdir: Path) -> str | None:
    """Why `runner` cannot mount `folder` (RunOptions.read_only) read-only at its own path
    beside an attempt's `workdir` (the docker runner's `read_only_clash`), None where it
    can: runners whose attempts run on this host mount nothing."""
    if runner != "docker":
        return None
    from reprospec.runners.docker.container import read_only_clash

    return read_only_clash(folder, workdir)


def workdir_inside(runner: str, workdir: Path) -> str | None:
    """`workdir` as the attempts `runner` ran in it name it, where that is not this host:
    the docker runner's container's (`container_workdir`: `/work` for a workdir under /root,
    /opt, /usr or /var), None for a runner whose attempts run on this host. A finished
    attempt records it (`Execution.container_workdir`); a search's stored probe, read again
    without its execution (minimize), asks it here, of the runner the probes ran under.
    A relative `workdir` (`-o min` as typed) is made absolute, links kept, as the plan's
    workdir the runner mapped is: `min` under /root is `/work` there, not `min`, and a link
    `/tmp/h -> /root` stays `/tmp/h`, not `/work` (review)."""
    if runner != "docker":
        return None
    from reprospec.runners.docker.container import container_workdir

    return container_workdir(workdir)
