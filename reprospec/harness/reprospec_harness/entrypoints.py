"""`module:callable` entry points, resolved against the working directory (the spec's workdir)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any


def resolve(reference: str) -> Callable[..., Any]:
    """The callable named by `package.module:attribute.path`."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"entrypoint {reference!r} must look like 'module:callable'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"entrypoint {reference!r} is not callable")
    return target


def call(section: Mapping[str, Any]) -> Any:
    """Call `section["entrypoint"]` with `section["params"]` as keyword arguments."""
    return resolve(str(section["entrypoint"]))(**dict(section.get("params") or {}))
