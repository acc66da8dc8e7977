"""`RunComparison`, the answer of `reprospec.compare`: a frozen value that no reader changes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import reprospec
from reprospec.core.jsontypes import JsonObject
from reprospec.errors import UsageError
from tests.support.runs import segfault_matrix


def test_a_comparison_stays_as_it_was_found_whatever_its_reader_does() -> None:
    a = segfault_matrix()
    b = replace(a, run_id="b", cells=tuple(a.cells)[:3])
    found = reprospec.compare(a, b)
    before = found.render("text")
    assert found.diff["only_a"] == ["num_workers=2,pin_memory=true"]
    # Before: `diff` was the dict the frozen value held, changed by any reader of it (and the
    # value unhashable); now each read is a mapping of its own.
    found.diff["only_a"].clear()
    found.diff["cells"] = []
    assert found.diff["only_a"] == ["num_workers=2,pin_memory=true"]
    assert found.render("text") == before
    assert found.diff == json.loads(found.render("json"))
    assert hash(found) == hash(reprospec.compare(a, b))
    assert found == reprospec.compare(a, b)


def test_a_comparison_made_of_its_mapping_keeps_it_as_its_text() -> None:
    # As the value was made before `found` (its 4th field the mapping): kept as the text,
    # which a later change to that mapping never reaches.
    from reprospec.report.compare import RunComparison

    a = segfault_matrix()
    diff = reprospec.compare(a, replace(a, run_id="b")).diff
    made = RunComparison("a", "b", "s", diff)  # type: ignore[arg-type]
    diff["only_a"].append("x")
    assert made.diff["only_a"] == []
    assert made == RunComparison.of("a", "b", "s", made.diff)


def test_torch_captured_by_one_run_only_is_one_line() -> None:
    # A docker run (torch captured) beside a local one (the spec names no torch) listed
    # torch's build field by field, 15 lines of "None -> ...".
    a = segfault_matrix()
    captured: JsonObject = {
        "installed": True,
        "version": "2.13.0+cpu",
        "num_threads": 2,
        "mkl": True,
    }
    b = replace(a, run_id="b", environment={**a.environment, "torch": captured})
    a = replace(a, environment={**a.environment, "torch": {"captured": False}})
    text = reprospec.compare(a, b).render("text").splitlines()
    assert "  torch: not captured -> captured (not compared field by field)" in text
    assert not [line for line in text if line.startswith("  torch.")]


def test_runs_with_no_cell_in_common_say_none_was_compared() -> None:
    # Two specs' runs, other matrices: "no cell changed" read as if every cell had been
    # compared and found the same (nu62a).
    a = segfault_matrix()
    renamed = tuple(
        replace(c, cell=replace(c.cell, id=f"other={n}", matrix={"other": n}))
        for n, c in enumerate(a.cells)
    )
    b = replace(a, run_id="b", cells=renamed)
    found = reprospec.compare(a, b)
    assert found.diff["in_both"] == 0
    text = found.render("text").splitlines()
    assert "no cell in both runs: none compared" in text
    assert "no cell changed" not in text
    same = reprospec.compare(a, replace(a, run_id="b"))
    assert same.diff["in_both"] == len(a.cells)
    assert "no cell changed" in same.render("text").splitlines()


def test_options_say_what_a_runs_unset_option_is_and_a_shard_as_given() -> None:
    # `run --timeout 90s` against `run --preload none --shard 1/2` read `timeout: '90s' ->
    # (none)` (the second ran with the spec's timeout, not none), `preload: (none) ->
    # (none)` (the spec's preload against none at all) and `shard: (none) -> [1, 2]`.
    from reprospec.core.runoptions import RunOptions

    a = segfault_matrix()
    a = replace(a, options=RunOptions(timeout_s=90.0).to_dict())
    b = replace(a, run_id="b", options=RunOptions(preload=(), shard="1/2").to_dict())
    text = reprospec.compare(a, b).render("text").splitlines()
    assert "  timeout: '90s' -> (none: the spec's run.timeout)" in text
    assert "  preload: (none: the spec's run.preload) -> none (fresh interpreters)" in text
    assert "  shard: (none) -> 1/2" in text
    # A pytest plugin run with --reprospec-python against a plain `reprospec run`.
    c = replace(a, run_id="c", options=RunOptions(python="/v/bin/python").to_dict())
    text = reprospec.compare(c, a).render("text").splitlines()
    assert "  python: '/v/bin/python' -> (none: reprospec's own interpreter)" in text
    # The interpreter a run without --python had is its runner's: a docker run's is the
    # image's python3 (it never has --python), a venv run's built on the spec's Python.
    docker = replace(a, run_id="e", options=RunOptions(runner="docker").to_dict())
    venv = replace(a, run_id="f", options=RunOptions(runner="venv").to_dict())
    pinned = replace(c, options=RunOptions(runner="venv", python="/v/bin/python").to_dict())
    text = reprospec.compare(pinned, docker).render("text").splitlines()
    assert "  python: '/v/bin/python' -> (none: the image's python3)" in text
    assert reprospec.compare(pinned, docker).diff["runners"] == ["venv", "docker"]
    text = reprospec.compare(venv, pinned).render("text").splitlines()
    assert (
        "  python: (none: a venv on the spec's environment.python, else on reprospec's own "
        "interpreter) -> '/v/bin/python'"
    ) in text
    # A probe numbered from 37 (RunOptions.first_attempt) against a plain run, which
    # stores no first_attempt: attempt 1 is its first, not none.
    d = replace(a, run_id="d", options=RunOptions(first_attempt=37).to_dict())
    text = reprospec.compare(a, d).render("text").splitlines()
    assert "  first_attempt: 1 -> 37" in text


def test_the_api_refuses_one_stored_run_given_twice_as_the_verb_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `reprospec.compare(result, "latest")` just after `result = reprospec.run(...)` (or
    # `compare(result, result)`) said "no cell changed", as if two runs had agreed, where
    # `reprospec compare latest latest` refuses (exit 2).
    from reprospec.store.resultsjson import run_to_dict

    run = segfault_matrix()
    folder = tmp_path / "runs" / run.run_id
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(run_to_dict(run)))
    loaded = reprospec.load_result(folder)
    for a, b in ((loaded, loaded), (loaded, str(folder)), (str(folder), str(folder))):
        with pytest.raises(UsageError, match=r"both runs given are run .*reprospec\.compare"):
            reprospec.compare(a, b)
    # The id read under a relative `out`: the store as typed, the result's absolute.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="both runs given"):
        reprospec.compare(loaded, "latest", out=".")
    # One of them changed since (a reader's replace) is another run to compare with.
    changed = replace(loaded, cells=tuple(loaded.cells)[:3])
    assert reprospec.compare(loaded, changed).diff["only_a"] == ["num_workers=2,pin_memory=true"]
