#!/usr/bin/env python3
"""Print reprospec's import graph; fail on a cycle or on a stage importing a later stage.

    python scripts/import_graph.py            # the graph by stage, then the verdict
    python scripts/import_graph.py --quiet    # only problems

Stages follow the pipeline (docs/ARCHITECTURE.md): a module may import its own
stage and earlier ones, never a later one. Imports inside functions count (they
are dependencies all the same); imports under `if TYPE_CHECKING:` count for the
stage rule but not for cycles (they never run). Exit 1 on any problem.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reprospec"

# The stages in pipeline order: a module's stage is its folder under reprospec/ (or, for the
# few modules at the top, its own name). A new module's folder is its stage; a new folder must
# be added here, or the check fails.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, (f"reprospec.{name}",))
    for name in (
        # The child side (run in the target interpreter) and the error classes: import nothing.
        "harness", "stackdump", "errors",
        # Frozen values, units, the vocabulary: what every stage may use.
        "core",
        "spec", "plan", "native", "process", "environment", "venvs", "runners",
        "outcome", "store", "report", "doctor", "pipeline", "export",
        # The Python API: everything that drives the engine many times goes through it.
        "api",
        "isolation", "bisect", "slurm",
        "pytest_plugin", "commands", "cli", "__main__",
    )
)
STAGE_NAMES = [name for name, _ in STAGES]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str | None:
    best: tuple[int, str] | None = None
    for stage, prefixes in STAGES:
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), stage)
    return best[1] if best else None


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path, known: set[str]) -> Iterator[tuple[str, bool]]:
    """(imported reprospec module, whether it is a module-level run-time import) in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = _type_checking_lines(tree)
    top_level = {id(node) for node in tree.body}
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from reprospec import spec` imports the module reprospec.spec.load.
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        eager = id(node) in top_level and node.lineno not in typing_only
        for name in names:
            if not name.startswith("reprospec"):
                continue
            while name not in known and "." in name:
                name = name.rpartition(".")[0]
            if name in known and name != here:
                yield name, eager


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(every import, module-level run-time imports) per module of the engine package."""
    files = sorted(p for p in PACKAGE.rglob("*.py") if "/harness/" not in p.as_posix())
    known = {module_name(p) for p in files} | {"reprospec.harness"}
    every: dict[str, set[str]] = {module_name(p): set() for p in files}
    eager: dict[str, set[str]] = {module_name(p): set() for p in files}
    for path in files:
        here = module_name(path)
        for name, at_import in imports_of(path, known):
            every[here].add(name)
            if at_import:
                eager[here].add(name)
    return every, eager


def cycles(top: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles among module-level run-time imports (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(top.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            part = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                part.append(item)
                if item == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    sys.setrecursionlimit(10000)
    for node in sorted(top):
        if node not in index:
            visit(node)
    return found


def problems() -> tuple[list[str], dict[str, set[str]]]:
    every, top = graph()
    out: list[str] = []
    for module in sorted(every):
        if module == "reprospec":
            continue  # the package itself: __version__ and the lazy API re-exports
        stage = stage_of(module)
        if stage is None:
            out.append(f"{module}: no stage assigned (add it to STAGES in scripts/import_graph.py)")
            continue
        for dep in sorted(every[module]):
            dep_stage = stage_of(dep)
            if dep == "reprospec" or dep_stage is None:
                continue
            if STAGE_NAMES.index(dep_stage) > STAGE_NAMES.index(stage):
                out.append(f"{module} ({stage}) imports {dep} ({dep_stage}): a later stage")
    for cycle in cycles(top):
        out.append("import cycle: " + " -> ".join(cycle))
    return out, every


def main(argv: list[str]) -> int:
    found, every = problems()
    if "--quiet" not in argv:
        for stage in STAGE_NAMES:
            members = sorted(m for m in every if stage_of(m) == stage)
            print(f"[{stage}]")
            for module in members:
                deps = ", ".join(d.removeprefix("reprospec.") for d in sorted(every[module]))
                print(f"  {module.removeprefix('reprospec.')} -> {deps or '-'}")
    for line in found:
        print(f"problem: {line}")
    print(f"{len(every)} modules, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
