"""`doctor SPEC --runner venv`'s check of the cells' venvs themselves: whether each cell's
packages resolve, asked of uv's resolver as the build would install them (venvs/resolve.py).

doctor passed a spec of `six==99` on the venv runner ("the venv runner installs the spec's
packages"): only the build at run time failed, every cell of it `infra-error`. Nothing is
installed here (only the wheels of the sdists the resolve picks are built, as the run's build
builds them); an index that does not answer is said as not checked, never as a failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.words import agree, cells_not_run, plural
from reprospec.doctor import Check, Needs
from reprospec.doctor.needs import named_cells

if TYPE_CHECKING:
    from reprospec.venvs import IndexConfig, Interpreter
    from reprospec.venvs.resolve import Resolved

_UNSATISFIABLE_TODO = (
    "name versions the index has (`uv pip compile` of the same list says which is missing), "
    "or give the wheelhouse that has them with --find-links DIR (to doctor and to run alike)"
)
# Of a path entry whose own build failed (`Resolved.path_build`), which was told the index's
# todo above: the index has no part in it.
_PATH_BUILD_TODO = (
    "fix the build of {entry} (its own error is the one quoted): `uv pip install {entry}` in "
    "the spec's folder shows its whole output (the venv runner builds it the same way)"
)
_UNKNOWN_TODO = (
    "make the index reachable (your uv or pip configuration's, or --find-links DIR): the venv "
    "runner builds each cell's venv from it"
)
_TIMED_OUT_TODO = (
    "pin more of the long list (`uv pip compile` of it alone shows where it backtracks)"
)
# Added to a timeout's todo, unless an unreached index's own todo already says it (the
# warning said "make the index reachable" twice).
_OR_SILENT = ", or make the index reachable if it is silent"
# Of an unknown answer that is neither (uv's own error: a requirement it cannot parse, a
# local path not there, uv not run or crashed), which was told to make the index reachable.
_FAILED_TODO = "run `uv pip compile` of that list alone in the spec's folder to see uv's error"
# Of a build doctor stopped at the resolve's timeout while it ran (`Resolved.slow`), which was
# told to run `uv pip compile` to see an error there is none of.
_SLOW_TODO = (
    "nothing is known wrong: run the spec once with --runner venv (its build waits for it), "
    "after which doctor reuses the venv it built"
)
# Of a build that failed on a network error of its own (`Resolved.offline_build`: a
# setup_requires, a toolchain it downloads), which read as a package that cannot be
# installed (exit 1) where it may build once that network answers.
_OFFLINE_BUILD_TODO = (
    "the build fetches from the network itself: run doctor again where that network "
    "answers (the venv runner's build fails alike until it does), or give the build what "
    "it fetches"
)
# A timeout is one long list's backtracking as likely as a silent index, which says nothing
# of the other lists: they are asked still, up to this many timeouts (each up to 120 s).
_TIMEOUTS = 2
# Of each `Resolved.stopped`: why the lists left are not asked once the index did not
# answer, or once `_TIMEOUTS` lists timed out, and what to do of such an answer. A timeout
# was told to make the index reachable, where the resolver was as likely only slow. The
# count is `_TIMEOUTS`' own: "two earlier lists" was written beside it and could drift.
_STOPPED = {
    "unreached": ("the index did not answer", _UNKNOWN_TODO),
    "timed_out": (
        f"uv pip compile of {plural(_TIMEOUTS, 'earlier list')} timed out",
        _TIMED_OUT_TODO,
    ),
}


def resolve_check(
    needs: Needs,
    given: str | None,
    find_links: Path | None,
    spec_dir: Path,
) -> Check | None:
    """`venv-packages`: whether each distinct list of the cells' packages resolves for the
    interpreter its venv is built on (`given`, the checked --python; else each cell's
    `environment.python` as the venv runner finds it, else reprospec's own), from the index
    the venv runner installs from (the user's uv or pip configuration, and `find_links`),
    in the spec's folder. None where no cell names packages or the runner is not venv. A
    python not found here is skipped: `venv-python` says it (`find_interpreter` keeps each
    answer for the doctor, a uv timeout too, so a python commands/doctor looked for is not
    searched for again: a `uv python find` each, up to 120 s).

    A list whose environment is built already in the environments folder a run uses by
    default ($REPROSPEC_ENVS, else .reprospec/envs) is not asked: the venv runner reuses it
    as it is, and a version deleted from the index since failed a spec that runs. Once the
    index did not answer, the lists left are not asked either: they share it, and each
    waited out uv's network timeouts again; nor once two lists ran past the resolve's
    timeout (each up to 120 s): one is a long list's slow resolve as likely as a silent
    index, which says nothing of the others, and a silent index is told mostly by uv's own
    network words first. Said so. Each wheel built is recorded under that folder
    (`resolve.Built`, keyed as the run keys an environment of it alone), and not built
    again by the next doctor: a path entry's was rebuilt at each one."""
    from reprospec import venvs
    from reprospec.core.runoptions import DEFAULT_OUT
    from reprospec.venvs.resolve import Built, resolve

    if needs.runner != "venv" or not any(each.packages for each in needs.package_sets):
        return None
    try:
        venvs.uv_binary()
    except venvs.EnvBuildError:
        # Each list said "uv is not installed: pip install uv" again, beside the uv check.
        return Check(
            "venv-packages",
            "warn",
            "could not check that the cells' packages resolve: uv is not installed (the uv "
            "check says so)",
            "pip install uv",
        )
    python_of = {cell: wanted for wanted, cells in needs.pythons for cell in cells}
    groups: dict[tuple[str | None, tuple[str, ...]], list[str]] = {}
    for each in needs.package_sets:
        for cell in each.cells or ("",):
            wanted = given or python_of.get(cell, needs.python if not each.cells else None)
            groups.setdefault((wanted, each.packages), []).append(cell)
    index = venvs.user_index_config((find_links,) if find_links is not None else ())
    envs = venvs.envs_folder(DEFAULT_OUT)
    unsatisfiable: list[str] = []
    failing: dict[str, None] = {}  # the cells of the lists that cannot be installed
    fail_todos: dict[str, None] = {}  # of each unsatisfiable answer, in order
    unknown: list[str] = []
    unasked = 0  # lists not asked once the index did not answer, or uv timed out twice
    timeouts = 0
    stopped = ""  # why the lists left are not asked (Resolved.stopped)
    todos: dict[str, None] = {}  # of each unknown answer, in order (_STOPPED's)
    built = 0
    lists = 0
    sdists: dict[str, None] = {}  # built by the resolve, having no wheel (Resolved.built)
    recorded: dict[str, None] = {}  # of those, built by an earlier doctor (Resolved.recorded)
    # Of those, built by this doctor: a later list of it finds the record an earlier list
    # wrote, and `./mypkg`, built a moment before, was said "built by an earlier doctor".
    built_now: dict[str, None] = {}
    # Of those, path entries keyed in part, never recorded (Resolved.unrecorded).
    unrecorded: dict[str, None] = {}
    unfound = False  # a cell whose interpreter is not found: its venv cannot be built either
    for (wanted, packages), cells in groups.items():
        try:
            python = venvs.find_interpreter(wanted)
        except venvs.EnvBuildError:
            unfound = True
            continue  # said by venv-python
        lists += 1
        if _built(python, packages, index, envs, spec_dir):
            built += 1  # already built: reused as is
            continue
        if stopped:
            unasked += 1
            continue
        kept = Built(envs / venvs.BUILT, python)
        answer = resolve(python.path, packages, index, cwd=spec_dir, kept=kept)
        of = _of(cells, needs.cells)
        sdists.update(dict.fromkeys(answer.built))
        built_now.update(dict.fromkeys(e for e in answer.built if e not in answer.recorded))
        recorded.update(dict.fromkeys(e for e in answer.recorded if e not in built_now))
        unrecorded.update(dict.fromkeys(answer.unrecorded))
        if answer.state == "unsatisfiable":
            said = answer.said.rstrip(".")  # (uv's sentence, which this one goes on from)
            if answer.path_build:
                # (the list named only where more than the entry: "./x: could not build ./x")
                alone = packages == (answer.path_build,)
                unsatisfiable.append(
                    f"{said}{of}" if alone else f"{', '.join(packages)}{of}: {said}"
                )
                fail_todos[_PATH_BUILD_TODO.format(entry=answer.path_build)] = None
            else:
                unsatisfiable.append(f"{', '.join(packages)} cannot be installed{of}: {said}")
                fail_todos[_UNSATISFIABLE_TODO] = None
            failing.update(dict.fromkeys(cells))
        elif answer.state == "unknown":
            unknown.append(f"{', '.join(packages)}{of}: {answer.said}")
            timeouts += answer.stopped == "timed_out"
            if answer.stopped == "unreached" or timeouts >= _TIMEOUTS:
                stopped = answer.stopped
            todos[_unknown_todo(answer)] = None
    if unasked:
        unknown.append(
            f"{plural(unasked, 'other package list')} not checked: {_STOPPED[stopped][0]}"
        )
    if unsatisfiable:
        # What a run does of those cells, said plainly: "the venv runner's build of each such
        # cell's venv fails, so each is an infra error, not run" left a new user to work out
        # which cells, and whether the others ran.
        some = len([cell for cell in failing if cell]) < needs.cells
        scope = cells_not_run("such" if some else "", of="", why="its venv cannot be built")
        # "the other cells run" only where nothing is unknown of them: it was said beside a
        # list that could not be checked, and of cells whose interpreter is not found.
        others = "; the other cells run" if some and not unknown and not unfound else ""
        return Check(
            "venv-packages",
            "fail",
            "; ".join(unsatisfiable)
            + f": on the venv runner, {scope}{others}"
            + (f" (and could not check {'; '.join(unknown)})" if unknown else ""),
            "; and ".join(fail_todos),
        )
    if unknown:
        return Check(
            "venv-packages",
            "warn",
            f"could not check that the cells' packages resolve (uv pip compile): "
            f"{'; '.join(unknown)}",
            _todo(todos),
        )
    if not lists:
        return None  # no interpreter found to resolve for: venv-python fails
    reused = (
        f" ({built} of {lists} built already in {envs}, which the venv runner reuses as "
        "they are: not asked)"
        if built
        else ""
    )
    # (an sdist's wheel built as the venv build builds it, kept in uv's cache, which the
    # run's build reuses: "nothing built" was untrue of it)
    fresh = [entry for entry in sdists if entry not in recorded]
    how = (
        f"{', '.join(fresh)} built as the venv build builds {'it' if len(fresh) == 1 else 'them'}"
        " (no wheel here: an sdist, a path) into uv's cache; nothing installed"
        if fresh
        else "nothing built"
    )
    if unrecorded:
        # (rebuilt at every doctor with no word why: minutes of a compiled package each time)
        them = agree(len(unrecorded), "it", "them")
        how += (
            f"; {', '.join(unrecorded)} not recorded: keyed in part (more files than the "
            f"venv runner reads, or a subfolder it cannot read: `run` says which), so each "
            f"doctor builds {them} again"
        )
    if recorded:
        # (a second doctor rebuilt each path entry: minutes of a compiled package each time)
        now = agree(len(recorded), "it is", "they are")
        how += (
            f"; {', '.join(recorded)} built by an earlier doctor as {now} now "
            f"(recorded in {envs / venvs.BUILT}): not built again"
        )
    return Check(
        "venv-packages",
        "pass",
        f"the cells' packages resolve from the index the venv runner installs from "
        f"(uv pip compile; {how}){reused}",
    )


def _todo(todos: Mapping[str, None]) -> str:
    """The unknown answers' todos, each once: a timeout's adds making a silent index
    reachable only where no unreached index's todo says so already."""
    return "; or ".join(
        todo + _OR_SILENT if todo == _TIMED_OUT_TODO and _UNKNOWN_TODO not in todos else todo
        for todo in todos
    )


def _unknown_todo(answer: Resolved) -> str:
    """What to do of an `unknown` answer: of a slow build, of one that hit a network
    failure of its own, of a stopped resolve (`_STOPPED`), else of uv's own error."""
    if answer.slow:
        return _SLOW_TODO
    if answer.offline_build:
        return _OFFLINE_BUILD_TODO
    return _STOPPED[answer.stopped][1] if answer.stopped else _FAILED_TODO


def _built(
    python: Interpreter, packages: tuple[str, ...], index: IndexConfig, envs: Path, spec_dir: Path
) -> bool:
    """Whether the environment of `packages` on `python` from `index`, keyed as the run keys
    it (`venvs.request_for`, read from `spec_dir`), is built in `envs` and intact, which the
    venv runner reuses as it is. False where its path entries cannot be read (the run says
    why: uv is asked here)."""
    from reprospec import venvs
    from reprospec.errors import InfraError
    from reprospec.venvs.resolve import quiet

    try:
        request = venvs.request_for(python, packages, index, cwd=spec_dir, warn=quiet)
    except InfraError:
        return False
    return venvs.intact_meta(envs / request.key()) is not None


def _of(cells: Sequence[str], every: int) -> str:
    """` (cells a, b)` where not every cell is of a list; "" where all are, or none is named."""
    named = [cell for cell in dict.fromkeys(cells) if cell]
    return f" (in {named_cells(named)})" if named and len(named) < every else ""
