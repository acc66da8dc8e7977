"""The images the docker runner built and keeps: list them, prune them (`reprospec envs`).

A cell whose `environment` has `packages` or a `dockerfile` gets an image built once and
kept (image.py), about 1.5 GB each: a bisect over ten releases leaves ten. An image is the
runner's when one of its tags is `reprospec-env:HASH` and its content-hash label says HASH:
the builder sets both, so an image of another name, or one tagged into the repository by
hand, is never listed and never removed. Only that tag is removed (an image the user tagged
under a name of their own as well stays under it), never while a container, running or
stopped, was made from the image, and never by force.

The engine records no use of an image: the runner tags one again each time a run reuses it
(image._mark_used), and the last tag time is read as the last use (the creation time where
the engine keeps none).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.trylock import SharedHold, hold_shared, sweep_free, try_locked
from reprospec.core.units import utc_stamp
from reprospec.errors import InfraError
from reprospec.runners.docker import image as dockerimage
from reprospec.runners.docker.sdk import DockerClient, Image

# What the listing waits for an engine that does not answer: `envs` is a quick look.
CONNECT_TIMEOUT_S = 10.0
KIND = "docker-image"
# The engine's times: RFC 3339 with up to nanoseconds; the year 1 is its "never".
_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


@frozen
class ImageInfo:
    """One image the docker runner built, as `envs list` shows it."""

    tag: str
    key: str  # the content hash: the tag's name
    image_id: str
    # What it holds (its labels; empty for an image built before they were set):
    source: str  # "packages" or "dockerfile"
    packages: tuple[str, ...]
    base: str  # the FROM images, comma-separated
    dockerfile: str
    size_bytes: int  # as `docker images` gives it: its base's layers included
    # Its layers no other image has: what removing it frees (None: the engine did not say).
    # A bisect's images share their base's (the runner image, 1.4 GB): each holds only its
    # packages of its own.
    own_bytes: int | None
    created: float  # epoch seconds
    last_used: float  # epoch seconds: its last tag time, else `created`
    used_by: tuple[str, ...]  # the containers made from it: it is kept while any is

    def holds(self) -> str:
        """What it holds, in a few words (the listing's column)."""
        if self.packages:
            return " ".join(self.packages)
        if self.dockerfile:
            return f"Dockerfile {self.dockerfile}"
        return "(not recorded)"

    def to_dict(self) -> JsonObject:
        return {
            "kind": KIND,
            "tag": self.tag,
            "key": self.key,
            "id": self.image_id,
            "source": self.source,
            "packages": list(self.packages),
            "base": self.base,
            "dockerfile": self.dockerfile,
            "size_bytes": self.size_bytes,
            "own_bytes": self.own_bytes,
            "created": utc_stamp(self.created),
            "last_used": utc_stamp(self.last_used),
            "used_by": list(self.used_by),
        }


def own_total(images: Sequence[ImageInfo]) -> int:
    """What removing `images` frees at least: their own layers (an image the engine gave no
    shared size for counts whole)."""
    return sum(i.size_bytes if i.own_bytes is None else i.own_bytes for i in images)


@frozen
class Pruned:
    """What a prune removed (or, dry, would remove), and the images it kept and why."""

    removed: tuple[ImageInfo, ...]
    kept: tuple[tuple[ImageInfo, str], ...]


def engine_time(text: object) -> float | None:
    """Epoch seconds of an engine's timestamp; None when absent, malformed or its "never"."""
    match = _TIME.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if year <= 1:
        return None
    fraction, zone = match.group(7) or "0", match.group(8)
    offset = (
        0
        if zone == "Z"
        else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    )
    moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    return moment.timestamp() + float(f"0.{fraction}") - offset


def image_info(
    attrs: Mapping[str, JsonValue], used_by: Sequence[str] = (), shared_bytes: int | None = None
) -> ImageInfo | None:
    """The runner's image of a `docker image inspect`; None when it is not one the runner built
    (no `reprospec-env:HASH` tag whose HASH its content-hash label gives). `shared_bytes`: of
    its size, what it shares with other images (`docker system df -v`'s SHARED SIZE)."""
    config = attrs.get("Config")
    raw = config.get("Labels") if isinstance(config, dict) else None
    labels = {k: str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    key = labels.get(dockerimage.HASH_LABEL, "")
    tag = f"{dockerimage.BUILT_REPOSITORY}:{key}"
    tags = attrs.get("RepoTags")
    if not key or not isinstance(tags, list) or tag not in tags:
        return None
    created = engine_time(attrs.get("Created"))
    metadata = attrs.get("Metadata")
    tagged = engine_time(metadata.get("LastTagTime")) if isinstance(metadata, dict) else None
    size = attrs.get("Size")
    packages = labels.get(dockerimage.PACKAGES_LABEL, "")
    return ImageInfo(
        tag=tag,
        key=key,
        image_id=str(attrs.get("Id") or ""),
        source=labels.get(dockerimage.SOURCE_LABEL, ""),
        packages=tuple(p for p in packages.splitlines() if p),
        base=labels.get(dockerimage.FROM_LABEL, ""),
        dockerfile=labels.get(dockerimage.DOCKERFILE_LABEL, ""),
        size_bytes=size if isinstance(size, int) else 0,
        own_bytes=(
            size - shared_bytes
            if isinstance(size, int) and shared_bytes is not None and 0 <= shared_bytes <= size
            else None
        ),
        created=created or 0.0,
        last_used=max(tagged or 0.0, created or 0.0),
        used_by=tuple(used_by),
    )


def reachable() -> tuple[DockerClient | None, str]:
    """A client of the engine and "", or None and why not: "" when the docker package is not
    installed (the docker runner cannot have built anything here), else one line to show."""
    from reprospec.runners.docker.engine import connect, engine_url

    if importlib.util.find_spec("docker") is None:
        return None, ""
    try:
        return connect(timeout_s=CONNECT_TIMEOUT_S), ""
    except InfraError:
        return None, f"docker images: not listed (no Docker engine answered at {engine_url()})"


def list_images(client: DockerClient) -> list[ImageInfo]:
    """Every image the docker runner built that the engine has, most recently used first."""
    users: dict[str, list[str]] = {}
    for container in client.api.containers(all=True):
        names = container.get("Names")
        name = str(names[0]).lstrip("/") if isinstance(names, list) and names else ""
        users.setdefault(str(container.get("ImageID") or ""), []).append(
            name or str(container.get("Id") or "")[:12]
        )
    shared = _shared_sizes(client)
    found: list[ImageInfo] = []
    for image in _listed(client):
        info = image_info(image.attrs, sorted(users.get(image.id, ())), shared.get(image.id))
        if info is not None:
            found.append(info)
    return sorted(found, key=lambda i: i.last_used, reverse=True)


def _listed(client: DockerClient) -> list[Image]:
    """The images named like the runner's and labelled like them, each inspected."""
    import docker.errors

    for _ in range(2):
        try:
            return client.images.list(
                name=dockerimage.BUILT_REPOSITORY, filters={"label": dockerimage.HASH_LABEL}
            )
        except docker.errors.ImageNotFound:
            continue  # one removed between the listing and its inspection (another prune)
    return client.images.list(
        name=dockerimage.BUILT_REPOSITORY, filters={"label": dockerimage.HASH_LABEL}
    )


def _shared_sizes(client: DockerClient) -> dict[str, int]:
    """Each image's bytes shared with other images, by id ({} when the engine does not say)."""
    import docker.errors

    try:
        usage = client.df()
    except docker.errors.APIError:
        return {}
    images = usage.get("Images")
    out: dict[str, int] = {}
    for entry in images if isinstance(images, list) else []:
        size = entry.get("SharedSize") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and isinstance(size, int):
            out[str(entry.get("Id"))] = size
    return out


def hold_lock(tag: str) -> Path | None:
    """The file a run holds a shared lock on while it may start containers of the runner's
    image `tag` (`hold_image`), which `prune_images` takes alone before it removes it; None
    for an image that is not the runner's (prune never removes one). In this user's cache,
    as the attempt starter is: the engine records no use of an image between two of a run's
    containers, nor of one built at the start for a cell that runs later."""
    repository, _, key = tag.partition(":")
    if repository != dockerimage.BUILT_REPOSITORY or not key:
        return None
    return holds_folder() / f"{key}.use"


def holds_folder() -> Path:
    """Where the runs' holds on the runner's images are (`hold_lock`)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "reprospec" / "docker-holds"


def hold_image(tag: str) -> SharedHold | None:
    """A shared lock on the runner's image `tag` until the hold returned is closed, taken
    before the run finds or builds it: `envs prune` removed the image of a matrix's later
    cell, built at the start, while an earlier cell ran, and the run stopped on the
    engine's 404. Waits while a prune is removing it (then the run builds it again).
    None for another image, or where the lock cannot be made (the run goes on unheld)."""
    path = hold_lock(tag)
    return None if path is None else hold_shared(path)


def prune_images(
    client: DockerClient,
    *,
    older_than_s: float | None = None,
    tags: Sequence[str] = (),
    dry_run: bool = False,
    now: float | None = None,
) -> Pruned:
    """Remove the runner's images unused for `older_than_s` (None: all), or only `tags`.

    An image a container was made from is kept (the engine would refuse it too, unforced);
    one a container took between the listing and the removal is kept with the engine's word.
    """
    import docker.errors

    now = time.time() if now is None else now
    removed: list[ImageInfo] = []
    kept: list[tuple[ImageInfo, str]] = []
    for info in list_images(client):
        if tags and info.tag not in tags:
            continue
        if older_than_s is not None and now - info.last_used < older_than_s:
            continue
        if info.used_by:
            kept.append((info, f"in use by container {', '.join(info.used_by)}"))
            continue
        lock = hold_lock(info.tag)
        # Held alone while it goes, so a run that comes to use it meanwhile waits, then
        # builds it again; one that cannot be told (core/trylock.py) is pruned as before.
        with try_locked(lock) if lock is not None else contextlib.nullcontext() as alone:
            if alone is False:
                kept.append((info, "in use by a run now"))
                continue
            if not dry_run:
                try:
                    client.images.remove(image=info.tag, force=False, noprune=False)
                except docker.errors.NotFound:
                    continue  # gone meanwhile (another prune): nothing of ours to say
                except docker.errors.APIError as exc:
                    kept.append((info, str(exc.explanation or exc)))
                    continue
        removed.append(info)
    if not dry_run:
        # The hold files no run holds: each goes with its last holder now, but an earlier
        # version left one per image ever used, and a killed run leaves its own.
        sweep_free(holds_folder())
    return Pruned(tuple(removed), tuple(kept))
