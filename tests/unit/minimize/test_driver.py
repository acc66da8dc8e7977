"""What minimize takes to be the program (the files read from a real workdir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject
from reprospec.core.runoptions import RunOptions
from reprospec.core.trylock import SEARCH_LOCK, try_locked
from reprospec.errors import UsageError
from reprospec.minimize.driver import (
    MinimizeOptions,
    _drop_bytecode,
    _forget_stopped_in_settings,
    _program,
    minimize_spec,
)
from tests.support.files import written


def test_a_file_in_another_encoding_is_minimized_as_utf8_and_its_imports_are_followed(
    tmp_path: Path,
) -> None:
    """A `coding: latin-1` file is Python source (PEP 263); reading it as UTF-8 raised
    UnicodeDecodeError out of minimize, and then it was left whole ("0 -> 0 lines", the
    result saying nothing of why). Candidates are written as UTF-8: its coding line says
    utf-8, the same program; the module it imports is minimized too."""
    written(tmp_path, {"helper.py": "X = 1\n", "bom.py": "\ufeffY = 2\n"})
    (tmp_path / "app.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport helper\nimport bom\nprint('caf\xe9')\n"
    )

    program = _program("python app.py", tmp_path, {})

    assert dict(program.files) == {
        "app.py": "# -*- coding: utf-8 -*-\nimport helper\nimport bom\nprint('caf\xe9')\n",
        "helper.py": "X = 1\n",
        "bom.py": "Y = 2\n",
    }
    assert program.head == ("python", "app.py")


def test_a_file_python_could_not_read_is_neither_minimized_nor_followed(tmp_path: Path) -> None:
    written(tmp_path, {"helper.py": "X = 1\n"})
    (tmp_path / "app.py").write_bytes(b"import helper\nprint('\xe9')\n")  # no coding line

    assert _program("python app.py", tmp_path, {}).files == ()


def test_files_in_another_encoding_that_import_each_other_are_read_once(tmp_path: Path) -> None:
    # Only the minimized files were remembered as read: two latin-1 modules importing each
    # other recursed until RecursionError, a traceback out of minimize.
    (tmp_path / "a.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport b\nA = '\xe9'\n")
    (tmp_path / "b.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport a\nB = '\xe9'\n")

    files = dict(_program("python a.py", tmp_path, {}).files)
    assert files == {
        "a.py": "# -*- coding: utf-8 -*-\nimport b\nA = '\xe9'\n",
        "b.py": "# -*- coding: utf-8 -*-\nimport a\nB = '\xe9'\n",
    }


def test_dirs_check_of_a_deterministic_failure_runs_what_cli_md_says() -> None:
    """cli.md said DIR's check runs "one for a deterministic failure"; the rule gives it
    3 to 6 (a 95% lower bound is its low end, 57% of the original's 5 in 5), and says so."""
    from reprospec.core.rates import rate_of
    from reprospec.minimize.driver import dir_tries

    with_original = dir_tries(rate_of(20, 20), rate_of(5, 5))
    alone = dir_tries(rate_of(20, 20), rate_of(0, 0))
    assert (with_original, alone) == (6, 3)
    cli = (Path(__file__).parents[3] / "docs" / "cli.md").read_text(encoding="utf-8")
    text = " ".join(cli.split())
    assert "one for a deterministic failure" not in text
    assert f"5 failures in 5 ({with_original} attempts)" in text
    assert f"20 in 20 alone ({alone})" in text


def test_a_state_none_of_whose_attempts_could_run_is_forgotten(tmp_path: Path) -> None:
    """nu-a: the original's command not on PATH ended infra-error (exit 3); once it was,
    the same command replayed "command not found" and never ran it again."""
    from reprospec.isolation.state import StateFile, StoredProbe, forget_could_not_run

    header: JsonObject = {"spec": "s", "cell": "default"}
    state = StateFile(tmp_path / "a", header)
    for run in ("r1", "r2", "r3"):
        state.add(StoredProbe("k", (), "failing", ("infra",), run, "command not found: segpy"))
    assert forget_could_not_run(tmp_path / "a" / "state.json", header) == (
        "command not found: segpy"
    )
    assert StateFile(tmp_path / "a", header).stored == 0
    # Where any attempt ran, the search's own answer: replayed as it was.
    state = StateFile(tmp_path / "b", header)
    state.add(StoredProbe("k", (), "failing", ("match",), "r1"))
    state.add(StoredProbe("c", (0,), "search", ("infra",), "r2", "can't open file"))
    assert forget_could_not_run(tmp_path / "b" / "state.json", header) == ""
    assert StateFile(tmp_path / "b", header).stored == 2
    assert forget_could_not_run(tmp_path / "none" / "state.json", header) == ""


def test_the_progress_names_two_phases_steps_apart() -> None:
    # nu-a: "smallest steps=4, steps=10, batch_size=16" of specs/segfault.yaml's two phases.
    from reprospec.minimize.driver import _size
    from reprospec.minimize.program import Program

    program = Program(
        (),
        (),
        fields=(
            ("workload.phases.0.steps", 4),
            ("workload.phases.1.steps", 10),
            ("workload.data.loader.batch_size", 16),
        ),
        workload=True,
    )
    assert _size(program, program) == "phases.0.steps=4, phases.1.steps=10, batch_size=16"


def test_the_progress_counts_lines_as_the_answer_does() -> None:
    # A data.py left whole whose DataLoader call spans two lines: the progress said
    # `minimizing 3 lines` and `smallest 2 lines` (every file as unparse writes it, the call
    # on one line) of a search whose answer read `4 -> 3` (a file left whole as it is).
    from reprospec.minimize.driver import _size
    from reprospec.minimize.program import Program
    from reprospec.minimize.report import sizes

    data = "loader = make(batch_size=8,\n              workers=2)\n"
    original = Program((), (), files=(("data.py", data), ("train.py", "import data\nx = 1\n")))
    best = original.with_source("train.py", "import data\n")
    assert (original.lines, best.lines) == (3, 2)  # unparse's count, which the search compares
    assert (_size(original, original), _size(best, original)) == ("4 lines", "3 lines")
    assert original.shown_lines(original) == original.given_lines[0] == 4

    class Result:  # what report.sizes reads of a MinimizeResult
        pass

    result = Result()
    result.program, result.original = best, original  # type: ignore[attr-defined]
    assert sizes(result).lines == (4, 3)  # type: ignore[arg-type]
    # The split call in a file minimize changes: the answer counts its original as
    # unparse writes it (3 -> 2), and one the search leaves whole as it is; the start, which
    # cannot know which, says the files' own layout's count, the other beside it.
    from reprospec.minimize.driver import _start_size

    original = Program((), (), files=(("train.py", f"{data}import os\nx = 1\n"),))
    best = original.with_source("train.py", "loader = make(batch_size=8, workers=2)\nx = 1\n")
    result.program, result.original = best, original  # type: ignore[attr-defined]
    assert sizes(result).lines == (3, 2)  # type: ignore[arg-type]
    assert _size(best, original) == "2 lines"
    assert _start_size(original) == "4 lines of Python (train.py; 3 as minimize writes them)"
    assert _start_size(best) == "2 lines of Python (train.py)"  # (one layout: one count)
    # A file the search leaves whole is counted as it is: `import os; os.abort()` read
    # `minimizing 2 lines ..., the answer's count` before `1 -> 1 lines`.
    whole = Program((), (), files=(("crash.py", "import os; os.abort()\n"),))
    assert _start_size(whole) == "1 line of Python (crash.py; 2 as minimize writes them)"
    assert "answer" not in _start_size(whole)
    assert _start_size(Program((), ())) == "0 lines (no Python files)"


def test_a_package_its_relative_imports_and_a_scripts_neighbours_are_the_program(
    tmp_path: Path,
) -> None:
    """`from mylib import run_kernel` imports mylib/__init__.py, whose `from .core import
    run_kernel` imports mylib/core.py: only `mylib.py` at the workdir's root was looked
    for, so the package was never minimized (`3 -> 3 lines` of the script alone, the
    segfault's code left whole in DIR). A module beside a script in a subfolder is one
    Python imports (its folder is first on sys.path): it was looked for at the root alone."""
    written(
        tmp_path,
        {
            "run.py": "import sys\nfrom mylib import run_kernel\nrun_kernel(sys.argv[1])\n",
            "mylib/__init__.py": "from .core import run_kernel\n",
            "mylib/core.py": "from . import util\n\ndef run_kernel(k):\n    util.log(k)\n",
            "mylib/util.py": "def log(m):\n    print(m)\n",
            "mylib/unused.py": "X = 1\n",
            "tools/go.py": "import near\nnear.go()\n",
            "tools/near.py": "def go():\n    pass\n",
            "near.py": "NOT_IMPORTED = 1\n",
        },
    )

    package = _program("python run.py vec", tmp_path, {})
    in_subfolder = _program("python tools/go.py", tmp_path, {})
    as_module = _program("python -m mylib.core", tmp_path, {})

    assert sorted(dict(package.files)) == [
        "mylib/__init__.py",
        "mylib/core.py",
        "mylib/util.py",
        "run.py",
    ]
    assert package.args == ("vec",)
    # (near.py at the root too, as a bundle carries it: plan.workfiles' rule, which a
    # PYTHONPATH=. would make right; emptied and unused, it leaves DIR.)
    assert {"tools/go.py", "tools/near.py"} <= set(dict(in_subfolder.files))
    assert sorted(dict(as_module.files)) == ["mylib/__init__.py", "mylib/core.py", "mylib/util.py"]
    assert as_module.head == ("python", "-m", "mylib.core")


def test_the_python_files_of_a_script_given_whole_to_sh_c_are_the_program(tmp_path: Path) -> None:
    # `sh -c "python gen.py ${{ matrix.n }} | python consume.py"`: neither file was a word of
    # the command, and minimize said "0 -> 0 lines (minimized)" of a program it never cut.
    written(tmp_path, {"gen.py": "print(1)\n", "consume.py": "import helper\n", "helper.py": ""})

    command = 'sh -c "python gen.py ${{ matrix.n }} 2>/dev/null | python consume.py"'
    program = _program(command, tmp_path, {})

    assert sorted(path for path, _ in program.files) == ["consume.py", "gen.py", "helper.py"]
    assert program.head == ("sh",)


def test_a_dir_answering_the_same_spec_before_its_settings_changed_says_so(
    tmp_path: Path,
) -> None:
    """A rerun with another `--set environment.env.X=...` (the program's key holds its
    variables) was refused as an answer "of its program before it changed": the program
    had not changed."""
    import json
    from types import SimpleNamespace
    from typing import cast

    from reprospec.core.inputs import Cell
    from reprospec.minimize.driver import _answer, _other_answer
    from reprospec.spec.load import load_spec

    written(tmp_path, {"app.py": "raise ValueError\n"})
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\ncommand: python app.py\nenvironment: {env: {X: '1'}}\n"
    )
    spec = load_spec(tmp_path / "s.yaml")
    failing = cast(Cell, SimpleNamespace(id="default"))
    before = _program("python app.py", tmp_path, {"environment": {"env": {"X": "1"}}})
    after = _program("python app.py", tmp_path, {"environment": {"env": {"X": "2"}}})
    assert before.files == after.files
    assert before.key != after.key
    answer = {"spec": "s", "spec_path": str(tmp_path / "s.yaml"), "cell": "default"}
    (tmp_path / "minimize.json").write_text(json.dumps({**answer, "program": before.key}))

    assert _answer(tmp_path) == {**answer, "program": before.key}
    assert _other_answer(tmp_path, spec, failing, before) == ""
    assert _other_answer(tmp_path, spec, failing, after) == (
        f"spec 's' ({tmp_path / 's.yaml'}), cell default, before its program or its settings "
        "changed"
    )
    (tmp_path / "minimize.json").write_text("[]")
    assert _answer(tmp_path) is None
    assert _other_answer(tmp_path, spec, failing, after) == ""


def test_a_check_killed_mid_import_leaves_no_pycache_behind(tmp_path: Path) -> None:
    """A check killed while Python wrote its bytecode leaves `NAME.pyc.<id>` (importlib's
    temporary) beside the .pyc files: still Python's, so the folder goes; one with a file
    of another kind stays."""
    written(
        tmp_path,
        {
            "__pycache__/helper.cpython-311.pyc": "",
            "__pycache__/app.cpython-311.pyc.140234567890": "",
            "sub/__pycache__/mine.txt": "",
            "sub/__pycache__/x.cpython-311.pyc": "",
            "other/__pycache__/x.pyc.notdigits": "",
        },
    )

    _drop_bytecode(tmp_path)

    assert not (tmp_path / "__pycache__").exists()
    assert (tmp_path / "sub/__pycache__/x.cpython-311.pyc").exists()
    assert (tmp_path / "other/__pycache__/x.pyc.notdigits").exists()


def test_a_stopped_answer_is_forgotten_only_where_no_other_minimize_holds_its_folder(
    tmp_path: Path,
) -> None:
    """A run stopped in step 1 left its answer under the unreduced id; a later run removes
    it, but not from under a minimize that holds that folder now (its `.lock` would go
    with it, and a third run could take a fresh one there)."""
    folder = written(tmp_path / "m", {"minimize.json": '{"status": "interrupted"}'})

    with try_locked(folder / SEARCH_LOCK) as free:
        assert free is True
        _forget_stopped_in_settings(folder)
        assert (folder / "minimize.json").exists()
        assert (folder / SEARCH_LOCK).exists()

    _forget_stopped_in_settings(folder)
    assert not folder.exists()


@pytest.mark.parametrize("matrix", ["", 'matrix: {a: ["0", "1"]}\n'])
def test_a_spec_without_expect_is_refused_before_anything_runs(tmp_path: Path, matrix: str) -> None:
    # Minimize's own refusal, ahead of the failing cell's choice (whose words it shares,
    # failingcell.needs_expect): nothing is run or written.
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: cells\ncommand: 'exit 3'\n" + matrix)
    out = tmp_path / "out"
    options = MinimizeOptions(run=RunOptions(purpose="minimize", out=out))
    with pytest.raises(UsageError) as refused:
        minimize_spec(spec, options)
    assert str(refused.value) == (
        "minimize needs the spec's expect: it says how the failing cell fails (the same "
        "signature, not any failure); `run --observe` shows what each cell does"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_dir_nothing_can_be_made_in_is_refused_by_the_command_lines_rule() -> None:
    # os.access said root could write /proc/min-out: the API's minimize ran its search,
    # then failed on DIR's first file. The probe is check_writable's: a mkdir.
    from reprospec.core.atomicfile import unwritable  # minimize's driver asks it

    assert unwritable(Path("/proc/min-out"))
    assert unwritable(Path("/proc"))
    assert unwritable(Path("/tmp")) == ""


@pytest.mark.parametrize(
    ("later", "agrees", "reruns", "elsewhere", "placed"),
    [
        # Seen where the original was on the second look: the same hang.
        ("spin", True, 2, (), ("r1", "r2")),
        # The second rerun stayed clean: the first's sighting is kept.
        (None, False, 2, ("step",), ("r1",)),
        # Its later hangs' stacks unread: it ends at LOOKS looks, r2 named apart (unread).
        ("", False, 2, ("step",), ("r1",)),
        # Seen elsewhere twice: both places.
        ("tick", False, 2, ("step", "tick"), ("r1", "r2")),
    ],
)
def test_dirs_check_looks_again_at_a_hang_seen_elsewhere_and_ends(
    monkeypatch: pytest.MonkeyPatch,
    later: str | None,
    agrees: bool,
    reruns: int,
    elsewhere: tuple[str, ...],
    placed: tuple[str, ...],
) -> None:
    # DIR's first rerun hangs in `step`, where the original hung in `spin`; each later one
    # hangs in `later` ("" unread) or stays clean (None).
    from types import SimpleNamespace

    from reprospec import api, native
    from reprospec.minimize import driver, report

    runs: list[SimpleNamespace] = []
    places = {"r1": ["step"]}

    def run(*_args: object, **_kwargs: object) -> SimpleNamespace:
        if len(runs) >= 50:
            raise AssertionError("DIR's check did not end")
        hangs = not runs or later is not None
        attempts = [SimpleNamespace(hangs=hangs)]
        cells = [SimpleNamespace(attempts=attempts)]
        runs.append(SimpleNamespace(cells=cells, interrupted=False, run_id=f"r{len(runs) + 1}"))
        return runs[-1]

    def read(
        run: SimpleNamespace, _out: Path, attempts: list[SimpleNamespace], _workdir: Path
    ) -> list[str]:
        place = places.get(run.run_id, [later or ""])
        return [p for p in place if p] if attempts else []

    monkeypatch.setattr(api, "load_spec", lambda *_a, **_k: None)
    monkeypatch.setattr(api, "run", run)
    monkeypatch.setattr(report, "cell_filters", lambda *_a: None)
    monkeypatch.setattr(driver, "_tries", lambda _found: 3)
    monkeypatch.setattr(driver, "_dir_places", read)
    monkeypatch.setattr(native, "attempt_agrees", lambda a, _signature: a.hangs)
    same = SimpleNamespace(original_places=("spin",))
    found = SimpleNamespace(
        output=Path("/nonexistent"), signature="hang", result=SimpleNamespace(same_failure=same)
    )
    options = SimpleNamespace(out=Path("/nonexistent"), with_changes=lambda **_k: None)
    last, agreed, hung = driver._rerun_dir(found, options, 1, None)  # type: ignore[arg-type]
    assert (agreed, len(runs), last.run_id) == (agrees, reruns, f"r{reruns}")
    assert hung.places == elsewhere
    assert hung.runs == placed
    assert hung.unread == (("r2",) if later == "" else ())
    if elsewhere:
        said = driver._unconfirmed(found, last, hung=hung)  # type: ignore[arg-type]
        # A rerun whose stacks went unread is not said to have hung in the place.
        assert {
            None: "in its rerun (run r1; the next, run r2, did not fail as hang), not where",
            "": "in its rerun (run r1; run r2 hung, its stacks unread), not where",
            "tick": "in its reruns (runs r1, r2), not where",
        }[later] in said
