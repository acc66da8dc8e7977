"""The JSON Schema and its module: packaged copy, readable messages, every field typed."""

from __future__ import annotations

import json

import pytest
import yaml

from reprospec.spec.schema import describe, load_schema, schema_text, suggest, validate
from reprospec.spec.yamlsource import YamlSourceError, load_yaml
from tests.support.paths import DATA, ROOT

EXAMPLE = DATA / "spec_format_example.yaml"


def problems(text: str) -> list[str]:
    doc = load_yaml(text)
    return [p.format("s.yaml") for p in validate(doc.data, doc.locations, doc.key_locations)]


BASE = "reprospec: 1\nname: s\nexpect: {outcome: pass}\n"


def test_packaged_schema_is_identical_to_repo_copy() -> None:
    assert (ROOT / "schemas" / "reprospec.schema.json").read_text() == schema_text()
    assert (ROOT / "reprospec" / "data" / "reprospec.schema.json").read_text() == schema_text()


def test_schema_is_a_valid_2020_12_schema() -> None:
    from jsonschema import Draft202012Validator

    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_every_object_refuses_unknown_keys() -> None:
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and where != "/matrix":
                assert node.get("additionalProperties") is False, where
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(load_schema()["properties"], "")
    assert load_schema()["additionalProperties"] is False


def test_spec_format_example_validates() -> None:
    doc = load_yaml(EXAMPLE.read_text())
    assert validate(doc.data, doc.locations, doc.key_locations) == []


def test_expressions_allowed_where_typed_scalars_are_expected() -> None:
    text = BASE + (
        "environment: {gpus: '${{ matrix.g }}', network: '${{ true }}', memory: '${{"
        " matrix.m }}'}\n"
        "run: {timeout: '${{ matrix.t }}'}\n"
        "workload:\n"
        "  seed: ${{ attempt }}\n"
        "  data: {loader: {num_workers: '${{ matrix.n }}', pin_memory: '${{ matrix.p }}',"
        " batch_size: '${{ matrix.b }}'}}\n"
        "  phases: [{name: train, steps: '${{ matrix.s }}'}]\n"
        "  faults: [{kind: segfault, when: '${{ matrix.n > 0 }}', probability: '${{ 0.5 }}'}]\n"
    )
    assert problems(text) == []


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("command: [python, 3, true]", []),
        ("command: []", ["s.yaml:4:10: command: expected a non-empty list, got an empty list"]),
        (
            "command: {a: 1}",
            [
                "s.yaml:4:10: command: expected a non-empty string or a non-empty list,"
                " got a mapping"
            ],
        ),
        (
            "workload: {optimizer: {name: sgd, lrate: 0.1}}",
            [
                "s.yaml:4:35: workload.optimizer: unknown key 'lrate'"
                " (expected one of name, lr, momentum, weight_decay)"
            ],
        ),
        (
            "workload: {optimizer: sdg}",
            [
                "s.yaml:4:23: workload.optimizer: expected one of sgd, adam, got 'sdg'"
                " (did you mean 'sgd'?)"
            ],
        ),
        (
            "workload: {model: {params: {}}}",
            [
                "s.yaml:4:19: workload.model: missing 'builtin' or 'entrypoint' (exactly"
                " one is required)"
            ],
        ),
        (
            "workload: {model: {entrypoint: 'not an entrypoint'}}",
            [
                "s.yaml:4:32: workload.model.entrypoint: expected an entrypoint like"
                " \"package.module:callable\", got 'not an entrypoint'"
            ],
        ),
        (
            "workload: {data: {loader: {num_workers: 'two'}}}",
            ["s.yaml:4:41: workload.data.loader.num_workers: expected an integer >= 0, got 'two'"],
        ),
        (
            "workload: {data: {loader: {num_workers: 'w${{ matrix.n }}'}}}",
            [
                "s.yaml:4:41: workload.data.loader.num_workers: expected an integer >= 0 or one"
                " whole ${{ }} expression, got 'w${{ matrix.n }}'"
            ],
        ),
        (
            "workload: {faults: [{kind: exit, code: 256}]}",
            ["s.yaml:4:40: workload.faults[0].code: expected an integer from 0 to 255, got 256"],
        ),
        (
            "workload: {amp: fp32}",
            ["s.yaml:4:17: workload.amp: expected one of bf16, fp16, false, null, got 'fp32'"],
        ),
        (
            "matrix: {a: [1], include: [{}]}\ncommand: x",
            ["s.yaml:4:28: matrix.include[0]: expected a mapping with at least one key"],
        ),
        (
            "environment: {env: {1A: x}}\ncommand: x",
            ["s.yaml:4:21: environment.env: expected an environment variable name, got '1A'"],
        ),
        (
            "environment: {env: {A: [1]}}\ncommand: x",
            [
                "s.yaml:4:24: environment.env.A: expected a string or a number or true or"
                " false or null, got a list"
            ],
        ),
        (
            "expect: {outcome: crash}\ncommand: x",
            ["s.yaml:4:1: (top level): duplicate key 'expect' (first given on line 3)"],
        ),
    ],
)
def test_messages(snippet: str, expected: list[str]) -> None:
    text = BASE + snippet + "\n"
    if "duplicate" in "".join(expected):
        with pytest.raises(YamlSourceError) as caught:
            load_yaml(text)
        assert [p.format("s.yaml") for p in caught.value.problems] == expected
        return
    if "command" not in snippet and "workload" not in snippet:
        text += "command: x\n"
    assert problems(text) == expected


def test_all_problems_reported_sorted_by_position() -> None:
    text = "name: BAD\nreprospec: 3\nrun: {repeat: 0, stop_on: false, parallel: x}\n"
    assert problems(text) == [
        "s.yaml:1:1: (top level): missing 'workload' or 'command' (exactly one is required)",
        "s.yaml:1:7: name: expected a slug of lowercase letters, digits, '.', '_' and '-'"
        " (like val-segfault), got 'BAD'",
        "s.yaml:2:12: reprospec: expected 1 (the spec format version), got 3",
        "s.yaml:3:15: run.repeat: expected an integer >= 1, got 0",
        "s.yaml:3:27: run.stop_on: expected one of never, first-reproduction, first-miss,"
        " got false",
        "s.yaml:3:44: run.parallel: expected an integer >= 1, got 'x'",
    ]


def test_describe_plain_words() -> None:
    assert describe({"type": "integer", "minimum": 1}) == "an integer >= 1"
    assert describe({"$ref": "#/$defs/duration"}) == (
        "a duration like 90s, 5m or 1h or a number of seconds > 0"
    )
    assert describe({"type": ["string", "null"]}) == "a string or null"
    assert suggest("timout", ["timeout", "repeat"]) == " (did you mean 'timeout'?)"
    assert suggest("zzz", ["timeout"]) == ""
    # A word several choices begin: each, where the closest alone named `first-miss`.
    stops = ["never", "first-reproduction", "first-miss"]
    assert suggest("first", stops) == " (did you mean 'first-reproduction' or 'first-miss'?)"
    assert suggest("first-mis", stops) == " (did you mean 'first-miss'?)"


def test_unknown_key_without_close_match_lists_allowed_keys() -> None:
    assert problems(BASE + "command: x\nrun: {zzz: 1}\n") == [
        "s.yaml:5:7: run: unknown key 'zzz' (expected one of timeout, stall, repeat, max_repeat,"
        " stop_on, parallel, instances, preload)"
    ]


def test_schema_file_is_json_and_yaml_loadable() -> None:
    assert yaml.safe_load(schema_text()) == json.loads(schema_text())


def test_integers_are_integers_not_integral_floats() -> None:
    # JSON Schema 2020-12 counts 2.0 as an integer; a spec may not.
    text = (
        "reprospec: 1.0\nname: s\ncommand: x\nexpect: {outcome: error, exit_code: 2.0}\n"
        "run: {repeat: 2.0, parallel: 4.0}\nenvironment: {gpus: 1.0}\n"
        "workload: {seed: 0.0}\n"
    )
    assert [p for p in problems(text) if "exactly one" not in p] == [
        "s.yaml:1:12: reprospec: expected 1 (the spec format version), got 1.0",
        "s.yaml:4:37: expect.exit_code: expected an integer from 0 to 255, got 2.0",
        "s.yaml:5:15: run.repeat: expected an integer >= 1, got 2.0",
        "s.yaml:5:30: run.parallel: expected an integer >= 1, got 4.0",
        "s.yaml:6:21: environment.gpus: expected an integer >= 0, got 1.0",
        "s.yaml:7:18: workload.seed: expected an integer >= 0, got 0.0",
    ]
    assert problems(BASE + "command: x\nrun: {repeat: 2, timeout: 1.5}\n") == []


def test_phase_steps_start_at_one() -> None:
    assert problems(BASE + "workload: {phases: [{name: train, steps: 0}]}\n") == [
        "s.yaml:4:42: workload.phases[0].steps: expected an integer >= 1, got 0"
    ]
    assert problems(BASE + "workload: {phases: [{name: train, steps: 1}]}\n") == []


def _alternatives(node: object, path: str = "") -> list[tuple[str, object]]:
    """Every subschema of alternatives (anyOf, oneOf) in `node`, with its path."""
    found: list[tuple[str, object]] = []
    if isinstance(node, dict):
        if "anyOf" in node or "oneOf" in node:
            found.append((path, node))
        for key, value in node.items():
            found += _alternatives(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _alternatives(value, f"{path}[{index}]")
    return found


def test_no_expected_phrase_names_an_alternative_twice() -> None:
    # An alternative's x-expected that named the next one too was said twice: `expected
    # aggressive or a threshold >= 1 or a threshold >= 1` (perturb.gc), `a seed
    # 0-4294967295 or random or 'random'` (perturb.hash_seed).
    doubled = []
    for path, node in _alternatives(load_schema()):
        parts = describe(node).split(" or ")  # type: ignore[arg-type]
        words = [part.strip("'\"") for part in parts]
        if len(set(words)) < len(words) or any(
            a != b and a in b.split() for a in words for b in words
        ):
            doubled.append(f"{path}: {describe(node)}")  # type: ignore[arg-type]
    assert doubled == []


def test_a_bad_device_names_every_device_the_schema_accepts() -> None:
    # The pattern takes mps; the words left it out, so `device: gpu` never suggested it.
    for where in ("environment: {device: gpu}\ncommand: x\n", "workload: {device: gpu}\n"):
        (problem,) = problems(BASE + where)
        assert problem.endswith("device: expected cpu, cuda, cuda:N, mps or auto, got 'gpu'")


def test_an_unquoted_version_says_yaml_read_it_as_a_number() -> None:
    # `python: 3.10` is the float 3.1 to YAML: "got 3.1" alone showed a value never written.
    assert problems(BASE + "command: x\nenvironment: {python: 3.10}\n") == [
        's.yaml:5:23: environment.python: expected a quoted version string like "3.11", '
        "got 3.1 (an unquoted number to YAML, which reads 3.10 as 3.1: write it quoted)"
    ]
    # An integer where text is wanted loses nothing: no such note.
    assert "unquoted" not in " ".join(problems(BASE + "command: x\nenvironment: {python: 3}\n"))


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("'30%'", ">=0.3"),  # a percentage: a fraction, and a bare bound is a lower one
        ("0.3", ">=0.3"),
        ("'>=30%'", ">=0.3"),
        ("'=1'", "==1"),
        ("'1'", "==1"),  # not '>=1', which no interval decides and is refused
        ("0", "==0"),
        ("'\u22650.3'", ">=0.3"),
    ],
)
def test_a_malformed_rate_says_the_bound_it_meant(written: str, meant: str) -> None:
    # "expected a rate bound like '>=0.3', got '30%'" left the user to translate.
    (problem,) = problems(
        f"reprospec: 1\nname: s\ncommand: x\nexpect: {{outcome: crash, rate: {written}}}\n"
    )
    assert problem.endswith(f"(did you mean '{meant}'?)"), problem


def test_a_rate_with_no_one_reading_gets_no_suggestion() -> None:
    for written in ("'150%'", "often", "[1]"):
        text = f"reprospec: 1\nname: s\ncommand: x\nexpect: {{outcome: crash, rate: {written}}}\n"
        (problem,) = problems(text)
        assert "did you mean" not in problem, problem


def test_an_expression_in_a_mapping_key_says_keys_are_never_evaluated() -> None:
    # A variable named by the matrix was "expected an environment variable name", no more.
    text = BASE + "command: x\nenvironment:\n  env:\n    '${{ matrix.x }}': 1\n"
    assert problems(text) == [
        "s.yaml:7:5: environment.env: expected an environment variable name, got "
        "'${{ matrix.x }}' (a mapping key is never evaluated: a ${{ }} goes in a value)"
    ]


def test_a_case_that_sets_a_key_of_the_base_to_null_is_told_how_a_case_drops_it() -> None:
    # `{exception: null}` in a case, meant as "no exception here", said only "expected a
    # non-empty string, got null": nothing of how a case with its own outcome starts afresh.
    found = problems(
        "reprospec: 1\nname: n\ncommand: c\nmatrix: {x: [1, 2]}\nexpect:\n"
        "  outcome: error\n  exception: ValueError\n  cases:\n"
        "    - when: {x: 2}\n      exception: null\n"
    )
    assert found == [
        "s.yaml:10:18: expect.cases[0].exception: expected a non-empty string, got null (a case"
        " cannot unset the base's exception with null: it overrides keys of the base, or, with"
        " an outcome of its own, starts afresh without the base's exception: write this case's"
        " outcome (`outcome: error`) and leave exception out)"
    ]
