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
    tops -= set(sys.stdlib_module_names) | OWN_MODULES
    tops = {name for name in tops if name and not name.startswith("_") and name.isidentifier()}
    owners = metadata.packages_distributions()
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
            needed |= {_normalized(re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0]) for r in requires}
    chosen = [pin for name, pin in pinned.items() if name not in needed] or list(pinned.values())
    return sorted(chosen, key=str.lower)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    print(json.dumps({"python": version, "pins": distributions(sys.argv[1:])}))


if __name__ == "__main__":
    main()
