"""`reprospec compare RUN_A RUN_B`: cells whose verdict changed, environment differences."""

from __future__ import annotations

import argparse
from pathlib import Path

from reprospec.logtext import printable


def run(args: argparse.Namespace) -> int:
    from reprospec.compare import compare
    from reprospec.console import make_console
    from reprospec.results import load_run

    out = Path(args.out)
    a, b = load_run(args.run_a, out), load_run(args.run_b, out)
    diff = compare(a, b)
    console = make_console()
    console.print(f"{a.run_id} -> {b.run_id} ({a.spec_name})", markup=False)
    if a.spec_name != b.spec_name or a.spec_text != b.spec_text:
        # Comparing two different incidents is allowed, but cells then mean other things.
        console.print(
            f"warning: the runs ran different specs ({a.spec_name!r} and {b.spec_name!r}, "
            "or the same name with other text)",
            markup=False,
        )
    changed = diff["changed"]
    if changed:
        console.print("cells whose verdict changed:", markup=False)
        for row in changed:
            line = f"  {row['cell']}: {row['before']} -> {row['after']}"
            console.print(printable(line), markup=False)
    else:
        console.print("no cell changed verdict", markup=False)
    for label, key in (("only in the first run", "only_a"), ("only in the second run", "only_b")):
        if diff.get(key):
            console.print(printable(f"{label}: {', '.join(diff[key])}"), markup=False)
    env = diff["environment"]
    if env:
        console.print("environment differences:", markup=False)
        for row in env:
            console.print(printable(f"  {row['key']}: {row['a']!r} -> {row['b']!r}"), markup=False)
    else:
        console.print("same environment", markup=False)
    return 0
