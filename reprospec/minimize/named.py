"""Which files of the workdir go into minimize's DIR: those the result names, and no other.

DIR holds what `docs/cli.md` says it holds: the minimized files, the spec and repro that
run them, the reports, and the other files of the workdir that the result names (a
config it opens, a data folder its command passes, a file a shell script it runs
names); not the workdir's every file, which filled DIR with logs and other specs, and
with a copy of DIR itself where DIR sat inside the workdir (`out/out/`). A name is read
where a program or a spec writes one: a string of the minimized Python files, a word of
the minimized command or a variable, a string of the spec's fields the program runs with
(its environment, matrix, workload and files; never its title or description). A file
read under a computed name (`f"{split}.csv"`) is not named: the folder that holds it is,
when the program names that.

The spec's own `files` are its declared inputs, and minimized.yaml lists them: each must be
in DIR, or minimized.yaml is a spec that does not validate. One is copied whatever its size
(the 1 MiB limit is for files merely named), and one that is a link out of the workdir (a
dataset linked in) is linked in DIR to the same file, not copied: DIR then needs it where
it is, as the workdir did, and minimize.md says so.
"""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import Spec
from reprospec.core.jsontypes import JsonValue
from reprospec.core.pysource import UNREADABLE
from reprospec.minimize.program import Program, left_out, link_inside
from reprospec.plan.workfiles import file_in, script_files

_COPY_LIMIT = 1 << 20  # a named file up to this size goes along (data, configs)
# The spec's fields whose strings may name a file the program reads (_named).
PROGRAM_FIELDS = ("environment", "matrix", "workload", "files")


@frozen
class Carried:
    """The workdir's files DIR holds besides the program's: their names in DIR, which
    minimized.yaml lists in `files`, and those of them linked, not copied, with the file
    each links to (a listed dataset linked into the workdir from elsewhere)."""

    names: tuple[str, ...] = ()
    linked: tuple[tuple[str, str], ...] = ()


def copy_named(
    workdir: Path,
    out: Path,
    program: Program,
    spec: Spec,
    skip: set[Path],
    leave: frozenset[str] = frozenset(),
) -> Carried:
    """The workdir's other files that the result names go along, and nothing else; their
    names in DIR, which minimized.yaml lists in `files` (a bundle of it carried only what
    its command and imports name, and the files a built name opens stayed behind).
    The spec's `files`, which minimized.yaml lists too, are in DIR whatever their size, a
    link out of the workdir linked (the module docstring).

    Named: a string of the minimized Python files (`open("cfg.json")`), a word of the
    minimized command or a variable's value (`--config cfg.yaml`, `--data=data`), a string
    of the spec's environment, matrix, workload or files (a requirements file, a config a
    matrix value names; not its title or description); a folder named goes whole. The rest
    of the workdir (logs, other specs, what the program does not read) stays out, as do DIR
    and the minimize folder when they sit inside it: copying the whole workdir filled DIR
    with unrelated files, and with a DIR inside the workdir, with a copy of itself
    (`out/out/`).
    `leave`: the spec's files DIR's check found the result does not use (`unread_listed`).
    """
    written = {path for path, _ in program.files}
    root = workdir.resolve()
    names = _named(program, spec)
    # A shell script named (`sh run.sh`) names files in its own words: run.sh's
    # `cat data.txt` went without data.txt, and DIR's repro passed.
    scripts = [p for name in names if (p := file_in(name, root)) is not None]
    names.update(p.relative_to(root).as_posix() for p in script_files(scripts, root))
    listed = _listed(spec)
    copied: list[str] = []
    linked: list[tuple[str, str]] = []
    for name in sorted(names):
        rel = Path(os.path.normpath(name))
        if rel.is_absolute() or rel.parts[:1] in ((), (".",), ("..",)) or str(rel) in written:
            continue
        if rel.as_posix() in leave:
            continue
        source = workdir / rel
        try:
            real = source.resolve()
            is_dir, is_file = real.is_dir(), real.is_file()
        except (OSError, RuntimeError, ValueError):
            # A symlink loop, a NUL, a name the file system refuses: any string of the
            # spec is looked up, and a from-log description's paragraph ("File name too
            # long") ended a whole search with no result written.
            continue
        if real == root or _under(real, skip) or (is_dir and left_out(real)):
            continue  # the workdir itself (a "."), DIR, the minimize folder or a store
        declared = rel.as_posix() in listed
        if not real.is_relative_to(root):
            # Out of the workdir through a link: a listed one (a dataset linked in) is
            # linked in DIR to the same file, as minimized.yaml lists it; another stays out.
            if declared and is_file:
                _fresh(out / rel).symlink_to(real)
                copied.append(rel.as_posix())
                linked.append((rel.as_posix(), str(real)))
            continue
        if is_dir:
            copied += (f"{rel.as_posix()}/{n}" for n in _copy_folder(source, out / rel, skip))
        elif is_file and (declared or real.stat().st_size <= _COPY_LIMIT):
            shutil.copy2(source, _fresh(out / rel))
            copied.append(rel.as_posix())
    _link_inner(workdir, out, written, skip)
    return Carried(tuple(dict.fromkeys(copied)), tuple(linked))


def _link_inner(workdir: Path, out: Path, written: set[str], skip: set[Path]) -> None:
    """The workdir's links to a folder or file of its own that holds a minimized file
    (`pkg -> src/pkg`), linked in DIR the same way, to DIR's copy: the program reaches its
    module through the link (`from pkg.mod import f`), which no string names, and DIR's
    check failed with ModuleNotFoundError where each candidate (probes.link_tree) ran."""
    root = workdir.resolve()
    mine = [root / path for path in written]
    for here_text, dirs, names in os.walk(workdir):
        here = Path(here_text)
        dirs[:] = [
            d for d in dirs if not left_out(here / d) and not _under((here / d).resolve(), skip)
        ]
        for name in (*names, *dirs):
            link = here / name
            rel = link.relative_to(workdir)
            found = link_inside(link, root, rel.parent)
            if found is None or ((out / rel).is_dir() and not (out / rel).is_symlink()):
                continue  # a folder DIR holds as a copy (named) stays one
            inside, text = found
            real = root / inside
            if any(m == real or m.is_relative_to(real) for m in mine):
                _fresh(out / rel).symlink_to(text)


def _listed(spec: Spec) -> set[str]:
    """The spec's `files` entries, as paths relative to the workdir (`./a` is `a`)."""
    return set(_listed_in_order(spec))


def _listed_in_order(spec: Spec) -> list[str]:
    listed = spec.document.get("files")
    entries = listed if isinstance(listed, list) else []
    paths = (Path(os.path.normpath(e)).as_posix() for e in entries if isinstance(e, str) and e)
    return list(dict.fromkeys(paths))


def unread_listed(program: Program, spec: Spec, reads: Sequence[str], out: Path) -> tuple[str, ...]:
    """The spec's `files` that DIR holds as plain files (copied, not linked: a dataset
    linked in is opened under its target's path, which a record of the workdir's reads
    does not show) and that the result may no longer need: not one of the program's
    Python files (those the passes emptied are driver._drop_unread's), not read by DIR's
    check (`reads`: what its rerun imported, ran, opened or printed the name of), and
    named by neither the result (a string of its Python, a word of its command or
    variables) nor another field of the spec the program runs with (a requirements file
    the environment reads, which no attempt opens). A user's capture listed
    conf/settings.json, which its minimized 3-line app.py never opened, and DIR carried it."""
    written = {path for path, _ in program.files}
    named = _named(program, spec, listed=False)
    return tuple(
        name
        for name in _listed_in_order(spec)
        if name not in written
        and name not in reads
        and name not in named
        and (out / name).is_file()
        and not (out / name).is_symlink()
    )


def _fresh(target: Path) -> Path:
    """`target` with nothing there, its folder made: an earlier write of the same DIR may
    have left a link there, and copying onto it would write through it, into the dataset."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    return target


def _copy_folder(source: Path, target: Path, skip: set[Path]) -> list[str]:
    """A named folder's files (caches, DIR and the minimize folder left out); their names
    in the folder."""
    copied: list[str] = []
    for root, dirs, names in os.walk(source):
        here = Path(root)
        dirs[:] = [
            d for d in dirs if not left_out(here / d) and not _under((here / d).resolve(), skip)
        ]
        for name in names:
            path = here / name
            if path.is_file() and path.stat().st_size <= _COPY_LIMIT:
                shutil.copy2(path, _fresh(target / here.relative_to(source) / name))
                copied.append((here.relative_to(source) / name).as_posix())
    return copied


def _under(path: Path, folders: set[Path]) -> bool:
    return any(path == f or path.is_relative_to(f) for f in folders)


def _named(program: Program, spec: Spec, *, listed: bool = True) -> set[str]:
    """Every string that may name a file of the workdir: whole, each word, after an `=`.

    The spec's own command and variables are the original's: the minimized ones stand
    for them (a file only a dropped argument named is not needed). `listed=False` leaves
    out the spec's `files`, which name every file listed.
    """
    texts = [*program.head, *program.args, *(value for _, value in program.env)]
    for _, source in program.files:
        try:
            tree = ast.parse(source)
        except UNREADABLE:
            continue
        texts += [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
    # Of the spec, only the fields the program runs with: a matrix value the command takes
    # (`--config ${{ matrix.config }}`), a workload's paths, the environment's (a
    # requirements file, a Dockerfile), and the `files` listed. Its words about the program
    # (name, title, description, labels, links, expect's message, markers) name no file it
    # reads: a description's "see notes.txt" copied notes.txt into DIR and minimized.yaml
    # listed it.
    kept = PROGRAM_FIELDS if listed else tuple(k for k in PROGRAM_FIELDS if k != "files")
    document = {k: v for k, v in spec.document.items() if k in kept}
    environment = document.get("environment")
    if isinstance(environment, dict):
        document["environment"] = {
            k: v for k, v in environment.items() if k not in ("env", "workdir")
        }
    texts += _strings(document)
    names: set[str] = set()
    for text in texts:
        if "${{" in text or len(text) > 4096:
            continue
        for word in {text, *text.split()}:
            names.update({word, word.partition("=")[2]} - {""})
    return names


def _strings(value: JsonValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []
