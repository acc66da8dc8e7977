"""How materialize reads the Python a carried shell script starts (export/scriptpython.py)."""

from __future__ import annotations

from pathlib import Path

from reprospec.export.scriptpython import ScriptPython, script_python
from reprospec.plan.pyimports import Imports


def _read(tmp_path: Path, script: str, *carried: str) -> ScriptPython:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "run.sh").write_text(script)
    for name in carried:
        if not (tmp_path / name).exists():
            (tmp_path / name).write_text("import json\n")
    return script_python(tmp_path / "run.sh", tmp_path, [tmp_path / n for n in carried])


def test_each_command_of_a_script_is_read_apart(tmp_path: Path) -> None:
    # A newline ends a command: `echo hi` and the next line were one command, and a
    # comment's end took the newline with it.
    script = (
        "set -e  # torch is not needed\n"
        "python --version\n"
        "OMP_NUM_THREADS=1 exec python3.11 -X dev -W ignore app.py \\\n  --steps 3\n"
        "if true; then python -m torch.distributed.run app.py; fi\n"
        'echo "python" && which python3\n'
        "python -c 'import numpy'; torchrun app.py\n"
    )
    read = _read(tmp_path, script, "app.py")
    assert read == ScriptPython(
        (("`python -c` code", Imports(("numpy",))),), frozenset({"torch"}), None
    )


def test_a_script_it_runs_is_read_where_carried(tmp_path: Path) -> None:
    (tmp_path / "env.sh").write_text("python -c 'import torch'\n")
    read = _read(tmp_path, "source env.sh\nbash -c 'python app.py'\n", "app.py", "env.sh")
    assert read.reads == (("`python -c` code", Imports(("torch",))),)
    assert read.unsure is None
    gone = _read(tmp_path / "gone", ". /opt/env.sh\npython app.py\n", "app.py")
    assert gone.unsure == "runs /opt/env.sh, a script the bundle does not carry"
    made = _read(tmp_path / "made", 'eval "$CMD"\n', "app.py")
    assert made.unsure == "runs a command made at run time (`eval`)"


def test_a_lines_program_is_read_past_its_wrappers(tmp_path: Path) -> None:
    # A line's first word decided `$PY`, `eval` and `echo`; past a wrapper
    # (`nice -n 5 $PY app.py`) a program named at run time went unsaid.
    made = _read(tmp_path / "made", "nice -n 5 $PY app.py\n", "app.py")
    assert made.unsure == "runs a program named at run time (`$PY`)"
    evaled = _read(tmp_path / "eval", 'timeout 60 eval "$CMD"\n', "app.py")
    assert evaled.unsure == "runs a command made at run time (`eval`)"
    # An `echo` past env names python without running it.
    said = _read(tmp_path / "said", "env A=1 echo python3 -c 'import torch'\n", "app.py")
    assert said == ScriptPython()
    wrapped = _read(tmp_path / "wrapped", "timeout 5 env -i torchrun app.py\n", "app.py")
    assert wrapped == ScriptPython(modules=frozenset({"torch"}))


def test_a_tilde_user_with_no_home_is_a_word_not_a_traceback(tmp_path: Path) -> None:
    # `Path.expanduser` raised on a `~user` with no home ("Could not determine home
    # directory"), and a bundle of such a command died of it: the shell leaves the word as
    # typed, as program_file does (review).
    from reprospec.export.scriptpython import command_python

    for argv in (["python", "~nosuchuser-zz/x.py"], ["bash", "~nosuchuser-zz/run.sh"]):
        read = command_python(argv, tmp_path, [])
        assert "~nosuchuser-zz" in (read.unsure or ""), read
