"""`reprospec envs [list|prune]`: the environments the venv runner and bisect keep, and the
images the docker runner built (runners/docker/cache.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.words import plural

if TYPE_CHECKING:
    from collections.abc import Sequence

    from reprospec import venvs
    from reprospec.runners.docker import cache as images


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `envs` verb's arguments."""
    p = sub.add_parser(
        "envs",
        help="list or prune the cached per-cell environments (venvs, the docker runner's images)",
    )
    p.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "prune"),
        metavar="ACTION",
        help="list (the default): show them; prune: remove unused ones",
    )
    # The docker runner's images are the engine's, which no --out scopes: a user who pruned
    # with `--out ./scratch` to spare another project's cache removed its images too.
    opt.out(
        p,
        help="environments are in DIR/envs (or $REPROSPEC_ENVS when set; default: .reprospec); "
        "the docker runner's images are listed and pruned whatever the folder (the engine's)",
    )
    opt.text_or_json(p, help="list: text (default) or json (prune says it as text)")
    p.add_argument(
        "--older-than",
        default=None,
        metavar="DURATION",
        help="prune: only environments (and images) unused for this long, and failed builds' "
        "logs written as long ago (like 7d, 12h; default 30d)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="prune: every environment and failed build's log (and image not in use)",
    )
    p.add_argument("--dry-run", action="store_true", help="prune: say what would go")


# prune's options, by flag and argparse name.
_PRUNE_ONLY = (("--older-than", "older_than"), ("--all", "all"), ("--dry-run", "dry_run"))


def _root(out: Path) -> Path:
    from reprospec.venvs import envs_folder

    return envs_folder(out)


def _seconds(text: str) -> float:
    from reprospec.core.units import parse_duration
    from reprospec.errors import UsageError

    if text.endswith("d") and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) * 86400
    if text.replace(".", "", 1).isdigit():
        # A duration's bare number is seconds: `prune --older-than 7`, meant as a week,
        # removed every environment and image older than 7 seconds, each in use a moment ago.
        raise UsageError(
            f"--older-than {text}: give its unit ({text}d for days, {text}h, {text}m or {text}s)"
        )
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from reprospec import venvs
    from reprospec.errors import UsageError
    from reprospec.runners.docker import cache as images
    from reprospec.venvs.cache import human_size

    # Options that would be dropped without a word: `list --older-than 1d` listed
    # everything, and `prune --all --older-than 1d` removed everything.
    given = [name for name, on in _PRUNE_ONLY if getattr(args, on)]
    if args.action == "list" and given:
        raise UsageError(f"{', '.join(given)}: for `envs prune` only; `envs list` shows them all")
    if args.action == "prune" and args.format == "json":
        raise UsageError("--format json: for `envs list` only; `envs prune` says what it removes")
    if args.all and args.older_than is not None:
        raise UsageError("--all and --older-than: give one (--all removes every one, however new)")
    root = _root(args.out)
    if args.action == "list":
        found = venvs.list_envs(root)
        unfinished = venvs.list_unfinished(root)
        failed = venvs.list_failed_logs(root)
        records = venvs.list_build_records(root)
        client, no_engine = images.reachable()
        built = images.list_images(client) if client is not None else []
        if args.format == "json":
            if no_engine:
                print(no_engine, file=sys.stderr)
            # One list, each entry's `kind` telling a venv from a docker runner's image, and
            # from what a build left unfinished.
            rows = [{"kind": "venv", **e.to_dict()} for e in found]
            rows += [{"kind": "unfinished-build", **u.to_dict()} for u in unfinished]
            rows += [{"kind": "failed-build-log", **f.to_dict()} for f in failed]
            rows += [{"kind": "doctor-build-record", **r.to_dict()} for r in records]
            print(json.dumps(rows + [i.to_dict() for i in built], indent=2))
            return 0
        _list_venvs(root, found)
        _list_unfinished(unfinished)
        _list_kept(failed, "failed build log", root / venvs.FAILED)
        _list_kept(records, "doctor build record", root / venvs.BUILT, _RECORDS)
        _list_images(built, no_engine)
        return 0
    older = None if args.all else _seconds(args.older_than or "30d")
    client, no_engine = images.reachable()
    now = time.time()
    listed = venvs.list_envs(root)  # once: each listing walks every environment's files
    removed = venvs.prune_envs(
        root, older_than_s=older, dry_run=args.dry_run, now=now, listed=listed
    )
    # What killed builds left goes whatever --older-than says: it is no environment, and
    # nothing will ever use it (prune removed it without a word, 0 B freed).
    swept = venvs.sweep_unfinished(root, dry_run=args.dry_run)
    # A failed build's log (slurm's preflight keeps one per environment that failed) goes by
    # the environments' rule: nothing else removes it but a build of it that succeeds.
    logs = venvs.prune_failed_logs(root, older_than_s=older, dry_run=args.dry_run, now=now)
    # A doctor's record of a wheel it built, by the same rule: nothing else removes it, and
    # `prune --all` left doctor skipping the builds its records named.
    records = venvs.prune_build_records(root, older_than_s=older, dry_run=args.dry_run, now=now)
    verb = "would remove" if args.dry_run else "removed"
    for env in removed:
        if env.linked_to:
            # One that cannot be read names its target already: kept, unless it is gone.
            if env.target_gone:
                kept = ""
            elif env.unreadable:
                kept = "  (its target kept)"
            else:
                kept = f"  (a link: its environment at {env.linked_to} kept)"
            print(f"{verb} link {env.key}  Python {env.python or '?'}  {env.listed()}{kept}")
            continue
        print(f"{verb} {env.key}  Python {env.python or '?'}  {env.listed()}")
    for left in swept:
        print(f"{verb} unfinished build {left.path.name}  {human_size(left.size_bytes)}")
    for log in logs:
        print(f"{verb} failed build log {log.path}  {human_size(log.size_bytes)}")
    for record in records:
        print(f"{verb} doctor build record {record.path}  {human_size(record.size_bytes)}")
    freed = sum(e.size_bytes for e in removed) + sum(u.size_bytes for u in swept)
    freed += sum(log.size_bytes for log in logs) + sum(r.size_bytes for r in records)
    parts = [plural(len(removed), "environment")]
    parts += [plural(len(swept), "unfinished build")] if swept else []
    parts += [plural(len(logs), "failed build log")] if logs else []
    parts += [plural(len(records), "doctor build record")] if records else []
    what = " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
    print(f"{verb} {what}, {human_size(freed)}", file=sys.stderr)
    for env in venvs.kept_in_use(listed, older_than_s=older, now=now):
        print(f"kept {env.key}: in use by a run now", file=sys.stderr)
    if client is None:
        if no_engine:
            print(no_engine, file=sys.stderr)
        return 0
    pruned = images.prune_images(client, older_than_s=older, dry_run=args.dry_run)
    for image in pruned.removed:
        print(f"{verb} image {image.tag}  {image.holds()}")
    for image, why in pruned.kept:
        print(f"kept image {image.tag}: {why}")
    own = human_size(images.own_total(pruned.removed))
    print(
        f"{verb} {plural(len(pruned.removed), 'docker image')}, {own} of their own (the layers "
        "they share with other images stay)",
        file=sys.stderr,
    )
    return 0


def _list_venvs(root: Path, found: list[venvs.EnvInfo]) -> None:
    from reprospec import venvs

    if not found:
        print(f"no environments in {root}", file=sys.stderr)
        return
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
    from reprospec.venvs.cache import human_size

    total = sum(e.size_bytes for e in found)
    print(
        f"{plural(len(found), 'environment')}, {human_size(total)} (files hard-linked from "
        f"uv's cache count in full)"
    )


def _list_unfinished(unfinished: list[venvs.Unfinished]) -> None:
    """A line for each folder a build left in `.tmp`: one in progress, or a dead build's,
    which nothing uses and `prune` removes (it is said, and counted, as it goes)."""
    from reprospec.venvs.cache import ago, human_size

    now = time.time()
    for left in unfinished:
        state = (
            "being built now"
            if left.building
            else "left by a build that was killed; `reprospec envs prune` or the next build "
            "removes it"
        )
        print(
            f"unfinished build {left.path}: {human_size(left.size_bytes)}, changed "
            f"{ago(now - left.modified)}, {state}"
        )


# Of the doctor build records' line: what removing one does.
_RECORDS = " (doctor builds the wheel a removed record named again)"


def _list_kept(
    kept: Sequence[venvs.FailedLog | venvs.BuildRecord], what: str, folder: Path, note: str = ""
) -> None:
    """One line of the files of one kind kept under the environments folder (the failed
    builds' logs, doctor's records of the wheels it built), where there are any: how many,
    their size, the newest's age, and what removes them (`note`: what removing one does)."""
    from reprospec.venvs.cache import ago, human_size

    if not kept:
        return
    size = human_size(sum(each.size_bytes for each in kept))
    newest = ago(time.time() - kept[0].modified)
    print(
        f"{plural(len(kept), what)} in {folder}: {size}, the newest written {newest}; "
        "`reprospec envs prune` removes those written as long ago as the environments it "
        f"removes were last used (--older-than, default 30d; --all: every one){note}"
    )


def _list_images(built: list[images.ImageInfo], no_engine: str) -> None:
    from reprospec.runners.docker import cache as images
    from reprospec.runners.docker.engine import engine_url
    from reprospec.venvs.cache import ago, human_size

    if no_engine:
        print(no_engine, file=sys.stderr)
        return
    if not built:
        return  # no engine, or no image of the docker runner: nothing to say
    from rich.table import Table

    from reprospec.report.console import make_console

    table = Table(
        title=f"docker runner images on the engine at {engine_url()}", title_justify="left"
    )
    for column in ("tag", "holds", "from", "size (own)", "created", "last used", "used by"):
        table.add_column(column)
    now = time.time()
    for image in built:
        table.add_row(
            image.tag,
            image.holds(),
            image.base or "-",
            human_size(image.size_bytes)
            + ("" if image.own_bytes is None else f" ({human_size(image.own_bytes)})"),
            ago(now - image.created),
            ago(now - image.last_used),
            ", ".join(image.used_by) or "-",
        )
    make_console().print(table)
    print(
        f"{plural(len(built), 'docker image')}, {human_size(images.own_total(built))} of their own "
        "(a size counts the layers an image shares with its base; own: what removing it frees)"
    )
