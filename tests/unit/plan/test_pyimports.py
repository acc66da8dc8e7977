"""The one reader of a Python program's imports, and its one rule for a source it cannot read."""

from __future__ import annotations

from pathlib import Path

from reprospec.plan.pyimports import Imports, parse_imports, read_imports
from reprospec.plan.shellwords import MAX_PARSE_BYTES
from tests.support.deep import too_deep


def test_imports_at_any_depth_and_relative_ones_resolved(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    mod = tmp_path / "pkg" / "mod.py"
    mod.write_text(
        "import os\nclass A:\n    def f(self):\n        try:\n            import torch.nn as nn\n"
        "        except ImportError:\n            from numpy import linalg\n"
        "from . import helper\n"
    )
    read = read_imports(mod)
    assert read is not None
    assert not read.dynamic
    assert set(read.modules) == {"os", "torch.nn", "numpy", "numpy.linalg", "pkg", "pkg.helper"}
    assert read.top == {"os", "torch", "numpy", "pkg"}
    # With no file to resolve against (a `-c` program), a relative import is left out.
    assert parse_imports("from . import helper\nimport json\n") == Imports(("json",))


def test_a_source_not_read_is_none_never_importing_nothing(tmp_path: Path) -> None:
    # Three readers took this as "imports nothing", "everything" or "not torch".
    assert parse_imports("import torch\ntype Alias = int if True else (\n") is None
    assert parse_imports(b"import torch\x00\n") is None
    big = tmp_path / "big.py"
    big.write_text("import torch\n" + "#" * MAX_PARSE_BYTES)
    assert read_imports(big) is None
    assert read_imports(tmp_path / "gone.py") is None
    # A source with no import in it at all needs no parse to say so.
    assert parse_imports("x = (\n") == Imports(())
    # Nested deeper than the parser goes: Python itself refuses it (the engine's
    # RecursionError was an internal error of `run`).
    assert parse_imports(f"import torch\n{too_deep()}") is None


def test_a_module_imported_by_a_run_time_name_is_said() -> None:
    assert parse_imports("import importlib\nm = importlib.import_module(name)\n") == Imports(
        ("importlib",), dynamic=True
    )
    assert parse_imports("m = __import__('torch')\n") == Imports((), dynamic=True)
    # The word alone (a comment, a string) is not a call.
    assert parse_imports("import os  # no __import__ here\n") == Imports(("os",))
