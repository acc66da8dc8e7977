"""A pytest command that cannot name the test its hang or crash expects: no `-v`.

The pytest preset reads the line `-v` prints as each test starts (`test_x.py::test_y `);
without it pytest prints a dot per test once the test has ended, so a hung or crashed test
is named by no line, and a spec expecting `outcome: hang, phase: test_x.py::test_y` was
not-reproduced at every attempt while `validate` called it valid. Only warned, not
refused: the ini file's `addopts` or `PYTEST_ADDOPTS` may give the `-v` the command lacks.
(An `error`'s test comes from pytest's short summary, which any verbosity prints.)
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from reprospec.core.jsontypes import JsonPath, JsonValue


def quiet_pytest_phases(document: Mapping[str, JsonValue]) -> list[tuple[JsonPath, str]]:
    """Each expected phase (expect's, a case's) that is a test id of a hang or a crash,
    where the pytest preset reads a plain pytest command that prints no test ids: its path
    and what to do. None where the command is a template (`${{ }}`, its words per cell),
    no plain pytest, or `PYTEST_ADDOPTS` is set in the spec's environment."""
    markers = document.get("markers")
    if not isinstance(markers, list) or not any(
        isinstance(m, Mapping) and m.get("preset") == "pytest" for m in markers
    ):
        return []
    # Imported only for a spec that reads pytest: a run imports no reader it does not need.
    from reprospec.outcome.pytestreport import prints_test_ids

    argv = _argv(document.get("command"))
    if argv is None or prints_test_ids(argv) is not False:
        return []
    environment = document.get("environment")
    env = environment.get("env") if isinstance(environment, Mapping) else None
    if isinstance(env, Mapping) and "PYTEST_ADDOPTS" in env:
        return []
    expect = document.get("expect")
    if not isinstance(expect, Mapping):
        return []
    # pytest-xdist's report names the test a worker crashed running (`worker 'gw0' crashed
    # while running 'test_x.py::test_y'`), -v or not: only its hang needs the -v lines.
    xdist = any(word.startswith(("-n", "--numprocesses", "--dist")) for word in argv)
    outcomes = ("hang",) if xdist else ("hang", "crash")
    found: list[tuple[JsonPath, str]] = []
    base = expect.get("outcome")
    _check(("expect",), base, expect.get("phase"), outcomes, found)
    cases = expect.get("cases")
    for index, case in enumerate(cases if isinstance(cases, list) else ()):
        if isinstance(case, Mapping) and "phase" in case:
            outcome = case.get("outcome", base)
            _check(("expect", "cases", index), outcome, case.get("phase"), outcomes, found)
    return found


def quiet_pytest_message(phase: str, outcome: str) -> str:
    """What `validate` notes (at the phase) and a run warns of such a phase."""
    return (
        f"phase '{phase}' of a {outcome} is named by no line this command prints: the "
        "pytest preset reads the test id `pytest -v` prints as each test starts, which "
        "pytest without -v (or with -q) never prints, so no attempt can match; add -v to "
        "the command (unless its ini file's addopts add it)"
    )


def _check(
    at: JsonPath,
    outcome: JsonValue,
    phase: JsonValue,
    outcomes: tuple[str, ...],
    found: list[tuple[JsonPath, str]],
) -> None:
    from reprospec.outcome.pytestreport import is_test_id

    named_by_v = isinstance(outcome, str) and outcome in outcomes
    if named_by_v and isinstance(phase, str) and is_test_id(phase):
        found.append(((*at, "phase"), quiet_pytest_message(phase, str(outcome))))


def _argv(command: JsonValue) -> list[str] | None:
    """The command's words, or None for a template or one that does not split."""
    if isinstance(command, list):
        words = [word for word in command if isinstance(word, str)]
        text = " ".join(words)
        return None if len(words) != len(command) or "${{" in text else words
    if not isinstance(command, str) or "${{" in command:
        return None
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return None
