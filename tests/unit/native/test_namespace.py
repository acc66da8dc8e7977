"""`reprospec.native`'s names are read from their submodules at first use (__init__.py's
_WHERE): the three lists that say so (the TYPE_CHECKING imports, _WHERE, __all__) agree."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from reprospec import native


def test_every_exported_name_is_found_where_the_table_says() -> None:
    where: dict[str, str] = native._WHERE
    assert set(native.__all__) == set(where)
    for name, module in where.items():
        assert getattr(native, name) is getattr(
            importlib.import_module(f"reprospec.native.{module}"), name
        )


def test_the_type_checking_imports_name_the_same_modules() -> None:
    tree = ast.parse(Path(native.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {
        alias.name: node.module.rsplit(".", 1)[1]
        for node in guarded.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert imported == native._WHERE
