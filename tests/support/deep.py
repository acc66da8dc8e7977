"""A Python source nested deeper than this interpreter's parser reads."""

from __future__ import annotations

import sys


def too_deep() -> str:
    """`x = 1+1+...`, its BinOps nested past the AST's depth limit (3 x the recursion limit
    in 3.11), sized from the limit as it is now: a library a test process imports may raise
    it (hypothesis while it runs a test, torch's compiler to 2,000), and in the suite 3,000
    terms, too deep for a fresh interpreter, parsed."""
    return "x = " + "+".join(["1"] * (sys.getrecursionlimit() * 4)) + "\n"
