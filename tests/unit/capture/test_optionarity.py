"""How many values a script's argparse options take, read from its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.capture.optionarity import MANY, ParserOptions, parser_options, script_options
from tests.support.deep import too_deep
from tests.support.files import written

SOURCE = """
import argparse
p = argparse.ArgumentParser()
p.add_argument("--batch-size", "-b", type=int, default=8)
p.add_argument("--layers", type=int, nargs="+")
p.add_argument("--tags", nargs="*")
p.add_argument("--size", type=int, nargs=2)
p.add_argument("--resume", nargs="?")
p.add_argument("--seed", action="append", type=int)
p.add_argument("--fp16", action="store_true")
p.add_argument("--rest", nargs=argparse.REMAINDER)
p.add_argument("--level", nargs=LEVELS)
p.add_argument("--opts", **OPTIONS)
p.add_argument("epochs", type=int)
sub = p.add_subparsers().add_parser("eval")
sub.add_argument("--size", type=int)
sub.add_argument("--lr", type=float)
p.add_argument("--lr", type=float)
"""


def test_each_option_has_the_values_its_add_argument_call_says() -> None:
    assert parser_options(SOURCE).arities == {
        "--batch-size": 1,
        "-b": 1,
        "--layers": MANY,
        "--tags": MANY,
        "--resume": 1,
        "--seed": 1,
        # A switch takes none (`--amp 5` was the axis `amp: [5]`).
        "--fp16": 0,
        # The same in both parsers: one value either way.
        "--lr": 1,
        # Left out, to the words' own rule: REMAINDER, a nargs or keywords not written
        # out, and --size, whose two parsers disagree (2, 1).
    }
    assert parser_options(SOURCE).unknown == {"--rest", "--level", "--opts", "--size"}


def test_an_action_that_takes_no_value_is_a_switch_of_none() -> None:
    # These were left out as unknown, so `--amp 5` (5 the positional epochs)
    # became the axis `amp: [5]` and widening it changed the epoch count.
    source = """
import argparse
from argparse import BooleanOptionalAction
p = argparse.ArgumentParser()
p.add_argument("--amp", action="store_true")
p.add_argument("--no-cache", action="store_false")
p.add_argument("--fast", action="store_const", const=2)
p.add_argument("--hook", action="append_const", const=1)
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("--compile", action=argparse.BooleanOptionalAction)
p.add_argument("--pin", action=BooleanOptionalAction, default=True)
p.add_argument("--custom", action=Custom)
"""
    options = parser_options(source)
    assert options.arities == {
        "--amp": 0,
        "--no-cache": 0,
        "--fast": 0,
        "--hook": 0,
        "-v": 0,
        "--verbose": 0,
        "--compile": 0,
        "--no-compile": 0,
        "--pin": 0,
        "--no-pin": 0,
    }
    assert options.unknown == {"--custom"}  # an action class of its own: it may take any


def test_a_unique_prefix_of_a_long_option_is_that_option() -> None:
    # argparse's allow_abbrev (its default) reads `--batch 32 5` as --batch-size
    # 32 and the positional 5; looked up by its exact word, it was the axis `[32 5]`.
    options = parser_options(SOURCE)
    assert options.arity("--batch") == 1
    assert options.arity("--batch-s") == 1
    assert options.arity("--lay") == MANY
    assert options.arity("--fp") == 0
    assert options.arity("--r") is None  # --resume and --rest: ambiguous, argparse refuses
    assert options.arity("--si") is None  # --size, of two arities: unknown as itself
    assert options.arity("--nope") is None
    assert options.arity("-b") == 1
    assert options.arity("-bat") is None  # a single dash: no long option's prefix


@pytest.mark.parametrize(
    "parser",
    [
        "argparse.ArgumentParser(allow_abbrev=False)",
        "argparse.ArgumentParser(allow_abbrev=ABBREV)",
        "argparse.ArgumentParser(**SETTINGS)",
    ],
)
def test_a_parser_that_may_turn_abbreviations_off_reads_no_prefix(parser: str) -> None:
    source = f"import argparse\np = {parser}\np.add_argument('--batch-size', type=int)\n"
    options = parser_options(source)
    assert options.arity("--batch-size") == 1
    assert options.arity("--batch") is None


def test_abbreviations_are_off_where_a_parser_or_an_option_is_not_written_out() -> None:
    assigned = "import argparse\np = argparse.ArgumentParser()\np.allow_abbrev = False\n"
    names = "p = argparse.ArgumentParser()\np.add_argument(*NAMES)\n"
    for source in (assigned, names):
        options = parser_options(source + "p.add_argument('--batch-size', type=int)\n")
        assert options.arity("--batch-size") == 1
        assert options.arity("--batch") is None
    on = "p = argparse.ArgumentParser(allow_abbrev=True)\np.add_argument('--batch-size')\n"
    assert parser_options(on).arity("--batch") == 1


def test_no_python_says_nothing() -> None:
    assert parser_options("def (:\n") == ParserOptions()
    assert parser_options("x = 1\0") == ParserOptions()
    # Nested deeper than the parser goes (capture's internal error).
    assert parser_options(f"import argparse\n{too_deep()}") == ParserOptions()


def test_the_script_or_module_is_read_from_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "import argparse\nargparse.ArgumentParser().add_argument('--n')\n"
    )
    (tmp_path / "pkg" / "tool").mkdir(parents=True)
    (tmp_path / "pkg" / "tool" / "__main__.py").write_text(
        "import argparse\nargparse.ArgumentParser().add_argument('--k', nargs='+')\n"
    )
    assert script_options("t.py", tmp_path).arities == {"--n": 1}
    assert script_options("pkg.tool", tmp_path).arities == {"--k": MANY}
    assert script_options("missing.py", tmp_path) == ParserOptions()
    assert script_options(None, tmp_path) == ParserOptions()


def test_a_parser_built_in_a_module_the_script_imports_is_read(tmp_path: Path) -> None:
    """note47: `from config import get_parser` left `--bs 32 5` to the words' rule, which
    read the positional 5 as a second value of `--bs`."""
    written(
        tmp_path,
        {
            "train.py": "from config import get_parser\nargs = get_parser().parse_args()\n",
            "config.py": "import argparse\nfrom util import seed\n\n\ndef get_parser():\n"
            "    p = argparse.ArgumentParser()\n    p.add_argument('--bs', type=int)\n"
            "    p.add_argument('--dims', nargs='+')\n    p.add_argument('epochs')\n"
            "    return p\n",
            "util.py": "import argparse\nq = argparse.ArgumentParser(allow_abbrev=False)\n"
            "q.add_argument('--dims', nargs=2)\nseed = 0\n",
        },
    )
    options = script_options("train.py", tmp_path)
    assert options.arities == {"--bs": 1}
    # Two modules' parsers that disagree: unknown; one that turns prefixes off: off.
    assert options.unknown == {"--dims"}
    assert options.arity("--b") is None
    # Python that does not parse among them is passed over.
    (tmp_path / "util.py").write_text("def (:\n")
    assert script_options("train.py", tmp_path).arities == {"--bs": 1, "--dims": MANY}
    assert script_options("train.py", tmp_path).arity("--b") == 1
