"""The resolved cell the engine hands the harness: `$REPROSPEC_CELL` (cell.json's path, or JSON)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .values import JsonObject, JsonValue, obj, to_int


@dataclass(frozen=True)
class Cell:
    """What the harness reads of cell.json (`{"spec", "cell_id", "matrix", "attempt",
    "workload", "environment"}`): the workload and environment sections (`{}` when absent)."""

    cell_id: JsonValue
    attempt: int
    workload: JsonObject
    environment: JsonObject


def load() -> Cell:
    """The cell named by `$REPROSPEC_CELL`; SystemExit when it is not set."""
    value = os.environ.get("REPROSPEC_CELL")
    if not value:
        raise SystemExit(
            "reprospec harness: REPROSPEC_CELL is not set (run through `reprospec run`)"
        )
    document: JsonValue
    if value.lstrip().startswith("{"):
        document = json.loads(value)
    else:
        with Path(value).open() as handle:
            document = json.load(handle)
    cell = obj(document)
    return Cell(
        cell_id=cell.get("cell_id"),
        attempt=to_int(cell.get("attempt", 1)),
        workload=obj(cell.get("workload")),
        environment=obj(cell.get("environment")),
    )
