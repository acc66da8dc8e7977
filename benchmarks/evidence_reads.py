"""How often the engine opens each attempt file while it runs a spec and writes the report.

An audit hook (`sys.addaudithook`) in this process counts every `open` of a
file in the run folder, by file name and by read or write; the attempts'
children are other processes and are not counted. The evidence of an attempt
(its logs, events and stack dump) should be read once: one read per attempt.

    python benchmarks/evidence_reads.py [SPEC] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WATCHED = ("stdout.log", "stderr.log", "events.jsonl", "stack.txt", "env.json")


def count_opens(spec: Path, repeat: int) -> tuple[Counter[tuple[str, str]], int]:
    """((file name, "read" | "write") -> opens, attempts) for one `reprospec run` in-process."""
    sys.path.insert(0, str(ROOT))  # this checkout's engine, not whichever one is installed
    import reprospec

    print(f"engine: {reprospec.__file__}")
    counts: Counter[tuple[str, str]] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        runs = str(out / "runs")

        def hook(event: str, args: tuple[object, ...]) -> None:
            if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
                return
            path = os.fsdecode(args[0])
            name = Path(path).name
            # abspath, not resolve(): the hook must not touch the file system for each open.
            if name not in WATCHED or runs not in os.path.abspath(path):  # noqa: PTH100
                return
            mode, flags = args[1], args[2]
            if isinstance(mode, str):
                writes = any(c in mode for c in "wax+")
            else:
                writes = isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR) != 0
            counts[name, "write" if writes else "read"] += 1

        loaded = reprospec.load_spec(spec)
        sys.addaudithook(hook)  # cannot be removed: this process runs one measurement
        result = reprospec.run(loaded, reprospec.RunOptions(out=out, repeat=repeat))
        reprospec.render(result, "md")
        attempts = sum(len(c.attempts) for c in result.cells)
    return counts, attempts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(ROOT / "specs/segfault-command.yaml"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    counts, attempts = count_opens(Path(args.spec), args.repeat)
    print(f"{attempts} attempts of {Path(args.spec).name}: opens by the engine process")
    print(f"{'file':<14} {'reads':>6} {'writes':>7}")
    for name in WATCHED:
        print(f"{name:<14} {counts[name, 'read']:>6} {counts[name, 'write']:>7}")


if __name__ == "__main__":
    main()
