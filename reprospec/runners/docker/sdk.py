"""What reprospec uses of the docker SDK, typed: the client, its containers and images.

The SDK (`docker`) ships no type information, so without these every client,
container and image would go unchecked. Each Protocol names only the calls made by
the engine (dockerimage.py, runners/docker*.py), with the types the engine
relies on; the SDK's real objects satisfy them structurally. `ContainerConfig`
is the keyword arguments of `containers.create` as the runners build them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, overload

from reprospec.core.jsontypes import JsonObject, JsonValue

if TYPE_CHECKING:
    # Untyped SDK classes (unchecked by the type checker); named for the reader.
    from docker.types import DeviceRequest, LogConfig, Mount, Ulimit
    from typing_extensions import Unpack


class _ContainerRequired(TypedDict):
    image: str
    entrypoint: list[str]
    command: list[str]
    name: str
    detach: bool
    labels: dict[str, str]


class ContainerConfig(_ContainerRequired, total=False):
    """`containers.create(**config)`: what an attempt's (or a probe's, gdb's, a pod's)
    container is made with."""

    init: bool
    stdin_open: bool
    tty: bool
    environment: dict[str, str]
    working_dir: str
    mounts: list[Mount]
    network_mode: str
    ipc_mode: str
    log_config: LogConfig
    shm_size: int
    mem_limit: int
    memswap_limit: int
    pids_limit: int
    cpuset_cpus: str
    device_requests: list[DeviceRequest]
    user: str
    ulimits: list[Ulimit]


class ExecResult(Protocol):
    """What `exec_run` returns (without `stream`): the command's collected output."""

    @property
    def output(self) -> bytes: ...


class OutputStream(Protocol):
    """A container's attached output (`demux=True`): (stdout, stderr) chunks, one side None."""

    def __iter__(self) -> Iterator[tuple[bytes | None, bytes | None]]: ...

    def close(self) -> None: ...


class Model(Protocol):
    """What the SDK's containers and images have in common (its `docker.models.Model`)."""

    @property
    def id(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def attrs(self) -> JsonObject:
        """`docker inspect` of the object (a container's as of its last `reload`)."""
        ...


class Container(Model, Protocol):
    def attach(self, *, stdout: bool, stderr: bool, stream: bool, demux: bool) -> OutputStream: ...

    def start(self) -> None: ...

    def wait(self, *, timeout: float) -> JsonObject: ...

    def kill(self) -> None: ...

    def reload(self) -> None: ...

    def remove(self, *, force: bool, v: bool) -> None: ...

    def exec_run(self, cmd: list[str], *, stdout: bool, stderr: bool) -> ExecResult: ...

    @overload
    def logs(self, *, stdout: bool, stderr: bool) -> bytes: ...

    @overload
    def logs(self, *, stdout: bool, stderr: bool, stream: Literal[True]) -> Iterator[bytes]: ...


class Containers(Protocol):
    def create(self, **config: Unpack[ContainerConfig]) -> Container: ...

    def get(self, name: str) -> Container: ...


class Image(Model, Protocol):
    """An image; `attrs` is its `docker image inspect`."""


class Images(Protocol):
    def get(self, name: str) -> Image: ...

    def list(self, *, name: str, filters: Mapping[str, str]) -> list[Image]: ...

    def remove(self, *, image: str, force: bool, noprune: bool) -> None: ...


class Api(Protocol):
    """The SDK's low-level API client (`client.api`): builds, tags, execs, the containers
    listed as the engine gives them (`docker ps -a`'s JSON: Id, Names, ImageID, State...)."""

    def tag(self, image: str, repository: str, tag: str) -> bool: ...

    def containers(self, *, all: bool) -> list[JsonObject]: ...

    def images(self) -> list[JsonObject]: ...

    def build(
        self,
        *,
        path: str,
        dockerfile: str,
        tag: str,
        rm: bool,
        forcerm: bool,
        pull: bool,
        decode: bool,
        labels: Mapping[str, str],
    ) -> Iterable[Mapping[str, JsonValue]]: ...

    def exec_create(
        self,
        container: str,
        cmd: list[str],
        *,
        stdout: bool,
        stderr: bool,
        environment: Mapping[str, str],
        privileged: bool,
    ) -> Mapping[str, str]: ...

    def exec_start(
        self, exec_id: str, *, stream: Literal[True], demux: bool
    ) -> Iterator[bytes]: ...


class DockerClient(Protocol):
    """What is used of a `docker.DockerClient`."""

    @property
    def containers(self) -> Containers: ...

    @property
    def images(self) -> Images: ...

    @property
    def api(self) -> Api: ...

    def ping(self) -> bool: ...

    def df(self) -> JsonObject:
        """`docker system df -v`: the engine's images, containers and volumes, with sizes."""
        ...


__all__ = [
    "Api",
    "Container",
    "ContainerConfig",
    "Containers",
    "DockerClient",
    "ExecResult",
    "Image",
    "Images",
    "Model",
    "OutputStream",
]
