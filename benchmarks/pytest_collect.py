"""How long `pytest --reprospec` takes to collect 100 spec files (target: under 1 s).

Writes `--specs` copies of specs/segfault-command.yaml (4 cells each) with distinct
names into a temporary folder, then runs `pytest --collect-only` on it in a child,
`--rounds` times, and reports pytest's own "collected in" figure (collection only, not
interpreter start-up) next to the same pytest collecting an empty folder.

    python benchmarks/pytest_collect.py [--specs 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_COLLECTED = re.compile(r"(\d+) tests? collected in ([0-9.]+)s|no tests collected in ([0-9.]+)s")


def collect(folder: Path) -> tuple[int, float]:
    """(items, seconds) as pytest reports them for `--collect-only` on `folder`."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "reprospec.pytest_plugin",
            "-p",
            "no:cacheprovider",
            # hypothesis' plugin (if installed) imports all of hypothesis at the end: not ours.
            "-p",
            "no:hypothesispytest",
            "--reprospec",
            "--collect-only",
            "-q",
            "--rootdir",
            str(folder),
            str(folder),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    match = _COLLECTED.search(proc.stdout)
    if match is None:
        raise SystemExit(f"unexpected pytest output:\n{proc.stdout}{proc.stderr}")
    if match.group(3):
        return 0, float(match.group(3))
    return int(match.group(1)), float(match.group(2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    template = (ROOT / "specs" / "segfault-command.yaml").read_text(encoding="utf-8")
    template = template.replace("workdir: fixtures", f"workdir: {ROOT / 'specs' / 'fixtures'}")
    with tempfile.TemporaryDirectory(prefix="reprospec-collect-") as tmp:
        folder = Path(tmp) / "specs"
        empty = Path(tmp) / "empty"
        folder.mkdir()
        empty.mkdir()
        for i in range(args.specs):
            text = template.replace(
                "name: val-segfault-pinned-workers-command", f"name: collected-{i:03d}"
            )
            (folder / f"case{i:03d}.repro.yaml").write_text(text, encoding="utf-8")
        base = [collect(empty)[1] for _ in range(args.rounds)]
        runs = [collect(folder) for _ in range(args.rounds)]
        items = {n for n, _ in runs}
        times = [t for _, t in runs]
        print(
            f"{args.specs} specs, {items.pop()} items: collected in median "
            f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}); "
            f"an empty folder: {statistics.median(base):.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
