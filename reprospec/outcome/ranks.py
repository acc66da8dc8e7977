"""Where each rank of a distributed workload was, from the attempt's events (engine side).

The harness (reprospec_harness/distributed.py) tags every event of a rank with
`"rank": N`, and its supervisor writes `ranks_stuck` (no rank moved for a while: each
rank's phase, step and stage, and the ranks out of step), `rank_exit` (the first rank
that died, and how) and `rank_error` (a rank's exception). `read` turns them into a
`RankReport`; `describe` into the sentence a report shows:

    rank 1 is out of step: rank 0 waits at train step 3 (backward), rank 1 at train
    step 4 (step agreement); rank 1 left out the gradient all-reduce of train step 3
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.words import agree

_MAX_LINE = 256 * 1024
# The events file is the child's: what is kept of it stays bounded whatever it holds.
_HEAD_BYTES = 4 * 1024 * 1024
_TAIL_BYTES = 16 * 1024 * 1024
MAX_RANKS = 1024
MAX_FAULTS = 64
# What a stage means for a rank that waits in it.
_STAGE_WORDS = {
    "sync": "step agreement",
    "backward": "backward: gradient all-reduce",
    "start": "step start",
    "phase": "phase start",
    "finish": "final barrier",
}


@frozen
class RankPosition:
    """Where one rank was: its last move (or as the supervisor saw it when all were stuck)."""

    rank: int
    phase: str | None
    step: int | None
    stage: str | None = None
    pid: int | None = None

    def describe(self) -> str:
        where = self.phase or "?"
        if self.step is not None:
            where += f" step {self.step}"
        if self.stage:
            where += f" ({_STAGE_WORDS.get(self.stage, self.stage)})"
        return where


@frozen
class RankFault:
    """A fault a rank fired (the fault event)."""

    rank: int
    kind: str
    phase: str | None
    step: int | None


@frozen
class RankExit:
    """The first rank that died: its signal or exit code, and where it was."""

    rank: int
    signal: str | None
    exit_code: int | None
    position: RankPosition
    exception: str | None = None
    # Ranks that had exited 0 before the job's final barrier: they left their peers, whose
    # errors about a lost peer are then the failure.
    left: tuple[RankPosition, ...] = ()


@frozen
class RankReport:
    """A distributed attempt's ranks: sizes, positions, who is out of step, who died first."""

    world_size: int
    backend: str
    positions: tuple[RankPosition, ...]
    stuck: bool  # the last progress event is the supervisor's ranks_stuck
    diverged: tuple[int, ...]
    exited: RankExit | None = None
    faults: tuple[RankFault, ...] = ()


def _events(path: Path) -> Iterator[JsonObject]:
    try:
        data = capped.head_tail(path, _HEAD_BYTES, _TAIL_BYTES)
    except OSError:
        return
    for raw in capped.lines(io.BytesIO(data), _MAX_LINE):
        try:
            event = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _position(event: Mapping[str, JsonValue], rank: int) -> RankPosition:
    return RankPosition(
        rank=rank,
        phase=_str(event.get("phase")),
        step=_int(event.get("step")),
        stage=_str(event.get("stage")),
        pid=_int(event.get("pid")),
    )


def read(events_path: Path) -> RankReport | None:
    """The ranks of a distributed attempt, from its events file; None when not distributed."""
    return from_events(_events(events_path))


def from_events(events: Iterable[Mapping[str, JsonValue]]) -> RankReport | None:
    """The ranks of a distributed attempt, from its events; None when not distributed."""
    world = 0
    backend = ""
    last: dict[int, RankPosition] = {}
    stuck: Mapping[str, JsonValue] | None = None
    exited: RankExit | None = None
    errors: dict[int, str] = {}
    faults: list[RankFault] = []
    known: set[int] = set()
    for event in events:
        name = event.get("event")
        rank = _int(event.get("rank"))
        if rank is not None and rank not in known:
            if len(known) >= MAX_RANKS:
                continue  # more ranks than a machine runs: what they say is not kept
            known.add(rank)
        if name == "distributed":
            world = _int(event.get("world_size")) or 0
            backend = _str(event.get("backend")) or ""
            continue
        if name == "ranks_stuck":
            stuck = event
            continue
        if name == "rank_exit" and rank is not None and exited is None:
            listed = event.get("left")
            exited = RankExit(
                rank,
                _str(event.get("signal")),
                _int(event.get("exit_code")),
                _position(event, rank),
                left=tuple(
                    _position(p, other)
                    for p in (listed[:MAX_RANKS] if isinstance(listed, list) else ())
                    if isinstance(p, dict) and (other := _int(p.get("rank"))) is not None
                ),
            )
            stuck = None
            continue
        if name == "rank_error" and rank is not None:
            errors.setdefault(rank, _str(event.get("exception")) or "")
        if name == "fault" and rank is not None and len(faults) < MAX_FAULTS:
            faults.append(
                RankFault(
                    rank,
                    _str(event.get("kind")) or "",
                    _str(event.get("phase")),
                    _int(event.get("step")),
                )
            )
        if rank is not None and ("phase" in event or "step" in event):
            previous = last.get(rank)
            position = _position(event, rank)
            if previous is not None and position.phase == previous.phase and position.step is None:
                position = RankPosition(rank, position.phase, previous.step, position.stage)
            last[rank] = position
            stuck = None  # a rank moved after the supervisor said they were stuck
    if not world:
        return None
    if exited is not None and exited.rank in errors:
        exited = RankExit(
            exited.rank,
            exited.signal,
            exited.exit_code,
            exited.position,
            errors[exited.rank],
            exited.left,
        )
    diverged: tuple[int, ...] = ()
    positions = tuple(last[r] for r in sorted(last))
    if stuck is not None:
        listed, out_of_step = stuck.get("ranks"), stuck.get("diverged")
        seen = [p for p in listed if isinstance(p, dict)] if isinstance(listed, list) else []
        positions = tuple(
            _position(p, rank) for p in seen if (rank := _int(p.get("rank"))) is not None
        )
        diverged = tuple(
            n
            for r in (out_of_step if isinstance(out_of_step, list) else ())
            if (n := _int(r)) is not None
        )
    return RankReport(
        world_size=world,
        backend=backend,
        positions=positions,
        stuck=stuck is not None,
        diverged=diverged,
        exited=exited,
        faults=tuple(faults),
    )


def rank_of(report: RankReport, pid: int | None) -> int | None:
    """The rank whose process `pid` is (its events' pid); None when none is."""
    if pid is None:
        return None
    positions = (*report.positions, *(report.exited.left if report.exited else ()))
    return next((p.rank for p in positions if p.pid == pid), None)


def named_child(detail: str, pid: int | None, report: RankReport) -> str:
    """`child pid 569 was in ...` as `rank 0 (child pid 569) was in ...`: the supervisor's
    children are its ranks, and the sentence after it names them by rank only. A crash's
    child, its command in parentheses after the pid, is `rank 0's process, child pid 4242
    (./train.py) died of ...`: not a second pair of parentheses beside the first."""
    rank = rank_of(report, pid)
    if rank is None:
        return detail
    said = f"child pid {pid} "
    at = detail.find(said)
    if at < 0:
        return detail
    named = (
        f"rank {rank}'s process, {said}"
        if detail.startswith("(", at + len(said))
        else f"rank {rank} (child pid {pid}) "
    )
    return detail[:at] + named + detail[at + len(said) :]


def describe(report: RankReport) -> str:
    """One sentence for the report: who is out of step or died first, and where every rank is."""
    parts: list[str] = []
    if report.exited is not None:
        died = report.exited
        how = (
            f"died of {died.signal}"
            if died.signal
            else f"raised {died.exception}"
            if died.exception
            else f"exited with code {died.exit_code}"
        )
        parts.append(f"rank {died.rank} {how} first, at {died.position.describe()}")
        parts.extend(
            f"rank {p.rank} had exited with code 0 before the job ended, at {p.describe()}"
            for p in died.left
        )
    elif report.stuck:
        where = ", ".join(f"rank {p.rank} at {p.describe()}" for p in report.positions)
        if report.diverged:
            who = ", ".join(str(r) for r in report.diverged)
            parts.append(
                f"rank {who} {agree(len(report.diverged), 'is', 'are')} out of step: {where}"
            )
        else:
            parts.append(f"every rank waits: {where}")
    for fault in report.faults:
        if fault.kind == "skip_allreduce":
            step = f" step {fault.step}" if fault.step is not None else ""
            parts.append(
                f"rank {fault.rank} left out the gradient all-reduce of {fault.phase}{step}"
            )
    return "; ".join(parts)
