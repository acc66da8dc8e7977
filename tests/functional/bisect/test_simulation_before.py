"""benchmarks/bisect_simulation.py's and isolate_simulation.py's `--before`: a revision name
that is also a folder where it runs (`--before HEAD` from a folder holding one named HEAD) is
the revision; a folder is read only where it is written as a path (`./HEAD`). The folder was
tried first, relative to the cwd, so `--before main` from /work read /work/main's working
tree, edits and all. They read revisions with git from this checkout: skipped without either
(an unpacked sdist or archive)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="--before reads revisions with git from a checkout; this is none",
)

# Each script with its quickest run, and the first file its search reads.
SCRIPTS = {
    "bisect_simulation.py": (["--trials", "1", "--versions", "8"], "reprospec/bisect/search.py"),
    "isolate_simulation.py": (
        ["--trials", "1", "--row", "8:1:1"],
        "reprospec/isolation/candidates.py",
    ),
}


@pytest.fixture(params=sorted(SCRIPTS))
def script(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _simulate(script: str, cwd: Path, before: str) -> subprocess.CompletedProcess[str]:
    arguments, _ = SCRIPTS[script]
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--before", before, *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_a_revision_named_like_a_folder_is_the_revision(script: str, tmp_path: Path) -> None:
    (tmp_path / "HEAD").mkdir()
    revision = _simulate(script, tmp_path, "HEAD")
    assert revision.returncode == 0, revision.stderr
    assert "before (HEAD)" in revision.stdout
    folder = _simulate(script, tmp_path, "./HEAD")
    assert folder.returncode == 2
    without = SCRIPTS[script][1]
    assert folder.stderr.strip() == f"{script}: --before ./HEAD: a folder without {without}"
    typo = _simulate(script, tmp_path, "HEAD-nonesuch")
    assert typo.returncode == 2
    assert "Traceback" not in typo.stderr
    assert f"{script}: --before HEAD-nonesuch: no git revision HEAD-nonesuch (" in typo.stderr


def test_a_refusal_says_which_it_missed(script: str, tmp_path: Path) -> None:
    """A path that is no folder is told so, not to write it as a path (`././nonesuch`); a
    bare name that is a folder here and no revision is told to write it `./wt`."""
    (tmp_path / "wt").mkdir()
    for before, said in [
        ("./nonesuch", "no folder ./nonesuch (and no git revision)"),
        (str(tmp_path / "gone"), f"no folder {tmp_path / 'gone'} (and no git revision)"),
        ("wt", "no git revision; wt is a folder here: write it ./wt"),
    ]:
        refused = _simulate(script, tmp_path, before)
        assert refused.returncode == 2
        assert refused.stderr.strip() == f"{script}: --before {before}: {said}"


def test_a_revision_without_the_file_is_told_so_beside_a_folder_of_its_name(
    script: str, tmp_path: Path
) -> None:
    # A folder named after a revision that lacks the file (a worktree named after its old
    # tag, as `git worktree add DIR REV` makes): it was told "no git revision; write it
    # ./ROOT", and the ./ only led to "a folder without".
    root = subprocess.run(
        ["git", "-C", str(ROOT), "rev-list", "--max-parents=0", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0][:8]
    without = SCRIPTS[script][1]
    has = ["git", "-C", str(ROOT), "cat-file", "-e", f"{root}:{without}"]
    if not subprocess.run(has, capture_output=True).returncode:
        pytest.skip(f"the root commit {root} has {without} (a shallow checkout)")
    (tmp_path / root).mkdir()
    refused = _simulate(script, tmp_path, root)
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        f"{script}: --before {root}: git revision {root} has no {without} ("
    ), refused.stderr
