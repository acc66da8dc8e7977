"""The distributions behind a program's imports, read in the interpreter that ran it.

`python -m reprospec_harness.pins MODULE...` (the module names the program's processes
looked for) prints `{"python": "3.11", "pins": ["numpy==2.1.0", ...]}`.
capture pins `environment.packages` from it: read in the engine's own interpreter, a
command run by another one (`/opt/py/bin/python t.py`, or `capture --python`) got the
engine's versions (Pygments 2.21.0 where the program ran 2.20.0) and lost the packages the
engine lacks. Standard library only, as the rest of the harness.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
import sys
from collections.abc import Iterable

# reprospec's own modules in a child (its sitecustomize, the harness), and setuptools' shim.
OWN_MODULES = frozenset({"sitecustomize", "reprospec", "reprospec_harness", "_distutils_hack"})


def distributions(modules: Iterable[str]) -> list[str]:
    """`name==version` of every distribution that provides a top-level module in `modules`
    (the standard library and the engine's own modules left out), sorted; of those one
    of them requires, only what the program chose (the rest comes with it)."""
    tops = {name.split(".", 1)[0] for name in modules}
    tops -= _standard_library() | OWN_MODULES
    tops = {name for name in tops if name and not name.startswith("_") and name.isidentifier()}
    owners = _owners()
    pinned: dict[str, str] = {}
    needed: set[str] = set()
    for top in sorted(tops):
        for dist in owners.get(top, ()):
            if dist.lower() in ("reprospec", "pip", "setuptools"):
                continue
            try:
                pinned.setdefault(_normalized(dist), f"{dist}=={metadata.version(dist)}")
                requires = metadata.requires(dist) or []
            except metadata.PackageNotFoundError:
                continue
            # Not a requirement of an extra (`pytest; extra == "testing"`): that one is not
            # installed with it, and execnet's left pytest itself unpinned.
            needed |= {
                _normalized(re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0])
                for r in requires
                if not re.search(r"\bextra\s*==", r.partition(";")[2])
            }
    chosen = [pin for name, pin in pinned.items() if name not in needed] or list(pinned.values())
    return sorted(chosen, key=str.lower)


def _standard_library() -> set[str]:
    """The standard library's top-level modules (`sys.stdlib_module_names` from 3.10; the
    builtins and the stdlib folder's names before it: a capture of a 3.9 program)."""
    known = getattr(sys, "stdlib_module_names", None)
    if known is not None:
        return set(known)
    import sysconfig
    from pathlib import Path

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
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    print(json.dumps({"python": version, "pins": distributions(sys.argv[1:])}))


if __name__ == "__main__":
    main()
