"""The docker runner without an engine: container config, exit statuses, workdirs, a missing
engine."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec.errors import InfraError, UsageError
from reprospec.runners.docker import image
from reprospec.runners.docker.container import (
    EXIT_JSON,
    EXIT_STARTED,
    IN_EXIT,
    IN_LAUNCH,
    container_workdir,
    read_only_clash,
)
from reprospec.runners.docker.engine import (
    ExitRecord,
    container_config,
    init_missing,
    init_started,
    returncode_from_status,
    under_init,
)
from reprospec.runners.docker.runner import DockerRunner
from tests.support.docker import (
    CLIENT,
    make_plan,
    require_image,
)


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    return DockerRunner(client=CLIENT)


# -- without an engine -----------------------------------------------------------------


def test_no_engine_is_an_infra_error_with_the_address() -> None:
    runner = DockerRunner(base_url="unix:///nonexistent/docker.sock")
    with pytest.raises(InfraError) as err:
        runner.prepare([])
    assert str(err.value) == (
        "no Docker engine answered at unix:///nonexistent/docker.sock; is dockerd running? "
        "(`reprospec docker setup` installs and starts one, and builds the runner's images)"
    )
    assert err.value.exit_code == 3


def test_no_engine_run_is_an_infra_execution(tmp_path: Path) -> None:
    runner = DockerRunner(base_url="unix:///nonexistent/docker.sock")
    execution = runner.run(make_plan(["true"], tmp_path), tmp_path / "a")
    assert execution.returncode is None
    assert execution.infra_error is not None
    assert "no Docker engine answered" in execution.infra_error


@pytest.mark.parametrize(
    ("status", "oom", "expected"),
    [
        (0, False, 0),
        (3, False, 3),
        (139, False, -11),
        (134, False, -6),
        (135, False, -7),
        (137, False, -9),
        (137, True, -9),
        (1, True, -9),
        (200, False, 200),
        (128, False, 128),
    ],
)
def test_exit_status_becomes_a_subprocess_returncode(status: int, oom: bool, expected: int) -> None:
    assert returncode_from_status(status, oom) == expected


@pytest.mark.parametrize(
    ("status", "recorded", "expected"),
    [
        (138, -10, -10),  # SIGUSR1: 128 + 10 is no exit of the program's
        (138, 138, 138),  # sys.exit(138): no death
        (139, 139, 139),  # sys.exit(139): no SIGSEGV either
        (139, -11, -11),
        (137, -10, -9),  # killed past the record (the timeout's kill): the container's word
        (3, 3, 3),
    ],
)
def test_the_inits_record_says_what_a_status_was(status: int, recorded: int, expected: int) -> None:
    assert returncode_from_status(status, False, ExitRecord(pid=7, returncode=recorded)) == expected


@pytest.mark.parametrize(
    ("status", "recorded", "expected"),
    [
        (0, 0, 0),  # its worker was killed, the command exited 0: no SIGKILL of its own
        (1, 1, 1),
        (137, -9, -9),
        (137, 137, 137),  # a shell's report of its program's SIGKILL, read as that
        (0, -10, -9),  # no record of this end (the init was killed): the container's word
    ],
)
def test_an_oom_kill_is_the_commands_death_only_where_its_record_does_not_say_otherwise(
    status: int, recorded: int, expected: int
) -> None:
    record = ExitRecord(pid=7, returncode=recorded)
    assert returncode_from_status(status, True, record) == expected


def test_an_exit_record_is_taken_whole_or_not_at_all(tmp_path: Path) -> None:
    assert ExitRecord.take(tmp_path) is None
    record = tmp_path / EXIT_JSON
    for text in ('{"pid": 7', '{"pid": 7, "returncode": true}', "[7, -10]", '{"pid": 7}'):
        record.write_text(text)
        assert ExitRecord.take(tmp_path) is None, text
    record.write_text('{"pid": 7, "returncode": -10}')
    (tmp_path / f"{EXIT_JSON}.partial").write_text('{"pid": 8')
    (tmp_path / EXIT_STARTED).write_text("")
    assert init_started(tmp_path)
    assert ExitRecord.take(tmp_path) == ExitRecord(pid=7, returncode=-10)
    assert ExitRecord(pid=7, returncode=-10).status == 138
    assert list(tmp_path.iterdir()) == []  # the attempt folder keeps the protocol's files
    assert not init_started(tmp_path)


def test_under_init_runs_the_command_under_launch_py(tmp_path: Path) -> None:
    config = container_config(
        make_plan(["python3", "-c", "pass"], tmp_path),
        image="img",
        argv=["python3", "-c", "pass"],
        log_dir=tmp_path,
        token="t" * 32,
    )
    assert config["init"] is True
    assert any(m["Target"] == IN_LAUNCH for m in config["mounts"])
    wrapped = under_init(config)
    assert wrapped["entrypoint"] == ["python3", "-S", "-E", IN_LAUNCH]
    assert wrapped["command"] == ["--init", IN_EXIT, "--", "python3", "-c", "pass"]
    assert wrapped["init"] is False
    assert (config["entrypoint"], config["init"]) == (["python3"], True)  # left as it was


def test_a_read_only_folder_is_mounted_read_only_at_its_own_path(tmp_path: Path) -> None:
    # RunOptions.read_only: a minimize candidate's links name the original workdir by its
    # path (under /var too, where the candidate's own folder is /work), read, never written.
    plan = make_plan(["python3", "-c", "pass"], tmp_path)
    plain = container_config(plan, image="img", argv=["python3"], log_dir=tmp_path, token="t")
    config = container_config(
        plan,
        image="img",
        argv=["python3"],
        log_dir=tmp_path,
        token="t",
        read_only=Path("/var/tmp/proj"),
    )
    added = [m for m in config["mounts"] if m not in plain["mounts"]]
    assert [(m["Target"], m["Source"], m["ReadOnly"]) for m in added] == [
        ("/var/tmp/proj", "/var/tmp/proj", True)
    ]


def test_a_read_only_folder_that_would_hide_the_containers_own_is_refused() -> None:
    # Mounted at its own path, it escapes container_workdir's rule: /tmp (a non-root user's
    # HOME there), /root and /var hid the image's own, read-only; /work was docker's
    # "Duplicate mount point" where the attempt's own workdir (under /var) is /work too,
    # and /work/proj a folder mounted into it, made empty and root's in the host's folder.
    candidate, under_var = Path("/tmp/out/minimize/x"), Path("/var/tmp/out/minimize/x")
    for folder in ("/", "/tmp", "/root", "/var", "/usr", "/opt"):
        assert read_only_clash(Path(folder), candidate) == f"{folder} is the system's own there"
    # Compared folded (links kept): `..` and `//` passed as text, and mounted the host's /tmp.
    for given, folder in (
        ("/tmp/a/..", "/tmp"),
        ("//", "/"),
        ("//tmp", "/tmp"),
        ("/x/../var", "/var"),
    ):
        assert read_only_clash(Path(given), candidate) == f"{folder} is the system's own there"
    assert read_only_clash(Path("/tmp/rvwd/a/../../../tmp"), candidate) is not None
    assert (
        read_only_clash(Path("/proc/1"), candidate) == "/proc/1 is below /proc, the container's own"
    )
    assert read_only_clash(Path("/reprospec/x"), candidate) is not None  # the runner's mounts
    for folder in ("/work", "/work/proj"):
        clash = read_only_clash(Path(folder), under_var)
        assert clash is not None
        assert clash.startswith(f"{folder} is at or below /work"), clash
        # Where the attempt's own workdir is its own path, /work is a folder as any other.
        assert read_only_clash(Path(folder), candidate) is None
    # Below a system root (not the root itself), where nothing of the image is: mounted.
    for folder in ("/var/tmp/proj", "/root/proj", "/tmp/proj", "/home/me/proj"):
        assert read_only_clash(Path(folder), under_var) is None, folder


def test_the_runner_refuses_a_clashing_read_only_folder_before_any_attempt(
    tmp_path: Path,
) -> None:
    # RunOptions.read_only from the Python API: refused at prepare, before the image is
    # looked for, the run's usage error (exit 2), where each attempt was an infra-error.
    docker = DockerRunner(read_only=Path("/tmp"))
    with pytest.raises(UsageError, match=r"^read_only /tmp: cannot be mounted read-only at its"):
        docker.prepare([make_plan(["python3", "-c", "pass"], tmp_path)])


def test_an_image_without_python3_is_told_from_other_start_failures() -> None:
    runc = (
        "the container could not start: failed to create shim task: OCI runtime create failed: "
        'runc create failed: unable to start container process: exec: "python3": executable '
        "file not found in $PATH: unknown"
    )
    assert init_missing(runc)
    assert not init_missing(runc.replace("python3", "nvidia-smi"))
    assert not init_missing(None)


def test_workdir_keeps_its_path_unless_it_shadows_the_system() -> None:
    assert container_workdir(Path("/home/me/proj")) == "/home/me/proj"
    assert container_workdir(Path("/tmp/x")) == "/tmp/x"
    assert container_workdir(Path("/usr/src/app")) == "/work"
    assert container_workdir(Path("/")) == "/work"


def test_container_config_gpus_network_limits(tmp_path: Path) -> None:
    plan = make_plan(
        ["python3", "x.py"],
        tmp_path,
        env={"A": "1", "PYTHONPATH": "/mine"},
        environment={"shm_size": "64m", "memory": "1g", "network": False, "gpus": 2},
    )
    config = container_config(
        plan,
        image="img",
        argv=["python3", "x.py"],
        log_dir=tmp_path,
        token="t" * 32,
        gpu_slot=("3", "5"),
        # The image's own copy of the stackdump is left out: ours is mounted.
        image_pythonpath="/opt/reprospec/harness:/img:/opt/reprospec/stackdump/",
    )
    assert config["init"] is True
    assert config["network_mode"] == "none"
    assert config["shm_size"] == 64 << 20
    # Swap included: docker's default swap limit (twice the memory) let it swap past it.
    assert config["mem_limit"] == config["memswap_limit"] == 1 << 30
    request = config["device_requests"][0]
    assert request["DeviceIDs"] == ["3", "5"]
    assert request["Capabilities"] == [["gpu"]]
    env = config["environment"]
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["PYTHONPATH"] == "/reprospec/stackdump:/mine:/opt/reprospec/harness:/img"
    assert env["REPROSPEC_EVENTS"] == "/reprospec/attempt/events.jsonl"
    assert "REPROSPEC_CELL" not in env
    assert config["entrypoint"] == ["python3"]
    assert config["command"] == ["x.py"]
    counted = container_config(
        make_plan(["true"], tmp_path, environment={"gpus": 1}),
        image="img",
        argv=["true"],
        log_dir=tmp_path,
        token="t" * 32,
    )
    assert counted["device_requests"][0]["Count"] == 1
    assert (
        container_config(
            make_plan(["true"], tmp_path, environment={"network": True}),
            image="img",
            argv=["true"],
            log_dir=tmp_path,
            token="t" * 32,
        )["network_mode"]
        == "bridge"
    )


def test_missing_packages_of_a_dockerfile_image_say_they_are_not_installed_into_it(
    tmp_path: Path,
) -> None:
    # `dockerfile` with `packages`: every cell was "six is not installed", which read as a
    # failed install, where a Dockerfile's image gets none (they are only checked).
    from reprospec.runners.docker.probe import dockerfile_note

    (tmp_path / "Dockerfile").write_text("FROM reprospec-base:bookworm\n")
    plan = make_plan(["true"], tmp_path, environment={"dockerfile": "Dockerfile"})
    assert dockerfile_note(plan) == (
        "; an image built from environment.dockerfile (Dockerfile) gets no `packages` "
        "installed: install them in the Dockerfile, or leave them out of the spec"
    )
    assert dockerfile_note(make_plan(["true"], tmp_path)) == ""


def test_a_path_package_of_a_dockerfile_image_is_refused_not_run_unchecked(
    tmp_path: Path,
) -> None:
    # The refusal of `./mypkg` in a built image says to install it in a Dockerfile; there
    # it named no distribution, packages_refused returned None and the cell ran unchecked.
    from reprospec.runners.docker.probe import ProbeHost, packages_refused

    (tmp_path / "Dockerfile").write_text("FROM reprospec-base:bookworm\n")
    plan = make_plan(
        ["true"], tmp_path, environment={"dockerfile": "Dockerfile", "packages": ["./mypkg"]}
    )
    no_engine = cast("ProbeHost", None)  # refused before any container is asked for
    reason = packages_refused(no_engine, plan, tmp_path)
    assert reason is not None
    assert reason.startswith("cannot check the cell's packages: './mypkg' names no distribution")
    assert "environment.dockerfile (Dockerfile) gets no `packages` installed" in reason
