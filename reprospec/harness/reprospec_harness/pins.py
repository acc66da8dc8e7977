"""The distributions behind a program's imports, read in the interpreter that ran it.

`python -m reprospec_harness.pins MODULE...` (the module names the program's processes
looked for) prints `{"python": "3.11", "pins": ["numpy==2.1.0", ...], "local": [...]}`.
capture pins `environment.packages` from it: read in the engine's own interpreter, a
command run by another one (`/opt/py/bin/python t.py`, or `capture --python`) got the
engine's versions (Pygments 2.21.0 where the program ran 2.20.0) and lost the packages the
engine lacks. Standard library only, as the rest of the harness.

A distribution installed from a folder of this machine (PEP 610's direct_url.json:
`pip install -e .` of the user's own project, `pip install ./proj`, a local git clone) is
no index's: `mypkg==0.1.0` made every venv and docker build of the spec fail. It is in
`local` instead, with the folders an editable one serves its imported modules from
(`roots`); one from a VCS or a URL is pinned as the direct reference an installer can
fetch again (`name @ git+https://...@COMMIT`). A `setup.py develop` install (also pip's
`pip install -e` of a project whose setuptools predates PEP 660, which runs it) writes no
direct_url.json: its `.egg-info` in the project's folder, which an `.egg-link` or a `.pth`
of a site folder names, says it is editable (`_develop_folders`).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

# reprospec's own modules in a child (its sitecustomize, the harness), and setuptools' shim.
OWN_MODULES = frozenset({"sitecustomize", "reprospec", "reprospec_harness", "_distutils_hack"})


def distributions(modules: Iterable[str]) -> list[str]:
    """`name==version` of every distribution that provides a top-level module in `modules`
    (the standard library and the engine's own modules left out), sorted; of those one
    of them requires, only what the program chose (the rest comes with it). A local
    install is not among them (`read`)."""
    return read(modules)[0]


def read(modules: Iterable[str], program: str = "") -> tuple[list[str], list[dict[str, object]]]:
    """The pins of `distributions`, and the distributions behind `modules` installed from
    this machine's folders or files (`_direct`), each `{"name", "version", "path",
    "editable", "roots", "modules"}`: `roots`, the folders an editable one serves the
    imported top-level `modules` from.

    `program`: the distribution of the program the command runs (`program_distribution`),
    always pinned: the rule above dropped pytest, which pytest-xdist requires, and the
    spec pinned the plugin but not the program."""
    tops = {name.split(".", 1)[0] for name in modules}
    tops -= _standard_library() | OWN_MODULES
    tops = {name for name in tops if name and not name.startswith("_") and name.isidentifier()}
    owners = _owners()
    if program:
        # Its own top-level modules, were the program's import not recorded (a crash first).
        tops |= {top for top, dists in owners.items() if program in dists}
    develop = _develop_folders()
    _add_editable_owners(owners, tops, develop)
    pinned: dict[str, str] = {}
    local: dict[str, dict[str, object]] = {}
    needed: set[str] = set()
    for top in sorted(tops):
        for dist in owners.get(top, ()):
            if dist.lower() in ("reprospec", "pip", "setuptools"):
                continue
            key = _normalized(dist)
            try:
                found = metadata.distribution(dist)
                version = found.version
                requires = found.requires or []
            except metadata.PackageNotFoundError:
                continue
            pin, path, editable = _direct(dist, version, found.read_text("direct_url.json"))
            if path is None and (project := _developed(found, develop)) is not None:
                path, editable = project, True
            if path is not None:
                # No installer fetches it again, and what it requires is no longer
                # installed with it: each is pinned for itself, as the program chose it.
                entry = local.setdefault(
                    key,
                    {"name": dist, "version": version, "path": path, "editable": editable,
                     "roots": [], "modules": []},
                )  # fmt: skip
                roots, tops_served = entry["roots"], entry["modules"]
                if editable and isinstance(roots, list) and isinstance(tops_served, list):
                    roots += [r for r in _roots(top) if r not in roots]
                    tops_served.append(top)
                continue
            pinned.setdefault(key, pin)
            # Not a requirement of an extra (`pytest; extra == "testing"`): that one is not
            # installed with it, and execnet's left pytest itself unpinned.
            needed |= {
                _normalized(re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0])
                for r in requires
                if not re.search(r"\bextra\s*==", r.partition(";")[2])
            }
    kept = needed - {_normalized(program)} if program else needed
    chosen = [pin for name, pin in pinned.items() if name not in kept] or list(pinned.values())
    return sorted(chosen, key=str.lower), [local[name] for name in sorted(local)]


def program_distribution(program: str, module: str) -> str:
    """The distribution of the program a command runs: the one whose console script is
    named `program` (`pytest`, `/venv/bin/pytest`), or, for `python -m MODULE`, the one
    providing `module`'s top-level package; "" for none (a script of the workdir)."""
    if module:
        owners = _owners().get(module.split(".", 1)[0], [])
        return owners[0] if owners else ""
    name = Path(program).name
    for dist in metadata.distributions() if name else ():
        for entry in dist.entry_points:
            if entry.group in _SCRIPT_GROUPS and entry.name == name:
                return str(dist.metadata["Name"])
    return ""


def plugins(pins: Iterable[str], modules: Iterable[str], program: str) -> list[str]:
    """Of `pins`, the distributions the program loads as plugins: each declares an entry
    point for `program`'s distribution to find (pytest's `pytest11`: any group but a console
    script's) whose module the program loaded, by its whole name (`xdist.plugin`,
    `_hypothesis_pytestplugin`). Said as such: `packages it imported: pytest-xdist` read as
    if the program imported it itself. By its top-level package alone, a test importing
    torch made torch a plugin (its `torchrun.logs_specs` entry point names a torch module),
    and hypothesis, whose plugin is a top-level module of its own, was none."""
    if not program:
        return []
    names = set(modules)
    found = []
    for pin in pins:
        if _pin_name(pin) == _normalized(program):
            continue
        name = re.split(r"\s*(?:==|@)", pin, maxsplit=1)[0]
        try:
            entries = metadata.distribution(name).entry_points
        except metadata.PackageNotFoundError:
            continue
        if any(
            e.group not in _SCRIPT_GROUPS and re.split(r"[\s:\[]", e.value.strip())[0] in names
            for e in entries
        ):
            found.append(pin)
    return found


_SCRIPT_GROUPS = ("console_scripts", "gui_scripts")


def direct_pins(pins: Iterable[str], direct: Iterable[str]) -> list[str]:
    """Of `pins`, those of a distribution that provides a top-level module in `direct`, the
    modules the program's own code imports: the rest were imported by its libraries and
    plugins (hypothesis's `typing_extensions`), which capture says apart, not as the
    program's imports."""
    owners = _owners()
    names = {_normalized(dist) for top in direct for dist in owners.get(top, ())}
    return [pin for pin in pins if _pin_name(pin) in names]


def _pin_name(pin: str) -> str:
    """The normalized name of a pin: `pytest-xdist==3.8.0`, `name @ git+...`."""
    return _normalized(re.split(r"\s*(?:==|@)", pin, maxsplit=1)[0])


def _add_editable_owners(
    owners: dict[str, list[str]], tops: Iterable[str], develop: dict[Path, str]
) -> None:
    """Each of `tops` an editable install serves from its project's folder, added to its
    owners: an editable wheel's files are a `.pth` (and a finder), and without a
    `top_level.txt` (hatchling's, flit's, uv's) no file names the module, so the
    project was neither pinned nor said to be installed at all."""
    folders: list[tuple[str, Path]] = []
    for dist in metadata.distributions():
        _, path, editable = _direct("", "", dist.read_text("direct_url.json"))
        if path is None and (project := _developed(dist, develop)) is not None:
            path, editable = project, True
        name = dist.metadata["Name"]
        if editable and path and name:
            folders.append((name, Path(path).resolve()))
    for top in tops if folders else ():
        for root in _roots(top):
            for name, folder in folders:
                served = Path(root).resolve() == folder or folder in Path(root).resolve().parents
                if served and name not in owners.get(top, []):
                    owners.setdefault(top, []).append(name)


def _develop_folders() -> dict[Path, str]:
    """The folders `setup.py develop` installs serve their projects from, each with its
    project's folder: an `.egg-link` of a site folder names the one (its first line) and the
    other (its second, relative to the first: `../` for a `src/` layout); a `.pth` path
    line names a folder alone (easy-install.pth holds the same). Such an install writes no
    direct_url.json, and it was pinned as an index's release (`mypkg==0.1.0`)."""
    found: dict[Path, str] = {}
    sites = [Path(p) for p in sys.path if p and Path(p).name in _SITE_FOLDERS]
    for site_folder in dict.fromkeys(sites):
        try:
            entries = sorted(site_folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix not in (".egg-link", ".pth"):
                continue
            try:
                lines = [line.strip() for line in entry.read_text().splitlines()]
            except (OSError, UnicodeDecodeError):
                continue
            lines = [line for line in lines if line and not line.startswith(("#", "import"))]
            if entry.suffix == ".egg-link" and lines:
                folder = (site_folder / lines[0]).resolve()
                project = folder / lines[1] if len(lines) > 1 else folder
                found[folder] = str(project.resolve())
            for line in lines if entry.suffix == ".pth" else ():
                folder = (site_folder / line).resolve()
                found.setdefault(folder, str(folder))
    # A site folder a `.pth` adds (Debian's dist-packages), or an egg easy_install unpacked
    # (`six-1.16-py3.11.egg`, its EGG-INFO a PKG-INFO too): installed releases, not projects.
    return {f: p for f, p in found.items() if f.name not in _SITE_FOLDERS and f.suffix != ".egg"}


_SITE_FOLDERS = ("site-packages", "dist-packages")


def _developed(dist: metadata.Distribution, develop: dict[Path, str]) -> str | None:
    """The project folder of `dist` when it is a `setup.py develop` install (`develop`, of
    `_develop_folders`): an `.egg-info` (a PKG-INFO, where a wheel's `.dist-info` has
    METADATA) in a folder an `.egg-link` or a `.pth` names. None otherwise."""
    if not develop or dist.read_text("PKG-INFO") is None:
        return None
    return develop.get(Path(str(dist.locate_file(""))).resolve())


def _direct(name: str, version: str, direct_url: str | None) -> tuple[str, str | None, bool]:
    """The requirement that installs `name` again, and, for an install from a folder of
    this machine (a `file://` URL in its PEP 610 direct_url.json, but a wheel's or an
    sdist's: a release of that version, which a wheelhouse serves), the path it came from
    and whether it is editable (then the pin is unused)."""
    try:
        found = json.loads(direct_url) if direct_url else None
    except ValueError:
        found = None
    url = found.get("url") if isinstance(found, dict) else None
    if not isinstance(found, dict) or not isinstance(url, str):
        return f"{name}=={version}", None, False
    if url.startswith("file://") and "archive_info" in found:
        return f"{name}=={version}", None, False
    if url.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        info = found.get("dir_info")
        editable = isinstance(info, dict) and info.get("editable") is True
        return "", unquote(urlsplit(url).path), editable
    vcs = found.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        return f"{name} @ {vcs['vcs']}+{url}@{vcs['commit_id']}", None, False
    return f"{name} @ {url}", None, False


def _roots(top: str) -> list[str]:
    """The folders the top-level module `top` is imported from here (its package's parent,
    or each folder of a namespace package's): where an editable install serves it, whether
    through a `.pth` path or a finder of its own (setuptools' `__editable__` finder)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.origin and Path(spec.origin).is_absolute():
        folder = Path(spec.origin).parent
        return [str(folder.parent if spec.submodule_search_locations else folder)]
    return [str(Path(p).parent) for p in spec.submodule_search_locations or ()]


def _standard_library() -> set[str]:
    """The standard library's top-level modules (`sys.stdlib_module_names` from 3.10; the
    builtins and the stdlib folder's names before it: a capture of a 3.9 program)."""
    known = getattr(sys, "stdlib_module_names", None)
    if known is not None:
        return set(known)
    import sysconfig

    folder = Path(sysconfig.get_paths()["stdlib"])
    names = {p.stem if p.suffix == ".py" else p.name for p in folder.iterdir()}
    return names | set(sys.builtin_module_names)


def _owners() -> dict[str, list[str]]:
    """Top-level module -> the distributions providing it (`packages_distributions` from
    3.10; each distribution's `top_level.txt`, else its files' first parts, before it)."""
    found = getattr(metadata, "packages_distributions", None)
    if found is not None:
        return dict(found())
    owners: dict[str, list[str]] = {}
    for dist in metadata.distributions():
        tops = (dist.read_text("top_level.txt") or "").split()
        if not tops:
            tops = [_module_of(str(f).split("/", 1)[0]) for f in dist.files or ()]
        for top in dict.fromkeys(tops):
            owners.setdefault(top, []).append(dist.metadata["Name"])
    return owners


def _module_of(first: str) -> str:
    """A file's first path part as a module name: `six.py` -> `six` (3.8 has no removesuffix)."""
    return first[:-3] if first.endswith(".py") else first


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> None:
    # `-m` put the current folder first: the workdir's own modules and a project's
    # `mypkg.egg-info` there are not what the installs serve (an editable install read
    # through it had no direct_url.json, and was pinned as an index's).

    if sys.path and Path(sys.path[0] or ".").resolve() == Path.cwd().resolve():
        del sys.path[0]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    # `--program NAME` (the command's program, a console script) or `--module NAME` (its
    # `python -m NAME`), `--direct A,B` (the top-level modules the program's own code
    # imports, capture's reading of its sources; "" for none), then the modules.
    args = sys.argv[1:]
    given: dict[str, str | None] = {"--program": "", "--module": "", "--direct": None}
    while len(args) > 1 and args[0] in given:
        given[args[0]], args = args[1], args[2:]
    program = program_distribution(given["--program"] or "", given["--module"] or "")
    pins, local = read(args, program)
    found: dict[str, object] = {"python": version, "pins": pins, "local": local}
    direct = given["--direct"]
    if direct is not None:
        found["direct"] = direct_pins(pins, direct.split(","))
    if program:
        own = [
            p for p in pins if _normalized(re.split(r"\s*(?:==|@)", p)[0]) == _normalized(program)
        ]
        found["program"] = own[0] if own else ""
        found["plugins"] = plugins(pins, args, program)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
