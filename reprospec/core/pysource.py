"""What "not Python the host's interpreter can read" is, for every reader of a program's source.

The engine reads a program's Python with `ast` (its imports, its argparse options, what
minimize may cut) and never runs it to do so. A source `ast.parse` refuses raises one of
several errors: a syntax error; a NUL byte (ValueError); nesting deeper than the parser
goes (`x = 1+1+...` of 3000 terms: RecursionError, or MemoryError on some builds), which
Python itself refuses as it compiles the file. Each is the program's own failure to be
judged when it runs, never the engine's: caught where a reader parses, as this one tuple.
"""

from __future__ import annotations

UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
