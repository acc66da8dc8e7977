"""`doctor SPEC` checks what the spec needs: a spec of commands needs no torch.

Real `reprospec doctor` runs against an interpreter without torch (the test's own,
started with -S so its site-packages are not seen). Before, a command spec failed
doctor (exit 1) on "torch is not installed", which no attempt of it would import.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.cli import SPECS, Cli


def _no_torch(tmp_path: Path) -> Path:
    python = tmp_path / "python-without-torch"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    return python


def test_a_command_spec_does_not_fail_on_torch(cli: Cli, tmp_path: Path) -> None:
    result = cli("doctor", str(SPECS / "hang.yaml"), "--python", str(_no_torch(tmp_path)))
    assert result.code == 0, result.stdout + result.stderr
    assert "SKIP  torch             the spec needs no torch (torch is not installed" in (
        result.stdout
    )


def test_a_workload_spec_still_does(cli: Cli, tmp_path: Path) -> None:
    result = cli("doctor", str(SPECS / "segfault.yaml"), "--python", str(_no_torch(tmp_path)))
    assert result.code == 1, result.stdout + result.stderr
    assert "FAIL  torch" in result.stdout


def test_a_command_spec_that_declares_torch_still_does(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: t\nenvironment: {packages: ['torch>=2']}\n"
        "command: python -c 'import torch'\nexpect: {outcome: pass}\n"
    )
    result = cli("doctor", str(spec), "--python", str(_no_torch(tmp_path)))
    assert result.code == 1, result.stdout + result.stderr
    assert "FAIL  torch" in result.stdout


def test_a_spec_needing_a_gpu_fails_where_none_is_visible(cli: Cli, tmp_path: Path) -> None:
    """`environment.gpus: 1` passed doctor here (no GPU), where its run is an
    infra-error (`needs 1 GPU, none visible`)."""
    spec = tmp_path / "g.yaml"
    spec.write_text("reprospec: 1\nname: g\nenvironment: {gpus: 1}\ncommand: 'true'\n")
    if shutil.which("nvidia-smi"):
        pytest.skip("a machine with nvidia-smi may have the GPU the spec needs")
    result = cli("doctor", str(spec))
    assert result.code == 1, result.stdout + result.stderr
    assert "FAIL  device            the spec needs 1 GPU (environment.gpus)" in result.stdout


def test_runner_venv_without_a_spec_checks_what_the_venv_runner_needs(cli: Cli) -> None:
    """`doctor --runner venv` without SPEC printed the same checks as `doctor`, the runner
    ignored: it checks now that uv, which builds each cell's venv, is here."""
    import json

    checked = cli("doctor", "--runner", "venv", "--format", "json")
    assert checked.code == 0, checked.stdout + checked.stderr
    (uv,) = [c for c in json.loads(checked.stdout) if c["name"] == "uv"]
    assert uv["status"] == "pass"
    assert uv["why"].endswith(" builds each cell's venv"), uv
    plain = cli("doctor", "--format", "json")
    assert "uv" not in [c["name"] for c in json.loads(plain.stdout)]


def test_a_folder_package_fails_as_the_local_runners_check_refuses_it(
    cli: Cli, tmp_path: Path
) -> None:
    """`packages: [./mypkg]` passed doctor ("python and packages match the spec's
    environment") where `run` on the local runner makes the cell infra-error: no name says
    what to check the interpreter for."""
    (tmp_path / "mypkg").mkdir()
    spec = tmp_path / "f.yaml"
    spec.write_text("reprospec: 1\nname: f\nenvironment: {packages: [./mypkg]}\ncommand: 'true'\n")
    result = cli("doctor", str(spec))
    assert result.code == 1, result.stdout + result.stderr
    assert (
        "FAIL  spec-environment  cannot check the cell's packages: './mypkg' names no "
        "distribution" in result.stdout
    )
    # The venv runner installs it from there.
    venv = cli("doctor", str(spec), "--runner", "venv")
    assert "FAIL  spec-environment" not in venv.stdout
