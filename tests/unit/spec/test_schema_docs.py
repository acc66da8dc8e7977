"""The schema is what an editor shows: every property has a one-line description (the hover
text of yaml-language-server and VS Code), its default where docs/spec-format.md gives one,
words instead of a regex when a pattern fails, and a stable `$id`.

The defaults are checked against the page, table by table: each table of spec-format.md
whose first column names keys is matched to the schema object that has all of those keys,
and a row's default (a `default` column, or "(default X)" in its text) must be the schema's
`default`, and the other way round. The page stays the reference; the schema is checked
against it, so neither drifts alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.spec.schema import load_schema, validate
from tests.support.paths import ROOT

PAGE = (ROOT / "docs" / "spec-format.md").read_text(encoding="utf-8")
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
# A description is one line an editor shows on hover: longer ones belong in the page.
MAX_DESCRIPTION = 240


@dataclass(frozen=True)
class Property:
    """One property of the schema: its dotted path (`workload.data.loader.batch_size`) and
    its subschema."""

    path: str
    schema: JsonObject

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[-1]


def _objects(node: JsonValue, path: str) -> Iterator[tuple[str, JsonObject]]:
    """Every subschema with `properties`, with the dotted path of the object it describes
    (branches of anyOf/oneOf, list items and additionalProperties share their parent's)."""
    if isinstance(node, list):
        for item in node:
            yield from _objects(item, path)
        return
    if not isinstance(node, dict):
        return
    properties = node.get("properties")
    if isinstance(properties, dict):
        yield path, node
        for name, sub in properties.items():
            yield from _objects(sub, f"{path}.{name}" if path else name)
    for keyword in ("anyOf", "oneOf", "items", "additionalProperties"):
        if keyword in node:
            yield from _objects(node[keyword], path)


def properties(schema: JsonObject) -> list[Property]:
    """Every property of the schema, in order."""
    found = []
    for path, node in _objects(schema, ""):
        subs = node["properties"]
        assert isinstance(subs, dict)
        for name, sub in subs.items():
            assert isinstance(sub, dict), f"{path}.{name}: not a schema object"
            found.append(Property(f"{path}.{name}" if path else name, sub))
    return found


SCHEMA = load_schema()
PROPERTIES = properties(SCHEMA)


def description_problems(props: list[Property]) -> list[str]:
    """Each property without a usable description, one line each."""
    problems = []
    for prop in props:
        text = prop.schema.get("description")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{prop.path}: no description")
        elif "\n" in text or len(text) > MAX_DESCRIPTION:
            problems.append(
                f"{prop.path}: the description is not one line of at most"
                f" {MAX_DESCRIPTION} characters"
            )
    return problems


def test_the_walk_finds_every_section_of_the_schema() -> None:
    # A walk that missed the nested sections would check a handful of keys and pass.
    paths = {p.path for p in PROPERTIES}
    assert len(PROPERTIES) >= 140
    assert {
        "workload.data.loader.batch_size",
        "expect.cases.outcome",
        "environment.perturb.torch.alloc_conf",
        "workload.faults.at.stage",
    } <= paths


def test_every_property_has_a_one_line_description() -> None:
    assert description_problems(PROPERTIES) == []


def test_a_property_without_a_description_fails_the_check() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "run": {
                "description": "how it runs",
                "type": "object",
                "properties": {"timeout": {"type": "string"}, "repeat": {"description": "a\nb"}},
            }
        },
    }
    assert description_problems(properties(schema)) == [
        "run.timeout: no description",
        f"run.repeat: the description is not one line of at most {MAX_DESCRIPTION} characters",
    ]


def test_the_schema_points_at_no_file_and_names_a_stable_id() -> None:
    text = json.dumps(SCHEMA)
    assert "SPEC-FORMAT" not in text
    # The $id is where the schema is served from the repository's main branch, so a spec's
    # `# yaml-language-server: $schema=<$id>` line works for specs kept anywhere.
    home = re.search(r'^Repository\s*=\s*"https://github\.com/(?P<slug>[^"]+)"', PYPROJECT, re.M)
    assert home is not None
    assert SCHEMA["$id"] == (
        f"https://raw.githubusercontent.com/{home['slug']}/main/schemas/reprospec.schema.json"
    )


# ---- defaults, checked against docs/spec-format.md ------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of a table of spec-format.md whose first column is a key."""

    key: str
    # The `default` column's text, or None when the table has none.
    default: str | None
    text: str


_ROW_KEY = re.compile(r"^`(?P<key>[a-z_][a-z0-9_]*)`$")
# "(default 1)", "default `RuntimeError`", "`main` (the default)"
_DEFAULT_IN_TEXT = re.compile(
    r"\(default:? (?P<a>`[^`]+`|[\w.-]+)\)|default (?P<b>`[^`]+`)|(?P<c>`[^`]+`) \(the default\)"
)


def tables(page: str) -> list[list[Row]]:
    """The tables of the page whose first column holds `key`s, as rows."""
    found: list[list[Row]] = []
    lines = page.splitlines()
    for i, line in enumerate(lines):
        if not (line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---")):
            continue
        header = [c.strip() for c in line.strip("|").split("|")]
        default_at = header.index("default") if "default" in header else None
        rows = []
        for body in lines[i + 2 :]:
            if not body.startswith("|"):
                break
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", body.strip().strip("|"))]
            match = _ROW_KEY.match(cells[0])
            if match:
                default = cells[default_at] if default_at is not None else None
                rows.append(Row(match["key"], default, " | ".join(cells[1:])))
        if rows:
            found.append(rows)
    return found


def literal(text: str) -> tuple[bool, object]:
    """(True, value) when a documented default is one value: a code span (a parenthesis
    after it is commentary) or a bare number or boolean; (False, None) for words ("none",
    "torch's", "0.01 for sgd, 0.001 for adam")."""
    text = re.sub(r"\s*\(.*\)$", "", text.strip())
    if re.fullmatch(r"`[^`]+`", text):
        return True, yaml.safe_load(text[1:-1])
    if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?|true|false", text):
        return True, yaml.safe_load(text)
    return False, None


def documented_default(row: Row) -> tuple[bool, object]:
    """The default a row documents, from its default column or else its text."""
    if row.default is not None:
        return literal(row.default)
    match = _DEFAULT_IN_TEXT.search(row.text)
    if match is None:
        return False, None
    return literal(match["a"] or match["b"] or match["c"])


def _home(rows: list[Row]) -> list[tuple[str, JsonObject]]:
    """The schema objects a table documents: those that have every key of its rows."""
    keys = {r.key for r in rows}
    return [
        (path, node)
        for path, node in _objects(SCHEMA, "")
        if isinstance(node["properties"], dict) and keys <= set(node["properties"])
    ]


def default_problems(page: str) -> list[str]:
    """Where the schema's defaults and the page's disagree, one line each."""
    problems = []
    checked: set[str] = set()
    for rows in tables(page):
        for path, node in _home(rows):
            subs = node["properties"]
            assert isinstance(subs, dict)
            for row in rows:
                sub = subs[row.key]
                assert isinstance(sub, dict)
                name = f"{path}.{row.key}" if path else row.key
                checked.add(name)
                has, value = documented_default(row)
                if has and sub.get("default", ...) != value:
                    problems.append(
                        f"{name}: the page's default is {value!r}, the schema's"
                        f" {sub.get('default', 'missing')!r}"
                    )
                elif not has and "default" in sub:
                    problems.append(
                        f"{name}: the schema's default {sub['default']!r} is not the page's"
                    )
    for prop in PROPERTIES:
        if "default" in prop.schema and prop.path not in checked:
            problems.append(f"{prop.path}: a default the page's tables do not document")
    return problems


def test_the_tables_of_the_page_are_found() -> None:
    # A broken table reader would leave every default unchecked.
    homes = {path for rows in tables(PAGE) for path, _ in _home(rows)}
    assert {
        "workload",
        "workload.optimizer",
        "workload.data.dataset",
        "workload.data.loader",
        "environment",
        "run",
        "workload.faults",
    } <= homes
    assert sum("default" in p.schema for p in PROPERTIES) >= 25


def test_every_default_of_the_schema_is_the_pages() -> None:
    assert default_problems(PAGE) == []


def test_a_default_the_page_does_not_give_fails_the_check() -> None:
    wrong = PAGE.replace("| `batch_size` | 1 |", "| `batch_size` | 4 |")
    assert wrong != PAGE
    assert default_problems(wrong) == [
        "workload.data.loader.batch_size: the page's default is 4, the schema's 1"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`10m`", (True, "10m")),
        (
            "`reprospec-runner:latest` (built by `reprospec docker setup`)",
            (True, "reprospec-runner:latest"),
        ),
        ("`[{name: train, steps: 10}]`", (True, [{"name": "train", "steps": 10}])),
        ("30", (True, 30)),
        ("false", (True, False)),
        ("torch's", (False, None)),
        ("0.01 for sgd, 0.001 for adam", (False, None)),
        ("`environment.device`, else `cpu`", (False, None)),
    ],
)
def test_a_documented_default_is_one_value_or_words(text: str, expected: object) -> None:
    assert literal(text) == expected


# ---- errors in words -------------------------------------------------------------------------


def _patterns(node: JsonValue) -> Iterator[JsonObject]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_fails_in_words_in_reprospec_and_in_editors() -> None:
    # reprospec words a failed pattern with `x-expected`; yaml-language-server and VS Code
    # show `patternErrorMessage` instead of "String does not match the pattern of ...".
    patterns = list(_patterns(SCHEMA))
    assert len(patterns) >= 10
    for node in patterns:
        assert node.get("patternErrorMessage") == f"expected {node['x-expected']}", node


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ({"name": "Bad Name"}, "expected a slug of lowercase letters"),
        ({"run": {"timeout": "ten minutes"}}, "expected a duration like 90s, 5m or 1h"),
        ({"environment": {"memory": "lots"}}, "expected a size like 64m or 4g"),
        ({"expect": {"outcome": "crash", "rate": "most"}}, "expected a rate bound like"),
        ({"matrix": {"bad axis": [1]}}, "expected an axis name"),
    ],
)
def test_a_failed_pattern_reads_as_words(document: JsonObject, words: str) -> None:
    spec: JsonObject = {"reprospec": 1, "name": "x", "command": "true", **document}
    messages = [p.message for p in validate(spec, {}, {})]
    assert any(words in m for m in messages), messages
    assert not any("^" in m or "$'" in m for m in messages), messages
