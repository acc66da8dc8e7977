"""What amplify says: the sentence, the text and amplify.md, the JSON, the amplified spec.

The first line is the claim and its evidence, in the issue's words:

    base 1/60 (95% CI 0.00–0.09); with switch_interval=1e-06: 14/40 (0.22–0.51)

then every arm (what it matched, what else it provoked, what could not run), and
the amplified spec: the spec with the winner's perturbations in
`environment.perturb`, which isolate, bisect and run take as any spec.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.amplify.search import AmplifyResult, ArmResult
from reprospec.core.answers import rendered, runs_markdown, search_exit_code
from reprospec.core.atomicfile import save_each, write_atomic
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.core.logtext import shell_line
from reprospec.core.rates import rate_floor, refuting_bound
from reprospec.core.results import Rate
from reprospec.core.words import (
    agree,
    budget_continues,
    interval_bounds,
    interval_phrase,
    plural,
    rate_phrase,
    replayed_phrase,
)
from reprospec.isolation.candidates import DEFAULT_ERROR, DEFAULT_MIN_RATE, clean_needed_at
from reprospec.isolation.candidates import Settings as IsolateSettings
from reprospec.minimize.search import Settings as MinimizeSettings
from reprospec.spec.matrix import render_value

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


@frozen
class AmplifyReport:
    """The answer in the spec's terms, with the search's evidence and where it is stored."""

    id: str
    folder: Path
    spec_name: str
    spec_path: str
    cell: Cell
    expectation: Expectation
    result: AmplifyResult
    runs: tuple[str, ...]
    # Probes (or parts of them) answered from an earlier run of this amplification
    # (interrupted, out of budget, or finished), and their attempts, counted in the budget.
    reused: int
    interrupted: bool
    budget: int
    command_line: str = ""
    replayed: int = 0  # the attempts of the `reused` probes
    amplified_spec: Path | None = None
    # Why this cell, where the spec has several (plan/failingcell.py); "" for one cell.
    chosen: str = ""
    # The options its attempts ran with, as words for the next verb (`--python PATH`):
    # amplify.md's suggested commands carry them (core/runoptions.py rerun_words).
    rerun_options: tuple[str, ...] = ()
    # The `--set` overrides its attempts ran with: a command of the spec file (go_on's) needs
    # them to run what was measured; amplified.yaml holds them already.
    overrides: tuple[str, ...] = ()
    # The cells of the spec: a one-cell spec's isolate needs `--passing-set`.
    cells: int = 1
    # Under run.preload, the attempts of the arms meant to fork (the base's, the forked
    # arms') that ran fresh instead, with the first one's reason: `60 of 60 attempts meant to
    # fork ran fresh (ran fresh: the preload server could not start: ...)`; "" for none.
    unforked: str = ""
    # How its answer names the search's budget: `--budget`, or `AmplifyOptions(budget=...)`
    # to the Python API's caller (core/caller.py), who typed no `--budget`; set when made,
    # as `sentence()` is read after the call returned.
    budget_said: str = "--budget"
    # Why amplify.json and amplify.md could not be written ("" where they were): a rerun of
    # a finished amplification in an --out made read-only since (write()).
    unsaved: str = ""
    # The files `unsaved` names (amplified.yaml or amplify.json alone: amplify.md is then
    # this answer's, and its path is printed), as bisect's BisectReport keeps them.
    unsaved_files: tuple[str, ...] = ()

    @property
    def rerun_tail(self) -> str:
        """`rerun_options` as a command's tail (` --python .venv/bin/python`), quoted."""
        return "".join(f" {shlex.quote(word)}" for word in self.rerun_options)

    def sentence(self) -> str:
        return sentence(self)

    def to_dict(self) -> JsonObject:
        return to_dict(self)

    def render(self, fmt: str = "md") -> str:
        """amplify.md ("md"), what `amplify` prints ("text") or its `--format json` ("json")."""
        return rendered(self, fmt, markdown=markdown, text=text, to_dict=to_dict)

    def exit_code(self) -> int:
        """`amplify`'s: 0 amplified, 1 not, 3 infra-error, 130 interrupted."""
        return search_exit_code(self.interrupted, self.result.status, ("amplified",))


# What an arm the search never ran reads as, in the answer and amplify.md.
NOT_TRIED = "not tried (the search ended before it)"
# The same where the search was stopped (Ctrl-C): it did not end, and the rerun resumes it.
NOT_TRIED_YET = "not tried yet (the search was interrupted before it)"


def not_tried(result: AmplifyResult) -> str:
    """An arm without a rate: never tried because the search ended, or not yet, because it
    was interrupted (the base of a search stopped in its first round read `the search ended
    before it`, beside `interrupted; run the same command again to resume`)."""
    return NOT_TRIED_YET if result.status == "interrupted" else NOT_TRIED


def interval(rate: Rate) -> str:
    """`14/40 (0.22–0.51)`."""
    return f"{rate.matched}/{rate.attempts} ({interval_phrase(rate.low, rate.high)})"


def sentence(found: AmplifyReport) -> str:
    """The claim: the base's rate, and the winner's when there is one."""
    result = found.result
    base = f"base {rate_phrase(result.base.rate)}"
    winner = result.winner
    if result.status == "infra-error":
        return f"{base}: the cell could not run: {result.note}"
    if winner is None:
        best = max(
            # (an arm that never ran is no one's best: 0/0 is not a rate); ranked as the
            # search ranks them, each against its own base (search.py `standing`)
            (a for a in result.arms if a.arm.settings and not a.dropped and a.rate.attempts),
            key=result.standing,
            default=None,
        )
        tail = f"; best {best.arm.label}: {interval(best.rate)}" if best is not None else ""
        against = None if best is None else result.base_for(best)
        if against is not None and against is not result.base:
            tail += f", against {against.arm.label} {interval(against.rate)}"
        verb = "interrupted" if result.status == "interrupted" else "not amplified"
        return f"{base}{tail}: {verb}" + (f" ({result.note})" if result.note else "")
    claim = f"{base}; with {winner.arm.label}: {interval(winner.rate)}"
    against = result.base_for(winner)
    if against is not result.base:
        # Judged against the base started as it was (search.py: two bases).
        claim += f", against {against.arm.label} {interval(against.rate)}"
    if result.status == "interrupted":
        # Stdout is what a script reads: a partial leader is not the answer.
        return f"{claim}: interrupted before it was established"
    return claim


def go_on(found: AmplifyReport) -> str:
    """Where nothing was amplified, how to go on without a perturbation; "" where the search
    did not end, or the base never failed (nothing to isolate). "not amplified" alone read
    as a dead end.

    A base whose 95% lower bound is at least isolate's and minimize's minimum rate (the
    cell's `expect.rate` bound, else 0.3) is frequent enough for them as they are; a rarer
    one is given their `--min-rate` at that bound and a `--budget` that the cheapest
    isolation needs at it, where only a larger amplify `--budget` was offered before."""
    result = found.result
    if found.interrupted or result.status != "not-amplified":
        return ""
    rate = result.base.rate
    least = rate_floor(found.expectation.rate) or DEFAULT_MIN_RATE
    if not rate.attempts or not rate.matched:
        return ""
    spec = shlex.quote(_shown(found.spec_path))
    cell = _cell_filters(found)
    # The options the attempts ran with: under `--python PATH` a bare command is an
    # infra-error (the spec's packages missing from reprospec's own interpreter).
    cell += found.rerun_tail + "".join(f" --set {shlex.quote(o)}" for o in found.overrides)
    if rate.low >= least:
        # isolate needs a passing side: another cell (a spec of one cell has none, and is
        # refused without --passing-set; a matrix of one value is one cell too).
        isolate = f" (or reprospec isolate {spec}{cell})" if found.cells > 1 else ""
        # Its lower bound as the interval beside it prints it (rounded down): 12/16's
        # 0.505 read `(95% CI 0.50–0.90)` in the answer and `at least 0.51` here.
        low = interval_bounds(rate.low, rate.high)[0]
        return (
            f"the base already fails in {rate.matched}/{rate.attempts} (at least "
            f"{low}), often enough for isolate and minimize (at least {least:g}): "
            f"go on without a perturbation: reprospec minimize {spec}{cell}{isolate}"
        )
    floor = rare_min_rate(rate.low, rate.matched / rate.attempts)
    budget = rare_budget(floor)
    # A --budget only above the verb's default (isolate 100, minimize 1000): a smaller one
    # would end it sooner than a bare command.
    rare = f" --min-rate {floor:g}"
    isolate = rare + (f" --budget {budget}" if budget > IsolateSettings().budget else "")
    minimize = rare + (f" --budget {budget}" if budget > MinimizeSettings().budget else "")
    # By the cells, not the matrix: `threads: [900]` is one cell, and isolate refused the
    # command suggested without --passing-set (exit 2).
    passing = "" if found.cells > 1 else " --passing-set PATH=VALUE"
    return (
        f"the base fails in {rate.matched}/{rate.attempts} (at least {floor:g}), below "
        f"isolate's and minimize's minimum rate ({least:g}): go on without a perturbation "
        f"at that rate, with more attempts: reprospec minimize {spec}{cell}{minimize} (or "
        f"reprospec isolate {spec}{cell}{isolate}{passing}), or give amplify a larger "
        f"{found.budget_said}"
    )


def rare_min_rate(low: float, value: float) -> float:
    """The `--min-rate` for a rare base: its 95% lower bound rounded down to two significant
    digits (the stated error of isolate and minimize holds at or above it), at most the
    measured rate; `--min-rate` takes a number strictly between 0 and 1."""
    bound = min(low, value)
    if bound <= 0:
        bound = value / 10
    step = 10 ** (math.floor(math.log10(bound)) - 1)
    return float(f"{math.floor(bound / step + 1e-9) * step:.2g}")


def rare_budget(rate: float) -> int:
    """Attempts the cheapest isolation takes at `rate` (isolation/search.py's projection:
    a failure per halving, 1/rate attempts each, then the clean attempts that rule the
    passing side out at the default error), for two differences, in whole tens."""
    needed = 1 / rate + clean_needed_at(rate, DEFAULT_ERROR)
    return max(100, math.ceil(needed / 10) * 10)


def _shown(path: str) -> str:
    """A path as a command shows it: relative to here when under it."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    except (OSError, ValueError):
        return path


def _others(arm: ArmResult) -> str:
    return ", ".join(f"{n}× {phrase}" for phrase, n in arm.others) or "–"


def text(found: AmplifyReport) -> str:
    """The terminal's answer: the claim, what it means, every arm."""
    result = found.result
    lines = [sentence(found)]
    if found.chosen:
        lines.append(f"cell {found.cell.id}: {found.chosen}")
    if result.status == "amplified" and result.winner is not None:
        lines.append(
            f"amplified: {found.spec_name} ({found.cell.id}) fails as expected "
            f"({_expected(found)}) with {result.winner.arm.label}"
            + ("" if result.established else "; the best setting is not established yet")
        )
    for arm in result.arms:
        tally = arm.tally
        extra = []
        if tally.other:
            extra.append(f"other failures: {_others(arm)}")
        if tally.infra:
            extra.append(f"{tally.infra} not run: {arm.infra_reason}")
        # An arm the search ended before (a base that fails in every attempt, a budget
        # spent) has no rate: `0/0 (95% CI 0.00-1.00)` read as a measurement.
        measured = rate_phrase(arm.rate) if arm.rate.attempts or tally.infra else not_tried(result)
        if result.base_for(arm) is not result.base:
            extra.append(f"ran fresh, judged against {result.base_for(arm).arm.label}")
        lines.append(f"  {arm.arm.label}: {measured}" + (f"; {'; '.join(extra)}" if extra else ""))
    if found.unforked:
        lines.append(f"run.preload: {found.unforked}")
    lines.append(
        f"{plural(result.used, 'attempt')} of a budget of {found.budget}"
        + replayed_phrase(found.replayed, found.reused)
    )
    if result.budget_spent:
        # The search is stored: a larger budget goes on from here (state.py).
        lines.append(budget_continues("amplification", result.used, said=found.budget_said))
    if found.amplified_spec is not None:
        lines.append(f"amplified spec: {found.amplified_spec}")
        # Said here too, not in amplify.md alone: a plain `run` of the amplified spec read
        # `not-reproduced` (exit 1) of a failure amplified to 17/18, and the terminal,
        # where the user looks, said nothing of why.
        if note := _rate_note(found):
            lines.append(f"note: {note}")
    if next_step := go_on(found):
        lines.append(f"next: {next_step}")
    # The report's path is part of the answer as printed (isolate's and bisect's say it
    # too); an answer whose amplify.md could not be written has no file of its own. Only
    # that one: where amplified.yaml or amplify.json alone was not written, the path was left
    # out too, of an amplify.md that is this run's.
    if "amplify.md" not in found.unsaved_files:
        lines.append(f"report: {found.folder / 'amplify.md'}")
    return "\n".join(lines)


def _expected(found: AmplifyReport) -> str:
    from reprospec.core.words import expectation_phrase

    return expectation_phrase(found.expectation, rate=False)


def markdown(found: AmplifyReport) -> str:
    """amplify.md: the claim first, then the evidence and how to use the amplified spec."""
    result = found.result
    lines = [f"# Amplify: {found.spec_name} ({found.cell.id})", "", f"**{sentence(found)}**", ""]
    if result.status == "amplified" and result.winner is not None:
        lines += [
            f"The failure ({_expected(found)}) was **amplified** by perturbing the attempt "
            f"with `{result.winner.arm.label}` (`environment.perturb`). Results found on the "
            f"amplified spec hold under that perturbation.",
            "",
        ]
        if not result.established:
            lines += [
                "The best setting is not established: "
                + ", ".join(_undecided(a) for a in result.undecided_with)
                + " may be as good.",
                "",
            ]
    lines += [
        "| perturbation | failed as expected | 95% CI | other failures | not run |",
        "|---|---|---|---|---|",
    ]
    for arm in result.arms:
        if not arm.rate.attempts and not arm.tally.infra:
            lines.append(f"| {arm.arm.label} | {not_tried(result)} | – | – | – |")
            continue
        lines.append(
            f"| {arm.arm.label} | {arm.rate.matched}/{arm.rate.attempts} "
            f"| {interval_phrase(arm.rate.low, arm.rate.high)} | {_others(arm)} "
            f"| {arm.tally.infra or '–'}{': ' + arm.infra_reason if arm.tally.infra else ''} |"
        )
    fresh = [f"`{a.arm.label}`" for a in result.arms if result.base_for(a) is not result.base]
    if found.unforked:
        # The server could not start, or refused to fork: what ran is not what run.preload
        # meant, and "the base's attempts forked" would be untrue.
        lines += ["", f"Under run.preload {found.unforked}."]
    elif fresh:
        lines += [
            "",
            f"Under run.preload the base's attempts forked from the preloaded server; "
            f"{', '.join(fresh)} ran fresh (a perturbation only a process's start applies) and "
            f"{agree(len(fresh))} judged against `base (fresh)`, the spec "
            "run fresh too; every other arm against `base`.",
        ]
    lines += [
        "",
        f"{plural(result.used, 'attempt')} of a budget of {found.budget}"
        f"{replayed_phrase(found.replayed, found.reused)}"
        # One sentence, as minimize.md's: after a full stop it read "... of 40. a larger".
        + (
            f"; {budget_continues('amplification', result.used, said=found.budget_said)}"
            if result.budget_spent
            else ""
        )
        + ".",
    ]
    if next_step := go_on(found):
        lines += ["", f"Next: {next_step}."]
    if found.amplified_spec is not None:
        lines += [
            "",
            "## The amplified spec",
            "",
            f"`{found.amplified_spec}`: the spec with the winning perturbation. Use it as any "
            "spec:",
            "",
            *_suggestions(found, found.amplified_spec),
        ]
        note = _rate_note(found)
        if note:
            lines += ["", note]
    if found.command_line:
        lines += ["", "## How to rerun", "", f"    {found.command_line}"]
    if found.runs:
        lines += ["", "## Runs", "", *runs_markdown(found.runs)]
    return "\n".join(lines) + "\n"


def _undecided(arm: ArmResult) -> str:
    """An arm the winner is not established over: its rate, or that it was never tried (an
    arm the budget ended before read `0/0 (0.00–1.00)`, a rate of nothing)."""
    if not arm.rate.attempts:
        return f"`{arm.arm.label}` (not tried)"
    return f"`{arm.arm.label}` {interval(arm.rate)}"


def _cell_filters(found: AmplifyReport) -> str:
    """` -m AXIS=VALUE` for each axis of the cell amplified: the cell a command given it
    takes as its failing side. Nothing for a spec of one cell (a matrix of one value each
    too), which has no other to choose: `minimize cap.yaml -m workers=2 -m batch_size=8`
    named what a bare command takes."""
    if found.cells == 1:
        return ""
    return "".join(
        f" -m {shlex.quote(f'{axis}={render_value(value)}')}"
        for axis, value in found.cell.matrix.items()
    )


def _suggestions(found: AmplifyReport, spec: Path) -> list[str]:
    """`run` and `isolate` of the amplified spec, with the options the attempts ran with (a
    bare `reprospec run` of a spec amplified under `--python PATH` was an infra-error), and
    for a one-cell spec the `--passing-set` isolate refuses to run without (exit 2). isolate's
    names the cell amplified (`-m`): without it isolate takes the first cell expected to
    fail, another than the one measured where several are (`amplify -m mode=c`'s isolate
    ran on mode=b, and said it amplified)."""
    options = found.rerun_tail
    quoted = shlex.quote(str(spec))
    isolate = f"    reprospec isolate {quoted}{_cell_filters(found)}{options}"
    if found.cells == 1:
        isolate += (
            " --passing-set PATH=VALUE  # one cell: the fields that make it pass "
            "(matrix.AXIS=VALUE, environment.env.NAME=VALUE, ~environment.env.NAME)"
        )
    return [f"    reprospec run {quoted}{options} --repeat 20", isolate]


def _rate_note(found: AmplifyReport) -> str:
    """What a run of the amplified spec judges, where its `expect` has no `rate` and the
    winner fails in only some attempts: every attempt must fail, so the run above of an
    amplification at 41/80 read `not-reproduced` (exit 1) of a failure it reproduced in
    half its attempts. The bound to give it is capture's for a failure seen in some
    attempts (`>0`); a rate measured under one load moves under another."""
    winner = found.result.winner
    if winner is None or found.expectation.rate is not None:
        return ""
    rate = winner.rate
    if rate.matched >= rate.attempts:
        return ""
    # Half the interval's low end: below it under a lighter load, yet refutable.
    floor = int(rate.low * 50) / 100
    fix = f" (a bound below that interval, `>={floor:g}`, tells a fix)" if floor else ""
    return (
        "The cell's `expect` has no `rate`, so a run judges every attempt and reads "
        f"`not-reproduced` where any attempt passes; amplified, it failed in "
        f"{interval(rate)}: give the failing "
        f"cell `rate: '>0'` in its `expect` to judge a run by its rate{fix}."
    )


def _arm_dict(arm: ArmResult, against: ArmResult | None = None) -> JsonObject:
    return {
        "perturbation": arm.arm.label,
        "settings": {name: _json(value) for name, value in arm.arm.settings},
        "role": arm.arm.role,
        "fresh": arm.arm.fresh,
        # The base it was judged against (`base`, or `base (fresh)` for an arm that ran
        # fresh under run.preload); null for a base.
        "compared_with": against.arm.label if against is not None and arm.arm.settings else None,
        "rate": arm.rate.to_dict(),
        "matched": arm.tally.matched,
        "passed": arm.tally.passed,
        "other": arm.tally.other,
        "infra": arm.tally.infra,
        "other_failures": [{"outcome": p, "count": n} for p, n in arm.others],
        "infra_reason": arm.infra_reason,
    }


def _json(value: object) -> JsonValue:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return str(value)


def to_dict(found: AmplifyReport) -> JsonObject:
    result = found.result
    winner = result.winner
    return {
        "id": found.id,
        "spec": found.spec_name,
        "spec_path": found.spec_path,
        "cell": found.cell.id,
        "status": result.status,
        "sentence": sentence(found),
        "amplified": result.status == "amplified",
        "perturbation": None if winner is None else winner.arm.label,
        "settings": None
        if winner is None
        else {name: _json(value) for name, value in winner.arm.settings},
        "established": result.established,
        "base": _arm_dict(result.base),
        "arms": [_arm_dict(a, result.base_for(a)) for a in result.arms],
        "used": result.used,
        "budget": found.budget,
        "note": result.note,
        "unforked": found.unforked or None,
        "runs": list(found.runs),
        "reused": found.reused,
        "replayed": found.replayed,
        "budget_spent": result.budget_spent,
        "interrupted": found.interrupted,
        "amplified_spec": None if found.amplified_spec is None else str(found.amplified_spec),
        "folder": str(found.folder),
        **({"unsaved": found.unsaved} if found.unsaved else {}),
    }


def amplified_document(
    document: Mapping[str, JsonValue], settings: tuple[tuple[str, object], ...], base_dir: Path
) -> JsonObject:
    """The spec with `settings` in environment.perturb, and its folders made absolute (the
    amplified spec is written elsewhere, and must run in the same place)."""
    out: JsonObject = copy.deepcopy(dict(document))
    environment = out.get("environment")
    env: JsonObject = dict(environment) if isinstance(environment, dict) else {}
    for key in ("workdir", "dockerfile"):
        value = env.get(key, "." if key == "workdir" else None)
        if isinstance(value, str) and "${{" not in value:
            # normpath, not resolve: `../incidents/race` read as written, a link kept; a
            # dockerfile's `~` expanded, as the spec's check reads it (not the workdir's).
            value = str(Path(value).expanduser()) if key == "dockerfile" else value
            env[key] = os.path.normpath((base_dir / value).absolute())
        elif isinstance(value, str) and _renders_relative(value, document):
            # `${{ matrix.proj }}` kept as written, from the spec's folder: amplified.yaml
            # read it from its own (`folder not found: OUT/amplify/ID/a`, every cell).
            env[key] = os.path.join(base_dir.absolute(), value)  # noqa: PTH118
    existing = env.get("perturb")
    perturb: JsonObject = dict(existing) if isinstance(existing, dict) else {}
    for name, setting in settings:
        value = _json(setting)
        if name.startswith("torch."):
            old = perturb.get("torch")
            torch: JsonObject = dict(old) if isinstance(old, dict) else {}
            torch[name.removeprefix("torch.")] = value
            perturb["torch"] = torch
        else:
            perturb[name] = value
    env["perturb"] = perturb
    out["environment"] = env
    return out


_LEADING_AXIS = re.compile(r"\$\{\{\s*matrix\.([A-Za-z_][\w-]*)\s*\}\}")


def _renders_relative(value: str, document: Mapping[str, JsonValue]) -> bool:
    """Whether a path with `${{ }}` in it is relative in every cell, so that the spec's folder
    put before it names the same path from elsewhere: one that starts with a word, not `/`
    or `~`, or with `${{ matrix.AXIS }}` whose every value (the axis's and the `include`
    entries') is such a string. Another leading expression (`${{ env.HOME }}`) may render
    absolute: left as written."""
    if not value.startswith("${{"):
        return not value.startswith(("/", "~"))
    found = _LEADING_AXIS.match(value)
    matrix = document.get("matrix")
    if found is None or not isinstance(matrix, dict):
        return False
    axis = found.group(1)
    values: list[JsonValue] = list(v) if isinstance(v := matrix.get(axis), list) else []
    include = matrix.get("include")
    for entry in include if isinstance(include, list) else []:
        if isinstance(entry, dict) and axis in entry:
            values.append(entry[axis])
    return bool(values) and all(
        isinstance(v, str) and v and not v.startswith(("/", "~")) for v in values
    )


def _rate_comment(found: AmplifyReport) -> Callable[[JsonPath, str | None], str | None]:
    """The comment after `expect.rate` in the amplified spec: capture's `# observed 1/10;
    ... run with --repeat 74` was of the spec before its perturbation, beside one that
    fails at 16/30; the rate amplified, with the base's, is said in its place, and
    where the bound is `>0` the bound and clean attempts that tell a fix at that rate. An
    `# observed` comment at another case's rate (a list of `expect`s) is dropped: it was
    measured unperturbed, and amplify measured only this cell."""

    def comment(path: JsonPath, old: str | None) -> str | None:
        if not path or path[0] != "expect" or path[-1] != "rate":
            return old
        winner = found.result.winner
        if path != ("expect", "rate") or winner is None:
            return None if old and old.startswith("# observed") else old
        against = found.result.base_for(winner)
        rate, base = winner.rate, against.rate
        text = (
            f"# observed {rate.matched}/{rate.attempts} with {winner.arm.label} (amplify), "
            f"{base.matched}/{base.attempts} without it"
            + (" (both started fresh)" if against is not found.result.base else "")
        )
        bound = found.expectation.rate
        if bound is not None and bound.op == ">" and bound.value == 0 and rate.matched:
            least, refute = refuting_bound(rate.matched, rate.attempts)
            text += (
                f"; met by one match, never refuted: to tell a fix, raise it (`>={least:g}`) "
                f"and run with --repeat {refute}"
            )
        return text

    return comment


def write(
    found: AmplifyReport, document: Mapping[str, JsonValue], base_dir: Path, source_text: str = ""
) -> AmplifyReport:
    """amplify.json, amplify.md and (when amplified) amplified.yaml in the amplify folder:
    the spec's data written again, with the comments of its text (`source_text`) at their
    keys (capture's `--python` note, its reasons beside `expect`; spec.comments), but for
    capture's TODO block where the spec sets what it lists (spec.todo)."""
    from reprospec.spec.comments import axes_note_for, carry_comments, schema_moved
    from reprospec.spec.todo import without_filled_todo
    from reprospec.spec.yamlsource import dump_yaml

    winner = found.result.winner
    path = found.folder / "amplified.yaml"
    content = ""
    if winner is not None:
        header = (
            # shell_line: a comment holds no line break (a path's would end the comment).
            f"# Amplified by reprospec amplify from {shell_line([found.spec_path])} "
            f"({found.cell.id}):\n"
            f"# {sentence(found)}\n"
        )
        body = dump_yaml(amplified_document(document, winner.arm.settings, base_dir))
        if source_text:
            # capture's note on widening the axes names amplified.yaml by its path, as
            # amplify.md's commands do: it named the original spec, over the spec written
            # here, and then its bare name, which ran from nowhere amplify's lines run
            # from (the folder has no repro.sh to run from, as minimize's DIR has).
            carried = axes_note_for(
                carry_comments(source_text, body, _rate_comment(found)),
                body,
                shell_line([str(path)]),
            )
            body = without_filled_todo(carried, source_text)
        content = header + schema_moved(body, base_dir, found.folder)
    failed: list[tuple[str, str]] = []
    try:
        if content:
            if not _holds(path, content):  # a finished amplification run again: written then
                write_atomic(path, content)
            found = replace(found, amplified_spec=path)
        elif path.exists() or path.is_symlink():
            # No winner this time (a smaller --budget than the answer that wrote it, an
            # interrupted rerun): an amplified.yaml left from then said "with cpus=1: 8/12"
            # beside the amplify.md and amplify.json that say not amplified. A larger
            # --budget writes it again.
            path.unlink()
    except OSError as exc:
        # An --out made read-only since (a full disk): a finished amplification run again
        # knows its answer from the replayed probes and printed none (exit 2 on the write).
        # The answer stands, printed with a warning; it names no amplified.yaml that is not
        # this answer's, and says where one is left there.
        held = bool(content) and _holds(path, content)
        found = replace(found, amplified_spec=path if held else None)
        if not held and (path.exists() or path.is_symlink()):
            failed.append(("amplified.yaml", exc.strerror or str(exc)))
    # Each file on its own (write_atomic: a full disk leaves no truncated amplify.json).
    report = found
    unsaved, missed = save_each(
        found.folder,
        (
            ("amplify.json", lambda: json.dumps(to_dict(report), indent=2) + "\n"),
            ("amplify.md", lambda: markdown(report)),
        ),
        failed,
    )
    return replace(found, unsaved=unsaved, unsaved_files=missed) if unsaved else found


def _holds(path: Path, text: str) -> bool:
    """Whether the file at `path` reads `text` (False where it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, ValueError):
        return False
