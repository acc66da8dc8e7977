"""`reprospec merge` as a user runs it: what a refused merge leaves."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.cli import interrupt_when

SPEC = (
    "reprospec: 1\nname: sh\nmatrix: {a: [1, 2]}\ncommand: echo ${{ matrix.a }}\n"
    "expect: {outcome: pass}\n"
)


def _reprospec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_a_refused_merge_leaves_no_store_it_made(tmp_path: Path) -> None:
    # A merge refused for a missing shard removed its run folder but left the empty
    # `OUT/runs/` (and OUT) it had made for it, a store with nothing in it.
    (tmp_path / "sh.yaml").write_text(SPEC)
    shard = _reprospec("run", "sh.yaml", "--shard", "1/2", "--out", "s1", cwd=tmp_path)
    assert shard.returncode == 0, shard.stderr
    (run,) = (tmp_path / "s1" / "runs").iterdir()
    merged = _reprospec("merge", str(run), "--out", "m", cwd=tmp_path)
    assert merged.returncode == 2, merged.stderr
    assert "missing shard 2/2" in merged.stderr
    assert not (tmp_path / "m").exists()
    # Nor the folders it made above OUT (`--out new/m`: an empty `new/` stayed).
    deeper = _reprospec("merge", str(run), "--out", "new/m", cwd=tmp_path)
    assert deeper.returncode == 2, deeper.stderr
    assert not (tmp_path / "new").exists()
    # A store that was there before stays, as it was.
    (tmp_path / "m" / "runs").mkdir(parents=True)
    again = _reprospec("merge", str(run), "--out", "m", cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert list((tmp_path / "m").iterdir()) == [tmp_path / "m" / "runs"]
    assert list((tmp_path / "m" / "runs").iterdir()) == []


def test_an_interrupted_shard_is_finished_by_the_command_merge_gives(tmp_path: Path) -> None:
    # the refusal named the merge's own --out (or, without one, none), which holds
    # no such run: the command it gave could not resume the shard.
    gate, started = tmp_path / "gate", tmp_path / "started"
    (tmp_path / "sh.yaml").write_text(
        "reprospec: 1\nname: sh\nmatrix: {a: [1, 2]}\n"
        f"command: [sh, -c, 'test -e {gate} || {{ touch {started}; sleep 60; }}']\n"
        "expect: {outcome: pass}\n"
    )
    gate.touch()
    first = _reprospec("run", "sh.yaml", "--shard", "1/2", "--out", "a", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    gate.unlink()
    # Stopped while its attempt waits for the gate: a known point, not a moment.
    shard = ["run", str(tmp_path / "sh.yaml"), "--shard", "2/2", "--out", str(tmp_path / "b")]
    second = interrupt_when([sys.executable, "-m", "reprospec", *shard], started.exists)
    assert second.code == 130, second.stderr
    (a,) = (tmp_path / "a" / "runs").iterdir()
    (b,) = (tmp_path / "b" / "runs").iterdir()
    shards = (f"a/runs/{a.name}", f"b/runs/{b.name}")
    finish = f"`reprospec run --resume {b.name} --out b`"
    for out in (("--out", "m"), ()):
        refused = _reprospec("merge", *shards, *out, cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert f"finish it first with {finish}, then merge" in refused.stderr
    assert not (tmp_path / "m").exists()
    # The command as given finishes the shard, and the merge then takes it.
    gate.touch()
    finished = _reprospec(*shlex.split(finish.strip("`"))[1:], cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    merged = _reprospec("merge", *shards, "--out", "m", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr


def test_a_shard_given_as_its_results_json_alone_is_said_to_lack_its_logs(
    tmp_path: Path,
) -> None:
    """A CI job that uploaded a shard's results.json alone: merged silently, the merged
    run's attempts pointing at logs it did not have."""
    (tmp_path / "sh.yaml").write_text(SPEC)
    for k in (1, 2):
        shard = _reprospec("run", "sh.yaml", "--shard", f"{k}/2", "--out", f"s{k}", cwd=tmp_path)
        assert shard.returncode == 0, shard.stderr
    (first,) = (tmp_path / "s1" / "runs").iterdir()
    (second,) = (tmp_path / "s2" / "runs").iterdir()
    alone = tmp_path / "artifact"
    alone.mkdir()
    (alone / "results.json").write_bytes((first / "results.json").read_bytes())
    merged = _reprospec("merge", "artifact/results.json", str(second), "--out", "m", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    said = f"shard 1/2 ({first.name}) from artifact: no cells/ folder beside its results.json"
    assert said in merged.stderr
    (run,) = (tmp_path / "m" / "runs").iterdir()
    assert said in (run / "report.md").read_text()
    # Whole run folders: nothing to say.
    whole = _reprospec("merge", str(first), str(second), "--out", "m2", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert "no cells/ folder" not in whole.stderr


def test_shards_numbered_from_a_first_attempt_merge(tmp_path: Path) -> None:
    """A search's probe numbers its attempts from RunOptions.first_attempt; shards of such
    a run (the Python API's) merged to attempts 5 to 7 of each cell, where merge refused
    them as holding attempts their shard was not given (it counted from 1). Shards of
    another first number are another run's and refused."""
    import json

    import reprospec

    (tmp_path / "sh.yaml").write_text(SPEC)
    spec = reprospec.load_spec(tmp_path / "sh.yaml")
    runs = []
    for k, first in ((1, 5), (2, 5), (2, 1)):
        options = reprospec.RunOptions(
            out=tmp_path / f"s{k}-{first}", repeat=3, shard=f"{k}/2", first_attempt=first
        )
        runs.append(tmp_path / options.out / "runs" / reprospec.run(spec, options).run_id)
    merged = _reprospec("merge", str(runs[0]), str(runs[1]), "--out", "m", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    (folder,) = (tmp_path / "m" / "runs").iterdir()
    cells = json.loads((folder / "results.json").read_text())["cells"]
    assert [[a["attempt"] for a in cell["attempts"]] for cell in cells] == [[5, 6, 7]] * 2
    other = _reprospec("merge", str(runs[0]), str(runs[2]), "--out", "m2", cwd=tmp_path)
    assert other.returncode == 2, other.stderr
    assert "other first attempt numbers (5 and 1)" in other.stderr
