"""GitHub Actions `strategy.matrix` semantics -> ordered Cells with stable ids.

1. The cartesian product of the axes, first axis slowest.
2. `exclude` removes every combination that matches all of an entry's keys.
3. Each `include` entry is merged into every (post-exclude) original
   combination where it overwrites no original axis value (values added by
   earlier includes may be overwritten); if it fits none, it becomes a new cell,
   appended after the product.

The cells are counted before any is built (`count_cells`): exclude entries are
bitmasks over the axes' values, so a product of 10^9 combinations that exclude
trims to a few cells costs a few steps, and a matrix past MAX_CELLS is refused
without being expanded. `iter_cells` then walks only the surviving combinations.

No run holds its cells: `expand` gives a `MatrixCells`, a sequence that makes cell i from
the axes when it is read (`_Product.at` finds the i-th surviving combination from the
counts, as `walk` would reach it), and `select` a `CellView` of the positions `-m` keeps.
Built all at once, 65,536 cells held about 25 MiB, and validation built them a second time
(docs/performance.md, "Cells made as they are read").
"""

from __future__ import annotations

import bisect
import json
from array import array
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from itertools import chain, islice

from reprospec.core.bounds import MAX_CELLS, MAX_MATRIX_AXES, MAX_MATRIX_ENTRIES, MAX_MATRIX_STEPS
from reprospec.core.caller import filters_said
from reprospec.core.expr import same
from reprospec.core.inputs import Cell, Spec
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.core.lazysequence import LazySequence
from reprospec.errors import SpecError, UsageError, suggest
from reprospec.spec.yamlsource import Problem, YamlSourceError, load_value, locate

# A `matrix` section as the spec holds it (None: the spec has none).
Section = Mapping[str, JsonValue] | None

RESERVED = ("include", "exclude")
DEFAULT_ID = "default"


class MatrixError(ValueError):
    """A matrix that cannot be expanded; `path` is where in the spec the problem is."""

    def __init__(self, message: str, path: JsonPath = ("matrix",)) -> None:
        self.message = message
        self.path = path
        super().__init__(message)


def axes(section: Section) -> list[str]:
    """The original axes (no include-only keys), in order."""
    return [k for k in (section or {}) if k not in RESERVED]


def all_axes(section: Section) -> list[str]:
    """Original axes, then keys that only `include` entries bring, in order of first use."""
    names = dict.fromkeys(axes(section))
    include = (section or {}).get("include")
    for entry in include if isinstance(include, list) else ():
        if isinstance(entry, dict):
            names.update(dict.fromkeys(entry))
    return list(names)


def axis_values(section: Section, axis: str) -> tuple[list[JsonValue], bool]:
    """Every value a cell can hold on `axis`, each once (`same`), and whether a cell may
    lack it: the axis's own list and what `include` entries give it, read from the section
    alone (no cell is made; exclude and `-m` are not applied: it may hold more).

    The values of the axes a command reads are what can make its words name other
    files (plan/run.py's `PlannedAttempts.variants`), found without walking the cells
    (65,536 cells took 0.8 s to walk).
    """
    if section is None:
        return [], True
    found: dict[Hashable, JsonValue] = {}
    own = section.get(axis) if axis in axes(section) else None
    for value in own if isinstance(own, list) else ():
        found.setdefault(canonical(value), value)
    # An include-only axis, or an include entry without it that becomes a cell of its own.
    lacks = own is None
    include = section.get("include")
    for entry in include if isinstance(include, list) else ():
        if isinstance(entry, dict):
            if axis in entry:
                found.setdefault(canonical(entry[axis]), entry[axis])
            else:
                lacks = True
    return list(found.values()), lacks


def render_value(value: object) -> str:
    """A matrix value as it appears in a cell id: true/false, null, compact JSON for collections."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


# The name the CLI uses for the same rendering (`-m axis=VALUE` round-trips through it).
format_value = render_value


def cell_id(values: Mapping[str, JsonValue]) -> str:
    """`axis=value,axis=value` in the given order; `default` for an empty matrix."""
    if not values:
        return DEFAULT_ID
    return ",".join(f"{key}={render_value(value)}" for key, value in values.items())


def canonical(value: object) -> Hashable:
    """A hashable key with `canonical(a) == canonical(b)` exactly when `same(a, b)`."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)  # 1 == 1.0 and hash alike, as `same` wants
    if isinstance(value, str):
        return ("str", value)
    if value is None:
        return ("null",)
    if isinstance(value, (list, tuple)):
        return ("list", tuple(canonical(item) for item in value))
    if isinstance(value, Mapping):
        return ("map", frozenset((key, canonical(item)) for key, item in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("other", type(value).__name__, repr(value))
    return ("other", type(value).__name__, value)


class _Product:
    """The product of the axes minus `exclude`, counted and walked without being built.

    Exclude entry `b` is bit `1 << b`. `alive` is the set of entries whose keys
    matched every value chosen so far; an entry whose last axis matches too
    removes the combination. Counts are memoised on (axis, alive): that state
    space, not the product, is what the work grows with, and it is bounded by
    MAX_MATRIX_STEPS.
    """

    def __init__(
        self, lists: Sequence[Sequence[JsonValue]], exclude: Sequence[Mapping[int, JsonValue]]
    ) -> None:
        self.lists = lists
        count = len(lists)
        self.canons = [[canonical(v) for v in values] for values in lists]
        self.mention = [0] * count
        self.last = [0] * count
        matches = [[0] * len(values) for values in lists]
        self.empty_entry = any(not entry for entry in exclude)
        for bit, entry in enumerate(exclude):
            if not entry:
                continue
            for axis, value in entry.items():
                self.mention[axis] |= 1 << bit
                wanted = canonical(value)
                for index, canon in enumerate(self.canons[axis]):
                    if canon == wanted:
                        matches[axis][index] |= 1 << bit
            self.last[max(entry)] |= 1 << bit
        # Values of an axis that match the same exclude entries behave alike: one group each.
        self.groups: list[list[tuple[int, list[int]]]] = []
        for axis in range(count):
            grouped: dict[int, list[int]] = {}
            for index, mask in enumerate(matches[axis]):
                grouped.setdefault(mask, []).append(index)
            self.groups.append(list(grouped.items()))
        self.matches = matches
        self.later_mention = [0] * (count + 1)
        self.later_size = [1] * (count + 1)
        for axis in range(count - 1, -1, -1):
            self.later_mention[axis] = self.later_mention[axis + 1] | self.mention[axis]
            self.later_size[axis] = self.later_size[axis + 1] * len(lists[axis])
        self._counts: dict[tuple[int, int], int] = {}
        self._runnings: dict[tuple[int, int], list[int]] = {}
        self.steps = 0

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_MATRIX_STEPS:
            raise MatrixError(
                "the exclude entries combine in too many ways to count the cells "
                f"(more than {MAX_MATRIX_STEPS} steps); use fewer entries or axes",
                ("matrix", "exclude"),
            )

    def _next_alive(self, axis: int, alive: int, mask: int) -> int | None:
        """The entries still alive after choosing a value with `mask`; None: excluded."""
        if alive & mask & self.last[axis]:
            return None
        return alive & (~self.mention[axis] | mask)

    def total(self) -> int:
        """Combinations that no exclude entry removes."""
        return 0 if self.empty_entry else self.count(0, ~0)

    def count(self, axis: int, alive: int) -> int:
        """Combinations of the axes from `axis` on that no `alive` entry removes."""
        if not alive & self.later_mention[axis]:
            return self.later_size[axis]
        key = (axis, alive & self.later_mention[axis])
        if key in self._counts:
            return self._counts[key]
        total = 0
        for mask, indices in self.groups[axis]:
            self._step()
            after = self._next_alive(axis, alive, mask)
            if after is not None:
                total += len(indices) * self.count(axis + 1, after)
        self._counts[key] = total
        return total

    def at(self, rank: int) -> tuple[int, ...]:
        """Value indices of the `rank`-th surviving combination (from 0), as `walk` orders them.

        Past the last axis an exclude entry mentions, the rest is a mixed-radix number; before
        it, the running counts of the axis's values (kept per state, as `count` keeps its
        totals) say which value holds the rank.
        """
        chosen: list[int] = []
        alive = ~0
        for axis in range(len(self.lists)):
            if not alive & self.later_mention[axis]:
                for later in range(axis, len(self.lists)):
                    index, rank = divmod(rank, self.later_size[later + 1])
                    chosen.append(index)
                return tuple(chosen)
            running = self._running(axis, alive)
            index = bisect.bisect_right(running, rank)
            if index > 0:
                rank -= running[index - 1]
            chosen.append(index)
            after = self._next_alive(axis, alive, self.matches[axis][index])
            assert after is not None  # a value that holds the rank survives
            alive = after
        return tuple(chosen)

    def _running(self, axis: int, alive: int) -> list[int]:
        """Surviving combinations from `axis` on that choose each value or an earlier one."""
        key = (axis, alive & self.later_mention[axis])
        running = self._runnings.get(key)
        if running is None:
            running, total = [], 0
            for mask in self.matches[axis]:
                after = self._next_alive(axis, alive, mask)
                total += 0 if after is None else self.count(axis + 1, after)
                running.append(total)
            self._runnings[key] = running
        return running

    def ranks(self, allowed: Sequence[Sequence[int] | None]) -> Iterator[int]:
        """The ranks (as `at` reads them) of the surviving combinations whose value index on
        each axis is one of `allowed[axis]` (None: any), ascending; `allowed` lists each
        axis's indices in ascending order.

        A rank is the sum, axis by axis, of the surviving combinations that share the prefix
        and choose an earlier value (`_running`, what `at` subtracts): only the prefixes the
        allowed values make are visited, so `-m` naming a value of each axis costs a step
        per axis, where walking the product made every cell.
        """
        if self.empty_entry:
            return
        size = len(self.lists)
        # One frame per axis: (axis, alive, rank of the prefix, allowed indices left to try).
        frames: list[tuple[int, int, int, Iterator[int]]] = []

        def choices(axis: int) -> Iterator[int]:
            chosen = allowed[axis]
            return iter(range(len(self.lists[axis])) if chosen is None else chosen)

        frames.append((0, ~0, 0, choices(0)))
        while frames:
            axis, alive, base, values = frames[-1]
            index = next(values, None)
            if index is None:
                frames.pop()
                continue
            after = self._next_alive(axis, alive, self.matches[axis][index])
            if after is None or self.count(axis + 1, after) == 0:
                continue
            running = self._running(axis, alive)
            rank = base + (running[index - 1] if index else 0)
            if axis + 1 == size:
                yield rank
            else:
                frames.append((axis + 1, after, rank, choices(axis + 1)))

    def exists(self, required: Mapping[int, Hashable]) -> bool:
        """Whether some combination has the `required` canonical value on each of those axes."""
        if self.empty_entry:
            return False
        seen: dict[tuple[int, int], bool] = {}

        def search(axis: int, alive: int) -> bool:
            if axis == len(self.lists):
                return True
            key = (axis, alive & self.later_mention[axis])
            if key in seen:
                return seen[key]
            found = False
            for mask, indices in self.groups[axis]:
                self._step()
                if axis in required and not any(
                    self.canons[axis][i] == required[axis] for i in indices
                ):
                    continue
                after = self._next_alive(axis, alive, mask)
                if after is not None and search(axis + 1, after):
                    found = True
                    break
            seen[key] = found
            return found

        return search(0, ~0)

    def walk(self) -> Iterator[tuple[int, ...]]:
        """Value indices of every surviving combination, first axis slowest."""
        if self.total() == 0:
            return
        size = len(self.lists)
        chosen: list[int] = []
        # One frame per axis: (axis, alive, value indices left to try).
        frames: list[tuple[int, int, Iterator[int]]] = [(0, ~0, iter(range(len(self.lists[0]))))]
        while frames:
            axis, alive, values = frames[-1]
            index = next(values, None)
            if index is None:
                frames.pop()
                if chosen:
                    chosen.pop()
                continue
            after = self._next_alive(axis, alive, self.matches[axis][index])
            if after is None or self.count(axis + 1, after) == 0:
                continue
            if axis + 1 == size:
                yield (*chosen, index)
                continue
            chosen.append(index)
            frames.append((axis + 1, after, iter(range(len(self.lists[axis + 1])))))


def _entries(section: Mapping[str, JsonValue], key: str) -> list[JsonObject]:
    """The `include` or `exclude` entries of a section; MatrixError when not a list of mappings."""
    entries = section.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise MatrixError(f"{key} must be a list of mappings", ("matrix", key))
    if len(entries) > MAX_MATRIX_ENTRIES:
        raise MatrixError(
            f"{key} has {len(entries)} entries; at most {MAX_MATRIX_ENTRIES} are allowed",
            ("matrix", key),
        )
    return [e for e in entries if isinstance(e, dict)]


def _checked(
    section: Mapping[str, JsonValue],
) -> tuple[list[str], list[list[JsonValue]], list[JsonObject], list[JsonObject]]:
    """(original axes, their values, include, exclude) of a section.

    MatrixError for a shape it cannot have.
    """
    if not isinstance(section, Mapping):
        raise MatrixError("the matrix must be a mapping of axis names to lists of values")
    original = axes(section)
    lists: list[list[JsonValue]] = []
    for axis in original:
        values = section[axis]
        if not isinstance(values, list) or not values:
            raise MatrixError(f"axis '{axis}' must be a non-empty list of values", ("matrix", axis))
        _one_number_once(axis, values)
        lists.append(values)
    include = _entries(section, "include")
    exclude = _entries(section, "exclude")
    if not original and not include:
        raise MatrixError("the matrix is empty: give at least one axis or an include entry")
    if len(original) > MAX_MATRIX_AXES:
        raise MatrixError(
            f"the matrix has {len(original)} axes; at most {MAX_MATRIX_AXES} are allowed"
        )
    for index, entry in enumerate(exclude):
        for key in entry:
            if key not in original:
                raise MatrixError(
                    f"exclude key '{key}' is not a matrix axis", ("matrix", "exclude", index, key)
                )
    return original, lists, include, exclude


def _one_number_once(axis: str, values: Sequence[JsonValue]) -> None:
    """MatrixError for two values of one axis that are one number written two ways (2 and
    2.0): they ran as two cells (`echo 2`, `echo 2.0`), but `-m w=2`, `when: {w: 2}` and
    `${{ matrix.w == 2 }}` compare numbers and took both, so a GitHub job's `-mw=2` ran
    both cells and a case meant for one judged the other."""
    seen: dict[Hashable, int] = {}
    for index, value in enumerate(values):
        if not _is_number_value(value):
            continue
        first = seen.setdefault(canonical(value), index)
        if first != index and render_value(values[first]) != render_value(value):
            raise MatrixError(
                f"axis '{axis}' holds {render_value(values[first])} and "
                f"{render_value(value)}, one number to -m, when: and expressions but two "
                f"cells; keep one, or quote both ('{render_value(values[first])}', "
                f"'{render_value(value)}') to run them as two strings",
                ("matrix", axis, index),
            )


def _is_number_value(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Plan:
    """What expansion needs, computed before any cell is built."""

    def __init__(self, section: Mapping[str, JsonValue]) -> None:
        self.section = section
        self.original, lists, self.include, exclude = _checked(section)
        position = {axis: i for i, axis in enumerate(self.original)}
        self.product = _Product(
            lists,
            [{position[k]: v for k, v in entry.items()} for entry in exclude],
        )
        # Each include entry's values on original axes: the combinations it may extend.
        self.required = [
            {position[k]: canonical(v) for k, v in entry.items() if k in position}
            for entry in self.include
        ]
        self.combos = self.product.total() if self.original else 0
        if self.combos > MAX_CELLS:
            raise MatrixError(
                f"the matrix has {self.combos} cells; at most {MAX_CELLS} are allowed "
                "(use fewer axis values, or exclude)"
            )
        self.fits = [self.combos > 0 and self.product.exists(r) for r in self.required]
        self.fitting = [i for i, fits in enumerate(self.fits) if fits]
        # The include entries that fit no combination: cells after the product, in order.
        self.apart = [i for i, fits in enumerate(self.fits) if not fits]
        self.count = self.combos + len(self.apart)
        if self.count > MAX_CELLS:
            raise MatrixError(
                f"the matrix has {self.count} cells; at most {MAX_CELLS} are allowed "
                "(use fewer axis values or include entries)"
            )
        if self.count == 0:
            raise MatrixError("the matrix has no cells: every combination is excluded")

    def combinations(self) -> Iterator[JsonObject]:
        """Every cell's values in order, includes merged, before ids are given."""
        for indices in self.product.walk() if self.original else ():
            yield self.merged(indices)
        for entry, fits in zip(self.include, self.fits, strict=True):
            if not fits:
                yield dict(entry)

    def combination(self, index: int) -> JsonObject:
        """The values of cell `index` alone: what `combinations` yields at that position."""
        if index < self.combos:
            return self.merged(self.product.at(index))
        return dict(self.include[self.apart[index - self.combos]])

    def merged(self, indices: tuple[int, ...]) -> JsonObject:
        """A product combination's values, with the include entries that fit it merged."""
        lists = self.product.lists
        canons = self.product.canons
        combo: JsonObject = {
            a: lists[n][i] for n, (a, i) in enumerate(zip(self.original, indices, strict=True))
        }
        for number in self.fitting:
            # Only the original axes are protected; keys from earlier includes may change.
            if all(canons[n][indices[n]] == c for n, c in self.required[number].items()):
                combo.update(self.include[number])
        return combo

    def ids_differ(self) -> bool:
        """Whether no two cells can have the same id, seen from the axes alone.

        Without include entries every cell has the original axes in order; when no key or
        rendered value holds a comma, an id splits back into its values, so two cells share
        an id only if an axis has two values that render alike (1 and '1', a repeat).
        """
        if self.include:
            return False
        for axis, values in zip(self.original, self.product.lists, strict=True):
            rendered = {render_value(v) for v in values}
            if "," in axis or len(rendered) < len(values) or any("," in r for r in rendered):
                return False
        return True


class MatrixCells(LazySequence[Cell]):
    """The cells of a matrix in order, each made from the axes when it is read.

    Made, it has checked that no two cells share an id (the only check that reads every
    cell), and holds the axes and the counts of `_Plan`, not the cells: reading cell i
    twice makes it twice, to equal cells.
    """

    def __init__(self, plan: _Plan) -> None:
        self._plan = plan
        order = {key: i for i, key in enumerate(all_axes(plan.section))}
        self._order = order
        if not plan.ids_differ():
            self._check_ids()

    def _check_ids(self) -> None:
        """MatrixError naming the first two cells with one id; holds a hash per cell.

        A dict of every id held the ids themselves (about 80 bytes a cell at 65,536 cells);
        a set of their hashes, 8 bytes and a slot, and a hash seen twice is confirmed by
        walking the cells before it (rare: equal hashes of different ids, or the error).
        """
        seen: set[int] = set()
        for index, cell in enumerate(self):
            code = hash(cell.id)
            if code in seen:
                first = next((c for c in islice(self, index) if c.id == cell.id), None)
                if first is not None:
                    raise MatrixError(
                        f"cells {first.index + 1} and {index + 1} have the same id "
                        f"'{cell.id}' (a repeated value, or values that render alike "
                        "such as 1 and '1')"
                    )
            seen.add(code)

    def _cell(self, index: int, combo: JsonObject) -> Cell:
        order = self._order
        ordered = {k: combo[k] for k in sorted(combo, key=lambda k: order[k])}
        return Cell(cell_id(ordered), index, ordered)

    def __len__(self) -> int:
        return self._plan.count

    def held_axes(self) -> list[str]:
        """The axes some cell holds, in the order a walk over the cells meets them, found
        from the axes: a walk reading every cell's keys took 2.4 s at 65,536 cells.

        A cell's keys are in `all_axes` order, so a key comes after those of earlier cells
        and, in its first cell, after that cell's keys before it: ordered by its first cell
        (an include entry's first fitting combination, or its own cell), then `all_axes`.
        The original axes are in the first cell, unless every combination is excluded.
        """
        plan = self._plan
        first: dict[str, int] = {axis: 0 for axis in plan.original} if plan.combos else {}
        canons = plan.product.canons

        def fitted(number: int) -> int:
            required = plan.required[number]
            allowed = [
                [i for i, canon in enumerate(canons[n]) if canon == required[n]]
                if n in required
                else None
                for n in range(len(canons))
            ]
            return next(plan.product.ranks(allowed))

        starts = [(fitted(number), number) for number in plan.fitting]
        starts += [(plan.combos + j, number) for j, number in enumerate(plan.apart)]
        for position, number in starts:
            for key in plan.include[number]:
                first[key] = min(first.get(key, position), position)
        return sorted(first, key=lambda key: (first[key], self._order[key]))

    def positions_where(
        self, accepts: Mapping[str, Callable[[JsonValue], bool]]
    ) -> Iterator[int] | None:
        """The positions, ascending, of the cells whose value on each axis of `accepts` that
        axis's test accepts, found from the axes without making a cell; None where the axes
        alone cannot say (an axis only `include` entries bring, whose value in a product cell
        depends on which entries fit it, or a matrix of include entries alone).

        The positions are those a walk testing every cell keeps (`select`'s test): a product
        cell holds its combination's values, each allowed value of a tested axis is tried,
        and the include entries that are cells of their own are tested as those cells.
        """
        plan = self._plan
        if not plan.original or any(axis not in plan.original for axis in accepts):
            return None
        lists, canons = plan.product.lists, plan.product.canons
        allowed: list[list[int] | None] = [None] * len(plan.original)
        for n, axis in enumerate(plan.original):
            test = accepts.get(axis)
            if test is None:
                continue
            allowed[n] = [i for i, value in enumerate(lists[n]) if test(value)]
            for number in plan.fitting:
                # An entry that fits a combination writes its own value over the axis's:
                # equal by `same`, but it may render otherwise (1.0 over 1), and the test
                # reads the rendered form too. Only where the test tells them apart must
                # the cells be made.
                entry = plan.include[number]
                if axis in entry and any(
                    test(entry[axis]) != test(value)
                    for value, canon in zip(lists[n], canons[n], strict=True)
                    if canon == plan.required[number][n]
                ):
                    return None
        apart = [
            plan.combos + j
            for j, number in enumerate(plan.apart)
            if all(test(plan.include[number].get(axis)) for axis, test in accepts.items())
        ]
        return chain(plan.product.ranks(allowed), apart)

    def _item(self, index: int) -> Cell:
        return self._cell(index, self._plan.combination(index))

    def __iter__(self) -> Iterator[Cell]:
        for index, combo in enumerate(self._plan.combinations()):
            yield self._cell(index, combo)

    def __repr__(self) -> str:
        return f"MatrixCells({len(self)} cells)"


class CellView(LazySequence[Cell]):
    """Some cells of another sequence, by ascending position (what `-m` or a shard keeps).

    Four bytes a kept cell: the cells themselves are made by `cells` when read.
    """

    def __init__(self, cells: Sequence[Cell], positions: Iterator[int] | Sequence[int]) -> None:
        self._cells = cells
        self._positions = array("I", positions)

    def __len__(self) -> int:
        return len(self._positions)

    def _item(self, index: int) -> Cell:
        return self._cells[self._positions[index]]

    def __iter__(self) -> Iterator[Cell]:
        positions, cells = self._positions, self._cells
        if not isinstance(cells, MatrixCells) or len(positions) * 5 < len(cells) * 4:
            # Each kept cell made from its position: the 16 cells `-m` kept of 65,536 were
            # made by walking all 65,536 at every pass over the run's cells (expectations,
            # judge, report, store: 664,839 cells made in one run, docs/performance.md).
            for position in positions:
                yield cells[position]
            return
        # Nearly every cell kept: the walk makes a cell for about 0.85 of a cell made from
        # its position (it reuses the counts of the one before), and stops at the last kept.
        kept = 0
        for position, cell in enumerate(cells):
            if kept == len(positions):
                return
            if positions[kept] == position:
                kept += 1
                yield cell

    def __repr__(self) -> str:
        return f"CellView({len(self)} of {len(self._cells)} cells)"


def position_of(cells: Sequence[Cell], cell: Cell) -> int | None:
    """Where `cell` is among `cells`, which are in matrix order (ascending `Cell.index`, the
    ones `-m` or a shard left out missing); None when it is not there.

    A cell of a `MatrixCells` is at its index, and one of a `CellView` of them where its
    index is among the view's positions; any other sequence is searched by index. Each
    costs one or a few cells made, and no map of every id.
    """
    if isinstance(cells, MatrixCells):
        found = cell.index
    elif isinstance(cells, CellView) and isinstance(cells._cells, MatrixCells):
        found = bisect.bisect_left(cells._positions, cell.index)
    else:
        found = bisect.bisect_left(cells, cell.index, key=lambda c: c.index)
    if 0 <= found < len(cells) and cells[found].id == cell.id:
        return found
    return next((i for i, c in enumerate(cells) if c.id == cell.id), None)


def count_cells(section: Section) -> int:
    """How many cells a `matrix` section has, without building them; raise MatrixError."""
    if section is None:
        return 1
    return _Plan(section).count


def matrix_cells(section: Section) -> Sequence[Cell]:
    """The cells of a `matrix` section (None: one cell `default`), made as they are read;
    MatrixError when the matrix is bad, ids that collide included."""
    if section is None:
        return (Cell(DEFAULT_ID, 0, {}),)
    return MatrixCells(_Plan(section))


def iter_cells(section: Section) -> Iterator[Cell]:
    """The cells of a `matrix` section one at a time; MatrixError (before the first) when bad."""
    return iter(matrix_cells(section))


def expand_matrix(section: Section) -> list[Cell]:
    """The cells of a `matrix` section (None: one cell `default`) as a list; raise MatrixError."""
    return list(matrix_cells(section))


def expand(spec: Spec) -> Sequence[Cell]:
    """The cells of a loaded spec, in order, made as read; raise SpecError with a located
    problem."""
    try:
        section = spec.document.get("matrix")
        # Validation made it a mapping (or left it out); anything else is no matrix.
        return matrix_cells(section if isinstance(section, Mapping) else None)
    except MatrixError as exc:
        line, col = locate(spec.locations, exc.path)
        problem = Problem(line, col, exc.path, exc.message)
        raise SpecError([problem.format(str(spec.path))]) from None


def select(cells: Sequence[Cell], filters: Sequence[str], said: str = "") -> Sequence[Cell]:
    """Keep cells matching `AXIS=VALUE` filters: same axis repeated is OR, axes combine with AND.

    An axis a cell lacks (one only some `include` entries add) reads as null there, as in
    expressions and `expect.cases`: `-m pin=null` keeps the cells without it.

    `said` is how the user gave the filters where not as `-m` (isolate's `--failing
    fast=2`): a refusal names the option typed, not one the user never gave; without it,
    `-m`, or the Python API's argument (`matrix_filters=(...)`, core/caller.py).

    Without filters, `cells` itself; with them, a `CellView` of the positions kept. Of a
    `MatrixCells`, the positions are found from the axes where the filters name only
    axes of the product (`MatrixCells.positions_where`): the cost is the cells kept, not
    the matrix (16 of 65,536 cells took 2.4 s of walking, docs/performance.md).
    """
    if not filters:
        return cells
    known = known_axes(cells)
    wanted: dict[str, list[tuple[JsonValue, str]]] = {}
    for text in filters:
        axis, sep, raw = text.partition("=")
        axis = axis.strip()
        if not sep or not axis:
            raise UsageError(f"{said or filters_said([text])}: expected AXIS=VALUE")
        if axis not in known:
            raise unknown_axis(said or filters_said([text]), axis, known)
        wanted.setdefault(axis, []).append((_filter_value(raw), raw.strip()))

    def accepts(values: list[tuple[JsonValue, str]]) -> Callable[[JsonValue], bool]:
        return lambda actual: any(_value_matches(actual, v) for v in values)

    tests = {axis: accepts(values) for axis, values in wanted.items()}
    found = cells.positions_where(tests) if isinstance(cells, MatrixCells) else None
    if found is None:
        found = (
            position
            for position, cell in enumerate(cells)
            if all(test(cell.matrix.get(axis)) for axis, test in tests.items())
        )
    kept = CellView(cells, found)
    if not kept:
        raise UsageError(
            f"no cell matches {said or filters_said(filters)}: {_no_match(cells, wanted)}"
            + ("" if said else _as_cell_id(filters, known))
        )
    return kept


def _as_cell_id(filters: Sequence[str], known: Sequence[str]) -> str:
    """A hint where a filter is written as a cell id (`-m kind=segv,x=1`, as the table shows
    cells and isolate's `--failing` takes them): one filter is one AXIS=VALUE, so its value
    was `segv,x=1` and the refusal named only the first axis's values."""
    split: list[str] = []
    for text in filters:
        parts = text.split(",")
        if len(parts) > 1 and all(p.partition("=")[0].strip() in known for p in parts):
            split += [p.strip() for p in parts]
        else:
            split.append(text)
    if len(split) == len(filters):
        return ""
    return f"; one filter is one AXIS=VALUE: {filters_said(split)}"


def known_axes(cells: Sequence[Cell]) -> list[str]:
    """The axes some cell holds, in the order a walk over the cells meets them: what `-m`
    (and isolate's `matrix.AXIS`) may name. Of a `MatrixCells`, found from its axes."""
    if isinstance(cells, MatrixCells):
        return cells.held_axes()
    return list(dict.fromkeys(k for cell in cells for k in cell.matrix))


def unknown_axis(given: str, axis: str, known: Sequence[str], prefix: str = "") -> UsageError:
    """The refusal of an axis no cell holds: `given` (the option and its item), the axes,
    and a did-you-mean, each axis written with `prefix` (`matrix.`) as the caller's option
    names one."""
    names = ", ".join(known) if known else "none (the spec has no matrix axes)"
    near = suggest(axis, known)
    hint = f"; did you mean {' or '.join(prefix + n for n in near)}?" if near else ""
    return UsageError(f"{given}: unknown axis '{axis}' (axes: {names}){hint}")


def _no_match(cells: Sequence[Cell], wanted: Mapping[str, list[tuple[JsonValue, str]]]) -> str:
    """Why no cell matched: each axis whose value no cell has, with the values it holds."""
    missing = []
    for axis, values in wanted.items():
        if not any(any(_value_matches(c.matrix.get(axis), v) for v in values) for c in cells):
            held = dict.fromkeys(_listed(axis, c.matrix.get(axis)) for c in cells)
            missing.append(f"axis '{axis}' holds {', '.join(held)}")
    return "; ".join(missing) or "each value is in some cell, but no cell has them all"


def _listed(axis: str, value: JsonValue) -> str:
    """`value` as `-m` takes it, in a list joined by `, `: a string holding a comma in
    quotes, where `holds a,b, x=1` hid where one value ended."""
    text = exact_filter(axis, value).partition("=")[2]
    if text == value and ("," in text or text.startswith('"')):  # not quoted by exact_filter
        return json.dumps(value)
    return text


def _filter_value(raw: str) -> JsonValue:
    """What `-m AXIS=RAW` compares a cell's value with: RAW read as YAML (text YAML cannot
    read is itself)."""
    try:
        return load_value(raw) if raw.strip() else ""
    except YamlSourceError:
        return raw


def exact_filter(axis: str, value: JsonValue) -> str:
    """The `-m` filter (`AXIS=VALUE`, without `-m`) that `select` keeps only the cells whose
    `axis` holds exactly `value` with: the value as its cell id shows it where YAML reads
    that back as the value, else as a JSON (YAML) string. A job matrix's `-mv=3.10` of the
    string "3.10" also kept the cell of the number 3.1 (YAML reads 3.10 as 3.1), as
    `-mv=null` of "null" the null cell: two jobs ran that cell, and their merge was refused."""
    text = render_value(value)
    if text == text.strip() and same(_filter_value(text), value):
        return f"{axis}={text}"
    return f"{axis}={json.dumps(value)}"


def _value_matches(actual: JsonValue, wanted: tuple[JsonValue, str]) -> bool:
    # The rendered form also counts, so `-m python=3.10` finds "3.10" (YAML reads 3.1).
    value, raw = wanted
    return same(actual, value) or render_value(actual) == raw
