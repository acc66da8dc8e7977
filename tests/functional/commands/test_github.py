"""GitHub Actions, as a workflow sees `reprospec`: `::error` annotations on the spec lines of
failing cells, a step summary whose table a spec value cannot forge, and a job matrix within
GitHub's cap of 256 jobs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: gh
matrix:
  v: ["a|b", "x\\ny"]
  n: [1, 2, 3, 4, 5, 6, 7]
command: python -c "import sys; sys.exit(min(${{ matrix.n }} - 1, 1))"
expect: {outcome: pass}
"""
# Annotations pointing at its cells: line 5 is `n: [...]`, each cell's last axis value.
CELL_LINE = 5


def _unescape(text: str) -> str:
    """A workflow command's escapes, read back as the Actions runner reads them."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def _annotations(stderr: str) -> list[tuple[dict[str, str], str]]:
    found = []
    for line in stderr.splitlines():
        command = re.fullmatch(r"::error (\S[^:]*)::(.*)", line)
        if command:
            properties = dict(p.split("=", 1) for p in command.group(1).split(","))
            found.append(
                ({k: _unescape(v) for k, v in properties.items()}, _unescape(command.group(2)))
            )
    return found


def test_failing_cells_annotate_their_spec_line_and_the_summary_table_holds(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "ci" / "gh.yaml"
    spec.parent.mkdir()
    spec.write_text(SPEC, encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    result = cli("run", str(spec), "-j", "2", "--format", "json", env=env)
    assert result.code == 1, result.stderr
    assert json.loads(result.stdout)["summary"]["not_reproduced"] == 12  # stdout stays JSON
    found = _annotations(result.stderr)
    # 12 cells failed; GitHub shows 10 errors of a step, so the tenth counts the rest.
    assert len(found) == 10, result.stderr
    for properties, message in found:
        assert properties["file"] == "ci/gh.yaml"
        assert properties["line"] == str(CELL_LINE)
        assert properties["title"].startswith("reprospec: not-reproduced: v=")
        assert "\n" not in properties["title"]
        assert ": not-reproduced: expected pass, got error exit 1" in message
    assert found[0][1].startswith("v=a|b,n=2: not-reproduced")
    assert found[-1][1].endswith("... and 2 more cells: see the report")
    # A value with a line break stays inside its annotation: the runner reads it back whole.
    assert any(message.startswith("v=x\ny,n=2: ") for _, message in found)
    # The step summary: one row per cell, whatever `|` or line break a value holds.
    rows = [line for line in summary.read_text().splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 14, summary.read_text()
    assert all(row.count(" | ") == 5 for row in rows[2:]), rows
    # What was expected, beside what happened.
    assert rows[0].startswith("| | cell | expected | actual |"), rows[0]
    assert all(" | `pass` | " in row or " | pass | " in row for row in rows[2:]), rows
    assert "`v=a\\|b,n=2`" in summary.read_text()


def test_no_annotations_outside_github_actions(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "gh.yaml"
    spec.write_text(SPEC.replace("[1, 2, 3, 4, 5, 6, 7]", "[2]"), encoding="utf-8")
    result = cli("run", str(spec), env={"GITHUB_ACTIONS": ""})
    assert result.code == 1
    assert "::error" not in result.stderr + result.stdout


def test_report_renders_a_stored_run_as_the_step_summary(cli: Cli, tmp_path: Path) -> None:
    # `report RUN --format github` was refused (argparse's invalid choice)
    # though `reprospec.render(result, "github")` renders it: one list of formats now.
    spec = tmp_path / "gh.yaml"
    spec.write_text(SPEC.replace("[1, 2, 3, 4, 5, 6, 7]", "[1, 2]"), encoding="utf-8")
    assert cli("run", str(spec), env={"GITHUB_ACTIONS": ""}).code == 1
    result = cli("report", "latest", "--format", "github")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith("### reprospec: gh\n")
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 4, result.stdout  # the heading row and a row per cell
    assert "`v=a\\|b,n=2`" in result.stdout


def test_plan_github_shards_a_matrix_over_the_cap_and_says_so(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "reprospec: 1\nname: big\n"
        f"matrix: {{a: {list(range(15))}, b: {list(range(20))}}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    planned = cli("plan", str(spec), "--format", "github")
    assert planned.code == 0, planned.stderr
    jobs = json.loads(planned.stdout)["include"]
    assert len(jobs) == 256
    assert jobs[0] == {"cell": "shard 1/256", "shard": "1/256", "args": "--shard=1/256"}
    assert "300 cells exceed GitHub's matrix cap of 256 jobs" in planned.stderr
    # Each job's args run its share: shard 1 of 256 holds cells 1 and 257 of 300.
    ran = cli("run", str(spec), *jobs[0]["args"].split())
    assert ran.code == 0, ran.stderr
    assert [c["id"] for c in ran.results()["cells"]] == ["a=0,b=0", "a=12,b=16"]
    # Under the cap: a job per cell, its args the filters that run just it.
    small = cli("plan", str(spec), "--format", "github", "-m", "a=3")
    assert small.code == 0
    assert small.stderr == ""
    cells = json.loads(small.stdout)["include"]
    assert len(cells) == 20
    assert cells[0] == {"cell": "a=3,b=0", "args": "-ma=3 -mb=0", "a": "3", "b": "0"}


def test_plan_github_refuses_shards_of_adaptive_repeats(cli: Cli, tmp_path: Path) -> None:
    # `run --shard` refuses `repeat: auto` with a rate (each shard would add its own
    # attempts): 256 shard jobs that each exit 2 would only fail in the workflow.
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "reprospec: 1\nname: big\n"
        f"matrix: {{a: {list(range(15))}, b: {list(range(20))}}}\n"
        "command: 'true'\nrun: {repeat: auto}\nexpect: {outcome: pass, rate: '>=0.5'}\n",
        encoding="utf-8",
    )
    planned = cli("plan", str(spec), "--format", "github")
    assert planned.code == 2
    assert "`repeat: auto` and an `expect.rate` cannot be sharded" in planned.stderr
    assert planned.stdout == ""
    ran = cli("run", str(spec), "--shard=1/256")
    assert ran.code == 2
    assert "--shard 1/256: `repeat: auto`" in ran.stderr
    # Under the cap, a job per cell: no shards.
    assert cli("plan", str(spec), "--format", "github", "-m", "a=3").code == 0


def _job_cells(cli: Cli, spec: Path, job: dict[str, str]) -> list[str]:
    """The cells a job of the matrix runs: its `args` as the job's shell splits them,
    planned (`plan` runs nothing)."""
    planned = cli("plan", str(spec), *shlex.split(job["args"]), "--format", "json")
    assert planned.code == 0, (job, planned.stderr)
    return [cell["id"] for cell in json.loads(planned.stdout)["cells"]]


def test_plan_github_each_job_runs_exactly_its_cell_whatever_yaml_reads_its_value(
    cli: Cli, tmp_path: Path
) -> None:
    # The job of the string "0x10" had `-mv=0x10`, which YAML reads as 16 and so
    # also kept the cell of 16 (two jobs ran it, and their merge was refused); that of " a"
    # had `-mv= a`, which matches no cell (the job exited 2).
    spec = tmp_path / "values.yaml"
    spec.write_text(
        "reprospec: 1\nname: values\n"
        'matrix: {v: ["3.10", 3.1, "0x10", 16, "1e3", " a", "null", "[x", "a: b", true]}\n'
        "command: 'true'\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    planned = cli("plan", str(spec), "--format", "github")
    assert planned.code == 0, planned.stderr
    jobs = json.loads(planned.stdout)["include"]
    assert len(jobs) == 10
    assert [_job_cells(cli, spec, job) for job in jobs] == [[job["cell"]] for job in jobs]
    assert jobs[1]["args"] == "-mv=3.1"  # a value YAML reads back as itself stays bare
    assert jobs[2]["args"] == shlex.quote('-mv="0x10"')


def test_plan_github_keeps_its_own_keys_over_axes_named_like_them(cli: Cli, tmp_path: Path) -> None:
    # An axis named `args` wrote its value over the job's filters, so each job ran
    # `reprospec run SPEC x` (and `cell` over the cell's id).
    spec = tmp_path / "names.yaml"
    spec.write_text(
        "reprospec: 1\nname: names\n"
        "matrix: {args: [x, y], cell: [1], mode: [a]}\n"
        "command: 'true'\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    planned = cli("plan", str(spec), "--format", "github")
    assert planned.code == 0, planned.stderr
    jobs = json.loads(planned.stdout)["include"]
    assert jobs[0] == {
        "cell": "args=x,cell=1,mode=a",
        "args": "-margs=x -mcell=1 -mmode=a",
        "mode": "a",
    }
    assert [_job_cells(cli, spec, job) for job in jobs] == [[job["cell"]] for job in jobs]
    assert "warning: axis 'cell', 'args': named as a job's own key" in planned.stderr


def test_merge_of_shards_writes_the_step_summary_and_annotates_the_failing_cells(
    cli: Cli, tmp_path: Path
) -> None:
    # The merge job of a sharded workflow, the one that judges each cell on all of
    # its attempts, wrote no job summary and no annotation: only the shards did, of their
    # share each.
    spec = tmp_path / "ci" / "gh.yaml"
    spec.parent.mkdir()
    spec.write_text(
        SPEC.replace("[1, 2, 3, 4, 5, 6, 7]", "[1, 2]").replace(
            "expect:", "run: {repeat: 2}\nexpect:"
        ),
        encoding="utf-8",
    )
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, out in enumerate(shards, 1):
        ran = cli("run", "ci/gh.yaml", f"--shard={k}/2", "--out", str(out), cwd=tmp_path)
        assert ran.code in (0, 1), ran.stderr  # each judges its share
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    runs = [str(run) for out in shards for run in (out / "runs").iterdir()]
    merged = cli("merge", *runs, "--out", str(tmp_path / "merged"), env=env, cwd=tmp_path)
    assert merged.code == 1, merged.stderr
    found = _annotations(merged.stderr)
    assert [(p["file"], p["line"], p["title"]) for p, _ in found] == [
        ("ci/gh.yaml", str(CELL_LINE), f"reprospec: not-reproduced: {cell}")
        for cell in ("v=a|b,n=2", "v=x\ny,n=2".replace("\n", " "))
    ]
    assert "in 2/2 attempts" in found[0][1]  # judged on both shards' attempts
    rows = [line for line in summary.read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 4, summary.read_text()
    assert "| 0/2 (95% CI 0.00–0.66) | not-reproduced |" in summary.read_text()


def test_plan_github_filters_an_include_only_axis_as_null_in_the_cells_without_it(
    cli: Cli, tmp_path: Path
) -> None:
    # The job of `{a: 1}` had `-ma=1`, which kept `{a: 1, c: 3}` too: that cell
    # ran in two jobs.
    spec = tmp_path / "inc.yaml"
    spec.write_text(
        "reprospec: 1\nname: inc\nmatrix:\n  include: [{a: 1}, {a: 1, c: 3}]\n"
        "command: 'true'\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    planned = cli("plan", str(spec), "--format", "github")
    assert planned.code == 0, planned.stderr
    jobs = json.loads(planned.stdout)["include"]
    assert [job["args"] for job in jobs] == ["-ma=1 -mc=null", "-ma=1 -mc=3"]
    assert [_job_cells(cli, spec, job) for job in jobs] == [["a=1"], ["a=1,c=3"]]


def test_a_shards_summary_and_annotations_say_they_judge_its_share(
    cli: Cli, tmp_path: Path
) -> None:
    # A shard's job summary and annotations read as the cell's verdict (a rate
    # cell's 1 of 4 attempts `undecided`, "run more attempts"), where merge judges it whole.
    spec = tmp_path / "gh.yaml"
    spec.write_text(SPEC.replace("[1, 2, 3, 4, 5, 6, 7]", "[2]"), encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    ran = cli("run", str(spec), "--shard=1/2", env=env)
    assert ran.code == 1, ran.stderr
    found = _annotations(ran.stderr)
    assert [p["title"] for p, _ in found] == ["reprospec (shard 1/2): not-reproduced: v=a|b,n=2"]
    said = "shard 1/2: each cell judged on this shard's share of its attempts; `reprospec merge`"
    assert found[0][1].endswith(said + " of the 2 shards judges them on all")
    assert f"> {said}" in summary.read_text()
    # An unsharded run says nothing of shards.
    summary.unlink()
    whole = cli("run", str(spec), env=env)
    assert "shard" not in whole.stderr + summary.read_text()


def test_merge_whose_checkout_lacks_the_spec_annotates_no_file(cli: Cli, tmp_path: Path) -> None:
    # A merge job whose checkout lacks the spec file the shards ran (another folder, or a
    # job that only downloads their artifacts) annotated each cell `file=ci/gh.yaml,line=1`,
    # a file and line GitHub could not show; the annotation now names none.
    spec = tmp_path / "ci" / "gh.yaml"
    spec.parent.mkdir()
    spec.write_text(SPEC.replace("[1, 2, 3, 4, 5, 6, 7]", "[1, 2]"), encoding="utf-8")
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, out in enumerate(shards, 1):
        ran = cli("run", "ci/gh.yaml", f"--shard={k}/2", "--out", str(out), cwd=tmp_path)
        assert ran.code in (0, 1), ran.stderr
    spec.unlink()
    env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path)}
    runs = [str(run) for out in shards for run in (out / "runs").iterdir()]
    merged = cli("merge", *runs, "--out", str(tmp_path / "merged"), env=env, cwd=tmp_path)
    assert merged.code == 1, merged.stderr
    found = _annotations(merged.stderr)
    assert [properties for properties, _ in found] == [
        {"title": f"reprospec: not-reproduced: {cell}"} for cell in ("v=a|b,n=2", "v=x y,n=2")
    ], merged.stderr
    assert "Traceback" not in merged.stderr
