"""What a Python program imports, read with `ast` (never run): the one reader of imports.

Three readers of the same thing had three rules for a source they could not read: the
workdir's files (`workfiles.local_imports`) and materialize's runner packages took it as
importing nothing, a `-c` program as importing everything, the preload hint as not
importing torch. A materialized image then dropped torch for a program whose `import torch`
sat in a file over the parse limit, or in one the host's Python could not parse (a 3.12
`type` statement under 3.11). So the reader says `None`, "not read", and each caller says
what that means for it: no local module to follow, every runner package kept, no hint.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.pysource import UNREADABLE
from reprospec.plan.shellwords import MAX_PARSE_BYTES

# The calls that import a module named at run time: `__import__("torch")`,
# `importlib.import_module(name)`. Looked for only where the source names them, since the
# whole tree's walk (expressions too) is ten times the import statements' (see below).
_DYNAMIC = ("__import__", "import_module")


@frozen
class Imports:
    """The modules a source imports, absolute, and whether it imports others by a run-time
    name (`__import__`, `importlib.import_module`): those are not among `modules`."""

    modules: tuple[str, ...]
    dynamic: bool = False

    @property
    def top(self) -> frozenset[str]:
        """The top-level packages of `modules` (`torch` of `torch.nn.functional`)."""
        return frozenset(name.split(".", 1)[0] for name in self.modules)


def read_imports(path: Path) -> Imports | None:
    """What the Python file at `path` imports (its relative imports resolved against its
    folders), or None where it could not be read: missing, over MAX_PARSE_BYTES (the
    shell reader's limit), not Python to the host's interpreter (a SyntaxError, a NUL byte)."""
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return None
        source = path.read_bytes()
    except OSError:
        return None
    return parse_imports(source, path)


def parse_imports(source: str | bytes, path: Path | None = None) -> Imports | None:
    """What `source` imports, or None where it is not Python to the host's interpreter.

    A relative import is resolved against `path`'s folders; with no path (a `-c` program, a
    candidate's text) it is left out: it names the program's own modules, never a package.
    """
    if not _names(source, "import"):
        return Imports(())  # a module of constants, a config read as Python: no parse
    try:
        tree = ast.parse(source, filename=str(path) if path else "<string>")
    except UNREADABLE:
        return None
    names: list[str] = []
    for node in _import_statements(tree.body):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif node.level:
            if path is not None:
                names.extend(_relative_names(path, node))
        elif node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    dynamic = any(_names(source, word) for word in _DYNAMIC) and _calls_import(tree)
    return Imports(tuple(dict.fromkeys(names)), dynamic)


def _names(source: str | bytes, word: str) -> bool:
    """Whether `word` is in `source`'s text (bytes compared as bytes: no decoding)."""
    if isinstance(source, bytes):
        return word.encode() in source
    return word in source


def _calls_import(tree: ast.AST) -> bool:
    """Whether `tree` calls `__import__` or an `import_module`, by any name it is reached by."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in _DYNAMIC:
                return True
    return False


def _import_statements(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of a module, at any depth (in a function, an `if`, a `try`).

    An import is a statement, and statements are only in other statements' bodies (an
    expression holds none): walking those alone reads a tenth of the nodes `ast.walk`
    does, the rest of a run's reading of the program's files (`program_files`, before
    every run) took about half as long as the parse.
    """
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                stack.extend(reversed(inner))


def _relative_names(path: Path, node: ast.ImportFrom) -> list[str]:
    # `from . import x` in pkg/mod.py: pkg.x; only the last parts matter to module_files,
    # so the package path is taken from the file's folders.
    folder = path.parent
    for _ in range(node.level - 1):
        folder = folder.parent
    parts: list[str] = []
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    base = ".".join([*parts, node.module] if node.module else parts)
    if not base:
        return []
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]
