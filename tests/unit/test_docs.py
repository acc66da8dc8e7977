"""The docs stay true: their example specs validate, every CLI option has help text and is
documented, and the README and docs link only to files in the repository."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from reprospec.cli import build_parser
from tests.support.paths import ROOT

DOCS = ROOT / "docs"


SCHEMA = ROOT / "schemas" / "reprospec.schema.json"


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
