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


def _second_try_timed_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str]
) -> resolving.Resolved | None:
    """`_built` of six==1.0 whose first install the index refused and whose second ran out
    of the time left (asked twice)."""
    tries: list[float] = []

    def run_uv(args: list[str], *, timeout: float, **_: object) -> subprocess.CompletedProcess[str]:
        tries.append(timeout)
        if len(tries) == 1:
            return subprocess.CompletedProcess(["uv", *args], 2, "", REFUSED)
        raise build.UvTimeout(f"uv timed out after {timeout:g}s")

    monkeypatch.setattr(resolving, "run_uv", run_uv)
    monkeypatch.setattr(resolving, "RETRY_PAUSE_S", 0.0)
    said = resolving._built("six==1.0", False, tmp_path, IndexConfig(), None, 120.0, env)
    assert len(tries) == 2, tries
    return said


def test_a_second_try_past_the_indexs_wait_is_said_as_what_timed_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The first install failed quickly (refused), the second ran out of the ~120 s left, past
    # the index's 30 s wait (a silent index ends in uv's own `timed out` by then): the first
    # answer stood, "the index did not answer" (unreached: no other list asked, its todo to
    # make the index reachable), where the index answered and the build ran out of time.
    said = _second_try_timed_out(monkeypatch, tmp_path, {"UV_HTTP_TIMEOUT": "30"})
    assert said is not None
    assert (said.state, said.stopped, said.slow) == ("unknown", "", True), said
    assert said.said == (
        "building six==1.0: Failed to fetch: `http://127.0.0.1:9/simple/six/`; asked again, "
        "uv pip install ran out of the 120 s left"
    ), said


def test_a_second_try_within_the_indexs_wait_may_be_the_index_still(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # With less time left than the index's own wait, it may have been silent still: not said
    # to be a slow build, and said as the time left that ran out.
    said = _second_try_timed_out(monkeypatch, tmp_path, {"UV_HTTP_TIMEOUT": "200"})
    assert said is not None
    assert (said.state, said.stopped, said.slow) == ("unknown", "unreached", False), said
    assert said.said.endswith(
        "; asked again, uv pip install ran out of the 120 s left (less than the index's own wait)"
    ), said


@pytest.mark.parametrize("step", ["install", "compile"])
def test_a_build_that_failed_on_its_own_network_error_is_said_so_asked_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, step: str
) -> None:
    # Built once (no index failed), then it read `cannot be installed` (unsatisfiable, doctor
    # exit 1) with no word of the network, where it may build once that network answers.
    # Its build as doctor builds a wheelless entry (`_built`) or as the resolve's metadata
    # step runs it (`resolve`).
    tries: list[list[str]] = []

    def run_uv(args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        tries.append(args)
        return subprocess.CompletedProcess(["uv", *args], 1, "", BACKEND_FAILED)

    monkeypatch.setattr(resolving, "run_uv", run_uv)
    monkeypatch.setattr(resolving, "RETRY_PAUSE_S", 0.0)
    if step == "install":
        said = resolving._built("./mypkg", True, tmp_path, IndexConfig(), None, 120.0, {})
    else:
        said = resolving.resolve("/py/bin/python", ["./mypkg"], IndexConfig())
    assert len(tries) == 1, tries
    assert said is not None
    assert (said.state, said.stopped, said.offline_build) == ("unknown", "", True), said
    assert said.said.endswith(
        "; its build hit a network failure of its own (fetching the compiler: <urlopen error "
        "[Errno 111] Connection refused>)"
    ), said


def built_with_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, log: str
) -> resolving.Resolved | None:
    """`_built` of ./mypkg, its backend failed with `log` as its own stderr (uv stubbed)."""
    output = BACKEND_FAILED.replace(
        "fetching the compiler: <urlopen error [Errno 111] Connection refused>", log
    )

    def run_uv(args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["uv", *args], 1, "", output)

    monkeypatch.setattr(resolving, "run_uv", run_uv)
    return resolving._built("./mypkg", True, tmp_path, IndexConfig(), None, 120.0, {})


def test_a_build_that_failed_with_no_network_words_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    said = built_with_log(monkeypatch, tmp_path, "no gcc here")
    assert said == resolving.Resolved(
        "unsatisfiable",
        "could not build ./mypkg (its build from that path failed: no gcc here)",
        path_build="./mypkg",
    )


@pytest.mark.parametrize(
    "log",
    [
        # A test suite the build runs: its own timeout, a local server it could not reach.
        "test_server_roundtrip: timed out after 5 s\nConnection refused: 127.0.0.1:8080",
        "ninja: build stopped: subcommand failed (the linker timed out)",
    ],
    ids=["test-log", "compile-log"],
)
def test_a_build_whose_log_says_timed_out_or_refused_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, log: str
) -> None:
    # The index's network words were read in the backend's output too: a real compile or
    # test failure whose log said "timed out" was said not checked, a warning, exit 0.
    said = built_with_log(monkeypatch, tmp_path, log)
    assert said is not None
    assert (said.state, said.offline_build) == ("unsatisfiable", False), said
    assert said.said.startswith("could not build ./mypkg (its build from that path failed: ")


@pytest.mark.parametrize(
    "line",
    [
        "pip._vendor.urllib3.exceptions.ConnectTimeoutError: (<pip._vendor.urllib3.connection."
        "HTTPSConnection object at 0x7f3a>, 'Connection to pypi.org timed out. (connect "
        "timeout=15)')",
        "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files."
        "pythonhosted.org', port=443): Read timed out.",
        # cargo's final error, its lines indented in uv's [stderr] block as uv prints them
        # (its retries' `warning: spurious network error` lines are no failure: below).
        "  error: failed to download from `https://static.crates.io/crates/cc/1.0.83/download`"
        "\n\n  Caused by:\n    [28] Timeout was reached (Connection timed out after 30001 "
        "milliseconds)",
        "curl: (28) Timeout was reached",
    ],
    ids=["pip-connect", "pip-read", "cargo", "curl"],
)
def test_a_build_whose_download_timed_out_is_not_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, line: str
) -> None:
    # A download's own timeout words were no fetch words: a build that only could not
    # download in time was said to fail, exit 1, where it may build once the index answers.
    said = built_with_log(monkeypatch, tmp_path, line)
    assert said is not None
    assert (said.state, said.offline_build) == ("unknown", True), said
    assert "its build hit a network failure of its own (" in said.said, said


@pytest.mark.parametrize(
    "retry",
    [
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
        "status=None)) after connection broken by 'ConnectTimeoutError(<pip._vendor.urllib3."
        "connection.HTTPSConnection object at 0x7f3a>, 'Connection to pypi.org timed out. "
        "(connect timeout=15)')': /simple/cython/",
        "warning: spurious network error (2 tries remaining): [28] Timeout was reached "
        "(Connection timed out after 30001 milliseconds)",
    ],
    ids=["pip", "cargo"],
)
def test_a_build_that_retried_a_download_then_failed_to_compile_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, retry: str
) -> None:
    # A retry line said a download timed out; the retry downloaded it and the compile
    # failed: read as "its build hit a network failure of its own", a warning, exit 0.
    said = built_with_log(
        monkeypatch,
        tmp_path,
        f"{retry}\nsrc/lib.c:3:10: fatal error: Python.h: No such file or directory",
    )
    assert said is not None
    assert (said.state, said.offline_build) == ("unsatisfiable", False), said
    assert said.said.startswith("could not build ./mypkg (its build from that path failed: ")
    assert "network" not in said.said, said


def test_the_network_line_quoted_is_the_backends_last(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The first line of the whole output with network words was quoted, whole: pip's retry
    # warning of 300 characters here, where the backend's last word names the download.
    retry = (
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status="
        "None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3."
        "connection.HTTPSConnection object at 0x7f3a>: Failed to establish a new connection: "
        "[Errno 111] Connection refused')': /simple/cython/"
    )
    last = (
        "distutils.errors.DistutilsError: Download error for https://example.org/cython.tgz: "
        "<urlopen error [Errno 111] Connection refused>"
    )
    said = built_with_log(
        monkeypatch,
        tmp_path,
        f'{retry}\nTraceback (most recent call last):\n  File "setup.py", line 3\n{last}',
    )
    assert said is not None
    assert said.offline_build, said
    assert said.said.endswith(f"; its build hit a network failure of its own ({last})"), said
