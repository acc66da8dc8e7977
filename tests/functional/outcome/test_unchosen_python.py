"""A command whose `python` is not the person's, dying of a missing module, could not run.

Installed as a tool (pipx, `uv tool`), reprospec's own interpreter has only its own
packages, and `python` in a command resolves to it. The person's script then dies
of ModuleNotFoundError before any progress: that says nothing about their bug, so
the cell is `infra-error` saying to pass `--python`, not `not-reproduced`. Real
runs of the CLI: the person's interpreter is a wrapper that finds a module the
engine's interpreter does not have.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.cli import Cli


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "userpkg_only_theirs.py").write_text("VALUE = 1\n")
    theirs = tmp_path / "userbin" / "python3"
    theirs.parent.mkdir()
    theirs.write_text(f'#!/bin/sh\nPYTHONPATH={lib} exec {sys.executable} "$@"\n')
    theirs.chmod(0o755)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: theirs\n"
        "command: python -c 'import userpkg_only_theirs'\n"
        "expect: {outcome: pass}\n"
    )
    env = {"PATH": f"{theirs.parent}{os.pathsep}{os.environ['PATH']}"}
    return spec, theirs, env


def test_missing_module_under_reprospecs_own_python_is_infra_error(
    cli: Cli, tmp_path: Path
) -> None:
    spec, theirs, env = _setup(tmp_path)
    result = cli("run", str(spec), env=env)
    assert result.code == 3, result.stdout + result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "infra-error"
    reason = cell["reason"]
    assert "No module named 'userpkg_only_theirs'" in reason
    assert "pass --python PATH" in reason
    assert f"not {theirs} of your PATH" in reason
    assert "`python` in the command ran reprospec's own interpreter" in reason
    # Named as the command names it: `python3`, not the `python` it said of every command.
    spec.write_text(spec.read_text().replace("command: python ", "command: python3 "))
    result = cli("run", str(spec), env=env)
    assert result.code == 3, result.stdout + result.stderr
    reason = result.results()["cells"][0]["reason"]
    assert "`python3` in the command ran reprospec's own interpreter" in reason, reason


def test_with_their_python_it_runs(cli: Cli, tmp_path: Path) -> None:
    spec, theirs, env = _setup(tmp_path)
    result = cli("run", str(spec), "--python", str(theirs), env=env)
    assert result.code == 0, result.stdout + result.stderr


def test_the_persons_own_interpreter_missing_a_module_is_the_programs_error(
    cli: Cli, tmp_path: Path
) -> None:
    spec, _theirs, _env = _setup(tmp_path)
    # The engine's interpreter first on PATH: it is theirs, the import error is the program's.
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = cli("run", str(spec), env=env)
    assert result.code == 1, result.stdout + result.stderr
    assert result.results()["cells"][0]["verdict"] == "not-reproduced"


def test_a_missing_submodule_of_a_declared_package_is_the_programs_error(
    cli: Cli, tmp_path: Path
) -> None:
    """`import yaml.nope` with PyYAML in environment.packages (checked installed in that
    interpreter before the attempt): it read `infra-error: ... pass --python PATH`, though
    the package is the one the spec asks for and the module one its version lacks. `yaml`
    is not `pyyaml`: the interpreter's own map of modules to distributions says whose."""
    spec, _theirs, env = _setup(tmp_path)
    spec.write_text(
        "reprospec: 1\nname: declared\nenvironment: {packages: [PyYAML]}\n"
        "command: python -c 'import yaml.nope'\nexpect: {outcome: error}\n"
    )
    result = cli("run", str(spec), env=env)
    assert result.code == 0, result.stdout + result.stderr
    (attempt,) = result.results()["cells"][0]["attempts"]
    assert attempt["outcome"]["exception"] == "ModuleNotFoundError", attempt
    # A package the spec does not declare is still the unchosen interpreter's matter.
    spec.write_text(spec.read_text().replace("[PyYAML]", "[packaging]"))
    result = cli("run", str(spec), env=env)
    assert result.code == 3, result.stdout + result.stderr
    reason = result.results()["cells"][0]["reason"]
    assert reason.endswith(
        "pass --python PATH (the interpreter that has what the command imports; none of "
        "environment.packages, packaging, provides it here)"
    ), reason
