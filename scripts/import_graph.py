#!/usr/bin/env python3
"""Print reprospec's import graph; fail on a cycle or on a stage importing a later stage.

    python scripts/import_graph.py            # the graph by stage, then the verdict
    python scripts/import_graph.py --quiet    # only problems

Stages follow the pipeline (docs/ARCHITECTURE.md): a module may import its own
stage and earlier ones, never a later one. Every import counts, for the stage rule
and for cycles alike: inside functions, and under `if TYPE_CHECKING:` too. A cycle
through a deferred or a typing-only import still makes two modules that can only be
read, changed and tested together; break it with a Protocol, or by moving the shared
type to a module both import.

The harness (reprospec/harness/: the `reprospec_harness` package and
reprospec_forkserver.py, run in the target interpreter) imports itself by its own
top-level names and relatively, and nothing of the engine: it is checked as a graph of
its own, for cycles and for engine imports. Exit 1 on any problem.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reprospec"
HARNESS = PACKAGE / "harness"
# The harness's own top-level names (its folder is on the child's PYTHONPATH).
HARNESS_NAMES = ("reprospec_harness", "reprospec_forkserver")

# The stages in pipeline order: a module's stage is its folder under reprospec/ (or, for the
# few modules at the top, its own name). A new module's folder is its stage; a new folder must
# be added here, or the check fails.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, (f"reprospec.{name}",))
    for name in (
        # The child side (run in the target interpreter) and the error classes: import nothing.
        "harness",
        "stackdump",
        "errors",
        # Frozen values, units, the vocabulary: what every stage may use.
        "core",
        "spec",
        "plan",
        "native",
        "process",
        # environment.perturb applied to an attempt (the runners use it).
        "perturb",
        "environment",
        "venvs",
        "runners",
        "outcome",
        "store",
        "report",
        "doctor",
        "pipeline",
        "export",
        # The Python API: everything that drives the engine many times goes through it.
        "api",
        # A spec from a failing command (it runs the pipeline) or from a ticket's log; what
        # a run read of its workdir (minimize's DIR check asks it too).
        "capture",
        "isolation",
        "minimize",
        "amplify",
        "bisect",
        # The Python API's searches (isolate, minimize, amplify, bisect as functions): after
        # the stages they drive, which run their probes through `api`.
        "investigate",
        "slurm",
        "pytest_plugin",
        "commands",
        "cli",
        "__main__",
    )
)
STAGE_NAMES = [name for name, _ in STAGES]


def module_name(path: Path, base: Path = ROOT) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
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


def _is_under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def imports_of(
    path: Path, known: set[str], base: Path = ROOT, roots: tuple[str, ...] = ("reprospec",)
) -> Iterator[str]:
    """Every module of `known` that `path` imports, wherever the import stands.

    `roots`: the top-level names the graph is about; an import of anything else (the
    standard library, torch, the engine when reading the harness) is not a node.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path, base)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base_name = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base_name = ".".join([*anchor, base_name] if base_name else anchor)
            # `from reprospec import spec` imports the module reprospec.spec.
            names = [
                f"{base_name}.{a.name}" if f"{base_name}.{a.name}" in known else base_name
                for a in node.names
            ]
        for name in names:
            if not _is_under(name, roots):
                continue
            while name not in known and "." in name:
                name = name.rpartition(".")[0]
            if name in known and name != here:
                yield name


def graph() -> dict[str, set[str]]:
    """Every import of every module of the engine package (the harness left out)."""
    files = sorted(p for p in PACKAGE.rglob("*.py") if not p.is_relative_to(HARNESS))
    known = {module_name(p) for p in files} | {"reprospec.harness"}
    return {module_name(p): set(imports_of(p, known)) for p in files}


def harness_graph() -> dict[str, set[str]]:
    """Every import of every module of the harness, by the names it imports itself by."""
    files = sorted(HARNESS.rglob("*.py"))
    files = [p for p in files if _is_under(module_name(p, HARNESS), HARNESS_NAMES)]
    known = {module_name(p, HARNESS) for p in files}
    roots = (*HARNESS_NAMES, "reprospec")
    return {
        module_name(p, HARNESS): set(imports_of(p, known | {"reprospec"}, HARNESS, roots))
        for p in files
    }


def cycles(top: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles, any import counted (Tarjan's strongly connected parts)."""
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
    every = graph()
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
    harness = harness_graph()
    for module in sorted(harness):
        if "reprospec" in harness[module]:
            out.append(f"{module} (harness) imports the engine (reprospec): it runs without it")
    for cycle in cycles(every) + cycles(harness):
        out.append("import cycle: " + " -> ".join(cycle))
    return out, {**every, **harness}


def main(argv: list[str]) -> int:
    found, every = problems()
    if "--quiet" not in argv:
        for stage in STAGE_NAMES:
            members = sorted(m for m in every if stage_of(m) == stage)
            print(f"[{stage}]")
            for module in members:
                deps = ", ".join(d.removeprefix("reprospec.") for d in sorted(every[module]))
                print(f"  {module.removeprefix('reprospec.')} -> {deps or '-'}")
        print("[the harness, on its own]")
        for module in sorted(m for m in every if _is_under(m, HARNESS_NAMES)):
            print(f"  {module} -> {', '.join(sorted(every[module])) or '-'}")
    for line in found:
        print(f"problem: {line}")
    print(f"{len(every)} modules, {len(found)} problem{'' if len(found) == 1 else 's'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
