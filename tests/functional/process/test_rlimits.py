"""Limits for local attempts: a real private /dev/shm and a real RLIMIT_AS in the child."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.core.sections import Environment
from reprospec.core.units import parse_size
from reprospec.process import rlimits
from tests.support.cli import Cli

PRINT_LIMITS = (
    "import os, resource; s = os.statvfs('/dev/shm');"
    "print(s.f_blocks * s.f_frsize, resource.getrlimit(resource.RLIMIT_AS)[0])"
)


def wrap(argv: list[str], section: dict[str, object]) -> tuple[list[str], list[str]]:
    """limits.wrap_argv on a resolved `environment` section, typed as the plan stage types it."""
    return rlimits.wrap_argv(argv, Environment.from_section(section, Path.cwd()))


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64m", 64 * 2**20),
        ("4g", 4 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1.5g", 3 * 2**29),
        ("100", 100),
        (2048, 2048),
        ("2kb", 2048),
    ],
)
def test_parse_size(text: object, size: int) -> None:
    assert parse_size(text) == size


def test_parse_size_refuses_garbage() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_no_limits_leaves_argv_alone() -> None:
    assert wrap(["python", "-c", "pass"], {"device": "cpu"}) == (
        ["python", "-c", "pass"],
        [],
    )


needs_namespaces = pytest.mark.skipif(
    rlimits.namespaces_permitted() is not None,
    reason=f"private mounts not permitted: {rlimits.namespaces_permitted()}",
)


@needs_namespaces
def test_child_gets_its_own_shm_and_address_space_limit() -> None:
    # A size the machine's own /dev/shm is not (a container's may be 8 MiB, docker's
    # --shm-size): the child seeing it is its own mount, and the machine's stays as it was.
    machine = _shm_bytes()
    mib = 8 if machine != 8 * 2**20 else 16
    section: dict[str, object] = {"shm_size": f"{mib}m", "memory": "2g"}
    argv, warnings = wrap([sys.executable, "-c", PRINT_LIMITS], section)
    assert warnings == []
    shm, rlimit = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert int(shm) == mib * 2**20
    assert int(rlimit) == 2 * 2**30
    assert _shm_bytes() == machine  # the machine's own /dev/shm is untouched


def _shm_bytes() -> int:
    """The size of this machine's /dev/shm, as the child's is read."""
    stat = os.statvfs("/dev/shm")
    return stat.f_blocks * stat.f_frsize


def test_memory_limit_is_not_applied_to_cuda_attempts() -> None:
    argv, warnings = wrap(["x"], {"memory": "8g", "device": "cuda:0"})
    assert argv == ["x"]
    assert "RLIMIT_AS breaks CUDA" in warnings[0]


def test_tiny_memory_limit_warns_about_import_torch() -> None:
    argv, warnings = wrap(["x"], {"memory": "256m"})
    assert "--memory" in argv
    assert "import torch" in warnings[0]


def test_shm_refused_becomes_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        rlimits, "namespaces_permitted", lambda: "unshare(CLONE_NEWNS): Operation not permitted"
    )
    argv, warnings = wrap(["x"], {"shm_size": "64m"})
    assert argv == ["x"]
    assert warnings == [
        "shm_size 64.0 MiB not applied (/dev/shm is the machine's own): unshare(CLONE_NEWNS): "
        "Operation not permitted; run as root or use the docker runner"
    ]


@needs_namespaces
@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) not installed")
def test_launch_without_privileges_still_runs_the_command_and_says_why() -> None:
    drop = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"]
    argv = [
        *drop,
        sys.executable,
        "-S",
        "-E",
        str(rlimits.LAUNCH),
        "--shm-size",
        str(2**20),
        "--",
        sys.executable,
        "-S",
        "-c",
        "print('ran')",
    ]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.stdout.strip() == "ran"
    assert "shm_size not applied: unshare(CLONE_NEWNS): Operation not permitted" in done.stderr


@pytest.mark.parametrize(
    ("code", "status", "returncode"),
    [
        ("import os, signal; os.kill(os.getpid(), signal.SIGUSR1)", 138, -10),
        ("import sys; sys.exit(138)", 138, 138),
        ("import os; os.abort()", 134, -6),
        ("pass", 0, 0),
    ],
)
def test_launch_as_init_records_the_commands_wait_status(
    tmp_path: Path, code: str, status: int, returncode: int
) -> None:
    """The docker runner's init: it exits as docker-init would (128 + N for a signal, which an
    `exit 138` gives too), and its record says which it was."""
    record = tmp_path / "exit.json"
    argv = [sys.executable, "-S", "-E", str(rlimits.LAUNCH), "--init", str(record), "--"]
    done = subprocess.run([*argv, sys.executable, "-S", "-c", code], capture_output=True)
    assert done.returncode == status
    written = json.loads(record.read_text())
    assert written["returncode"] == returncode
    assert isinstance(written["pid"], int)
    assert not list(tmp_path.glob("*.partial"))
    assert (tmp_path / "exit.json.started").exists()  # marked before the command started


# launch.py as a 3.7 python3 runs it: no posix_spawnp, no os.waitstatus_to_exitcode.
_AS_37 = (
    "import os, runpy, sys; del os.posix_spawnp, os.waitstatus_to_exitcode; "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@pytest.mark.parametrize(
    ("command", "status", "returncode"),
    [
        (["sh", "-c", "kill -USR1 $$"], 138, -10),
        (["sh", "-c", "exit 138"], 138, 138),
        (["sh", "-c", "trap - PIPE; kill -PIPE $$"], 141, -13),  # SIGPIPE at its default
    ],
)
def test_launch_as_init_without_posix_spawn_forks_and_execs(
    tmp_path: Path, command: list[str], status: int, returncode: int
) -> None:
    record = tmp_path / "exit.json"
    argv = [sys.executable, "-S", "-E", "-c", _AS_37, str(rlimits.LAUNCH), "--init", str(record)]
    done = subprocess.run([*argv, "--", *command], capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    assert json.loads(record.read_text())["returncode"] == returncode


def test_launch_as_init_without_posix_spawn_says_why_a_command_cannot_start(
    tmp_path: Path,
) -> None:
    record = tmp_path / "exit.json"
    argv = [sys.executable, "-S", "-E", "-c", _AS_37, str(rlimits.LAUNCH), "--init", str(record)]
    done = subprocess.run([*argv, "--", "no-such-program"], capture_output=True, text=True)
    assert done.returncode == 127
    assert "reprospec: cannot start no-such-program: No such file or directory" in done.stderr
    assert not record.exists()


def test_launch_as_init_says_why_a_command_cannot_start(tmp_path: Path) -> None:
    record = tmp_path / "exit.json"
    argv = [sys.executable, "-S", "-E", str(rlimits.LAUNCH), "--init", str(record), "--"]
    done = subprocess.run([*argv, "no-such-program"], capture_output=True, text=True)
    assert done.returncode == 127
    assert "reprospec: cannot start no-such-program: No such file or directory" in done.stderr
    assert not record.exists()


def test_launch_usage_errors() -> None:
    done = subprocess.run(
        [sys.executable, str(rlimits.LAUNCH), "--bogus"], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "unexpected argument '--bogus'" in done.stderr


def test_a_memory_limit_for_some_cells_only(cli: Cli, tmp_path: Path) -> None:
    """`memory: ${{ matrix.mem }}` over `[200m, null]`: null is no limit, as when the key is
    left out (it was refused: "expected a size like 64m or 4g, got null"). The same 400 MB
    allocation is a real MemoryError under the limit and passes without it."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: some-limited\nmatrix:\n  mem: [200m, null]\n"
        "environment:\n  memory: ${{ matrix.mem }}\n"
        'command: [python3, -c, "b = bytearray(400 << 20); print(len(b))"]\n'
        "expect:\n  outcome: pass\n  cases:\n    - when: {mem: 200m}\n"
        "      outcome: error\n      exception: MemoryError\n"
    )
    done = cli("run", str(spec), "--out", str(tmp_path / "out"))
    assert done.code == 0, done.stdout + done.stderr
    verdicts = {c["id"]: c["verdict"] for c in done.results()["cells"]}
    assert verdicts == {"mem=200m": "reproduced", "mem=null": "reproduced"}
    # The limited cell's verdict says the attempt ran into its limit (it was among the
    # report's warnings alone); the unlimited cell's says nothing of one.
    assert "MemoryError, at its memory limit (200.0 MiB, environment.memory)" in done.stdout
    unlimited = [line for line in done.stdout.splitlines() if "mem=null" in line]
    assert unlimited, done.stdout
    assert not any("memory limit" in line for line in unlimited), done.stdout


def test_a_small_memory_warns_of_torchs_import_only_where_the_spec_uses_torch(
    cli: Cli, tmp_path: Path
) -> None:
    """`memory: 300m` on a command that says nothing of torch warned at every
    attempt that `import torch` would likely fail. Said where the spec uses torch."""
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        "reprospec: 1\nname: plain\nenvironment: {memory: 300m}\ncommand: 'true'\n"
        "run: {repeat: 2}\n"
    )
    ran = cli("run", str(plain))
    assert ran.code == 0, ran.stderr
    for attempt in ran.results()["cells"][0]["attempts"]:
        assert not any("import torch" in w for w in attempt.get("warnings", [])), attempt
    _, warnings = rlimits.wrap_argv(
        ["true"], Environment.from_section({"memory": "300m"}, Path.cwd()), torch=True
    )
    assert any("`import torch` itself is likely to fail" in w for w in warnings)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_an_uncaught_bad_alloc_under_the_memory_limit_says_the_limit(
    cli: Cli, tmp_path: Path
) -> None:
    """A C++ program's 400 MB vector under `memory: 100m`: std::bad_alloc, uncaught, aborts
    it (a real SIGABRT). Its verdict said `crash SIGABRT` alone; it says the limit."""
    source = tmp_path / "big.cpp"
    source.write_text(
        "#include <vector>\n#include <cstdio>\n"
        'int main() { std::vector<char> v(size_t(400) << 20); std::printf("%d", v[5]); }\n'
    )
    subprocess.run(["g++", "-O0", "-o", str(tmp_path / "big"), str(source)], check=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: bad-alloc\nenvironment: {memory: 100m}\ncommand: ./big\n"
        "expect: {outcome: crash, signal: SIGABRT}\n"
    )
    done = cli("run", str(spec), "--out", str(tmp_path / "out"))
    assert done.code == 0, done.stdout + done.stderr
    assert "crash SIGABRT, at its memory limit (100.0 MiB, environment.memory)" in done.stdout
