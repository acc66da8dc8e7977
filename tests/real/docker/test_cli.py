"""`reprospec run --runner docker` against `--runner local`: same specs, same verdicts."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import CHILDREN, ROOT

# Real-engine tests: `pytest -m "not docker and not slurm"` runs the unit suite alone.
pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec import native  # noqa: E402
from reprospec.core.units import parse_size  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from tests.support.cli import Cli, ExampleRun  # noqa: E402
from tests.support.docker import CLIENT, SHM_CACHE, needs_engine, require_image  # noqa: E402
from tests.support.envs import make_releases  # noqa: E402

# What must agree between the runners, per attempt. A crash's `exception` is how the main
# process noticed a dead worker, which torch words by timing (the DataLoader's RuntimeError,
# or the pin-memory thread's ConnectionResetError): not a fact of the crash.
SAME = ("kind", "signal", "where", "exception", "phase", "step")


def _same(outcome: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        None if k == "exception" and outcome.get("kind") == "crash" else outcome.get(k)
        for k in SAME
    )


def _pipeline_ready() -> str | None:
    for module in ("reprospec.outcome.classify", "reprospec.outcome.judge"):
        try:
            __import__(module)
        except ImportError:
            return f"skipped: {module} is not there yet, so `reprospec run` cannot finish"
    return None


def _cells(results: dict[str, Any]) -> dict[str, tuple[str, list[tuple[Any, ...]]]]:
    return {
        cell["id"]: (
            cell["verdict"],
            [_same(a.get("outcome") or {}) for a in cell["attempts"]],
        )
        for cell in results["cells"]
    }


# The segfault example's cells with DataLoader workers (the crash, pinned memory, and the
# pass without it): what a container changes for a worker (/dev/shm, the forks, the core) is
# there; the cells without workers repeat the exception example's main-process path, and
# each cell is a container that imports torch.
CELLS = {"segfault": ("-m", "num_workers=2")}


@needs_engine
@pytest.mark.parametrize("spec", ["segfault", "hang", "exception"])
def test_same_verdicts_local_and_docker(cli: Cli, example_run: ExampleRun, spec: str) -> None:
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    require_image(CLIENT, image.DEFAULT_IMAGE)
    path = str(ROOT / "specs" / f"{spec}.yaml")
    local = example_run(f"{spec}.yaml")  # the examples' own run: `-j 2`, the local runner
    docker = cli("run", path, "--runner", "docker", "-j", "2", *CELLS.get(spec, ()))
    assert local.code == docker.code == 0, (local.stderr[-2000:], docker.stderr[-2000:])
    local_cells, docker_cells = _cells(local.results()), _cells(docker.results())
    if spec in CELLS:  # the two cells with workers: the crash, and the pass beside it
        local_cells = {k: v for k, v in local_cells.items() if "num_workers=2" in k}
        assert len(local_cells) == 2, local_cells
    assert docker_cells == local_cells
    assert docker.results()["runner"] == "docker"
    assert all(verdict == "reproduced" for verdict, _ in docker_cells.values())
    # The environment's probe is no attempt: no records of its processes.
    left = [p.name for p in docker.latest_run().glob("*.txt")]
    assert not left, left


@needs_engine
def test_missing_image_is_exit_3(cli: Cli, tmp_path: Path) -> None:
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: absent-image\nenvironment: {image: 'reprospec-absent:1'}\n"
        "command: [python3, -c, pass]\nexpect: {outcome: pass}\n"
    )
    done = cli("run", str(spec), "--runner", "docker")
    assert done.code == 3, done.stderr
    assert "reprospec-absent:1 is missing" in done.stderr
    assert "docker pull reprospec-absent:1" in done.stderr


def _remove_images(holds: str) -> None:
    """Remove the images the docker runner built whose packages or Dockerfile label holds
    `holds` (this test's own: a wheel or a folder no other test has). The engine's list
    alone, its labels in it: `images.list()` inspects each image it lists, and another
    test's image removed between the two failed this one with a 404."""
    import docker.errors

    for built in CLIENT.api.images(filters={"label": image.HASH_LABEL}):
        labels = built.get("Labels") or {}
        held = (labels.get(image.PACKAGES_LABEL, ""), labels.get(image.DOCKERFILE_LABEL, ""))
        if any(holds in value for value in held):
            with contextlib.suppress(docker.errors.NotFound):  # another test's removal
                CLIENT.images.remove(built["Id"], force=True)


@needs_engine
def test_an_image_that_cannot_be_built_is_its_cells_infra_error(cli: Cli, tmp_path: Path) -> None:
    """One cell's image fails to build (a release with no wheel that will not build, as
    pyyaml 5.4.1 under Cython 3): that cell is `infra-error` naming why, and the cell
    beside it still runs, as under the venv runner; the run was once ended at the build,
    exit 3 with no table and no run folder, and `bisect --runner docker` with it."""
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    require_image(CLIENT, image.DEFAULT_IMAGE)
    for name, step in (
        ("ok", ""),
        ("broken", "RUN python3 -c 'raise RuntimeError(\"no wheel\")'\n"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Dockerfile").write_text(f"FROM {image.DEFAULT_IMAGE}\n{step}")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: one-image-fails\n"
        "environment: {dockerfile: '${{ matrix.df }}'}\n"
        "matrix: {df: [ok/Dockerfile, broken/Dockerfile]}\n"
        "command: [python3, -c, pass]\nexpect: {outcome: pass}\n"
    )
    try:
        done = cli("run", str(spec), "--runner", "docker")
    finally:
        _remove_images(str(tmp_path))
    assert done.code == 3, done.stderr[-3000:]
    cells = {cell["id"]: cell for cell in done.results()["cells"]}
    assert cells["df=ok/Dockerfile"]["verdict"] == "reproduced"
    broken = cells["df=broken/Dockerfile"]
    assert broken["verdict"] == "infra-error"
    (attempt,) = broken["attempts"]
    assert attempt["infra_error"].startswith("docker build of reprospec-env:")
    assert "(RuntimeError: no wheel)" in attempt["infra_error"]
    # The whole tail once on stderr, as text: pip's colours are not in it.
    assert "build log tail:" in done.stderr
    assert "\x1b" not in done.stderr


@needs_engine
def test_a_bundle_of_a_specs_dockerfile_reruns_its_image_away_from_here(
    cli: Cli, tmp_path: Path
) -> None:
    """The archive of a run of a spec with `environment.dockerfile` lacked the
    Dockerfile and what it COPYs: `bundle --verify`'s rerun was infra-error
    (`environment.dockerfile not found`), and a recipient's every cell."""
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    require_image(CLIENT, image.DEFAULT_IMAGE)
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "Dockerfile").write_text(f"FROM {image.DEFAULT_IMAGE}\nCOPY greeting.txt /opt/\n")
    (docker / "greeting.txt").write_text("hello from the context\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: own-dockerfile\nenvironment: {dockerfile: docker/Dockerfile}\n"
        "command: [python3, -c, \"print(open('/opt/greeting.txt').read())\"]\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    try:
        done = cli("run", str(spec), "--runner", "docker", "--out", str(out))
        assert done.code == 0, done.stdout + done.stderr[-3000:]
        archive = tmp_path / "b.tgz"
        checked = cli(
            "bundle", "latest", "-o", str(archive), "--out", str(out), "--verify",
            env={"TMPDIR": str(tmp_path)},
        )  # fmt: skip
    finally:
        _remove_images(str(tmp_path))
    assert checked.code == 0, checked.stdout + checked.stderr[-3000:]
    assert "1/1 cell of run" in checked.stdout
    assert "came back as in the run" in checked.stdout


@needs_engine
def test_bisect_skips_a_release_whose_image_cannot_be_built(cli: Cli, tmp_path: Path) -> None:
    """`bisect --runner docker` over 1.0..1.3 of a package whose 1.1 is an sdist that cannot
    build: 1.1 is skipped with the build's reason and the answer names it, as the venv
    bisect does (cli.md); the bisect once ended at that build, exit 3 and no answer."""
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    require_image(CLIENT, image.DEFAULT_IMAGE)
    name = "reprospec-dockerbisect"
    wheels = make_releases(
        tmp_path / "wheels", name, 4, lambda minor: f"REGRESSED = {minor >= 2}\n", broken="1.1"
    )
    (tmp_path / "check.py").write_text(
        "import reprospec_dockerbisect as d\nif d.REGRESSED:\n    raise ValueError('regressed')\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"reprospec: 1\nname: docker-bisect\nenvironment: {{packages: ['{name}==1.3']}}\n"
        "command: python check.py\nexpect: {outcome: error, exception: ValueError}\n"
    )
    try:
        done = cli(
            "bisect",
            str(spec),
            "--runner",
            "docker",
            "--package",
            name,
            "--good",
            "1.0",
            "--bad",
            "1.3",
            "--find-links",
            str(wheels),
            "--format",
            "json",
            "--out",
            str(tmp_path / "out"),
            "--budget",
            "40",
        )
    finally:
        _remove_images(f"{name}==")
    assert done.code == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert (result["first_bad"], result["last_good"]) == ("1.2", "1.0")
    assert result["untestable_between"] == ["1.1"]
    tested = {t["version"]: t for t in result["tested"]}
    assert tested["1.1"]["state"] == "skipped"
    assert tested["1.1"]["infra_error"].startswith("docker build of reprospec-env:")
    assert "cannot build" in tested["1.1"]["infra_error"]


SHM_SPEC = """\
reprospec: 1
name: shm-bus-error
title: DataLoader workers die of SIGBUS when /dev/shm is small
environment:
  shm_size: ${{ matrix.shm }}
matrix:
  shm: [2m, 64m]
workload:
  model: {builtin: mlp}
  data:
    dataset: {entrypoint: "shm_cache:build", params: {size: 256}}
    loader: {batch_size: 16, num_workers: 2, multiprocessing_context: fork}
  phases: [{name: train, steps: 8}]
run:
  timeout: 5m
expect:
  outcome: crash
  signal: SIGBUS
  cases:
    - when: {shm: 64m}
      outcome: pass
"""


@needs_engine
def test_small_shm_reproduces_the_bus_error_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    reason = _pipeline_ready()
    if reason:
        pytest.skip(reason)
    require_image(CLIENT, image.DEFAULT_IMAGE)
    (tmp_path / "shm_cache.py").write_text(SHM_CACHE)
    (tmp_path / "spec.yaml").write_text(SHM_SPEC)
    done = cli("run", str(tmp_path / "spec.yaml"), "--runner", "docker", "-j", "2")
    assert done.code == 0, done.stderr[-3000:]
    cells = {c["id"]: c for c in done.results()["cells"]}
    small = cells["shm=2m"]["attempts"][0]["outcome"]
    assert (small["kind"], small["signal"], small["where"]) == ("crash", "SIGBUS", "worker")
    assert cells["shm=64m"]["attempts"][0]["outcome"]["kind"] == "pass"
    # What the container was given and what its worker said (the runner's side of it).
    crashed = done.latest_run() / "cells" / "shm=2m" / "1"
    cell = json.loads((crashed / "cell.json").read_text())
    assert cell["environment"]["shm_size"] == parse_size("2m")
    assert cell["workload"]["data"]["loader"]["num_workers"] == 2
    # How the main process notices the dead worker is a race in torch (the DataLoader's
    # "is killed by signal: Bus error", or the pin-memory thread's ConnectionResetError,
    # more often while the worker dumps its core for native stacks); the worker's own
    # reports are always there, though the main process's traceback may be written into
    # the middle of the worker's line ("Fatal Python error: Traceback ...\nBus error"):
    # both write to the one stderr at once.
    stderr = (crashed / "stderr.log").read_text()
    assert "Fatal Python error: " in stderr
    # Two workers' reports can interleave the same way, either one's prefix before the
    # other's ("Fatal Python error: Fatal Python error: Bus error") or one's whole line
    # run into the next ("Fatal Python error: Bus errorFatal Python error: Bus error"):
    # each seen once in a full suite. The line's start is the worker's either way.
    assert re.search(r"^(Fatal Python error: )*Bus error", stderr, re.MULTILINE), stderr[-3000:]
    assert "insufficient shared memory (shm)" in stderr


@needs_engine
def test_a_stall_ends_a_container_attempt_before_its_timeout(cli: Cli, tmp_path: Path) -> None:
    """`run.stall` in the docker runner: the wait between the container's checks asks the
    same progress watch as the local runner's loop, and the hang says which limit fired."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: docker-stall\n"
        "command: python3 -c \"import time; print('step 1', flush=True); time.sleep(300)\"\n"
        "run: {timeout: 120s, stall: 3s}\nexpect: {outcome: hang}\n"
    )
    done = cli("run", str(spec), "--runner", "docker")
    assert done.code == 0, done.stderr[-2000:]
    (attempt,) = done.results()["cells"][0]["attempts"]
    assert attempt["outcome"]["kind"] == "hang"
    assert attempt["duration_s"] < 60  # the stall ended it, not the 120 s timeout
    assert attempt["outcome"]["detail"].startswith("no progress for 3 s (run.stall)")
    assert "no progress for 3 s (run.stall)" in (done.latest_run() / "report.md").read_text()


@needs_engine
def test_a_starved_container_attempt_is_no_stall(cli: Cli, tmp_path: Path) -> None:
    """The time the container's processes waited for a CPU is not counted: with the engine on
    this machine, the runner reads their waits as the local runner does (process/cpuwait.py)."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    starved = (CHILDREN / "starved.py").read_text(encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: docker-starved\n"
        f"command: [python3, -c, {json.dumps(starved)}]\n"
        "run: {timeout: 120s, stall: 1s}\nexpect: {outcome: pass}\n"
    )
    done = cli("run", str(spec), "--runner", "docker")
    (attempt,) = done.results()["cells"][0]["attempts"]
    assert done.code == 0, attempt["outcome"]
    # Seconds without a line, past its 1 s stall: the wall clock alone called it a hang.
    assert attempt["duration_s"] > 2.5, attempt["duration_s"]


# A program that dies of SIGUSR1 and one that exits 138: the container's status is 128 + 10
# for both, which the docker runner read as `error exit 138` for both.
_SIGNAL_OR_EXIT = """\
reprospec: 1
name: docker-signal-or-exit
matrix:
  end: ["os.kill(os.getpid(), signal.SIGUSR1)", "sys.exit(138)"]
command: [python3, -c, "import os, signal, sys; ${{ matrix.end }}"]
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGUSR1
  cases:
    - when: {end: "sys.exit(138)"}
      outcome: error
      exit_code: 138
"""


@needs_engine
def test_a_death_by_sigusr1_and_an_exit_138_read_as_the_local_runner_reads_them(
    cli: Cli, tmp_path: Path
) -> None:
    """The container's init records the program's wait status: the same outcome, word for
    word, as the local runner's, where the death read `error exit 138` under docker."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(_SIGNAL_OR_EXIT)
    keys = ("kind", "signal", "exit_code", "where", "signature", "detail")
    outcomes = {}
    for runner in ("local", "docker"):
        done = cli("run", str(spec), "--runner", runner)
        assert done.code == 0, (runner, done.stderr[-2000:])
        outcomes[runner] = {
            cell["id"]: [{k: a["outcome"].get(k) for k in keys} for a in cell["attempts"]]
            for cell in done.results()["cells"]
        }
    assert outcomes["docker"] == outcomes["local"]
    died = outcomes["docker"]["end=os.kill(os.getpid(), signal.SIGUSR1)"]
    exited = outcomes["docker"]["end=sys.exit(138)"]
    assert [(o["kind"], o["signal"], o["where"]) for o in died] == [("crash", "SIGUSR1", "main")]
    assert [(o["kind"], o["exit_code"]) for o in exited] == [("error", 138)]


@needs_engine
def test_doctor_for_the_docker_runner_checks_the_engine_and_each_cells_image(
    cli: Cli, tmp_path: Path
) -> None:
    # `doctor --runner docker` passed a spec whose every cell was then `infra-error: docker
    # image ... is missing`, and judged /dev/shm by this machine's, not the container's.
    # One line per image, however many cells run in it (the `mode` cells gave two each).
    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: images\n"
        "matrix: {img: [reprospec-runner:latest, reprospec-test-absent:never], mode: [a, b]}\n"
        "environment: {image: '${{ matrix.img }}', env: {MODE: '${{ matrix.mode }}'}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    result = cli("doctor", str(spec), "--runner", "docker", "--format", "json")
    assert result.code == 1, result.stderr
    checks = json.loads(result.stdout)
    images = [(c["status"], c["why"]) for c in checks if c["name"] == "docker-image"]
    assert images == [
        ("pass", f"image {image.DEFAULT_IMAGE} is here"),
        (
            "fail",
            "docker image reprospec-test-absent:never is missing (reprospec never pulls "
            "implicitly): run `docker pull reprospec-test-absent:never` or build it; every "
            "cell of it is an infra error, not run",
        ),
    ]
    assert [c["status"] for c in checks if c["name"] == "docker"] == ["pass"]
    # The image's checks made in the one here, and skipped for the absent one's cells (they
    # were neither made nor skipped, the header naming the image here alone).
    absent = "image reprospec-test-absent:never is not here: checked in it once it is"
    skipped = {c["name"] for c in checks if c["why"] == absent and c["status"] == "skipped"}
    assert {"torch", "nvcc", "spec-environment", "native-stacks"} <= skipped, checks
    (shm,) = (c for c in checks if c["name"] == "shm")
    # The container's /dev/shm, not this machine's; a spec of `true` starts no DataLoader
    # worker, so the check is skipped, saying the container's 64 MiB (bae5ee5a: the shm
    # check is one of torch's).
    assert shm["status"] == "skipped", shm
    said = "the spec needs no torch (the container's /dev/shm (docker's default; "
    assert shm["why"].startswith(said), shm


_KILL_SELF = """\
reprospec: 1
name: kill-self
files: [crash.py]
command: python crash.py
expect:
  outcome: crash
  signal: SIGSEGV
"""


@needs_engine
def test_compare_of_a_local_and_a_docker_run_of_one_crash_is_no_changed_outcome(
    cli: Cli, tmp_path: Path
) -> None:
    """The local run's top frame is `os_kill_impl@libpython3.11`, the image's Python has no
    symbols (`??@python3.11`): compare said `outcome changed` of the one os.kill."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    (tmp_path / "crash.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(_KILL_SELF)
    runs = []
    for runner in ("local", "docker"):
        done = cli("run", str(spec), "--runner", runner, cwd=tmp_path)
        assert done.code == 0, (runner, done.stderr[-2000:])
        runs.append(str(done.latest_run()))
    compared = cli("compare", *runs, "--format", "json", cwd=tmp_path)
    assert compared.code == 0, compared.stderr[-2000:]
    assert json.loads(compared.stdout)["cells"] == [], compared.stdout[-2000:]


@needs_engine
def test_doctor_for_the_docker_runner_checks_the_image_not_the_host(
    cli: Cli, tmp_path: Path
) -> None:
    """It passed the host's `nvcc 13.0 at /usr/local/bin/nvcc`, `starter` and `native-stacks:
    eu-stack at /usr/bin/eu-stack`, none of which a container of the image uses."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: in-image\n"
        f"environment: {{image: '{image.DEFAULT_IMAGE}'}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    result = cli("doctor", str(spec), "--runner", "docker", "--format", "json")
    assert result.code == 0, result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    inside = f"in image {image.DEFAULT_IMAGE}: "
    for name in ("torch", "nvcc", "cpu-capability", "spec-environment"):
        assert checks[name]["why"].startswith(inside), checks[name]
    # The image has no nvcc (the host's /usr/local/bin/nvcc is not the attempts').
    assert "nvcc not found" in checks["nvcc"]["why"], checks["nvcc"]
    assert checks["native-stacks"] == {
        "name": "native-stacks",
        "status": "pass",
        "why": f"gdb runs in image {image.DEFAULT_IMAGE}; its cores go to the host's "
        f"kernel.core_pattern={native.core_pattern().raw!r}",
        "todo": "",
    }
    for name in ("starter", "cuda-libraries", "sanitizer", "cuda-smoke"):
        assert checks[name]["status"] == "skipped", checks[name]
    bare = cli("doctor", "--runner", "docker", "--format", "json")
    skipped = {c["name"] for c in json.loads(bare.stdout) if c["status"] == "skipped"}
    assert {"torch", "nvcc", "native-stacks", "starter", "shm"} <= skipped, bare.stdout


@needs_engine
def test_doctor_for_the_docker_runner_names_the_image_its_find_links_run_builds(
    cli: Cli, tmp_path: Path
) -> None:
    """The wheels of `--find-links` are part of a packages image's tag: doctor took no
    `--find-links` with `--runner docker` (exit 2), and without it named, and checked, an
    image `run --runner docker --find-links DIR` never builds."""
    from reprospec.core.sections import Environment
    from tests.support.envs import make_wheel

    require_image(CLIENT, image.DEFAULT_IMAGE)
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "reprospec-envdemo", "1.0", "VERSION = '1.0'\n")
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: wheels\nenvironment: {packages: ['reprospec-envdemo==1.0']}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    built = Environment(workdir=tmp_path, packages=("reprospec-envdemo==1.0",))
    tag = image.recipe_for(built, spec_dir=tmp_path, find_links=wheels).tag
    assert tag != image.recipe_for(built, spec_dir=tmp_path, find_links=None).tag  # (doctor's)
    argv = ("doctor", "spec.yaml", "--runner", "docker", "--format", "json")
    done = cli(*argv, "--find-links", str(wheels), cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    lines = [c["why"] for c in json.loads(done.stdout) if c["name"] == "docker-image"]
    # (here already where an earlier run of the same wheel built it)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"image {tag} is "), lines
    # Still refused where nothing would read it: the local runner builds no image.
    local = cli("doctor", "spec.yaml", "--find-links", str(wheels), cwd=tmp_path)
    assert local.code == 2, local.stdout + local.stderr
    assert "for --runner venv or docker with a SPEC only" in local.stderr
