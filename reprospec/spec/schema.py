"""The packaged JSON Schema, and its errors turned into located, plain-words problems.

jsonschema is imported lazily: it costs ~175 ms and `reprospec --version` must
stay instant. Messages never dump the schema; they say what was expected at
that place (`expected an integer >= 1, got 'three'`) and suggest the closest
key for a typo.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.core.units import rate_meant
from reprospec.spec import schemafast
from reprospec.spec.yamlsource import Location, Problem, locate, shorten

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError


class _Validator(Protocol):
    """What is used of a jsonschema validator (jsonschema ships no type information)."""

    def iter_errors(self, instance: JsonValue) -> Iterable[ValidationError]: ...


EXPR_REF = "#/$defs/expr"


SCHEMA_FILE = Path(__file__).resolve().parent.parent / "data" / "reprospec.schema.json"


@functools.cache
def schema_text() -> str:
    """The JSON Schema as shipped in the package (a file next to this module, like the
    harness: reprospec runs from a folder, never from a zip; importlib.resources would
    cost more than validating a spec)."""
    return SCHEMA_FILE.read_text("utf-8")


@functools.cache
def load_schema() -> JsonObject:
    """The JSON Schema (2020-12) of a spec, as a dict."""
    loaded: JsonObject = json.loads(schema_text())
    return loaded


def _defs() -> JsonObject:
    defs = load_schema()["$defs"]
    return defs if isinstance(defs, dict) else {}


@functools.cache
def _validator_class() -> Callable[[JsonObject], _Validator]:
    from jsonschema import Draft202012Validator, validators

    # JSON Schema counts 2.0 as an integer; a spec that says `repeat: 2.0` or
    # `reprospec: 1.0` is a typo or a misunderstanding, so refuse floats there.
    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    strict: Callable[[JsonObject], _Validator] = validators.extend(
        Draft202012Validator, type_checker=checker
    )
    return strict


@functools.cache
def _validator() -> _Validator:
    return _validator_class()(load_schema())


def _is_integer(_checker: object, instance: object) -> bool:  # a jsonschema type check
    return isinstance(instance, int) and not isinstance(instance, bool)


def validate(
    document: JsonValue,
    locations: Mapping[JsonPath, Location],
    key_locations: Mapping[JsonPath, Location],
) -> list[Problem]:
    """Every schema problem of `document`, located and sorted by position."""
    if schemafast.valid(document, load_schema()):
        return []  # valid: jsonschema is needed only to say what is wrong
    translator = _Translator(locations, key_locations)
    problems: list[Problem] = []
    for error in _validator().iter_errors(document):
        problems.extend(translator.translate(error))
    return sort_problems(problems)


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Sorted by position, duplicates dropped."""
    unique = {(p.line, p.col, p.path, p.message): p for p in problems}
    return [unique[k] for k in sorted(unique, key=lambda k: (k[0], k[1], k[3]))]


# Other names a user writes for a key (another tool's word for it), for `suggest`.
_OTHER_NAMES = {"regex": "pattern", "regexp": "pattern", "re": "pattern"}


def suggest(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or an empty string; every choice the
    word begins, where it begins several (`stop_on: first` is as likely `first-reproduction`
    as the `first-miss` the closest match alone named)."""
    import difflib  # only to word a mistake

    choices = list(choices)
    named = _OTHER_NAMES.get(word.lower())
    if named in choices:
        # `regex:` for a marker's `pattern`: too unlike it for a close match, and without
        # it the user read the list of keys for the one that means the same.
        return f" (did you mean '{named}'?)"
    begun = [c for c in choices if len(word) > 1 and c.startswith(word)]
    if len(begun) > 1:
        return f" (did you mean {' or '.join(repr(c) for c in begun)}?)"
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _unquoted(value: object, error: ValidationError) -> str:
    """Why a number stands where text was wanted: YAML read it unquoted, and a version
    loses its trailing zero on the way (`python: 3.10` is 3.1), so `got 3.1` alone showed
    the user a value they never wrote."""
    wants_text = error.validator == "type" and error.validator_value == "string"
    if not wants_text or not isinstance(value, float):
        return ""
    return " (an unquoted number to YAML, which reads 3.10 as 3.1: write it quoted)"


def render_instance(value: object) -> str:
    """A short, YAML-flavoured rendering of a bad value for a message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    return str(value)


def _resolve(schema: JsonValue) -> JsonValue:
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _resolve(_defs()[ref.split("/")[-1]])
    return schema


def _home_index(top: Mapping[str, JsonValue]) -> dict[str, list[str]]:
    """Each key of a top-level section's own mapping, with the sections that take it
    (`cases` -> [`expect`]): built once per error, where a file of 5,000 stray keys asked
    the schema once per key."""
    properties = top.get("properties")
    index: dict[str, list[str]] = {}
    for name, section in properties.items() if isinstance(properties, dict) else ():
        resolved = _resolve(section)
        branches = [resolved]
        if isinstance(resolved, dict):
            branches += [_resolve(b) for b in _list(resolved.get("anyOf"))]
            branches += [_resolve(b) for b in _list(resolved.get("oneOf"))]
        keys: set[str] = set()
        for branch in branches:
            own = branch.get("properties") if isinstance(branch, dict) else None
            keys.update(own if isinstance(own, dict) else ())
        for key in keys:
            index.setdefault(key, []).append(name)
    return index


def _is_expr(schema: JsonValue) -> bool:
    return isinstance(schema, dict) and schema.get("$ref") == EXPR_REF


def _list(value: JsonValue) -> list[JsonValue]:
    """`value` when it is a list (`anyOf`, `enum`, `required`), else an empty one."""
    return value if isinstance(value, list) else []


def _keys(schema: JsonValue) -> set[str]:
    """The keywords of a (resolved) subschema."""
    resolved = _resolve(schema)
    return set(resolved) if isinstance(resolved, dict) else set()


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}


def describe(schema: JsonValue) -> str:
    """What a subschema accepts, in plain words (expression alternatives left out)."""
    schema = _resolve(schema)
    if not isinstance(schema, dict):
        return "a valid value"
    if "x-expected" in schema:
        return str(schema["x-expected"])
    if "anyOf" in schema or "oneOf" in schema:
        alts = [a for a in _list(schema.get("anyOf") or schema["oneOf"]) if not _is_expr(a)]
        return " or ".join(dict.fromkeys(describe(a) for a in alts))
    if "const" in schema:
        return render_instance(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(render_enum(v) for v in _list(schema["enum"]))
    types = schema.get("type")
    if isinstance(types, list):
        return " or ".join(_TYPE_WORDS[str(t)] for t in types)
    if types == "integer" or types == "number":
        return _TYPE_WORDS[types] + _bounds(schema)
    if types == "string" and schema.get("minLength"):
        return "a non-empty string"
    if types == "array" and schema.get("minItems"):
        return "a non-empty list"
    return _TYPE_WORDS.get(str(types), "a valid value")


def render_enum(value: JsonValue) -> str:
    """An enum member as the user would write it."""
    return render_instance(value) if not isinstance(value, str) else value


def _bounds(schema: Mapping[str, JsonValue]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" >= {low}"
    if schema.get("exclusiveMinimum") is not None:
        return f" > {schema['exclusiveMinimum']}"
    if high is not None:
        return f" <= {high}"
    return ""


def _json_types(value: object) -> set[str]:
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"number", "integer"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    if isinstance(value, dict):
        return {"object"}
    return {"null"} if value is None else set()


def _accepts_type(schema: JsonValue, value: object) -> bool:
    """Whether `schema` is about values of `value`'s JSON type (so its errors are relevant)."""
    schema = _resolve(schema)
    if not isinstance(schema, dict):
        return False
    if "anyOf" in schema:
        return any(_accepts_type(a, value) for a in _list(schema["anyOf"]) if not _is_expr(a))
    if "enum" in schema or "const" in schema:
        members = _list(schema["enum"]) if "enum" in schema else [schema.get("const")]
        return any(_json_types(m) & _json_types(value) for m in members)
    types = schema.get("type")
    if types is None:
        return False
    wanted = {types} if isinstance(types, str) else {str(t) for t in _list(types)}
    return bool(wanted & _json_types(value))


# The keys of `expect` a case with an `outcome` of its own drops (spec-format.md, cases).
_DROPPED_BY_AN_OUTCOME = frozenset(
    ("signal", "exit_code", "exception", "message", "phase", "step", "stage", "module", "where")
)


def _case_unset(path: JsonPath, value: object) -> str | None:
    """What to write instead of a case's `KEY: null` (`expect.cases[1]: {exception:
    null}`), meant to unset the base's key: "null is not a string" said nothing of how a
    case says "no exception". None for any other value or place."""
    if value is not None or len(path) != 4 or path[:2] != ("expect", "cases"):
        return None
    key = path[3]
    if key not in _DROPPED_BY_AN_OUTCOME:
        return None
    return (
        f"a case cannot unset the base's {key} with null: it overrides keys of the base, or, "
        f"with an outcome of its own, starts afresh without the base's {key}: write this "
        f"case's outcome (`outcome: error`) and leave {key} out"
    )


class _Translator:
    """Turns jsonschema errors into Problems; one instance per document."""

    def __init__(
        self,
        locations: Mapping[JsonPath, Location],
        key_locations: Mapping[JsonPath, Location],
    ) -> None:
        self.locations = locations
        self.key_locations = key_locations

    def _at(self, path: JsonPath, message: str, *, key: bool = False) -> Problem:
        where = self.key_locations.get(path) if key else None
        line, col = where or locate(self.locations, path)
        return Problem(line, col, path[:-1] if key else path, message)

    def translate(self, error: ValidationError) -> list[Problem]:
        problems = self._translate(error)
        unset = _case_unset(tuple(error.absolute_path), error.instance)
        if unset is not None:
            return [p._replace(message=f"{p.message} ({unset})") for p in problems]
        # A rate is the one field whose likely meaning can be written back for the user:
        # `30%` and `0.3` are `>=0.3`.
        meant = rate_meant(error.instance) if error.absolute_path else None
        if meant is None or not error.absolute_path or error.absolute_path[-1] != "rate":
            return problems
        return [p._replace(message=f"{p.message} (did you mean '{meant}'?)") for p in problems]

    def _translate(self, error: ValidationError) -> list[Problem]:
        path = tuple(error.absolute_path)
        kind = error.validator
        value = error.instance
        if kind == "additionalProperties" and error.validator_value is False:
            return self._unknown_keys(path, error)
        if kind == "required":
            missing = [k for k in error.validator_value if k not in value]
            return [self._at(path, f"missing required key '{k}'") for k in missing]
        if kind in ("anyOf", "oneOf"):
            return self._alternatives(path, error)
        if kind == "enum" and isinstance(value, str):
            hint = _no_expression(value) or suggest(
                value, [v for v in error.validator_value if isinstance(v, str)]
            )
            return [
                self._at(
                    path, f"expected {describe(error.schema)}, got {render_instance(value)}{hint}"
                )
            ]
        if "propertyNames" in error.absolute_schema_path and isinstance(value, str):
            # The error is about a key: point at that key, not at its mapping.
            message = f"expected {describe(error.schema)}, got {render_instance(value)}"
            if "${{" in value:
                message += " (a mapping key is never evaluated: a ${{ }} goes in a value)"
            return [self._at((*path, value), message, key=True)]
        if kind == "minProperties":
            return [self._at(path, f"expected {describe(error.schema)} with at least one key")]
        if kind in _EXPECTED_KINDS:
            message = f"expected {describe(error.schema)}, got {render_instance(value)}"
            return [self._at(path, message + (_unquoted(value, error) or _no_expression(value)))]
        return [self._at(path, error.message)]

    def _unknown_keys(self, path: JsonPath, error: ValidationError) -> list[Problem]:
        allowed = list(error.schema.get("properties", {}))
        # A stray key at the top level may belong one level down (`cases:` under `expect`).
        homes_of = _home_index(error.schema) if not path else {}
        out = []
        for key in error.instance:
            if key in allowed:
                continue
            homes = homes_of.get(str(key), [])
            hint = (
                f" (did you mean {' or '.join(f'`{h}.{key}`' for h in homes)}?"
                " It belongs under that section)"
                if homes
                else suggest(str(key), allowed) or f" (expected one of {', '.join(allowed)})"
            )
            message = f"unknown key '{shorten(str(key))}'{hint}"
            out.append(self._at((*path, key), message, key=True))
        return out

    def _alternatives(self, path: JsonPath, error: ValidationError) -> list[Problem]:
        branches = error.validator_value
        value = error.instance
        if all(_keys(b) == {"required"} for b in branches):
            return [self._exactly_one(path, error)]
        relevant = [
            i for i, b in enumerate(branches) if not _is_expr(b) and _accepts_type(b, value)
        ]
        # A `${{` that is not the whole value fails the one string branch too (a duration's
        # pattern): its words alone hid that one whole expression was the fix.
        spliced = isinstance(value, str) and "${{" in value and any(_is_expr(b) for b in branches)
        # A lone literal branch ('auto') would hide the others: describe them all instead.
        if len(relevant) == 1 and "const" not in _keys(branches[relevant[0]]) and not spliced:
            suberrors = [e for e in error.context or () if e.relative_schema_path[0] == relevant[0]]
            problems = [p for e in suberrors for p in self._translate(e)]
            if problems:
                return problems
        if spliced:
            return [
                self._at(
                    path,
                    f"expected {describe(error.schema)} or one whole ${{{{ }}}} expression,"
                    f" got {render_instance(value)}",
                )
            ]
        message = f"expected {describe(error.schema)}, got {render_instance(value)}"
        return [self._at(path, message + _no_expression(value))]

    def _exactly_one(self, path: JsonPath, error: ValidationError) -> Problem:
        keys = [str(k) for b in error.validator_value for k in _list(_required(b))]
        names = " or ".join(f"'{k}'" for k in keys)
        given = [k for k in keys if isinstance(error.instance, dict) and k in error.instance]
        if len(given) > 1:
            both = " and ".join(f"'{k}'" for k in given)
            # Point at whichever of them comes last in the file: the likely addition.
            last = max(given, key=lambda k: self.key_locations.get((*path, k), (0, 0)))
            return self._at((*path, last), f"{both} are both given; expected exactly one", key=True)
        return self._at(path, f"missing {names} (exactly one is required)")


# A field that fails on a `${{ }}` has no expression alternative (those that do are said
# above): `run.repeat: ${{ matrix.n }}` read "expected an integer >= 1 or 'auto'", and the
# reference's promise of expressions "in every section" seemed broken rather than the field.
_NO_EXPRESSION = " (this field takes no ${{ }} expression: it is read as written)"


def _no_expression(value: JsonValue) -> str:
    return _NO_EXPRESSION if isinstance(value, str) and "${{" in value else ""


_EXPECTED_KINDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "minItems",
    }
)


# ---------------------------------------------------------------- values of expressions


def _required(schema: JsonValue) -> JsonValue:
    resolved = _resolve(schema)
    return resolved.get("required") if isinstance(resolved, dict) else None


def subschema(path: JsonPath) -> JsonValue:
    """The part of the schema that governs `path` (None: nothing constrains it)."""
    node: JsonValue = load_schema()
    for key in path:
        node = _child(node, key)
        if node is None:
            return None
    return node


def _child(schema: JsonValue, key: str | int) -> JsonValue:
    schema = _resolve(schema)
    if not isinstance(schema, dict):
        return None
    found: list[JsonValue] = [
        child for branch in _list(schema.get("anyOf")) if (child := _child(branch, key)) is not None
    ]
    if isinstance(key, str):
        properties = schema.get("properties")
        if isinstance(properties, dict) and key in properties:
            found.append(properties[key])
        elif isinstance(schema.get("additionalProperties"), dict):
            found.append(schema["additionalProperties"])
    elif isinstance(key, int) and isinstance(schema.get("items"), dict):
        found.append(schema["items"])
    if not found:
        return None
    return found[0] if len(found) == 1 else {"anyOf": found}


def _literal_only(schema: JsonValue) -> JsonValue:
    """`schema` without its `${{ }}` alternatives: what an evaluated expression must be."""
    schema = _resolve(schema)
    if isinstance(schema, dict) and "anyOf" in schema:
        branches = [_literal_only(b) for b in _list(schema["anyOf"]) if not _is_expr(b)]
        return {**schema, "anyOf": branches} if branches else {}
    return schema


@functools.cache
def _value_validator(path: JsonPath) -> _Validator | None:
    schema = _value_schema(path)
    return None if schema is None else _validator_class()(schema)


@functools.cache
def _value_schema(path: JsonPath) -> JsonObject | None:
    sub = subschema(path)
    if sub is None:
        return None
    literal = _literal_only(sub)
    if not isinstance(literal, dict) or not literal:
        return None  # (a `true` schema, or only expressions: nothing to check)
    return {**literal, "$defs": _defs()}


def value_problems(path: JsonPath, value: JsonValue) -> list[tuple[JsonPath, str]]:
    """What the schema says of `value` at `path` (an evaluated `${{ }}`): (path, message) pairs."""
    schema = _value_schema(tuple(path))
    if schema is None or schemafast.valid(value, schema):
        return []
    validator = _value_validator(tuple(path))
    if validator is None:
        return []
    translator = _Translator({}, {})
    out: list[tuple[JsonPath, str]] = []
    meant = rate_meant(value) if tuple(path)[-1:] == ("rate",) else None
    hint = f" (did you mean '{meant}'?)" if meant else ""
    for error in validator.iter_errors(value):
        for problem in translator.translate(error):
            out.append(((*path, *(problem.path or ())), problem.message + hint))
    return out
