"""Virtual environments per resolved `environment`, built with uv and kept by content hash.

One environment = one interpreter + one list of requirements + where packages
come from (`index.py`). Its content hash names its folder, `<root>/<hash>` (root:
`.reprospec/envs`), so a second run, or another cell asking for the same thing,
reuses it: a warm switch costs a `stat` and one listing of its site-packages (a venv
changed by hand since, a package uninstalled or upgraded in it, is built again).

Building is atomic and happens once: under a per-hash file lock, the venv is
made in `<root>/.tmp/`, filled with `uv pip install`, checked (every requirement
satisfied by what actually got installed, through `packages`: a resolver that
silently picked another version is an InfraError naming both), described in
`reprospec-env.json`, then renamed into place. The venv is `--relocatable`, so
the rename breaks no script.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from reprospec.core import capped, safepoint
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.sections import Environment
from reprospec.core.trylock import SharedHold, hold_shared, let_go, locked_waiting
from reprospec.environment import packages
from reprospec.environment.interpreter import python3_version, version_of
from reprospec.errors import InfraError
from reprospec.venvs import pythons
from reprospec.venvs.index import IndexConfig, user_index_config
from reprospec.venvs.staging import LOCKS, TMP, build_lock, sweep_unfinished

FORMAT = 1
# How many hex digits of the content hash name an environment (`EnvRequest.key`; what
# cache.py reads a link's name by).
KEY_LENGTH = 16
# Where environments are kept when a runner is not told: a folder shared by projects.
ENVS_VARIABLE = "REPROSPEC_ENVS"
META = "reprospec-env.json"


def shared_envs() -> Path | None:
    """The folder `$REPROSPEC_ENVS` names (absolute), None where it is unset or empty. One
    that is a file, or has a file on its path, is the user's mistake named as theirs
    (exit 2): a venv run said only `Not a directory: FILE/.locks`, and `envs list` "no
    environments in FILE"."""
    from reprospec.core.runoptions import refuse_file_on_path

    given = os.environ.get(ENVS_VARIABLE)
    if not given:
        return None
    path = Path(given).expanduser()
    refuse_file_on_path(path, f"{ENVS_VARIABLE}={given}")
    return path.resolve()


def envs_folder(out: Path) -> Path:
    """Where the venv runner's environments are for a store at `out`: `$REPROSPEC_ENVS`
    when set (a folder the user shares between projects, or Slurm's nodes), else
    `OUT/envs`; absolute (slurm's array script names it to every node). What `envs`,
    `bisect` and `slurm` list, prune and build into."""
    return shared_envs() or (out / "envs").resolve()


USED_BY = ".used-by"
UV_TIMEOUT_S = 3600.0


# What a venv runner keeps of a build that failed, once per cell, in the folder of the first
# of its attempts that it runs: uv's whole output, which the console no longer streams past
# its first `error:` line, and which the attempts' infra-error reason names.
BUILD_LOG = "build.log"
# Where a failed build's whole output is kept when no attempt folder receives it (Slurm's
# preflight on the login node): ROOT/.failed/KEY.build.log, beside the environments (a dot
# first: `envs list` and `envs prune` take it for no environment).
FAILED = ".failed"
# Where doctor records each wheel it built (venvs/resolve.Built): ROOT/.built/KEY.json, beside
# the environments (a dot first, as FAILED's).
BUILT = ".built"


def failed_build_log(root: Path, key: str) -> Path:
    """The file under the environments folder `root` that keeps environment `key`'s failed
    build output where no run folder does (`FAILED`)."""
    return root / FAILED / f"{key}.{BUILD_LOG}"


class EnvBuildError(InfraError):
    """An environment could not be built, or was built but is not what was asked.

    `log` is uv's whole output of a failed install ("" where there was none): the message
    is one line of it, and the rest is kept in a file (BUILD_LOG), never on the console.
    """

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class UvTimeout(EnvBuildError):
    """uv ran past the timeout it was given (`run_uv`): told apart from the other
    EnvBuildError of `run_uv`, uv not installed, which is no slow or silent index."""


@frozen
class Interpreter:
    """A base interpreter found on this machine: the real path and its full version."""

    path: str
    version: str


def cutoff_of(request: JsonObject) -> str | None:
    """The upload cutoff a build of `request` (`EnvRequest.to_dict`, as meta.json keeps it)
    resolves under: `exclude_newer`, else a UV_EXCLUDE_NEWER of uv's settings (how `bisect
    --by-date` sets each day's, or the user's own shell): what tells one day's environment
    of unpinned `packages` from another's in the build's line and in `envs list`."""
    index = request.get("index")
    settings = index.get("uv_settings") if isinstance(index, dict) else None
    cutoff = request.get("exclude_newer") or (
        settings.get("UV_EXCLUDE_NEWER") if isinstance(settings, dict) else None
    )
    return str(cutoff) if cutoff else None


def uploaded_before(cutoff: str | None) -> str:
    """` (uploaded before 2022-12-06T23:59:59Z)` after what an environment holds, or
    nothing without a cutoff: the build's line and `envs list` say it alike."""
    return f" (uploaded before {cutoff})" if cutoff else ""


@frozen
class EnvRequest:
    """What one environment holds: interpreter, requirements, where they come from."""

    python: Interpreter
    packages: tuple[str, ...]
    index: IndexConfig = field(default_factory=IndexConfig)
    # uv's --exclude-newer: only what was uploaded before this instant (bisect by date).
    exclude_newer: str | None = None
    # (entry, where and what) of each entry that is a path of this machine (`./mypkg`, a
    # wheel's path): `./mypkg` of two specs' folders, or one edited since, named one
    # folder, and its first build ran the other program (`local_sources`).
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def cutoff(self) -> str | None:
        """The upload cutoff the build resolves under (`cutoff_of`)."""
        return cutoff_of(self.to_dict())

    def key(self) -> str:
        """The content hash that names the environment's folder."""
        parts: dict[str, object] = {
            "format": FORMAT,
            "python": [self.python.path, self.python.version],
            # Order does not change what a resolver installs; duplicates neither.
            "packages": sorted(set(self.packages)),
            "index": self.index.to_dict(),
            "exclude_newer": self.exclude_newer,
        }
        if self.sources:  # (absent otherwise: every other environment keeps its key)
            parts["sources"] = sorted(self.sources)
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:KEY_LENGTH]

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "python": {"path": self.python.path, "version": self.python.version},
            "packages": list(self.packages),
            "index": self.index.to_dict(),
            "exclude_newer": self.exclude_newer,
        }
        if self.sources:  # where two `./mypkg` envs differ: meta.json and `envs list` say so
            out["sources"] = [[entry, where] for entry, where in self.sources]
        return out


def _past_a_shim(request: str, found: str) -> tuple[str, str | None]:
    """`python3.10` as PATH finds it (`found`), or, where that is a shim that does not run
    (pyenv's of a version it has but not active), the first Python 3.10 that runs in the
    places venvs/pythons.py reads; where none does, EnvBuildError saying what was passed
    over and why (it said only `interpreter .../shims/python3.10 does not run`). With the
    version it said, where it was asked (a plain one), so `find_interpreter` does not start
    it again to ask; nor does the search past a shim start the shim again."""
    version = request.removeprefix("python")
    if not pythons.plain(version):
        return found, None
    said, why = version_of(found)
    if said is not None and pythons.matches(version, said):
        return found, said
    other = pythons.find(version, passed_over={found: why or f"Python {said}"})
    if other.path is None:
        raise EnvBuildError(
            f"no Python {version} that runs on this machine{_looked(other.tried)}; give the "
            f"path of a Python {version} (--python PATH, or environment.python: PATH)"
        )
    return other.path, other.version


def by_name(request: str) -> bool:
    """Whether a requested interpreter (`--python`, `environment.python`) is a name that
    `find_interpreter` looks for (`python3.10`, `3.12`), not a path: no separator and no
    file of that name here (runners/venv.py `base_python`, and `find_interpreter`)."""
    return os.sep not in request and not os.path.exists(request)  # noqa: PTH110


def own_interpreter_path() -> str:
    """The path `find_interpreter(None)` gives, reprospec's own interpreter as a cell that
    names no python is built on: doctor holds the interpreters it found against it, and a
    copy of the rule there would drift from this one unnoticed."""
    return os.path.realpath(sys.executable)


def find_interpreter(request: str | None = None) -> Interpreter:
    """The base interpreter for `request`: a path, a version such as "3.11" (found by uv
    among the interpreters on this machine), or None for reprospec's own interpreter.
    A found one is kept for the process (`_looked_up`). A failure is kept while a
    `remembered_failures` scope is open (a search's, a run's, a doctor's); outside one, each
    call looks again. A `UvTimeout` is kept only in the innermost scope it came in (a run's,
    a doctor's): not here is stable across a search, a timeout (uv's cache lock held by a
    parallel build, a slow filesystem) is not, and one made every later probe of a search
    of hours an infra error (review)."""
    if _scopes and request in _failures:
        kept, scope = _failures[request]
        if not isinstance(kept, UvTimeout) or scope is _scopes[-1]:
            raise kept.with_traceback(None)
    try:
        return _looked_up(request)
    except EnvBuildError as exc:
        if _scopes:
            _failures[request] = (exc, _scopes[-1])
        raise


# find_interpreter's, where remembered: each with the innermost scope open when it came.
_failures: dict[str | None, tuple[EnvBuildError, object]] = {}
_scopes: list[object] = []  # one a `remembered_failures` scope open, innermost last


@contextlib.contextmanager
def remembered_failures() -> Iterator[None]:
    """A scope in which `find_interpreter` keeps each failure: a search's (pipeline/
    searchscope.py, whose every probe is a run of its own), a run's (runners/venv.py
    `VenvRunner`), whose environment sections (`env_request`) each ask, and a doctor's,
    whose checks ask again: each a `uv python find` of up to 120 s. The failures are
    dropped as the outermost opens and closes, so that an interpreter made since is found by
    the next run or search of a long-lived process; one opened inside another keeps them
    (each probe's runner dropped them, a search paid a search a probe; a runner built
    meanwhile, another thread's run, dropped a run's) (review)."""
    if not _scopes:
        _failures.clear()
    # Its own token removed as it closes, not the last: scopes of runs on other threads
    # close in any order, and the last popped another's, whose timeouts were then kept
    # against the wrong scope (review).
    token = object()
    _scopes.append(token)
    try:
        yield
    finally:
        _scopes.remove(token)
        if not _scopes:
            _failures.clear()


@lru_cache(maxsize=32)
def _looked_up(request: str | None) -> Interpreter:
    """`find_interpreter`'s found interpreter, kept (lru_cache keeps no exception)."""
    return _find_interpreter(request)


def forget_interpreters() -> None:
    """Drop what `find_interpreter` kept (a test that changes PATH between searches)."""
    _looked_up.cache_clear()
    _failures.clear()


def _find_interpreter(request: str | None) -> Interpreter:
    """`find_interpreter`'s search itself, made anew each call."""
    said: str | None = None  # the version a search read already (it ran the interpreter)
    if request is None:
        path = own_interpreter_path()
    # As runners/local.py's resolve_python: symlinks kept (abspath, not Path.resolve), a `~`
    # that cannot be expanded left alone, and os.path.exists is False where Path's raises.
    elif not by_name(request):
        path = os.path.abspath(os.path.expanduser(request))  # noqa: PTH100, PTH111
    elif request.startswith("python") and shutil.which(request):
        path, said = _past_a_shim(request, str(shutil.which(request)))
    else:
        done = run_uv(["python", "find", request], timeout=120)
        if done.returncode == 0:
            path = done.stdout.strip().splitlines()[-1]
        else:
            # uv stops at a shim it cannot run: the places a user expects, read past it;
            # a program's name (`python3.10`, no shim of it on PATH) as its version.
            found = pythons.find(request.removeprefix("python"))
            if found.path is None:
                raise EnvBuildError(not_found(request, done.stderr, found.tried))
            path, said = found.path, found.version
    # Worded as every verb words an interpreter that cannot start (environment/interpreter.py).
    version = said or python3_version(path, error=EnvBuildError)
    # A venv's python and its base give the same environments: hash the real file.
    return Interpreter(os.path.realpath(path), version)


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


def uv_env() -> dict[str, str]:
    """The environment every uv runs in: no colours in what is read back, and no activated
    venv (uv pip must act on --python, never on an activated venv)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    return env


def run_uv(
    args: Sequence[str],
    *,
    timeout: float = UV_TIMEOUT_S,
    cwd: Path | None = None,
    pass_fds: Sequence[int] = (),
    input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """uv with `args`, its output captured; `input` its stdin (else none); `env`, variables
    set over `uv_env()`'s. Raises EnvBuildError where uv is not installed, UvTimeout (one)
    where it ran past `timeout`.

    uv runs in a session of its own, with the build backends it starts, and a timeout or
    any exception while it runs (a Ctrl-C) stops the whole group (`capped.stop_group`:
    SIGTERM, `_UV_STOP_S` for uv to obey it, then SIGKILL): subprocess.run's timeout killed
    uv alone, and the backend of an sdist it was building (doctor's resolve
    stopped at 120 s) built on for minutes, an orphan. Nothing sent to the caller's group (a
    terminal's Ctrl-C, `timeout`'s or a CI cancel's SIGTERM, a closed terminal's SIGHUP)
    reaches uv any more: the KeyboardInterrupt raised here stops it, which Python raises for
    SIGINT alone, so every verb that reaches this (doctor, slurm's preflight, the engine's
    verbs) turns SIGTERM and SIGHUP into it too (commands/interrupt.install_stop_handlers);
    without that a SIGTERM ended the verb outright and left uv building."""
    argv = [uv_binary(), *args]
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env={**uv_env(), **(env or {})},
        cwd=cwd,
        pass_fds=pass_fds,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            capped.stop_group(proc, grace_s=_UV_STOP_S)
            raise UvTimeout(f"uv {' '.join(args[:2])} timed out after {timeout:g}s") from exc
        except BaseException:
            capped.stop_group(proc, grace_s=_UV_STOP_S)
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def uv_pip_args(python: str, index: IndexConfig, exclude_newer: str | None = None) -> list[str]:
    """The options of a `uv pip` command that decide what it installs: the target
    interpreter, the index, the upload cutoff (`uv pip install`'s of a build, and `uv pip
    compile`'s of doctor's check, venvs/resolve.py, which must resolve alike). uv's own
    options, where `IndexConfig.pip_args` are pip's, translated from them."""
    args = ["--python", python, *index.uv_args()]
    return [*args, "--exclude-newer", exclude_newer] if exclude_newer else args


@frozen
class _UvReport:
    """uv's output of a failed command, read once: its non-blank lines, its `cause:` and
    `error:` lines (without the prefix), its hints, and the `[stderr]` block of a failed
    build (the package's own words). The stored reason (`uv_error`) and a console's one
    line (`build_failure_line`) are both made from it, so they name the same lines."""

    text: tuple[str, ...]
    causes: tuple[str, ...]
    errors: tuple[str, ...]
    hints: tuple[str, ...]
    built: tuple[str, ...]

    @classmethod
    def read(cls, output: str) -> _UvReport:
        text = tuple(line.strip() for line in output.splitlines() if line.strip())

        def said(prefix: str) -> tuple[str, ...]:
            return tuple(
                line.removeprefix(prefix).strip() for line in text if line.startswith(prefix)
            )

        hints = tuple(line for line in text if line.startswith("hint:"))
        built = tuple(_build_output(output.splitlines()))
        return cls(text, said("cause:"), said("error:"), hints, built)


def uv_error(stderr: str, lines: int = 4) -> str:
    """uv's error in a few lines: its `cause:` lines if any, else `error:`, else the tail;
    then the end of the `[stderr]` block a failed build prints (the package's own words:
    `nu9akit 1.3: this sdist is broken on purpose`, where the causes say only that the
    build backend failed)."""
    report = _UvReport.read(stderr)
    chosen = report.causes or report.errors or report.text
    said = [f"(the build said: {' / '.join(report.built[-2:])})"] if report.built else []
    return " ".join([*chosen[-lines:], *said, *report.hints[:1]]) or "no output"


def not_found(request: str, stderr: str, tried: Sequence[str] | None = None) -> str:
    """Why no interpreter of `request` was found: `uv python find`'s stderr, and `tried`,
    the interpreters venvs/pythons.py read past it (PATH's, pyenv's, uv's managed ones)
    and why each was passed over (None: it read none, the request being no plain version).

    uv stops at the first interpreter of the search path it cannot run: a pyenv shim of a
    version pyenv has but does not have active (`pyenv: python3.10: command not found`).
    That said "no Python 3.10 on this machine" with one in ~/.pyenv/versions, and the shim's
    note as "the build said": it is said as what it is, with its path and first word, and
    the way past it (the interpreter's path)."""
    report = _UvReport.read(stderr)
    looked = _looked(tried)
    stuck = next((e for e in report.errors if e.startswith("Failed to inspect Python")), None)
    if stuck is None:
        return f"no Python {request} on this machine (uv python find: {uv_error(stderr)}{looked})"
    at = stuck.rsplit(" at ", 1)[-1].strip("`") if " at " in stuck else "an interpreter"
    why = report.built[0] if report.built else (report.causes or ("it does not run",))[-1]
    return (
        f"uv python find {request} stopped at {at}, which does not run ({why}){looked}; "
        f"give the path of a Python {request} (--python PATH, or environment.python: PATH)"
    )


def _looked(tried: Sequence[str] | None) -> str:
    """`; passed over ...`: the interpreters venvs/pythons.py read and why each was passed
    over, for an error's tail ("" where it read none)."""
    if tried is None:
        return ""  # (a request that is no plain version, `pypy3.10`: only uv looked)
    if not tried:
        return "; none in PATH, pyenv's versions or uv's managed Pythons"
    return f"; passed over {', '.join(tried)}"


def build_failure_line(output: str) -> str:
    """The one line of uv's output that says why an install failed, for a console line: the
    package's own last word (the end of a failed build's `[stderr]` block: `AttributeError:
    'build_ext' object has no attribute 'cython_sources'`), else uv's last `cause:`, else
    its `error:`, else the last line; "" for no output."""
    report = _UvReport.read(output)
    said = report.built or report.causes or report.errors or report.text
    return said[-1] if said else ""


def backend_said(output: str) -> tuple[str, ...]:
    """The package's own lines of uv's output of a failed build (its `[stderr]` block,
    stripped), read as `build_failure_line` reads them: () where no build backend spoke.
    doctor quotes from them a build's own network failure (venvs/resolve.py), never a line
    of uv's."""
    return _UvReport.read(output).built


def _build_output(lines: Sequence[str]) -> list[str]:
    """The lines of uv's `[stderr]` block of a failed build (its non-blank lines, stripped),
    to its hint (or a `[stdout]` block after it). uv indents the block and not its own
    lines: the block was cut at the package's own `error:` line, read as uv's (setuptools'
    `error: command 'gcc' failed: No such file or directory`, a build's usual last word), and
    the console and doctor said uv's `Call to backend.build_wheel failed` instead."""
    stripped = [line.strip() for line in lines]
    if "[stderr]" not in stripped:
        return []
    block: list[str] = []
    for raw in lines[stripped.index("[stderr]") + 1 :]:
        line = raw.strip()
        if not line:
            continue
        if line == "[stdout]" or (
            not raw[:1].isspace() and line.startswith(("hint:", "error:", "cause:"))
        ):
            break
        block.append(line)
    return block


# ---- building ------------------------------------------------------------------------------


@frozen
class EnvProgress:
    """One step of getting an environment, for a progress display."""

    key: str
    # "reused" | "waiting" | "create" | "install" | "output" | "check" | "done" | "warning"
    stage: str
    message: str
    seconds: float = 0.0


EnvProgressCallback = Callable[[EnvProgress], None]


@frozen
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
def locked(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[int]:
    """An exclusive lock on `path` while inside; yields its descriptor, which a build passes
    to the uv it starts (`_build`), so that the lock outlives a killed engine for as long as
    its uv still writes the half-built venv. Its file is removed as it goes (core/trylock.py)
    only where the body ended well: one that raised (a uv timed out, a failed build, a
    Ctrl-C) may leave a uv or build backend alive that shares the lock through that
    descriptor, and a file unlinked under it would read free to the next `try_locked`
    while it still writes; the file stays, for `sweep_free` to remove once free."""
    fd = locked_waiting(path, on_wait)
    try:
        yield fd
    except BaseException:
        os.close(fd)
        raise
    let_go(fd, path)


def in_use_lock(root: Path, key: str) -> Path:
    """The file a run holds a shared lock on while it uses environment `key` (`hold`), which
    `envs prune` takes alone before it removes it."""
    return root / LOCKS / f"{key}.use"


def hold(root: Path, key: str) -> SharedHold | None:
    """A shared lock on environment `key` until the hold returned is closed: a
    run's attempts use it, and a prune meanwhile removed it under them (an attempt ended
    infra-error, "not installed where the attempt ran"). Waits while a prune is
    removing it (then the run builds it again). None where its lock file cannot be made (a
    folder of environments this user cannot write, another's, shared): a run reuses such an
    environment as it did before it was held, where the run stopped on the OSError; so too
    where its file system refuses `flock` (core/trylock.py)."""
    return hold_shared(in_use_lock(root, key))


def read_meta(folder: Path) -> JsonObject | None:
    """An environment's reprospec-env.json; None for a folder that is no complete environment."""
    data, problem = read_meta_why(folder)
    return None if problem else data


def read_meta_why(folder: Path) -> tuple[JsonObject | None, str]:
    """`folder`'s reprospec-env.json where it is a JSON object (else None), and why the folder
    is an environment whose description cannot be read, in a few words (`envs list` says it,
    and a run building it again; "" where it is a complete environment, or no environment's
    folder at all: neither a reprospec-env.json nor a venv's pyvenv.cfg in it, something else
    someone keeps under the environments folder, which list and prune leave alone). Of one
    whose bin/python is gone, the description is returned beside why: `envs list` says the
    python and packages it was built with, which decide whether to reinstall or prune."""
    meta = folder / META
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except OSError as exc:
        if not meta.exists() and not meta.is_symlink():
            return None, f"it has no {META}" if (folder / "pyvenv.cfg").exists() else ""
        return None, f"its {META} cannot be read ({exc.strerror or exc})"
    except ValueError as exc:
        return None, f"its {META} is not JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"its {META} is not a JSON object"
    python = folder / "bin" / "python"
    if python.exists():
        return data, ""
    if python.is_symlink():
        # The interpreter it was built on was removed since (a pyenv version uninstalled).
        # Said is the path that is gone, at the links' end: a venv laid out as stdlib's links
        # python -> python3 -> /abs/python3, and "links to python3, which is gone" named
        # a link that is there.
        gone = _gone_hop(python)
        if gone is None:
            return data, "its bin/python is a loop of links"
        return data, f"its bin/python links to {gone}, which is gone"
    return data, "it has no bin/python"


def _gone_hop(link: Path) -> str | None:
    """The first target along `link`'s chain of links that is not there, each hop as
    `link_target` reads it (from the link's folder as named, a `..` climbed, the folders
    above it unresolved: `realpath` also resolved them, a `~/.pyenv` that is itself a link
    said as its `/data/...` target, not the pyenv path the user knows). None where the chain
    loops (or runs past the kernel's 40 hops): every target along it is there, a link; a loop
    was said as `links to .../bin/python, which is gone`, naming the link itself."""
    path = link
    try:
        for _ in range(40):
            path = Path(link_target(path))
            if not path.exists() and not path.is_symlink():
                return str(path)
    except OSError:  # a folder along it this user cannot read: as `realpath` says it
        return os.path.realpath(link)
    return None


def link_target(link: Path) -> str:
    """Where `link` points, one hop, as an absolute path read from the link's folder as it is
    named (`/proj/envs/KEY -> ../shared/whole` is `/proj/shared/whole`): `realpath` also
    resolved the folders above it, an environments folder under a linked `/proj` said as its
    `/data/proj/...` target, a path the user never typed (as `_gone_hop` of an interpreter).
    A `..` climbs lexically out of a folder that is no link, and out of a link's target
    where it is one (`/proj/..` of a linked `/proj` is its target's parent). `realpath`
    where the link cannot be read."""
    try:
        target = link.readlink()
    except OSError:
        return os.path.realpath(link)
    here = link.parent.absolute()
    for part in target.parts:  # an absolute target's "/" replaces the folder
        if part == "..":
            # (realpath: `resolve` raised on a loop of links, where this says the path)
            here = (Path(os.path.realpath(here)) if here.is_symlink() else here).parent
        elif part != ".":
            here = here / part
    return str(here)


def intact_meta(folder: Path, say: Callable[[str, str], None] | None = None) -> JsonObject | None:
    """The environment's description where it still holds what it was built with, else None
    (then it is built again, in place): a cached venv whose package was uninstalled or
    changed by hand was reused as it was, and every run of its cells was infra-error ("six
    is not installed") until its folder was removed, which nothing said. A folder this user
    cannot write (another's, shared) is reused as it is: it cannot be built again there.
    `say`: where the rebuild is said (once: under the build lock, not in the look before it)."""
    meta, problem = read_meta_why(folder)
    if meta is None or problem:
        # One whose description cannot be read was built again without a word, as if new.
        if say is not None and problem and folder.is_dir():
            say("check", f"{folder}: {problem}: building it again")
        return None
    changed = _changed_since_built(folder, installed(meta))
    if not changed or not os.access(folder, os.W_OK):
        return meta
    if say is not None:
        say(
            "check",
            f"{folder} no longer holds what it was built with ({changed}): building it again",
        )
    return None


def _changed_since_built(folder: Path, built: Mapping[str, str]) -> str:
    """What of `built` ({name: version} from its reprospec-env.json) the venv's site-packages
    no longer holds, as words ("" when all is there): one listing of the folder, from its
    `*.dist-info` names, so that a reuse stays about as cheap as a `stat`."""
    from packaging.version import InvalidVersion, Version

    present: dict[str, str] = {}
    for site in folder.glob("lib/python*/site-packages"):
        with contextlib.suppress(OSError):
            for entry in site.iterdir():
                if entry.name.endswith(".dist-info"):
                    name, _, version = entry.name.removesuffix(".dist-info").partition("-")
                    present[packages.normalize(name)] = version
    problems: list[str] = []
    for name, version in sorted(built.items()):
        now = present.get(name)
        if now is None:
            problems.append(f"{name} is gone")
            continue
        try:
            same = Version(now) == Version(version)
        except InvalidVersion:  # a direct reference (`@ file://...`): its presence is all
            same = True
        if not same:
            problems.append(f"{name} is {now}, built with {version}")
    return "; ".join(problems)


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

    meta = intact_meta(final)
    if meta is None:
        lock = build_lock(root, key)
        with locked(lock, lambda: say("waiting", "another run is building it; waiting")) as fd:
            meta = intact_meta(final, say)  # built by someone else while we waited
            if meta is None:
                # What killed builds left in TMP goes first: nothing else would remove it
                # but a prune, and a killed build of a large environment is hundreds of MB.
                sweep_unfinished(root, own=key)
                meta = _build(request, root, final, say, cwd, fd)
                # A failed build's log kept for a preflight (FAILED) names no failure now.
                failed_build_log(root, key).unlink(missing_ok=True)
                _mark_used(final, user)
                seconds = time.monotonic() - started
                say("done", f"built in {seconds:.1f}s")
                return Env(key, final, request, installed(meta), False, seconds)
    _mark_used(final, user)
    say("reused", f"reused {final}")
    return Env(key, final, request, installed(meta), True, time.monotonic() - started)


def installed(meta: JsonObject) -> dict[str, str]:
    """{distribution: version} of what an environment holds, from its reprospec-env.json."""
    found = meta.get("installed")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _build(
    request: EnvRequest,
    root: Path,
    final: Path,
    say: Callable[[str, str], None],
    cwd: Path | None,
    lock_fd: int,
) -> JsonObject:
    """Build `request` in a folder of its own under TMP and rename it to `final`; called
    under the key's build lock, whose descriptor `lock_fd` each uv inherits: a build whose
    engine was killed, or that raised here (a uv timed out, Ctrl-C: `locked` leaves the
    lock file then), keeps its folder locked until its uv and the build backends it started
    have ended too, so that no sweep (`sweep_unfinished`) removes a folder a live uv still
    fills."""
    (root / TMP).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}-", dir=root / TMP))
    try:
        if final.is_symlink():
            # A link to an environment kept elsewhere whose description cannot be read, or
            # whose packages changed: rmtree refused it (a bare OSError, no infra error). The
            # link alone goes; its target is never built over, nor removed. Said absolute:
            # a relative link's own target is relative to the environments folder.
            target = link_target(final)
            say("check", f"{final} is a link to {target}: removing the link alone")
            final.unlink()
        elif final.exists():  # a folder without its description: a torn copy, never used
            shutil.rmtree(final)
        say("create", f"creating a venv with Python {request.python.version}")
        done = run_uv(
            [
                "venv",
                "--relocatable",
                "--no-project",
                "--python",
                request.python.path,
                str(tmp / "venv"),
            ],
            timeout=600,
            pass_fds=(lock_fd,),
        )
        if done.returncode != 0:
            raise EnvBuildError(f"uv venv failed: {uv_error(done.stderr)}")
        venv = tmp / "venv"
        python = venv / "bin" / "python"
        if request.packages:
            say("install", "installing " + " ".join(request.packages))
            _install(request, python, say, cwd, lock_fd)
        say("check", "checking the installed versions")
        installed = packages.probe_installed(str(python), request.packages)
        problems = packages.mismatches(request.packages, installed)
        if problems:
            raise EnvBuildError(
                "the installer picked other versions than the spec asks: " + "; ".join(problems)
            )
        meta: JsonObject = {
            "format": FORMAT,
            "key": final.name,
            "request": request.to_dict(),
            "installed": {name: version for name, version in _freeze(python).items()},
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "uv": _uv_version(),
        }
        (venv / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        venv.rename(final)
        return meta
    finally:
        # Also on a Ctrl-C: `_install` has stopped its uv by then, so nothing refills it.
        # A second Ctrl-C during the removal stops it at once; the rest is a dead build's,
        # which `envs list` names and the next build or prune removes.
        shutil.rmtree(tmp, ignore_errors=True)


# How long a uv told to stop (SIGTERM) as a build is interrupted may take before it is killed.
_UV_STOP_S = 2.0


def _install(
    request: EnvRequest,
    python: Path,
    say: Callable[[str, str], None],
    cwd: Path | None,
    lock_fd: int,
) -> None:
    args = [uv_binary(), "pip", "install"]
    args += [*uv_pip_args(str(python), request.index, request.exclude_newer), *request.packages]
    # uv's lines (resolved, downloading, installed) go to the progress display as they come,
    # until its `error:` line: what follows is the failure's report (a failed build's whole
    # output, some 70 lines of a setup.py's traceback), which the error's one line sums up
    # and its `log` keeps, where it scrolled the run's own lines away.
    lines: list[str] = []
    failing = False
    with subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=uv_env(),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        pass_fds=(lock_fd,),
        # A group of its own, uv and the build backends it starts, which `capped.stop_group`
        # ends as one: a backend that outlived its uv kept the build lock it inherited.
        start_new_session=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            for line in safepoint.each(proc.stdout):  # a stop heard while uv is silent
                line = line.rstrip()
                if line:
                    lines.append(line)
                    failing = failing or line.startswith("error:")
                    if not failing:
                        say("output", line)
            code = proc.wait()
        except BaseException:
            # A Ctrl-C (or SIGTERM) the engine alone received (`kill -INT`, a CI's cancel):
            # Popen's exit waits 0.25 s for uv and leaves it running, and uv went on to
            # install into the venv after `_build` had removed it (116 MB left).
            capped.stop_group(proc, grace_s=_UV_STOP_S)
            raise
    if code != 0:
        output = "\n".join(lines)
        raise EnvBuildError(
            f"cannot install {' '.join(request.packages)}: {uv_error(output)}", log=output + "\n"
        )


def _freeze(python: Path) -> dict[str, str]:
    done = run_uv(["pip", "freeze", "--python", str(python)], timeout=120)
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
    done = run_uv(["--version"], timeout=60)
    return done.stdout.strip()


def describe_request(request: EnvRequest) -> str:
    """One line for messages: `Python 3.11.7 + sqlparse==0.4.0`."""
    packages = " ".join(request.packages) or "no packages"
    return f"Python {request.python.version} + {packages}{uploaded_before(request.cutoff)}"


def env_request(
    environment: Environment,
    *,
    python: str | None = None,
    index: IndexConfig | None = None,
    exclude_newer: str | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> EnvRequest:
    """The request for one cell's resolved `environment` section.

    The interpreter is `python` (the run's --python) when given, else the spec's
    `environment.python` version found on this machine, else reprospec's own (one not
    found is remembered in a run's `remembered_failures`: each section asks, one search).
    `cwd`: where uv runs, which a relative path entry is read from (`local_sources`);
    `warn`: what it says of a folder keyed in part (`local_sources`).
    """
    return request_for(
        find_interpreter(python or environment.python),
        environment.packages,
        index if index is not None else user_index_config(),
        exclude_newer=exclude_newer,
        cwd=cwd,
        warn=warn,
    )


def request_for(
    python: Interpreter,
    packages: tuple[str, ...],
    index: IndexConfig,
    *,
    exclude_newer: str | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> EnvRequest:
    """The request of `packages` on `python` from `index`, keyed as a run keys it: its path
    entries read from `cwd` (else the current folder), `warn` told of a folder keyed in part
    (`local_sources`, which raises InfraError of an entry it cannot read). `env_request`'s,
    and doctor's of an environment built already (commands/doctorvenv.py), alike."""
    return EnvRequest(
        python=python,
        packages=packages,
        index=index,
        exclude_newer=exclude_newer,
        sources=local_sources(packages, cwd or Path.cwd(), warn),
    )


def _warn_on_stderr(line: str) -> None:
    print(f"reprospec: warning: {line}", file=sys.stderr, flush=True)


def local_sources(
    requirements: Sequence[str], cwd: Path, warn: Callable[[str], None] | None = None
) -> tuple[tuple[str, str], ...]:
    """(entry, its absolute path and a digest of its files' names, sizes and times) of each
    entry that is a path of this machine, read from `cwd`; one not there is left to uv.
    `warn` (None: stderr) is told of a folder keyed in part (`_source_files`)."""
    out = []
    for requirement in requirements:
        where = packages.local_path(requirement)
        if where is None:
            continue
        try:  # `~nobody/pkg` of a user this machine lacks raised RuntimeError: a traceback
            path = (cwd / Path(where).expanduser()).resolve()
        except RuntimeError as exc:
            raise InfraError(f"{requirement!r}: {exc}") from exc
        if not path.exists():
            continue
        digest = hashlib.sha256()
        files = (
            [path] if path.is_file() else _source_files(requirement, path, warn or _warn_on_stderr)
        )
        for file in files:
            with contextlib.suppress(OSError):
                stat = file.stat()
                digest.update(f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        out.append((requirement, f"{path} {digest.hexdigest()[:16]}"))
    return tuple(out)


def _source_files(requirement: str, folder: Path, warn: Callable[[str], None]) -> list[Path]:
    """The files of a folder entry, sorted: what a build writes and a checkout's own
    folders pruned as the walk meets them (never entered: rglob walked .git and .venv whole
    and filtered after), symlinked folders followed as the build follows them, after the
    folder's own files (each real folder once: a link back up is no loop). Past
    `SOURCE_FILES_CAP` files (`data -> /datasets`, `.` of a monorepo) the walk stops and
    what it met is keyed, and a subfolder it cannot read (a container's root-owned output)
    is left out, each said to `warn` once; only the folder itself unreadable is an
    InfraError: it was refused whole, and every cell with it infra-error."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()
    links: list[Path] = [folder]
    unread: list[str] = []

    def unreadable(exc: OSError) -> None:
        if exc.filename is None or Path(exc.filename) == folder:
            raise InfraError(f"{requirement!r}: cannot read {folder}: {exc.strerror}")
        unread.append(f"{exc.filename} ({exc.strerror})")

    while links:
        for top, dirs, names in os.walk(links.pop(0), onerror=unreadable):
            try:
                stat = Path(top).stat()
            except OSError as exc:
                unreadable(exc)
                dirs[:] = []
                continue
            if (stat.st_dev, stat.st_ino) in seen:
                dirs[:] = []
                continue
            seen.add((stat.st_dev, stat.st_ino))
            top_level = top == str(folder)
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in _NOT_SOURCES
                and not d.endswith(".egg-info")
                and not (top_level and d in _NOT_SOURCES_AT_TOP)
            )
            linked = {d for d in dirs if Path(top, d).is_symlink()}
            links.extend(Path(top, d) for d in dirs if d in linked)
            dirs[:] = [d for d in dirs if d not in linked]
            files.extend(Path(top, name) for name in sorted(names))
            if len(files) > SOURCE_FILES_CAP:
                break
        if len(files) > SOURCE_FILES_CAP:
            warn(
                f"{requirement!r}: more than {SOURCE_FILES_CAP} files under {folder}: its "
                f"environment is keyed by the first {SOURCE_FILES_CAP} only (its own before "
                "linked folders), so an edit past them reuses it; name the package's own "
                "folder, not one that holds data or other checkouts"
            )
            del files[SOURCE_FILES_CAP:]
            break
    if unread:
        warn(
            f"{requirement!r}: cannot read {', '.join(unread[:3])}"
            f"{f' and {len(unread) - 3} more' if len(unread) > 3 else ''} under {folder}: "
            "not keyed, so an edit there reuses its environment"
        )
    return sorted(p for p in files if p.is_file())


# A checkout's own folders, a tool's caches and setuptools' `*.egg-info` (written on each
# build), at any depth: no package's source sits in them. Kept, they changed the key on
# every run of a spec whose folder is `.` (a fresh env each time, and `slurm`'s shards
# keyed another than the login node built).
_NOT_SOURCES = frozenset(
    {
        ".git",
        "__pycache__",
        ".tox",
        ".venv",
        "node_modules",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    }
)
# What a build writes (`build`, `dist`) and a run's default --out, at the folder's top
# only: deeper, `mypkg/dist/` or pip's `_internal/operations/build/` is source. (The venv
# runner is not told a run's --out: one other than `.reprospec` inside the folder is keyed.)
_NOT_SOURCES_AT_TOP = frozenset({"build", "dist", ".reprospec"})
# Past this many files a folder entry is keyed in part: keying them all would stall every
# build.
SOURCE_FILES_CAP = 20_000
