"""Native stacks on the docker runner: real cores read by gdb inside the image, real deadlocks.

Every crash here is a real SIGSEGV in a container of the runner image; its core lands
in the bind-mounted workdir (kernel.core_pattern is the host's) and gdb reads it in a
fresh container of the same image. Every hang is a real pthread deadlock, attached to
by gdb through `docker exec` before the container is killed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.deadline import until_reached
from tests.support.paths import CHILDREN

# Real-engine tests: `pytest -m "not docker and not slurm"` runs the unit suite alone.
pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec import native  # noqa: E402
from reprospec.core.results import Execution, Outcome  # noqa: E402
from reprospec.outcome.evidence import Evidence  # noqa: E402
from reprospec.pipeline.attempt import attempt_result  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from reprospec.runners.docker.runner import DockerRunner  # noqa: E402
from tests.support.docker import (  # noqa: E402
    CLIENT,
    containers_of,
    make_plan,
    needs_engine,
    require_image,
)
from tests.support.native import assert_fault_in_a_torch_op  # noqa: E402

WAITING = {"futex_wait", "lll_lock_wait", "pthread_mutex_lock", "futex_abstimed_wait_common"}


needs_plain_cores = pytest.mark.skipif(
    native.core_pattern().piped or native.core_pattern().raw.startswith("/"),
    reason="kernel.core_pattern does not write cores into the process's working directory",
)


# A user's image without gdb: the runner's base with gdb taken out (built once, no network).
NO_GDB_DOCKERFILE = f"FROM {image.BASE_IMAGE}\nRUN rm -f /usr/bin/gdb\n"


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    found = DockerRunner(client=CLIENT)
    missing = found.native.gdb_missing(CLIENT, image.DEFAULT_IMAGE) if found.native else ""
    if missing:
        pytest.fail(f"{image.DEFAULT_IMAGE} has no gdb: rerun scripts/docker-setup.sh")
    return found


def crash(
    runner: DockerRunner, tmp_path: Path, kind: str, environment: dict[str, str] | None = None
) -> tuple[Execution, Path, Path]:
    """native_crash.py KIND in a container, in its own workdir: (execution, workdir, folder)."""
    workdir, logs = tmp_path / f"work-{kind}", tmp_path / f"logs-{kind}"
    workdir.mkdir()
    shutil.copy(CHILDREN / "native_crash.py", workdir)
    plan = make_plan(["python3", "native_crash.py", kind], workdir, environment=environment)
    execution = runner.run(plan, logs)
    # The attempt's container and every gdb container are gone.
    assert containers_of(tmp_path) == set()
    expected = 1 if kind == "child" else -11
    assert execution.returncode == expected, execution.stderr_path.read_text()
    return execution, workdir, logs


@needs_engine
@needs_plain_cores
def test_segfault_in_strlen_shows_strlen_on_top_and_in_the_signature(
    runner: DockerRunner, tmp_path: Path
) -> None:
    execution, workdir, logs = crash(runner, tmp_path, "strlen")
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.unavailable is None, stacks
    (process,) = stacks.processes
    assert process.source == "core"
    assert process.signal == "SIGSEGV"
    assert process.error is None
    assert process.root  # docker-init's child: the attempt's own process
    thread = process.crashing_thread
    assert thread is not None
    assert thread.lwp == process.pid
    assert len(process.threads) >= 2  # the sleeping thread too
    top = native.top_frames(stacks)
    assert top is not None
    assert top.startswith("strlen (libc.so"), top
    assert native.signature_frame(stacks) == "strlen@libc"
    # Symbols of the container's own binaries (Debian's python3.11), resolved in its image.
    libraries = {frame.library for frame in thread.frames}
    assert "python3.11" in libraries, libraries
    # The core was moved out of the workdir, read in the image, and deleted.
    assert sorted(p.name for p in workdir.iterdir()) == ["native_crash.py"]
    assert not list(logs.glob("core*"))
    # Through classify and judge, as a run does: the signature gains the frame, the
    # attempt's report fragment has the top frames and the full stacks.
    plan = make_plan(["python3", "native_crash.py", "strlen"], workdir)
    result = attempt_result(plan, execution, Evidence.read(execution))
    assert isinstance(result.outcome, Outcome)
    assert result.outcome.kind == "crash"
    assert result.outcome.signal == "SIGSEGV"
    assert result.outcome.signature.endswith(":strlen@libc"), result.outcome.signature
    assert result.native is not None
    assert "Native frames of the crashing thread: `strlen (libc.so.6)" in result.native
    assert "<details>" in result.native
    assert "(crashed)" in result.native


@needs_engine
@needs_plain_cores
def test_crash_inside_a_torch_op_in_a_container_shows_a_torch_symbol(
    runner: DockerRunner, tmp_path: Path
) -> None:
    _, _, logs = crash(runner, tmp_path, "torch")  # the runner image has torch
    stacks = native.read(logs)
    assert stacks is not None
    assert_fault_in_a_torch_op(stacks)


@needs_engine
@needs_plain_cores
def test_a_crashed_child_in_a_container_is_not_the_main_process(
    runner: DockerRunner, tmp_path: Path
) -> None:
    execution, _, logs = crash(runner, tmp_path, "child")
    died = execution.stdout_path.read_text().split("child ")[1].split()[0]
    stacks = native.read(logs)
    assert stacks is not None
    (process,) = stacks.processes  # the parent exited 1: no core of its own
    # The pid as the container saw it (the child printed it there).
    assert process.pid == int(died)
    assert process.signal == "SIGSEGV"
    assert not process.root
    assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")


@needs_engine
@needs_plain_cores
def test_the_core_of_a_process_that_moved_inside_the_workdir_is_claimed_there(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """A relative core_pattern puts the core where the crashing process moved: the runner
    said it left none, the core stayed in the user's folder, and cwds.txt in the attempt's."""
    workdir, logs = tmp_path / "work", tmp_path / "logs"
    (workdir / "outputs").mkdir(parents=True)
    code = "import ctypes, os; os.chdir('outputs'); ctypes.string_at(8)"
    execution = runner.run(make_plan(["python3", "-c", code], workdir), logs)
    assert execution.returncode == -11, execution.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert [p.signal for p in stacks.processes] == ["SIGSEGV"]
    assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")
    assert list((workdir / "outputs").iterdir()) == []
    assert not (logs / "cwds.txt").exists()


@needs_engine
@needs_plain_cores
def test_the_core_of_a_program_a_shell_line_cds_to_is_claimed_there(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """`cd build && ./prog`: the shell moves, no Python process records it, and the core
    lands in build/. The runner said the crash left no core and left it in the user's
    folder; it looks where the shell line's `cd`s go, as the local runner does."""
    workdir, logs = tmp_path / "work", tmp_path / "logs"
    (workdir / "build").mkdir(parents=True)
    line = "cd build && python3 -c 'import ctypes; ctypes.string_at(8)'"
    execution = runner.run(make_plan(line, workdir), logs)
    assert execution.returncode == 139, execution.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert [p.signal for p in stacks.processes] == ["SIGSEGV"]
    assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")
    assert list((workdir / "build").iterdir()) == []


@needs_engine
@needs_plain_cores
def test_the_core_of_a_native_chdir_is_found_under_the_workdir(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """chdir() from native code (a C program's) leaves no record of the move: the core lay
    in sub/ and the runner said the crash left none. It is looked for under the workdir."""
    workdir, logs = tmp_path / "work", tmp_path / "logs"
    (workdir / "sub").mkdir(parents=True)
    code = "import ctypes; ctypes.CDLL(None).chdir(b'sub'); ctypes.string_at(8)"
    execution = runner.run(make_plan(["python3", "-c", code], workdir), logs)
    assert execution.returncode == -11, execution.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")
    assert list((workdir / "sub").iterdir()) == []


@needs_engine
@needs_plain_cores
@pytest.mark.skipif(os.getuid() != 0, reason="a container runs as the engine's own user")
def test_the_core_of_an_image_s_other_user_is_claimed_by_a_root_engine(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """An image whose USER is 1000 under an engine run as root: its core in the workdir is
    uid 1000's, and the engine took it for someone else's, said the crash left no core
    ("the folder must be writable by the container's user", which it was) and left it."""
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM {image.DEFAULT_IMAGE}\nUSER 1000:1000\n")
    workdir, logs = tmp_path / "work", tmp_path / "logs"
    workdir.mkdir(mode=0o777)
    workdir.chmod(0o777)  # the umask took bits off
    code = "import ctypes; ctypes.string_at(8)"
    plan = make_plan(["python3", "-c", code], workdir, environment={"dockerfile": str(dockerfile)})
    execution = runner.run(plan, logs)
    assert execution.returncode == -11, execution.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert "strlen" in (native.top_frames(stacks) or "")  # its library: not always named
    assert list(workdir.iterdir()) == []


@needs_engine
@needs_plain_cores
def test_keep_cores_keeps_the_container_core_in_the_attempt_folder(tmp_path: Path) -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    keeper = DockerRunner(client=CLIENT, keep_cores=True)
    _, workdir, logs = crash(keeper, tmp_path, "strlen")
    stacks = native.read(logs)
    assert stacks is not None
    (process,) = stacks.processes
    assert process.core == str(logs.resolve() / f"core.{process.pid}")
    info = native.read_core(Path(process.core))
    assert info is not None
    assert (info.pid, info.signal, info.ppid) == (process.pid, "SIGSEGV", 1)
    # The container's interpreter, not the host's.
    assert info.executable is not None
    assert info.executable.startswith("/usr/bin/python3")
    assert sorted(p.name for p in workdir.iterdir()) == ["native_crash.py"]


@needs_engine
@needs_plain_cores
def test_an_image_without_gdb_says_so_and_writes_no_core(
    runner: DockerRunner, tmp_path: Path
) -> None:
    require_image(CLIENT, image.BASE_IMAGE)
    dockerfile = tmp_path / "Dockerfile.nogdb"
    dockerfile.write_text(NO_GDB_DOCKERFILE)
    _, workdir, logs = crash(runner, tmp_path, "strlen", {"dockerfile": str(dockerfile)})
    stacks = native.read(logs)
    assert stacks is not None
    assert stacks.processes == ()
    assert stacks.unavailable is not None
    assert stacks.unavailable.startswith("native stacks unavailable: gdb not found in image ")
    assert "apt-get install -y gdb" in stacks.unavailable
    # Nothing could read a core, so none was written; the report says why, nothing more.
    assert sorted(p.name for p in workdir.iterdir()) == ["native_crash.py"]
    assert native.render_markdown(stacks) == f"_{stacks.unavailable}_\n"


@needs_engine
def test_a_deadlock_in_a_container_shows_every_thread_waiting_on_the_lock(
    runner: DockerRunner, tmp_path: Path
) -> None:

    def attempt(timeout_s: float, here: Path) -> Execution:
        workdir = here / "work"
        (workdir / "ready").mkdir(parents=True)
        shutil.copy(CHILDREN / "native_deadlock.py", workdir)
        argv = ["python3", "native_deadlock.py", "ready", "fork"]
        return runner.run(make_plan(argv, workdir, timeout_s=timeout_s), here / "logs")

    # 4 s for both processes to reach the deadlock (each writes its pid), doubled while a
    # loaded machine kept them from it before the timeout.
    last = until_reached(
        attempt,
        lambda here: len(list((here / "work" / "ready").glob("*.ready"))) == 2,
        4.0,
        tmp_path,
    )
    execution, folder = last.result, last.folder
    workdir = folder / "work"
    assert containers_of(folder) == set()
    assert execution.timed_out
    # The pids each process wrote are the container's: the ones gdb attached to.
    pids = {int(p.stem) for p in (workdir / "ready").glob("*.ready")}
    assert len(pids) == 2, "both processes reached the deadlock before the timeout"
    stacks = native.read(folder / "logs")
    assert stacks is not None
    assert stacks.unavailable is None, stacks
    attached = {p.pid: p for p in stacks.processes if p.source == "attach"}
    assert set(attached) == pids, stacks
    for process in attached.values():
        assert process.error is None, process
        assert len(process.threads) == 2, process
        assert "native_deadlock.py" in process.command
        for thread in process.threads:
            symbols = [frame.symbol for frame in thread.frames[:5]]
            assert WAITING & set(symbols), (process.pid, thread.id, symbols)
    lines = native.thread_tops(stacks)
    assert len(lines) == 4
    assert all("lock" in line or "futex" in line for line in lines)
    # The interpreter's frames are named from the container's maps.
    assert any(f.library == "python3.11" for p in attached.values() for t in p.threads
               for f in t.frames)  # fmt: skip
    # The Python stacks are still taken, after the native ones.
    assert execution.stack_path is not None
    assert "deadlock" in execution.stack_path.read_text()


# Hangs in pause(), which the Python stacks' asking signal (SIGURG) would end: the
# program then sleeps, and a native read after the signal shows the sleep.
PAUSES = """
import ctypes, pathlib, time
pathlib.Path("paused").touch()
ctypes.CDLL(None).pause()
time.sleep(60)
"""


@needs_engine
def test_a_wait_a_signal_would_end_is_read_in_the_container_before_the_python_stacks(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """The docker runner asked for the Python stacks first: a process hung in pause() was
    then read by gdb in the sleep it went on to (as the local runner's was, fx49b)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    # A timeout a loaded machine's container start fits in: the program must be in pause()
    # when it comes (its `paused` file says it got there).
    plan = make_plan(["python3", "-c", PAUSES], workdir, timeout_s=10.0)
    execution = runner.run(plan, tmp_path / "logs")
    assert containers_of(tmp_path) == set()
    assert execution.timed_out
    assert (workdir / "paused").is_file(), "the program reached pause() before the timeout"
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    attached = [p for p in stacks.processes if p.source == "attach"]
    assert len(attached) == 1, stacks
    (process,) = attached
    assert process.error is None, process
    symbols = [frame.symbol for thread in process.threads for frame in thread.frames[:3]]
    assert any("pause" in symbol for symbol in symbols), symbols
    assert not any("nanosleep" in symbol for symbol in symbols), symbols
    # The Python stack is still taken, after the native read: at the pause() line.
    assert execution.stack_path is not None
    assert "line 4" in execution.stack_path.read_text(), execution.stack_path.read_text()


@needs_engine
def test_a_hang_in_an_image_without_gdb_says_so(runner: DockerRunner, tmp_path: Path) -> None:
    require_image(CLIENT, image.BASE_IMAGE)
    dockerfile = tmp_path / "Dockerfile.nogdb"
    dockerfile.write_text(NO_GDB_DOCKERFILE)
    plan = make_plan(
        ["python3", "-c", "import time; time.sleep(600)"], tmp_path, timeout_s=2.0,
        environment={"dockerfile": str(dockerfile)},
    )  # fmt: skip
    execution = runner.run(plan, tmp_path / "logs")
    assert execution.timed_out
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    assert stacks.processes == ()
    assert stacks.unavailable is not None
    assert "gdb not found in image" in stacks.unavailable


@needs_engine
def test_a_process_gdb_may_not_attach_to_says_why(runner: DockerRunner, tmp_path: Path) -> None:
    """A process that made itself non-dumpable refuses ptrace to anyone without
    CAP_SYS_PTRACE: the runner tries again in a privileged exec. Where the engine allows
    that, gdb reads the process; where it does not (an engine that may not grant
    capabilities), the process says why it has no stacks: never a stack of another."""
    code = (
        "import ctypes, time\n"
        "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0\n"
        "open('ready', 'w').close()\n"
        "time.sleep(600)\n"
    )
    # 3 s to reach its sleep, doubled while a loaded machine kept it from there.
    last = until_reached(
        lambda timeout_s, here: runner.run(
            make_plan(["python3", "-c", code], here, timeout_s=timeout_s), here / "logs"
        ),
        lambda here: (here / "ready").exists(),
        3.0,
        tmp_path,
    )
    execution, folder = last.result, last.folder
    assert execution.timed_out
    assert (folder / "ready").exists()
    stacks = native.read(folder / "logs")
    assert stacks is not None
    assert stacks.unavailable is None, stacks
    (process,) = stacks.processes
    if process.threads:
        symbols = {frame.symbol for frame in process.threads[0].frames}
        assert symbols & {"clock_nanosleep", "select", "__select"}, symbols
    else:
        assert process.error == "ptrace: Operation not permitted.", process


@needs_engine
def test_a_gdb_check_that_could_not_run_says_so_and_is_asked_again() -> None:
    """The engine refusing the probe (here: an image it does not have) is a failed check,
    worded as one, never "gdb not found in image", and not remembered for the image."""
    from reprospec.runners.docker.native import ContainerNative

    assert CLIENT is not None
    checker = ContainerNative()
    absent = "reprospec-test/no-such-image:never"
    first = checker.gdb_missing(CLIENT, absent)
    assert first is not None
    assert first.startswith(f"native stacks unavailable: the check for gdb in {absent} could not")
    assert "not found in image" not in first
    assert "has no gdb" not in first
    assert absent not in checker._reasons  # asked again next time, not taken as a finding
