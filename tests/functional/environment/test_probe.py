"""Environment capture in real children: torch present, missing or broken, and installed packages
read from real site folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reprospec.environment.packages import probe_installed
from reprospec.environment.probe import _too_old, probe_environment
from reprospec.errors import InfraError
from reprospec.harness import HARNESS_ROOT

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import envinfo


def test_capture_system_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("WANDB_API_KEY", "secret")
    monkeypatch.setenv("TORCH_HUB_TOKEN", "secret")
    monkeypatch.setenv("TORCH_AUTH", "secret")
    monkeypatch.setenv("PYTORCH_PASSPHRASE", "secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    info = envinfo.capture_system(["pyyaml>=6", "surely-not-installed-pkg"])
    assert info["python"]["version"].count(".") == 2
    assert info["os"]["kernel"]
    assert info["cpu"]["cores"] >= 1
    assert info["memory"]["total"] > 0
    assert info["shm"]["present"] in (True, False)
    assert info["packages"]["pyyaml"]
    assert info["packages"]["surely-not-installed-pkg"] is None
    assert info["env"]["CUDA_LAUNCH_BLOCKING"] == "1"
    # A secret-looking name of those that shape a run is recorded set, masked (compare names
    # a token set in one run and not the other); another secret of the shell, not at all.
    for name in ("WANDB_API_KEY", "TORCH_HUB_TOKEN", "TORCH_AUTH", "PYTORCH_PASSPHRASE"):
        assert info["env"][name] == "***"
    assert "AWS_SECRET_ACCESS_KEY" not in info["env"]
    assert info["multiprocessing"]["start_method"] in ("fork", "spawn", "forkserver")
    json.dumps(info)


@pytest.mark.torch
def test_probe_with_torch() -> None:
    pytest.importorskip("torch")
    env: dict[str, Any] = probe_environment(sys.executable, ["pyyaml"])
    torch = env["torch"]
    assert torch["version"].startswith("2.")
    assert torch["cpu_capability"]
    assert isinstance(torch["arch_list"], list)
    assert torch["cuda_available"] in (True, False)
    assert "PYTHONPATH" not in env["env"] or str(HARNESS_ROOT) not in env["env"]["PYTHONPATH"]


def test_probe_with_torch_missing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env: dict[str, Any] = probe_environment(str(venv / "bin" / "python"))
    assert env["torch"] == {"installed": False}
    assert env["packages"]["torch"] is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "raise OSError('libcudnn.so.9: cannot open shared object file')",
            "OSError: libcudnn.so.9",
        ),
        ("import ctypes; ctypes.string_at(0)", "import torch failed: killed by SIGSEGV"),
    ],
)
def test_probe_with_torch_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, expected: str
) -> None:
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(body + "\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    env: dict[str, Any] = probe_environment(sys.executable)
    assert env["torch"]["installed"] is True
    assert expected in env["torch"]["error"]
    assert env["python"]["version"]


def test_torchs_numpy_bridge_is_captured_where_torch_imports_and_numpy_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch imports without numpy and only warns `Failed to initialize NumPy`;
    `Tensor.numpy()` then raises. The capture says so, where `doctor` passed such a torch as
    fine. (numpy is hidden as a missing module, whether or not this interpreter has one.)"""
    pytest.importorskip("torch")
    hidden = tmp_path / "numpy"
    hidden.mkdir()
    (hidden / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    env: dict[str, Any] = probe_environment(sys.executable)
    torch = env["torch"]
    assert torch["version"]
    assert torch["numpy"] is None
    assert torch["errors"]["numpy"] == "RuntimeError: Numpy is not available"


def test_probe_with_a_missing_interpreter() -> None:
    with pytest.raises(InfraError, match="interpreter not found: /nonexistent/python"):
        probe_environment("/nonexistent/python")


def test_a_non_executable_interpreter_is_worded_alike_by_every_question(tmp_path: Path) -> None:
    # environment/interpreter.py: the capture and the package check say it as the local
    # runner's check of --python does (tests/unit/runners/test_local.py).
    script = tmp_path / "python9"
    script.write_text("#!/bin/sh\n")
    said = f"interpreter not executable: {script}"
    with pytest.raises(InfraError) as captured:
        probe_environment(str(script))
    assert str(captured.value) == said
    with pytest.raises(InfraError) as checked:
        probe_installed(str(script), ["six"])
    assert str(checked.value) == said


def _older_python() -> str | None:
    """An interpreter here older than the harness needs (pyenv's, or one on PATH)."""
    import shutil

    found = [shutil.which(f"python3.{minor}") for minor in (9, 8, 7, 6)]
    found += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.[6-9].*/bin/python"))
    for python in found:
        if python is None:
            continue
        done = subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30)
        if done.returncode == 0:
            return python
    return None


def test_an_interpreter_older_than_the_harness_is_said_so() -> None:
    """`doctor --runner venv` of a spec on Python 3.7 (whose cells the venv runner runs)
    said `environment capture with .../python3.7 failed: SyntaxError: invalid syntax`: the
    harness's line, as if that interpreter were broken."""
    python = _older_python()
    if python is None:
        pytest.skip("no Python older than 3.10 here")
    with pytest.raises(InfraError) as raised:
        probe_environment(python)
    said = str(raised.value)
    assert f"environment capture with {python} failed: it is Python 3." in said
    assert "which needs Python 3.10 or later" in said
    assert said.endswith("give --python an interpreter that new")


def test_an_older_interpreter_that_prints_as_it_starts_is_said_so(tmp_path: Path) -> None:
    """The version was asked by a probe of its own that read the whole output as the
    version: a wrapper (or a .pth file) that prints as it starts said only the harness's
    `ImportError: ...` line, as if the interpreter were broken. version_of reads its last."""
    python = _older_python()
    if python is None:
        pytest.skip("no Python older than 3.10 here")
    wrapper = tmp_path / "python3"
    wrapper.write_text(f'#!/bin/sh\necho "activating 1.2.3"\nexec {python} "$@"\n')
    wrapper.chmod(0o755)
    with pytest.raises(InfraError) as raised:
        probe_environment(str(wrapper))
    assert "which needs Python 3.10 or later" in str(raised.value)


def test_a_fake_older_interpreter_that_prints_as_it_starts_is_said_so(tmp_path: Path) -> None:
    """The test above skips where no Python older than 3.10 is installed: a script that
    prints as a wrapper does, then a version, checks the same reading everywhere."""
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\necho "activating 1.2.3"\necho 3.9.18\n')
    fake.chmod(0o755)
    died = subprocess.CompletedProcess(
        [str(fake)], 1, "", "Traceback (most recent call last):\nImportError: cannot import x\n"
    )
    said = _too_old(str(fake), died)
    assert said.startswith("it is Python 3.9.18, and the capture runs reprospec's harness")
    assert "which needs Python 3.10 or later (ImportError: cannot import x)" in said


def test_pip_list_reads_each_distributions_name_and_version_as_its_metadata_says() -> None:
    """envinfo reads Name and Version from the metadata's header lines (no email parser):
    the same list as importlib.metadata's own parse, for every distribution installed here."""
    fast, (ours, parsed), (versions, expected) = _compare([Path(HARNESS_ROOT)])
    assert fast
    assert versions == expected
    assert ours == parsed
    assert len(ours) > 10
    assert "PyYAML" in ours
    assert ours["torch"].startswith("2.13.0")


# Folders of installed distributions in the shapes importlib.metadata finds: a .dist-info
# folder, an .egg-info folder, an .egg-info file, one shadowed by an earlier sys.path entry.
SITE_A = {
    "Foo_Bar-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: foo.bar\nVersion: 1.0\n\nabout",
    "Shadowed-2.0.dist-info/METADATA": "Name: Shadowed\nVersion: 2.0\n",
    "eggy.egg-info/PKG-INFO": "Name: eggy\nVersion: 0.2\n",
    "legacy.egg-info": "Metadata-Version: 1.0\nName: legacy\nVersion: 0.3\n",
}


SITE_B = {"shadowed-1.0.dist-info/METADATA": "Name: Shadowed\nVersion: 1.0\n"}


COMPARE = (
    "import importlib.metadata as m, json, sys\n"
    "from reprospec_harness import envinfo\n"
    "parsed = {}\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name'] if d.metadata else None\n"
    "    if name and name not in parsed:\n"
    "        parsed[name] = d.version\n"
    "names = ['foo-bar', 'Foo.Bar', 'shadowed', 'eggy', 'legacy', 'zipped', 'absent']\n"
    "def version(n):\n"
    "    try:\n"
    "        return m.version(n)\n"
    "    except m.PackageNotFoundError:\n"
    "        return None\n"
    "print(json.dumps([\n"
    "    envinfo._distribution_folders() is not None,\n"
    "    [envinfo.distributions(), parsed],\n"
    "    [{n: envinfo._packages(names)[n] for n in names}, {n: version(n) for n in names}],\n"
    "]))\n"
)


def _site(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _compare(path: list[Path]) -> tuple[bool, list[Any], list[Any]]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = {[str(p) for p in path]!r}\n"
         + COMPARE],
        capture_output=True, text=True, check=True, cwd=HARNESS_ROOT, timeout=120,
    )  # fmt: skip
    fast, dists, versions = json.loads(done.stdout)
    return fast, dists, versions


def test_distributions_found_in_folders_are_the_ones_importlib_metadata_finds(
    tmp_path: Path,
) -> None:
    """Without importing importlib.metadata: the same list, the same versions, the first on
    sys.path winning, every shape of metadata a folder of sys.path holds."""
    a = _site(tmp_path / "a", SITE_A)
    b = _site(tmp_path / "b", SITE_B)
    fast, (ours, parsed), (versions, expected) = _compare([Path(HARNESS_ROOT), a, b])
    assert fast
    assert ours == parsed
    assert {k: ours[k] for k in ("foo.bar", "Shadowed", "eggy", "legacy")} == {
        "foo.bar": "1.0", "Shadowed": "2.0", "eggy": "0.2", "legacy": "0.3",
    }  # fmt: skip
    assert versions == expected
    assert versions["Foo.Bar"] == "1.0"
    assert versions["absent"] is None


def test_a_zip_on_sys_path_is_read_by_importlib_metadata(tmp_path: Path) -> None:
    import zipfile

    a = _site(tmp_path / "a", SITE_A)
    archive = tmp_path / "z.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-0.1.dist-info/METADATA", "Name: zipped\nVersion: 0.1\n")
    fast, (ours, parsed), (versions, expected) = _compare([Path(HARNESS_ROOT), a, archive])
    assert not fast
    assert ours == parsed
    assert ours["zipped"] == "0.1"
    assert versions == expected


def test_tool_versions_are_asked_once_per_binary(tmp_path: Path) -> None:
    """With a cache folder, `gcc --version` runs once while the binary is the same: the
    next capture reads it back; a changed binary is asked again."""
    tools = tmp_path / "bin"
    tools.mkdir()
    calls = tmp_path / "calls.txt"
    gcc = tools / "gcc"

    def write_gcc(version: str) -> None:
        gcc.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'gcc (fake) {version}'\n")
        gcc.chmod(0o755)

    write_gcc("1.0")
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    cache = tmp_path / "cache"

    def gcc_line() -> object:
        info = probe_environment(sys.executable, torch_cache=cache, extra_env=env, with_torch=False)
        collected = info["collect_env"]
        assert isinstance(collected, dict)
        return collected["gcc"]

    assert gcc_line() == "gcc (fake) 1.0"
    assert gcc_line() == "gcc (fake) 1.0"
    assert calls.read_text().count("x") == 1  # the second capture did not run it
    assert (cache / "tools.json").is_file()
    write_gcc("2.00")  # another binary (its size and time changed)
    assert gcc_line() == "gcc (fake) 2.00"
    assert calls.read_text().count("x") == 2
    # Without a cache (`reprospec env`, doctor) every capture asks.
    sys_path = str(HARNESS_ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "reprospec_harness.envinfo", "--no-torch"],
        env={**env, "PYTHONPATH": sys_path},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["collect_env"]["gcc"] == "gcc (fake) 2.00"
    assert calls.read_text().count("x") == 3


def test_a_search_shares_one_capture_per_interpreter_packages_and_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside shared_captures(), the same question is answered by the first child: a search's
    runs (isolate, minimize, amplify, bisect) do not each start one to learn the same facts."""
    from reprospec.environment import probe

    children: list[list[str]] = []
    real_run = probe._run

    def counted(
        python: str, args: list[str], harness_root: Path, extra_env: dict[str, str] | None
    ) -> subprocess.CompletedProcess[str]:
        children.append(list(args))
        return real_run(python, args, harness_root, extra_env)

    monkeypatch.setattr(probe, "_run", counted)

    def ask(blocking: str) -> dict[str, Any]:
        return probe_environment(
            sys.executable, ["pyyaml"], with_torch=False,
            extra_env={"CUDA_LAUNCH_BLOCKING": blocking},
        )  # fmt: skip

    ask("1")
    ask("1")
    assert len(children) == 2  # outside a block: a child each time
    with probe.shared_captures():
        first = ask("1")
        first["env"]["CUDA_LAUNCH_BLOCKING"] = "changed by its caller"
        again = ask("1")
        assert len(children) == 3  # one child for the two
        assert again["env"]["CUDA_LAUNCH_BLOCKING"] == "1"  # a copy, not the caller's
        assert again["packages"] == first["packages"]
        with probe.shared_captures():  # a search inside a search (amplify's isolate)
            ask("1")
        assert len(children) == 3
        other = ask("0")
        assert len(children) == 4  # other variables: a capture of their own
        assert other["env"]["CUDA_LAUNCH_BLOCKING"] == "0"
        for _ in range(2):  # a failure is not kept: asked again, it is tried again
            with pytest.raises(InfraError):
                probe_environment("/nonexistent/python", [], with_torch=False)
        assert len(children) == 6
    ask("1")
    assert len(children) == 7  # the block's end forgot them


def test_the_capture_and_the_package_check_read_the_same_version_in_a_stale_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `python -m` puts the cwd first on sys.path as `python -c` does: the check left it
    # out, the capture did not, so doctor and the report's Environment mismatches named the
    # 99.1 of a stale dist-info in the cwd where the run's package check saw the venv's own.
    workdir = tmp_path / "wd"
    meta = workdir / "packaging-99.1.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 99.1\n")
    monkeypatch.chdir(workdir)
    captured: dict[str, Any] = probe_environment(sys.executable, ["packaging"], with_torch=False)
    checked = probe_installed(sys.executable, ["packaging"], cwd=workdir)
    assert captured["packages"]["packaging"] == checked.versions["packaging"] != "99.1"
