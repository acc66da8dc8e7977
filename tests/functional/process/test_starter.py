"""The attempt starter (starter.c, starter.py): built with the machine's compiler, run for real.

Both ways an attempt's root can start are tested the same way: through the starter,
and through Python's preexec_fn where the machine has no compiler (`CC` naming none
and an empty cache: what `find()` really returns there). Each must give the root its
tag, raise what Popen raises for a program that cannot run, and leave the root none
of the engine's descriptors. Death with the engine is tested end to end, both ways,
in test_escapes.py.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.process import leftovers, pidlimit, start, starter, watchdog
from tests.support.cli import ROOT

IN_CI = os.environ.get("CI") == "true"
NO_COMPILER = "/no/such/cc"


@pytest.fixture(autouse=True)
def _fresh_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test finds its starter anew; the process's own is put back afterwards."""
    monkeypatch.setattr(starter, "_found", None)


def require_compiler() -> None:
    if not any(shutil.which(name) for name in ("cc", "gcc", "clang")):
        message = "skipped: no C compiler to build the starter (apt install gcc)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(params=["starter", "preexec_fn"])
def way(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """How this test's attempts start: what `starter.find()` returns on such a machine."""
    cache = tmp_path / "cache"
    if request.param == "starter":
        require_compiler()
        monkeypatch.delenv("CC", raising=False)
    else:
        monkeypatch.setenv("CC", NO_COMPILER)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    found = starter.find()
    assert found.ready is (request.param == "starter"), found.how
    return str(request.param)


def _start(
    argv: list[str],
    tmp_path: Path,
    tag: int,
    env: dict[str, str] | None = None,
    cgroup: str | None = None,
    nproc: int | None = None,
) -> tuple[int, bytes, bytes]:
    """Start a root as run_process does, read what it printed (a few lines), wait for it."""
    environ = env or dict(os.environ)
    proc = start.popen_attempt(argv, env=environ, cwd=tmp_path, tag=tag, cgroup=cgroup, nproc=nproc)
    output = []
    for pipe in (proc.stdout, proc.stderr):
        assert pipe is not None
        chunks = [os.read(pipe.fileno(), 65536)]
        while chunks[-1]:
            chunks.append(os.read(pipe.fileno(), 65536))
        pipe.close()
        output.append(b"".join(chunks))
    return proc.wait(), output[0], output[1]


# -- building ------------------------------------------------------------------------------


def _built(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A starter built (or found) in `folder` with the machine's own compiler: its path,
    and how it was had."""
    require_compiler()
    monkeypatch.delenv("CC", raising=False)
    built = starter.locate(folder)
    assert built.path is not None, built.how
    return built.path, built.how


def test_a_starter_is_built_once_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built, how = _built(tmp_path, monkeypatch)
    assert "built with" in how
    assert built.parent == tmp_path
    assert built.stat().st_mode & stat.S_IXUSR
    # No compiler now: the kept one is reused, not rebuilt (and no temporary is left).
    monkeypatch.setenv("CC", NO_COMPILER)
    again = starter.locate(tmp_path)
    assert again.path == built
    assert "built with" not in again.how
    assert [p.name for p in tmp_path.iterdir()] == [built.name]


def test_a_kept_starter_that_does_not_run_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = _built(tmp_path, monkeypatch)
    # A truncated copy, or one built for another machine: exec fails.
    first.write_bytes(b"\x7fELF garbage")
    rebuilt = starter.locate(tmp_path)
    assert rebuilt.path == first
    assert "built with" in rebuilt.how
    assert subprocess.run([str(rebuilt.path)], check=False).returncode == 0


def test_without_a_compiler_attempts_still_start_and_doctor_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", NO_COMPILER)
    found = starter.locate(tmp_path)
    assert found.path is None
    assert found.how == "no C compiler (CC, cc, gcc or clang) to build it"
    env = {**os.environ, "CC": NO_COMPILER, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "doctor", "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    checks = {check["name"]: check for check in json.loads(done.stdout)}
    assert checks["starter"]["status"] == "warn"
    assert "no C compiler" in checks["starter"]["why"]
    assert "apt install gcc" in checks["starter"]["todo"]


def test_a_compiler_that_fails_is_reported_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = tmp_path / "cc"
    compiler.write_text("#!/bin/sh\necho 'cc: fatal error: no space left on device' >&2\nexit 4\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    found = starter.locate(tmp_path / "cache")
    assert found.path is None
    assert "exited 4: cc: fatal error: no space left on device" in found.how
    assert not list((tmp_path / "cache").iterdir())  # no half-built file kept


def test_a_compilers_message_that_is_not_utf8_is_reported_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A compiler in a latin-1 locale (`erreur \xe9`) ended every run, and doctor, with an
    # internal UnicodeDecodeError reading its message.
    compiler = tmp_path / "cc"
    compiler.write_bytes(b"#!/bin/sh\nprintf 'erreur \\351 fatale\\n' >&2\nexit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    found = starter.locate(tmp_path / "cache")
    assert found.path is None
    assert "exited 1: erreur \ufffd fatale" in found.how


# -- starting, both ways -------------------------------------------------------------------


@pytest.mark.usefixtures("way")
def test_the_root_carries_its_tag_and_none_of_the_engines_descriptors(tmp_path: Path) -> None:
    tag = leftovers.new_tag()
    code = (
        "import os, sys; from reprospec.process import watchdog;"
        "print(watchdog.tag_of(os.getpid()));"
        "print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')));"
        "print(os.getsid(0) == os.getpid())"
    )
    returncode, out, err = _start([sys.executable, "-c", code], tmp_path, tag)
    assert returncode == 0, err
    got_tag, fds, own_session = out.decode().split("\n")[:3]
    assert int(got_tag) == tag
    assert watchdog.is_tag(int(got_tag))
    # 0-2, and the descriptor listdir itself opened: no pipe of the engine's (the
    # starter's error pipe is close-on-exec).
    assert json.loads(fds) == [0, 1, 2, json.loads(fds)[3]], fds
    assert own_session == "True"


@pytest.mark.usefixtures("way")
def test_a_command_found_on_the_childs_path_runs(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "say-hello"
    script.write_text('#!/bin/sh\necho hello "$@"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    returncode, out, _ = _start(["say-hello", "a b"], tmp_path, leftovers.new_tag(), env)
    assert (returncode, out) == (0, b"hello a b\n")


@pytest.mark.usefixtures("way")
def test_a_program_that_cannot_run_raises_what_popen_raises(tmp_path: Path) -> None:
    garbage = tmp_path / "not-a-program"
    garbage.write_bytes(b"\x00\x01\x02 no interpreter line, no ELF header")
    garbage.chmod(0o755)
    with pytest.raises(OSError, match="Exec format error") as popen:
        subprocess.Popen([str(garbage)])
    with pytest.raises(OSError, match="Exec format error") as ours:
        start.popen_attempt([str(garbage)], env=dict(os.environ), cwd=tmp_path, tag=1)
    assert (ours.value.errno, str(ours.value)) == (popen.value.errno, str(popen.value))
    assert ours.value.errno == errno.ENOEXEC
    with pytest.raises(FileNotFoundError) as missing:
        start.popen_attempt(["no-such-program-x"], env=dict(os.environ), cwd=tmp_path, tag=1)
    assert str(missing.value) == "[Errno 2] No such file or directory: 'no-such-program-x'"
    # A working directory that is gone: Popen names the folder.
    gone = tmp_path / "gone"
    with pytest.raises(FileNotFoundError) as popen_cwd:
        subprocess.Popen(["true"], cwd=gone)
    with pytest.raises(FileNotFoundError) as ours_cwd:
        start.popen_attempt(["true"], env=dict(os.environ), cwd=gone, tag=1)
    assert str(ours_cwd.value) == str(popen_cwd.value)
    assert ours_cwd.value.filename == gone


@pytest.mark.usefixtures("way")
def test_a_crash_is_classified_the_same_either_way(tmp_path: Path) -> None:
    """A whole run: a real SIGSEGV is a crash by SIGSEGV, whichever way it started."""
    spec = tmp_path / "segv.yaml"
    spec.write_text(
        "reprospec: 1\nname: segv\n"
        "command: [python, -c, 'import ctypes; ctypes.string_at(0)']\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=dict(os.environ), cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (results,) = (tmp_path / "out").glob("runs/*/results.json")
    (cell,) = json.loads(results.read_text())["cells"]
    assert cell["verdict"] == "reproduced"
    assert cell["attempts"][0]["outcome"]["kind"] == "crash"
    assert cell["attempts"][0]["outcome"]["signal"] == "SIGSEGV"


@pytest.mark.usefixtures("way")
def test_the_root_ignores_the_signals_a_popen_child_ignores(tmp_path: Path) -> None:
    """Python ignores SIGPIPE and SIGXFSZ; Popen's child gets them back (restore_signals)."""
    argv = ["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
    popen = subprocess.run(argv, capture_output=True, check=True, cwd=tmp_path)
    returncode, out, err = _start(argv, tmp_path, leftovers.new_tag())
    assert (returncode, out) == (0, popen.stdout), err


@pytest.mark.usefixtures("way")
def test_the_root_joins_the_cgroup_it_is_given(tmp_path: Path) -> None:
    limit = pidlimit.create()
    if limit.cgroup is None:
        pytest.skip(f"no pids cgroup here: {limit.note or 'not root, none delegated'}")
    try:
        cgroup = pidlimit.procs_file(limit)
        returncode, out, err = _start(["cat", "/proc/self/cgroup"], tmp_path, 1, cgroup=cgroup)
        assert returncode == 0, err
        assert limit.cgroup.name in out.decode()
        # The engine's own thread stayed where it was.
        assert limit.cgroup.name not in Path("/proc/thread-self/cgroup").read_text()
    finally:
        pidlimit.kill(limit)
        pidlimit.remove(limit)


@pytest.mark.usefixtures("way")
def test_the_roots_first_child_has_the_process_limit(tmp_path: Path) -> None:
    """Without a cgroup the limit was the root's RLIMIT_NPROC set after it started,
    and a /bin/sh -c root had forked its program by then, which ran unlimited. Now the
    starter (or the preexec_fn) sets it before the exec: the shell's child has it."""
    line = "cat /proc/self/limits"
    returncode, out, err = _start(["/bin/sh", "-c", f"{line}; exit $?"], tmp_path, 1, nproc=777)
    assert returncode == 0, err
    (row,) = [r for r in out.decode().splitlines() if r.startswith("Max processes")]
    assert row.split()[2:4] == ["777", "777"], row
