"""Runners: the one interface with several implementations (local, docker)."""

from __future__ import annotations

from pathlib import Path

from reprospec.runners.base import Runner


def get_runner(
    name: str, *, python: str | None = None, cache_dir: Path | None = None, **options: object
) -> Runner:
    """The runner called `name`; imports its module only when asked for."""
    if name == "local":
        from reprospec.runners.local import LocalRunner

        return LocalRunner(python=python, cache_dir=cache_dir)
    if name == "docker":
        from reprospec.runners.docker import DockerRunner

        return DockerRunner(**options)  # type: ignore[arg-type]
    if name == "venv":  # issue 11; minimal registration until the runner registry lands
        from reprospec.runners.venv import VenvRunner

        return VenvRunner(python=python, cache_dir=cache_dir, **options)  # type: ignore[arg-type]
    from reprospec.errors import UsageError

    raise UsageError(f"unknown runner {name!r}: expected 'local', 'docker' or 'venv'")
