"""The command line a run records, made to be shown to others: this machine's options out."""

from __future__ import annotations

from reprospec.core.runoptions import without_options

LOCAL = ("--out", "--format", "--python")


def test_local_options_cut_as_argparse_takes_them_are_left_out_where_asked() -> None:
    words = ["run", "s.yaml", "--ou", "/home/me/o", "--form=md", "--keep-c", "-j", "1"]
    assert without_options(words, LOCAL, ("--keep-cores",), cut=True) == [
        "run",
        "s.yaml",
        "-j",
        "1",
    ]
    # Whole, as ever; cut, only where the reader took abbreviations (pytest takes none).
    assert without_options(["--out", "x", "a"], LOCAL) == ["a"]
    assert without_options(["--ou", "x", "a"], LOCAL) == ["--ou", "x", "a"]
    # `--` alone, `-o`, and a word no option begins are no local option.
    kept = ["--", "-o", "x", "--outx", "--set", "a=b"]
    assert without_options(kept, LOCAL, cut=True) == kept


def test_a_word_is_an_option_whole_or_cut_as_argparse_takes_it() -> None:
    from reprospec.core.runoptions import typed_as

    assert typed_as("--shard", "--shard")
    assert typed_as("--shar", "--shard")
    assert typed_as("--se", "--set")
    assert not typed_as("--", "--set")  # the end of options
    assert not typed_as("-s", "--set")
    assert not typed_as("--setx", "--set")
    assert not typed_as("-m", "--matrix")  # -m is its own short option, read as such


def test_no_run_option_begins_another_as_typed_as_assumes() -> None:
    """`typed_as` takes a word that begins an option for that option: argparse took the cut
    only where it named one. An option that began another (`--out` and an `--out-format`)
    would make `--out` typed as `--out-format` too, and the recorded line lose the wrong one."""
    from reprospec.cli import _verbs, build_parser

    run = _verbs(build_parser("run"))["run"]
    options = sorted({word for action in run._actions for word in action.option_strings})
    longs = [word for word in options if word.startswith("--")]
    assert {"--shard", "--set", "--jobs", "--matrix", "--out"} <= set(longs)
    begins = [(a, b) for a in longs for b in longs if a != b and b.startswith(a)]
    assert begins == [], begins
