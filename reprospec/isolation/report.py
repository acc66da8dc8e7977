"""The answer of an isolation (`IsolateResult`) and its words: the sentence, the evidence
table, isolate.md and .json.

The result lives here, beside its views, so that driver.py imports this module and never
the other way round."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from reprospec.core.answers import rendered, runs_markdown, search_exit_code
from reprospec.core.atomicfile import save_all
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.words import (
    OUTCOME_VERBS,
    budget_continues,
    percent_interval,
    perturbed_phrase,
    plural,
    replayed_phrase,
)
from reprospec.isolation.candidates import Candidate, IsolationResult
from reprospec.isolation.differences import MISSING, Config, Difference, Setting, render


@frozen
class Side:
    """One end of the isolation: a cell, the fields set on that side only, the flat config."""

    cell: Cell
    sets: Config
    config: Config

    def describe(self) -> str:
        sets = ", ".join(
            f"~{p}" if v is MISSING else f"{p}={json.dumps(v)}" for p, v in self.sets.items()
        )
        return self.cell.id + (f" with {sets}" if sets else "")


@frozen
class IsolateResult:
    """The answer in the spec's terms, with the search's evidence and where it is stored;
    isolate.md, the text or the JSON (`render`), and `isolate`'s exit code (0 isolated)."""

    id: str
    folder: Path
    spec_name: str
    spec_path: str
    expectation: Expectation
    failing: Side
    passing: Side
    differences: tuple[Difference, ...]
    result: IsolationResult
    runs: tuple[str, ...]
    # Probes with attempts answered from an earlier run of this isolation (interrupted,
    # out of budget, or finished), and their attempts, which count in the budget.
    reused: int
    interrupted: bool
    budget: int = 100
    command_line: str = ""
    # environment.perturb of the failing cell: the search ran under it (amplify).
    perturbed: tuple[str, ...] = ()
    replayed: int = 0  # the attempts of the `reused` probes
    # Why isolate.json and isolate.md could not be written ("" where they were): a rerun of
    # a finished isolation in an --out made read-only since knows its answer from the
    # replayed probes, and printed none (exit 2 on the write).
    unsaved: str = ""
    # How its answer names the search's budget: `--budget`, or `IsolateOptions(budget=...)`
    # to the Python API's caller (core/caller.py), set when made, as amplify's is.
    budget_said: str = "--budget"

    @property
    def culprits(self) -> tuple[Difference, ...]:
        return tuple(self.differences[i] for i in self.result.culprits)

    def sentence(self) -> str:
        return sentence(self)

    def to_dict(self) -> JsonObject:
        return to_dict(self)

    def render(self, fmt: str = "md") -> str:
        return rendered(self, fmt, markdown=markdown, text=text, to_dict=to_dict)

    def exit_code(self) -> int:
        return search_exit_code(self.interrupted, self.result.status, ("isolated",))


def sentence(found: IsolateResult) -> str:
    """ "crashes when num_workers=2 AND pin_memory=true; either alone passes (0/12, 0/12)"."""
    result = found.result
    if result.status != "isolated":
        return f"not isolated ({result.status}): {result.message}{_undecided(found)}"
    verb = OUTCOME_VERBS.get(found.expectation.outcome, "fails")
    names = [d.describe() for d in found.culprits]
    # one_smaller[i] leaves out culprit i; "X alone" is the set that leaves out the other.
    figures = [_figure(e) for e in result.one_smaller]
    # "Passes" only where the one-smaller sets' attempts passed: a clean attempt may also be
    # another failure, and a user's `prefetch=4 alone`, a ValueError in each of its 17
    # attempts, read "either alone passes (0/17, 0/17)". Else the clause says they did not
    # fail as expected, each figure with its other failures, the figures apart by `;`: not
    # "it does not" (fail, error, crash), which an attempt that failed otherwise may well do
    # ("errors when fused=1; with fused=0, it does not (0/5, 5 failing otherwise)").
    otherwise = any(e.rests_on().other for e in result.one_smaller)
    joined = "; ".join if otherwise else ", ".join
    if len(names) == 1:
        # The passing side named, not "without it": of an unset variable that read as
        # "crashes when LOG_LEVEL unset; without it, it passes" where it passes set to debug.
        passing = found.culprits[0].describe_base()
        clause = "it does not fail as expected" if otherwise else "it passes"
        return f"{verb} when {names[0]}; with {passing}, {clause} ({figures[0]})"
    if len(names) == 2:
        clause = "neither alone fails as expected" if otherwise else "either alone passes"
        return (
            f"{verb} when {names[0]} AND {names[1]}; {clause} ({joined((figures[1], figures[0]))})"
        )
    clause = "it does not fail as expected" if otherwise else "it passes"
    return f"{verb} when {' AND '.join(names)}; leaving out any one, {clause} ({joined(figures)})"


def _undecided(found: IsolateResult) -> str:
    """What an unfinished isolation has: its best guess, the smallest set seen failing."""
    result = found.result
    if result.status not in ("budget", "interrupted"):
        return ""
    out = ""
    if result.guess:
        names = " AND ".join(found.differences[i].describe() for i in result.guess)
        out += f"; best guess: {names} ({result.guess_probability:.0%})"
    if result.culprits:
        out += f"; the smallest set seen failing: {describe_set(found, result.culprits)}"
    return out


def _confidence(result: IsolationResult) -> str:
    """`confidence 0.996`, or for a search without an answer what its best guess holds:
    "confidence 0.000" beside "best guess (83%)" read as a contradiction."""
    if result.status in ("budget", "interrupted") and not result.attempts:
        return "no attempt ended before the stop: no evidence yet"
    if result.status in ("budget", "interrupted") and result.guess:
        left = f", but {result.pending}" if result.pending else ""
        return f"no answer yet: confidence {result.guess_probability:.3f} in the best guess{left}"
    return f"confidence {result.confidence:.3f}"


def describe_set(found: IsolateResult, candidate: Sequence[int]) -> str:
    """A tested set in the spec's terms: what it applies, or what it leaves out."""
    return set_in_words(found.differences, candidate)


def set_in_words(differences: Sequence[Difference], candidate: Iterable[int]) -> str:
    """`describe_set` from the differences alone (the search names a set that could not
    run by it: `{2, 3}` named nothing the user wrote)."""
    count = len(differences)
    chosen = set(candidate)
    if count == 1:  # "(all 1 differences)"
        return (
            "failing cell (the 1 difference)"
            if chosen
            else "passing cell (without the 1 difference)"
        )
    if not chosen:
        return f"passing cell (none of the {count} differences)"
    if len(chosen) == count:
        return f"failing cell (all {count} differences)"
    if len(chosen) <= count / 2:
        return ", ".join(differences[i].describe() for i in sorted(chosen))
    left_out = [differences[i].name for i in range(count) if i not in chosen]
    return "all but " + ", ".join(left_out)


def text(found: IsolateResult) -> str:
    """What `reprospec isolate` prints: the sentence, the evidence table, the figures."""
    result = found.result
    lines = [perturbed_phrase(found.perturbed)] if found.perturbed else []
    lines += [sentence(found), ""]
    rows = [("set", "attempts", "failed", "verdict")]
    key = _key_evidence(found)
    for label, evidence in key:
        attempts, matched = _counts(evidence)
        rows.append((label, str(attempts), str(matched), _verdict(evidence)))
    # The sets the search went through on its way: one row for all of them, so that the
    # table's attempts add up to the total below it (each is in isolate.md and .json, where
    # they were saved: an unsaved answer's isolate.md is not this one's).
    shown = {evidence.applied for _, evidence in key}
    others = [e for e in result.tested if e.applied not in shown and e.tally.attempts]
    if others:
        where = "" if found.unsaved else " (each in isolate.md)"
        rows.append(
            (
                f"{plural(len(others), 'other set')} on the way{where}",
                str(sum(e.tally.attempts for e in others)),
                str(sum(e.tally.matched for e in others)),
                "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        lines.append(
            f"  {row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}"
        )
    rate = result.rate
    # The rate is pooled over every set holding the culprits (the failing cell's attempts
    # among them): beside it, the minimal set's own, which may fail far more rarely (a
    # difference that is not needed can still make the failure frequent).
    alone = result.minimal.tally if result.minimal is not None else None
    own = (
        f", the culprits alone {alone.matched}/{alone.ran}"
        if alone is not None and alone.ran and alone.ran != rate.attempts
        else ""
    )
    lines.append("")
    lines.append(
        f"{plural(result.attempts, 'attempt')} of a budget of {found.budget}{_replayed(found)}; "
        f"rate {rate.matched}/{rate.attempts} ({_percent(rate.value)}) on the sets holding "
        f"the culprits{own}; "
        f"{_confidence(result)} (error {result.error:g}, assumed minimum rate "
        f"{result.min_rate:g})"
    )
    lines += [f"warning: {w}" for w in result.warnings]
    if result.status == "budget":
        # The search is stored: a larger budget goes on from here (state.py).
        lines.append(budget_continues("isolation", result.attempts, said=found.budget_said))
    # The report's path is part of the answer as printed, as bisect's is: the API's
    # render(found, "text") lacked the line the CLI added after it. An unsaved answer has
    # no file of its own (the isolate.md there is another run's).
    if not found.unsaved:
        lines.append(f"report: {found.folder / 'isolate.md'}")
    return "\n".join(lines)


def _replayed(found: IsolateResult) -> str:
    """` (12 of them replayed from an earlier run: 5 probes)`: what this run did not run."""
    return replayed_phrase(found.replayed, found.reused)


def to_dict(found: IsolateResult) -> JsonObject:
    """isolate.json, and what `--format json` prints."""
    result = found.result
    return {
        "isolate": found.id,
        "status": result.status,
        "sentence": sentence(found),
        "perturbed": list(found.perturbed),
        "culprits": [
            {"path": d.path, "value": d.to_dict()["value"], **_unset(d.value)}
            for d in found.culprits
        ],
        "attempts": result.attempts,
        "budget": found.budget,
        "budget_spent": result.budget_spent,
        "rate": result.rate.to_dict(),
        "confidence": result.confidence,
        "error": result.error,
        "min_rate": result.min_rate,
        "rate_used": result.rate_used,
        "rule": result.rule,
        "best_guess": {
            "culprits": [
                {"path": d.path, "value": d.to_dict()["value"]}
                for d in (found.differences[i] for i in result.guess)
            ],
            "probability": result.guess_probability,
            "pending": result.pending,
        },
        "warnings": list(result.warnings),
        "message": result.message,
        "spec": {"name": found.spec_name, "path": found.spec_path},
        "expect": {k: v for k, v in found.expectation.to_dict().items() if k != "rate"},
        "failing": {"cell": found.failing.cell.id, "sets": _plain(found.failing.sets)},
        "passing": {"cell": found.passing.cell.id, "sets": _plain(found.passing.sets)},
        "differences": [d.to_dict() for d in found.differences],
        "evidence": {
            "minimal": _with_names(found, result.minimal),
            "one_smaller": [_with_names(found, c) for c in result.one_smaller],
            "base": _with_names(found, result.base),
            "failing": _with_names(found, result.failing),
            "tested": [_with_names(found, c) for c in result.tested],
        },
        "runs": list(found.runs),
        "reused": found.reused,
        "replayed": found.replayed,
        "interrupted": found.interrupted,
        **({"unsaved": found.unsaved} if found.unsaved else {}),
    }


def markdown(found: IsolateResult) -> str:
    """isolate.md: the report section."""
    result = found.result
    out = ["## Isolation", "", f"**{sentence(found)}**", ""]
    if found.perturbed:
        out += [f"**{perturbed_phrase(found.perturbed)}.**", ""]
    out.append(
        f"Between the failing cell `{found.failing.describe()}` and the passing cell "
        f"`{found.passing.describe()}` ({plural(len(found.differences), 'difference')}), "
        f'"failing" meaning: {_expected(found)}.'
    )
    out += ["", "| set | attempts | failed as expected | verdict |", "|---|---|---|---|"]
    for label, evidence in _key_evidence(found):
        attempts, matched = _counts(evidence)
        out.append(f"| {label} | {attempts} | {matched} | {_verdict(evidence)} |")
    rate = result.rate
    out += [
        "",
        f"- status: {result.status}" + (f" ({result.message})" if result.message else ""),
        f"- attempts: {result.attempts} (budget {found.budget}){_replayed(found)}",
        f"- reproduction rate: {rate.matched}/{rate.attempts} ({_percent(rate.value)}, "
        f"95% CI {percent_interval(rate.low, rate.high)})",
        f"- {_confidence(result)} (the answer's posterior probability; stated "
        f"error {result.error:g})",
        f"- rule: {result.rule}",
    ]
    out += [f"- warning: {w}" for w in result.warnings]
    if found.command_line:
        out += ["", "Run again (resumes from the stored results):", "", f"    {found.command_line}"]
    out += ["", "### The differences", ""]
    out += [f"- `{d.path}`: {_shown(d.base)} -> {_shown(d.value)}" for d in found.differences]
    out += ["", "### Every tested set", "", "| set | attempts | failed | other failure | infra |"]
    out.append("|---|---|---|---|---|")
    for evidence in result.tested:
        t = evidence.tally
        out.append(
            f"| {describe_set(found, evidence.applied)} | {t.attempts} | {t.matched} | "
            f"{t.other} | {t.infra} |"
        )
    if found.runs:
        # A search of 100 attempts makes 100 or so probe runs: inline, their ids were one
        # line of 4,000 characters at the report's end (folded as amplify.md's are).
        out += ["", "Runs:", "", *runs_markdown(found.runs)]
    return "\n".join(out) + "\n"


def write(found: IsolateResult) -> IsolateResult:
    """isolate.json and isolate.md into the isolate folder, each replaced atomically; the
    answer with `unsaved` set where they could not be (a read-only --out, a full disk): the
    answer stands, printed with a warning, not lost to the write's exit 2. Each file is tried
    on its own, and the warning names those not written: the others are this run's."""
    unsaved = save_all(
        found.folder,
        (
            ("isolate.json", lambda: json.dumps(to_dict(found), indent=2) + "\n"),
            ("isolate.md", lambda: markdown(found)),
        ),
    )
    return replace(found, unsaved=unsaved) if unsaved else found


def _key_evidence(found: IsolateResult) -> list[tuple[str, Candidate]]:
    result = found.result
    rows: list[tuple[str, Candidate]] = []
    if result.minimal is not None:
        rows.append((describe_set(found, result.minimal.applied) + " (culprits)", result.minimal))
    # In the culprits' order: "a alone" is the set that leaves out the other one.
    for evidence in reversed(result.one_smaller) if len(result.one_smaller) == 2 else ():
        rows.append((describe_set(found, evidence.applied) + " alone", evidence))
    for evidence in result.one_smaller if len(result.one_smaller) != 2 else ():
        if evidence.applied:
            rows.append((describe_set(found, evidence.applied), evidence))
    if result.base is not None:
        rows.append((describe_set(found, ()), result.base))
    minimal = result.minimal.applied if result.minimal is not None else None
    if result.failing is not None and result.failing.applied != minimal:
        # (when every difference is a culprit, the failing cell is the culprits' row)
        rows.append((describe_set(found, result.failing.applied), result.failing))
    return rows


def _verdict(evidence: Candidate) -> str:
    """`fails`, `undecided`, or `passes` with the clean attempts it rests on: those of the
    tested sets that hold it and never failed as expected (its own, and larger sets'), which
    a set that never ran itself rests on alone. "(0/2 on the sets holding it)" read as if the
    failing cell, which holds every set and failed 10/10, were not among them, and the
    passing cell "passes" with 0 attempts of its own said nothing of why."""
    if evidence.reproduces:
        return "fails"
    if evidence.reproduces is False:
        clean = evidence.clean_evidence
        # A clean attempt is a pass or another failure: a set whose own attempts all
        # failed otherwise does not pass.
        # One parenthetical, and "never failed as expected": "fails otherwise (...
        # never failed)" contradicted itself, and two parentheticals followed each other.
        # A set never run itself rests on the clean attempts of the sets that hold it,
        # which may have failed otherwise as well.
        tally = evidence.rests_on()
        word = (
            "passes"
            if not tally.other
            else "fails otherwise"
            if not tally.passed
            else "passes or fails otherwise"
        )
        run = bool(evidence.tally.attempts)
        said = [tally.did()] if run and tally.other and tally.passed else []
        if evidence.role in ("one-smaller", "base") and clean:
            itself = "" if run else "not run itself: "
            did = "" if run or not tally.other else f": {tally.did()}"
            said.append(
                f"{itself}{plural(clean, 'clean attempt')} "
                f"on the sets that hold it and never failed as expected{did}"
            )
        return word + (f" ({'; '.join(said)})" if said else "")
    return "undecided"


def _counts(evidence: Candidate) -> tuple[int, int]:
    """A set's own attempts and those that failed as expected: the table's two columns and
    the headline's figure, one source (the headline's `either alone passes
    (0/20, 0/20)` counted the clean attempts of the sets holding it, beside the table's
    `fused=1 alone | 19 | 0`)."""
    return evidence.tally.attempts, evidence.tally.matched


def _figure(evidence: Candidate) -> str:
    """The headline's `failed/attempts` of a set, as the table's row says them; where some
    failed otherwise, with what its attempts did, in the tally's words ("0/20: 18 passed, 2
    failed otherwise", as isolate's refusal says what its clean attempts did), over the
    same attempts as the row: its infra errors too, which it then names ("0/21: 18 passed,
    2 failed otherwise, 1 infra error"; the tally's `figure` counts only those that ran,
    and a set with one read 0/20 beside its row's 21); a set never run itself rests on the
    clean attempts of the sets that hold it, and says so."""
    attempts, matched = _counts(evidence)
    if evidence.tally.other:
        infra = evidence.tally.infra
        return f"{matched}/{attempts}: {evidence.tally.did()}" + (
            f", {plural(infra, 'infra error')}" if infra else ""
        )
    if attempts:
        return f"{matched}/{attempts}"
    held = evidence.rests_on()
    did = f": {held.did()}" if held.other else ""
    return f"0/{evidence.clean_evidence} on the sets that hold it{did}"


def _expected(found: IsolateResult) -> str:
    from reprospec.core.words import expectation_phrase

    return expectation_phrase(found.expectation, rate=False)


def _with_names(found: IsolateResult, candidate: Candidate | None) -> JsonValue:
    """A candidate's evidence with the set it applies in the spec's terms."""
    if candidate is None:
        return None
    return {
        "set": describe_set(found, candidate.applied),
        "differences": [found.differences[i].path for i in candidate.applied],
        **candidate.to_dict(),
    }


def _percent(value: float) -> str:
    return f"{value:.0%}"


def _shown(value: Setting) -> str:
    return "(unset)" if value is MISSING else f"`{render(value)}`"


def _unset(value: Setting) -> JsonObject:
    return {"unset": True} if value is MISSING else {}


def _plain(sets: Config) -> JsonObject:
    return {k: (None if v is MISSING else v) for k, v in sets.items()}
