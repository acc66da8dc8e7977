"""A bisect's request, its answer, and their files in `<out>/bisect/<id>/`: state.json (what
ran, keyed by version, for a resume), and the answer as bisect.json and bisect.md.

The request and the report live here, beside the files they are written to, so that
driver.py imports this module and never the other way round."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import typing
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.bisect import search
from reprospec.bisect.search import BisectResult, Trial
from reprospec.core.answers import rendered
from reprospec.core.atomicfile import save_each, write_atomic
from reprospec.core.caller import said
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue, array, as_text
from reprospec.core.runoptions import PathArg, RunOptions, Words, WordSet, check_options
from reprospec.core.words import budget_continues, perturbed_phrase, plural
from reprospec.environment import packages
from reprospec.errors import EXIT_INFRA, EXIT_NOT_REPRODUCED, EXIT_OK, UsageError
from reprospec.isolation.state import spec_identity, variables_read
from reprospec.plan.failingcell import Amplified

if TYPE_CHECKING:
    from reprospec.core.inputs import Spec

STATE_FORMAT = 1
# state.json's mark of a bisect stored under the present stop (f019f95c's third reading of the
# rate, AssumedRate at 1 - 4/5 of the error, after a51dea31's second): only a state without it,
# stored under an earlier stop (no mark, or a51dea31's "second-reading"), has its answer printed
# on a read-only --out (`stored_answer`); one with it asks no attempt its answer did not run.
# A stricter stop takes a new mark.
STOP = "assumed-rate"
# Runners that install what a candidate asks for; the local runner runs one interpreter.
INSTALLING_RUNNERS = ("venv", "docker")
# The `spec` not given: its own object, told apart by identity from any path passed.
_NO_SPEC = Path()


def _bare_name(package: str) -> None:
    """Refuse a `--package` that is more than a distribution's name: `requests[socks]` and
    `requests==2.31.0` were said to be "not on the configured package index" (pip was asked
    for versions of that text), and would have been added to each candidate beside the
    spec's own entry. The spec's entry keeps its extras and marker (candidate_packages)."""
    from packaging.requirements import InvalidRequirement, Requirement

    if re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", package):
        return
    try:
        name = Requirement(package).name
    except InvalidRequirement:
        name = ""
    hint = f" ({name})" if name else ""
    raise UsageError(
        f"{said('--package', 'package')} takes a distribution's name alone{hint}, got "
        f"{package!r}: the versions are the search's, and the extras and marker of the "
        "spec's entry are kept"
    )


def _version(text: str, label: str) -> None:
    """Refuse an end that is no PEP 440 version, naming the option: `--bad banana` said
    "not a version: Invalid version: 'banana'" (which of the two?), and only after the
    index had been asked for every release of the package."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        raise UsageError(
            f"{label} takes a version as the index lists it (1.2.0, 26.0rc1), got {text!r}"
        ) from None


@frozen
class BisectRequest:
    """What `reprospec bisect` was asked."""

    # Each with a default, refused below where it is missing: the docs' `package` (None
    # with `by_date`) was a required argument, and `BisectRequest(spec=..., by_date=True,
    # good=..., bad=...)` raised a TypeError where every other options class says a
    # UsageError. The order is kept: `BisectRequest(SPEC, PKG, GOOD, BAD)` reads so.
    spec: Path = _NO_SPEC
    package: str | None = None  # None: --by-date over the whole environment
    good: str = ""
    bad: str = ""
    matrix_filters: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    runner: str = "venv"
    jobs: int | None = None
    budget: int = search.DEFAULT_BUDGET
    error: float = search.DEFAULT_ERROR
    min_rate: float | None = None  # None: the spec's expect.rate bound, else the default
    pre: bool = False
    by_date: bool = False
    python: str | None = None
    find_links: Path | None = None
    timeout_s: float | None = None
    out: Path = Path(".reprospec")
    fresh: bool = False
    command_line: str = field(default="", compare=False)
    # `--amplify PATH` (an amplify folder or its amplify.json): the cell it measured is the
    # cell bisected (plan/failingcell.py); its perturbation comes in `overrides`.
    amplified: Path | None = None

    if TYPE_CHECKING:  # a str for a Path, an iterable for a tuple, None for the default error

        def __init__(
            self,
            spec: PathArg = ...,
            package: str | None = ...,
            good: str = ...,
            bad: str = ...,
            matrix_filters: WordSet = ...,
            overrides: Words = ...,
            runner: str = ...,
            jobs: int | None = ...,
            budget: int = ...,
            error: float | None = ...,
            min_rate: float | None = ...,
            pre: bool = ...,
            by_date: bool = ...,
            python: PathArg | None = ...,
            find_links: PathArg | None = ...,
            timeout_s: float | None = ...,
            out: PathArg = ...,
            fresh: bool = ...,
            command_line: str = ...,
            amplified: PathArg | None = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        if self.spec is _NO_SPEC:
            raise UsageError("spec takes a spec file's path, got none")
        check_options(
            self,
            sequences=("overrides",),
            sets=("matrix_filters",),
            counts=("budget",),
            fractions=("error", "min_rate"),
            texts=("package",),
            paths=("spec", "amplified"),
        )
        if self.error is None:
            # The CLI's `--error` unset, and isolate's and minimize's `error=None`: the
            # default. Kept as None, the search failed on "'<' not supported ... NoneType".
            object.__setattr__(self, "error", search.DEFAULT_ERROR)
        for name in ("good", "bad"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise UsageError(f"{name} takes a version (a day with by_date), got {value!r}")
        # Checked when made, as the other fields are, where before only bisect_spec read them:
        # `pre="no"` was true, `runner="local"` refused only once called.
        for name in ("pre", "by_date", "fresh"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise UsageError(f"{name} takes True or False, got {value!r}")
        if self.runner not in INSTALLING_RUNNERS:
            raise UsageError(
                f"runner takes 'venv' or 'docker' (bisect installs each candidate), "
                f"got {self.runner!r}"
            )
        if self.by_date and self.runner != "venv":
            raise UsageError(
                f"by_date needs runner='venv' (uv's --exclude-newer), got {self.runner!r}"
            )
        if self.package is None and not self.by_date:
            raise UsageError("package takes a package's name (None only with by_date=True)")
        if self.package is not None:
            _bare_name(self.package)
        if not self.by_date:
            for name in ("good", "bad"):
                _version(getattr(self, name), said(f"--{name}", name))
        # Each candidate is one run: -j, the timeout and the paths are checked as a run's.
        each = RunOptions(
            jobs=self.jobs,
            timeout_s=self.timeout_s,
            python=self.python,
            find_links=self.find_links,
            out=self.out,
        )
        for name in ("jobs", "timeout_s", "python", "find_links", "out"):
            object.__setattr__(self, name, getattr(each, name))

    def key(self, spec: Spec, program: str = "") -> str:
        """The bisect's id: the same question about the same spec and program (its files'
        digest, export.tree.program_digest) resumes the same state. Keyed on what decides a
        candidate's outcome (the per-attempt timeout too: a hang at 5s may pass at 60s, and
        a state kept across them judged versions by attempts the new timeout never ran), not
        on the search's settings (--budget, --error, --min-rate, -j): a larger --budget
        continues the bisect, as isolate's, amplify's and minimize's do.

        The spec is its file (isolation.state.spec_identity: one however its path is
        spelled, from any folder) and its text. Keyed on the text alone, another file of
        the same text, whose program has no files to digest (a `python -c` that reads the
        workdir), was answered with the first file's first bad version, which never ran
        there."""
        parts: list[JsonValue] = [
            *spec_identity(spec),
            spec.source_text,
            program,
            self.package,
            self.good,
            self.bad,
            list(self.matrix_filters),
            list(self.overrides),
            self.runner,
            self.python,
            self.pre,
            self.by_date,
            str(self.find_links or ""),
            self.timeout_s,
        ]
        variables = variables_read(spec, Path(self.out))
        if variables:  # a spec that reads none keeps the key it had
            parts.append(variables)
        amplified = Amplified.read(self.amplified) if self.amplified else None
        if amplified is not None:
            # The cell bisected is amplify's, which -m and the spec do not decide: two
            # amplifications of two cells under one perturbation are two questions.
            parts.append({"amplified_cell": amplified.cell})
        digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:10]
        what = self.package or "environment"
        return f"{packages.normalize(what)}-{self.good}-{self.bad}-{digest}".replace("/", "_")


@frozen
class BisectReport:
    """A finished (or refused, or undecided) bisect with where it is written."""

    request: BisectRequest
    bisect_id: str
    folder: Path
    spec_name: str
    cell_id: str
    versions: tuple[str, ...]
    result: BisectResult
    # For --by-date: what changed between the last good and the first bad day.
    changed: tuple[tuple[str, str | None, str | None], ...] = ()
    resumed: bool = False
    # environment.perturb of the cell: every candidate ran under it (amplify).
    perturbed: tuple[str, ...] = ()
    # Why this cell, where the spec has several (plan/failingcell.py); "" for one cell.
    chosen: str = ""
    # How its answer names the search's budget: `--budget`, or `BisectRequest(budget=...)`
    # to the Python API's caller (core/caller.py), set when made, as amplify's is.
    budget_said: str = "--budget"
    # Why bisect.json or bisect.md (or state.json) could not be written, naming those not
    # written; "" where they were: an --out made read-only since a finished bisect, whose
    # trials are all stored, answers all the same (core/atomicfile.save_all).
    unsaved: str = ""
    # The files `unsaved` names (state.json alone where only its final write failed, a full
    # disk after new trials: bisect.md is then this answer's, and its path is printed).
    unsaved_files: tuple[str, ...] = ()

    @property
    def fixed(self) -> bool:
        """The good end is the newer one: the question is which release fixed the bug (the
        search is the same, read the other way)."""
        if self.request.by_date:
            return self.request.good > self.request.bad  # YYYY-MM-DD sorts as dates do
        from packaging.version import InvalidVersion, Version

        try:
            return Version(self.request.good) > Version(self.request.bad)
        except InvalidVersion:
            return False

    @property
    def headline(self) -> str:
        what = self.request.package or "environment"
        result = self.result
        if result.status == "found":
            last = f" (last good {result.last_good})" if result.last_good else ""
            if self.request.by_date:
                changed = ", ".join(f"{n} {a or '-'} -> {b or '-'}" for n, a, b in self.changed)
                return f"first bad day: {result.first_bad}{last}" + (
                    f": {changed}" if changed else ""
                )
            if self.fixed and result.last_good:
                # --good newer than --bad: the question is which release fixed it.
                # The search's "last good" is the oldest release without the bug: the fix;
                # its "first bad", the newest with it.
                return f"fixed in: {what} {result.last_good} (last bad {result.first_bad})"
            return f"first bad: {what} {result.first_bad}{last}"
        if result.status == "undecided":
            return f"undecided: {result.reason}"
        return f"refused: {result.reason}"

    def render(self, fmt: str = "md") -> str:
        """bisect.md ("md"), what `bisect` prints ("text") or its `--format json` ("json")."""
        return rendered(
            self, fmt, markdown=render_markdown, text=text, to_dict=BisectReport.to_json
        )

    def exit_code(self) -> int:
        """`bisect`'s: 0 found, 1 refused or undecided, 3 nothing could run."""
        return exit_code(self)

    def to_json(self) -> JsonObject:
        """`--format json`: the contract keys first, then the detail."""
        data = self.result.to_dict()
        out: JsonObject = {
            "package": self.request.package,
            "first_bad": data.pop("first_bad"),
            "last_good": data.pop("last_good"),
            "tested": data.pop("tested"),
            "attempts": data.pop("attempts"),
        }
        out.update(data)
        out.update(
            {
                "perturbed": list(self.perturbed),
                "id": self.bisect_id,
                "spec": self.spec_name,
                "cell": self.cell_id,
                "good": self.request.good,
                "bad": self.request.bad,
                "by_date": self.request.by_date,
                "versions": list(self.versions),
                "runner": self.request.runner,
                "changed": [
                    {"package": n, "last_good": a, "first_bad": b} for n, a, b in self.changed
                ],
                "folder": str(self.folder),
                **({"unsaved": self.unsaved} if self.unsaved else {}),
            }
        )
        return out


def text(report: BisectReport) -> str:
    """What `bisect` prints: the answer, then each tested version's evidence."""
    result = report.result
    lines = [perturbed_phrase(report.perturbed)] if report.perturbed else []
    lines.append(report.headline)
    if report.chosen:
        lines.append(f"cell {report.cell_id}: {report.chosen}")
    for evidence in result.tested:
        outcomes = ", ".join(f"{s} x{n}" for s, n in evidence.signature_counts().items())
        detail = evidence.infra_error if evidence.state == "skipped" else outcomes
        if evidence.state == "skipped" and evidence.build_log is not None:
            # Its reason and build log were said as it was skipped, and bisect.md has
            # them: a third copy of the reason here was noise.
            detail = "cannot be installed"
        lines.append(
            f"  {evidence.version:<14} {evidence.state:<8} "
            f"{evidence.matched}/{evidence.attempts:<4} {detail or ''}"
        )
    if result.status == "found" and result.reason:
        lines.append(f"note: {result.reason}")
    lines += [f"warning: {warning}" for warning in result.warnings]
    if report.changed:
        lines.append("changed between the last good and the first bad day:")
        lines += [
            f"  {n}: {before or '-'} -> {after or '-'}" for n, before, after in report.changed
        ]
    if result.status == "found":
        # How sure the answer is, as isolate's last line says it: bisect.md had it, the
        # printed answer did not, and a flaky failure's answer is only as good as this.
        lines.append(how_sure(result))
    if result.status == "undecided":  # out of budget: a larger one goes on
        lines.append(budget_continues("bisect", result.attempts, said=report.budget_said))
    # Where bisect.md could not be written, the one there is not this answer's.
    unwritten = "bisect.md" in report.unsaved_files
    where = "" if unwritten else f"; report: {report.folder / 'bisect.md'}"
    lines.append(f"{plural(result.attempts, 'attempt')}{where}")
    return "\n".join(lines)


def _probability(result: BisectResult) -> str:
    return (
        f"probability of this answer: {result.confidence:.3f} (stated error "
        f"{result.error:g}, assuming a bad version reproduces in at least "
        f"{result.min_rate:g} of attempts)"
    )


def how_sure(result: BisectResult) -> str:
    """The printed answer's line of confidence: the probability bisect.md gives, and the
    rate the bad versions showed (`2/3`), which says whether the assumed rate was met."""
    rate = _rate_phrase(result)
    return _probability(result) + (f"; {rate}" if rate else "")


def _rate_phrase(result: BisectResult) -> str:
    """The rate the bad versions showed, as how_sure and bisect.md say it ("reproduction
    rate at the bad versions: 2/3"); "" where no bad version ran."""
    matched, attempts = result.rate
    return f"reproduction rate at the bad versions: {matched}/{attempts}" if attempts else ""


def interrupted_text(tested: Sequence[Trial], folder: Path | None) -> str:
    """A stopped bisect's partial answer: each version tried so far, as the answer's table
    lists it (without the states, which the search gives only at its end)."""
    attempts = sum(trial.attempts for trial in tested)
    if not tested:
        return "bisect stopped before any version was tried"
    lines = [f"bisect stopped after {plural(attempts, 'attempt')}; tried so far:"]
    for trial in tested:
        counts = Counter(trial.signatures)
        detail = trial.infra_error or ", ".join(f"{s} x{n}" for s, n in counts.items())
        lines.append(f"  {trial.version:<14} {trial.matched}/{trial.attempts:<4} {detail}")
    if folder is not None:
        lines.append(f"state: {folder / 'state.json'}")
    return "\n".join(lines)


def interrupted_json(bisect_id: str, tested: Sequence[Trial], folder: Path | None) -> str:
    """The partial answer as JSON: `status` interrupted, and each version tried so far."""
    data: JsonObject = {
        "status": "interrupted",
        "id": bisect_id,
        "folder": str(folder) if folder is not None else None,
        "attempts": sum(trial.attempts for trial in tested),
        "tried": [trial.to_dict() for trial in tested],
    }
    return json.dumps(data, indent=2)


def exit_code(report: BisectReport) -> int:
    """`bisect`'s: 0 found, 3 nothing could run (no interpreter, no command: not an
    answer), else 1 (refused or undecided: the question could not be answered as asked)."""
    result = report.result
    if result.status == "found":
        return EXIT_OK
    if (
        result.status == "refused"
        and result.attempts == 0
        and any(v.infra_error for v in result.versions)
    ):
        return EXIT_INFRA
    return EXIT_NOT_REPRODUCED


def load_state(
    path: Path, versions: Sequence[str], fresh: bool
) -> tuple[dict[str, Trial], bool, tuple[str, ...]]:
    """The trials a resume starts from, whether there are any, and the versions it tries to
    install again: a version that could not be installed ran no attempt, and why it could
    not may have passed (the network, a wheelhouse mended). Kept, a skip was answered again on
    every rerun (`1.3 could not be tested`), and only `--fresh`, which throws away every
    attempt, asked the index again."""
    if fresh or not path.is_file():
        return {}, False, ()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        stored = data.get("trials") if isinstance(data, dict) else None
        trials = {
            # (an entry that is no mapping has no version: KeyError, the state is not used)
            str(k): Trial.from_dict(v if isinstance(v, dict) else {})
            for k, v in (stored if isinstance(stored, dict) else {}).items()
        }
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # deep JSON too
        return {}, False, ()
    # Keyed by version: a version no longer between the ends is simply not asked about.
    kept = {v: t for v, t in trials.items() if v in versions and t.attempts}
    again = tuple(v for v in versions if v in trials and not trials[v].attempts)
    return kept, bool(kept), again


def stored_answer(path: Path) -> BisectResult | None:
    """state.json's stored "found" result, None where it holds none (or not one that reads).
    Given only where --out cannot be written: a bisect finished under an earlier, less strict
    stop may need attempts the present one asks (a51dea31's second reading, f019f95c's third),
    which such an --out cannot store, so its stored answer is printed with a warning instead of
    refused.
    None where state.json was stored under the present stop (`STOP`): there a version that
    needs attempts was asked something the stored answer was not (a stricter --error), and
    printing the answer claimed a confidence never reached."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("stop") == STOP:
            return None
        stored = data.get("result") if isinstance(data, dict) else None
        if not isinstance(stored, dict) or stored.get("status") != "found":
            return None
        rate = stored.get("rate")
        rate = rate if isinstance(rate, dict) else {}
        tested = stored.get("tested")
        warnings = stored.get("warnings")
        return BisectResult(
            status="found",
            first_bad=str(stored["first_bad"]),
            last_good=as_text(stored.get("last_good")),
            confidence=_number(stored["confidence"]),
            attempts=search.count(stored.get("attempts", 0)),
            reason=str(stored.get("reason") or ""),
            versions=tuple(_evidence(v) for v in (tested if isinstance(tested, list) else []) if v),
            untestable_between=tuple(str(v) for v in array(stored.get("untestable_between"))),
            rate=(search.count(rate.get("matched", 0)), search.count(rate.get("attempts", 0))),
            error=_number(stored.get("error", search.DEFAULT_ERROR)),
            min_rate=_number(stored.get("min_rate", search.DEFAULT_MIN_RATE)),
            warnings=tuple(str(w) for w in array(warnings)),
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def _evidence(data: JsonValue) -> search.VersionEvidence:
    """A VersionEvidence as `to_dict` wrote it (signatures as counts); TypeError otherwise."""
    if not isinstance(data, dict):
        raise TypeError("a tested version is no mapping")
    state = data.get("state")
    if state not in typing.get_args(search.State):
        raise ValueError(f"no version state: {state!r}")
    counts = data.get("signatures")
    signatures = [
        str(k) for k, n in (counts if isinstance(counts, dict) else {}).items()
        for _ in range(search.count(n))
    ]  # fmt: skip
    infra_error, build_log = data.get("infra_error"), data.get("build_log")
    return search.VersionEvidence(
        version=str(data["version"]),
        state=typing.cast("search.State", state),
        attempts=search.count(data.get("attempts", 0)),
        matched=search.count(data.get("matched", 0)),
        p_good=_number(data.get("p_good", 0.0)),
        infra_error=as_text(infra_error),
        signatures=tuple(signatures),
        runs=tuple(str(r) for r in array(data.get("runs"))),
        build_log=as_text(build_log),
    )


def _number(value: JsonValue) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def write_state(
    path: Path,
    request: BisectRequest,
    versions: Sequence[str],
    trials: Mapping[str, Trial],
    result: BisectResult | None,
) -> None:
    """state.json, written whole or not at all (`write_atomic`): an OSError leaves the one
    before. Its temporary file was `state.tmpPID`, which two bisects of one question (the
    lock aside) and a write that failed halfway left behind."""
    data: JsonObject = {
        "format": STATE_FORMAT,
        "stop": STOP,
        "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "spec": str(request.spec),
        "package": request.package,
        "good": request.good,
        "bad": request.bad,
        "versions": list(versions),
        "trials": {v: t.to_dict() for v, t in trials.items()},
        "result": result.to_dict() if result is not None else None,
    }
    write_atomic(path, json.dumps(data, indent=2))


def write_reports(report: BisectReport, failed: Sequence[tuple[str, str]] = ()) -> BisectReport:
    """Write bisect.json and bisect.md into the bisect's folder, each on its own; the report
    with `unsaved` set where one could not be (`failed`: state.json's, where its last write
    failed and it lacks what this run added), as isolate's, minimize's and amplify's."""
    unsaved, missed = save_each(
        report.folder,
        [
            ("bisect.json", lambda: json.dumps(report.to_json(), indent=2) + "\n"),
            ("bisect.md", lambda: render_markdown(report)),
        ],
        failed,
    )
    return dataclasses.replace(report, unsaved=unsaved, unsaved_files=missed) if unsaved else report


def render_markdown(report: BisectReport) -> str:
    """bisect.md: the answer, how sure, and the evidence for every tested version."""
    result, request = report.result, report.request
    what = request.package or "the environment"
    lines = [
        f"# Bisect: {report.spec_name}, {what} {request.good}..{request.bad}",
        "",
        f"**{report.headline}**",
        "",
    ]
    if report.perturbed:
        lines += [f"**{perturbed_phrase(report.perturbed)}.**", ""]
    if result.status == "found":
        sentence = _probability(result)
        lines.append(f"{sentence[0].upper()}{sentence[1:]}.")
    if result.status == "found" and result.reason:
        lines.append(f"Note: {result.reason}.")
    rate = _rate_phrase(result)
    if rate:
        lines.append(f"{rate[0].upper()}{rate[1:]}.")
    for warning in result.warnings:
        lines.append(f"Warning: {warning}.")
    lines += [
        "",
        f"Cell: `{report.cell_id or '(the only cell)'}`"
        f"{f' ({report.chosen})' if report.chosen else ''}; runner: {request.runner}; "
        f"{plural(result.attempts, 'attempt')} over {len(result.tested)} of "
        f"{plural(len(report.versions), 'candidate')}.",
        "",
    ]
    if result.status == "undecided":
        # The first letter up, not str.capitalize(): `BisectRequest(budget=...)` kept whole.
        going_on = budget_continues("bisect", result.attempts, said=report.budget_said)
        lines += [f"{going_on[0].upper()}{going_on[1:]}.", ""]
    if request.command_line:
        lines += ["Rerun (resumes from the saved state):", "", f"    {request.command_line}", ""]
    lines += [
        "| version | judged | matched / attempts | outcomes | runs |",
        "|---|---|---|---|---|",
    ]
    fixed = report.fixed
    for evidence in result.versions:
        if evidence.state == "untested":
            continue
        outcomes = ", ".join(f"{s} x{n}" for s, n in evidence.signature_counts().items())
        if evidence.infra_error:
            outcomes = f"not installable: {evidence.infra_error}"
            if evidence.build_log is not None:
                # A link from bisect.md's own folder (the state keeps the file absolute).
                link = os.path.relpath(evidence.build_log, report.folder.resolve())
                outcomes += f" ([build log]({link}))"
        runs = ", ".join(f"`{r}`" for r in evidence.runs)
        mark = (
            (" *last bad*" if fixed else " **first bad**")
            if evidence.version == result.first_bad
            else ""
        )
        if evidence.version == result.last_good:
            mark = " **fixed in**" if fixed else " *last good*"
        lines.append(
            f"| {evidence.version}{mark} | {evidence.state} | {evidence.matched} / "
            f"{evidence.attempts} | {outcomes.replace('|', '/')} | {runs} |"
        )
    if report.changed:
        lines += [
            "",
            f"Installed versions that changed from {result.last_good} to {result.first_bad}:",
            "",
            "| package | last good | first bad |",
            "|---|---|---|",
        ]
        for name, before, after in report.changed:
            lines.append(f"| {name} | {before or '-'} | {after or '-'} |")
    lines += [
        "",
        "A version is bad at its first attempt that fails as the spec's `expect` says; "
        "good when the clean attempts at it and above it leave the answer's probability "
        "above 1 - error; unsure when it ran but is neither (too few clean attempts to call "
        "it good, or, past the first bad, never seen failing: the answer holds it bad "
        "without that, or the bad end, not yet run enough to tell). Versions that could not "
        "be installed are skipped, never judged.",
        "",
    ]
    return "\n".join(lines)
