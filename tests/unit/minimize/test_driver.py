"""What minimize takes to be the program (the files read from a real workdir)."""

from __future__ import annotations

from pathlib import Path

from reprospec.minimize.driver import _program
from tests.support.files import written


def test_a_file_in_another_encoding_stays_whole_and_its_imports_are_followed(
    tmp_path: Path,
) -> None:
    """A `coding: latin-1` file is Python source (PEP 263); reading it as UTF-8 raised
    UnicodeDecodeError out of minimize. Candidates are written as UTF-8, so it is left
    whole, and the module it imports is still minimized."""
    written(tmp_path, {"helper.py": "X = 1\n", "bom.py": "\ufeffY = 2\n"})
    (tmp_path / "app.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport helper\nimport bom\nprint('caf\xe9')\n"
    )

    program = _program("python app.py", tmp_path, {})

    assert dict(program.files) == {"helper.py": "X = 1\n", "bom.py": "Y = 2\n"}
    assert program.head == ("python", "app.py")


def test_a_file_python_could_not_read_is_neither_minimized_nor_followed(tmp_path: Path) -> None:
    written(tmp_path, {"helper.py": "X = 1\n"})
    (tmp_path / "app.py").write_bytes(b"import helper\nprint('\xe9')\n")  # no coding line

    assert _program("python app.py", tmp_path, {}).files == ()


def test_files_in_another_encoding_that_import_each_other_are_read_once(tmp_path: Path) -> None:
    # Only the minimized files were remembered as read: two latin-1 modules importing each
    # other recursed until RecursionError, a traceback out of minimize.
    (tmp_path / "a.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport b\nA = '\xe9'\n")
    (tmp_path / "b.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport a\nB = '\xe9'\n")

    assert _program("python a.py", tmp_path, {}).files == ()
