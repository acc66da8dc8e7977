"""`history`, `report` and `compare` under a shared `--out`: the merged runs of its Slurm runs.

The Slurm run's folder is made as its jobs make it, without a cluster: each array task's
`reprospec run SPEC --shard K/N --out RUN/shards/K`, then the merge job's `reprospec merge
... --out RUN/merged`. No store lists the merged run (each shard has its own), and
`history --out SHARED` said "no runs recorded", `report latest --out SHARED` "has no runs".
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: sharded
matrix:
  code: [0, 3]
command: exit ${{ matrix.code }}
expect:
  outcome: pass
"""


def _slurm_run(cli: Cli, shared: Path, spec: Path, slurm_id: str) -> Path:
    """SHARED/slurm/<slurm_id>/ with two shards and their merged run, as the jobs leave it."""
    run_dir = shared / "slurm" / slurm_id
    for k in (1, 2):
        shard = cli(
            "run", str(spec), "--shard", f"{k}/2", "--out", str(run_dir / "shards" / str(k))
        )
        assert shard.code in (0, 1), shard.stderr
    runs = sorted(str(p) for p in (run_dir / "shards").glob("*/runs/*"))
    merged = cli("merge", *runs, "--out", str(run_dir / "merged"))
    assert merged.code == 1, merged.stderr  # code 3 is not the spec's pass
    (merged_run,) = (run_dir / "merged" / "runs").iterdir()
    return merged_run


def test_history_and_report_under_a_shared_out_find_its_merged_slurm_runs(
    cli: Cli, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    spec = tmp_path / "sharded.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    merged_run = _slurm_run(cli, shared, spec, "20261201-000000-sharded-ab12")
    run_id = merged_run.name

    listed = cli("history", "--out", str(shared))
    assert listed.code == 0, listed.stderr
    assert run_id in listed.stdout
    assert "no runs recorded" not in listed.stdout + listed.stderr
    assert "1 run by slurm: merged from a Slurm run's shards" in listed.stdout
    rows = json.loads(cli("history", str(spec), "--out", str(shared), "--format", "json").stdout)
    assert [(r["run_id"], r["purpose"], r["slurm_run"]) for r in rows] == [
        (run_id, "slurm", "20261201-000000-sharded-ab12")
    ]
    assert rows[0]["verdicts"]["reproduced"] == 1
    assert rows[0]["verdicts"]["not_reproduced"] == 1
    assert rows[0]["cells"] == 2
    assert cli("history", "other", "--out", str(shared), "--format", "json").stdout.strip() == "[]"

    for ref in ("latest", run_id, run_id[:-2]):
        shown = cli("report", ref, "--out", str(shared), "--format", "json")
        assert shown.code == 0, shown.stderr
        assert json.loads(shown.stdout)["run_id"] == run_id

    # A run of the store itself, in the same --out: both listed, newest first, and `latest`
    # is the newer one, `latest~1` the merged run.
    plain = cli("run", str(spec), "--out", str(shared))
    assert plain.code == 1, plain.stderr
    rows = json.loads(cli("history", "--out", str(shared), "--format", "json").stdout)
    assert [r["slurm_run"] for r in rows] == [None, "20261201-000000-sharded-ab12"]
    newest = json.loads(cli("report", "latest", "--out", str(shared), "--format", "json").stdout)
    assert newest["run_id"] == rows[0]["run_id"]
    before = cli("report", "latest~1", "--out", str(shared), "--format", "json")
    assert json.loads(before.stdout)["run_id"] == run_id
    compared = cli("compare", rows[0]["run_id"], run_id, "--out", str(shared))
    assert compared.code == 0, compared.stderr


@pytest.mark.parametrize("began", ["a second before", "in the same second"])
def test_latest_is_the_run_that_began_last_where_a_merged_run_began_in_its_second(
    cli: Cli, tmp_path: Path, began: str
) -> None:
    # A merged run made in the second a plain run of the store began, before it: `latest`
    # named the merged run (a run the store does not know counted as the newest of its
    # second), where history lists the plain run first. The merged run's folder is named
    # into the plain run's second here, as a merge and a run a moment apart name them, and
    # its start put a second before the plain run's, or in its second: times are kept to
    # the second, and history lists the store's run first where the two tie (the full
    # suite: a Slurm run and a plain run a moment apart began in one second).
    shared = tmp_path / "shared"
    spec = tmp_path / "sharded.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    merged_run = _slurm_run(cli, shared, spec, "20261201-000000-sharded-ab12")
    plain = cli("run", str(spec), "--out", str(shared))
    assert plain.code == 1, plain.stderr
    (plain_id,) = [p.name for p in (shared / "runs").iterdir()]
    same_second = f"{plain_id[:15]}-sharded-zzzz"  # sorts after the plain run's id
    results = merged_run / "results.json"
    data = json.loads(results.read_text().replace(merged_run.name, same_second))
    plain_began = json.loads((shared / "runs" / plain_id / "results.json").read_text())["started"]
    at = datetime.fromisoformat(plain_began)
    data["started"] = (at - timedelta(seconds=1) if began == "a second before" else at).isoformat()
    results.write_text(json.dumps(data))
    merged_run.rename(merged_run.with_name(same_second))

    rows = json.loads(cli("history", "--out", str(shared), "--format", "json").stdout)
    assert [r["run_id"] for r in rows] == [plain_id, same_second]
    for ref, run_id in (("latest", plain_id), ("latest~1", same_second)):
        shown = cli("report", ref, "--out", str(shared), "--format", "json")
        assert shown.code == 0, shown.stderr
        assert json.loads(shown.stdout)["run_id"] == run_id, ref


PROGRAM_SPEC = """\
reprospec: 1
name: sharded
matrix:
  code: [0, 3]
command: python prog.py ${{ matrix.code }}
files: [conf.json]
expect:
  outcome: pass
"""


def test_bundle_of_a_merged_slurm_run_checks_its_files_by_its_shards_key(
    cli: Cli, tmp_path: Path
) -> None:
    # A merged run's folder is in no store, so the since-run check looked for
    # the digest key in SHARED/slurm/<id>/merged, found none, packed today's files and
    # warned that the run folder had been moved from its store (it had not).
    shared = tmp_path / "shared"
    project = tmp_path / "project"
    project.mkdir()
    (project / "conf.json").write_text('{"level": 1}\n')
    (project / "prog.py").write_text(
        "import json, sys\njson.load(open('conf.json'))\nsys.exit(int(sys.argv[1]))\n"
    )
    spec = project / "sharded.yaml"
    spec.write_text(PROGRAM_SPEC, encoding="utf-8")
    merged_run = _slurm_run(cli, shared, spec, "20261201-000000-sharded-ab12")
    archive = tmp_path / "b.tgz"
    packed = cli("bundle", merged_run.name, "-o", str(archive), "--out", str(shared))
    assert packed.code == 0, packed.stderr
    assert "cannot be told" not in packed.stderr
    assert "warning" not in packed.stderr
    (project / "conf.json").write_text('{"level": 2}\n')
    refused = cli("bundle", merged_run.name, "-o", str(archive), "--out", str(shared), "--force")
    assert refused.code == 2, refused.stderr
    assert f"not as run {merged_run.name} read them" in refused.stderr
    assert "conf.json (changed)" in refused.stderr
    # The shards' keys gone: said of the Slurm run's shards, not of a moved run folder.
    for key in (shared / "slurm").glob("*/shards/*/digest.key"):
        key.unlink()
    unchecked = cli("bundle", merged_run.name, "-o", str(archive), "--out", str(shared), "--force")
    assert unchecked.code == 0, unchecked.stderr
    assert "in none of its Slurm run's shard stores" in unchecked.stderr
    assert "moved from its store" not in unchecked.stderr


def test_slurm_refuses_the_adaptive_rate_spec_every_shard_would_refuse(
    cli: Cli, tmp_path: Path
) -> None:
    # `slurm --shards 2` wrote and would submit an array whose every task's
    # `run --shard K/2` exits 2 on a `repeat: auto` spec with an `expect.rate`.
    spec = tmp_path / "auto.yaml"
    spec.write_text(
        SPEC.replace("expect:\n", "run: {repeat: auto, max_repeat: 8}\nexpect:\n  rate: '>=0.5'\n")
    )
    shared = tmp_path / "shared"
    refused = cli("slurm", str(spec), "--shards", "2", "--dry-run", "--out", str(shared))
    assert refused.code == 2, refused.stdout + refused.stderr
    assert "--shards 2: `repeat: auto` adds attempts to a cell while its rate" in refused.stderr
    assert not shared.exists(), "nothing written"
    shard = cli("run", str(spec), "--shard", "1/2", "--out", str(tmp_path / "o"))
    assert shard.code == 2
    assert refused.stderr.split(": ", 2)[2] == shard.stderr.split(": ", 2)[2]  # one check
    fixed = cli(
        "slurm", str(spec), "--shards", "2", "--repeat", "2", "--dry-run", "--out", str(shared)
    )
    assert fixed.code == 0, fixed.stderr
    assert "#SBATCH --array=1-2" in fixed.stdout
