"""A rate bound no number of attempts can decide is refused at validation, located.

The Wilson interval's low end never reaches 1 (and its high end never 0), so
`rate: ">=1.0"` used to run, read `undecided ... run more attempts`, and make
`repeat: auto` spend `max_repeat` on it. Now the spec is refused with the exact
form to write, where the bound is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Cli

_SPEC = """\
reprospec: 1
name: always
matrix:
  n: [1, 2]
command: "exit 3"
run: {{repeat: auto}}
expect:
  outcome: error
  rate: "{base}"
  cases:
    - when: {{n: 2}}
      rate: "{case}"
"""


@pytest.mark.parametrize(
    ("base", "case", "line", "exact"),
    [(">=1.0", ">=0.5", 9, "'==1'"), (">0.5", "<=0", 12, "'==0'"), (">=1", ">=0.2", 9, "'==1'")],
)
def test_a_bound_the_interval_never_decides_is_refused(
    cli: Cli, tmp_path: Path, base: str, case: str, line: int, exact: str
) -> None:
    spec = tmp_path / "always.yaml"
    spec.write_text(_SPEC.format(base=base, case=case))
    for verb in ("validate", "run"):
        result = cli(verb, str(spec))
        assert result.code == 2, result.stdout + result.stderr
        text = result.stdout + result.stderr
        assert f"always.yaml:{line}:" in text
        assert "can never be reproduced" in text
        assert f"write {exact}" in text
        assert "Traceback" not in text
    assert not (tmp_path / "out" / "runs").exists()


def test_the_exact_form_runs(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "always.yaml"
    spec.write_text(_SPEC.format(base="==1", case="==1"))
    result = cli("run", str(spec), "--repeat", "2")
    assert result.code == 0, result.stdout + result.stderr
    assert "2/2 cells reproduced" in result.stdout


def test_a_pass_case_that_says_never_passes_is_refused_with_what_to_write(
    cli: Cli, tmp_path: Path
) -> None:
    """`{outcome: pass, rate: "==0"}`, meant as "never crashes", validated and
    ran `pass 10/10 ... not-reproduced`: a rate counts the case's own outcome."""
    spec = tmp_path / "cache.yaml"
    spec.write_text(
        _SPEC.format(base=">=0.3", case="==0").replace(
            '      rate: "==0"', '      outcome: pass\n      rate: "==0"'
        )
    )
    for verb in ("validate", "run"):
        result = cli(verb, str(spec))
        assert result.code == 2, result.stdout + result.stderr
        text = result.stdout + result.stderr
        assert "cache.yaml:13:13: expect.cases[0].rate: rate '==0' counts the attempts" in text
        assert "so it says the cell never passes" in text
        assert "rate '==0' says it never errors as expect says" in text
        assert "Traceback" not in text
    assert not (tmp_path / "out" / "runs").exists()
