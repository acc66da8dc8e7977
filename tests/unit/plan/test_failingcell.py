"""The one rule isolate, amplify, bisect and minimize choose their failing cell by.

amplify and bisect refused every spec with more than one cell unless -m picked one,
even where the spec's own expect said only one cell fails (new user's report); each
verb had its own copy of the rule."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.plan.failingcell import (
    Amplified,
    FailingCell,
    Several,
    cell_filters,
    choose_failing_cell,
)
from reprospec.plan.run import RunPlan, plan_run
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import select

# Exit 3 when A and B are both set: one cell fails (a=1,b=1), the others pass.
ONE_FAILS = """\
matrix: {a: ["0", "1"], b: ["0", "1"]}
expect:
  outcome: error
  exit_code: 3
  cases:
    - {when: {a: "0"}, outcome: pass}
    - {when: {b: "0"}, outcome: pass}
"""
# a=1 fails with b=1 and with b=2: two cells expected to fail.
TWO_FAIL = """\
matrix: {a: ["0", "1"], b: ["0", "1", "2"]}
expect:
  outcome: error
  exit_code: 3
  cases:
    - {when: {a: "0"}, outcome: pass}
    - {when: {b: "0"}, outcome: pass}
"""


def plan(tmp_path: Path, body: str) -> RunPlan:
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: cells\ncommand: 'exit 3'\n" + body)
    return plan_run(load_spec(spec), RunOptions(out=tmp_path))


def choose(
    found: RunPlan, *filters: str, verb: str = "amplify", several: Several = "refuse"
) -> FailingCell:
    return choose_failing_cell(
        found.cells, found.expectations, filters, verb=verb, several=several, spec="spec.yaml"
    )


def test_the_only_cell_expected_to_fail_is_taken_and_said(tmp_path: Path) -> None:
    found = choose(plan(tmp_path, ONE_FAILS))
    assert found.cell.id == "a=1,b=1"
    assert found.said() == "cell a=1,b=1: the only one of 4 cells expected to fail"
    assert [c.id for c in found.candidates] == ["a=1,b=1"]
    # -m that keeps several cells, one of them expected to fail: that one.
    kept = choose(plan(tmp_path, ONE_FAILS), "a=1")
    assert kept.cell.id == "a=1,b=1"
    assert kept.reason == "the only one of the 2 cells -m a=1 keeps expected to fail"
    # -m that keeps exactly one cell: that one.
    exact = choose(plan(tmp_path, ONE_FAILS), "a=1", "b=1")
    assert exact.reason == "the one cell -m a=1 -m b=1 keeps"


def test_an_amplified_cell_is_the_cell_or_refused_where_the_spec_lacks_it(
    tmp_path: Path,
) -> None:
    """`isolate --amplify DIR` of an amplification of a=1,b=2 took the first cell expected
    to fail, a=1,b=1, and said it was amplified: the amplified cell is the failing cell,
    and one the spec as given has not, or -m leaves out, is refused."""
    found = plan(tmp_path, TWO_FAIL)
    amplified = Amplified("a=1,b=2", "out/amplify/x")

    def pick(*filters: str) -> FailingCell:
        return choose_failing_cell(
            found.cells,
            found.expectations,
            filters,
            verb="isolate",
            several="first",
            spec="spec.yaml",
            amplified=amplified,
        )

    chosen = pick()
    assert chosen.cell.id == "a=1,b=2"
    assert chosen.candidates == (chosen.cell,)
    assert chosen.said() == "cell a=1,b=2: the cell --amplify out/amplify/x measured"
    assert pick("a=1").cell.id == "a=1,b=2"  # -m keeps it among others
    with pytest.raises(UsageError) as left_out:
        pick("b=1")
    assert str(left_out.value) == (
        "--amplify out/amplify/x: the amplification measured cell a=1,b=2, which -m b=1 "
        "leaves out: its perturbation is known to raise the rate there only; drop -m "
        "(isolate then works on cell a=1,b=2), or amplify the cell meant "
        "(reprospec amplify spec.yaml -m b=1)"
    )
    amplified = Amplified("a=1,b=9", "out/amplify/x")
    with pytest.raises(UsageError) as missing:
        pick()
    assert "measured cell a=1,b=9, which spec.yaml as given has not (its cells: a=0,b=0, " in (
        str(missing.value)
    )
    amplified = Amplified("a=0,b=1", "out/amplify/x")
    with pytest.raises(UsageError) as passes:
        pick()
    assert "cell a=0,b=1, which spec.yaml as given expects to pass: isolate needs" in str(
        passes.value
    )


def test_an_amplified_cell_is_read_from_its_folder_or_file(tmp_path: Path) -> None:
    (tmp_path / "amplify.json").write_text('{"cell": "a=1,b=2", "settings": {"gc": 1}}')
    assert Amplified.read(tmp_path) == Amplified("a=1,b=2", str(tmp_path))
    file = tmp_path / "amplify.json"
    assert Amplified.read(file) == Amplified("a=1,b=2", str(file))
    assert Amplified.read(tmp_path / "missing") is None
    (tmp_path / "amplify.json").write_text("[]")
    assert Amplified.read(tmp_path) is None


def test_several_are_refused_with_the_m_that_picks_each(tmp_path: Path) -> None:
    found = plan(tmp_path, TWO_FAIL)
    with pytest.raises(UsageError) as refused:
        choose(found)
    said = str(refused.value)
    assert said.startswith(
        "amplify runs one cell, and 2 cells of spec.yaml are expected to fail: choose one with -m:"
    )
    assert "-m b=1 (cell a=1,b=1); -m b=2 (cell a=1,b=2)" in said
    # Each advised -m, typed, leaves its cell the only one expected to fail.
    for words, cell in (("-m b=1", "a=1,b=1"), ("-m b=2", "a=1,b=2")):
        filters = shlex.split(words)[1::2]
        assert choose(found, *filters).cell.id == cell
    # Under the user's own -m, the advice keeps it (on the axes it does not replace).
    with pytest.raises(UsageError) as refused:
        choose(found, "a=1")
    assert "-m a=1 keeps 2 cells of spec.yaml expected to fail" in str(refused.value)
    assert "-m a=1 -m b=2 (cell a=1,b=2)" in str(refused.value)
    # isolate (and minimize) take the first, and say which other -m there is.
    first = choose(found, verb="isolate", several="first")
    assert first.cell.id == "a=1,b=1"
    assert first.reason == "the first of 2 cells expected to fail (another: -m b=2)"
    assert [c.id for c in first.candidates] == ["a=1,b=1", "a=1,b=2"]


def test_a_value_that_needs_quoting_is_advised_quoted(tmp_path: Path) -> None:
    found = plan(
        tmp_path,
        'matrix: {flag: ["--fast mode", "--slow mode", "off"]}\n'
        "expect: {outcome: error, cases: [{when: {flag: 'off'}, outcome: pass}]}\n",
    )
    with pytest.raises(UsageError) as refused:
        choose(found)
    assert "-m 'flag=--fast mode' (cell flag=--fast mode)" in str(refused.value)


def test_none_expected_to_fail_is_refused_but_a_one_cell_spec_is_the_verbs_to_judge(
    tmp_path: Path,
) -> None:
    found = plan(tmp_path, ONE_FAILS)
    with pytest.raises(UsageError, match=r"^no cell kept by -m a=0 is expected to fail: "):
        choose(found, "a=0")
    # Kept to one cell by -m, expected to pass: refused the same way.
    with pytest.raises(UsageError, match=r"^no cell kept by -m a=0 -m b=1 is expected"):
        choose(found, "a=0", "b=1")
    every = plan(tmp_path, "matrix: {a: [1, 2]}\nexpect: {outcome: pass}\n")
    with pytest.raises(UsageError, match=r"^no cell of spec\.yaml is expected to fail: amplify"):
        choose(every)
    # No expect at all (observe mode) fails nothing either, and is told what it lacks.
    observed = plan(tmp_path, "matrix: {a: [1, 2]}\n")
    with pytest.raises(UsageError, match=r"^amplify needs the spec's expect"):
        choose(observed)
    # A one-cell spec: its cell, which the verb refuses in its own words if need be.
    alone = choose(plan(tmp_path, "expect: {outcome: pass}\n"))
    assert (alone.candidates, alone.total, alone.reason) == ((), 1, "the spec's only cell")


def test_cell_filters_keep_the_cell_alone_among_include_cells(tmp_path: Path) -> None:
    # An axis only an include entry adds is null in the other cells; a string "1" is not 1.
    found = plan(
        tmp_path,
        'matrix:\n  n: ["1", 1]\n  include:\n    - {n: 1, pin: x}\nexpect: {outcome: error}\n',
    )
    assert [c.id for c in found.cells] == ["n=1", "n=1,pin=x"]
    for cell in found.cells:
        assert list(select(found.cells, cell_filters(cell, found.cells))) == [cell]


@pytest.mark.parametrize("verb", ["amplify", "bisect"])
def test_a_spec_without_expect_is_told_it_needs_one(tmp_path: Path, verb: str) -> None:
    # "no cell of spec.yaml is expected to fail" sent the writer of a spec without expect
    # (one `run --observe` ran) looking for a wrong expect; isolate said what was missing.
    # (Isolate's and minimize's drivers refuse such a spec before a cell is chosen:
    # tests/unit/minimize/test_driver.py, tests/functional/commands/test_isolate.py.)
    found = plan(tmp_path, 'matrix: {a: ["0", "1"]}\n')
    with pytest.raises(UsageError) as refused:
        choose(found, verb=verb)
    assert str(refused.value) == (
        f"{verb} needs the spec's expect: it says how the failing cell fails (the same "
        "signature, not any failure); `run --observe` shows what each cell does"
    )
