"""Whether an `environment.packages` entry is something pip (uv) can be asked to install.

An entry is a PEP 508 requirement (`six==1.2`, `torch>=2; python_version < "3.12"`,
`pkg @ https://...`) or a location pip installs from (a wheel or sdist file, a folder, a
URL). Anything else (`six=1.2`, `torch>>2`) is a typo: the venv runner fails to install it,
and the local runner, which only compares names and versions, could name no distribution to
compare and judged the cell as if the spec had asked for nothing (`reproduced`).
So `validate` refuses it where it is written, and the local runner refuses a cell with one
(environment/packages.py) in case it comes from somewhere validation did not see.

In core, not in environment/: the spec's checks run before any runner module is imported.
"""

from __future__ import annotations

from reprospec.core.lazyre import Lazy

# `pip install` takes these besides requirements: a path (`./w/x.whl`, `../pkg`, `/abs`,
# `~/x`), an archive by its name, or a URL (`git+https://...`, `file:///...`).
_LOCATION = Lazy(
    r"^(\.{1,2}[/\\]|[/\\~]|[A-Za-z][A-Za-z0-9+.-]*://)|\.(whl|tar\.gz|tgz|zip|tar\.bz2)$"
)
_SEPARATORS = Lazy(r"[-_.]+")
# The usual slips, each with what was meant: `six=1.2`, `torch>>2`, `torch=>2`, `six=<2`.
_FIXES = (
    (Lazy(r"=>"), ">="),
    (Lazy(r"=<"), "<="),
    (Lazy(r">>"), ">"),
    (Lazy(r"<<"), "<"),
    (Lazy(r"(?<![=<>!~])=(?![=<>])"), "=="),
)


def normalize(name: str) -> str:
    """PEP 503 name normalization: `Typing_Extensions` -> `typing-extensions` (the one rule:
    environment/packages.py's, environment/facts.py's, capture's machine block's
    (capture/envblock.py), and core/notstarted.py's of a module `python -m` lacks)."""
    return _SEPARATORS.sub("-", name).lower()


def is_location(text: str) -> bool:
    """A file, folder or URL to install from rather than a requirement naming a distribution."""
    return bool(_LOCATION.search(text.strip()))


def problem(text: str) -> str | None:
    """Why `text` is neither a PEP 508 requirement nor a location (None: it is one of them)."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = text.strip()
    try:
        Requirement(text)
    except InvalidRequirement:
        pass
    else:
        return None
    if is_location(text):
        return None
    message = f"{text!r} is not a valid requirement"
    suggestion = _suggestion(text)
    if suggestion is not None:
        return f"{message} (did you mean {suggestion!r}?)"
    return f"{message}: expected a PEP 508 requirement such as 'six==1.2' or 'torch>=2'"


def _suggestion(text: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement

    # Only the version part is rewritten: a marker's `==` and `'...'` stay as written.
    head, sep, marker = text.partition(";")
    fixed = head
    for pattern, replacement in _FIXES:
        fixed = pattern.sub(replacement, fixed)
    if fixed == head:
        return None
    candidate = fixed + sep + marker
    try:
        Requirement(candidate)
    except InvalidRequirement:
        return None
    return candidate
