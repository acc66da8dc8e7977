"""`module:callable` entry points, resolved against the working directory (the spec's workdir).

An entry point that cannot be found (malformed, its module or attribute missing,
not callable) or whose `params` do not fit its signature is a spec mistake: a
ConfigError naming the field. Whatever the user's code raises while being
imported or called is not: it may be the incident.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from .config import ConfigError, bind, mapping
from .values import JsonValue

T = TypeVar("T")


def resolve(reference: str, field: str = "entrypoint") -> Callable[..., object]:
    """The callable named by `package.module:attribute.path`; `field` names it in errors."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(field, f"entrypoint {reference!r} must look like 'module:callable'")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the entry point's own module (or a package on its path) being absent is a
        # spec mistake; a module that imports something missing is the user's code failing.
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise ConfigError(
                field,
                f"cannot import {reference!r}: no module named {missing!r} "
                f"(working directory {Path.cwd()})",
            ) from None
        raise
    for depth, part in enumerate(attribute.split(".")):
        try:
            target = getattr(target, part)
        except AttributeError:
            owner = ".".join([module_name, *attribute.split(".")[:depth]])
            raise ConfigError(
                field, f"cannot resolve {reference!r}: {owner!r} has no attribute {part!r}"
            ) from None
    if not callable(target):
        raise ConfigError(field, f"entrypoint {reference!r} is not callable")
    return target


def call(section: Mapping[str, JsonValue], path: str) -> object:
    """Call `section["entrypoint"]` with `section["params"]` as keyword arguments.

    `path` is the section's place in the spec (`workload.model`), for error messages.
    """
    reference = str(section["entrypoint"])
    function = resolve(reference, f"{path}.entrypoint")
    params = dict(mapping(section.get("params"), f"{path}.params"))
    bind(function, reference.partition(":")[2], f"{path}.params", **params)
    return function(**params)


def build(section: Mapping[str, JsonValue], path: str, kind: str, expected: type[T]) -> T:
    """`call`, then insist on an instance of `expected` (a model, a dataset)."""
    built = call(section, path)
    if not isinstance(built, expected):
        raise TypeError(
            f"{kind} entrypoint {section['entrypoint']!r} returned {type(built).__name__}"
        )
    return built
