"""A venv build stopped (Ctrl-C) or killed (SIGKILL) part way: what it leaves, and what is said.

Real engines (`python -m reprospec run --runner venv`), real uv, real signals: the package is
an sdist made here whose build takes seconds (tests/support/envs.make_slow_sdist), installed
from a local folder with a uv cache of the test's own, so that each build runs its backend.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from reprospec import venvs
from tests.support.cli import CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD, ROOT, interrupt_when
from tests.support.envs import make_slow_sdist

SLOW = "reprospec-slowdemo"
BUILD_S = 6.0


def _setup(
    tmp_path: Path, command: str = "import reprospec_slowdemo"
) -> tuple[list[str], dict[str, str], Path, Path]:
    """The command of a run whose one environment holds the slow sdist (its cell runs
    `python -c COMMAND`), its variables, the environments folder and the file the build
    touches as it begins."""
    started = tmp_path / "build-started"
    wheels = tmp_path / "wheels"
    make_slow_sdist(wheels, SLOW, "1.0", started, BUILD_S)
    spec = tmp_path / "slow.yaml"
    spec.write_text(
        "reprospec: 1\nname: slow\n"
        f'environment: {{packages: ["{SLOW}==1.0"]}}\n'
        f'command: python -c "{command}"\n'
        "expect: {outcome: pass}\n"
    )
    root = tmp_path / "envs"
    env = {
        venvs.ENVS_VARIABLE: str(root),
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        # `envs prune` prunes the docker runner's images too: never this machine's.
        "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}",
    }
    argv = [sys.executable, "-m", "reprospec", "run", str(spec), "--runner", "venv"]
    argv += ["--find-links", str(wheels), "--out", str(tmp_path / "out")]
    return argv, env, root, started


def _envs(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reprospec", "envs", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **env},
        timeout=120,
        check=False,
    )


def _left(root: Path) -> list[Path]:
    tmp = root / venvs.TMP
    return sorted(tmp.iterdir()) if tmp.is_dir() else []


def test_a_ctrl_c_during_a_build_removes_its_folder_and_says_no_run_was_stored(
    tmp_path: Path,
) -> None:
    """The engine's uv went on after a Ctrl-C the engine alone received, and filled
    the half-built venv after the engine had removed it (116 MB left in `.tmp`, which no
    listing named); and the 130 read as `--resume RUN` would finish a run never stored."""
    argv, env, root, started = _setup(tmp_path)
    done = interrupt_when(argv, started.exists, env=env)
    stopped = time.time()
    assert done.code == 130, done.stderr
    # Promptly: the build it stopped had seconds to go.
    assert stopped - started.stat().st_mtime < BUILD_S - 1, done.stderr
    assert "no run was stored (nothing to resume); run the spec again" in done.stderr
    assert "--resume" not in done.stderr
    assert not (tmp_path / "out" / "runs").exists()
    # Past the end the stopped build would have had, and its install: nothing refilled it.
    time.sleep(BUILD_S + 2)
    assert _left(root) == []
    assert [e.key for e in venvs.list_envs(root)] == []


def test_a_ctrl_c_another_thread_got_stops_the_build_at_once(tmp_path: Path) -> None:
    # The engine read uv's output on its main thread with a blocking read, which a SIGINT
    # the kernel handed to another thread does not wake: uv, silent while the sdist built,
    # went on to install it, and the stop was obeyed only after.
    argv, env, root, started = _setup(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD, str(started), *argv[3:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **env},
        timeout=120,
        check=False,
    )
    stopped = time.time()
    assert done.returncode == 130, done.stdout + done.stderr
    # Promptly: the build it stopped had seconds to go (it read 6 s and more, the build's end).
    assert stopped - started.stat().st_mtime < BUILD_S - 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    time.sleep(BUILD_S + 2)
    assert _left(root) == []
    assert [e.key for e in venvs.list_envs(root)] == []


def test_a_killed_build_is_listed_counted_and_swept_once_nothing_builds_it(
    tmp_path: Path,
) -> None:
    """SIGKILL leaves the half-built venv. While the killed engine's uv still builds in it,
    it is `being built now` and neither prune nor a sweep touches it (its uv holds the
    build lock); after, `envs list` names it with its size, `prune --dry-run` counts it,
    and the next build removes it."""
    argv, env, root, started = _setup(tmp_path)
    engine = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert engine.poll() is None, "the engine ended before the build began"
            assert time.monotonic() < deadline, "the build never began"
            time.sleep(0.02)
    finally:
        engine.kill()
        engine.wait(timeout=30)
    (folder,) = _left(root)
    # Its uv lives on, building: another run's live build, which nothing may remove.
    listed = _envs(env, "list")
    assert f"unfinished build {folder}:" in listed.stdout, listed
    assert "being built now" in listed.stdout
    pruned = _envs(env, "prune", "--all")
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 0 environments, 0 B" in pruned.stderr
    assert venvs.sweep_unfinished(root) == []
    assert folder.exists()

    deadline = time.monotonic() + 60
    while any(u.building for u in venvs.list_unfinished(root)):
        assert time.monotonic() < deadline, "the killed engine's uv never ended"
        time.sleep(0.1)
    listed = _envs(env, "list")
    assert f"unfinished build {folder}:" in listed.stdout
    assert "left by a build that was killed" in listed.stdout
    (row,) = json.loads(_envs(env, "list", "--format", "json").stdout)
    assert row["kind"] == "unfinished-build"
    assert row["path"] == str(folder)
    assert row["size_bytes"] > 0
    assert row["building"] is False
    dry = _envs(env, "prune", "--all", "--dry-run")
    assert f"would remove unfinished build {folder.name}" in dry.stdout
    assert "would remove 0 environments and 1 unfinished build, " in dry.stderr
    assert folder.exists()

    again = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **env},
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert _left(root) == []
    assert len(venvs.list_envs(root)) == 1


def test_a_ctrl_c_while_a_resume_builds_leaves_the_run_as_it_was_and_says_how_to_finish_it(
    tmp_path: Path,
) -> None:
    """A `--resume` stopped while it builds again the environment removed since: the run it
    was to finish is still the interrupted one, and the command that finishes it is given
    (where the 130 said only `interrupted`)."""
    # An attempt that lasts: the first Ctrl-C stops the run with it, `interrupted`.
    argv, env, root, started = _setup(tmp_path, "import reprospec_slowdemo, time; time.sleep(60)")
    out = tmp_path / "out"
    first = interrupt_when(
        argv, lambda: bool(list(out.glob("runs/*/cells/*/1"))), env=env, wait_s=120
    )
    assert first.code == 130, first.stderr
    (run,) = (out / "runs").iterdir()
    assert f"reprospec run --resume {run.name} --out {out}" in first.stderr
    # Its environment and the wheel uv built for it gone: the resume builds it again.
    for env_folder in venvs.list_envs(root):
        shutil.rmtree(env_folder.path)
    shutil.rmtree(env["UV_CACHE_DIR"])
    started.unlink()
    resume = [sys.executable, "-m", "reprospec", "run", "--resume", run.name, "--out", str(out)]
    done = interrupt_when(resume, started.exists, env=env)
    assert done.code == 130, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said == (
        "reprospec: interrupted while getting the cells' environments ready, before the "
        f"resumed run began: run {run.name} is as it was; finish it with: "
        f"reprospec run --resume {run.name} --out {out}"
    )
    assert [p.name for p in (out / "runs").iterdir()] == [run.name]
