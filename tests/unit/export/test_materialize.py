"""What `materialize` tells the reader of run.sh about the limits it cannot apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.errors import InfraError
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: stuck
matrix:
  ranks: [1, 2]
command: python -c "import time; print('step 1', flush=True); time.sleep(1000)"
run: {timeout: 1m, stall: 10s}
expect: {outcome: hang}
"""


def _warnings(tmp_path: Path, text: str) -> tuple[str, ...]:
    (tmp_path / "stuck.yaml").write_text(text)
    spec = load_spec(tmp_path / "stuck.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    return write_bundle(spec, plans, tmp_path / "bundle").warnings


def test_a_stall_limit_is_named_as_not_applied_by_run_sh(tmp_path: Path) -> None:
    assert _warnings(tmp_path, SPEC) == tuple(
        f"cell {n} (ranks={n}): run.stall (10s) is not applied by run.sh: a hang ends at "
        "the timeout (1m)"
        for n in (1, 2)
    )
    # The whole-cell limit is what run.sh does apply.
    script = (tmp_path / "bundle" / "run.sh").read_text()
    assert '    run_container 1 "reprospec-bundle-1-$$" 60 \\\n' in script
    assert 'timeout --kill-after=5 "$limit" docker run' in script


def test_a_spec_without_a_stall_limit_is_not_warned_about(tmp_path: Path) -> None:
    assert _warnings(tmp_path, SPEC.replace(", stall: 10s", "")) == ()


def test_a_bundle_inside_its_workdir_does_not_copy_itself(tmp_path: Path) -> None:
    # `materialize stuck.yaml -o bundle` in the spec's folder: the workdir holds the bundle.
    # Only the files the cells name are carried (a `python -c` names none): not the bundle
    # half written, not the spec (it is spec.yaml at the top).
    _warnings(tmp_path, SPEC)
    copied = tmp_path / "bundle" / "workdirs" / "1"
    assert list(copied.iterdir()) == []


def test_an_output_that_is_a_file_is_refused_as_a_file(tmp_path: Path) -> None:
    # An empty file was refused as "exists and is not empty".
    import pytest

    from reprospec.errors import UsageError

    (tmp_path / "bundle").touch()
    with pytest.raises(UsageError, match=r"bundle is a file, not a folder: materialize into"):
        _warnings(tmp_path, SPEC)
    (tmp_path / "bundle").unlink()
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "x").touch()
    with pytest.raises(UsageError, match=r"bundle exists and is not empty: materialize into"):
        _warnings(tmp_path, SPEC)


def _requirements(
    tmp_path: Path, spec: str, files: dict[str, str], torch_version: str | None = None
) -> tuple[str, str]:
    """The requirements.txt materialize writes for `spec` over a workdir of `files`, and the
    README's line for its image; `torch_version`, the torch the cells ran with."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "s.yaml").write_text(spec)
    loaded = load_spec(tmp_path / "s.yaml")
    plans = [plan for plan in plan_run(loaded, RunOptions()).attempts if plan.attempt == 1]
    write_bundle(loaded, plans, tmp_path / "bundle", torch_version=torch_version)
    readme = (tmp_path / "bundle" / "README.md").read_text()
    line = next(line for line in readme.splitlines() if line.startswith("- `images/1/`"))
    return (tmp_path / "bundle" / "images" / "1" / "requirements.txt").read_text(), line


COMMAND = "reprospec: 1\nname: c\ncommand: {command}\nexpect: {{outcome: hang}}\n"


def test_a_pure_python_programs_image_installs_none_of_the_runners_packages(
    tmp_path: Path,
) -> None:
    # A lock-order deadlock's bundle pinned torch==2.13.0 and numpy (the runner
    # image's), gigabytes to download for a program that imports neither.
    wanted, line = _requirements(
        tmp_path,
        COMMAND.format(command="python deadlock.py 2"),
        {
            "deadlock.py": "import threading\nimport helper\nfrom locks import order\n",
            "helper.py": "import time\n",
            "locks/__init__.py": "",
            "locks/order.py": "from . import helper2\nimport os\n",
            "locks/helper2.py": "import __future__\n",
        },
    )
    assert wanted == ""
    assert (
        "packages it installs none (its program imports only the standard library and its "
        "own files, not torch or numpy)"
    ) in line


def test_a_program_importing_torch_gets_torch_and_numpy(tmp_path: Path) -> None:
    # Through a local module it imports, as the bundle carries it.
    wanted, line = _requirements(
        tmp_path,
        COMMAND.format(command="python train.py"),
        {"train.py": "import model\n", "model.py": "def f():\n    import torch.nn\n"},
    )
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "installs `torch==2.13.0`, `numpy` (its program uses torch)" in line
    wanted, _ = _requirements(
        tmp_path / "c", COMMAND.format(command="python -c 'import numpy as np'"), {}
    )
    assert wanted == "numpy\n"
    # A shell script's torchrun runs torch.
    wanted, _ = _requirements(
        tmp_path / "sh",
        COMMAND.format(command="sh run.sh"),
        {"run.sh": "python app.py\ntorchrun --nproc-per-node 2 app.py\n", "app.py": "x = 1\n"},
    )
    assert wanted == "torch==2.13.0\nnumpy\n"


def test_the_torch_build_that_ran_is_pinned_from_its_pytorch_index(tmp_path: Path) -> None:
    # A run on torch 2.13.0+cpu got `torch==2.13.0`, PyPI's CUDA build on
    # x86_64: gigabytes of CUDA libraries, and a build that filled the disk.
    spec = COMMAND.format(command="python -c 'import torch'")
    wanted, line = _requirements(tmp_path, spec, {}, "2.13.0+cpu")
    assert wanted == (
        "--extra-index-url https://download.pytorch.org/whl/cpu\ntorch==2.13.0+cpu\nnumpy\n"
    )
    assert (
        "installs `torch==2.13.0+cpu`, `numpy` (its program uses torch; torch as the cpu build "
        "that ran, from PyTorch's index)"
    ) in line
    wanted, _ = _requirements(tmp_path / "cu", spec, {}, "2.13.0+cu121")
    assert wanted.splitlines()[:2] == [
        "--extra-index-url https://download.pytorch.org/whl/cu121",
        "torch==2.13.0+cu121",
    ]
    # Not the build of the runner's release, or no PyTorch index's build: the runner's pin.
    for version in ("2.13.0", "2.12.0+cpu", "2.13.0+mybuild", None):
        wanted, _ = _requirements(tmp_path / str(version), spec, {}, version)
        assert wanted == "torch==2.13.0\nnumpy\n", version
    # The spec's own torch replaces the runner's pin, and its index with it.
    pinned = spec.replace("command:", "environment: {packages: [torch==2.12.0]}\ncommand:")
    assert _requirements(tmp_path / "p", pinned, {}, "2.13.0+cpu")[0] == "numpy\ntorch==2.12.0\n"
    # A program that needs no torch installs none, from no index.
    plain = COMMAND.format(command="python -c 'import os'")
    assert _requirements(tmp_path / "os", plain, {}, "2.13.0+cpu")[0] == ""


def test_the_python_a_shell_script_starts_is_read_as_the_commands_own(tmp_path: Path) -> None:
    """A script's text was searched for the words torch and numpy: a comment or an echo
    naming torch kept it, while Python no one read (from a heredoc, by a name made at run
    time) imported nothing."""
    command = COMMAND.format(command="sh run.sh")
    app = {"app.py": "import json\n"}
    # The file it runs is read for what it imports; words in the script's text say nothing.
    script = "# no torch here\necho 'numpy is not needed'\npython app.py --out x 2>&1 | tee log\n"
    wanted, line = _requirements(tmp_path / "words", command, {**app, "run.sh": script})
    assert wanted == ""
    assert "its program imports only the standard library and its own files" in line
    wanted, _ = _requirements(
        tmp_path / "torch", command, {"run.sh": "python app.py\n", "app.py": "import torch\n"}
    )
    assert wanted == "torch==2.13.0\nnumpy\n"
    # Its `-c` code with the one reader of imports, a shell's -c script as a script.
    script = "python app.py\nbash -c \"python3 -uc 'import numpy as np'\"\n"
    wanted, _ = _requirements(tmp_path / "c", command, {**app, "run.sh": script})
    assert wanted == "numpy\n"
    # What it cannot follow keeps both, and the README says which.
    for name, script, why in (
        (
            "stdin",
            "python app.py\npython - <<'EOF'\nimport torch\nEOF\n",
            "runs Python from its standard input",
        ),
        ("named", 'python app.py\npython "$SCRIPT"\n', "runs a Python file named at run time"),
        ("program", "$PY app.py\n", "runs a program named at run time (`$PY`)"),
        ("missing", "python app.py\npython tools/fit.py\n", "runs tools/fit.py, which the"),
    ):
        wanted, line = _requirements(tmp_path / name, command, {**app, "run.sh": script})
        assert wanted == "torch==2.13.0\nnumpy\n", name
        assert f"(run.sh {why}" in line, (name, line)
        assert "so what it imports is not known" in line, (name, line)


def test_a_wrapped_command_is_read_as_the_program_it_runs(tmp_path: Path) -> None:
    """The command's `torchrun` was looked for only as its first word, and any word
    after a `-m` was a module: `timeout 60 torchrun app.py` got an image without torch, and
    `numactl -m 0 python3 app.py` kept both for a module named `0`. Each wrapped command
    gets what its bare command gets, read past its wrappers by plan/wrappers.py."""
    app = {"app.py": "import json\n"}
    for case, (bare, wrappers) in enumerate(
        (
            ("torchrun app.py", ("timeout 60", "nice -n 5", "env A=1", "timeout 5 env -i")),
            (
                "python3 app.py",
                ("timeout 60", "numactl -m 0", "env A=1", "nice -n 5", "taskset -c 0"),
            ),
            ("python3 -c 'import numpy'", ("timeout 60", "numactl -m 0 -C 0", "stdbuf -oL")),
        )
    ):
        folder = tmp_path / str(case)
        expected = _requirements(folder / "bare", COMMAND.format(command=bare), app)
        for at, wrapper in enumerate(wrappers):
            command = COMMAND.format(command=f"{wrapper} {bare}")
            assert _requirements(folder / str(at), command, app) == expected, (wrapper, bare)
    assert (
        _requirements(tmp_path / "t", COMMAND.format(command="timeout 60 torchrun app.py"), app)[0]
        == "torch==2.13.0\nnumpy\n"
    )
    # A program named at run time past a wrapper is said, as in a script.
    wanted, line = _requirements(
        tmp_path / "run-time", COMMAND.format(command="nice -n 5 $PY app.py"), app
    )
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "(its command runs a program named at run time (`$PY`)" in line


def test_a_program_whose_python_is_out_of_sight_keeps_the_runners_packages(
    tmp_path: Path,
) -> None:
    # `pytest` naming no test file: what it imports is not known, so nothing is dropped.
    wanted, line = _requirements(tmp_path, COMMAND.format(command="pytest -x"), {})
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "what it imports is not known" in line


def test_a_workload_image_installs_torch_for_the_harness(tmp_path: Path) -> None:
    spec = (
        "reprospec: 1\nname: w\nworkload:\n  model: {builtin: mlp}\n  data:\n"
        "    dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4}\n  phases: [{name: train, steps: 1}]\n"
        "expect: {outcome: pass}\n"
    )
    wanted, line = _requirements(tmp_path, spec, {})
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "(the harness runs the workload on torch)" in line
    # The spec's own pin replaces the runner's, whatever the program imports.
    pinned = spec.replace("workload:", "environment: {packages: [torch==2.12.0]}\nworkload:")
    assert _requirements(tmp_path / "p", pinned, {})[0] == "numpy\ntorch==2.12.0\n"
    # A wheel file of this machine is refused before anything is written (the image's build
    # cannot see it): the way to give a local torch is --find-links and a pin, as above.
    wheel = "./wheels/torch-2.12.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    pinned = spec.replace("workload:", f"environment: {{packages: ['{wheel}']}}\nworkload:")
    with pytest.raises(InfraError, match="--find-links"):
        _requirements(tmp_path / "w", pinned, {})
    assert not (tmp_path / "w" / "bundle").exists()


def test_a_program_importing_torch_through_another_package_keeps_the_runners_packages(
    tmp_path: Path,
) -> None:
    # `import torchvision` with `packages: [torchvision]` got requirements.txt
    # `torchvision` alone, and pip picked whatever torch torchvision's newest release asks for,
    # not the torch==2.13.0 the cell ran with; the README said it imports neither.
    spec = COMMAND.format(command="python app.py").replace(
        "expect:", "environment: {packages: [torchvision]}\nexpect:"
    )
    files = {"app.py": "import torchvision\nfrom torchvision import models\n"}
    wanted, line = _requirements(tmp_path, spec, files)
    assert wanted == "torch==2.13.0\nnumpy\ntorchvision\n"
    assert "installs `torch==2.13.0`, `numpy` (the cell's own `environment.packages` may" in line
    # With no packages of its own, any import outside the standard library and its own files
    # keeps them: what that module needs is not known offline.
    wanted, line = _requirements(
        tmp_path / "n", COMMAND.format(command="python app.py"), {"app.py": "import requests\n"}
    )
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "(its program imports requests, neither the standard library nor its own" in line
    # So does a module imported by a name given at run time.
    wanted, line = _requirements(
        tmp_path / "d",
        COMMAND.format(command="python app.py"),
        {"app.py": "import importlib\nmod = importlib.import_module('tor' + 'ch')\n"},
    )
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "app.py imports a module by a name given at run time" in line


def test_a_program_file_not_read_as_python_keeps_the_runners_packages(tmp_path: Path) -> None:
    # A carried .py the reader could not parse (a syntax the host's Python
    # lacks, a file over the 1 MiB limit) counted as importing nothing: its `import torch`
    # was lost and the image installed neither, where a `-c` program's failure kept both.
    files = {"app.py": "import helper\n", "helper.py": "import torch\ndef f(:\n    pass\n"}
    wanted, line = _requirements(tmp_path, COMMAND.format(command="python app.py"), files)
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "(helper.py could not be read as Python (over 1 MiB, or a syntax this" in line
    big = {"app.py": "import torch\n" + "x = 1\n" * 200_000}
    wanted, line = _requirements(tmp_path / "big", COMMAND.format(command="python app.py"), big)
    assert wanted == "torch==2.13.0\nnumpy\n"
    assert "(app.py could not be read as Python" in line


def test_the_readme_says_how_a_dataloader_workers_crash_shows(tmp_path: Path) -> None:
    # The README said a crash is exit status 128 + the signal, which a worker's
    # never gives (the main process exits 1): its recipient read the cell as not reproduced.
    _warnings(tmp_path, SPEC)
    readme = " ".join((tmp_path / "bundle" / "README.md").read_text().split())
    assert (
        "A DataLoader worker's death is a crash too: the worker dies of the signal and the main "
        "process exits 1" in readme
    )
    assert "`crash SIGSEGV (worker)` from the harness's `worker_exit` event in" in readme
    script = (tmp_path / "bundle" / "run.sh").read_text()
    # The signals torch names in words, or by their number as older torch does, matched
    # as reprospec reads them.
    assert "        'segmentation fault'*|11) echo SIGSEGV ;;\n" in script
    assert "        'floating point exception'*|8) echo SIGFPE ;;\n" in script


def test_the_bundle_s_spec_names_the_editor_s_schema_from_the_bundle(tmp_path: Path) -> None:
    # lo35: bundle/spec.yaml kept the spec's `$schema=schemas/...` as written, which from
    # the bundle named nothing; the rest of the spec is as it was given.
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "reprospec.schema.json").write_text("{}")
    line = "# yaml-language-server: $schema="
    _warnings(tmp_path, f"{line}schemas/reprospec.schema.json\n{SPEC}")
    written = (tmp_path / "bundle" / "spec.yaml").read_text()
    assert written == f"{line}../schemas/reprospec.schema.json\n{SPEC}"


def test_a_specs_dockerfile_carries_what_it_copies_not_its_whole_folder(tmp_path: Path) -> None:
    # The Dockerfile's folder (the build context) was copied whole into images/K/:
    # its `.env`, a hidden file with a token, in clear, and every unrelated file beside it.
    docker = tmp_path / "docker"
    (docker / "conf").mkdir(parents=True)
    (docker / "Dockerfile").write_text("FROM reprospec-runner:latest\nCOPY conf /etc/app/\n")
    (docker / "conf" / "app.cfg").write_text("api_key: sk-0123456789abcdefXYZ\nlevel: 3\n")
    (docker / "conf" / ".netrc").write_text("machine x password y\n")
    (docker / ".env").write_text("API_TOKEN=ghp_0123456789abcdef0123\n")
    (docker / "unrelated.txt").write_text("not copied by the build\n")
    (docker / "conf" / "__pycache__").mkdir()  # a cache, as docker's own context leaves out
    (docker / "conf" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    spec = COMMAND.format(command="'true'") + "environment: {dockerfile: docker/Dockerfile}\n"
    (tmp_path / "s.yaml").write_text(spec)
    loaded = load_spec(tmp_path / "s.yaml")
    plans = [plan for plan in plan_run(loaded, RunOptions()).attempts if plan.attempt == 1]
    warnings = write_bundle(loaded, plans, tmp_path / "bundle").warnings
    image = tmp_path / "bundle" / "images" / "1"
    assert sorted(p.relative_to(image).as_posix() for p in image.rglob("*") if p.is_file()) == [
        "Dockerfile",
        "conf/app.cfg",
    ]
    assert (image / "conf" / "app.cfg").read_text() == "api_key: ***\nlevel: 3\n"
    # The spec's own file is as it was: the copy is masked, not the file it came from.
    assert "sk-0123456789abcdefXYZ" in (docker / "conf" / "app.cfg").read_text()
    assert any("images/1/conf/app.cfg held a literal secret under api_key" in w for w in warnings)
    assert any("not carried, hidden" in w and "conf/.netrc" in w for w in warnings)


def _wheel(folder: Path, filename: str, requires: tuple[str, ...] = ()) -> None:
    """A wheel whose METADATA requires `requires` (all the wheelhouse reader opens)."""
    import zipfile

    name, version = filename.split("-")[:2]
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(folder / filename, "w") as archive:
        archive.writestr(f"{name}-{version}.dist-info/METADATA", metadata)


def test_a_wheelhouse_gives_each_image_only_the_wheels_it_installs(tmp_path: Path) -> None:
    # `--find-links ~/wheelhouse` put the whole folder into every image's context: torch's
    # 200 MB of wheels in the bundle of a standard-library program that installs nothing.
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    _wheel(wheels, "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", ("sympy>=1", "filelock"))
    _wheel(wheels, "sympy-1.14.0-py3-none-any.whl", ("mpmath",))
    _wheel(wheels, "mpmath-1.3.0-py3-none-any.whl")
    _wheel(wheels, "filelock-4.3.2-py3-none-any.whl")
    _wheel(wheels, "numpy-2.4.6-cp311-cp311-linux_x86_64.whl")
    _wheel(wheels, "pandas-3.0.0-cp311-cp311-linux_x86_64.whl", ("numpy",))

    def carried(folder: Path, command: str, files: dict[str, str]) -> list[str]:
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        (folder / "s.yaml").write_text(COMMAND.format(command=command))
        spec = load_spec(folder / "s.yaml")
        plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
        write_bundle(spec, plans, folder / "bundle", find_links=wheels)
        return sorted(p.name for p in (folder / "bundle/images/1/wheels").iterdir())

    assert carried(tmp_path / "plain", "python app.py", {"app.py": "import os\n"}) == []
    assert carried(tmp_path / "torch", "python app.py", {"app.py": "import torch\n"}) == [
        "filelock-4.3.2-py3-none-any.whl",
        "mpmath-1.3.0-py3-none-any.whl",
        "numpy-2.4.6-cp311-cp311-linux_x86_64.whl",
        "sympy-1.14.0-py3-none-any.whl",
        "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl",
    ]


def test_a_wheelhouse_without_an_images_requirement_is_warned_about(tmp_path: Path) -> None:
    # The image's build installs with --no-index: a bundle written over a wheelhouse
    # without the torch it pins was written without a word, and failed at its reader's.
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    _wheel(wheels, "torch-2.12.0+cpu-cp311-cp311-linux_x86_64.whl")
    (tmp_path / "app.py").write_text("import torch\n")
    (tmp_path / "s.yaml").write_text(COMMAND.format(command="python app.py"))
    spec = load_spec(tmp_path / "s.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    bundle = write_bundle(
        spec, plans, tmp_path / "bundle", find_links=wheels, torch_version="2.13.0+cpu"
    )
    assert bundle.warnings == (
        f"images/1: the --find-links folder {wheels} has no wheel of torch==2.13.0+cpu, "
        "numpy, and the image's build installs from the bundle's wheels alone (--no-index), "
        f"so it fails there: add them to the folder (pip download -d {wheels} -r "
        f"{tmp_path}/bundle/images/1/requirements.txt) and materialize again (into a new "
        "folder)",
    )
    # Every requirement met (the version too): nothing to say.
    _wheel(wheels, "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl")
    _wheel(wheels, "numpy-2.4.6-cp311-cp311-linux_x86_64.whl")
    bundle = write_bundle(
        spec, plans, tmp_path / "again", find_links=wheels, torch_version="2.13.0+cpu"
    )
    assert bundle.warnings == ()


def test_a_cell_that_reads_its_attempt_number_is_named(tmp_path: Path) -> None:
    # The bundle fixes each cell at attempt 1: specs/intermittent.yaml's `--seed ${{ attempt
    # }}` crashed in every run.sh, and one whose attempt 1 passed would never crash there,
    # while the README told its reader to run the cell again.
    import dataclasses

    def warnings(name: str, text: str) -> tuple[str, ...]:
        (tmp_path / f"{name}.yaml").write_text(text)
        spec = load_spec(tmp_path / f"{name}.yaml")
        planned = plan_run(spec, RunOptions()).attempts
        again = plan_run(spec, dataclasses.replace(RunOptions(), repeat=2)).attempts
        return write_bundle(
            spec,
            [p for p in planned if p.attempt == 1],
            tmp_path / name,
            later=[p for p in again if p.attempt == 2],
        ).warnings

    seeded = COMMAND.format(command="python app.py --seed ${{ attempt }}")
    assert warnings("seeded", seeded) == (
        "cell 1 (default): it reads its attempt number (`${{ attempt }}` in its "
        "command), and the bundle runs attempt 1's: `./run.sh 1` again does what it did, "
        "where reprospec's attempts 2, 3, ... do otherwise",
    )
    assert "reads its attempt number" in (tmp_path / "seeded" / "README.md").read_text()
    assert warnings("plain", COMMAND.format(command="python app.py --seed 1")) == ()
    workload = (
        "reprospec: 1\nname: w\nworkload:\n  model: {builtin: mlp}\n"
        "  data: {dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}}\n"
        "  phases: [{name: train, steps: 1}]\n"
        "  faults: [{kind: segfault, at: {step: 1}, probability: 0.5}]\n"
        "expect: {outcome: crash}\n"
    )
    assert warnings("coin", workload) == (
        "cell 1 (default): it reads its attempt number (workload.faults[0].probability "
        "0.5, drawn per attempt), and the bundle runs attempt 1's: `./run.sh 1` again does "
        "what it did, where reprospec's attempts 2, 3, ... do otherwise",
    )
    assert warnings("sure", workload.replace(", probability: 0.5", "")) == ()


def test_a_spec_naming_another_python_than_the_images_is_warned_about(tmp_path: Path) -> None:
    # The bundle's image is Debian bookworm's python3, 3.11: a spec that names 3.12 ran there
    # without a word, where `reprospec run` warns of another Python than the spec's.
    def warnings(name: str, python: str) -> tuple[str, ...]:
        text = COMMAND.format(command="python3 app.py").replace(
            "command:", f"environment: {{python: '{python}'}}\ncommand:"
        )
        (tmp_path / f"{name}.yaml").write_text(text)
        spec = load_spec(tmp_path / f"{name}.yaml")
        plans = [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1]
        return write_bundle(spec, plans, tmp_path / name).warnings

    assert warnings("new", "3.12") == (
        "cell 1 (default): the spec names Python 3.12, and the image runs Debian bookworm's "
        "python3 (3.11): the bundle does not rerun it on the Python the incident was seen on "
        "(an `environment.image` with Python 3.12 would)",
    )
    assert warnings("same", "3.11") == ()
    assert warnings("patch", "3.11.7") == ()


def test_a_dockerfile_from_a_local_image_says_the_reader_must_build_it(tmp_path: Path) -> None:
    # The README said no image of the writer's machine was needed, and the reader's build
    # of a Dockerfile FROM reprospec-runner:latest failed on `pull access denied`.
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM reprospec-runner:latest\n")
    (tmp_path / "docker" / "Dockerfile.public").write_text("FROM debian:bookworm-slim\n")

    def line(name: str) -> str:
        spec = COMMAND.format(command="'true'") + f"environment: {{dockerfile: docker/{name}}}\n"
        (tmp_path / f"{name}.yaml").write_text(spec)
        loaded = load_spec(tmp_path / f"{name}.yaml")
        plans = [p for p in plan_run(loaded, RunOptions()).attempts if p.attempt == 1]
        write_bundle(loaded, plans, tmp_path / f"{name}-bundle")
        readme = (tmp_path / f"{name}-bundle" / "README.md").read_text()
        return next(line for line in readme.splitlines() if line.startswith("- `images/1/`"))

    assert line("Dockerfile") == (
        "- `images/1/`: the spec's own Dockerfile; it builds FROM `reprospec-runner:latest`; "
        "`reprospec-runner:latest` is in no registry: it was built on the machine that wrote "
        "this bundle by `reprospec docker setup`, which builds it here too, or edit the "
        "Dockerfile's FROM to a Debian bookworm image"
    )
    assert line("Dockerfile.public") == (
        "- `images/1/`: the spec's own Dockerfile; it builds FROM `debian:bookworm-slim`"
    )


def test_a_variable_the_spec_reads_and_this_environment_lacks_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run` warns of it; materialize baked `-e MODE=` into run.sh without a word, which
    # no export of its reader's could change.
    monkeypatch.delenv("REPROSPEC_TEST_MODE", raising=False)
    text = COMMAND.format(command="python3 app.py").replace(
        "command:", "environment: {env: {MODE: '${{ env.REPROSPEC_TEST_MODE }}'}}\ncommand:"
    )
    (tmp_path / "s.yaml").write_text(text)
    spec = load_spec(tmp_path / "s.yaml")
    plans = [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1]
    assert write_bundle(spec, plans, tmp_path / "bundle").warnings == (
        "the spec reads ${{ env.REPROSPEC_TEST_MODE }}, not set in this environment: null, "
        "which a text gets as the empty string (MODE='' in the child); export it as the "
        "spec's author had, and materialize again: the bundle holds the value it read here",
    )
    monkeypatch.setenv("REPROSPEC_TEST_MODE", "fast")
    plans = [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1]
    assert write_bundle(spec, plans, tmp_path / "again").warnings == ()


def test_a_refused_instances_cell_names_the_cells_a_bundle_can_carry(tmp_path: Path) -> None:
    # The refusal named only what it could not carry, and its user had no way to the
    # bundle of the other cells (`-m`).
    from reprospec.errors import UsageError

    text = (
        "reprospec: 1\nname: i\nmatrix: {n: [1, 4]}\ncommand: 'true'\n"
        "run: {instances: '${{ matrix.n }}'}\nexpect: {outcome: pass}\n"
    )
    (tmp_path / "i.yaml").write_text(text)
    spec = load_spec(tmp_path / "i.yaml")
    plans = [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1]
    with pytest.raises(UsageError) as refused:
        write_bundle(spec, plans, tmp_path / "bundle")
    assert str(refused.value).endswith(
        "(cells n=4); run them with reprospec (--runner local); a bundle of the others (n=1) "
        "is written where -m AXIS=VALUE selects them alone"
    )
    assert not (tmp_path / "bundle").exists()


def test_a_bundle_that_fails_halfway_leaves_nothing_to_refuse_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stopped halfway (a Ctrl-C as the workdir's files were copied), materialize left a
    # bundle without run.sh, and the same command then refused its folder: "exists and is
    # not empty". The Ctrl-C comes here as the README is written, the last file.
    from reprospec.export import materialize

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(materialize, "_write_readme", interrupted)
    (tmp_path / "s.yaml").write_text(COMMAND.format(command="python3 app.py"))
    spec = load_spec(tmp_path / "s.yaml")
    plans = [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1]
    with pytest.raises(KeyboardInterrupt):
        write_bundle(spec, plans, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists()
    # A folder that was there, empty, stays, emptied.
    (tmp_path / "kept").mkdir()
    with pytest.raises(KeyboardInterrupt):
        write_bundle(spec, plans, tmp_path / "kept")
    assert list((tmp_path / "kept").iterdir()) == []
