"""`reprospec plan --format json`, written cell by cell: the same text as the whole document."""

from __future__ import annotations

import json

import pytest

from reprospec.commands.plan import described, json_blocks
from reprospec.plan.attempt import first_attempts
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import expand
from tests.support.paths import ROOT


@pytest.mark.parametrize("count", [0, 1, 4])
def test_the_pieces_are_the_documents_text(count: int) -> None:
    spec = load_spec(ROOT / "specs" / "segfault-command.yaml")
    attempts = first_attempts(spec, expand(spec)[:count])
    whole = {"spec": spec.name, "cells": list(described(spec, attempts))}
    text = "".join(json_blocks(spec, attempts))
    assert text == json.dumps(whole, indent=2, default=str) + "\n"
    assert len(json.loads(text)["cells"]) == count
