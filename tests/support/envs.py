"""Helpers for the environment and bisect tests: a reused env cache, hand-made wheels.

Environments built by the tests live in `$REPROSPEC_TEST_ENVS` (default
`.test-envs/` in the repository, ignored by git), and uv's download cache with
them, so a CI job that keeps that one folder between runs reinstalls nothing
and downloads nothing after its first run.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def envs_root() -> Path:
    """The folder test environments are kept in, between test runs."""
    root = Path(os.environ.get("REPROSPEC_TEST_ENVS") or ROOT / ".test-envs").resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def uv_environment() -> dict[str, str]:
    """Variables that keep uv's cache next to the test environments."""
    return {"UV_CACHE_DIR": str(envs_root() / "uv-cache")}


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    module: str,
    scripts: dict[str, str] | None = None,
    others: dict[str, str] | None = None,
) -> Path:
    """A pure-Python wheel of `name` `version` whose module `name` holds `module`;
    `scripts`: its console scripts (`{"tool": "module:main"}`), which the installer writes;
    `others`: more top-level modules, by name, whose names are not the distribution's."""
    folder.mkdir(parents=True, exist_ok=True)
    module_name = name.replace("-", "_")
    dist = f"{module_name}-{version}.dist-info"
    files = {
        f"{module_name}.py": module,
        **{f"{other}.py": text for other, text in (others or {}).items()},
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: reprospec-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    if scripts:
        lines = "".join(f"{script} = {target}\n" for script, target in scripts.items())
        files[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{lines}"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{module_name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def make_broken_sdist(folder: Path, name: str, version: str) -> Path:
    """An sdist whose build always fails (its in-tree backend raises): listed, not installable."""
    folder.mkdir(parents=True, exist_ok=True)
    backend = (
        "def build_wheel(*args, **kwargs):\n"
        "    raise SystemExit('this release has no wheel for this Python and cannot build')\n"
        "def build_sdist(*args, **kwargs):\n    raise SystemExit('no')\n"
    )
    return _sdist(folder, name, version, backend)


def make_releases(
    folder: Path, name: str, count: int, module: Callable[[int], str], *, broken: str = ""
) -> Path:
    """A wheelhouse of `name` 1.0 to 1.{count - 1} in `folder` (what a bisect walks), release
    1.N's module `module(N)` (`REGRESSED = {N >= 2}`: a regression from 1.2 on); `broken`: a
    version that is an sdist whose build fails instead. The folder, for `--find-links`."""
    for minor in range(count):
        version = f"1.{minor}"
        if version == broken:
            make_broken_sdist(folder, name, version)
        else:
            make_wheel(folder, name, version, module(minor))
    return folder


def offline_venv(folder: Path, *install: str, python: str | None = None) -> Path:
    """A real venv at `folder` (on `python`, else uv's choice) into which `uv pip install
    --no-index` put `install` (its arguments: wheels, `-e PROJECT`, `--find-links DIR`
    and names): nothing comes from a network. The venv's python."""
    import subprocess

    from reprospec import venvs

    uv_env = {**os.environ, **uv_environment()}
    on = ["--python", python] if python else []
    subprocess.run([venvs.uv_binary(), "venv", "-q", *on, str(folder)], check=True, env=uv_env)
    subprocess.run(
        [venvs.uv_binary(), "pip", "install", "-q", "--python", str(folder / "bin" / "python"),
         "--no-index", *install],
        check=True, env=uv_env,
    )  # fmt: skip
    return folder / "bin" / "python"


def caller_venv(folder: Path, wheels: Path, *requirements: str) -> Path:
    """A real venv at `folder` holding `requirements` from the local `wheels` only: the
    environment a user has activated when a cell's own lacks a program."""
    offline_venv(folder, "--find-links", str(wheels), *requirements)
    return folder


def make_slow_sdist(folder: Path, name: str, version: str, started: Path, seconds: float) -> Path:
    """An sdist of a pure-Python `name` `version` whose in-tree backend touches `started`,
    then takes `seconds` to build its wheel: a build to stop (Ctrl-C, SIGKILL) while uv
    is in it, and which uv then installs, if it is left running, into the venv it was
    filling. Install it with a uv cache of its own: a cache that holds its wheel builds
    nothing."""
    import textwrap

    folder.mkdir(parents=True, exist_ok=True)
    module_name = name.replace("-", "_")
    backend = textwrap.dedent(f"""\
        import base64, hashlib, pathlib, time, zipfile

        def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
            pathlib.Path({str(started)!r}).touch()
            time.sleep({seconds!r})
            dist = "{module_name}-{version}.dist-info"
            files = {{
                "{module_name}.py": "VERSION = {version!r}\\n",
                dist + "/METADATA": "Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
                dist + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\n"
                "Tag: py3-none-any\\n",
            }}
            record = []
            for path, text in files.items():
                digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
                record.append(f"{{path}},sha256={{digest.rstrip(b'=').decode()}},{{len(text)}}")
            files[dist + "/RECORD"] = "\\n".join([*record, dist + "/RECORD,,"]) + "\\n"
            wheel = "{module_name}-{version}-py3-none-any.whl"
            with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w") as archive:
                for path, text in files.items():
                    archive.writestr(path, text)
            return wheel

        def build_sdist(sdist_directory, config_settings=None):
            raise SystemExit("no sdist")
        """)
    return _sdist(folder, name, version, backend)


def _sdist(folder: Path, name: str, version: str, backend: str) -> Path:
    """An sdist of `name` `version` in `folder` whose in-tree build backend is `backend`'s
    source (`make_broken_sdist`'s that always fails, `make_slow_sdist`'s that takes its time)."""
    import io
    import tarfile

    base = f"{name.replace('-', '_')}-{version}"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": backend,
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = folder / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@contextlib.contextmanager
def flaky_index(failures: int) -> Iterator[tuple[str, list[int]]]:
    """A package index at a port of this machine, served by a thread of the test, that holds
    no project (each page 404: the packages come from `--find-links`) and answers its first
    `failures` requests `503 Service Unavailable`, as a flaky index does. Yields its URL
    (UV_INDEX_URL's) and the status of each request it answered, in order."""
    import http.server
    import threading

    answered: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = 503 if len(answered) < failures else 404
            answered.append(status)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            """(nothing on the test's stderr)"""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="test-flaky-index", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", answered
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
