"""`--gpus` is checked against the GPUs the machine has; slots separate failing attempts.

The CLI runs as a user runs it. This machine has no GPU: where a test needs one,
a fake `nvidia-smi` on PATH prints a recorded real `nvidia-smi -L` output
(tests/data/nvidia/SOURCES.md), the only thing mocked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprospec.errors import UsageError
from reprospec.pipeline.gpus import (
    visible_gpus,
)
from reprospec.report.slots import slot_separation
from reprospec.store.resultsjson import load_run
from tests.support.cli import ROOT

NVIDIA = ROOT / "tests" / "data" / "nvidia"


RTX3090 = NVIDIA / "nvidia-smi-L-4x-rtx3090.txt"


A100_MIG = NVIDIA / "nvidia-smi-L-a100-mig.txt"


NO_DRIVER = NVIDIA / "nvidia-smi-no-driver.txt"


# PATH without any nvidia-smi: the interpreter's folder and the system's.
BARE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])


def fake_nvidia_smi(folder: Path, recording: Path, status: int = 0) -> str:
    """A folder holding an `nvidia-smi` that prints `recording` for `-L`; PATH with it first."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = "-L" ] || {{ echo "fake nvidia-smi: only -L was recorded" >&2; exit 2; }}\n'
        f"cat {recording}\n"
        f"exit {status}\n"
    )
    script.chmod(0o755)
    return os.pathsep.join([str(folder), BARE_PATH])


def bare_env(path: str = BARE_PATH, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return {**env, "PATH": path, "NO_COLOR": "1", **extra}


def run_cli(
    tmp_path: Path, spec: Path, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "reprospec",
            "run",
            str(spec),
            "--out",
            str(tmp_path / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ROOT,
    )


def write_spec(tmp_path: Path, command: str, repeat: int = 1) -> Path:
    spec = {
        "reprospec": 1,
        "name": "gpu-slots",
        "environment": {"gpus": 1},
        "command": command,
        "run": {"timeout": "60s", "repeat": repeat},
        "expect": {"outcome": "pass"},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# -- through the CLI ----------------------------------------------------------------


def test_gpus_on_a_machine_without_gpus_is_a_usage_error(tmp_path: Path) -> None:
    if shutil.which("nvidia-smi", path=BARE_PATH):
        pytest.skip("this machine has nvidia-smi")
    done = run_cli(tmp_path, write_spec(tmp_path, "true"), "--gpus", "0,1,2,3", env=bare_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "--gpus 0,1,2,3: this machine has no GPU "
        "(nvidia-smi is not installed and CUDA_VISIBLE_DEVICES is not set)"
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "runs").exists()  # nothing ran, nothing was written


def test_unknown_ids_name_the_gpus_the_machine_has(tmp_path: Path) -> None:
    path = fake_nvidia_smi(tmp_path / "bin", RTX3090)
    done = run_cli(tmp_path, write_spec(tmp_path, "true"), "--gpus", "0,5,7", env=bare_env(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "--gpus 0,5,7: no GPU 5, 7 on this machine; "
        "it has GPUs 0, 1, 2, 3 (nvidia-smi -L: 4x NVIDIA GeForce RTX 3090)"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_a_driver_that_does_not_answer_means_no_gpu(tmp_path: Path) -> None:
    path = fake_nvidia_smi(tmp_path / "bin", NO_DRIVER, status=9)
    done = run_cli(tmp_path, write_spec(tmp_path, "true"), "--gpus", "0", env=bare_env(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "--gpus 0: this machine has no GPU (nvidia-smi -L exited with 9: NVIDIA-SMI has failed "
        "because it couldn't communicate with the NVIDIA driver."
    ) in done.stderr


def test_slots_reach_the_attempts_and_separate_the_failing_gpu(tmp_path: Path) -> None:
    # Four attempts at once on four slots (a rendezvous on files makes them overlap):
    # every GPU but 0 crashes, as a bad card would.
    met = tmp_path / "met"
    met.mkdir()
    command = (
        f'touch {met}/"$CUDA_VISIBLE_DEVICES"; '
        f'while [ "$(ls {met} | wc -l)" -lt 4 ]; do sleep 0.05; done; '
        'echo "on $CUDA_VISIBLE_DEVICES"; '
        '[ "$CUDA_VISIBLE_DEVICES" = 0 ] || kill -SEGV $$'
    )
    path = fake_nvidia_smi(tmp_path / "bin", RTX3090)
    spec = write_spec(tmp_path, command, repeat=4)
    done = run_cli(tmp_path, spec, "--gpus", "0,1,2,3", "-j", "4", env=bare_env(path))
    assert done.returncode == 1, done.stdout + done.stderr
    run = load_run(next((tmp_path / "out" / "runs").iterdir()))
    (cell,) = run.cells
    by_slot = {a.gpu_slot: a for a in cell.attempts}
    assert sorted(by_slot) == [("0",), ("1",), ("2",), ("3",)]
    for slot, attempt in by_slot.items():
        log = tmp_path / "out" / "runs" / run.run_id / attempt.logs / "stdout.log"
        assert log.read_text() == f"on {slot[0]}\n"
        assert attempt.ran is not None
        assert attempt.ran.kind == ("pass" if slot == ("0",) else "crash")
    assert slot_separation(run.cells) == (
        "fails on GPU slots 1-3 (3 of 3 attempts), never on slot 0 (0 of 1 attempt)"
    )


# -- machine_gpus with a recorded nvidia-smi ----------------------------------------


def test_uuids_and_mig_devices_are_ids_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "bin", A100_MIG))
    environ = {"PATH": os.environ["PATH"]}
    mig = "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert visible_gpus(f"{mig},1,GPU-5e375e7e-b41f-155b-dcdc-534524c356fc", environ) == (
        mig,
        "1",
        "GPU-5e375e7e-b41f-155b-dcdc-534524c356fc",
    )
    with pytest.raises(UsageError) as same:
        visible_gpus("2,GPU-5e375e7e-b41f-155b-dcdc-534524c356fc", environ)
    assert str(same.value) == (
        "--gpus 2,GPU-5e375e7e-b41f-155b-dcdc-534524c356fc: "
        "2 and GPU-5e375e7e-b41f-155b-dcdc-534524c356fc are the same GPU"
    )
    assert same.value.exit_code == 2


def test_cuda_visible_devices_limits_what_the_run_may_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "bin", RTX3090))
    environ = {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert visible_gpus("1", environ) == ("1",)
    with pytest.raises(UsageError) as err:
        visible_gpus("2", environ)
    assert str(err.value) == (
        "--gpus 2: no GPU 2 on this machine; "
        "it has GPUs 0, 1 (CUDA_VISIBLE_DEVICES=0,1: 2x NVIDIA GeForce RTX 3090)"
    )
    assert visible_gpus(None, environ) == ("0", "1")  # no --gpus: the outer ones, unchecked
