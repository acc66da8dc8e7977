"""Importing the schema module does not import jsonschema (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_schema_and_package_does_not_import_jsonschema() -> None:
    code = (
        "import sys, reprospec, reprospec.spec.schema, reprospec.spec.load, reprospec.spec.matrix, "
        "reprospec.plan.attempt;"
        "print('jsonschema' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
