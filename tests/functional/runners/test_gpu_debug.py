"""`environment.debug` end to end: refusals at validation, what the child really saw, and what
runs without a GPU (the real compute-sanitizer from the PyPI wheel, where it is installed).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.gpudebug import SANITIZER_ERROR_EXIT
from reprospec.doctor import cuda
from reprospec.process import sanitizer
from tests.support.cli import Cli

# Prints what the child saw: its argv and the variables the diagnostics set.
SHOW = (
    "import json, os, sys; "
    "print(json.dumps({'argv': sys.argv, 'env': {k: v for k, v in os.environ.items() "
    "if k.startswith(('CUDA_', 'NCCL_', 'TORCH_'))}}))"
)


def write_spec(folder: Path, debug: str, *, matrix: str = "", extra: str = "") -> Path:
    path = folder / "gpu.yaml"
    path.write_text(
        "reprospec: 1\n"
        "name: gpu-toggles\n"
        f"{matrix}"
        "environment:\n"
        f"  debug: {debug}\n"
        f"{extra}"
        f"command: [python, -c, {json.dumps(SHOW)}]\n"
        "run: {timeout: 60s}\n"
        "expect: {outcome: pass}\n"
    )
    return path


# -- the values ----------------------------------------------------------------------------


# -- validation ------------------------------------------------------------------------------


def test_validation_refuses_a_pair_located_and_naming_the_cells(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(
        tmp_path,
        "{compute_sanitizer: '${{ matrix.tool }}', cuda_coredump: '${{ matrix.core }}'}",
        matrix="matrix:\n  tool: [off, memcheck]\n  core: [false, true]\n",
    )
    done = cli("validate", str(spec))
    assert done.code == 2, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "gpu.yaml:7:67: environment.debug.cuda_coredump: cannot pair with" in said
    assert "compute_sanitizer: memcheck" in said
    assert "(in cell tool=memcheck,core=true)" in said
    assert "Traceback" not in said


def test_validation_refuses_compute_sanitizer_with_preload(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(tmp_path, "{compute_sanitizer: synccheck}")
    text = spec.read_text().replace("run: {timeout: 60s}", "run: {timeout: 60s, preload: [json]}")
    spec.write_text(text)
    done = cli("validate", str(spec))
    assert done.code == 2
    assert "run.preload: cannot pair with environment.debug.compute_sanitizer: synccheck" in (
        done.stdout + done.stderr
    )


def test_validation_refuses_a_bad_matrix_value_per_cell(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(
        tmp_path,
        "{compute_sanitizer: '${{ matrix.tool }}'}",
        matrix="matrix:\n  tool: [memcheck, leakcheck]\n",
    )
    done = cli("validate", str(spec))
    assert done.code == 2
    assert "tool=leakcheck" in done.stdout + done.stderr


def test_plan_shows_the_toggles_of_each_cell(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(
        tmp_path, "{launch_blocking: '${{ matrix.blocking }}', nccl_debug: INFO}",
        matrix="matrix:\n  blocking: [false, true]\n",
    )  # fmt: skip
    done = cli("plan", "--format", "json", str(spec))
    assert done.code == 0, done.stderr
    cells = json.loads(done.stdout)
    cells = cells["cells"] if isinstance(cells, dict) else cells
    debugs = [cell["environment"]["debug"] for cell in cells]
    assert debugs == [{"nccl_debug": "INFO"}, {"launch_blocking": True, "nccl_debug": "INFO"}]


# -- real runs -------------------------------------------------------------------------------


def _seen(run: Path) -> dict[str, dict[str, Any]]:
    """cell id -> what its attempt 1 printed (argv and the GPU variables it saw)."""
    out = {}
    for folder in (run / "cells").iterdir():
        text = (folder / "1" / "stdout.log").read_text()
        out[folder.name] = json.loads(text.strip().splitlines()[-1])
    return out


def test_the_child_sees_the_variables_of_its_cell_only(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(
        tmp_path,
        "{cuda_coredump: '${{ matrix.core }}', nccl_flight_recorder: '${{ matrix.core }}'}",
        matrix="matrix:\n  core: [false, true]\n",
    )
    # A GPU id the run may hand out; the command itself needs none.
    done = cli("run", str(spec), env={"CUDA_VISIBLE_DEVICES": "0"})
    assert done.code == 0, done.stdout + done.stderr
    run = done.latest_run()
    seen = {cell_id: data["env"] for cell_id, data in _seen(run).items()}
    plain, on = (seen[k] for k in sorted(seen))
    assert not any(k.startswith(("CUDA_ENABLE", "CUDA_COREDUMP", "TORCH_")) for k in plain)
    attempt = run / "cells" / sorted(seen)[1] / "1"
    assert isinstance(on, dict)
    assert on["CUDA_COREDUMP_FILE"] == f"{attempt}/cuda-core.%p.%h.nvcudmp"
    assert on["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == f"{attempt}/nccl-trace-rank-"
    cells = {c["id"]: c for c in done.results()["cells"]}
    assert cells[sorted(seen)[1]]["environment"]["debug"] == {
        "cuda_coredump": "lightweight", "nccl_flight_recorder": 2000,
    }  # fmt: skip
    report = (run / "report.md").read_text()
    assert "cuda_coredump: lightweight" in report


def test_a_gpu_toggle_without_a_gpu_is_infra_error(tmp_path: Path, cli: Cli) -> None:
    spec = write_spec(tmp_path, "{launch_blocking: true}")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = str(Path(sys.executable).parent)  # no nvidia-smi on it
    done = cli("run", str(spec), env=env)
    assert done.code == 3, done.stdout + done.stderr
    (cell,) = done.results()["cells"]
    assert cell["verdict"] == "infra-error"
    assert "needs a GPU for environment.debug (launch_blocking), none visible" in cell["reason"]


def test_compute_sanitizer_wraps_the_argv_the_child_sees(tmp_path: Path, cli: Cli) -> None:
    # compute-sanitizer cannot run a program without a GPU, so a stand-in on PATH records
    # what reprospec hands it and runs the program: the argv and the variables are real.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "compute-sanitizer"
    stand_in.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = sys.argv[1:]\n"
        "with open(os.environ['SEEN'], 'w') as f: f.write('\\n'.join(args))\n"
        "while args and args[0].startswith('--'): args = args[2:]\n"
        "os.execvp(args[0], args)\n"
    )
    stand_in.chmod(0o755)
    seen = tmp_path / "seen.txt"
    spec = write_spec(tmp_path, "{compute_sanitizer: '${{ matrix.tool }}'}",
                      matrix="matrix:\n  tool: [initcheck]\n")  # fmt: skip
    env = {"CUDA_VISIBLE_DEVICES": "0", "SEEN": str(seen),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}  # fmt: skip
    done = cli("run", str(spec), env=env)
    assert done.code == 0, done.stdout + done.stderr
    attempt = done.latest_run() / "cells" / "tool=initcheck" / "1"
    args = seen.read_text().splitlines()
    assert args[:8] == [
        "--tool", "initcheck",
        "--log-file", f"{attempt}/compute-sanitizer.log",
        "--error-exitcode", str(SANITIZER_ERROR_EXIT),
        "--target-processes", "all",
    ]  # fmt: skip
    # The program ran under it, with its own argv (python -c ...).
    printed = _seen(done.latest_run())["tool=initcheck"]
    assert printed["argv"] == ["-c"]


# -- compute-sanitizer without a GPU: recorded, and for real where the wheel is installed -----


REAL = sanitizer.find(sys.executable)


@pytest.mark.skipif(
    REAL is None, reason="compute-sanitizer not installed (nvidia-cuda-sanitizer-api)"
)
def test_real_compute_sanitizer_without_a_gpu_is_infra_error(tmp_path: Path, cli: Cli) -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver: the program would run")
    spec = write_spec(tmp_path, "{compute_sanitizer: memcheck}")
    # CUDA_VISIBLE_DEVICES claims a GPU (as in a container started without the driver).
    done = cli("run", str(spec), env={"CUDA_VISIBLE_DEVICES": "0"})
    assert done.code == 3, done.stdout + done.stderr
    (cell,) = done.results()["cells"]
    assert cell["verdict"] == "infra-error"
    assert "compute-sanitizer could not start the program (exit 255" in cell["reason"]
    assert "Traceback" not in done.stderr


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_lists_the_loaders_cuda_libraries_and_skips_the_smoke_test(cli: Cli) -> None:
    done = cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert {"cuda-libraries", "sanitizer", "cuda-smoke"} <= set(checks)
    if not Path("/dev/nvidiactl").exists():
        assert checks["cuda-smoke"]["status"] == "skipped"
        assert checks["cuda-smoke"]["why"] == "no CUDA device: no CUDA op to run"
    found = cuda.cuda_libraries(os.popen("ldconfig -p").read())
    if found:
        assert found[0].name in checks["cuda-libraries"]["why"]
