"""A captured environment as flat dotted fields: what the store fingerprints and `compare` diffs.

{"torch": {"version": "2.13.0"}}  ->  {"torch.version": "2.13.0"}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from reprospec.core.jsontypes import JsonValue

# Fields that change from one run to the next on the same machine: differences there are noise.
VOLATILE_ENV_FIELDS = frozenset(
    {"memory.available", "shm.free", "python.executable", "python.prefix", "python.base_prefix"}
)


def flatten_environment(
    value: JsonValue | Mapping[str, JsonValue], prefix: str = ""
) -> dict[str, JsonValue]:
    """Nested mappings as dotted keys: a difference names its exact field (`packages.torch`)."""
    if isinstance(value, Mapping):
        if not value:
            return {prefix: {}}
        out: dict[str, JsonValue] = {}
        for key, item in value.items():
            out.update(flatten_environment(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


class Difference(TypedDict):
    """One field that differs: its dotted key and each side's value (None: missing)."""

    key: str
    a: JsonValue
    b: JsonValue


def environment_diff(a: Mapping[str, JsonValue], b: Mapping[str, JsonValue]) -> list[Difference]:
    """Environment fields that differ, as `{"key", "a", "b"}` (a missing side is None)."""
    flat_a, flat_b = flatten_environment(a), flatten_environment(b)
    keys = [k for k in dict.fromkeys([*flat_a, *flat_b]) if k not in VOLATILE_ENV_FIELDS]
    return [
        Difference(key=key, a=flat_a.get(key), b=flat_b.get(key))
        for key in keys
        if flat_a.get(key) != flat_b.get(key)
    ]
