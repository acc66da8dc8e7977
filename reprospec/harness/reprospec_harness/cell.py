"""The resolved cell the engine hands the harness: `$REPROSPEC_CELL` (cell.json's path, or JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def load() -> dict[str, Any]:
    """`{"spec", "cell_id", "matrix", "attempt", "workload", "environment"}`."""
    value = os.environ.get("REPROSPEC_CELL")
    if not value:
        raise SystemExit(
            "reprospec harness: REPROSPEC_CELL is not set (run through `reprospec run`)"
        )
    if value.lstrip().startswith("{"):
        cell = json.loads(value)
    else:
        with Path(value).open() as handle:
            cell = json.load(handle)
    cell.setdefault("workload", {})
    cell["environment"] = cell.get("environment") or {}
    cell.setdefault("attempt", 1)
    return cell
