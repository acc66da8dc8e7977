"""`reprospec validate` of a valid spec needs no jsonschema (a fresh interpreter without it)."""

from __future__ import annotations

import sys

from tests.support.paths import ROOT


def test_validate_needs_no_jsonschema_for_a_valid_spec() -> None:
    import subprocess

    code = (
        "import sys\n"
        "from reprospec.spec.load import load_spec\n"
        "load_spec(sys.argv[1])\n"
        "assert 'jsonschema' not in sys.modules, 'jsonschema was imported'\n"
    )
    for spec in ("specs/intermittent.yaml", "specs/segfault.yaml", "specs/exception.yaml"):
        done = subprocess.run(
            [sys.executable, "-c", code, spec], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
