"""Every example spec in specs/ is valid against the shipped schema."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.support.cli import ROOT, SPECS

EXAMPLES = sorted(p.name for p in SPECS.glob("*.yaml"))


SCHEMA = json.loads((ROOT / "schemas" / "reprospec.schema.json").read_text())


def test_the_schema_in_schemas_is_the_one_the_package_ships() -> None:
    shipped = ROOT / "reprospec" / "data" / "reprospec.schema.json"
    assert shipped.read_bytes() == (ROOT / "schemas" / "reprospec.schema.json").read_bytes()


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_validates_against_the_json_schema(name: str) -> None:
    document = yaml.safe_load((SPECS / name).read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
