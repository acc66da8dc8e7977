"""slurm's preflight: how a refused cell is described in the refusal (preflight.describe)."""

from __future__ import annotations

from reprospec.slurm.preflight import Refused, describe


def test_a_reason_that_ends_a_sentence_is_described_without_its_full_stop() -> None:
    # uv's reason ends in "." and the refusal's hint follows ". ": the message
    # read "... are unsatisfiable.. Fix the packages".
    reason = (
        "Because nothingthere was not found and you require it, requirements are unsatisfiable."
    )
    said = describe(Refused(("default",), reason))
    assert said == (
        "cell default: Because nothingthere was not found and you require it, requirements "
        "are unsatisfiable"
    )
    assert f"{said}. Fix the packages".count("..") == 0
    many = describe(Refused(("a=1", "a=2", "a=3", "a=4"), "no module named torch"))
    assert many == "cells a=1, a=2, a=3 and 1 more: no module named torch"
