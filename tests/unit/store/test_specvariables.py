"""The variables a spec reads, kept as a run read them: a public one by value, a secret by
its digest under the store's key, an unset one as null; `compare` tells their changes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprospec.core.jsontypes import JsonObject
from reprospec.store.compare import compare
from reprospec.store.digests import RunKey
from reprospec.store.specvariables import FIELD, ReadAs, changes, read_as, record
from tests.support.runs import error_run

SPEC: JsonObject = {
    "reprospec": 1,
    "name": "s",
    "command": "sh -c 'exit ${{ env.CODE }}; ${{ env.API_TOKEN }} ${{ env.GONE }}'",
    "environment": {"public_env": ["CODE", "GONE"]},
}


def test_a_public_value_is_kept_a_secret_only_digested_an_unset_one_null(tmp_path: Path) -> None:
    kept = record(SPEC, RunKey(tmp_path), {"CODE": "0", "API_TOKEN": "tok-1a2b3c"})
    assert kept is not None
    assert kept["values"] == {"CODE": "0", "GONE": None}
    assert "tok-1a2b3c" not in str(kept)  # the secret's value is never kept
    assert record({"reprospec": 1, "name": "s", "command": "true"}, RunKey(tmp_path)) is None


def test_read_as_gives_a_public_value_and_of_a_secret_only_that_it_was_set(
    tmp_path: Path,
) -> None:
    # What a bundle's README tells a recipient to export.
    kept = record(SPEC, RunKey(tmp_path), {"CODE": "3", "API_TOKEN": "tok-1a2b3c"})
    assert read_as(kept) == {
        "CODE": ReadAs("CODE", "value", "3"),
        "GONE": ReadAs("GONE", "unset"),
        "API_TOKEN": ReadAs("API_TOKEN", "secret"),
    }
    assert read_as(None) == {}  # a run made before runs kept them


def test_changes_name_each_variable_with_both_values_a_secret_without(tmp_path: Path) -> None:
    began = record(SPEC, RunKey(tmp_path), {"CODE": "0", "API_TOKEN": "tok-1a2b3c"})
    assert (
        changes(began, record(SPEC, RunKey(tmp_path), {"CODE": "0", "API_TOKEN": "tok-1a2b3c"}))
        == []
    )
    now = record(SPEC, RunKey(tmp_path), {"CODE": "3", "API_TOKEN": "tok-9z8y7x", "GONE": "1"})
    assert changes(began, now) == [
        ("CODE", "0", "3", "changed"),
        ("GONE", None, "1", "unset -> set"),
        ("API_TOKEN", None, None, "changed"),
    ]
    assert changes(now, record(SPEC, RunKey(tmp_path), {"CODE": "3"}))[-1] == (
        "API_TOKEN",
        None,
        None,
        "set -> unset",
    )
    # Another store's key: a secret's digests cannot be set side by side, and it says so.
    elsewhere = record(SPEC, RunKey(tmp_path / "b"), {"CODE": "0", "API_TOKEN": "tok-1a2b3c"})
    assert changes(began, elsewhere) == [
        ("API_TOKEN", None, None, "set in both; whether it changed is unknown")
    ]
    assert changes(None, now) == []  # a run made before runs kept them


def test_two_secrets_no_store_could_digest_are_told_unknown_not_alike(tmp_path: Path) -> None:
    # Both held as ("secret", None), they compared equal, and a resume went on
    # without the row that says whether the secret changed is unknown.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # a store that cannot keep a key under it
    began = record(SPEC, RunKey(blocked), {"CODE": "0", "API_TOKEN": "tok-1a2b3c"})
    now = record(SPEC, RunKey(blocked), {"CODE": "0", "API_TOKEN": "tok-9z8y7x"})
    assert began is not None
    assert began["digests"] == {"store": None, "of": [], "unknown": ["API_TOKEN"]}
    assert changes(began, now) == [
        ("API_TOKEN", None, None, "set in both; whether it changed is unknown")
    ]


def test_compare_tells_the_spec_variables_that_differ(tmp_path: Path) -> None:
    # CODE=0 then CODE=3 ran `exit 0` and `exit 3`; compare said "same environment".
    run = error_run()
    a = replace(
        run, environment={**run.environment, FIELD: record(SPEC, RunKey(tmp_path), {"CODE": "0"})}
    )
    b = replace(
        run,
        run_id="b",
        environment={**run.environment, FIELD: record(SPEC, RunKey(tmp_path), {"CODE": "3"})},
    )
    found = compare(a, b)
    assert found["variables"] == [
        {"name": "CODE", "a": "0", "b": "3", "change": "changed", "cells": []}
    ]
    assert found["environment"] == []  # told once, as a variable, not as a field too
    assert compare(a, replace(a, run_id="b"))["variables"] == []
