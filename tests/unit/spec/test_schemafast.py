"""The quick schema check says "valid" exactly when jsonschema does (so validate skips it)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.spec import schema, schemafast
from reprospec.spec.schemafast import equal, valid
from reprospec.spec.yamlsource import YamlSourceError, load_yaml
from tests.support.paths import ROOT

FILES = sorted(
    path
    for folder in ("specs", "tests/data", "docs", "benchmarks")
    for path in (ROOT / folder).rglob("*.yaml")
)


@functools.cache
def documents() -> list[tuple[str, Any]]:
    found = []
    for path in FILES:
        try:
            found.append((str(path.relative_to(ROOT)), load_yaml(path.read_text()).data))
        except YamlSourceError:
            continue  # not YAML at all: the schema never sees it
    return found


def jsonschema_valid(document: JsonValue, against: JsonObject | None = None) -> bool:
    validator = schema._validator() if against is None else schema._validator_class()(against)
    return not any(True for _ in validator.iter_errors(document))


def test_every_spec_and_bad_spec_of_the_repository() -> None:
    seen = documents()
    assert len(seen) > 40
    answers = {name: valid(doc, schema.load_schema()) for name, doc in seen}
    assert answers == {name: jsonschema_valid(doc) for name, doc in seen}
    # Both kinds are there: the check has said yes and no.
    assert set(answers.values()) == {True, False}


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(-2, 3, allow_nan=False)
    | st.sampled_from(["", "x", "3s", "${{ matrix.a }}", "SIGSEGV", "crash", "cpu", "1GB"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(document: JsonValue, prefix: JsonPath = ()) -> list[JsonPath]:
    """Every place in `document` a value sits (dict keys and list indexes)."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths(value, (*prefix, index))
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_specs_get_the_same_answer(data: st.DataObject) -> None:
    name, document = data.draw(st.sampled_from(documents()))
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 3))):
        places = paths(document)
        where = data.draw(st.sampled_from(places))
        value = data.draw(JSON)
        if not where:
            continue
        parent = document
        for key in where[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = value
    assert valid(document, schema.load_schema()) == jsonschema_valid(document), name


def test_json_equality_is_jsonschemas() -> None:
    assert equal(1, 1.0)
    assert not equal(True, 1)
    assert not equal(0, False)
    assert equal([1, {"a": True}], [1.0, {"a": True}])
    assert not equal([1], [1, 1])
    assert not equal("1", 1)
    assert valid([1, 1.0], {"uniqueItems": True}) is False
    assert valid([True, 1], {"uniqueItems": True}) is True


def test_an_unknown_keyword_is_never_called_valid() -> None:
    assert valid("x", {"type": "string"})
    assert not valid("x", {"type": "string", "format": "email"})
    assert not valid({"a": 1}, {"patternProperties": {"^a$": {}}, "additionalProperties": False})
    assert not valid(1, {"$ref": "https://example.com/s.json"})
    assert schemafast.valid(None, {"not": {"type": "null"}}) is False
