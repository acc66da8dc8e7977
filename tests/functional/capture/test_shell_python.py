"""`reprospec capture -- python app.py` typed in a shell: the `python` it runs is the shell's
where that is an environment's (a venv activated in the workdir), and capture says which ran
every time the shell's differs from reprospec's own; the header names a venv in the workdir
relative to it, and the title's frame is the workdir's code, not a library installed in the
venv there. Real venvs (uv installs a wheel made here), real captures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import Cli, CliResult

APP = "import nu_only_pkg\n\nnu_only_pkg.main()\n"


def _workdir_venv(tmp_path: Path) -> Path:
    """A workdir with a real venv in it, `.venv`, holding `nu-only-pkg` 1.2.3 (which the
    engine's own interpreter lacks), whose `main` raises ValueError in its own code."""
    from uv import find_uv_bin

    from tests.support.envs import make_wheel, uv_environment

    work = tmp_path / "proj"
    work.mkdir()
    venv = work / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    module = "VERSION = '1.2.3'\n\n\ndef main():\n    raise ValueError(VERSION)\n"
    wheel = make_wheel(tmp_path / "wheels", "nu-only-pkg", "1.2.3", module)
    install = [str(find_uv_bin()), "pip", "install", "--python", str(venv / "bin" / "python")]
    subprocess.run(
        [*install, "--no-index", str(wheel)], check=True, capture_output=True,
        env={**os.environ, **uv_environment()},
    )  # fmt: skip
    (work / "app.py").write_text(APP)
    return work


def _capture(cli: Cli, work: Path, *options: str, env: dict[str, str] | None = None) -> CliResult:
    out = work.parent / "out"
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), *options, "--", "python", "app.py",
        cwd=work, env=env,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    return result


def test_an_activated_venvs_python_runs_the_command(cli: Cli, tmp_path: Path) -> None:
    # `source .venv/bin/activate; reprospec capture -- python app.py` ran reprospec's own
    # interpreter, silently, and pinned its packages (packaging 26.4 where the venv had 23.2).
    work = _workdir_venv(tmp_path)
    activated = {
        "PATH": os.pathsep.join([str(work / ".venv" / "bin"), os.environ.get("PATH", "")]),
        "VIRTUAL_ENV": str(work / ".venv"),
    }
    result = _capture(cli, work, env=activated)
    assert "packages it imported: nu-only-pkg==1.2.3" in result.stdout, result.stdout
    assert (
        "`python` in the command ran .venv/bin/python, your shell's (an environment's, first "
        "on PATH), as --python .venv/bin/python does, whose packages the spec pins"
    ) in result.stdout
    assert "verdict reproduced" in result.stdout, result.stdout
    text = (work / "spec.yaml").read_text()
    # Named from the workdir: no path of this machine in the spec a bundle carries.
    assert str(tmp_path) not in text
    assert "# It ran with .venv/bin/python, the `python` of your shell's PATH" in text
    document = load_spec(str(work / "spec.yaml")).document
    assert document["command"] == "python app.py"
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert environment["packages"] == ["nu-only-pkg==1.2.3"]


def test_the_title_names_the_workdirs_frame_not_its_venvs(cli: Cli, tmp_path: Path) -> None:
    # The venv lies in the workdir: its library's frame was taken for the workdir's code,
    # `app.py: ValueError in main (.venv/lib/python3.11/site-packages/nu_only_pkg.py:5)`.
    work = _workdir_venv(tmp_path)
    _capture(cli, work, "--no-verify", "--python", str(work / ".venv" / "bin" / "python"))
    text = (work / "spec.yaml").read_text()
    assert load_spec(str(work / "spec.yaml")).document["title"] == (
        "app.py: ValueError in <module> (app.py:3)"
    )
    # --python inside the workdir is written from it, as the one PATH gave is.
    assert "# It ran with --python .venv/bin/python, whose packages it pins" in text
    assert str(tmp_path) not in text


def test_a_shell_python_not_taken_is_said_every_time(cli: Cli, tmp_path: Path) -> None:
    # The shell's `python` is another interpreter that is no environment's (the system's):
    # not taken, but said, with how to run it (it was said only where an import failed).
    shell_bin = tmp_path / "system" / "bin"
    shell_bin.mkdir(parents=True)
    (shell_bin / "python").symlink_to(os.path.realpath(sys.executable))
    work = tmp_path / "proj"
    work.mkdir()
    (work / "app.py").write_text("raise ValueError('boom')\n")
    path = os.pathsep.join([str(shell_bin), os.environ.get("PATH", "")])
    result = _capture(cli, work, "--no-verify", env={"PATH": path})
    assert (
        "`python` in the command ran reprospec's own interpreter "
        f"{sys.executable}, not {shell_bin / 'python'}, which your shell runs: "
        f"pass --python {shell_bin / 'python'} to run that one"
    ) in result.stdout, result.stdout


def test_a_projects_own_code_under_a_lib_python_folder_is_its_code(
    cli: Cli, tmp_path: Path
) -> None:
    # The title took any frame under `lib/python3.X/` or `site-packages/` in the workdir for a
    # library's: a project's own `lib/python3.11/myapp/core.py`, put on sys.path by hand, no
    # environment's root above it, was passed over for main.py's call (a late review).
    work = tmp_path / "tl"
    (work / "lib" / "python3.11" / "myapp").mkdir(parents=True)
    (work / "lib" / "python3.11" / "myapp" / "__init__.py").write_text("")
    (work / "lib" / "python3.11" / "myapp" / "core.py").write_text(
        "def parse(s):\n    return int(s)\n"
    )
    (work / "app.py").write_text(
        "import sys\nsys.path.insert(0, 'lib/python3.11')\nfrom myapp.core import parse\n"
        "parse('x')\n"
    )
    _capture(cli, work, "--no-verify")
    assert load_spec(str(work / "spec.yaml")).document["title"] == (
        "app.py: ValueError in parse (lib/python3.11/myapp/core.py:2)"
    )


def test_an_env_prefix_that_keeps_the_path_still_runs_the_shells_venv(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture -- env FOO=1 python app.py` with a venv activated: any `env` before the program
    # was read as one setting its PATH, and reprospec's own interpreter ran, silently.
    work = _workdir_venv(tmp_path)
    activated = {
        "PATH": os.pathsep.join([str(work / ".venv" / "bin"), os.environ.get("PATH", "")]),
        "VIRTUAL_ENV": str(work / ".venv"),
    }
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(tmp_path / "out"), "--no-verify", "--",
        "env", "FOO=1", "python", "app.py", cwd=work, env=activated,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert "packages it imported: nu-only-pkg==1.2.3" in result.stdout, result.stdout
    assert "`python` in the command ran .venv/bin/python, your shell's" in result.stdout
