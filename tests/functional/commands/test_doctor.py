"""`reprospec doctor` from the CLI, against real interpreters and the machine it runs on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT, Cli


def test_doctor_and_env_commands_never_import_torch_in_the_parent() -> None:
    code = (
        "import sys, reprospec.doctor, reprospec.environment.probe, reprospec.process.rlimits, "
        "reprospec.process.launch, "
        "reprospec.commands.doctor, reprospec.commands.env; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": ""})


@pytest.mark.torch
def test_doctor_command_on_this_machine_and_a_spec(cli: Cli) -> None:
    pytest.importorskip("torch")
    result = cli("doctor", "specs/workload-shm-exhaustion.yaml")
    lines = result.stdout
    assert "SKIP  cuda " in lines
    assert "no CUDA device" in lines
    assert "FAIL  shm" in lines  # 64m for 2 workers x 36 MiB batches
    assert result.code == 1
    env = cli("env", "--json")
    assert env.code == 0
    assert json.loads(env.stdout)["torch"]["version"]


def test_doctor_on_an_interpreter_without_torch_says_so(cli: Cli, tmp_path: Path) -> None:
    # A real interpreter without torch: a fresh venv (it once said "CPU-only build").
    venv = [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")]
    subprocess.run(venv, check=True)
    python = tmp_path / "venv" / "bin" / "python"
    result = cli("doctor", "--python", str(python))
    assert "torch is not installed in this interpreter" in result.stdout
    assert "CPU-only" not in result.stdout
    nvcc = next(line for line in result.stdout.splitlines() if " nvcc " in line)
    assert "torch is not installed" in nvcc


def test_doctor_command_without_gdb_warns_about_native_stacks(tmp_path: Path) -> None:
    # The doctor command on this machine, with a PATH that has no gdb: a real run of it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "doctor", "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    checks = {check["name"]: check for check in json.loads(done.stdout)}
    assert checks["native-stacks"]["status"] == "warn", checks["native-stacks"]
    assert checks["native-stacks"]["why"].startswith("gdb not found")


def test_a_spec_package_the_interpreter_lacks_fails_on_the_local_runner_only(
    cli: Cli, tmp_path: Path
) -> None:
    # `run` on the local runner makes every cell of this spec infra-error (exit 3): doctor
    # must not pass it. The venv runner installs the package: no failure there.
    (tmp_path / "sq.yaml").write_text(
        "reprospec: 1\nname: sq\nenvironment:\n  packages: ['sqlparse-not-here==0.5.3']\n"
        "command: python -c 'import sqlparse'\nexpect: {outcome: pass}\n"
    )
    local = cli("doctor", "sq.yaml", cwd=tmp_path)
    (line,) = [ln for ln in local.stdout.splitlines() if " spec-environment " in ln]
    assert " ".join(line.split()) == (
        "FAIL spec-environment sqlparse-not-here is not installed (the cell needs "
        "sqlparse-not-here==0.5.3): on the local runner every cell that names it is an "
        "infra error, not run"
    )
    assert local.code == 1, local.stdout + local.stderr
    venv = cli("doctor", "sq.yaml", "--runner", "venv", cwd=tmp_path)
    (line,) = [ln for ln in venv.stdout.splitlines() if " spec-environment " in ln]
    assert line.split()[:2] == ["PASS", "spec-environment"]
    assert "the venv runner installs the spec's packages" in line
    others_failed = any(ln.lstrip().startswith("FAIL") for ln in venv.stdout.splitlines())
    assert venv.code == (1 if others_failed else 0), venv.stdout + venv.stderr


def test_a_missing_requirement_of_an_extra_fails_as_the_run_refuses_it(
    cli: Cli, tmp_path: Path
) -> None:
    """`packages: [torch[opt-einsum]]` without opt-einsum: `run` makes the cell infra-error
    (the package check reads what the extra requires); doctor said "python and packages
    match the spec's environment", the capture holding no Requires-Dist. A distribution
    `kit` on PYTHONPATH whose extra `fast` requires one that is not installed."""
    site = tmp_path / "site"
    (site / "kit-1.0.dist-info").mkdir(parents=True)
    (site / "kit-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kit\nVersion: 1.0\nProvides-Extra: fast\n"
        'Requires-Dist: reprospec-absent-speedup>=2; extra == "fast"\n'
    )
    env = {"PYTHONPATH": str(site)}
    for extra, status in (("[fast]", "FAIL"), ("", "PASS")):
        (tmp_path / "kit.yaml").write_text(
            f"reprospec: 1\nname: kit\nenvironment:\n  packages: ['kit{extra}']\n"
            "command: python -c 'pass'\nexpect: {outcome: pass}\n"
        )
        done = cli("doctor", "kit.yaml", "--python", sys.executable, cwd=tmp_path, env=env)
        (line,) = [ln for ln in done.stdout.splitlines() if " spec-environment " in ln]
        assert line.split()[:2] == [status, "spec-environment"], line
        if status == "FAIL":
            assert (
                "reprospec-absent-speedup is not installed (kit[fast] requires "
                "reprospec-absent-speedup>=2): on the local runner" in " ".join(line.split())
            )
            run = cli("run", "kit.yaml", "--python", sys.executable, cwd=tmp_path, env=env)
            assert run.code == 3, run.stdout + run.stderr
            (cell,) = run.results()["cells"]
            assert (
                "reprospec-absent-speedup is not installed" in (cell["attempts"][0]["infra_error"])
            )


def test_packages_are_asked_in_the_cells_own_env_as_the_run_asks(cli: Cli, tmp_path: Path) -> None:
    """The local runner's check runs the interpreter with the cell's `environment.env` and in
    its workdir; doctor asked it with its own: a spec whose env sets PYTHONPATH to where
    `kit` is failed doctor (`kit is not installed`) and ran, and one whose env hides the
    caller's PYTHONPATH passed doctor and was infra-error in run."""
    site = tmp_path / "site"
    for name, version, requires in (
        ("kit", "1.0", 'Requires-Dist: reprospec-speedup>=2; extra == "fast"\n'),
        ("reprospec-speedup", "2.0", ""),
    ):
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}"
        )
    empty = tmp_path / "empty"
    empty.mkdir()
    for spec_path, outer, status in ((site, empty, "PASS"), (empty, site, "FAIL")):
        (tmp_path / "kit.yaml").write_text(
            "reprospec: 1\nname: kit\nenvironment:\n  packages: ['kit[fast]', 'kit']\n"
            f"  env: {{PYTHONPATH: '{spec_path}'}}\n"
            "command: python -c 'pass'\nexpect: {outcome: pass}\n"
        )
        env = {"PYTHONPATH": str(outer)}
        done = cli("doctor", "kit.yaml", "--python", sys.executable, cwd=tmp_path, env=env)
        (line,) = [ln for ln in done.stdout.splitlines() if " spec-environment " in ln]
        assert line.split()[:2] == [status, "spec-environment"], line
        run = cli("run", "kit.yaml", "--python", sys.executable, cwd=tmp_path, env=env)
        assert run.code == (0 if status == "PASS" else 3), run.stdout + run.stderr
        if status == "FAIL":
            assert "kit is not installed (the cell needs kit[fast])" in line


def test_doctor_for_the_venv_runner_checks_the_interpreter_it_builds_on(
    cli: Cli, tmp_path: Path
) -> None:
    # The venv runner builds each cell's venv on the spec's `python`, found here by uv: doctor
    # compared this interpreter with it instead (`the interpreter is python 3.11.7; the spec
    # names 3.12`, `-> ... or --runner docker`) and passed where no 3.12 was here, which made
    # every cell of `run --runner venv` infra-error.
    spec = (
        "reprospec: 1\nname: v\nenvironment: {{python: '{}'}}\ncommand: 'true'\n"
        "expect: {{outcome: pass}}\n"
    )
    (tmp_path / "none.yaml").write_text(spec.format("3.4"))
    missing = cli("doctor", "none.yaml", "--runner", "venv", cwd=tmp_path)
    (line,) = [ln for ln in missing.stdout.splitlines() if " venv-python " in ln]
    assert line.split()[:2] == ["FAIL", "venv-python"], missing.stdout
    assert "no Python 3.4 on this machine" in line
    assert "the interpreter is python" not in missing.stdout  # no interpreter to compare
    assert missing.code == 1, missing.stdout + missing.stderr
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    (tmp_path / "ours.yaml").write_text(spec.format(ours))
    found = cli("doctor", "ours.yaml", "--runner", "venv", "--format", "json", cwd=tmp_path)
    checks = {check["name"]: check for check in json.loads(found.stdout)}
    assert "venv-python" not in checks
    assert checks["spec-environment"]["status"] == "pass", checks["spec-environment"]
    text = cli("doctor", "ours.yaml", "--runner", "venv", cwd=tmp_path).stdout.splitlines()[0]
    assert text.endswith(f"(the venv runner's interpreter for the spec's python {ours})"), text


def test_a_matrix_over_python_is_checked_for_each_version(cli: Cli, tmp_path: Path) -> None:
    """doctor judged the last cell's python alone: `python: [3.4, ours]` passed on the venv
    runner, whose 3.4 cells are each infra-error (no such Python here), and said `python and
    packages match` on the local runner, whose run warns of them."""
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    (tmp_path / "m.yaml").write_text(
        "reprospec: 1\nname: m\nenvironment: {python: '${{ matrix.py }}'}\n"
        f"matrix: {{py: ['3.4', '{ours}']}}\ncommand: 'true'\nexpect: {{outcome: pass}}\n"
    )
    venv = cli("doctor", "m.yaml", "--runner", "venv", "--format", "json", cwd=tmp_path)
    assert venv.code == 1, venv.stdout + venv.stderr
    checks = {check["name"]: check for check in json.loads(venv.stdout)}
    assert checks["venv-python"]["status"] == "fail"
    assert "no Python 3.4 on this machine" in checks["venv-python"]["why"]
    assert "(cell py=3.4): " in checks["venv-python"]["why"]
    assert checks["spec-environment"]["status"] == "pass", checks["spec-environment"]
    local = cli("doctor", "m.yaml", "--format", "json", cwd=tmp_path)
    checks = {check["name"]: check for check in json.loads(local.stdout)}
    assert checks["spec-environment"]["status"] == "warn"
    assert checks["spec-environment"]["why"].endswith("the spec names 3.4 in cell py=3.4")


def test_doctor_for_the_venv_runner_finds_a_programs_name_past_a_shim(
    cli: Cli, tmp_path: Path
) -> None:
    # `doctor --runner venv --python python3.10` exited 3 (`not a Python 3 interpreter:
    # ~/.pyenv/shims/python3.10 (exit 127 ...)`) where `run --runner venv` builds on
    # ~/.pyenv/versions/3.10.13: the name is found as the venv runner finds it.
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / f"python{minor}"
    shim.write_text(f"#!/bin/sh\necho 'pyenv: python{minor}: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    versions = tmp_path / "pyenv" / "versions" / ".".join(map(str, sys.version_info[:3]))
    (versions / "bin").mkdir(parents=True)
    base = os.path.realpath(Path(sys.base_prefix) / "bin" / f"python{minor}")
    (versions / "bin" / f"python{minor}").symlink_to(base)
    env = {
        "PATH": str(shims),
        "PYENV_ROOT": str(tmp_path / "pyenv"),
        "UV_PYTHON_INSTALL_DIR": str(tmp_path / "no-managed"),
    }
    found = cli("doctor", "--runner", "venv", "--python", f"python{minor}", env=env, cwd=tmp_path)
    assert found.code != 3, found.stdout + found.stderr
    assert found.stdout.splitlines()[0] == f"reprospec doctor: {base}", found.stdout
    # The local runner runs PATH's shim itself: refused, as `run` refuses it.
    local = cli("doctor", "--python", f"python{minor}", env=env, cwd=tmp_path)
    assert local.code == 3, local.stdout + local.stderr
    assert f"not a Python 3 interpreter: {shim} (does not run: exit 127, pyenv:" in local.stderr


def test_doctor_refuses_python_with_the_docker_runner_as_run_does(cli: Cli) -> None:
    """It checked the interpreter given and passed, of a runner that never uses it."""
    result = cli("doctor", "--runner", "docker", "--python", sys.executable)
    assert result.code == 2, result.stdout
    assert result.stderr.startswith(f"reprospec: --python {sys.executable}: the docker runner"), (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_doctor_for_the_docker_runner_asks_none_of_the_hosts_tools(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The host's starter, gdb and CUDA lookups (on a GPU machine a CUDA op in a child, up to
    # 120 s) were asked, then each skipped for the image's: none is asked now.
    import argparse

    from reprospec import native
    from reprospec.commands import doctor
    from reprospec.process import starter

    def asked(*_: object) -> None:
        raise AssertionError("a host tool was asked for the docker runner")

    monkeypatch.setattr(starter, "find", asked)
    monkeypatch.setattr(native, "gdb_path", asked)
    monkeypatch.setattr(doctor, "_cuda_checks", asked)
    # Nor the host interpreter's torch, CUDA or the spec's packages (2 s of CPU, and on a
    # GPU machine a CUDA start), which none of the checks kept for it reads.
    from reprospec.environment import probe

    probed: list[dict[str, object]] = []
    real = probe.probe_environment

    def probe_environment(
        python: str, packages: tuple[str, ...], *, cuda: bool, with_torch: bool
    ) -> object:
        probed.append({"packages": packages, "cuda": cuda, "with_torch": with_torch})
        return real(python, packages, cuda=cuda, with_torch=with_torch)

    monkeypatch.setattr(probe, "probe_environment", probe_environment)
    args = argparse.Namespace(spec=None, python=None, runner="docker", format="json")
    doctor.run(args)
    assert probed == [{"packages": (), "cuda": False, "with_torch": False}]
    checks = {check["name"]: check for check in json.loads(capsys.readouterr().out)}
    for name in ("starter", "native-stacks", "cuda-libraries", "sanitizer", "cuda-smoke"):
        assert checks[name]["status"] == "skipped", checks[name]
        assert checks[name]["why"], checks[name]


def test_an_interpreter_the_capture_cannot_run_in_is_checked_as_the_run_uses_it(
    cli: Cli, tmp_path: Path
) -> None:
    """A Python 3.9 runs a command spec (`run` warns that the capture failed), but doctor
    exited 3 on the capture's failure: nothing of the machine checked. Here an interpreter
    whose harness import fails as 3.9's does (the capture's `-m reprospec_harness.envinfo`)."""
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(
        '#!/bin/sh\ncase "$*" in *reprospec_harness.envinfo*)\n'
        "  echo \"ImportError: cannot import name 'TypeAlias' from 'typing'\" >&2; exit 1;;\n"
        f'esac\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    (tmp_path / "c.yaml").write_text(
        "reprospec: 1\nname: c\ncommand: python -c pass\nexpect: {outcome: pass}\n"
    )
    done = cli("doctor", "c.yaml", "--python", str(python), "--format", "json", cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["capture"]["status"] == "warn"
    assert "ImportError: cannot import name 'TypeAlias'" in checks["capture"]["why"]
    assert checks["torch"]["status"] == "skipped"
    assert checks["spec-environment"]["status"] == "skipped"
    assert checks["shm"]["status"] == "pass"  # the machine's, checked all the same
    # A workload runs the harness in it: the run refuses each such cell, and doctor fails it.
    (tmp_path / "w.yaml").write_text(
        "reprospec: 1\nname: w\nworkload:\n  model: {builtin: mlp, params: {hidden: 8}}\n"
        "  optimizer: {name: sgd, lr: 0.01}\n  data:\n"
        "    dataset: {builtin: synthetic, size: 16, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4}\n  phases: [{name: train, steps: 1}]\n"
        "expect: {outcome: pass}\n"
    )
    done = cli("doctor", "w.yaml", "--python", str(python), "--format", "json", cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["spec-environment"]["status"] == "fail"
    assert (
        "every workload cell of it is an infra error, not run" in checks["spec-environment"]["why"]
    )


def test_a_python_of_a_matrix_the_capture_cannot_run_in_leaves_the_others_checked(
    cli: Cli, tmp_path: Path
) -> None:
    """`python: [3.9, 3.11]` on the venv runner: the first python found (3.9) was checked
    alone, its capture failed, and spec-environment failed `every workload cell` though the
    3.11 cells run, never checked. Here an interpreter whose harness import fails as 3.9's."""
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(
        '#!/bin/sh\ncase "$*" in *reprospec_harness.envinfo*)\n'
        "  echo \"ImportError: cannot import name 'TypeAlias' from 'typing'\" >&2; exit 1;;\n"
        f'esac\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    # In either order: the one that cannot be captured after the one that can was never
    # tried, and doctor passed with each of its workload cells an infra error (review).
    for order in (f"'{python}', '{ours}'", f"'{ours}', '{python}'"):
        (tmp_path / "w.yaml").write_text(
            "reprospec: 1\nname: w\nenvironment: {python: '${{ matrix.py }}'}\n"
            f"matrix: {{py: [{order}]}}\n"
            "workload:\n  model: {builtin: mlp, params: {hidden: 8}}\n"
            "  optimizer: {name: sgd, lr: 0.01}\n  data:\n"
            "    dataset: {builtin: synthetic, size: 16, shape: [4], classes: 2}\n"
            "    loader: {batch_size: 4}\n  phases: [{name: train, steps: 1}]\n"
            "expect: {outcome: pass}\n"
        )
        done = cli("doctor", "w.yaml", "--runner", "venv", cwd=tmp_path)
        assert done.code == 1, order + done.stdout + done.stderr
        assert f"(the venv runner's interpreter for the spec's python {ours})" in done.stdout
        checks = {
            c["name"]: c
            for c in json.loads(
                cli("doctor", "w.yaml", "--runner", "venv", "--format", "json", cwd=tmp_path).stdout
            )
        }
        capture = checks["capture"]
        assert capture["status"] == "fail", capture
        assert capture["why"].startswith(f"python {python} (cell py={python}): "), capture
        assert "so every workload cell of it is an infra error, not run" in capture["why"]
        assert "every workload cell" not in checks["spec-environment"]["why"]
        assert checks["shm"]["status"] == "pass"


def test_on_a_gpu_host_an_uncaptured_interpreter_runs_no_cuda_smoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The machine's part is reprospec's own capture, which on a GPU host sees the GPUs: the
    CUDA smoke test ran `python3.9 -c "import torch..."` of the interpreter the capture could
    not run in, failing (`No module named 'torch'`) a command spec doctor meant to pass.
    Here the GPUs are said present; the interpreter notes each run of its `-c` code."""
    import argparse

    from reprospec.commands import doctor as command
    from reprospec.doctor import check

    ran = tmp_path / "ran"
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(
        '#!/bin/sh\ncase "$*" in *reprospec_harness.envinfo*)\n'
        "  echo \"ImportError: cannot import name 'TypeAlias' from 'typing'\" >&2; exit 1;;\n"
        f"  *torch.arange*) echo smoke >> {ran}; exit 1;;\n"
        f'esac\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    monkeypatch.setattr(check, "gpus", lambda _: [{"name": "H100"}])
    # compute-sanitizer needs no capture (PATH, the toolkit, the interpreter's sys.path): it
    # is still looked for, where it was skipped as of an interpreter not captured (review).
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "compute-sanitizer").write_text("#!/bin/sh\n")
    (tools / "compute-sanitizer").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    args = argparse.Namespace(spec=None, python=str(python), runner="local", format="json")
    assert command.run(args) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["capture"]["status"] == "warn"
    assert checks["cuda-smoke"]["status"] == "skipped", checks["cuda-smoke"]
    assert "could not be captured" in checks["cuda-smoke"]["why"]
    assert checks["sanitizer"] == {
        **checks["sanitizer"],
        "status": "pass",
        "why": str(tools / "compute-sanitizer"),
    }
    assert not ran.exists()


def test_two_pythons_of_one_interpreter_are_probed_and_named_once(cli: Cli, tmp_path: Path) -> None:
    """`python: [A, A']` where A and A' name one interpreter (a path and another spelling of
    it, `3.11` and `3.11.7`): each was probed, and one that could not be captured was said
    twice in the `capture` line, the same failure as of two interpreters."""
    probes = tmp_path / "probes"
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(
        '#!/bin/sh\ncase "$*" in *reprospec_harness.envinfo*)\n'
        f"  echo probed >> {probes}\n"
        "  echo \"ImportError: cannot import name 'TypeAlias' from 'typing'\" >&2; exit 1;;\n"
        f'esac\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    other = f"{tmp_path}/bin/./python3"  # (a Path drops the `.`)
    ours = os.path.realpath(sys.executable)
    alias = f"{Path(ours).parent}/./{Path(ours).name}"
    spec = (
        "reprospec: 1\nname: m\nenvironment: {{python: '${{{{ matrix.py }}}}'}}\n"
        "matrix: {{py: [{}]}}\ncommand: 'true'\nexpect: {{outcome: pass}}\n"
    )
    # What one probe of it runs (a capture with torch, then without).
    (tmp_path / "one.yaml").write_text(spec.format(f"'{python}', '{ours}'"))
    assert cli("doctor", "one.yaml", "--runner", "venv", cwd=tmp_path).code == 0
    once = probes.read_text()
    probes.unlink()
    (tmp_path / "m.yaml").write_text(spec.format(f"'{python}', '{other}', '{ours}', '{alias}'"))
    done = cli("doctor", "m.yaml", "--runner", "venv", cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].endswith(
        f"(the venv runner's interpreter for the spec's python {ours} and {alias})"
    ), done.stdout
    (line,) = [ln for ln in done.stdout.splitlines() if ln.split()[1:2] == ["capture"]]
    assert line.count("environment capture with") == 1, line
    assert f"python {python} and {other} (cells py={python}, py={other}): " in line
    assert probes.read_text() == once
