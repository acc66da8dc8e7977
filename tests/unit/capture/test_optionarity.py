"""How many values a script's argparse options take, read from its source (rv19 F6)."""

from __future__ import annotations

from pathlib import Path

from reprospec.capture.optionarity import MANY, option_arities, script_arities

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
    assert option_arities(SOURCE) == {
        "--batch-size": 1,
        "-b": 1,
        "--layers": MANY,
        "--tags": MANY,
        "--resume": 1,
        "--seed": 1,
        # The same in both parsers: one value either way.
        "--lr": 1,
        # Left out, to the words' own rule: a switch (no value), REMAINDER, a nargs or
        # keywords not written out, and --size, whose two parsers disagree (2, 1).
    }


def test_no_python_says_nothing() -> None:
    assert option_arities("def (:\n") == {}
    assert option_arities("x = 1\0") == {}
    # Nested deeper than the parser goes (rv20 F2: capture's internal error).
    assert option_arities("import argparse\nx = " + "+".join(["1"] * 3000) + "\n") == {}


def test_the_script_or_module_is_read_from_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "import argparse\nargparse.ArgumentParser().add_argument('--n')\n"
    )
    (tmp_path / "pkg" / "tool").mkdir(parents=True)
    (tmp_path / "pkg" / "tool" / "__main__.py").write_text(
        "import argparse\nargparse.ArgumentParser().add_argument('--k', nargs='+')\n"
    )
    assert script_arities("t.py", tmp_path) == {"--n": 1}
    assert script_arities("pkg.tool", tmp_path) == {"--k": MANY}
    assert script_arities("missing.py", tmp_path) == {}
    assert script_arities(None, tmp_path) == {}
