"""Environments built with uv: content hash, build once, reuse, checks, list and prune.

Real venvs and real installs: wheels made here (through --find-links), and one
small package from the index the machine's pip/uv configuration points at.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from reprospec import venvs
from reprospec.venvs import EnvBuildError, EnvRequest, IndexConfig, index
from tests.support.envs import envs_root, make_broken_sdist, make_wheel, uv_environment

DEMO = "reprospec-envdemo"


@pytest.fixture(autouse=True)
def _uv_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in uv_environment().items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    for version in ("1.0", "1.1"):
        make_wheel(folder, DEMO, version, f"VERSION = {version!r}\n")
    make_broken_sdist(folder, DEMO, "1.2")
    return folder


def request_for(packages: list[str], wheelhouse: Path | None = None) -> EnvRequest:
    links = (wheelhouse,) if wheelhouse is not None else ()
    return EnvRequest(venvs.find_interpreter(None), tuple(packages), venvs.user_index_config(links))


def run_in(env: venvs.Env, code: str) -> str:
    done = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_build_once_then_reuse_list_and_prune(tmp_path: Path, wheelhouse: Path) -> None:
    root = tmp_path / "envs"
    request = request_for([f"{DEMO}==1.0"], wheelhouse)
    events: list[venvs.EnvProgress] = []
    # A failed build's log a preflight kept (an earlier try of the same environment) goes
    # once it is built: it would name a failure that is no more.
    stale = venvs.failed_build_log(root, request.key())
    stale.parent.mkdir(parents=True)
    stale.write_text("error: an earlier try\n")
    first = venvs.ensure_env(request, root, progress=events.append, user="spec-a")
    assert not first.reused
    assert not stale.exists()
    assert first.path == root / request.key()
    assert first.installed == {DEMO: "1.0"}
    assert (
        run_in(first, "import reprospec_envdemo, sys; print(reprospec_envdemo.VERSION, sys.prefix)")
        == f"1.0 {first.path}"
    )
    stages = [e.stage for e in events]
    assert stages[0] == "create"
    assert "install" in stages
    assert stages[-1] == "done"
    assert any(e.stage == "output" and f"{DEMO}==1.0" in e.message for e in events)
    # Nothing half-built is left beside it.
    assert not list((root / venvs.TMP).iterdir())

    again = venvs.ensure_env(request, root, user="spec-b")
    assert again.reused
    assert again.path == first.path
    assert again.installed == first.installed

    (listed,) = venvs.list_envs(root)
    assert listed.key == request.key()
    assert listed.packages == (f"{DEMO}==1.0",)
    assert listed.used_by == ("spec-b", "spec-a")
    assert listed.size_bytes > 0
    assert venvs.prune_envs(root, older_than_s=3600) == []
    # A run using it (its attempts in it) holds it, and a prune leaves it; it
    # removed it under the attempt, which ended infra-error ("not installed where it ran").
    held = venvs.hold(root, listed.key)
    assert held is not None
    (busy,) = venvs.list_envs(root)
    assert busy.in_use
    assert venvs.prune_envs(root) == []
    assert venvs.prune_envs(root, dry_run=True) == []
    assert first.path.exists()
    held.close()
    assert not venvs.list_envs(root)[0].in_use
    assert [e.key for e in venvs.prune_envs(root, dry_run=True)] == [listed.key]
    assert first.path.exists()
    assert [e.key for e in venvs.prune_envs(root)] == [listed.key]
    assert not first.path.exists()
    assert venvs.list_envs(root) == []


def test_two_builders_of_one_environment_build_it_once(tmp_path: Path, wheelhouse: Path) -> None:
    root = tmp_path / "envs"
    request = request_for([f"{DEMO}==1.1"], wheelhouse)
    results: list[venvs.Env] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            results.append(venvs.ensure_env(request, root))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(env.reused for env in results) == [False, True]
    assert {env.path for env in results} == {root / request.key()}


def test_an_environment_changed_after_its_build_is_built_again(
    tmp_path: Path, wheelhouse: Path
) -> None:
    """A cached venv whose package was uninstalled (or replaced by another version) by hand
    was reused as it was: each run of its cells was infra-error, "is not installed", until
    its folder was removed, which nothing said. It is built again, in place, and says why."""
    root = tmp_path / "envs"
    request = request_for([f"{DEMO}==1.0"], wheelhouse)
    first = venvs.ensure_env(request, root)
    uv = venvs.uv_binary()
    subprocess.run([uv, "pip", "uninstall", "-q", "--python", str(first.python), DEMO], check=True)
    events: list[venvs.EnvProgress] = []
    again = venvs.ensure_env(request, root, progress=events.append)
    assert not again.reused
    assert run_in(again, "import reprospec_envdemo; print(reprospec_envdemo.VERSION)") == "1.0"
    said = [e.message for e in events if e.stage == "check"]
    assert said[0] == (
        f"{first.path} no longer holds what it was built with ({DEMO} is gone): building it again"
    )
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(first.python), "--no-index",
         "--find-links", str(wheelhouse), f"{DEMO}==1.1"],
        check=True,
    )  # fmt: skip
    events.clear()
    third = venvs.ensure_env(request, root, progress=events.append)
    assert not third.reused
    assert f"({DEMO} is 1.1, built with 1.0)" in events[0].message
    # Intact, it is reused as before.
    assert venvs.ensure_env(request, root).reused


def test_a_resolver_that_picks_another_version_is_refused(
    tmp_path: Path, wheelhouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An organisation-wide override file: uv installs 1.1 when 1.0 is asked, and says nothing.
    overrides = tmp_path / "overrides.txt"
    overrides.write_text(f"{DEMO}==1.1\n")
    monkeypatch.setenv("UV_OVERRIDE", str(overrides))
    root = tmp_path / "envs"
    request = request_for([f"{DEMO}==1.0"], wheelhouse)
    with pytest.raises(EnvBuildError) as caught:
        venvs.ensure_env(request, root)
    assert f"{DEMO} 1.1 is installed (the cell needs {DEMO}==1.0)" in str(caught.value)
    assert caught.value.exit_code == 3
    assert venvs.list_envs(root) == []
    assert not (root / request.key()).exists()
    assert not list((root / venvs.TMP).iterdir())


def test_a_version_that_cannot_be_installed_says_why(tmp_path: Path, wheelhouse: Path) -> None:
    root = tmp_path / "envs"
    with pytest.raises(EnvBuildError) as caught:
        venvs.ensure_env(request_for([f"{DEMO}==1.2"], wheelhouse), root)
    message = str(caught.value)
    assert message.startswith(f"cannot install {DEMO}==1.2:")
    assert venvs.list_envs(root) == []


def test_an_index_package_is_installed_and_kept_between_test_runs() -> None:
    # The CI workspace keeps envs_root(): after the first run this is a reuse, no network.
    request = request_for(["sqlparse==0.3.1"])
    env = venvs.ensure_env(request, envs_root() / "envs", user="test-envs")
    assert env.installed["sqlparse"] == "0.3.1"
    assert run_in(env, "import sqlparse; print(sqlparse.__version__)") == "0.3.1"


def test_the_hash_names_what_changes_the_environment() -> None:
    python = venvs.find_interpreter(None)
    base = EnvRequest(python, ("a==1", "b==2"))
    assert base.key() == EnvRequest(python, ("b==2", "a==1")).key()
    others = [
        EnvRequest(python, ("a==1", "b==3")),
        EnvRequest(venvs.Interpreter(python.path, "9.9.9"), ("a==1", "b==2")),
        EnvRequest(python, ("a==1", "b==2"), IndexConfig(index_url="https://example.invalid/s")),
        EnvRequest(python, ("a==1", "b==2"), exclude_newer="2024-01-01T00:00:00Z"),
        EnvRequest(python, ("a==1", "b==2"), IndexConfig(uv_settings=(("UV_OVERRIDE", "o"),))),
    ]
    assert len({base.key(), *(o.key() for o in others)}) == 1 + len(others)


def test_index_configuration_is_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = https://mirror.invalid/simple\n"
        "extra-index-url = https://a.invalid/simple https://b.invalid/simple\n"
        "find-links = /srv/wheels\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    for name in (
        "PIP_FIND_LINKS",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        *index.UV_INDEX_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user uv.toml
    index.pip_config_cached.cache_clear()
    try:
        pip = venvs.user_index_config([tmp_path])
        assert pip.source == "pip"
        assert pip.uv_args() == (
            "--index-url",
            "https://mirror.invalid/simple",
            "--extra-index-url",
            "https://a.invalid/simple",
            "--extra-index-url",
            "https://b.invalid/simple",
            "--index-strategy",
            "unsafe-best-match",
            "--find-links",
            "/srv/wheels",
            "--find-links",
            str(tmp_path),
        )
        # pip reads its own configuration: only reprospec's --find-links is passed to it.
        assert pip.pip_args() == ("--find-links", str(tmp_path))

        monkeypatch.setenv("UV_INDEX_URL", "https://uv-mirror.invalid/simple")
        uv = venvs.user_index_config()
        assert uv.source == "uv"
        assert uv.uv_args() == ()
        assert uv.pip_args() == ("--index-url", "https://uv-mirror.invalid/simple")
        assert uv.to_dict() != pip.to_dict()
    finally:
        index.pip_config_cached.cache_clear()


def test_an_interpreter_that_fails_in_bytes_not_utf8_is_said_so(tmp_path: Path) -> None:
    # Its message read strictly: an internal UnicodeDecodeError, not the build's error.
    from reprospec.venvs.build import find_interpreter

    python = tmp_path / "python3"
    python.write_bytes(b"#!/bin/sh\nprintf 'erreur \\351 fatale\\n' >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(EnvBuildError, match=r"does not run: .*erreur \ufffd fatale"):
        find_interpreter(str(python))


def test_an_interpreter_that_prints_before_its_version_says_the_version(tmp_path: Path) -> None:
    # A .pth file or a wrapper may print first: the version was all of stdout, the line
    # before it too (`hello\n3.11.7`), in the environment's key and meta.json.
    from reprospec.venvs.build import find_interpreter

    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\necho hello\necho 3.11.7\n")
    python.chmod(0o755)
    assert find_interpreter(str(python)).version == "3.11.7"
    silent = tmp_path / "silent" / "python3"
    silent.parent.mkdir()
    silent.write_text("#!/bin/sh\necho hello\n")
    silent.chmod(0o755)
    with pytest.raises(EnvBuildError, match=r"python3 \(no version printed\)$"):
        find_interpreter(str(silent))


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("echo 'pyenv: python3.10: command not found' >&2; exit 127", "does not run: exit 127"),
        ("echo 2.7.18", "is Python 2.7.18"),
    ],
)
def test_an_interpreter_that_gives_no_python_3_is_worded_alike_on_both_runners(
    tmp_path: Path, script: str, why: str
) -> None:
    # The local runner said `(exit 127: <its last line>)` where the venv runner said
    # `interpreter PATH does not run: <uv's reading>`, and only the local one refused a
    # Python 2: each asked its version with its own code.
    from reprospec.environment.interpreter import python3_version
    from reprospec.errors import InfraError
    from reprospec.venvs.build import find_interpreter

    python = tmp_path / "python3"
    python.write_text(f"#!/bin/sh\n{script}\n")
    python.chmod(0o755)
    with pytest.raises(InfraError) as local:
        python3_version(str(python))
    with pytest.raises(EnvBuildError) as venv:
        find_interpreter(str(python))
    assert str(local.value) == str(venv.value), (local.value, venv.value)
    assert str(venv.value).startswith(f"not a Python 3 interpreter: {python} ({why}"), venv.value
