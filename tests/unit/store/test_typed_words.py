"""Where a typed command line's option is a word of its own: merge takes a shard's `-j`
and `--shard` out of the first run's line, and How to reproduce puts `--python` in
before a lone `--`, both as text (the user's quoting kept), both only where the place
starts a word that is not quoted, not joined to an escaped blank, and before any `--`."""

from __future__ import annotations

import pytest

from reprospec.report.markdown import _before_end_of_options
from reprospec.store.merge import _without_jobs, _without_shard


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("reprospec run s.yaml -j 4 -m a=1", "reprospec run s.yaml -m a=1"),
        ("reprospec run s.yaml --jobs=4", "reprospec run s.yaml"),
        ("reprospec run s.yaml -j4 --jobs 2", "reprospec run s.yaml"),
        # Cut as argparse takes it: `--job 4` ran at -j 4.
        ("reprospec run s.yaml --job 4 --jo=2 --j 1", "reprospec run s.yaml"),
        ("reprospec run s.yaml --jobsx 4", None),
        # The user's quoting is kept, as typed.
        ('reprospec run "my s.yaml" -j 4 -k "a b"', 'reprospec run "my s.yaml" -k "a b"'),
        # Inside a quoted word, or joined to an escaped blank: that word's text.
        ("reprospec run s.yaml --set 'env.X=-k -j 4 -l'", None),
        ('reprospec run s.yaml --set "env.X=-j 4"', None),
        ("reprospec run my\\ -j 4", None),
        # After a lone `--`, a program's own words.
        ("reprospec run s.yaml -- prog -j 4", None),
        # ... even where the match there is joined to an escaped blank.
        ("reprospec run s.yaml -- prog\\ -j 4", None),
        # A `--` that is not a word of its own is no end of options.
        ("reprospec run a\\ -- -j 4", "reprospec run a\\ --"),
        ("reprospec run '--' -j 4", None),
        # Not shell words: left as written.
        ("reprospec run 'unclosed -j 4", None),
    ],
)
def test_merge_takes_out_only_a_jobs_option_of_its_own(line: str, expected: str | None) -> None:
    assert _without_jobs(line) == (line if expected is None else expected)


def test_merge_takes_out_a_shard_of_its_own_only() -> None:
    assert _without_shard("reprospec run s.yaml --shard 1/2 -j 2") == "reprospec run s.yaml -j 2"
    assert _without_shard("reprospec run s.yaml --shard=2/2") == "reprospec run s.yaml"
    quoted = "reprospec run s.yaml --set 'env.X=--shard 1/2'"
    assert _without_shard(quoted) == quoted
    after = "reprospec run s.yaml -- prog --shard 1/2"
    assert _without_shard(after) == after
    # `--shar 1/2` ran as `--shard 1/2`: kept, the merged run's rerun line ran one shard.
    assert _without_shard("reprospec run s.yaml --shar 1/2") == "reprospec run s.yaml"
    assert _without_shard("reprospec run s.yaml --sh=2/2 -j 2") == "reprospec run s.yaml -j 2"
    kept = "reprospec run s.yaml --set run.repeat=2"  # `--s` is no shard
    assert _without_shard(kept) == kept


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("reprospec run s.yaml", "reprospec run s.yaml --python /p"),
        (
            "pytest --reprospec s.yaml -- tests/x",
            "pytest --reprospec s.yaml --python /p -- tests/x",
        ),
        ("-- a", "--python /p -- a"),
        # A `--` quoted, joined to an escaped blank or inside another word is no end of options.
        ("pytest -k '--' x", "pytest -k '--' x --python /p"),
        ('pytest -k "a -- b"', 'pytest -k "a -- b" --python /p'),
        ("pytest a\\ -- b", "pytest a\\ -- b --python /p"),
        ("pytest a--b", "pytest a--b --python /p"),
        # The first lone one, after a quoted one.
        ("pytest '--' -- b", "pytest '--' --python /p -- b"),
        # Not shell words: at the end.
        ("pytest 'unclosed -- b", "pytest 'unclosed -- b --python /p"),
    ],
)
def test_how_to_reproduce_puts_options_before_the_first_lone_end_of_options(
    line: str, expected: str
) -> None:
    assert _before_end_of_options(line, " --python /p") == expected
    assert _before_end_of_options(line, "") == line
