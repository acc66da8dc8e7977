"""The docs' example specs: every fenced yaml block of docs/*.md that is a whole spec.

The unit tests check each one is valid and plans; the functional ones run them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

DOCS = ROOT / "docs"
# A fenced block and its info string (`yaml`); a spec is a block with a top-level `reprospec:`.
FENCE = re.compile(r"^```(?P<info>[\w+-]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
_SPEC_KEY = re.compile(r"^reprospec\s*:", re.M)


@dataclass(frozen=True)
class Example:
    """One fenced yaml block of a doc that is a whole spec (it has a top-level `reprospec:`)."""

    doc: str
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def file_name(self) -> str:
        return f"{Path(self.doc).stem}-line{self.line}.yaml"

    @property
    def data(self) -> dict[str, Any]:
        loaded = yaml.safe_load(self.text)
        assert isinstance(loaded, dict), f"{self.id}: not a mapping"
        return loaded


def doc_examples() -> list[Example]:
    """Every spec example of docs/*.md, in order."""
    found = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match["info"] in ("yaml", "yml") and _SPEC_KEY.search(match["body"]):
                line = text.count("\n", 0, match.start("body")) + 1
                found.append(Example(path.name, line, match["body"]))
    return found


EXAMPLES = doc_examples()
COMMAND_EXAMPLES = [e for e in EXAMPLES if "workload" not in e.data]
WORKLOAD_EXAMPLES = [e for e in EXAMPLES if "workload" in e.data]
