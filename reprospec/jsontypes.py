"""The values a spec document holds: JSON data, as `yamlsource` and `json.loads` read it.

One alias for every stage that handles a document before (or instead of) its
typed form: the validated spec, a cell's matrix values, `${{ }}` results,
results.json and slurm.json as read back. Narrow with `isinstance` (a
`dict` is a JSON object, a `list` an array), never with a cast.
"""

from __future__ import annotations

from typing import TypeAlias

JsonScalar: TypeAlias = "str | int | float | bool | None"
JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
# Where a value is in a document: mapping keys and list indexes, from the top.
JsonPath: TypeAlias = "tuple[str | int, ...]"

