"""What looking for relative spellings of labelled folders costs report masking.

    python benchmarks/path_masking.py [--rounds 7]

report/paths.PathNames masks a labelled folder's relative spelling too
(`../../../work/main/.venv/lib/...`, as pytest prints it under its rootdir). A first
version looked for one at every `.`, and masking 2 MB of pytest's progress dots took about
three times as long as with no relative spelling to look for. This prints, per text, the CPU
of masking it with relative spellings against without (`bases=[]`), the two measured in
turn in each round (a neighbour's load falls on both alike), and the median of the rounds'
ratios: a ratio near 1 is the goal. Wall time beside it (a neighbour's load shows there).
A coloured line (`\x1b[33m/work/main/.venv/...`, a path right after a terminal's colour code)
is masked too, by a pattern of its own that starts at an ESC and runs only on a text that holds
one: a text without one pays nothing for it, and `coloured slashes` (lines of `/` in a text
with colour codes) shows that one ESC no longer costs every `/` of the text a second try;
`runs of codes` (20 codes in a row, no path after them), that a run is not tried again from
each of its ESCs (its `ms` columns: quadratic in the run's length when it was).
"""

from __future__ import annotations

import argparse
import statistics
import time

from reprospec.report.paths import PathNames

LABELS = {"/work/main/.venv": "<venv>", "/tmp/proj/inc": "", "/root": "<home>"}
LINES = {
    "progress dots": "." * 79,
    "slashes": "/" * 79,
    "ups": "../" * 26,
    "mixed log": "tests/test_x.py::test_y PASSED ../data/x.csv 1/2 ../../../work/main/.venv/a.py",
    "coloured log": "\x1b[32mINFO\x1b[0m step 12 \x1b[33m/work/main/.venv/lib/x.py\x1b[0m:3",
    "coloured slashes": "\x1b[0m" + "/" * 75,
    "runs of codes": "\x1b[K" * 20 + " step 12",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--lines", type=int, default=25_000, help="lines per text (default 2 MB)")
    args = parser.parse_args()
    relative, absolute_only = PathNames(LABELS), PathNames(LABELS, bases=[])
    print(
        f"{'text':<16} {'relative ms':>12} {'absolute ms':>12} {'ratio (median)':>15} "
        f"{'wall ratio':>11}"
    )
    for name, line in LINES.items():
        text = (line + "\n") * args.lines
        ratios, with_relative, without, walls = [], [], [], []
        for round_ in range(args.rounds):
            pair = (relative, absolute_only) if round_ % 2 == 0 else (absolute_only, relative)
            spent, wall = {}, {}
            for names in pair:
                began, clock = time.process_time(), time.perf_counter()
                names.shorten(text)
                spent[id(names)] = time.process_time() - began
                wall[id(names)] = time.perf_counter() - clock
            with_relative.append(spent[id(relative)])
            without.append(spent[id(absolute_only)])
            ratios.append(spent[id(relative)] / max(spent[id(absolute_only)], 1e-9))
            walls.append(wall[id(relative)] / max(wall[id(absolute_only)], 1e-9))
        print(
            f"{name:<16} {statistics.median(with_relative) * 1000:>12.1f} "
            f"{statistics.median(without) * 1000:>12.1f} {statistics.median(ratios):>14.2f}x "
            f"{statistics.median(walls):>10.2f}x"
        )


if __name__ == "__main__":
    main()
