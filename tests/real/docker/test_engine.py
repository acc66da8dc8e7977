"""The docker runner's output pump (runners/docker/engine.py) on a real engine's attach stream.

`_socket_waiting` reaches into the SDK's stream for its socket, as the SDK's own
`CancellableStream.close` does (no public way to ask the stream). Another SDK may lay it
out otherwise, and then it answers False (the pump's drain reads the thread alone); this
test says whether the SDK installed here still lays it out so: bytes the container wrote
and nobody read are seen waiting on the socket.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image  # noqa: E402
from reprospec.runners.docker.engine import _socket_waiting  # noqa: E402
from tests.support.docker import CLIENT, needs_engine, require_image  # noqa: E402


@needs_engine
def test_the_attach_streams_socket_is_found_on_this_sdk() -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    assert CLIENT is not None
    container = CLIENT.containers.create(
        image.DEFAULT_IMAGE,
        ["sh", "-c", "read go; echo printed; sleep 30"],
        stdin_open=True,
        detach=True,
        labels={"org.reprospec.test": "engine-socket"},
    )
    try:
        stream = container.attach(stdout=True, stderr=True, stream=True, demux=True)
        container.start()
        waiting = _socket_waiting(stream)
        assert not waiting()
        sock = container.attach_socket(params={"stdin": 1, "stream": 1})
        sock._sock.sendall(b"go\n")
        deadline = time.monotonic() + 20
        while not waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting(), "the container's line was never seen waiting on the attach socket"
        out, err = next(iter(stream))
        assert (out, err) == (b"printed\n", None)
        assert not waiting()
        sock.close()
        stream.close()
    finally:
        container.remove(force=True)
