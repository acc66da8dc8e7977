"""Hints where a person is stuck: each message says what to do next.

Real CLI runs: the local runner missing a cell's packages, `-m` matching nothing,
tabs and bad indentation in YAML, a top-level key of another section, rerunning a
run folder's copy of the spec, a report sent away from the script its command runs, and
the README's `pytest --reprospec specs/` collecting an example the local runner cannot run.
"""

from __future__ import annotations

from pathlib import Path

from reprospec import api
from tests.support.cli import SPECS, Cli


def test_missing_packages_on_the_local_runner_name_the_venv_runner(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: pkgs\nenvironment: {packages: ['reprospec-absent-pkg==1.0']}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 3, result.stdout + result.stderr
    reason = result.results()["cells"][0]["reason"]
    assert "reprospec-absent-pkg" in reason
    assert "`--runner venv` builds an environment that has them" in reason
    # A captured spec pins the packages of the interpreter it ran with; the reason named
    # neither that interpreter's flag nor the header. The header names it only where capture
    # was given --python: "a captured spec's header names the one it was captured with"
    # sent a bundle's reader to a header that named none.
    assert (
        "; `--python PATH` runs it with an interpreter that has them (a spec captured with "
        "--python names it in its header)"
    ) in reason
    # A ticket's pins (torch==2.3.1+cu121 on a CPU machine) said only --runner venv;
    # the other way on, said too, runs the cell as it is here.
    assert "or `--set 'environment.packages=[]'` runs the cell with this interpreter's" in reason
    as_here = cli("run", str(spec), "--set", "environment.packages=[]")
    assert as_here.code == 0, as_here.stdout + as_here.stderr


def test_a_filter_matching_nothing_lists_the_axis_values(cli: Cli) -> None:
    result = cli("plan", str(SPECS / "segfault.yaml"), "-m", "num_workers=3")
    assert result.code == 2
    assert "no cell matches -m num_workers=3: axis 'num_workers' holds 0, 2" in result.stderr


def test_tabs_and_indentation_say_check_the_indentation(cli: Cli, tmp_path: Path) -> None:
    tab = tmp_path / "tab.yaml"
    tab.write_text("reprospec: 1\nname: x\ncommand: echo\nexpect:\n\toutcome: pass\n")
    indent = tmp_path / "indent.yaml"
    indent.write_text(
        "reprospec: 1\nname: x\ncommand: echo\nexpect:\n  outcome: crash\n signal: SIGSEGV\n"
    )
    result = cli("validate", str(tab), str(indent))
    assert result.code == 2
    text = result.stdout + result.stderr
    assert "tab.yaml:5:1: invalid YAML" in text
    assert "never tabs: check the indentation of line 5" in text
    assert "indent.yaml:6:" in text
    assert "check the indentation of line 6" in text


def test_a_key_of_another_section_at_the_top_says_where_it_belongs(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: x\ncommand: echo\nexpect: {outcome: pass}\n"
        "cases:\n  - when: {a: 1}\n    outcome: pass\ntimeout: 3s\ndevice: cpu\n"
    )
    result = cli("validate", str(spec))
    assert result.code == 2
    text = result.stdout + result.stderr
    assert "spec.yaml:5:1: (top level): unknown key 'cases' (did you mean `expect.cases`?" in text
    assert "unknown key 'timeout' (did you mean `run.timeout`?" in text
    # A key two sections take names both.
    assert "unknown key 'device' (did you mean `environment.device` or `workload.device`?" in text


def test_running_a_run_folders_spec_copy_points_at_the_report(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: copy\nenvironment: {workdir: work}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    first = cli("run", str(spec))
    assert first.code == 0, first.stdout + first.stderr
    folder = first.latest_run()
    again = cli("run", str(folder / "spec.yaml"))
    assert again.code == 2, again.stdout + again.stderr
    assert f"Rerun it with `reprospec run {folder / 'report.md'}`" in again.stderr
    assert f"`reprospec bundle {folder} -o run.tar.gz`" in again.stderr


def test_a_report_away_from_its_commands_script_points_at_bundle(cli: Cli, tmp_path: Path) -> None:
    # The report embeds the spec, not crash.py: sent elsewhere, the script is missing there,
    # and the message says how to carry it (a bundle; that one reruns anywhere is
    # tests/functional/commands/test_bundle.py).
    made, elsewhere = tmp_path / "made", tmp_path / "elsewhere"
    made.mkdir()
    elsewhere.mkdir()
    (made / "crash.py").write_text("import sys\nsys.exit(3)\n")
    (made / "spec.yaml").write_text(
        "reprospec: 1\nname: sent\ncommand: python crash.py\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    first = cli("run", "spec.yaml", cwd=made)
    assert first.code == 0, first.stdout + first.stderr
    folder = first.latest_run()
    here = cli("run", str(folder / "report.md"), "--yes", cwd=made)
    assert here.code == 0, here.stdout + here.stderr
    assert "reprospec bundle" not in here.stderr  # beside its spec: nothing to say
    report = elsewhere / "report.md"
    report.write_text((folder / "report.md").read_text())
    away = cli("run", "report.md", "--yes", cwd=elsewhere)
    assert away.code == 3, away.stdout + away.stderr
    assert "can't open file" in away.results()["cells"][0]["reason"]
    assert (
        f"note: report.md embeds the spec but not the files its command runs; they were "
        f"looked for in {elsewhere.resolve()}."
    ) in away.stderr
    assert "`reprospec bundle RUN -o run.tar.gz`" in away.stderr


def test_every_spec_the_readme_runs_needs_no_packages_the_local_runner_lacks() -> None:
    # `pytest --reprospec specs/` and `reprospec run specs/X` use the local runner: an
    # example whose cells declare packages (the bisect example) lives outside specs/.
    for path in sorted(SPECS.rglob("*.yaml")):
        plan = api.plan_run(api.load_spec(path))
        declared = {p for a in plan.attempts for p in a.environment.packages}
        assert not declared, f"{path.relative_to(SPECS.parent)} declares {sorted(declared)}"


def test_a_run_warns_of_an_axis_nothing_reads(cli: Cli, tmp_path: Path) -> None:
    """`run --observe --set 'matrix.name=[x, y]'` of a spec that never reads `name` ran two
    cells alike and reported `error in every cell`, as if `name` had been tried: an axis
    given by `--set` is never validated, and a run said nothing of it."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: axes\nmatrix: {b: [x, y]}\n"
        "command: echo ${{ matrix.b }}\nexpect: {outcome: pass}\n"
    )
    read = cli("run", str(spec))
    assert read.code == 0, read.stderr
    assert "read by nothing" not in read.stderr
    assert read.results()["warnings"] == []
    result = cli("run", str(spec), "--observe", "--set", "matrix.name=[1, 2]")
    assert result.code == 0, result.stderr
    said = (
        "matrix axis 'name' is read by nothing (no ${{ matrix.name }}, no expect.cases "
        "when): its cells run the same program; for more attempts of one, use run.repeat"
    )
    assert f"reprospec: warning: {said}" in result.stderr, result.stderr
    assert result.results()["warnings"] == [said]
    assert said in (result.latest_run() / "report.md").read_text()


FAULTED = """\
reprospec: 1
name: faulted
matrix: {x: [0, 1]}
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}
    loader: {batch_size: 4}
  phases: [{name: train, steps: 1}]
  faults:
    - {kind: exit, code: 3, at: {phase: train, step: 1}, when: "${{ matrix.x > LIMIT }}"}
expect:
  outcome: error
  exit_code: 3
  cases: [{when: {x: 0}, outcome: pass}]
"""


def test_a_run_warns_of_a_fault_no_cell_of_its_matrix_injects(cli: Cli, tmp_path: Path) -> None:
    """A `when` no value meets (`x > 1` over [0, 1]) ran as a plain program, judged
    not-reproduced with no word of the fault. Judged over the matrix, not the cells `-m`
    keeps: one cell of a matrix over which fault to inject leaves the others out by design."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(FAULTED.replace("LIMIT", "1"))
    silent = cli("run", str(spec), "-m", "x=1")
    said = (
        "workload.faults[0]'s when is false in every one of the 2 cells: the fault is never "
        "injected, and a run judges the program without it"
    )
    assert silent.code == 1, silent.stderr
    assert silent.results()["warnings"] == [said]
    spec.write_text(FAULTED.replace("LIMIT", "0"))
    kept = cli("run", str(spec), "-m", "x=0")
    assert kept.code == 0, kept.stderr
    assert "never injected" not in kept.stderr
    assert kept.results()["warnings"] == []
