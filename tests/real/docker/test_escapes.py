"""No container of an attempt outlives its engine: SIGKILLed engines and resume, on a real Docker
engine."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reprospec.core.words import plural
from reprospec.process import leftovers
from tests.support.cli import ROOT
from tests.support.engine import ENV, kill_with_its_watchdog, wait_until

PY = sys.executable


def _start_docker_engine(
    tmp_path: Path, kill_after: list[int], spec_text: str
) -> tuple[subprocess.Popen[str], Path, str]:
    """A docker run of `spec_text`, once its attempt wrote STARTED: (engine, out, container)."""
    from reprospec.runners.docker import image
    from tests.support.docker import CLIENT, require_image

    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = tmp_path / "docker.yaml"
    spec.write_text(spec_text)
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [PY, "-m", "reprospec", "run", str(spec), "--out", str(out), "--runner", "docker"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV,
    )  # fmt: skip
    kill_after.append(engine.pid)
    assert wait_until(lambda: (tmp_path / "STARTED").exists() or engine.poll() is not None, 300)
    assert engine.poll() is None, engine.communicate()[1]
    (record,) = out.glob(f"runs/*/cells/*/*/{leftovers.INFLIGHT}")
    name = json.loads(record.read_text())["container"]
    assert name
    return engine, out, name


@pytest.mark.docker
def test_an_engine_killed_with_sigkill_takes_its_container_along(
    tmp_path: Path, kill_after: list[int]
) -> None:
    from tests.support.docker import CLIENT, container_names

    engine, _, name = _start_docker_engine(tmp_path, kill_after, textwrap.dedent("""\
        reprospec: 1
        name: killed-docker-engine
        command: python3 -c "import time; open('STARTED', 'w').close(); time.sleep(1000)"
        run: {timeout: 600s}
        expect: {outcome: hang}
        """))  # fmt: skip
    assert CLIENT.containers.get(name).status == "running"
    engine.kill()
    engine.wait()

    def removed() -> bool:
        return not container_names(name=name)

    assert wait_until(removed, 120), f"container {name} outlived its engine"


@pytest.mark.docker
def test_resume_removes_the_container_a_dead_engine_and_its_watchdog_left(
    tmp_path: Path, kill_after: list[int]
) -> None:
    from tests.support.docker import CLIENT, container_names

    # The first attempt hangs; the resumed one finds STARTED and exits at once.
    engine, out, name = _start_docker_engine(tmp_path, kill_after, textwrap.dedent("""\
        reprospec: 1
        name: dead-docker-engine
        command: >-
          python3 -c "import os, sys, time; os.path.exists('STARTED') and sys.exit(0);
          open('STARTED', 'w').close(); time.sleep(1000)"
        run: {timeout: 600s}
        expect: {outcome: hang}
        """))  # fmt: skip
    kill_with_its_watchdog(engine)
    assert CLIENT.containers.get(name).status == "running"
    recorded = [json.loads(p.read_text())["container"] for p in out.rglob("inflight*.json")]
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    resumed = subprocess.run(
        [PY, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=ENV,
    )  # fmt: skip
    assert resumed.returncode == 1, resumed.stderr  # the resumed attempt passed: no hang
    ended = f"{plural(len(recorded), 'container')} running: ended before resuming"
    assert ended in resumed.stderr
    assert not list(out.glob("runs/*/inflight*.json"))
    assert not container_names(name=name)
    # Every container the dead engine had recorded (the environment capture's too) is gone.
    for other in recorded:
        assert not container_names(name=other), other
