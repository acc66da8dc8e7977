"""venvs/resolve.py's second try of a uv the index failed quickly (`_asked`, `_transient`),
uv itself stubbed: no process is started. A real build whose own stderr holds network words
is tested in tests/functional/doctor/test_venv_packages.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reprospec.venvs import build
from reprospec.venvs import resolve as resolving
from reprospec.venvs.index import IndexConfig

REFUSED = (
    "error: Failed to fetch: `http://127.0.0.1:9/simple/six/`\n"
    "  Caused by: tcp connect error: Connection refused (os error 111)\n"
)
# uv's words of a path entry whose build backend ran and failed, its own stderr quoted.
BACKEND_FAILED = (
    "error: Failed to build `mypkg @ file:///src/mypkg`\n"
    "  Caused by: The build backend returned an error\n"
    "  Caused by: Call to `backend.build_wheel` failed (exit status: 1)\n\n"
    "[stderr]\n"
    "fetching the compiler: <urlopen error [Errno 111] Connection refused>\n"
)


@pytest.mark.parametrize(
    ("output", "transient"),
    [
        pytest.param(REFUSED, True, id="refused"),
        pytest.param(
            "error: Failed to fetch: `https://pypi.org/simple/six/`\n"
            "  Caused by: operation timed out\n",
            False,
            id="timed-out",
        ),
        pytest.param(
            "error: Network connectivity is disabled, but the requested data wasn't found "
            "in the cache for: `six`\n",
            False,
            id="offline",
        ),
        pytest.param(BACKEND_FAILED, False, id="backend-failed"),
    ],
)
def test_only_a_request_the_index_failed_quickly_is_asked_again(
    output: str, transient: bool
) -> None:
    # A build backend's own stderr is in uv's output: a setup.py that printed a refused
    # connection and failed was built again (a long build doubled).
    assert resolving._transient(output) is transient


def test_a_second_try_past_the_time_left_is_no_slow_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The first install failed quickly (refused), the second ran out of the time left: the
    # build was said "still running after 120 s ... a slow build, not a failed one", of a
    # build that failed, and whose second try had less than 120 s. The first answer stands.
    tries: list[float] = []

    def run_uv(args: list[str], *, timeout: float, **_: object) -> subprocess.CompletedProcess[str]:
        tries.append(timeout)
        if len(tries) == 1:
            return subprocess.CompletedProcess(["uv", *args], 2, "", REFUSED)
        raise build.UvTimeout(f"uv timed out after {timeout:g}s")

    monkeypatch.setattr(resolving, "run_uv", run_uv)
    monkeypatch.setattr(resolving, "RETRY_PAUSE_S", 0.0)
    said = resolving._built("six==1.0", False, tmp_path, IndexConfig(), None, 120.0, {})
    assert len(tries) == 2, tries
    assert said is not None
    assert not said.slow, said
    assert (said.state, said.stopped) == ("unknown", "unreached"), said
    assert said.said.startswith("Failed to fetch"), said
