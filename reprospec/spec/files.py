"""Spec files: which files `validate` checks, their bytes (bounded, no FIFO or device), their
UTF-8 text, and the YAML block of a report.md.

A report rendered by `reprospec run` embeds its spec in a fenced ```yaml block that its
first line names (reportspec.py), with the spec file it came from, so `reprospec run
report.md` reruns exactly what was reported, whatever else the report holds.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from reprospec.core.bounds import MAX_FILE_BYTES
from reprospec.errors import SpecError

SPEC_SUFFIXES = (".yaml", ".yml")
# The store's database: a folder holding one is a store, not specs (store.py).
STORE_DB = "results.db"


def spec_files(paths: Iterable[str | Path]) -> list[str]:
    """The files `validate` checks: files as given, folders' *.yaml/*.yml recursively.

    A folder search skips hidden folders (`.reprospec/`, `.git/`, `.venv/`) and
    folders holding a `results.db` (a store, whose runs keep copies of specs).
    """
    files: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            files.extend(str(p) for p in sorted(_search(Path(path))))
        else:
            files.append(str(path))
    return files


def _search(root: Path) -> Iterable[Path]:
    for folder, subfolders, names in os.walk(root):
        # os.path.exists: False for an unreadable folder, where Path.exists raises (EACCES).
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".") and not os.path.exists(os.path.join(folder, name, STORE_DB))  # noqa: PTH110, PTH118
        ]
        for name in names:
            if Path(name).suffix in SPEC_SUFFIXES:
                yield Path(folder) / name


def read_spec_text(path: Path) -> tuple[str, int, str | None]:
    """(the YAML text, lines before it, the spec path a report's marker names) of a spec
    file or report.md."""
    text = decode_spec(path, read_spec_bytes(path))
    if path.suffix.lower() != ".md":
        return text, 0, None
    # Only a markdown file can hold a report's marker: a .yaml spec (what `validate` and
    # `plan` read at every start) never pays for reportspec's import.
    from reprospec.core.reportspec import MarkerError, find_marked_spec

    try:
        marked = find_marked_spec(text)
    except MarkerError as exc:
        raise SpecError([f"{path}: {exc}"]) from None
    if marked is not None:
        return marked.text, marked.line_offset, marked.path
    block = _first_spec_block(text)
    if block is None:
        raise SpecError([f"{path}: no ```yaml block with a top-level 'reprospec:' key"])
    return block[0], block[1], None


_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_spec_bytes(path: Path) -> bytes:
    """The bytes of a spec file: a regular file of at most MAX_FILE_BYTES, else SpecError.

    Opened non-blocking, so a FIFO cannot hang us waiting for a writer; `/dev/zero`
    and other devices are refused before a byte is read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SpecError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise SpecError([f"{path}: is a folder, not a spec file"]) from None
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    try:
        mode = os.fstat(fd).st_mode
        for test, kind in _FILE_KINDS:
            if test(mode):
                raise SpecError([f"{path}: is {kind}, not a spec file"])
        if not stat.S_ISREG(mode):
            raise SpecError([f"{path}: not a regular file"])
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise SpecError(
            [f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not read (docs/limits.md)"]
        )
    return b"".join(chunks)


_GZIP_MAGIC = b"\x1f\x8b"  # the first bytes of a .tar.gz (a bundle)


def decode_spec(path: Path, data: bytes) -> str:
    """UTF-8 text of a spec file; SpecError at the line and column of the first bad byte."""
    if data.startswith(_GZIP_MAGIC):
        # A bundle given to a verb that reads a spec: its gzip header read as "not UTF-8
        # text: byte 0x8b" told its recipient nothing of what to give instead.
        raise SpecError(
            [
                f"{path}: a .tar.gz archive (a bundle of `reprospec bundle`?), not a spec "
                f"file: `reprospec run {path}` reruns a bundle, unpacked under "
                ".reprospec/bundles/ (the line it prints names the folder); give this "
                "command the spec in that folder's tree/ (the bundle's README.md names it)"
            ]
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        col = len(data[line_start : exc.start].decode("utf-8")) + 1
        byte = data[exc.start]
        raise SpecError(
            [f"{path}:{line}:{col}: not UTF-8 text: byte 0x{byte:02x} ({exc.reason})"]
        ) from None


# Patterns as strings, compiled on first use (re caches them): only markdown needs them.
# Any indentation: a ticket's steps put the spec's block in a list item ("1. Save this:"
# and the fence indented under it), where a 3-space limit found no spec in it.
_FENCE = r"^ *(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)"
_SPEC_KEY = r"^reprospec\s*:"


def extract_markdown_spec(text: str) -> tuple[str, int] | None:
    """The spec a markdown file embeds, and its line offset: the block a report's marker
    names (reportspec.py), else the first fenced yaml block with a top-level `reprospec:`."""
    from reprospec.core.reportspec import MarkerError, find_marked_spec

    try:
        marked = find_marked_spec(text)
    except MarkerError:
        return None
    if marked is not None:
        return marked.text, marked.line_offset
    return _first_spec_block(text)


def _first_spec_block(text: str) -> tuple[str, int] | None:
    """The first fenced yaml block holding a top-level `reprospec:` key, and its line offset."""
    fence_pattern, spec_key = re.compile(_FENCE), re.compile(_SPEC_KEY)
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        opening = fence_pattern.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence, info = opening.group(1), opening.group(2).lower()
        start = index
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            index += 1
        body = lines[start:index]
        index += 1
        # The block is given whole, as indented as it is: YAML reads a document whose lines
        # all share an indentation as if they had none, and its columns stay the file's.
        # `reprospec:` is top-level at the body's least indentation.
        base = min((len(line) - len(line.lstrip(" ")) for line in body if line.strip()), default=0)
        if info in ("yaml", "yml") and any(spec_key.match(line[base:]) for line in body):
            return "".join(body), start
    return None


def report_origin(hint: str | None, report: Path) -> Path | None:
    """The spec file a report was made from (its marker's `path`), when it may be used.

    Relative paths in the spec (workdir) resolve against that file's folder, as they
    did when the report was made. The path is the report's word, so it is honoured
    only when it names a file under the folder `run` was started in or under the
    report's own folder: a report cannot move the workdir to `/etc` or `../..`.
    """
    if not hint:
        return None
    # As given to `run` (from its folder), else from the report's own folder: a bundle's
    # report.md names its packed spec so (`tree/s.yaml`), wherever the bundle is unpacked.
    for origin in (Path(hint), report.parent / hint):
        try:
            resolved = origin.resolve()
            roots = (Path.cwd().resolve(), report.resolve().parent)
            inside = any(resolved.is_relative_to(root) for root in roots)
            if inside and resolved.is_file():
                return origin
        except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL in the path
            return None
    return None
