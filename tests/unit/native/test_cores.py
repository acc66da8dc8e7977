"""Where an attempt's cores are looked for: a core pattern's files, as glob.glob finds them."""

from __future__ import annotations

import glob
from pathlib import Path

from reprospec.native.cores import _matches


def test_a_pattern_without_a_wildcard_is_found_as_glob_finds_it(tmp_path: Path) -> None:
    (tmp_path / "core").write_bytes(b"")
    (tmp_path / "core.12").write_bytes(b"")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    weird = tmp_path / "a[b]"
    weird.mkdir()
    (weird / "core").write_bytes(b"")
    for pattern in (
        f"{tmp_path}/core",
        f"{tmp_path}/missing",
        f"{tmp_path}/dangling",
        f"{tmp_path}/core.*",
        f"{glob.escape(str(weird))}/core",
    ):
        assert sorted(_matches(pattern)) == sorted(glob.glob(pattern)), pattern  # noqa: PTH207
    assert _matches(f"{tmp_path}/core") == [f"{tmp_path}/core"]
    assert _matches(f"{glob.escape(str(weird))}/core") == [f"{weird}/core"]
