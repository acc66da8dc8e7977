"""The `next:` commands of an amplification that found no perturbation go on with the spec
file as the search ran it: its `-j` and its `--set`s (the spec file holds neither), a
secret's `--set` written as the run's command line writes it, `${{ env.NAME }}`."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli


def test_next_commands_carry_jobs_and_overrides(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "half.yaml"
    # Every other attempt exits 1, with or without the perturbation: not amplified, and a
    # base frequent enough to go on without one.
    spec.write_text(
        "reprospec: 1\nname: half\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        'command: python -c "import sys; sys.exit(${{ attempt }} % 2)"\n'
        "expect: {outcome: error, rate: '>=0.1'}\n"
    )
    out = tmp_path / "out"
    result = cli(
        "amplify", str(spec), "--out", str(out), "--budget", "12", "--try", "gc=1",
        "-j", "2", "--set", "run.timeout=30s",
        "--set", "environment.env.API_TOKEN=hunter2hunter2",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("next: ")]
    carried = " -j 2 --set run.timeout=30s --set 'environment.env.API_TOKEN=${{ env.API_TOKEN }}'"
    assert line.endswith(f"reprospec minimize {spec} --out {out}{carried}"), line
    assert "hunter2" not in result.stdout + result.stderr
    (folder,) = (out / "amplify").iterdir()
    assert carried in (folder / "amplify.md").read_text()
    assert not [p for p in folder.iterdir() if "hunter2" in p.read_text()]
