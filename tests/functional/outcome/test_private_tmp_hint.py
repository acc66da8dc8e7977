"""A failure hidden by the private TMPDIR points at `environment.shared_tmp`.

A real command that fails only when an earlier attempt left its cache file in
TMPDIR (as a kernel cache in /tmp does). With a private TMPDIR per attempt the
failure never shows, and the verdict used to say only "undecided ... run more
attempts"; now its reason names the fields that make attempts share /tmp.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli

_JOB = """\
import os, sys
cache = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kernel_cache.bin")
if os.path.exists(cache):
    sys.exit("RuntimeError: corrupt kernel cache " + cache)
with open(cache, "wb") as f:
    f.write(b"half a kernel")
"""


def _spec(tmp_path: Path, shared: bool) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "job.py").write_text(_JOB)
    spec = tmp_path / "cache.yaml"
    spec.write_text(
        "reprospec: 1\nname: shared-cache\n"
        f"environment: {{workdir: work, shared_tmp: {str(shared).lower()}}}\n"
        "command: python job.py\nrun: {repeat: 3}\n"
        "expect: {outcome: error, message: corrupt kernel cache, rate: '>0'}\n"
    )
    return spec


def test_private_tmp_names_shared_tmp_and_instances(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", str(_spec(tmp_path, shared=False)))
    assert result.code == 4, result.stdout + result.stderr  # undecided
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "undecided"
    assert "`environment.shared_tmp: true`" in cell["reason"]
    assert "`run.instances`" in cell["reason"]


def test_shared_tmp_reproduces_without_the_hint(cli: Cli, tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    result = cli("run", str(_spec(tmp_path, shared=True)), env={"TMPDIR": str(shared)})
    assert result.code == 0, result.stdout + result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "reproduced"
    assert "shared_tmp" not in cell["reason"]
