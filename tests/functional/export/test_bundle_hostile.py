"""Hostile bundles are refused before the prompt, and bundles unpack safely side by side:
raw-header bounds (PAX and GNU long-name records), the manifest checked with the CLI's
own bounds, a confirmation before anything large is written, staging folders of a
killed engine removed, and two engines unpacking one bundle at once. Real CLI runs and
real concurrent processes."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.export import bundle
from reprospec.store.resultsjson import load_run
from tests.support.cli import ROOT, Cli

SPEC = b"""\
reprospec: 1
name: tiny
command: python -c "print('ran')"
expect: {outcome: pass}
"""


def _write(
    path: Path,
    manifest: bytes | None = None,
    extra: tuple[tarfile.TarInfo, bytes] | None = None,
    fmt: int = tarfile.PAX_FORMAT,
) -> Path:
    if manifest is None:
        manifest = json.dumps({"format": 1, "spec": "tree/s.yaml", "options": {}}).encode()
    with tarfile.open(path, "w:gz", format=fmt) as tar:
        for name, data in (("b/bundle.json", manifest), ("b/tree/s.yaml", SPEC)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            info, data = extra
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_huge_pax_record_is_refused_unread(tmp_path: Path, cli: Cli) -> None:
    info = tarfile.TarInfo("b/tree/note.txt")
    info.pax_headers = {"comment": "x" * (8 << 20)}  # tarfile reads it whole; ignored after
    archive = _write(tmp_path / "pax.tar.gz", extra=(info, b"hi"))
    ran = cli("run", str(archive), "--yes", "--out", str(tmp_path / "out"))
    assert ran.code == 2, ran.stderr
    assert "PAX header record of" in ran.stderr
    assert not (tmp_path / "out" / "runs").exists()


def test_a_huge_gnu_long_name_is_refused_unread(tmp_path: Path) -> None:
    info = tarfile.TarInfo("b/" + "n" * (2 << 20))
    archive = _write(tmp_path / "gnu.tar.gz", extra=(info, b"hi"), fmt=tarfile.GNU_FORMAT)
    with pytest.raises(UsageError, match="GNU long name record of"):
        bundle.unpack(archive, tmp_path / "bundles")


def test_a_large_bundle_is_confirmed_before_it_is_unpacked(tmp_path: Path, cli: Cli) -> None:
    info = tarfile.TarInfo("b/tree/big.bin")
    archive = _write(tmp_path / "big.tar.gz", extra=(info, bytes(bundle.PROMPT_BYTES + 1)))
    asked = cli("run", str(archive), "--out", str(tmp_path / "out"))
    assert asked.code == 2, asked.stderr
    assert "unpacks 64 MiB (3 members)" in asked.stderr
    assert "pass --yes" in asked.stderr
    assert not (tmp_path / "out" / "bundles").exists()  # nothing written before the answer


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (
            json.dumps({"format": 1, "spec": "tree/s.yaml", "options": {"repeat": 10**12}}),
            "options.repeat: expected a number from 1 to 10000",
        ),
        (
            json.dumps({"format": 1, "spec": "tree/s.yaml", "options": {"jobs": 0}}),
            "options.jobs: expected a number >= 1, got 0",
        ),
        (
            json.dumps({"format": 1, "spec": "tree/s.yaml", "options": {"timeout_s": -1}}),
            "options.timeout_s: expected a finite duration > 0",
        ),
        (
            '{"format": 1, "spec": "tree/s.yaml", "options": '
            + "[" * 100_000
            + "]" * 100_000
            + "}",
            "nested too deep",
        ),
    ],
)
def test_the_manifest_is_checked_with_the_clis_bounds(
    tmp_path: Path, cli: Cli, manifest: str, message: str
) -> None:
    archive = _write(tmp_path / "m.tar.gz", manifest=manifest.encode())
    ran = cli("run", str(archive), "--yes", "--out", str(tmp_path / "out"), timeout=60)
    assert ran.code == 2, ran.stderr
    assert message in ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_killed_engines_staging_folder_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run(["true"], check=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert dead.returncode == 0
    bundles = tmp_path / "bundles"
    stale = bundles / f".unpack-{gone.pid}-x1y2"
    stale.mkdir(parents=True)
    (stale / "half.bin").write_bytes(b"left by a killed engine")
    live = bundles / f".unpack-{os.getpid()}-busy"  # an engine still unpacking: kept
    live.mkdir()
    bundle.unpack(_write(tmp_path / "ok.tar.gz"), bundles)
    assert not stale.exists()
    assert live.exists()


# "Running" until the other engine has unpacked too (each says so by a file of its own
# beside the bundles): a fixed 3 s let a slow second unpack end after the first had looked,
# and the test passed without the two overlapping.
_UNPACK = """\
import os, sys, time
from pathlib import Path
from reprospec.export.bundle import unpack
got = unpack(Path(sys.argv[1]), Path(sys.argv[2]))
before = os.stat(got.spec).st_ino
marks = Path(sys.argv[3])
(marks / sys.argv[4]).touch()
deadline = time.monotonic() + 100
while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
print(before == os.stat(got.spec).st_ino if got.spec.exists() else False)
"""


def test_two_engines_unpacking_one_bundle_keep_each_others_tree(tmp_path: Path) -> None:
    info = tarfile.TarInfo("b/tree/data.bin")
    archive = _write(tmp_path / "race.tar.gz", extra=(info, os.urandom(48 << 20)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    marks = tmp_path / "unpacked"
    marks.mkdir()
    args = [sys.executable, "-c", _UNPACK, str(archive), str(tmp_path / "bundles"), str(marks)]
    engines = [
        subprocess.Popen([*args, str(n)], stdout=subprocess.PIPE, text=True, env=env)
        for n in range(2)
    ]
    outputs = [engine.communicate(timeout=120)[0].strip() for engine in engines]
    assert outputs == ["True", "True"]


@pytest.mark.parametrize("when", ["_run_redactor", "carried_bytes", "_readme"])
def test_a_run_folder_removed_while_it_is_packed_writes_no_bundle(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # A run folder removed while `bundle` read it (before its results.json and
    # report were packed, or after them, before its logs) gave a bundle of the spec and
    # the README alone, "wrote ...: 4 files", exit 0; removed after its logs were listed
    # (`_readme`), it said "No such file or directory" of one log.
    (tmp_path / "fails.py").write_text("print('out'); raise SystemExit(3)\n", encoding="utf-8")
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: gone\ncommand: python fails.py\nexpect: {outcome: error}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    run_dir = next((out / "runs").iterdir())
    assert any((run_dir / "cells").rglob("stdout.log"))
    run = load_run(run_dir / "results.json")
    real = getattr(bundle, when)

    def removing(*args: object, **kwargs: object) -> object:
        shutil.rmtree(run_dir, ignore_errors=True)  # the folder goes as it is read
        return real(*args, **kwargs)

    monkeypatch.setattr(bundle, when, removing)
    output = tmp_path / "b.tar.gz"
    with pytest.raises(UsageError, match="was removed while it was packed; nothing was written"):
        bundle.pack(run, run_dir, output)
    assert not output.exists()
    assert list(tmp_path.glob(".b.tar.gz.*")) == []
