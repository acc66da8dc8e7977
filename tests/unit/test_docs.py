"""The docs stay true: their example specs are valid (and do what they say), every CLI option
has help text and is documented, and the README links only to files in the repository."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from reprospec.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SCHEMA = ROOT / "schemas" / "reprospec.schema.json"
# Examples are written as if saved in specs/, next to the fixtures they use.
FIXTURES = ROOT / "specs" / "fixtures"

_FENCE = re.compile(r"^```(?P<info>[\w+-]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
_SPEC_KEY = re.compile(r"^reprospec\s*:", re.M)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Example:
    """One fenced yaml block of a doc that is a whole spec (it has a top-level `reprospec:`)."""

    doc: str
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def file_name(self) -> str:
        return f"{Path(self.doc).stem}-line{self.line}.yaml"

    @property
    def data(self) -> dict[str, Any]:
        loaded = yaml.safe_load(self.text)
        assert isinstance(loaded, dict), f"{self.id}: not a mapping"
        return loaded


def doc_examples() -> list[Example]:
    """Every spec example of docs/*.md, in order."""
    found = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match["info"] in ("yaml", "yml") and _SPEC_KEY.search(match["body"]):
                line = text.count("\n", 0, match.start("body")) + 1
                found.append(Example(path.name, line, match["body"]))
    return found


EXAMPLES = doc_examples()
COMMAND_EXAMPLES = [e for e in EXAMPLES if "workload" not in e.data]
WORKLOAD_EXAMPLES = [e for e in EXAMPLES if "workload" in e.data]


def test_the_docs_have_examples_of_both_kinds() -> None:
    # A broken fence regex would make every example test below pass vacuously.
    in_spec_format = [e for e in EXAMPLES if e.doc == "spec-format.md"]
    assert len(in_spec_format) >= 10
    assert COMMAND_EXAMPLES
    assert WORKLOAD_EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_doc_example_validates_against_the_json_schema(example: Example) -> None:
    validator = Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    errors = [
        f"{'.'.join(map(str, error.absolute_path)) or '(top level)'}: {error.message}"
        for error in validator.iter_errors(example.data)
    ]
    assert errors == [], f"{example.id}: {errors}"


@pytest.fixture(scope="module")
def example_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples as files in a `specs/` folder whose `fixtures/` is the repository's."""
    folder = tmp_path_factory.mktemp("doc-examples") / "specs"
    folder.mkdir()
    (folder / "fixtures").symlink_to(FIXTURES, target_is_directory=True)
    for example in EXAMPLES:
        (folder / example.file_name).write_text(example.text, encoding="utf-8")
    return folder


def _reprospec(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def test_doc_examples_load_with_reprospecs_own_loader(example_specs: Path) -> None:
    done = _reprospec("validate", str(example_specs), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{len(EXAMPLES)} spec file(s) valid"


def _run_example(example: Example, specs: Path) -> None:
    out = specs.parent / "out"
    done = _reprospec("run", str(specs / example.file_name), "--out", str(out), "-j", "2", cwd=ROOT)
    # Exit 0: every cell of the example did what its `expect` (and the page) says.
    assert done.returncode == 0, f"{example.id}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("example", COMMAND_EXAMPLES, ids=lambda e: e.id)
def test_command_example_reproduces_as_documented(example: Example, example_specs: Path) -> None:
    _run_example(example, example_specs)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("example", WORKLOAD_EXAMPLES, ids=lambda e: e.id)
def test_workload_example_reproduces_as_documented(example: Example, example_specs: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in the test interpreter")
    _run_example(example, example_specs)


# ---- the command line --------------------------------------------------------------------


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


def _arguments(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            yield action


def test_every_command_and_option_has_help_text() -> None:
    parser = build_parser()
    missing = ["/".join(a.option_strings) for a in _arguments(parser) if not (a.help or "").strip()]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing += [c.dest for c in subparsers._choices_actions if not (c.help or "").strip()]
    for name, sub in _commands().items():
        for action in _arguments(sub):
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.metavar}")
    assert missing == []


def _cli_sections() -> dict[str, str]:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## reprospec (\w+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def test_cli_md_documents_every_command_with_its_usage_and_options() -> None:
    sections = _cli_sections()
    assert sorted(sections) == sorted(_commands())
    for name, sub in _commands().items():
        section = " ".join(sections[name].split())
        usage = " ".join(sub.format_usage().split()).removeprefix("usage: ")
        assert usage in section, f"docs/cli.md: the usage of {name} is not `{usage}`"
        for action in _arguments(sub):
            names = action.option_strings or [str(action.metavar)]
            for flag in names:
                assert f"`{flag}" in section, f"docs/cli.md: {name} does not document {flag}"


# ---- the spec format ------------------------------------------------------------------------


def _schema_words(node: object, skip: object) -> Iterator[str]:
    """Every property name and string enum value of the schema (the signal list left out)."""
    if node is skip:
        return
    if isinstance(node, dict):
        yield from node.get("properties", {})
        for value in node.get("enum", ()):
            if isinstance(value, str):
                yield value
        for value in node.values():
            yield from _schema_words(value, skip)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_words(value, skip)


def test_spec_format_md_names_every_field_and_choice_of_the_schema() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    page = (DOCS / "spec-format.md").read_text(encoding="utf-8")
    words = dict.fromkeys(_schema_words(schema, schema["$defs"]["signal"]))
    missing = [word for word in words if f"`{word}" not in page and f"{word}:" not in page]
    assert missing == []


# ---- links ----------------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = _slug(heading)
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _link_problems(page: Path) -> list[str]:
    problems = []
    text = page.read_text(encoding="utf-8")
    if "../shared" in text:
        problems.append(f"{page.name}: mentions ../shared, which a clone does not have")
    for match in _LINK.finditer(_FENCE.sub("", text)):
        target = match["target"]
        path_part, _, fragment = target.partition("#")
        if re.match(r"^[a-z][a-z0-9+.-]*:", path_part):
            problems.append(f"{page.name}: {target} points outside the repository")
            continue
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(ROOT):
            problems.append(f"{page.name}: {target} points outside the repository")
        elif not resolved.exists():
            problems.append(f"{page.name}: {target} does not exist")
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            problems.append(f"{page.name}: {target} names no heading of {resolved.name}")
    return problems


def test_readme_links_only_to_files_in_the_repository() -> None:
    readme = ROOT / "README.md"
    assert _LINK.search(readme.read_text(encoding="utf-8")), "the README has no links at all"
    assert _link_problems(readme) == []


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_doc_links_resolve_inside_the_repository(page: Path) -> None:
    assert _link_problems(page) == []


# ---- the Python API ---------------------------------------------------------------------


def _unordered(lines: Iterable[str]) -> list[str]:
    """Lines sorted, progress counters (`[3/4]`) blanked: attempts end in any order."""
    return sorted(re.sub(r"\[\d+/\d+\]", "[k/n]", line) for line in lines)


def test_python_api_example_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    (script,) = [
        m["body"]
        for m in _FENCE.finditer(page)
        if m["info"] == "python" and "reprospec.run(" in m["body"]
    ]
    printed = page.split("It prints", 1)[1].split("\n\n", 1)[1].split("\n\nand exits 0")[0]
    documented = _unordered(line[4:] for line in printed.splitlines())
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "example.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # The progress lines come from worker threads, in any order; the rest is fixed.
    assert _unordered(done.stdout.splitlines()) == documented
    (results,) = (tmp_path / ".reprospec" / "runs").glob("*/results.json")
    assert json.loads(results.read_text())["summary"]["reproduced"] == 2
    assert (tmp_path / ".reprospec" / "results.db").is_file()
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<testcase ") == 2
