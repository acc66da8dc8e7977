"""The report's standalone repro: a command line with its files, or a generated repro.py that
plain `python` runs to the same outcome as the cell (real crashes, no injected fault)."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import reprospec
from reprospec.core.results import RunResult
from reprospec.core.runoptions import RunOptions
from reprospec.plan.run import plan_run
from reprospec.plan.standalone import standalone_of
from tests.support.cli import torch_captures_shared
from tests.support.plans import SYNTHETIC_SPEC

if importlib.util.find_spec("torch") is None:
    pytest.skip("skipped: torch is not installed in the test interpreter", allow_module_level=True)


pytestmark = pytest.mark.torch


# A dataset whose items from index 40 on read address 0: a real SIGSEGV wherever it is fetched.
CRASHY = """\
import ctypes

import torch
from torch.utils.data import Dataset


class Crashy(Dataset):
    classes = 3

    def __init__(self, size, bad_from):
        self.size, self.bad_from = size, bad_from

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= self.bad_from:
            ctypes.string_at(0)
        return torch.full((4,), float(index)), index % 3


def make(size=64, bad_from=40):
    return Crashy(size, bad_from)


if __name__ == "__main__":
    raise SystemExit("not a script")
"""


CRASH_SPEC = """\
reprospec: 1
name: crashy-data
matrix:
  num_workers: [0, 2]
workload:
  model: {builtin: mlp, params: {hidden: 8}}
  data:
    dataset: {entrypoint: "crashy:make", params: {size: 64, bad_from: 40}, shape: [4]}
    loader: {batch_size: 8, num_workers: "${{ matrix.num_workers }}"}
  phases: [{name: train, steps: 8}]
run: {timeout: 120s}
expect: {outcome: crash, signal: SIGSEGV}
"""


# A model that raises on its third forward pass; it imports a helper from the workdir.
NET = """\
from torch import nn

from helper import limit


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > limit():
            raise ValueError(f"forward pass {self.calls} refused")
        return self.layer(x.float())
"""


HELPER = "def limit():\n    return 2\n"


ERROR_SPEC = """\
reprospec: 1
name: model-raises
workload:
  model: {entrypoint: "net:Net", loss: mse}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 4}
  phases: [{name: train, steps: 5}]
run: {timeout: 120s}
expect: {outcome: error, exception: ValueError}
"""


def _run(tmp_path: Path, text: str, **files: str) -> RunResult:
    app = tmp_path / "spec"
    app.mkdir()
    for name, body in files.items():
        (app / name).write_text(body)
    (app / "spec.yaml").write_text(text)
    spec = reprospec.load_spec(app / "spec.yaml")
    with torch_captures_shared(tmp_path / "out"):  # the environment's torch, captured once
        return reprospec.run(spec, RunOptions(out=tmp_path / "out"))


def _python(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python repro.py` with the test's interpreter (torch 2.13.0), nothing of reprospec."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "REPROSPEC"))}
    return subprocess.run(
        [sys.executable, script.name], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def _last_step(stdout: str) -> str:
    steps = [line for line in stdout.splitlines() if " step " in line]
    return steps[-1] if steps else ""


def _imports(script: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_crashing_dataset_repro_crashes_like_the_cell(tmp_path: Path) -> None:
    result = _run(tmp_path, CRASH_SPEC, **{"crashy.py": CRASHY})
    main_cell, worker_cell = result.cells
    outcome = main_cell.attempts[0].ran
    assert outcome is not None
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main"), outcome
    standalone = result.standalone
    assert standalone is not None
    assert standalone.cell == "num_workers=0"
    assert standalone.kind == "workload"
    assert standalone.run == "python repro.py"
    # The dataset module is one file of the workdir: pasted in, so nothing else is needed.
    assert standalone.files == ()
    assert "class Crashy(Dataset):" in standalone.script
    assert "not a script" not in standalone.script  # its __main__ block is left out
    assert _imports(standalone.script) - sys.stdlib_module_names == {"torch"}
    folder = tmp_path / "out" / "runs" / result.run_id
    script = folder / "repro.py"
    assert script.read_text() == standalone.script
    # Plain python, in an empty folder: the same crash at the same step.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(script, alone / "repro.py")
    ran = _python(alone / "repro.py", alone)
    assert ran.returncode == -signal.SIGSEGV, ran.stderr[-2000:]
    assert _last_step(ran.stdout) == f"train step {outcome.step}"
    # The worker cell's script: the main process sees its worker die of the same signal.
    worker = worker_cell.attempts[0].ran
    assert worker is not None
    assert (worker.kind, worker.signal, worker.where) == ("crash", "SIGSEGV", "worker")
    plan = next(
        a
        for a in plan_run(
            reprospec.load_spec(tmp_path / "spec" / "spec.yaml"), RunOptions()
        ).attempts
        if a.cell.id == "num_workers=2"
    )
    other = standalone_of(plan, tmp_path / "spec")
    (alone / "repro.py").write_text(other.script)
    ran = _python(alone / "repro.py", alone)
    assert ran.returncode == 1, ran.stderr[-2000:]
    # torch's own words: the worker's handler says it segfaulted, then the main process
    # raises "DataLoader worker (pid N) is killed by signal: ..." or "... exited unexpectedly"
    # (whichever of its two checks sees the dead worker first). Under load its read from the
    # worker's socket can fail first (ConnectionResetError), its fetch of a batch's shared
    # storage from the dying worker can end first (EOFError, raised out of the main
    # process's `_try_get_data` before its check finds the worker dead: seen in CI), or the
    # interpreter can lose stderr while the worker dies ("lost sys.stderr"): the same death,
    # worded by the race.
    main_saw = (
        "DataLoader worker (pid",
        "ConnectionResetError",
        "in _try_get_data",
        "lost sys.stderr",
    )
    assert any(words in ran.stderr for words in main_saw), ran.stderr[-2000:]
    assert "Unexpected segmentation fault encountered in worker" in ran.stderr
    report = (folder / "report.md").read_text()
    assert "## Standalone repro" in report
    assert "```python\n" in report
    assert "cell `num_workers=0` (`crash SIGSEGV @ train:" in report


def test_raising_model_repro_raises_and_names_the_file_it_imports(tmp_path: Path) -> None:
    result = _run(tmp_path, ERROR_SPEC, **{"net.py": NET, "helper.py": HELPER})
    outcome = result.cells[0].attempts[0].ran
    assert outcome is not None
    assert (outcome.kind, outcome.exception, outcome.step) == ("error", "ValueError", 3), outcome
    standalone = result.standalone
    assert standalone is not None
    # net.py is pasted in; the helper it imports is a file the script needs next to it.
    assert standalone.files == ("helper.py",)
    assert "class Net(nn.Module):" in standalone.script
    script = tmp_path / "out" / "runs" / result.run_id / "repro.py"
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(script, alone / "repro.py")
    missing = _python(alone / "repro.py", alone)
    assert missing.returncode == 1
    assert "No module named 'helper'" in missing.stderr
    (alone / "helper.py").write_text(HELPER)
    ran = _python(alone / "repro.py", alone)
    assert ran.returncode == 1
    assert ran.stderr.rstrip().splitlines()[-1] == "ValueError: forward pass 3 refused"
    assert _last_step(ran.stdout) == "train step 3"
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    # The workdir is the spec's folder: said in words, as the HTML page says it.
    assert "Files it needs, from the spec's folder:" in report
    assert "- [ ] `helper.py`" in report
    # The list says what it is made from: a data file opened by a name in the code is not
    # found, and the reader is told where to look.
    assert "listed only where the spec's `files` names it (`reprospec bundle --verify`" in report
    from reprospec.report import render

    page = render(result, "html")
    assert "Files it needs, from the spec's folder:" in page
    assert "<code>open(&quot;data/cfg.json&quot;)</code>" in page


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    """SYNTHETIC_SPEC's one run and its run folder: the injected-failure and the versions tests
    read the same run (a torch child and its collect_env), each for its own checks."""
    tmp_path = tmp_path_factory.mktemp("injected")
    result = _run(tmp_path, SYNTHETIC_SPEC)
    return result, tmp_path / "out" / "runs" / result.run_id


def test_an_injected_failure_has_no_standalone_repro(injected: tuple[RunResult, Path]) -> None:
    # repro.py leaves the spec's faults out: it would pass, so it is not offered.
    result, folder = injected
    outcome = result.cells[0].attempts[0].ran
    assert outcome is not None
    assert outcome.kind == "error"  # the injected exception
    assert outcome.injected == "workload.faults[0]"
    assert result.standalone is not None
    assert "no standalone repro of an injected failure" in result.standalone.unavailable
    assert not (folder / "repro.py").exists()
    report = (folder / "report.md").read_text()
    assert "no standalone repro of an injected failure" in report
    assert "python repro.py" not in report


def test_faults_are_left_out_so_a_passing_model_passes(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        SYNTHETIC_SPEC.replace("{outcome: error}", "{outcome: pass}")
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    standalone = standalone_of(plan, tmp_path)
    assert any("workload.faults" in note for note in standalone.notes)
    assert 'os.environ["OMP_NUM_THREADS"] = "1"' in standalone.script.replace("'", '"')
    # A secret is named, never written: not in the script, the report or results.json.
    assert "hf_not_for_reports" not in standalone.script
    assert "# HF_TOKEN: set it yourself" in standalone.script
    assert standalone.env["HF_TOKEN"] == "***"
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(standalone.script)
    ran = _python(alone / "repro.py", alone)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # train: 3 steps; validation: one pass over 24 items in batches of 6.
    assert ran.stdout.splitlines()[-2:] == ["validation step 4", "done"]


def test_command_spec_standalone_names_its_files(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "conf").mkdir(parents=True)
    (app / "main.py").write_text(
        "import ctypes, os\nimport util\nprint(util.NAME, open(os.environ['CONF']).read())\n"
        "if os.environ['MODE'] == 'crash':\n    ctypes.string_at(0)\n"
    )
    (app / "util.py").write_text("NAME = 'util'\n")
    (app / "conf" / "a.yaml").write_text("a: 1\n")
    (app / "unrelated.txt").write_text("not named\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: cmd\nenvironment:\n  workdir: app\n  shm_size: 64m\n"
        "  env: {MODE: crash, CONF: conf/a.yaml, API_TOKEN: s3cr3t}\n"
        "command: python main.py --config=conf/a.yaml --seed 3\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    result = reprospec.run(reprospec.load_spec(spec), RunOptions(out=tmp_path / "out"))
    standalone = result.standalone
    assert standalone is not None
    assert standalone.kind == "command"
    assert standalone.run == (
        "cd app && unshare --mount --map-root-user --propagation private sh -c 'mount -t "
        "tmpfs -o size=67108864 tmpfs /dev/shm && MODE=crash CONF=conf/a.yaml "
        'API_TOKEN="$API_TOKEN" python main.py --config=conf/a.yaml --seed 3\''
    )
    assert standalone.env["API_TOKEN"] == "***"
    assert standalone.files == ("conf/a.yaml", "main.py", "util.py")
    assert standalone.notes == (
        # API_TOKEN's value is written in the spec, and the repro leaves it out.
        "export API_TOKEN first (the spec has its value written in, a secret that no report "
        "or bundle holds)",
        "`unshare` gives it a private /dev/shm of 64.0 MiB, as the run did (a user namespace: "
        "no root needed where the kernel allows one)",
    )
    ran = subprocess.run(
        ["sh", "-c", standalone.run], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 128 + signal.SIGSEGV
    assert "util a: 1" in ran.stdout
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert "```sh\ncd app && unshare --mount" in report
    assert "- [ ] `conf/a.yaml`" in report
    assert not (tmp_path / "out" / "runs" / result.run_id / "repro.py").exists()


def test_versions_block_is_captured_in_the_child(injected: tuple[RunResult, Path]) -> None:
    result, folder = injected
    report = (folder / "report.md").read_text()
    block = report.split("<details><summary>Versions", 1)[1].split("</details>", 1)[0]
    version = importlib.metadata.version("torch")  # the same interpreter, read without torch
    assert f"PyTorch version: {version}" in block
    assert f"[pip3] torch=={version}" in block
    assert "Libc version: glibc-" in block
    assert "torch.__config__.show():" in block
    assert "PyTorch built with:" in block
    collect = result.environment["collect_env"]
    assert isinstance(collect, dict)
    pip = collect["pip"]
    assert isinstance(pip, dict)
    assert pip["torch"] == version
