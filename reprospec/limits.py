"""Resource limits for local attempts: `memory` and `shm_size` (placeholder, see issue 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def wrap_argv(argv: Sequence[str], environment: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Return (argv that applies the limits of `environment`, warnings for limits not applied)."""
    return list(argv), []
