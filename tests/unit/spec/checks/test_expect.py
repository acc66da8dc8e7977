"""expect's rate against its outcome: a bound that says "never passes" of a pass, in-process.

A rate counts the attempts that end as the expectation's own outcome: `{when: {fast: 0},
outcome: pass, rate: "==0"}`, meant as "never crashes", said "never passes", validated, and
its run read `pass 10/10 ... not-reproduced`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.errors import SpecError
from reprospec.spec.load import load_spec

SPEC = """reprospec: 1
name: lru
matrix:
  fast: [0, 1]
command: python cache.py --fast ${{{{ matrix.fast }}}}
expect:
  outcome: {outcome}
  rate: ">=0.3"
  cases:
    - when: {{fast: 0}}
{case}"""


def spec(tmp_path: Path, case: str, outcome: str = "crash") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SPEC.format(outcome=outcome, case=case))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return [line.removeprefix(f"{path}:") for line in caught.value.problems]


def test_a_pass_case_with_rate_zero_is_refused_located(tmp_path: Path) -> None:
    path = spec(tmp_path, '      outcome: pass\n      rate: "==0"\n')
    assert problems_of(path) == [
        "12:13: expect.cases[0].rate: rate '==0' counts the attempts that pass (a rate counts "
        "those that end as the expectation's outcome, here pass), so it says the cell never "
        "passes; to say it always passes, give no rate (without one every attempt must pass), "
        "or leave out `outcome: pass` so the case keeps expect's outcome (crash) and rate "
        "'==0' says it never crashes as expect says; to say it never passes, write "
        "`outcome: fail` (an error, a crash or a hang) instead"
    ]


def test_expect_s_own_pass_with_rate_zero_is_refused_without_the_case_s_hint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        'reprospec: 1\nname: p\ncommand: "true"\nexpect:\n  outcome: pass\n  rate: "==0"\n'
    )
    (problem,) = problems_of(path)
    assert problem.startswith("6:9: expect.rate: rate '==0' counts the attempts that pass")
    assert problem.endswith(
        "give no rate (without one every attempt must pass); to say it never passes, write "
        "`outcome: fail` (an error, a crash or a hang) instead"
    )


@pytest.mark.parametrize(
    "case",
    [
        '      rate: "==0"\n',  # keeps expect's crash: never crashes, as meant
        "      outcome: pass\n",  # every attempt passes
        '      outcome: pass\n      rate: ">=0.9"\n',  # passes at least 90% of the time
        "      outcome: fail\n",  # never passes: what the refusal says to write for that
    ],
)
def test_what_the_refusal_suggests_and_a_flaky_pass_validate(tmp_path: Path, case: str) -> None:
    load_spec(spec(tmp_path, case))
