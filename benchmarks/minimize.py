"""`reprospec minimize` on real-shaped programs, against the oracle other reducers use.

    python benchmarks/minimize.py [--cases loader,child-crash,...] [--budget 1000] [-j 2]
                                  [--oracles minimize,one-attempt,deterministic] [--repeat N]

Cases (each a command spec whose passing cells hold the bug's condition):

- `loader`: specs/segfault-command.yaml, train_loop.py's segfault at validation step 7
  with workers and pinned memory (a DataLoader worker crash, no torch);
- `loader-500`: the same with 500 lines of unrelated code pasted in (the stdlib's
  textwrap.py and shlex.py, as found in a real script's vendored helpers);
- `import-hang`: benchmarks/data/minimize/import_hang, a plugin imported by the
  script deadlocks at import time (a real deadlock; each hang costs the 3 s timeout);
- `child-crash`: benchmarks/data/minimize/child_crash, a fork child dies of SIGSEGV in
  a C call (ctypes) and the parent raises;
- `flaky`: benchmarks/data/minimize/flaky, a real SIGSEGV in about 30% of runs (the
  OS's randomness, not the code's) when the cache is shared;
- `flaky-guarded`: benchmarks/data/minimize/flaky_guarded, the same kind of 30% race,
  where one statement (`if not shared: view = cache.copy()`) keeps the passing cell
  passing: a reducer that drops it still sees the failing cell fail, and the passing cell
  fails only 30% of the time, so a one-attempt look at it passes 70% of the time.
- `pipeline`: benchmarks/data/minimize/pipeline, a user's 57-line data pipeline whose
  `math.log` of a zero value raises ValueError (math domain error) with `--log-scale 1`,
  every time: a deterministic failure, the cost of a clean candidate at its plainest.

Each case runs once per oracle: `minimize`, reprospec's (the failing cell's expect with
the original's signature, the passing cells, flaky-aware verdicts); `one-attempt`, the
same signature and passing cells judged as a deterministic reducer judges, one attempt
per candidate and per passing cell (flakiness is then the only difference); and
`deterministic`, the oracle of C-Reduce, cvise and pysource-minimize (one attempt per
candidate: it "fails" when the failing cell fails as its expect says, with no signature
and no passing cells). `--repeat N` pairs them: each repetition runs every oracle in
turn (the order reversed every other time), under the same load. Each row gives wall
time and the CPU time of the process tree (this process and every attempt it reaped).
Each result is then checked the same way, by the spec's own expect: its
failing cell runs 10 attempts (the signature must be the original's) and each
passing cell 5. The table prints lines before and after, attempts, the result's
rate, and whether the result is still the bug: "yes", "wrong" (a passing cell
fails, or another signature) or "does not reproduce".

Measured on a 2-core machine shared with other work (-j 2; lines of code, not
blank, not comments; each run separately, budgets as shown):

case / oracle / budget: lines of code before -> after; attempts; the result's rate;
the check (failing cell with the signature, passing cells):

- loader / minimize / 1000: 78 -> 31 (96 -> 35 lines of file); 871, done; 20/20; yes
  (passing 15/15)
- loader-500 / minimize / 1000: 433 -> 32 (597 -> 36 lines of file); 1000, out of
  budget; 20/20; yes (passing 15/15)
- child-crash / minimize / 250: 38 -> 27; 250, out of budget; 5/5; yes (10/10, 5/5)
- child-crash / one attempt, no signature, no passing cells / 120: 38 -> 23; 120; 5/5;
  wrong: the passing cell now raises (passing 0/5)
- flaky / minimize / 300: 34 -> 32; 300, out of budget; 3/6; yes (3/10, 5/5)
- flaky / one attempt, no signature, no passing cells / 120: 34 -> 32; 120; 2/5; yes
  (4/10, 5/5)

Both loader results keep `if not (args.workers > 0 and pinned): crash_here = None`. At a
30% rate a dropped candidate costs 7 clean attempts (a failure of another kind counts as
clean), so 300 attempts shrink little. Later, with the one-attempt oracle and --repeat
(docs/performance.md#minimize has the tables, with wall and CPU time):

- flaky / 300, two paired repetitions: minimize 34 -> 32 both times; one-attempt 34 -> 24
  and 34 -> 22 (the second unconfirmed by its own final check); deterministic 34 -> 26
  and 34 -> 24; every result still the bug in the check.
- import-hang / 200: minimize 40 -> 29, out of budget, yes (10/10, 5/5); deterministic
  40 -> 9, wrong: the passing cell hangs too (0/5).
- flaky-guarded / 300, checked by 30 failing and 20 passing attempts
  (`--check-failing 30 --check-passing 20`): minimize 65 -> 65 (p = 0.1, 22 clean
  attempts per dropped candidate: 13 candidates, none still failing), yes (9/30, 20/20);
  one-attempt 65 -> 59, wrong: the guard is gone, the passing cell crashes (13/20 passed);
  deterministic 65 -> 45, wrong: the random draw is gone too, every cell crashes every
  time (30/30, 0/20). A second repetition: minimize 65 -> 65, yes (5/30, 20/20);
  one-attempt 65 -> 51, yes (the guard kept, the random draw dropped: 30/30, 20/20);
  deterministic 65 -> 43, wrong (30/30, 0/20). `--repeat N` prints the medians per
  oracle after the rows.
- pipeline / minimize / 1000, -j 2: before the rate was learned, 57 -> 29 out of budget
  (1000 attempts, 647 candidates, 168 s); now 57 -> 29, the passes done, in 839 attempts
  (704 candidates, 132 s); yes (10/10, 5/5) both. With the passes that accept a candidate
  at p alone (a failure at 80% that failed 5 in 5 ended unconfirmed at two): 879 attempts,
  57 -> 29, 704 candidates, 120 s, yes (10/10, 5/5).
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reprospec import api  # noqa: E402
from reprospec.core.inputs import Cell  # noqa: E402
from reprospec.core.runoptions import RunOptions  # noqa: E402
from reprospec.minimize.driver import MinimizeOptions, minimize_spec  # noqa: E402
from reprospec.minimize.report import SPEC_NAME, Minimized, attempts  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "minimize"
CASES = (
    "loader",
    "loader-500",
    "import-hang",
    "child-crash",
    "flaky",
    "flaky-guarded",
    "pipeline",
)


@dataclass(frozen=True)
class Checked:
    """A minimized program run again by the spec's own expect."""

    failing: str  # matched/attempts with the original's signature
    passing: str  # passed/attempts over the passing cells
    verdict: str  # yes, wrong, does not reproduce


def case_spec(name: str, folder: Path) -> Path:
    """The case's spec, in a folder of its own (the workdir copied beside it)."""
    if name in ("loader", "loader-500"):
        work = folder / "fixtures"
        work.mkdir(parents=True)
        text = (ROOT / "specs" / "fixtures" / "train_loop.py").read_text()
        if name == "loader-500":
            text = paste_unrelated(text, 500)
        (work / "train_loop.py").write_text(text)
        shutil.copy(ROOT / "specs" / "segfault-command.yaml", folder / "spec.yaml")
        return folder / "spec.yaml"
    source = {
        "import-hang": "import_hang",
        "child-crash": "child_crash",
        "flaky": "flaky",
        "flaky-guarded": "flaky_guarded",
        "pipeline": "pipeline",
    }[name]
    shutil.copytree(DATA / source, folder, dirs_exist_ok=True)
    return folder / "spec.yaml"


def paste_unrelated(text: str, lines: int) -> str:
    """`text` with `lines` lines of unrelated stdlib code pasted in before `def main`."""
    pasted: list[str] = []
    for module in (textwrap, shlex_module()):
        pasted += Path(str(module.__file__)).read_text().splitlines()
    block = "\n".join(line for line in pasted if "__future__" not in line)
    block = "\n".join(block.splitlines()[:lines])
    # Cut where a top-level statement ends, so the pasted block parses.
    import ast

    cut = block.splitlines()
    while cut:
        try:
            ast.parse("\n".join(cut))
            break
        except SyntaxError:
            cut.pop()
    return text.replace("\ndef main()", "\n" + "\n".join(cut) + "\n\n\ndef main()", 1)


def shlex_module() -> types.ModuleType:
    import shlex

    return shlex


@dataclass(frozen=True)
class CheckSize:
    """Attempts of the check: the failing cell's, and each passing cell's."""

    failing: int = 10
    passing: int = 5


def check(
    found: Minimized, signature: str, passing: tuple[Cell, ...], out: Path, size: CheckSize
) -> Checked:
    """Run the result's spec by the original's expect: `size.failing` attempts of the failing
    cell, `size.passing` of each passing cell (the spec's passing cells, also for the oracle
    that did not run them)."""
    spec = api.load_spec(found.output / SPEC_NAME)
    filters = tuple(f"{a}={json.dumps(v)}" for a, v in found.cell.matrix.items())
    failing = api.run(
        spec,
        RunOptions(
            out=out, repeat=size.failing, jobs=2, matrix_filters=filters, purpose="minimize"
        ),
    )
    attempts = failing.cells[0].attempts
    same = sum(1 for a in attempts if a.matched and a.ran and a.ran.signature == signature)
    other = sum(1 for a in attempts if a.ran and a.ran.kind != "pass" and not a.matched)
    passed = ran = 0
    for cell in passing:
        cell_filters = tuple(f"{a}={json.dumps(v)}" for a, v in cell.matrix.items())
        result = api.run(
            spec,
            RunOptions(
                out=out,
                repeat=size.passing,
                jobs=2,
                matrix_filters=cell_filters,
                purpose="minimize",
            ),
        )
        for attempt in result.cells[0].attempts:
            ran += 1
            passed += attempt.ran is not None and attempt.ran.kind == "pass"
    if passed < ran or (same == 0 and other):
        verdict = "wrong"
    elif same == 0:
        verdict = "does not reproduce"
    else:
        verdict = "yes"
    return Checked(f"{same}/{len(attempts)}", f"{passed}/{ran}", verdict)


def tree_cpu() -> float:
    """CPU seconds of this process and of its reaped children (every attempt) so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def oracle_options(oracle: str, budget: int, folder: Path, jobs: int) -> MinimizeOptions:
    """`minimize`: reprospec's oracle. `one-attempt`: the same signature and passing cells,
    but one attempt per candidate and per passing cell (a deterministic reducer's belief:
    one clean run means it no longer fails). `deterministic`: C-Reduce's, cvise's and
    pysource-minimize's oracle: one attempt, any failure the expect accepts, no passing
    cells."""
    return MinimizeOptions(
        budget=budget,
        output=folder / "result",
        min_rate=None if oracle == "minimize" else 0.99,  # 0.99: one clean attempt drops it
        same_signature=oracle != "deterministic",
        passing_cells=oracle != "deterministic",
        run=RunOptions(out=folder / "out", jobs=jobs, purpose="minimize"),
    )


def run_case(
    name: str,
    budget: int,
    jobs: int,
    scratch: Path,
    oracles: list[str],
    repeat: int = 1,
    size: CheckSize = CheckSize(),
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    spec = case_spec(name, scratch / name / "spec")
    loaded = api.load_spec(spec)
    plan = api.plan_run(loaded, RunOptions())
    passing = tuple(c for c in plan.cells if plan.expectations[c.id].outcome == "pass")
    signature = ""
    # Paired: each repetition runs every oracle, in turn, under the same load.
    for rep in range(repeat):
        order = oracles if rep % 2 == 0 else list(reversed(oracles))
        for oracle in order:
            folder = scratch / name / oracle / str(rep)
            options = oracle_options(oracle, budget, folder, jobs)
            started, cpu = time.monotonic(), tree_cpu()
            found = minimize_spec(spec, options)
            seconds, cpu = time.monotonic() - started, tree_cpu() - cpu
            signature = signature or (found.signature if oracle != "deterministic" else "")
            r = found.result
            checked = (
                check(found, signature or found.signature, passing, folder / "check", size)
                if r.status not in ("refused", "infra-error")
                else Checked("-", "-", r.status)
            )
            rows.append(
                {
                    "case": name,
                    "oracle": oracle,
                    "repeat": rep,
                    "status": r.status,
                    "lines_before": r.original.lines,
                    "lines_after": r.program.lines,
                    "attempts": attempts(found),
                    "candidates": r.ran,
                    "rate": f"{r.rate.matched}/{r.rate.attempts}",
                    "rate_interval": f"{r.rate.low:.0%}-{r.rate.high:.0%}",
                    "seconds": round(seconds),
                    "cpu_s": round(cpu),
                    "check_failing": checked.failing,
                    "check_passing": checked.passing,
                    "still_the_bug": checked.verdict,
                    "signature": found.signature,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--oracles", default="minimize,one-attempt,deterministic")
    parser.add_argument("--repeat", type=int, default=1, help="paired runs of each oracle")
    parser.add_argument("--keep", type=Path, default=None, help="keep the results here")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--check-failing", type=int, default=10, help="check: failing attempts")
    parser.add_argument("--check-passing", type=int, default=5, help="check: per passing cell")
    args = parser.parse_args()
    size = CheckSize(args.check_failing, args.check_passing)
    rows: list[dict[str, object]] = []
    oracles = args.oracles.split(",")
    with tempfile.TemporaryDirectory(prefix="minimize-bench-") as tmp:
        scratch = args.keep or Path(tmp)
        for name in args.cases.split(","):
            rows += run_case(
                name.strip(), args.budget, args.jobs, scratch, oracles, args.repeat, size
            )
    print()
    print("| case | oracle | lines | attempts | wall s | CPU s | rate | still the bug (check) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['case']} | {row['oracle']} | {row['lines_before']} -> {row['lines_after']} "
            f"| {row['attempts']} | {row['seconds']} | {row['cpu_s']} | {row['rate']} "
            f"| {row['still_the_bug']} "
            f"(failing {row['check_failing']}, passing {row['check_passing']}) |"
        )
    if args.repeat > 1:
        print()
        print(medians(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def medians(rows: list[dict[str, object]]) -> str:
    """Per case and oracle over the repetitions: the medians, and how many results were the bug."""
    out = [
        "| case | oracle | runs | lines after (median) | attempts | wall s | CPU s "
        "| check: failing (median) | verdicts |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, object]]] = {}
    for row in rows:
        groups.setdefault((str(row["case"]), str(row["oracle"])), []).append(row)
    for (case, oracle), group in groups.items():

        def middle(key: str, group: list[dict[str, object]] = group) -> float:
            return statistics.median(float(str(r[key])) for r in group)

        failing = (
            statistics.median(
                int(str(r["check_failing"]).split("/")[0])
                for r in group
                if r["check_failing"] != "-"
            )
            if any(r["check_failing"] != "-" for r in group)
            else "-"
        )
        verdicts = collections.Counter(str(r["still_the_bug"]) for r in group)
        out.append(
            f"| {case} | {oracle} | {len(group)} | {middle('lines_after'):g} "
            f"| {middle('attempts'):g} | {middle('seconds'):g} | {middle('cpu_s'):g} "
            f"| {failing}/{group[0]['check_failing'].__str__().split('/')[-1]} "
            f"| {', '.join(f'{v} {n}' for v, n in verdicts.most_common())} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
