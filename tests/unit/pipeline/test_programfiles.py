"""The program's files as a run begins (pipeline/programfiles.py): the program's sources and
inputs digested, the files the command names only named, a search's probe reading none."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.core.runoptions import SEARCH_PURPOSES, RunOptions
from reprospec.pipeline.programfiles import program_files
from reprospec.plan import attempt, variants
from reprospec.plan.run import plan_run
from reprospec.store.digests import RunKey


def _spec(tmp_path: Path, body: str) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "train.py").write_text("import util\n")
    (app / "util.py").write_text("")
    (app / "run.log").write_text("written by an earlier run\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reprospec: 1\nname: p\nenvironment: {{workdir: app}}\n{body}")
    return spec


def test_the_record_digests_the_program_and_names_what_the_command_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300-value `--seed` axis planned 256 cells and read the files of each of their
    commands before the first attempt (0.5-1 s); one cell is planned now, its seed word
    rendered once per value."""
    seeds = ", ".join(map(str, range(300)))
    spec = _spec(
        tmp_path,
        f"matrix: {{seed: [{seeds}]}}\n"
        "command: python train.py --log run.log --seed ${{ matrix.seed }}\n",
    )
    planned: list[str] = []

    def counted(*args: object, **kwargs: object) -> object:
        planned.append("cell")
        return attempt.plan_attempt(*args, **kwargs)  # type: ignore[arg-type]

    plan = plan_run(reprospec.load_spec(spec), RunOptions())
    monkeypatch.setattr("reprospec.plan.run.plan_attempt", counted)
    record, warnings = program_files(plan, RunKey(tmp_path / "out"))
    assert (planned, warnings) == (["cell"], ())
    assert record is not None
    of = record["of"]
    assert isinstance(of, list)
    assert [pair[0] for pair in of if isinstance(pair, list)] == ["app/train.py", "app/util.py"]
    assert record["named"] == ["app/run.log"]
    # Each also by its path in the workdir, which compare matches two runs' files by.
    assert record["workdir"] == "app"
    assert record["in_workdir"] == [["app/train.py", "train.py"], ["app/util.py", "util.py"]]
    assert "partial" not in record
    # Renderings past the limit: the record says what was not read.
    monkeypatch.setattr(variants, "RENDERINGS", 100)
    capped, _ = program_files(plan, RunKey(tmp_path / "out"))
    assert capped is not None
    assert capped["partial"] == (
        "the files of 100 of the jobs the cells run were read, up to 200 more were not"
    )


@pytest.mark.parametrize("purpose", SEARCH_PURPOSES)
def test_a_search_probe_reads_no_files(tmp_path: Path, purpose: str) -> None:
    # isolate, amplify and minimize run it for every probe: tens to thousands of runs of
    # one program (minimize's, each a smaller copy), whose search id holds its digest.
    spec = _spec(tmp_path, "command: python train.py\n")
    plan = plan_run(reprospec.load_spec(spec), RunOptions(purpose=purpose))
    record, warnings = program_files(plan, RunKey(tmp_path / "out"))
    assert (record, warnings) == (
        {
            "store": None,
            "of": [],
            "skipped": f"a probe of {purpose}: its search's id holds the program's digest",
        },
        (),
    )
    assert not (tmp_path / "out").exists()  # no key made, nothing read


def test_an_absolute_workdir_keys_the_files_as_a_relative_one(tmp_path: Path) -> None:
    """amplify writes its amplified.yaml elsewhere, with the workdir made absolute: the
    files are named by their absolute paths there, and keyed in the workdir as before."""
    _spec(tmp_path, "command: python train.py\n")
    elsewhere = tmp_path / "amplify"
    elsewhere.mkdir()
    spec = elsewhere / "amplified.yaml"
    spec.write_text(
        f"reprospec: 1\nname: p\nenvironment: {{workdir: '{tmp_path / 'app'}'}}\n"
        "command: python train.py\n"
    )
    record, _ = program_files(
        plan_run(reprospec.load_spec(spec), RunOptions()), RunKey(tmp_path / "out")
    )
    assert record is not None
    app = (tmp_path / "app").resolve()
    assert record["workdir"] == str(app)
    assert record["in_workdir"] == [[f"{app}/train.py", "train.py"], [f"{app}/util.py", "util.py"]]
