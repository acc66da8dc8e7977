"""Every file of the package that is not Python ships in the wheel: setuptools takes only
.py files of a package unless pyproject.toml's package-data names the others, and an
editable install (this checkout's) reads them from the tree whatever it says, so a file
left out fails only a user's plain `pip install`."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

import reprospec

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on; the package reads no TOML

ROOT = Path(reprospec.__file__).parent


def test_every_file_that_is_not_python_is_named_by_package_data() -> None:
    pyproject = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["reprospec"]
    data = [
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    ]
    assert "export/run.sh.in" in data  # the walk sees the package's own data
    assert [name for name in data if not any(fnmatch(name, p) for p in patterns)] == []
