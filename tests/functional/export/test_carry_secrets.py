"""What `materialize` and `bundle` carry of a project that keeps secrets beside its code.

A real project (as new user a user's): a `.env` with a service key, `secrets/creds.json` with
a GitHub token, a `config.yaml` the program reads with a W&B key in it, another spec of
the project. Both outputs are made to be shared, and both follow one rule (export/carry.py):
only the files the cells name, never a hidden one, every secret written as `***` and named.
`materialize` copied the whole workdir (the `.env` in clear, although run.sh passed the
same value by name), and both carried the config's key verbatim. Real CLI, real files.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.support.cli import Cli

SERVICE_KEY = "fs_live_9f8e7d6c5b4a39281706"
GITHUB_TOKEN = "ghp_Abcdefghijklmnopqrstuvwxyz0123456789"
WANDB_KEY = "3f9c2a7d81e64b0fa5c3d2e1b0a9f8e7d6c5b4a3"
SECRETS = (SERVICE_KEY, GITHUB_TOKEN, WANDB_KEY)

SPEC = """\
reprospec: 1
name: job
environment:
  env:
    FEATURESTORE_API_KEY: "${{ env.FEATURESTORE_API_KEY }}"
command: python job.py
files: [config.yaml, notes.txt, .env]
expect: {outcome: pass}
"""

JOB = """\
import pathlib
config = pathlib.Path("config.yaml").read_text()
print("lr" in config)
"""


def _project(root: Path) -> Path:
    """The project, its secrets where real projects keep them; the spec's path."""
    root.mkdir()
    (root / ".env").write_text(f"FEATURESTORE_API_KEY={SERVICE_KEY}\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "creds.json").write_text(f'{{"github": "{GITHUB_TOKEN}"}}\n')
    (root / "config.yaml").write_text(f"lr: 0.1\nwandb_api_key: {WANDB_KEY}\nlog_every: 10\n")
    # A file the spec carries that holds the declared secret's value (a note pasted by hand).
    (root / "notes.txt").write_text(f"the key was {SERVICE_KEY}, rotate it\n")
    (root / "job.py").write_text(JOB)
    (root / "other.yaml").write_text("reprospec: 1\nname: other\ncommand: 'true'\n")
    (root / "job.yaml").write_text(SPEC)
    return root / "job.yaml"


def _everything(folder: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace") for p in sorted(folder.rglob("*")) if p.is_file()
    )


def test_materialize_carries_the_named_files_only_with_their_secrets_masked(
    tmp_path: Path, cli: Cli
) -> None:
    spec = _project(tmp_path / "proj")
    out = tmp_path / "shared"
    done = cli("materialize", str(spec), "-o", str(out), env={"FEATURESTORE_API_KEY": SERVICE_KEY})
    assert done.code == 0, done.stderr
    workdir = out / "workdirs" / "1"
    carried = sorted(p.relative_to(workdir).as_posix() for p in workdir.rglob("*"))
    # Not .env (hidden, though the spec names it), not secrets/, not the other spec.
    assert carried == ["config.yaml", "job.py", "notes.txt"]
    everything = _everything(out)
    for secret in SECRETS:
        assert secret not in everything
    assert (workdir / "config.yaml").read_text() == "lr: 0.1\nwandb_api_key: ***\nlog_every: 10\n"
    assert (workdir / "notes.txt").read_text() == "the key was ***, rotate it\n"
    # run.sh still passes the declared secret by name, for the reader to export.
    assert "-e FEATURESTORE_API_KEY \\" in (out / "run.sh").read_text()
    # The output and the README say what the reader must supply.
    assert "workdirs/1/config.yaml held a literal secret under wandb_api_key (line 2)" in (
        done.stderr
    )
    assert "workdirs/1/notes.txt held a secret value of this run" in done.stderr
    assert "not carried, hidden" in done.stderr
    assert ": .env" in done.stderr
    readme = (out / "README.md").read_text()
    assert "Left out or masked, for you to supply" in readme
    assert "wandb_api_key (line 2)" in readme
    assert "the workdir had `.env`" in readme
    assert "- `job.py`" in readme
    assert "creds.json" not in readme


def test_bundle_masks_and_names_a_secret_in_a_carried_config(tmp_path: Path, cli: Cli) -> None:
    spec = _project(tmp_path / "proj")
    store = tmp_path / "store"
    env = {"FEATURESTORE_API_KEY": SERVICE_KEY}
    ran = cli("run", str(spec), "--out", str(store), env=env)
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "job.tar.gz"
    packed = cli("bundle", ran.latest_run().name, "-o", str(archive), "--out", str(store), env=env)
    assert packed.code == 0, packed.stderr
    with tarfile.open(archive) as tar:
        members = {
            m.name.split("/", 1)[1]: handle.read()
            for m in tar.getmembers()
            if (handle := tar.extractfile(m)) is not None
        }
    tree = sorted(name for name in members if name.startswith("tree/"))
    assert tree == ["tree/config.yaml", "tree/job.py", "tree/job.yaml", "tree/notes.txt"]
    for data in members.values():
        for secret in SECRETS:
            assert secret.encode() not in data
    assert members["tree/config.yaml"] == b"lr: 0.1\nwandb_api_key: ***\nlog_every: 10\n"
    assert "tree/config.yaml held a literal secret under wandb_api_key (line 2)" in packed.stderr
    assert "not carried, hidden" in packed.stderr
    assert ".env (in " in packed.stderr
    readme = members["README.md"].decode()
    assert "Secrets masked in the files above" in readme
    assert "wandb_api_key" in readme


def test_bundle_names_each_workdir_whose_dot_file_it_leaves_out(tmp_path: Path, cli: Cli) -> None:
    # With every attempt of a workdir read together, the warning named each
    # left-out file in the last attempt's workdir: `.secret (in .../b)` alone, where a's
    # was left out too and never said.
    project = tmp_path / "proj"
    for name in ("a", "b"):
        (project / name).mkdir(parents=True)
        (project / name / ".secret").write_text("s\n")
    spec = project / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: wd\nmatrix: {d: [a, b]}\n"
        "environment: {workdir: '${{ matrix.d }}'}\n"
        "command: cat .secret\nexpect: {outcome: pass}\n"
    )
    store = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(store))
    assert ran.code == 0, ran.stderr
    packed = cli("bundle", "latest", "-o", str(tmp_path / "b.tgz"), "--out", str(store))
    assert packed.code == 0, packed.stderr
    for name in ("a", "b"):
        assert f".secret (in {(project / name).resolve()})" in packed.stderr, packed.stderr
