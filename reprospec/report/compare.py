"""Two runs compared (`reprospec compare`, `reprospec.compare`): the answer and its views.

`RunComparison` holds what `store/compare.py` finds between two runs with the spec name
it is read under; it renders as `compare` prints it ("text", one line each: the spec, the
program's files, the options, the environment, each cell that changed) or as its
`--format json` ("json"), and "md" is the text as a report quotes it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from os import PathLike
from pathlib import Path

from reprospec.core.caller import said
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.redact import MASK, looks_secret
from reprospec.core.results import RunResult
from reprospec.environment.facts import NOT_CAPTURED, Difference
from reprospec.errors import EXIT_OK, UsageError
from reprospec.report.paths import PathNames, shared
from reprospec.store.compare import (
    MERGED_JOBS,
    Comparison,
    FilesChange,
    OptionChange,
    VariableChange,
)

FORMATS = ("text", "json", "md")


@frozen
class RunComparison:
    """What changed from `run_a` to `run_b` (`diff`, `compare --format json`'s value), read
    as the runs of `spec_name`.

    The comparison is kept as the text `compare --format json` prints (`found`), so that
    the frozen value never changes: `diff` is read from it anew each time, a plain mapping
    its reader may change without changing the comparison (a dict held in the frozen value
    was changed by any `diff["changed"].clear()`, and made it unhashable)."""

    run_a: str
    run_b: str
    spec_name: str
    found: str

    def __post_init__(self) -> None:
        # The comparison's mapping where its text is asked (as this value held it before):
        # kept as that text, so that no later change to the mapping reaches it.
        found: object = self.found
        if not isinstance(found, str):
            object.__setattr__(self, "found", _text(found))

    @classmethod
    def of(cls, run_a: str, run_b: str, spec_name: str, diff: Comparison) -> RunComparison:
        """The comparison of `diff` (store/compare.py's), kept as its JSON text."""
        return cls(run_a, run_b, spec_name, _text(diff))

    @property
    def diff(self) -> Comparison:
        """What `compare --format json` prints, as a mapping: a new one each time it is read."""
        diff: Comparison = json.loads(self.found)
        return diff

    def render(self, fmt: str = "md") -> str:
        """What `compare` prints ("text"), its `--format json` ("json"), or the text as a
        Markdown report quotes it ("md", the default, as every answer's: core/answers.py)."""
        if fmt == "json":
            return self.found
        if fmt == "text":
            return "\n".join(lines(self.diff, self.spec_name))
        if fmt == "md":
            text = "\n".join(lines(self.diff, self.spec_name))
            return f"## Compare {self.run_a} -> {self.run_b}\n\n```\n{text}\n```\n"
        shown = ", ".join(repr(f) for f in FORMATS)
        raise UsageError(f"a comparison renders as {shown}, not {fmt!r}")

    def exit_code(self) -> int:
        """`compare`'s: 0, whatever changed (a difference is its answer, not a failure)."""
        return EXIT_OK


def _text(diff: object) -> str:
    """A comparison's mapping as `compare --format json` prints it."""
    return json.dumps(diff, indent=2, ensure_ascii=False, default=str)


def compare_runs(
    run_a: RunResult | str | Path,
    run_b: RunResult | str | Path,
    out: str | Path = Path(".reprospec"),
) -> RunComparison:
    """The two runs compared, each a `RunResult` or what `compare` takes for one: a run
    folder, its results.json, a run id or a unique prefix under `out`, `latest~N`."""
    from reprospec.store.compare import compare

    a, b = (_run(run, Path(out), name) for run, name in ((run_a, "run_a"), (run_b, "run_b")))
    given = not isinstance(run_a, RunResult) and not isinstance(run_b, RunResult)
    if _one_run(a, b, given=given):
        # `compare latest latest` (meant `latest~1 latest`) said "no cell changed", as if
        # two runs had been compared and agreed; so did the API's `compare(result,
        # "latest")` of the result just run, and `compare(result, result)`. Two results of
        # one id that differ (one changed with dataclasses.replace) are compared.
        example = said("`compare latest~1 latest`", "`reprospec.compare('latest~1', 'latest')`")
        raise UsageError(
            f"both runs given are run {a.run_id}: compare two runs ({example}: the run "
            "before the latest, then the latest)"
        )
    if shared(a.paths) or shared(b.paths):
        # A bundle's copy names the sender's paths `<home>/...` (report/paths.py): each
        # run is read so, or every path of its spec, cells and logs was a difference.
        a, b = _as_shared(a), _as_shared(b)
    return RunComparison.of(a.run_id, b.run_id, a.spec_name, compare(a, b))


def _one_run(a: RunResult, b: RunResult, *, given: bool) -> bool:
    """Whether `a` and `b` are one stored run: one id in one store (`load_result`'s store is
    absolute, the one read from an id here as `out` was typed), and, of a `RunResult`
    passed, the same result: one changed since (`dataclasses.replace`) is another run, and
    one made in memory (no store) is no stored run, compared as given."""
    stores = [run.store.resolve() if run.store is not None else None for run in (a, b)]
    if a.run_id != b.run_id or stores[0] != stores[1]:
        return False
    if given:
        return True
    same = dataclasses.replace(a, store=None) == dataclasses.replace(b, store=None)
    return stores[0] is not None and same


def _as_shared(run: RunResult) -> RunResult:
    """`run` with its paths named as a bundle's copy of it names them."""
    from reprospec.store.resultsjson import run_from_dict, run_to_dict

    short = PathNames.for_bundle(run.paths).shorten
    named = run_from_dict({key: _named(item, short) for key, item in run_to_dict(run).items()})
    return dataclasses.replace(named, store=run.store)


def _named(value: JsonValue, short: Callable[[str], str]) -> JsonValue:
    if isinstance(value, str):
        return short(value)
    if isinstance(value, list):
        return [_named(item, short) for item in value]
    if isinstance(value, dict):
        return {short(key): _named(item, short) for key, item in value.items()}
    return value


def _run(run: object, out: Path, name: str) -> RunResult:
    from reprospec.store.resultsjson import load_run

    if isinstance(run, RunResult):
        return run
    if isinstance(run, (str, PathLike)):
        return load_run(run if isinstance(run, str) else Path(run), out)
    raise UsageError(f"{name} takes a RunResult, a run's id or its folder, got {run!r}")


def lines(diff: Comparison, spec_name: str) -> list[str]:
    """The comparison as text lines, for people."""
    out = [f"{diff['run_a']} -> {diff['run_b']} ({spec_name})"]
    # Said first: every rate below is the perturbed program's where a run was perturbed.
    was, now = ("; ".join(notes) or "plain (no perturbation)" for notes in diff["perturbed"])
    if was != now:
        out.append(f"perturbed: {was} -> {now}")
    elif diff["perturbed"][0]:
        out.append(f"perturbed, both runs: environment.perturb ({was})")
    spec = diff["spec"]
    if not spec["same"]:
        # Comparing two different incidents is allowed, but cells then mean other things.
        name_a, name_b = spec["names"]
        if name_a == name_b:
            out.append(f"warning: both runs ran spec {name_a!r}, with other text:")
        else:
            out.append(f"warning: the runs ran different specs ({name_a!r} and {name_b!r}):")
        out += [f"  {line}" for line in spec["diff"]]
    else:
        out.append("same spec")
    out += _files(diff["files"])
    if diff["options"]:
        out.append("options that differ:")
        # A comparison kept before it named the runners reads as both local.
        runners = diff.get("runners") or ["local", "local"]
        out += [f"  {line}" for line in _option_rows(diff["options"], runners)]
    else:
        out.append("same options")
    if diff["environment"]:
        out.append("environment differences:")
        out += _environment(diff["environment"])
    if diff["variables"]:
        out.append("environment variables that differ:")
        out += [f"  {_variable(row)}" for row in diff["variables"]]
    if diff["not_captured"]:
        out.append(f"environment not compared: {diff['not_captured']}")
    elif not diff["environment"] and not diff["variables"]:
        out.append("same environment")
    if diff["inherited"]:
        out.append(f"variables inherited from the shell: {diff['inherited']}")
    if diff["per_cell"]:
        # Named, so "same environment" is not read as covering what each cell chose.
        out.append(
            "not compared run to run (a toggle chose them per cell; the cells show each one's): "
            + ", ".join(diff["per_cell"])
        )
    if diff["cells"]:
        out.append("cells that changed:")
        for row in diff["cells"]:
            before, after = row["verdict"]
            verdict = f"{before} -> {after}" if before != after else f"{before}, both runs"
            out.append(f"  {row['cell']}: {verdict} ({row['change']})")
            was, now = (_outcomes(o) for o in row["outcomes"])
            out.append(f"    outcome   {was}" + ("" if was == now else f" -> {now}"))
            exp_a, exp_b = row["expected"]
            out.append(f"    expected  {exp_a}" + ("" if exp_a == exp_b else f" -> {exp_b}"))
            if row["failed"]:
                was, now = (_failure_rate(failed, ran) for failed, ran in row["failed"])
                out.append(f"    failed    {was} -> {now} (95% intervals apart)")
    elif diff["in_both"]:
        out.append("no cell changed")
    else:
        out.append("no cell in both runs: none compared")
    for label, only in (
        ("only in the first run", diff["only_a"]),
        ("only in the second run", diff["only_b"]),
    ):
        if only:
            out.append(f"{label}: {', '.join(only)}")
    return out


# pip's list of each interpreter's packages (collect_env): two runners' interpreters (a
# venv and a container) differ in nearly all of them, which buried the few rows above
# (117 lines). The first few are shown; JSON has them all.
_PIP = "collect_env.pip."
_PIP_SHOWN = 8


def _environment(rows: list[Difference]) -> list[str]:
    """The environment's differences, a line each, pip's package list cut to its first few."""
    out: list[str] = []
    pip = 0
    for row in rows:
        pip += row["key"].startswith(_PIP)
        if _taken(row):
            part = row["key"].removesuffix(NOT_CAPTURED)
            was, now = (_TAKEN[side] for side in (row["a"], row["b"]))
            out.append(f"  {part}: {was} -> {now} (not compared field by field)")
        elif pip <= _PIP_SHOWN or not row["key"].startswith(_PIP):
            out.append(f"  {row['key']}: {row['a']!r} -> {row['b']!r}")
    if pip > _PIP_SHOWN:
        out.append(f"  ... and {pip - _PIP_SHOWN} more of {_PIP}* (`--format json` lists them)")
    return out


# environment_diff's one row for a part only one run captured (`torch` where only one
# spec said it uses torch), as its two sides read.
_TAKEN: dict[JsonValue, str] = {False: "not captured", True: "captured", None: "missing"}


def _taken(row: Difference) -> bool:
    """Whether `row` is environment_diff's one row for a part only one run captured (its
    sides True, False or None), said as a word each, not as a value."""
    return row["key"].endswith(NOT_CAPTURED) and all(
        side is None or isinstance(side, bool) for side in (row["a"], row["b"])
    )


def _files(files: FilesChange) -> list[str]:
    """The program's files that differ, one a line (`train.py: changed`); `same program
    files (3)`; or, without a record of either run's, that it is unknown, never "same".
    Then what was not compared: the files the command names that it may write, and the
    jobs a run did not read."""
    rows = [
        *(
            f"  {name}: changed" + (" (size or time)" if name in files["by_size"] else "")
            for name in files["changed"]
        ),
        *(f"  {name}: added (only in the second run)" for name in files["added"]),
        *(f"  {name}: removed (only in the first run)" for name in files["removed"]),
    ]
    if rows:
        out = ["program files that differ:", *rows]
        out += [f"  {files['unknown']}"] if files["unknown"] else []
    elif files["unknown"]:
        out = [f"program files: unknown ({files['unknown']})"]
    else:
        out = [f"same program files ({files['same'] or 'none named'})"]
    if files["workdirs"]:
        was, now = files["workdirs"]
        out.append(f"  matched by their paths in each run's workdir: {was} -> {now}")
    if files["named"]:
        shown = ", ".join(files["named"][:_NAMED_SHOWN])
        more = len(files["named"]) - _NAMED_SHOWN
        out.append(
            "  not compared, named by the command, which may write them (list in `files` "
            f"what it reads): {shown}" + (f" and {more} more" if more > 0 else "")
        )
    if files["partial"]:
        out.append(f"  partly read: {files['partial']}")
    return out


# The files named and not compared that the text shows (JSON has them all).
_NAMED_SHOWN = 5


def _variable(row: VariableChange) -> str:
    """`OMP_NUM_THREADS: '1' -> '8' (cell mode=b)`; a secret's by its change alone,
    `HF_TOKEN: unset -> set (secret: values not shown)`, and so one the shell gave every
    attempt that the capture shows no value of, `MYAPP_MODE: changed (inherited ...)`."""
    from reprospec.core.words import noun

    if looks_secret(row["name"]) or MASK in (row["a"], row["b"]):  # by name or value's shape
        shown = f"{row['change']} (secret: values not shown)"
    elif row["a"] is None and row["b"] is None:
        # Inherited from the engine's shell, recorded by digest only (store/digests.py).
        shown = f"{row['change']} (inherited from the shell: values not recorded)"
    else:
        shown = " -> ".join("unset" if v is None else repr(v) for v in (row["a"], row["b"]))
    where = f" ({noun(len(row['cells']), 'cell')} {', '.join(row['cells'])})"
    return f"{row['name']}: {shown}{where if row['cells'] else ''}"


def _failure_rate(failed: int, ran: int) -> str:
    """`4/30 (0.05–0.30)`: failed of ran, with its Wilson 95% interval."""
    from reprospec.core.rates import wilson
    from reprospec.core.words import interval_phrase

    return f"{failed}/{ran} ({interval_phrase(*wilson(failed, ran))})"


def _outcomes(counts: dict[str, int]) -> str:
    """`crash:SIGSEGV:worker:validation x2, pass x1`; `no attempt` for none."""
    return ", ".join(f"{sig} x{n}" for sig, n in counts.items()) or "no attempt"


def _shown(value: object) -> str:
    return "(none)" if value is None or value == [] else repr(value)


# The options whose None is no value of their own but the spec's: `--timeout 90s` against a
# run without one read `timeout: '90s' -> (none)`, as if the second had no timeout at all.
_THE_SPECS = {
    "jobs": "run.parallel",
    "repeat": "run.repeat",
    "timeout": "run.timeout",
    "stop_on": "run.stop_on",
    "preload": "run.preload",
}


# What a run without `--python` ran its cells in, by its runner: not no interpreter.
_NO_PYTHON = {
    "local": "reprospec's own interpreter",
    "venv": "a venv on the spec's environment.python, else on reprospec's own interpreter",
    "docker": "the image's python3",
}


def _option_rows(rows: list[OptionChange], runners: list[str]) -> list[str]:
    """`jobs: 1 -> (none: the spec's run.parallel)`, a row per option that differs. A merged
    run whose runs ran at different `-j` (MERGED_JOBS) says theirs as its none: `jobs: 1 ->
    (none: merged from runs at -j 1, -j 8)`, not the spec's run.parallel it did not run at."""
    merged = next((row for row in rows if row["key"] == MERGED_JOBS), None)
    ran = (merged["a"], merged["b"]) if merged is not None else (None, None)
    if merged is not None:
        # Both runs' `jobs` none (no row of it): the merged `-j`s' row is the `jobs` row.
        jobs = any(row["key"] == "jobs" for row in rows)
        rows = [
            {"key": "jobs", "a": None, "b": None} if row is merged else row
            for row in rows
            if row is not merged or not jobs
        ]
    out = []
    for row in rows:
        said = []
        for value, runner, runs in zip((row["a"], row["b"]), runners, ran, strict=False):
            if row["key"] == "jobs" and value is None and isinstance(runs, list):
                shown = ", ".join(f"-j {n}" if n is not None else "run.parallel" for n in runs)
                said.append(f"(none: merged from runs at {shown})")
            else:
                said.append(_option(row["key"], value, runner))
        out.append(f"{row['key']}: {' -> '.join(said)}")
    return out


def _option(key: str, value: object, runner: str = "local") -> str:
    """A run option's value as the CLI gives it: None of an option the spec sets says so,
    `--preload none` (`[]`, fresh interpreters) is not the spec's preload (None: both read
    `(none) -> (none)`), no `--python` is the interpreter the run's `runner` gives, and a
    shard is `2/8`, not `[2, 8]`."""
    if value is None and key in _THE_SPECS:
        return f"(none: the spec's {_THE_SPECS[key]})"
    if key == "python" and value is None:
        # Docker never has one (refused with it) and runs the image's python3; the venv
        # runner builds on the spec's environment.python, found by uv.
        return f"(none: {_NO_PYTHON.get(runner, _NO_PYTHON['local'])})"
    if key == "first_attempt" and value is None:
        # Stored only where it is not 1 (RunOptions.to_dict): a probe numbered from 37
        # against a plain run read `first_attempt: (none) -> 37`.
        return "1"
    if key == "preload" and value == []:
        return "none (fresh interpreters)"
    if key == "shard" and isinstance(value, list) and len(value) == 2:
        return f"{value[0]}/{value[1]}"
    return _shown(value)
