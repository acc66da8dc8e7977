"""The script a cell's command runs, looked up in its workdir: `validate` notes one that is
not there, where every attempt would end infra-error (`can't open file`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reprospec
from reprospec.core.inputs import AttemptPlan
from reprospec.core.runoptions import RunOptions
from reprospec.plan.missing import missing_script, missing_script_notes
from reprospec.plan.run import plan_run


def _first(tmp_path: Path, command: str) -> AttemptPlan:
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"reprospec: 1\nname: s\ncommand: {json.dumps(command)}\nexpect: {{outcome: pass}}\n"
    )
    return plan_run(reprospec.load_spec(spec), RunOptions()).attempts[0]


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        ("python gone.py --lr 1", "gone.py"),
        ("python3.11 -u -X dev -W error gone.py", "gone.py"),
        ("MODE=1 env OTHER=2 python gone.py", "gone.py"),
        # A wrapper's words first were read as the program: no note.
        ("timeout 60 python3 gone.py", "gone.py"),
        ("timeout -s KILL 60 env -u HOME nice -n 5 ./gone.sh", "./gone.sh"),
        ("bash -o pipefail gone.sh", "gone.sh"),
        ("./gone.sh --fast", "./gone.sh"),
        ("sh -c 'cd . && python gone.py'", None),  # `cd` first: the shell's business
        ("sh -c 'python gone.py > out.log'", "gone.py"),
        ("python here.py", None),
        ("python -m gone", None),
        ("python -c 'print(1)'", None),
        ("python $SCRIPT", None),
        ("sleep 1", None),
        ("/usr/bin/true", None),
        ("python ~/train.py", None),  # the shell's `~`
        ("python /opt/app/gone.py", None),  # this machine's, not the workdir's
    ],
)
def test_the_script_a_command_runs_is_looked_up_in_its_workdir(
    tmp_path: Path, command: str, missing: str | None
) -> None:
    (tmp_path / "here.py").write_text("print(1)\n")
    assert missing_script(_first(tmp_path, command)) == missing


def test_validate_notes_each_missing_script_once_with_its_place(tmp_path: Path) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(
        "reprospec: 1\nname: m\nmatrix: {lr: [1, 2], script: [a.py, b.py]}\n"
        "command: python ${{ matrix.script }} --lr ${{ matrix.lr }}\n"
        "expect: {outcome: pass}\n"
    )
    (tmp_path / "a.py").write_text("print(1)\n")
    found = reprospec.validate(spec)
    assert found.problems == []
    assert found.notes == [
        f"{spec}:4:10: the command runs b.py, which is not in its workdir ({tmp_path}): its "
        "attempts would end infra-error unless something writes it first"
    ]
    assert missing_script_notes(str(spec), reprospec.load_spec(spec)) == found.notes


@pytest.mark.parametrize(
    ("command", "environment"),
    [
        # Unset here, `${{ env.SCRIPT_DIR }}` read as `/train.py`; the run's value is its own.
        ("python ${{ env.SCRIPT_DIR }}/train.py", ""),
        # The file is the image's.
        ("python app/gone.py", "environment: {image: 'python:3.11'}\n"),
    ],
)
def test_validate_notes_nothing_it_cannot_look_up(
    tmp_path: Path, command: str, environment: str
) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(
        f"reprospec: 1\nname: m\n{environment}command: {json.dumps(command)}\n"
        "expect: {outcome: pass}\n"
    )
    found = reprospec.validate(spec)
    assert (found.problems, found.notes) == ([], [])
