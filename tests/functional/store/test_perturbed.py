"""A real run under environment.perturb, stored: resumed, reported, listed and compared, it
still says it was amplified (the store keeps each attempt's perturbations)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import reprospec
from reprospec.store.db import Store
from tests.support.cli import Cli

# The child prints the switch interval it runs under: the perturbation was applied, not
# just recorded.
_SPEC = """\
reprospec: 1
name: perturbed-store
matrix: {{n: [1, 2, 3]}}
environment: {{perturb: {perturb}}}
command: [{python}, -c, '{code}']
expect: {{outcome: pass}}
"""


def _spec(tmp_path: Path, name: str, perturb: str) -> Path:
    spec = tmp_path / name
    # Each attempt outlives the slack after the one before it (its line comes 0.25 to 0.3 s
    # after its end): the cancel at the first attempt's line stops the run before its last
    # attempt ends, where three quick attempts could all end first on a loaded machine.
    code = (
        'import os, sys, time; print(sys.getswitchinterval(), os.getenv("PYTHONHASHSEED")); '
        "time.sleep(0.5)"
    )
    spec.write_text(_SPEC.format(perturb=perturb, python=sys.executable, code=code))
    return spec


def test_a_resumed_amplified_run_keeps_its_perturbations_in_store_report_and_history(
    cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = _spec(tmp_path, "perturbed.yaml", "{switch_interval: 1.0e-6, hash_seed: 7}")
    cancel = threading.Event()

    def progress(event: str, _cell: object, _res: object, finished: int, _total: int) -> None:
        if event == "attempt" and finished >= 1:
            cancel.set()

    stopped = reprospec.run(
        spec, reprospec.RunOptions(out=out, jobs=1), progress=progress, cancel=cancel
    )
    assert stopped.interrupted
    with Store(out) as store:
        first = store.finished_attempts(stopped.run_id)
    assert first, "the interrupted run stored no attempt"
    assert {a.perturbed for a in first.values()} == {("switch_interval=1e-06", "hash_seed=7")}

    resumed = cli("run", "--resume", "latest", "--out", str(out))
    assert resumed.code == 0, resumed.stderr
    folder = out / "runs" / stopped.run_id
    results = json.loads((folder / "results.json").read_text())
    attempts = [a for cell in results["cells"] for a in cell["attempts"]]
    assert len(attempts) == 3
    # The attempts run before the interruption come back from the store with theirs.
    assert [a["perturbed"] for a in attempts] == [["switch_interval=1e-06", "hash_seed=7"]] * 3
    stdout = (folder / attempts[0]["logs"] / "stdout.log").read_text()
    assert stdout.split() == ["1e-06", "7"]

    report = cli("report", "latest", "--out", str(out))
    assert report.code == 0, report.stderr
    assert "**Amplified:**" in "\n".join(report.stdout.splitlines()[:6])

    plain = cli("run", str(_spec(tmp_path, "plain.yaml", "{}")), "--out", str(out))
    assert plain.code == 0, plain.stderr
    history = cli("history", "--out", str(out), "--format", "json")
    rows = json.loads(history.stdout)
    assert [r["perturbed"] for r in rows] == [[], ["switch_interval=1e-06", "hash_seed=7"]]
    table = cli("history", "--out", str(out))
    assert "perturbed by" in table.stdout
    assert "switch_interval=1e-06; hash_seed=7" in table.stdout

    compared = cli("compare", stopped.run_id, "latest", "--out", str(out))
    assert compared.code == 0, compared.stderr
    assert compared.stdout.splitlines()[1] == (
        "perturbed: switch_interval=1e-06; hash_seed=7 -> plain (no perturbation)"
    )
