"""The semantic checks of a spec: what its JSON Schema cannot say.

`check` runs everything `validate` reports for one document, sorted by
position: the schema, names in `${{ }}` expressions, matrix axes in
`exclude`/`when`, expectations that contradict their outcome, phases and steps
that never come, regexes that do not compile, NULs, the workdir; then the
matrix as a whole and every cell's evaluated values (checks/cells.py), each of
those beside the problems found before it wherever none lies in what it reads.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core import expr, patterns, requirements
from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.core.sections import (
    DEFAULT_TIMEOUT_S,
    SectionError,
    image_problem,
    stall_seconds,
)
from reprospec.core.units import parse_duration
from reprospec.spec import schema
from reprospec.spec.checks import cells
from reprospec.spec.checks.expect import ExpectChecks, named_groups, unknown_axis
from reprospec.spec.matrix import MatrixError, all_axes, axes, matrix_cells
from reprospec.spec.yamlsource import Location, Problem, locate

# Sections shown in the report, never evaluated (the same as cellcheck's).
NOT_INTERPOLATED = cells.NOT_INTERPOLATED


def check(
    data: JsonValue,
    locations: Mapping[JsonPath, Location],
    key_locations: Mapping[JsonPath, Location],
    *,
    base_dir: Path | None = None,
    files: bool = True,
) -> list[Problem]:
    """Every schema and semantic problem of a document, sorted by position.

    `base_dir` is the folder relative paths resolve against (None: unknown, not checked);
    `files=False`: the spec's `files` are not looked for there.
    """
    if not isinstance(data, dict):
        line, col = locate(locations, ())
        what = "empty" if data is None else f"a {type(data).__name__}"
        return [Problem(line, col, (), f"expected a mapping of spec keys, the file is {what}")]
    problems = schema.validate(data, locations, key_locations)
    semantics = _Semantics(data, locations, key_locations, base_dir, files=files)
    problems.extend(semantics.problems())
    problems.extend(cells.run_value_problems(data, locations))
    problems.extend(cells.memory_problems(data, locations))
    if not cells.Troubled.of(data, problems).touches([("matrix",)]):
        # Only a well-formed matrix can be expanded; its errors (no cells, ids that collide,
        # too many cells: counted, never expanded) belong in `validate` too, not just in `run`,
        # and with the file's other problems (a bad `run.timeout` hid two cells of one id).
        problems.extend(semantics.matrix_problems())
    if semantics.cells is not None:
        problems.extend(_per_cell_problems(data, locations, semantics, semantics.cells, problems))
    return schema.sort_problems(problems)


def _per_cell_problems(
    data: JsonObject,
    locations: Mapping[JsonPath, Location],
    semantics: _Semantics,
    expanded: Sequence[Cell],
    found: Sequence[Problem],
) -> list[Problem]:
    """The checks of each cell's values, each beside the problems `found` where none of them
    lies in the paths it reads (cells.Troubled), in order: each check also waits for what
    those before it found there (a `-5s` timeout in one cell is not said again as a stall
    that is not below it). One validate says a typo in `title` and a bad value in a cell."""
    out: list[Problem] = []

    def clear(reads: Sequence[JsonPath]) -> bool:
        return not cells.Troubled.of(data, [*found, *out]).touches(reads)

    if clear(cells.RUN_SIZE_READS):
        out.extend(cells.run_size_problems(data, locations, len(expanded)))
        if out:
            return out  # past MAX_ATTEMPTS: too many cells and attempts to walk
    # Every `${{ }}` of every cell, evaluated as plan will: bad values name their cells.
    # (Per site: the sites that read a troubled path are left out, the rest checked.)
    troubled = cells.Troubled.of(data, [*found, *out])
    out.extend(cells.cell_problems(data, locations, expanded, troubled=troubled))
    if clear(cells.GPU_DEBUG_READS):
        # GPU diagnostics that cannot pair in a cell (compute-sanitizer with a core dump, ...).
        out.extend(cells.gpu_debug_problems(data, locations, expanded))
    if clear(cells.STALL_READS):
        # A stall or timeout from the matrix: each cell's stall below its own timeout.
        out.extend(cells.stall_problems(data, locations, expanded))
    if clear(cells.NEVER_PASSES_READS):
        # `outcome: pass` with `rate: "==0"` in a cell, where either is an expression.
        out.extend(cells.never_passes_problems(data, locations, expanded))
    if clear(cells.FAULT_READS):
        # A fault no cell that arms it can fire (a worker fault without workers): a plain pass.
        out.extend(cells.fault_problems(data, locations, expanded))
    if clear(_CELL_WORKDIR_READS):
        # A `${{ }}` workdir: each cell's folder, and the `files` in it, as a literal one's.
        out.extend(semantics.cell_workdir_problems())
    return out


# What cell_workdir_problems reads.
_CELL_WORKDIR_READS: tuple[JsonPath, ...] = (("environment", "workdir"), ("files",), cells.NAME)


class _Semantics:
    """What the schema cannot say: names in expressions, axes, ranges, regexes."""

    def __init__(
        self,
        data: JsonObject,
        locations: Mapping[JsonPath, Location],
        key_locations: Mapping[JsonPath, Location],
        base_dir: Path | None = None,
        *,
        files: bool = True,
    ) -> None:
        self.data = data
        self.base_dir = base_dir
        self.look_for_files = files
        self.locations = locations
        self.key_locations = key_locations
        matrix = data.get("matrix")
        self.matrix = matrix if isinstance(matrix, dict) else None
        include = self.matrix.get("include") if self.matrix else None
        sane = not isinstance(include, list) or all(isinstance(e, dict) for e in include)
        self.axes = axes(self.matrix)
        self.all_axes = all_axes(self.matrix) if sane else self.axes
        self.found: list[Problem] = []
        self.cells: Sequence[Cell] | None = None  # made as read: each pass walks them anew

    def add(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        where = self.key_locations.get(path) if key else None
        line, col = where or locate(self.locations, path)
        self.found.append(Problem(line, col, path[:-1] if key else path, message))

    def problems(self) -> list[Problem]:
        for key, value in self.data.items():
            if key not in NOT_INTERPOLATED:
                self.expressions((key,), value)
        self.exclude_keys()
        ExpectChecks(self.data, self.matrix, self.axes, self.all_axes, self.add).run()
        self.run()
        self.markers()
        self.messages()
        self.workdir()
        self.docker()
        self.files()
        self.packages()
        self.nul_characters()
        return self.found

    def matrix_problems(self) -> list[Problem]:
        """Problems of the matrix as a whole; without any, `self.cells` holds its cells."""
        try:
            self.cells = matrix_cells(self.matrix)
        except MatrixError as exc:
            line, col = locate(self.locations, exc.path)
            return [Problem(line, col, exc.path, exc.message)]
        return []

    def expressions(self, path: JsonPath, value: JsonValue) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if not (key == "when" and path[:2] == ("expect", "cases")):
                    self.expressions((*path, key), item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.expressions((*path, index), item)
        elif isinstance(value, str) and expr.OPEN in value:
            self.expression_string(path, value)

    def expression_string(self, path: JsonPath, value: str) -> None:
        try:
            found = expr.find_expressions(value)
        except expr.ExprError as exc:  # a `${{` never closed: nothing after it is read
            self.add(path, f"bad expression {exc}")
            return
        # Each expression on its own: a bad one hid the others' problems (an unknown axis
        # beside a syntax error), where every problem of a file is said at once.
        nodes = []
        for found_one in found:
            try:
                nodes.append((found_one.text, expr.parse(found_one.text)))
            except expr.ExprError as exc:
                self.add(path, f"bad expression {exc}")
        for text, node in nodes:
            for name in expr.iter_names(node):
                if name.parts[0] == "matrix" and len(name.parts) > 1:
                    if name.parts[1] not in self.all_axes:
                        message = unknown_axis(name.parts[1], self.all_axes)
                        self.add(path, f"{message} in '${{{{ {text} }}}}'")
                elif name.parts[0] == "attempt" and path[0] == "expect":
                    self.add(
                        path, "'attempt' cannot be used in expect (an expectation is per cell)"
                    )

    def exclude_keys(self) -> None:
        exclude = self.matrix.get("exclude") if self.matrix else None
        if not isinstance(exclude, list):
            return
        for index, entry in enumerate(exclude):
            for key in entry if isinstance(entry, dict) else ():
                if key in self.axes:
                    continue
                path = ("matrix", "exclude", index, key)
                if key in self.all_axes:
                    self.add(
                        path, f"exclude can only name axes; '{key}' comes from include", key=True
                    )
                else:
                    self.add(path, unknown_axis(key, self.axes), key=True)

    def run(self) -> None:
        run = self.data.get("run")
        section = run if isinstance(run, dict) else {}
        timeout_s = self._duration(section, "timeout", DEFAULT_TIMEOUT_S)
        stall = section.get("stall")
        stall_s = self._duration(section, "stall", None)
        if stall_s is None or timeout_s is None:
            return  # unset, already reported, or an expression: each cell's plan checks it
        try:
            stall_seconds(stall, timeout_s)
        except SectionError as exc:
            self.add(exc.path, str(exc))

    def _duration(self, run: JsonObject, key: str, default: float | None) -> float | None:
        """`run.<key>` as seconds when it is a literal duration > 0 (reporting what is not);
        `default` when it is absent; None for an expression or a reported problem."""
        value = run.get(key)
        if value is None:
            return default
        if isinstance(value, float) and not math.isfinite(value):
            # .nan and .inf pass the schema's `> 0` and would disable the limit.
            shown = schema.render_instance(value)
            self.add(("run", key), f"expected a finite duration > 0, got {shown}")
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return None
        if isinstance(value, str) and expr.OPEN in value:
            return None
        try:
            seconds = parse_duration(value)
        except ValueError:
            return None  # the schema reported it
        if seconds <= 0:
            # A number (`timeout: 0`) is the schema's `exclusiveMinimum: 0` to report: saying
            # it again here would list one mistake twice. `0s` passes the schema's pattern.
            if isinstance(value, str):
                self.add(("run", key), f"expected a duration > 0, got {value!r}")
            return None
        if not math.isfinite(seconds):
            # .nan and .inf pass the schema's `> 0` and would disable the limit.
            shown = schema.render_instance(value)
            self.add(("run", key), f"expected a finite duration > 0, got {shown}")
            return None
        return seconds

    def markers(self) -> None:
        markers = self.data.get("markers")
        for index, marker in enumerate(markers if isinstance(markers, list) else ()):
            if isinstance(marker, dict) and "preset" in marker:
                # A preset is its own markers (spec/presets.py): nothing to add to it.
                extra = [key for key in ("pattern", "phase", "step") if key in marker]
                if extra:
                    self.add(
                        ("markers", index, extra[0]),
                        f"a preset marker takes no '{extra[0]}': write the pattern as a "
                        "marker of its own",
                    )
                continue
            if isinstance(marker, dict) and "pattern" not in marker:
                # A key the schema does not know (`regex:`) is said there, with the key meant:
                # "needs a 'pattern'" beside it was the same mistake said twice.
                if not set(marker) - _MARKER_KEYS:
                    self.add(("markers", index), "a marker needs a 'pattern' (or a 'preset')")
                continue
            pattern = marker.get("pattern") if isinstance(marker, dict) else None
            if not isinstance(pattern, str) or expr.OPEN in pattern:
                continue
            bad = patterns.problem(pattern)
            if bad is not None:
                self.add(("markers", index, "pattern"), bad)
                continue
            groups = named_groups(pattern)
            for group in groups:
                if group not in _MARKER_GROUPS:
                    hint = schema.suggest(group, _MARKER_GROUPS)
                    self.add(
                        ("markers", index, "pattern"),
                        f"unknown group '{group}'{hint}; markers understand (?P<phase>...)"
                        " and (?P<step>...)",
                    )
            fixed = marker if isinstance(marker, dict) else {}
            if not groups and fixed.get("phase") is None and fixed.get("step") is None:
                self.add(
                    ("markers", index),
                    "this marker does nothing: give its pattern a (?P<phase>...) or"
                    " (?P<step>...) group, or the marker a fixed phase or step",
                )

    def messages(self) -> None:
        """`expect.message` (and each case's) is a regex: one that cannot compile never matches."""
        expect = self.data.get("expect")
        if not isinstance(expect, dict):
            return
        paths: list[tuple[JsonPath, JsonValue]] = [(("expect", "message"), expect.get("message"))]
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if isinstance(case, dict):
                paths.append((("expect", "cases", index, "message"), case.get("message")))
        for path, message in paths:
            if isinstance(message, str) and expr.OPEN not in message:
                bad = patterns.problem(message)
                if bad is not None:
                    self.add(path, bad)

    def nul_characters(self) -> None:
        """A NUL (a `\\0` escape) cannot be in an argv, an environment variable or a path."""
        environment = self.data.get("environment")
        environment = environment if isinstance(environment, dict) else {}
        env = environment.get("env")
        command = self.data.get("command")
        places: list[tuple[JsonPath, JsonValue]] = [
            (("environment", "workdir"), environment.get("workdir"))
        ]
        if isinstance(command, list):
            places += [(("command", i), part) for i, part in enumerate(command)]
        else:
            places.append((("command",), command))
        if isinstance(env, dict):
            places += [(("environment", "env", key), value) for key, value in env.items()]
        for path, value in places:
            if isinstance(value, str) and "\0" in value:
                self.add(path, "contains a NUL character, which no argv, variable or path can hold")

    def packages(self) -> None:
        """Each literal `environment.packages` entry a requirement or a location (a `${{ }}`
        one is checked per cell, as evaluated: cells.py)."""
        environment = self.data.get("environment")
        listed = environment.get("packages") if isinstance(environment, dict) else None
        for index, entry in enumerate(listed if isinstance(listed, list) else ()):
            if isinstance(entry, str) and expr.OPEN not in entry:
                wrong = requirements.problem(entry)
                if wrong:
                    self.add(("environment", "packages", index), wrong)

    def workdir(self) -> None:
        environment = self.data.get("environment")
        workdir = environment.get("workdir") if isinstance(environment, dict) else None
        if self.base_dir is None or not isinstance(workdir, str) or not workdir:
            return
        if expr.OPEN in workdir:
            return
        # abspath, not Path.resolve: the message names the folder as the spec does (its
        # symlinks kept). os.path's isdir/exists say False where Path's raise (EACCES).
        folder = os.path.abspath(self.base_dir / workdir)  # noqa: PTH100
        if not os.path.isdir(folder):  # noqa: PTH112
            what = "not a folder" if os.path.exists(folder) else "folder not found"  # noqa: PTH110
            self.add(("environment", "workdir"), f"{what}: {folder}")
        elif wrong := _undecodable_folder(folder):
            self.add(("environment", "workdir"), wrong)

    def docker(self) -> None:
        """A literal `environment.image` an image reference and a literal `dockerfile` a file
        (relative to the spec's folder, as the docker runner builds it; a `${{ }}` image is
        checked per cell, cells.py). Unchecked, `image: "bad image!"` and a dockerfile not
        there validated, and every docker cell ended an infra-error mid-run, exit 3."""
        environment = self.data.get("environment")
        if not isinstance(environment, dict):
            return
        image = environment.get("image")
        literal = isinstance(image, str) and image and expr.OPEN not in image
        if literal and (wrong := image_problem(str(image))):
            self.add(("environment", "image"), wrong)
        dockerfile = environment.get("dockerfile")
        if self.base_dir is None or not isinstance(dockerfile, str) or not dockerfile:
            return
        if expr.OPEN in dockerfile or "\0" in dockerfile:
            return
        path = os.path.abspath(self.base_dir / os.path.expanduser(dockerfile))  # noqa: PTH100, PTH111
        if not os.path.isfile(path):  # noqa: PTH113
            what = "not a file" if os.path.exists(path) else "file not found"  # noqa: PTH110
            self.add(("environment", "dockerfile"), f"{what}: {path}")

    def files(self) -> None:
        """Each `files` entry a file of the workdir, as spec-format.md says they are: one
        that is not there (`data.cvs` for data.csv), a folder, or a path out of the workdir
        (`../../etc/passwd`) was taken by `validate` and `run`, and only `bundle` said, later,
        that it carried nothing of it. A `${{ }}` workdir is the cells' own: checked per cell
        by cell_workdir_problems."""
        listed = self.data.get("files")
        environment = self.data.get("environment")
        workdir = environment.get("workdir") if isinstance(environment, dict) else None
        if self.base_dir is None or not self.look_for_files or not isinstance(listed, list):
            return
        if workdir is None:
            workdir = "."
        if not isinstance(workdir, str) or not workdir or expr.OPEN in workdir:
            return
        folder = os.path.abspath(self.base_dir / workdir)  # noqa: PTH100
        if not os.path.isdir(folder):  # noqa: PTH112
            return  # said of environment.workdir
        for index, entry in enumerate(listed):
            if isinstance(entry, str) and entry and "\0" not in entry:
                wrong = _file_problem(folder, entry)
                if wrong:
                    self.add(("files", index), wrong)

    def cell_workdir_problems(self) -> list[Problem]:
        """A `${{ }}` workdir evaluated for each cell (its first attempt, as plan will) and
        checked as a literal one is: the folder there, each `files` entry a file in it.
        Unchecked, `workdir: ${{ matrix.w }}` naming no folder validated and each of its
        cells ended an infra-error mid-run (exit 3), and a `files` entry missing from every
        cell's folder was taken until `bundle` called it 'gone since the run'."""
        environment = self.data.get("environment")
        workdir = environment.get("workdir") if isinstance(environment, dict) else None
        if self.base_dir is None or self.cells is None or not isinstance(workdir, str):
            return []
        if expr.OPEN not in workdir:
            return []
        listed = self.data.get("files") if self.look_for_files else None
        entries = [
            (index, entry)
            for index, entry in enumerate(listed if isinstance(listed, list) else ())
            if isinstance(entry, str) and entry and "\0" not in entry
        ]
        name = self.data.get("name")
        found: dict[tuple[JsonPath, str], list[str]] = {}
        for cell in self.cells:
            try:
                value = expr.interpolate_string(workdir, cells.context(name, cell, 1, os.environ))
            except (expr.ExprError, RecursionError, OverflowError, ValueError, TypeError):
                continue  # said by cell_problems
            if not isinstance(value, str) or not value or "\0" in value:
                continue  # (the schema's and cell_problems' to say)
            folder = os.path.abspath(self.base_dir / value)  # noqa: PTH100
            wrong: list[tuple[JsonPath, str]] = []
            if not os.path.isdir(folder):  # noqa: PTH112
                exists = os.path.exists(folder)  # noqa: PTH110
                what = "not a folder" if exists else "folder not found"
                wrong.append((("environment", "workdir"), f"{what}: {folder}"))
            elif undecodable := _undecodable_folder(folder):
                wrong.append((("environment", "workdir"), undecodable))
            else:
                for index, entry in entries:
                    if problem := _file_problem(folder, entry):
                        wrong.append((("files", index), problem))
            for key in wrong:
                found.setdefault(key, []).append(cell.id)
        out = []
        for (path, message), ids in found.items():
            line, col = locate(self.locations, path)
            out.append(Problem(line, col, path, f"{message} {cells.in_cells(ids)}"))
        return out


def _file_problem(folder: str, entry: str) -> str | None:
    """Why `entry` of `files` is not a file of the workdir `folder` (None: it is one).

    Out of the workdir by its words (`..`, an absolute path), not by where a link in it
    points: a workdir of links to another's files (minimize's candidates) holds its files.
    os.path, not Path: its isfile and exists say False where Path's raise (EACCES).
    """
    path = os.path.normpath(os.path.join(folder, os.path.expanduser(entry)))  # noqa: PTH111,PTH118
    if path != folder and not path.startswith(folder.rstrip(os.sep) + os.sep):
        return (
            f"{entry!r} is outside the workdir ({folder}): `files` names the workdir's "
            "files, relative to it"
        )
    if os.path.isfile(path):  # noqa: PTH113
        return None
    if os.path.exists(path):  # noqa: PTH110
        return f"{entry!r} is not a file (in {folder}): `files` names files, not folders"
    return f"{entry!r} not found in the workdir ({folder})"


_MARKER_GROUPS = ("phase", "step")
# The keys a marker has (the schema's): one beside them is the schema's problem to say.
_MARKER_KEYS = frozenset({"pattern", "phase", "step", "preset"})


def _undecodable_folder(folder: str) -> str | None:
    """Why a workdir whose real path is not UTF-8 cannot run (a link to `d$'\\xff'ir`): a
    run records it (its store, results.json), which ended with an internal
    UnicodeEncodeError once every attempt had run; else None."""
    from reprospec.core.logtext import not_utf8

    return not_utf8("the folder's path", os.path.realpath(folder))
