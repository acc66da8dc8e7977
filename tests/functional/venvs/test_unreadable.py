"""An environment whose reprospec-env.json cannot be read: `envs list` said "no
environments in DIR" beside its folder, and `envs prune` never removed it. It is listed as
unreadable, with its size and path, and pruned by the usual rules; a folder that is no
environment's is left alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprospec import venvs
from tests.support.cli import CliResult, run_cli
from tests.support.envs import make_wheel, uv_environment

DEMO = "reprospec-envdemo"


def envs_cli(root: Path, tmp_path: Path, *args: str) -> CliResult:
    env = {
        **uv_environment(),
        venvs.ENVS_VARIABLE: str(root),
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "COLUMNS": "400",
    }
    done = run_cli(tmp_path / "out", "envs", *args, env=env, timeout=60)
    assert done.code == 0, done.stderr
    return done


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("{bad", "its reprospec-env.json is not JSON (Expecting property name"),
        ("[1, 2]", "its reprospec-env.json is not a JSON object"),
    ],
)
def test_an_unreadable_environment_is_listed_and_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str, why: str
) -> None:
    for key, value in uv_environment().items():
        monkeypatch.setenv(key, value)
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    root = tmp_path / "envs"
    request = venvs.EnvRequest(
        venvs.find_interpreter(None), (f"{DEMO}==1.0",), venvs.user_index_config((wheels,))
    )
    built = venvs.ensure_env(request, root, user="spec-a")
    (built.path / venvs.META).write_text(damage)
    # Something else kept in the folder: no environment, never listed nor removed.
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("keep me\n")

    (listed,) = venvs.list_envs(root)
    assert listed.key == request.key()
    assert listed.unreadable.startswith(why)
    assert listed.size_bytes > 0
    assert listed.used_by == ("spec-a",)

    text = envs_cli(root, tmp_path, "list").stdout
    assert "no environments" not in text
    assert f"unreadable: {why}" in text
    assert str(built.path) in text
    assert "1 environment," in text
    (row,) = json.loads(envs_cli(root, tmp_path, "list", "--format", "json").stdout)
    assert row["path"] == str(built.path)
    assert row["unreadable"].startswith(why)
    assert row["size_bytes"] == listed.size_bytes

    # Its usual rules: used just now, so a prune of month-old ones keeps it.
    envs_cli(root, tmp_path, "prune")
    assert built.path.is_dir()
    # A run holding it keeps it from --all too.
    held = venvs.hold(root, request.key())
    assert held is not None
    with held:
        kept = envs_cli(root, tmp_path, "prune", "--all")
        assert f"kept {request.key()}: in use by a run now" in kept.stderr
        assert built.path.is_dir()
    done = envs_cli(root, tmp_path, "prune", "--all")
    assert f"removed {request.key()}  Python ?  unreadable: {why}" in done.stdout
    assert "removed 1 environment," in done.stderr
    assert not built.path.exists()
    assert (root / "notes" / "todo.txt").read_text() == "keep me\n"


def test_an_environment_whose_interpreter_is_gone_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter a venv was built on removed since (a pyenv version uninstalled): its
    bin/python links to nothing. It was left out of list and prune like an unreadable one;
    it is listed, saying where its interpreter was."""
    for key, value in uv_environment().items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "envs"
    request = venvs.EnvRequest(venvs.find_interpreter(None), (), venvs.user_index_config())
    built = venvs.ensure_env(request, root)
    python = built.path / "bin" / "python"
    python.unlink()
    python.symlink_to(tmp_path / "gone" / "python3")
    (listed,) = venvs.list_envs(root)
    assert (
        listed.unreadable
        == f"its bin/python links to {tmp_path / 'gone' / 'python3'}, which is gone"
    )
    assert venvs.prune_envs(root) == [listed]
    assert not built.path.exists()


def test_a_run_builds_an_unreadable_environment_again_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was built again in place without a word, as if new."""
    for key, value in uv_environment().items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "envs"
    request = venvs.EnvRequest(venvs.find_interpreter(None), (), venvs.user_index_config())
    built = venvs.ensure_env(request, root)
    (built.path / venvs.META).write_text("{bad")
    events: list[venvs.EnvProgress] = []
    again = venvs.ensure_env(request, root, progress=events.append)
    assert not again.reused
    said = [e.message for e in events if e.stage == "check"]
    assert said[0].startswith(
        f"{built.path}: its reprospec-env.json is not JSON (Expecting property name"
    ), said
    assert said[0].endswith(": building it again")
    assert venvs.read_meta(again.path) is not None
