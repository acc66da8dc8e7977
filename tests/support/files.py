"""Small folders of files a test's real program runs in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def written(folder: Path, files: Mapping[str, str]) -> Path:
    """`folder`, made, holding `files` (relative name -> text, folders made): a test's
    workdir, written in one statement."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder
