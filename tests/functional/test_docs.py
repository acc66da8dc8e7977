"""The docs' example specs and Python snippets do what the docs say, run for real."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from tests.support.cli import SPECS, ExampleRun
from tests.support.docexamples import (
    COMMAND_EXAMPLES,
    DOCS,
    EXAMPLES,
    FENCE,
    WORKLOAD_EXAMPLES,
    Example,
)
from tests.support.paths import ROOT

# Examples are written as if saved in specs/, next to the fixtures they use.
FIXTURES = ROOT / "specs" / "fixtures"


@pytest.fixture(scope="module")
def example_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples as files in a `specs/` folder whose `fixtures/` is the repository's."""
    folder = tmp_path_factory.mktemp("doc-examples") / "specs"
    folder.mkdir()
    (folder / "fixtures").symlink_to(FIXTURES, target_is_directory=True)
    for example in EXAMPLES:
        (folder / example.file_name).write_text(example.text, encoding="utf-8")
    return folder


def _reprospec(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def test_doc_examples_load_with_reprospecs_own_loader(example_specs: Path) -> None:
    done = _reprospec("validate", str(example_specs), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{len(EXAMPLES)} spec files valid"


# What a spec says for its reader only: two specs that differ in nothing else run the same
# attempts and are judged the same way.
PROSE = ("title", "description")


def _same_run_as(example: Example) -> str | None:
    """The example of specs/ this doc example is, but for its prose (the page shows
    specs/segfault.yaml "without its comments"), or None. The doc examples are saved in a
    specs/ folder of their own, beside the same fixtures, so the two runs are one run."""
    ours = {k: v for k, v in example.data.items() if k not in PROSE}
    for path in sorted(SPECS.glob("*.yaml")):
        theirs = yaml.safe_load(path.read_text(encoding="utf-8"))
        if {k: v for k, v in theirs.items() if k not in PROSE} == ours:
            return path.name
    return None


def _run_example(example: Example, specs: Path, example_run: ExampleRun) -> None:
    same = _same_run_as(example)
    if same is not None:  # that example's own run (tests/functional/test_examples.py)
        shared = example_run(same)
        code, stdout, stderr = shared.code, shared.stdout, shared.stderr
    else:
        out = specs.parent / "out"
        done = _reprospec(
            "run", str(specs / example.file_name), "--out", str(out), "-j", "2", cwd=ROOT
        )
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    # Exit 0: every cell of the example did what its `expect` (and the page) says.
    assert code == 0, f"{example.id} ({same or 'its own run'})\n{stdout}\n{stderr}"


@pytest.mark.parametrize("example", COMMAND_EXAMPLES, ids=lambda e: e.id)
def test_command_example_reproduces_as_documented(
    example: Example, example_specs: Path, example_run: ExampleRun
) -> None:
    _run_example(example, example_specs, example_run)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("example", WORKLOAD_EXAMPLES, ids=lambda e: e.id)
def test_workload_example_reproduces_as_documented(
    example: Example, example_specs: Path, example_run: ExampleRun
) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in the test interpreter")
    _run_example(example, example_specs, example_run)


# ---- the Python API ---------------------------------------------------------------------


def _unordered(lines: Iterable[str]) -> list[str]:
    """Lines sorted, progress counters (`[3/4]`) blanked: attempts end in any order."""
    return sorted(re.sub(r"\[\d+/\d+\]", "[k/n]", line) for line in lines)


def _python_api_example(
    marker: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], str]:
    """The python-api.md example that calls `marker`, run in tmp_path as written; and the
    lines the page says it prints, as one text."""
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    (script,) = [
        m["body"] for m in FENCE.finditer(page) if m["info"] == "python" and marker in m["body"]
    ]
    after = page.split(script, 1)[1].split("It prints", 1)[1]
    printed = after.split("\n\n", 1)[1].split("\n\nand exits 0")[0]
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "example.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    return done, printed


def test_python_api_isolate_example_prints_what_the_page_says(tmp_path: Path) -> None:
    done, printed = _python_api_example("reprospec.isolate_spec(", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [line[4:] for line in printed.splitlines()]
    assert done.stderr == ""  # nothing said but through `progress`
    (state,) = (tmp_path / ".reprospec" / "isolate").glob("*/isolate.md")
    assert state.is_file()


def test_python_api_example_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    done, printed = _python_api_example("reprospec.run(", tmp_path)
    documented = _unordered(line[4:] for line in printed.splitlines())
    assert done.returncode == 0, done.stderr
    # The progress lines come from worker threads, in any order; the rest is fixed.
    assert _unordered(done.stdout.splitlines()) == documented
    (results,) = (tmp_path / ".reprospec" / "runs").glob("*/results.json")
    assert json.loads(results.read_text())["summary"]["reproduced"] == 2
    assert (tmp_path / ".reprospec" / "results.db").is_file()
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<testcase ") == 2


# ---- the run folder ---------------------------------------------------------------------


def test_the_run_folder_tree_names_every_file_a_run_writes(tmp_path: Path) -> None:
    """cli.md's tree of the run folder left out raised.txt (in every attempt folder of a
    Python program) and native-stacks.txt/.json (a crash's): a real run of a crash and its
    passes writes nothing the tree does not name."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    tree = page.split("\n## The run folder\n", 1)[1].split("\n- ", 1)[0]
    done = _reprospec(
        "run", str(SPECS / "segfault-command.yaml"), "--out", str(tmp_path), "-j", "2", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    written = {p.name for p in folder.rglob("*") if p.is_file()}
    assert {"raised.txt", "native-stacks.txt", "results.json"} <= written  # it ran, and crashed
    assert sorted(name for name in written if name not in tree) == []


# ---- results.json -----------------------------------------------------------------------


def _documented_keys(table: str) -> set[str]:
    """The keys a table of cli.md names in its first column (`a`, `b` in one cell too)."""
    rows = re.findall(r"^\| ([^|]+) \|", table, flags=re.M)
    return {key for row in rows for key in re.findall(r"`(\w+)`", row)}


def test_results_json_environment_table_names_every_key_a_run_writes(tmp_path: Path) -> None:
    """cli.md's table of results.json's `environment` left out what the engine adds to the
    capture (`format`, `captured_in`, `inherited_digests`, `spec_variables`) though its keys
    are "a contract": a real run of a spec that reads a variable writes no key the table
    does not name."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = page.split("\n## results.json\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("\n**The environment**", 1)[1].split("\n\n", 2)[1]
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: env-keys\n"
        "command: python -c 'import sys; sys.exit(int(sys.argv[1]))' ${{ env.DOCS_CODE }}\n"
        "environment: {public_env: [DOCS_CODE]}\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1", "DOCS_CODE": "0", "DOCS_INHERITED": "x"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (results,) = (tmp_path / "o" / "runs").glob("*/results.json")
    environment = json.loads(results.read_text(encoding="utf-8"))["environment"]
    assert {"captured_in", "spec_variables", "inherited_digests"} <= set(environment)
    assert sorted(set(environment) - _documented_keys(table)) == []
