"""`run --resume` of a real killed run: options that would change what the run runs are
refused, naming them; the run's own values, given again, are not a change."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Cli
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
