"""Small folders of files a test's real program runs in, and hand-made tar archives (a
bundle's, damaged or foreign, for the refusals of `reprospec run x.tar.gz`)."""

from __future__ import annotations

import io
import tarfile
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


def tar_archive(path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    """`path`, a .tar.gz of `members` as given (a member's data None: no data, as a link's
    or a folder's); a member's size is its data's."""
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tar_member(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    """A regular file `name` holding `data`, for `tar_archive`."""
    return tarfile.TarInfo(name), data
