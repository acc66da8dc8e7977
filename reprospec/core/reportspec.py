"""The spec a report embeds: the marker the renderer writes, and the one rule that finds it.

A bug report embeds the spec that ran, so `reprospec run report.md` reruns it.
The same report also shows text that reprospec does not control (the spec's
description, a child's messages), so which block is "the spec" must not be
decided by anything that text could write. The renderer writes, as the first
line of the report, before any other text:

    <!-- reprospec:spec sha256=HEX lines=N path="specs/segfault.yaml" -->

and the spec is the fenced `yaml` block of exactly N lines whose text hashes to
HEX (`digest`). Every other block, however it looks and wherever it sits, is not
the spec; a copy of the same block is the same spec. The first line of a file is
before anything a description or a log could add, so only the renderer (or the
person holding the file) can write the marker. The renderer also escapes the
description so it opens no fence and no comment (report/markup.py): the block a
reader sees rendered is the block that runs.

`path` is the spec file the report was made from, JSON-quoted (with `<`, `>` and
`&` escaped, so it cannot end the comment). It is only a hint: spec.py honours it
when it names a file under the folder `reprospec run` is started in or under the
report's own folder, never elsewhere (`/etc/passwd`, `../..`).

A markdown file without the marker (an old report, a README) runs its first
fenced `yaml` block with a top-level `reprospec:` key; `reprospec run` shows what
any report would run, and asks, before running it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.words import plural

_MARKER = Lazy(
    r'^<!-- reprospec:spec sha256=([0-9a-f]{64}) lines=(\d+) path=("(?:[^"\\]|\\.)*") -->\s*$'
)
_OPENING = Lazy(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)\s*$")
# Blocks looked at for the marked spec: a real report has a handful.
MAX_CANDIDATES = 256


@frozen
class MarkedSpec:
    """The block a report's marker names: its text, the lines before it, and the marker's path."""

    text: str
    line_offset: int
    path: str | None


class MarkerError(ValueError):
    """A report has the marker but no block it names (edited, or cut short)."""


def rerun_command(
    options: Mapping[str, object], target: str = "report.md", *, as_ran: bool = False
) -> str:
    """`reprospec run report.md` with the run's options the embedded spec does not hold
    (`--runner`, `--preload`, `--observe`, `-m`, `-j`, `--repeat`, `--first-attempt`, `--timeout`,
    the API's `stop_on` as `--set run.stop_on=...`; its `--set`s are in its text): a report
    of an observed run reran its spec judged, and called cells that only observed a crash
    not reproduced; one of a venv run reran it on the local runner, every cell infra-error
    for the packages it did not install.

    `target`: what is run instead (a spec file). `as_ran`: the command as the run was made,
    with its `--set`s (a spec file holds none), its `--shard` and this machine's `--gpus`:
    what `merge` records of the pytest plugin's runs of several sessions, whose line ran 1
    attempt locally where 5 had run on venv."""
    words = ["reprospec", "run", target]
    runner = options.get("runner")
    if isinstance(runner, str) and runner and runner != "local":
        words += ["--runner", runner]
    preload = options.get("preload")
    if isinstance(preload, list):
        # The attempts forked from a server that imported these, as a bundle's rerun says.
        words += ["--preload", ",".join(str(m) for m in preload) or "none"]
    if options.get("observe"):
        words.append("--observe")
    filters = options.get("matrix_filters")
    for selected in filters if isinstance(filters, list) else ():
        words += ["-m", str(selected)]
    # Not `--python` or `--find-links`: paths of the machine that ran it; report.md adds
    # them to the command it shows, with a line saying so (report.markdown.machine_note).
    # `-j`: as `--repeat` over the spec's `run.repeat`, it overrides `run.parallel`, and a
    # race or a contention bug reproduces at another rate without it.
    for flag, key in (
        ("-j", "jobs"),
        ("--repeat", "repeat"),
        ("--first-attempt", "first_attempt"),
        ("--timeout", "timeout"),
    ):
        if options.get(key) is not None:
            words += [flag, str(options[key])]
    if as_ran:
        overrides = options.get("overrides")
        for setting in overrides if isinstance(overrides, list) else ():
            words += ["--set", str(setting)]
    stop_on = options.get("stop_on")
    if isinstance(stop_on, str):
        # `RunOptions(stop_on=...)` (the API's, a search's probe) has no flag: without it the
        # rerun ran every attempt where the run had stopped its cell at the first. After the
        # run's own `--set`s: the option won over them as it ran, and the last `--set` wins
        # on a command line (`--set run.stop_on=never --set run.stop_on=first-reproduction`
        # stopped each cell at 1 of the 3 attempts the run had).
        words += ["--set", f"run.stop_on={stop_on}"]
    if as_ran:
        # Its shard, as the CLI's typed line keeps it: `RunOptions(shard="2/2", repeat=2)`
        # was reproduced by `--repeat 2` alone, every cell where the run had half of them.
        # (A merged run's options have none.)
        shard = options.get("shard")
        if isinstance(shard, list) and len(shard) == 2:
            words += ["--shard", f"{shard[0]}/{shard[1]}"]
        # Not `--python`, as above: report.markdown.reproduce_command adds it to any
        # command line, this one too (it was there twice).
        if options.get("gpus"):
            words += ["--gpus", str(options["gpus"])]
    return shlex.join(words)


def _normal(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip("\n")


def digest(spec_text: str) -> str:
    """The sha256 the marker gives for a spec's text (line ends as `\\n`, final newlines cut)."""
    # Imported here: loading OpenSSL costs `validate` more than this module's other work,
    # and only a report's spec block is ever hashed.
    import hashlib

    return hashlib.sha256(_normal(spec_text).encode("utf-8")).hexdigest()


def marker_line(spec_text: str, path: str | None) -> str:
    """The report's first line: the marker naming the block that holds `spec_text`."""
    quoted = json.dumps(path or "", ensure_ascii=True)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        quoted = quoted.replace(char, escape)
    lines = _normal(spec_text).count("\n") + 1
    return f"<!-- reprospec:spec sha256={digest(spec_text)} lines={lines} path={quoted} -->"


def find_marker(text: str) -> tuple[str, int, str | None] | None:
    """(sha256, lines, path) of the first marker line of `text`, or None when it has none."""
    for line in text.split("\n"):
        match = _MARKER.match(line)
        if match:
            try:
                path = json.loads(match.group(3))
            except ValueError:
                path = None
            return match.group(1), int(match.group(2)), (str(path) if path else None)
    return None


def find_marked_spec(text: str) -> MarkedSpec | None:
    """The block the report's marker names; None without a marker; MarkerError when no
    block of the file is the one the marker names."""
    marker = find_marker(text)
    if marker is None:
        return None
    sha, count, path = marker
    # Lines end at "\n" only, as the renderer counted them (str.splitlines would also
    # cut at \u2028 or \x0c inside a value).
    lines = text.split("\n")
    tried = 0
    for index, line in enumerate(lines):
        opening = _OPENING.match(line)
        if opening is None or opening.group(2).lower() not in ("yaml", "yml"):
            continue
        fence = opening.group(1)
        end = index + 1 + count
        if end >= len(lines) or not _closes(lines[end], fence):
            continue
        body = lines[index + 1 : end]
        # The block as a markdown viewer shows it: no earlier line may close it.
        if any(_closes(inner, fence) for inner in body):
            continue
        tried += 1
        if tried > MAX_CANDIDATES:
            break
        spec_text = "\n".join(body) + "\n"
        if digest(spec_text) == sha:
            return MarkedSpec(spec_text, index + 1, path)
    raise MarkerError(
        f"no ```yaml block of {plural(count, 'line')} matches the report's "
        "'<!-- reprospec:spec sha256=... -->' line: the spec block was edited or cut"
    )


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and not stripped.strip(fence[0]) and line[:4].strip() != ""


__all__ = ["MarkedSpec", "MarkerError", "digest", "find_marked_spec", "marker_line"]
