"""A spec's tree: the spec file and the workdir files its cells name, at their places.

What someone rerunning a spec elsewhere gets: a bundle packs this tree under `tree/`, and
capture's verify reruns the spec it wrote in a copy of it, so that `reproduced` means the
spec and what it carries reproduce, not the workdir the capture ran in (a file the child
read that `files` missed stays behind in the workdir and fails the copy's rerun).

Each workdir, the spec and every file named from outside a workdir (`../raises.py`) keep
their places relative to each other under the tree's root, their common folder: so
`workdir: ../app` still resolves, and no member needs a `..`, which unpacking refuses.
Which files a tree carries, and how their secrets are masked, is `carry.py`'s rule, the
one `materialize` follows too: the named files, never a hidden one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.errors import UsageError
from reprospec.export.carry import dockerfile_context, workdir_files
from reprospec.plan.workfiles import program_files


@frozen
class SpecTree:
    """Where the spec, its workdirs and the files they name are on this machine."""

    spec: Path
    root: Path
    # Every file the tree carries (resolved): the workdirs' and those named from outside.
    files: tuple[Path, ...]
    # Files named from outside their workdir (`../raises.py`), among `files`.
    outside: tuple[Path, ...]
    # Every workdir of the cells: a folder of the tree even when it holds no file.
    workdirs: tuple[Path, ...]
    # The one workdir a spec names by an absolute path (a rerun points it into the tree).
    absolute_workdir: Path | None
    # What is named and not carried (missing, too large, absolute), each file named.
    warnings: tuple[str, ...] = ()
    # Named, at their places in the tree, and not carried: over the size a tree carries.
    too_large: tuple[Path, ...] = ()

    def place(self, path: Path) -> str:
        """`path`'s place in the tree, relative to its root: by its name, as the command
        names it (`data.txt`, a link to /mnt/ds/data.txt, is `data.txt`), as bundle packs it."""
        return Path(os.path.normpath(path)).relative_to(self.root).as_posix()

    def empty_workdirs(self, placed: Iterable[str]) -> list[str]:
        """The workdirs (relative to the root) that no file placed in the tree is in."""
        placed = list(placed)
        folders = []
        for workdir in self.workdirs:
            rel = self.place(workdir)
            if rel != "." and not any(p.startswith(rel + "/") for p in placed):
                folders.append(rel)
        return folders


def spec_tree(
    spec_path: Path,
    document: Mapping[str, JsonValue],
    attempts: Sequence[AttemptPlan],
    *,
    max_file_bytes: int,
) -> SpecTree:
    """The tree of the spec at `spec_path` (its `document` as loaded, its planned
    `attempts`): files over `max_file_bytes` are named in the warnings, not carried."""
    files: dict[Path, None] = {}
    outside: dict[Path, None] = {}
    absolute: dict[Path, None] = {}
    workdirs: dict[Path, None] = {}
    missing: dict[str, None] = {}
    hidden: dict[str, None] = {}
    # Every attempt's files, by workdir: a cell's command may name its own script
    # (`python ${{ matrix.prog }}.py`), where the first attempt of each workdir alone was
    # read and a bundle carried flaky.py but not crash.py, whose cells then could not rerun.
    by_workdir: dict[Path, list[AttemptPlan]] = {}
    for attempt in attempts:
        by_workdir.setdefault(attempt.workdir.resolve(), []).append(attempt)
    for workdir, alike in by_workdir.items():
        workdirs[workdir] = None
        carried = workdir_files(alike[0], alike[1:])
        for name in carried.missing:
            missing.setdefault(f"{name} (in {workdir})", None)
        for name in carried.hidden:
            hidden.setdefault(f"{name} (in {workdir})", None)
        files.update(dict.fromkeys(carried.files))
        outside.update(dict.fromkeys(carried.outside))
        absolute.update(dict.fromkeys(carried.absolute))
    for dockerfile in dict.fromkeys(a.environment.dockerfile for a in attempts):
        if dockerfile:
            context = dockerfile_context(spec_path.parent, dockerfile)
            outside.update(dict.fromkeys(context.files))
            missing.update(dict.fromkeys(context.missing))
            hidden.update(dict.fromkeys(context.hidden))
    too_large = [p for p in [*files, *outside] if capped.size(p) > max_file_bytes]
    for path in too_large:
        files.pop(path, None)
        outside.pop(path, None)
    warnings = _not_carried(absolute, too_large, max_file_bytes)
    if missing:
        warnings.append(
            "not carried, named by the spec's files but not there: " + ", ".join(missing)
        )
    if hidden:
        warnings.append(
            "not carried, hidden (a dot-file or a dot-folder's, where a project keeps its "
            "own secrets: whoever reruns it supplies their own): " + ", ".join(hidden)
        )
    spec = spec_path.resolve()
    root = Path(os.path.commonpath([spec.parent, *workdirs, *(p.parent for p in outside)]))
    written = _workdir_field(document)
    absolute_workdir = None
    if written is not None and Path(written).expanduser().is_absolute():
        if len(workdirs) != 1:
            raise UsageError(
                "the spec names absolute workdirs that differ from cell to cell: "
                "a bundle cannot place them (make them relative to the spec)"
            )
        absolute_workdir = next(iter(workdirs))
    return SpecTree(
        spec,
        root,
        (*files, *(p for p in outside if p not in files)),
        tuple(outside),
        tuple(workdirs),
        absolute_workdir,
        tuple(warnings),
        tuple(p for p in too_large if _inside(p, root)),
    )


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(root)


def copy_tree(tree: SpecTree, dest: Path, *, linked: Iterable[Path] = ()) -> Path:
    """Copy the spec and the files of `tree` into the empty folder `dest`, each at its
    place; the copied spec's path. `linked` (and the tree's too-large files) are linked at
    their places instead, not copied: what no tree carries but this machine has (a 20 MiB
    checkpoint a reader fetches, an environment made in the workdir). A spec naming its
    workdir by an absolute path runs there wherever it is copied: no copy can stand for
    it (UsageError)."""
    if tree.absolute_workdir is not None:
        raise UsageError(
            f"the spec names its workdir by an absolute path ({tree.absolute_workdir})"
        )
    placed = [tree.place(path) for path in tree.files]
    for rel in [*placed, tree.place(tree.spec)]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    for folder in tree.empty_workdirs(placed):
        (dest / folder).mkdir(parents=True, exist_ok=True)
    for path, rel in zip(tree.files, placed, strict=True):
        shutil.copy2(path, dest / rel)  # the mode too: a script run as `./run.sh`
    for path in [*tree.too_large, *linked]:
        target = dest / tree.place(path)
        if _inside(path, tree.root) and not target.exists() and not target.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    spec = dest / tree.place(tree.spec)
    shutil.copy2(tree.spec, spec)
    return spec


def _not_carried(absolute: Iterable[Path], too_large: Sequence[Path], limit: int) -> list[str]:
    """The warnings for the named files a tree leaves out, each file named."""
    absolute = list(absolute)
    warnings = []
    if absolute:
        warnings.append(
            "not carried, named by an absolute path that a recipient's tree cannot give "
            "(name them relative to the workdir to carry them): "
            + ", ".join(str(p) for p in absolute)
        )
    if too_large:
        warnings.append(
            f"not carried, over {limit} bytes (what unpacking takes per file): "
            + ", ".join(str(p) for p in too_large)
        )
    return warnings


def _workdir_field(document: object) -> str | None:
    environment = document.get("environment") if isinstance(document, dict) else None
    workdir = environment.get("workdir") if isinstance(environment, dict) else None
    return str(workdir) if workdir is not None else None


def program_digest(attempts: Iterable[AttemptPlan]) -> str:
    """A hash of the program the attempts run (`PlannedAttempts.variants`: one per job):
    its sources and inputs (plan/workfiles.py's `program_files`, the rule `compare`
    digests by too), each by its path and content, a file over DIGEST_LIMIT by its size
    and modification time.

    Part of a search's id (isolate, amplify, bisect): a finished search is replayed from
    its stored probes, and keyed on the spec alone it answered "amplified 7/8" and ran
    nothing after the bug under test was fixed in the script. Not the other files the
    command's words name: a log it writes (`--log run.log`) would change the id at every
    run (an interrupted search then started over instead of resuming). The spec's own
    text is hashed by the caller.
    """
    from reprospec.store.digests import file_digest

    program = program_files(attempts)
    digest = hashlib.sha256()
    for path in sorted({*program.sources, *program.inputs}):
        digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
        # Keyed by a constant: the same bytes give the same id in every store.
        digest.update(file_digest(b"program", path).encode() + b"\0")
    return digest.hexdigest()[:16]
