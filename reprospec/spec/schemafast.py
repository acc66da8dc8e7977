"""Is this document valid against the packaged schema? A yes or no, without jsonschema.

`reprospec validate`, `plan` and `run` check every spec against the JSON Schema, and
most specs are valid. Importing jsonschema and building its validator costs more than
the rest of `validate` together (40-60 ms of a 100 ms command), and it is only needed to
say what is wrong. So `valid` answers first, with the keywords the schema uses
(2020-12 semantics, the same integer rule as schema.py: 2.0 is no integer); only a
document it does not call valid goes to jsonschema, which finds every problem and words
it. A keyword it does not know makes it say "not valid": jsonschema decides then, so an
unknown part of a schema can cost time, never a wrong "valid".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeGuard

from reprospec.core.jsontypes import JsonObject, JsonValue

# Keywords that say nothing about validity.
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "$schema",
        "$id",
        "$defs",
        "x-expected",
        "default",
        "examples",
        "patternErrorMessage",
    }
)
_TYPES: Mapping[str, Callable[[JsonValue], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class _Unsupported(Exception):
    """A keyword this check does not implement: jsonschema must decide."""


def valid(document: JsonValue, schema: JsonObject) -> bool:
    """True only when `document` is valid against `schema` (a root with `$defs`)."""
    try:
        return _Check(schema).valid(document, schema)
    except _Unsupported:
        return False


def _number(value: JsonValue) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# A keyword's argument of the wrong JSON type is a schema this check does not know:
# jsonschema decides (it would call the schema itself invalid).
def _bound(rule: JsonValue) -> float:
    if not _number(rule):
        raise _Unsupported(f"bound {rule!r}")
    return rule


def _array(rule: JsonValue) -> list[JsonValue]:
    if not isinstance(rule, list):
        raise _Unsupported(f"array {rule!r}")
    return rule


def _object(rule: JsonValue) -> JsonObject:
    if not isinstance(rule, dict):
        raise _Unsupported(f"object {rule!r}")
    return rule


def equal(one: JsonValue, two: JsonValue) -> bool:
    """JSON equality, as jsonschema has it: 1 == 1.0, but true is not 1."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, (list, dict)) or isinstance(two, (list, dict)):
        return False
    return bool(one == two)


class _Check:
    # Every keyword method has the one signature _KEYWORDS dispatches on (value, rule, schema);
    # most ignore the enclosing schema, hence `_schema`.

    def __init__(self, root: JsonObject) -> None:
        self.defs = _object(root.get("$defs") or {})

    def valid(self, value: JsonValue, schema: JsonValue) -> bool:
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        for key, rule in schema.items():
            if key in _ANNOTATIONS:
                continue
            check = _KEYWORDS.get(key)
            if check is None:
                raise _Unsupported(key)
            if not check(self, value, rule, schema):
                return False
        return True

    # -- references and combinations ------------------------------------------------------

    def _ref(self, value: JsonValue, ref: JsonValue, _schema: JsonObject) -> bool:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise _Unsupported(f"$ref {ref!r}")
        name = ref.removeprefix("#/$defs/")
        if name not in self.defs or "/" in name:
            raise _Unsupported(f"$ref {ref!r}")
        return self.valid(value, self.defs[name])

    def _anyOf(self, value: JsonValue, branches: JsonValue, _schema: JsonObject) -> bool:
        return any(self.valid(value, branch) for branch in _array(branches))

    def _allOf(self, value: JsonValue, branches: JsonValue, _schema: JsonObject) -> bool:
        return all(self.valid(value, branch) for branch in _array(branches))

    def _oneOf(self, value: JsonValue, branches: JsonValue, _schema: JsonObject) -> bool:
        return sum(1 for branch in _array(branches) if self.valid(value, branch)) == 1

    def _not(self, value: JsonValue, branch: JsonValue, _schema: JsonObject) -> bool:
        return not self.valid(value, branch)

    # -- any value ------------------------------------------------------------------------

    def _type(self, value: JsonValue, kinds: JsonValue, _schema: JsonObject) -> bool:
        names = [kinds] if isinstance(kinds, str) else _array(kinds)
        for name in names:
            if not isinstance(name, str) or name not in _TYPES:
                raise _Unsupported(f"type {name!r}")
        return any(_TYPES[str(name)](value) for name in names)

    def _enum(self, value: JsonValue, choices: JsonValue, _schema: JsonObject) -> bool:
        return any(equal(value, choice) for choice in _array(choices))

    def _const(self, value: JsonValue, constant: JsonValue, _schema: JsonObject) -> bool:
        return equal(value, constant)

    # -- numbers --------------------------------------------------------------------------

    def _minimum(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not _number(value) or value >= _bound(bound)

    def _maximum(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not _number(value) or value <= _bound(bound)

    def _exclusiveMinimum(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not _number(value) or value > _bound(bound)

    def _exclusiveMaximum(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not _number(value) or value < _bound(bound)

    # -- strings --------------------------------------------------------------------------

    def _minLength(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, str) or len(value) >= _bound(bound)

    def _maxLength(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, str) or len(value) <= _bound(bound)

    def _pattern(self, value: JsonValue, pattern: JsonValue, _schema: JsonObject) -> bool:
        if not isinstance(pattern, str):
            raise _Unsupported(f"pattern {pattern!r}")
        return not isinstance(value, str) or re.search(pattern, value) is not None

    # -- arrays ---------------------------------------------------------------------------

    def _items(self, value: JsonValue, items: JsonValue, schema: JsonObject) -> bool:
        if "prefixItems" in schema:
            raise _Unsupported("prefixItems")
        return not isinstance(value, list) or all(self.valid(item, items) for item in value)

    def _minItems(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, list) or len(value) >= _bound(bound)

    def _maxItems(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, list) or len(value) <= _bound(bound)

    def _uniqueItems(self, value: JsonValue, unique: JsonValue, _schema: JsonObject) -> bool:
        if not unique or not isinstance(value, list):
            return True
        return not any(
            equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value))
        )

    # -- objects --------------------------------------------------------------------------

    def _properties(self, value: JsonValue, properties: JsonValue, _schema: JsonObject) -> bool:
        if not isinstance(value, dict):
            return True
        rules = _object(properties).items()
        return all(self.valid(value[k], sub) for k, sub in rules if k in value)

    def _additionalProperties(self, value: JsonValue, rule: JsonValue, schema: JsonObject) -> bool:
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        if not isinstance(value, dict):
            return True
        known = _object(schema.get("properties") or {})
        return all(self.valid(v, rule) for k, v in value.items() if k not in known)

    def _required(self, value: JsonValue, names: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, dict) or all(name in value for name in _array(names))

    def _propertyNames(self, value: JsonValue, rule: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, dict) or all(self.valid(key, rule) for key in value)

    def _minProperties(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, dict) or len(value) >= _bound(bound)

    def _maxProperties(self, value: JsonValue, bound: JsonValue, _schema: JsonObject) -> bool:
        return not isinstance(value, dict) or len(value) <= _bound(bound)


_KEYWORDS: Mapping[str, Callable[[_Check, JsonValue, JsonValue, JsonObject], bool]] = {
    "$ref": _Check._ref,
    "anyOf": _Check._anyOf,
    "allOf": _Check._allOf,
    "oneOf": _Check._oneOf,
    "not": _Check._not,
    "type": _Check._type,
    "enum": _Check._enum,
    "const": _Check._const,
    "minimum": _Check._minimum,
    "maximum": _Check._maximum,
    "exclusiveMinimum": _Check._exclusiveMinimum,
    "exclusiveMaximum": _Check._exclusiveMaximum,
    "minLength": _Check._minLength,
    "maxLength": _Check._maxLength,
    "pattern": _Check._pattern,
    "items": _Check._items,
    "minItems": _Check._minItems,
    "maxItems": _Check._maxItems,
    "uniqueItems": _Check._uniqueItems,
    "properties": _Check._properties,
    "additionalProperties": _Check._additionalProperties,
    "required": _Check._required,
    "propertyNames": _Check._propertyNames,
    "minProperties": _Check._minProperties,
    "maxProperties": _Check._maxProperties,
}
