"""The options classes' constructors as type checkers read them (`if TYPE_CHECKING:`): the
fields, in order, each with a default where the field has one, taking what the class
takes at run time (a str for a Path, a list for a tuple).

Before, mypy --strict refused `RunOptions(out=".repro")`, `MinimizeOptions(output="dir")`
and `IsolateOptions(cell=["w=2"])`, which the classes take and docs/python-api.md
documents, so an API user's typed code needed a `# type: ignore` for each. This module
is type-checked with the package (mypy reprospec tests): the calls below are the check.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
from pathlib import Path

import pytest

import reprospec
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError

CLASSES = (
    reprospec.RunOptions,
    reprospec.IsolateOptions,
    reprospec.MinimizeOptions,
    reprospec.AmplifyOptions,
    reprospec.BisectRequest,
)


def test_the_typed_constructors_take_what_the_classes_take() -> None:
    # Checked by mypy --strict: no `# type: ignore` needed for any of these.
    run = reprospec.RunOptions(
        out=".repro",
        find_links="wheels",
        python=Path("/usr/bin/python3"),
        shard="2/8",
        matrix_filters=["w=2"],
        overrides=["run.timeout=5s"],
        preload=["json"],
    )
    assert (run.out, run.find_links, run.python) == (
        Path(".repro"),
        Path("wheels"),
        "/usr/bin/python3",
    )
    assert (run.matrix_filters, run.preload) == (("w=2",), ("json",))
    assert reprospec.IsolateOptions(cell=["w=2"], failing_sets=["a=1"]).cell == ("w=2",)
    minimized = reprospec.MinimizeOptions(output="dir", amplified="amp", cell=["w=2"])
    assert (minimized.output, minimized.amplified) == (Path("dir"), Path("amp"))
    assert reprospec.AmplifyOptions(tries=["gc=aggressive"]).tries == ("gc=aggressive",)
    request = reprospec.BisectRequest("s.yaml", "pkg", "1.0", "2.0", out="o", overrides=["a=1"])
    assert (request.spec, request.out, request.overrides) == (Path("s.yaml"), Path("o"), ("a=1",))


def _typed_init(kind: type) -> ast.FunctionDef:
    """The `__init__` the class writes under `if TYPE_CHECKING:`."""
    source = Path(inspect.getfile(sys.modules[kind.__module__])).read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == kind.__name__:
            for block in node.body:
                if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
                    for item in block.body:
                        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                            return item
    raise AssertionError(f"{kind.__name__} writes no __init__ for type checkers")


@pytest.mark.parametrize("kind", CLASSES, ids=lambda kind: kind.__name__)
def test_each_typed_constructor_has_the_fields_in_order_and_their_defaults(kind: type) -> None:
    init = _typed_init(kind)
    names = [arg.arg for arg in init.args.args[1:]]
    fields = dataclasses.fields(kind)
    assert names == [field.name for field in fields]
    with_default = len(init.args.defaults)
    expected = sum(
        1
        for field in fields
        if field.default is not dataclasses.MISSING
        or field.default_factory is not dataclasses.MISSING
    )
    assert with_default == expected
    # The fields with defaults come last, as in the dataclass's own __init__.
    assert all(
        field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        for field in fields[len(fields) - with_default :]
    )


def test_the_sequences_take_any_iterable_of_str_and_a_set_where_order_does_not_count() -> None:
    # lo35: the constructors' types took a list or a tuple only (mypy refused a generator, a
    # set, a dict's keys, which the classes took), a set of `-m` filters was kept in its
    # process's order (another search id each run), a set of `--set` overrides, applied
    # in turn, in no order at all, and an item that is no str was kept.
    axes = {"w": 2, "pin": 1}
    run = reprospec.RunOptions(
        matrix_filters={"w=2", "pin=true", "a=1"},
        overrides=(f"run.timeout={n}s" for n in (5, 6)),
        preload=axes.keys(),
    )
    assert run.matrix_filters == ("a=1", "pin=true", "w=2")
    assert run.overrides == ("run.timeout=5s", "run.timeout=6s")
    assert run.preload == ("w", "pin")
    assert reprospec.IsolateOptions(cell=frozenset({"w=2"}), failing_sets=iter(["a=1"])).cell == (
        "w=2",
    )
    assert reprospec.MinimizeOptions(cell={"b=1", "a=1"}).cell == ("a=1", "b=1")
    amplify = reprospec.AmplifyOptions(matrix_filters=axes.keys(), tries={"gc=aggressive"})
    assert (amplify.matrix_filters, amplify.tries) == (("w", "pin"), ("gc=aggressive",))
    request = reprospec.BisectRequest("s.yaml", "pkg", "1.0", "2.0", matrix_filters={"w=2"})
    assert request.matrix_filters == ("w=2",)
    refused = {
        "overrides is applied in order, which a set has not": {"overrides": {"a=1", "b=2"}},
        r"overrides takes strings, got 5 among them": {"overrides": ["a=1", 5]},
        "matrix_filters takes a sequence of strings, got a dict: a list, or any": {
            "matrix_filters": axes
        },
        "preload takes a sequence of strings, got b'json'": {"preload": b"json"},
        "matrix_filters takes a sequence of strings, got 'w=2'": {"matrix_filters": "w=2"},
    }
    for message, given in refused.items():
        with pytest.raises(UsageError, match=message):
            reprospec.RunOptions(**given)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="failing_sets is applied in order"):
        reprospec.IsolateOptions(failing_sets={"a=1"})  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 0.0])
def test_a_timeout_that_is_no_finite_positive_number_is_refused(timeout: float) -> None:
    """`timeout_s=inf` was taken where the CLI's --timeout and the spec refuse it."""
    with pytest.raises(UsageError, match="timeout_s must be > 0 seconds, and finite"):
        RunOptions(timeout_s=timeout)


def test_a_change_to_an_option_that_does_not_exist_is_a_usage_error() -> None:
    """`with_changes(bogus=1)` raised dataclasses' TypeError."""
    with pytest.raises(UsageError, match=r"RunOptions has no option bogus \(it has runner, "):
        RunOptions().with_changes(bogus=1)
    assert RunOptions().with_changes(repeat=3).repeat == 3


def test_an_interpreter_for_the_docker_runner_is_refused() -> None:
    """`--runner docker --python PATH` ran every cell in the image's python3 all the same,
    and the report called PATH "the interpreter this run's attempts ran in"."""
    with pytest.raises(UsageError, match=r"python /usr/bin/python3: the docker runner runs"):
        RunOptions(runner="docker", python="/usr/bin/python3")
    assert RunOptions(runner="venv", python="/usr/bin/python3").python == "/usr/bin/python3"
    # A docker run stored with one before it was refused reads back without it: unused.
    stored = {"runner": "docker", "python": "/usr/bin/python3"}
    assert RunOptions.from_dict(stored, Path(".reprospec")).python is None


def test_a_bad_preload_names_the_option_the_user_gave() -> None:
    """`run --preload no-such-mod` said `preload: ...`, an option no user typed; the API's
    caller passed `preload=`, and is told so."""
    from reprospec.core.caller import from_cli

    with from_cli(), pytest.raises(UsageError, match=r"^--preload: 'no-such-mod' is not a"):
        RunOptions(preload=["no-such-mod"])
    with pytest.raises(UsageError, match=r"^preload: 'no-such-mod' is not a module name"):
        RunOptions(preload=["no-such-mod"])


def test_a_read_only_folder_is_stored_where_set_and_read_back(tmp_path: Path) -> None:
    """A minimize candidate's run under docker mounts the original workdir read-only
    (`read_only`): its `--resume` mounts it again. A run without one stores as before."""
    options = RunOptions(runner="docker", read_only=str(tmp_path))
    assert options.read_only == tmp_path
    stored = options.to_dict()
    assert stored["read_only"] == str(tmp_path)
    assert RunOptions.from_dict(stored, Path(".reprospec")).read_only == tmp_path
    assert "read_only" not in RunOptions().to_dict()
    with pytest.raises(UsageError, match="read_only takes a path, got 3"):
        RunOptions(read_only=3)  # type: ignore[arg-type]


def test_a_read_only_folder_is_an_existing_absolute_folder_below_the_root(
    tmp_path: Path,
) -> None:
    """The docker runner mounts `read_only` at its own path in every attempt's container:
    a missing folder or `/` was one infra-error per attempt, and a relative one (`""` was
    `.`) was read against each run's folder and stored relative, so that `--resume` from
    elsewhere mounted another. Each is refused when the options are made, exit 2."""
    refused: list[tuple[str | Path, str]] = [
        ("", r"^read_only: '' is not an absolute path; give a folder's$"),
        ("proj", r"^read_only: 'proj' is not an absolute path"),
        (Path("proj"), r"^read_only: PosixPath\('proj'\) is not an absolute path"),
        ("/", r"^read_only: '/' is the whole file system; give a folder below it$"),
        (str(tmp_path / "gone"), f"^read_only: {re.escape(str(tmp_path))}/gone: no such folder"),
    ]
    (tmp_path / "file").write_text("", encoding="utf-8")
    refused.append((str(tmp_path / "file"), f"^read_only: {re.escape(str(tmp_path))}/file: not a"))
    for value, message in refused:
        with pytest.raises(UsageError, match=message) as caught:
            RunOptions(read_only=value)
        assert caught.value.exit_code == 2
    # Folded before it is checked (links kept): `..` passed as text and mounted /tmp.
    (tmp_path / "a").mkdir()
    for value, folded in ((f"{tmp_path}/a/..", tmp_path), (f"//{tmp_path}//a/", tmp_path / "a")):
        assert RunOptions(read_only=value).read_only == folded
    with pytest.raises(UsageError, match=r"^read_only: '/' is the whole file system"):
        RunOptions(read_only="//")
    with pytest.raises(UsageError, match=r"^read_only: '/' is the whole file system"):
        RunOptions(read_only=f"{tmp_path}/a/../../../../../../../../../../..")


def test_a_stored_read_only_folder_since_gone_is_read_back_unchecked(tmp_path: Path) -> None:
    """A stored run's folder checked when it was given and since moved: `bundle` (which only
    reads the run) and a local run's `--resume` were refused 'no such folder; give an
    existing folder', a folder the user never gave. Read back as stored (folded), kept by
    with_changes; a folder a caller gives there is checked."""
    stored = {**RunOptions().to_dict(), "read_only": f"{tmp_path}/gone/../gone"}
    options = RunOptions.from_dict(stored, Path(".reprospec"))
    assert options.read_only == tmp_path / "gone"
    assert options.with_changes(jobs=2).read_only == tmp_path / "gone"
    with pytest.raises(UsageError, match="no such folder"):
        options.with_changes(read_only=tmp_path / "gone")
    assert options.with_changes(read_only=None).read_only is None
