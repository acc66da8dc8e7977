"""What a bisect says and pins per candidate: a release it could not install, the package
as the spec wrote it, one the spec does not name."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

import reprospec
from reprospec import venvs
from reprospec.bisect.driver import (
    _added_package,
    _changed,
    _describe,
    _end_of_day,
    _exclude_newer,
    bisect_spec,
    candidate_packages,
)
from reprospec.bisect.search import BisectResult, Trial
from reprospec.bisect.state import BisectRequest
from reprospec.core.jsontypes import JsonObject
from reprospec.core.sections import Environment
from reprospec.errors import FatalError, InfraError, UsageError
from tests.unit.venvs.test_build import BUILD_FAILED

REASON = (
    "environment for default not built: cannot install nu9akit==1.3: The build backend "
    "returned an error (the build said: nu9akit 1.3: this sdist is broken on purpose) hint: "
    "Build failures usually indicate a problem with the package or the build environment"
)


def test_a_release_that_cannot_be_installed_is_one_line_naming_its_build_log(
    tmp_path: Path,
) -> None:
    """The stored reason repeated uv's causes and hint after uv's whole output was streamed;
    the line now says the package's own last word and where the whole output is kept."""
    log = tmp_path / "build.log"
    log.write_text(BUILD_FAILED)
    said = _describe(Trial("1.3", infra_error=REASON, build_log=str(log)))
    assert said == (
        "1.3: skipped: cannot be installed: nu9akit 1.3: this sdist is broken on purpose "
        f"(build log: {log})"
    )


def test_a_build_log_gone_since_falls_back_to_the_stored_reason(tmp_path: Path) -> None:
    log = tmp_path / "gone.log"
    said = _describe(Trial("1.3", infra_error="no wheel", build_log=str(log)))
    assert said == f"1.3: skipped: cannot be installed: no wheel (build log: {log})"


def test_another_infra_error_is_said_as_it_is() -> None:
    """No build log: nothing was installed (no interpreter, no command), so not 'cannot be
    installed'."""
    said = _describe(Trial("1.3", infra_error="no Python 3.99 on this machine"))
    assert said == "1.3: skipped (no Python 3.99 on this machine)"


def test_a_trial_keeps_its_build_log_through_the_saved_state() -> None:
    trial = Trial("1.3", infra_error="x", runs=("r",), build_log="out/runs/r/cells/c/1/build.log")
    assert Trial.from_dict(trial.to_dict()) == trial
    # A state saved before the field was kept still reads.
    old = {k: v for k, v in trial.to_dict().items() if k != "build_log"}
    assert Trial.from_dict(old).build_log is None


def test_a_candidate_keeps_the_specs_extras_and_marker() -> None:
    """`requests[socks]==2.31.0` became `requests==2.28.0`: PySocks was never installed, and
    the bad end failed with ModuleNotFoundError instead of the bug (refused)."""
    spec = ("Requests[socks,security]==2.31.0 ; python_version >= '3.8'", "six")
    assert candidate_packages(spec, "requests", "2.28.0", False) == (
        'requests[security,socks]==2.28.0; python_version >= "3.8"',
        "six",
    )
    assert candidate_packages(spec, "requests", "2024-03-01", True) == (
        'requests[security,socks]; python_version >= "3.8"',
        "six",
    )
    # A package the spec does not name is added, once; one it names plainly is replaced.
    assert candidate_packages(("six==1.16.0",), "idna", "3.4", False) == (
        "six==1.16.0",
        "idna==3.4",
    )
    assert candidate_packages(("six==1.16.0", "six"), "six", "1.15.0", False) == ("six==1.15.0",)


def test_a_package_the_cell_does_not_name_is_said_to_be_added(tmp_path: Path) -> None:
    """`--package six` for a spec of `packaging==23.0` built an environment per six release
    and ended `the good end reproduces too`, never saying six was none of the spec's."""
    request = BisectRequest(spec=tmp_path / "s.yaml", package="six", good="1.15.0", bad="1.16.0")
    assert _added_package(request, ("packaging==23.0",)) == (
        "six is not among the cell's packages (packaging==23.0): each candidate adds "
        "six==VERSION to them"
    )
    assert _added_package(request, ()) == (
        "six is not among the cell's packages (none): each candidate adds six==VERSION to them"
    )
    # Named in any spelling, it is the cell's.
    assert _added_package(request, ("Six>=1.10",)) is None


def test_an_out_that_is_a_file_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    """`bisect --out FILE` asked the index for every release, then stopped on the first
    environment's lock, "Not a directory: FILE/envs/.locks"; `run` refuses it, naming --out."""
    out = tmp_path / "afile"
    out.write_text("")
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: python -c pass\n")
    with pytest.raises(UsageError, match=r"^--out .*afile: not a folder \(a file is there\)"):
        bisect_spec(BisectRequest(spec, "pkg", "1.0", "2.0", out=out))


def test_a_bisect_holds_its_store_open_as_the_other_searches_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its candidates' runs are the search's probes (purpose "bisect", written unsynced), but
    # each one's close was the store's last and checkpointed it, where isolate, minimize and
    # amplify checkpoint once, as the search ends (store/db.py's held_open).
    from reprospec.store.db import Store
    from reprospec.store.runfolder import RunFolder

    wal = tmp_path / "store" / "results.db-wal"
    held: list[bool] = []

    real = RunFolder.check_out

    def check_out(out: Path, option: str = "") -> None:
        del out, option
        monkeypatch.setattr(RunFolder, "check_out", real)  # the Store's own check
        with Store(tmp_path / "store") as store:  # as a probe run opens and closes it
            store.begin_run("r", "s", "/s.yaml", "name: s", "local", [], {})
        held.append(wal.is_file() and wal.stat().st_size > 0)  # not checkpointed
        raise UsageError("stopped here")

    monkeypatch.setattr(RunFolder, "check_out", check_out)
    with pytest.raises(UsageError, match="stopped here"):
        bisect_spec(BisectRequest(tmp_path / "s.yaml", "pkg", "1.0", "2.0", out=tmp_path))
    assert held == [True]
    assert not wal.exists()  # checkpointed once, as it ends


def test_a_dockerfile_cell_is_refused_on_the_docker_runner_before_anything_is_built(
    tmp_path: Path,
) -> None:
    # An image built from environment.dockerfile gets no `packages` installed, only checked:
    # the bisect built it, ran the bad end, skipped every other version as "packaging 22.0 is
    # installed (the cell needs packaging==21.1) ... leave them out of the spec", and ended
    # "refused: the good end 21.0 cannot be tested", exit 1.
    (tmp_path / "Dockerfile").write_text("FROM reprospec-runner:latest\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nenvironment:\n  dockerfile: Dockerfile\n"
        '  packages: ["packaging==22.0"]\ncommand: python -c pass\n'
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    request = BisectRequest(spec, "packaging", "21.0", "22.0", runner="docker", out=tmp_path)
    with pytest.raises(UsageError) as refused:
        bisect_spec(request)
    assert str(refused.value) == (
        "bisect --runner docker cannot vary packaging: the cell's image is built from "
        "environment.dockerfile (Dockerfile), which gets no `packages` installed (they are "
        "only checked against it); bisect with --runner venv, or give the cell an "
        "environment.image instead of the Dockerfile"
    )
    assert not (tmp_path / "bisect").exists()


def test_a_python_that_is_not_there_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    # As `run --python` refuses it (python3_version, exit 3): unchecked, every version's
    # environment failed on it, after the index was asked for every release, and the bisect
    # was "refused: the bad end cannot be tested".
    missing = tmp_path / "nope" / "python"
    request = BisectRequest(
        spec=tmp_path / "s.yaml",
        package="six",
        good="1.15.0",
        bad="1.16.0",
        python=str(missing),
        out=tmp_path / "out",
    )
    with pytest.raises(InfraError, match=f"interpreter not found: {missing} \\(--python\\)"):
        bisect_spec(request)
    # Named as the caller gave it: the API's argument.
    with pytest.raises(InfraError, match=f"interpreter not found: {missing} \\(python\\)"):
        reprospec.bisect_spec(request)


def test_a_python_name_is_found_as_the_venv_runner_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `bisect --runner venv --python python3.10` was refused by PATH's pyenv shim (exit
    # 127), where the venv runner builds on ~/.pyenv/versions/3.10.13 past it.
    asked: list[str | None] = []
    python = venvs.Interpreter("/p/versions/3.10.13/bin/python3.10", "3.10.13")

    def find(request: str | None = None) -> venvs.Interpreter:
        asked.append(request)
        if request == "python3.9":
            raise venvs.EnvBuildError("no Python 3.9 that runs on this machine; passed over x")
        return python

    def shim(_: str | None) -> str:
        raise AssertionError("PATH's program checked, not the venv runner's interpreter")

    monkeypatch.setattr(venvs, "find_interpreter", find)
    monkeypatch.setattr("reprospec.runners.local.checked_python", shim)
    request = BisectRequest(
        spec=tmp_path / "s.yaml",
        package="six",
        good="1.15.0",
        bad="1.16.0",
        python="python3.10",
        out=tmp_path / "out",
    )
    with pytest.raises(FatalError, match=r"s\.yaml"):  # past --python: the spec is read
        bisect_spec(request)
    assert asked == ["python3.10"]
    gone = dataclasses.replace(request, python="python3.9")
    refused = r"^no Python 3\.9 that runs .*; passed over x \(--python\)$"
    with pytest.raises(InfraError, match=refused):
        bisect_spec(gone)


def test_a_file_named_as_a_version_in_the_cwd_is_checked_as_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--python 3.12` where the cwd holds a file `3.12`: not a name (find_interpreter takes
    # it as a path), and being a plain version it was left unchecked.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "3.12").write_text("")
    request = BisectRequest(
        spec=tmp_path / "s.yaml",
        package="six",
        good="1.15.0",
        bad="1.16.0",
        python="3.12",
        out=tmp_path / "out",
    )
    with pytest.raises(InfraError, match=r"^interpreter not executable: 3\.12 \(--python\)$"):
        bisect_spec(request)


def test_by_date_changed_reads_the_environments_the_venv_runner_keyed_with_a_path_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # _changed built its EnvRequest by hand, without a path entry's `sources`: its keys
    # named no environment the runner built, and `changed` was silently empty.
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "m.py").write_text("VALUE = 3\n")
    environment = Environment(workdir=tmp_path, packages=("./mypkg", "six"))
    monkeypatch.setenv("UV_INDEX_URL", "https://example.invalid/simple")  # no pip config run
    python = venvs.Interpreter("/usr/bin/python3", "3.11.7")  # none asked: no child process
    monkeypatch.setattr("reprospec.venvs.build.find_interpreter", lambda _=None: python)
    monkeypatch.setattr(venvs, "find_interpreter", lambda _=None: python)
    metas: dict[str, JsonObject] = {}
    for day, six in (("2024-01-01", "1.15.0"), ("2024-01-02", "1.16.0")):
        with _exclude_newer(_end_of_day(day)):  # as the venv runner keys each candidate
            built = venvs.env_request(environment, index=venvs.user_index_config(), cwd=tmp_path)
        assert built.sources
        metas[built.key()] = {"installed": {"six": six, "mypkg": "0.1"}}
    monkeypatch.setattr(venvs, "read_meta", lambda folder: metas.get(folder.name))
    request = BisectRequest(
        spec=tmp_path / "s.yaml", by_date=True, good="2024-01-01", bad="2024-01-03",
        out=tmp_path / "out",
    )  # fmt: skip
    result = BisectResult(
        "found", first_bad="2024-01-02", last_good="2024-01-01", confidence=1.0,
        attempts=2, reason="", versions=(),
    )  # fmt: skip
    assert _changed(request, environment, tmp_path, result) == (
        (("six", "1.15.0", "1.16.0"),),
        "",
    )
    # ./mypkg edited after the search ran its days: no key names an environment, and
    # `changed` was silently empty; it is said unknown.
    (tmp_path / "mypkg" / "m.py").write_text("VALUE = 33\n")
    changed, unknown = _changed(request, environment, tmp_path, result)
    assert changed == ()
    assert unknown.startswith("what changed from 2024-01-01 to 2024-01-02 is unknown: the ")
    assert "a path entry's files changed since the search ran it" in unknown

    # Read from the environment each day's last run ran in (its capture's prefix), nothing
    # is walked again: the edit changes nothing.
    prefixes = {"r1": next(iter(metas)), "r2": list(metas)[1]}

    def load_run(run_id: str, out: Path) -> SimpleNamespace:
        assert out == request.out
        return SimpleNamespace(environment={"python": {"prefix": f"/envs/{prefixes[run_id]}"}})

    monkeypatch.setattr("reprospec.store.resultsjson.load_run", load_run)
    trials = {
        "2024-01-01": Trial("2024-01-01", attempts=1, runs=("r1",)),
        "2024-01-02": Trial("2024-01-02", attempts=1, matched=1, runs=("r2",)),
    }
    assert _changed(request, environment, tmp_path, result, trials) == (
        (("six", "1.15.0", "1.16.0"),),
        "",
    )

    # Its walk raising (after the answer was saved) was a traceback: unknown, said why.
    def raising(*_args: object, **_kwargs: object) -> venvs.EnvRequest:
        raise InfraError("'./mypkg': cannot read mypkg: Permission denied")

    monkeypatch.setattr(venvs, "env_request", raising)
    assert _changed(request, environment, tmp_path, result) == (
        (),
        "what changed from 2024-01-01 to 2024-01-02 is unknown: "
        "'./mypkg': cannot read mypkg: Permission denied",
    )
