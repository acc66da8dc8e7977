"""The file names a failing program's output gives: what a copy of its workdir lacked."""

from __future__ import annotations

from pathlib import Path

from reprospec.capture.datafiles import named_in


def test_a_quoted_name_with_spaces_is_found_whole(tmp_path: Path) -> None:
    """coreutils and Python quote a name that holds spaces; the plain words found only
    `data.txt` of `my data.txt`."""
    text = (
        "cat: 'my data.txt': No such file or directory\n"
        'FileNotFoundError: [Errno 2] No such file or directory: "conf/run 1.yaml"\n'
    )
    found = named_in(text, tmp_path)
    assert str(tmp_path / "my data.txt") in found
    assert str(tmp_path / "conf/run 1.yaml") in found


def test_plain_words_with_a_dot_or_a_slash_are_names_and_others_are_not(tmp_path: Path) -> None:
    found = named_in(
        "cat: data.txt: No such file or directory\nerror: took ~1.5s, no more", tmp_path
    )
    assert str(tmp_path / "data.txt") in found
    assert not any(name.endswith(("error", "~1.5s", "took")) for name in found)


def test_an_apostrophe_before_a_quoted_name_does_not_pair_with_its_quote(tmp_path: Path) -> None:
    found = named_in("error: can't open 'my data.txt': it isn't there\n", tmp_path)
    assert str(tmp_path / "my data.txt") in found
