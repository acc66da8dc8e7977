"""`run --resume` of a real killed run: options that would change what the run runs are
refused, naming them; the run's own values, given again, are not a change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, Cli, CliResult
from tests.support.killed import gated_spec, killed_run


def test_resume_refuses_options_that_change_what_runs_and_takes_its_own(
    cli: Cli, tmp_path: Path
) -> None:
    """`--resume ID --timeout 3s` was taken without a word and ran with the old timeout:
    a user waited 30 s for each hang believing 3 s applied."""
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "2", "--timeout", "60s")
    gate.touch()  # the attempt the kill left waiting ends, and the resumed ones pass

    refused = cli("run", "--resume", run_id, "--timeout", "3s", "--out", str(out), timeout=120)
    assert refused.code == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"--resume {run_id}: --timeout given" in refused.stderr
    assert "keeps the options it began with (--timeout 1m)" in refused.stderr
    assert "Run the spec again" in refused.stderr

    several = cli(
        "run", "--resume", run_id, "-m", "x=1", "--set", "run.stall=1s", "--repeat", "1",
        "--preload", "none", "--out", str(out), timeout=120,
    )  # fmt: skip
    assert several.code == 2, several.stderr
    assert "-m, --set, --repeat, --preload given" in several.stderr
    assert "-m none: every cell; --set none; --repeat 2; --preload none: the spec's" in (
        several.stderr
    )
    assert not (out / "runs" / run_id / "results.json").exists()  # nothing ran

    # Its own command line again, with --resume and a new -j: nothing changes what runs.
    resumed = cli(
        "run", "--resume", run_id, "--repeat", "2", "--timeout", "60s", "-j", "2",
        "--out", str(out), timeout=300,
    )  # fmt: skip
    assert resumed.code == 0, resumed.stderr
    data = json.loads((out / "runs" / run_id / "results.json").read_text())
    assert [a["attempt"] for a in data["cells"][0]["attempts"]] == [1, 2]


def test_resume_takes_a_unique_prefix_of_the_run_id_and_refuses_a_shared_one(
    cli: Cli, tmp_path: Path
) -> None:
    """`report PREFIX` worked and printed `run --resume FULL-ID`; `run --resume PREFIX`
    said "no such run", though cli.md reads a RUN's unique prefix alike in every verb."""
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "2")
    gate.touch()
    prefix = run_id[: run_id.rindex("-")]  # without its random tail
    resumed = cli("run", "--resume", prefix, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    data = json.loads((out / "runs" / run_id / "results.json").read_text())
    assert [a["attempt"] for a in data["cells"][0]["attempts"]] == [1, 2]

    other = cli("run", str(spec), "--repeat", "1", "--out", str(out), timeout=120)
    assert other.code == 0, other.stderr
    shared = cli("run", "--resume", run_id[:8], "--out", str(out))  # the date both share
    assert shared.code == 2, shared.stderr
    assert "Traceback" not in shared.stderr
    # As report words it (store.refs.run_id_named, one rule for every RUN).
    assert shared.stderr.startswith(f"reprospec: run id {run_id[:8]!r} is ambiguous: ")
    assert run_id in shared.stderr


def _four_cells(path: Path, gate: str) -> Path:
    """A spec of four cells, n=1 to 4: n=1 passes at once, each other once the file the
    Python expression `gate` names exists (it waits a minute at most)."""
    path.write_text(
        "reprospec: 1\nname: four\nmatrix: {n: [1, 2, 3, 4]}\n"
        "command: >-\n"
        '  python -c "import pathlib, time;\n'
        f"  [time.sleep(0.05) for _ in range(1200) if ${{{{ matrix.n }}}} > 1 and not "
        f'{gate}.exists()]"\n'
        "expect: {outcome: pass}\n"
    )
    return path


def test_a_resumed_run_says_so_in_its_report_and_summary(cli: Cli, tmp_path: Path) -> None:
    """A run interrupted by Ctrl-C and finished by `--resume` wrote a report.md that read
    as one run that went straight through: nothing said it was resumed, nor which of its
    attempts were run before the interruption."""
    import sys

    from tests.support.cli import interrupt_when

    gate = tmp_path / "gate"
    # Cell n=1 passes at once; the others wait for the gate.
    spec = _four_cells(tmp_path / "four.yaml", f"pathlib.Path({str(gate)!r})")
    out = tmp_path / "out"
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "-j", "1", "--out", str(out)],
        lambda: bool(list(out.glob("runs/*/cells/n=2/1"))),  # n=1 ended, n=2 waits
    )
    assert stopped.code == 130, stopped.stderr
    (folder,) = (out / "runs").iterdir()
    assert "Resumed" not in (folder / "report.md").read_text()
    gate.touch()
    resumed = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    # Its earlier part stopped at its interruption, as the store recorded it.
    data = json.loads((folder / "results.json").read_text())
    stopped_at = data["resumed"]["stopped_at"]
    assert data["resumed"] == {
        "carried": 1,
        "ran": 3,
        "stopped": "interrupted",
        "stopped_at": stopped_at,
        "parts": [{"attempts": 1, "stopped": "interrupted", "stopped_at": stopped_at}],
        "rewritten": False,
    }
    when = stopped_at.replace("T", " ")[:19] + " UTC"
    said = f"1 attempt carried over from the run interrupted at {when}, 3 run now"
    assert f"resumed: {said}\n" in resumed.stdout
    report = (folder / "report.md").read_text()
    # The command as it was run: with its --out, this store not the default one (lo32).
    command = f"reprospec run --resume {folder.name} --out {out}"
    assert f"> **Resumed** (`{command}`): {said}.\n" in report
    # `report` renders it again from results.json, the note with it, its JUnit XML too.
    assert f"{said}." in cli("report", folder.name, "--out", str(out)).stdout
    junit = cli("report", folder.name, "--format", "junit", "--out", str(out))
    assert junit.code == 0, junit.stderr
    assert f'<property name="resumed" value="{said}" />' in junit.stdout
    assert (f"<system-out>Resumed ({command}): {said}.</system-out>") in junit.stdout


def test_a_run_whose_engine_was_killed_is_resumed_and_says_so(cli: Cli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "2")
    gate.touch()
    resumed = cli("run", "--resume", run_id, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    said = "0 attempts carried over from the run whose engine was killed, 2 run now"
    assert f"resumed: {said}\n" in resumed.stdout
    assert f"): {said}.\n" in (out / "runs" / run_id / "report.md").read_text()


def test_a_run_resumed_twice_names_each_part_and_a_finished_one_keeps_its_record(
    cli: Cli, tmp_path: Path
) -> None:
    """Ctrl-C, `--resume`, Ctrl-C again, `--resume`: the report said `carried over
    from the run interrupted at` the second interruption alone, and that the first part was
    interrupted too was lost. Then `--resume` of the finished run, its folder whole, ran
    nothing and said `carried over from the run finished at X (its folder written again
    from the store)`, neither true, in place of the record it had."""
    import shutil
    import sys

    from tests.support.cli import interrupt_when

    gates = tmp_path / "gates"
    gates.mkdir()
    # Cell n=1 passes at once; each other waits for its own gate.
    spec = _four_cells(
        tmp_path / "four.yaml", f"pathlib.Path({str(gates)!r}, 'g${{{{ matrix.n }}}}')"
    )
    out = tmp_path / "out"
    reprospec = [sys.executable, "-m", "reprospec", "run"]
    first = interrupt_when(
        [*reprospec, str(spec), "-j", "1", "--out", str(out)],
        lambda: bool(list(out.glob("runs/*/cells/n=2/1"))),  # n=1 ended, n=2 waits
    )
    assert first.code == 130, first.stderr
    (folder,) = (out / "runs").iterdir()
    (gates / "g2").touch()
    second = interrupt_when(
        [*reprospec, "--resume", folder.name, "--out", str(out)],
        lambda: (folder / "cells" / "n=3" / "1").is_dir(),  # n=2 ended, n=3 waits
    )
    assert second.code == 130, second.stderr
    once = json.loads((folder / "results.json").read_text())["resumed"]
    assert (once["carried"], once["ran"], once["stopped"]) == (1, 1, "interrupted")
    (gates / "g3").touch()
    (gates / "g4").touch()
    third = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert third.code == 0, third.stderr
    data = json.loads((folder / "results.json").read_text())
    resumed = data["resumed"]
    assert [(p["attempts"], p["stopped"]) for p in resumed["parts"]] == [
        (1, "interrupted"),
        (1, "interrupted"),
    ]
    assert (resumed["carried"], resumed["ran"], resumed["rewritten"]) == (2, 2, False)
    at = [p["stopped_at"].replace("T", " ")[:19] + " UTC" for p in resumed["parts"]]
    said = (
        f"2 attempts carried over: 1 from the run interrupted at {at[0]}, "
        f"1 from its resume interrupted at {at[1]}; 2 run now"
    )
    assert f"resumed: {said}\n" in third.stdout
    assert f"): {said}.\n" in (folder / "report.md").read_text()

    # Finished, its folder whole: nothing runs, and the record it had is kept.
    again = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert again.code == 0, again.stderr
    assert f"resumed: {said}\n" in again.stdout
    assert "written again" not in again.stdout
    assert json.loads((folder / "results.json").read_text())["resumed"] == resumed

    # Its folder removed by hand: written again from the store, and said so.
    shutil.rmtree(folder)
    rewritten = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert rewritten.code == 0, rewritten.stderr
    assert "4 attempts carried over from the run finished at " in rewritten.stdout
    assert "(its folder written again from the store), 0 run now\n" in rewritten.stdout


def test_a_run_that_went_straight_through_is_not_called_resumed_by_a_resume(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "pass.yaml"
    spec.write_text("reprospec: 1\nname: pass\ncommand: 'true'\nexpect: {outcome: pass}\n")
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--repeat", "2", "--out", str(out), timeout=120)
    assert ran.code == 0, ran.stderr
    (folder,) = (out / "runs").iterdir()
    resumed = cli("run", "--resume", folder.name, "--out", str(out), timeout=120)
    assert resumed.code == 0, resumed.stderr
    assert "resumed:" not in resumed.stdout
    assert "Resumed" not in (folder / "report.md").read_text()
    assert json.loads((folder / "results.json").read_text())["resumed"] is None


def test_a_cell_stop_on_stopped_stays_stopped_when_its_run_is_resumed(
    cli: Cli, tmp_path: Path
) -> None:
    """Each `run --resume` of a finished run ran one more attempt of a cell that
    `stop_on: first-reproduction` had stopped (1/1, then 2/2, 3/3)."""
    spec = tmp_path / "stop.yaml"
    spec.write_text(
        "reprospec: 1\nname: stop\ncommand: [sh, -c, 'exit ${{ matrix.code }}']\n"
        "matrix: {code: [0, 3]}\nrun: {repeat: 3, stop_on: first-reproduction}\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--out", str(out), timeout=120)
    assert ran.code == 1, ran.stderr  # code=3 never passes: not reproduced
    (folder,) = (out / "runs").iterdir()
    for _ in range(2):
        resumed = cli("run", "--resume", folder.name, "--out", str(out), timeout=120)
        assert resumed.code == 1, resumed.stderr
        assert "#2" not in resumed.stderr  # no attempt ran
        cells = json.loads((folder / "results.json").read_text())["cells"]
        attempts = {cell["id"]: len(cell["attempts"]) for cell in cells}
        assert attempts == {"code=0": 1, "code=3": 3}


def _finished_with_cells_that_could_not_run(
    cli: Cli, tmp_path: Path, gate: Path, *, waits_from: int
) -> Path:
    """The folder of a finished run of cells n=1..3 whose n=2 and n=3 could not run (their
    workdir without the command: infra-error), given it since: a resume retries them. Cells
    from `waits_from` on then wait for `gate`, where a Ctrl-C can stop the retry. (A missing
    workdir is a validation error, per cell: the spec could not be run, nor resumed.)"""
    spec = tmp_path / "two.yaml"
    spec.write_text(
        "reprospec: 1\nname: two\nmatrix: {n: [1, 2, 3]}\n"
        'environment: {workdir: "wd${{ matrix.n }}"}\n'
        "command: [./run.sh]\n"
        "expect: {outcome: pass}\n"
    )

    def give_command(n: int) -> None:
        script = tmp_path / f"wd{n}" / "run.sh"
        script.write_text(
            f'#!/bin/sh\nexec {sys.executable} -c "import pathlib, time;'
            f" [time.sleep(0.05) for _ in range(1200) if {n} >= {waits_from} and not"
            f' pathlib.Path({str(gate)!r}).exists()]"\n'
        )
        script.chmod(0o755)

    for n in (1, 2, 3):
        (tmp_path / f"wd{n}").mkdir()
    give_command(1)
    out = tmp_path / "out"
    first = cli("run", str(spec), "--out", str(out), timeout=120)
    assert first.code == 3, first.stderr  # n=2, n=3 infra-error: command not found
    (folder,) = (out / "runs").iterdir()
    give_command(2)
    give_command(3)
    return folder


def test_a_finished_runs_retry_stopped_keeps_the_finished_part_apart(
    cli: Cli, tmp_path: Path
) -> None:
    """A finished run whose cells could not run (their command missing) is resumed: the
    retry runs one and is stopped by Ctrl-C in the other, then resumed again. The finished
    run's attempt was counted under the interrupted retry (`2 attempts carried over from
    the run interrupted at ...`), and the part that finished was lost from resumed.json."""
    import sys

    from tests.support.cli import interrupt_when

    gate = tmp_path / "gate"
    out = tmp_path / "out"
    # n=2 passes at once in the retry, and n=3 waits for the gate.
    folder = _finished_with_cells_that_could_not_run(cli, tmp_path, gate, waits_from=3)
    resume = ["--resume", folder.name, "-j", "1", "--out", str(out)]
    retry = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", *resume],
        lambda: (folder / "cells" / "n=3" / "1" / "inflight.json").is_file(),  # n=2 ended
    )
    assert retry.code == 130, retry.stderr
    finished = json.loads((folder / "resumed.json").read_text())["parts"]
    assert [(p["attempts"], p["stopped"]) for p in finished] == [(1, "finished")]
    gate.touch()
    again = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert again.code == 0, again.stderr
    resumed = json.loads((folder / "results.json").read_text())["resumed"]
    assert [(p["attempts"], p["stopped"]) for p in resumed["parts"]] == [
        (1, "finished"),
        (1, "interrupted"),
    ]
    assert (resumed["carried"], resumed["ran"]) == (2, 1)
    at = [p["stopped_at"].replace("T", " ")[:19] + " UTC" for p in resumed["parts"]]
    said = (
        f"2 attempts carried over: 1 from the run finished at {at[0]}, "
        f"1 from its resume interrupted at {at[1]}; 1 run now"
    )
    assert f"resumed: {said}\n" in again.stdout
    # Resumed once more, finished and whole: nothing runs, and the record is kept.
    whole = cli("run", "--resume", folder.name, "--out", str(out), timeout=120)
    assert whole.code == 0, whole.stderr
    assert json.loads((folder / "results.json").read_text())["resumed"] == resumed


def test_a_finished_runs_retry_stopped_before_it_stored_an_attempt_says_it_was_resumed(
    cli: Cli, tmp_path: Path
) -> None:
    """A finished run's retry of its cells that could not run, stopped by Ctrl-C in its
    first attempt, said only `interrupted: partial results`: no `resumed` line, none in
    results.json, as if the finished run itself had been stopped, though its attempt was
    carried over (a retry that had stored one said so)."""
    import sys

    from tests.support.cli import interrupt_when

    gate = tmp_path / "gate"
    out = tmp_path / "out"
    folder = _finished_with_cells_that_could_not_run(cli, tmp_path, gate, waits_from=2)
    retry = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", "--resume", folder.name, "--out", str(out)],
        lambda: (folder / "cells" / "n=2" / "1" / "inflight.json").is_file(),
    )
    assert retry.code == 130, retry.stderr
    resumed = json.loads((folder / "results.json").read_text())["resumed"]
    assert resumed is not None
    assert (resumed["carried"], resumed["ran"], resumed["stopped"]) == (1, 0, "finished")
    at = resumed["stopped_at"].replace("T", " ")[:19] + " UTC"
    said = f"1 attempt carried over from the run finished at {at}, 0 run now"
    assert f"resumed: {said}\n" in retry.stdout
    assert f"{said}." in (folder / "report.md").read_text()


def test_resuming_a_merged_run_says_it_is_not_resumed(cli: Cli, tmp_path: Path) -> None:
    """`run --resume latest` after `merge` named the merged run, which no store
    holds, and said `no such run`, as if the run folder beside it did not exist."""
    spec = tmp_path / "two.yaml"
    spec.write_text(
        "reprospec: 1\nname: two\nmatrix: {n: [1, 2]}\ncommand: 'true'\nexpect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    for n in (1, 2):
        ran = cli("run", str(spec), "-m", f"n={n}", "--out", str(out), timeout=120)
        assert ran.code == 0, ran.stderr
    merged = cli("merge", "--out", str(out), "latest", "latest~1", timeout=120)
    assert merged.code == 0, merged.stderr
    resumed = cli("run", "--resume", "latest", "--out", str(out), timeout=120)
    assert resumed.code == 2, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert "such as one `reprospec merge` made, is not resumed" in resumed.stderr


def test_resume_refuses_other_values_of_the_variables_the_spec_reads(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Begun with CODE=0 and resumed with CODE=3, a cell ran `exit 0` then `exit 3` and read
    `1x pass, 1x error exit 3` as flaky, without a word: the values the spec
    read are the run's inputs as its text is."""
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    spec.write_text(
        spec.read_text()
        + "environment:\n  public_env: [CODE]\n"
        + "  env: {SEEN: '${{ env.CODE }}', KEY: '${{ env.API_TOKEN }}'}\n"
    )
    out = tmp_path / "out"
    monkeypatch.setenv("CODE", "0")
    monkeypatch.setenv("API_TOKEN", "s3cr3t-one-0a1b2c")
    run_id = killed_run(spec, out, "--repeat", "2")
    gate.touch()

    def resume(**env: str) -> CliResult:
        return cli("run", "--resume", run_id, "--out", str(out), env=env, timeout=300)

    public = resume(CODE="3", API_TOKEN="s3cr3t-one-0a1b2c")
    assert public.code == 2, public.stderr
    assert "Traceback" not in public.stderr
    assert "(CODE: '0' as the run began, '3' now)" in public.stderr
    secret = resume(CODE="0", API_TOKEN="s3cr3t-two-9z8y7x")
    assert secret.code == 2, secret.stderr
    assert "(API_TOKEN: changed)" in secret.stderr
    assert "s3cr3t" not in secret.stderr  # a secret's values are never told
    assert not (out / "runs" / run_id / "results.json").exists()  # nothing ran

    same = resume(CODE="0", API_TOKEN="s3cr3t-one-0a1b2c")
    assert same.code == 0, same.stderr
    data = json.loads((out / "runs" / run_id / "results.json").read_text())
    assert [a["attempt"] for a in data["cells"][0]["attempts"]] == [1, 2]


def test_two_resumes_of_one_run_started_together_run_its_rest_once(tmp_path: Path) -> None:
    """Both passed the check of a live engine (the in-flight records neither had
    written yet) and both ran the run's rest, into the same attempt folders."""
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "4", "-j", "2")
    argv = [sys.executable, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)]
    env = {**os.environ, "NO_COLOR": "1"}
    resumes = [
        subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    # The gate opens once one of them has ended: the other's attempts wait for it until
    # then, so on a loaded machine the first cannot finish the run before the second has
    # even started, which would be two resumes one after the other, not together.
    deadline = time.monotonic() + 120
    while all(resume.poll() is None for resume in resumes):
        assert time.monotonic() < deadline, "neither resume ended"
        time.sleep(0.05)
    gate.touch()
    said = [resume.communicate(timeout=120) for resume in resumes]
    codes = sorted(resume.returncode for resume in resumes)
    assert codes == [0, 2], said
    refused = next(err for (_, err), r in zip(said, resumes, strict=True) if r.returncode == 2)
    assert f"--resume {run_id}: " in refused
    assert "Traceback" not in refused
    # The rest ran once: each of the 4 planned attempts has one row and one run folder.
    results = json.loads((out / "runs" / run_id / "results.json").read_text(encoding="utf-8"))
    (cell,) = results["cells"]
    assert [a["attempt"] for a in cell["attempts"]] == [1, 2, 3, 4]


# An engine's hold of a run folder, in a process of its own (`RunFolder.hold`, as
# pipeline/stages.py takes it for the whole run), until it is killed.
HOLDER = """
import sys, time
from pathlib import Path
from reprospec.store.runfolder import RunFolder
fd = RunFolder(Path(sys.argv[1])).hold()
Path(sys.argv[2]).touch()
time.sleep(120)
"""


def test_a_resume_of_a_run_folder_another_engine_holds_is_refused(cli: Cli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "2")
    gate.touch()
    held = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out / "runs" / run_id), str(held)])
    try:
        while not held.exists():
            assert holder.poll() is None, "the holder ended"
            time.sleep(0.01)
        refused = cli("run", "--resume", run_id, "--out", str(out), timeout=120)
        assert refused.code == 2, refused.stderr
        # The engine that last claimed the folder is named: here the killed run's.
        assert f"--resume {run_id}: another engine is running this run now (engine pid " in (
            refused.stderr
        )
    finally:
        holder.kill()
        holder.wait(timeout=30)
    # Its engine gone (SIGKILL, as here), the hold goes with it: the resume runs.
    resumed = cli("run", "--resume", run_id, "--out", str(out), timeout=120)
    assert resumed.code == 0, resumed.stderr


def test_resume_refuses_the_programs_files_changed_since_the_run_began(
    cli: Cli, tmp_path: Path
) -> None:
    """Interrupted, its script edited, resumed: a cell ran the old script then the new one
    and read `1x pass, 1x error exit 3` as flaky, a warning on stderr alone.
    Refused as a changed variable is, before anything runs; put back, it resumes."""
    gate = tmp_path / "gate"
    script = tmp_path / "gated.py"
    original = (
        "import pathlib, sys, time\n"
        "for _ in range(1200):\n"
        "    if pathlib.Path(sys.argv[1]).exists():\n"
        "        break\n"
        "    time.sleep(0.05)\n"
    )
    script.write_text(original)
    spec = tmp_path / "gated.yaml"
    spec.write_text(
        f"reprospec: 1\nname: gated-script\ncommand: python gated.py {gate}\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    run_id = killed_run(spec, out, "--repeat", "2")
    gate.touch()
    script.write_text(original + "raise SystemExit(3)\n")

    def resume() -> CliResult:
        return cli("run", "--resume", run_id, "--out", str(out), timeout=300)

    refused = resume()
    assert refused.code == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert "the program's files are not the run's (gated.py: changed)" in refused.stderr
    assert not (out / "runs" / run_id / "results.json").exists()  # nothing ran

    script.write_text(original)
    same = resume()
    assert same.code == 0, same.stderr
    data = json.loads((out / "runs" / run_id / "results.json").read_text())
    assert [a["attempt"] for a in data["cells"][0]["attempts"]] == [1, 2]
    assert {a["outcome"]["kind"] for a in data["cells"][0]["attempts"]} == {"pass"}


def test_a_resumed_run_records_the_spec_path_as_the_run_was_given_it(
    cli: Cli, tmp_path: Path
) -> None:
    # The resume loads the spec from the store's absolute path, and its results.json and
    # report.md said that one (the sender's home, in a report meant to be shared) where
    # the run had recorded the path as typed.
    import os
    import sys

    from tests.support.cli import ROOT, interrupt_when

    gate = tmp_path / "gate"
    spec = _four_cells(tmp_path / "four.yaml", f"pathlib.Path({str(gate)!r})")
    typed = os.path.relpath(spec, ROOT)
    out = tmp_path / "out"
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", typed, "-j", "1", "--out", str(out)],
        lambda: bool(list(out.glob("runs/*/cells/n=2/1"))),
    )
    assert stopped.code == 130, stopped.stderr
    (folder,) = (out / "runs").iterdir()
    assert json.loads((folder / "results.json").read_text())["spec"]["path"] == typed
    gate.touch()
    resumed = cli("run", "--resume", folder.name, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    assert json.loads((folder / "results.json").read_text())["spec"]["path"] == typed
    first = (folder / "report.md").read_text().splitlines()[0]
    assert f'path="{typed}"' in first, first
