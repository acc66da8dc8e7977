"""The engine variables a spec reads (`${{ env.NAME }}`), as a run read them: kept in its
environment record from its start (`FIELD`), so that `run --resume` refuses to go on
under other values and `compare` tells two runs of one spec with other values apart.

Both were blind to them: a run begun with `CODE=0` and resumed in a shell with `CODE=3`
ran `exit 0` and `exit 3` in one cell and read as flaky, and `compare` of those two
settings said "same environment". The values are the spec's inputs as much as its text.

A variable the spec names in `environment.public_env` is kept by value (outputs show it
anyway); any other is a secret by redact.py's rule and is kept only as a digest under the
store's key (store/digests.py), so a change is told without the value. An unset variable is
kept as null: unset and set are two programs too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.redact import Redactor, env_names_read, public_env
from reprospec.store.digests import RunKey, recorded

# The environment record's field (its name must not look secret: redact.py would mask it).
FIELD = "spec_variables"


def record(
    document: Mapping[str, JsonValue],
    key: RunKey,
    environ: Mapping[str, str] | None = None,
) -> JsonObject | None:
    """`{"values": {NAME: value or null}, "digests": {"store": id, "of": [[NAME, d]]}}` of
    the variables `document` reads in `environ` (this process's by default); None where it
    reads none. A public value the run's outputs would mask anyway (it holds a secret) is
    digested too, under `key` (the run's store key, read once for all it digests)."""
    environ = os.environ if environ is None else environ
    names = list(dict.fromkeys(env_names_read(document)))
    if not names:
        return None
    public = public_env(document)
    redactor = Redactor.for_spec(document, environ)
    values: dict[str, JsonValue] = {}
    secret: list[str] = []
    for name in names:
        value = environ.get(name)
        if value is None:
            values[name] = None
        elif name in public and redactor.text(value) == value:
            values[name] = value
        else:
            secret.append(name)
    result: JsonObject = {"values": values}
    if secret:
        from reprospec.store.digests import variable_digests

        try:
            result["digests"] = variable_digests(key.get(), environ, secret)
        except OSError:
            # A store that cannot keep a key: the secret's change cannot be told.
            result["digests"] = {"store": None, "of": [], "unknown": list[JsonValue](secret)}
    return result


@frozen
class ReadAs:
    """How a run read one variable its spec reads: by `value` (a public one, `value` its
    text), a `secret` that was set (its value never kept: `value` is None), or `unset`."""

    name: str
    kind: Literal["value", "secret", "unset"]
    value: str | None = None


def read_as(field: JsonValue) -> dict[str, ReadAs]:
    """name -> how the run read it, of the variables a run's record (`FIELD`) holds: what a
    bundle's README tells its recipient to export (`CODE=3`, where the bare name let `CODE=0`
    rerun another program). {} without a record (a run made before runs kept them). A
    secret's digest is not given out: only that it was set."""
    if not isinstance(field, Mapping):
        return {}
    read: dict[str, ReadAs] = {}
    for name, (kind, value) in _states(field)[0].items():
        if kind == "value":
            read[name] = ReadAs(name, "value", value)
        else:
            read[name] = ReadAs(name, "unset" if kind == "unset" else "secret")
    return read


def public_values(field: JsonValue) -> dict[str, str | None]:
    """name -> value of the public variables a run's record holds (`read_as`'s `value`s),
    and None of each it read unset: what a report's repro note may say the run read (a
    secret's value never); "export it first" of an unset one had a reader set it."""
    return {
        name: read.value
        for name, read in read_as(field).items()
        if read.kind == "unset" or (read.kind == "value" and read.value is not None)
    }


def changes(before: JsonValue, after: JsonValue) -> list[tuple[str, str | None, str | None, str]]:
    """(name, value before, value after, how) of each variable both records name whose
    value differs: `changed` (a secret's values None both), `unset -> set`, `set -> unset`,
    or, for a secret of two stores' keys, that whether it changed is unknown. [] where
    either record is missing (a run made before runs kept them)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return []
    state_a, key_a = _states(before)
    state_b, key_b = _states(after)
    rows: list[tuple[str, str | None, str | None, str]] = []
    for name, a in state_a.items():
        if name not in state_b:
            continue
        b = state_b[name]
        # Two secrets the stores could not digest (None) are alike only on paper: whether
        # the value changed is unknown, and said so.
        if b == a and a != ("secret", None):
            continue
        (kind_a, value_a), (kind_b, value_b) = a, b
        if kind_a == "unset" or kind_b == "unset":
            shown_a = value_a if kind_a == "value" else None
            shown_b = value_b if kind_b == "value" else None
            rows.append(
                (name, shown_a, shown_b, "unset -> set" if kind_a == "unset" else "set -> unset")
            )
        elif kind_a == kind_b == "value":
            rows.append((name, value_a, value_b, "changed"))
        elif kind_a == kind_b == "secret" and key_a is not None and key_a == key_b:
            rows.append((name, None, None, "changed"))
        else:
            rows.append((name, None, None, "set in both; whether it changed is unknown"))
    return rows


def _states(field: Mapping[str, JsonValue]) -> tuple[dict[str, tuple[str, str | None]], str | None]:
    """name -> (kind, value) of one record: ("unset", None), ("value", v) or ("secret",
    digest); and the digests' key id."""
    states: dict[str, tuple[str, str | None]] = {}
    values = field.get("values")
    if isinstance(values, Mapping):
        for name, value in values.items():
            states[str(name)] = ("unset", None) if value is None else ("value", str(value))
    key, digests = recorded(field.get("digests"))
    for name, digest in digests.items():
        states[name] = ("secret", digest)
    digested = field.get("digests")
    unknown = digested.get("unknown") if isinstance(digested, Mapping) else None
    for item in unknown if isinstance(unknown, list) else []:
        states[str(item)] = ("secret", None)
    return states, key


__all__ = ["FIELD", "ReadAs", "changes", "read_as", "record"]
