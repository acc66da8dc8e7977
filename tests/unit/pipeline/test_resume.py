"""`--resume`: which given options are refused (the real killed run is in
tests/functional/pipeline/test_resume.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.cli import build_parser
from reprospec.commands.run import _given_kept
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.pipeline.resume import KEPT, gone_read_only, refuse_changes


def test_every_option_that_changes_what_runs_is_seen_given(tmp_path: Path) -> None:
    wheels = str(tmp_path)  # a --find-links folder must be there
    args = build_parser().parse_args(
        ["run", "--resume", "R", "-m", "a=1", "--set", "x=1", "--observe", "--runner", "local",
         "--repeat", "2", "--first-attempt", "5", "--timeout", "3s", "--python", "py",
         "--gpus", "0", "--shard", "1/2",
         "--find-links", wheels, "--keep-cores", "--preload", "none", "-j", "4", "--format", "json",
         "-y"]
    )  # fmt: skip
    assert _given_kept(args) == frozenset(KEPT)
    assert _given_kept(build_parser().parse_args(["run", "--resume", "R", "-j", "4"])) == set()


def test_a_changed_option_is_refused_naming_it_and_the_value_kept() -> None:
    began = RunOptions(repeat=3, timeout_s=30.0)
    with pytest.raises(UsageError) as caught:
        refuse_changes(
            "R", began, RunOptions(timeout_s=3.0, observe=True), {"timeout_s", "observe"}
        )
    message = str(caught.value)
    assert message.startswith("--resume R: --observe, --timeout given")
    assert "(--observe off; --timeout 30s)" in message
    # The run's own values again are no change; what was not given is not compared.
    refuse_changes("R", began, RunOptions(repeat=3, timeout_s=30.0), {"repeat", "timeout_s"})
    refuse_changes("R", began, RunOptions(repeat=1), set())


def test_a_docker_run_resumed_with_python_says_its_images_ran_the_cells() -> None:
    """The value a docker run kept read `--python none: this interpreter`, which ran none
    of its cells: each ran in its image's python3."""
    with pytest.raises(UsageError) as caught:
        refuse_changes("R", RunOptions(runner="docker"), RunOptions(python="py"), {"python"})
    assert "(--python none: each image's python3)" in str(caught.value)


def test_the_run_s_own_filters_in_another_order_are_no_change() -> None:
    """`-m a=3 -m a=1 -m b=y` after a run of `-m a=1 -m a=3 -m b=y` (the same
    cells) was refused, quoting the filters as `(-m a=1 a=3 b=y)`, no spelling -m takes."""
    began = RunOptions(matrix_filters=("a=1", "a=3", "b=y"))
    given = {"matrix_filters"}
    refuse_changes("R", began, RunOptions(matrix_filters=("a=3", "b=y", "a=1")), given)
    with pytest.raises(UsageError) as caught:
        refuse_changes("R", began, RunOptions(matrix_filters=("a=1", "b=y")), given)
    assert "(-m a=1 -m a=3 -m b=y)" in str(caught.value)
    with pytest.raises(UsageError) as caught:
        refuse_changes("R", RunOptions(), RunOptions(matrix_filters=("a=1",)), given)
    assert "(-m none: every cell)" in str(caught.value)


def test_a_finished_run_resumed_whole_keeps_the_record_it_had() -> None:
    """`--resume` of a run that had finished, its folder whole, ran nothing and
    called it resumed from `the run finished at X (its folder written again from the
    store)`: neither was true. It keeps what it had (none, or an earlier resume's record);
    written again, or its failed attempts run now, it says so."""
    from reprospec.core.resumed import Resumed, ResumedPart
    from reprospec.pipeline.stages import _resumed

    finished = Resumed(2, 0, "finished", "2026-12-01T09:58:40+00:00")
    assert _resumed(0, finished, None, False) is None
    earlier = Resumed(1, 1, "interrupted", "2026-12-01T09:50:00+00:00")
    assert _resumed(0, finished, earlier, False) is earlier
    # Its folder gone and written again from the store; its attempts that could not run, run.
    rewritten = Resumed(2, 0, "finished", "2026-12-01T09:58:40+00:00", rewritten=True)
    assert _resumed(0, rewritten, earlier, False) == rewritten
    assert _resumed(1, finished, earlier, False) == Resumed(2, 1, "finished", finished.stopped_at)
    # An interrupted part is said whatever ran now.
    interrupted = Resumed(2, 0, "interrupted", before=(ResumedPart(1, "killed"),))
    assert _resumed(0, interrupted, None, False) == interrupted
    # A finished run's retry stopped before it stored an attempt: resumed all the
    # same, where it read as the finished run itself, stopped.
    assert _resumed(0, finished, None, True) == finished


def test_a_retry_that_finished_within_the_second_of_its_run_is_a_part_of_its_own() -> None:
    """The part a resume continues was dropped as the duplicate a resume that ran
    nothing writes (it keeps its run's end) by its end alone, to the second: a retry that
    stored attempts and finished within the second its run did was merged into the run's."""
    from reprospec.core.resumed import ResumedPart, earlier_parts

    at = "2026-12-01T09:58:40+00:00"
    run = ResumedPart(3, "finished", at)
    # The retry stored 2 more, and finished in the run's second: its own part.
    assert earlier_parts((run,), "finished", at, 5) == ((run,), ResumedPart(2, "finished", at))
    # A resume of the finished run that ran nothing (nothing stored since, its end kept):
    # the run's part is named once, not again with none.
    assert earlier_parts((run,), "finished", at, 3) == ((), run)
    # An interrupted part is its own, whatever it stored.
    assert earlier_parts((run,), "interrupted", at, 3) == (
        (run,),
        ResumedPart(0, "interrupted", at),
    )


def test_a_secret_whose_change_cannot_be_told_is_refused_with_advice_the_user_can_act_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store that could not keep the key of its digests cannot tell whether a
    # secret changed; "set them as they were" asked for what no one can check.
    from reprospec.api import load_spec
    from reprospec.core.jsontypes import JsonObject
    from reprospec.pipeline.resume import refuse_other_variables

    spec_file = tmp_path / "s.yaml"
    spec_file.write_text("reprospec: 1\nname: s\ncommand: 'echo ${{ env.API_TOKEN }}'\n")
    spec = load_spec(spec_file)
    monkeypatch.setenv("API_TOKEN", "tok-1a2b3c4d")
    (tmp_path / "a-file").write_text("")
    unknown: JsonObject = {
        "values": {},
        "digests": {"store": None, "of": [], "unknown": ["API_TOKEN"]},
    }
    with pytest.raises(UsageError) as caught:
        # The store under a file: its key cannot be kept now either.
        refuse_other_variables("R", {"spec_variables": unknown}, spec, tmp_path / "a-file")
    message = str(caught.value)
    assert "API_TOKEN: set in both; whether it changed is unknown" in message
    assert "Set them as they were" not in message
    assert message.endswith("run the spec again (without --resume)")


def test_a_run_whose_spec_was_moved_says_where_it_must_be_put_back(tmp_path: Path) -> None:
    # `--resume` said only "PATH: no such file", and the moved file given was
    # refused as another spec ("leave the spec out to resume it"): no way on was said.
    from reprospec.pipeline.resume import load
    from reprospec.store.db import Store

    spec = tmp_path / "gone.yaml"
    with Store(tmp_path / "out") as store:
        store.begin_run("R", "gone", str(spec), "x", "local", RunOptions().stored(), {})
        store.finish_run("R", "interrupted")
    for given in (None, tmp_path / "moved.yaml"):
        with pytest.raises(UsageError) as caught:
            load("R", tmp_path / "out", spec_path=given)
        assert str(caught.value) == (
            f"--resume R: its spec {spec} is gone (moved or removed?); a resumed run reads it "
            "there: put it back, unchanged, or run the spec again"
        )


def test_a_run_recorded_with_relative_paths_resumes_with_them_given_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs made before `--python` and `--find-links` were recorded absolute hold
    `env/bin/python` and `wheels`; the same words given to `--resume` now arrive absolute,
    and were refused as a change, naming the very values given (review of d433a1a0)."""
    (tmp_path / "wheels").mkdir()
    monkeypatch.chdir(tmp_path)
    began = RunOptions(python="env/bin/python", find_links=Path("wheels"))
    again = RunOptions(python=str(tmp_path / "env/bin/python"), find_links=tmp_path / "wheels")
    refuse_changes("r1", began, again, {"python", "find_links"})  # no change: let through
    other = RunOptions(python=str(tmp_path / "other/bin/python"), find_links=tmp_path / "wheels")
    with pytest.raises(UsageError, match="--python given"):
        refuse_changes("r1", began, other, {"python", "find_links"})


def test_a_spec_stored_under_an_older_masking_rule_is_the_spec_that_ran(tmp_path: Path) -> None:
    # A run stored before a credential in the command was masked (`--db postgres://...` as
    # written, API_KEY masked alone) read as another spec once that rule came: --resume
    # refused it ("changed since the run started") and bundle said its files were today's.
    from reprospec.pipeline.stages import ran_as_stored
    from reprospec.spec.load import load_spec

    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\n"
        "command: python x.py --api-key=sk-abcdef1234567890XYZ --db postgres://u:pw12xyz@db/x\n"
    )
    older = (
        "reprospec: 1\nname: s\n"
        "command: python x.py --api-key=${{ env.API_KEY }} --db postgres://u:pw12xyz@db/x\n"
        "# reprospec: secrets masked; to rerun this spec, set in your environment: API_KEY\n"
    )
    spec = load_spec(path)
    assert ran_as_stored(spec, older)
    assert not ran_as_stored(spec, older.replace("x.py", "y.py"))


def test_a_python_runs_store_set_aside_is_run_again_with_its_options(tmp_path: Path) -> None:
    # A run made from Python has no command line: `--resume` of it after its store was set
    # aside said "Run its spec again, `reprospec run api.yaml --out OUT`", without the
    # `-m`, `--repeat` and `stop_on` it ran with.
    import json

    from reprospec.pipeline.resume import load
    from reprospec.store.runfolder import ENGINE_JSON, RunFolder

    out = tmp_path / "out"
    folder = RunFolder.of(out, "r1").path
    folder.mkdir(parents=True)
    (folder / ENGINE_JSON).write_text("{}")
    options = RunOptions(out=out, repeat=3, stop_on="never", matrix_filters=("crash=true",))
    ran = {"command_line": "", "options": options.to_dict(), "spec": {"path": "api.yaml"}}
    (folder / "results.json").write_text(json.dumps(ran))
    with pytest.raises(UsageError) as caught:
        load("r1", out)
    assert (
        "Run its spec again, `reprospec run api.yaml -m crash=true --repeat 3 "
        f"--set run.stop_on=never --out {out}`"
    ) in caught.value.args[0]


@pytest.mark.parametrize("given", ["", "amplify.md"])
def test_resume_of_a_search_folder_names_the_command_that_resumes_it(
    tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --resume .reprospec/amplify/ID` was read as a run's folder and said "no such run"
    (or "no results store"): a search resumes by its own command, which is named."""
    from reprospec.cli import main

    folder = tmp_path / "amplify" / "s-0123456789"
    folder.mkdir(parents=True)
    (folder / "amplify.json").write_text("{}")
    (folder / "amplify.md").write_text("## Amplification\n")
    target = folder / given if given else folder
    assert main(["run", "--resume", str(target), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"reprospec: {target} is ")
    assert "not a run" in err
    assert "the same `reprospec amplify` command resumes, or prints again" in err
    assert "no such run" not in err
    assert "no results store" not in err


def test_a_docker_runs_gone_read_only_folder_is_refused_on_resumes_terms(tmp_path: Path) -> None:
    """Its containers mount it: every attempt would be an infra-error. A local run's never
    reads it (its functional test resumes one); neither is told to give a folder it never gave."""
    gone = str(tmp_path / "gone")
    for runner, refused in (("docker", True), ("local", False), ("venv", False)):
        stored = {**RunOptions(runner=runner).to_dict(), "read_only": gone}
        options = RunOptions.from_dict(stored, tmp_path / "out")
        if not refused:
            gone_read_only("R1", options)
            continue
        with pytest.raises(UsageError) as caught:
            gone_read_only("R1", options)
        assert str(caught.value) == (
            f"--resume R1: its read_only {gone} (the workdir minimize mounted read-only) "
            "is gone; put it back or start a new run"
        )
        assert caught.value.exit_code == 2
    (tmp_path / "gone").mkdir()
    gone_read_only("R1", RunOptions.from_dict(stored, tmp_path / "out"))
