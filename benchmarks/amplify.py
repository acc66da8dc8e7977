"""Amplify on the three real programs of tests/data/amplify: rates before and after, attempts.

    python benchmarks/amplify.py [--attempts 300] [--budget 300] [-j 2] [--only race,uaf,oom]

For each program (a check-then-act thread race, a use-after-free in a C library called
through ctypes, an out-of-memory path) it runs, through the Python API:

1. the plain spec `--attempts` times: the base rate and the attempts to the first failure;
2. `reprospec amplify` with its default perturbations (the OOM adds `memory_limit=200m`,
   which has no default) within `--budget` attempts: the perturbation it names, its
   interval and the attempts the search used;
3. the amplified spec `--attempts` times: the rate after, and attempts to the first failure.

The OOM program needs a memory cgroup; where none can be made it is skipped with the reason.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "amplify"
PROGRAMS = {
    "race": ("race.yaml", ("race.py",), ()),
    "uaf": ("uaf.yaml", ("uaf.py", "uaf.c"), ()),
    "oom": ("oom.yaml", ("oom.py",), ("memory_limit=200m",)),
}


def measure(spec: Path, attempts: int, jobs: int, out: Path) -> tuple[int, int, int | None]:
    """(matched, attempts that ran, the number of the first matching attempt)."""
    from reprospec import api
    from reprospec.core.runoptions import RunOptions

    result = api.run(
        api.load_spec(spec),
        RunOptions(repeat=attempts, jobs=jobs, out=out, purpose="benchmark"),
    )
    ran = sorted(result.cells[0].attempts, key=lambda a: a.attempt)
    matched = [a.attempt for a in ran if a.matched]
    return len(matched), sum(1 for a in ran if a.ran is not None), min(matched, default=None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--only", default="race,uaf,oom")
    args = parser.parse_args()

    from reprospec.amplify.driver import AmplifyOptions, amplify_spec, default_tries
    from reprospec.core.rates import rate_of
    from reprospec.core.runoptions import RunOptions
    from reprospec.core.words import rate_phrase
    from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup

    rows = []
    for name in args.only.split(","):
        spec_name, files, extra = PROGRAMS[name]
        if name == "oom":
            folder, why = make_memory_cgroup(2**30, "reprospec-benchmark-probe")
            if folder is None:
                print(f"{name}: skipped: no memory cgroup can be made here: {why}")
                continue
            remove_cgroup(folder)
        work = Path(tempfile.mkdtemp(prefix=f"amplify-{name}-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
        for file in (spec_name, *files):
            shutil.copy(DATA / file, work / file)
        if name == "uaf":
            cc = shutil.which("cc") or shutil.which("gcc")
            if cc is None:
                print(f"{name}: skipped: no C compiler")
                continue
            subprocess.run(
                [cc, "-shared", "-fPIC", "-O1", "-o", "libsession.so", "uaf.c"],
                cwd=work,
                check=True,
            )
        out = work / "out"
        spec = work / spec_name
        started = time.monotonic()
        before = measure(spec, args.attempts, args.jobs, out)
        tries = tuple(f"{k}={v}" for k, v in default_tries()) + extra
        found = amplify_spec(
            spec,
            AmplifyOptions(
                tries=tries,
                budget=args.budget,
                run=RunOptions(jobs=args.jobs, out=out, purpose="amplify"),
            ),
        )
        after: tuple[int, int, int | None] = (0, 0, None)
        if found.amplified_spec is not None:
            after = measure(found.amplified_spec, args.attempts, args.jobs, out)
        rows.append((name, before, found, after, time.monotonic() - started))
        print(f"{name}: {found.sentence()} ({found.result.used} attempts)", flush=True)

    print()
    print(
        "| program | plain rate | first failure | amplify names | search attempts "
        "| amplified rate | first failure |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, before, found, after, _ in rows:
        winner = found.result.winner
        print(
            f"| {name} | {rate_phrase(rate_of(before[0], before[1]))} "
            f"| {before[2] or f'none in {before[1]}'} "
            f"| {winner.arm.label if winner else 'nothing'} | {found.result.used} "
            f"| {rate_phrase(rate_of(after[0], after[1])) if after[1] else '–'} "
            f"| {after[2] or '–'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
