"""A bundle is made to be shared: no secret of the engine's environment is written into it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec
from tests.support.materialize import SECRETS, secret_bundle
from tests.support.secretnames import named_secrets


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, tuple[str, ...]]:
    return secret_bundle(tmp_path, monkeypatch)


def test_no_secret_value_is_written_anywhere_in_the_bundle(
    bundle: tuple[Path, tuple[str, ...]],
) -> None:
    root, _ = bundle
    files = [path for path in root.rglob("*") if path.is_file()]
    assert any(path.name == "run.sh" for path in files)
    for path in files:
        data = path.read_bytes()
        for value in SECRETS.values():
            assert value.encode() not in data, f"{value} in {path.relative_to(root)}"
    plan = (root / "cells" / "1" / "plan.json").read_text()
    assert '"HF_TOKEN": "***"' in plan
    assert "https://user:***@example.org/data" in plan
    # A value that is no secret is kept: the bundle still reruns the cell as it was.
    assert '"WORKERS": "0"' in plan


def test_secret_variables_are_passed_by_name_and_the_reader_is_told(
    bundle: tuple[Path, tuple[str, ...]],
) -> None:
    root, warnings = bundle
    script = (root / "run.sh").read_text()
    assert script.count("-e HF_TOKEN \\") == 2
    # A secret the spec reads (`${{ env.DB_PASS }}`) is read from that variable: a reader
    # exports DB_PASS, as the spec says, not DATASET_URL.
    assert script.count('-e DATASET_URL=https://user:"$DB_PASS"@example.org/data \\') == 2
    assert "-e WORKERS=2 \\" in script
    readme = (root / "README.md").read_text()
    assert "Export these variables before `./run.sh`" in readme
    assert "`DB_PASS`, `HF_TOKEN`, `SERVICE_URL`" in readme
    # The command reads SERVICE_URL from the engine: the container's shell expands it (docker
    # passes it by name), where `***` was a glob.
    assert script.count("-e SERVICE_URL \\") == 2
    assert """print(len(os.environ['"'"'HF_TOKEN'"'"']))" "$SERVICE_URL"'\n""" in script
    assert not [w for w in warnings if "its command holds a secret value" in w]


@pytest.mark.parametrize("length", ["short", "long"])
def test_a_secret_the_spec_writes_under_any_name_is_passed_by_name(
    tmp_path: Path, length: str
) -> None:
    # `GITHUB_TOKEN_RO: ...` (last word `ro`) was written into run.sh as `-e NAME=value`.
    # A setting the report shows (`MAX_TOKENS: 2048`, `API_TOKEN: tok`) is written as it is.
    secrets = named_secrets(length)
    settings = {"MAX_TOKENS": "2048", "API_TOKEN": "tok"}
    lines = "".join(f"    {n}: {json.dumps(v)}\n" for n, v in {**secrets, **settings}.items())
    spec_path = tmp_path / "s.yaml"
    spec_path.write_text(
        f"reprospec: 1\nname: s\ncommand: python -c pass\nenvironment:\n  env:\n{lines}"
    )
    spec = load_spec(spec_path)
    root = write_bundle(spec, plan_run(spec, RunOptions()).attempts, tmp_path / "b").root
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for value in secrets.values():
            assert value.encode() not in data, f"{value} in {path.relative_to(root)}"
    script = (root / "run.sh").read_text()
    for name in secrets:
        assert f"-e {name} \\" in script
    assert "-e MAX_TOKENS=2048 \\" in script
    assert "-e API_TOKEN=tok \\" in script
