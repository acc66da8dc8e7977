"""The wheels of a `--find-links` wheelhouse that a packages image's build needs.

The build COPYs its wheels into a layer of its own, and the `rm` after pip's install
cannot take them out of it: with the whole folder, every image built for a cell's
`packages` kept a copy of the wheelhouse (torch's 200 MB in an image of one small
package), and a wheel added to the folder for another spec made every such image
outdated. Only the requirements' wheels and those of what they require, read from each
wheel's METADATA, go into the build; a folder with anything but wheels (an sdist, whose
requirements are read only by building it), or a requirement that names no distribution
(a URL), keeps the whole folder, as before.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from email.parser import HeaderParser
from pathlib import Path

from reprospec.environment.packages import normalize, requirement_name


def _requires(wheel: Path) -> list[str]:
    """The distributions `wheel`'s METADATA requires (Requires-Dist, whatever its markers:
    one wheel too many costs a copy, one too few the build)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        with zipfile.ZipFile(wheel) as archive:
            name = next(
                (
                    n
                    for n in archive.namelist()
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
                ),
                None,
            )
            text = archive.read(name).decode("utf-8", "replace") if name else ""
    except (OSError, zipfile.BadZipFile, KeyError):
        return []
    names = []
    for line in HeaderParser().parsestr(text).get_all("Requires-Dist") or []:
        try:
            names.append(normalize(Requirement(line).name))
        except InvalidRequirement:
            continue
    return names


def _wheels(folder: Path) -> list[Path] | None:
    """The files of `folder`, sorted, where each is a wheel; None where one is not (an
    sdist, whose name and requirements are its build's to say). Hidden files are no
    distribution's."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    return None if any(p.suffix != ".whl" for p in files) else files


def needed_wheels(folder: Path, requirements: Sequence[str]) -> tuple[Path, ...] | None:
    """The wheels of `folder` that installing `requirements` can use; None: the whole
    folder (it holds more than wheels, or a requirement names no distribution)."""
    files = _wheels(folder)
    if files is None:
        return None
    by_name: dict[str, list[Path]] = {}
    for wheel in files:
        by_name.setdefault(normalize(wheel.name.split("-", 1)[0]), []).append(wheel)
    wanted = [requirement_name(r) for r in requirements]
    if any(name is None for name in wanted):
        return None
    seen: set[str] = set()
    todo = [name for name in wanted if name is not None]
    chosen: list[Path] = []
    while todo:
        name = normalize(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for wheel in by_name.get(name, ()):
            chosen.append(wheel)
            todo += _requires(wheel)
    return tuple(sorted(chosen))


def unmet(folder: Path, requirements: Sequence[str]) -> tuple[str, ...]:
    """The requirements of `requirements` that no wheel of `folder` can satisfy, by name and
    version (a build with `--no-index --find-links` fails on each); () where that cannot be
    told offline: a folder with anything but wheels (an sdist's version is its build's), a
    line that is an option (`--extra-index-url`) or names no distribution (a URL)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import Version

    files = _wheels(folder)
    if files is None:
        return ()
    versions: dict[str, list[Version]] = {}
    for wheel in files:
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            return ()
        versions.setdefault(normalize(name), []).append(version)
    out = []
    for line in requirements:
        if line.startswith("-"):
            continue
        try:
            wanted = Requirement(line)
        except InvalidRequirement:
            continue
        if wanted.url:
            continue
        have = versions.get(normalize(wanted.name), [])
        if not any(wanted.specifier.contains(v, prereleases=True) for v in have):
            out.append(line)
    return tuple(out)
