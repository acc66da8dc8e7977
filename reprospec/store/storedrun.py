"""What the store keeps of a run's start, read back (`Store.run_info`): by `run --resume`,
`bundle` and the merge of shard runs.

Its own module, imported where a run is read back: a run that writes one never builds the
class (a frozen dataclass compiles six methods as it is made; issue 30, item 4).
"""

from __future__ import annotations

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject


@frozen
class StoredRun:
    """A run as `begin_run` recorded it: enough to resume it or bundle it."""

    run_id: str
    spec_name: str
    spec_path: str
    spec_text: str
    runner: str
    status: str
    options: JsonObject
    environment: JsonObject
    env_fingerprint: str
    started: str = ""  # when the run first began (a resume keeps it)
    finished: str = ""  # when it last ended ("" while it runs or was killed)
