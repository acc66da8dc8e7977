"""The venv runner's build lines: on stderr for the CLI, to `RunOptions.say` for the API."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec import investigate
from reprospec.runners import create_runner
from reprospec.runners.venv import VenvRunner
from reprospec.venvs import EnvProgress

STEPS = (
    EnvProgress("3f2a", "install", "installing 2 packages"),
    EnvProgress("3f2a", "output", "Resolved 2 packages"),
    EnvProgress("3f2a", "output", "Using Python 3.11 at /tmp/build"),
    EnvProgress("3f2a", "reused", "reused"),
)


def _runner(tmp_path: Path, **changes: object) -> VenvRunner:
    options = reprospec.RunOptions(runner="venv", out=tmp_path / "out").with_changes(**changes)
    runner = create_runner(options, spec_dir=tmp_path)
    assert isinstance(runner, VenvRunner)
    return runner


def test_a_runs_say_takes_the_venv_runners_lines_where_stderr_had_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Before: `reprospec.run` and every search printed `reprospec: env ...` on stderr, with
    # no way for an API caller to take or silence them.
    said: list[str] = []
    runner = _runner(tmp_path, say=said.append)
    for step in STEPS:
        runner.progress(step)
    assert said == ["env 3f2a: installing 2 packages", "    Resolved 2 packages"]
    assert capfd.readouterr().err == ""


def test_without_say_the_lines_are_on_stderr_as_the_cli_prints_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runner = _runner(tmp_path)
    for step in STEPS:
        runner.progress(step)
    assert capfd.readouterr().err.splitlines() == [
        "reprospec: env 3f2a: installing 2 packages",
        "reprospec:     Resolved 2 packages",
    ]


def test_a_folder_keyed_in_part_is_warned_of_once_a_run(tmp_path: Path) -> None:
    # Past the cap a folder entry was refused (every cell infra-error); keyed in part now,
    # the run says so, once however many cells' sections walk it.
    said: list[str] = []
    runner = _runner(tmp_path, say=said.append)
    runner._warn("'.': more than 20000 files under /w")
    runner._warn("'.': more than 20000 files under /w")
    assert said == ["warning: '.': more than 20000 files under /w"]


def test_a_search_gives_its_runs_its_progress_or_nothing() -> None:
    said: list[str] = []
    run = reprospec.RunOptions()
    assert investigate._said(run, said.append).say == said.append
    silent = investigate._said(run, None).say
    assert silent is not None
    silent("env 3f2a: building")  # said to nothing
    mine = run.with_changes(say=print)
    assert investigate._said(mine, said.append).say is print
    with pytest.raises(reprospec.errors.UsageError, match="say takes a function of one str"):
        reprospec.RunOptions(say="loud")  # type: ignore[arg-type]


def test_resume_gives_the_resumed_run_its_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stored options hold no function: without `say`, a resumed venv run printed its
    # build lines on stderr whatever the API caller wanted.
    from reprospec.pipeline import resume as resumption
    from reprospec.pipeline import stages

    stored = reprospec.RunOptions(runner="venv", out=tmp_path)
    seen: list[reprospec.RunOptions] = []
    monkeypatch.setattr(resumption, "resolve", lambda *_: ("r1", None))
    monkeypatch.setattr(resumption, "load", lambda *_, **__: (None, stored, ()))

    def run(_spec: object, options: reprospec.RunOptions, **_: object) -> None:
        seen.append(options)

    monkeypatch.setattr(stages, "run", run)
    said: list[str] = []
    reprospec.resume("r1", out=tmp_path, say=said.append)
    reprospec.resume("r1", out=tmp_path)
    assert [options.say for options in seen] == [said.append, None]


def test_a_python_not_here_is_searched_for_once_a_run_not_once_a_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each distinct (python, packages) section asked `find_interpreter` again, which kept
    # no failure: a matrix over three package lists on a python not here paid three
    # `uv python find`s (120 s each where uv hangs). Kept for the run; the next run looks
    # again (an interpreter made since).
    from reprospec import venvs
    from reprospec.venvs import build

    searches: list[str | None] = []

    def search(request: str | None) -> build.Interpreter:
        searches.append(request)
        raise build.UvTimeout(f"uv python find {request} timed out after 120s")

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nenvironment:\n  python: '3.99'\n"
        "  packages: ['${{ matrix.pkg }}']\nmatrix:\n  pkg: [a, b, c]\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    options = reprospec.RunOptions(runner="venv", out=tmp_path / "o")
    plans = reprospec.plan_run(reprospec.load_spec(spec), options).attempts
    monkeypatch.setattr(build, "_find_interpreter", search)
    monkeypatch.setattr(venvs, "uv_binary", lambda: "/bin/true")
    monkeypatch.setattr(venvs, "user_index_config", lambda *_: venvs.IndexConfig())
    build.forget_interpreters()
    try:
        for _ in range(2):  # two runs
            runner = _runner(tmp_path, say=lambda _line: None)
            try:
                runner.prepare(plans)
                assert all("timed out" in runner.build_error(plan) for plan in plans)
            finally:
                runner.close()  # the next run, one scope closed, looks again
        assert searches == ["3.99", "3.99"]
        # Two runs at once (or a search's probes inside its scope): one search, where the
        # next runner built dropped the other's failures (review).
        first = _runner(tmp_path, say=lambda _line: None)
        second = _runner(tmp_path, say=lambda _line: None)
        try:
            first.prepare(plans)
            second.prepare(plans)
        finally:
            first.close()
            second.close()
        assert searches == ["3.99"] * 3
    finally:
        build.forget_interpreters()
