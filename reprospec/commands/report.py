"""`reprospec report RUN`: render a finished run again (md, html, junit, json or github)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprospec.commands import options as opt
from reprospec.core.formats import REPORT_FORMATS


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `report` verb's arguments."""
    p = sub.add_parser("report", help="render a finished run again")
    p.add_argument(
        "run",
        metavar="RUN",
        help="a run folder, its results.json, a run id (or a unique prefix) under --out, "
        "`latest` (the newest run) or `latest~N` (N runs before it)",
    )
    opt.output_format(
        p,
        REPORT_FORMATS,
        default="md",
        help="markdown bug report (default), a self-contained HTML page with a sortable table "
        "and a heatmap, JUnit XML, JSON, or GitHub's job-summary table",
    )
    opt.output(p, metavar="FILE", help="write to FILE instead of stdout", names_file=True)
    opt.force_output(p)
    opt.out(p, help="where run ids are looked up (default: .reprospec)")


def run(args: argparse.Namespace) -> int:
    from reprospec.report import render
    from reprospec.store.resultsjson import find_run, load_run

    results = find_run(args.run, Path(args.out))
    run_result = load_run(results, Path(args.out))
    text = render(run_result, args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        if args.format in ("md", "html"):
            text = relinked(text, results.parent, args.output)
        opt.write_output(args.output, text, force=args.force)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def relinked(text: str, run_dir: Path, output: Path) -> str:
    """A report's links into its run folder (`cells/.../native-stacks.txt`), relative to the
    run folder where report.md lies, made relative to `output`'s folder: written elsewhere
    (`report RUN -o out/r.html`), every "Full native stacks" link pointed nowhere.

    The way there is percent-encoded: a markdown link's destination ends at a space or an
    unmatched `)` (`--out "my runs"` left the link as text), and an href at a `"`."""
    import os
    from urllib.parse import quote

    # An unpacked bundle holds its attempts under logs/cells/ (export/bundle.py), not cells/.
    cells = (
        "logs/cells"
        if not (run_dir / "cells").is_dir() and (run_dir / "logs" / "cells").is_dir()
        else "cells"
    )
    rel = Path(os.path.relpath(run_dir.resolve(), output.resolve().parent)).as_posix()
    if rel == "." and cells == "cells":
        return text
    # `/` kept; a space, `(`, `)`, `"`, `&`, `<` and `%` encoded
    way = "" if rel == "." else quote(rel) + "/"
    text = text.replace("](cells/", f"]({way}{cells}/")
    return text.replace('href="cells/', f'href="{way}{cells}/')
