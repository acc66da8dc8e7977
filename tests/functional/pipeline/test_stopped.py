"""A run that cannot write an attempt's folder mid-run (a full disk, a folder that became
unusable) stops as a run whose store fails stops: the attempts stored stay, the message
names the path and gives the --resume line, exit 3, and the store calls it interrupted."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from reprospec.store.runfolder import CELLS, cell_folder
from tests.support.cli import Cli
from tests.support.paths import ROOT


@contextlib.contextmanager
def _gated_run(
    tmp_path: Path, name: str, cells: int, env: dict[str, str]
) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """`reprospec run -j 1` of a spec whose cell i=1 waits for the file `gate` (up to 60 s),
    started in the background: (the engine, `gate`, the run's folder once i=1's first
    attempt has begun), the engine killed at the block's end if it still runs. Cells
    i=2.. pass at once."""
    gate = tmp_path / "gate"
    spec = tmp_path / "spec.yaml"
    values = ", ".join(str(i) for i in range(1, cells + 1))
    spec.write_text(
        f"reprospec: 1\nname: {name}\nmatrix: {{i: [{values}]}}\n"
        "command: >-\n"
        '  python -c "import pathlib, time;\n'
        f"  [time.sleep(0.05) for _ in range(1200) if ${{{{ matrix.i }}}} == 1\n"
        f'  and not pathlib.Path({str(gate)!r}).exists()]"\n'
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **env},
    )
    try:
        deadline = time.monotonic() + 120
        while not list((out / "runs").glob(f"*/{CELLS}/{cell_folder('i=1')}/1")):
            assert engine.poll() is None, engine.communicate()
            assert time.monotonic() < deadline, "the first attempt never began"
            time.sleep(0.05)
        (folder,) = (out / "runs").iterdir()
        yield engine, gate, folder
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()


def test_an_attempt_that_cannot_make_its_folder_stops_the_run_to_resume(
    cli: Cli, tmp_path: Path
) -> None:
    # The attempt's OSError ended the run as one line, exit 2 ("bad usage"), with
    # nothing on what was stored or how to go on, and `history` said the run was killed.
    # The tests run as root, whom a read-only folder does not stop: the third cell's folder
    # is made a file while the first cell runs, so its attempt's mkdir fails for real
    # (ENOTDIR), as it would on a full disk or an unwritable folder.
    with _gated_run(tmp_path, "stopped", 3, {}) as (engine, gate, folder):
        blocked = folder / CELLS / cell_folder("i=3")
        blocked.write_text("not a folder\n")
        gate.touch()
        stdout, stderr = engine.communicate(timeout=120)
    out = folder.parent.parent
    assert engine.returncode == 3, stdout + stderr
    lines = stderr.strip().splitlines()
    assert lines[-3].startswith(f"reprospec: {blocked}/1: "), stderr
    assert lines[-2] == (
        "reprospec: the run stopped; 2 attempts of it were stored, and "
        f"{folder} holds its results so far."
    ), stderr
    assert lines[-1] == (
        "reprospec: once the problem is solved, continue it with: "
        f"reprospec run --resume {folder.name} --out {out}"
    ), stderr
    listed = cli("history", "--out", str(out), "--format", "json")
    assert listed.code == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    assert run["status"] == "interrupted", run
    results = json.loads((folder / "results.json").read_text())
    assert results["interrupted"] is True
    # Once the folder can be made again, --resume runs the third cell alone.
    blocked.unlink()
    resumed = cli("run", "--resume", folder.name, "--out", str(out))
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    cells = resumed.results()["cells"]
    assert [len(cell["attempts"]) for cell in cells] == [1, 1, 1]


def test_a_run_folder_removed_while_the_run_runs_is_said_and_written_again(
    cli: Cli, tmp_path: Path
) -> None:
    # `rm -rf` of the run folder while the first cell ran: the run ended 0 without a word,
    # its new folder holding a report whose earlier attempts' files were gone. It now warns
    # (stderr and the report) of what was lost and what the store kept.
    with _gated_run(tmp_path, "removed", 2, {"COLUMNS": "300"}) as (engine, gate, folder):
        shutil.rmtree(folder)
        gate.touch()
        stdout, stderr = engine.communicate(timeout=120)
    out = folder.parent.parent
    assert engine.returncode == 0, stdout + stderr
    assert "Traceback" not in stderr
    said = (
        f"reprospec: warning: the run folder {folder} was removed while the run ran: the files "
        "its attempts had written there (logs, stacks, events) are gone; the results store "
        "keeps its 2 stored attempts, and its results.json and report.md are written again, "
        "into a new one"
    )
    assert said in stderr.splitlines(), stderr
    (report,) = [
        line[len("report: ") :] for line in stdout.splitlines() if line.startswith("report: ")
    ]
    assert Path(report) == folder / "report.md", report
    assert Path(report).is_file()
    results = json.loads((folder / "results.json").read_text())
    assert any("was removed while the run ran" in warning for warning in results["warnings"])
    assert [len(cell["attempts"]) for cell in results["cells"]] == [1, 1]
    listed = cli("history", "--out", str(out), "--format", "json")
    (run,) = json.loads(listed.stdout)
    assert (run["status"], run["folder_missing"]) == ("finished", False), run
