"""The report's Versions block (collect_env's layout) says only what is true of the run.

A command spec's capture does not import torch; a toggle may choose a package's version
or the interpreter per cell. In both cases the block once stated what it did not know:
`PyTorch version: Could not collect` beside a Packages row naming the installed torch,
and the first cell's `[pip3] sqlparse==0.4.1` as the whole run's.
"""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import CellResult, RunResult
from reprospec.environment.facts import one_cell_fields
from reprospec.report.standalone import versions_markdown
from reprospec.report.versions import DIFFERS, NOT_COLLECTED, versions_text
from reprospec.store.compare import compare
from tests.support.runs import ENV, error_run
from tests.support.runs import environment_cell as _cell

COLLECT: JsonObject = {"python_full": "3.11.7", "pip": {"sqlparse": "0.4.1", "torch": "2.13.0"}}


def _lines(env: JsonObject, one_cell: tuple[str, ...] = ()) -> dict[str, str]:
    text = versions_text(env, one_cell)
    assert text is not None
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def _run(env: JsonObject, *cells: CellResult) -> RunResult:
    return replace(error_run(), environment=env, cells=cells)


def test_a_torch_the_capture_did_not_import_is_named_from_its_package() -> None:
    env: JsonObject = {**ENV, "collect_env": COLLECT, "torch": {"captured": False}}
    lines = _lines(env)
    assert lines["PyTorch version"] == "2.13.0+cpu"  # ENV's packages.torch
    # What only an imported torch tells is not collected; not "None", not "No CUDA".
    assert lines["CUDA used to build PyTorch"] == NOT_COLLECTED
    assert lines["Is CUDA available"] == NOT_COLLECTED
    assert lines["cuDNN version"] == NOT_COLLECTED
    absent: JsonObject = {**env, "packages": {"torch": None}}
    lines = _lines(absent)
    assert lines["PyTorch version"] == "N/A (torch is not installed)"
    assert lines["CUDA used to build PyTorch"] == "N/A"
    # An imported torch's facts, as before.
    lines = _lines({**ENV, "collect_env": COLLECT})
    assert lines["CUDA used to build PyTorch"] == "None"
    assert lines["Is CUDA available"] == "False"


def test_no_cuda_only_where_the_machine_shows_none_as_collect_env_says() -> None:
    """collect_env writes "No CUDA" only where torch has no CUDA and the machine shows none
    (no nvcc, GPU or driver); beside an nvcc's runtime version the rest was not collected,
    and the runtime version is nvcc's build number (`11.1.105`), as collect_env reads it."""
    lines = _lines({**ENV, "collect_env": COLLECT})
    assert lines["CUDA runtime version"] == lines["cuDNN version"] == "No CUDA"
    nvcc: JsonObject = {"path": "/usr/local/cuda/bin/nvcc", "version": "11.1", "build": "11.1.105"}
    lines = _lines({**ENV, "collect_env": COLLECT, "nvcc": nvcc})
    assert lines["CUDA runtime version"] == "11.1.105"
    for field in (
        "CUDA used to build PyTorch",
        "GPU models and configuration",
        "Nvidia driver version",
        "cuDNN version",
    ):
        assert lines[field] == NOT_COLLECTED, field
    # A capture from before the build number was kept: the release.
    older: JsonObject = {"path": "/usr/local/cuda/bin/nvcc", "version": "11.1"}
    assert _lines({**ENV, "collect_env": COLLECT, "nvcc": older})["CUDA runtime version"] == "11.1"


def test_a_package_a_toggle_chose_is_not_one_cells_version() -> None:
    env: JsonObject = {
        **ENV,
        "collect_env": COLLECT,
        "packages": {"sqlparse": "0.4.1", "torch": "2.13.0"},
    }
    cells = (
        _cell(0, packages=["sqlparse==0.4.1"]),
        _cell(1, packages=["SQLParse==0.5.0"]),
    )
    one_cell = one_cell_fields((c.environment for c in cells), env)
    assert one_cell == ("packages.sqlparse", "collect_env.pip.sqlparse")
    text = versions_text(env, one_cell)
    assert text is not None
    assert f"[pip3] sqlparse: {DIFFERS}" in text
    assert "sqlparse==0.4.1" not in text
    assert "[pip3] torch==2.13.0" in text
    # A chosen torch: none of the captured torch's facts is the run's.
    torches = (
        _cell(0, packages=["torch==2.13.0"]),
        _cell(1, packages=["torch==2.5.1"]),
    )
    lines = _lines(env, one_cell_fields((c.environment for c in torches), env))
    assert lines["PyTorch version"] == DIFFERS
    assert lines["[pip3] torch"] == DIFFERS
    assert "AVX512" not in (versions_text(env, ("torch",)) or "")
    # The same environment in every cell: nothing is one cell's.
    same = (
        _cell(0, packages=["sqlparse==0.4.1"]),
        _cell(1, packages=["sqlparse==0.4.1"]),
    )
    assert one_cell_fields((c.environment for c in same), env) == ()


def test_a_chosen_interpreter_is_named_in_the_heading() -> None:
    env: JsonObject = {**ENV, "collect_env": COLLECT, "captured_in": "c0"}
    run = _run(env, _cell(0, image="python:3.11"), _cell(1, image="python:3.12"))
    block = versions_markdown(run)
    heading = block.splitlines()[0]
    assert "captured in the interpreter of cell c0 only" in heading
    assert "the cells ran different interpreters" in heading
    # Its facts are that interpreter's, shown whole (the heading says whose).
    assert "[pip3] sqlparse==0.4.1" in block
    plain = versions_markdown(_run(env, _cell(0, image="python:3.11")))
    assert "captured in the run's interpreter" in plain.splitlines()[0]


def test_compare_leaves_out_what_a_run_chose_per_cell() -> None:
    packages = {"torch": "2.13.0+cpu"}
    env_a: JsonObject = {**ENV, "packages": {**packages, "sqlparse": "0.4.1"}}
    env_b: JsonObject = {**ENV, "packages": {**packages, "sqlparse": None}}
    per_cell = _run(
        env_a,
        _cell(0, packages=["sqlparse==0.4.1"]),
        _cell(1, packages=["sqlparse==0.5.0"]),
    )
    plain = replace(_run(env_b, _cell(0), _cell(1)), run_id="b")
    diff = compare(per_cell, plain)
    assert all(not row["key"].startswith("packages.sqlparse") for row in diff["environment"])
    assert diff["per_cell"] == ["packages.sqlparse"]
    # Two runs that chose nothing per cell compare every field, as before.
    both = compare(replace(plain, environment=env_a), plain)
    assert {"key": "packages.sqlparse", "a": "0.4.1", "b": None} in both["environment"]
    assert both["per_cell"] == []


def test_the_versions_heading_escapes_as_html_escape_does_without_quotes() -> None:
    # report/markup.html_text, not html.escape: its module imports a table of 2,231 entities.
    import html

    from reprospec.report.markup import html_text

    for text in ("a & b < c > d", "&amp; 'single' \"double\"", "<<&&>>", "plain", ""):
        assert html_text(text) == html.escape(text, quote=False)


def test_a_chosen_package_version_names_the_cell_whose_dependencies_are_listed() -> None:
    # packaging==${{ matrix.v }} over 21.3 and 22.0: the capture ran in the 21.3 cell, whose
    # pyparsing (22.0 has none) read as the whole run's in the Versions block, and on the
    # docker runner `compare` set that cell's image tag against another run's as the run's.
    collect: JsonObject = {"pip": {"packaging": "21.3", "pyparsing": "3.3.3"}}
    env: JsonObject = {
        **ENV,
        "collect_env": collect,
        "packages": {"packaging": "21.3"},
        "container": {"runtime": "docker", "image": "reprospec-env:f2a3f41e0604f123"},
        "captured_in": "packaging=21.3",
    }
    cells = (_cell(0, packages=["packaging==21.3"]), _cell(1, packages=["packaging==22.0"]))
    one_cell = one_cell_fields((c.environment for c in cells), env)
    assert "container.image" in one_cell
    heading = versions_markdown(_run(env, *cells)).splitlines()[0]
    assert "captured in the environment of cell packaging=21.3;" in heading
    assert "the others it lists (what those pull in) may too" in heading
    # The same packages in every cell: the run's own, as before.
    same = (_cell(0, packages=["packaging==21.3"]), _cell(1, packages=["packaging==21.3"]))
    assert (
        "captured in the run's interpreter" in versions_markdown(_run(env, *same)).splitlines()[0]
    )
