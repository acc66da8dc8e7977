"""benchmarks/bisect_simulation.py's `--before`: a revision name that is also a folder where
it runs (`--before HEAD` from a folder holding one named HEAD) is the revision; a folder is
read only where it is written as a path (`./HEAD`). The folder was tried first, relative to
the cwd, so `--before main` from /work read /work/main's working tree, edits and all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT

SIMULATION = ROOT / "benchmarks" / "bisect_simulation.py"


def _simulate(cwd: Path, before: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SIMULATION), "--before", before, "--trials", "1", "--versions", "8"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_a_revision_named_like_a_folder_is_the_revision(tmp_path: Path) -> None:
    (tmp_path / "HEAD").mkdir()
    revision = _simulate(tmp_path, "HEAD")
    assert revision.returncode == 0, revision.stderr
    assert "before (HEAD)" in revision.stdout
    folder = _simulate(tmp_path, "./HEAD")
    assert folder.returncode == 2
    assert folder.stderr.strip() == (
        "bisect_simulation.py: --before ./HEAD: a folder without reprospec/bisect/search.py"
    )
    typo = _simulate(tmp_path, "HEAD-nonesuch")
    assert typo.returncode == 2
    assert "Traceback" not in typo.stderr
    assert "bisect_simulation.py: --before HEAD-nonesuch: no git revision HEAD-nonesuch (" in (
        typo.stderr
    )


def test_a_refusal_says_which_it_missed(tmp_path: Path) -> None:
    """A path that is no folder is told so, not to write it as a path (`././nonesuch`); a
    bare name that is a folder here and no revision is told to write it `./wt`."""
    (tmp_path / "wt").mkdir()
    for before, said in [
        ("./nonesuch", "no folder ./nonesuch (and no git revision)"),
        (str(tmp_path / "gone"), f"no folder {tmp_path / 'gone'} (and no git revision)"),
        ("wt", "no git revision; wt is a folder here: write it ./wt"),
    ]:
        refused = _simulate(tmp_path, before)
        assert refused.returncode == 2
        assert refused.stderr.strip() == f"bisect_simulation.py: --before {before}: {said}"
