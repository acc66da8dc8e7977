"""The Python API refuses bad input before anything runs: located spec errors, usage errors,
plan()."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from pathlib import Path
from typing import Any

import pytest

import reprospec
from reprospec.errors import SpecError, UsageError
from reprospec.store.resultsjson import write_run
from tests.support.api import SPEC, write
from tests.support.runs import error_run


def test_plan_runs_nothing(tmp_path: Path) -> None:
    spec = reprospec.load_spec(write(tmp_path))
    plan = reprospec.plan_run(spec, reprospec.RunOptions(repeat=3, timeout_s=5.0))
    assert len(plan.attempts) == 6
    assert {a.timeout_s for a in plan.attempts} == {5.0}
    assert not (Path.cwd() / ".reprospec" / "runs" / "never").exists()


def test_bad_spec_is_a_located_error_and_creates_no_store(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("outcome: crash", "outcome: crashed"))
    with pytest.raises(SpecError) as raised:
        reprospec.run(path, reprospec.RunOptions(out=tmp_path / "out"))
    assert raised.value.problems[0].startswith(f"{path}:10:12: expect.outcome:")
    assert raised.value.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_paths_may_be_given_as_strings() -> None:
    options = reprospec.RunOptions(out="runs-here", find_links="wheels")
    assert (options.out, options.find_links) == (Path("runs-here"), Path("wheels"))
    assert options.cache_dir == Path("runs-here").resolve() / "cache"


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        reprospec.RunOptions(repeat=0)
    # The bounds of -j and --repeat (docs/limits.md) hold for the API's options too.
    with pytest.raises(UsageError, match="repeat must be at most 10000"):
        reprospec.RunOptions(repeat=10_001)
    with pytest.raises(UsageError, match="jobs must be at most 256"):
        reprospec.RunOptions(jobs=257)
    # A shard is 1-based: Shard(0, N) would select nothing, yet run and exit 0.
    with pytest.raises(UsageError, match="K must be between 1 and N"):
        reprospec.Shard(0, 8)
    with pytest.raises(UsageError, match="K must be between 1 and N"):
        reprospec.Shard(9, 8)
    # Named as given, `shard`: the caller of RunOptions typed no `--shard`.
    with pytest.raises(UsageError, match=r"^shard 9/8: K must be between 1 and N"):
        reprospec.RunOptions(shard="9/8")
    # `--shard 1/0` said K was out of range, where N is what cannot be.
    with pytest.raises(UsageError, match="1/0: N, the number of shards, must be at least 1"):
        reprospec.Shard(1, 0)
    with pytest.raises(UsageError):
        reprospec.RunOptions(stop_on="sometimes")


def test_options_from_python_are_checked_and_kept_as_the_engine_reads_them() -> None:
    """The API's callers get the CLI's checks when the options are made."""
    # A runner the engine has not is refused now, not at run().
    with pytest.raises(UsageError, match="unknown runner 'podman': expected one of 'local'"):
        reprospec.RunOptions(runner="podman")
    # One string where a sequence is asked would be read a character at a time.
    with pytest.raises(UsageError, match="matrix_filters takes a sequence of strings"):
        reprospec.RunOptions(matrix_filters="workers=2")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="overrides takes a sequence of strings"):
        reprospec.RunOptions(overrides="run.repeat=2")  # type: ignore[arg-type]
    # Preload too, and a value that is no sequence at all.
    with pytest.raises(UsageError, match="preload takes a sequence of strings, got 'torch'"):
        reprospec.RunOptions(preload="torch")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="matrix_filters takes a sequence of strings, got None"):
        reprospec.RunOptions(matrix_filters=None)  # type: ignore[arg-type]
    assert reprospec.RunOptions(preload=["torch"]).preload == ("torch",)
    assert reprospec.RunOptions().preload is None
    # A list is kept as a tuple (the value stays hashable); an interpreter given as a Path
    # is the str the runners take.
    options = reprospec.RunOptions(
        matrix_filters=["workers=2"],
        python=Path("/usr/bin/python3"),
    )
    assert options.matrix_filters == ("workers=2",)
    assert options.python == "/usr/bin/python3"
    # A str as given: `./py` (relative to the folder) is no `py` to look up on PATH.
    assert reprospec.RunOptions(python="./py").python == "./py"
    assert hash(options) == hash(options.with_changes())


def test_options_of_the_wrong_type_are_usage_errors() -> None:
    """A wrong type raised Python's TypeError (`repeat="3"`, `timeout_s="5m"`) or
    was kept and failed later (`shard="2/8"` in plan_run) or planned what no CLI can ask."""
    for changes, says in [
        ({"repeat": "3"}, "repeat takes a whole number, got '3'"),
        ({"repeat": 2.5}, "repeat takes a whole number, got 2.5"),
        ({"jobs": "2"}, "jobs takes a whole number, got '2'"),
        ({"jobs": True}, "jobs takes a whole number, got True"),
        ({"timeout_s": "5m"}, r"timeout_s takes seconds as a number \(300.0, not '5m'\)"),
        ({"timeout_s": True}, "timeout_s takes seconds as a number"),
        ({"shard": (2, 8)}, r"shard takes Shard\(K, N\) or 'K/N', got \(2, 8\)"),
        ({"shard": "2-8"}, "^shard expects K/N like 2/8, got '2-8'"),
        ({"gpus": [0, 1]}, r"gpus takes a string of GPU indices like '0,1', got \[0, 1\]"),
        # A string of ids that are none: plan_run planned it, where run refused it.
        ({"gpus": "a,b"}, r"^gpus a,b: 'a' is not a GPU id \(expected indexes like 0,1,3"),
        # These were kept: `out=3` raised AttributeError from the run, `python=3` a
        # TypeError, and `observe="no"` (a true str) observed every cell, its expect ignored.
        ({"out": 3}, "out takes a path, got 3"),
        ({"out": None}, "out takes a path, got None"),
        ({"find_links": 1}, "find_links takes a path, got 1"),
        ({"python": 3}, "python takes a path, got 3"),
        ({"observe": "no"}, "observe takes True or False, got 'no'"),
        ({"keep_cores": 1}, "keep_cores takes True or False, got 1"),
        ({"command_line": ["reprospec", "run"]}, "command_line takes a string"),
    ]:
        with pytest.raises(UsageError, match=says):
            reprospec.RunOptions(**changes)  # type: ignore[arg-type]
    # `--shard`'s own spelling is read as the CLI reads it; numbers of either kind are seconds.
    assert reprospec.RunOptions(shard="2/8").shard == reprospec.Shard(2, 8)
    assert reprospec.RunOptions(timeout_s=30).timeout_s == 30
    assert reprospec.RunOptions().with_changes(shard="1/2").shard == reprospec.Shard(1, 2)
    # An integer type that is no int, as numpy's are (from a config): taken, kept as the int
    # the store's JSON can write.
    options = reprospec.RunOptions(repeat=_Count(3), jobs=_Count(2))  # type: ignore[arg-type]
    assert (options.repeat, options.jobs) == (3, 2)
    assert type(options.repeat) is int
    assert type(reprospec.RunOptions(timeout_s=30).timeout_s) is float


class _Count:
    """An integer of a type of its own, registered as numbers.Integral as numpy's are."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __int__(self) -> int:
        return self.n


Integral.register(_Count)


def test_validate_takes_one_path(tmp_path: Path) -> None:
    """`validate("/x/a.yaml")` read the str a character at a time, "/" among them,
    and so validated every YAML file under the root folder ('a: no such file', ...)."""
    path = write(tmp_path)
    for one in (str(path), path):
        checked = reprospec.validate(one)
        assert (checked.files, checked.problems) == ([str(path)], [])


def test_out_may_be_a_str(tmp_path: Path) -> None:
    """`load_result`/`resume` with `out` a str, as RunOptions takes it, raised
    "unsupported operand type(s) for /: 'str' and 'str'"."""
    run = error_run()
    write_run(tmp_path / "runs" / run.run_id, run)
    assert reprospec.load_result(run.run_id, str(tmp_path)) == run
    with pytest.raises(UsageError, match="no run 'nope'"):
        reprospec.load_result("nope", str(tmp_path))
    with pytest.raises(UsageError, match="nope"):
        reprospec.resume("nope", out=str(tmp_path))


def test_plan_run_takes_a_path_as_run_does(tmp_path: Path) -> None:
    """plan_run(path) raised "'str' object has no attribute 'document'", and one
    overrides string was read a character at a time ("--set r: expected PATH=VALUE")."""
    path = write(tmp_path)
    options = reprospec.RunOptions(overrides=("run.timeout=5s",))
    for given in (path, str(path)):
        plan = reprospec.plan_run(given, options)
        assert [c.id for c in plan.cells] == ["crash=false", "crash=true"]
        assert {a.timeout_s for a in plan.attempts} == {5.0}
    with pytest.raises(UsageError, match="overrides takes a sequence of strings, got 'run"):
        reprospec.load_spec(path, "run.timeout=5s")  # type: ignore[arg-type]


def test_render_and_exit_code_refuse_what_is_no_result(tmp_path: Path) -> None:
    # render("latest") and exit_code("latest") raised AttributeError from inside the
    # report; a run's id or folder is refused naming load_result, which reads it.
    result = error_run()
    assert reprospec.exit_code(result) == 1
    assert reprospec.render(result, "json")
    for call in (reprospec.render, reprospec.exit_code):
        with pytest.raises(UsageError, match=r"got 'latest': read a stored run first with "):
            call("latest")  # type: ignore[arg-type]
        with pytest.raises(UsageError, match=r"load_result\('" + str(tmp_path)):
            call(tmp_path)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="takes a RunResult or a search's answer, got dict"):
            call({})  # type: ignore[arg-type]


def test_compare_takes_results_and_refuses_what_is_no_run() -> None:
    run = error_run()
    found = reprospec.compare(run, run)
    assert reprospec.exit_code(found) == 0
    text = reprospec.render(found, "text").splitlines()
    assert text[0] == f"{run.run_id} -> {run.run_id} ({run.spec_name})"
    assert "no cell changed" in text
    assert reprospec.render(found, "md").startswith(f"## Compare {run.run_id} -> {run.run_id}")
    with pytest.raises(UsageError, match="a comparison renders as 'text', 'json', 'md'"):
        reprospec.render(found, "html")
    with pytest.raises(UsageError, match="run_b takes a RunResult, a run's id or its folder"):
        reprospec.compare(run, 3)  # type: ignore[arg-type]


def test_the_functions_refuse_arguments_of_the_wrong_type_before_anything_runs(
    tmp_path: Path,
) -> None:
    """Each raised Python's own error from deep inside (`out=3`: "expected str, bytes
    or os.PathLike object, not int"; `options={}`: "'dict' object has no attribute
    'overrides'"), and `cancel=True` an AttributeError in the scheduler's threads, a
    traceback on stderr, once the run had begun."""
    path = write(tmp_path)
    three: Any = 3  # what a caller without a type checker passes
    mapping: Any = {"repeat": 2}
    yes: Any = True
    no: Any = "no"
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: reprospec.load_spec(three), "path takes a path"),
        # A true str read files=True: "no" looked for the files it asked not to.
        (lambda: reprospec.load_spec(path, files=three), "files takes True or False, got 3"),
        (lambda: reprospec.load_spec(path, files=no), "files takes True or False, got 'no'"),
        (lambda: reprospec.validate(three), "validate takes a path or paths, got 3"),
        (lambda: reprospec.validate([path, three]), "validate takes a path"),
        (lambda: reprospec.plan_run(path, mapping), "options takes a reprospec.RunOptions"),
        (lambda: reprospec.run(path, mapping), "options takes a reprospec.RunOptions"),
        (lambda: reprospec.run(path, progress=three), "progress takes a function, got 3"),
        (lambda: reprospec.run(path, cancel=yes), "cancel takes a threading.Event, got True"),
        (lambda: reprospec.resume("latest", out=three), "out takes a path"),
        (lambda: reprospec.resume("latest", out=tmp_path, say=three), "say takes a function"),
        (lambda: reprospec.load_result("latest", out=three), "out takes a path"),
        (lambda: reprospec.load_result(three, out=tmp_path), "run takes a path"),
        (lambda: reprospec.compare("a", "b", out=three), "out takes a path"),
    ]
    for call, says in calls:
        with pytest.raises(UsageError, match=says):
            call()
    assert not (tmp_path / ".reprospec").exists()
