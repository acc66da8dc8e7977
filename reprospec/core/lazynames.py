"""A package's names read from their submodules at first use (PEP 562's `__getattr__`).

`reprospec.native` and `reprospec.doctor` export names that every run's code refers to
but few runs use: importing their submodules eagerly (eu-stack's and gdb's parsers, the
machine's checks) was part of a short run's fixed cost (issue 30, item 4). Each package
keeps a table `_WHERE` (name -> submodule) beside its TYPE_CHECKING imports and `__all__`
(tests/unit/test_lazy_packages.py checks that the three agree); this is the one
`__getattr__` both use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(
    package: str,
    where: Mapping[str, str],
    submodules: frozenset[str],
    namespace: dict[str, Any],
) -> Callable[[str], object]:
    """The `__getattr__` of `package`: a name of `where` is read from its submodule at first
    use, then kept in `namespace` (the package's globals), so the next use is a plain
    lookup; a name of `submodules` is the submodule itself, as an eager import would set."""

    def __getattr__(name: str) -> object:
        if name in submodules:
            return import_module(f"{package}.{name}")
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
