"""`reprospec envs [list|prune]`: the environments the venv runner and bisect keep."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from reprospec.commands import options as opt


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `envs` verb's arguments."""
    p = sub.add_parser("envs", help="list or prune the cached per-cell environments")
    p.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "prune"),
        metavar="ACTION",
        help="list (the default): show them; prune: remove unused ones",
    )
    opt.out(p, help="environments are in DIR/envs (or $REPROSPEC_ENVS when set)")
    opt.text_or_json(p, help="list: text (default) or json")
    p.add_argument(
        "--older-than",
        default=None,
        metavar="DURATION",
        help="prune: only environments unused for this long (like 7d, 12h; default 30d)",
    )
    p.add_argument("--all", action="store_true", help="prune: every environment")
    p.add_argument("--dry-run", action="store_true", help="prune: say what would go")


def _root(out: Path) -> Path:
    from reprospec.venvs import ENVS_VARIABLE

    shared = os.environ.get(ENVS_VARIABLE)
    return (Path(shared) if shared else out / "envs").resolve()


def _seconds(text: str) -> float:
    from reprospec.core.units import parse_duration
    from reprospec.errors import UsageError

    if text.endswith("d") and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) * 86400
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from reprospec import venvs

    root = _root(args.out)
    if args.action == "list":
        found = venvs.list_envs(root)
        if args.format == "json":
            print(json.dumps([e.to_dict() for e in found], indent=2))
            return 0
        if not found:
            print(f"no environments in {root}", file=sys.stderr)
            return 0
        from rich.table import Table

        from reprospec.report.console import make_console

        table = Table(title=f"environments in {root}", title_justify="left")
        for column in ("key", "python", "packages", "size", "last used", "used by"):
            table.add_column(column)
        for row in venvs.summarize(found):
            table.add_row(
                row["key"],
                row["python"],
                row["packages"],
                row["size"],
                row["last_used"],
                row["used_by"],
            )
        make_console().print(table)
        total = sum(e.size_bytes for e in found)
        print(
            f"{len(found)} environment(s), {total / 2**20:.1f} MB (files hard-linked from "
            f"uv's cache count in full)"
        )
        return 0
    older = None if args.all else _seconds(args.older_than or "30d")
    removed = venvs.prune_envs(root, older_than_s=older, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for env in removed:
        print(f"{verb} {env.key}  Python {env.python}  {' '.join(env.packages) or '(none)'}")
    freed = sum(e.size_bytes for e in removed) / 2**20
    print(f"{verb} {len(removed)} environment(s), {freed:.1f} MB", file=sys.stderr)
    return 0
