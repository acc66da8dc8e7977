"""Whether a result minimized under `environment.perturb` still needs the perturbation.

`minimize --amplify DIR` (or a spec whose failing cell has `environment.perturb`) runs
every candidate perturbed, and the oracle asks only that a candidate fail as the expect
says with the original's signature. What amplify established, that the program fails
rarely or never without the perturbation and often with it, is asked of no candidate:
a user's use-after-free (`malloc(4096)`, `free(p)` on half the steps, read the block back)
was minimized to `malloc()` without a size and no `free` at all, which fails in every
attempt without MALLOC_PERTURB_ (the assert now compares a fresh block's bytes), still
an AssertionError with "corrupted buffer" in its message. The bug was gone and the
answer said "fails as error:AssertionError in 6/6".

The search now rejects a candidate that fails so where the original's base is 0 of n
(search.py's point 6: one attempt without the perturbation per candidate it would
accept), which catches one that fails unperturbed every time, as a user's did; and where
the base is above 0 but low (a user's 2 of 12), one that fails there clearly more often
than the base (up to 8 attempts, stopping once clear either way). This is the safety
net for the rest: once DIR is checked, its minimized.yaml runs without the
perturbation (`environment.perturb={}`), as many attempts as the original's unperturbed
rate was measured on: amplify's base (its folder's amplify.json; where minimize's attempts
run fresh, the base its perturbation was judged against, `base (fresh)` for one that ran
fresh under run.preload), where it measured the cell the program was minimized in, or the
search's own measurement, else the original measured here, unperturbed, as often. Where
the result fails clearly more often than the original did, its lower bound above the
original's upper bound (the rule amplify calls a perturbation's gain clear by), the answer
says so: it may be another bug. A candidate that fails unperturbed only sometimes more
often than the original can pass the search's few attempts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.rates import clearly_more, rate_of
from reprospec.core.results import Rate, RunResult
from reprospec.core.runoptions import RunOptions
from reprospec.core.words import plural
from reprospec.minimize.ratechange import interval_text

# The override that takes the perturbation out of a spec (the whole mapping, whatever
# it held: --amplify's `--set environment.perturb.FIELD` or the spec's own).
UNPERTURBED = "environment.perturb={}"
# Attempts on each side when no base was recorded, as amplify's first attempts per arm;
# a recorded base's own count otherwise, within these bounds.
MIN_ATTEMPTS = 8
MAX_ATTEMPTS = 20


@frozen
class Baseline:
    """The original's rate without the perturbation, as amplify measured it: its `base`
    arm, in `cell` (the cell amplify ran; it applies where minimize ran that one). Or as
    the search measured it before its passes (`measured`; search.py's point 6)."""

    cell: str
    rate: Rate
    source: str  # where it was read: the amplify.json ("" where measured)
    measured: bool = False
    # amplify's arm it is: `base`, or `base (fresh)` where the perturbation kept ran fresh
    # under run.preload and was judged against it (amplify/search.py: two bases).
    arm: str = "base"

    @property
    def phrase(self) -> str:
        """Where the rate comes from, as the answer names it."""
        if self.measured:
            return "measured here before the search"
        return f"amplify's {self.arm} in {self.source}"

    @classmethod
    def from_amplify(cls, path: Path, *, forked: bool = False) -> Baseline | None:
        """The base in amplify.json (an amplify folder or the file) started as minimize starts
        the original without the perturbation: `forked` (under a preload, minimize's or the
        spec's own), the base; else the one its winner was judged against (its arm's
        `compared_with`: `base (fresh)` for one that ran fresh under run.preload, run fresh
        too, where the forked base's rate was read). None where it has none (`--amplify`
        checked the file already: it names a perturbation)."""
        file = path / "amplify.json" if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        label, base = ("base", data.get("base")) if forked else _judged_against(data)
        rate = _rate(base.get("rate")) if isinstance(base, dict) else None
        if rate is None or rate.attempts == 0:
            return None
        return cls(str(data.get("cell") or ""), rate, str(file), arm=label)


def _judged_against(data: Mapping[str, JsonValue]) -> tuple[str, JsonValue]:
    """amplify.json's base arm its winner was judged against, with its label: the winner's
    `compared_with` where the arms say it, else `base`."""
    arms = data.get("arms")
    listed = [a for a in arms if isinstance(a, dict)] if isinstance(arms, list) else []
    by_label = {a.get("perturbation"): a for a in listed}
    winner = by_label.get(data.get("perturbation"))
    against = winner.get("compared_with") if winner is not None else None
    if isinstance(against, str) and against in by_label:
        return against, by_label[against]
    return "base", data.get("base")


@frozen
class Unperturbed:
    """The original and the minimized program's failing cell without the perturbation."""

    perturbation: tuple[str, ...]  # what was taken out (`malloc=perturb`)
    original: Rate  # the original's failures (as its expect says) without it
    original_source: str  # "amplify's base in PATH" or "measured here"
    minimized: Rate
    # The minimized program's failure message without the perturbation (its first
    # matching attempt's); the perturbed ones are Minimized's message_before/after.
    message_unperturbed: str = ""
    run_ids: tuple[str, ...] = ()

    @property
    def clearly_more(self) -> bool:
        """The minimized program fails without the perturbation clearly more often than the
        original: its lower bound above the original's upper bound (amplify's rule)."""
        return clearly_more(self.minimized, self.original)

    def warning(self) -> str:
        """The plain sentence a reader needs ("" where the result still needs it)."""
        if not self.clearly_more:
            return ""
        return (
            f"the minimized program fails without the perturbation too "
            f"({_count(self.minimized)}; the original {self.original.matched} of "
            f"{self.original.attempts}, {self.original_source}): it may be a different bug; "
            f"compare the diff and the failure messages (where it printed any) in minimize.md"
        )

    def line(self) -> str:
        """minimize.md's line: both rates, whatever they say."""
        verdict = (
            "clearly more often than the original: it may be a different bug"
            if self.clearly_more
            else "not clearly more often than the original"
        )
        return (
            f"- **Without the perturbation** ({UNPERTURBED}): the result fails as the expect "
            f"says in {_count(self.minimized)} ({interval_text(self.minimized)}), the original "
            f"in {_count(self.original)} "
            f"({self.original_source}): {verdict}"
        )

    def to_dict(self) -> JsonObject:
        return {
            "perturbation": list(self.perturbation),
            "original": self.original.to_dict(),
            "original_source": self.original_source,
            "minimized": self.minimized.to_dict(),
            "clearly_more": self.clearly_more,
            "message_unperturbed": self.message_unperturbed,
            "run_ids": list(self.run_ids),
        }

    @classmethod
    def from_dict(cls, data: JsonValue) -> Unperturbed | None:
        """A stored check (unperturbed.json), None where it does not read as one."""
        if not isinstance(data, dict):
            return None
        original, minimized = _rate(data.get("original")), _rate(data.get("minimized"))
        if original is None or minimized is None:
            return None
        perturbation, run_ids = data.get("perturbation"), data.get("run_ids")
        return cls(
            perturbation=tuple(str(p) for p in perturbation)
            if isinstance(perturbation, list)
            else (),
            original=original,
            original_source=str(data.get("original_source") or ""),
            minimized=minimized,
            message_unperturbed=str(data.get("message_unperturbed") or ""),
            run_ids=tuple(str(r) for r in run_ids) if isinstance(run_ids, list) else (),
        )


def _rate(data: JsonValue) -> Rate | None:
    """A stored rate's counts, its interval computed again."""
    if not isinstance(data, dict):
        return None
    matched, attempts = data.get("matched"), data.get("attempts")
    if not isinstance(matched, int) or not isinstance(attempts, int) or attempts < 0:
        return None
    return rate_of(matched, attempts)


def attempts_for(base: Rate | None) -> int:
    """How many attempts each side gets: as many as the base was measured on."""
    if base is None:
        return MIN_ATTEMPTS
    return max(MIN_ATTEMPTS, min(MAX_ATTEMPTS, base.attempts))


def tally(run: RunResult) -> tuple[Rate, str]:
    """The failures a run's attempts had as their expect says (amplify's count of its
    base: `matched`), and the first one's message."""
    ran = [a for cell in run.cells for a in cell.attempts if a.ran is not None]
    matched = [a for a in ran if a.matched]
    message = next((a.ran.message or "" for a in matched if a.ran is not None), "")
    return rate_of(len(matched), len(ran)), message


def run_unperturbed(
    side: Side, options: RunOptions, attempts: int, parallel: int, cancel: threading.Event
) -> RunResult:
    """The side's cell without the perturbation, `attempts` times, fresh (under the spec's
    own run.preload only, as DIR's check runs)."""
    from reprospec import api

    spec = api.load_spec(side.spec_path, (*side.overrides, UNPERTURBED), files=False)
    return api.run(
        spec,
        options.with_changes(
            repeat=attempts,
            preload=None,
            stop_on="never",
            jobs=parallel,
            matrix_filters=side.filters,
            purpose="minimize",
        ),
        cancel=cancel,
    )


def _count(rate: Rate) -> str:
    return f"{rate.matched} of {plural(rate.attempts, 'attempt')}"


@frozen
class Side:
    """One program's failing cell as a run names it: the spec, its overrides, its cell."""

    spec_path: Path
    overrides: tuple[str, ...]
    filters: tuple[str, ...]


def stored_unperturbed(
    record: Path, key: Mapping[str, str], fields: Collection[str] | None = None
) -> Unperturbed | None:
    """The check stored in `record` under `key`; None where none is (another answer's,
    another DIR's, or not written: a check stopped before its end). `fields`: those of
    the key compared alone, where the others are not known yet (minimize's check of -o
    before its replay knows DIR's program and -o, not the base: the search's or
    amplify's); the whole key where None."""
    try:
        stored = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    held = stored.get("key") if isinstance(stored, dict) else None
    if not isinstance(held, dict):
        return None
    if fields is None and held != dict(key):
        return None
    if fields is not None and any(held.get(f) != key.get(f) for f in fields):
        return None
    return Unperturbed.from_dict(stored.get("check"))


def check_unperturbed(
    record: Path,
    key: Mapping[str, str],
    perturbation: tuple[str, ...],
    original: Side | Baseline,
    minimized: Side,
    options: RunOptions,
    parallel: int,
    cancel: threading.Event,
) -> Unperturbed | None:
    """The minimized program's failing cell without the perturbation, against the original
    without it (amplify's `Baseline` where it measured this cell, else run here as often);
    None where a run was interrupted. Stored in `record` under `key` (what the answer
    depends on) so that the same command again runs nothing."""
    check = stored_unperturbed(record, key)
    if check is not None:
        return check
    base = original.rate if isinstance(original, Baseline) else None
    attempts = attempts_for(base)
    runs: list[RunResult] = []
    if isinstance(original, Baseline):
        before, source = original.rate, original.phrase
    else:
        runs.append(run_unperturbed(original, options, attempts, parallel, cancel))
        before, _ = tally(runs[-1])
        source = "measured here"
    if not any(r.interrupted for r in runs):
        runs.append(run_unperturbed(minimized, options, attempts, parallel, cancel))
    if any(r.interrupted for r in runs):
        return None
    after, message = tally(runs[-1])
    check = Unperturbed(
        perturbation=perturbation,
        original=before,
        original_source=source,
        minimized=after,
        message_unperturbed=message,
        run_ids=tuple(r.run_id for r in runs),
    )
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps({"key": dict(key), "check": check.to_dict()}) + "\n", encoding="utf-8"
    )
    return check
