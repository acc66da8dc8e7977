"""Per-cell values: every `${{ }}` evaluated for every cell and checked as the engine will use it.

The schema sees `${{ matrix.t }}` as text; its value exists only per cell (and
per attempt where it reads `attempt`). A negative or `.nan` timeout, a
`memory` of `'lots'` or a regex that does not compile must be refused when the
spec is validated, naming the cells, not met by the scheduler mid-run. Plus
the run's size: cells x attempts per cell within `bounds.MAX_ATTEMPTS`.

`cell_problems` checks a whole document, or the cells it is given (what `validate`,
`plan` and `run` do through checks.check), and returns located Problems.

Each check here names the paths of the document it reads (`Site.reads`, `*_READS`), so that
checks.check runs it beside the file's other problems wherever none of them lies in those
paths (`Troubled`): a typo in `title` and a bad `run.timeout` in one cell are said by one
`validate`, where the per-cell checks used to wait for a file free of every other problem.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import NamedTuple

from reprospec.core import expr, patterns, requirements
from reprospec.core.bounds import (
    MAX_ATTEMPTS,
    MAX_INSTANCES,
    MAX_PARALLEL,
    MAX_REPEAT,
    MAX_WORLD_SIZE,
    MIN_MEMORY,
)
from reprospec.core.frozen import frozen
from reprospec.core.gpudebug import GpuDebug, GpuDebugError, conflicts
from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue, is_int
from reprospec.core.sections import (
    DEFAULT_MAX_REPEAT,
    DEFAULT_TIMEOUT_S,
    SectionError,
    fault_armed,
    image_problem,
    stall_seconds,
)
from reprospec.core.units import (
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
    parse_step,
    undecidable_rate,
)
from reprospec.core.words import plural
from reprospec.spec import schema
from reprospec.spec.checks.expect import never_passes_message, says_never_passes
from reprospec.spec.matrix import canonical
from reprospec.spec.yamlsource import Location, Problem, locate, shorten

# Sections shown in the report, never evaluated: `${{` there is just text (checks.py too).
NOT_INTERPOLATED = (
    "title",
    "description",
    "labels",
    "links",
    "matrix",
    "reprospec",
    "name",
    "files",
)


def unread_axes(
    document: Mapping[str, JsonValue], cells: Iterable[Cell] | None = None
) -> list[str]:
    """The matrix axes nothing reads (no `${{ matrix.AXIS }}`, no `${{ cell.id }}` or whole
    `${{ matrix }}`, no `expect.cases` `when` naming it, no `include` entry matching on it
    that brings a key read): their cells run the same program,
    judged alike. A user who wanted repeats of one (`matrix: {seed: [1, 2, 3]}` with a
    command that never reads it) got N identical cells with nothing said; `validate`
    notes them, and a run warns (an axis given by `--set` is never validated).

    `cells`: the cells a run runs; an axis that takes one value in them runs no two cells
    alike, so it is no axis of theirs to warn of. A search's probe (bisect's candidate run)
    is one cell of a spec whose `environment.packages` and `expect` the search replaced:
    the axis that fed the user's package version was read by nothing there, and every
    candidate's report told the user to use run.repeat instead of a matrix that was right."""
    if cells is not None:
        unread = unread_axes(document)
        if not unread:
            return []  # (the usual run: its cells, up to 10^5 of them, are not walked)
        values: dict[str, set[Hashable]] = {axis: set() for axis in unread}
        pending = set(unread)  # the axes not yet seen with two values
        for cell in cells:
            for axis in [a for a in pending if a in cell.matrix]:
                values[axis].add(canonical(cell.matrix[axis]))
                if len(values[axis]) > 1:
                    pending.discard(axis)
            if not pending:
                break
        return [axis for axis in unread if len(values[axis]) > 1]
    matrix = document.get("matrix")
    if not isinstance(matrix, dict):
        return []
    # The sections a cell's values reach (never the matrix itself, the title, ...).
    evaluated = {k: v for k, v in document.items() if k not in NOT_INTERPOLATED}
    try:
        names = expr.names_used(evaluated)
    except expr.ExprError:
        return []  # validation says so
    if "matrix" in names or any(name.startswith("cell.") for name in names):
        return []  # the cell's id (or the whole matrix) reads every axis
    read = {name.removeprefix("matrix.") for name in names if name.startswith("matrix.")}
    expect = document.get("expect")
    cases = expect.get("cases") if isinstance(expect, dict) else None
    for case in cases if isinstance(cases, list) else ():
        when = case.get("when") if isinstance(case, dict) else None
        read |= set(when) if isinstance(when, dict) else set()
    # An `include` entry that brings a key read makes the keys it matches on read too:
    # `{setup: full, workers: 2}` gives the cells of setup=full their workers, so `setup`
    # changes what runs though no expression names it (it was noted as read by nothing).
    include = matrix.get("include")
    entries = [e for e in include if isinstance(e, dict)] if isinstance(include, list) else []
    grew = True
    while grew:
        grew = False
        for entry in entries:
            if read.isdisjoint(entry) or read.issuperset(entry):
                continue
            read |= set(entry)
            grew = True
    return [axis for axis in matrix if axis not in read and axis not in ("include", "exclude")]


def silent_faults(document: Mapping[str, JsonValue], cells: Iterable[Cell]) -> list[int]:
    """The indexes of the workload faults whose `when` leaves them out of every cell.

    Such a fault is a spec that says an injection it never makes: `when: ${{ matrix.workers
    > 2 }}` over workers [0, 2] ran every cell as a plain program, judged `not-reproduced`
    with no word of the fault. Not refused, only noted (validate) and warned (run): a run
    narrowed to its control cells (`--set matrix.num_workers=[0]`, isolate's passing side)
    leaves the fault out on purpose. A `when` that reads `attempt` or `env` is not judged:
    its value is per attempt, or the machine's where the run happens."""
    workload = document.get("workload")
    faults = workload.get("faults") if isinstance(workload, Mapping) else None
    if not isinstance(faults, list):
        return []
    # Which faults could be judged, and those still left out in every cell seen so far.
    judged: dict[int, JsonValue] = {}
    for index, fault in enumerate(faults):
        when = fault.get("when") if isinstance(fault, Mapping) else None
        if when is None:
            continue
        try:
            names = expr.names_used(when)
        except expr.ExprError:
            continue  # validation says so
        if not any(name == "attempt" or name.split(".")[0] == "env" for name in names):
            judged[index] = when
    name = document.get("name")
    for cell in cells:
        if not judged:
            break
        ctx = context(name, cell, 1, {})
        for index, when in list(judged.items()):
            try:
                armed = fault_armed(_evaluated(when, ctx))
            except (expr.ExprError, RecursionError, OverflowError, ValueError, TypeError):
                armed = True  # the value checks report it
            if armed:
                del judged[index]
    return list(judged)


def silent_fault_message(index: int, cells: int) -> str:
    """What `validate` notes (at the fault's `when`) and a run warns of a silent fault."""
    every = "the one cell" if cells == 1 else f"every one of the {cells} cells"
    return (
        f"workload.faults[{index}]'s when is false in {every}: the fault is never injected, "
        "and a run judges the program without it"
    )


def unread_axis_message(axis: str) -> str:
    """What `validate` notes (after the axis's place) and a run warns of an unread axis."""
    return (
        f"matrix axis '{axis}' is read by nothing (no ${{{{ matrix.{axis} }}}}, no "
        "expect.cases when): its cells run the same program; for more attempts of one, use "
        "run.repeat"
    )


# Cells named in one aggregated problem before "and N more".
SHOWN_CELLS = 3
# What `spec.name` reads in an expression: every check that evaluates one may read it.
NAME: JsonPath = ("name",)


@frozen
class Troubled:
    """The paths of a document where a problem was found: what no per-cell check may read.

    A per-cell check evaluates a field as plan will and reads what lies around it (a case's
    `when`, `run.repeat`): on a field already found malformed it would crash, or say the same
    mistake again in other words (a `-5s` timeout as a stall that is not below it). So each
    names the paths it reads and runs where none of them overlaps a troubled one, one lying
    under the other: `run.timout` (an unknown key, located at `run`) keeps every check that
    reads `run` from running, a bad `title` none. `everything`: a problem with no path, whose
    place is unknown, keeps them all from running.
    """

    paths: frozenset[JsonPath]
    # Every path a troubled one lies under, itself too: a read that holds one is touched.
    above: frozenset[JsonPath] = frozenset()
    everything: bool = False

    @classmethod
    def of(cls, data: Mapping[str, JsonValue], problems: Iterable[Problem]) -> Troubled:
        """The troubled paths of `data`, whose problems so far are `problems`.

        In time linear in the problems: a file of 5,000 unknown top-level keys
        (tests/adversarial) is 5,000 of them, each asked of every check."""
        paths: set[JsonPath] = set()
        top: list[JsonPath] | None = None
        for problem in problems:
            if problem.path is None:
                return cls(frozenset(), everything=True)
            if problem.path:
                paths.add(problem.path)
                continue
            if top is None:  # (the same keys for every top-level problem: taken once)
                top = top_level_keys(data)
                paths.update(top)
            if not top:
                return cls(frozenset(), everything=True)  # (no top-level rule the schema has)
        above = {path[:depth] for path in paths for depth in range(1, len(path) + 1)}
        return cls(frozenset(paths), frozenset(above))

    def touches(self, reads: Iterable[JsonPath]) -> bool:
        """Whether a check that reads `reads` would read a troubled path: one of them lies
        under a troubled path, or a troubled path under it."""
        if self.everything:
            return True
        return any(
            read in self.above or any(read[:depth] in self.paths for depth in range(1, len(read)))
            for read in reads
        )


def top_level_keys(data: Mapping[str, JsonValue]) -> list[JsonPath]:
    """What a problem the schema locates at the top level (path `()`) can be about.

    The schema's top-level rules are about which keys the document has, never what a section
    holds: a key it does not know, a required one missing (`name`), or `command` and
    `workload` both given or neither (its `oneOf`). Those keys are troubled, and no other
    section is: an unknown `titel:` leaves `run` to be checked per cell.
    """
    top = schema.load_schema()
    known = top.get("properties")
    keys = [key for key in data if not (isinstance(known, Mapping) and key in known)]
    keys += [key for key in _strings(top.get("required")) if key not in data]
    branches = top.get("oneOf")
    one_of = [
        key
        for branch in (branches if isinstance(branches, list) else ())
        if isinstance(branch, Mapping)
        for key in _strings(branch.get("required"))
    ]
    if sum(key in data for key in one_of) != 1:
        keys += one_of
    return [(key,) for key in keys]


def _strings(value: JsonValue) -> list[str]:
    """The strings of a list of the schema (`required`), none where it is no list."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class Site(NamedTuple):
    """One string of the spec holding `${{ }}`: where it is and which names it reads.

    A NamedTuple, like expr's nodes: its class is built at every start of `validate` and
    `plan`, and a frozen dataclass's costs three times as much (generated methods).
    """

    path: JsonPath
    text: str
    names: tuple[str, ...]

    @property
    def per_attempt(self) -> bool:
        """Its value changes from attempt to attempt (outside `expect`, evaluated per cell)."""
        return self.path[0] != "expect" and any(n.split(".")[0] == "attempt" for n in self.names)

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n.split(".")[0] == "env")

    @property
    def reads(self) -> tuple[JsonPath, ...]:
        """The paths of the document its check reads: its own; all of `expect` for a field of
        `expect` (the cases and their `when` choose which fields a cell reads: expect_fields);
        `run.repeat` and `run.max_repeat` for a value per attempt (how many attempts); `name`
        where it reads `spec.name`. The matrix is read too, once it is expanded."""
        own: JsonPath = ("expect",) if self.path[0] == "expect" else self.path
        reads = [own]
        if self.per_attempt:
            reads += [("run", "repeat"), ("run", "max_repeat")]
        if any(n.split(".")[0] == "spec" for n in self.names):
            reads.append(NAME)
        return tuple(reads)


def find_sites(data: Mapping[str, JsonValue]) -> list[Site]:
    """Every evaluated string holding `${{ }}`, in document order (parse errors skipped)."""
    sites: list[Site] = []
    stack: list[tuple[JsonPath, JsonValue]] = [
        ((key,), value)
        for key, value in reversed(list(data.items()))
        if key not in NOT_INTERPOLATED
    ]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend(
                ((*path, k), v)
                for k, v in reversed(list(value.items()))
                if not (k == "when" and path[:2] == ("expect", "cases"))
            )
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, str) and expr.OPEN in value:
            try:
                names = tuple(expr.names_used(value))
            except expr.ExprError:
                continue  # reported by the spec's own expression check
            sites.append(Site(path, value, names))
    return sites


# The keys of `expect` that describe its failure: a case that sets its own `outcome` drops
# the base's (and its `rate`), as they describe another failure (plan.expectation_for).
EXPECT_DETAILS = (
    "signal",
    "exit_code",
    "exception",
    "message",
    "phase",
    "step",
    "module",
    "stage",
    "where",
)


def matching_case(expect: JsonValue, cell: Cell) -> int | None:
    """Index of the first `expect.cases` entry whose `when` matches the cell, else None."""
    cases = expect.get("cases") if isinstance(expect, Mapping) else None
    for index, case in enumerate(cases if isinstance(cases, list) else ()):
        when = case.get("when") if isinstance(case, Mapping) else None
        if not isinstance(when, Mapping):
            continue
        # An axis the cell lacks (an include-only one) reads as null, as in expressions.
        if all(expr.same(cell.matrix.get(k), v) for k, v in when.items()):
            return index
    return None


def expect_fields(expect: JsonValue, cell: Cell) -> dict[str, tuple[JsonPath, JsonValue]]:
    """key -> (the path it is read from, its value as written) of a cell's expectation:
    `expect`'s own keys with the first matching case's on top (a case with an `outcome`
    drops the base's details and rate). The one rule for plan.expectation_for, which
    evaluates those values, and for the per-cell check, which checks only those: a case's
    `${{ }}` field was evaluated in the cells its `when` does not match, and `exit_code:
    ${{ matrix.code == 5 and 4 }}` refused for code=0, a cell that never reads it."""
    if not isinstance(expect, Mapping):
        return {}
    fields: dict[str, tuple[JsonPath, JsonValue]] = {
        str(k): (("expect", str(k)), v) for k, v in expect.items() if k != "cases"
    }
    index = matching_case(expect, cell)
    cases = expect.get("cases")
    case = cases[index] if index is not None and isinstance(cases, list) else None
    if index is not None and isinstance(case, Mapping):
        if "outcome" in case:
            for key in (*EXPECT_DETAILS, "rate"):
                fields.pop(key, None)
        for key, value in case.items():
            if key != "when":
                fields[str(key)] = (("expect", "cases", index, str(key)), value)
    return fields


def attempts_per_cell(data: Mapping[str, JsonValue]) -> int:
    """The most attempts one cell can run: `repeat`, or `max_repeat` for `repeat: auto`."""
    run = data.get("run")
    run = run if isinstance(run, Mapping) else {}
    repeat = run.get("repeat", 1)
    if repeat == "auto":
        repeat = run.get("max_repeat", DEFAULT_MAX_REPEAT)
    return repeat if is_int(repeat) else 1


# The ranks of a distributed workload, bounded as the instances of an attempt are.
WORLD_SIZE: JsonPath = ("workload", "distributed", "world_size")


def run_value_problems(
    data: Mapping[str, JsonValue], locations: Mapping[JsonPath, Location]
) -> list[Problem]:
    """`run.repeat`, `run.max_repeat`, `run.parallel`, `run.instances` and
    `workload.distributed.world_size` within the bounds."""
    found: list[Problem] = []
    for path, most, what in (
        (("run", "repeat"), MAX_REPEAT, "attempts per cell"),
        (("run", "max_repeat"), MAX_REPEAT, "attempts per cell"),
        (("run", "parallel"), MAX_PARALLEL, "parallel attempts"),
        (("run", "instances"), MAX_INSTANCES, "instances"),
        (WORLD_SIZE, MAX_WORLD_SIZE, "ranks"),
    ):
        value = _lookup(data, ".".join(str(key) for key in path))
        if is_int(value) and value > most:
            line, col = locate(locations, path)
            message = f"{value} {what}; at most {most} are allowed (docs/limits.md)"
            found.append(Problem(line, col, path, message))
    return found


def memory_floor_message(size: int) -> str:
    """Why a memory limit of `size` bytes (below MIN_MEMORY) is refused."""
    return (
        f"a memory limit of {format_size(size)} is below the {format_size(MIN_MEMORY)} an "
        "attempt needs to start a program (the shell that runs it maps about 3 MiB; docker "
        "refuses less too); a number without a unit is bytes: 4096m is 4 GiB (docs/limits.md)"
    )


def memory_problems(
    data: Mapping[str, JsonValue], locations: Mapping[JsonPath, Location]
) -> list[Problem]:
    """A literal `environment.memory` below MIN_MEMORY (a `${{ }}` one is checked per cell)."""
    value = _lookup(data, "environment.memory")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return []
    if isinstance(value, str) and "${{" in value:
        return []  # checked per cell, or a broken expression the other checks say
    try:
        size = parse_size(value)
    except (ValueError, TypeError, OverflowError):
        return []  # the schema's problem
    if not 1 <= size < MIN_MEMORY:
        return []
    line, col = locate(locations, ("environment", "memory"))
    return [Problem(line, col, ("environment", "memory"), memory_floor_message(size))]


# What run_size_problems reads, besides the matrix's size (attempts_per_cell).
RUN_SIZE_READS: tuple[JsonPath, ...] = (("run", "repeat"), ("run", "max_repeat"))


def run_size_problems(
    data: Mapping[str, JsonValue], locations: Mapping[JsonPath, Location], cells: int
) -> list[Problem]:
    """The attempts a run may plan (cells x attempts per cell) within `MAX_ATTEMPTS`."""
    run = data.get("run")
    run = run if isinstance(run, Mapping) else {}
    per_cell = attempts_per_cell(data)
    if cells * per_cell <= MAX_ATTEMPTS:
        return []
    where: JsonPath = ("run", "repeat") if "repeat" in run else ("matrix",)
    if run.get("repeat") == "auto" and "max_repeat" in run:
        where = ("run", "max_repeat")
    line, col = locate(locations, where)
    message = (
        f"the run asks for {cells * per_cell} attempts ({plural(cells, 'cell')} x {per_cell}); "
        f"at most {MAX_ATTEMPTS} are allowed (docs/limits.md)"
    )
    return [Problem(line, col, where, message)]


def context(name: JsonValue, cell: Cell, attempt: int | None, env: Mapping[str, str]) -> JsonObject:
    """What an expression reads, as plan.context_for builds it."""
    return {
        "matrix": dict(cell.matrix),
        "env": dict(env),
        "spec": {"name": name},
        "cell": {"id": cell.id},
        "attempt": attempt,
    }


def _lookup(ctx: Mapping[str, JsonValue], dotted: str) -> JsonValue:
    parts = dotted.split(".")
    value = ctx.get(parts[0])
    for part in parts[1:]:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def value_problems(path: JsonPath, value: JsonValue, shown: str | None = None) -> list[str]:
    """What is wrong with the evaluated value of the string at `path` (empty: nothing).

    `shown` replaces the value in messages (a value read from the engine's
    environment is not printed).
    """
    out = [message for _, message in schema.value_problems(path, value)]
    if not out:
        out = _semantic_problems(path, value)
    if shown is not None:
        rendered = f"got {schema.render_instance(value)}"
        out = [m.replace(rendered, f"got {shown}") for m in out]
    return out


def _semantic_problems(path: JsonPath, value: JsonValue) -> list[str]:
    """What the engine would refuse or misread beyond the schema's types."""
    got = schema.render_instance(value)
    if path == ("run", "stall") and value is None:
        # null: no stall limit for this cell (the timeout only), as `stall: null` written
        # literally and the key left out are; an include-only axis is null in the other
        # cells, and `stall: ${{ matrix.t }}` was refused there.
        return []
    if path in (("run", "timeout"), ("run", "stall")):
        try:
            seconds = parse_duration(value)
        except (ValueError, TypeError, OverflowError) as exc:
            # The unit parser's own words, with the value as the spec shows it.
            words = str(exc).rsplit(", got ", 1)[0]
            return [f"{words}, got {got}"]
        if not math.isfinite(seconds) or seconds <= 0:
            return [f"expected a finite duration > 0, got {got}"]
    elif path == ("run", "instances"):
        # The schema saw `${{ }}` text; the evaluated count is bounded like a literal one.
        if is_int(value) and value > MAX_INSTANCES:
            return [f"{value} instances; at most {MAX_INSTANCES} are allowed (docs/limits.md)"]
    elif path == WORLD_SIZE:
        # Each rank is a process of its own: a stranger's `world_size: 100000` would fork
        # until the attempt's process limit, each fork a torch process, past the machine's
        # memory. Evaluated counts are bounded like literal ones.
        if is_int(value) and value > MAX_WORLD_SIZE:
            return [f"{value} ranks; at most {MAX_WORLD_SIZE} are allowed (docs/limits.md)"]
    elif path in (("environment", "memory"), ("environment", "shm_size")) and value is not None:
        # null: no limit for this cell (the schema allows it), as when the key is left out.
        try:
            size = parse_size(value)
        except (ValueError, TypeError, OverflowError):
            return [f"expected a size like 64m or 4g, got {got}"]
        if size < 1:
            return [f"expected a size of at least 1 byte, got {got}"]
        if path == ("environment", "memory") and size < MIN_MEMORY:
            return [memory_floor_message(size)]
    elif path == ("environment", "image") and isinstance(value, str) and value:
        # `image: ${{ matrix.img }}`: each value as a literal one is checked (document.py).
        return [wrong] if (wrong := image_problem(value)) else []
    elif path[:2] == ("environment", "packages") and isinstance(value, str):
        # An entry as a cell evaluates it (`${{ matrix.req }}`): `six=1.2` installs nothing.
        return [wrong] if (wrong := requirements.problem(value)) else []
    elif _is_regex(path) and isinstance(value, str):
        problem = patterns.problem(value)
        if problem:
            return [problem]
    elif path[-1:] == ("step",) and path[0] == "expect" and isinstance(value, str):
        try:
            parse_step(value)
        except ValueError as exc:
            return [str(exc)]
    elif path[-1:] == ("rate",) and path[0] == "expect" and isinstance(value, str):
        # The document's check (checks/expect.py) skips a `${{ }}` rate: judge each value.
        why = undecidable_rate(parse_rate(value))
        if why is not None:
            return [f"rate {value!r} {why}"]
    if _is_os_string(path) and "\0" in expr.render(value):
        return ["contains a NUL character, which no argv, variable or path can hold"]
    return []


def _is_regex(path: JsonPath) -> bool:
    return (path[0], path[-1]) in (("markers", "pattern"), ("expect", "message"))


def _is_os_string(path: JsonPath) -> bool:
    """Strings that become argv, environment variables or paths of the attempt."""
    return path[0] == "command" or path[:2] in (
        ("environment", "env"),
        ("environment", "workdir"),
    )


class _Checker:
    """Evaluates sites for cells, once per distinct set of values the site reads."""

    def __init__(
        self, data: Mapping[str, JsonValue], base_env: Mapping[str, str], sites: Sequence[Site]
    ) -> None:
        self.name = data.get("name")
        self.expect = data.get("expect")
        self.env = dict(base_env)
        self.sites = sites
        self.attempts = attempts_per_cell(data)
        self.memo: dict[tuple[int, Hashable], list[str]] = {}
        # (path, message) -> the cells (and attempts) where the value at path has that problem.
        self.found: dict[tuple[JsonPath, str], list[str]] = {}

    def cell(self, cell: Cell) -> None:
        used: set[JsonPath] | None = None
        for index, site in enumerate(self.sites):
            numbers: Iterable[int | None]
            if site.path[0] == "expect":
                if used is None:
                    used = {path for path, _ in expect_fields(self.expect, cell).values()}
                # Only what this cell's expectation reads (a case its `when` matches).
                field = site.path[:4] if site.path[1:2] == ("cases",) else site.path[:2]
                if field not in used:
                    continue
                numbers = (None,)
            elif site.per_attempt:
                numbers = range(1, self.attempts + 1)
            else:
                numbers = (1,)
            for number in numbers:
                ctx = context(self.name, cell, number, self.env)
                key = (index, tuple(canonical(_lookup(ctx, n)) for n in site.names))
                if key not in self.memo:
                    self.memo[key] = self.evaluate(site, ctx)
                label = cell.id if not site.per_attempt else f"{cell.id}, attempt {number}"
                for message in self.memo[key]:
                    self.found.setdefault((site.path, message), []).append(label)

    def evaluate(self, site: Site, ctx: Mapping[str, JsonValue]) -> list[str]:
        try:
            value = expr.interpolate_string(site.text, ctx)
        except expr.ExprError as exc:
            return [f"cannot evaluate {exc}"]
        except (RecursionError, OverflowError, ValueError, TypeError) as exc:
            return [f"cannot evaluate '{site.text[:60]}': {exc}"]
        shown = None
        if site.env_names:
            # The engine's environment may hold secrets: say where the value came from instead.
            names = " / ".join(site.env_names)
            shown = f"null (is {names} set?)" if value is None else f"the value of {names}"
        return value_problems(site.path, value, shown)

    def problems(self, locations: Mapping[JsonPath, Location]) -> list[Problem]:
        out = []
        for (path, message), cells in self.found.items():
            line, col = locate(locations, path)
            out.append(Problem(line, col, path, f"{message} {in_cells(cells)}"))
        return out


def _printable(text: str) -> str:
    """Control characters of a matrix value as escapes: a message must not drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def in_cells(labels: Sequence[str]) -> str:
    """'(in cell A)' or '(in cells A; B; C and N more)', escaped and shortened."""
    shown = [_printable(shorten(label, 80)) for label in labels[:SHOWN_CELLS]]
    if len(labels) == 1:
        return f"(in cell {shown[0]})"
    more = f" and {len(labels) - SHOWN_CELLS} more" if len(labels) > SHOWN_CELLS else ""
    return f"(in cells {'; '.join(shown)}{more})"


def cell_problems(
    data: Mapping[str, JsonValue],
    locations: Mapping[JsonPath, Location],
    cells: Iterable[Cell],
    *,
    base_env: Mapping[str, str] = os.environ,
    troubled: Troubled | None = None,
) -> list[Problem]:
    """Every evaluated `${{ }}` value of every cell that the engine would refuse, located.

    Each site on its own: one whose reads `troubled` touches is left to the problem found
    there, and the others are checked beside it."""
    sites = find_sites(data)
    if troubled is not None:
        sites = [site for site in sites if not troubled.touches(site.reads)]
    if not sites:
        return []
    checker = _Checker(data, base_env, sites)
    for cell in cells:
        checker.cell(cell)
    return checker.problems(locations)


# What gpu_debug_problems reads: the toggles, what they cannot pair with, `spec.name`.
GPU_DEBUG_READS: tuple[JsonPath, ...] = (
    ("environment", "debug"),
    ("environment", "env"),
    ("run", "preload"),
    NAME,
)


def gpu_debug_problems(
    data: Mapping[str, JsonValue],
    locations: Mapping[JsonPath, Location],
    cells: Iterable[Cell],
    *,
    base_env: Mapping[str, str] = os.environ,
) -> list[Problem]:
    """The pairs of `environment.debug` (with `run.preload` and `environment.env`) that cannot
    work together in a cell, located, naming the cells.

    The toggles are usually matrix axes, so a pair exists only in some cells: each cell's
    values are evaluated as plan will, then gpudebug.conflicts says what cannot pair.
    """
    environment = data.get("environment")
    if not isinstance(environment, Mapping):
        return []
    raw = environment.get("debug")
    if not isinstance(raw, Mapping) or not raw:
        return []
    env = environment.get("env")
    run = data.get("run")
    preload_raw = run.get("preload") if isinstance(run, Mapping) else None
    found: dict[tuple[JsonPath, str], list[str]] = {}
    for cell in cells:
        ctx = context(data.get("name"), cell, 1, base_env)
        try:
            debug = GpuDebug.from_section({str(k): _evaluated(v, ctx) for k, v in raw.items()})
            preload = _evaluated(preload_raw, ctx)
        except (expr.ExprError, GpuDebugError, RecursionError, OverflowError, TypeError):
            continue  # the value checks report it
        names = [str(p) for p in preload] if isinstance(preload, list) else []
        pairs = conflicts(debug, preload=names, env=env if isinstance(env, Mapping) else {})
        for path, message in pairs:
            found.setdefault((path, message), []).append(cell.id)
    out: list[Problem] = []
    for (where, message), labels in found.items():
        line, col = locate(locations, where)
        out.append(Problem(line, col, where, f"{message} {in_cells(labels)}"))
    return out


def _evaluated(value: JsonValue, ctx: Mapping[str, JsonValue]) -> JsonValue:
    if isinstance(value, str) and expr.OPEN in value:
        return expr.interpolate_string(value, ctx)
    if isinstance(value, list):
        return [_evaluated(v, ctx) for v in value]
    return value


# What stall_problems reads.
STALL_READS: tuple[JsonPath, ...] = (("run", "stall"), ("run", "timeout"), NAME)


def stall_problems(
    data: Mapping[str, JsonValue],
    locations: Mapping[JsonPath, Location],
    cells: Iterable[Cell],
    *,
    base_env: Mapping[str, str] = os.environ,
) -> list[Problem]:
    """A `run.stall` not below its cell's `run.timeout` where either is an expression (two
    literals: document.py), located, naming the cells."""
    run = data.get("run")
    if not isinstance(run, Mapping) or run.get("stall") is None:
        return []
    stall_raw, timeout_raw = run.get("stall"), run.get("timeout")
    if not any(isinstance(v, str) and expr.OPEN in v for v in (stall_raw, timeout_raw)):
        return []
    found: dict[str, list[str]] = {}
    for cell in cells:
        ctx = context(data.get("name"), cell, 1, base_env)
        try:
            stall = _evaluated(stall_raw, ctx)
            timeout_value = _evaluated(timeout_raw, ctx)
            timeout_s = (
                DEFAULT_TIMEOUT_S if timeout_value is None else parse_duration(timeout_value)
            )
            stall_seconds(stall, timeout_s)
        except SectionError as exc:
            found.setdefault(str(exc), []).append(cell.id)
        except (expr.ExprError, ValueError, RecursionError, OverflowError, TypeError):
            continue  # the value checks report it
    line, col = locate(locations, ("run", "stall"))
    return [
        Problem(line, col, ("run", "stall"), f"{message} {in_cells(labels)}")
        for message, labels in found.items()
    ]


# The stages only a training phase reaches (reprospec_harness/training.py: an eval phase
# runs forward and loss under no_grad and stops there).
_TRAIN_STAGES = ("backward", "optimizer")


# What never_passes_problems reads: all of `expect` (a case's `when` chooses its fields).
NEVER_PASSES_READS: tuple[JsonPath, ...] = (("expect",), NAME)


def never_passes_problems(
    data: Mapping[str, JsonValue],
    locations: Mapping[JsonPath, Location],
    cells: Iterable[Cell],
    *,
    base_env: Mapping[str, str] = os.environ,
) -> list[Problem]:
    """A cell whose expectation is `outcome: pass` with `rate: "==0"` where either is an
    expression (two literals: checks/expect.py), located at the rate, naming the cells.
    A rate counts the attempts that end as the expectation's outcome: `==0` of a pass says
    the cell never passes, and `outcome: ${{ matrix.n == 0 and 'pass' or 'error' }}` with
    `rate: '==0'` validated and judged `pass 10/10 ... not-reproduced`."""
    expect = data.get("expect")
    cases = expect.get("cases") if isinstance(expect, Mapping) else None
    written = [expect, *(cases if isinstance(cases, list) else ())]
    if not any(
        isinstance(part, Mapping)
        and any(isinstance(part.get(k), str) and expr.OPEN in part[k] for k in ("outcome", "rate"))
        for part in written
    ):
        return []
    found: dict[tuple[JsonPath, str], list[str]] = {}
    for cell in cells:
        fields = expect_fields(expect, cell)
        if "rate" not in fields or "outcome" not in fields:
            continue
        (where, rate_raw), (_, outcome_raw) = fields["rate"], fields["outcome"]
        if not any(isinstance(v, str) and expr.OPEN in v for v in (rate_raw, outcome_raw)):
            continue  # two literals: the document's check says it once
        ctx = context(data.get("name"), cell, None, base_env)
        try:
            outcome, rate = _evaluated(outcome_raw, ctx), _evaluated(rate_raw, ctx)
            bound = parse_rate(rate) if rate is not None else None
        except (expr.ExprError, ValueError, RecursionError, OverflowError, TypeError):
            continue  # the value checks report it
        if bound is not None and says_never_passes(outcome, bound):
            found.setdefault((where, str(rate)), []).append(cell.id)
    out: list[Problem] = []
    for (where, rate), labels in found.items():
        line, col = locate(locations, where)
        message = f"{never_passes_message(rate)} {in_cells(labels)}"
        out.append(Problem(line, col, where, message))
    return out


# What fault_problems reads: the whole workload, evaluated for each cell.
FAULT_READS: tuple[JsonPath, ...] = (("workload",), NAME)


def fault_problems(
    data: Mapping[str, JsonValue],
    locations: Mapping[JsonPath, Location],
    cells: Iterable[Cell],
    *,
    base_env: Mapping[str, str] = os.environ,
) -> list[Problem]:
    """A workload fault that can fire in none of the cells that arm it, located at the fault,
    naming those cells and why.

    The harness only fires a worker fault in a DataLoader worker (none with
    `num_workers: 0`), never a worker fault that names a `stage` (a worker runs no stages),
    and a main fault at `backward` or `optimizer` only in a phase that trains. Such a fault
    made the run a plain pass, judged `not-reproduced` with no word of the fault. A fault that
    some of its cells can fire is no problem: the others are the spec's controls (a matrix
    over `num_workers` whose 0-worker cells pass), so only a fault no cell can fire is refused.
    That covers data the cell does not have too: a worker fault's `at.index` past the
    synthetic dataset, an `at.step` past the batches of a phase's one pass.

    A fault's `rank` is held to each cell that arms it, one by one: the harness refuses a
    rank the cell lacks as a config error, so such a cell is refused here, at spec load,
    not as infra-error after its torch import; a cell whose `when` leaves the fault out is
    not asked (a matrix over `world_size` with a fault of the larger cells' rank).
    """
    workload = data.get("workload")
    if not isinstance(workload, Mapping):
        return []
    faults = workload.get("faults")
    if not isinstance(faults, list) or not faults:
        return []
    # (fault index) -> (reason -> the armed cells that cannot fire it), and the ones that can.
    never: dict[int, dict[str, list[str]]] = {}
    fires: set[int] = set()
    # (fault index, key) -> (reason -> cells): a `rank` the cell that arms the fault lacks,
    # a `skip_allreduce` in a cell without ranks.
    cannot_do: dict[tuple[int, str], dict[str, list[str]]] = {}
    for cell in cells:
        ctx = context(data.get("name"), cell, 1, base_env)
        try:
            section = _evaluated_deep(workload, ctx)
        except (expr.ExprError, RecursionError, OverflowError, ValueError, TypeError):
            continue  # the value checks report it
        if not isinstance(section, Mapping):
            continue
        armed = section.get("faults")
        for index, fault in enumerate(armed if isinstance(armed, list) else ()):
            if not isinstance(fault, Mapping) or not fault_armed(fault.get("when", True)):
                continue
            refused = _missing_rank(section, fault) or _skip_without_ranks(section, fault)
            if refused is not None:
                key, bad = refused
                cannot_do.setdefault((index, key), {}).setdefault(bad, []).append(cell.id)
                continue
            if index in fires:
                continue
            why = _cannot_fire(section, fault)
            if why is None:
                fires.add(index)
            else:
                never.setdefault(index, {}).setdefault(why, []).append(cell.id)
    out: list[Problem] = []
    # Per cell, unlike `never`: the harness stops such a cell as a config error (infra-error
    # after its torch import), so each cell that arms a fault it cannot do (a rank it lacks,
    # a skip_allreduce without ranks) is refused.
    for (index, key), reasons in cannot_do.items():
        at: JsonPath = ("workload", "faults", index, key)
        line, col = locate(locations, at)
        for why, labels in reasons.items():
            out.append(Problem(line, col, at, f"{why} {in_cells(labels)}"))
    for index, reasons in never.items():
        if index in fires:
            continue
        path: JsonPath = ("workload", "faults", index)
        line, col = locate(locations, path)
        for why, labels in reasons.items():
            if len(labels) > 1:
                why = why.replace("this cell has", "these cells have").replace(
                    "this cell", "these cells"
                )
            message = f"this fault can never fire: {why} {in_cells(labels)}"
            out.append(Problem(line, col, path, message))
    return out


def _evaluated_deep(value: JsonValue, ctx: Mapping[str, JsonValue]) -> JsonValue:
    """`value` with every `${{ }}` in it evaluated for one cell (mappings too)."""
    if isinstance(value, Mapping):
        return {str(k): _evaluated_deep(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_evaluated_deep(v, ctx) for v in value]
    return _evaluated(value, ctx)


def _missing_rank(
    workload: Mapping[str, JsonValue], fault: Mapping[str, JsonValue]
) -> tuple[str, str] | None:
    """(`rank`, why) an armed fault's `rank` is not a rank of this cell (None: it is, or none
    is named).

    The harness refuses the same (reprospec_harness/distributed.py `settings`,
    injection.py `decide`), but only in the attempt, after importing torch.
    """
    rank = fault.get("rank")
    if not is_int(rank):
        return None  # no rank, or a wrong type the value checks report
    section = workload.get("distributed")
    if section is None:
        return "rank", "rank needs workload.distributed; this cell has none"
    world = section.get("world_size") if isinstance(section, Mapping) else None
    if not is_int(world) or rank < world:
        return None
    return "rank", f"rank {rank} does not exist: world_size is {world} (ranks 0..{world - 1})"


def _skip_without_ranks(
    workload: Mapping[str, JsonValue], fault: Mapping[str, JsonValue]
) -> tuple[str, str] | None:
    """(`kind` or `at`, why) an armed `skip_allreduce` cannot be this cell's: it leaves out a
    rank's all-reduce at a step, and a cell without `distributed` has no ranks, a worker or
    an `at` without a step no step's all-reduce. The harness refuses the same
    (injection.py `decide`), but only in the attempt, as infra-error after its torch import.
    """
    if fault.get("kind") != "skip_allreduce":
        return None
    if workload.get("distributed") is None:
        return "kind", "skip_allreduce needs workload.distributed; this cell has none"
    at = fault.get("at")
    if fault.get("where", "main") != "main" or not isinstance(at, Mapping) or "step" not in at:
        return "at", (
            "skip_allreduce happens in a rank's main process at a step: "
            "give at: {phase, step} and no where: worker"
        )
    return None


def _cannot_fire(workload: Mapping[str, JsonValue], fault: Mapping[str, JsonValue]) -> str | None:
    """Why the harness can never fire `fault` in this cell's workload (None: it can)."""
    at = fault.get("at")
    at = at if isinstance(at, Mapping) else {}
    stage = at.get("stage")
    # One pass of the cell's data, read once: the worker checks and the step check use it.
    one_pass = _Pass.of(workload)
    if fault.get("where") == "worker":
        if "stage" in at:
            return (
                "stage does not apply to a where: worker fault "
                "(a worker fetches items; it runs no stages)"
            )
        data = workload.get("data")
        loader = data.get("loader") if isinstance(data, Mapping) else None
        workers = loader.get("num_workers", 0) if isinstance(loader, Mapping) else 0
        if workers == 0 and not isinstance(workers, bool):
            return "where: worker needs num_workers > 0; this cell has 0"
        index = at.get("index")
        if one_pass is not None and is_int(index) and index >= one_pass.items:
            return (
                f"at.index {index} is past the dataset: it has {one_pass.items} items "
                f"(indexes 0..{one_pass.items - 1})"
            )
        # Worker items carry the step of their batch, and a phase without `steps` hands out
        # exactly one pass of batches. (With `steps`, workers prefetch batches past the last
        # step: the phase and step check above owns those.)
        return _step_never_comes(workload, at, one_pass, worker=True)
    late = _step_never_comes(workload, at, one_pass, worker=False)
    if late is not None:
        return late
    if stage not in _TRAIN_STAGES:
        return None
    phases = workload.get("phases")
    named = [p for p in phases if isinstance(p, Mapping)] if isinstance(phases, list) else []
    wanted = at.get("phase")
    chosen = [p for p in named if wanted is None or p.get("name") == wanted]
    if not chosen or any(_trains(p) for p in chosen):
        return None  # an unknown phase is the phase check's to say
    if wanted is None:
        return f"stage: {stage} comes only in a phase that trains, and no phase of this cell does"
    return (
        f"stage: {stage} comes only in a phase that trains, and phase '{wanted}' evaluates "
        "(mode eval: forward and loss, no backward)"
    )


def _trains(phase: Mapping[str, JsonValue]) -> bool:
    """A phase's mode as the harness reads it: `mode`, else `train` only for a phase named train."""
    mode = phase.get("mode") or ("train" if phase.get("name") == "train" else "eval")
    return str(mode) == "train"


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class _Pass(NamedTuple):
    """One pass of a cell's DataLoader as the harness builds it (reprospec_harness/data.py):
    the synthetic dataset's items, each rank's share (DistributedSampler) and its batches."""

    items: int
    share: int  # items of one rank's pass (all of them without `distributed`)
    batch_size: int
    batches: int  # reprospec_harness/data.py epoch_steps: at least 1
    world: int | None

    @classmethod
    def of(cls, workload: Mapping[str, JsonValue]) -> _Pass | None:
        """None when a number is not known before the attempt (an entrypoint dataset)."""
        data = workload.get("data")
        data = data if isinstance(data, Mapping) else {}
        dataset = data.get("dataset")
        dataset = dataset if isinstance(dataset, Mapping) else {}
        loader = data.get("loader")
        loader = loader if isinstance(loader, Mapping) else {}
        if "entrypoint" in dataset:
            return None
        size = _given(dataset, "size", _SYNTHETIC_SIZE)
        batch = _given(loader, "batch_size", 1)
        drop = _given(loader, "drop_last", False)
        if not (is_int(size) and is_int(batch) and size > 0 and batch > 0):
            return None
        if not isinstance(drop, bool):
            return None  # text from an expression: the value checks read it
        share: int = size
        world: int | None = None
        distributed = workload.get("distributed")
        if isinstance(distributed, Mapping):
            ranks = distributed.get("world_size")
            if not is_int(ranks) or ranks < 1:
                return None
            world = ranks
            # torch's DistributedSampler.num_samples
            if drop and size % world:
                share = math.ceil((size - world) / world)
            else:
                share = math.ceil(size / world)
        batches = share // batch if drop else math.ceil(share / batch)
        return cls(size, share, batch, max(1, batches), world)

    def said(self) -> str:
        """How the batches of a pass come about, for a message."""
        rank = (
            f"{self.share} items per rank of {self.items}" if self.world else f"{self.items} items"
        )
        return f"{rank}, batch_size {self.batch_size}"


# The synthetic dataset's default size (reprospec_harness/data.py SyntheticDataset).
_SYNTHETIC_SIZE = 256


def _given(section: Mapping[str, JsonValue], key: str, default: JsonValue) -> JsonValue:
    """The option, or `default` when it is absent or null, as the harness reads it."""
    value = section.get(key)
    return default if value is None else value


def _step_never_comes(
    workload: Mapping[str, JsonValue],
    at: Mapping[str, JsonValue],
    one_pass: _Pass | None,
    *,
    worker: bool,
) -> str | None:
    """Why no phase this fault names reaches its `at.step` in this cell (None: one may).
    `one_pass`: the cell's `_Pass.of(workload)`.

    A phase runs its `steps`, or one pass of the data without them. A main fault fires in the
    first phase that reaches its step; a worker fault's step is its batch's. A phase with
    `steps` is left alone for a worker fault, whose workers prefetch batches past them.
    """
    step = at.get("step")
    if not is_int(step):
        return None
    phases = workload.get("phases")
    named = [p for p in phases if isinstance(p, Mapping)] if isinstance(phases, list) else []
    wanted = at.get("phase")
    chosen = [p for p in named if wanted is None or p.get("name") == wanted]
    if not chosen:
        return None  # an unknown phase (or none written) is another check's to say
    counts: list[int] = []
    for phase in chosen:
        steps = phase.get("steps")
        if steps is None:
            if one_pass is None:
                return None
            counts.append(one_pass.batches)
        elif is_int(steps) and not worker:
            counts.append(steps)
        else:
            return None
    if step <= max(counts):
        return None
    given = [p for p in chosen if p.get("steps") is not None]
    if wanted is not None:
        if given:
            return f"step {step} never comes: phase '{wanted}' has {counts[0]} steps"
        assert one_pass is not None
        return (
            f"step {step} never comes: phase '{wanted}' gives no steps, so it runs one pass "
            f"of the data, {one_pass.batches} batches ({one_pass.said()})"
        )
    passes = (
        f"; a phase without steps runs one pass of {one_pass.batches} batches ({one_pass.said()})"
        if one_pass and len(given) < len(chosen)
        else ""
    )
    return (
        f"step {step} never comes: no phase of this cell has more than {max(counts)} steps{passes}"
    )
