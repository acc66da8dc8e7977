"""`reprospec materialize`: a bundle that reruns a spec with plain `docker run`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

# Real-engine tests: `pytest -m "not docker and not slurm"` runs the unit suite alone.
pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.process.rlimits import LAUNCH  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from tests.support.cli import terminal_signals  # noqa: E402
from tests.support.docker import (  # noqa: E402
    CLIENT,
    container_names,
    needs_engine,
    public_base,
    runner_wheelhouse,
)

SPEC = """\
reprospec: 1
name: bundle-demo
title: Crashes only with the flag on
environment:
  workdir: app
  shm_size: 32m
  env: {MODE: "${{ matrix.mode }}"}
matrix:
  mode: [calm, crash]
command: python main.py
run:
  timeout: 30s
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: calm}
      outcome: pass
"""

MAIN = """\
import ctypes, os, tempfile
print("shm", os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize)
print("tmp", tempfile.mkstemp()[1].rsplit("/", 1)[0])
print("mode", os.environ["MODE"], flush=True)
if os.environ["MODE"] == "crash":
    ctypes.string_at(0)
"""

WORKLOAD_SPEC = """\
reprospec: 1
name: bundle-workload
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 8}
  phases: [{name: train, steps: 2}]
expect: {outcome: pass}
"""


def materialize(
    tmp_path: Path, text: str, *extra: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app" / "main.py").write_text(MAIN)
    (tmp_path / "spec.yaml").write_text(text)
    out = tmp_path / "bundle"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reprospec",
            "materialize",
            str(tmp_path / "spec.yaml"),
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, out


def test_bundle_layout(tmp_path: Path) -> None:
    done, out = materialize(tmp_path, SPEC)
    assert done.returncode == 0, done.stderr
    assert "2 cells, 1 image" in done.stdout
    assert (out / "spec.yaml").read_text() == SPEC
    assert (out / "workdirs" / "1" / "main.py").read_text() == MAIN
    dockerfile = (out / "images" / "1" / "Dockerfile").read_text()
    # No image of this machine: the runner image's content, rebuilt from a public base.
    assert f"ARG BASE={image.PUBLIC_BASE}\nFROM ${{BASE}}\n" in dockerfile
    assert "reprospec-runner" not in dockerfile
    assert "reprospec-base" not in dockerfile
    # main.py imports only the standard library: none of the runner image's packages.
    assert (out / "images" / "1" / "requirements.txt").read_text() == ""
    readme = (out / "README.md").read_text()
    assert f"`images/1/`: `{image.PUBLIC_BASE}` (public" in readme
    assert (
        "packages it installs none (its program imports only the standard library and its "
        "own files, not torch or numpy)"
    ) in readme
    assert (out / "images" / "1" / "harness" / "reprospec_harness" / "__main__.py").is_file()
    assert list((out / "images" / "1" / "certs").iterdir()) == []
    plan = json.loads((out / "cells" / "2" / "plan.json").read_text())
    assert plan["matrix"] == {"mode": "crash"}
    assert plan["env"] == {"MODE": "crash"}
    assert plan["expect"] == {"outcome": "crash", "signal": "SIGSEGV"}
    script = (out / "run.sh").read_text()
    assert "docker run" in script
    assert "--init" in script
    # The docker runner's container init, which run.sh runs each cell under (run_container).
    assert (out / "launch.py").read_text() == LAUNCH.read_text()
    assert "--entrypoint python3" in script
    assert "--network none" in script
    assert f"--shm-size {32 << 20}" in script
    # reprospec is not needed: no line runs it (its verdicts may name `reprospec run`).
    assert not re.search(r"^\s*(reprospec|python3? -m reprospec) ", script, re.M)
    assert "python -m reprospec" not in script
    assert subprocess.run(["bash", "-n", str(out / "run.sh")]).returncode == 0
    # Each cell's private TMPDIR and XDG_CACHE_HOME, made before and removed after it.
    assert "-e TMPDIR=/reprospec/attempt/tmp" in script
    assert "-e XDG_CACHE_HOME=/reprospec/attempt/cache" in script
    assert 'rm -rf "$OUT/2/tmp" "$OUT/2/cache"' in script
    again = materialize(tmp_path, SPEC)[0]
    assert again.returncode == 2
    assert "not empty" in again.stderr


def test_shared_tmp_bundle_keeps_the_machine_tmpdir(tmp_path: Path) -> None:
    shared = SPEC.replace("  shm_size: 32m\n", "  shm_size: 32m\n  shared_tmp: true\n")
    done, out = materialize(tmp_path, shared)
    assert done.returncode == 0, done.stderr
    script = (out / "run.sh").read_text()
    assert "TMPDIR" not in script
    assert "XDG_CACHE_HOME" not in script
    # No private folder of a cell's is removed after it (run.sh's own `rm -rf "$1"` of a
    # cell's results before its run, e3ba79e3, is the one removal left).
    assert 'rm -rf "$OUT/' not in script
    assert script.count("rm -rf") == 1


def test_workload_bundle_has_cell_json(tmp_path: Path) -> None:
    done, out = materialize(tmp_path, WORKLOAD_SPEC)
    assert done.returncode == 0, done.stderr
    cell = json.loads((out / "cells" / "1" / "cell.json").read_text())
    assert set(cell) == {"spec", "cell_id", "matrix", "attempt", "workload", "environment"}
    assert "python3 -m reprospec_harness" in (out / "run.sh").read_text()
    # The harness trains with torch: the runner image's packages, whatever the spec imports,
    # its torch the build this machine's is (2.13.0+cpu here: from PyTorch's cpu index).
    build = metadata.version("torch").partition("+")[2]
    pin = f"--extra-index-url https://download.pytorch.org/whl/{build}\ntorch==2.13.0+{build}"
    expected = f"{pin if build else 'torch==2.13.0'}\nnumpy\n"
    assert (out / "images" / "1" / "requirements.txt").read_text() == expected


def test_named_images_are_the_readers_to_get(tmp_path: Path) -> None:
    named = SPEC.replace("  shm_size: 32m\n", "  shm_size: 32m\n  image: ghcr.io/acme/trainer:3\n")
    done, out = materialize(tmp_path, named)
    assert done.returncode == 0, done.stderr
    assert "FROM ghcr.io/acme/trainer:3" in (out / "images" / "1" / "Dockerfile").read_text()
    assert "`docker pull ghcr.io/acme/trainer:3`" in (out / "README.md").read_text()
    ours = SPEC.replace(
        "  shm_size: 32m\n",
        "  shm_size: 32m\n  image: reprospec-runner:latest\n  packages: [torch==2.12.0, six]\n",
    )
    (tmp_path / "ours").mkdir()
    done, out = materialize(tmp_path / "ours", ours)
    assert done.returncode == 0, done.stderr
    assert "FROM ${BASE}" in (out / "images" / "1" / "Dockerfile").read_text()
    # The spec's packages go in whatever its program imports, and with packages of its own
    # the runner's stay too (what they need is not known offline), the spec's
    # torch pin in place of the runner's.
    wanted = "numpy\ntorch==2.12.0\nsix\n"
    assert (out / "images" / "1" / "requirements.txt").read_text() == wanted


# The bundles of this module build the same image (same Dockerfile, packages and harness):
# each test drops only its tag, so the next build is a cache hit; the module removes the image.
_BUILT: set[str] = set()


@pytest.fixture(scope="module", autouse=True)
def _remove_built_images() -> Iterator[None]:
    yield
    import docker.errors

    for image_id in _BUILT:
        with contextlib.suppress(docker.errors.APIError):  # already gone
            CLIENT.images.remove(image_id, force=True)


def _own(spec: str, name: str) -> tuple[str, str]:
    """The spec named for this test process, and the tag its bundle's run.sh builds:
    `reprospec-bundle/NAME:1` is the bundle's image whoever runs it, so two suites on one
    engine shared it, and one's cleanup (or rebuild) met the other's container (409)."""
    own = f"{name}-{os.getpid()}"
    return spec.replace(f"name: {name}\n", f"name: {own}\n", 1), f"reprospec-bundle/{own}:1"


def _materialized(tmp_path: Path, spec: str, name: str) -> tuple[Path, str]:
    """The bundle of `spec` (named for this process, `_own`) written into tmp_path with the
    runner's wheelhouse: its folder, and the tag its run.sh builds."""
    own, tag = _own(spec, name)
    done, out = materialize(tmp_path, own, "--find-links", str(runner_wheelhouse()))
    assert done.returncode == 0, done.stderr
    return out, tag


def _cell_lines(stdout: str) -> list[str]:
    """run.sh's verdict lines, `== cell N [...]: ...`, in order."""
    return [line for line in stdout.splitlines() if line.startswith("== cell ")]


def _run_bundle(
    out: Path, tag: str, base: str, cwd: Path, *cells: str
) -> subprocess.CompletedProcess[str]:
    """./run.sh [CELL...] with BASE pointing at a Debian bookworm: the machine has no registry.

    The CompletedProcess's `args` end with run.sh's pid: its containers are named
    `reprospec-bundle-N-PID`, so a test looks only at its own (see `_left_by`)."""
    try:
        with subprocess.Popen(
            ["bash", str(out / "run.sh"), *cells],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**os.environ, "BASE": base},
        ) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=1800)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        return subprocess.CompletedProcess(
            ["bash", str(out / "run.sh"), str(proc.pid)], proc.returncode, stdout, stderr
        )
    finally:
        if image.image_present(CLIENT, tag):
            _BUILT.add(CLIENT.images.get(tag).id)
            CLIENT.images.remove(tag, noprune=True)


@needs_engine
def test_bundle_builds_from_a_public_base_and_runs_with_plain_docker(tmp_path: Path) -> None:
    base = public_base(CLIENT)
    out, tag = _materialized(tmp_path, SPEC, "bundle-demo")
    ran = _run_bundle(out, tag, base, tmp_path)
    assert "== cell 1 [mode=calm]: exit 0" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "== cell 2 [mode=crash]: killed by SIGSEGV" in ran.stdout, ran.stdout
    assert f"shm {32 << 20}" in (out / "results" / "1" / "output.log").read_text()
    assert "mode crash" in (out / "results" / "2" / "output.log").read_text()
    assert "tmp /reprospec/attempt/tmp" in (out / "results" / "1" / "output.log").read_text()
    assert not (out / "results" / "1" / "tmp").exists()
    assert not _left_by(ran)


DOCKERFILE_SPEC = """\
reprospec: 1
name: bundle-own-dockerfile
environment: {dockerfile: docker/Dockerfile}
command: [python3, -c, "print(open('/etc/app/app.cfg').read(), flush=True)"]
run: {timeout: 60s}
expect: {outcome: pass}
"""


@needs_engine
def test_a_specs_dockerfile_is_built_from_what_it_copies_alone(tmp_path: Path) -> None:
    # images/K/ was the Dockerfile's whole folder, its .env with a token in clear
    # included; now the files its COPY takes, masked, and the build still runs the cell.
    docker = tmp_path / "docker"
    (docker / "conf").mkdir(parents=True)
    (docker / "Dockerfile").write_text(f"FROM {image.DEFAULT_IMAGE}\nCOPY conf /etc/app/\n")
    (docker / "conf" / "app.cfg").write_text("api_key: sk-0123456789abcdefXYZ\nlevel: 3\n")
    (docker / ".env").write_text("API_TOKEN=ghp_0123456789abcdef0123\n")
    out, tag = _materialized(tmp_path, DOCKERFILE_SPEC, "bundle-own-dockerfile")
    assert sorted(p.name for p in (out / "images" / "1").rglob("*") if p.is_file()) == [
        "Dockerfile",
        "app.cfg",
    ]
    ran = _run_bundle(out, tag, public_base(CLIENT), tmp_path)
    assert "== cell 1 [default]: exit 0" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "api_key: ***\nlevel: 3" in (out / "results" / "1" / "output.log").read_text()
    assert not _left_by(ran)


def _left_by(ran: subprocess.CompletedProcess[str]) -> list[str]:
    """The containers this run.sh started that are still there: named `reprospec-bundle-N-PID`
    with its own pid (other suites on a shared engine run bundles of their own)."""
    suffix = f"-{ran.args[-1]}"
    names = container_names()
    return [n for n in names if n.startswith("reprospec-bundle-") and n.endswith(suffix)]


@needs_engine
def test_a_stopped_container_a_killed_run_sh_left_under_its_pid_is_removed(tmp_path: Path) -> None:
    """A cell's container has no --rm (keep_logs reads it after): a run.sh killed by
    SIGKILL left it stopped, and the next run.sh with its pid (a CI job's container, a PID
    namespace: pid 1 each time) had the cell `not run`, exit 3, docker run refusing the
    name."""
    base = public_base(CLIENT)
    out, tag = _materialized(tmp_path, SPEC, "bundle-demo")
    gate = tmp_path / "left"
    try:
        # `exec` keeps the pid: the container is made under run.sh's name before it starts,
        # which waits for it (the gate), not for a time: a `docker run` slower than the
        # 10 s it was given (a loaded engine) raced run.sh's own for the name.
        with subprocess.Popen(
            ["bash", "-c", 'while [ ! -e "$1" ]; do sleep 0.05; done; exec bash "$2" 1',
             "bash", str(gate), str(out / "run.sh")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "BASE": base},
        ) as proc:  # fmt: skip
            left = f"reprospec-bundle-1-{proc.pid}"
            try:
                subprocess.run(
                    ["docker", "run", "--name", left, "--network", "none", base, "true"],
                    check=True, capture_output=True, timeout=60,
                )  # fmt: skip
            except BaseException:
                proc.kill()  # never let through its gate: the block's end waits for it
                raise
            gate.touch()
            stdout, stderr = proc.communicate(timeout=1800)
    finally:
        subprocess.run(["docker", "rm", "-f", left], capture_output=True, timeout=60)
        if image.image_present(CLIENT, tag):
            _BUILT.add(CLIENT.images.get(tag).id)
            CLIENT.images.remove(tag, noprune=True)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert "== cell 1 [mode=calm]: exit 0" in stdout, stdout


@needs_engine
def test_run_sh_reads_a_cells_output_from_the_engines_log(tmp_path: Path) -> None:
    """`docker run`'s attached stream lost a crashing container's last bytes (its
    faulthandler report) once in a loaded suite, and the cell read as exit 139: run.sh's
    keep_logs puts the engine's log of the stopped container in place of what tee got, and
    keeps tee's where the engine logged nothing (`--log-driver none`)."""
    done, out = materialize(tmp_path, SPEC)
    assert done.returncode == 0, done.stderr
    script = (out / "run.sh").read_text()
    function = re.search(r"^keep_logs\(\) \{\n.*?^\}\n", script, re.M | re.S)
    assert function is not None, script[:3000]
    base = public_base(CLIENT)
    logged, unlogged = (f"reprospec-test-logs-{os.getpid()}-{n}" for n in (1, 2))
    program = "echo one; echo two >&2; echo three"
    try:
        for name, driver in ((logged, "json-file"), (unlogged, "none")):
            subprocess.run(
                ["docker", "run", "--name", name, "--network", "none", "--log-driver", driver,
                 base, "sh", "-c", program],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
        (tmp_path / "logged.log").write_text("one\n")  # as a stream cut short left it
        (tmp_path / "unlogged.log").write_text("one\n")
        shell = (
            f"{function.group(0)}keep_logs {logged} logged.log; keep_logs {unlogged} unlogged.log"
        )
        subprocess.run(["bash", "-c", shell], cwd=tmp_path, check=True, timeout=60)
    finally:
        subprocess.run(["docker", "rm", "-f", logged, unlogged], capture_output=True, timeout=60)
    # The engine copies stdout and stderr apart: their lines' order between them is its own.
    assert sorted((tmp_path / "logged.log").read_text().splitlines()) == ["one", "three", "two"]
    assert (tmp_path / "unlogged.log").read_text() == "one\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".engine") == []


@needs_engine
def test_workload_bundle_runs(tmp_path: Path) -> None:
    base = public_base(CLIENT)
    out, tag = _materialized(tmp_path, WORKLOAD_SPEC, "bundle-workload")
    ran = _run_bundle(out, tag, base, tmp_path)
    assert "== cell 1 [" in ran.stdout, ran.stdout + ran.stderr
    assert ": exit 0;" in ran.stdout, ran.stdout + ran.stderr
    events = (out / "results" / "1" / "events.jsonl").read_text()
    assert '"phase": "train"' in events
    env = json.loads((out / "results" / "1" / "env.json").read_text())
    assert env["os"]["distribution"].startswith("Debian GNU/Linux 12")
    assert env["packages"]["torch"] == "2.13.0+cpu"


WORKER_SEGFAULT_SPEC = """\
reprospec: 1
name: bundle-worker
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 8, num_workers: 2, multiprocessing_context: fork}
  phases: [{name: train, steps: 4}]
  faults:
    - {kind: segfault, where: worker, at: {phase: train, step: 2}}
expect: {outcome: crash, signal: SIGSEGV}
"""


@needs_engine
def test_a_dataloader_workers_segfault_is_reported_as_a_crash_in_a_worker(tmp_path: Path) -> None:
    # The main process exits 1 when a worker dies; run.sh said `exit 1`, which its
    # README's rule (a crash is exit status 128 + the signal) read as not reproduced.
    base = public_base(CLIENT)
    out, tag = _materialized(tmp_path, WORKER_SEGFAULT_SPEC, "bundle-worker")
    ran = _run_bundle(out, tag, base, tmp_path)
    said = [line for line in ran.stdout.splitlines() if line.startswith("== cell 1 ")]
    assert said, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert said[0].startswith("== cell 1 [default]: crash SIGSEGV (worker): DataLoader worker ")
    assert "died of SIGSEGV, says events.jsonl; the main process exited 1; expected: " in said[0]
    assert '"signal": "SIGSEGV"' in said[0]
    output = (out / "results" / "1" / "output.log").read_text(errors="replace")
    # The worker's own report is always there. The main process's words race: torch's
    # "is killed by signal: Segmentation fault", or, where its fetch of a batch the dying
    # worker had sent fails first, a ConnectionResetError or EOFError that names no signal
    # (tests/functional/export/test_materialize_report.py).
    assert "ERROR: Unexpected segmentation fault encountered in worker" in output
    assert re.search(
        r"is killed by signal: Segmentation fault|^(ConnectionResetError|EOFError)\b",
        output,
        re.MULTILINE,
    ), output[-3000:]
    assert not _left_by(ran)


UAF_SPEC = """\
reprospec: 1
name: bundle-uaf
environment:
  workdir: app
  perturb: {malloc: "${{ matrix.malloc }}"}
matrix:
  malloc: [perturb, check]
command: python uaf.py
run: {timeout: 60s}
expect: {outcome: crash, signal: SIGSEGV}
"""

# A real use-after-free: a pointer read back from a freed 4 KiB block. glibc leaves a freed
# block's contents alone (the old pointer still works) unless MALLOC_PERTURB_ fills it, when
# the pointer read is 0xa5a5... and dereferencing it is a SIGSEGV.
UAF = """\
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
target = ctypes.create_string_buffer(b"alive", 64)
entry = libc.malloc(4096)
slots = (ctypes.c_void_p * 512).from_address(entry)
slots[8] = ctypes.addressof(target)
libc.free(entry)
stale = slots[8]
print("lookup", flush=True)
print(ctypes.string_at(stale, 5).decode(), flush=True)
"""


@needs_engine
def test_an_amplified_use_after_free_reproduces_from_its_bundle(tmp_path: Path) -> None:
    # run.sh dropped environment.perturb, so the amplified spec's bundle ran
    # the program plain and printed `exit 0` where `reprospec run` crashed 8/8. Cell 2
    # (MALLOC_CHECK_ only, no perturbing) does not crash: run.sh says so and exits 1.
    base = public_base(CLIENT)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "uaf.py").write_text(UAF)
    out, tag = _materialized(tmp_path, UAF_SPEC, "bundle-uaf")
    ran = _run_bundle(out, tag, base, tmp_path)
    said = _cell_lines(ran.stdout)
    assert said == [
        '== cell 1 [malloc=perturb]: killed by SIGSEGV; expected: {"outcome": "crash", '
        '"signal": "SIGSEGV"}; reproduced',
        '== cell 2 [malloc=check]: exit 0; expected: {"outcome": "crash", '
        '"signal": "SIGSEGV"}; NOT reproduced',
    ], ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.returncode == 1
    assert "alive" in (out / "results" / "2" / "output.log").read_text()
    assert "alive" not in (out / "results" / "1" / "output.log").read_text()
    assert not _left_by(ran)


LOAD_SPEC = """\
reprospec: 1
name: bundle-load
environment:
  workdir: app
  perturb: {cpus: 1, nice: 3, memory_limit: 64m, cpu_load: 1, io_load: 1}
command: python seen.py
run: {timeout: 60s}
expect: {outcome: pass}
"""

# What the container sees of its perturbations; the writer of io_load writes into the
# attempt folder's load/, which the cell's container sees too.
SEEN = """\
import os, time
print("cpus", sorted(os.sched_getaffinity(0)))
print("nice", os.nice(0))
for name in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
    if os.path.exists(name):
        print("memory", open(name).read().strip())
written = "/reprospec/attempt/load/io-load-0.bin"
deadline = time.monotonic() + 30
while time.monotonic() < deadline and not os.path.exists(written):
    time.sleep(0.1)
print("io-load", os.path.exists(written), flush=True)
"""


@needs_engine
def test_cpus_nice_memory_and_load_reach_the_bundles_container(tmp_path: Path) -> None:
    base = public_base(CLIENT)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "seen.py").write_text(SEEN)
    out, tag = _materialized(tmp_path, LOAD_SPEC, "bundle-load")
    ran = _run_bundle(out, tag, base, tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    seen = (out / "results" / "1" / "output.log").read_text().splitlines()
    assert "cpus [0]" in seen
    assert f"memory {64 << 20}" in seen
    assert "io-load True" in seen
    # Against the nice a container of this engine starts at (a dockerd started niced
    # starts every container there): see test_perturb.py.
    plain = CLIENT.containers.run(base, ["nice"], remove=True)
    assert f"nice {int(plain) + 3}" in seen
    # The competitors' container and their files are gone with the cell.
    assert not (out / "results" / "1" / "load").exists()
    assert f"reprospec-bundle-load-1-{ran.args[-1]}" not in container_names()
    assert not _left_by(ran)


CHILD_SPEC = """\
reprospec: 1
name: bundle-child
environment:
  workdir: app
matrix:
  prog: [called, exit139]
command: python3 parent.py ${{ matrix.prog }}
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {prog: exit139}
      outcome: error
      exit_code: 139
"""

PARENT = """\
import subprocess, sys
if sys.argv[1] == "exit139":
    sys.exit(139)
subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"], check=True)
"""


@needs_engine
def test_a_childs_segfault_reproduces_and_an_exit_139_is_not_judged(tmp_path: Path) -> None:
    # The parent's CalledProcessError of its child's SIGSEGV (exit 1), which
    # `reprospec run` reproduces, was "exit 1 ... NOT reproduced", run.sh exit 1; a program's
    # own sys.exit(139) was "killed by SIGSEGV". The init's record says the command (its
    # shell, `python3 parent.py exit139`) exited 139: a shell's report of a SIGSEGV, or the
    # program's own status, still.
    base = public_base(CLIENT)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "parent.py").write_text(PARENT)
    out, tag = _materialized(tmp_path, CHILD_SPEC, "bundle-child")
    ran = _run_bundle(out, tag, base, tmp_path)
    said = _cell_lines(ran.stdout)
    assert len(said) == 2, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert said[0].startswith('== cell 1 [prog=called]: crash SIGSEGV (child): output.log says "')
    assert "died with <Signals.SIGSEGV: 11>." in said[0]
    assert said[0].endswith('; expected: {"outcome": "crash", "signal": "SIGSEGV"}; reproduced')
    assert said[1] == (
        "== cell 2 [prog=exit139]: exit 139 = 128 + SIGSEGV: killed by SIGSEGV, or the "
        "program's own exit status (output.log reports no death); expected: "
        '{"outcome": "error", "exit_code": 139}; not judged here: reprospec run tells them apart'
    )
    assert ran.returncode == 4
    assert not _left_by(ran)


SIGNAL_SPEC = """\
reprospec: 1
name: bundle-usr1
environment:
  workdir: app
matrix:
  how: [usr1, exit138]
command: [python3, usr1.py, "${{ matrix.how }}"]
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGUSR1
  cases:
    - when: {how: exit138}
      outcome: error
      exit_code: 138
"""

USR1 = """\
import os, signal, sys
print("about to", sys.argv[1], flush=True)
if sys.argv[1] == "usr1":
    os.kill(os.getpid(), signal.SIGUSR1)
sys.exit(138)
"""


@needs_engine
def test_a_death_by_sigusr1_and_an_exit_138_read_apart(tmp_path: Path) -> None:
    # run.sh ran each cell under docker's --init, whose status is 128 + N for a death
    # by signal N: both cells read "exit 138 = 128 + SIGUSR1 ... not judged here". It runs
    # them under launch.py, the docker runner's init, which records how the command ended.
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "usr1.py").write_text(USR1)
    out, tag = _materialized(tmp_path, SIGNAL_SPEC, "bundle-usr1")
    ran = _run_bundle(out, tag, public_base(CLIENT), tmp_path)
    assert _cell_lines(ran.stdout) == [
        '== cell 1 [how=usr1]: killed by SIGUSR1; expected: {"outcome": "crash", "signal": '
        '"SIGUSR1"}; reproduced',
        '== cell 2 [how=exit138]: exit 138; expected: {"outcome": "error", "exit_code": 138}; '
        "reproduced",
    ], ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.returncode == 0
    assert (out / "results" / "1" / "output.log").read_text() == "about to usr1\n"
    # The init's record is read and removed: results/N keeps what reprospec's folders keep.
    assert not list((out / "results").glob("*/exit.json*"))
    # So are the sitecustomize's records of each Python process (its begun or ended record,
    # how its main thread ended, its stack dump): the engine's, read by run.sh, not the
    # user's; they were left in results/N beside the program's output.
    for record in ("ended", "raised", "stack"):
        assert not list((out / "results").glob(f"*/{record}-*.txt")), record
    assert "cannot run launch.py" not in ran.stderr
    assert not _left_by(ran)


# A python3 that cannot run launch.py: Ubuntu 18.04's 3.6 fails to compile it.
_OLD_PYTHON3 = """#!/bin/sh
echo 'python3 3.6 was here'
echo '  File "/reprospec/launch.py", line 30' >&2
echo 'SyntaxError: future feature annotations is not defined' >&2
exit 1
"""

OLD_PYTHON_SPEC = """\
reprospec: 1
name: bundle-old-python3
environment: {dockerfile: docker/Dockerfile}
matrix:
  code: ["exit 3", "kill -USR1 $$"]
command: [sh, -c, "echo ran; ${{ matrix.code }}"]
run: {timeout: 60s}
expect:
  outcome: error
  exit_code: 3
  cases:
    - when: {code: "kill -USR1 $$"}
      outcome: fail
"""


@needs_engine
def test_an_image_whose_python3_cannot_run_the_init_runs_its_cells_under_docker_init(
    tmp_path: Path,
) -> None:
    """The image's python3 fails before the command starts: the cell runs again under
    docker's init, its output.log holding only what the command printed, and the image's
    next cell runs under docker's init at once (one line on stderr says so)."""
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "python3").write_text(_OLD_PYTHON3)
    (docker / "Dockerfile").write_text(
        "ARG BASE\nFROM ${BASE}\nCOPY python3 /usr/local/bin/python3\n"
        "RUN chmod 755 /usr/local/bin/python3\n"
    )
    out, tag = _materialized(tmp_path, OLD_PYTHON_SPEC, "bundle-old-python3")
    ran = _run_bundle(out, tag, public_base(CLIENT), tmp_path)
    said = _cell_lines(ran.stdout)
    assert said[0] == (
        '== cell 1 [code=exit 3]: exit 3; expected: {"outcome": "error", "exit_code": 3}; '
        "reproduced"
    ), ran.stdout[-3000:] + ran.stderr[-3000:]
    # Without the init's record, 128 + SIGUSR1 reads both ways, as before it: both fail.
    assert said[1].startswith("== cell 2 [code=kill -USR1 $$]: exit 138 = 128 + SIGUSR1: ")
    assert said[1].endswith("; reproduced")
    assert ran.returncode == 0
    for number in (1, 2):
        assert (out / "results" / str(number) / "output.log").read_text() == "ran\n"
    assert ran.stderr.count("cannot run launch.py") == 1, ran.stderr
    assert not list((out / "results").glob("*/exit.json*"))
    assert not _left_by(ran)


PYTHONPATH_SPEC = """\
reprospec: 1
name: bundle-pythonpath
environment:
  workdir: app
  env: {PYTHONPATH: src}
  perturb: {switch_interval: 0.0001, gc: aggressive}
command: python3 seen.py
files: [src/mylib.py]
run: {timeout: 60s}
expect: {outcome: pass}
"""

# What the program sees of the sitecustomize's perturbations, its own module on src/.
PERTURBED = """\
import faulthandler, gc, sys
import mylib
print("seen", sys.getswitchinterval(), gc.get_threshold(), faulthandler.is_enabled(), mylib.X)
"""


@needs_engine
def test_a_cells_pythonpath_keeps_the_images_sitecustomize(tmp_path: Path) -> None:
    # `-e PYTHONPATH=src` replaced the image's PYTHONPATH: the sitecustomize that
    # applies switch_interval and gc (and arms faulthandler) was never imported.
    base = public_base(CLIENT)
    (tmp_path / "app" / "src").mkdir(parents=True)
    (tmp_path / "app" / "seen.py").write_text(PERTURBED)
    (tmp_path / "app" / "src" / "mylib.py").write_text("X = 'mine'\n")
    out, tag = _materialized(tmp_path, PYTHONPATH_SPEC, "bundle-pythonpath")
    ran = _run_bundle(out, tag, base, tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    seen = (out / "results" / "1" / "output.log").read_text().splitlines()
    assert "seen 9.999999999999999e-05 (1, 1, 1) True mine" in seen, seen
    assert not _left_by(ran)


SLEEP_SPEC = """\
reprospec: 1
name: bundle-sleep
environment:
  workdir: app
  perturb: {cpu_load: 1}
command: python3 -c "import time; time.sleep(120); print('woke')"
run: {timeout: 5m}
expect: {outcome: pass}
"""


@needs_engine
@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_ctrl_c_stops_the_cell_and_judges_nothing(
    tmp_path: Path, sent: signal.Signals, status: int
) -> None:
    # A Ctrl-C never reached the cell (`timeout`'s own process group): it ran to
    # its end, and run.sh judged the SIGPIPE its `tee` left it "NOT reproduced", exit 1.
    # A closed terminal's HUP was not trapped, and run.sh left its containers.
    base = public_base(CLIENT)
    out, tag = _materialized(tmp_path, SLEEP_SPEC, "bundle-sleep")
    try:
        # A terminal's Ctrl-C: SIGINT to run.sh's process group, which it leads here.
        with subprocess.Popen(
            ["bash", str(out / "run.sh")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "BASE": base},
            start_new_session=True,
            preexec_fn=terminal_signals,  # run.sh traps them: not if ignored when it began
        ) as proc:
            names = (f"reprospec-bundle-1-{proc.pid}", f"reprospec-bundle-load-1-{proc.pid}")
            deadline = time.monotonic() + 1200  # the image's build first
            while not set(names) <= set(container_names()):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.5)
            began = time.monotonic()
            os.killpg(proc.pid, sent)
            stdout, stderr = proc.communicate(timeout=60)
            took = time.monotonic() - began
    finally:
        if image.image_present(CLIENT, tag):
            _BUILT.add(CLIENT.images.get(tag).id)
            CLIENT.images.remove(tag, noprune=True)
    assert proc.returncode == status, stdout[-3000:] + stderr[-3000:]
    assert took < 30
    said = _cell_lines(stdout)
    assert said == ["== cell 1 [default]: interrupted"]
    assert "run.sh: interrupted during cell 1" in stderr
    assert "woke" not in (out / "results" / "1" / "output.log").read_text()
    assert not set(names) & set(container_names())


@needs_engine
def test_an_image_that_does_not_build_is_built_once_and_its_cells_are_not_run(
    tmp_path: Path,
) -> None:
    # A failed build returned from the cell before its report, so no cell said
    # `not run` (run.sh exited 3 in silence), and the next cell built the image again.
    spec, tag = _own(SPEC, "bundle-demo")
    done, out = materialize(tmp_path, spec)
    assert done.returncode == 0, done.stderr
    # A base no registry has: the daemon's pull is refused at once (no network needed).
    ran = _run_bundle(out, tag, "127.0.0.1:9/reprospec-no-such-base:none", tmp_path)
    said = _cell_lines(ran.stdout)
    assert said == [
        f"== cell 1 [mode=calm]: the image {tag} did not build (its docker build error is "
        'above); expected: {"outcome": "pass"}; not run',
        f"== cell 2 [mode=crash]: the image {tag} did not build for an earlier cell; "
        'expected: {"outcome": "crash", "signal": "SIGSEGV"}; not run',
    ], ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.returncode == 3  # docker could not run a cell
    # One build: its error once, from the first cell's.
    assert (ran.stdout + ran.stderr).count("connection refused") == 1, ran.stderr
    assert not (out / "results").exists()


RERUN_SPEC = """\
reprospec: 1
name: bundle-rerun
environment:
  workdir: app
files: [mode.txt]
command: python3 pool.py
run: {timeout: 60s}
expect: {outcome: crash, signal: SIGSEGV}
"""

POOL = """\
import ctypes, multiprocessing, sys
def boom():
    ctypes.string_at(0)
if __name__ == "__main__":
    if open("mode.txt").read().strip() == "crash":
        p = multiprocessing.Process(target=boom)
        p.start(); p.join()
        sys.exit(f"worker died: {p.exitcode}")
    raise ValueError("another failure")
"""


@needs_engine
def test_a_cell_run_again_is_judged_on_its_own_run_not_the_earlier_ones(tmp_path: Path) -> None:
    # results/N/events.jsonl is appended to: a rerun (the README's advice for a flaky cell)
    # that raised a ValueError was read as the earlier run's child_exit SIGSEGV, reproduced.
    base = public_base(CLIENT)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "pool.py").write_text(POOL)
    (tmp_path / "app" / "mode.txt").write_text("crash\n")
    out, tag = _materialized(tmp_path, RERUN_SPEC, "bundle-rerun")
    first = _run_bundle(out, tag, base, tmp_path)
    assert _cell_lines(first.stdout)[0].startswith(
        "== cell 1 [default]: crash SIGSEGV (child): child pid "
    ), first.stdout[-3000:] + first.stderr[-3000:]
    (out / "workdirs" / "1" / "mode.txt").write_text("other\n")
    again = _run_bundle(out, tag, base, tmp_path)
    assert _cell_lines(again.stdout) == [
        '== cell 1 [default]: exit 1; expected: {"outcome": "crash", "signal": "SIGSEGV"}; '
        "NOT reproduced"
    ], again.stdout[-3000:]
    assert again.returncode == 1
    assert not _left_by(first)
    assert not _left_by(again)
