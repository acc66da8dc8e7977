"""`reprospec capture -- ./prog` of a real C program, built with cc in the test's folder: what
its spec carries of the shell's variables."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonValue
from reprospec.spec.load import load_spec
from tests.support.cli import Cli, CliResult

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) to build the program")

_SEGFAULT = "int main(void) { volatile int *p = 0; *p = 1; return 0; }\n"


def built(folder: Path, name: str, source: str) -> None:
    """`folder/name`, compiled from `source` (-O0: the program's own frames stay)."""
    assert CC is not None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.c").write_text(source)
    argv = [CC, "-O0", "-pthread", "-o", str(folder / name), str(folder / f"{name}.c")]
    subprocess.run(argv, check=True)


def captured(cli: Cli, work: Path, *argv: str, env: dict[str, str]) -> CliResult:
    """`reprospec capture -o spec.yaml ARGV` in `work`, its store beside it; it succeeded."""
    out = work.parent / "out"
    result = cli("capture", "-o", "spec.yaml", "--out", str(out), *argv, cwd=work, env=env)
    assert result.code == 0, result.stdout + result.stderr
    return result


def document(work: Path) -> Mapping[str, JsonValue]:
    return load_spec(str(work / "spec.yaml")).document


@needs_cc
def test_a_c_program_s_spec_carries_none_of_the_shell_s_python_settings(
    cli: Cli, tmp_path: Path
) -> None:
    # A C program's spec wrote the shell's PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED
    # into environment.env ("your shell set it; not tested by a rerun without it"): the
    # interpreter's variables counted as relevant for any command, and the verify never
    # tests them, though no Python of the program reads them.
    work = tmp_path / "seg"
    built(work, "seg", _SEGFAULT)
    # A third of the interpreter's settings: the rule, not two names.
    shell = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    result = captured(cli, work, "--", "./seg", env=shell)
    spec = document(work)
    environment = spec.get("environment")
    env = environment.get("env", {}) if isinstance(environment, dict) else {}
    assert isinstance(env, dict)
    assert not [name for name in env if name.startswith("PYTHON")], env
    text = (work / "spec.yaml").read_text()
    assert "PYTHON" not in text.split("command:")[0], text
    # Left out of the verify as any other variable of the shell the spec does not carry,
    # and the failure came back without them.
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert "verdict reproduced" in verify, verify
    assert "the failure needs" not in result.stdout, result.stdout
    expect = spec["expect"]
    assert isinstance(expect, dict)
    assert (expect["outcome"], expect["signal"]) == ("crash", "SIGSEGV")
