"""A path pytest prints relative to its rootdir is named as its absolute form is
(report/paths.py `_relative_spellings`): a warning from a venv's file is headed
`../../../work/main/.venv/lib/...`, which named where the venv lies."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reprospec.report.paths import PathNames

_TEST = """
import setuptools.warnings as venv_module

# Warned at import from the venv's own file (stacklevel 0): pytest heads the warning
# with that file's path relative to its rootdir.
venv_module.SetuptoolsDeprecationWarning.emit("old thing", "use the new one", stacklevel=0)


def test_fails():
    assert False, "boom"
"""


def test_pytests_relative_header_of_a_venv_warning_is_named_venv(tmp_path: Path) -> None:
    project = tmp_path / "inc_a"
    project.mkdir()
    (project / "test_w.py").write_text(_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_w.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    venv = sys.prefix
    relative = os.path.relpath(venv, project)
    assert relative.startswith("../")
    assert f"\n{relative}/lib/" in ran.stdout, ran.stdout
    labels = {venv: "<venv>", str(project): "", str(Path.home()): "<home>"}
    for names in (PathNames(labels), PathNames.for_bundle(labels)):
        shown = names.shorten(ran.stdout)
        assert venv not in shown
        assert relative not in shown
        assert "\n<venv>/lib/" in shown
        assert "\n  <venv>/lib/" in shown
