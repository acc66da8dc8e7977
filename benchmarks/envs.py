"""Environment switch time: how long the venv runner takes to move between cached environments.

    python benchmarks/envs.py [--rounds 5] [--torch]

Three figures, each the median of `--rounds`:
  1. switch, warm cache: getting the environment of another version when it is
     already built (the lookup + the per-cell package check in the child);
     goal (issue 11): at most 2 s;
  2. a whole one-cell `reprospec run --runner venv` alternating between two
     cached environments, next to the same run on the local runner;
  3. a new environment from uv's warm download cache (nothing downloaded: the
     folder is built, packages are linked in): sqlparse, and with --torch the
     torch 2.13 wheel (200 MB) of the configured wheelhouse.
Environments live in a temporary folder; uv's cache is the user's own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reprospec import venvs  # noqa: E402
from reprospec.environment import packages  # noqa: E402

SPEC = """reprospec: 1
name: bench-envs
environment:
  packages: ["sqlparse==${{ matrix.v }}"]
matrix:
  v: ["0.3.0", "0.3.1"]
command: python -c "import sqlparse"
expect: {outcome: pass}
"""


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--torch", action="store_true", help="also build a torch environment")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="reprospec-bench-envs-"))
    root = folder / "envs"
    python = venvs.find_interpreter(None)
    index = venvs.user_index_config()
    requests = [venvs.EnvRequest(python, (f"sqlparse=={v}",), index) for v in ("0.3.0", "0.3.1")]
    for request in requests:  # warm: both built once (downloads into uv's cache if needed)
        venvs.ensure_env(request, root)

    def switch(request: venvs.EnvRequest) -> None:
        env = venvs.ensure_env(request, root)
        installed = packages.probe_installed(str(env.python), ["sqlparse"])
        assert not packages.mismatches(request.packages, installed)

    switches = [timed(lambda r=requests[i % 2]: switch(r)) for i in range(args.rounds * 2)]
    print(
        f"switch to another cached environment (lookup + check in the child): "
        f"{statistics.median(switches) * 1000:.0f} ms (goal <= 2000 ms)"
    )

    spec = folder / "bench.yaml"
    spec.write_text(SPEC)
    base = [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(folder / "out")]
    env = {**os.environ, "REPROSPEC_ENVS": str(root), "NO_COLOR": "1"}

    def run(extra: list[str]) -> None:
        subprocess.run(
            [*base, *extra],
            cwd=ROOT,
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    venv_runs = [
        timed(lambda v=v: run(["--runner", "venv", "-m", f"v={v}"]))
        for _ in range(args.rounds)
        for v in ("0.3.0", "0.3.1")
    ]
    local_runs = [
        timed(lambda: run(["-m", "v=0.3.0", "--set", "environment.packages=[]"]))
        for _ in range(args.rounds)
    ]
    print(
        f"one-cell reprospec run, venv runner alternating cached environments: "
        f"{statistics.median(venv_runs):.2f} s; local runner: "
        f"{statistics.median(local_runs):.2f} s"
    )

    fresh = []
    for i in range(args.rounds):
        fresh_root = folder / f"fresh-{i}"
        fresh.append(timed(lambda fr=fresh_root: venvs.ensure_env(requests[0], fr)))
    print(f"new environment from uv's warm cache, sqlparse: {statistics.median(fresh):.2f} s")
    if args.torch:
        torch_request = venvs.EnvRequest(python, ("torch==2.13.0",), index)
        venvs.ensure_env(torch_request, folder / "torch-warm")
        built = [
            timed(lambda i=i: venvs.ensure_env(torch_request, folder / f"torch-{i}"))
            for i in range(max(1, args.rounds // 2))
        ]
        print(
            f"new environment from uv's warm cache, torch 2.13.0 (+ its dependencies): "
            f"{statistics.median(built):.2f} s"
        )
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
