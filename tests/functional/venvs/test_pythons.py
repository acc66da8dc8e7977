"""`environment.python: "3.X"` found where a user expects it, past a pyenv shim that does
not run: real shims, real interpreters, real `uv python find`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from reprospec.venvs import EnvBuildError, find_interpreter
from reprospec.venvs.build import forget_interpreters

MINOR = ".".join(map(str, sys.version_info[:2]))
FULL = ".".join(map(str, sys.version_info[:3]))
# The interpreter this venv was made from (a venv's own python needs its pyvenv.cfg beside).
BASE = os.path.realpath(Path(sys.base_prefix) / "bin" / f"python{MINOR}")
SHIM = f"""#!/bin/sh
echo "pyenv: python{MINOR}: command not found" >&2
echo "The 'python{MINOR}' command exists in these Python versions:" >&2
exit 127
"""


def _pyenv(root: Path, *, with_version: bool) -> Path:
    """A pyenv root whose shim of this version exits 127 (the version not active), and,
    `with_version`, the version itself under versions/ (a link to this interpreter)."""
    shims = root / "shims"
    shims.mkdir(parents=True)
    shim = shims / f"python{MINOR}"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    if with_version:
        bin_dir = root / "versions" / FULL / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / f"python{MINOR}").symlink_to(BASE)
    return shims


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No answer kept from another test, and no `.venv` in the folder uv starts in (uv
    takes a project's `.venv` first: this checkout's would answer for it)."""
    forget_interpreters()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def test_a_version_under_pyenv_is_found_past_a_shim_that_does_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was `uv python find 3.10 stopped at ~/.pyenv/shims/python3.10, which does not
    run`, every cell an infra-error, with 3.10.13 in ~/.pyenv/versions."""
    root = tmp_path / "pyenv"
    shims = _pyenv(root, with_version=True)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    found = find_interpreter(MINOR)
    assert found.version == FULL
    assert found.path == BASE


def test_none_found_says_what_it_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "pyenv"
    shims = _pyenv(root, with_version=False)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    with pytest.raises(EnvBuildError) as raised:
        find_interpreter(MINOR)
    said = str(raised.value)
    assert f"passed over {shims}/python{MINOR} (does not run: exit 127, pyenv:" in said
    assert f"give the path of a Python {MINOR} (--python PATH" in said


def test_a_programs_name_that_is_a_shim_is_found_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`environment.python: python3.10` (or `--python python3.10`) took PATH's shim, which
    does not run: `interpreter ~/.pyenv/shims/python3.10 does not run`."""
    root = tmp_path / "pyenv"
    shims = _pyenv(root, with_version=True)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    found = find_interpreter(f"python{MINOR}")
    assert (found.path, found.version) == (BASE, FULL)


def test_a_programs_name_with_no_shim_on_path_is_found_as_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyenv's versions there, pyenv not in PATH: `"3.10"` was found in ~/.pyenv/versions,
    `"python3.10"` was `no Python python3.10 on this machine`."""
    root = tmp_path / "pyenv"
    _pyenv(root, with_version=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    found = find_interpreter(f"python{MINOR}")
    assert (found.path, found.version) == (BASE, FULL)


def test_a_programs_name_that_is_a_shim_of_none_says_what_it_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said only `interpreter .../shims/python3.10 does not run`, what was read past the
    shim lost."""
    root = tmp_path / "pyenv"
    shims = _pyenv(root, with_version=False)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    with pytest.raises(EnvBuildError) as raised:
        find_interpreter(f"python{MINOR}")
    said = str(raised.value)
    assert said.startswith(f"no Python {MINOR} that runs on this machine; passed over "), said
    assert f"{shims}/python{MINOR} (does not run: exit 127, pyenv:" in said
    assert f"give the path of a Python {MINOR} (--python PATH" in said


@pytest.mark.parametrize("how", ["path", "pyenv"])
def test_the_interpreter_found_is_started_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The search had read the version (it ran the interpreter to know it runs), and
    `find_interpreter` started it again to read it: two starts per request. PATH's shim
    that does not run was started twice too, by `_past_a_shim` and again by the search
    (review): each start of a pyenv shim is a bash `pyenv exec`."""
    starts = tmp_path / "starts"
    shim_starts = tmp_path / "shim-starts"
    wrapper = f'#!/bin/sh\necho started >> {starts}\nexec {BASE} "$@"\n'
    if how == "path":
        found_at = tmp_path / "bin" / f"python{MINOR}"
        found_at.parent.mkdir()
        monkeypatch.setenv("PATH", str(found_at.parent))
    else:  # PATH's is a shim that does not run: pyenv's versions read past it
        root = tmp_path / "pyenv"
        shims = _pyenv(root, with_version=False)
        shim = shims / f"python{MINOR}"
        shim.write_text(SHIM.replace("\n", f"\necho started >> {shim_starts}\n", 1))
        monkeypatch.setenv("PATH", str(shims))
        monkeypatch.setenv("PYENV_ROOT", str(root))
        found_at = root / "versions" / FULL / "bin" / f"python{MINOR}"
        found_at.parent.mkdir(parents=True)
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    found_at.write_text(wrapper)
    found_at.chmod(0o755)
    found = find_interpreter(f"python{MINOR}")
    assert (found.path, found.version) == (str(found_at), FULL)
    assert starts.read_text().splitlines() == ["started"]
    if how == "pyenv":
        assert shim_starts.read_text().splitlines() == ["started"]


def test_a_python_not_here_is_looked_for_once_where_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a found interpreter was kept: each ask of one not here ran `uv python find`
    again (up to 120 s), and doctor kept the failures in a dict of its own beside the cache,
    handed from check to check. A failure is kept while a `remembered_failures` scope is
    open (a run's sections, doctor's checks); a plain call looks again. uv runs through a
    script that counts its calls."""
    from reprospec.venvs import build

    calls = tmp_path / "calls"
    spy = tmp_path / "uv"
    spy.write_text(f'#!/bin/sh\necho "$1 $2" >> {calls}\nexec {build.uv_binary()} "$@"\n')
    spy.chmod(0o755)
    monkeypatch.setattr(build, "uv_binary", lambda: str(spy))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "no-managed"))
    with build.remembered_failures():
        for _ in range(2):
            with pytest.raises(EnvBuildError, match=r"3\.99"):
                find_interpreter("3.99")
    assert calls.read_text().splitlines() == ["python find"]
    with pytest.raises(EnvBuildError, match=r"3\.99"):
        find_interpreter("3.99")
    assert calls.read_text().splitlines() == ["python find"] * 2
