"""Which attempts a preloaded fork server may run (the rest run fresh, saying why), and its key."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from reprospec.core.inputs import Expectation
from reprospec.process.preload import (
    EntryPoint,
    entry_point,
    fresh_reason,
    server_key,
    shell_words,
)
from tests.support.plans import PRELOAD, preload_plan

PY = sys.executable


# -- which attempts may be forked ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python train.py --seed 3", EntryPoint("script", "train.py", ("--seed", "3"))),
        ("python3 -u -m pkg.mod a", EntryPoint("module", "pkg.mod", ("a",), "python3", ("-u",))),
        ("python -mpkg", EntryPoint("module", "pkg")),
        ("python -c 'import os; print(1)' x", EntryPoint("code", "import os; print(1)", ("x",))),
        (["python", "-c", "a = [1]; print(a[0])"], EntryPoint("code", "a = [1]; print(a[0])")),
    ],
)
def test_python_entry_points_are_recognised(command: str | list[str], expected: EntryPoint) -> None:
    # Its argv0 is the interpreter a bare `python` runs (the runner's shim execs its path).
    assert entry_point(preload_plan(command), PY) == replace(expected, argv0=PY)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("python train.py | tee log", "shell line"),
        ("python train.py > out.txt", "shell line"),
        ("SEED=1 python train.py", "runs SEED=1"),
        ('python -c "print($HOME)"', "shell line"),
        ("python train_*.py", "shell line"),
        ("cd sub && python train.py", "shell line"),
        ("bash run.sh", "runs bash"),
        ("python -X dev train.py", "-X takes effect when the interpreter starts"),
        ("python -O train.py", "-O takes effect"),
        ("python", "stdin"),
    ],
)
def test_anything_but_one_python_program_runs_fresh(command: str, reason: str) -> None:
    said = entry_point(preload_plan(command), PY)
    assert isinstance(said, str)
    assert reason in said
    assert fresh_reason(preload_plan(command), said) == said


def test_shell_words_take_quotes_as_sh_does() -> None:
    assert shell_words("python -c 'x = [1]; print(x)'") == ["python", "-c", "x = [1]; print(x)"]
    assert shell_words('python a.py "two words"') == ["python", "a.py", "two words"]
    assert shell_words("python a.py 'unterminated") is None
    assert shell_words('python -c "print(`id`)"') is None


def test_the_interpreter_of_the_run_only() -> None:
    plan = preload_plan(["/usr/bin/python2", "x.py"])
    said = entry_point(plan, PY)
    assert isinstance(said, str)
    assert "not the run's Python interpreter" in said
    assert entry_point(preload_plan([PY, "x.py"]), PY) == EntryPoint("script", "x.py", (), PY)


def test_expectations_at_import_and_limits_run_fresh() -> None:
    at_import = preload_plan("python x.py", expectation=Expectation(outcome="hang", phase="import"))
    assert "at import" in (fresh_reason(at_import, entry_point(at_import, PY)) or "")
    module = preload_plan("python x.py", expectation=Expectation(outcome="error", module="wandb"))
    assert "at import" in (fresh_reason(module, entry_point(module, PY)) or "")
    limited = preload_plan("python x.py", environment={"memory": "2GB"})
    assert "environment.memory" in (fresh_reason(limited, entry_point(limited, PY)) or "")


def test_workload_imports_must_come_first_in_the_preload_list() -> None:
    workload = {"imports": ["json"], "model": {"builtin": "mlp"}}
    plan = preload_plan("", workload=workload, preload=("torch",))
    entry = entry_point(plan, PY)
    assert entry == EntryPoint("module", "reprospec_harness", argv0=PY)
    assert "workload.imports (json)" in (fresh_reason(plan, entry) or "")
    assert fresh_reason(replace(plan, preload=("json", "torch")), entry) is None
    debug = preload_plan("", workload={**workload, "debug": {"cuda_launch_blocking": True}})
    assert "workload.debug" in (fresh_reason(replace(debug, preload=("json",)), entry) or "")


def test_the_key_is_every_variable_but_the_per_attempt_ones() -> None:
    env = {"PATH": "/bin", "OMP_NUM_THREADS": "1", "TMPDIR": "/a/tmp", "REPROSPEC_EVENTS": "/a/e"}
    key = server_key(PY, env, PRELOAD, ("torch",))
    per_attempt = {**env, "TMPDIR": "/b/tmp", "REPROSPEC_EVENTS": "/b/e", "REPROSPEC_CELL": "/b"}
    assert server_key(PY, per_attempt, PRELOAD, ("torch",)) == key
    for changed in (
        {**env, "OMP_NUM_THREADS": "2"},
        {**env, "CUDA_VISIBLE_DEVICES": "1"},
        {**env, "PYTHONPATH": "/x"},
        {**env, "ANYTHING_ELSE": "1"},
    ):
        assert server_key(PY, changed, PRELOAD, ("torch",)) != key
    assert server_key(PY, env, PRELOAD, ("torch", "numpy")) != key
    assert server_key("/other/python", env, PRELOAD, ("torch",)) != key


def test_a_bare_python_is_the_interpreter_its_shim_execs() -> None:
    # A fresh `python x.py` runs the runner's shim, which execs the interpreter by its
    # path: sys.orig_argv[0] is that path. A forked attempt's read `python`, and a program
    # that re-executes itself (os.execv(sys.orig_argv[0], sys.orig_argv)) failed there.
    for command in ("python x.py", "python3 -u -m mod a", "python -c pass"):
        entry = entry_point(preload_plan(command), PY)
        assert isinstance(entry, EntryPoint)
        assert entry.argv0 == PY, command
