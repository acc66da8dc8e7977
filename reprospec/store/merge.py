"""Shard runs of one spec made one (`merge`): cells by attempt number, re-judged."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonValue
from reprospec.core.reportspec import rerun_command
from reprospec.core.results import AttemptResult, CellResult, RunResult, Standalone, Verdict
from reprospec.core.sections import DEFAULT_TIMEOUT_S
from reprospec.core.units import parse_duration
from reprospec.core.words import RESOLVED_SPEC, noun, plural, stopped_counts, stopped_phrase
from reprospec.errors import UsageError
from reprospec.store.compare import MERGED_FROM, MERGED_JOBS, environment_change, files_change
from reprospec.store.digests import HANDED_OUT_GPUS

# An attempt number above any: a shard's part without attempts sorts last.
_NONE = sys.maxsize

JudgeCell = Callable[[Expectation, Sequence[AttemptResult]], Verdict]


def _default_judge() -> JudgeCell:
    from reprospec.outcome.judge import judge_cell

    return judge_cell


def _merge_cell(parts: Sequence[CellResult], judge_cell: JudgeCell) -> CellResult:
    """One cell from its shards: attempts by number (no number is in two: `_check_overlap`
    refused those, naming the runs), re-judged."""
    if len(parts) == 1:
        return parts[0]
    # The cell's command and environment are its first attempt's, as an unsharded run's
    # are: with `${{ attempt }}` in the command, shard 2's first (attempt 2) is another.
    first = min(parts, key=lambda p: min((a.attempt for a in p.attempts), default=_NONE))
    by_number: dict[int, AttemptResult] = {}
    for part in parts:
        if part.expected != first.expected:
            raise UsageError(f"cannot merge cell {first.cell.id!r}: shards expect different things")
        for attempt in part.attempts:
            by_number[attempt.attempt] = attempt
    attempts = tuple(by_number[n] for n in sorted(by_number))
    verdict = judge_cell(first.expected, attempts)
    # run.stop_on stops each shard's share of a cell on its own (a shard sees only its
    # attempts): a share it stopped is said of the merged cell too, where judged again it
    # read `1/2 not-reproduced` with its unrun attempts looking lost.
    stops = [(part, stopped_counts(part.reason)) for part in parts]
    stop_on = next((counts[0] for _, counts in stops if counts is not None), None)
    if stop_on is not None:
        planned = sum(len(part.attempts) if c is None else c[2] for part, c in stops)
        missed = 0
        if first.expected.rate is None:
            missed = sum(not a.matched for a in attempts if a.infra_error is None)
        phrase = stopped_phrase(stop_on, len(attempts), planned, missed)
        verdict = replace(verdict, reason=f"{verdict.reason} ({phrase})")
    return CellResult.judged(
        first.cell,
        first.expected,
        verdict,
        attempts,
        first.command,
        first.environment,
    )


def merge(
    runs: Sequence[RunResult],
    *,
    run_id: str | None = None,
    judge_cell: JudgeCell | None = None,
) -> RunResult:
    """Shard runs of one spec as one run: cells combined by id, attempts combined and re-judged."""
    if not runs:
        raise UsageError("merge needs at least one run")
    first = runs[0]
    # Specs of other names first: a shard of one and a run of another was "sharded and
    # unsharded runs of a spec", as if only the sharding kept them apart. The text is
    # compared after the options, which name a `--set` that made it differ.
    for run in runs[1:]:
        if run.spec_name != first.spec_name:
            raise _different(run, first)
    _check_shards(runs)
    _check_options(runs)
    for run in runs[1:]:
        if _spec_of(run) != _spec_of(first):
            raise _different(run, first)
    _check_given(runs)
    _check_overlap(runs)
    parts: dict[str, list[CellResult]] = {}
    for run in runs:
        for cell in run.cells:
            parts.setdefault(cell.cell.id, []).append(cell)
    judge = judge_cell or (_default_judge() if any(len(p) > 1 for p in parts.values()) else None)
    cells = [_merge_cell(p, judge) if judge else p[0] for p in parts.values()]
    cells.sort(key=lambda c: c.cell.index)
    warnings = list(dict.fromkeys(w for run in runs for w in run.warnings))
    warnings += [w for w in _unread_axes(first, cells) if w not in warnings]
    changes = [environment_change(first, run) for run in runs[1:]]
    # The captured variables (`env.OMP_NUM_THREADS`) are compare's rows of their own now;
    # a shard that ran under others is still said here (review).
    differing = {row["key"] for change in changes for row in change["environment"]} | {
        f"env.{row['name']}"
        for change in changes
        for row in change["variables"]
        # The GPUs a shard was given (a Slurm array's GRES: `0` in one, `1` in the next)
        # are the run's GPU list, which merge takes as one command's whatever `--gpus`
        # each shard had: every merge of a GPU job array warned of them.
        if not row["cells"] and row["name"] not in HANDED_OUT_GPUS
    }
    if differing:
        warnings.append(
            "shards ran in different environments (the report shows the first): "
            + ", ".join(sorted(differing))
        )
    # A shard without a capture is compared with none (compare's one line says why).
    uncaptured = list(dict.fromkeys(c["not_captured"] for c in changes if c["not_captured"]))
    if uncaptured:
        warnings.append(
            "shards' environments not compared (the report shows the first's): "
            + "; ".join(uncaptured)
        )
    # A shard run after the script was edited ran another program (the files both name).
    edited = {
        name
        for run in runs[1:]
        for name in files_change(first.environment, run.environment, "", "")["changed"]
    }
    if edited:
        warnings.append(
            "shards ran other versions of the program's files (the report shows the first's "
            "environment): " + ", ".join(sorted(edited))
        )
    filters = _merged_filters(runs)
    jobs = _jobs_of(runs)
    return replace(
        first,
        run_id=run_id or first.run_id,
        runner="+".join(dict.fromkeys(run.runner for run in runs)),
        started=min(run.started for run in runs),
        finished=max(run.finished for run in runs),
        cells=tuple(cells),
        warnings=tuple(warnings),
        interrupted=any(run.interrupted for run in runs),
        # A shard's own resume is no resume of the merged run: the first shard's note said
        # `reprospec run --resume MERGED-ID` (no store holds it), and only in that order.
        resumed=None,
        # In no store: the first shard's is not the merged run's.
        store=None,
        shard="",
        command_line=_merged_command_line(runs, filters),
        standalone=_merged_standalone(runs, cells),
        # The merged run is no shard, and holds every run's cells: what `compare` diffs
        # against an unsharded run must not read `shard: (none) -> [1, 3]`.
        # `merged_from`: the runs it was made of, so that one given again beside them is
        # told a merge's (`_check_overlap`), and two runs of the same attempts are not.
        # `jobs`: the runs' `-j` where they all had one, else none: shards run at `-j 1`
        # and `-j 8` were rerun (the report's rerun, How to reproduce) at the first's.
        # `merged_jobs`: then each `-j` they ran at, which compare says (none is no run at
        # the spec's run.parallel).
        options={
            **{key: value for key, value in first.options.items() if key != MERGED_JOBS},
            "shard": None,
            "matrix_filters": list(filters),
            "jobs": jobs[0] if len(jobs) == 1 else None,
            MERGED_FROM: [run.run_id for run in runs],
            **({MERGED_JOBS: jobs} if len(jobs) > 1 else {}),
        },
    )


def _merged_standalone(runs: Sequence[RunResult], cells: Sequence[CellResult]) -> Standalone | None:
    """The standalone repro an unsharded run would have made: for the cell it chooses
    (plan/standalone.choose_cell), the one of the shard that ran the attempt it would run
    (its first failed as expected); else the first a shard made."""
    from reprospec.plan.standalone import choose_cell, repro_attempt

    chosen = choose_cell(cells)
    found: list[tuple[int, Standalone]] = []
    for run in runs:
        made = run.standalone
        if made is None or chosen is None or made.cell != chosen.cell.id:
            continue
        part = next((c for c in run.cells if c.cell.id == made.cell), None)
        number = repro_attempt(part) if part is not None else None
        found.append((_NONE if number is None else number, made))
    if found:
        return min(found, key=lambda pair: pair[0])[1]
    return next((run.standalone for run in runs if run.standalone is not None), None)


def named(run: RunResult) -> str:
    """A run given to merge as its message names it: a shard with its K/N, so no message
    reads as if a shard were the merged run (`cannot merge B into A` named the first shard
    as the run merged into, which the merge makes new)."""
    return f"shard {run.shard} ({run.run_id})" if run.shard else f"run {run.run_id}"


def _check_overlap(runs: Sequence[RunResult]) -> None:
    """No attempt of a cell in two runs given, refused naming both. `merge OUT/runs/*` after
    a first merge into that `--out` takes the merged run in beside the runs it holds, and
    was told `attempt 1 is in more than one shard (the same shard given twice?)` of runs
    that were no shards, with no word of which. The merged run is told so only where one
    of the two is a merge's (its options' `merged_from`): two full runs of one spec were
    told the same guess."""
    held: dict[tuple[str, int], RunResult] = {}
    for run in runs:
        for cell in run.cells:
            for attempt in cell.attempts:
                other = held.setdefault((cell.cell.id, attempt.attempt), run)
                if other is run:
                    continue
                if other.run_id == run.run_id:
                    raise UsageError(f"cannot merge: {named(run)} is given more than once")
                both = (
                    f"cannot merge: cell {cell.cell.id!r} attempt {attempt.attempt} is in "
                    f"both {named(other)} and {named(run)}"
                )
                merged = next((r for r in (run, other) if _merged_from(r)), None)
                if merged is None:
                    raise UsageError(
                        f"{both}: runs of the same cells' same attempts, which merge does "
                        "not join (it joins the shards of one run, or runs of other cells)"
                    )
                raise UsageError(
                    f"{both}: {named(merged)} is a run merge made (of "
                    f"{', '.join(_merged_from(merged))}), given beside the runs it holds "
                    "(merge writes its run under --out's runs/, which a glob of that folder "
                    "takes in)"
                )


def _merged_from(run: RunResult) -> list[str]:
    """The ids of the runs `run` was merged from ([] where merge did not make it)."""
    made_of = run.options.get(MERGED_FROM)
    return [str(run_id) for run_id in made_of] if isinstance(made_of, list) else []


def _not_with(run: RunResult, first: RunResult) -> str:
    return f"cannot merge {named(run)} with {named(first)}, the first run given"


def _different(run: RunResult, first: RunResult) -> UsageError:
    return UsageError(
        f"{_not_with(run, first)}: they ran different specs "
        f"({run.spec_name!r} and {first.spec_name!r}, or the same name with other text)"
    )


def _check_shards(runs: Sequence[RunResult]) -> None:
    """Sharded runs merge only as a complete set: a lost shard must not look like green."""
    shards = [run.shard for run in runs if run.shard]
    if not shards:
        return
    if len(shards) != len(runs):
        unsharded = ", ".join(run.run_id for run in runs if not run.shard)
        raise UsageError(
            f"cannot merge sharded and unsharded runs of a spec (unsharded: {unsharded})"
        )
    totals = {int(shard.split("/")[1]) for shard in shards}
    if len(totals) != 1:
        raise UsageError(f"these runs come from different splits: {', '.join(shards)}")
    total = totals.pop()
    seen = [int(shard.split("/")[0]) for shard in shards]
    duplicated = sorted({k for k in seen if seen.count(k) > 1})
    if duplicated:
        twice = [run.run_id for run in runs if run.shard == f"{duplicated[0]}/{total}"]
        raise UsageError(
            f"shard {duplicated[0]}/{total} is given more than once ({', '.join(twice)})"
        )
    missing = [f"{k}/{total}" for k in range(1, total + 1) if k not in seen]
    if missing:
        raise UsageError(
            f"missing {noun(len(missing), 'shard')} {', '.join(missing)}: merge all {total} "
            f"shards of the run (given: {', '.join(named(run) for run in runs)})"
        )


def _check_given(runs: Sequence[RunResult]) -> None:
    """Each shard holds the attempts its `--shard K/N` was given (plan/run.py's stride over
    the spec's cells, as the shard stored the spec and its `-m`), no other, and lacks one
    only where `run.stop_on` says it stopped that cell: a results.json cut short or edited
    to drop a cell merged without it (`2/2 cells reproduced` of a 3-cell spec), and a cell
    left with no attempt kept its stored verdict, `reproduced` on nothing. A stored spec
    whose cells cannot be planned again here is not checked."""
    shards = [run for run in runs if run.shard]
    if not shards or len(shards) != len(runs):
        return
    cells = _planned_cells(shards[0])
    repeat = _effective(shards[0], "repeat")
    if cells is None or not isinstance(repeat, int) or isinstance(repeat, bool):
        return
    ids = [cell.id for cell in cells]
    if not {cell.cell.id for run in shards for cell in run.cells} <= set(ids):
        # Cells the stored text does not plan: it is not what ran as written (a value of
        # the matrix masked as a secret when stored changes a cell's id). Not checked.
        return
    for run in shards:
        index, count = (int(n) for n in run.shard.split("/"))
        # Numbered from the run's first attempt (RunOptions.first_attempt; 1 unless said):
        # shards of `RunOptions(shard=..., first_attempt=5)` were refused as holding
        # attempts they were not given.
        first = run.options.get("first_attempt")
        first = first if isinstance(first, int) and not isinstance(first, bool) else 1
        given = {
            (ids[g % len(ids)], g // len(ids) + first)
            for g in range(index - 1, repeat * len(ids), count)
        }
        held = {(cell.cell.id, a.attempt) for cell in run.cells for a in cell.attempts}
        stopped = {cell.cell.id for cell in run.cells if stopped_counts(cell.reason)}
        extra = sorted(held - given)
        lost = sorted((cell, n) for cell, n in given - held if cell not in stopped)
        if not extra and not lost:
            continue
        cell, number = (extra or lost)[0]
        which = "holds" if extra else "has no result of"
        more = len(extra or lost) - 1
        raise UsageError(
            f"cannot merge {named(run)}: it {which} cell {cell!r} attempt {number}"
            + (f" and {more} more" if more else "")
            + f", where --shard {run.shard} of this spec was given "
            f"{plural(len(given), 'attempt')}: its results.json was cut short or edited; "
            f"run that shard again (reprospec run SPEC --shard {run.shard})"
        )


def _planned_cells(run: RunResult) -> Sequence[Cell] | None:
    """The cells a run's attempts were planned over: its stored spec's matrix, less its
    `-m`; None where they cannot be made again (the text no longer parses as a matrix)."""
    from reprospec.spec.matrix import MatrixError, matrix_cells, select
    from reprospec.spec.yamlsource import YamlSourceError, load_value

    filters = run.options.get("matrix_filters")
    try:
        document = load_value(run.spec_text)
        if not isinstance(document, dict):
            return None  # no spec stored to plan from
        section = document.get("matrix")
        cells = matrix_cells(section if isinstance(section, dict) else None)
        return select(cells, [str(f) for f in filters] if isinstance(filters, list) else [])
    except (YamlSourceError, MatrixError, UsageError):
        return None


# The options that change what a run's attempts are or how they are judged, as the CLI
# names them: runs that differ in one are not one run, however their cells fit together.
# (`-j`, the runner, `--out` or `--gpus` may differ between one run's shards, machines;
# where `-j` differs, the merged run keeps none.)
_SAME_OPTIONS = (
    # `--set` first: a setting of run.timeout is told as the `--set` it is.
    ("overrides", "--set"),
    ("repeat", "--repeat"),
    ("timeout", "--timeout"),
    ("stop_on", "run.stop_on"),
    ("observe", "--observe"),
    ("preload", "--preload"),
    # A search's probe numbers its attempts from this (RunOptions.first_attempt): shards
    # of another first number are another run's draws, not this one's other attempts.
    ("first_attempt", "first attempt numbers"),
)


def _check_options(runs: Sequence[RunResult]) -> None:
    """Runs merge only where one command made them: shards of one split hold one run's
    attempts only with its `-m`, and any two runs only with its attempts' options. Two
    shards of `-m p=0` and `-m p=1` merged into half of each cell's attempts, and runs of
    `--repeat 2` and `--repeat 4` into a run `--repeat 4` reruns with more, both silently.
    (Unsharded runs of other cells, one job per cell, merge: their `-m` differ alone.)"""
    first = runs[0]
    keys = [*_SAME_OPTIONS, *((("matrix_filters", "-m"),) if first.shard else ())]
    for run in runs[1:]:
        for key, name in keys:
            mine, theirs = first.options.get(key), run.options.get(key)
            if key == "matrix_filters":
                same = _as_set(mine) == _as_set(theirs)  # in another order, the same cells
            elif key == "overrides":
                same = _settings(mine) == _settings(theirs)
            elif key in _SPEC_OWN:
                same = mine == theirs or _effective(first, key) == _effective(run, key)
            else:
                same = mine == theirs
            if not same:
                raise UsageError(
                    f"{_not_with(run, first)}: they ran with other "
                    f"{name} ({_shown_in(first, key)} and {_shown_in(run, key)}); "
                    "merge the runs (or shards) of one "
                    "command"
                )


def _as_set(value: object) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


def _settings(value: object) -> dict[str, str]:
    """`--set PATH=VALUE` overrides as what they set: each path's last value (a later
    `--set` of a path overrides an earlier one, so `x=1 x=2` and `x=2 x=1` are not one
    command's, where compared as sets they were; other paths in another order are)."""
    settings: dict[str, str] = {}
    for override in value if isinstance(value, list) else ():
        path, _, setting = str(override).partition("=")
        settings[path.strip()] = setting.strip()
    return settings


# The options a spec's `run` section sets too, with the value a run takes where neither
# does: `--repeat 3` runs a `repeat: 3` spec's attempts, and merging it with a shard run
# without it was refused "other --repeat (3 and none)".
_SPEC_OWN: dict[str, JsonValue] = {"repeat": 1, "timeout": DEFAULT_TIMEOUT_S, "stop_on": "never"}


def _effective(run: RunResult, key: str) -> JsonValue:
    """The value of a `_SPEC_OWN` option the run's attempts ran under: the command line's,
    else the spec's own `run.KEY` (as the run stored the spec), else the default; a
    timeout in seconds, so `90s` and `1.5m` are one."""
    value = run.options.get(key)
    if value is None:
        value = _spec_own(run, key)
    if value is None:
        value = _SPEC_OWN[key]
    if key == "timeout" and not (isinstance(value, str) and "${{" in value):
        try:
            return parse_duration(value)
        except (TypeError, ValueError, OverflowError):
            return value
    return value


def _unread_axes(run: RunResult, cells: Sequence[CellResult]) -> list[str]:
    """The run's warning of each matrix axis read by nothing, judged over the merged cells.

    A run warns of such an axis only where its cells ran two of its values (pipeline/
    stages.py): each shard of `seed: [1, 2]` may hold one value, so no shard warned, and the
    merged run, whose cells are copies of each other, was silent where the unsharded run
    said so."""
    from reprospec.spec.checks.cells import unread_axes, unread_axis_message
    from reprospec.spec.yamlsource import YamlSourceError, load_value

    try:
        document = load_value(_spec_of(run))
    except YamlSourceError:
        return []
    if not isinstance(document, dict):
        return []
    return [unread_axis_message(axis) for axis in unread_axes(document, [c.cell for c in cells])]


def _spec_own(run: RunResult, key: str) -> JsonValue:
    """The spec's own `run.KEY` as the run stored the spec (None: it sets none, or the
    stored text is no YAML mapping)."""
    from reprospec.spec.yamlsource import YamlSourceError, load_value

    try:
        document = load_value(run.spec_text)
    except YamlSourceError:
        return None
    section = document.get("run") if isinstance(document, dict) else None
    return section.get(key) if isinstance(section, dict) else None


def _spec_of(run: RunResult) -> str:
    """The spec a run ran, without the line a run with `--set` begins its stored text with
    (`# resolved from s.yaml with: --set a=1 --set b=2`): the same settings in another
    order resolve to one spec, and `_check_options` tells settings that are not one."""
    text = run.spec_text
    if text.startswith(RESOLVED_SPEC):
        # Written out again: a shard stored before `dump_yaml` wrote a multi-line string
        # as a literal block (`|`, where it was double-quoted) ran the same spec.
        from reprospec.spec.load import written_again

        body = text.partition("\n")[2]
        return written_again(body) or body
    return text


def _shown_in(run: RunResult, key: str) -> str:
    """`key`'s option in `run` as a person reads it, with the spec's own value where the
    command line gave none and the spec sets one (`none: the spec's 3`)."""
    value = run.options.get(key)
    if value is None and key == "first_attempt":
        return "1"  # stored only where it is not
    if value is None and key in _SPEC_OWN:
        own = _spec_own(run, key)
        if own is not None:
            return f"none: the spec's {_shown(own)}"
    return _shown(value)


def _shown(value: object) -> str:
    """An option's stored value as a person reads it: `none` for the spec's own."""
    if value is None or value == [] or value is False:
        return "none"
    if value is True:
        return "yes"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _filters_of(run: RunResult) -> list[str]:
    found = run.options.get("matrix_filters")
    return [str(f) for f in found] if isinstance(found, list) else []


def _merged_filters(runs: Sequence[RunResult]) -> tuple[str, ...]:
    """The `-m` filters that select every merged run's cells: per axis that every run
    filtered, the values of any of them (`-m` values of one axis are alternatives).

    Runs of one cell each (`plan --format github`, one job per cell) merge into every cell,
    not into the first job's: an axis some run left open stays open.
    """
    each = [_filters_of(run) for run in runs]
    if all(filters == each[0] for filters in each):
        return tuple(each[0])  # shards of one run: its own filters
    axes = [{f.split("=", 1)[0] for f in filters} for filters in each]
    shared = set.intersection(*axes)
    by_axis: dict[str, dict[str, None]] = {}  # axis by axis, as a person writes them
    for f in (f for filters in each for f in filters):
        axis = f.split("=", 1)[0]
        if axis in shared:
            by_axis.setdefault(axis, {})[f] = None
    return tuple(f for values in by_axis.values() for f in values)


def _merged_command_line(runs: Sequence[RunResult], filters: Sequence[str]) -> str:
    """The first run's command without its `--shard`, and with the merged run's `-m`
    filters in place of its own when the runs selected other cells.

    The pytest plugin's runs (one per cell) recorded the pytest command line, whose `-m` is
    a marker expression: the merged run's filters were appended to it (`pytest --reprospec
    s.yaml -m mode=a -m mode=b`, which pytest refuses) and a `-m segfault` of its own taken
    out. The session's line is kept where every run was made by it, else `reprospec run`
    of the spec with the filters and the options the runs ran under (their `--repeat`,
    `--runner`, `--set`s: one `--repeat 5` on venv was recorded to run 1 attempt locally).
    Runs that recorded none (made from Python) give none."""
    # shell_split: shlex read a `$'b\xfe.tar.gz'` word (shell_join's) as `$` and another
    # file's name.
    from reprospec.core.logtext import shell_join, shell_split
    from reprospec.core.runoptions import typed_as

    first = runs[0]
    if first.options.get("purpose") == "pytest":
        if all(run.command_line == first.command_line for run in runs):
            return first.command_line
        options = {**first.options, "matrix_filters": list(filters), "jobs": _merged_jobs(runs)}
        return rerun_command(options, first.spec_path, as_ran=True)
    if not first.command_line:
        # Runs made from Python (`reprospec.run`, a search's probe) record none: the merged
        # run has none either, and How to reproduce builds it from the merged options (their
        # filters). Split, "" gave the merged `-m`s alone, `-m crash=true -m crash=false`.
        return ""
    command_line = _without_shard(first.command_line)
    if _merged_jobs(runs) is None:
        command_line = _without_jobs(command_line)
    if list(filters) == _filters_of(first):
        return command_line
    try:
        words = shell_split(command_line)
    except ValueError:
        return command_line  # not shell words: left as the run wrote it
    kept: list[str] = []
    at: int | None = None
    value_next = False
    for word in words:
        if value_next:
            value_next = False
            continue
        # `-m X`, `-mX`, `--matrix X`, `--matrix=X`, and `--mat X` as argparse reads it
        if word.startswith("-m") or typed_as(word.split("=", 1)[0], "--matrix"):
            at = len(kept) if at is None else at
            value_next = word == "-m" or typed_as(word, "--matrix")
            continue
        kept.append(word)
    at = len(kept) if at is None else at
    given = [word for f in filters for word in ("-m", f)]
    return shell_join(kept[:at] + given + kept[at:])


def _merged_jobs(runs: Sequence[RunResult]) -> JsonValue:
    """The runs' `-j` where every one ran with the same, else None (the spec's
    `run.parallel`): a race reproduces at another rate at another `-j`."""
    jobs = _jobs_of(runs)
    return jobs[0] if len(jobs) == 1 else None


def _jobs_of(runs: Sequence[RunResult]) -> list[JsonValue]:
    """Each `-j` the runs ran at, once, in their order (None: the spec's run.parallel); a
    merged run's are those of the runs it was made of."""
    jobs: list[JsonValue] = []
    for run in runs:
        made = run.options.get(MERGED_JOBS)
        for value in made if isinstance(made, list) else [run.options.get("jobs")]:
            if value not in jobs:
                jobs.append(value)
    return jobs


def _spelled(option: str) -> str:
    """A pattern of `option` whole or cut as argparse takes it (`typed_as`): `--shar 1/2`
    ran as `--shard 1/2`, and kept in the merged run's line it reran one shard."""
    import re

    from reprospec.core.runoptions import typed_as

    cuts = [option[:end] for end in range(len(option), 0, -1) if typed_as(option[:end], option)]
    return "(?:" + "|".join(re.escape(cut) for cut in cuts) + ")"


def _without_jobs(command_line: str) -> str:
    """The command without its `-j N` (`-jN`, `--jobs N`, `--jobs=N`, `--job N`)."""
    return _without_option(command_line, rf"\s(?:-j\s*|{_spelled('--jobs')}(?:=|\s+))\d+(?=\s|$)")


def _without_shard(command_line: str) -> str:
    """The command that reruns everything: the shard's own `--shard K/N` (`--shar K/N`)
    removed."""
    return _without_option(command_line, rf"\s{_spelled('--shard')}(?:=|\s+)\S+")


def _without_option(command_line: str, pattern: str) -> str:
    """`command_line` with each match of `pattern` (a blank, then an option and its value)
    taken out where it is words of their own before any lone `--`, as text: the user's
    quoting kept (split and joined again, `-k "a b"` became `-k 'a b'`). A match inside a
    quoted word (`--set 'environment.env.MAKEFLAGS=-k -j 4 -l'`) is that word's text, and
    taking it out set another env in the merged run's rerun line than the one that ran."""
    import re

    from reprospec.core.logtext import shell_split, words_before

    try:
        words = shell_split(command_line)
    except ValueError:  # a quotation not closed: no word of it is read
        return command_line
    line = command_line
    removed = True
    while removed:
        removed = False
        for found in re.finditer(pattern, line):
            try:
                # Past the match's blank: `a\ -j 4` is one word.
                head, alone = words_before(line, found.start() + 1)
                option = shell_split(found.group())
                rest = line[: found.start()] + line[found.end() :]
                left = shell_split(rest)
            except ValueError:  # inside a quotation, or a value cut inside one
                continue
            if "--" in head:
                break
            at, end = len(head), len(head) + len(option)
            if alone and words[at:end] == option and left == words[:at] + words[end:]:
                line, words, removed = rest, left, True
                break
    return line
