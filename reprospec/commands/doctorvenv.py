"""`doctor SPEC --runner venv`'s check of the cells' venvs themselves: whether each cell's
packages resolve, asked of uv's resolver as the build would install them (venvs/resolve.py).

doctor passed a spec of `six==99` on the venv runner ("the venv runner installs the spec's
packages"): only the build at run time failed, every cell of it `infra-error`. Nothing is
built here; an index that does not answer is said as not checked, never as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reprospec.doctor import Check, Needs
from reprospec.doctor.needs import named_cells

_UNSATISFIABLE_TODO = (
    "name versions the index has (`uv pip compile` of the same list says which is missing), "
    "or give the wheelhouse that has them with --find-links DIR, to doctor as to run"
)
_UNKNOWN_TODO = (
    "make the index reachable (your uv or pip configuration's, or --find-links DIR): the venv "
    "runner builds each cell's venv from it"
)


def resolve_check(
    needs: Needs, given: str | None, find_links: Path | None, spec_dir: Path
) -> Check | None:
    """`venv-packages`: whether each distinct list of the cells' packages resolves for the
    interpreter its venv is built on (`given`, the checked --python; else each cell's
    `environment.python` as the venv runner finds it, else reprospec's own), from the index
    the venv runner installs from (the user's uv or pip configuration, and `find_links`),
    in the spec's folder. None where no cell names packages or the runner is not venv. A
    python not found here is skipped: `venv-python` says it."""
    from reprospec import venvs
    from reprospec.venvs.resolve import resolve

    if needs.runner != "venv" or not any(each.packages for each in needs.package_sets):
        return None
    python_of = {cell: wanted for wanted, cells in needs.pythons for cell in cells}
    groups: dict[tuple[str | None, tuple[str, ...]], list[str]] = {}
    for each in needs.package_sets:
        for cell in each.cells or ("",):
            wanted = given or python_of.get(cell, needs.python if not each.cells else None)
            groups.setdefault((wanted, each.packages), []).append(cell)
    index = venvs.user_index_config((find_links,) if find_links is not None else ())
    found: dict[str | None, str | None] = {}
    unsatisfiable: list[str] = []
    unknown: list[str] = []
    lists = 0
    for (wanted, packages), cells in groups.items():
        if wanted not in found:
            try:
                found[wanted] = venvs.find_interpreter(wanted).path
            except venvs.EnvBuildError:
                found[wanted] = None  # said by venv-python
        python = found[wanted]
        if python is None:
            continue
        lists += 1
        answer = resolve(python, packages, index, cwd=spec_dir)
        of = _of(cells, needs.cells)
        if answer.state == "unsatisfiable":
            said = answer.said.rstrip(".")  # (uv's sentence, which this one goes on from)
            unsatisfiable.append(f"{', '.join(packages)} cannot be installed{of}: {said}")
        elif answer.state == "unknown":
            unknown.append(f"{', '.join(packages)}{of}: {answer.said}")
    if unsatisfiable:
        return Check(
            "venv-packages",
            "fail",
            "; ".join(unsatisfiable)
            + ": the venv runner's build of each such cell's venv fails, so each is an infra "
            "error, not run" + (f" (and could not check {'; '.join(unknown)})" if unknown else ""),
            _UNSATISFIABLE_TODO,
        )
    if unknown:
        return Check(
            "venv-packages",
            "warn",
            f"could not check that the cells' packages resolve (uv pip compile): "
            f"{'; '.join(unknown)}",
            _UNKNOWN_TODO,
        )
    if not lists:
        return None  # no interpreter found to resolve for: venv-python fails
    return Check(
        "venv-packages",
        "pass",
        "the cells' packages resolve from the index the venv runner installs from "
        "(uv pip compile; nothing built)",
    )


def _of(cells: Sequence[str], every: int) -> str:
    """` (cells a, b)` where not every cell is of a list; "" where all are, or none is named."""
    named = [cell for cell in dict.fromkeys(cells) if cell]
    return f" (in {named_cells(named)})" if named and len(named) < every else ""
