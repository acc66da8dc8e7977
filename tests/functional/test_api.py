"""The Python API drives the engine as the CLI does: real children, a stored, judged result."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import reprospec
from reprospec.core.results import Outcome
from reprospec.errors import UsageError
from tests.support.api import SPEC, write


def test_run_returns_a_judged_stored_result(tmp_path: Path) -> None:
    spec = reprospec.load_spec(write(tmp_path))
    out = tmp_path / "out"
    seen: list[str] = []
    result = reprospec.run(
        spec,
        reprospec.RunOptions(out=out, repeat=2, jobs=2),
        progress=lambda event, *_: seen.append(event),
    )
    assert [c.cell.id for c in result.cells] == ["crash=false", "crash=true"]
    assert [c.verdict for c in result.cells] == ["reproduced", "reproduced"]
    crashed = result.cells[1].attempts[0].outcome
    assert isinstance(crashed, Outcome)
    assert crashed.kind == "crash"
    assert crashed.signal == "SIGSEGV"
    assert result.cells[1].rate.matched == 2
    assert seen.count("start") == 4
    assert seen.count("attempt") == 4
    assert reprospec.exit_code(result) == 0
    # Stored and written like a CLI run: the same result loads back by id.
    again = reprospec.load_result(result.run_id, out)
    assert [c.verdict for c in again.cells] == [c.verdict for c in result.cells]
    assert "SIGSEGV" in reprospec.render(result, "md")
    assert (out / "results.db").is_file()


def test_run_takes_a_path_and_options_override_the_spec(tmp_path: Path) -> None:
    result = reprospec.run(
        write(tmp_path),
        reprospec.RunOptions(
            out=tmp_path / "out",
            matrix_filters=("crash=true",),
            stop_on="first-reproduction",
            repeat=5,
        ),
    )
    (cell,) = result.cells
    assert cell.cell.id == "crash=true"
    assert len(cell.attempts) == 1  # stop_on from the options, not the spec


def test_cancel_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    # 10 attempts a cell: the run is cancelled after 3 with one more at most in flight (one
    # place), so most of the 20 are left for the resume to run, however slow the machine.
    spec_text = SPEC.replace("run: {timeout: 60s}", "run: {timeout: 60s, repeat: 10}")
    cancel = threading.Event()

    def progress(event: str, _cell: object, _res: object, finished: int, _total: int) -> None:
        if event == "attempt" and finished >= 3:
            cancel.set()

    result = reprospec.run(
        write(tmp_path, spec_text),
        reprospec.RunOptions(out=tmp_path / "out"),
        progress=progress,
        cancel=cancel,
    )
    assert result.interrupted
    ran = sum(len(c.attempts) for c in result.cells)
    assert 3 <= ran < 20
    assert reprospec.exit_code(result) == 130
    resumed = reprospec.resume(result.run_id, out=tmp_path / "out")
    assert not resumed.interrupted
    assert [len(c.attempts) for c in resumed.cells] == [10, 10]


@pytest.mark.parametrize("kind", [RuntimeError, SystemExit])
def test_a_raising_progress_callback_stops_the_run_and_stores_it(
    tmp_path: Path, kind: type[BaseException]
) -> None:
    """The callback's exception left the run `running` in the store (no
    results.json) while the caller lived, 'still running' to load_result and resume; a
    SystemExit (a callback that calls sys.exit) too, which is no Exception."""
    spec_text = SPEC.replace("run: {timeout: 60s}", "run: {timeout: 60s, repeat: 10}")
    out = tmp_path / "out"

    def progress(event: str, _cell: object, _res: object, finished: int, _total: int) -> None:
        if event == "attempt" and finished >= 2:
            raise kind("a bug in the caller's callback")

    with pytest.raises(kind, match="a bug in the caller's callback"):
        reprospec.run(write(tmp_path, spec_text), reprospec.RunOptions(out=out), progress=progress)
    stored = reprospec.load_result("latest", out)
    assert stored.interrupted
    assert 2 <= sum(len(c.attempts) for c in stored.cells) < 20
    resumed = reprospec.resume(stored.run_id, out=out)
    assert [len(c.attempts) for c in resumed.cells] == [10, 10]


def test_progress_is_called_one_call_at_a_time(tmp_path: Path) -> None:
    """python-api.md's example prints from `progress`: two attempts ending together printed
    one line of both (`[k/n] crash=true #2: crash  [k/n] crash=true #1: crash`), since its
    calls came from the worker threads at once. Each call here holds on a moment: any
    other made meanwhile would find it inside."""
    spec_text = SPEC.replace("run: {timeout: 60s}", "run: {timeout: 60s, repeat: 4}")
    inside: list[int] = []
    most: list[int] = [0]
    calls: list[str] = []

    def progress(event: str, *_: object) -> None:
        inside.append(1)
        most[0] = max(most[0], len(inside))
        threading.Event().wait(0.05)
        calls.append(event)
        inside.pop()

    options = reprospec.RunOptions(out=tmp_path / "out", jobs=4)
    result = reprospec.run(write(tmp_path, spec_text), options, progress=progress)
    assert [c.verdict for c in result.cells] == ["reproduced", "reproduced"]
    assert (calls.count("start"), calls.count("attempt")) == (8, 8)
    assert most[0] == 1


def test_resume_takes_what_run_resume_takes(tmp_path: Path) -> None:
    """Resume took an exact id alone ('--resume latest: no such run'), where
    `run --resume` and load_result take `latest`, a unique prefix and the run's folder."""
    spec_text = SPEC.replace("run: {timeout: 60s}", "run: {timeout: 60s, repeat: 3}")
    out = tmp_path / "out"
    cancel = threading.Event()
    cancel.set()  # nothing runs: every attempt is left to the resumes
    first = reprospec.run(write(tmp_path, spec_text), reprospec.RunOptions(out=out), cancel=cancel)
    assert first.interrupted
    resumed = reprospec.resume("latest", out=out, cancel=cancel)
    assert (resumed.run_id, resumed.interrupted) == (first.run_id, True)
    resumed = reprospec.resume(first.run_id[:-2], out=out, cancel=cancel)
    assert resumed.run_id == first.run_id
    done = reprospec.resume(out / "runs" / first.run_id, out=tmp_path / "elsewhere")
    assert done.run_id == first.run_id
    assert [len(c.attempts) for c in done.cells] == [3, 3]


def test_a_refused_resume_names_the_call_not_the_command_line(tmp_path: Path) -> None:
    """`reprospec.resume("nosuch")` said `--resume nosuch: ...`, an option its
    caller never typed; the command line's own words stay the command line's."""
    import subprocess
    import sys

    out = tmp_path / "out"
    with pytest.raises(UsageError) as refused:
        reprospec.resume("nosuch", out=out)
    assert str(refused.value).startswith("resume('nosuch'): no results store at ")
    cancel = threading.Event()
    cancel.set()
    reprospec.run(write(tmp_path), reprospec.RunOptions(out=out), cancel=cancel)
    with pytest.raises(UsageError, match=r"^resume\('nosuch'\): no such run in "):
        reprospec.resume("nosuch", out=out)
    typed = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "--resume", "nosuch", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert typed.returncode == 2
    assert "--resume nosuch: no such run in " in typed.stderr


def test_a_refused_argument_is_named_as_the_call_took_it(tmp_path: Path) -> None:
    """The errors of `gpus`, `out` and capture_command's `force` named the CLI's `--gpus`,
    `--out` and `--force`, options the caller never typed (docs/python-api.md: an error of
    what you passed names the argument)."""
    spec = write(tmp_path)
    (tmp_path / "a-file").write_text("")
    # (gpus' ids are checked as the options are made, so plan_run refuses them too.)
    with pytest.raises(UsageError, match=r"^gpus a,b: 'a' is not a GPU id"):
        reprospec.RunOptions(gpus="a,b")
    with pytest.raises(UsageError, match=r"^out .*a-file: not a folder"):
        reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "a-file"))
    with pytest.raises(UsageError, match=r"^out .*a-file: not a folder"):
        reprospec.load_result("latest", tmp_path / "a-file")
    with pytest.raises(UsageError, match=r"api\.yaml exists; pass force=True to overwrite it"):
        reprospec.capture_command(["true"], output=spec, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_compare_says_what_reprospec_compare_prints(tmp_path: Path) -> None:
    """`reprospec.compare` is the verb's comparison, not printed: its text is the verb's
    output, its JSON the verb's `--format json`, and a run may be given by id under `out`."""
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    spec = write(tmp_path)
    first = reprospec.run(spec, reprospec.RunOptions(out=out, repeat=1))
    # The crash taken out of the second run: its cell's verdict changes.
    second = reprospec.run(spec, reprospec.RunOptions(out=out, repeat=2, overrides=("~expect",)))
    found = reprospec.compare(first, second)
    assert (found.run_a, found.run_b) == (first.run_id, second.run_id)
    assert found.diff["options"]  # --repeat and --set differ
    assert reprospec.exit_code(found) == 0
    by_id = reprospec.compare(first.run_id, "latest", out=out)
    assert by_id.diff == json.loads(found.render("json"))
    verb = [sys.executable, "-m", "reprospec", "compare", first.run_id, second.run_id]
    for fmt, flags in (("text", ()), ("json", ("--format", "json"))):
        done = subprocess.run(
            [*verb, "--out", str(out), *flags],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip("\n") == reprospec.render(found, fmt)


def test_a_runs_store_is_one_absolute_path_from_run_and_from_load_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`RunResult.store` was absolute from `run()` (its run read back from its folder) and
    as given from `load_result(ID, out=".repro")`: one run, two stores that compared
    unequal. Both are the store's absolute path now (python-api.md)."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    result = reprospec.run(spec, reprospec.RunOptions(out=".repro", say=lambda _: None))
    assert result.store == tmp_path.resolve() / ".repro"
    for loaded in (
        reprospec.load_result(result.run_id, ".repro"),
        reprospec.load_result(Path(".repro") / "runs" / result.run_id),
    ):
        assert loaded.store == result.store


def test_a_run_of_a_spec_read_from_a_report_is_reproduced_from_that_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `reprospec.run(reprospec.load_spec("report.md"))` of a run made with a `--set`:
    # How to reproduce said `reprospec run api.yaml`, the file the report was made from,
    # whose text lacks the run's `--set` the report's spec holds resolved.
    monkeypatch.chdir(tmp_path)  # the spec file the report names is found from here
    out = tmp_path / "out"
    first = reprospec.run(
        write(tmp_path),
        reprospec.RunOptions(
            out=out, overrides=("run.timeout=5s",), matrix_filters=("crash=true",)
        ),
    )
    report = out / "runs" / first.run_id / "report.md"
    spec = reprospec.load_spec(report)
    assert spec.origin is not None
    again = reprospec.run(spec, reprospec.RunOptions(out=out, matrix_filters=("crash=true",)))
    assert again.command_line == f"reprospec run {report} -m crash=true"
    shown = reprospec.render(again, "md").split("## How to reproduce")[1]
    assert f"reprospec run {report} -m crash=true\n" in shown
    # A spec read from its own file still records no command line (the report makes one).
    plain = reprospec.run(write(tmp_path), reprospec.RunOptions(out=out, repeat=1))
    assert plain.command_line == ""
