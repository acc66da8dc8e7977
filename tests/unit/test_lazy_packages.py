"""The packages whose names are read from their submodules at first use (their
`__init__.py`'s `_WHERE`: `reprospec.native`, `reprospec.doctor`): the three lists that say
so (the TYPE_CHECKING imports, `_WHERE`, `__all__`) agree, so a name added to one is not
missing from another."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import FunctionType, ModuleType

import pytest

from reprospec import doctor, native

LAZY = pytest.mark.parametrize("package", [native, doctor], ids=lambda p: p.__name__)


@LAZY
def test_every_exported_name_is_found_where_the_table_says(package: ModuleType) -> None:
    where: dict[str, str] = package._WHERE
    own = set(package.__all__) - set(where)  # defined in the package's __init__ itself
    assert set(where) <= set(package.__all__)
    # A class or function says where it was defined; a constant (doctor's INTERPRETER_CHECKS)
    # does not, and is looked for among the names __init__.py itself assigns.
    defined = {name for name in own if isinstance(getattr(package, name), (type, FunctionType))}
    assert all(getattr(package, name).__module__ == package.__name__ for name in defined)
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    assigned = {
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert own - defined <= assigned
    for name, module in where.items():
        assert getattr(package, name) is getattr(
            importlib.import_module(f"{package.__name__}.{module}"), name
        )


@LAZY
def test_the_type_checking_imports_name_the_same_modules(package: ModuleType) -> None:
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {
        alias.name: node.module.rsplit(".", 1)[1]
        for node in guarded.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert imported == package._WHERE
