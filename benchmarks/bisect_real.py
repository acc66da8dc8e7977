"""A real bisect of a real regression, from the CLI: wall time, attempts, right answer.

    python benchmarks/bisect_real.py [--runner venv|docker]

sqlparse issue #562: `sqlparse.format(..., reindent=True)` turns
`from from_unixtime(...)` into `fromfrom_unixtime(...)`. Verified by hand (a
throwaway venv per release, the repro script of examples/bisect/): 0.2.3, 0.2.4 and
0.3.0 keep the space; 0.3.1 to 0.4.2 lose it; 0.4.3 fixed it; 0.2.0 to 0.2.2
fail differently on Python 3.7+ (RuntimeError: generator raised StopIteration),
which is not the bug. So between 0.2.0 (good) and 0.4.2 (bad), 9 releases apart,
the first bad release is 0.3.1.

The bisect runs twice: with an empty environment folder (every candidate built,
from uv's download cache when it has the wheels) and again with those
environments in place (a new bisect id each time: --fresh).
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "bisect" / "sqlparse-reindent.yaml"


def bisect(out: Path, runner: str) -> tuple[float, dict[str, object]]:
    argv = [
        sys.executable,
        "-m",
        "reprospec",
        "bisect",
        str(SPEC),
        "--package",
        "sqlparse",
        "--good",
        "0.2.0",
        "--bad",
        "0.4.2",
        "--runner",
        runner,
        "--format",
        "json",
        "--fresh",
        "--out",
        str(out),
    ]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(f"bisect exited {done.returncode}")
    result: dict[str, object] = json.loads(done.stdout)
    return wall, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", choices=("venv", "docker"), default="venv")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="reprospec-bench-bisect-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    ok = True
    for label in ("cold environments", "warm environments"):
        wall, result = bisect(out, args.runner)
        tested = result["tested"]
        assert isinstance(tested, list)
        right = result["first_bad"] == "0.3.1" and result["last_good"] == "0.3.0"
        ok = ok and right
        print(
            f"{label}: first bad {result['first_bad']} (last good {result['last_good']}) "
            f"{'right' if right else 'WRONG'}; {result['attempts']} attempts over "
            f"{len(tested)} of 10 releases; {wall:.1f} s wall"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
