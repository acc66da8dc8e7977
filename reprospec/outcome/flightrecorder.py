"""torch's NCCL flight recorder dumps read back: each rank's last collectives, who is behind.

With `environment.debug.nccl_flight_recorder`, torch keeps the last N collectives of each
rank and, when its watchdog times one out (TORCH_NCCL_DUMP_ON_TIMEOUT=1), writes them to
`TORCH_FR_DUMP_TEMP_FILE` + the rank (`nccl-trace-rank-0`, ... in the attempt folder).
Recorded on an H200 with torch 2.11 (tests/data/gpu/nccl/): the file is a **pickle** of
plain dicts, lists, tuples, strings and numbers (`version` "2.10", `pg_status` with
`last_enqueued_collective` / `last_started_collective` / `last_completed_collective` per
process group, `entries` with `collective_seq_id`, `profiling_name` `nccl:all_reduce`,
`state` scheduled|started|completed, `input_sizes`, `input_dtypes`, `frames`). Torch wrote
it although TORCH_NCCL_DEBUG_INFO_TEMP_FILE was set too: 2.11 reads TORCH_FR_DUMP_TEMP_FILE
and calls the other name deprecated. `_dump_nccl_trace_json` gives the same fields as JSON.

The file is the attempt's to write, so it is read within a bound, and the pickle through
an unpickler that refuses every class and function (the dump needs none): a crafted file
cannot run code in the engine.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.words import noun

MAX_BYTES = 64 * 1024 * 1024
LAST = 3  # collectives shown per rank
_RANK = re.compile(r"(\d+)$")


@frozen
class Collective:
    """One collective a rank enqueued: `all_reduce` #2, its state and sizes."""

    seq: int
    op: str
    state: str
    input_sizes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    group: str = ""
    p2p: bool = False
    timeout_ms: int | None = None
    called_from: str | None = None  # the first frame outside torch: `hang (nccl.py:105)`

    def describe(self) -> str:
        sizes = ", ".join("x".join(str(n) for n in shape) or "scalar" for shape in self.input_sizes)
        dtype = "/".join(dict.fromkeys(self.dtypes))
        text = f"#{self.seq} {self.op} {self.state}"
        if sizes:
            text += f" [{sizes}]" + (f" {dtype}" if dtype else "")
        if self.called_from:
            text += f" from {self.called_from}"
        return text


@frozen
class RankTrace:
    """One rank's dump: its collectives (oldest first) and the default group's counters."""

    rank: int
    collectives: tuple[Collective, ...]
    last_enqueued: int | None = None
    last_started: int | None = None
    last_completed: int | None = None
    version: str | None = None

    @property
    def stuck(self) -> Collective | None:
        """The oldest collective it enqueued and did not complete."""
        return next((c for c in self.collectives if c.state != "completed"), None)

    def describe(self) -> str:
        last = "; ".join(c.describe() for c in self.collectives[-LAST:]) or "no collectives"
        counts = (
            f"enqueued {_n(self.last_enqueued)}, started {_n(self.last_started)}, "
            f"completed {_n(self.last_completed)}"
        )
        return f"rank {self.rank}: {counts}; last: {last}"


def _n(value: int | None) -> str:
    return "none" if value is None or value < 0 else str(value)


class _NoClasses(pickle.Unpickler):
    """Builds only the pickle's own types (dict, list, tuple, str, numbers, None)."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"the dump names {module}.{name}: refused")


def read(path: Path) -> RankTrace | str:
    """One rank's dump (pickle or JSON); a string saying why when it cannot be read."""
    try:
        data = capped.head_tail(path, MAX_BYTES, 0)
    except OSError as exc:
        return f"{path.name}: {exc.strerror or exc}"
    if len(data) >= MAX_BYTES:
        return f"{path.name}: over {MAX_BYTES >> 20} MiB, not read"
    found = _RANK.search(path.name)
    rank = int(found[1]) if found else 0
    try:
        if data.lstrip()[:1] == b"{":
            document: object = json.loads(data.decode("utf-8", "replace"))
        else:
            document = _NoClasses(io.BytesIO(data)).load()
    except (ValueError, pickle.UnpicklingError, EOFError, RecursionError) as exc:
        return f"{path.name}: not a flight recorder dump ({type(exc).__name__}: {exc})"[:300]
    if not isinstance(document, Mapping):
        return f"{path.name}: not a flight recorder dump (no mapping at its top)"
    return parse(document, rank)


def parse(document: Mapping[object, object], rank: int) -> RankTrace:
    """A decoded dump (its dicts and lists) -> the rank's trace."""
    entries = document.get("entries")
    collectives = tuple(
        c for c in (_collective(e) for e in (entries if isinstance(entries, list) else [])) if c
    )
    status = document.get("pg_status")
    counters: Mapping[object, object] = {}
    if isinstance(status, Mapping):
        first = status.get("0", next(iter(status.values()), None))
        counters = first if isinstance(first, Mapping) else {}
    version = document.get("version")
    return RankTrace(
        rank=rank,
        collectives=collectives,
        last_enqueued=_int(counters.get("last_enqueued_collective")),
        last_started=_int(counters.get("last_started_collective")),
        last_completed=_int(counters.get("last_completed_collective")),
        version=version if isinstance(version, str) else None,
    )


def behind(traces: Sequence[RankTrace]) -> str | None:
    """Which rank is behind the others, and on what; None when none can be told.

    The rank that enqueued fewer collectives never reached the one the others wait
    in; with every rank at the same place, the one that completed fewer. A single
    rank is "behind" only on itself: its oldest collective not completed.
    """
    if not traces:
        return None
    if len(traces) == 1:
        stuck = traces[0].stuck
        if stuck is None:
            return None
        return f"rank {traces[0].rank} never completed collective {stuck.describe()}"
    for field, verb in (("last_enqueued", "reached"), ("last_completed", "completed")):
        values = {t.rank: getattr(t, field) for t in traces if getattr(t, field) is not None}
        if len(set(values.values())) > 1:
            low = min(values.values())
            high = max(values.values())
            late = sorted(rank for rank, value in values.items() if value == low)
            ranks = ", ".join(str(r) for r in late)
            return (
                f"{noun(len(late), 'rank')} {ranks} behind: {verb} collective "
                f"{_n(low)} while others {verb} {_n(high)}"
            )
    return None


def _collective(entry: object) -> Collective | None:
    if not isinstance(entry, Mapping):
        return None
    seq = _int(entry.get("collective_seq_id"))
    name = entry.get("profiling_name")
    if seq is None or not isinstance(name, str):
        return None
    sizes = entry.get("input_sizes")
    dtypes = entry.get("input_dtypes")
    group = entry.get("process_group")
    state = entry.get("state")
    return Collective(
        seq=seq,
        op=name.removeprefix("nccl:"),
        state=state if isinstance(state, str) else "unknown",
        input_sizes=tuple(
            tuple(n for n in shape if isinstance(n, int))
            for shape in (sizes if isinstance(sizes, list) else [])
            if isinstance(shape, (list, tuple))
        ),
        dtypes=tuple(d for d in (dtypes if isinstance(dtypes, list) else []) if isinstance(d, str)),
        group=str(group[1]) if isinstance(group, (list, tuple)) and len(group) > 1 else "",
        p2p=entry.get("is_p2p") is True,
        timeout_ms=_int(entry.get("timeout_ms")),
        called_from=_called_from(entry.get("frames")),
    )


def _called_from(frames: object) -> str | None:
    """The first frame outside torch's own files: where the program called the collective."""
    for frame in frames if isinstance(frames, list) else []:
        if not isinstance(frame, Mapping):
            continue
        filename, name, line = frame.get("filename"), frame.get("name"), frame.get("line")
        if isinstance(filename, str) and "/torch/" not in filename and isinstance(name, str):
            return f"{name} ({Path(filename).name}:{line})"
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


__all__ = ["Collective", "RankTrace", "behind", "parse", "read"]
