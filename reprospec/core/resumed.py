"""How a resumed run came to be (`run --resume`): its earlier parts and what this part ran.

Apart from results.py, which names `Resumed` only in RunResult's annotation: every run
imports results.py, and only a resumed run makes these (a frozen dataclass's methods are
compiled as its class is made: issue 30, item 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue

# How an earlier part of a resumed run ended: `interrupted` (Ctrl-C, SIGTERM, a full disk),
# `killed` (its engine died without a word: the store still said running, as `history`
# lists it) or `finished` (a finished run resumed: its attempts that could not run retried,
# or its folder, removed by hand, written again from the store).
Stopped = Literal["interrupted", "killed", "finished"]
STOPPED: tuple[Stopped, ...] = get_args(Stopped)
KILLED: Stopped = "killed"


def _stopped(value: JsonValue) -> Stopped:
    """A stored `stopped`, read back; one this version does not know reads `interrupted`."""
    return next((known for known in STOPPED if known == value), "interrupted")


@frozen
class ResumedPart:
    """One earlier part of a resumed run: the attempts it stored and how it ended, where the
    run was resumed more than once (its interruptions are not lost by the next resume)."""

    attempts: int
    stopped: Stopped
    stopped_at: str = ""

    def to_dict(self) -> JsonObject:
        return {
            "attempts": self.attempts,
            "stopped": self.stopped,
            "stopped_at": self.stopped_at or None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> ResumedPart:
        attempts = data.get("attempts")
        return cls(
            attempts=attempts if isinstance(attempts, int) else 0,
            stopped=_stopped(data.get("stopped")),
            stopped_at=str(data.get("stopped_at") or ""),
        )


@frozen
class Resumed:
    """How a resumed run (`run --resume`) came to be: what its earlier part(s) left and what
    this part ran, so its report does not read as one run that went straight through
    (words.resumed_phrase says it).

    `stopped` is how the last earlier part ended, `stopped_at` when, where the store kept
    it; `before`, the parts before that one, where the run was resumed before (a run
    interrupted, resumed and interrupted again keeps both interruptions). `rewritten`: the
    run's results.json was missing as this part began (its folder removed by hand), so
    the folder was written again from the store.
    """

    carried: int  # attempts the earlier part(s) finished, kept and not run again
    ran: int  # attempts this part ran
    stopped: Stopped
    stopped_at: str = ""
    before: tuple[ResumedPart, ...] = ()
    rewritten: bool = False

    @property
    def parts(self) -> tuple[ResumedPart, ...]:
        """Every earlier part, the first first: `before` and the last one, whose attempts
        are the carried ones the others did not store."""
        last = self.carried - sum(part.attempts for part in self.before)
        return (*self.before, ResumedPart(max(last, 0), self.stopped, self.stopped_at))

    def to_dict(self) -> JsonObject:
        return {
            "carried": self.carried,
            "ran": self.ran,
            "stopped": self.stopped,
            "stopped_at": self.stopped_at or None,
            "parts": [part.to_dict() for part in self.parts],
            "rewritten": self.rewritten,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> Resumed:
        """What `to_dict` wrote (counts that are not whole numbers read as 0; one written
        before `parts` had one earlier part)."""
        carried, ran, parts = data.get("carried"), data.get("ran"), data.get("parts")
        read = (
            [ResumedPart.from_dict(p) for p in parts if isinstance(p, dict)]
            if isinstance(parts, list)
            else []
        )
        return cls(
            carried=carried if isinstance(carried, int) else 0,
            ran=ran if isinstance(ran, int) else 0,
            stopped=_stopped(data.get("stopped")),
            stopped_at=str(data.get("stopped_at") or ""),
            before=tuple(read[:-1]),
            rewritten=data.get("rewritten") is True,
        )


def earlier_parts(
    before: tuple[ResumedPart, ...], stopped: Stopped, stopped_at: str, stored: int
) -> tuple[tuple[ResumedPart, ...], ResumedPart]:
    """The parts before the one a resume continues, and that one (`stopped` at
    `stopped_at`, the attempts of the `stored` ones the others did not store), from the
    parts the run folder names (`before`).

    A finished part written by a resume of it that ran nothing (its end kept) is named
    once, with its attempts, not again with none: that resume stored nothing since
    (`stored` is what the parts hold) and kept its end. Both, not the end alone: a retry
    that stored attempts and finished within the second the run did (infra-error cells
    retry in milliseconds) was taken for such a resume, and its part merged into the
    run's.
    """
    if (
        stopped == "finished"
        and before
        and (before[-1].stopped, before[-1].stopped_at) == (stopped, stopped_at)
        and stored == sum(part.attempts for part in before)
    ):
        before = before[:-1]
    last = ResumedPart(max(stored - sum(part.attempts for part in before), 0), stopped, stopped_at)
    return before, last
