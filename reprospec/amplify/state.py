"""The amplify folder: what an amplification ran so far, so an interrupted one resumes.

    OUT/amplify/ID/
      state.json       every probe that ran: its arm, what its attempts did, the run
                       that holds them (rewritten after each probe); "cut": the last
                       attempt number of each arm's probes Ctrl-C cut short (not stored)
      amplify.json     the answer and its evidence (written at the end)
      amplify.md       the report
      amplified.yaml   the spec with the winning perturbation set
      .lock            held (flock) while a search of this folder runs
                       (core/trylock.py's `search_held`)

ID is the spec's name and a hash of what a probe's outcome depends on (the spec's
text and program, the --set overrides, the runner, --timeout, --python: isolation.
state.search_id) and of the question (the cell, the perturbations tried), not of the
search's settings (--budget, -j): the same `reprospec amplify` finds the same folder,
replays the stored attempts of each arm in the order they ran (the search is
deterministic, so it asks for exactly them again) and runs only what is new. With a
larger `--budget` it asks for the same probes until the smaller budget ran out and goes
on from there; a probe that asks more attempts of an arm than are stored (the smaller
budget cut its last round short) replays those and runs the rest, and one that asks
fewer (a smaller budget) replays that many, the rest kept for the arm's next probe.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from reprospec.core.atomicfile import write_atomic
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.isolation.candidates import AttemptKind
from reprospec.isolation.state import (
    could_not_run,
    read_probes,
    stored_first_attempt,
    stored_kinds,
)

FORMAT = 1


@frozen
class StoredProbe:
    """One probe as it ran: the arm's label, what each attempt did, the run that holds them."""

    arm: str
    kinds: tuple[AttemptKind, ...]
    others: tuple[str, ...]  # what each `other` attempt did instead (a phrase)
    run_id: str
    infra_reason: str = ""
    interrupted: bool = False
    # The number of its first attempt (the rest follow): an arm's probes are numbered after
    # its earlier ones' (driver.py), so that each draws new values of a cell that reads its
    # attempt number. 1 in a state stored before they were, whose probes all began at 1.
    first_attempt: int = 1

    def to_dict(self) -> JsonObject:
        return {
            "arm": self.arm,
            "first_attempt": self.first_attempt,
            "kinds": list(self.kinds),
            "others": list(self.others),
            "run_id": self.run_id,
            "infra_reason": self.infra_reason,
            "interrupted": self.interrupted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> StoredProbe:
        others = data.get("others")
        return cls(
            arm=str(data.get("arm", "")),
            kinds=stored_kinds(data),
            others=tuple(str(o) for o in (others if isinstance(others, list) else [])),
            run_id=str(data.get("run_id", "")),
            infra_reason=str(data.get("infra_reason", "")),
            interrupted=data.get("interrupted") is True,
            first_attempt=stored_first_attempt(data),
        )


class StateFile:
    """The probes of one amplification, replayed in order on restart."""

    def __init__(self, folder: Path, header: Mapping[str, JsonValue]) -> None:
        self.folder = folder
        self.path = folder / "state.json"
        self.header = dict(header)
        self._probes: list[StoredProbe] = []
        # The last attempt number of each arm's probes that Ctrl-C cut short and that were
        # not stored (`cut`), kept in the file: a resumed run numbers after them.
        self._cut: dict[str, int] = {}
        if self.path.exists():
            stored, self._cut = read_probes(
                self.path, self.header, StoredProbe.from_dict, FORMAT, "amplify", "amplification"
            )
            # An interrupted probe is run again: it holds fewer attempts than asked.
            self._probes = [p for p in stored if not p.interrupted]
        # The reason an earlier run's attempts all could not run ("" where any ran).
        # It learned nothing of the program (the search ended `infra-error`, exit 3):
        # replayed, the same command answered "could not run" again once the machine was
        # fixed (the command put on PATH), and only removing the folder ran it.
        self.could_not_run = could_not_run(self._probes)
        if self.could_not_run:
            self._probes = []
        self._replay: dict[str, deque[StoredProbe]] = {}
        for probe in self._probes:
            self._replay.setdefault(probe.arm, deque()).append(probe)

    @property
    def stored(self) -> int:
        """Probes found from an earlier run of this amplification, not replayed yet."""
        return sum(len(q) for q in self._replay.values())

    def take(self, arm: str, attempts: int) -> list[StoredProbe]:
        """The arm's next stored attempts, in the order they ran, at most `attempts` of them,
        as the probes (or parts of probes) that hold them; fewer, or none, when the stored
        ones run out (the caller runs the rest). A probe cut here keeps its other attempts
        first in line for the arm: a rerun under a smaller budget asks fewer near its end,
        and replaying more would spend past the budget."""
        queue = self._replay.get(arm)
        pieces: list[StoredProbe] = []
        need = attempts
        while queue and need > 0:
            stored = queue.popleft()
            if len(stored.kinds) > need:
                # `others` holds a phrase per `other` attempt: cut where the kinds are.
                split = stored.kinds[:need].count("other")
                queue.appendleft(
                    replace(
                        stored,
                        kinds=stored.kinds[need:],
                        others=stored.others[split:],
                        first_attempt=stored.first_attempt + need,
                    )
                )
                stored = replace(stored, kinds=stored.kinds[:need], others=stored.others[:split])
            pieces.append(stored)
            need -= len(stored.kinds)
        return pieces

    @property
    def cut_drawn(self) -> dict[str, int]:
        """The last attempt number each arm's probes that Ctrl-C cut short drew (`cut`):
        the arm's next probe is numbered after it."""
        return dict(self._cut)

    def add(self, probe: StoredProbe) -> None:
        self._probes.append(probe)
        self._write()

    def cut(self, arm: str, last: int) -> None:
        """A probe of `arm` that Ctrl-C cut short after its run began, numbered up to `last`,
        and not stored (the resumed amplification asks it again, whole): its numbers stay
        drawn, in the file too. Forgotten, the resumed run numbered the arm's probe as the
        cut run had: two runs held the same `cells/CELL/N/`, and a `${{ attempt }}` seed drew
        the values the cut run had drawn (isolation.state.StateFile.cut, minimize's)."""
        self._cut[arm] = max(self._cut.get(arm, 0), last)
        self._write()

    def _write(self) -> None:
        data = {
            "format": FORMAT,
            "header": self.header,
            "probes": [p.to_dict() for p in self._probes],
            **({"cut": dict(sorted(self._cut.items()))} if self._cut else {}),
        }
        write_atomic(self.path, json.dumps(data, indent=1))

    def runs(self) -> list[str]:
        return run_ids(self._probes)


def run_ids(probes: Iterable[StoredProbe]) -> list[str]:
    """The runs of `probes`, each once, in the order they ran."""
    return list(dict.fromkeys(p.run_id for p in probes if p.run_id))
