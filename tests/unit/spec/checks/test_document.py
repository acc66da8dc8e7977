"""checks.check: each per-cell check runs beside the file's other problems wherever none of
them lies in what it reads, so one `validate` says them all; and never on a field it reads
that is already found malformed (it would crash, or say that mistake again in other words).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject
from reprospec.errors import SpecError
from reprospec.spec.checks.cells import Troubled, top_level_keys
from reprospec.spec.load import load_spec
from reprospec.spec.yamlsource import Problem

HEAD = "reprospec: 1\nname: s\n"
COMMAND = "command: [python3, -c, \"open('EXECUTED', 'w')\"]\n"
WORKLOAD = (
    "workload:\n"
    "  model: {builtin: mlp, params: {hidden: 8}}\n"
    "  data:\n"
    "    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}\n"
    "    loader: {batch_size: 4, num_workers: '${{ matrix.w }}'}\n"
    "  phases: [{name: train, steps: 3}]\n"
    "  faults:\n"
    "    - {kind: segfault, where: worker, at: {phase: train, step: 2}, when: '${{ matrix.f }}'}\n"
)


def problems_of(tmp_path: Path, text: str) -> list[str]:
    """What loading `text` as tmp_path/s.yaml says, each line without the file's name."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    (tmp_path / "here").mkdir(exist_ok=True)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return [line.removeprefix(f"{path}:") for line in caught.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            # A typo at the top level (path `()`) and a timeout a matrix value makes bad.
            HEAD
            + COMMAND
            + "titel: x\nmatrix: {t: [10s, -5s]}\nrun: {timeout: '${{ matrix.t }}'}\n",
            [
                "4:1: (top level): unknown key 'titel' (did you mean 'title'?)",
                "6:16: run.timeout: expected a duration like 90s, 5m or 1h, got '-5s'"
                " (in cell t=-5s)",
            ],
            id="value-beside-a-top-level-typo",
        ),
        pytest.param(
            # A contradiction in expect, and a memory no cell can have: two sections apart.
            HEAD + COMMAND + "matrix: {m: [4g, lots]}\nenvironment: {memory: '${{ matrix.m }}'}\n"
            "expect: {outcome: crash, signal: SIGSEGV, exit_code: 3}\n",
            [
                "5:23: environment.memory: expected a size like 64m or 4g, got 'lots'"
                " (in cell m=lots)",
                "6:54: expect.exit_code: an exit code only happens with outcome error (or fail),"
                " not 'crash'",
            ],
            id="value-beside-an-expect-contradiction",
        ),
        pytest.param(
            # A marker regex that cannot compile, and a stall not below one cell's timeout.
            HEAD + COMMAND + "matrix: {t: [1m, 10s]}\n"
            "markers: [{pattern: '(', phase: x}]\n"
            "run: {timeout: '${{ matrix.t }}', stall: 30s}\n",
            [
                "5:21: markers[0].pattern: bad regular expression: missing ), unterminated"
                " subpattern at position 0",
                "6:42: run.stall: 30s is not below run.timeout (10s): the timeout would always"
                " end the attempt first (in cell t=10s)",
            ],
            id="stall-beside-a-bad-marker",
        ),
        pytest.param(
            # A bad title and a worker fault that no cell arming it can fire.
            HEAD
            + "title: [1]\nmatrix: {w: [0], f: [true]}\n"
            + WORKLOAD
            + "expect: {outcome: crash, signal: SIGSEGV}\n",
            [
                "3:8: title: expected a string, got a list",
                "12:7: workload.faults[0]: this fault can never fire: where: worker needs "
                "num_workers > 0; this cell has 0 (in cell w=0,f=true)",
            ],
            id="fault-beside-a-bad-title",
        ),
        pytest.param(
            # An unknown key in run, and `outcome: pass` with `rate: ==0` in one cell.
            HEAD + COMMAND + "matrix: {o: [pass, error]}\nrun: {repats: 3}\n"
            "expect: {outcome: '${{ matrix.o }}', rate: '==0'}\n",
            [
                "5:7: run: unknown key 'repats' (did you mean 'repeat'?)",
                "6:44: expect.rate: rate '==0' counts the attempts that pass (a rate counts those"
                " that end as the expectation's outcome, here pass), so it says the cell never"
                " passes; to say it always passes, give no rate (without one every attempt must"
                " pass); to say it never passes, write `outcome: fail` (an error, a crash or a"
                " hang) instead (in cell o=pass)",
            ],
            id="never-passes-beside-an-unknown-run-key",
        ),
        pytest.param(
            # A workdir one cell's value does not name, beside a `links` entry of a wrong type.
            HEAD + COMMAND + "links: 3\nmatrix: {w: [here, gone]}\n"
            "environment: {workdir: '${{ matrix.w }}'}\n",
            [
                "4:8: links: expected a list, got 3",
                "6:24: environment.workdir: folder not found: {tmp}/gone (in cell w=gone)",
            ],
            id="workdir-beside-bad-links",
        ),
        pytest.param(
            # A bad description, and GPU diagnostics that cannot pair in one cell.
            HEAD + COMMAND + "description: [x]\nmatrix: {c: [false, true]}\nenvironment:\n"
            "  debug: {compute_sanitizer: memcheck, cuda_coredump: '${{ matrix.c }}'}\n",
            [
                "4:14: description: expected a string, got a list",
                "7:55: environment.debug.cuda_coredump: cannot pair with compute_sanitizer:"
                " memcheck: compute-sanitizer handles the faults itself and no GPU core is"
                " written; make them two cells (in cell c=true)",
            ],
            id="gpu-debug-beside-a-bad-description",
        ),
        pytest.param(
            # The matrix expanded beside a top-level typo: two cells of one id.
            HEAD + COMMAND + "titel: x\nmatrix: {a: [1, '1']}\n",
            [
                "4:1: (top level): unknown key 'titel' (did you mean 'title'?)",
                "5:9: matrix: cells 1 and 2 have the same id 'a=1' (a repeated value, or values"
                " that render alike such as 1 and '1')",
            ],
            id="matrix-beside-a-top-level-typo",
        ),
    ],
)
def test_a_per_cell_problem_is_said_beside_an_unrelated_one(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    # On the old code the per-cell check waited for a file free of the other problem: one
    # validate said the typo, a second the value.
    assert problems_of(tmp_path, text) == [e.format(tmp=tmp_path) for e in expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            # A `0s` timeout is refused; a stall "not below" it would say that mistake again.
            HEAD
            + COMMAND
            + "matrix: {s: [5s, 1s]}\nrun: {timeout: 0s, stall: '${{ matrix.s }}'}\n",
            ["5:16: run.timeout: expected a duration > 0, got '0s'"],
            id="stall-against-a-refused-timeout",
        ),
        pytest.param(
            # The case meant for the `==0` cell has a `when` of the wrong shape: read as no
            # case, that cell would be said to "never pass" where its author meant an error.
            HEAD + COMMAND + "matrix: {r: ['==0', '>0']}\n"
            "expect:\n  outcome: pass\n  rate: '${{ matrix.r }}'\n"
            "  cases:\n    - {when: [r, '==0'], outcome: error}\n",
            ["9:14: expect.cases[0].when: expected a mapping of matrix axis to value, got a list"],
            id="never-passes-with-a-malformed-case",
        ),
        pytest.param(
            # No `name`: `${{ spec.name }}` is null, and the workdir "null, not a string".
            "reprospec: 1\n" + COMMAND + "environment: {workdir: '${{ spec.name }}'}\n",
            ["1:1: (top level): missing required key 'name'"],
            id="spec-name-missing",
        ),
        pytest.param(
            # `command` and `workload` both given: which one runs is the user's to say.
            HEAD + COMMAND + "matrix: {w: [0], f: [true]}\n" + WORKLOAD,
            ["5:1: (top level): 'workload' and 'command' are both given; expected exactly one"],
            id="fault-of-a-workload-beside-a-command",
        ),
        pytest.param(
            # `markers` of the wrong shape (one mapping, not a list of them): its `pattern`
            # is no marker's, and was judged as a regex per cell all the same.
            HEAD + COMMAND + "matrix: {p: ['(', x]}\nmarkers: {pattern: '${{ matrix.p }}'}\n",
            ["5:10: markers: expected a list, got a mapping"],
            id="a-section-of-the-wrong-shape",
        ),
    ],
)
def test_no_per_cell_check_reads_a_field_found_malformed(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    # Each of these said the same mistake twice, or nonsense, with the per-cell checks run
    # regardless of the other problems (the guard the old code had, kept per path).
    assert problems_of(tmp_path, text) == expected


def test_a_top_level_problem_troubles_the_keys_it_is_about() -> None:
    data: JsonObject = {"reprospec": 1, "command": "x", "workload": {}, "titel": "x", "run": {}}
    assert sorted(top_level_keys(data)) == [("command",), ("name",), ("titel",), ("workload",)]
    troubled = Troubled.of(data, [Problem(1, 1, (), "...")])
    assert troubled.touches([("name",)])
    assert troubled.touches([("workload", "faults")])
    assert not troubled.touches([("run", "timeout")])
    # A key problem is located at its mapping: every path under it is troubled.
    in_run = Troubled.of(data, [Problem(1, 1, ("run",), "unknown key 'timout'")])
    assert in_run.touches([("run", "timeout")])
    assert not in_run.touches([("expect",)])
    # Nothing known of where it lies: everything.
    assert Troubled.of(data, [Problem(1, 1, None, "...")]).touches([("title",)])


def test_a_marker_with_another_tools_key_for_its_pattern_is_one_problem_naming_it(
    tmp_path: Path,
) -> None:
    """`markers: [{regex: ...}]` said two problems, "needs a 'pattern'" and "unknown key
    'regex' (expected one of ...)", and neither named the key meant. A marker with only
    known keys and no pattern is still told it needs one."""
    found = problems_of(
        tmp_path, HEAD + COMMAND + "markers: [{regex: 'step (?P<step>\\d+)'}, {phase: x}]\n"
    )
    assert found == [
        "4:12: markers[0]: unknown key 'regex' (did you mean 'pattern'?)",
        "4:42: markers[1]: a marker needs a 'pattern' (or a 'preset')",
    ], found
