"""Whether a cell's packages resolve, asked as the venv build would install them, nothing
installed (only the wheels of the sdists it picks are built, as the build builds them).

`doctor --runner venv` passed a spec of `six==99`: only the build at run time failed, and
then every cell of it was `infra-error`. `resolve` asks uv's resolver (`uv pip compile`)
with the build's own index options (`IndexConfig.uv_args`; no upload cutoff, which only
`bisect --by-date` gives a build and doctor never does) and target interpreter (its
markers), in the spec's folder (a relative path entry), and reads the answer as one of
three: resolves, cannot (uv found no solution: the build would fail too), or could not be
told (the index did not answer, uv timed out or failed otherwise), which is never said as
a failure. The resolver reads an sdist's metadata alone, which may build where its wheel
does not (a setup.py whose egg_info runs and whose bdist_wheel needs a compiler): each
distribution it picks with no wheel for the interpreter is built as the venv build builds
it (`_sdists_built`), and its failure is the build's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from reprospec.core.atomicfile import write_atomic
from reprospec.core.frozen import frozen
from reprospec.errors import InfraError
from reprospec.venvs.build import (
    UV_TIMEOUT_S,
    EnvBuildError,
    Interpreter,
    UvTimeout,
    backend_said,
    build_failure_line,
    request_for,
    run_uv,
    uv_error,
    uv_pip_args,
)
from reprospec.venvs.index import IndexConfig

# A resolve that takes longer than this is said as not checked (a slow or silent index).
RESOLVE_TIMEOUT_S = 120.0
# How long one request of the resolve waits for the index to answer, with no retry: uv's own
# (UV_HTTP_TIMEOUT, 30 s, then UV_HTTP_RETRIES=3 more) outlasted RESOLVE_TIMEOUT_S, so a
# silent index (one that accepts the connection and never answers) cost each list the whole
# resolve's timeout, read as a long list's backtracking, and doctor asked the next list: 2 x
# 120 s. With one wait shorter than the resolve's, uv says its own `operation timed out`,
# read as the index's (`unreached`), and the lists left are not asked. A user's shorter
# UV_HTTP_TIMEOUT is kept.
INDEX_TIMEOUT_S = 30
# uv's offline words (UV_OFFLINE): no index was asked, and asking again changes nothing.
_OFFLINE = ("network connectivity is disabled", "not found in the cache")
# uv's words where its answer came from no index: a request that failed or was not made.
# A "No solution found" beside one of them is the network's, not the requirements'. Each
# is words no package's name holds (a space in each): uv's output names the packages, and a
# lone "offline" read `offline-foo==99`'s "No solution found" as the network's (review);
# uv's offline words are "network connectivity is disabled" and "not found in the cache".
_UNREACHED = (
    "failed to fetch",
    "error sending request",
    "request failed after",
    "dns error",
    "tcp connect error",
    "connection refused",
    "timed out",
    *_OFFLINE,
)
# Words a build backend's own output says a download failed with (a setup_requires that pip
# or setuptools fetched, a toolchain fetched by urllib, curl or cargo): what makes its failed
# build not checked (`_backend_offline`) rather than a failure. Fetch words alone: the index's
# `timed out` and `connection refused` are words of any compile or test log too (a test's
# "timed out", a refused connection to a local server), and a real failure of the package
# was said not checked, exit 0.
_FETCH_FAILED = (
    "urlopen error",
    "failed to fetch",
    "error sending request",
    "dns error",
    "tcp connect error",
    "failed to establish a new connection",
    "max retries exceeded with url",
    "temporary failure in name resolution",
    "name or service not known",
    "could not resolve host",
    "couldn't resolve host",
    "network is unreachable",
    # A download that timed out: pip's (urllib3's) and curl's or cargo's own words, never a
    # bare `timed out`, which a test or a linker says too.
    "connecttimeouterror",
    "readtimeouterror",
    "timeout was reached",
)
# A line that says a download will be tried again (cargo's `warning: spurious network error
# (2 tries remaining)`, pip's `WARNING: Retrying (Retry(total=4, ...)) after connection
# broken by 'ConnectTimeoutError(...)'`): no failure, often followed by the download's
# success; a build whose compile then failed read as one that hit a network failure.
_RETRYING = ("spurious network error", "retrying (retry(")
# How long a request the index failed quickly (refused, reset, a DNS error, a 503) waits
# before it is asked once more: one such failure of a flaky index made doctor say "could not
# check". Not an answer that waited out the index (`timed out`: a silent index, whose second
# wait doubled the first), nor uv's offline words, which no retry changes.
RETRY_PAUSE_S = 1.0


@frozen
class Resolved:
    """uv's answer for one package list: `state` `ok` (it resolves), `unsatisfiable` (uv
    found no solution, or the build backend of a distribution it picked failed: the build
    would fail the same way) or `unknown` (no answer to go by); `said`, uv's reason in a
    few lines where it did not resolve."""

    state: Literal["ok", "unsatisfiable", "unknown"]
    said: str = ""
    # Why an `unknown` answer may say something of the lists asked after it ("": uv failed
    # otherwise): `unreached`, the index did not answer (uv's network words), and every list
    # asked of the same index waits it out again; `timed_out`, uv ran past the timeout,
    # which may be this list's backtracking alone as often as a silent index (doctor stops
    # asking only after `_TIMEOUTS` of them, commands/doctorvenv).
    stopped: Literal["", "unreached", "timed_out"] = ""
    # Of an `ok` answer, the distributions it picked that have no wheel for the interpreter,
    # each built from its sdist here as the venv build builds it, or a path entry of this
    # machine, built from that path (`_sdists_built`).
    built: tuple[str, ...] = ()
    # Of those, the ones an earlier doctor built and recorded (`Built`): not built again.
    recorded: tuple[str, ...] = ()
    # Of those built here, the path entries keyed only in part (`Built.add`): never recorded,
    # so built again at each doctor, which says why.
    unrecorded: tuple[str, ...] = ()
    # Of an `unknown` answer, a build stopped at the timeout while it still ran: slow, not
    # failed (its todo is not to run `uv pip compile` to see an error there is none of).
    slow: bool = False
    # Of an `unknown` answer, a build that ran and failed on a network error of its own (its
    # backend's output names one: `_backend_offline`): it may well build where that network
    # answers, which neither a failure nor "the index did not answer" said.
    offline_build: bool = False
    # Of an `unsatisfiable` answer, the path entry (`./mypkg`) whose own build failed: no
    # index has any part in it, and its todo was the index's ("name versions the index has").
    path_build: str = ""


class RetryTimedOut(UvTimeout):
    """Asked again after the index failed its first try quickly (`_asked`), uv ran past the
    time left. Past the index's own wait (`past_index`), the index answered it (a silent
    one ends in uv's `operation timed out` first): what timed out is the step itself, a
    build, a long resolve, which was said as "the index did not answer"."""

    def __init__(self, args: Sequence[str], first: str, left: float, past_index: bool) -> None:
        self.first = first  # uv's error of the first try
        self.left = left
        self.past_index = past_index
        self.step = "uv " + " ".join(args[:2])
        super().__init__(f"{self.step} ran past the {left:.0f} s left when asked again")

    def said(self) -> str:
        """What timed out, after what the first try said."""
        waited = "" if self.past_index else " (less than the index's own wait)"
        return (
            f"{self.first}; asked again, {self.step} ran out of the {self.left:.0f} s left{waited}"
        )


@frozen
class Built:
    """Where the wheels doctor builds (`_sdists_built`) are recorded, for `python`: each under
    the key the venv runner gives an environment of that entry alone on `python` from the
    index (`request_for`: a path entry keyed by its files too), so an edited `./mypkg` is
    built again and an unchanged one is not. A path entry's wheel is built again at each
    install (uv keeps no wheel of a folder), so a second `doctor` rebuilt it as the first
    did, minutes of a compiled package each time."""

    folder: Path
    python: Interpreter

    def _path(self, entry: str, index: IndexConfig, cwd: Path | None) -> tuple[Path | None, bool]:
        """The record of `entry`, and whether its key holds only part of its files. None
        where its path cannot be read (the build says why), or where its key is partial
        (`local_sources` warns of it: past SOURCE_FILES_CAP files, a subfolder not read): an
        edit outside that part was not built again, and said built by an earlier doctor "as
        it is now"."""
        partial: list[str] = []
        try:
            request = request_for(self.python, (entry,), index, cwd=cwd, warn=partial.append)
        except InfraError:
            return None, False
        return (None, True) if partial else (self.folder / f"{request.key()}.json", False)

    def has(self, entry: str, index: IndexConfig, cwd: Path | None) -> bool:
        """Whether an earlier doctor built `entry` as it is now."""
        path, _ = self._path(entry, index, cwd)
        return path is not None and path.is_file()

    def add(self, entry: str, index: IndexConfig, cwd: Path | None, seconds: float) -> bool:
        """`entry` recorded as built, in `seconds`; nothing where it cannot be written (the
        next doctor builds it again). False where it is never recorded, its key holding only
        part of its files (`_path`): doctor says why it builds it at each run, where it
        dropped `local_sources`' warning and said nothing of it."""
        path, partial = self._path(entry, index, cwd)
        if path is None:
            return not partial
        record = {
            "entry": entry,
            "python": self.python.version,
            "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(seconds, 1),
        }
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(record) + "\n", durable=False)
        return True


def quiet(_: str) -> None:
    """`local_sources`' warning of a folder keyed in part: the run says it, not doctor."""


# uv's words where `--only-binary :all:` finds a pinned distribution with no wheel here.
_NO_WHEEL = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s,]+) has no usable wheels")


def resolve(
    python: str,
    packages: Sequence[str],
    index: IndexConfig,
    *,
    cwd: Path | None = None,
    timeout_s: float = RESOLVE_TIMEOUT_S,
    kept: Built | None = None,
) -> Resolved:
    """Whether `packages` resolve for interpreter `python` from `index` (build._install's
    options, `uv_pip_args`), read from `cwd` (where the build runs uv: a relative path entry).
    Without uv, `unknown`, saying why (EnvBuildError's words). Each request waits
    `index_wait_s()` for the index, once (INDEX_TIMEOUT_S); each uv the index failed
    quickly is run once more (`_asked`). `kept`: where the wheels built are recorded, and
    those recorded are not built again."""
    waited = index_wait_s()
    env = {"UV_HTTP_TIMEOUT": str(waited), "UV_HTTP_RETRIES": "0"}
    try:
        done = _asked(
            ["pip", "compile", "-", "--quiet", "--no-header", *uv_pip_args(python, index)],
            timeout_s=timeout_s,
            cwd=cwd,
            input="".join(f"{requirement}\n" for requirement in packages),
            env=env,
        )
    except RetryTimedOut as exc:
        # Past the index's wait, the resolve's own timeout (as below); within it, maybe
        # the index's silence still.
        return Resolved(
            "unknown", exc.said(), stopped="timed_out" if exc.past_index else "unreached"
        )
    except UvTimeout:
        return Resolved("unknown", f"uv pip compile took over {timeout_s:g}s", stopped="timed_out")
    except EnvBuildError as exc:  # (uv is not installed)
        return Resolved("unknown", str(exc))
    except OSError as exc:
        return Resolved("unknown", f"uv could not be run ({exc})")
    if done.returncode == 0:
        pinned = _pinned(done.stdout)
        try:
            return _sdists_built(python, pinned, packages, index, cwd, timeout_s, env, kept)
        except EnvBuildError as exc:  # (uv removed since; a step's own timeout is its own)
            return Resolved("unknown", str(exc))
        except OSError as exc:  # (a fork refused, /tmp full at the build's folder)
            return Resolved("unknown", f"uv could not be run ({exc})")
    output = done.stderr or done.stdout
    lowered = output.lower()
    unreached = _unreached(lowered)
    if fetched := _backend_offline(output):
        return _offline_build(uv_error(output), fetched)
    # No solution, or a distribution it picked whose build backend failed (an sdist that
    # cannot build here: the build at run time builds it the same way, and fails alike).
    if _backend_failed(lowered) and not unreached:
        failed = _path_failed(output, packages, python, index, cwd, timeout_s, env)
        if failed is not None:
            return failed
    if ("no solution found" in lowered or _backend_failed(lowered)) and not unreached:
        return Resolved("unsatisfiable", uv_error(output))
    if unreached and "operation timed out" in lowered:
        # (a silent index, told as such once: uv's lines name only the request that waited)
        said = f"the index did not answer in {waited} s ({uv_error(output)})"
        return Resolved("unknown", said, stopped="unreached")
    return Resolved("unknown", uv_error(output), stopped="unreached" if unreached else "")


def _asked(
    args: Sequence[str],
    *,
    timeout_s: float,
    cwd: Path | None,
    env: dict[str, str],
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`run_uv` of `args`, run once more, after RETRY_PAUSE_S, where the index failed it
    quickly (`_transient`), within what is left of `timeout_s` (UvTimeout past it): one
    refused or reset connection of a flaky index was said as `could not check`. UV_HTTP_RETRIES
    is 0 here (`resolve`), so uv itself retries nothing."""
    began = time.monotonic()
    done = run_uv(args, timeout=timeout_s, cwd=cwd, input=input, env=env)
    left = timeout_s - (time.monotonic() - began) - RETRY_PAUSE_S
    if done.returncode == 0 or not _transient(done.stderr or done.stdout) or left <= 0:
        return done
    time.sleep(RETRY_PAUSE_S)
    try:
        return run_uv(args, timeout=left, cwd=cwd, input=input, env=env)
    except UvTimeout:
        # The second try had only what was left: said as what it is (RetryTimedOut), where
        # the first answer stood, the index's failure, and a build that ran out of time once
        # the index answered was said "the index did not answer".
        waited = float(env.get("UV_HTTP_TIMEOUT", INDEX_TIMEOUT_S))
        first = uv_error(done.stderr or done.stdout)
        raise RetryTimedOut(args, first, left, past_index=left > waited) from None


def _transient(output: str) -> bool:
    """Whether uv's `output` says a request the index failed that may pass when asked again:
    its network words (`_unreached`) but a timeout's (the index waited out already) and
    the offline ones."""
    lowered = output.lower()
    return (
        _unreached(lowered)
        and "timed out" not in lowered
        and not any(words in lowered for words in _OFFLINE)
    )


def _unreached(lowered: str) -> bool:
    """Whether uv's output (`lowered`) says no index answered it: its network words
    (`_UNREACHED`), unless a build backend ran and failed (`_backend_failed`), whose own
    stderr is in that output: a setup.py that printed `urlopen error [Errno 111] Connection
    refused` and failed was built again (no index failed: it ran). Such a build is the
    backend's case: `_backend_offline` reads it first, a download of its own that failed
    (not checked, it may build where that network answers), else the package's failure."""
    return any(words in lowered for words in _UNREACHED) and not _backend_failed(lowered)


def _backend_failed(lowered: str) -> bool:
    """Whether uv's output (`lowered`) says a distribution's build backend ran and failed.
    uv names the distribution (`Failed to build ...`) only where it has a name to give: of a
    bare path entry (`./mypkg` whose setup.py raises) it says `The build backend returned an
    error` alone, which was read as no answer, `could not check`, exit 0."""
    return "build backend returned an error" in lowered


# uv's naming of the distribution whose build failed: `Failed to build `mypkg @ file:///x``.
_FAILED_TO_BUILD = re.compile(r"Failed to build `([^`]+)`")


def _path_failed(
    output: str,
    packages: Sequence[str],
    python: str,
    index: IndexConfig,
    cwd: Path | None,
    timeout_s: float,
    env: dict[str, str],
) -> Resolved | None:
    """The answer of a resolve whose build backend failed (`output`) where what failed is a
    path entry of `packages` (its metadata built from the folder: a setup.py that raises at
    import): `unsatisfiable` with `path_build` that entry, whose todo is its own build's, not
    the index's. None where the build that failed is the index's (uv named a distribution of
    no path here) or cannot be told. uv names a bare path entry's build nowhere, nor a URL
    entry's (`git+file:///src/x`): where it names none, each path entry is asked alone
    (`--no-deps`, its metadata only), one path too, the first whose backend fails being the
    one; none failing alone, the failure is another entry's, and no path is blamed (the one
    `./good` beside a `git+...` whose build raised was said to fail)."""
    from reprospec.environment.packages import local_path

    paths = [e for e in packages if (p := local_path(e)) is not None and not p.endswith(".whl")]
    named = _FAILED_TO_BUILD.search(output)
    if named is not None:
        # (`name @ file:///src/x`: uv's spelling of the entry, its path absolute)
        where = local_path(named[1])
        if where is None:
            return None  # an index's distribution: the sdist's own failure
        base = cwd or Path.cwd()
        paths = [e for e in paths if (base / str(local_path(e))).resolve() == Path(where)]
    if named is None:
        # The path's own failure is quoted, asked alone: the whole list's output may be
        # another entry's (a git+ URL's build that raised beside the path that fails too).
        asked = ((e, _metadata_fails(e, python, index, cwd, timeout_s, env)) for e in paths)
        first = next(((e, alone) for e, alone in asked if alone is not None), None)
        if first is None:
            return None
        paths, output = [first[0]], first[1]
    if len(paths) != 1:
        return None
    said = f"could not build {paths[0]} ({_whence(True)}: {uv_error(output)})"
    return Resolved("unsatisfiable", said, path_build=paths[0])


def _metadata_fails(
    entry: str,
    python: str,
    index: IndexConfig,
    cwd: Path | None,
    timeout_s: float,
    env: dict[str, str],
) -> str | None:
    """uv's output where `entry` alone (`--no-deps`: its own metadata, nothing else
    fetched) fails in its build backend, as `resolve` asks the whole list; None where it
    does not, or uv did not answer."""
    try:
        done = _asked(
            ["pip", "compile", "-", "--quiet", "--no-header", "--no-deps",
             *uv_pip_args(python, index)],
            timeout_s=timeout_s, cwd=cwd, env=env, input=f"{entry}\n",
        )  # fmt: skip
    except (UvTimeout, OSError):
        return None
    said = done.stderr or done.stdout
    return said if done.returncode != 0 and _backend_failed(said.lower()) else None


def _backend_offline(output: str) -> str:
    """Where uv's `output` says a build backend ran and failed with a failed download in
    its own words (a setup_requires fetched, a toolchain downloaded: `_FETCH_FAILED`), the
    backend's own line that says so (`backend_said`, never uv's), the last such as
    `build_failure_line` takes the last of its words; "" where none does. Built once (no
    index failed: `_unreached`), but no failure of the package either (`_offline_build`).
    A line that says the download is tried again (`_RETRYING`) is none: not a failure."""
    if not _backend_failed(output.lower()):
        return ""
    for line in reversed(backend_said(output)):
        lowered = line.lower()
        if any(words in lowered for words in _RETRYING):
            continue
        if any(words in lowered for words in _FETCH_FAILED):
            return line
    return ""


def _offline_build(failed: str, fetched: str) -> Resolved:
    """The answer of a build that failed on a network error of its own, `failed` saying the
    failure: not checked, the backend's line of it (`fetched`, `_backend_offline`) quoted.
    It read `cannot be installed`, exit 1, where it may build once that network answers."""
    said = f"{failed}; its build hit a network failure of its own ({fetched})"
    return Resolved("unknown", said, offline_build=True)


def _pinned(compiled: str) -> list[str]:
    """The `name==version` lines of `uv pip compile`'s answer (its comments, and an entry
    by path or URL, left out: those are not looked up as wheels)."""
    return [
        line.strip()
        for line in compiled.splitlines()
        if line.strip() and not line[0].isspace() and not line.startswith("#") and "==" in line
        and " @ " not in line
    ]  # fmt: skip


def _sdists_built(
    python: str,
    pinned: Sequence[str],
    packages: Sequence[str],
    index: IndexConfig,
    cwd: Path | None,
    timeout_s: float,
    env: dict[str, str],
    kept: Built | None = None,
) -> Resolved:
    """`ok` for a list that resolved to `pinned`, but where a distribution it picked has no wheel
    for `python`: the resolve read only its metadata (an sdist's `egg_info` or
    `prepare_metadata_for_build_wheel`, which may succeed), where the venv build builds its
    wheel, which may not. Each such one is built here as the build builds it (into one
    throwaway venv for all, `--no-deps`; uv keeps the wheel in its cache, which the run's
    build then reuses): `unsatisfiable` with the build's own last line where it fails.
    doctor passed such a list, `the cells' packages resolve`, and every cell of it was an
    infra error. So too each entry of `packages` that is a path of this machine but a
    wheel's (`./mypkg`, an sdist's file): the build builds it, read from `cwd`. One `kept`
    records as built by an earlier doctor is not built again (`Resolved.recorded`); each
    built is recorded there."""
    from reprospec.environment.packages import local_path

    # A step past its timeout is said by that step: not the resolve's (`timed_out`, which
    # doctor counts towards asking no more lists), which answered.
    try:
        sdists = _no_wheel(python, pinned, index, cwd, timeout_s, env)
    except UvTimeout:
        said = f"uv pip compile --only-binary (which have no wheel) took over {timeout_s:g}s"
        return Resolved("unknown", said)
    # Each with whether it is a path entry (built from that path, not from an sdist).
    wheelless = [(entry, False) for entry in sdists]
    wheelless += [
        (entry, True)
        for entry in packages
        if (path := local_path(entry)) is not None and not path.endswith(".whl")
    ]
    recorded = tuple(
        entry for entry, _ in wheelless if kept is not None and kept.has(entry, index, cwd)
    )
    wheelless = [(entry, is_path) for entry, is_path in wheelless if entry not in recorded]
    if not wheelless:
        return Resolved("ok", built=recorded, recorded=recorded)
    # One venv for all: each install is `--no-deps`, and the venv is thrown away.
    with tempfile.TemporaryDirectory(prefix="reprospec-sdist-") as folder:
        venv = Path(folder) / "venv"
        try:
            made = run_uv(["venv", "--quiet", "--python", python, str(venv)], timeout=60, cwd=cwd)
        except UvTimeout:
            return Resolved("unknown", "uv venv (to build in) took over 60s")
        if made.returncode != 0:
            return Resolved("unknown", f"uv venv failed: {uv_error(made.stderr)}")
        unrecorded: list[str] = []
        for requirement, is_path in wheelless:
            began = time.monotonic()
            failed = _built(requirement, is_path, venv, index, cwd, timeout_s, env)
            if failed is not None:
                return failed
            if kept is not None and not kept.add(requirement, index, cwd, time.monotonic() - began):
                unrecorded.append(requirement)
    built = recorded + tuple(entry for entry, _ in wheelless)
    return Resolved("ok", built=built, recorded=recorded, unrecorded=tuple(unrecorded))


def _built(
    requirement: str,
    is_path: bool,
    venv: Path,
    index: IndexConfig,
    cwd: Path | None,
    timeout_s: float,
    env: dict[str, str],
) -> Resolved | None:
    """`requirement` built into `venv` as the venv build builds it (`--no-deps`): None where
    it built, else what `_sdists_built` answers of it."""
    try:
        done = _asked(
            ["pip", "install", "--quiet", "--no-deps", requirement,
             *uv_pip_args(str(venv / "bin" / "python"), index)],
            timeout_s=timeout_s, cwd=cwd, env=env,
        )  # fmt: skip
    except RetryTimedOut as exc:
        # Asked again after the index failed the first try: past the index's wait, the
        # build is what ran out of time (a slow one, as below), else perhaps the index.
        if not exc.past_index:
            return Resolved("unknown", exc.said(), stopped="unreached")
        return Resolved("unknown", f"building {requirement}: {exc.said()}", slow=True)
    except UvTimeout:
        # Slow, not failed: its todo was to run `uv pip compile` to see an error there is
        # none of. The run's build waits for it (UV_TIMEOUT_S).
        source = "that path" if is_path else "its sdist"
        said = (
            f"building {requirement} from {source} was still running after {timeout_s:g} s, "
            f"where doctor stops (a slow build, not a failed one: the run's build waits "
            f"{UV_TIMEOUT_S / 60:g} min for it)"
        )
        return Resolved("unknown", said, slow=True)
    if done.returncode == 0:
        return None
    output = done.stderr or done.stdout
    if _unreached(output.lower()):
        # (the sdist, or what its build requires, not fetched: no word of its build)
        return Resolved("unknown", uv_error(output), stopped="unreached")
    line = build_failure_line(output)
    failed = f"could not build {requirement} ({_whence(is_path)}: {line})"
    if fetched := _backend_offline(output):
        return _offline_build(failed, fetched)
    return Resolved("unsatisfiable", failed, path_build=requirement if is_path else "")


def _whence(is_path: bool) -> str:
    """What a build `_sdists_built` made was of, as its failure says it: a path's (`is_path`),
    or an sdist's of the index (the distribution having no wheel for the interpreter)."""
    if is_path:
        return "its build from that path failed"
    return "no wheel of it for this interpreter; its build from the sdist failed"


def _no_wheel(
    python: str,
    pinned: Sequence[str],
    index: IndexConfig,
    cwd: Path | None,
    timeout_s: float,
    env: dict[str, str],
) -> list[str]:
    """The entries of `pinned` with no wheel for `python`, asked of uv with wheels only
    (`--only-binary :all:`, each entry alone, `--no-deps`): uv names one a try, which is
    left out of the next. Where uv's answer names none it can read, those found so far
    (nothing is said of what cannot be told)."""
    from packaging.utils import canonicalize_name

    left = list(pinned)
    found: list[str] = []
    while left:
        done = _asked(
            ["pip", "compile", "-", "--quiet", "--no-header", "--no-deps",
             "--only-binary", ":all:", *uv_pip_args(python, index)],
            timeout_s=timeout_s, cwd=cwd, env=env,
            input="".join(f"{requirement}\n" for requirement in left),
        )  # fmt: skip
        match = _NO_WHEEL.search(done.stderr) if done.returncode != 0 else None
        if match is None:
            return found
        name = canonicalize_name(match[1])
        named = [r for r in left if canonicalize_name(r.split("==", 1)[0]) == name]
        if not named:
            return found
        found += named
        left = [r for r in left if r not in named]
    return found


def index_wait_s() -> int:
    """How long each request of `resolve` waits for the index: INDEX_TIMEOUT_S, or the user's
    UV_HTTP_TIMEOUT where it is shorter (a whole number of seconds, as uv reads it)."""
    given = os.environ.get("UV_HTTP_TIMEOUT", "")
    if given.isdigit() and 0 < int(given) < INDEX_TIMEOUT_S:
        return int(given)
    return INDEX_TIMEOUT_S
