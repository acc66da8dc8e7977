"""A uv that `run_uv` stops (its timeout, a Ctrl-C) leaves none of the build backends it
started: uv and they are one process group of their own, which the stop ends.

Real uv, a real PEP 517 backend: an sdist made here whose wheel takes minutes to build
(tests/support/envs.make_slow_sdist), resolved (`uv pip compile`, which builds it to read its
metadata) from a local folder with a uv cache of the test's own, so that the backend runs.
Its processes are told from every other test's by a variable only this test sets, which uv
passes on to the backend.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprospec import venvs
from reprospec.venvs import build
from reprospec.venvs.resolve import resolve
from tests.support.cli import CliResult, interrupt_when
from tests.support.envs import make_slow_sdist

SLOW = "reprospec-uvstopped"
# Far longer than the test: a backend left running is still there when it is looked for.
BUILD_S = 300.0
MARK = "REPROSPEC_TEST_UV_STOPPED"


def _marked(needle: bytes) -> list[int]:
    """This user's live processes (this one aside) whose environment holds `needle`."""
    found = []
    for name in os.listdir("/proc"):  # noqa: PTH208
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            # A zombie's environment reads empty: only a live process is found.
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue  # ended meanwhile, or another user's
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def _left_after_stop(needle: bytes) -> list[int]:
    """The marked processes still alive once a SIGKILL sent to them has had time to land
    (up to 30 s of a loaded machine; none left ends the wait at once)."""
    deadline = time.monotonic() + 30
    while (left := _marked(needle)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str], bytes]:
    """The folder of the slow sdist, the file its build touches as it begins, the variables
    of its resolve (the marker among them) and the marker as /proc shows it."""
    wheels = tmp_path / "wheels"
    started = tmp_path / "build-started"
    make_slow_sdist(wheels, SLOW, "1.0", started, BUILD_S)
    (tmp_path / "index").mkdir()
    marker = f"{tmp_path.name}-{os.urandom(8).hex()}"
    env = {
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_INDEX_URL": (tmp_path / "index").as_uri(),  # nothing of the network's
        MARK: marker,
    }
    return wheels, started, env, f"{MARK}={marker}".encode()


@pytest.fixture
def leftovers() -> Iterator[list[bytes]]:
    """Markers whose processes are killed as the test ends, whatever it asserted: a failing
    run leaves no backend sleeping for minutes."""
    needles: list[bytes] = []
    yield needles
    for needle in needles:
        for pid in _marked(needle):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_resolve_past_its_timeout_leaves_no_build_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leftovers: list[bytes]
) -> None:
    # subprocess.run's timeout killed uv alone: the backend it had started built on, an
    # orphan, until its build ended (doctor's resolve stopped at 120 s, minutes before).
    # uv starts the build within 1-2 s; 45 s leaves that room on a loaded CI machine.
    wheels, started, env, needle = _setup(tmp_path)
    leftovers.append(needle)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    python = venvs.find_interpreter(None).path
    answer = resolve(python, [f"{SLOW}==1.0"], venvs.user_index_config((wheels,)), timeout_s=45)
    assert (answer.state, answer.said) == ("unknown", "uv pip compile took over 45s")
    assert answer.stopped == "timed_out"
    # The backend ran (else nothing was there to leave): the stop reached a build.
    assert started.exists(), "the build never began within the timeout (a loaded machine?)"
    assert _left_after_stop(needle) == []


def test_a_ctrl_c_while_uv_runs_leaves_no_build_backend(
    tmp_path: Path, leftovers: list[bytes]
) -> None:
    # A Ctrl-C the engine alone received (`kill -INT`, a CI's cancel), where uv now has a
    # session of its own that a terminal's Ctrl-C does not reach either.
    wheels, started, env, needle = _setup(tmp_path)
    leftovers.append(needle)
    code = (
        "import sys\n"
        "from reprospec import venvs\n"
        "from reprospec.venvs.resolve import resolve\n"
        "python = venvs.find_interpreter(None).path\n"
        "index = venvs.user_index_config((sys.argv[1],))\n"
        f"resolve(python, ['{SLOW}==1.0'], index, timeout_s=600)\n"
    )
    done = interrupt_when([sys.executable, "-c", code, str(wheels)], started.exists, env=env)
    assert "KeyboardInterrupt" in done.stderr, done.stderr
    assert _left_after_stop(needle) == []


def _spec(tmp_path: Path) -> Path:
    """A spec whose one package is the slow sdist: its build is what doctor's resolve and
    slurm's preflight start."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"reprospec: 1\nname: s\nenvironment: {{packages: ['{SLOW}==1.0']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    return spec


@pytest.mark.parametrize(
    "verb",
    [
        # doctor's resolve: run_uv (uv pip compile builds the sdist to read its metadata).
        ("doctor", "--runner", "venv"),
        # slurm's preflight builds each cell's venv on the login node: _install's uv.
        ("slurm", "--shards", "1", "--runner", "venv"),
    ],
    ids=["doctor", "slurm"],
)
def test_a_sigterm_to_a_verb_mid_build_leaves_no_build_backend(
    verb: tuple[str, ...], tmp_path: Path, leftovers: list[bytes]
) -> None:
    # `timeout`'s, a CI cancel's SIGTERM: doctor and slurm installed no stop handler, so it
    # ended Python outright, and the uv in a session of its own (which no longer gets the
    # group's signal) built on with its backend.
    wheels, started, env, needle = _setup(tmp_path)
    leftovers.append(needle)
    env["REPROSPEC_ENVS"] = str(tmp_path / "envs")
    name, *options = verb
    argv = [sys.executable, "-m", "reprospec", name, str(_spec(tmp_path)), *options]
    argv += ["--find-links", str(wheels), *(["--out", str(tmp_path)] if name == "slurm" else [])]
    done = interrupt_when(argv, started.exists, env=env, signum=signal.SIGTERM)
    assert _left_after_stop(needle) == [], done.stderr
    # Stopped as a Ctrl-C stops it, where the SIGTERM's default action ended it (-15).
    assert (done.code, done.stderr.splitlines()[-1:]) == (130, ["reprospec: interrupted"]), (
        done.stderr
    )


def _fake_uv(folder: Path) -> Path:
    """A uv that never ends and does not obey SIGTERM: it starts a child (its build
    backend), touches `started`, and touches `termed` at each SIGTERM. A stop must SIGKILL
    the group, the child with it."""
    folder.mkdir()
    uv = folder / "uv"
    uv.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, signal, subprocess, sys, time\n"
        "here = pathlib.Path(__file__).parent\n"
        "signal.signal(signal.SIGTERM, lambda *_: (here / 'termed').touch())\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "(here / 'started').touch()\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    uv.chmod(0o755)
    return uv


def _marked_fake_uv(tmp_path: Path, leftovers: list[bytes]) -> tuple[Path, str]:
    """A `_fake_uv` in tmp_path/fake and the marker (MARK's value) to start it with, whose
    processes are killed as the test ends."""
    uv = _fake_uv(tmp_path / "fake")
    marker = f"{tmp_path.name}-{os.urandom(8).hex()}"
    leftovers.append(f"{MARK}={marker}".encode())
    return uv, marker


def _stopped_twice(
    uv: Path, code: str, *args: str, env: dict[str, str], signum: int = signal.SIGINT
) -> CliResult:
    """`python -c CODE UV ARGS`, sent `signum` once the fake `uv` started and again once the
    first was heard (capped.stop_group sent uv its SIGTERM and is waiting for it)."""
    return interrupt_when(
        [sys.executable, "-c", code, str(uv), *args],
        (uv.parent / "started").exists,
        env=env,
        signum=signum,
        again_when=(uv.parent / "termed").exists,
    )


def _raised_in_stops_wait(stderr: str) -> bool:
    """Whether the last exception Python printed was raised in `capped.stop_group`'s own
    code before its SIGKILL (its wait for uv), not later: its traceback's innermost frame
    is `stop_group` (a frame within `proc.wait()`, after the SIGKILL, would be
    subprocess's), at a line other than the SIGKILL's."""
    last = stderr.rpartition("Traceback (most recent call last):")[2].splitlines()
    frames = [i for i, line in enumerate(last) if line.startswith('  File "')]
    if not frames:
        return False
    innermost = last[frames[-1]]
    at = last[frames[-1] + 1] if frames[-1] + 1 < len(last) else ""
    in_stop = innermost.endswith(", in stop_group") and "/core/capped.py" in innermost
    return in_stop and "SIGKILL" not in at


def test_run_uv_past_its_timeout_says_so_and_ends_its_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leftovers: list[bytes]
) -> None:
    # resolve's tests stub run_uv: its own message, and its stop of a uv that ignores the
    # SIGTERM (the SIGKILL that follows), are this one's.
    uv, marker = _marked_fake_uv(tmp_path, leftovers)
    monkeypatch.setattr(build, "uv_binary", lambda: str(uv))
    # The fake needs its Python started and its SIGTERM handler installed before the stop:
    # 1.5 s was not always that on a loaded machine (the SIGTERM came first and killed it).
    with pytest.raises(build.UvTimeout) as raised:
        build.run_uv(["pip", "compile", "-"], timeout=10, env={MARK: marker})
    assert str(raised.value) == "uv pip compile timed out after 10s"
    # It ran (a stop before its handler was in place reads as this, not as a SIGTERM
    # unheard) and was told to stop (SIGTERM), which it ignored: the group was killed.
    assert (uv.parent / "started").exists(), "the fake uv never started within 10 s"
    assert (uv.parent / "termed").exists()
    # Every member of its group carries the marker (uv, the child it started): none is left.
    assert _left_after_stop(f"{MARK}={marker}".encode()) == []


def test_a_second_ctrl_c_while_uv_is_stopped_still_kills_its_group(
    tmp_path: Path, leftovers: list[bytes]
) -> None:
    # A second Ctrl-C during stop_group's wait for uv (no stop handler holds it back: the Python
    # API) skipped the group's SIGKILL: a uv that had not yet ended, and its backend, ran on.
    uv, marker = _marked_fake_uv(tmp_path, leftovers)
    code = (
        "import sys\n"
        "from reprospec.venvs import build\n"
        "build.uv_binary = lambda: sys.argv[1]\n"
        # stop_group waits 2 s (build._UV_STOP_S) for uv: a second signal later than that
        # (a loaded machine) came after the group's SIGKILL, and the test passed without
        # the case it is about.
        "build._UV_STOP_S = 60.0\n"
        "build.run_uv(['pip', 'compile', '-'], timeout=600)\n"
    )
    done = _stopped_twice(uv, code, env={MARK: marker})
    assert "KeyboardInterrupt" in done.stderr, done.stderr
    # It came while stop_group waited for uv (still alive: it ignores SIGTERM), before the
    # SIGKILL: else this test proves nothing, and says so rather than pass.
    assert _raised_in_stops_wait(done.stderr), done.stderr
    # Every member of its group carries the marker (uv, the child it started): none is left.
    assert _left_after_stop(f"{MARK}={marker}".encode()) == []


def test_a_second_signal_to_doctor_while_uv_is_stopped_says_only_that_it_stops(
    tmp_path: Path, leftovers: list[bytes]
) -> None:
    # doctor writes nothing when stopped: a second SIGTERM during stop_group's wait for uv was
    # told "stopping: writing what finished first", the engine verbs' words.
    uv, marker = _marked_fake_uv(tmp_path, leftovers)
    code = (
        "import sys\n"
        "from reprospec.cli import main\n"
        "from reprospec.venvs import build\n"
        "build.uv_binary = lambda: sys.argv[1]\n"
        # Waited for longer than the second signal can take to come, on a loaded machine.
        "build._UV_STOP_S = 10.0\n"
        "sys.exit(main(['doctor', sys.argv[2], '--runner', 'venv']))\n"
    )
    done = _stopped_twice(
        uv,
        code,
        str(_spec(tmp_path)),
        env={MARK: marker, "REPROSPEC_ENVS": str(tmp_path / "envs")},
        signum=signal.SIGTERM,
    )
    assert "reprospec: already stopping" in done.stderr, done.stderr
    assert "writing what finished" not in done.stderr, done.stderr
    assert (done.code, done.stderr.splitlines()[-1:]) == (130, ["reprospec: interrupted"]), (
        done.stderr
    )
    assert _left_after_stop(f"{MARK}={marker}".encode()) == []
