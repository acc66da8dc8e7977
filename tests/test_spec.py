"""spec.py: loading, overrides, markdown reports, semantic checks, exact bad-spec messages."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reprospec.errors import SpecError, UsageError
from reprospec.spec import (
    apply_override,
    extract_markdown_spec,
    load_spec,
    spec_files,
    validate_paths,
)

DATA = Path(__file__).parent / "data"
BAD = DATA / "bad_specs"
EXAMPLE = DATA / "spec_format_example.yaml"

# Each bad spec ends with the exact problems it must report, as `# expect:` comments.
BAD_SPECS = sorted(p.name for p in BAD.iterdir())


def expected_problems(path: Path) -> list[str]:
    """The fixture's own `# expect: LINE:COL: PATH: MESSAGE` lines, prefixed with its path."""
    found = re.findall(r"^(?:# |<!-- )expect: (.*?)(?: -->)?$", path.read_text(), re.MULTILINE)
    return [f"{path}:{line}" for line in found]


@pytest.mark.parametrize("name", BAD_SPECS)
def test_bad_spec_reports_exact_located_problems(name: str) -> None:
    path = BAD / name
    expected = expected_problems(path)
    assert expected, f"{name} has no '# expect:' lines"
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == expected


def test_there_are_enough_bad_specs() -> None:
    assert len(BAD_SPECS) >= 20


def test_file_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(BAD / "repeat_zero.yaml", tmp_path / "r.yaml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        load_spec("r.yaml")
    assert caught.value.problems == ["r.yaml:5:11: run.repeat: expected an integer >= 1, got 0"]


def test_spec_format_example_loads_with_defaults() -> None:
    spec = load_spec(EXAMPLE)
    assert spec.name == "val-segfault-pinned-workers"
    assert spec.document["run"] == {"timeout": "60s", "repeat": 1, "stop_on": "never"}
    assert spec.document["environment"]["workdir"] == "."
    assert spec.document["markers"] == []
    assert spec.locations[("matrix", "pin_memory")] == (23, 15)
    assert spec.source_text == EXAMPLE.read_text()


def test_defaults_fill_missing_sections(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("reprospec: 1\nname: s\ncommand: [echo, hi]\nexpect: {outcome: pass}\n")
    doc = load_spec(path).document
    assert doc["run"] == {"timeout": "10m", "repeat": 1, "stop_on": "never"}
    assert doc["environment"] == {"workdir": ".", "env": {}, "gpus": 0}


def test_overrides_apply_before_validation() -> None:
    spec = load_spec(
        EXAMPLE,
        [
            "workload.phases.1.steps=3",
            "workload.data.loader.batch_size=2",
            "run.timeout=5s",
            "labels=[a, b]",
            "environment.env.NEW=x",
        ],
    )
    assert spec.document["workload"]["phases"][1] == {"name": "validation", "steps": 3}
    assert spec.document["workload"]["data"]["loader"]["batch_size"] == 2
    assert spec.document["run"]["timeout"] == "5s"
    assert spec.document["labels"] == ["a", "b"]
    assert spec.document["environment"]["env"] == {"CUDA_LAUNCH_BLOCKING": "1", "NEW": "x"}


def test_override_that_breaks_the_spec_is_reported_as_from_set() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(EXAMPLE, ["run.repeat=0"])
    assert caught.value.problems == [
        f"{EXAMPLE}:47:11: run.repeat: expected an integer >= 1, got 0 (from --set run.repeat=0)"
    ]


def test_tilde_override_removes_a_key() -> None:
    spec = load_spec(EXAMPLE, ["~workload", "command=[python, -c, 'print(1)']", "~expect.cases.0"])
    assert "workload" not in spec.document
    assert spec.document["command"] == ["python", "-c", "print(1)"]
    assert spec.document["expect"]["cases"] == [{"when": {"pin_memory": False}, "outcome": "pass"}]
    with pytest.raises(UsageError, match="'run.nope' is not in the spec"):
        load_spec(EXAMPLE, ["~run.nope"])


def test_override_creates_missing_mappings() -> None:
    assert apply_override({"a": 1}, "run.timeout=5m") == {"a": 1, "run": {"timeout": "5m"}}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("run.timeout", "expected PATH=VALUE"),
        ("=3", "expected PATH=VALUE"),
        ("run..timeout=3", "expected PATH=VALUE"),
        ("workload.phases.7.steps=3", "'workload.phases.7': expected a list index below 2"),
        ("workload.phases.x=3", "'workload.phases.x': expected a list index below 2"),
        ("name.first=x", "'name' is a value, not a mapping or list"),
        ("labels=[a", "the value is not valid YAML"),
        ("title=!!python/object/apply:os.system [ls]", "the value is not valid YAML"),
    ],
)
def test_bad_override_is_a_usage_error(override: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"^--set ") as caught:
        load_spec(EXAMPLE, [override])
    assert message in str(caught.value)


def test_markdown_report_spec_is_extracted_with_md_line_numbers(tmp_path: Path) -> None:
    body = EXAMPLE.read_text()
    report = tmp_path / "report.md"
    report.write_text(
        "# Title\n\n```yaml\nnot: the spec\n```\n\n<details>\n\n````yaml\n" + body + "````\n"
    )
    spec = load_spec(report)
    assert spec.name == "val-segfault-pinned-workers"
    assert spec.source_text == body
    # The example's line 23 sits 9 lines down in the report.
    assert spec.locations[("matrix", "pin_memory")] == (32, 15)


def test_markdown_without_spec_block(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    report.write_text("# nothing\n\n```yaml\nfoo: 1\n```\n")
    with pytest.raises(SpecError) as caught:
        load_spec(report)
    assert caught.value.problems == [
        f"{report}: no ```yaml block with a top-level 'reprospec:' key"
    ]


def test_extract_markdown_ignores_non_yaml_fences() -> None:
    text = "```python\nreprospec: 1\n```\n~~~yml\nreprospec: 1\n~~~\n"
    assert extract_markdown_spec(text) == ("reprospec: 1\n", 4)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "nope.yaml")
    assert caught.value.problems == [f"{tmp_path / 'nope.yaml'}: no such file"]


def test_validate_paths_collects_problems_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "good.yaml")
    shutil.copy(BAD / "repeat_zero.yaml", tmp_path / "sub" / "a.yml")
    shutil.copy(BAD / "bad_signal.yaml", tmp_path / "b.yaml")
    (tmp_path / "notes.txt").write_text("ignored")
    problems = validate_paths([tmp_path, tmp_path / "missing.yaml"])
    assert problems == [
        f"{tmp_path / 'b.yaml'}:6:11: expect.signal: expected a signal name like SIGSEGV or "
        "SIGABRT, got 'SEGV' (did you mean 'SIGSEGV'?)",
        f"{tmp_path / 'sub' / 'a.yml'}:5:11: run.repeat: expected an integer >= 1, got 0",
        f"{tmp_path / 'missing.yaml'}: no such file",
    ]
    assert validate_paths([EXAMPLE]) == []
    assert spec_files([tmp_path, EXAMPLE]) == [
        str(tmp_path / "b.yaml"),
        str(tmp_path / "good.yaml"),
        str(tmp_path / "sub" / "a.yml"),
        str(EXAMPLE),
    ]


def test_validate_paths_empty_folder(tmp_path: Path) -> None:
    assert validate_paths([tmp_path]) == [f"{tmp_path}: no *.yaml or *.yml files in this folder"]


def test_include_keys_count_as_axes_and_expressions_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\n"
        "matrix:\n  a: [1]\n  include:\n    - {a: 1, extra: x}\n"
        "command: echo ${{ matrix.extra }} ${{ env.HOME }} ${{ cell.id }} ${{ attempt }}\n"
        "run: {timeout: '${{ matrix.a }}'}\n"
        "description: 'literal ${{ not checked'\n"
        "expect:\n  outcome: pass\n  cases:\n    - when: {extra: x}\n      outcome: crash\n"
    )
    assert load_spec(path).name == "s"


def test_no_matrix_axis_reference_without_matrix(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\ncommand: echo ${{ matrix.x }}\nexpect: {outcome: pass}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [
        f"{path}:3:10: command: unknown matrix axis 'x' (the spec has no matrix)"
        " in '${{ matrix.x }}'"
    ]
