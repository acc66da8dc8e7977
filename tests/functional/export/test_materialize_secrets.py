"""A materialized cell that needs a secret refuses to start without it (a real child)."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.materialize import secret_bundle


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, tuple[str, ...]]:
    return secret_bundle(tmp_path, monkeypatch)


def test_a_cell_refuses_to_start_without_the_secret_it_needs(
    bundle: tuple[Path, tuple[str, ...]],
) -> None:
    root, _ = bundle
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "DATASET_URL")}
    done = subprocess.run(
        ["bash", str(root / "run.sh"), "1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3  # docker could not run a cell: run.sh exits 3
    said = [line for line in done.stdout.splitlines() if line.startswith("== cell ")]
    assert len(said) == 1
    assert said[0].startswith("== cell 1 [workers=0]: HF_TOKEN is unset: export it first (a secret")
    assert said[0].endswith("; not run")
    assert not (root / "results").exists(), "nothing ran, nothing was built"


def test_a_secret_the_spec_reads_from_the_environment_is_asked_for_and_passed_by_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `MY_TOK: ${{ env.HF_TOKEN }}` and `--token ${{ env.HF_TOKEN }}`: run.sh stopped with
    # "MY_TOK is unset: export it first" where HF_TOKEN, the variable the spec reads, was
    # exported, and with MY_TOK set the container's shell ran `--token ***`, a glob: the
    # program got `--token secret.py`. A `docker` of this test's own records what
    # run.sh asks it to run, which runs here as the container would run it.
    from reprospec.core.runoptions import RunOptions
    from reprospec.export.materialize import write_bundle
    from reprospec.plan.run import plan_run
    from reprospec.spec.load import load_spec

    token = "hf_" + "Ab1" * 12
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.delenv("MY_TOK", raising=False)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "secret.py").write_text(
        "import os, sys\nsys.exit(3 if sys.argv[2] == os.environ['MY_TOK'] == "
        "os.environ['HF_TOKEN'] else 0)\n"
    )
    spec_path = tmp_path / "app" / "spec.yaml"
    spec_path.write_text(
        "reprospec: 1\nname: secretline\ncommand: python3 secret.py --token ${{ env.HF_TOKEN }}\n"
        "environment: {env: {MY_TOK: '${{ env.HF_TOKEN }}'}}\nexpect: {outcome: error}\n"
    )
    spec = load_spec(spec_path)
    written = write_bundle(spec, plan_run(spec, RunOptions()).attempts, tmp_path / "bundle")
    assert not [w for w in written.warnings if "its command holds a secret" in w]
    readme = (written.root / "README.md").read_text()
    assert "Export these variables before `./run.sh`" in readme
    assert "`HF_TOKEN`." in readme
    assert "MY_TOK`" not in readme
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "docker").write_text(
        '#!/bin/sh\n[ "$1" = run ] && printf \'%s\\0\' "$@" >"$FAKE_DOCKER_ARGV"\nexit 0\n'
    )
    (fake / "docker").chmod(0o755)
    recorded = tmp_path / "argv"
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    env["FAKE_DOCKER_ARGV"] = str(recorded)
    done = subprocess.run(
        ["bash", str(written.root / "run.sh"), "1"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert "is unset" not in done.stdout, done.stdout
    argv = recorded.read_text().split("\0")[:-1]
    image = argv.index("reprospec-bundle/secretline:1")
    command = argv[image + 1 :]
    assert command == ["/bin/sh", "-c", 'python3 secret.py --token "$HF_TOKEN"']
    given = {}
    for flag, value in itertools.pairwise(argv[: image + 1]):
        if flag == "-e":
            name, sep, held = value.partition("=")
            given[name] = held if sep else env[name]  # `-e NAME`: docker reads run.sh's
    assert given["MY_TOK"] == token
    ran = subprocess.run(
        command, cwd=tmp_path / "app", env={"PATH": os.environ["PATH"], **given}, timeout=60
    )
    assert ran.returncode == 3
