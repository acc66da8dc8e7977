"""`history` and `compare` answer questions: whole run ids, JSON, `latest`, and what changed."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from reprospec.store.refs import resolve_run_id
from tests.support.cli import SPECS, Cli, interrupt_when
from tests.support.engine import kill_with_its_watchdog
from tests.support.paths import ROOT

SEGFAULT = str(SPECS / "segfault-command.yaml")


def _exit_spec(tmp_path: Path, code: int) -> Path:
    spec = tmp_path / "exits.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: exits\n"
        f"command: [{sys.executable}, -c, 'import sys; sys.exit({code})']\n"
        "expect: {outcome: pass}\n"
    )
    return spec


def test_history_prints_whole_run_ids_and_json(cli: Cli, tmp_path: Path) -> None:
    spec = _exit_spec(tmp_path, 0)
    first = cli("run", str(spec))
    second = cli("run", str(spec), "-j", "2")
    assert (first.code, second.code) == (0, 0)
    ids = [first.latest_run().name, second.latest_run().name]
    assert ids[0] != ids[1]
    table = cli("history")
    assert table.code == 0, table.stderr
    for run_id in ids:
        assert run_id in table.stdout  # whole: one can copy it from here
    assert "…" not in table.stdout
    listed = json.loads(cli("history", "--format", "json").stdout)
    assert [row["run_id"] for row in listed] == ids[::-1]  # newest first
    assert listed[0]["verdicts"] == {
        "reproduced": 1,
        "not_reproduced": 0,
        "undecided": 0,
        "infra_error": 0,
        "observed": 0,
        "not_run": 0,
    }
    assert listed[0]["cells"] == 1
    assert listed[0]["status"] == "finished"
    # An observed run (capture's first, `run --observe`) is counted as such: it read
    # "none judged; 1 attempt stored", as if it had ended before judging its cell.
    assert cli("run", str(spec), "--observe").code == 0
    observed = cli("history")
    assert "1 observed" in observed.stdout, observed.stdout
    assert "none judged" not in observed.stdout
    assert json.loads(cli("history", "--format", "json").stdout)[0]["verdicts"]["observed"] == 1
    assert (
        json.loads(cli("history", "--format", "json", "--out", str(tmp_path / "none")).stdout) == []
    )


def test_history_of_a_spec_file_lists_its_runs_and_not_another_files_of_that_name(
    cli: Cli, tmp_path: Path
) -> None:
    # Filtered by the spec's name alone, it listed a copy's runs (an amplified.yaml, a
    # colleague's file) too; a file that is not there said "no runs recorded yet", exit 0.
    spec = _exit_spec(tmp_path, 0)
    copy = tmp_path / "copy" / "exits.yaml"
    copy.parent.mkdir()
    copy.write_text(spec.read_text())
    own = cli("run", str(spec)).latest_run().name
    other = cli("run", str(copy)).latest_run().name
    listed = json.loads(cli("history", str(spec), "--format", "json").stdout)
    assert [row["run_id"] for row in listed] == [own]
    by_name = json.loads(cli("history", "exits", "--format", "json").stdout)
    assert [row["run_id"] for row in by_name] == [other, own]
    # The file's runs under any name its spec had: renamed, its earlier run is still its.
    spec.write_text(spec.read_text().replace("name: exits", "name: exits-renamed"))
    renamed = cli("run", str(spec)).latest_run().name
    listed = json.loads(cli("history", str(spec), "--format", "json").stdout)
    assert [row["run_id"] for row in listed] == [renamed, own]
    missing = cli("history", str(tmp_path / "nosuch.yaml"))
    assert missing.code == 2
    assert "nosuch.yaml: no such file" in missing.stderr
    # A copy never run: "no runs recorded yet" hid the runs of its name, from the others.
    third = tmp_path / "third.yaml"
    third.write_text(copy.read_text())
    unrun = cli("history", str(third))
    assert unrun.code == 0, unrun.stderr
    assert f"no runs recorded yet for {third}" in unrun.stdout
    assert (
        "2 runs of a spec named 'exits' from another file: `reprospec history exits --out "
        f"{unrun.out}` lists them"
    ) in unrun.stdout


def test_history_of_a_spec_whose_listed_file_is_gone_since_lists_its_runs(
    cli: Cli, tmp_path: Path
) -> None:
    # `files: [data.txt]`, removed after the run (a dataset rotated, a temp input): the
    # spec was loaded with its files looked for only to be named, and `history spec.yaml`
    # exited 2 ("files[0]: 'data.txt' not found in the workdir") about runs in the store.
    data = tmp_path / "data.txt"
    data.write_text("rows\n")
    spec = tmp_path / "listed.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: listed\n"
        f"command: [{sys.executable}, -c, 'open(\"data.txt\").read()']\n"
        "files: [data.txt]\n"
        "expect: {outcome: pass}\n"
    )
    ran = cli("run", str(spec))
    assert ran.code == 0, ran.stderr
    data.unlink()
    listed = cli("history", str(spec), "--format", "json")
    assert listed.code == 0, listed.stderr
    assert [row["run_id"] for row in json.loads(listed.stdout)] == [ran.latest_run().name]
    # A spec broken otherwise is still said, exit 2: only its files are not looked for.
    spec.write_text(spec.read_text().replace("expect: {outcome: pass}", "expect: {outcome: 3}"))
    broken = cli("history", str(spec))
    assert broken.code == 2
    assert "expect.outcome" in broken.stderr


def test_latest_is_accepted_wherever_a_run_id_is(cli: Cli, tmp_path: Path) -> None:
    spec = _exit_spec(tmp_path, 0)
    older, newer = cli("run", str(spec)), cli("run", str(spec), "-j", "2")
    old_id, new_id = older.latest_run().name, newer.latest_run().name
    report = cli("report", "latest", "--format", "json")
    assert report.code == 0
    assert json.loads(report.stdout)["run_id"] == new_id
    assert json.loads(cli("report", "latest~1", "--format", "json").stdout)["run_id"] == old_id
    assert json.loads(cli("report", "latest~0", "--format", "json").stdout)["run_id"] == new_id
    too_far = cli("report", "latest~2")
    assert too_far.code == 2
    assert "latest~2" in too_far.stderr
    assert "only 2 runs" in too_far.stderr
    assert "Traceback" not in too_far.stderr
    compared = cli("compare", "latest~1", "latest")
    assert compared.code == 0
    assert f"{old_id} -> {new_id}" in compared.stdout
    # One run twice (`latest latest`, for `latest~1 latest`) said "no cell changed".
    itself = cli("compare", "latest", new_id)
    assert itself.code == 2, itself.stdout
    assert f"both runs given are run {new_id}: compare two runs" in itself.stderr
    merged = cli("merge", "latest")
    assert merged.code == 0, merged.stderr
    # The merged run has a folder and no store row of its own: it is the latest now.
    out = older.out
    assert resolve_run_id("latest", out) not in (old_id, new_id)
    assert resolve_run_id("latest~1", out) == new_id


def test_a_searchs_probe_runs_are_left_out_of_history_and_latest(cli: Cli, tmp_path: Path) -> None:
    # A minimize makes a run per probe, a thousand of them: history listed them as the
    # user's own (1,054 "not reproduced" among one real run), and `latest` was a probe.
    from reprospec import api
    from reprospec.core.runoptions import RunOptions

    spec = _exit_spec(tmp_path, 0)
    mine = cli("run", str(spec))
    out = mine.out
    for purpose in ("isolate", "minimize"):
        api.run(spec, RunOptions(out=out, purpose=purpose))
    listed = json.loads(cli("history", "--format", "json").stdout)
    assert [row["run_id"] for row in listed] == [mine.latest_run().name]
    assert listed[0]["purpose"] == "run"
    table = cli("history")
    assert "2 runs of isolate, minimize, amplify or bisect left out" in table.stdout
    every = json.loads(cli("history", "--format", "json", "--searches").stdout)
    assert [row["purpose"] for row in every] == ["minimize", "isolate", "run"]
    assert "│ minimize │" in cli("history", "--searches").stdout  # the `by` column
    assert resolve_run_id("latest", out) == mine.latest_run().name
    assert json.loads(cli("report", "latest", "--format", "json").stdout)["run_id"] == (
        mine.latest_run().name
    )


def test_resume_latest(tmp_path: Path) -> None:
    import threading

    import reprospec

    spec = tmp_path / "four.yaml"
    spec.write_text(
        "reprospec: 1\nname: four\nmatrix: {n: [1, 2, 3, 4]}\n"
        # The cells after the first take a second each: progress is told of an attempt after
        # it ended, and in the full suite the four attempts of `pass` had all ended first.
        f"command: [{sys.executable}, -c, 'import sys, time; time.sleep(int(sys.argv[1]) > 1)', "
        "'${{ matrix.n }}']\nexpect: {outcome: pass}\n"
    )
    cancel = threading.Event()

    def progress(event: str, _cell: object, _res: object, finished: int, _total: int) -> None:
        if event == "attempt" and finished >= 1:
            cancel.set()

    out = tmp_path / "out"
    stopped = reprospec.run(
        spec, reprospec.RunOptions(out=out, jobs=1), progress=progress, cancel=cancel
    )
    assert stopped.interrupted
    import subprocess
    import time

    time.sleep(1.1)  # the resume begins in a later second than the run did
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "--resume", "latest", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "runs" / stopped.run_id / "results.json").read_text())
    assert [len(c["attempts"]) for c in results["cells"]] == [1, 1, 1, 1]
    # The run began when it first did, not at its resume.
    assert results["started"] == stopped.started


def test_compare_says_what_changed_and_why(cli: Cli) -> None:
    first = cli("run", SEGFAULT, "-m", "num_workers=2", "-m", "pin_memory=true", "-j", "1")
    second = cli(
        "run",
        SEGFAULT,
        "-m",
        "num_workers=2",
        "-m",
        "pin_memory=true",
        "-j",
        "2",
        "--set",
        "expect.signal=SIGBUS",
    )
    assert (first.code, second.code) == (0, 1)
    a, b = first.latest_run().name, second.latest_run().name
    text = cli("compare", a, b)
    assert text.code == 0, text.stderr
    out = text.stdout
    # The spec: the same name with other text, and the diff that says how.
    assert (
        "warning: both runs ran spec 'val-segfault-pinned-workers-command', with other text:" in out
    )
    assert "-  signal: SIGSEGV" in out
    assert "+  signal: SIGBUS" in out
    # The options: -j and --set.
    assert "  jobs: 1 -> 2" in out
    assert "  overrides: (none) -> ['expect.signal=SIGBUS']" in out
    assert "same environment" in out
    # The cell: what it did did not change, what it was expected to do did.
    cell = "num_workers=2,pin_memory=true"
    assert f"  {cell}: reproduced -> not-reproduced (same outcome, different expectation)" in out
    assert "    expected  crash SIGSEGV @ validation:7 -> crash SIGBUS @ validation:7" in out
    outcome_line = next(line for line in out.splitlines() if line.startswith("    outcome"))
    assert "crash:SIGSEGV:main:validation" in outcome_line
    assert "->" not in outcome_line

    data = json.loads(cli("compare", a, b, "--format", "json").stdout)
    assert data["spec"]["same"] is False
    # Only what the --set changed, and the line that names it: the file as written and
    # the document written out again differed on every flow mapping and quote besides.
    changed = [line for line in data["spec"]["diff"][2:] if line[:1] in "+-"]
    assert changed == [
        "+# resolved from segfault-command.yaml with: --set expect.signal=SIGBUS",
        "-  signal: SIGSEGV",
        "+  signal: SIGBUS",
    ], data["spec"]["diff"]
    assert {"key": "jobs", "a": 1, "b": 2} in data["options"]
    (row,) = data["cells"]
    assert row["change"] == "same outcome, different expectation"
    assert row["outcomes"][0] == row["outcomes"][1]
    assert data["changed"] == [{"cell": cell, "before": "reproduced", "after": "not-reproduced"}]


def test_compare_shows_an_outcome_change_per_cell(cli: Cli, tmp_path: Path) -> None:
    passing = cli("run", str(_exit_spec(tmp_path, 0)))
    failing = cli("run", str(_exit_spec(tmp_path, 3)))
    out = cli("compare", passing.latest_run().name, failing.latest_run().name).stdout
    assert "  default: reproduced -> not-reproduced (outcome changed)" in out
    assert "    outcome   pass x1 -> error:exit-3 x1" in out
    assert "    expected  pass\n" in out
    assert "-command: [" in out
    assert "+command: [" in out
    # The same outcome, seen more times (`--repeat 3`): no cell changed.
    more = cli("run", str(_exit_spec(tmp_path, 0)), "--repeat", "3")
    again = cli("compare", passing.latest_run().name, more.latest_run().name).stdout
    assert "cells that changed" not in again, again


def test_compare_names_the_environment_variables_that_differ(cli: Cli, tmp_path: Path) -> None:
    # Real runs whose only difference is a variable: the engine's own (inherited by every
    # attempt), or one a toggle gives a cell. "same environment" was printed for both.
    secret = "tok_" + "x9" * 10
    token = "HF_FX_TEST_TOKEN"  # a hub variable (HF_*), secret by name; in no one's shell
    spec = tmp_path / "env.yaml"
    spec.write_text(
        "reprospec: 1\nname: env\nmatrix: {mode: [a, b]}\n"
        "environment:\n  env:\n"
        "    OMP_NUM_THREADS: \"${{ matrix.mode == 'b' and env.FX_OMP or '1' }}\"\n"
        f"command: [{sys.executable}, -c, 'print(1)']\n"
        "expect: {outcome: pass}\n"
    )
    runs = [
        cli("run", str(spec), env={"FX_OMP": "1"}),
        cli("run", str(spec), env={"FX_OMP": "8", token: secret}),
        cli("run", str(spec), env={"FX_OMP": "8", token: secret[::-1]}),
        cli("run", str(spec), env={"FX_OMP": "8", token: secret[::-1]}),
    ]
    assert [r.code for r in runs] == [0, 0, 0, 0], runs[0].stderr
    ids = [r.latest_run().name for r in runs]
    first = cli("compare", ids[0], ids[1])
    assert first.code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert "same environment" not in lines
    assert "environment variables that differ:" in lines
    assert f"  {token}: unset -> set (secret: values not shown)" in lines
    assert "  OMP_NUM_THREADS: '1' -> '8' (cell mode=b)" in lines
    assert secret not in first.stdout
    data = json.loads(cli("compare", ids[0], ids[1], "--format", "json").stdout)
    assert {"name": token, "a": None, "b": None, "change": "unset -> set", "cells": []} in (
        data["variables"]
    )
    assert "env.OMP_NUM_THREADS" in data["per_cell"]  # the capture's is one cell's value
    # The secret changed, set in both: said, without either value.
    second = cli("compare", ids[1], ids[2])
    assert f"  {token}: changed (secret: values not shown)" in second.stdout.splitlines()
    assert secret not in second.stdout
    assert secret[::-1] not in second.stdout
    # Nothing changed: the same environment, no digest read as a difference.
    same = cli("compare", ids[2], ids[3])
    assert "same environment" in same.stdout.splitlines(), same.stdout
    for run in ids:
        text = (tmp_path / "out" / "runs" / run / "results.json").read_text()
        assert secret not in text
        assert secret[::-1] not in text


def test_compare_tells_a_credential_of_a_plain_name_changed(cli: Cli, tmp_path: Path) -> None:
    # HF_ENDPOINT is no secret's name, but a URL with a password is masked by its shape:
    # `***` in both runs, undigested, and compare said "same environment" across the change.
    name = "HF_FX_ENDPOINT"
    spec = tmp_path / "env.yaml"
    spec.write_text(
        f"reprospec: 1\nname: env\ncommand: [{sys.executable}, -c, 'print(1)']\n"
        "expect: {outcome: pass}\n"
    )
    urls = ["https://u:firstpw111@hf.corp", "https://u:secondpw222@hf.corp"]
    runs = [cli("run", str(spec), env={name: url}) for url in urls]
    assert [r.code for r in runs] == [0, 0], runs[0].stderr
    said = cli("compare", *(r.latest_run().name for r in runs)).stdout
    assert f"  {name}: changed (secret: values not shown)" in said.splitlines(), said
    assert "firstpw111" not in said
    assert "secondpw222" not in said


def test_compare_names_a_variable_of_the_shell_the_capture_does_not_show(
    cli: Cli, tmp_path: Path
) -> None:
    """`FX_APP_MODE=fast reprospec run ...` fails where the plain run passed: compare said
    "same environment" beside the flipped verdict, the variable being none the capture
    shows by value. It is recorded by digest only: its value is in no file."""
    spec = tmp_path / "mode.yaml"
    spec.write_text(
        "reprospec: 1\nname: mode\nexpect: {outcome: pass}\n"
        f"command: [{sys.executable}, -c, 'import os, sys; "
        'sys.exit(3 if os.environ.get("FX_APP_MODE", "").startswith("fast") else 0)\']\n'
    )
    runs = [
        cli("run", str(spec), env={"SHLVL": "2"}),
        cli("run", str(spec), env={"FX_APP_MODE": "fast-q7x3", "SHLVL": "7"}),
        cli("run", str(spec), env={"FX_APP_MODE": "slow-q7x3"}),
        cli("run", str(spec), env={"FX_APP_MODE": "slow-q7x3"}),
    ]
    assert [r.code for r in runs] == [0, 1, 0, 0], runs[1].stderr
    ids = [r.latest_run().name for r in runs]
    first = cli("compare", ids[0], ids[1]).stdout.splitlines()
    assert "same environment" not in first
    differ = first[first.index("environment variables that differ:") + 1 :]
    # The one that matters, and none of a shell's bookkeeping (SHLVL differed too).
    assert (
        differ[0] == "  FX_APP_MODE: unset -> set (inherited from the shell: values not recorded)"
    )
    assert differ[1] == "cells that changed:"
    changed = cli("compare", ids[1], ids[2]).stdout.splitlines()
    assert "  FX_APP_MODE: changed (inherited from the shell: values not recorded)" in changed
    same = cli("compare", ids[2], ids[3]).stdout.splitlines()
    assert "same environment" in same, same
    for run in ids:
        text = (tmp_path / "out" / "runs" / run / "results.json").read_text()
        assert "q7x3" not in text


def test_a_resumed_run_is_running_while_it_runs_and_killed_when_its_engine_is(
    cli: Cli, tmp_path: Path
) -> None:
    # The store kept `interrupted` through the resume, and after a SIGKILL of the resuming
    # engine history still said `interrupted`, where cli.md promises `killed`.
    started, hold = tmp_path / "started", tmp_path / "hold"
    hold.touch()
    spec = tmp_path / "slow.yaml"
    spec.write_text(
        "reprospec: 1\nname: slow\nrun: {repeat: 3, timeout: 5m}\nexpect: {outcome: pass}\n"
        f'command: [{sys.executable}, -c, "import pathlib, time; '
        f"pathlib.Path({str(started)!r}).touch(); "
        f'[time.sleep(0.05) for _ in iter(pathlib.Path({str(hold)!r}).exists, False)]"]\n'
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)]
    assert interrupt_when(argv, started.exists).code == 130
    (run_id,) = [p.name for p in (out / "runs").iterdir()]

    def status() -> str:
        listed = cli("history", "--format", "json", "--out", str(out))
        (row,) = json.loads(listed.stdout)
        return str(row["status"])

    assert status() == "interrupted"
    started.unlink()
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert engine.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert status() == "running"
        kill_with_its_watchdog(engine)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    assert status() == "killed"
    # Let go: the next resume ends what the killed engine left and finishes the run.
    hold.unlink()
    finished = cli("run", "--resume", run_id, "--out", str(out))
    assert finished.code == 0, finished.stderr
    assert status() == "finished"


def test_compare_lists_the_program_files_that_changed(cli: Cli, tmp_path: Path) -> None:
    """The user edited train.py between two runs: compare said the spec, the options and
    the environment were the same, and nothing of the program. Now it names the files
    added, removed and changed (paths only), and a run without their record is unknown."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "util.py").write_text("VALUE = 3\n")
    (work / "train.py").write_text("import sys\nimport util\nsys.exit(util.VALUE)\n")
    (work / "cfg.yaml").write_text("lr: 1\n")
    spec = work / "train.yaml"
    spec.write_text(
        "reprospec: 1\nname: train\nfiles: [cfg.yaml]\n"  # declared as read: compared
        f"command: [{sys.executable}, train.py, --config, cfg.yaml]\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    first = cli("run", str(spec))
    (work / "train.py").write_text("import sys\nimport helper, util\nsys.exit(util.VALUE)\n")
    (work / "helper.py").write_text("'''a module train.py now imports'''\n")
    second = cli("run", str(spec))
    third = cli("run", str(spec))
    assert [r.code for r in (first, second, third)] == [0, 0, 0], first.stderr
    ids = [r.latest_run().name for r in (first, second, third)]

    lines = cli("compare", ids[0], ids[1]).stdout.splitlines()
    assert "same spec" in lines
    at = lines.index("program files that differ:")
    assert lines[at + 1 : at + 3] == [
        "  train.py: changed",
        "  helper.py: added (only in the second run)",
    ]
    assert not any("util.py" in line or "cfg.yaml" in line for line in lines), lines
    data = json.loads(cli("compare", ids[0], ids[1], "--format", "json").stdout)
    assert data["files"] == {
        "added": ["helper.py"],
        "removed": [],
        "changed": ["train.py"],
        "by_size": [],
        "same": 2,
        "unknown": "",
        "workdirs": [],
        "named": [],
        "partial": "",
    }
    back = cli("compare", ids[1], ids[0]).stdout.splitlines()
    assert "  helper.py: removed (only in the first run)" in back
    assert "same program files (4)" in cli("compare", ids[1], ids[2]).stdout.splitlines()

    # A run of an older store kept no digests: unknown, never "same".
    results = tmp_path / "out" / "runs" / ids[2] / "results.json"
    old = json.loads(results.read_text())
    del old["environment"]["program_files"]
    results.write_text(json.dumps(old))
    unknown = cli("compare", ids[1], ids[2])
    assert unknown.code == 0, unknown.stderr
    said = [line for line in unknown.stdout.splitlines() if "program files" in line]
    assert said == [
        f"program files: unknown ({ids[2]} kept no digests of the program's files (made "
        "before runs recorded them, or its store could keep no key))"
    ], unknown.stdout
    files = json.loads(cli("compare", ids[1], ids[2], "--format", "json").stdout)["files"]
    assert files["unknown"]
    assert (files["same"], files["changed"]) == (0, [])


def test_compare_matches_a_file_by_its_path_in_its_workdir(cli: Cli, tmp_path: Path) -> None:
    """amplify's amplified.yaml runs the program from an absolute workdir, and a bundle's
    rerun from the bundle's tree: compare read the same train.py, by other paths, as
    "removed" and "added". It is matched by its path in its workdir: the same file, and
    in a rerun of another store, one whose change is unknown."""
    (tmp_path / "app").mkdir()
    train = tmp_path / "app" / "train.py"
    train.write_text("import sys\nsys.exit(3)\n")
    body = f"command: [{sys.executable}, train.py]\nexpect: {{outcome: error, exit_code: 3}}\n"
    spec = tmp_path / "train.yaml"
    spec.write_text(f"reprospec: 1\nname: train\nenvironment: {{workdir: app}}\n{body}")
    # As amplify writes it: in a folder of its own, the workdir absolute.
    (tmp_path / "amplify").mkdir()
    amplified = tmp_path / "amplify" / "amplified.yaml"
    amplified.write_text(
        f"reprospec: 1\nname: train\nenvironment: {{workdir: '{tmp_path / 'app'}'}}\n{body}"
    )
    first, second = cli("run", str(spec)), cli("run", str(amplified))
    assert (first.code, second.code) == (0, 0), second.stderr
    ids = [r.latest_run().name for r in (first, second)]
    lines = cli("compare", *ids).stdout.splitlines()
    at = lines.index("same program files (1)")
    assert (
        lines[at + 1]
        == f"  matched by their paths in each run's workdir: app -> {tmp_path / 'app'}"
    )
    assert not any("added" in line or "removed" in line for line in lines), lines
    train.write_text("import sys\nsys.exit(3)  # edited\n")
    edited = cli("run", str(amplified))
    assert edited.code == 0, edited.stderr
    lines = cli("compare", ids[0], edited.latest_run().name).stdout.splitlines()
    at = lines.index("program files that differ:")
    assert lines[at + 1] == "  app/train.py: changed"

    # The bundle of the absolute-workdir run, rerun elsewhere (its own store).
    train.write_text("import sys\nsys.exit(3)\n")
    packed = tmp_path / "train.tar.gz"
    assert cli("bundle", ids[1], "-o", str(packed), "--out", str(tmp_path / "out")).code == 0
    (tmp_path / "fresh").mkdir()
    rerun = cli(
        "run",
        str(packed),
        "--yes",
        "--out",
        str(tmp_path / "fresh" / "out"),
        cwd=tmp_path / "fresh",
    )
    assert rerun.code == 0, rerun.stderr
    again = rerun.latest_run()
    data = json.loads(cli("compare", ids[0], str(again), "--format", "json").stdout)["files"]
    assert (data["added"], data["removed"], data["changed"]) == ([], [], [])
    assert data["unknown"].startswith("whether the 1 file in both runs changed is unknown")
    assert data["workdirs"][0] == "app"
    assert data["workdirs"][1].endswith("/app")


def test_compare_tells_a_clear_change_of_a_cells_failure_rate(cli: Cli, tmp_path: Path) -> None:
    """A flaky failure's rate is its news: 2/20 -> 18/20 (95% intervals apart) with the
    same outcomes, verdict and expectation read "no cell changed". The program fails in
    the first K of every 20 attempts (a counter file), K set per run."""
    (tmp_path / "race.py").write_text(
        "import os, pathlib\n"
        "counter = pathlib.Path(os.environ['COUNTER'])\n"
        "n = int(counter.read_text()) if counter.exists() else 0\n"
        "counter.write_text(str(n + 1))\n"
        "if n % 20 < int(os.environ['K']):\n"
        "    raise RuntimeError('lost updates')\n"
    )
    spec = tmp_path / "race.yaml"
    spec.write_text(
        "reprospec: 1\nname: race\n"
        f"environment: {{env: {{COUNTER: '{tmp_path / 'count'}', K: '2'}}}}\n"
        f"command: [{sys.executable}, race.py]\n"
        "expect: {outcome: error, exception: RuntimeError, rate: '>0'}\n"
    )
    ids = []
    for k in ("2", "4", "18"):
        (tmp_path / "count").unlink(missing_ok=True)
        ran = cli("run", str(spec), "--repeat", "20", "-j", "1", "--set", f"environment.env.K={k}")
        assert ran.code == 0, ran.stderr
        ids.append(ran.latest_run().name)
    # 2/20 and 4/20: within chance of each other, no change.
    assert "no cell changed" in cli("compare", ids[0], ids[1]).stdout.splitlines()
    lines = cli("compare", ids[0], ids[2]).stdout.splitlines()
    at = lines.index("cells that changed:")
    assert lines[at + 1 : at + 5] == [
        "  default: reproduced, both runs (failure rate changed)",
        "    outcome   error:RuntimeError x2, pass x18 -> error:RuntimeError x18, pass x2",
        "    expected  error RuntimeError rate >0",
        "    failed    2/20 (0.02–0.31) -> 18/20 (0.69–0.98) (95% intervals apart)",
    ]
    cells = json.loads(cli("compare", ids[0], ids[2], "--format", "json").stdout)["cells"]
    assert [c["failed"] for c in cells] == [[[2, 20], [18, 20]]]


def _unique_prefix(run_id: str, other: str) -> str:
    """The shortest prefix of `run_id` past its date that `other` does not start with: two
    runs begun in the same second share all but their last characters."""
    return next(
        run_id[:n] for n in range(len("20261130-194146"), len(run_id) + 1)
        if not other.startswith(run_id[:n])
    )  # fmt: skip


def test_history_and_report_agree_on_a_run_whose_folder_was_removed(
    cli: Cli, tmp_path: Path
) -> None:
    """A user removed OUT/runs/<id>/ by hand: history listed the run as whole, and report
    said `no run ...: not a run folder, a results.json, or a run id`. Now history marks it
    `folder missing`, and report (compare, bundle) says why it cannot, exit 2."""
    spec = _exit_spec(tmp_path, 0)
    gone, kept = cli("run", str(spec)), cli("run", str(spec), "-j", "2")
    assert (gone.code, kept.code) == (0, 0)
    gone_id, kept_id = gone.latest_run().name, kept.latest_run().name
    shutil.rmtree(gone.out / "runs" / gone_id)

    table = cli("history")
    assert table.code == 0, table.stderr
    rows = {
        run: next(r for r in table.stdout.splitlines() if run in r) for run in (gone_id, kept_id)
    }
    assert "finished, folder missing" in rows[gone_id]
    assert "folder missing" not in rows[kept_id]
    assert "1 run marked `folder missing`" in table.stdout
    listed = {r["run_id"]: r for r in json.loads(cli("history", "--format", "json").stdout)}
    assert (listed[gone_id]["folder_missing"], listed[kept_id]["folder_missing"]) == (True, False)

    folder = gone.out.resolve() / "runs" / gone_id
    for args in (
        ("report", gone_id),
        ("report", _unique_prefix(gone_id, kept_id)),  # as history's ids are given
        ("report", str(folder)),
        ("compare", gone_id, kept_id),
        ("bundle", gone_id, "-o", str(tmp_path / "b.tar.gz"), "--out", str(gone.out)),
    ):
        refused = cli(*args)
        assert refused.code == 2, (args, refused.stderr)
        assert refused.stderr.startswith(
            f"reprospec: run {gone_id}: its folder {folder} is gone (removed by hand?)."
        ), refused.stderr
        assert "`reprospec history` marks it `folder missing`" in refused.stderr
        assert f"`reprospec run --resume {gone_id} --out {gone.out}` writes the" in (refused.stderr)
        assert refused.stderr.rstrip().endswith(
            f"or run the spec again, as `reprospec run {spec}`"
        ), refused.stderr
        assert "Traceback" not in refused.stderr
    assert cli("report", kept_id).code == 0
    # A prefix of both runs is ambiguous, the one without its folder counted.
    shared = gone_id[
        : next(i for i, (a, b) in enumerate(zip(gone_id, kept_id, strict=False)) if a != b)
    ]
    ambiguous = cli("report", shared)
    assert ambiguous.code == 2, ambiguous.stderr
    assert ambiguous.stderr.startswith(f"reprospec: run id {shared!r} is ambiguous: "), (
        ambiguous.stderr
    )
    assert gone_id in ambiguous.stderr
    assert kept_id in ambiguous.stderr
    # A run the store never had is still "no run".
    assert "no run 'nope'" in cli("report", "nope").stderr
    # As it advises: the resume writes the folder again from the store, running nothing.
    time.sleep(1.1)  # a second later: an end rewritten as the resume's would differ
    resumed = cli("run", "--resume", gone_id, "--out", str(gone.out))
    assert resumed.code == 0, resumed.stderr
    report = cli("report", gone_id, "--format", "json")
    assert report.code == 0, report.stderr
    assert json.loads(report.stdout)["summary"]["reproduced"] == 1
    # Nothing ran: the run still ended when it did, in the report and in history (review).
    assert json.loads(report.stdout)["finished"] == listed[gone_id]["finished"]
    again = {r["run_id"]: r for r in json.loads(cli("history", "--format", "json").stdout)}
    assert again[gone_id]["finished"] == listed[gone_id]["finished"]
    assert "folder missing" not in cli("history").stdout


def test_compare_and_resume_leave_out_a_file_the_command_writes(cli: Cli, tmp_path: Path) -> None:
    """`python x.py --log run.log`, where x.py writes run.log: compare said `run.log:
    changed` (or `removed`) of every two runs, and a resume warned that the program's files
    changed since the run began. run.log is named by the command, not the program's: named
    as not compared, never told changed."""
    work = tmp_path / "project"
    work.mkdir()
    started, hold = tmp_path / "started", tmp_path / "hold"
    (work / "x.py").write_text(
        "import pathlib, sys, time\n"
        "pathlib.Path(sys.argv[2]).write_text(str(time.time()))\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while pathlib.Path({str(hold)!r}).exists():\n"
        "    time.sleep(0.05)\n"
        "sys.exit(1)\n"
    )
    (work / "run.log").write_text("an earlier run's log\n")
    spec = work / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: logs\nrun: {repeat: 2, timeout: 5m}\nexpect: {outcome: error}\n"
        f"command: [{sys.executable}, x.py, --log, run.log]\n"
    )
    out = tmp_path / "out"
    hold.touch()
    argv = [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)]
    assert interrupt_when(argv, started.exists).code == 130  # run.log written: attempt 1
    (first,) = [p.name for p in (out / "runs").iterdir()]
    hold.unlink()
    resumed = cli("run", "--resume", first, "--out", str(out))
    assert resumed.code == 0, resumed.stderr
    warnings = json.loads((out / "runs" / first / "results.json").read_text())["warnings"]
    assert not [w for w in warnings if "program's files" in w], warnings
    assert "program's files" not in resumed.stdout + resumed.stderr
    ids = [first]
    for _ in range(2):
        again = cli("run", str(spec), "--out", str(out))
        assert again.code == 0, again.stderr
        ids.append(again.latest_run().name)
    for a, b in ((ids[0], ids[1]), (ids[1], ids[2])):
        said = cli("compare", a, b, "--out", str(out)).stdout.splitlines()
        assert "same program files (1)" in said, said
        assert not any("run.log: " in line for line in said), said
        assert said[said.index("same program files (1)") + 1].endswith(": run.log")
        files = json.loads(cli("compare", a, b, "--out", str(out), "--format", "json").stdout)
        assert (files["files"]["changed"], files["files"]["named"]) == ([], ["run.log"])


def test_history_of_a_merge_jobs_out_names_the_merged_run_no_store_lists(
    cli: Cli, tmp_path: Path
) -> None:
    # A CI merge job's `history --out merged` said only "no runs recorded in merged
    # yet", where the merged run (merge keeps no store) was there for report and bundle.
    spec = _exit_spec(tmp_path, 0)
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, out in enumerate(shards, 1):
        assert cli("run", str(spec), f"--shard={k}/2", "--repeat", "2", "--out", str(out)).code == 0
    merged_out = tmp_path / "merged"
    runs = [str(run) for out in shards for run in (out / "runs").iterdir()]
    merged = cli("merge", *runs, "--out", str(merged_out))
    assert merged.code == 0, merged.stderr
    listed = cli("history", "--out", str(merged_out))
    assert listed.code == 0
    run_id = merged.latest_run().name
    assert (
        f"no runs recorded in {merged_out} yet; {merged_out / 'runs'} holds 1 run folder no "
        f"store lists, such as the runs `merge` writes (newest {run_id})"
    ) in listed.stderr
    assert cli("report", "latest", "--out", str(merged_out)).code == 0


def test_a_results_json_cell_edited_by_hand_is_said_and_left_out_alone(
    cli: Cli, tmp_path: Path
) -> None:
    """lo32 item 5: a cell of results.json spoiled by hand was dropped without a word (its
    attempts not a list read as none, a cell not an object as no cell) or refused the whole
    run (an unknown verdict); `report`, `compare` and `history` now name the file and the
    cell, exit 0, no traceback, and keep every other cell."""
    spec = tmp_path / "four.yaml"
    spec.write_text(
        "reprospec: 1\nname: four\nmatrix: {n: [1, 2, 3, 4, 5, 6]}\n"
        # The cell's n an argument: an axis nothing reads is a run warning of its own.
        f"command: [{sys.executable}, -c, 'import sys; sys.exit(3)', '${{{{ matrix.n }}}}']\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    out = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(out))
    assert ran.code == 0, ran.stderr
    assert cli("run", str(spec), "--out", str(out)).code == 0
    # The path the first run printed: two runs begun in one second do not sort by name
    # (the full suite: `first` was the second run, compared with itself as `latest`).
    first = ran.latest_run()
    results = first / "results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    data["cells"][1]["attempts"] = "oops"
    data["cells"][2]["verdict"] = "bogus"
    data["cells"][3]["attempts"][0] = 7
    data["cells"][4] = "garbage"
    # An outcome that is no object read as an attempt that could not run, under the cell's
    # stored `reproduced`: `3/3 attempts, 1 could not run`.
    data["cells"][5]["attempts"][0]["outcome"] = "garbage"
    results.write_text(json.dumps(data), encoding="utf-8")
    said = [
        f"reprospec: warning: {results}: cells[1] (n=2): its attempts are not a list (cannot "
        "be read): left out",
        f"reprospec: warning: {results}: cells[2] (n=3) cannot be read (unknown verdict "
        "'bogus'): left out",
        f"reprospec: warning: {results}: cells[3] (n=4): attempts[0] cannot be read (not an "
        "object): left out",
        f"reprospec: warning: {results}: cells[4] is not an object (cannot be read): left out",
        f"reprospec: warning: {results}: cells[5] (n=6): attempts[0] cannot be read (its "
        "outcome is not an object: 'garbage'): left out",
    ]
    report = cli("report", first.name, "--out", str(out))
    assert report.code == 0, report.stderr
    assert report.stderr.splitlines() == said
    # The report says so too, and holds the cells that could be read as they were.
    # (the store's path as the report names paths: relative to the project)
    noted = [line for line in report.stdout.splitlines() if line.startswith("> ⚠️ ")]
    assert [line.split("results.json: ", 1)[1] for line in noted] == [
        line.split("results.json: ", 1)[1] for line in said
    ]
    assert "| ✅ | 1 | `error exit 3` | `error exit 3` | 1/1 |" in report.stdout
    compared = cli("compare", first.name, "latest", "--out", str(out))
    assert compared.code == 0, compared.stderr
    assert compared.stderr.splitlines() == said
    assert "Traceback" not in compared.stdout + compared.stderr
    # history reads results.json for a Slurm run's merged run (in no store): listed still.
    merged = out / "slurm" / "S1" / "merged" / "runs" / first.name
    merged.parent.mkdir(parents=True)
    shutil.copytree(first, merged)
    listed = cli("history", "--out", str(out), "--format", "json")
    assert listed.code == 0, listed.stderr
    assert [row["run_id"] for row in json.loads(listed.stdout)].count(first.name) == 2
    for line in said:
        assert line.replace(str(results), str(merged / "results.json")) in listed.stderr


def test_history_of_a_running_run_counts_its_cells_so_far_of_those_it_plans(
    cli: Cli, tmp_path: Path
) -> None:
    """lo32 item 2: a run still running read `cells 0` (the store has its cells once they
    are judged, at its end); it says how many have an attempt stored, of those it plans,
    and so does a run killed before its end."""
    hold = tmp_path / "hold"
    hold.touch()
    spec = tmp_path / "three.yaml"
    # Cell 1 passes at once; cells 2 and 3 wait while `hold` is there.
    spec.write_text(
        "reprospec: 1\nname: three\nmatrix: {n: [1, 2, 3]}\nrun: {timeout: 5m}\n"
        "expect: {outcome: pass}\n"
        f'command: [{sys.executable}, -c, "import pathlib, sys, time; '
        "sys.argv[1] == '1' or "
        f'[time.sleep(0.05) for _ in iter(pathlib.Path({str(hold)!r}).exists, False)]", '
        "'${{ matrix.n }}']\n"
    )
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip

    def row() -> dict[str, object]:
        listed = cli("history", "--format", "json", "--out", str(out))
        assert listed.code == 0, listed.stderr
        (only,) = json.loads(listed.stdout)
        assert isinstance(only, dict)
        return only

    try:
        deadline = time.monotonic() + 120
        while not (out / "results.db").is_file() or row()["with_attempts"] != 1:
            assert engine.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.2)
        now = row()
        assert (now["status"], now["cells"], now["planned"]) == ("running", 0, 3)
        table = cli("history", "--out", str(out))
        assert "1 of 3 so far" in table.stdout, table.stdout
        kill_with_its_watchdog(engine)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    assert "1 of 3 so far" in cli("history", "--out", str(out)).stdout
    assert row()["status"] == "killed"
    hold.unlink()
    run_id = row()["run_id"]
    assert cli("run", "--resume", str(run_id), "--out", str(out)).code == 0
    ended = row()
    assert (ended["status"], ended["cells"]) == ("finished", 3)
    assert "3 reproduced" in cli("history", "--out", str(out)).stdout


def test_a_run_whose_folder_names_no_engine_is_unknown_not_running_for_good(
    cli: Cli, tmp_path: Path
) -> None:
    """lo32 item 7: a run killed under a reprospec from before engine.json read `running`
    for ever (nothing names its engine: no pid, no host); history says `unknown`, and how
    to finish it if it was killed, and `report` says so, where it said `still running`."""
    hold = tmp_path / "hold"
    hold.touch()
    spec = tmp_path / "held.yaml"
    spec.write_text(
        "reprospec: 1\nname: held\nrun: {timeout: 5m}\nexpect: {outcome: pass}\n"
        f'command: [{sys.executable}, -c, "import pathlib, time; '
        f'[time.sleep(0.05) for _ in iter(pathlib.Path({str(hold)!r}).exists, False)]"]\n'
    )
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("runs/*/cells/default/1")):
            assert engine.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        kill_with_its_watchdog(engine)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    (folder,) = (out / "runs").iterdir()
    (folder / "engine.json").unlink()  # as an older reprospec left its folder
    listed = cli("history", "--out", str(out), "--format", "json")
    assert [row["status"] for row in json.loads(listed.stdout)] == ["unknown"]
    table = cli("history", "--out", str(out))
    resume = f"reprospec run --resume {folder.name} --out {out}"
    assert "1 run marked `unknown`: the store says running, but its folder names no engine" in (
        table.stdout.replace("\n", " ")
    )
    assert f"`{resume}` finishes it" in table.stdout.replace("\n", "")
    report = cli("report", "latest", "--out", str(out))
    assert report.code == 2
    assert "still running" not in report.stderr
    assert "whether its engine still runs cannot be told" in report.stderr
    hold.unlink()
    finished = cli(*shlex.split(resume)[1:])
    assert finished.code == 0, finished.stderr
    assert [
        row["status"]
        for row in json.loads(cli("history", "--out", str(out), "--format", "json").stdout)
    ] == ["finished"]
