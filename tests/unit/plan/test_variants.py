"""The jobs a run's cells can run, one attempt each: the few that name every file any
cell's job names, without planning every cell (plan/variants.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.core.jsontypes import JsonObject
from reprospec.core.runoptions import RunOptions
from reprospec.core.sections import Command
from reprospec.plan import variants
from reprospec.plan.run import plan_run
from reprospec.plan.variants import JobVariants
from reprospec.plan.workfiles import program_files
from reprospec.spec.matrix import axis_values


def _variants(tmp_path: Path, body: str) -> JobVariants:
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reprospec: 1\nname: v\nenvironment: {{workdir: app}}\n{body}")
    return plan_run(reprospec.load_spec(spec), RunOptions()).attempts.variants()


def _argv(found: JobVariants) -> list[tuple[str, ...]]:
    return [a.job.argv for a in found.attempts if isinstance(a.job, Command)]


def test_a_job_that_reads_no_axis_is_read_from_one_cell(tmp_path: Path) -> None:
    # 4 cells of two axes the command never reads: the program named is the same in each.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: v\nmatrix: {a: [1, 2], b: [x, y]}\n"
        "environment: {env: {A: '${{ matrix.a }}'}}\ncommand: [python, train.py]\n"
    )
    found = plan_run(reprospec.load_spec(spec), RunOptions()).attempts.variants()
    assert (_argv(found), found.unread) == ([("python", "train.py")], 0)


def test_a_command_is_read_as_a_template_one_rendering_per_value_of_each_word(
    tmp_path: Path,
) -> None:
    """A 300-value `--seed` axis rendered 300 commands and read each one's files (0.5-1 s
    of every run); now each varying word is rendered once per value it can take, and the
    attempts hold every rendering of every word (as many as the word with the most)."""
    app = tmp_path / "app"
    app.mkdir()
    for name in ("a", "b", "c"):
        (app / f"{name}.py").write_text("import shared\n")
    (app / "shared.py").write_text("")
    (app / "unused.py").write_text("")
    seeds = ", ".join(map(str, range(300)))
    found = _variants(
        tmp_path,
        f"matrix: {{script: [a, b, c], seed: [{seeds}], other: [1, 2]}}\n"
        "command: python ${{ matrix.script }}.py --seed ${{ matrix.seed }}\n",
    )
    assert (len(found.attempts), found.unread) == (300, 0)
    argv = _argv(found)
    assert argv[0] == ("python", "a.py", "--seed", "0")
    assert argv[2] == ("python", "c.py", "--seed", "2")
    assert argv[299] == ("python", "c.py", "--seed", "299")
    assert [p.name for p in program_files(found.attempts).sources] == [
        "a.py", "b.py", "c.py", "shared.py",
    ]  # fmt: skip
    # Two axes in one word: each combination of the two.
    both = _variants(
        tmp_path,
        "matrix: {d: [x, y], s: [a, b]}\ncommand: [python, '${{ matrix.d }}/${{ matrix.s }}.py']\n",
    )
    assert sorted(a[1] for a in _argv(both)) == ["x/a.py", "x/b.py", "y/a.py", "y/b.py"]


def test_a_value_that_would_split_the_words_plans_each_combination_whole(
    tmp_path: Path,
) -> None:
    # `a.py b.py` splits into two words in a shell command: the template's one word
    # cannot say which, so each combination of the axes read is planned on a cell.
    found = _variants(
        tmp_path,
        "matrix: {script: ['a.py b.py', c.py], seed: [1, 2, 3]}\n"
        "command: python ${{ matrix.script }}\n",
    )
    assert (len(found.attempts), found.unread) == (2, 0)
    assert sorted(a.job.argv[2] for a in found.attempts if isinstance(a.job, Command)) == [
        "python a.py b.py",
        "python c.py",
    ]


def test_a_workdir_that_reads_an_axis_plans_each_of_its_values(tmp_path: Path) -> None:
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "app.py").write_text("")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: v\nmatrix: {d: [x, y], seed: [1, 2, 3, 4]}\n"
        "environment: {workdir: '${{ matrix.d }}'}\n"
        "command: python app.py --seed ${{ matrix.seed }}\n"
    )
    found = plan_run(reprospec.load_spec(spec), RunOptions()).attempts.variants()
    # d x seed: the workdir's two values with each seed, whole.
    assert (len(found.attempts), found.unread) == (8, 0)
    assert {a.workdir.name for a in found.attempts} == {"x", "y"}
    assert [p.parent.name for p in program_files(found.attempts).sources] == ["x", "y"]


def test_what_was_left_unread_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(variants, "RENDERINGS", 10)
    seeds = ", ".join(map(str, range(50)))
    found = _variants(
        tmp_path,
        f"matrix: {{seed: [{seeds}]}}\ncommand: [python, x.py, '${{{{ matrix.seed }}}}']\n",
    )
    assert (len(found.attempts), found.unread) == (10, 40)
    # A job that reads its cell's id: its cells in order, up to the limit.
    monkeypatch.setattr(variants, "VARIANTS", 7)
    by_id = _variants(
        tmp_path, f"matrix: {{seed: [{seeds}]}}\ncommand: [python, x.py, '${{{{ cell.id }}}}']\n"
    )
    assert (len(by_id.attempts), by_id.unread) == (7, 43)
    assert _argv(by_id)[1] == ("python", "x.py", "seed=1")


def test_an_axis_values_are_read_from_the_section_includes_too() -> None:
    section: JsonObject = {
        "a": [1, 2, 1.0],
        "include": [{"a": 3, "extra": "e"}, {"b": 5}],
    }
    assert axis_values(section, "a") == ([1, 2, 3], True)  # {"b": 5} is a cell without `a`
    assert axis_values(section, "extra") == (["e"], True)
    assert axis_values({"a": [1]}, "a") == ([1], False)
    assert axis_values(None, "a") == ([], True)
