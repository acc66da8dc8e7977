"""Helpers for the docker tests: the engine (or why it is absent), hand-built plans, wheels."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reprospec.core.inputs import AttemptPlan, Cell, Marker
from reprospec.errors import InfraError
from reprospec.runners.docker import image as dockerimage
from reprospec.runners.docker.engine import connect, engine_url
from reprospec.runners.docker.sdk import DockerClient
from tests.support import envs
from tests.support.plans import attempt_plan

IN_CI = os.environ.get("CI") == "true"


def _engine() -> tuple[Any, str]:
    try:
        return connect(), ""
    except InfraError:
        return None, f"skipped: no docker engine answered at {engine_url()}"


CLIENT, NO_ENGINE = _engine()
_T = TypeVar("_T", bound=Callable[..., object])


def needs_engine(test: _T) -> _T:
    """A test that talks to the Docker engine: a `docker` test by construction (so
    `pytest -m "not docker"` leaves it out), skipped with the reason when no engine answers
    outside CI (in CI a missing engine is a failure)."""
    skip = pytest.mark.skipif(CLIENT is None and not IN_CI, reason=NO_ENGINE)
    marked: _T = pytest.mark.docker(skip(test))
    return marked


def make_plan(
    argv: Sequence[str] | None,
    workdir: Path,
    *,
    timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
    environment: Mapping[str, Any] | None = None,
    workload: Mapping[str, Any] | None = None,
    markers: tuple[Marker, ...] = (),
    cell_id: str = "c",
) -> AttemptPlan:
    """A hand-built plan, as plan.plan_attempt would give it."""
    return attempt_plan(
        argv,
        workdir,
        timeout_s=timeout_s,
        env=env,
        environment=environment,
        workload=dict(workload) if workload is not None else None,
        markers=markers,
        cell=Cell(id=cell_id, index=0, matrix={}),
        spec_name="docker-test",
    )


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


def require_image(client: DockerClient | None, image: str) -> None:
    """Skip (fail in CI) when `image` is not on the engine."""
    if client is None:
        if IN_CI:
            pytest.fail(NO_ENGINE)
        pytest.skip(NO_ENGINE)
    if not dockerimage.image_present(client, image):
        reason = f"{image} is missing: run scripts/docker-setup.sh"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(f"skipped: {reason}")


# A Debian bookworm root filesystem as Docker Hub's debian:bookworm-slim has it (minbase, no
# Python), made from the Debian archive: bundles build from it here, where no registry answers.
PUBLIC_BASE_STAND_IN = "reprospec-test/debian:bookworm-minbase"


def public_base(client: DockerClient | None) -> str:
    """The stand-in for `debian:bookworm-slim` (built once with mmdebstrap, then kept)."""
    if client is None:
        pytest.fail(NO_ENGINE)
    if dockerimage.image_present(client, PUBLIC_BASE_STAND_IN):
        return PUBLIC_BASE_STAND_IN
    if shutil.which("mmdebstrap") is None:
        reason = "mmdebstrap is missing (scripts/docker-setup.sh installs it)"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(f"skipped: {reason}")
    error = build_public_base()
    if error is not None:
        pytest.fail(error)
    return PUBLIC_BASE_STAND_IN


DEFAULT_DEBIAN_MIRROR = "http://deb.debian.org/debian"


def apt_sources(apt: Path = Path("/etc/apt")) -> list[str]:
    """The texts of the source files apt reads: sources.list, and in sources.list.d those
    named `*.list` or `*.sources` (apt passes over the others: a `.save`, `.disabled` or
    `.bak` copy of an old mirror)."""
    folder = apt / "sources.list.d"
    files = [
        apt / "sources.list",
        *sorted(f for f in folder.glob("*") if f.suffix in (".list", ".sources")),
    ]
    return [f.read_text(errors="replace") for f in files if f.is_file()]


def debian_mirror(sources: Sequence[str] | None = None) -> str:
    """The Debian archive this machine's own apt reads (its first `.../debian` source).

    A CI machine behind a mirror or a proxy reaches its own archive and maybe not
    deb.debian.org; mmdebstrap is told the one apt already uses. `sources` are the texts of
    apt's source files (deb822 `URIs:` fields or one-line `deb [options] URI suite ...`);
    None reads /etc/apt's (`apt_sources`)."""
    if sources is None:
        sources = apt_sources()
    for text in sources:
        for uri in _binary_source_uris(text):
            if uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    return DEFAULT_DEBIAN_MIRROR


def _binary_source_uris(text: str) -> list[str]:
    """The URIs of the binary package sources (`deb`, not `deb-src`) one source file names,
    in order: a deb822 stanza's `URIs:` unless it says `Enabled: no` (apt skips those), a
    one-line `deb [options] URI suite ...`'s URI."""
    uris: list[str] = []
    for stanza in re.split(r"\n[ \t]*\n", text):
        fields: dict[str, list[str]] = {}
        for line in stanza.splitlines():
            words = line.split("#", 1)[0].split()
            if words[:1] == ["deb"]:  # the one-line form
                rest = words[1:]
                if rest[:1] and rest[0].startswith("["):  # [arch=amd64 signed-by=...]
                    while rest and not rest[0].endswith("]"):
                        rest = rest[1:]
                    rest = rest[1:]
                uris += rest[:1]
            elif words and words[0].endswith(":"):
                fields[words[0][:-1].lower()] = words[1:]
        if fields.get("enabled", ["yes"])[:1] != ["no"] and "deb" in fields.get("types", []):
            uris += fields.get("uris", [])
    return uris


def build_public_base() -> str | None:
    """Build PUBLIC_BASE_STAND_IN with mmdebstrap: None, or what went wrong.

    scripts/test.sh runs it (`python -m tests.support.docker`) beside ruff and mypy, before
    the suite: on a fresh machine it is a minute or two of downloads and dpkg that the first
    bundle test would otherwise spend on one worker while the suite runs."""
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: its stderr can never block it
        build = subprocess.Popen(
            [
                *sudo,
                "mmdebstrap",
                "--quiet",
                "--variant=minbase",
                "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
                '--aptopt=Acquire::Check-Valid-Until "false"',
                "bookworm",
                "-",
                debian_mirror(),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
        )
        assert build.stdout is not None
        imported = subprocess.run(
            ["docker", "import", "-c", 'CMD ["/bin/bash"]', "-", PUBLIC_BASE_STAND_IN],
            stdin=build.stdout,
            capture_output=True,
            timeout=900,
        )
        build.stdout.close()
        status = build.wait(timeout=900)
        log.seek(0)
        errors = log.read().decode(errors="replace")
    if status != 0 or imported.returncode != 0:
        return (
            f"building {PUBLIC_BASE_STAND_IN} failed: {errors[-2000:]}"
            f"{imported.stderr.decode(errors='replace')[-500:]}"
        )
    return None


def runner_wheelhouse() -> Path:
    """Wheels of the runner image's packages (torch, numpy), as scripts/docker-setup.sh keeps
    them; downloaded there through pip's own configuration when missing."""
    folder = Path(
        os.environ.get("REPROSPEC_WHEELHOUSE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "reprospec"
        / "wheelhouse"
    )
    names = {"torch": "2.13.0", "numpy": ""}
    if all(any(folder.glob(f"{n}-{v}*.whl")) for n, v in names.items()):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            *dockerimage.RUNNER_PACKAGES,
            "-d",
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        pytest.fail(f"pip download {' '.join(dockerimage.RUNNER_PACKAGES)}: {done.stderr[-1500:]}")
    return folder


def make_wheel(folder: Path, name: str = "reprospec_probe", version: str = "0.1") -> Path:
    """A minimal pure-Python wheel, so builds need no package index: its module holds
    `VALUE = version` (envs.make_wheel, the one wheel builder of the tests)."""
    return envs.make_wheel(folder, name, version, f"VALUE = {version!r}\n")


# A dataset caching samples in one shared-memory block: small /dev/shm -> SIGBUS in workers.
SHM_CACHE = '''
"""A dataset caching samples in one shared-memory block, as many real pipelines do."""
import math
from multiprocessing import shared_memory

import torch


class ShmCache(torch.utils.data.Dataset):
    def __init__(self, size=256, shape=(3, 64, 64), classes=10):
        self.size, self.shape, self.classes = size, tuple(shape), classes
        self.count = math.prod(self.shape)
        # Sized with ftruncate: /dev/shm hands out pages only when first written.
        self.block = shared_memory.SharedMemory(create=True, size=size * self.count * 4)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        view = torch.frombuffer(self.block.buf, dtype=torch.float32, count=self.count,
                                offset=index * self.count * 4).view(self.shape)
        view.fill_(float(index))
        return view[:, :8, :8].clone(), index % self.classes


def build(**params):
    return ShmCache(**params)
'''


def container_names(**filters: str | list[str]) -> list[str]:
    """Names of the containers the engine lists under `filters`, running or not. Sparse: the
    list's own data, never an inspect of each container, which another test's cleanup (or
    the engine's own removal being waited for) may remove between the list and the inspect:
    docker's non-sparse list then raises NotFound for a container that is simply gone."""
    listed = CLIENT.containers.list(all=True, filters=filters, sparse=True)
    return [str(n).lstrip("/") for c in listed for n in c.attrs.get("Names") or []]


def containers_of(root: Path) -> set[str]:
    """Ids of the reprospec containers that belong to attempts under `root`: they bind-mount
    a folder there (attempts, gdb's containers, instances), or are the pod of an attempt
    folder there. Other sessions' containers on a shared engine are not counted."""
    from reprospec.runners.docker.engine import LABEL
    from reprospec.runners.docker.instances import POD_LABEL

    prefix = str(root.resolve())
    found: set[str] = set()
    # sparse: the list's own data (mounts, labels) without inspecting each container, which
    # another test's cleanup on the shared engine may remove between the list and the inspect.
    for container in CLIENT.containers.list(all=True, filters={"label": LABEL}, sparse=True):
        sources = [str(m.get("Source", "")) for m in container.attrs.get("Mounts") or []]
        pod = str((container.attrs.get("Labels") or {}).get(POD_LABEL, ""))
        if any(s.startswith(prefix) for s in sources) or pod.startswith(prefix):
            found.add(str(container.id))
    return found


if __name__ == "__main__":
    # scripts/test.sh: the bundle tests' public base, built before the suite when missing.
    if CLIENT is not None and not dockerimage.image_present(CLIENT, PUBLIC_BASE_STAND_IN):
        failed = build_public_base()
        if failed is not None:
            sys.exit(failed)
