"""Removing a container and waiting until the engine no longer lists it.

Shared by the attempt's container (engine.py) and a cancelled build's step container
(image.py, which engine.py imports: the one remover lives below both).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import DockerClient

# A loaded engine can take seconds to remove a container ("removal already in progress").
REMOVE_WAIT_S = 60.0


def remove_container(
    client: DockerClient, name: str, wait_s: float = REMOVE_WAIT_S, *, volumes: bool = True
) -> bool:
    """Force-remove `name` and wait until the engine no longer lists it; False if it stays.

    A container must be gone when its caller goes on, even when the engine is slow: a
    removal "already in progress" (the builder's own, of its failed step's container) is
    waited for, not taken for done. `volumes=False` for a build step's container, whose
    anonymous volumes are the builder's to remove.
    """
    import docker.errors
    import requests.exceptions

    deadline = time.monotonic() + wait_s
    pause = 0.05
    while True:
        try:
            client.containers.get(name).remove(force=True, v=volumes)
        except docker.errors.NotFound:
            return True
        except (docker.errors.APIError, requests.exceptions.RequestException):
            pass  # in progress, or the engine did not answer in time: look again
        try:
            client.containers.get(name)
        except docker.errors.NotFound:
            return True
        except (docker.errors.APIError, requests.exceptions.RequestException):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
