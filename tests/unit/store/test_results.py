"""results.json: the CLI.md shape, round trips, the run folder, run ids, compare and merge."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.results import (
    AttemptResult,
    CellResult,
    ChainLink,
    GroupMember,
    NotRun,
    Outcome,
    Rate,
    RunResult,
    Verdict,
    VerdictKind,
)
from reprospec.core.words import outcome_phrase
from reprospec.errors import FatalError, UsageError
from reprospec.report.markdown import reproduce_command
from reprospec.spec.checks.cells import unread_axis_message
from reprospec.store.compare import compare
from reprospec.store.digests import FILES_FIELD as FILES
from reprospec.store.digests import INHERITED_FIELD, variable_digests
from reprospec.store.merge import merge
from reprospec.store.resultsjson import (
    find_run,
    load_run,
    new_run_id,
    outcome_from_dict,
    outcome_to_dict,
    run_dir_of,
    run_from_dict,
    run_json,
    run_to_dict,
    write_run,
)
from tests.support.runs import (
    RESULTS_JSON_KEYS,
    SEGFAULT_SPEC,
    error_run,
    hang_run,
    infra_run,
    pool_hang_run,
    segfault_matrix,
)

RUNS = [segfault_matrix, hang_run, error_run, infra_run, pool_hang_run]


# Any: the JSON as a reader of the file indexes into it, unchecked.
def as_file(run: RunResult) -> Any:  # noqa: ANN401
    """results.json as written and read back: what a reader indexes into."""
    return json.loads(json.dumps(run_to_dict(run)))


@pytest.mark.parametrize("build", RUNS)
def test_round_trip(build: Callable[[], RunResult]) -> None:
    run = build()
    data = json.loads(json.dumps(run_to_dict(run)))
    assert run_from_dict(data) == run


def test_results_json_has_the_contract_keys() -> None:
    data = as_file(segfault_matrix())
    assert set(RESULTS_JSON_KEYS) <= set(data)
    assert data["format"] == 1
    assert data["spec"]["name"] == "val-segfault"
    assert data["spec"]["path"] == "specs/segfault.yaml"
    assert data["summary"] == {
        "cells": 4,
        "reproduced": 1,
        "not_reproduced": 3,
        "undecided": 0,
        "infra_error": 0,
    }
    cell = data["cells"][3]
    assert cell["id"] == "num_workers=2,pin_memory=true"
    assert cell["matrix"] == {"num_workers": 2, "pin_memory": True}
    assert cell["verdict"] == "reproduced"
    assert cell["expected"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "phase": "validation",
        "step": "6..8",
    }
    assert set(cell["rate"]) == {"matched", "attempts", "low", "high"}
    attempt = cell["attempts"][0]
    assert {"attempt", "duration_s", "outcome", "logs"} <= set(attempt)
    assert set(attempt["outcome"]) >= {
        "kind",
        "signal",
        "exit_code",
        "where",
        "exception",
        "message",
        "phase",
        "step",
        "stage",
        "module",
        "signature",
    }
    assert attempt["outcome"]["where"] == "worker"
    assert attempt["outcome"]["step"] == 7


def test_infra_error_attempt_has_null_outcome() -> None:
    attempt = as_file(infra_run())["cells"][0]["attempts"][0]
    assert attempt["outcome"] is None
    assert attempt["infra_error"] == "docker engine not reachable"
    # Read back, the attempt is NotRun with its reason, as the engine made it.
    loaded = run_from_dict(run_to_dict(infra_run())).cells[0].attempts[0]
    assert loaded.outcome == NotRun("docker engine not reachable")
    assert loaded == infra_run().cells[0].attempts[0]


def test_old_results_get_their_excerpt_from_the_logs(tmp_path: Path) -> None:
    run = segfault_matrix()
    data = as_file(run)
    crash = data["cells"][3]["attempts"][0]
    assert "ERROR: Unexpected segmentation fault" in crash.pop("excerpt")  # as older versions wrote
    run_dir = tmp_path / "runs" / run.run_id
    logs = run_dir / crash["logs"]
    logs.mkdir(parents=True)
    (logs / "stderr.log").write_text("noise\nTraceback (most recent call last):\nEOFError\n")
    (run_dir / "results.json").write_text(json.dumps(data))
    loaded = load_run(run_dir)
    excerpt = loaded.cells[3].attempts[0].excerpt
    assert excerpt == "noise\nTraceback (most recent call last):\nEOFError"
    assert loaded.cells[0].attempts[0].excerpt is None  # a pass has nothing to quote


def test_a_dead_childs_stack_is_a_key_of_its_own_and_old_files_load_without_it() -> None:
    """A hang after a child's death keeps the child's stack apart from the hung ones'
    (`dead_child_stack`); a results.json written before it had none, and still loads."""
    run = pool_hang_run()
    attempt = as_file(run)["cells"][0]["attempts"][0]
    assert attempt["dead_child_stack"].startswith("Fatal Python error: Segmentation fault")
    assert attempt["stack"].startswith("--- pid 4200 (python pool.py) ---")
    data = as_file(run)
    del data["cells"][0]["attempts"][0]["dead_child_stack"]  # as older versions wrote it
    loaded = run_from_dict(data).cells[0].attempts[0]
    assert loaded == replace(run.cells[0].attempts[0], dead_child_stack=None)


def test_an_oom_kill_is_a_key_only_where_it_was_seen_and_old_files_load_without_it() -> None:
    run = segfault_matrix()
    first = run.cells[0].attempts[0]
    assert isinstance(first.outcome, Outcome)
    assert "oom_killed" not in as_file(run)["cells"][0]["attempts"][0]["outcome"]
    killed = replace(first.outcome, kind="crash", signal="SIGKILL", oom_killed=True)
    cells = (replace(run.cells[0], attempts=(replace(first, outcome=killed),)),)
    data = as_file(replace(run, cells=cells))
    assert data["cells"][0]["attempts"][0]["outcome"]["oom_killed"] is True
    assert run_from_dict(data).cells[0].attempts[0].outcome == killed
    del data["cells"][0]["attempts"][0]["outcome"]["oom_killed"]  # as older versions wrote it
    loaded = run_from_dict(data).cells[0].attempts[0].outcome
    assert loaded == replace(killed, oom_killed=False)


def test_a_native_hang_place_is_kept_and_old_files_load_without_it() -> None:
    # A C program's hang keeps where its native stacks show it sat (`hung_native`): what the
    # run's line and report say, and what `report` of results.json must say again.
    run = hang_run()
    first = run.cells[0].attempts[0]
    assert isinstance(first.outcome, Outcome)
    assert "hung_native" not in as_file(run)["cells"][0]["attempts"][0]["outcome"]
    placed = replace(first.outcome, hung_in=None, hung_native="clock_nanosleep@libc<-main@nap")
    cells = (replace(run.cells[0], attempts=(replace(first, outcome=placed),)),)
    data = as_file(replace(run, cells=cells))
    assert data["cells"][0]["attempts"][0]["outcome"]["hung_native"] == placed.hung_native
    assert run_from_dict(data).cells[0].attempts[0].outcome == placed
    del data["cells"][0]["attempts"][0]["outcome"]["hung_native"]  # as older versions wrote it
    loaded = run_from_dict(data).cells[0].attempts[0].outcome
    assert loaded == replace(placed, hung_native=None)
    # A launcher's child it sat in (`./nap` under `./pp`) is kept beside the place, and said.
    child = replace(placed, hung_process="./nap")
    cells = (replace(run.cells[0], attempts=(replace(first, outcome=child),)),)
    data = as_file(replace(run, cells=cells))
    assert data["cells"][0]["attempts"][0]["outcome"]["hung_process"] == "./nap"
    assert run_from_dict(data).cells[0].attempts[0].outcome == child
    said = "hang in a process it ran (nap), in clock_nanosleep@libc<-main@nap"
    assert outcome_phrase(child).startswith(said), outcome_phrase(child)
    # A blank one names nothing: `"hung_process": "  "` read back as `in a process it ran ()`.
    data["cells"][0]["attempts"][0]["outcome"]["hung_process"] = "  "
    blank = run_from_dict(data).cells[0].attempts[0].outcome
    assert blank == placed, blank
    assert isinstance(blank, Outcome)
    assert "a process it ran" not in outcome_phrase(blank), outcome_phrase(blank)


def test_a_group_ending_a_chain_has_its_members_stored_once() -> None:
    """`raise ExceptionGroup(...) from err`: the chain's last link is the group that ended
    the process, whose members are the outcome's; results.json (and the store, which keeps
    the same object) writes them once, in the outcome's `members`, and reads them back into
    the link. A group earlier in the chain keeps its own; an older file's twice-written
    members still load."""
    members = (GroupMember("KeyError", "'k'"), GroupMember("TypeError", "t"))
    inner = (GroupMember("OSError", "disk"),)
    group = ChainLink("ExceptionGroup", "many (2 sub-exceptions)", None, members)
    chain = (
        ChainLink("ExceptionGroup", "one (1 sub-exception)", "context", inner),
        ChainLink("ValueError", "root", "cause"),
        group,
    )
    outcome = Outcome(
        "error", exit_code=1, exception="ExceptionGroup", message=group.message,
        signature="error:ExceptionGroup[KeyError,TypeError]", chain=chain, members=members,
    )  # fmt: skip
    stored = outcome_to_dict(outcome)
    text = json.dumps(stored)
    assert text.count('"KeyError"') == 1, text
    assert text.count('"OSError"') == 1, text
    assert outcome_from_dict(json.loads(text)) == outcome
    assert outcome_from_dict(json.loads(text)).raised() == outcome.raised()
    # As written before: the last link with its members too.
    links = stored["chain"]
    assert isinstance(links, list)
    assert isinstance(links[-1], dict)
    links[-1]["members"] = [m.to_dict() for m in members]
    assert outcome_from_dict(stored) == outcome
    # A last link of the group's type with no members of its own stays so, read back: it
    # was given the outcome's (review).
    bare = replace(outcome, chain=(*chain[:-1], replace(group, members=())))
    assert outcome_from_dict(json.loads(json.dumps(outcome_to_dict(bare)))) == bare


def test_unknown_format_is_refused() -> None:
    data = run_to_dict(infra_run())
    data["format"] = 2
    with pytest.raises(FatalError, match="unsupported format 2"):
        run_from_dict(data)


@pytest.mark.parametrize("build", RUNS)
def test_results_json_is_written_one_cell_at_a_time_with_the_same_text(
    build: Callable[[], RunResult], tmp_path: Path
) -> None:
    run = build()
    whole = json.dumps(run_to_dict(run), indent=2, ensure_ascii=False) + "\n"
    written = write_run(tmp_path, run).read_text(encoding="utf-8")
    assert written == whole
    # A piece per cell, none holding two: the whole run is never one string.
    pieces = list(run_json(run))
    assert len(pieces) == len(run.cells) + 2
    no_cells = replace(run, cells=())
    assert "".join(run_json(no_cells)) == json.dumps(
        run_to_dict(no_cells), indent=2, ensure_ascii=False
    )


def test_write_and_load_run_folder(tmp_path: Path) -> None:
    run = error_run()
    run_dir = tmp_path / "runs" / run.run_id
    path = write_run(run_dir, run)
    assert path == run_dir / "results.json"
    assert (run_dir / "spec.yaml").read_text() == run.spec_text
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".")] == []
    # A run folder, its results.json, its id, and a unique prefix of its id all find it.
    for ref in (run_dir, path, run.run_id, run.run_id[:20]):
        assert load_run(ref, tmp_path) == run
    assert run_dir_of(run.run_id, tmp_path) == run_dir


def test_load_run_falls_back_to_spec_yaml(tmp_path: Path) -> None:
    run = hang_run()
    write_run(tmp_path, run)
    data = json.loads((tmp_path / "results.json").read_text())
    del data["spec"]["text"]
    (tmp_path / "results.json").write_text(json.dumps(data))
    assert load_run(tmp_path).spec_text == run.spec_text


def test_another_file_of_a_run_folder_names_its_run(tmp_path: Path) -> None:
    """`report RUN/report.md`, the file a user has open, was refused as "not JSON"."""
    run = hang_run()
    run_dir = tmp_path / "runs" / run.run_id
    write_run(run_dir, run)
    (run_dir / "report.md").write_text("<!-- reprospec:spec -->\n# hang\n")
    assert find_run(run_dir / "report.md", tmp_path) == run_dir / "results.json"
    assert load_run(run_dir / "report.md", tmp_path) == load_run(run_dir, tmp_path)
    # The same report away from its run folder names no run: said so, located.
    away = tmp_path / "report.md"
    away.write_text((run_dir / "report.md").read_text())
    with pytest.raises(FatalError, match=r"report\.md:1:1: .*a report away from its run folder"):
        load_run(away, tmp_path)


def test_a_bundle_given_as_a_run_is_named_a_bundle(tmp_path: Path) -> None:
    """`report b.tar.gz` said "'utf-8' codec can't decode byte 0x8b", and `merge` that the
    archive's folder was no run folder: a bundle is said a bundle, with what reruns it."""
    import gzip

    archive = tmp_path / "b.tar.gz"
    archive.write_bytes(gzip.compress(b"x"))
    for ref in (archive, str(archive), tmp_path / "B.TGZ"):
        Path(ref).write_bytes(archive.read_bytes())
        with pytest.raises(UsageError, match=r"is a bundle .*: `reprospec run \S+` reruns it"):
            load_run(ref, tmp_path)
        with pytest.raises(UsageError, match="is a bundle"):
            run_dir_of(ref, tmp_path)


def test_load_run_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no run 'nope'"):
        load_run("nope", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"has no results\.json"):
        load_run(tmp_path / "empty", tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(FatalError, match="cannot read results"):
        load_run(tmp_path / "bad.json")
    # A spec given where a run is meant: located, and saying what a RUN is.
    (tmp_path / "spec.yaml").write_text("reprospec: 1\nname: x\n")
    with pytest.raises(
        FatalError, match=r"spec\.yaml:1:1: cannot read results: not JSON .*a RUN is"
    ):
        load_run(tmp_path / "spec.yaml")
    (tmp_path / "other.json").write_text('{"format": 1}')
    with pytest.raises(FatalError, match="not a reprospec results file"):
        load_run(tmp_path / "other.json")
    # Any JSON of another format: the error names the file given.
    (tmp_path / "package.json").write_text('{"name": "x"}')
    with pytest.raises(FatalError, match=r"package\.json: unsupported format None"):
        load_run(tmp_path / "package.json")
    for suffix in ("a", "b"):
        write_run(tmp_path / "runs" / f"20261121-x-{suffix}", infra_run())
    with pytest.raises(UsageError, match="ambiguous"):
        find_run("20261121-x", tmp_path)


def test_a_folder_without_results_says_whether_it_is_a_run_at_all(tmp_path: Path) -> None:
    """`report /tmp` read "/tmp has no results.json (the run may still be going, or was
    killed)", as if /tmp were a run."""
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError) as caught:
        find_run(plain, tmp_path / "store")
    assert str(caught.value) == (
        f"{plain} is not a run folder: it has no results.json, nor anything a run writes"
    )
    # A run's folder whose engine was killed before results.json (its engine.json, cells/).
    killed = tmp_path / "store" / "runs" / "20261205-120000-x-0000"
    (killed / "cells").mkdir(parents=True)
    with pytest.raises(UsageError) as caught:
        find_run(killed, tmp_path / "elsewhere")
    assert str(caught.value) == (
        f"{killed} has no results.json (the run may still be going, or was killed)"
    )
    # The store itself: a run in it is named by id or `latest`, with --out.
    store = tmp_path / "store"
    with pytest.raises(UsageError) as caught:
        find_run(store, tmp_path / "elsewhere")
    assert str(caught.value) == (
        f"{store} is a store, not a run folder: name one of its runs, by id or as latest, "
        f"with --out {store}"
    )


def test_new_run_id_sorts_by_time_and_is_unique() -> None:
    first = new_run_id("val-segfault", datetime(2026, 11, 21, 21, 45, 12))
    assert re.fullmatch(r"20261121-214512-val-segfault-[0-9a-f]{4}", first)
    later = new_run_id("a", datetime(2026, 11, 21, 21, 45, 13))
    assert sorted([later, first]) == [first, later]
    assert len({new_run_id("x") for _ in range(50)}) > 45


def section(environment: Mapping[str, JsonValue], name: str) -> dict[str, JsonValue]:
    found = environment[name]
    assert isinstance(found, dict)
    return found


def test_compare_reports_verdict_and_environment_changes() -> None:
    a = segfault_matrix()
    cells = list(a.cells)
    cells[0] = replace(cells[0], verdict="reproduced")
    b = replace(
        a,
        run_id="b",
        cells=tuple(cells[:3]),
        environment={
            **a.environment,
            "torch": {**section(a.environment, "torch"), "version": "2.5.0"},
            "memory": {**section(a.environment, "memory"), "available": 1},
            "packages": {"torch": "2.5.0"},
        },
    )
    diff = compare(a, b)
    assert diff["changed"] == [
        {
            "cell": "num_workers=0,pin_memory=false",
            "before": "not-reproduced",
            "after": "reproduced",
        }
    ]
    assert diff["only_a"] == ["num_workers=2,pin_memory=true"]
    assert diff["only_b"] == []
    assert {"key": "torch.version", "a": "2.13.0+cpu", "b": "2.5.0"} in diff["environment"]
    assert {"key": "packages.numpy", "a": "2.1.0", "b": None} in diff["environment"]
    # Free memory changes from run to run on any machine: not a difference worth showing.
    assert all(row["key"] != "memory.available" for row in diff["environment"])
    assert compare(a, a)["changed"] == []
    assert compare(a, a)["environment"] == []


def test_compare_matches_cells_by_their_values_whatever_the_order_of_the_axes() -> None:
    """The spec of the second run lists `pin_memory` before `num_workers`: its cell ids are
    `pin_memory=true,num_workers=2`, and compare said "no cell in both runs"."""
    a = segfault_matrix()

    def swapped(result: CellResult, verdict: VerdictKind) -> CellResult:
        matrix = dict(reversed(list(result.cell.matrix.items())))
        cell = Cell(",".join(f"{k}={json.dumps(v)}" for k, v in matrix.items()), 0, matrix)
        return replace(result, cell=replace(cell, index=result.cell.index), verdict=verdict)

    b = replace(
        a,
        run_id="b",
        cells=tuple(swapped(c, "undecided" if c.cell.index == 0 else c.verdict) for c in a.cells),
    )
    assert b.cells[3].cell.id == "pin_memory=true,num_workers=2"
    diff = compare(a, b)
    assert diff["in_both"] == 4
    assert diff["only_a"] == diff["only_b"] == []
    assert diff["changed"] == [
        {
            "cell": "num_workers=0,pin_memory=false",
            "before": a.cells[0].verdict,
            "after": "undecided",
        }
    ]


def _count_judge(_expected: Expectation, attempts: Sequence[AttemptResult]) -> Verdict:
    matched = sum(a.matched for a in attempts)
    kind: VerdictKind = "reproduced" if matched == len(attempts) else "not-reproduced"
    return Verdict(kind, f"{matched}/{len(attempts)} matched", Rate(matched, len(attempts), 0, 1))


def _shard(run: RunResult, keep: set[tuple[str, int]], run_id: str) -> RunResult:
    """The part of `run` a shard holding those (cell, attempt) pairs would have produced."""
    cells = []
    for cell in run.cells:
        attempts = tuple(a for a in cell.attempts if (cell.cell.id, a.attempt) in keep)
        if attempts:
            cells.append(replace(cell, attempts=attempts))
    return replace(run, run_id=run_id, cells=tuple(cells))


def test_merge_shards_gives_the_unsharded_run() -> None:
    whole = hang_run()
    cell_id = whole.cells[0].cell.id
    shards = [
        _shard(whole, {(cell_id, 1), (cell_id, 3)}, "s1"),
        _shard(whole, {(cell_id, 2)}, "s2"),
    ]
    merged = merge(list(reversed(shards)), run_id="m", judge_cell=_count_judge)
    assert merged.run_id == "m"
    assert merged.cells[0].attempts == whole.cells[0].attempts
    assert merged.cells[0].verdict == "not-reproduced"  # rejudged by the given judge
    # Cells held by one shard only are kept as they are, in matrix order.
    matrix = segfault_matrix()
    halves = [
        _shard(matrix, {(c.cell.id, 1) for c in matrix.cells[2:]}, "s1"),
        _shard(matrix, {(c.cell.id, 1) for c in matrix.cells[:2]}, "s2"),
    ]
    assert merge(halves).cells == matrix.cells


def test_a_shard_without_the_attempts_it_was_given_is_refused_never_judged() -> None:
    # A shard's results.json edited to drop a cell merged without it (`3/3 cells
    # reproduced` of a 4-cell spec), and a cell left with no attempt kept its stored
    # verdict, `reproduced` on nothing. Shard K of N holds every N-th attempt from the K-th.
    whole = segfault_matrix()
    first = replace(whole, run_id="s1", cells=whole.cells[0::2], shard="1/2")
    second = replace(whole, run_id="s2", cells=whole.cells[1::2], shard="2/2")
    assert [c.cell.id for c in merge([first, second]).cells] == [c.cell.id for c in whole.cells]
    dropped = replace(second, cells=second.cells[1:])
    with pytest.raises(UsageError) as refused:
        merge([first, dropped])
    assert str(refused.value).startswith(
        "cannot merge shard 2/2 (s2): it has no result of cell "
        "'num_workers=0,pin_memory=true' attempt 1, where --shard 2/2 of this spec was "
        "given 2 attempts: its results.json was cut short or edited"
    )
    emptied = replace(second, cells=(replace(second.cells[0], attempts=()), second.cells[1]))
    with pytest.raises(UsageError, match="it has no result of cell"):
        merge([first, emptied])
    # A cell in the other shard's share: not its own attempt.
    swapped = replace(first, cells=whole.cells[0:2])
    with pytest.raises(UsageError, match=r"shard 1/2 \(s1\): it holds cell"):
        merge([swapped, second])


def test_a_shards_resume_is_not_the_merged_runs() -> None:
    # The merged run kept the first shard's `resumed`: its report said "Resumed
    # (`reprospec run --resume MERGED-ID`)", an id no store holds, and only in that order.
    from reprospec.core.resumed import Resumed

    matrix = segfault_matrix()
    halves = [
        _shard(matrix, {(c.cell.id, 1) for c in matrix.cells[2:]}, "s1"),
        _shard(matrix, {(c.cell.id, 1) for c in matrix.cells[:2]}, "s2"),
    ]
    halves[0] = replace(halves[0], resumed=Resumed(1, 1, "interrupted", "2026-12-01T09:28:58"))
    assert merge(halves).resumed is None
    assert merge(list(reversed(halves))).resumed is None


def test_a_cell_stop_on_stopped_in_a_shard_says_so_merged() -> None:
    """Merge judged a cell again on all its shards' attempts without the note a
    shard's cell had (`stopped by run.stop_on ...`): its unrun attempts looked lost."""
    whole = hang_run()
    cell_id = whole.cells[0].cell.id
    # Of 4 planned attempts, shard 1 held 1 and 3 and stop_on stopped it after 1; shard 2
    # ran both of its own, 2 and 4.
    first = _shard(whole, {(cell_id, 1)}, "s1")
    stopped = replace(
        first.cells[0],
        reason="0/1 matched (stopped by run.stop_on: first-miss after 1 of 2 attempts)",
    )
    shards = [replace(first, cells=(stopped,)), _shard(whole, {(cell_id, 2)}, "s2")]
    merged = merge(shards, judge_cell=_count_judge)
    assert merged.cells[0].reason == (
        "1/2 matched (stopped by run.stop_on: first-miss after 2 of 3 attempts)"
    )
    # No shard stopped: nothing is said.
    plain = merge([first, shards[1]], judge_cell=_count_judge)
    assert plain.cells[0].reason == "1/2 matched"


def test_merged_shards_are_one_unsharded_run_to_compare() -> None:
    # The options are what `compare` diffs: the first shard's `shard` kept in the merged
    # run read `shard: (none) -> [1, 2]` against the unsharded run it equals.
    whole = replace(
        hang_run(),
        command_line="reprospec run specs/hang.yaml -j 2",
        options={"jobs": 2, "matrix_filters": [], "shard": None},
    )
    cell_id = whole.cells[0].cell.id
    shards = [
        replace(
            _shard(whole, attempts, f"s{n}"),
            shard=f"{n}/2",
            command_line=f"reprospec run specs/hang.yaml -j 2 --shard {n}/2",
            options={**whole.options, "shard": [n, 2]},
        )
        for n, attempts in ((1, {(cell_id, 1), (cell_id, 3)}), (2, {(cell_id, 2)}))
    ]
    merged = merge(shards, judge_cell=_count_judge)
    assert merged.options["shard"] is None
    assert merged.command_line == whole.command_line
    assert compare(whole, merged)["options"] == []


def test_shards_run_at_other_jobs_merge_into_a_run_of_none() -> None:
    # Shards run at `-j 1` and `-j 8` merged as a `-j 1` run: the first's options and
    # command line, so the report's rerun and How to reproduce said `-j 1`. A `-j 4` and a
    # `--shard` inside a quoted word are that word's text: taken out, the rerun line set
    # another env than the one that ran.
    quoted = "--set 'environment.env.MAKEFLAGS=-k -j 4 --shard 1/2 -l'"
    whole = replace(
        hang_run(),
        command_line="reprospec run specs/hang.yaml",
        options={"matrix_filters": [], "shard": None},
    )
    cell_id = whole.cells[0].cell.id
    shards = [
        replace(
            _shard(whole, attempts, f"s{n}"),
            shard=f"{n}/2",
            command_line=f"reprospec run specs/hang.yaml {quoted} {jobs} --shard {n}/2",
            options={**whole.options, "shard": [n, 2], "jobs": int(jobs[-1])},
        )
        for n, jobs, attempts in (
            (1, "-j 1", {(cell_id, 1), (cell_id, 3)}),
            (2, "--jobs=8", {(cell_id, 2)}),
        )
    ]
    merged = merge(shards, judge_cell=_count_judge)
    assert merged.options["jobs"] is None
    assert merged.command_line == f"reprospec run specs/hang.yaml {quoted}"
    # The same `-j` in every shard is kept.
    same = [replace(s, options={**s.options, "jobs": 1}) for s in shards]
    assert merge(same, judge_cell=_count_judge).options["jobs"] == 1
    # A pytest session's: its line is rebuilt from the options.
    pytest_runs = [
        replace(
            s, command_line=f"pytest --reprospec {n}", options={**s.options, "purpose": "pytest"}
        )
        for n, s in enumerate(shards)
    ]
    assert "-j" not in merge(pytest_runs, judge_cell=_count_judge).command_line.split()


def test_shards_run_at_other_jobs_are_compared_as_run_at_theirs() -> None:
    # Merged, shards run at `-j 1` and `-j 8` stored `jobs: None`, which compare read as the
    # spec's: `jobs: 1 -> (none: the spec's run.parallel)`, no `-j` that ran.
    from reprospec.report.compare import lines

    whole = replace(hang_run(), options={"matrix_filters": [], "shard": None, "jobs": 1})
    cell_id = whole.cells[0].cell.id
    shards = [
        replace(_shard(whole, attempts, f"s{n}"), options={**whole.options, "jobs": jobs})
        for n, jobs, attempts in ((1, 1, {(cell_id, 1), (cell_id, 3)}), (2, 8, {(cell_id, 2)}))
    ]
    merged = merge(shards, judge_cell=_count_judge)
    assert merged.options["jobs"] is None
    assert merged.options["merged_jobs"] == [1, 8]
    said = lines(compare(whole, merged), "hang")
    assert "  jobs: 1 -> (none: merged from runs at -j 1, -j 8)" in said
    assert not any("merged_jobs" in line or "the spec's run.parallel" in line for line in said)
    # Against a run at the spec's run.parallel (no `jobs` row: both none), and merged again.
    spec = replace(whole, options={"matrix_filters": [], "shard": None})
    said = lines(compare(merged, spec), "hang")
    assert "  jobs: (none: merged from runs at -j 1, -j 8) -> (none: the spec's run.parallel)" in (
        said
    )
    again = merge([merged, replace(_shard(spec, set(), "s3"), options=spec.options)])
    assert again.options["merged_jobs"] == [1, 8, None]
    # Shards at one `-j` are a run at it: no merged `-j`s.
    same = merge([replace(s, options={**s.options, "jobs": 1}) for s in shards])
    assert "merged_jobs" not in same.options


def test_merged_runs_of_other_cells_name_every_cell_in_their_filters() -> None:
    # One CI job per cell (`plan --format github`: `-m a=1 -m b=x` each), merged: the
    # command that reruns the merged run is not the first job's, which runs one cell.
    matrix = segfault_matrix()
    jobs = []
    for n, cell in enumerate(matrix.cells):
        workers, pin = cell.cell.matrix["num_workers"], cell.cell.matrix["pin_memory"]
        filters: list[JsonValue] = [f"num_workers={workers}", f"pin_memory={str(pin).lower()}"]
        jobs.append(
            replace(
                _shard(matrix, {(cell.cell.id, 1)}, f"job{n}"),
                command_line="reprospec run specs/segfault.yaml "
                + " ".join(f"-m{f}" for f in filters)
                + " -j 2",
                options={"jobs": 2, "matrix_filters": filters, "shard": None},
            )
        )
    merged = merge(jobs)
    every = ["num_workers=0", "num_workers=2", "pin_memory=false", "pin_memory=true"]
    assert merged.options["matrix_filters"] == every
    assert merged.command_line == (
        "reprospec run specs/segfault.yaml -m num_workers=0 -m num_workers=2 "
        "-m pin_memory=false -m pin_memory=true -j 2"
    )
    # An axis one run left open stays open: `-m num_workers=0` and `-m pin_memory=true`
    # together would select one cell, not the two runs' three.
    a = replace(jobs[0], options={"matrix_filters": ["num_workers=0"]})
    a = replace(a, cells=matrix.cells[:2], command_line="reprospec run s.yaml -m num_workers=0")
    b = replace(jobs[3], options={"matrix_filters": ["pin_memory=true"]})
    b = replace(b, command_line="reprospec run s.yaml --matrix pin_memory=true")
    both = merge([a, b])
    assert both.options["matrix_filters"] == []
    assert both.command_line == "reprospec run s.yaml"
    # A spec (a bundle) named with a byte not UTF-8, as shell_join records it: shlex read
    # `$'b\xfe.tar.gz'` as `$` and a quoted word, `'$b\xfe.tar.gz'` rejoined.
    a = replace(a, command_line="reprospec run $'b\\xfe.tar.gz' -m num_workers=0")
    b = replace(b, command_line="reprospec run $'b\\xfe.tar.gz' --matrix pin_memory=true")
    assert merge([a, b]).command_line == "reprospec run $'b\\xfe.tar.gz'"
    # `--mat X` (argparse's cut of --matrix) is a filter too: it was kept beside the merged
    # run's `-m`s, a filter of the first run's its rerun line still applied.
    a = replace(a, command_line="reprospec run s.yaml --mat num_workers=0 --ma=x=1")
    b = replace(b, command_line="reprospec run s.yaml --m pin_memory=true")
    assert merge([a, b]).command_line == "reprospec run s.yaml"


def test_merged_pytest_runs_keep_pytests_command_line() -> None:
    """The pytest plugin makes one run per cell, recording the pytest command line, whose
    `-m` is a marker expression: their merge appended `-m num_workers=0 ...` to it, which
    pytest refuses, and took the user's `-m segfault` out."""
    matrix = segfault_matrix()
    line = "pytest --reprospec specs/segfault.yaml -m segfault"
    runs = [
        replace(
            _shard(matrix, {(cell.cell.id, 1)}, f"p{n}"),
            command_line=line,
            options={"purpose": "pytest", "matrix_filters": [cell.cell.id.split(",")[0]]},
        )
        for n, cell in enumerate(matrix.cells[:2])
    ]
    assert merge(runs).command_line == line
    # Two pytest sessions (`-k` for each cell): the merged run's cells are no one's line.
    other = replace(runs[1], command_line=line + " -k pin_memory:true")
    assert merge([runs[0], other]).command_line == (
        f"reprospec run {matrix.spec_path} -m num_workers=0"
    )
    # Their options are the command's: 5 attempts on venv were recorded as 1 run locally.
    ran: dict[str, JsonValue] = {
        "purpose": "pytest",
        "runner": "venv",
        "repeat": 5,
        "python": "/opt/py 3/bin/python",
        "gpus": "0,1",
        "overrides": ["run.timeout=90s"],
    }
    sessions = [replace(run, options={**run.options, **ran}) for run in (runs[0], other)]
    merged = merge(sessions)
    assert merged.command_line == (
        f"reprospec run {matrix.spec_path} --runner venv -m num_workers=0 --repeat 5 "
        "--set run.timeout=90s --gpus 0,1"
    )
    # `--python` is this machine's path: How to reproduce adds it, once.
    assert reproduce_command(merged) == merged.command_line + " --python '/opt/py 3/bin/python'"


def test_merged_runs_made_from_python_are_reproduced_from_the_merged_options() -> None:
    """Two API runs (no command line) of other cells: the merged run's command was their
    merged `-m`s alone, `-m num_workers=0 -m num_workers=2`, not a command at all."""
    matrix = segfault_matrix()
    runs = [
        replace(
            _shard(matrix, {(cell.cell.id, 1)}, f"p{n}"),
            command_line="",
            options={"repeat": 2, "matrix_filters": [cell.cell.id.split(",")[1]]},
        )
        for n, cell in enumerate(matrix.cells[:2])
    ]
    merged = merge(runs)
    assert merged.command_line == ""
    assert reproduce_command(merged) == (
        f"reprospec run {matrix.spec_path} -m pin_memory=false -m pin_memory=true --repeat 2"
    )


def test_merge_refuses_different_specs_and_duplicate_attempts() -> None:
    with pytest.raises(UsageError, match="different specs"):
        merge([segfault_matrix(), hang_run()])
    # A shard of one spec and a run of another: other specs, not "sharded and unsharded".
    with pytest.raises(UsageError, match="different specs"):
        merge([replace(segfault_matrix(), shard="1/2"), hang_run()])
    with pytest.raises(UsageError, match=r"run \S+ is given more than once"):
        merge([hang_run(), hang_run()], judge_cell=_count_judge)
    # `merge OUT/runs/*` after a first merge there: the merged run beside its runs, named.
    whole = segfault_matrix()
    a = replace(whole, run_id="a", cells=whole.cells[:2])
    b = replace(whole, run_id="b", cells=whole.cells[2:])
    merged = merge([a, b], run_id="m")
    assert merged.options["merged_from"] == ["a", "b"]
    with pytest.raises(
        UsageError, match=r"is in both run a and run m: run m is a run merge made \(of a, b\)"
    ):
        merge([a, b, merged])
    # Two full runs of one spec: no merge made either, and none is said to.
    twice = [replace(whole, run_id="c"), replace(whole, run_id="d")]
    with pytest.raises(UsageError, match="is in both run c and run d: runs of the same") as info:
        merge(twice)
    assert "merge made" not in str(info.value)
    with pytest.raises(UsageError, match="at least one run"):
        merge([])


def test_merge_refuses_runs_one_command_did_not_make() -> None:
    """Shards of `-m p=0` and `-m p=1` merged into half of each cell's attempts,
    and runs of `--repeat 2` and `--repeat 4` into a `--repeat 4` run, both silently."""
    whole = replace(hang_run(), options={"matrix_filters": [], "shard": None, "repeat": 3})
    cell_id = whole.cells[0].cell.id
    shards = [
        replace(_shard(whole, attempts, f"s{n}"), shard=f"{n}/2", options={**whole.options})
        for n, attempts in ((1, {(cell_id, 1), (cell_id, 3)}), (2, {(cell_id, 2)}))
    ]
    other_cells = replace(shards[1], options={**whole.options, "matrix_filters": ["p=1"]})
    with pytest.raises(UsageError, match=r"other -m \(none and p=1\)"):
        merge([shards[0], other_cells], judge_cell=_count_judge)
    more = replace(shards[1], options={**whole.options, "repeat": 4})
    with pytest.raises(UsageError, match=r"other --repeat \(3 and 4\)"):
        merge([shards[0], more], judge_cell=_count_judge)
    # A `--set` is named as such, not as "different specs" (its text differs too).
    settings = replace(shards[1], options={**whole.options, "overrides": ["run.repeat=2"]})
    with pytest.raises(UsageError, match=r"other --set \(none and run.repeat=2\)"):
        merge([shards[0], settings], judge_cell=_count_judge)
    # The same filters and settings in another order, and another -j, are one command's.
    alike: dict[str, JsonValue] = {
        "matrix_filters": ["a=1", "b=2"],
        "overrides": ["x=1", "y=2"],
        "jobs": 1,
    }
    again: dict[str, JsonValue] = {
        "matrix_filters": ["b=2", "a=1"],
        "overrides": ["y=2", "x=1"],
        "jobs": 4,
    }
    merged = merge(
        [replace(shards[0], options=alike), replace(shards[1], options=again)],
        judge_cell=_count_judge,
    )
    assert [a.attempt for a in merged.cells[0].attempts] == [1, 2, 3]


def test_merge_compares_what_the_options_set_not_how_they_were_written() -> None:
    """`--set` lists compared as sets, where a later `--set` of a path overrides
    an earlier one; `--repeat 3` refused against a spec's own `repeat: 3` (the same
    attempts); and the same settings in another order refused as "different specs" (the
    stored text begins with the command's `--set`s, in its order)."""
    spec = "reprospec: 1\nname: hang\nrun: {repeat: 3, timeout: 90s}\n"
    whole = replace(
        hang_run(), spec_text=spec, options={"matrix_filters": [], "shard": None, "repeat": None}
    )
    cell_id = whole.cells[0].cell.id
    shards = [
        replace(_shard(whole, attempts, f"s{n}"), shard=f"{n}/2")
        for n, attempts in ((1, {(cell_id, 1), (cell_id, 3)}), (2, {(cell_id, 2)}))
    ]
    spec_own = replace(shards[1], options={**whole.options, "repeat": 3, "timeout": "1.5m"})
    merged = merge([shards[0], spec_own], judge_cell=_count_judge)
    assert [a.attempt for a in merged.cells[0].attempts] == [1, 2, 3]
    more = replace(shards[1], options={**whole.options, "repeat": 4})
    with pytest.raises(UsageError, match=r"other --repeat \(none: the spec's 3 and 4\)"):
        merge([shards[0], more], judge_cell=_count_judge)

    def resolved(run: RunResult, overrides: list[JsonValue]) -> RunResult:
        header = "# resolved from s.yaml with: " + " ".join(f"--set {o}" for o in overrides)
        return replace(
            run,
            spec_text=f"{header}\n{spec}",
            options={**whole.options, "overrides": overrides},
        )

    in_order = resolved(shards[0], ["x=1", "y=2"])
    merged = merge([in_order, resolved(shards[1], ["y=2", "x=1"])], judge_cell=_count_judge)
    assert [a.attempt for a in merged.cells[0].attempts] == [1, 2, 3]
    with pytest.raises(UsageError, match=r"other --set \(x=1 x=2 and x=2 x=1\)"):
        merge(
            [resolved(shards[0], ["x=1", "x=2"]), resolved(shards[1], ["x=2", "x=1"])],
            judge_cell=_count_judge,
        )


def test_merged_shards_warn_of_an_axis_read_by_nothing_as_the_unsharded_run() -> None:
    """`pin_memory` is read by nothing. Shard 1/2 ran its `false` cells and shard 2/2 its
    `true` ones: neither ran two of its values, so neither warned, and the merged run of
    copies of each other said nothing where `reprospec run` of the spec warns."""
    text = SEGFAULT_SPEC.replace(" --pin ${{ matrix.pin_memory }}", "")
    whole = replace(segfault_matrix(), spec_text=text)
    first = replace(whole, run_id="s1", cells=whole.cells[0::2], shard="1/2", warnings=())
    second = replace(whole, run_id="s2", cells=whole.cells[1::2], shard="2/2", warnings=())
    assert {str(c.cell.matrix["pin_memory"]) for c in first.cells} == {"False"}
    warned = [w for w in merge([first, second]).warnings if "read by nothing" in w]
    assert warned == [unread_axis_message("pin_memory")]
    # A warning a shard gave already is not given twice.
    said = replace(first, warnings=(unread_axis_message("pin_memory"),))
    assert merge([said, second]).warnings.count(unread_axis_message("pin_memory")) == 1
    # Read by the command: no warning.
    read = [replace(r, spec_text=SEGFAULT_SPEC) for r in (first, second)]
    assert not [w for w in merge(read).warnings if "read by nothing" in w]


def test_merge_warns_about_different_environments() -> None:
    whole = error_run()
    a = replace(whole, cells=whole.cells[:1])
    b = replace(
        whole,
        run_id="b",
        cells=whole.cells[1:],
        environment={**whole.environment, "os": {"kernel": "5.15"}},
    )
    merged = merge([a, b])
    assert any("kernel" in w for w in merged.warnings)
    # A captured variable too, now compare's row of its own (review: it went unsaid).
    env = {**whole.environment["env"], "OMP_NUM_THREADS": "8"}  # type: ignore[dict-item]
    c = replace(b, environment={**whole.environment, "env": env})
    (said,) = [w for w in merge([a, c]).warnings if "different environments" in w]
    assert said.endswith(": env.OMP_NUM_THREADS")
    # The GPUs each shard was given (a Slurm array's GRES: `0`, then `1`) are the run's GPU
    # list, which shards may differ in: every merge of a GPU job array warned of them.
    gpu_a = {**whole.environment["env"], "CUDA_VISIBLE_DEVICES": "0"}  # type: ignore[dict-item]
    gpu_b = {**whole.environment["env"], "CUDA_VISIBLE_DEVICES": "1"}  # type: ignore[dict-item]
    shard_a = replace(a, environment={**whole.environment, "env": gpu_a})
    shard_b = replace(b, environment={**whole.environment, "env": gpu_b})
    assert not [w for w in merge([shard_a, shard_b]).warnings if "CUDA_VISIBLE" in w]
    # GRES's GPU_DEVICE_ORDINAL (ROCm's, oneAPI's too) the attempts inherited, told by digest
    # under one key (a run recorded before the capture left them out): no difference either.
    key = b"k" * 32

    def inherited(run: RunResult, **values: str) -> RunResult:
        digests = variable_digests(key, values, values)
        return replace(run, environment={**whole.environment, INHERITED_FIELD: digests})

    ordinal = merge([inherited(a, GPU_DEVICE_ORDINAL="0"), inherited(b, GPU_DEVICE_ORDINAL="1")])
    assert not [w for w in ordinal.warnings if "different environments" in w]
    (said,) = [
        w
        for w in merge([inherited(a, MYAPP_MODE="0"), inherited(b, MYAPP_MODE="1")]).warnings
        if "different environments" in w
    ]
    assert said.endswith(": env.MYAPP_MODE")
    # A shard whose capture failed: said, where compare's one line left merge nothing to say.
    failed = replace(b, environment={"error": "environment capture did not finish"})
    (said,) = [w for w in merge([a, failed]).warnings if "not compared" in w]
    assert said.endswith("b's was not captured (environment capture did not finish)")


def test_merge_warns_about_shards_that_ran_other_program_files() -> None:
    # A shard run after train.py was edited ran another program: the digests say so.
    whole = error_run()
    record: JsonObject = {"store": "k1", "of": [["cfg.yaml", "c1"], ["train.py", "t1"]]}
    edited: JsonObject = {"store": "k1", "of": [["cfg.yaml", "c1"], ["train.py", "t2"]]}
    a = replace(whole, cells=whole.cells[:1], environment={**whole.environment, FILES: record})
    b = replace(
        whole, run_id="b", cells=whole.cells[1:], environment={**whole.environment, FILES: edited}
    )
    (said,) = [w for w in merge([a, b]).warnings if "program's files" in w]
    assert said.endswith(": train.py")
    alike = replace(b, environment=a.environment)
    assert not [w for w in merge([a, alike]).warnings if "program's files" in w]
