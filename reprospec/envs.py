"""Virtual environments per resolved `environment`, built with uv and kept by content hash.

One environment = one interpreter + one list of requirements + where packages
come from (the index options). Its content hash names its folder,
`<root>/<hash>` (root: `.reprospec/envs`), so a second run, or another cell
asking for the same thing, reuses it: a warm switch costs one `stat`.

Building is atomic and happens once: under a per-hash file lock, the venv is
made in `<root>/.tmp/`, filled with `uv pip install`, checked (every requirement
satisfied by what actually got installed, through `packages`: a resolver that
silently picked another version is an InfraError naming both), described in
`reprospec-env.json`, then renamed into place. The venv is `--relocatable`, so
the rename breaks no script.

Where packages come from is the user's own configuration, never a hard-coded
index: uv's (UV_* variables, uv.toml) when there is any, else pip's (`pip
config list`: pip.conf and PIP_* variables) translated to uv options with
pip's "best match over all indexes" strategy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from reprospec import packages
from reprospec.errors import InfraError
from reprospec.sections import Environment

FORMAT = 1
# Where environments are kept when a runner is not told: a folder shared by projects.
ENVS_VARIABLE = "REPROSPEC_ENVS"
META = "reprospec-env.json"
USED_BY = ".used-by"
TMP = ".tmp"
LOCKS = ".locks"
UV_TIMEOUT_S = 3600.0
# uv's own index configuration: when any is set, uv is left to read it.
_UV_INDEX_VARIABLES = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_EXTRA_INDEX_URL",
                       "UV_FIND_LINKS", "UV_NO_INDEX")
# Everything else of uv's environment that changes what gets installed: part of the hash.
_UV_RESOLUTION_VARIABLES = ("UV_INDEX_STRATEGY", "UV_EXCLUDE_NEWER", "UV_PRERELEASE",
                            "UV_OVERRIDE", "UV_CONSTRAINT", "UV_RESOLUTION", "UV_NO_BINARY",
                            "UV_NO_BUILD", "UV_TORCH_BACKEND")


class EnvBuildError(InfraError):
    """An environment could not be built, or was built but is not what was asked."""


# ---- where packages come from ---------------------------------------------------------------


@dataclass(frozen=True)
class IndexConfig:
    """Where packages come from, as the user configured it (`source` says whose config)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    # "uv": uv reads its own configuration, nothing of it is passed to uv;
    # "pip": pip's configuration, translated into uv options.
    source: str = "uv"
    # reprospec's own --find-links: passed to uv and pip alike.
    extra_find_links: tuple[str, ...] = ()
    # Other uv settings in the environment that change resolution (hashed, not passed).
    uv_settings: tuple[tuple[str, str], ...] = ()

    def uv_args(self) -> tuple[str, ...]:
        """Options for `uv pip install` (pip's settings only: uv reads its own itself)."""
        args: list[str] = []
        links = list(self.extra_find_links)
        if self.source == "pip":
            if self.index_url:
                args += ["--index-url", self.index_url]
            for url in self.extra_index_urls:
                args += ["--extra-index-url", url]
            if self.extra_index_urls:
                # pip takes the best version over all indexes; uv's default stops at the
                # first index that has the name. Same configuration, same answer.
                args += ["--index-strategy", "unsafe-best-match"]
            links = [*self.find_links, *links]
        for link in links:
            args += ["--find-links", link]
        return tuple(args)

    def pip_args(self) -> tuple[str, ...]:
        """Options for pip (`pip index versions`): uv's settings translated when uv's are used."""
        args: list[str] = []
        links = list(self.extra_find_links)
        if self.source == "uv":
            if self.index_url:
                args += ["--index-url", self.index_url]
            for url in self.extra_index_urls:
                args += ["--extra-index-url", url]
            links = [*self.find_links, *links]
        for link in links:
            args += ["--find-links", link]
        return tuple(args)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "index_url": self.index_url,
            "extra_index_urls": list(self.extra_index_urls),
            "find_links": list(self.find_links),
            "extra_find_links": list(self.extra_find_links),
            "uv_settings": dict(self.uv_settings),
        }


def _split(value: str) -> tuple[str, ...]:
    return tuple(part for part in value.split() if part)


def _pip_config() -> dict[str, str]:
    """`pip config list` as {name: value}, later sources (env) winning over files."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    ranked: dict[str, tuple[int, str]] = {}
    rank = {"global": 0, "install": 1, "download": 1, "index": 1, ":env:": 2}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        section, name = key.rsplit(".", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        level = rank.get(section, 0)
        if name not in ranked or level >= ranked[name][0]:
            ranked[name] = (level, value)
    return {name: value for name, (_, value) in ranked.items()}


def _uv_config_files() -> list[Path]:
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    dirs = [config_home / "uv", Path("/etc/uv")]
    dirs += [Path(d) / "uv" for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")]
    return [d / "uv.toml" for d in dirs if (d / "uv.toml").is_file()]


def user_index_config(find_links: Sequence[Path | str] = ()) -> IndexConfig:
    """The index configuration the user has: uv's if any, else pip's; plus reprospec's --find-links.

    pip's configuration is read through `pip config list` (pip.conf files and
    PIP_* variables, as pip itself would apply them).
    """
    extra = tuple(str(Path(link).resolve()) for link in find_links)
    settings = tuple((k, os.environ[k]) for k in _UV_RESOLUTION_VARIABLES if os.environ.get(k))
    if any(os.environ.get(k) for k in _UV_INDEX_VARIABLES) or _uv_config_files():
        env = os.environ
        index = env.get("UV_DEFAULT_INDEX") or env.get("UV_INDEX_URL") or None
        extras = _split(env.get("UV_INDEX", "")) + _split(env.get("UV_EXTRA_INDEX_URL", ""))
        links = _split(env.get("UV_FIND_LINKS", "").replace(",", " "))
        return IndexConfig(index, extras, links, "uv", extra, settings)
    pip = _pip_config_cached()
    return IndexConfig(
        index_url=pip.get("index-url") or None,
        extra_index_urls=_split(pip.get("extra-index-url", "")),
        find_links=_split(pip.get("find-links", "")),
        source="pip",
        extra_find_links=extra,
        uv_settings=settings,
    )


@lru_cache(maxsize=1)
def _pip_config_cached() -> dict[str, str]:
    return _pip_config()


# ---- requests and their hash ---------------------------------------------------------------


@dataclass(frozen=True)
class Interpreter:
    """A base interpreter found on this machine: the real path and its full version."""

    path: str
    version: str


@dataclass(frozen=True)
class EnvRequest:
    """What one environment holds: interpreter, requirements, where they come from."""

    python: Interpreter
    packages: tuple[str, ...]
    index: IndexConfig = field(default_factory=IndexConfig)
    # uv's --exclude-newer: only what was uploaded before this instant (bisect by date).
    exclude_newer: str | None = None

    def key(self) -> str:
        """The content hash that names the environment's folder."""
        parts = {
            "format": FORMAT,
            "python": [self.python.path, self.python.version],
            # Order does not change what a resolver installs; duplicates neither.
            "packages": sorted(set(self.packages)),
            "index": self.index.to_dict(),
            "exclude_newer": self.exclude_newer,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": {"path": self.python.path, "version": self.python.version},
            "packages": list(self.packages),
            "index": self.index.to_dict(),
            "exclude_newer": self.exclude_newer,
        }


_VERSION_CODE = "import sys; print('%d.%d.%d' % sys.version_info[:3])"


@lru_cache(maxsize=32)
def find_interpreter(request: str | None = None) -> Interpreter:
    """The base interpreter for `request`: a path, a version such as "3.11" (found by uv
    among the interpreters on this machine), or None for reprospec's own interpreter."""
    if request is None:
        path = sys.executable
    elif os.sep in request or os.path.exists(request):
        path = os.path.abspath(os.path.expanduser(request))
    elif request.startswith("python") and shutil.which(request):
        path = str(shutil.which(request))
    else:
        done = _uv(["python", "find", request], timeout=120)
        if done.returncode != 0:
            raise EnvBuildError(
                f"no Python {request} on this machine (uv python find: {_uv_error(done.stderr)})"
            )
        path = done.stdout.strip().splitlines()[-1]
    try:
        done = subprocess.run([path, "-c", _VERSION_CODE], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvBuildError(f"interpreter {path} does not run: {exc}") from exc
    if done.returncode != 0:
        raise EnvBuildError(f"interpreter {path} does not run: {_uv_error(done.stderr)}")
    # A venv's python and its base give the same environments: hash the real file.
    return Interpreter(os.path.realpath(path), done.stdout.strip())


# ---- uv ------------------------------------------------------------------------------------


def uv_binary() -> str:
    """The uv executable shipped by the `uv` package (a dependency), else one on PATH."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise EnvBuildError("uv is not installed: pip install uv (reprospec depends on it)")


def _uv(args: Sequence[str], *, timeout: float = UV_TIMEOUT_S, cwd: Path | None = None,
        ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)  # uv pip must act on --python, never on an activated venv
    try:
        return subprocess.run([uv_binary(), *args], capture_output=True, text=True,
                              errors="replace", timeout=timeout, env=env, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise EnvBuildError(f"uv {' '.join(args[:2])} timed out after {timeout:g}s") from exc


def _uv_error(stderr: str, lines: int = 4) -> str:
    """uv's error in a few lines: its `cause:` lines if any, else `error:`, else the tail."""
    text = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line.removeprefix("cause:").strip() for line in text if line.startswith("cause:")]
    errors = [line.removeprefix("error:").strip() for line in text if line.startswith("error:")]
    hints = [line for line in text if line.startswith("hint:")]
    chosen = causes or errors or text
    return " ".join([*chosen[-lines:], *hints[:1]]) or "no output"


# ---- building ------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvProgress:
    """One step of getting an environment, for a progress display."""

    key: str
    stage: str  # "reused" | "waiting" | "create" | "install" | "output" | "check" | "done"
    message: str
    seconds: float = 0.0


EnvProgressCallback = Callable[[EnvProgress], None]


@dataclass(frozen=True)
class Env:
    """A ready environment: its folder, interpreter and what is installed in it."""

    key: str
    path: Path
    request: EnvRequest
    installed: Mapping[str, str]
    reused: bool
    seconds: float

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


@contextlib.contextmanager
def _locked(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and (folder / "bin" / "python").exists() else None


def _mark_used(folder: Path, user: str | None) -> None:
    used = folder / USED_BY
    with contextlib.suppress(OSError):
        used.mkdir(exist_ok=True)
        marker = used / (_safe_name(user) if user else "-")
        marker.touch()
        os.utime(marker)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:100] or "-"


def ensure_env(
    request: EnvRequest,
    root: Path,
    *,
    progress: EnvProgressCallback | None = None,
    user: str | None = None,
    cwd: Path | None = None,
) -> Env:
    """The environment for `request` under `root`: reused when present, else built once.

    `user` (a spec name) is recorded for `envs list`; `cwd` is where uv runs (the
    spec's folder: relative requirement paths and the project's uv.toml resolve there).
    Raises EnvBuildError (an InfraError) when it cannot be built or is not what was asked.
    """
    started = time.monotonic()
    key = request.key()
    final = root / key

    def say(stage: str, message: str) -> None:
        if progress is not None:
            progress(EnvProgress(key, stage, message, time.monotonic() - started))

    meta = read_meta(final)
    if meta is None:
        lock = root / LOCKS / f"{key}.lock"
        with _locked(lock, lambda: say("waiting", "another run is building it; waiting")):
            meta = read_meta(final)  # built by someone else while we waited
            if meta is None:
                meta = _build(request, root, final, say, cwd)
                _mark_used(final, user)
                seconds = time.monotonic() - started
                say("done", f"built in {seconds:.1f}s")
                return Env(key, final, request, dict(meta.get("installed") or {}), False, seconds)
    _mark_used(final, user)
    say("reused", f"reused {final}")
    return Env(key, final, request, dict(meta.get("installed") or {}), True,
               time.monotonic() - started)


def _build(
    request: EnvRequest,
    root: Path,
    final: Path,
    say: Callable[[str, str], None],
    cwd: Path | None,
) -> dict[str, Any]:
    (root / TMP).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}-", dir=root / TMP))
    try:
        if final.exists():  # a folder without its description: a torn copy, never used
            shutil.rmtree(final)
        say("create", f"creating a venv with Python {request.python.version}")
        done = _uv(["venv", "--relocatable", "--no-project", "--python", request.python.path,
                    str(tmp / "venv")], timeout=600)
        if done.returncode != 0:
            raise EnvBuildError(f"uv venv failed: {_uv_error(done.stderr)}")
        venv = tmp / "venv"
        python = venv / "bin" / "python"
        if request.packages:
            say("install", "installing " + " ".join(request.packages))
            _install(request, python, say, cwd)
        say("check", "checking the installed versions")
        names = packages.requirement_names(request.packages)
        installed = packages.probe_installed(str(python), names)
        problems = packages.mismatches(request.packages, installed)
        if problems:
            raise EnvBuildError(
                "the installer picked other versions than the spec asks: " + "; ".join(problems)
            )
        meta = {
            "format": FORMAT,
            "key": final.name,
            "request": request.to_dict(),
            "installed": _freeze(python),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "uv": _uv_version(),
        }
        (venv / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        os.rename(venv, final)
        return meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install(
    request: EnvRequest, python: Path, say: Callable[[str, str], None], cwd: Path | None
) -> None:
    args = [uv_binary(), "pip", "install", "--python", str(python), *request.index.uv_args()]
    if request.exclude_newer:
        args += ["--exclude-newer", request.exclude_newer]
    args += list(request.packages)
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    # uv's lines (resolved, downloading, installed) go to the progress display as they come.
    lines: list[str] = []
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            if line:
                lines.append(line)
                say("output", line)
        code = proc.wait()
    if code != 0:
        raise EnvBuildError(
            f"cannot install {' '.join(request.packages)}: {_uv_error(chr(10).join(lines))}"
        )


def _freeze(python: Path) -> dict[str, str]:
    done = _uv(["pip", "freeze", "--python", str(python)], timeout=120)
    installed: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            installed[packages.normalize(name)] = version.strip()
        elif " @ " in line:
            name, _, url = line.partition(" @ ")
            installed[packages.normalize(name)] = url.strip()
    return installed


@lru_cache(maxsize=1)
def _uv_version() -> str:
    done = _uv(["--version"], timeout=60)
    return done.stdout.strip()


# ---- the cache: list and prune -------------------------------------------------------------


@dataclass(frozen=True)
class EnvInfo:
    """One cached environment as `envs list` shows it."""

    key: str
    path: Path
    python: str
    packages: tuple[str, ...]
    size_bytes: int
    created: str
    last_used: float  # epoch seconds
    used_by: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "path": str(self.path),
            "python": self.python,
            "packages": list(self.packages),
            "size_bytes": self.size_bytes,
            "created": self.created,
            "last_used": datetime.fromtimestamp(self.last_used, timezone.utc)
            .isoformat(timespec="seconds"),
            "used_by": list(self.used_by),
        }


def _size(folder: Path) -> int:
    total = 0
    for base, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                stat = os.lstat(os.path.join(base, name))
                total += stat.st_size
    return total


def list_envs(root: Path) -> list[EnvInfo]:
    """Every complete environment under `root`, most recently used first."""
    out: list[EnvInfo] = []
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        meta = read_meta(folder)
        if meta is None:
            continue
        request = meta.get("request") or {}
        users: list[tuple[float, str]] = []
        with contextlib.suppress(OSError):
            for marker in (folder / USED_BY).iterdir():
                users.append((marker.stat().st_mtime, marker.name))
        last_used = max((t for t, _ in users), default=(folder / META).stat().st_mtime)
        python = request.get("python") or {}
        out.append(EnvInfo(
            key=folder.name,
            path=folder,
            python=str(python.get("version") or ""),
            packages=tuple(request.get("packages") or ()),
            size_bytes=_size(folder),
            created=str(meta.get("created") or ""),
            last_used=last_used,
            used_by=tuple(name for _, name in sorted(users, reverse=True) if name != "-"),
        ))
    return sorted(out, key=lambda e: e.last_used, reverse=True)


def prune_envs(
    root: Path,
    *,
    older_than_s: float | None = None,
    keys: Sequence[str] = (),
    dry_run: bool = False,
    now: float | None = None,
) -> list[EnvInfo]:
    """Remove environments unused for `older_than_s` (None: all), or only `keys`; returns them.

    Each is removed under its build lock; torn builds left in `.tmp` by a killed run go too.
    """
    now = time.time() if now is None else now
    removed: list[EnvInfo] = []
    for env in list_envs(root):
        if keys and env.key not in keys:
            continue
        if older_than_s is not None and now - env.last_used < older_than_s:
            continue
        removed.append(env)
        if not dry_run:
            with _locked(root / LOCKS / f"{env.key}.lock"):
                trash = root / TMP / f"{env.key}-pruned-{os.getpid()}"
                trash.parent.mkdir(parents=True, exist_ok=True)
                os.rename(env.path, trash)  # gone at once for readers; deleted after
                shutil.rmtree(trash, ignore_errors=True)
    if not dry_run and not keys:
        _clean_tmp(root)
    return removed


def _clean_tmp(root: Path) -> None:
    tmp = root / TMP
    if not tmp.is_dir():
        return
    for folder in tmp.iterdir():
        key = folder.name.split("-", 1)[0]
        lock = root / LOCKS / f"{key}.lock"
        try:
            with lock.open("a") as fh:
                # A build in progress holds its lock: leave its folder alone.
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(folder, ignore_errors=True)
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        except BlockingIOError:
            continue
        except OSError:
            continue


def summarize(envs: Sequence[EnvInfo], now: float | None = None) -> list[dict[str, str]]:
    """Rows for a table: key, python, packages, size, last used (relative), used by."""
    now = time.time() if now is None else now
    rows = []
    for env in envs:
        rows.append({
            "key": env.key,
            "python": env.python,
            "packages": " ".join(env.packages) or "(none)",
            "size": _human_size(env.size_bytes),
            "last_used": _ago(now - env.last_used),
            "used_by": ", ".join(env.used_by) or "-",
        })
    return rows


def _human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return "just now"


def describe_request(request: EnvRequest) -> str:
    """One line for messages: `Python 3.11.7 + sqlparse==0.4.0`."""
    packages = " ".join(request.packages) or "no packages"
    extra = f" (uploaded before {request.exclude_newer})" if request.exclude_newer else ""
    return f"Python {request.python.version} + {packages}{extra}"


def env_request(
    environment: Environment,
    *,
    python: str | None = None,
    index: IndexConfig | None = None,
    exclude_newer: str | None = None,
) -> EnvRequest:
    """The request for one cell's resolved `environment` section.

    The interpreter is `python` (the run's --python) when given, else the spec's
    `environment.python` version found on this machine, else reprospec's own.
    """
    return EnvRequest(
        python=find_interpreter(python or environment.python),
        packages=environment.packages,
        index=index if index is not None else user_index_config(),
        exclude_newer=exclude_newer,
    )
