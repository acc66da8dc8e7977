"""yamlsource.py: safe loading, locations of every node, duplicate keys, foreign tags."""

from __future__ import annotations

import pytest
import yaml

from reprospec.core.bounds import MAX_YAML_CHARS
from reprospec.core.frozenjson import freeze
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.yamlsource import (
    MAX_DEPTH,
    MAX_NODES,
    Problem,
    YamlSourceError,
    dump_yaml,
    format_path,
    load_value,
    load_yaml,
    locate,
)
from tests.support.data import at

TEXT = """\
# comment
matrix:
  num_workers: [0, 2]
  include:
    - {num_workers: 4}
    - num_workers: 8
      pin_memory: true
command: echo
"""


def problems(text: str, offset: int = 0) -> list[str]:
    with pytest.raises(YamlSourceError) as caught:
        load_yaml(text, line_offset=offset)
    return [p.format("f.yaml") for p in caught.value.problems]


def test_locations_of_values_and_keys() -> None:
    doc = load_yaml(TEXT)
    assert at(doc.data, "matrix", "include", 1) == {"num_workers": 8, "pin_memory": True}
    assert doc.locations[()] == (2, 1)
    assert doc.locations[("matrix",)] == (3, 3)
    assert doc.locations[("matrix", "num_workers", 1)] == (3, 20)
    assert doc.locations[("matrix", "include", 0, "num_workers")] == (5, 21)
    assert doc.locations[("matrix", "include", 2 - 1, "pin_memory")] == (7, 19)
    assert doc.key_locations[("matrix", "include", 1, "pin_memory")] == (7, 7)
    assert doc.key_locations[("command",)] == (8, 1)


def test_line_offset_shifts_every_line() -> None:
    doc = load_yaml(TEXT, line_offset=10)
    assert doc.locations[("command",)] == (18, 10)
    assert problems("a: 1\na: 2\n", offset=5) == [
        "f.yaml:7:1: (top level): duplicate key 'a' (first given on line 6)"
    ]


def test_types_follow_the_yaml_1_2_core_schema() -> None:
    data = load_yaml("a: 1\nb: 1.5\nc: yes\nd: off\ne: null\nf: '1'\ng: 3.10\nh: True\n").data
    assert data == {
        "a": 1,
        "b": 1.5,
        "c": "yes",
        "d": "off",
        "e": None,
        "f": "1",
        "g": 3.1,
        "h": True,
    }
    # YAML 1.1 (pyyaml's default) read these as booleans, octal, sexagesimal and dates.
    data = load_yaml(
        "m: [on, off, y, n, No, TRUE, false]\no: 0755\np: 0o17\nq: 0x1f\nr: 1:30\n"
        "s: 1e3\nt: 1_000\nu: 2024-01-01\nv: ~\nw: -.inf\nx: +12\n"
    ).data
    assert data == {
        "m": ["on", "off", "y", "n", "No", True, False],
        "o": 755,
        "p": 15,
        "q": 31,
        "r": "1:30",
        "s": 1000.0,
        "t": "1_000",
        "u": "2024-01-01",
        "v": None,
        "w": float("-inf"),
        "x": 12,
    }


def test_duplicate_keys_nested_all_reported() -> None:
    assert problems("run:\n  timeout: 1m\n  timeout: 2m\nexpect: {a: 1, a: 2}\n") == [
        "f.yaml:3:3: run: duplicate key 'timeout' (first given on line 2)",
        "f.yaml:4:16: expect: duplicate key 'a' (first given on line 4)",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "x: !!python/object/apply:os.system ['ls']\n",
        "x: !!python/name:os.system\n",
        "x: !!python/tuple [1, 2]\n",
        "x: !custom 1\n",
        # SafeLoader's non-JSON types: a spec holds only what JSON can (jsontypes.JsonValue).
        "x: !!timestamp 2024-01-01\n",
        "x: !!binary aGVsbG8=\n",
        "x: !!set {a: null}\n",
        "x: !!omap [a: 1]\n",
    ],
)
def test_foreign_tags_refused(text: str) -> None:
    (message,) = problems(text)
    assert message.startswith("f.yaml:1:4: x: tag '!")
    assert message.endswith("' is not allowed: a spec is plain data")


def test_safe_tags_still_work() -> None:
    assert load_yaml("a: !!str 1\nb: !!int '2'\n").data == {"a": "1", "b": 2}


def test_syntax_errors_are_located() -> None:
    assert problems("a: [1, 2\nb: 3\n") == [
        "f.yaml:2:2: invalid YAML: expected ',' or ']', but got ':' (while parsing a flow"
        " sequence that starts at line 1, column 4)"
    ]
    assert problems("a: 1\n b: 2\n") == [
        "f.yaml:2:3: invalid YAML: mapping values are not allowed here; check the indentation"
        " of line 2 and the lines above it"
    ]
    assert problems("a: 1\n---\nb: 2\n") == [
        "f.yaml:2:1: invalid YAML: expected a single document in the stream,"
        " but found another document"
    ]


def test_an_unclosed_quote_is_located_where_it_opens_not_where_the_file_ends() -> None:
    """pyyaml marks the end of the file, where its scan gave up: lines below the quote."""
    assert problems('name: "broken\ncommand: python -c pass\nexpect:\n  outcome: pass\n') == [
        "f.yaml:1:7: invalid YAML: the quoted string that starts here is never closed"
        " (the file ends before its closing quote)"
    ]
    assert problems("a: 1\nb: 'it''s\n")[0].startswith("f.yaml:2:4: invalid YAML: the quoted")


def test_boolean_and_collection_keys() -> None:
    assert load_yaml("on: push\n").data == {"on": "push"}
    assert problems("true: push\n") == [
        "f.yaml:1:1: (top level): key true is read as the boolean true; quote it: 'true'"
    ]
    assert problems("1: x\n") == ["f.yaml:1:1: (top level): key 1 is not a string; quote it: '1'"]
    assert problems("? [a]\n: x\n") == [
        "f.yaml:1:3: (top level): a mapping key must be a plain value, not a collection"
    ]


def test_an_expression_without_its_dollar_says_so() -> None:
    # `{{ matrix.t }}` is a flow mapping whose key is a mapping: the YAML words alone did
    # not say that the `$` of `${{ }}` was what was missing.
    assert problems("run:\n  timeout: {{ matrix.t }}\n") == [
        "f.yaml:2:13: run.timeout: a mapping key must be a plain value, not a collection"
        " ('{{ }}' is a mapping to YAML: an expression is '${{ }}')"
    ]
    # A mapping key written in a flow mapping, not at its start, is no such slip.
    assert problems("a: {x: 1, {b: 1}: 2}\n") == [
        "f.yaml:1:11: a: a mapping key must be a plain value, not a collection"
    ]


def test_anchors_and_merge_keys() -> None:
    doc = load_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n")
    assert at(doc.data, "other") == {"x": 1, "y": 3}


def test_recursive_alias_refused() -> None:
    assert problems("a: &x [*x]\n") == [
        "f.yaml:1:4: a[0]: recursive alias (a node that contains itself)"
    ]


def test_alias_bomb_is_capped() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    found = problems("\n".join(lines) + "\n")
    assert len(found) == 1
    assert f"document too large (more than {MAX_NODES} nodes)" in found[0]


def test_empty_document() -> None:
    doc = load_yaml("# only a comment\n")
    assert doc.data is None
    assert doc.locations[()] == (1, 1)


def test_load_value_and_path_helpers() -> None:
    assert load_value("[1, true, a]") == [1, True, "a"]
    assert load_value("") is None
    assert format_path(()) == "(top level)"
    assert format_path(("matrix", "include", 2, "pin_memory")) == "matrix.include[2].pin_memory"
    assert locate({(): (1, 1), ("a",): (2, 3)}, ("a", "b", 0)) == (2, 3)
    assert locate({}, ("a",)) == (1, 1)
    assert Problem(3, 4, None, "m").format("f") == "f:3:4: m"


# -- bounded input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: " + "[" * 10_000 + "]" * 10_000 + "\n", "f.yaml:1:103:"),
        ("a: " + "[" * 100_000 + "\n", "f.yaml:1:103:"),
        ("a: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n", "f.yaml:1:397:"),
        (
            "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(120)) + "  x\n",
            "f.yaml:100:199:",
        ),
    ],
)
def test_deep_nesting_is_a_located_problem_not_a_recursion_error(text: str, where: str) -> None:
    (message,) = problems(text)
    assert message.startswith(where)
    assert message.endswith(f"invalid YAML: nested deeper than {MAX_DEPTH} levels")


def test_nesting_through_aliases_and_merge_keys_is_bounded() -> None:
    aliases = "d0: &d0 [x]\n" + "".join(f"d{i}: &d{i} [[[*d{i - 1}]]]\n" for i in range(1, 60))
    (message,) = problems(aliases)
    assert f"nested deeper than {MAX_DEPTH} levels (through aliases)" in message
    merges = "m0: &m0 {k: 0}\n" + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}}}\n" for i in range(1, 150))
    (message,) = problems(merges)
    assert f"nested deeper than {MAX_DEPTH} levels (through aliases)" in message
    # Within the bound both load.
    assert at(load_yaml("a: &a {x: 1}\nb: &b {<<: *a}\nc: {<<: *b}\n").data, "c") == {"x": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: b\x00c\n", "f.yaml:1:5: control character U+0000"),
        ("a: 1\nb: \x07\n", "f.yaml:2:4: control character U+0007"),
        ("a: 1\n\nc: x\x1b[2J\n", "f.yaml:3:5: control character U+001B"),
        ("a: \u009b31m\n", "f.yaml:1:4: control character U+009B"),
        ("a: \x7f\n", "f.yaml:1:4: control character U+007F"),
        ("a: \udcff\n", "f.yaml:1:4: control character U+DCFF"),
    ],
)
def test_control_characters_are_located(text: str, expected: str) -> None:
    (message,) = problems(text)
    assert message.startswith(expected + " is not allowed in YAML text")


def test_escaped_control_characters_and_tabs_are_fine() -> None:
    assert load_yaml('a: "x\\0y\\x1b"\nb: "\t1"\n').data == {"a": "x\x00y\x1b", "b": "\t1"}


def test_size_and_integer_length_are_bounded() -> None:
    (message,) = problems("a: " + "x" * MAX_YAML_CHARS + "\n", offset=4)
    assert message.startswith("f.yaml:5:1: the YAML text is")
    (message,) = problems("a: " + "9" * 5000 + "\n")
    assert message == "f.yaml:1:4: invalid YAML: integer too long (5000 digits)"
    assert load_yaml("a: " + "9" * 100 + "\n").data == {"a": int("9" * 100)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: !!float soon\n", "f.yaml:1:4: invalid YAML: cannot read this float:"),
        ("a: !!int three\n", "f.yaml:1:4: invalid YAML: cannot read this int:"),
    ],
)
def test_explicit_tags_on_unreadable_values_are_located(text: str, expected: str) -> None:
    (message,) = problems(text)
    assert message.startswith(expected)


def test_dump_yaml_quotes_by_the_core_schema() -> None:
    data: JsonValue = {
        "a": ["1e3", "0o17", "on", "yes", "1_000", "True", 1e25, None, True, "x\x85y"]
    }
    text = dump_yaml(data)
    assert load_yaml(text).data == data
    # pyyaml's own dumper quotes by YAML 1.1 and leaves these plain: read back as numbers.
    assert at(load_yaml(yaml.safe_dump(data)).data, "a", 0) == 1000.0
    assert at(load_yaml(yaml.safe_dump(data)).data, "a", 1) == 15


def test_dump_yaml_writes_a_loaded_specs_read_only_document() -> None:
    """A loaded spec's document is frozen (FrozenDict, FrozenList: dict and list subclasses),
    which pyyaml's representers, found by exact type, refused: "cannot represent an object"."""
    data: JsonValue = {"command": ["python", "x.py"], "matrix": {"a": [1, "1e3"]}}
    text = dump_yaml(freeze(data))
    assert text == dump_yaml(data)
    assert load_yaml(text).data == data


def test_dump_yaml_writes_a_multi_line_string_as_a_literal_block() -> None:
    """A spec's `description: |` came back from minimized.yaml, amplified.yaml and a `--set`
    run's spec.yaml as one escaped line, `"Captured from ...\\nIt ended ...\\n"` (lo37)."""
    data: JsonValue = {"description": "Captured from x.\nIt ended crash.\n", "c": "a\nb"}
    text = dump_yaml(data)
    assert text == "description: |\n  Captured from x.\n  It ended crash.\nc: |-\n  a\n  b\n"
    # Each reads back the same; where a block cannot hold it, it stays quoted.
    strings = ["a\n", "  lead\nx\n", "x\n  in\n", "trail \nx", "tab\t\nx", "a\r\nb", "a\n\n"]
    strings += ["\n", "\n\na", "# no comment\n", "a\n b\n\n", "k: v\n- x"]
    for string in strings:
        assert load_yaml(dump_yaml({"s": string, "l": [string]})).data == {
            "s": string,
            "l": [string],
        }, string
    assert dump_yaml({"s": "trail \nx"}) == 's: "trail \\nx"\n'
    assert "..." not in dump_yaml({"s": "a\n b\n\n"})  # no `|+`, which ends the document


def test_a_lone_surrogate_escape_is_a_located_problem() -> None:
    # `X: "a\udc80b"` validated, then a run of it ended with an internal UnicodeEncodeError
    # once its attempts had run: no UTF-8 output holds a lone surrogate.
    with pytest.raises(YamlSourceError) as caught:
        load_yaml('env:\n  X: "a\\udc80b"\n')
    (problem,) = caught.value.problems
    assert (problem.line, problem.col, problem.path) == (2, 6, ("env", "X"))
    assert "\\udc80 is half of a UTF-16 surrogate pair, no character" in problem.message
    assert load_yaml('X: "\\U0001F600 \\u00e9"\n').data == {"X": "\U0001f600 \u00e9"}
    # A pair is the character past U+FFFF it encodes, as JSON's ensure_ascii writes it.
    assert load_yaml('X: "caf\\u00e9 \\ud83d\\ude00"\n').data == {"X": "caf\u00e9 \U0001f600"}
    # A lone half beside a pair is the one named.
    with pytest.raises(YamlSourceError, match=r"\\udc80 is half"):
        load_yaml('X: "\\ud83d\\ude00\\udc80"\n')
