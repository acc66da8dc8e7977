"""Bundles as archives: size limits, and archives that try to escape the folder they are unpacked
into."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.export import bundle
from tests.support.files import tar_archive, tar_member


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _fifo(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info, None


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([tar_member("b/../../evil")], "outside the bundle"),
        ([tar_member("/tmp/reprospec-evil")], "absolute path"),
        ([_link("b/passwd", "/etc/passwd", tarfile.SYMTYPE)], "a link"),
        ([_link("b/hard", "/etc/passwd", tarfile.LNKTYPE)], "a link"),
        ([_link("b/up", "..", tarfile.SYMTYPE), tar_member("b/up/evil")], "a link"),
        ([_fifo("b/pipe")], "not a file or a folder"),
        ([tar_member("b/twice"), tar_member("b/twice")], "given twice"),
        ([tar_member("b/" + "d/" * 60 + "deep")], "folders deep"),
    ],
)
def test_unsafe_archives_are_refused_and_write_nothing_outside(
    tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], message: str
) -> None:
    archive = tar_archive(tmp_path / "evil.tar.gz", *members)
    dest = tmp_path / "bundles"
    with pytest.raises(UsageError, match=message):
        bundle.unpack(archive, dest)
    assert not (tmp_path / "evil").exists()
    assert not Path("/tmp/reprospec-evil").exists()
    assert list(dest.iterdir()) == []  # the staging folder is gone too


def test_size_limits_hold_before_and_while_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tar_archive(
        tmp_path / "big.tar.gz", tar_member("b/one", b"a" * 600), tar_member("b/two", b"b" * 600)
    )
    monkeypatch.setattr(bundle, "MAX_FILE_BYTES", 500)
    with pytest.raises(UsageError, match="600 bytes"):
        bundle.unpack(archive, tmp_path / "bundles")
    monkeypatch.setattr(bundle, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", 1000)
    with pytest.raises(UsageError, match="more than 1000 bytes unpacked"):
        bundle.unpack(archive, tmp_path / "bundles")
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", 10_000)
    monkeypatch.setattr(bundle, "MAX_MEMBERS", 1)
    with pytest.raises(UsageError, match="more than 1 members"):
        bundle.unpack(archive, tmp_path / "bundles")


def test_an_absolute_workdir_points_into_a_tree_unpacked_under_a_relative_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spec whose workdir was absolute (every `amplified.yaml` is one) got the override
    # `environment.workdir=.reprospec/bundles/...`, relative to the spec's folder when read:
    # `reprospec run x.tar.gz` with the default `--out .reprospec` could never run it.
    from reprospec.spec.load import load_spec

    manifest = b'{"format": 1, "spec": "tree/specs/s.yaml", "workdir": "tree/app"}'
    spec = b"reprospec: 1\nname: s\nenvironment: {workdir: /gone/app}\ncommand: python m.py\n"
    archive = tar_archive(
        tmp_path / "s.tar.gz",
        tar_member("b/bundle.json", manifest),
        tar_member("b/tree/specs/s.yaml", spec),
        tar_member("b/tree/app/m.py", b"print(1)\n"),
    )
    monkeypatch.chdir(tmp_path)
    unpacked = bundle.unpack(archive, Path(".reprospec") / "bundles")
    # (a workdir that is not there is a located spec problem: SpecError)
    loaded = load_spec(str(unpacked.spec), unpacked.overrides)
    workdir = Path(str(loaded.document["environment"]["workdir"]))  # type: ignore[index,call-overload]
    assert workdir.is_absolute()
    assert workdir.resolve() == (tmp_path / unpacked.root / "tree" / "app").resolve()


def test_the_packed_reports_links_reach_the_logs_where_the_archive_packs_them() -> None:
    # The run folder's `cells/` is the archive's `logs/cells/`: report.md's "Full native
    # stacks" link pointed at no file; its first line names the packed spec; the spec block
    # (which its digest is of) is left as written.
    from reprospec.core.reportspec import find_marked_spec, marker_line
    from reprospec.report.paths import PathNames

    spec = "reprospec: 1\nname: s\ncommand: cat cells/x\n"
    text = (
        marker_line(spec, "s.yaml")
        + "\n# s\n\nFull native stacks: [cells/default/1/native-stacks.txt]"
        "(cells/default/1/native-stacks.txt)\n\n```yaml\n" + spec + "```\n"
    )
    packed = bundle._ReportNames(PathNames.for_bundle({}), "tree/s.yaml").data(text.encode())
    lines = packed.decode().splitlines()
    assert lines[0] == marker_line(spec, "tree/s.yaml")
    assert lines[3] == (
        "Full native stacks: [cells/default/1/native-stacks.txt]"
        "(logs/cells/default/1/native-stacks.txt)"
    )
    marked = find_marked_spec(packed.decode())
    assert marked is not None
    assert marked.text == spec
