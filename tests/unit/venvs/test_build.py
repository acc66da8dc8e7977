"""uv's error read back: what a skipped version's line says of why it could not be built."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reprospec.core.trylock import try_locked
from reprospec.errors import InfraError
from reprospec.venvs.build import (
    EnvBuildError,
    EnvRequest,
    Interpreter,
    UvTimeout,
    build_failure_line,
    find_interpreter,
    local_sources,
    locked,
    not_found,
    request_for,
    uv_error,
)
from reprospec.venvs.index import IndexConfig

# uv 0.x `pip install nu9akit==1.3` of an sdist whose setup.py exits with a message
# (recorded on this machine, NO_COLOR=1).
BUILD_FAILED = """\
Using Python 3.11.7 environment at: uvt
error: Failed to build `nu9akit==1.3`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.get_requires_for_build_wheel` \
failed (exit status: 1)

         [stderr]
         nu9akit 1.3: this sdist is broken on purpose

hint: Build failures usually indicate a problem with the package or the build environment
"""

UNSATISFIABLE = """\
Using Python 3.11.7 environment at: uvt
error: Failed to download and build `nu9akit==1.3`
  cause: Failed to resolve requirements from `setup.py` build
  cause: No solution found when resolving: `setuptools>=40.8.0`
"""


def test_a_failed_build_says_what_the_package_said() -> None:
    """The causes say only that the backend failed; the `[stderr]` block, the package's own
    words, was dropped, and appeared nowhere."""
    said = uv_error(BUILD_FAILED)
    assert said.startswith("The build backend returned an error Call to `setuptools")
    assert "(the build said: nu9akit 1.3: this sdist is broken on purpose)" in said
    assert said.endswith(
        "hint: Build failures usually indicate a problem with the package or the build environment"
    )


def test_the_builds_own_error_line_is_the_builds() -> None:
    """A build's last word is often its own `error:` line (setuptools' `error: command 'gcc'
    failed`), which uv indents in the `[stderr]` block: it was read as uv's own, ending the
    block, and the line said uv's `Call to backend.build_wheel failed` instead."""
    output = BUILD_FAILED.replace(
        "         nu9akit 1.3: this sdist is broken on purpose\n",
        "         running build_ext\n"
        "         error: command 'gcc' failed: No such file or directory\n",
    )
    assert build_failure_line(output) == "error: command 'gcc' failed: No such file or directory"
    said = uv_error(output)
    assert "(the build said: running build_ext / error: command 'gcc' failed: " in said, said


def test_causes_alone_where_no_build_printed() -> None:
    assert uv_error(UNSATISFIABLE) == (
        "Failed to resolve requirements from `setup.py` build "
        "No solution found when resolving: `setuptools>=40.8.0`"
    )


def test_one_line_of_a_failed_build_is_the_packages_own_last_word() -> None:
    """What bisect's skipped line says (the rest stays in the build log): the end of the
    `[stderr]` block, not uv's boilerplate causes and hint."""
    assert build_failure_line(BUILD_FAILED) == "nu9akit 1.3: this sdist is broken on purpose"


def test_one_line_without_a_build_is_uvs_last_cause_else_its_error_else_the_last_line() -> None:
    assert build_failure_line(UNSATISFIABLE) == (
        "No solution found when resolving: `setuptools>=40.8.0`"
    )
    assert build_failure_line("error: No solution found\n") == "No solution found"
    assert build_failure_line("something odd\n") == "something odd"
    assert build_failure_line("") == ""


def test_the_one_line_is_a_line_the_stored_reason_says() -> None:
    """One reading of uv's output (`_UvReport`) gives both: the console's one line is among
    what the stored reason says, whichever of a build's words, causes or error uv printed."""
    for output in (
        BUILD_FAILED,
        UNSATISFIABLE,
        "error: No solution found\n",
        "something odd\n",
        UNSATISFIABLE + "\n".join(f"  cause: reason {n}" for n in range(6)),
    ):
        assert build_failure_line(output) in uv_error(output), output


# `uv python find 3.10` where pyenv's shims come first in PATH and 3.10 is not active.
PYENV_SHIM = (
    (
        "error: Failed to inspect Python interpreter from first executable in the search path at "
        "`/root/.pyenv/shims/python3.10`\n"
    )
    + """\
  cause: Querying Python at `/root/.pyenv/shims/python3.10` failed with exit status exit status: 127

         [stderr]
         pyenv: python3.10: command not found

         The `python3.10' command exists in these Python versions:
           3.10.13

         Note: See 'pyenv help global' for tips on allowing multiple
               Python versions to be found at the same time.
"""
)


def test_an_interpreter_uv_could_not_run_is_not_no_python_on_this_machine() -> None:
    """It said `no Python 3.10 on this machine (... (the build said: Note: See 'pyenv help
    global' ...))` with a 3.10 under ~/.pyenv/versions: uv had stopped at a shim."""
    said = not_found("3.10", PYENV_SHIM, ())
    assert said == (
        "uv python find 3.10 stopped at /root/.pyenv/shims/python3.10, which does not run "
        "(pyenv: python3.10: command not found); none in PATH, pyenv's versions or uv's "
        "managed Pythons; give the path of a Python 3.10 (--python PATH, or "
        "environment.python: PATH)"
    )
    assert "build said" not in said
    # `pypy3.10` is no plain version: only uv looked, so nothing else is said to have.
    assert "none in PATH" not in not_found("pypy3.10", PYENV_SHIM)


def test_no_interpreter_at_all_is_said_so() -> None:
    said = not_found(
        "3.99", "error: No interpreter found for Python 3.99 in managed installations\n", ()
    )
    assert said == (
        "no Python 3.99 on this machine (uv python find: No interpreter found for Python 3.99 "
        "in managed installations; none in PATH, pyenv's versions or uv's managed Pythons)"
    )


def test_a_base_interpreter_that_cannot_start_is_worded_as_every_verb_words_it(
    tmp_path: Path,
) -> None:
    """`run --runner venv --python /nope/python` said `interpreter /nope/python does not
    run: [Errno 2] No such file or directory: '/nope/python'` where the local runner says
    `interpreter not found: /nope/python` (environment/interpreter.py `unusable`)."""
    from reprospec.venvs.build import find_interpreter

    missing = tmp_path / "nope" / "python"
    with pytest.raises(EnvBuildError) as said:
        find_interpreter(str(missing))
    assert str(said.value) == f"interpreter not found: {missing}"
    plain = tmp_path / "python"
    plain.write_text("")
    for there in (plain, tmp_path):
        with pytest.raises(EnvBuildError) as said:
            find_interpreter(str(there))
        assert str(said.value) == f"interpreter not executable: {there}"


def test_a_build_that_raised_leaves_its_lock_file_to_a_uv_that_outlived_it(
    tmp_path: Path,
) -> None:
    """A build that raised (a uv timed out, Ctrl-C) may leave a uv or build backend alive
    that shares the build lock through the descriptor it inherited (here a dup, the same
    open file): its file unlinked, the next `try_locked` made a new one and read it free
    while that uv still wrote. The file stays, held; a build that ended well removes it."""
    lock = tmp_path / "locks" / "k.build"
    inherited: list[int] = []

    def build() -> None:
        with locked(lock) as fd:
            inherited.append(os.dup(fd))
            raise EnvBuildError("uv venv timed out")

    with pytest.raises(EnvBuildError):
        build()
    try:
        assert lock.exists()
        with try_locked(lock) as free:
            assert free is False
    finally:
        os.close(inherited[0])

    with locked(lock):
        pass
    assert not lock.exists()


def _request(packages: tuple[str, ...], cwd: Path) -> EnvRequest:
    # Keyed as the run and doctor key it (`request_for`), not a copy of its recipe.
    return request_for(Interpreter("/usr/bin/python3", "3.11.7"), packages, IndexConfig(), cwd=cwd)


def test_a_folder_package_keys_its_environment_by_where_it_is_and_what_it_holds(
    tmp_path: Path,
) -> None:
    # `./mypkg` was keyed by its text alone: the folder edited since, or another spec's
    # `./mypkg`, reused the environment built of the first one, which ran its program.
    one, other = tmp_path / "one", tmp_path / "other"
    for folder in (one, other):
        (folder / "mypkg" / "src").mkdir(parents=True)
        (folder / "mypkg" / "src" / "m.py").write_text("VALUE = 3\n")
    first = _request(("./mypkg",), one).key()
    assert _request(("./mypkg",), one).key() == first
    assert _request(("./mypkg",), other).key() != first
    # What a build writes into the folder (setuptools' egg-info, build/) is not the program.
    (one / "mypkg" / "src" / "mypkg.egg-info").mkdir()
    (one / "mypkg" / "src" / "mypkg.egg-info" / "PKG-INFO").write_text("x")
    (one / "mypkg" / "build").mkdir()
    (one / "mypkg" / "build" / "lib.py").write_text("x")
    assert _request(("./mypkg",), one).key() == first
    # Nor what a run of a spec whose package is its own folder writes there (`.`).
    (one / "mypkg" / ".reprospec" / "runs" / "r1").mkdir(parents=True)
    (one / "mypkg" / ".reprospec" / "runs" / "r1" / "results.json").write_text("{}")
    (one / "mypkg" / "dist").mkdir()
    (one / "mypkg" / "dist" / "x.tar.gz").write_text("x")
    for cache in ("node_modules", ".pytest_cache", ".mypy_cache", ".ruff_cache"):
        (one / "mypkg" / cache).mkdir()
        (one / "mypkg" / cache / "f").write_text("x")
    assert _request(("./mypkg",), one).key() == first
    assert _request((".",), one / "mypkg").key() == _request((".",), one / "mypkg").key()
    (one / "mypkg" / "src" / "m.py").write_text("VALUE = 4\n")
    assert _request(("./mypkg",), one).key() != first
    # A requirement is keyed as before: no sources, the same key.
    plain = _request(("six==1.16.0",), one)
    assert plain.sources == ()
    assert plain.key() == EnvRequest(plain.python, plain.packages).key()


def test_a_folder_packages_own_build_and_dist_packages_are_keyed(tmp_path: Path) -> None:
    # `build` and `dist` were pruned at every depth: an edit to mypkg/dist/__init__.py (or
    # pip's _internal/operations/build/) reused the old environment, which ran old code.
    for inner in ("dist", "build", ".reprospec"):
        (tmp_path / "mypkg" / "mypkg" / inner).mkdir(parents=True)
        (tmp_path / "mypkg" / "mypkg" / inner / "__init__.py").write_text("A = 1\n")
    first = _request(("./mypkg",), tmp_path).key()
    for inner in ("dist", "build", ".reprospec"):
        (tmp_path / "mypkg" / "mypkg" / inner / "__init__.py").write_text("A = 22\n")
        assert _request(("./mypkg",), tmp_path).key() != first
        first = _request(("./mypkg",), tmp_path).key()


def test_a_folder_package_keys_the_folders_it_links_and_never_enters_a_checkouts_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rglob (3.11) did not follow `src -> ../shared/src`: an edit there kept the stale
    # environment; it walked .git and .venv whole before filtering (seconds on a big tree).
    shared = tmp_path / "shared" / "src"
    shared.mkdir(parents=True)
    (shared / "m.py").write_text("VALUE = 3\n")
    pkg = tmp_path / "spec" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "src").symlink_to(shared, target_is_directory=True)
    (pkg / "src" / "loop").symlink_to(pkg, target_is_directory=True)  # no endless walk
    first = _request(("./mypkg",), tmp_path / "spec").key()
    (shared / "m.py").write_text("VALUE = 40\n")
    assert _request(("./mypkg",), tmp_path / "spec").key() != first

    entered: list[str] = []
    walk = os.walk

    def spying(
        top: Path, onerror: Callable[[OSError], None]
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        for item in walk(top, onerror=onerror):
            entered.append(item[0])
            yield item

    (pkg / ".git" / "objects").mkdir(parents=True)
    (pkg / ".venv" / "lib").mkdir(parents=True)
    monkeypatch.setattr("reprospec.venvs.build.os.walk", spying)
    _request(("./mypkg",), tmp_path / "spec")
    assert entered
    assert not [e for e in entered if ".git" in e or ".venv" in e]


def test_a_folder_package_past_the_cap_is_keyed_in_part_with_a_warning_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the cap the entry was refused: `data -> /datasets` in the package's folder, or
    # `.` of a monorepo, made every cell infra-error. Its own files are keyed before links.
    monkeypatch.setattr("reprospec.venvs.build.SOURCE_FILES_CAP", 3)
    data = tmp_path / "datasets"
    data.mkdir()
    for n in range(5):
        (data / f"d{n}").write_text("")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "m.py").write_text("A = 1\n")
    (tmp_path / "mypkg" / "data").symlink_to(data, target_is_directory=True)
    said: list[str] = []
    first = local_sources(("./mypkg",), tmp_path, said.append)
    assert len(said) == 1
    assert "'./mypkg': more than 3 files under" in said[0]
    assert local_sources(("./mypkg",), tmp_path, said.append) == first
    (tmp_path / "mypkg" / "m.py").write_text("A = 22\n")
    assert local_sources(("./mypkg",), tmp_path, said.append) != first


def test_a_folder_package_keys_around_a_subfolder_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A subfolder the walk could not read (a container's root-owned 0700 output) refused the
    # entry, though the build never reads it; the folder itself unreadable still is refused.
    (tmp_path / "mypkg" / "out").mkdir(parents=True)
    (tmp_path / "mypkg" / "m.py").write_text("")
    walk = os.walk

    def failing(
        top: Path, onerror: Callable[[OSError], None]
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        for item in walk(top, onerror=onerror):
            if item[0].endswith("out"):
                onerror(PermissionError(13, "Permission denied", item[0]))
                continue
            yield item

    monkeypatch.setattr("reprospec.venvs.build.os.walk", failing)
    said: list[str] = []
    assert local_sources(("./mypkg",), tmp_path, said.append)
    assert len(said) == 1
    assert "cannot read" in said[0]
    assert "out (Permission denied)" in said[0]

    def refusing(
        top: Path, onerror: Callable[[OSError], None]
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        onerror(PermissionError(13, "Permission denied", str(top)))
        yield from ()

    monkeypatch.setattr("reprospec.venvs.build.os.walk", refusing)
    with pytest.raises(InfraError, match=r"'./mypkg': cannot read .*mypkg: Permission denied"):
        local_sources(("./mypkg",), tmp_path, said.append)


def test_a_folder_package_removed_during_the_walk_is_an_infra_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mypkg").mkdir()

    def gone(
        top: Path, onerror: Callable[[OSError], None]
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        del onerror
        Path(top).rmdir()  # removed between the listing and its stat
        yield str(top), [], []

    monkeypatch.setattr("reprospec.venvs.build.os.walk", gone)
    with pytest.raises(InfraError, match=r"'./mypkg': cannot read .*mypkg: No such file"):
        local_sources(("./mypkg",), tmp_path, print)


def test_a_folder_package_of_a_user_this_machine_lacks_is_an_infra_error() -> None:
    # Validation accepts `~nobody/pkg`; expanduser raised RuntimeError, which the venv
    # runner (it catches InfraError: the cell's infra-error) let out as a traceback.
    with pytest.raises(InfraError, match=r"'~nobodyxyz9/pkg': Could not determine home"):
        local_sources(("~nobodyxyz9/pkg",), Path("/"))


@pytest.mark.parametrize("entry", ["mypkg @ ./mypkg", "./mypkg[dev]", "mypkg[dev] @ ./mypkg"])
def test_a_named_or_extras_folder_package_is_keyed_by_its_files(entry: str, tmp_path: Path) -> None:
    # `pkg @ ./pkg` was "not a path" and `./pkg[dev]` the folder './pkg[dev]', which is not
    # there: neither was keyed, and an edit reused the env built of the old files.
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "m.py").write_text("VALUE = 3\n")
    first = _request((entry,), tmp_path)
    assert first.sources
    assert first.sources[0][1].startswith(f"{tmp_path / 'mypkg'} ")
    (tmp_path / "mypkg" / "m.py").write_text("VALUE = 40\n")
    assert _request((entry,), tmp_path).key() != first.key()


def test_a_link_to_an_environment_to_build_again_is_removed_not_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link in the environments folder to one elsewhere whose description is not JSON:
    the run said `building it again`, then rmtree refused the link, an OSError that is no
    InfraError. The link alone goes (uv is stubbed here, failing at once)."""
    import subprocess

    from reprospec.venvs import build

    def failing(*_: object, **__: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], 1, "", "error: stubbed")

    monkeypatch.setattr(build, "run_uv", failing)
    request = _request((), tmp_path)
    target = tmp_path / "elsewhere"
    (target / "bin").mkdir(parents=True)
    (target / "bin" / "python").write_text("")
    (target / build.META).write_text("{bad")
    root = tmp_path / "envs"
    root.mkdir()
    (root / request.key()).symlink_to(target)
    said: list[str] = []
    with pytest.raises(EnvBuildError, match="uv venv failed"):
        build.ensure_env(request, root, progress=lambda p: said.append(p.message))
    assert not (root / request.key()).is_symlink()
    assert (target / build.META).read_text() == "{bad"
    assert any("removing the link alone" in line for line in said), said


def test_a_relative_link_to_build_again_is_said_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link made `ln -s ../elsewhere KEY` was said `is a link to ../elsewhere`, a path
    relative to the environments folder, not to where the user reads it."""
    import subprocess

    from reprospec.venvs import build

    def failing(*_: object, **__: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], 1, "", "error: stubbed")

    monkeypatch.setattr(build, "run_uv", failing)
    request = _request((), tmp_path)
    target = tmp_path / "elsewhere"
    (target / "bin").mkdir(parents=True)
    (target / build.META).write_text("{bad")
    root = tmp_path / "envs"
    root.mkdir()
    (root / request.key()).symlink_to(Path("..") / "elsewhere")
    said: list[str] = []
    with pytest.raises(EnvBuildError):
        build.ensure_env(request, root, progress=lambda p: said.append(p.message))
    assert any(f"is a link to {target}: removing" in line for line in said), said


def test_a_link_to_build_again_under_a_linked_folder_is_said_as_the_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`proj -> data/proj`: `ENVS/KEY is a link to /data/proj/elsewhere` named a path the
    user never typed (`realpath` resolved the folders above the link too)."""
    import subprocess

    from reprospec.venvs import build

    def failing(*_: object, **__: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], 1, "", "error: stubbed")

    monkeypatch.setattr(build, "run_uv", failing)
    request = _request((), tmp_path)
    (tmp_path / "data" / "proj" / "elsewhere" / "bin").mkdir(parents=True)
    (tmp_path / "data" / "proj" / "elsewhere" / build.META).write_text("{bad")
    (tmp_path / "proj").symlink_to(tmp_path / "data" / "proj")
    root = tmp_path / "proj" / "envs"
    root.mkdir()
    (root / request.key()).symlink_to(Path("..") / "elsewhere")
    said: list[str] = []
    with pytest.raises(EnvBuildError):
        build.ensure_env(request, root, progress=lambda p: said.append(p.message))
    named = tmp_path / "proj" / "elsewhere"
    assert any(f"is a link to {named}: removing" in line for line in said), said


def test_a_run_looks_again_for_an_interpreter_not_found_and_doctor_keeps_the_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reprospec.venvs import build

    here: list[Interpreter] = []
    searches: list[str | None] = []

    def search(request: str | None) -> Interpreter:
        searches.append(request)
        if request == "timeout":
            raise UvTimeout("uv python find ran past 120 s")
        if not here:
            raise EnvBuildError(f"interpreter not found: {request}")
        return here[0]

    monkeypatch.setattr(build, "_find_interpreter", search)
    build.forget_interpreters()
    try:
        with pytest.raises(EnvBuildError):
            find_interpreter("/tmp/nopython")
        here.append(Interpreter("/tmp/nopython", "3.12.1"))  # made since
        assert find_interpreter("/tmp/nopython").version == "3.12.1"
        here.clear()
        with build.remembered_failures():
            for _ in range(2):  # doctor's checks: one search
                with pytest.raises(EnvBuildError):
                    find_interpreter("3.99")
            assert searches.count("3.99") == 1
            for _ in range(2):  # a timeout is kept where a failure is: doctor waits once
                with pytest.raises(UvTimeout):
                    find_interpreter("timeout")
            assert searches.count("timeout") == 1
            # A run's inside a search's keeps them: each probe's runner dropped them, one
            # search a probe (review).
            with build.remembered_failures(), pytest.raises(EnvBuildError):
                find_interpreter("3.99")
            assert searches.count("3.99") == 1
            with pytest.raises(EnvBuildError):  # still kept in the outer scope
                find_interpreter("3.99")
            assert searches.count("3.99") == 1
            # A timeout is kept only in the scope it came in: one probe's run (a scope in
            # a search's) waits once, the next probe's run looks again (review).
            for run in range(2):
                with build.remembered_failures():
                    for _ in range(2):
                        with pytest.raises(UvTimeout):
                            find_interpreter("timeout")
                    assert searches.count("timeout") == 2 + run
        for _ in range(2):  # outside a scope: neither read nor kept
            with pytest.raises(UvTimeout):
                find_interpreter("timeout")
        assert searches.count("timeout") == 5
        # A failure kept in a scope closed is not read by a call after it (bisect's
        # `_changed`, with no runner), nor by the next scope (review).
        with pytest.raises(EnvBuildError):
            find_interpreter("3.99")
        assert searches.count("3.99") == 2
        with build.remembered_failures(), pytest.raises(EnvBuildError):
            find_interpreter("3.99")
        assert searches.count("3.99") == 3
        # Two runs' scopes (a VenvRunner's, from its start to its close, on two threads)
        # closed out of order: the first's close popped the second's scope, and the
        # second's timeout, kept in its own scope, was looked for again (review).
        first, second = build.remembered_failures(), build.remembered_failures()
        first.__enter__()
        second.__enter__()
        with pytest.raises(UvTimeout):
            find_interpreter("timeout")
        first.__exit__(None, None, None)
        with pytest.raises(UvTimeout):
            find_interpreter("timeout")
        assert searches.count("timeout") == 6
        second.__exit__(None, None, None)
        assert not build._scopes
    finally:
        build.forget_interpreters()
