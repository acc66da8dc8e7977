"""The bundle tests' public base is built from the Debian archive this machine's apt reads."""

from __future__ import annotations

from pathlib import Path

from tests.support.docker import DEFAULT_DEBIAN_MIRROR, apt_sources, debian_mirror

# /etc/apt/sources.list.d/debian.sources of these machines (Debian bookworm's deb822 form).
DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
"""


def test_the_archive_is_the_one_apt_reads_in_either_form() -> None:
    assert debian_mirror([DEB822.replace("deb.debian.org", "apt-cache.corp:3142")]) == (
        "http://apt-cache.corp:3142/debian"
    )
    one_line = (
        "# deb http://commented.out/debian bookworm main\n"
        "deb http://security.corp/debian-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.corp/debian/ bookworm main\n"
    )
    assert debian_mirror([one_line]) == "http://mirror.corp/debian"


def test_without_a_debian_source_it_is_deb_debian_org() -> None:
    assert debian_mirror([]) == DEFAULT_DEBIAN_MIRROR
    assert debian_mirror(["deb http://ports.ubuntu.com/ubuntu-ports jammy main\n"]) == (
        DEFAULT_DEBIAN_MIRROR
    )


def test_a_source_file_apt_passes_over_is_not_read(tmp_path: Path) -> None:
    # An old mirror kept as `debian.sources.save` (apt reads only *.list and *.sources)
    # came first by name and was taken.
    folder = tmp_path / "sources.list.d"
    folder.mkdir()
    (folder / "debian.list.save").write_text("deb http://old.corp/debian bookworm main\n")
    (folder / "debian.sources").write_text(DEB822)
    assert debian_mirror(apt_sources(tmp_path)) == "http://deb.debian.org/debian"


def test_a_stanza_apt_skips_is_skipped_too() -> None:
    disabled = (
        "Types: deb\nURIs: http://old-mirror.corp/debian\nSuites: bookworm\nEnabled: no\n\n"
        "Types: deb-src\nURIs: http://src.corp/debian\nSuites: bookworm\n\n"
        + DEB822.replace("deb.debian.org", "apt-cache.corp:3142")
    )
    assert debian_mirror([disabled]) == "http://apt-cache.corp:3142/debian"
