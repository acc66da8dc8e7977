"""Run ids for `history` and `compare`: the order of runs begun in one second, `latest` of Slurm
runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.store.refs import recent_run_ids, resolve_run_id


def test_recent_run_ids_order_runs_of_one_second_as_begun(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY)")
    # Begun in this order within one second; their random suffixes sort the other way.
    conn.executemany(
        "INSERT INTO runs VALUES (?)", [("20261121-214512-x-ffff",), ("20261121-214512-x-0000",)]
    )
    conn.commit()
    conn.close()
    # Merges (no store row of their own: their results.json says they are runs), one made
    # in the same second as the runs it merged.
    for merged in ("20261121-214513-x-merged", "20261121-214512-x-1111"):
        (tmp_path / "runs" / merged).mkdir(parents=True)
        (tmp_path / "runs" / merged / "results.json").write_text("{}")
    # What a run refused before it began left (its engine.json alone; the store
    # does not list it) is no run, newest as it is.
    (tmp_path / "runs" / "20261121-214600-x-2222").mkdir(parents=True)
    (tmp_path / "runs" / "20261121-214600-x-2222" / "engine.json").write_text("{}")
    assert recent_run_ids(tmp_path) == [
        "20261121-214513-x-merged",
        "20261121-214512-x-1111",
        "20261121-214512-x-0000",
        "20261121-214512-x-ffff",
    ]
    assert resolve_run_id("latest~3", tmp_path) == "20261121-214512-x-ffff"
    assert resolve_run_id("20261121", tmp_path) == "20261121"  # not a `latest`: as given
    with pytest.raises(UsageError, match="has no runs"):
        resolve_run_id("latest", tmp_path / "empty")


def test_slurm_runs_take_latest_too(tmp_path: Path) -> None:
    from reprospec import slurm

    for run_id in ("20261121-214512-x-aaaa", "20261121-214600-x-bbbb"):
        (tmp_path / "slurm" / run_id).mkdir(parents=True)
        (tmp_path / "slurm" / run_id / slurm.PLAN_FILE).write_text("{}")
    assert slurm.find("latest", tmp_path).name == "20261121-214600-x-bbbb"
    assert slurm.find("latest~1", tmp_path).name == "20261121-214512-x-aaaa"


def test_latest_beyond_a_persons_runs_says_the_probes_it_did_not_count(tmp_path: Path) -> None:
    # `report latest~2` said ".reprospec has only 2 runs" of a folder of 14
    # runs, 12 of them isolate's probes, which `history` says it leaves out.
    db = tmp_path / "results.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, options TEXT)")
    rows = [(f"20261121-2145{n:02d}-x-{n:04d}", '{"purpose": "run"}') for n in range(2)]
    rows += [(f"20261121-2146{n:02d}-x-{n:04d}", '{"purpose": "isolate"}') for n in range(12)]
    conn.executemany("INSERT INTO runs VALUES (?, ?)", rows)
    conn.commit()
    conn.close()
    assert resolve_run_id("latest~1", tmp_path) == "20261121-214500-x-0000"
    with pytest.raises(UsageError) as refused:
        resolve_run_id("latest~2", tmp_path)
    assert str(refused.value) == (
        f"latest~2: {tmp_path} has only 2 runs (12 runs of isolate, minimize, amplify or "
        "bisect not counted, one per probe: `history --searches` lists them by id)"
    )


def test_compare_shows_the_first_few_of_pips_packages_and_counts_the_rest() -> None:
    """A local run against a docker run printed 117 lines, most of them pip's
    package list (two interpreters differ in nearly all), burying python and torch."""
    from dataclasses import replace

    from reprospec.report.compare import lines
    from reprospec.store.compare import compare
    from tests.support.runs import error_run

    pip_a: JsonObject = {f"pkg{n}": f"1.{n}" for n in range(20)}
    pip_b: JsonObject = {f"pkg{n}": f"2.{n}" for n in range(20)}
    run_a, run_b = error_run(), error_run()
    run_a = replace(run_a, environment={"python": "3.11.7", "collect_env": {"pip": pip_a}})
    run_b = replace(run_b, environment={"python": "3.11.2", "collect_env": {"pip": pip_b}})
    text = lines(compare(run_a, run_b), "spec")
    shown = [line for line in text if line.startswith("  collect_env.pip.")]
    assert len(shown) == 8
    assert "  python: '3.11.7' -> '3.11.2'" in text
    assert "  ... and 12 more of collect_env.pip.* (`--format json` lists them)" in text
    # Eight or fewer are all shown.
    run_b = replace(run_b, environment={"python": "3.11.2", "collect_env": {"pip": pip_a}})
    assert not any(line.startswith("  ... and") for line in lines(compare(run_a, run_b), "spec"))


def test_history_says_a_shard_run_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard's verdicts are of its share of each cell's attempts; listed as a
    plain run, `1 undecided` read as the cell's verdict, where the merge reproduced it."""
    import json

    from reprospec.cli import main
    from reprospec.core.runoptions import RunOptions, Shard

    runs = [
        ("20261121-214500-s-0001", RunOptions(shard=Shard(2, 3))),
        ("20261121-214501-s-0002", RunOptions()),
    ]
    _finished_runs(tmp_path, runs, "local")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["history", "--out", str(tmp_path)]) == 0
    rows = {
        cells[1].strip(): [cell.strip() for cell in cells[2:]]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("│") and (cells := line.split("│"))
    }
    assert "finished, shard 2/3" in rows["20261121-214500-s-0001"]
    assert "finished" in rows["20261121-214501-s-0002"]
    assert main(["history", "--out", str(tmp_path), "--format", "json"]) == 0
    listed = {row["run_id"]: row["shard"] for row in json.loads(capsys.readouterr().out)}
    assert listed == {"20261121-214500-s-0001": "2/3", "20261121-214501-s-0002": None}


def test_history_limit_past_sqlites_integers_lists_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--limit 100000000000000000000` (past sqlite's 64-bit LIMIT) said "the
    results store ...: cannot read it: datatype mismatch", exit 3: the store blamed."""
    import json

    from reprospec.cli import main

    runs = [("20261121-214500-s-0001", RunOptions()), ("20261121-214501-s-0002", RunOptions())]
    _finished_runs(tmp_path, runs, "local")
    huge = str(10**20)
    assert main(["history", "--out", str(tmp_path), "--limit", huge, "--format", "json"]) == 0
    listed = [row["run_id"] for row in json.loads(capsys.readouterr().out)]
    assert listed == ["20261121-214501-s-0002", "20261121-214500-s-0001"]


def test_history_beside_a_store_counts_the_run_folders_it_does_not_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store moved aside (damaged, as its message advises) left its runs' folders,
    which `latest~N` counts; beside the next run's store, history listed that run alone and
    said nothing of them (it said so only where there was no store)."""
    from reprospec.cli import main
    from reprospec.store.resultsjson import write_run
    from tests.support.runs import infra_run

    write_run(tmp_path / "runs" / "20261121-214400-s-0000", infra_run())
    _finished_runs(tmp_path, [("20261121-214500-s-0001", RunOptions())], "local")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["history", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "20261121-214500-s-0001" in out
    assert (
        f"{tmp_path / 'runs'} holds 1 run folder no store lists, such as the runs `merge` "
        "writes (newest 20261121-214400-s-0000)"
    ) in " ".join(out.split())
    assert main(["history", "--out", str(tmp_path), "s"]) == 0  # a spec's runs: not said
    assert "no store lists" not in capsys.readouterr().out


def test_history_searches_names_what_each_probe_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """fx49a: `history --searches` listed a bisect's runs as `bisect`, one row per version,
    without the version: which run tried pyyaml 5.4.1 could not be read from it."""
    import json

    from reprospec.cli import main
    from reprospec.core.runoptions import RunOptions

    probes = [
        ("20261121-214500-s-0001", RunOptions(purpose="bisect", probe="pyyaml 6.0.1")),
        ("20261121-214501-s-0002", RunOptions(purpose="bisect", probe="pyyaml 5.4.1")),
        ("20261121-214502-s-0003", RunOptions(purpose="isolate", probe="num_workers=2")),
        ("20261121-214503-s-0004", RunOptions()),
    ]
    _finished_runs(tmp_path, probes, "venv")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["history", "--searches", "--out", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "┃ by      ┃ probe         ┃" in table
    cells = [line.split("│") for line in table.splitlines() if line.startswith("│")]
    rows = {cell[1].strip(): cell[2:4] for cell in cells}
    assert [cell.strip() for cell in rows["20261121-214501-s-0002"]] == ["bisect", "pyyaml 5.4.1"]
    assert [cell.strip() for cell in rows["20261121-214502-s-0003"]] == [
        "isolate",
        "num_workers=2",
    ]
    assert [cell.strip() for cell in rows["20261121-214503-s-0004"]] == ["run", "—"]
    assert main(["history", "--searches", "--out", str(tmp_path), "--format", "json"]) == 0
    listed = {row["run_id"]: row["probe"] for row in json.loads(capsys.readouterr().out)}
    assert listed["20261121-214501-s-0002"] == "pyyaml 5.4.1"
    assert listed["20261121-214503-s-0004"] is None
    # A person's runs alone: no probe column to show.
    assert main(["history", "--out", str(tmp_path)]) == 0
    assert "┃ probe" not in capsys.readouterr().out


def test_history_of_a_deleted_spec_file_names_the_spec_s_name_its_runs_are_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`history g.yaml` after the file was deleted said "no such file", exit 2, where
    `history NAME` (the spec's name, which the store keeps) lists its runs."""
    from reprospec.cli import main

    _finished_runs(tmp_path, [("20261121-214500-s-0001", RunOptions())], "local")
    assert main(["history", "--out", str(tmp_path), "/s.yaml"]) == 2
    assert capsys.readouterr().err == (
        "reprospec: /s.yaml: no such file; the store has runs of the spec read from it, by its "
        f"name: reprospec history s --out {tmp_path}\n"
    )
    # A file the store knows no run of: how to list a spec's runs by its name.
    assert main(["history", "--out", str(tmp_path), "/other.yaml"]) == 2
    assert capsys.readouterr().err == (
        "reprospec: /other.yaml: no such file; `reprospec history NAME --out "
        f"{tmp_path}` lists the runs of a spec by its name, which the store keeps\n"
    )


def _finished_runs(out: Path, runs: list[tuple[str, RunOptions]], runner: str) -> None:
    """A store under `out` holding these runs of one spec, each finished with these
    options, and their folders (history lists a run whose folder is there)."""
    from reprospec.store.db import Store

    with Store(out) as store:
        for run_id, options in runs:
            store.begin_run(run_id, "s", "/s.yaml", "x", runner, options.stored(), {})
            store.finish_run(run_id, "finished")
            (out / "runs" / run_id).mkdir(parents=True)


def test_a_report_of_an_unpacked_bundle_links_its_logs_where_the_bundle_holds_them(
    tmp_path: Path,
) -> None:
    # A bundle packs the run folder's cells/ as logs/cells/: `report RUN -o FILE` of its
    # unpacked folder linked FILE to RUN/cells/..., which it does not have.
    from reprospec.commands.report import relinked

    run = tmp_path / "RUN"
    (run / "logs" / "cells" / "default" / "1").mkdir(parents=True)
    link = "[cells/default/1/native-stacks.txt](cells/default/1/native-stacks.txt)"
    assert relinked(link, run, tmp_path / "r.md") == (
        "[cells/default/1/native-stacks.txt](RUN/logs/cells/default/1/native-stacks.txt)"
    )
    assert relinked(link, run, run / "r.md") == (
        "[cells/default/1/native-stacks.txt](logs/cells/default/1/native-stacks.txt)"
    )
    (run / "cells").mkdir()  # a run folder: as it was
    assert relinked(link, run, run / "r.md") == link


def test_history_of_a_store_of_probes_alone_does_not_call_it_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reprospec isolate` (or `reprospec.isolate_spec`) first, then `history`: "no runs
    recorded yet", then "85 runs of isolate, ... left out": the store held 85 runs."""
    from reprospec.cli import main

    probes = [(f"20261121-2145{n:02d}-s-000{n}", RunOptions(purpose="isolate")) for n in range(3)]
    _finished_runs(tmp_path, probes, "local")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["history", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "no runs recorded yet besides the searches' probes"
    assert lines[1].startswith("3 runs of isolate, minimize, amplify or bisect left out")
    assert main(["history", "--out", str(tmp_path), "s"]) == 0
    assert capsys.readouterr().out.startswith(
        "no runs recorded yet for s besides the searches' probes\n"
    )
    # A store with none at all still says so plainly.
    assert main(["history", "--out", str(tmp_path), "other"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "no runs recorded yet for other"


def test_history_counts_the_cells_an_interrupted_run_never_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped by Ctrl-C stores its unreached cells as `not-run`, which the store's
    counts have no column for: `history` listed 4 cells as `2 reproduced` alone, and an
    interrupted isolate probe of one cell as `1`, `—`."""
    import json

    from reprospec.cli import main
    from reprospec.store.db import Store

    with Store(tmp_path) as store:
        store.begin_run("20261121-214500-s-0001", "s", "/s.yaml", "x", "local", {}, {})
        store.finish_run("20261121-214500-s-0001", "interrupted")
    (tmp_path / "runs" / "20261121-214500-s-0001").mkdir(parents=True)
    db = sqlite3.connect(tmp_path / "results.db")
    with db:
        db.executemany(
            "INSERT INTO cells VALUES ('20261121-214500-s-0001', ?, ?, '{}', '{}', ?, '', '{}')",
            [
                ("a", 0, "reproduced"),
                ("b", 1, "reproduced"),
                ("c", 2, "not-run"),
                ("d", 3, "not-run"),
            ],
        )
    db.close()
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["history", "--out", str(tmp_path)]) == 0
    assert "2 reproduced, 2 not run" in capsys.readouterr().out
    assert main(["history", "--out", str(tmp_path), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["verdicts"]["not_run"] == 2
    assert row["verdicts"]["reproduced"] == 2


@pytest.mark.parametrize("given", ["", "isolate.md"])
def test_report_of_a_search_folder_names_its_answer(
    tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report .reprospec/isolate/ID` said "is not a run folder: it has no results.json, nor
    anything a run writes": the folder holds isolate's answer, isolate.md, not a run."""
    from reprospec.cli import main

    folder = tmp_path / "isolate" / "s-0123456789"
    folder.mkdir(parents=True)
    (folder / "isolate.json").write_text("{}")
    (folder / "isolate.md").write_text("## Isolation\n")
    target = folder / given if given else folder
    assert main(["report", str(target), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"reprospec: {target} is " in err
    assert "not a run" in err
    assert "the same `reprospec isolate` command prints again" in err
    assert "nor anything a run writes" not in err


@pytest.mark.parametrize("verb", ["compare", "merge", "bundle"])
def test_compare_merge_and_bundle_of_a_search_folder_name_its_answer(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """As report's: compare, merge and bundle of `.reprospec/amplify/ID` still said "is not
    a run folder: it has no results.json, nor anything a run writes". merge's message is
    prefixed with the RUN it names (`RUN 1 of 1 (a shard run to merge): `)."""
    from reprospec.cli import main

    folder = tmp_path / "amplify" / "s-0123456789"
    folder.mkdir(parents=True)
    (folder / "amplify.json").write_text("{}")
    (folder / "amplify.md").write_text("## Amplification\n")
    second = {"compare": [str(folder)], "merge": [], "bundle": ["-o", str(tmp_path / "b.tgz")]}
    argv = [verb, str(folder), *second[verb]]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    named = "RUN 1 of 1 (a shard run to merge): " if verb == "merge" else ""
    assert f"reprospec: {named}{folder} is an amplify folder, not a run: its answer is " in err
    assert "the same `reprospec amplify` command prints again" in err
    assert "nor anything a run writes" not in err


@pytest.mark.parametrize(
    ("verb", "probes"),
    [
        ("isolate", ", such as one of the probe runs isolate.md lists"),
        ("amplify", ", such as one of the probe runs amplify.md lists"),
        ("bisect", ", such as one of the probe runs bisect.md lists"),
        ("minimize", "; `reprospec history --searches` lists its probe runs"),
    ],
)
def test_a_search_folders_refusal_says_where_its_probe_runs_are(
    tmp_path: Path, verb: str, probes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The refusal sent the user to "one of the probe runs minimize.md lists", but
    minimize.md lists no run: `history --searches` does."""
    from reprospec.cli import main

    folder = tmp_path / verb / "s-0123456789"
    folder.mkdir(parents=True)
    (folder / f"{verb}.json").write_text("{}")
    assert main(["report", str(folder), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(f"its id or `latest`{probes}")


def test_history_searches_says_what_a_probe_found_not_its_rateless_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search's probe is judged by its cell's expect without the rate: an isolate probe
    that failed as expected in 2 of 5 attempts was listed "1 not reproduced", as was one of
    the passing side that never failed. Each says what it found, in the search's terms."""
    import json

    from reprospec.cli import main

    runs = [
        ("20261121-214500-s-0001", RunOptions(purpose="isolate", probe="mode=fast")),
        ("20261121-214501-s-0002", RunOptions(purpose="isolate", probe="mode=safe")),
        ("20261121-214502-s-0003", RunOptions()),
        ("20261121-214503-s-0004", RunOptions(purpose="isolate", probe="mode=slow")),
    ]
    _finished_runs(tmp_path, runs, "local")
    # (run, matched per attempt; None: an infra-error), each run one cell, not reproduced.
    attempts: dict[str, list[bool | None]] = {
        "20261121-214500-s-0001": [True, False, True, False, False],
        "20261121-214501-s-0002": [False, False, None],
        "20261121-214502-s-0003": [True, False],
        "20261121-214503-s-0004": [None, None],
    }
    db = sqlite3.connect(tmp_path / "results.db")
    with db:
        for run_id, matched in attempts.items():
            verdict = "infra-error" if set(matched) == {None} else "not-reproduced"
            db.execute(
                f"INSERT INTO cells VALUES ('{run_id}', 'c', 0, '{{}}', '{{}}', '{verdict}',"
                " '', '{}')"
            )
            db.executemany(
                "INSERT INTO attempts (run_id, cell_id, attempt, started, finished, duration_s,"
                " matched, mismatches, gpu_slot, infra_error, logs, warnings)"
                " VALUES (?, 'c', ?, '', '', 0.1, ?, '[]', '', ?, '{}', '[]')",
                [
                    (run_id, n, bool(m), "no python" if m is None else None)
                    for n, m in enumerate(matched, 1)
                ],
            )
    db.close()
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["history", "--searches", "--out", str(tmp_path)]) == 0
    cells = [line.split("│") for line in capsys.readouterr().out.splitlines() if "│ 2026" in line]
    verdicts = {cell[1].strip(): cell[-2].strip() for cell in cells}
    assert verdicts == {
        "20261121-214500-s-0001": "failed as expected in 2 of 5",
        "20261121-214501-s-0002": "failed as expected in 0 of 2; 1 infra-error",
        # A person's run: its cells' verdicts, judged with the rate.
        "20261121-214502-s-0003": "1 not reproduced",
        # A probe none of whose attempts ran: its cells' verdicts.
        "20261121-214503-s-0004": "1 infra-error",
    }
    assert main(["history", "--searches", "--out", str(tmp_path), "--format", "json"]) == 0
    listed = {row["run_id"]: row for row in json.loads(capsys.readouterr().out)}
    found = {k: (row["failed_as_expected"], row["ran"]) for k, row in listed.items()}
    assert found == {
        "20261121-214500-s-0001": (2, 5),
        "20261121-214501-s-0002": (0, 2),
        "20261121-214502-s-0003": (None, None),
        # A probe all of whose attempts were infra-errors: its counts, 0 (they read null,
        # as for a run that is no probe; review).
        "20261121-214503-s-0004": (0, 0),
    }
