"""`reprospec bisect` and `reprospec envs` from the CLI, as a new user runs them.

Real venvs, real installs: sqlparse from the index the machine's pip/uv
configuration points at (its environments kept in $REPROSPEC_TEST_ENVS between
test runs, so after the first run only `pip index versions` touches the
network), and a package made here, served through --find-links.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from reprospec import venvs
from reprospec.bisect.search import DEFAULT_ERROR, attempts_to_see
from tests.support.cli import ROOT, Cli, CliResult, interrupt_when
from tests.support.envs import (
    caller_venv,
    envs_root,
    make_releases,
    make_wheel,
    uv_environment,
)
from tests.support.searchlock import held_elsewhere, refused_as_held

DEMO = "reprospec-bisectdemo"


def regressed_from_1_2(minor: int) -> str:
    return f"REGRESSED = {minor >= 2}\n"


SQLPARSE_SPEC = ROOT / "examples" / "bisect" / "sqlparse-reindent.yaml"


def shared_envs() -> dict[str, str]:
    return {venvs.ENVS_VARIABLE: str(envs_root() / "envs"), **uv_environment()}


def own_envs(tmp_path: Path) -> dict[str, str]:
    """Environments built for this test alone (tmp_path/envs), uv's download cache shared."""
    return {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}


def demo_bisect(
    spec: Path, wheels: Path, out: Path | str, *more: str, bad: str = "1.7"
) -> list[str]:
    """`bisect SPEC` of the demo package from 1.0 to `bad` over its wheelhouse `wheels`,
    its store `out`, `more` options added."""
    return [
        "bisect", str(spec), "--package", DEMO, "--good", "1.0", "--bad", bad,
        "--find-links", str(wheels), "--out", str(out), *more,
    ]  # fmt: skip


def test_bisect_finds_the_sqlparse_release_that_broke_reindent(cli: Cli, tmp_path: Path) -> None:
    """sqlparse#562: verified by hand, 0.3.0 keeps the space and 0.3.1 loses it."""
    out = tmp_path / "out"
    done = cli(
        "bisect",
        str(SQLPARSE_SPEC),
        "--package",
        "sqlparse",
        "--good",
        "0.2.0",
        "--bad",
        "0.4.2",
        "--format",
        "json",
        "--out",
        str(out),
        env=shared_envs(),
        timeout=600,
    )
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["package"], result["first_bad"], result["last_good"]) == (
        "sqlparse",
        "0.3.1",
        "0.3.0",
    )
    assert result["versions"] == [
        "0.2.0",
        "0.2.1",
        "0.2.2",
        "0.2.3",
        "0.2.4",
        "0.3.0",
        "0.3.1",
        "0.4.0",
        "0.4.1",
        "0.4.2",
    ]
    tested = {t["version"]: t for t in result["tested"]}
    assert tested["0.4.2"]["state"] == tested["0.3.1"]["state"] == "bad"
    # Deterministic: every attempt of the first bad failed (the search may ask it again
    # to learn that the failure never flakes, which makes one clean attempt decisive).
    assert set(tested["0.3.1"]["signatures"]) == {"error:AssertionError"}
    assert tested["0.3.1"]["matched"] == tested["0.3.1"]["attempts"] >= 1
    assert tested["0.3.0"]["state"] == "good"
    assert tested["0.3.0"]["matched"] == 0
    assert result["attempts"] == sum(t["attempts"] for t in result["tested"])
    # Every attempt is an ordinary stored run.
    runs = {r for t in result["tested"] for r in t["runs"]}
    stored = 0
    for run in runs:
        cells = json.loads((out / "runs" / run / "results.json").read_text())["cells"]
        stored += sum(1 for a in cells[0]["attempts"] if a["outcome"] is not None)
    assert stored == result["attempts"]
    report = (Path(result["folder"]) / "bisect.md").read_text()
    assert "**first bad: sqlparse 0.3.1 (last good 0.3.0)**" in report
    assert json.loads((Path(result["folder"]) / "bisect.json").read_text())["first_bad"] == "0.3.1"


def test_both_ends_are_checked_and_refused_with_what_was_seen(cli: Cli, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    good_fails = cli(
        "bisect",
        str(SQLPARSE_SPEC),
        "--package",
        "sqlparse",
        "--good",
        "0.3.1",
        "--bad",
        "0.4.2",
        "--out",
        out,
        env=shared_envs(),
        timeout=600,
    )
    assert good_fails.code == 1, good_fails.stderr
    assert good_fails.stdout.startswith(
        "refused: the good end 0.3.1 reproduces too: 1 matching failure in 1 attempt; "
        "seen: error:AssertionError x1"
    )
    bad_passes = cli(
        "bisect",
        str(SQLPARSE_SPEC),
        "--package",
        "sqlparse",
        "--good",
        "0.2.4",
        "--bad",
        "0.3.0",
        "--min-rate",
        "0.5",
        "--out",
        out,
        env=shared_envs(),
        timeout=600,
    )
    assert bad_passes.code == 1, bad_passes.stderr
    # Enough attempts to see a rate of 0.5 with the stated error (0.5% / 5).
    n = attempts_to_see(0.5, DEFAULT_ERROR / 5)
    assert (
        f"refused: the bad end 0.3.0 did not reproduce in {n} attempts; seen: pass x{n}"
        in bad_passes.stdout
    )


def demo_project(tmp_path: Path, *, first_bad: str, broken: str | None = None) -> tuple[Path, Path]:
    """A wheelhouse of 1.0..1.7 whose regression (from `first_bad`) is flaky, and its spec.

    The failure shows on every second attempt at a bad version (a counter file per
    version): flaky as seen by the engine, deterministic for the test.
    """
    first = int(first_bad.split(".")[1])
    wheels = make_releases(
        tmp_path / "wheels",
        DEMO,
        8,
        lambda minor: f"VERSION = '1.{minor}'\nREGRESSED = {minor >= first}\n",
        broken=broken or "",
    )
    counters = tmp_path / "counters"
    counters.mkdir()
    (tmp_path / "flaky.py").write_text(
        textwrap.dedent("""\
        import os, pathlib
        import reprospec_bisectdemo as demo
        counter = pathlib.Path(os.environ["COUNTERS"]) / demo.VERSION
        seen = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(seen))
        if demo.REGRESSED and seen % 2 == 0:
            raise ValueError("the regression, attempt %d" % seen)
        print("fine", demo.VERSION)
        """)
    )
    spec = tmp_path / "demo.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: bisect-demo
        environment:
          packages: ["{DEMO}==1.7"]
          env: {{COUNTERS: "{counters}"}}
        command: python flaky.py
        expect:
          outcome: error
          exception: ValueError
          message: the regression
        """)
    )
    return spec, wheels


def test_a_flaky_regression_with_an_uninstallable_release(cli: Cli, tmp_path: Path) -> None:
    spec, wheels = demo_project(tmp_path, first_bad="1.4", broken="1.3")
    done = cli(
        *demo_bisect(spec, wheels, tmp_path / "out", "--format", "json"),
        env=own_envs(tmp_path),
        timeout=600,
    )
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    # 1.3 cannot be installed: the regression is 1.4, or it came with 1.3. Both are said.
    assert (result["first_bad"], result["last_good"]) == ("1.4", "1.2")
    assert result["untestable_between"] == ["1.3"]
    tested = {t["version"]: t for t in result["tested"]}
    assert tested["1.3"]["state"] == "skipped"
    assert f"cannot install {DEMO}==1.3" in tested["1.3"]["infra_error"]
    # Flaky: a bad version passed before it failed, and was still judged bad.
    assert tested["1.4"]["state"] == "bad"
    assert tested["1.4"]["attempts"] >= 2
    assert tested["1.4"]["signatures"] == {"pass": 1, "error:ValueError": 1}
    assert tested["1.2"]["state"] == "good"
    assert tested["1.2"]["attempts"] >= 5
    assert 0 < result["rate"]["matched"] < result["rate"]["attempts"]
    # `history --searches` names the version each probe's run tried (the uninstallable one's
    # too), where it said only `bisect`.
    listed = cli(
        "history", "--searches", "--all", "--format", "json", "--out", str(tmp_path / "out")
    )
    probes = {row["run_id"]: row["probe"] for row in json.loads(listed.stdout)}
    for version, evidence in tested.items():
        assert {probes[run] for run in evidence["runs"]} == {f"{DEMO} {version}"}
    table = cli(
        "history", "--searches", "--all", "--out", str(tmp_path / "out"), env={"COLUMNS": "250"}
    )
    row = next(line for line in table.stdout.splitlines() if tested["1.3"]["runs"][0] in line)
    assert [cell.strip() for cell in row.split("│")[2:4]] == ["bisect", f"{DEMO} 1.3"]


def test_a_release_that_cannot_be_built_is_said_once_and_its_build_log_kept(
    cli: Cli, tmp_path: Path
) -> None:
    """uv's whole output of the failed build was streamed to the console (some 70 lines of
    a setup.py's traceback for pyyaml 5.4.1), then its reason said again on the skipped line
    and a third time in the table: now one line, with where the whole output is kept.

    Run from a project folder with `--out out` as typed: the log's path is absolute (it was
    `out/runs/...`, true from that cwd only, and bisect.md's link, read from its own folder,
    pointed nowhere), and the build ran once, so one copy is kept (one per attempt before)."""
    spec, wheels = demo_project(tmp_path, first_bad="1.4", broken="1.3")
    project = tmp_path / "project"
    project.mkdir()
    out = project / "out"
    done = cli(*demo_bisect(spec, wheels, "out"), env=own_envs(tmp_path), timeout=600, cwd=project)
    assert done.code == 0, done.stderr
    said = "this release has no wheel for this Python and cannot build"  # the backend's words
    console = done.stdout + done.stderr
    assert console.count(said) == 1, console
    assert "[stderr]" not in console, console
    assert "hint:" not in console, console
    skipped = [line for line in done.stderr.splitlines() if line.startswith("reprospec: 1.3:")]
    assert len(skipped) == 1, done.stderr
    prefix = f"reprospec: 1.3: skipped: cannot be installed: {said} (build log: "
    assert skipped[0].startswith(prefix), skipped
    log = Path(skipped[0].removeprefix(prefix).removesuffix(")"))
    assert log.name == "build.log"
    assert log.is_absolute(), log
    assert log.is_relative_to(out.resolve() / "runs")
    whole = log.read_text()
    assert f"error: Failed to build `{DEMO}==1.3" in whole
    assert said in whole
    run = log.parents[3]  # RUN/cells/CELL/N/build.log
    assert len(list(run.glob("cells/*/*/build.log"))) == 1, "one build, one copy"
    row = next(line for line in done.stdout.splitlines() if line.startswith("  1.3 "))
    assert row.split() == ["1.3", "skipped", "0/0", "cannot", "be", "installed"]
    # bisect.md keeps the reason whole, and links the log from its own folder.
    report_md = next(out.glob("bisect/*/bisect.md"))
    report = report_md.read_text()
    assert f"not installable: environment for default not built: cannot install {DEMO}==1.3" in (
        report
    )
    link = report.split("([build log](", 1)[1].split(")", 1)[0]
    assert (report_md.parent / link).resolve() == log
    assert "uv's whole output" not in report, "said once: the link"
    tested = json.loads(report_md.with_name("bisect.json").read_text())["tested"]
    assert [t["build_log"] for t in tested if t["version"] == "1.3"] == [str(log)]


def test_an_interrupted_bisect_resumes_where_it_stopped(tmp_path: Path) -> None:
    spec, wheels = demo_project(tmp_path, first_bad="1.5")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "reprospec", *demo_bisect(spec, wheels, out, "--format", "json")]
    env = {**os.environ, "NO_COLOR": "1", **own_envs(tmp_path)}
    # Rendezvous on the saved state: once one version's trial is in it, press Ctrl-C.
    states = out / "bisect"

    def one_trial_saved() -> bool:
        saved = list(states.glob("*/state.json")) if states.is_dir() else []
        return bool(saved) and bool(json.loads(saved[0].read_text())["trials"])

    first = interrupt_when(argv, one_trial_saved, env=env, wait_s=300)
    assert first.code == 130, first.stderr
    assert "rerun the same command to resume" in first.stderr
    (saved,) = states.glob("*/state.json")
    before = json.loads(saved.read_text())["trials"]
    # Its partial answer on stdout, as a stopped isolate's: what was tried so far (it
    # printed nothing).
    partial = json.loads(first.stdout)
    assert partial["status"] == "interrupted"
    assert partial["folder"] == str(saved.parent)
    assert {t["version"]: t for t in partial["tried"]} == before
    assert partial["attempts"] == sum(t["attempts"] for t in before.values())

    second = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "continuing bisect" in second.stderr
    result = json.loads(second.stdout)
    assert result["first_bad"] == "1.5"
    assert result["last_good"] == "1.4"
    # What ran before the interruption was kept, not run again.
    tested = {t["version"]: t for t in result["tested"]}
    for version, trial in before.items():
        assert tested[version]["attempts"] >= trial["attempts"]
        assert set(trial["runs"]) <= set(tested[version]["runs"])


def test_a_larger_budget_continues_a_bisect_and_another_timeout_starts_over(
    cli: Cli, tmp_path: Path
) -> None:
    # The rule of every search verb (docs/cli.md): a bisect's folder is keyed on what decides
    # a candidate's outcome, not on --budget; --timeout decides one (a hang at 5s may pass
    # at 60s) and was not in the key, so a bisect under another timeout judged versions by
    # the attempts of the old one.
    spec, wheels = demo_project(tmp_path, first_bad="1.5")
    env = own_envs(tmp_path)
    args = demo_bisect(spec, wheels, tmp_path / "out")
    short = cli(*args, "--budget", "3", env=env, timeout=600)
    assert short.code == 1, short.stderr
    assert "undecided: budget of 3 attempts spent" in short.stdout
    assert (
        "a larger --budget continues this bisect: its 3 attempts are replayed, not run again"
    ) in short.stdout
    (folder,) = (tmp_path / "out" / "bisect").iterdir()
    before = json.loads((folder / "state.json").read_text())["trials"]

    longer = cli(*args, "--budget", "150", "--format", "json", env=env, timeout=600)
    assert longer.code == 0, longer.stderr
    assert (
        f"continuing bisect {folder.name}: 3 attempts from an earlier run, counted in the "
        "budget of 150"
    ) in longer.stderr
    result = json.loads(longer.stdout)
    assert (result["id"], result["first_bad"], result["last_good"]) == (folder.name, "1.5", "1.4")
    tested = {t["version"]: t for t in result["tested"]}
    for version, trial in before.items():  # kept and counted, not run again
        assert set(trial["runs"]) <= set(tested[version]["runs"])
    assert result["attempts"] == sum(t["attempts"] for t in result["tested"])
    # A version asked again (here, or in the continuation) numbers its attempts after those
    # it ran: each probe numbered from 1 drew a `${{ attempt }}` seed's first values again.
    again = 0
    for version, trial in tested.items():
        numbers = sorted(
            attempt["attempt"]
            for run in trial["runs"]
            for cell in json.loads((tmp_path / "out" / "runs" / run / "results.json").read_text())[
                "cells"
            ]
            for attempt in cell["attempts"]
        )
        assert numbers == list(range(1, len(numbers) + 1)), (version, numbers)
        again += len(trial["runs"]) > 1
    assert again, tested

    timed = cli(*args, "--budget", "3", "--timeout", "20s", "--format", "json", env=env)
    assert timed.code == 1, timed.stderr
    assert "continuing bisect" not in timed.stderr
    assert json.loads(timed.stdout)["id"] != folder.name


# Fails from REGRESSED on, where the workdir's `code` says so: a command with no file of
# the workdir to digest, so two copies of the spec differ by their folder alone.
READS_CODE = f"""\
reprospec: 1
name: reads-code
environment:
  packages: ["{DEMO}==1.3"]
command: >-
  python -c "import sys, reprospec_bisectdemo as d;
  sys.exit(3 if d.REGRESSED and open('code').read() == 'bad' else 0)"
expect: {{outcome: error, exit_code: 3}}
"""


def test_another_spec_file_of_the_same_text_is_another_bisect(cli: Cli, tmp_path: Path) -> None:
    """The bisect's id was keyed on the spec's text, not its file: a copy in
    another folder, where no version fails, found the first's state and answered `first
    bad: 1.2`, nothing run. The same file by another path, from another folder, resumes."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    for folder, code in (("a", "bad"), ("b", "fine")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "code").write_text(code)
        (tmp_path / folder / "x.yaml").write_text(READS_CODE)
    env, out = own_envs(tmp_path), tmp_path / "out"

    def bisect(cwd: str, spec: str) -> CliResult:
        args = demo_bisect(Path(spec), wheels, out, "--format", "json", bad="1.3")
        return cli(*args, env=env, cwd=tmp_path / cwd, timeout=600)

    first = bisect("a", "x.yaml")
    assert first.code == 0, first.stderr
    found = json.loads(first.stdout)
    assert (found["first_bad"], found["last_good"]) == ("1.2", "1.1")
    again = bisect("b", "../a/x.yaml")
    assert again.code == 0, again.stderr
    assert f"continuing bisect {found['id']}: " in again.stderr
    other = bisect("b", "x.yaml")
    assert "continuing bisect" not in other.stderr
    assert other.code == 1, other.stderr
    data = json.loads(other.stdout)
    assert data["id"] != found["id"]
    assert data["first_bad"] is None
    assert data["status"] == "refused"
    assert data["reason"].startswith("the bad end 1.3 did not reproduce")


def test_a_spec_with_a_rate_stops_each_version_at_its_first_matching_failure(
    cli: Cli, tmp_path: Path
) -> None:
    """With `expect.rate`, a candidate's run stopped on the rate's interval, not on the
    first matching failure cli.md promises: the bad end ran all its 20 attempts however
    early it failed (9/20 in a flaky run whose third attempt matched)."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    spec = tmp_path / "rate.yaml"
    spec.write_text(READS_CODE.replace("exit_code: 3}", 'exit_code: 3, rate: ">=0.3"}'))
    (tmp_path / "code").write_text("bad")
    args = demo_bisect(spec, wheels, tmp_path / "out", "--format", "json", bad="1.3")
    done = cli(*args, env=own_envs(tmp_path), cwd=tmp_path, timeout=600)
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["first_bad"], result["last_good"]) == ("1.2", "1.1")
    tested = {t["version"]: t for t in result["tested"]}
    assert tested["1.3"]["attempts"] == tested["1.3"]["matched"] == 1
    # Every bad version stopped at its first match: one call, one attempt, each.
    for trial in tested.values():
        if trial["matched"]:
            assert trial["matched"] == len(trial["runs"]), trial


def test_envs_list_and_prune(cli: Cli, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    root = tmp_path / "envs"
    index = venvs.user_index_config([wheels])
    request = venvs.EnvRequest(venvs.find_interpreter(None), (f"{DEMO}==1.0",), index)
    env = venvs.ensure_env(request, root, user="my-spec")
    # No engine: `prune --all` would remove the docker runner's images of this machine's
    # engine too, which are not this test's (tests/real/docker/test_cache.py has them).
    alone = f"unix://{tmp_path}/no-engine.sock"
    variables = {venvs.ENVS_VARIABLE: str(root), "DOCKER_HOST": alone}
    listed = cli("envs", "list", "--json", env=variables)
    assert listed.code == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert (entry["kind"], entry["key"]) == ("venv", env.key)
    assert entry["used_by"] == ["my-spec"]
    assert entry["packages"] == [f"{DEMO}==1.0"]
    table = cli("envs", "list", env=variables)
    assert env.key in table.stdout
    assert "my-spec" in table.stdout
    # A small environment's total in a unit that says something: it read "0.0 MB".
    assert re.search(r"^1 environment, \d+\.\d KB \(files hard-linked", table.stdout, re.M), (
        table.stdout
    )
    kept = cli("envs", "prune", env=variables)  # default: unused for 30 days
    assert kept.code == 0
    assert env.path.exists()
    gone = cli("envs", "prune", "--all", env=variables)
    assert gone.code == 0
    assert f"removed {env.key}" in gone.stdout
    assert re.search(r"^removed 1 environment, \d+\.\d KB$", gone.stderr, re.M), gone.stderr
    assert f"docker images: not listed (no Docker engine answered at {alone})" in gone.stderr
    assert not env.path.exists()


def test_by_date_names_the_day_and_what_changed(cli: Cli, tmp_path: Path) -> None:
    """sqlparse 0.3.1 was uploaded on 2020-02-29: the first day whose environment reproduces."""
    spec = tmp_path / "by-date.yaml"
    spec.write_text(SQLPARSE_SPEC.read_text().replace('["sqlparse==0.4.2"]', '["sqlparse"]'))
    (tmp_path / "sqlparse_reindent.py").write_text(
        (SQLPARSE_SPEC.parent / "sqlparse_reindent.py").read_text()
    )
    done = cli(
        "bisect",
        str(spec),
        "--package",
        "sqlparse",
        "--by-date",
        "2020-02-25..2020-03-04",
        "--format",
        "json",
        "--out",
        str(tmp_path / "out"),
        env=shared_envs(),
        timeout=600,
    )
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["last_good"], result["first_bad"]) == ("2020-02-28", "2020-02-29")
    assert result["changed"] == [
        {"package": "sqlparse", "last_good": "0.3.0", "first_bad": "0.3.1"}
    ]


def test_nothing_that_can_run_is_exit_3_and_a_passing_cell_is_bad_usage(
    cli: Cli, tmp_path: Path
) -> None:
    # "Refused, exit 1" read as "the bad end does not reproduce" where nothing could run,
    # and a cell expected to pass ran 20 attempts before "did not reproduce".
    def bisect(out: str, override: str) -> CliResult:
        return cli(
            "bisect", str(SQLPARSE_SPEC), "--package", "sqlparse", "--good", "0.3.0",
            "--bad", "0.3.1", "--out", str(tmp_path / out), "--set", override,
            env=shared_envs(), timeout=600,
        )  # fmt: skip

    missing = bisect("out", "command=nosuchcmd-zz")
    assert missing.code == 3, missing.stdout + missing.stderr
    assert "cannot be tested: command not found: nosuchcmd-zz" in missing.stdout
    passing = bisect("fresh", "expect={outcome: pass}")
    assert passing.code == 2, passing.stdout + passing.stderr
    assert "bisect needs the cell's expect to say how it fails" in passing.stderr
    # The spec has one cell: no `-m` to choose another (the hint said `-m AXIS=VALUE`).
    assert "-m AXIS=VALUE" not in passing.stderr
    assert "write in its expect how the bad version fails" in passing.stderr
    assert not list((tmp_path / "fresh").glob("runs/*"))  # refused before anything ran


def test_a_tool_the_candidates_lack_is_refused_not_run_from_the_callers_venv(
    cli: Cli, tmp_path: Path
) -> None:
    """The spec's command is a console script its packages do not bring; the
    caller's activated venv has it (and the bad version). Each candidate ran the caller's
    tool and packages, and bisect refused with a false "the good end reproduces too"."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    check = (
        "import reprospec_bisectdemo as demo\n"
        "def main():\n"
        "    if demo.REGRESSED:\n"
        "        raise ValueError('the regression')\n"
    )
    make_wheel(wheels, "reprospec-democheck", "1.0", check,
               scripts={"demo-check": "reprospec_democheck:main"})  # fmt: skip
    caller = caller_venv(tmp_path / "caller-venv", wheels, f"{DEMO}==1.3", "reprospec-democheck")
    env = {
        **own_envs(tmp_path),
        "PATH": f"{caller / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(caller),
    }

    def bisect(packages: str) -> CliResult:
        spec = tmp_path / "check.yaml"
        spec.write_text(
            textwrap.dedent(f"""\
            reprospec: 1
            name: check
            environment:
              packages: {packages}
            command: demo-check
            expect:
              outcome: error
              exception: ValueError
            """)
        )
        return cli(*demo_bisect(spec, wheels, tmp_path / "out", bad="1.3"), env=env, timeout=600)

    refused = bisect(f'["{DEMO}==1.3"]')
    assert refused.code != 0, refused.stdout
    assert refused.stdout.startswith(
        f"refused: the bad end 1.3 cannot be tested: demo-check is not installed in the "
        f"cell's environment (found {caller / 'bin' / 'demo-check'}, another environment's"
    ), refused.stdout
    assert "reproduces too" not in refused.stdout
    # Listed, the tool runs from each candidate's own venv, with that candidate's version.
    found = bisect(f'["{DEMO}==1.3", "reprospec-democheck==1.0"]')
    assert found.code == 0, found.stderr + found.stdout
    assert "1.2" in found.stdout.splitlines()[0], found.stdout


def test_the_one_cell_the_spec_expects_to_fail_is_bisected_without_m(
    cli: Cli, tmp_path: Path
) -> None:
    # A spec of two cells whose expect says one fails was refused: "bisect runs one cell;
    # choose it with -m AXIS=VALUE" (new user).
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    (tmp_path / "check.py").write_text(
        "import sys\nimport reprospec_bisectdemo as demo\n"
        "if sys.argv[1] != 'off' and demo.REGRESSED:\n"
        "    raise ValueError('the regression')\n"
    )
    spec = tmp_path / "demo.yaml"
    body = textwrap.dedent(f"""\
        reprospec: 1
        name: bisect-cells
        matrix: {{check: ["off", "on"]}}
        environment:
          packages: ["{DEMO}==1.3"]
        command: python check.py ${{{{ matrix.check }}}}
        expect:
          outcome: error
          exception: ValueError
          cases:
            - {{when: {{check: "off"}}, outcome: pass}}
        """)
    spec.write_text(body)
    env = own_envs(tmp_path)

    def bisect(out: str, *args: str) -> CliResult:
        return cli(
            *demo_bisect(spec, wheels, tmp_path / out, *args, bad="1.3"), env=env, timeout=600
        )

    found = bisect("out")
    assert found.code == 0, found.stdout + found.stderr
    lines = found.stdout.splitlines()
    assert lines[0] == f"first bad: {DEMO} 1.2 (last good 1.1)"
    assert lines[1] == "cell check=on: the only one of 2 cells expected to fail"
    assert "cell check=on: the only one of 2 cells expected to fail" in found.stderr
    (folder,) = (tmp_path / "out" / "bisect").iterdir()
    assert "Cell: `check=on` (the only one of 2 cells expected to fail)" in (
        (folder / "bisect.md").read_text()
    )
    # Only that cell ran, in every candidate's run.
    for run in (tmp_path / "out" / "runs").iterdir():
        cells = json.loads((run / "results.json").read_text())["cells"]
        assert [c["id"] for c in cells] == ["check=on"]
    # Two cells expected to fail: refused before anything is built, each with its -m.
    spec.write_text(body.replace('["off", "on"]', '["off", "on", "loud"]'))
    refused = bisect("two")
    assert refused.code == 2, refused.stdout + refused.stderr
    assert refused.stderr == (
        f"reprospec: bisect runs one cell, and 2 cells of {spec} are expected to fail: "
        "choose one with -m: -m check=on (cell check=on); -m check=loud (cell check=loud)\n"
    )
    assert not (tmp_path / "two").exists()


def test_an_axis_that_feeds_the_package_version_is_not_warned_of_in_a_candidate_run(
    cli: Cli, tmp_path: Path
) -> None:
    """The candidate runs replace the spec's packages and expect: the axis `v` that fed the
    package's version was read by nothing there, and every candidate's report.md told the
    user "matrix axis 'v' is read by nothing ... use run.repeat" of a spec that was right."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    (tmp_path / "check.py").write_text(
        "import reprospec_bisectdemo as demo\nif demo.REGRESSED:\n    raise ValueError('r')\n"
    )
    spec = tmp_path / "demo.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
            reprospec: 1
            name: bisect-axis
            matrix: {{v: ["1.0", "1.3"]}}
            environment:
              packages: ["{DEMO}==${{{{ matrix.v }}}}"]
            command: python check.py
            expect:
              outcome: error
              exception: ValueError
              cases:
                - {{when: {{v: "1.0"}}, outcome: pass}}
            """)
    )
    found = cli(
        *demo_bisect(spec, wheels, tmp_path / "out", bad="1.3"), env=own_envs(tmp_path), timeout=600
    )
    assert found.code == 0, found.stdout + found.stderr
    assert found.stdout.splitlines()[0] == f"first bad: {DEMO} 1.2 (last good 1.1)"
    assert "read by nothing" not in found.stderr
    runs = list((tmp_path / "out" / "runs").iterdir())
    assert runs
    for run in runs:
        assert "read by nothing" not in (run / "report.md").read_text()


def test_preload_forks_each_version_from_a_server_of_its_own(cli: Cli, tmp_path: Path) -> None:
    # `bisect --preload MOD`, as run's: bisect had no --preload. Preloading the very package
    # bisected is the case to get right: each version's attempts fork from a server of that
    # version's environment (a server is keyed by its interpreter), never from another's.
    spec, wheels = demo_project(tmp_path, first_bad="1.4")
    out = tmp_path / "out"
    done = cli(
        *demo_bisect(spec, wheels, out, "--format", "json", "--preload", DEMO.replace("-", "_")),
        env=own_envs(tmp_path),
        timeout=600,
    )
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["first_bad"], result["last_good"]) == ("1.4", "1.3")
    launches = []
    for results in (out / "runs").glob("*/results.json"):
        run = json.loads(results.read_text())
        launches += [a["launch"] for c in run["cells"] for a in c["attempts"]]
    assert len(launches) >= 5
    assert set(launches) == {"forked"}, launches


def test_a_spec_without_expect_is_bad_usage_before_anything_runs(cli: Cli, tmp_path: Path) -> None:
    # A one-cell spec without `expect` (observe mode) matched every outcome: a pass
    # was "1 matching failure", and the bisect refused after 23 attempts with "the good end
    # 20.0 reproduces too ... seen: pass x1", exit 1, where a spec expected to pass is
    # refused at once, exit 2.
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    (tmp_path / "check.py").write_text(
        "import reprospec_bisectdemo as demo\n"
        "if demo.REGRESSED:\n"
        "    raise ValueError('the regression')\n"
    )
    spec = tmp_path / "observe.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: bisect-observe
        environment:
          packages: ["{DEMO}==1.3"]
        command: python check.py
        """)
    )
    refused = cli(*demo_bisect(spec, wheels, tmp_path / "out", bad="1.3"), env=own_envs(tmp_path))
    assert refused.code == 2, refused.stdout + refused.stderr
    assert refused.stderr == (
        "reprospec: bisect needs the cell's expect to say how it fails; default is observed "
        "(no expect): write in its expect how the bad version fails (with --good the newer "
        "version, bisect finds the release that fixed it)\n"
    )
    assert not (tmp_path / "out").exists()  # refused before anything was built or ran


def test_a_pre_release_end_is_bisected_to_without_pre(cli: Cli, tmp_path: Path) -> None:
    """`--bad 26.0rc1` was "not a released version of packaging on the configured
    index": the index lists pre-releases only when asked, and an end named is asked for.
    The pre-releases in between stay out unless --pre."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    make_wheel(wheels, DEMO, "1.1rc1", regressed_from_1_2(1))
    make_wheel(wheels, DEMO, "1.4rc1", regressed_from_1_2(4))
    (tmp_path / "code").write_text("bad")
    spec = tmp_path / "x.yaml"
    spec.write_text(READS_CODE)
    done = cli(
        *demo_bisect(spec, wheels, tmp_path / "out", "--format", "json", bad="1.4rc1"),
        env=own_envs(tmp_path),
        cwd=tmp_path,
        timeout=600,
    )
    assert done.code == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["versions"] == ["1.0", "1.1", "1.2", "1.3", "1.4rc1"]
    assert (found["first_bad"], found["last_good"]) == ("1.2", "1.1")


def test_a_bisect_stopped_while_listing_versions_says_nothing_was_saved(tmp_path: Path) -> None:
    """Ctrl-C while `pip index versions` waits on the index said "run the same command
    again to resume", where nothing had been saved to resume. The index here is a socket
    that takes the connection and never answers: the listing is under way once it has."""
    import select
    import socket

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\ncommand: [python, -c, 'raise SystemExit(1)']\n"
        "expect: {outcome: error}\n"
    )
    with socket.create_server(("127.0.0.1", 0)) as index:
        port = index.getsockname()[1]
        argv = [
            sys.executable, "-m", "reprospec", "bisect", str(spec), "--package", "sqlparse",
            "--good", "0.4.0", "--bad", "0.4.4", "--out", str(tmp_path / "out"),
        ]  # fmt: skip
        url = f"http://127.0.0.1:{port}/simple"
        env = {"UV_DEFAULT_INDEX": url, "UV_INDEX_URL": url, "PIP_RETRIES": "0"}
        stopped = interrupt_when(
            argv, lambda: bool(select.select([index], [], [], 0)[0]), env=env, wait_s=60
        )
    assert stopped.code == 130, stopped.stderr
    assert "resume" not in stopped.stderr, stopped.stderr
    assert (
        "reprospec: interrupted while listing sqlparse's versions, before any version was "
        "tried: nothing was saved (the same command starts over)"
    ) in stopped.stderr, stopped.stderr
    assert stopped.stdout.strip() == "bisect stopped before any version was tried"


def test_a_second_bisect_of_a_folder_in_use_is_refused(cli: Cli, tmp_path: Path) -> None:
    """The same bisect started twice on one --out each tried every version, and the last
    to write state.json dropped the other's trials: the second is refused, told the folder
    and the pid that holds it; the holder killed, its lock is taken over."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    (tmp_path / "code").write_text("bad")
    (tmp_path / "x.yaml").write_text(READS_CODE)
    env, out = own_envs(tmp_path), tmp_path / "out"
    args = demo_bisect(tmp_path / "x.yaml", wheels, out, "--format", "json", bad="1.3")
    first = cli(*args, env=env, timeout=600)
    assert first.code == 0, first.stderr
    found = json.loads(first.stdout)
    folder = out / "bisect" / found["id"]
    with held_elsewhere(folder) as pid:
        refused = cli(*args, env=env, timeout=600)
    assert refused.code == 2, refused.stderr
    assert refused_as_held(f"bisect {found['id']}", folder, pid) in refused.stderr
    assert "Traceback" not in refused.stderr
    again = cli(*args, env=env, timeout=600)
    assert again.code == 0, again.stderr
    assert f"continuing bisect {found['id']}: " in again.stderr


def test_an_interrupted_bisect_whose_trials_could_not_be_saved_says_so(tmp_path: Path) -> None:
    """A trial's save that fails is left to the final save's warning; interrupted before
    it, the bisect said "rerun the same command to resume" where state.json lacked the
    trials. Here the program's passing attempt puts a folder where state.json goes (every
    write of it then fails, root or not), and its next attempt waits for the Ctrl-C."""
    wheels = make_releases(tmp_path / "wheels", DEMO, 4, regressed_from_1_2)
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "prog.py").write_text(
        textwrap.dedent(f"""\
        import pathlib, time
        import reprospec_bisectdemo as demo
        assert not demo.REGRESSED
        marks = pathlib.Path({str(marks)!r})
        if not (marks / "spoiled").exists():
            (folder,) = (p for p in pathlib.Path({str(out)!r}, "bisect").iterdir() if p.is_dir())
            state = folder / "state.json"
            if state.is_file():
                state.unlink()
            (state / "held").mkdir(parents=True, exist_ok=True)
            (marks / "spoiled").write_text("")
        else:
            (marks / "waiting").write_text("")
            time.sleep(300)
        """)
    )
    (tmp_path / "x.yaml").write_text(
        "reprospec: 1\nname: x\ncommand: python prog.py\n"
        "expect:\n  outcome: error\n  exception: AssertionError\n"
    )
    argv = [
        sys.executable, "-m", "reprospec",
        *demo_bisect(tmp_path / "x.yaml", wheels, out, bad="1.3"),
    ]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", **own_envs(tmp_path)}
    stopped = interrupt_when(argv, (marks / "waiting").exists, env=env, wait_s=300)
    assert stopped.code == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "rerun the same command to resume" not in stopped.stderr, stopped.stderr
    (folder,) = (p for p in (out / "bisect").iterdir() if p.is_dir())
    assert (
        f"interrupted; its trials could not be saved in {folder} (Is a directory): the same "
        "command starts over from what state.json holds"
    ) in stopped.stderr, stopped.stderr
