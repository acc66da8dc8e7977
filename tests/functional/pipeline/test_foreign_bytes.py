"""Bytes that are not UTF-8, from a user's machine and program, through a whole run: nothing
a user ran is lost to a UnicodeDecodeError or UnicodeEncodeError; an undecodable byte shows as
U+FFFD where it is shown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: foreign
command: python -c "raise SystemExit(0)"
"""


def test_a_variable_of_the_engines_environment_that_is_not_utf8_is_shown_replaced(
    cli: Cli, tmp_path: Path
) -> None:
    # `env TORCH_X=$'a\\x80b' reprospec run` (a variable the capture records) ended with
    # "internal error: UnicodeEncodeError" writing results.json, the run lost.
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    ran = cli("run", str(spec), env={"TORCH_X": "a\udc80b"})
    assert ran.code == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    folder = ran.latest_run()
    results = json.loads((folder / "results.json").read_bytes().decode("utf-8"))
    assert results["environment"]["env"]["TORCH_X"] == "a\ufffdb"
    assert "| TORCH_X | `a\ufffdb` |" in (folder / "report.md").read_bytes().decode("utf-8")


def test_a_spec_or_store_whose_path_is_not_utf8_is_refused_before_anything_runs(
    cli: Cli, tmp_path: Path
) -> None:
    # A spec in a folder named d$'\xff'ir ran its attempts, then ended with "internal error:
    # UnicodeEncodeError" storing its path, the run lost; --out in one did the same.
    folder = tmp_path / "d\udcffir"
    folder.mkdir()
    (folder / "s.yaml").write_text(SPEC, encoding="utf-8")
    refused = cli("run", str(folder / "s.yaml"), "--out", str(tmp_path / "o"))
    assert refused.code == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert "internal error" not in refused.stderr
    assert f"{tmp_path}/d\\xffir/s.yaml: the spec's path is not UTF-8 (byte 0xff)" in (
        refused.stderr
    )
    assert not (tmp_path / "o").exists()
    # Every verb: a search's id (amplify, isolate, minimize) and materialize's run.sh took
    # it as the same internal error; validate passed the spec run then refused.
    for verb in (["validate"], ["amplify"], ["materialize", "-o", "m"]):
        said = cli(*verb, str(folder / "s.yaml"), cwd=tmp_path)
        assert said.code == 2, (verb, said.stderr)
        assert "the spec's path is not UTF-8 (byte 0xff)" in said.stdout + said.stderr, verb
        assert "internal error" not in said.stderr, verb
    (tmp_path / "s.yaml").write_text(SPEC, encoding="utf-8")
    # Refused before a search's first round, or minimize's whole search that then
    # refused its own DIR's spec.
    for verb in (["run"], ["amplify"], ["minimize", "-o", str(folder / "m")]):
        out = cli(*verb, str(tmp_path / "s.yaml"), "--out", str(folder / "o"))
        assert out.code == 2, (verb, out.stderr)
        assert "path is not UTF-8 (byte 0xff)" in out.stderr, verb
        assert "round 1" not in out.stderr
        assert not (folder / "o").exists()
        assert not (folder / "m").exists()


@pytest.mark.parametrize("public", ["", "  public_env: [X]\n"])
def test_a_value_read_by_env_that_is_not_utf8_reaches_the_program_and_is_masked(
    cli: Cli, tmp_path: Path, public: str
) -> None:
    # `${{ env.X }}` of a short (or a public) value is shown in the outputs, and one not
    # UTF-8 ended the run with an internal UnicodeEncodeError writing results.json once the
    # attempts had run.
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"reprospec: 1\nname: read\nenvironment:\n{public}  env:\n    X: ${{{{ env.X }}}}\n"
        "command: python -c \"import os, sys; sys.exit(os.environb[b'X'] != b'\\\\x80z')\"\n",
        encoding="utf-8",
    )
    ran = cli("run", str(spec), env={"X": "\udc80z"})
    assert ran.code == 0, ran.stderr
    folder = ran.latest_run()
    results = (folder / "results.json").read_bytes().decode("utf-8")
    assert '"X": "***"' in results
    (folder / "report.md").read_bytes().decode("utf-8")


def test_a_home_whose_path_is_not_utf8_is_no_label_and_the_run_is_written(
    cli: Cli, tmp_path: Path
) -> None:
    # HOME=/tmp/h$'\x80' was kept as the `<home>` label in results.json's `paths`: an
    # internal UnicodeEncodeError once the attempts had run, the run lost.
    home = tmp_path / "h\udc80"
    home.mkdir()
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    ran = cli("run", str(spec), env={"HOME": str(home)})
    assert ran.code == 0, ran.stderr
    results = json.loads((ran.latest_run() / "results.json").read_bytes().decode("utf-8"))
    assert "<home>" not in results["paths"].values()


def test_a_python_or_wheelhouse_whose_path_is_not_utf8_is_refused_before_anything_runs(
    cli: Cli, tmp_path: Path
) -> None:
    # --python /tmp/py$'\x80'/python ended with an internal UnicodeEncodeError (the local
    # runner's shims, then the run's recorded options).
    folder = tmp_path / "py\udc80"
    folder.mkdir()
    (folder / "python").symlink_to(sys.executable)
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    ran = cli("run", str(spec), "--python", str(folder / "python"))
    assert ran.code == 2, ran.stderr
    assert "--python " in ran.stderr
    assert "py\\x80/python: the path is not UTF-8 (byte 0x80)" in ran.stderr
    assert not (ran.out / "runs").exists()
    links = cli("run", str(spec), "--find-links", str(folder))
    assert links.code == 2, links.stderr
    assert "--find-links " in links.stderr
    assert "py\\x80: the path is not UTF-8 (byte 0x80)" in links.stderr


def test_a_workdir_linked_to_a_folder_whose_path_is_not_utf8_is_a_located_error(
    cli: Cli, tmp_path: Path
) -> None:
    # `workdir: linked` to d$'\xff'ir ran every attempt, then ended with an internal
    # UnicodeEncodeError recording its real path.
    folder = tmp_path / "d\udcffir"
    folder.mkdir()
    (tmp_path / "linked").symlink_to(folder)
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC + "environment:\n  workdir: linked\n", encoding="utf-8")
    ran = cli("run", str(spec))
    assert ran.code == 2, ran.stderr
    assert "s.yaml:5:12: environment.workdir: " in ran.stderr
    assert "d\\xffir: the folder's path is not UTF-8 (byte 0xff)" in ran.stderr
    assert not (ran.out / "runs").exists()


def test_nvidia_smis_foreign_bytes_are_read_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU's name in bytes that are not UTF-8 (`nvidia-smi -L`) ended every run's GPU
    check with a UnicodeDecodeError. No GPU here: a fake nvidia-smi on PATH prints it."""
    from reprospec.pipeline.machinegpus import nvidia_smi_list

    tool = tmp_path / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\n"
        "printf 'GPU 0: NVIDIA H\\200 (UUID: GPU-0a1b2c3d-0000-0000-0000-000000000000)\\n'\n"
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    gpus, problem = nvidia_smi_list()
    assert problem == ""
    assert [gpu.name for gpu in gpus] == ["NVIDIA H\ufffd"]
