"""The checks that compare a spec with itself: `expect` and the workload's phases.

A case's `when` names matrix axes and values that some cell must have; an
expectation's details must be ones its outcome can come with (no `signal` on
an `error`); `expect.phase` and a fault's `at` must name a phase the workload
(or the harness, or a marker) reports, and a fault's step must come; an
`exception` (expected, or a fault's to raise) must be a class's name. What
these find is dead configuration: a case no cell matches, an expectation
nothing can meet.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from typing import Protocol

from reprospec.core import expr
from reprospec.core.expr import same
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue, is_int
from reprospec.core.lazyre import Lazy
from reprospec.core.results import GROUP_NAMED
from reprospec.core.sections import DEFAULT_PHASES
from reprospec.core.units import RateBound, parse_rate, parse_step, undecidable_rate
from reprospec.core.words import OUTCOME_VERBS
from reprospec.spec import schema
from reprospec.spec.matrix import render_value
from reprospec.spec.yamlsource import shorten


def says_never_passes(outcome: JsonValue, bound: RateBound) -> bool:
    """`outcome: pass` with a rate of `==0`: a rate counts the attempts that end as the
    expectation's outcome, so it says the cell never passes. The one rule for a literal
    pair (this module) and for one an expression makes in a cell (checks/cells.py)."""
    return outcome == "pass" and bound.op == "==" and bound.value == 0


def never_passes_message(rate: JsonValue, keep: str = "") -> str:
    """What `says_never_passes` tells, and what to write instead; `keep`: a case's other way
    out (leave out its outcome to keep expect's)."""
    return (
        f"rate {rate!r} counts the attempts that pass (a rate counts those that end as the "
        f"expectation's outcome, here pass), so it says the cell never passes; to say it "
        f"always passes, give no rate (without one every attempt must pass){keep}; to say "
        f"it never passes, write `outcome: fail` (an error, a crash or a hang) instead"
    )


class AddProblem(Protocol):
    """Records a problem at `path` (`key`: at the mapping key `path` ends with)."""

    def __call__(self, path: JsonPath, message: str, *, key: bool = False) -> None: ...


def unknown_axis(name: str, choices: list[str]) -> str:
    """The message for an axis name the matrix does not have, with the closest one."""
    if not choices:
        return f"unknown matrix axis '{shorten(name)}' (the spec has no matrix axes)"
    hint = schema.suggest(name, choices) or f" (axes: {', '.join(choices)})"
    return f"unknown matrix axis '{shorten(name)}'{hint}"


def named_groups(pattern: str) -> list[str]:
    """The named groups of a regex (none when it does not compile: reported elsewhere)."""
    try:
        return list(re.compile(pattern).groupindex)
    except re.error:
        return []


class ExpectChecks:
    """`expect` (its cases, details and phase) and `workload.faults` against the rest."""

    def __init__(
        self,
        data: JsonObject,
        matrix: JsonObject | None,
        axes: list[str],
        all_axes: list[str],
        add: AddProblem,
    ) -> None:
        self.data = data
        self.matrix = matrix
        self.axes = axes
        self.all_axes = all_axes
        self.add = add

    def run(self) -> None:
        """Every check of this module."""
        self.exclude_values()
        self.expect()
        self.faults()
        self.exception_names()

    def exception_names(self) -> None:
        """`expect.exception` (and each case's) is compared with the name of an exception's
        type (judge.exception_matches), not searched as a regex as `message` is: a value no
        class can be named (`ValueError(`) never matches, and the spec was valid. A fault's
        `exception` is the class the harness raises, named the same way."""
        expect = self.data.get("expect")
        expect = expect if isinstance(expect, dict) else {}
        named: list[tuple[JsonPath, JsonValue]] = [
            (("expect", "exception"), expect.get("exception"))
        ]
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if isinstance(case, dict):
                named.append((("expect", "cases", index, "exception"), case.get("exception")))
        workload = self.data.get("workload")
        faults = workload.get("faults") if isinstance(workload, dict) else None
        for index, fault in enumerate(faults if isinstance(faults, list) else ()):
            if isinstance(fault, dict):
                named.append((("workload", "faults", index, "exception"), fault.get("exception")))
        for path, name in named:
            if (
                path[0] == "workload"
                and isinstance(name, str)
                and _EXCEPTION_NAME.fullmatch(name)
                and "." not in name
                and not _is_builtin_exception(name)
            ):
                # The harness looks an undotted name up among the builtins; one that is not
                # there made the fault raise a ValueError of its own, judged an `error`.
                builtin = [known for known in dir(builtins) if _is_builtin_exception(known)]
                self.add(
                    path,
                    f"{_show(name)} is not a builtin exception class"
                    f"{schema.suggest(name, builtin)}: give a builtin like "
                    "ValueError or a dotted importable name like torch.OutOfMemoryError",
                )
                continue
            if path[0] == "workload" and isinstance(name, str) and name in _NEWER_BUILTINS:
                self.newer_builtin(path, name)
            if not isinstance(name, str) or expr.OPEN in name or _EXCEPTION_NAME.fullmatch(name):
                continue  # (an empty one: the schema's minLength says so)
            if path[0] == "expect" and expectable_exception(name):
                continue  # what std::terminate printed, compared as written
            # An exception group as an outcome names it, its members after it, which no
            # class is named (core/results.GROUP_NAMED).
            group = GROUP_NAMED.fullmatch(name) if path[0] == "expect" else None
            if group is not None:
                # Copied from an outcome's words (`error exit 1 ExceptionGroup[ValueError]`):
                # the group's members are no part of a class's name; each is met by its own.
                member = group["members"].split(",")[0].strip()
                self.add(
                    path,
                    f"{_show(name)} is how an outcome names an exception group with its "
                    f"members, not a class: expect a member by its own name (`exception: "
                    f"{member}`, met by a group that holds one), or the group's "
                    f"(`exception: {group['group']}`)",
                )
                continue
            # An expected one is compared, never searched: its message is `message`'s to match.
            how = (
                " (matched as a name, not as a regex: text of the message goes in `message`)"
                if path[0] == "expect"
                else ""
            )
            # An expected one may be C++'s too (the crash's, `_is_cxx_type`); a fault's is
            # the harness's to raise, Python's.
            kinds = (
                "a class name like ValueError, a dotted one like torch.OutOfMemoryError or "
                "C++'s like std::runtime_error"
                if path[0] == "expect"
                else "a class name like ValueError or a dotted one like torch.OutOfMemoryError"
            )
            self.add(path, f"{_show(name)} names no exception class: give {kinds}{how}")

    def newer_builtin(self, path: JsonPath, name: str) -> None:
        """A fault's builtin that `environment.python`, where the spec names one, lacks. The
        builtins checked above are the engine's: `ExceptionGroup` validated on a 3.11 engine
        for a spec of Python 3.10, whose harness found no such class and the cell was
        infra-error. The one place the spec says its target's version; a `--python` given
        to `run` is the harness's to say (`not a builtin of this attempt's Python 3.10.13`)."""
        environment = self.data.get("environment")
        python = environment.get("python") if isinstance(environment, dict) else None
        found = _MINOR.match(python) if isinstance(python, str) else None
        since = _NEWER_BUILTINS[name]
        if found is None or (int(found[1]), int(found[2])) >= since:
            return
        self.add(
            path,
            f"{name} is a builtin from Python {since[0]}.{since[1]} on, and "
            f"environment.python is {python}, which has none: the fault could not be raised. "
            "Give a class that version has (a dotted importable one, as "
            "exceptiongroup.ExceptionGroup of the backport), or the python it ran on",
        )

    def expect(self) -> None:
        expect = self.data.get("expect")
        if not isinstance(expect, dict):
            return
        self.step(("expect", "step"), expect.get("step"))
        self.expected_step(("expect", "step"), expect.get("step"), expect.get("phase"))
        outcome = expect.get("outcome")
        self.contradictions(("expect",), expect, outcome)
        self.expected_phase(("expect", "phase"), expect.get("phase"))
        self.rate(("expect", "rate"), expect.get("rate"), outcome)
        cases = expect.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else ()):
            if not isinstance(case, dict):
                continue
            path = ("expect", "cases", index)
            self.step((*path, "step"), case.get("step"))
            # Merged as below: a case with its own outcome keeps none of the base's phase.
            phase = case.get("phase", None if "outcome" in case else expect.get("phase"))
            self.expected_step((*path, "step"), case.get("step"), phase)
            # Merged as plan.expectation_for does: a case with its own outcome drops the
            # base's details, one without keeps them (those are checked with the base).
            if "outcome" in case:
                self.contradictions(path, case, case["outcome"])
            else:
                self.contradictions(path, case, outcome, inherited=True)
            self.expected_phase((*path, "phase"), case.get("phase"))
            self.rate((*path, "rate"), case.get("rate"), case.get("outcome", outcome), outcome)
            when = case.get("when")
            for key, value in when.items() if isinstance(when, dict) else ():
                if key not in self.all_axes:
                    self.add((*path, "when", key), unknown_axis(key, self.all_axes), key=True)
                else:
                    self.when_value((*path, "when", key), key, value)

    def axis_values(self, axis: str) -> list[JsonValue] | None:
        """Every value `axis` can take: its list, then what include entries give it."""
        if self.matrix is None:
            return None
        values: list[JsonValue] = []
        if axis in self.axes:
            listed = self.matrix.get(axis)
            if not isinstance(listed, list):
                return None
            values.extend(listed)
        include = self.matrix.get("include")
        for entry in include if isinstance(include, list) else ():
            if isinstance(entry, dict) and axis in entry:
                values.append(entry[axis])
        if axis not in self.axes and values:
            values.append(None)  # an include-only axis: the other cells read it as null
        unique: list[JsonValue] = []
        for value in values:
            if not any(same(value, seen) for seen in unique):
                unique.append(value)
        return unique

    def when_value(self, path: JsonPath, axis: str, value: JsonValue) -> None:
        """A `when` value no cell can have makes its case dead: compared as the matrix does."""
        self.axis_value(path, axis, value, self.axis_values(axis))

    def exclude_values(self) -> None:
        """An exclude value the axis does not hold removes no cell, silently: `python: 3.10`
        unquoted is the number 3.1, and every cell it was written to remove still ran. Only
        the axis's own list counts: exclude applies before include adds its cells."""
        exclude = self.matrix.get("exclude") if self.matrix else None
        for index, entry in enumerate(exclude if isinstance(exclude, list) else ()):
            for axis, value in entry.items() if isinstance(entry, dict) else ():
                listed = self.matrix.get(axis) if self.matrix and axis in self.axes else None
                if isinstance(listed, list):
                    self.axis_value(("matrix", "exclude", index, axis), axis, value, listed)

    def axis_value(
        self, path: JsonPath, axis: str, value: JsonValue, values: list[JsonValue] | None
    ) -> None:
        """A problem at `path` when `value` is none of `values`, the ones `axis` can take."""
        if not values or any(same(value, v) for v in values):
            return
        # Strings bare ("values: ok, crash") unless a number or boolean could be mistaken for one.
        bare = isinstance(value, (str, list, dict)) and all(isinstance(v, str) for v in values)
        shown = ", ".join(v if bare and isinstance(v, str) else _show(v) for v in values)
        if isinstance(value, (list, dict)) and not any(isinstance(v, (list, dict)) for v in values):
            got = schema.render_instance(value)
            self.add(path, f"expected one value of axis '{axis}' ({shown}), got {got}")
            return
        alike = [v for v in values if render_value(v) == render_value(value)]
        if not alike and isinstance(value, float):
            # `python: 3.10` unquoted is the number 3.1, which renders unlike '3.10': the
            # value written is the string whose number it is.
            alike = [v for v in values if isinstance(v, str) and _number(v) == value]
        if alike:
            fix = (
                f"write {render_value(alike[0])} without quotes"
                if isinstance(value, str)
                else f"quote it: {_show(alike[0])}"
            )
            read = render_value(alike[0])
            what = (
                f"{read} unquoted is the number {_show(value)}"
                if render_value(value) != read
                else f"{_show(value)} is {_kind(value)}"
            )
            self.add(path, f"{what}, but axis '{axis}' holds {shown} ({fix})")
            return
        import difflib  # only to word a mistake

        close = isinstance(value, str) and difflib.get_close_matches(
            value, [v for v in values if isinstance(v, str)], n=1, cutoff=0.6
        )
        hint = f"; did you mean '{close[0]}'?" if close else ""
        self.add(path, f"{_show(value)} is not a value of axis '{axis}' (values: {shown}{hint})")

    def contradictions(
        self,
        path: JsonPath,
        fields: Mapping[str, JsonValue],
        outcome: JsonValue,
        *,
        inherited: bool = False,
    ) -> None:
        """Details that can never come with the outcome they are merged with."""
        if outcome not in _OUTCOMES:
            return  # the schema reported it (or a case inherits an invalid one)
        source = " (the outcome of expect)" if inherited else ""
        for key, (allowed, what) in _DETAIL_OUTCOMES.items():
            if key in fields and outcome not in allowed:
                self.add((*path, key), f"{what}, not '{outcome}'{source}")

    def workload_phases(self) -> list[tuple[str, JsonValue]] | None:
        """(name, steps) of the workload's phases; None when not a workload or not known."""
        workload = self.data.get("workload")
        if not isinstance(workload, dict):
            return None
        phases = workload.get("phases", list(DEFAULT_PHASES))
        if not isinstance(phases, list):
            return None
        return [
            (name, p.get("steps"))
            for p in phases
            if isinstance(p, dict) and isinstance(name := p.get("name"), str)
        ]

    def expected_phase(self, path: JsonPath, phase: JsonValue) -> None:
        """`expect.phase` of a workload: one of its phases, the harness's own, or a marker's."""
        phases = self.workload_phases()
        if phases is None or not isinstance(phase, str) or expr.OPEN in phase:
            return
        names = list(dict.fromkeys([name for name, _ in phases] + list(_HARNESS_PHASES)))
        markers = self.data.get("markers")
        for marker in markers if isinstance(markers, list) else ():
            if not isinstance(marker, dict):
                continue
            pattern, fixed = marker.get("pattern"), marker.get("phase")
            if not isinstance(pattern, str) or expr.OPEN in pattern:
                return  # a marker can report any phase
            if "phase" in named_groups(pattern):
                return
            if isinstance(fixed, str):
                if expr.OPEN in fixed:
                    return
                names.append(fixed)
        if phase not in names:
            hint = schema.suggest(phase, names) or f" (phases: {', '.join(names)})"
            self.add(path, f"unknown phase '{phase}'{hint}")

    def rate(
        self, path: JsonPath, value: JsonValue, outcome: JsonValue = None, base: JsonValue = None
    ) -> None:
        """A bound the Wilson interval can decide (`>=1` never is: `==1` is meant), and one
        that does not say "never passes" of a pass: a rate counts the attempts that end as
        the expectation's own outcome, so `{outcome: pass, rate: '==0'}`, meant as "never
        crashes", was valid and read `pass 10/10 ... not-reproduced`; one that
        did mean "never passes" is told `outcome: fail` says so. `base`:
        expect's own outcome, which a case without `outcome` keeps."""
        try:
            bound = parse_rate(value)
        except ValueError:
            return  # the schema words a malformed bound
        why = undecidable_rate(bound)
        if why is not None:
            self.add(path, f"rate {value!r} {why}")
        elif says_never_passes(outcome, bound):
            verb = OUTCOME_VERBS.get(str(base), "fails")
            keep = (
                f", or leave out `outcome: pass` so the case keeps expect's outcome ({base}) "
                f"and rate {value!r} says it never {verb} as expect says"
                if isinstance(base, str) and base != "pass" and path[1:2] == ("cases",)
                else ""
            )
            self.add(path, never_passes_message(value, keep))

    def step(self, path: JsonPath, value: JsonValue) -> None:
        if isinstance(value, str) and ".." in value:
            try:
                parse_step(value)
            except ValueError as exc:
                if "reversed" in str(exc):
                    self.add(path, str(exc))

    def expected_step(self, path: JsonPath, value: JsonValue, phase: JsonValue) -> None:
        """`expect.step` of a workload without markers: a step its phases run. Steps count
        from 1 to a phase's `steps`; an expectation past them is one nothing can meet, as a
        fault's step past them (`faults`) is one that never fires. A phase without `steps`
        (one pass of the data), or with a `${{ }}`, is not counted here."""
        phases = self.workload_phases()
        if phases is None or value is None or self.data.get("markers"):
            return
        try:
            low = parse_step(value).low
        except ValueError:
            return  # the schema, or `step`, says so
        if low < 1:
            self.add(path, f"step {low} never comes: a workload's steps count from 1")
            return
        if isinstance(phase, str) and (expr.OPEN in phase or phase in _HARNESS_PHASES):
            return
        counts = [steps for name, steps in phases if phase is None or name == phase]
        whole = [n for n in counts if is_int(n)]
        if not counts or len(whole) != len(counts) or low <= max(whole):
            return
        where = f"phase '{phase}' has" if phase is not None else "no phase has more than"
        self.add(path, f"step {low} never comes: {where} {max(whole)} steps")

    def faults(self) -> None:
        workload = self.data.get("workload")
        phases = self.workload_phases()
        if not isinstance(workload, dict) or phases is None:
            return
        names = [name for name, _ in phases]
        faults = workload.get("faults")
        for index, fault in enumerate(faults if isinstance(faults, list) else ()):
            at = fault.get("at") if isinstance(fault, dict) else None
            if not isinstance(at, dict):
                continue
            path = ("workload", "faults", index, "at")
            phase = at.get("phase")
            if isinstance(phase, str) and expr.OPEN in phase:
                continue
            if names and isinstance(phase, str) and phase not in names:
                hint = schema.suggest(phase, names) or f" (phases: {', '.join(names)})"
                self.add((*path, "phase"), f"unknown phase '{phase}'{hint}")
                continue
            step = at.get("step")
            if not is_int(step):
                continue
            # Steps count from 1 to `steps`; a phase without `steps` runs one pass of the data.
            counts = [steps for name, steps in phases if phase is None or name == phase]
            whole = [n for n in counts if is_int(n)]
            if not counts or len(whole) != len(counts):
                continue
            most = max(whole)
            if step > most:
                where = f"phase '{phase}' has" if phase is not None else "no phase has more than"
                self.add((*path, "step"), f"step {step} never comes: {where} {most} steps")


_OUTCOMES = ("pass", "error", "crash", "hang", "fail")
# A Python class's name as a traceback prints it: `ValueError`, `torch.OutOfMemoryError`.
# C++'s (`std::runtime_error`, `c10::Error`: outcome/cxxterminate.py), an expected crash's
# by SIGABRT, is `_is_cxx_type`'s to accept: a `::` here let a mix of the two
# (`torch.x::y`) pass as either, and a fault's C++ name be told it is no builtin.
_EXCEPTION_NAME = Lazy(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
# C++'s type as std::terminate prints it, demangled, which capture writes as the spec's
# `exception` and a crash's outcome holds as printed: a template's (`boost::wrapexcept<
# boost::bad_lexical_cast>`), a pointer's (`char const*`, of `throw "text"`), `(anonymous
# namespace)::Fault`, a fundamental type's (`unsigned long`). Refused, capture's own spec
# failed `validate`.
_CXX_TYPE = Lazy(r"(?:[^\W\d]|\()(?:\w|::|[<>,*&()\[\] ])*")
_CXX_WORD = Lazy(
    r"void|bool|wchar_t|char(?:8_t|16_t|32_t)?|short|int|long|signed|unsigned|float|double"
    r"|const|volatile"
)


# The C++ types a `*` or `&` may follow: a qualified name's last part (`std::runtime_error*`,
# `(anonymous namespace)::Fault&`), a C++ type word (`char const*`, `int&`).
_CXX_POINTEE = Lazy(r"(?:\w|::)+$")
# The words that qualify a type and are none alone (`const`).
_CXX_QUALIFIERS = frozenset(("const", "volatile"))


def expectable_exception(name: str) -> bool:
    """Whether `expect.exception` may name `name`: a Python class's name, dotted or not, or
    C++'s as std::terminate printed it (`_is_cxx_type`). The one rule of it: this check's,
    and capture's writer's, which leaves out a type it cannot spell (`Fault*`) rather than
    write a spec its own check refuses."""
    return bool(_EXCEPTION_NAME.fullmatch(name)) or _is_cxx_type(name)


def _is_cxx_type(name: str) -> bool:
    """Whether `name` is a C++ type's spelling (`_CXX_TYPE`) no Python class's can be: one
    that holds `::` or `<`, or is made of C++'s own type words (not qualifiers alone:
    `const`), its brackets paired (`ValueError(` stays refused); a `*` or `&` in it only
    after a qualified name, a template's `>`, a C++ type word or another of them, so that a
    mistyped Python name (`Cuda*`, `ValueError&`, `a & b`), which no crash names, is refused
    as it was. A type of the global namespace thrown by pointer (`Fault*`) is refused too:
    no spelling tells it from `Cuda*`. One of its templates is not (`GErr<int>`, `GErr<int>*`,
    `Result<int, std::error_code>`): std::terminate prints them, capture wrote them, and a
    Python name's slip never holds a `<`."""
    if not _CXX_TYPE.fullmatch(name) or name != name.strip() or not _cxx_shaped(name):
        return False
    for mark in re.finditer(r"[*&]", name):
        before = name[: mark.start()].rstrip()
        if before.endswith(("*", "&", ">", ")")):
            continue
        pointee = _CXX_POINTEE.search(before)
        if pointee is None or not ("::" in pointee[0] or _CXX_WORD.fullmatch(pointee[0])):
            return False
    words = name.replace("*", " ").replace("&", " ").split()
    if _CXX_QUALIFIERS.issuperset(words):
        return False
    return any(mark in name for mark in ("::", "<", "*", "&")) or all(
        _CXX_WORD.fullmatch(word) for word in words
    )


# One piece of a C++ type's spelling, as `_cxx_shaped` reads it.
_CXX_TOKEN = Lazy(r"\s*(::|[<>,*&()\[\]]|\w+)")
# What may follow a template's closing `>`: a member (`::`), a pointer or reference, the
# enclosing template's next argument or end, a qualifier; never a name (`Value<>Error`).
_AFTER_TEMPLATE = frozenset(("::", "*", "&", ">", ",", ")", "]", "[", "const", "volatile"))
_CLOSES = {">": "<", ")": "(", "]": "["}


def _cxx_shaped(name: str) -> bool:
    """Whether `name` (of `_CXX_TYPE`'s characters) is put together as a demangled type is:
    its brackets nested, not just as many of each (`a>b<c`), a `<` right after a template's
    name (`x<<y>>` is none), a `::` between two names (`std::`, `std::::x` are none), a `,`
    only inside brackets (`std::a, std::b` is two types, which no exception is), and a
    template's `>` followed by no name (`Value<>Error`), nor by a `(` but where a space
    parts them: a function type whose return is a template, as the demangler spaces it
    (`std::function<std::vector<int, std::allocator<int> > (int)>`); `Foo<int>(int)` is
    no type std::terminate prints. A template of the global namespace (`GErr<int>`) is one
    as any other is."""
    tokens: list[tuple[str, int]] = []
    at = 0
    while at < len(name):
        found = _CXX_TOKEN.match(name, at)
        if found is None:
            return False
        tokens.append((found[1], found.start(1)))
        at = found.end()
    stack: list[str] = []
    for index, (token, start) in enumerate(tokens):
        before = tokens[index - 1][0] if index else ""
        after = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        if token == "::":
            if not (before[-1:].isalnum() or before[-1:] == "_" or before in (">", ")")):
                return False
            if not (after[:1].isalnum() or after[:1] == "_" or after == "("):
                return False
        elif token == "<":
            if not (start and (name[start - 1].isalnum() or name[start - 1] == "_")):
                return False
            stack.append(token)
        elif token in ("(", "["):
            stack.append(token)
        elif token in _CLOSES:
            if not stack or stack.pop() != _CLOSES[token] or before in (",", "::"):
                return False
            spaced_call = after == "(" and name[start + 1 : start + 2] == " "
            if token == ">" and after and after not in _AFTER_TEMPLATE and not spaced_call:
                return False
        elif token == "," and (not stack or before in (",", "<", "(", "::")):
            return False
    return not stack


# The builtin exceptions newer than the oldest Python a spec names (environment.python, for
# the harness's 3.10 and later), and the version each came in.
_NEWER_BUILTINS: Mapping[str, tuple[int, int]] = {
    "BaseExceptionGroup": (3, 11),
    "ExceptionGroup": (3, 11),
    "EncodingWarning": (3, 10),
}
_MINOR = Lazy(r"\s*(\d+)\.(\d+)")


def _is_builtin_exception(name: str) -> bool:
    """Whether the harness raises `name` as a fault's undotted exception: the twin of its
    `faults.builtin_exception` (which cannot import this), held to it by a test."""
    found = getattr(builtins, name, None)
    return isinstance(found, type) and issubclass(found, BaseException)


# expect keys that only some outcomes can have, and what to say otherwise.
_DETAIL_OUTCOMES: Mapping[str, tuple[tuple[str, ...], str]] = {
    "signal": (("crash", "fail"), "a signal only happens with outcome crash (or fail)"),
    "exit_code": (("error", "fail"), "an exit code only happens with outcome error (or fail)"),
    "exception": (
        ("error", "crash", "fail"),
        "an exception only happens with outcome error or crash (or fail)",
    ),
    "message": (
        ("error", "crash", "hang", "fail"),
        "a message is only looked for with outcome error, crash or hang (or fail)",
    ),
    # A pass ran to its end: it stopped in no import and no step's stage.
    "module": (
        ("error", "crash", "hang", "fail"),
        "a module is only recorded with outcome error, crash or hang (or fail)",
    ),
    "stage": (
        ("error", "crash", "hang", "fail"),
        "a stage is only recorded with outcome error, crash or hang (or fail)",
    ),
    "where": (
        ("error", "crash", "hang", "fail"),
        "where it happened is only recorded with outcome error, crash or hang (or fail)",
    ),
}
# Phases the harness reports before the workload's own (reprospec_harness/run.py), and
# `exit`: where a program that said it was done hangs (outcome/evidence.py EXIT_PHASE).
_HARNESS_PHASES = ("import", "setup", "exit")


def _kind(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else "a collection"


def _show(value: JsonValue) -> str:
    """A matrix value in a message: strings quoted, others as a cell id shows them."""
    return repr(value) if isinstance(value, str) else render_value(value)


def _number(text: str) -> float | None:
    """The number YAML would read `text` as, unquoted; None when it is no number."""
    try:
        return float(text)
    except ValueError:
        return None
