"""Which programs on an attempt's PATH are another Python environment's (runners/programs.py).

Files only: scripts written here are read, never run (unit tests start no process).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprospec.runners import programs

_CONSOLE_SCRIPT = (
    "# -*- coding: utf-8 -*-\nimport sys\nfrom pytest import console_main\n"
    "if __name__ == '__main__':\n    sys.exit(console_main())\n"
)


def make_env(root: Path, *scripts: str, conda: bool = False) -> Path:
    """A venv-like folder: bin/python (a file) and a console script per name."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    if conda:
        (root / "conda-meta").mkdir()
    else:
        (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    write(bin_dir / "python", "\x7fELF")
    for name in scripts:
        write(bin_dir / name, f"#!{bin_dir / 'python'}\n{_CONSOLE_SCRIPT}")
    return bin_dir


def write(path: Path, text: str, mode: int = 0o755) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_script_interpreter_reads_shebangs_and_uvs_trampoline(tmp_path: Path) -> None:
    console = write(tmp_path / "a", f"#!/x/.venv/bin/python3.11\n{_CONSOLE_SCRIPT}")
    trampoline = write(
        tmp_path / "b",
        "#!/bin/sh\n'''exec' '/a very/long/bin/python' \"$0\" \"$@\"\n' '''\n" + _CONSOLE_SCRIPT,
    )
    assert programs.script_interpreter(str(console)) == "/x/.venv/bin/python3.11"
    assert programs.script_interpreter(str(trampoline)) == "/a very/long/bin/python"
    # The PATH's python3 runs it: in an attempt, the cell's own (the shim).
    assert (
        programs.script_interpreter(str(write(tmp_path / "c", "#!/usr/bin/env python3\n"))) is None
    )
    assert programs.script_interpreter(str(write(tmp_path / "d", "#!/bin/sh\necho hi\n"))) is None
    # A tool named like one, not an interpreter (pythonargs.is_python's rule).
    config = write(tmp_path / "f", "#!/x/bin/python3-config\n")
    assert programs.script_interpreter(str(config)) is None
    assert programs.script_interpreter(str(write(tmp_path / "e", "\x7fELF\x02\x01"))) is None
    assert programs.script_interpreter(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("name", ["python3.13t", "pypy3.10", "python3.12"])
def test_script_interpreter_knows_every_interpreter_name_pythonargs_does(
    tmp_path: Path, name: str
) -> None:
    # programs.py kept its own `(?:python|pypy)[0-9.]*` beside pythonargs.is_python: a
    # free-threaded venv's console script (`#!/x/bin/python3.13t`) was read as no Python
    # script, and ran as another environment's program unrefused.
    script = write(tmp_path / "tool", f"#!/x/.venv/bin/{name}\n{_CONSOLE_SCRIPT}")
    assert programs.script_interpreter(str(script)) == f"/x/.venv/bin/{name}"


def test_command_program_is_the_bare_name_a_command_starts() -> None:
    assert programs.command_program(("pytest", "-q")) == "pytest"
    assert programs.command_program(("/bin/sh", "-c", "A=1 pytest -s t.py")) == "pytest"
    # A path is the spec's own choice; more shell work is the guards' to see.
    assert programs.command_program(("/bin/sh", "-c", "./run.sh")) is None
    assert programs.command_program(("/bin/sh", "-c", "cd x && pytest")) is None
    assert programs.command_program(("/bin/sh", "-c", "")) is None


def test_a_script_of_another_environment_is_foreign_the_cells_own_is_not(
    tmp_path: Path,
) -> None:
    cell = make_env(tmp_path / "cell", "demo-tool")
    caller = make_env(tmp_path / "caller", "pytest", "demo-tool", "ruff-like")
    system = tmp_path / "usr-bin"
    system.mkdir()
    write(system / "cat", "\x7fELF")
    write(system / "lister", "#!/usr/bin/env python3\n")
    # A compiled tool in a venv's bin (ruff, uv) is not a Python script: it runs.
    write(caller / "ruff-like", "\x7fELF")
    search = os.pathsep.join([str(cell), str(caller), str(system)])
    own = programs.own_folders([str(cell)])

    found = programs.foreign_program("pytest", search, own)
    assert found == programs.Foreign("pytest", str(caller / "pytest"), str(caller / "python"))
    assert found.reason.startswith(
        f"pytest is not installed in the cell's environment (found {caller / 'pytest'}, "
        "another environment's"
    )
    assert found.reason.endswith("add it to environment.packages")
    for name in ("demo-tool", "ruff-like", "cat", "lister", "missing"):
        assert programs.foreign_program(name, search, own) is None, name


def test_guards_stand_for_other_environments_scripts_the_cell_lacks(tmp_path: Path) -> None:
    cell = make_env(tmp_path / "cell", "demo-tool")
    caller = make_env(tmp_path / "caller", "pytest", "demo-tool")
    conda = make_env(tmp_path / "conda", "torchrun", "pytest", conda=True)
    plain = tmp_path / "plain"  # not an environment's bin: its programs are the system's
    plain.mkdir()
    write(plain / "tool", f"#!{caller / 'python'}\n")
    search = os.pathsep.join([str(cell), str(caller), str(plain), str(conda)])
    own = programs.own_folders([str(cell)])
    assert programs.environment_bins(search, own) == [str(caller.resolve()), str(conda.resolve())]

    foreign = programs.foreign_scripts(search, own)
    # The first on PATH of each name; the cell's own demo-tool and the interpreters, none.
    assert {f.name: f.path for f in foreign} == {
        "pytest": str(caller / "pytest"),
        "torchrun": str(conda / "torchrun"),
    }
    guards = tmp_path / "guards"
    guards.mkdir()
    programs.write_guards(guards, foreign)
    text = (guards / "pytest").read_text()
    assert text.startswith("#!/bin/sh\n")
    assert programs.FOREIGN_FILE in text
    assert "exit 127" in text
    assert os.access(guards / "pytest", os.X_OK)


def test_refused_reason_is_the_first_guards_line(tmp_path: Path) -> None:
    assert programs.refused_reason(tmp_path) is None
    (tmp_path / programs.FOREIGN_FILE).write_text("first refused\nsecond refused\n")
    assert programs.refused_reason(tmp_path) == "first refused"


def test_a_system_tool_in_python_runs_and_a_pyenv_shim_is_another_environments(
    tmp_path: Path,
) -> None:
    # (review) /usr/bin/add-apt-repository, a Python script of the machine's own Python,
    # was refused "add it to environment.packages"; a pyenv shim (a bash script) ran
    # pyenv's Flask where the cell's interpreter had none.
    own = programs.own_folders([str(make_env(tmp_path / "cell"))])
    system = tmp_path / "usr" / "bin"
    system.mkdir(parents=True)
    write(system / "add-apt-repository", f"#!/usr/bin/python3\n{_CONSOLE_SCRIPT}")
    shims = tmp_path / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    (tmp_path / ".pyenv" / "versions").mkdir()
    write(shims / "flask", '#!/usr/bin/env bash\nexec "/x/libexec/pyenv" exec "flask" "$@"\n')
    path = os.pathsep.join([*sorted(own), str(system), str(shims)])
    assert programs.foreign_program("add-apt-repository", path, own) is None
    flask = programs.foreign_program("flask", path, own)
    assert flask is not None
    assert (flask.path, flask.interpreter) == (str(shims / "flask"), programs.PYENV_SELECTED)
    assert [f.name for f in programs.foreign_scripts(path, own)] == ["flask"]


def test_a_user_script_of_another_python_is_foreign_of_the_cells_own_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pip install --user writes ~/.local/bin/tool with `#!` naming the Python that ran pip:
    # it ran with that Python's user site, not the cell's, and was not refused.
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PYTHONUSERBASE", raising=False)
    cell = make_env(tmp_path / "cell")
    user_bin = home / ".local" / "bin"
    user_bin.mkdir(parents=True)
    write(user_bin / "tool", f"#!/usr/bin/python3\n{_CONSOLE_SCRIPT}")
    write(user_bin / "mine", f"#!{cell / 'python'}\n{_CONSOLE_SCRIPT}")
    write(user_bin / "envtool", "#!/usr/bin/env python3\n")
    own = programs.own_folders([str(cell)])
    search = os.pathsep.join([str(cell), str(user_bin), "/usr/bin"])
    assert programs.environment_bins(search, own) == [str(user_bin.resolve())]

    found = programs.foreign_program("tool", search, own)
    assert found == programs.Foreign("tool", str(user_bin / "tool"), "/usr/bin/python3", user=True)
    assert found.reason == (
        f"tool is not installed in the cell's environment (found {user_bin / 'tool'}, the "
        "user's scripts (pip install --user, pipx): it runs /usr/bin/python3 with its user "
        "site-packages): add it to environment.packages"
    )
    for name in ("mine", "envtool"):  # the cell's own Python, or the PATH's (the cell's)
        assert programs.foreign_program(name, search, own) is None, name
    assert [(f.name, f.user) for f in programs.foreign_scripts(search, own)] == [("tool", True)]

    # PYTHONUSERBASE moves the user's scheme: its bin counts the same.
    base = tmp_path / "userbase"
    write_bin = base / "bin"
    write_bin.mkdir(parents=True)
    write(write_bin / "other", f"#!/usr/bin/python3\n{_CONSOLE_SCRIPT}")
    monkeypatch.setenv("PYTHONUSERBASE", str(base))
    elsewhere = os.pathsep.join([str(cell), str(write_bin)])
    assert programs.foreign_program("other", elsewhere, own) is not None
    monkeypatch.delenv("PYTHONUSERBASE")
    assert programs.foreign_program("other", elsewhere, own) is None  # a plain folder's
