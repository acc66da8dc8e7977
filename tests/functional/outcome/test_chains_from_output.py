"""Exception chains and groups read from what real programs print, through `reprospec run`.

A group the main thread printed and went on from (`traceback.print_exc()`, then
`sys.exit(2)`) read its closing rule `+------------------------------------` as the
message; a pytest run under `--tb=native` read no chain, nor under `--tb=long` and
`--tb=short`; and a traceback logged by `logging.exception` ran on, under `python -S`, into
the cause never raised of the next chain (`KeyError("'x'\\nValueError: root")`):
`expect.exception: ValueError` missed.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Any

from tests.support.cli import Cli

# pytest-xdist, a dev dependency: where it is not installed, the styles test leaves out its
# `-n 2` runs.
HAVE_XDIST = importlib.util.find_spec("xdist") is not None

_GROUPS = textwrap.dedent(
    """
    import logging, sys, traceback
    kind, code = sys.argv[1], int(sys.argv[2])
    group = (
        BaseExceptionGroup("stop", [KeyboardInterrupt()])
        if kind == "base"
        else ExceptionGroup("two failed", [ValueError("v"), TypeError("t")])
    )
    if kind == "uncaught":
        raise group
    try:
        raise group
    except BaseExceptionGroup:
        if kind == "logged":
            logging.exception("request failed")
        else:
            traceback.print_exc()
    sys.exit(code)
    """
)


def _outcomes(cli: Cli, spec: Path) -> dict[str, dict[str, Any]]:
    """`reprospec run SPEC`, which succeeded: each cell's first attempt's outcome by cell id."""
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    return {cell["id"]: cell["attempts"][0]["outcome"] for cell in result.results()["cells"]}


def test_a_group_printed_last_gives_its_own_line_never_its_closing_rule(
    cli: Cli, tmp_path: Path
) -> None:
    """Printed, then `sys.exit(2)`: the message is the group's own line, as a KeyError's
    would be (`KeyError: 'x'`), its type and members the last traceback's; printed, then
    `sys.exit(1)`, and uncaught, the group is the exception, its message its own. Read from
    stderr alone too (`python -S`)."""
    (tmp_path / "groups.py").write_text(_GROUPS)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: printed-groups\nmatrix:\n"
        "  kind: [printed, logged, base, uncaught]\n  code: [1, 2]\n"
        "  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} groups.py ${{ matrix.kind }} ${{ matrix.code }}\n"
        "run: {timeout: 30s}\nexpect: {outcome: error}\n"
    )
    outcomes = _outcomes(cli, spec)
    assert len(outcomes) == 16
    said = {
        "printed": ("ExceptionGroup", "two failed (2 sub-exceptions)"),
        "logged": ("ExceptionGroup", "two failed (2 sub-exceptions)"),
        "base": ("BaseExceptionGroup", "stop (1 sub-exception)"),
        "uncaught": ("ExceptionGroup", "two failed (2 sub-exceptions)"),
    }
    for cell, outcome in outcomes.items():
        kind = cell.split(",")[0].removeprefix("kind=")
        group, message = said[kind]
        assert "+--" not in (outcome["message"] or ""), (cell, outcome)
        if ",code=2," in f"{cell}," and kind != "uncaught":
            # The process went on from the group: no exception of the outcome.
            assert (outcome["exception"], outcome["message"]) == (None, f"{group}: {message}")
            assert outcome["signature"] == "error:exit-2", (cell, outcome)
            assert outcome["last_traceback"]["type"] == group, (cell, outcome)
            assert outcome["last_traceback"]["members"], (cell, outcome)
        else:
            assert (outcome["exception"], outcome["message"]) == (group, message), (cell, outcome)
            assert outcome["members"], (cell, outcome)


_LOGGED = textwrap.dedent(
    """
    import logging, sys
    logging.basicConfig(format=sys.argv[1])
    try:
        {}["x"]
    except KeyError:
        logging.exception("lookup failed")
    if sys.argv[2] == "elsewhere":
        root = ValueError("root")  # made apart from the raise: its line names no class
        raise RuntimeError("top") from root
    raise RuntimeError("top") from ValueError("root")
    """
)


def test_a_logged_traceback_is_no_part_of_the_chain_that_ends_the_process(
    cli: Cli, tmp_path: Path
) -> None:
    """`logging.exception(...)` then `raise RuntimeError("top") from ValueError("root")`:
    the logged KeyError's traceback is read apart (the log record above it), and the cause
    never raised below it keeps its place in the chain, in logging's default format and a
    dated one, made in the raise or apart from it (`from root`: no class named), from the
    program's record and from stderr alone (`python -S`)."""
    (tmp_path / "logged.py").write_text(_LOGGED)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: logged\nmatrix:\n"
        "  format: ['%(levelname)s:%(name)s:%(message)s',"
        " '%(asctime)s %(levelname)s %(message)s']\n"
        "  python: ['python', 'python -S']\n  raise: [in_place, elsewhere]\n"
        "command: ${{ matrix.python }} logged.py '${{ matrix.format }}' ${{ matrix.raise }}\n"
        "run: {timeout: 30s}\n"
        "expect: {outcome: error, exception: ValueError, message: '^root$'}\n"
    )
    outcomes = _outcomes(cli, spec)
    assert len(outcomes) == 8
    for cell, outcome in outcomes.items():
        chain = [(link["type"], link["message"], link["link"]) for link in outcome["chain"]]
        assert chain == [("ValueError", "root", "cause"), ("RuntimeError", "top", None)], cell


_NATIVE = textwrap.dedent(
    """
    def load():
        raise KeyError("missing")

    def test_raised():
        try:
            load()
        except KeyError as e:
            raise RuntimeError("wrapped") from e

    def test_unraised():
        raise RuntimeError("top") from KeyError("root")
    """
)


def test_a_pytest_native_traceback_gives_the_tests_chain(cli: Cli, tmp_path: Path) -> None:
    """`--tb=native` prints a test's chain as CPython does, link lines and all, and no `E`
    line: the chain read none, and `expect.exception: KeyError` (the cause) missed."""
    (tmp_path / "test_native.py").write_text(_NATIVE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: native\nmatrix:\n  test: [test_raised, test_unraised]\n"
        "command: python -m pytest -q -p no:cacheprovider --tb=native"
        " test_native.py::${{ matrix.test }}\nrun: {timeout: 60s}\n"
        "expect: {outcome: error, exception: KeyError}\n"
    )
    outcomes = _outcomes(cli, spec)
    chains = {
        cell: [(link["type"], link["message"], link["link"]) for link in outcome["chain"]]
        for cell, outcome in outcomes.items()
    }
    assert chains == {
        "test=test_raised": [("KeyError", "'missing'", "cause"), ("RuntimeError", "wrapped", None)],
        "test=test_unraised": [("KeyError", "'root'", "cause"), ("RuntimeError", "top", None)],
    }, chains
    assert {outcome["exception"] for outcome in outcomes.values()} == {"RuntimeError"}


_STYLES = textwrap.dedent(
    """
    def load():
        raise KeyError("x")

    def test_cause():
        raise RuntimeError("top") from KeyError("x")

    def test_during():
        try:
            load()
        except KeyError:
            raise ValueError("while handling")
    """
)


def test_pytests_own_traceback_styles_give_the_chain_native_gives(cli: Cli, tmp_path: Path) -> None:
    """`--tb=long` and `--tb=short` print a chained failure in pytest's own format (its
    parts joined by CPython's link line, `E` lines, a cause never raised as its own line):
    the chain read none, where `--tb=native` of the same test read it. `--tb=line` and
    `--tb=no` print no chain: none is read. Under pytest-xdist (`-n 2`) too."""
    (tmp_path / "test_styles.py").write_text(_STYLES)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: styles\nmatrix:\n  test: [test_cause, test_during]\n"
        "  tb: [native, long, short, line, 'no']\n"
        "command: python -m pytest -q -p no:cacheprovider --tb=${{ matrix.tb }}"
        " test_styles.py::${{ matrix.test }}\nrun: {timeout: 60s}\n"
        "expect: {outcome: error}\n"
    )
    outcomes = _outcomes(cli, spec)
    assert len(outcomes) == 10
    chains = {
        cell: [(link["type"], link["message"], link["link"]) for link in outcome.get("chain", [])]
        for cell, outcome in outcomes.items()
    }
    native = {
        "test_cause": [("KeyError", "'x'", "cause"), ("RuntimeError", "top", None)],
        "test_during": [("KeyError", "'x'", "context"), ("ValueError", "while handling", None)],
    }
    for test, chain in native.items():
        for tb in ("native", "long", "short"):
            assert chains[f"test={test},tb={tb}"] == chain, (test, tb, chains)
        for tb in ("line", "no"):
            assert chains[f"test={test},tb={tb}"] == [], (test, tb, chains)
    assert {outcome["exception"] for outcome in outcomes.values()} == {
        "RuntimeError",
        "ValueError",
    }
    if not HAVE_XDIST:
        return
    # Under pytest-xdist (`-n 2`) a `[gw1] linux -- Python ...` line heads each section,
    # right above the cause never raised (`KeyError: 'x'`): read as a line of its part,
    # which then said no type, and the chain was missed under long, short and auto.
    spec.write_text(
        "reprospec: 1\nname: styles-xdist\nmatrix:\n  tb: [long, short, auto]\n"
        "command: python -m pytest -q -p no:cacheprovider -p no:hypothesispytest -n 2"
        " --tb=${{ matrix.tb }} test_styles.py::test_cause\nrun: {timeout: 60s}\n"
        "expect: {outcome: error, exception: KeyError}\n"
    )
    for cell, outcome in _outcomes(cli, spec).items():
        chain = [(link["type"], link["message"], link["link"]) for link in outcome.get("chain", [])]
        assert chain == native["test_cause"], (cell, chain)


_MADE = textwrap.dedent(
    """
    import sys
    kind = sys.argv[1]
    class Timeout(Exception):
        pass
    if kind == "note":
        print("Note: retrying", file=sys.stderr)
    elif kind == "doubt":
        print("Timeout: was retried", file=sys.stderr)
    if kind == "elsewhere":
        err = Timeout("slow\\nafter 3 tries")
        raise RuntimeError("top") from err
    raise RuntimeError("top") from Timeout("slow\\nafter 3 tries")
    """
)


def test_a_multiline_cause_the_raise_makes_in_place_is_read_by_the_class_it_names(
    cli: Cli, tmp_path: Path
) -> None:
    """A cause never raised of a type not named as a class, its message over two lines
    (`Timeout("slow\\nafter 3 tries")`), read no cause: its first line reads as any
    output's would. The raise's source line in the traceback below names its class
    (`from Timeout(`), so its one `Timeout` line is the cause's, under a line of other
    output too; not where two lines are of that class, nor where the raise names none
    (`from err`). From stderr alone (`python -S`)."""
    (tmp_path / "made.py").write_text(_MADE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: made\nmatrix:\n  kind: [alone, note, doubt, elsewhere]\n"
        "command: python -S made.py ${{ matrix.kind }}\nrun: {timeout: 30s}\n"
        "expect: {outcome: error}\n"
    )
    chains = {
        cell.removeprefix("kind="): [
            (link["type"], link["message"], link["link"]) for link in outcome.get("chain", [])
        ]
        for cell, outcome in _outcomes(cli, spec).items()
    }
    read = [("Timeout", "slow\nafter 3 tries", "cause"), ("RuntimeError", "top", None)]
    assert chains == {"alone": read, "note": read, "doubt": [], "elsewhere": []}, chains


_FETCHED_KEY = textwrap.dedent(
    """
    import sys
    from concurrent.futures import ThreadPoolExecutor
    kind, note = sys.argv[1], {
        "plain": "while reading cfg.yaml",
        "hint": "Hint: check cfg.yaml",
        "cls": "OSError: disk full",
    }[sys.argv[2]]
    def load():
        try:
            return {}["batch_size"]
        except KeyError as e:
            e.add_note(note)
            raise
    if kind == "future":
        with ThreadPoolExecutor(1) as pool:
            fut = pool.submit(load)
            fut.exception()
        raise RuntimeError("loading failed") from fut.exception()
    if kind == "current":
        try:
            load()
        except KeyError:
            raise RuntimeError("loading failed") from sys.exception()
    try:
        load()
    except KeyError as e:
        raise RuntimeError("resume from checkpoint (step 100) failed") from e
    """
)


def test_a_raised_key_errors_notes_stay_its_own_whatever_fetches_it(
    cli: Cli, tmp_path: Path
) -> None:
    """A KeyError raised, given a note (`e.add_note(...)`), and made the cause by a call
    (`from fut.exception()`, `from sys.exception()`) or by a name in a raise whose message
    says `from checkpoint (step 100)`: its traceback above the link, its note under its
    line. The note is its message's, however it reads (`Hint: check cfg.yaml`, `OSError:
    disk full`): a rule that cut a printed KeyError at its one line, where the raise below
    looked as if it made its cause by a call, dropped the KeyError and read its note as a
    cause never raised (`Hint`, `OSError`), from stderr alone (`python -S`) and from the
    program's record alike."""
    (tmp_path / "fetched.py").write_text(_FETCHED_KEY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: fetched-key\nmatrix:\n  kind: [future, current, named]\n"
        "  note: [plain, hint, cls]\n  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} fetched.py ${{ matrix.kind }} ${{ matrix.note }}\n"
        "run: {timeout: 30s}\nexpect: {outcome: error, exception: KeyError}\n"
    )
    outcomes = _outcomes(cli, spec)
    assert len(outcomes) == 18
    notes = {
        "plain": "while reading cfg.yaml",
        "hint": "Hint: check cfg.yaml",
        "cls": "OSError: disk full",
    }
    for cell, outcome in outcomes.items():
        kind, note = (part.split("=", 1)[1] for part in cell.split(",")[:2])
        top = "resume from checkpoint (step 100) failed" if kind == "named" else "loading failed"
        chain = [(link["type"], link["message"], link["link"]) for link in outcome["chain"]]
        assert chain == [
            ("KeyError", f"'batch_size'\n{notes[note]}", "cause"),
            ("RuntimeError", top, None),
        ], (cell, chain)


_LOGGED_LITERAL = textwrap.dedent(
    """
    import logging, sys
    try:
        raise ValueError("bad\\nOSError: disk full")
    except ValueError as e:
        logging.error("failed")
        raise RuntimeError("X") from e
    """
)


def test_a_line_of_its_raises_literal_under_a_log_record_is_its_message(
    cli: Cli, tmp_path: Path
) -> None:
    """`log.error("failed")`, then `raise RuntimeError("X") from e` of a ValueError whose
    message runs over two lines, the second named as a class (`"bad\\nOSError: disk full"`):
    under the record, the ValueError's traceback read as a logged one, and the line
    `OSError: disk full` as a cause never raised, made up. The raise's source line above
    shows that line in its literal, after a `\\n`: it is the ValueError's, the cause. From
    stderr alone (`python -S`) as from the program's record."""
    (tmp_path / "literal.py").write_text(_LOGGED_LITERAL)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: literal\nmatrix:\n  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} literal.py\nrun: {timeout: 30s}\n"
        "expect: {outcome: error, exception: ValueError}\n"
    )
    for cell, outcome in _outcomes(cli, spec).items():
        chain = [(link["type"], link["message"], link["link"]) for link in outcome["chain"]]
        assert chain == [
            ("ValueError", "bad\nOSError: disk full", "cause"),
            ("RuntimeError", "X", None),
        ], (cell, chain)


_LOGGED_THEN_MADE = textwrap.dedent(
    """
    import logging
    logging.basicConfig()
    log = logging.getLogger("app")
    try:
        raise ValueError("bad\\nOSError: disk full on /data")
    except ValueError:
        log.exception("failed")
    err = OSError("disk full")
    raise RuntimeError("top") from err
    """
)


def test_a_line_that_is_a_piece_of_a_logged_literals_line_is_not_its_message(
    cli: Cli, tmp_path: Path
) -> None:
    """A ValueError logged (`log.exception`), its message `"bad\\nOSError: disk full on
    /data"`, then `raise RuntimeError("top") from err` of an `OSError("disk full")` never
    raised, printed as its line alone under the logged one. Each line between read as a
    piece of the literal (`\\nOSError: disk full` is in it), the logged traceback as the
    chain's own block, and the logged ValueError as the cause, under `python -S`. The
    literal is the logged message only where it spells its lines whole and in order: here
    it does not, and from stderr alone the cause is missed (two lines above the link may
    each be its line), not the logged one made the cause. The program's record reads it."""
    (tmp_path / "made.py").write_text(_LOGGED_THEN_MADE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: logged-made\nmatrix:\n  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} made.py\nrun: {timeout: 30s}\n"
        "expect: {outcome: error}\n"
    )
    outcomes = _outcomes(cli, spec)
    chains = {
        cell: [(link["type"], link["message"], link["link"]) for link in outcome.get("chain", [])]
        for cell, outcome in outcomes.items()
    }
    assert chains == {
        "python=python": [("OSError", "disk full", "cause"), ("RuntimeError", "top", None)],
        "python=python -S": [],  # the RuntimeError alone: no chain
    }, chains
    assert {outcome["exception"] for outcome in outcomes.values()} == {"RuntimeError"}
