"""The run folder keeps an attempt's files only where they say something (issue 30).

A real run of six cells: silent passes, a pass that prints, a failure that prints
nothing, twice each. The silent passes leave no folder, the printing pass keeps only its
output, the failure keeps every file; and the readers that once found a folder for every
attempt (report, resume, bundle, merge) still work from the store and results.json.
"""

from __future__ import annotations

import json
import tarfile
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli

SPEC = """\
reprospec: 1
name: quiet
matrix:
  kind: [silent, chatty, fails]
  n: [1, 2]
command: [sh, -c, "case ${{ matrix.kind }} in chatty) echo hello;; fails) exit 3;; esac"]
run: {repeat: 2}
expect:
  outcome: pass
  cases:
    - when: {kind: fails}
      outcome: error
"""


@pytest.fixture(scope="module")
def quiet_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CliResult]:
    """The spec's run, once for the module: (its folder, the CLI result)."""
    folder = tmp_path_factory.mktemp("quiet")
    spec = folder / "quiet.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    result = run_cli(folder / "out", "run", str(spec), "-j", "2")
    assert result.code == 0, result.stderr
    return folder, result


def _attempt_files(run_dir: Path) -> dict[str, list[str]]:
    """`CELL/N` -> the names of the files attempt N of CELL left."""
    return {
        f"{attempt.parent.name}/{attempt.name}": sorted(p.name for p in attempt.iterdir())
        for attempt in sorted((run_dir / "cells").glob("*/*"))
    }


def test_only_attempts_with_something_to_read_keep_files(
    quiet_run: tuple[Path, CliResult],
) -> None:
    _, result = quiet_run
    run_dir = result.latest_run()
    assert _attempt_files(run_dir) == {
        f"kind=chatty,n={n}/{attempt}": ["stdout.log"] for n in (1, 2) for attempt in (1, 2)
    } | {
        f"kind=fails,n={n}/{attempt}": ["events.jsonl", "stderr.log", "stdout.log"]
        for n in (1, 2)
        for attempt in (1, 2)
    }
    # No folder is left for a cell whose every attempt passed in silence.
    assert sorted(p.name for p in (run_dir / "cells").iterdir()) == [
        "kind=chatty,n=1",
        "kind=chatty,n=2",
        "kind=fails,n=1",
        "kind=fails,n=2",
    ]
    # Every attempt is still in results.json, its `logs` naming where its files would be.
    cells = {cell["id"]: cell for cell in result.results()["cells"]}
    assert len(cells) == 6
    silent = cells["kind=silent,n=1"]
    assert [a["logs"] for a in silent["attempts"]] == [
        "cells/kind=silent,n=1/1/",
        "cells/kind=silent,n=1/2/",
    ]
    assert {c["verdict"] for c in cells.values()} == {"reproduced"}


def test_report_and_resume_read_the_store(quiet_run: tuple[Path, CliResult]) -> None:
    folder, result = quiet_run
    run_dir = result.latest_run()
    report = run_cli(folder / "out", "report", str(run_dir), "--format", "json")
    assert report.code == 0, report.stderr
    assert len(json.loads(report.stdout)["cells"]) == 6
    # A resume of the finished run rebuilds every cell from the store's rows: nothing of a
    # silent pass is on disk, and its verdict is the same.
    resumed = run_cli(folder / "out", "run", "--resume", run_dir.name)
    assert resumed.code == 0, resumed.stderr
    cells = {cell["id"]: cell for cell in resumed.results()["cells"]}
    assert len(cells["kind=silent,n=2"]["attempts"]) == 2
    assert {c["verdict"] for c in cells.values()} == {"reproduced"}
    assert not (run_dir / "cells" / "kind=silent,n=2").exists()


def test_bundle_and_merge_carry_what_there_is(
    quiet_run: tuple[Path, CliResult], tmp_path: Path
) -> None:
    folder, result = quiet_run
    run_dir = result.latest_run()
    bundle = tmp_path / "quiet.tar.gz"
    packed = run_cli(folder / "out", "bundle", str(run_dir), "-o", str(bundle))
    assert packed.code == 0, packed.stderr
    with tarfile.open(bundle) as tar:
        logs = sorted(
            name.split("/logs/", 1)[1] for name in tar.getnames() if "/logs/cells/" in name
        )
    assert logs == sorted(
        f"cells/{attempt}/{name}"
        for attempt, names in _attempt_files(run_dir).items()
        for name in names
    )
    merged = run_cli(tmp_path / "merged", "merge", str(run_dir), "--out", str(tmp_path / "m"))
    assert merged.code == 0, merged.stderr
    merged_run = next((tmp_path / "m" / "runs").iterdir())
    assert _attempt_files(merged_run) == _attempt_files(run_dir)
    assert len(json.loads((merged_run / "results.json").read_text())["cells"]) == 6


def test_a_failure_after_a_silent_pass_keeps_its_files_and_no_record(tmp_path: Path) -> None:
    # Attempt 2 runs in the folder attempt 1 handed on (its empty events.jsonl and blank
    # in-flight record in it): the failure keeps every file of its own, and not the record.
    spec = tmp_path / "turns.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            reprospec: 1
            name: turns
            command: [sh, -c, "[ ${{ attempt }} = 2 ] && exit 3; exit 0"]
            run: {repeat: 4}
            expect: {outcome: pass}
            """
        )
    )
    result = run_cli(tmp_path / "out", "run", str(spec), "-j", "1")
    assert result.code == 1, result.stderr
    run_dir = result.latest_run()
    assert _attempt_files(run_dir) == {"default/2": ["events.jsonl", "stderr.log", "stdout.log"]}
    assert not list(run_dir.rglob("inflight*.json"))
    assert not list(run_dir.rglob(".spare"))
    attempts = result.results()["cells"][0]["attempts"]
    assert [a["outcome"]["kind"] for a in attempts] == ["pass", "error", "pass", "pass"]


def test_two_runs_that_draw_one_id_each_get_a_folder_and_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run id's random part is 4 hex digits: two runs of one spec in one second (a search's
    probes) drew the same once in a few dozen minimizes, and the second shared the first's
    folder and died on the store's UNIQUE constraint (the minimize helper's flaky failure)."""
    import reprospec
    from reprospec.store import resultsjson

    spec = tmp_path / "t.yaml"
    spec.write_text("reprospec: 1\nname: t\ncommand: [true]\nexpect: {outcome: pass}\n")
    same, other = "20261201-040000-t-3f9a", "20261201-040000-t-77c1"
    draws = iter([same, same, other])
    monkeypatch.setattr(resultsjson, "new_run_id", lambda _name: next(draws))
    options = reprospec.RunOptions(out=tmp_path / "out")
    first = reprospec.run(spec, options)
    second = reprospec.run(spec, options)
    assert (first.run_id, second.run_id) == (same, other)
    runs = tmp_path / "out" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [same, other]
    assert all((runs / name / "report.md").is_file() for name in (same, other))
    # Each has its own row: the store reads each back as the run it is.
    assert reprospec.load_result(same, tmp_path / "out").run_id == same
    assert reprospec.load_result(other, tmp_path / "out").run_id == other
