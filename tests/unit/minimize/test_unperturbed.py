"""The unperturbed check's rule and record (unperturbed.py): a result minimized under a
perturbation that fails without it clearly more often than the original did is said to."""

from __future__ import annotations

import json
from pathlib import Path

from reprospec.core.rates import rate_of
from reprospec.minimize.unperturbed import (
    MAX_ATTEMPTS,
    MIN_ATTEMPTS,
    Baseline,
    Unperturbed,
    attempts_for,
)


def check(original: tuple[int, int], minimized: tuple[int, int]) -> Unperturbed:
    return Unperturbed(
        perturbation=("malloc=perturb",),
        original=rate_of(*original),
        original_source="measured here",
        minimized=rate_of(*minimized),
        message_unperturbed="corrupted buffer at step 0: b''",
    )


def test_a_result_failing_every_time_where_the_original_never_did_is_said() -> None:
    # The original 0/8 without MALLOC_PERTURB_, the result 8/8.
    found = check((0, 8), (8, 8))
    assert found.clearly_more
    assert found.warning() == (
        "the minimized program fails without the perturbation too (8 of 8 attempts; the "
        "original 0 of 8, measured here): it may be a different bug; compare the diff and "
        "the failure messages (where it printed any) in minimize.md"
    )
    assert "clearly more often than the original" in found.line()


def test_a_rate_within_the_originals_interval_is_not_called_another_bug() -> None:
    # amplify's rule for a clear gain: the lower bound above the other's upper bound.
    # 5/8 (low 0.31) does not clear 0/8's upper bound (0.32); 6/8 (0.41) does.
    assert not check((0, 8), (5, 8)).clearly_more
    assert check((0, 8), (6, 8)).clearly_more
    assert check((0, 8), (5, 8)).warning() == ""
    assert "not clearly more often" in check((0, 8), (5, 8)).line()
    # An original that fails unperturbed as often (crash.py segfaults either way).
    assert not check((8, 8), (8, 8)).clearly_more
    assert not check((0, 8), (0, 8)).clearly_more


def test_the_record_reads_back_as_written() -> None:
    found = check((0, 8), (8, 8))
    again = Unperturbed.from_dict(json.loads(json.dumps(found.to_dict())))
    assert again == found
    assert Unperturbed.from_dict({"original": {"matched": 1}}) is None
    assert Unperturbed.from_dict("nonsense") is None


def test_amplifys_base_is_read_from_its_folder_or_file(tmp_path: Path) -> None:
    base = {"matched": 1, "attempts": 24, "low": 0.0, "high": 0.2}
    (tmp_path / "amplify.json").write_text(json.dumps({"cell": "a=1", "base": {"rate": base}}))
    for path in (tmp_path, tmp_path / "amplify.json"):
        found = Baseline.from_amplify(path)
        assert found is not None
        assert (found.cell, found.rate) == ("a=1", rate_of(1, 24))
    (tmp_path / "amplify.json").write_text(json.dumps({"cell": "a=1"}))
    assert Baseline.from_amplify(tmp_path) is None
    assert Baseline.from_amplify(tmp_path / "gone") is None


def test_amplifys_base_is_the_one_its_winner_was_judged_against(tmp_path: Path) -> None:
    # Under run.preload malloc=perturb ran fresh and was judged against `base (fresh)`, 6/16:
    # minimize read the forked base's 0/24, a rate the kept perturbation was never judged by.
    def arm(label: str, matched: int, attempts: int, against: str | None) -> dict[str, object]:
        rate = rate_of(matched, attempts)
        return {"perturbation": label, "compared_with": against, "rate": rate.to_dict()}

    forked, fresh = arm("base", 0, 24, None), arm("base (fresh)", 6, 16, None)
    data = {
        "cell": "default",
        "perturbation": "malloc=perturb",
        "base": forked,
        "arms": [forked, fresh, arm("malloc=perturb", 30, 40, "base (fresh)")],
    }
    (tmp_path / "amplify.json").write_text(json.dumps(data))
    found = Baseline.from_amplify(tmp_path)
    assert found is not None
    assert found.rate == rate_of(6, 16)
    assert found.phrase == f"amplify's base (fresh) in {tmp_path / 'amplify.json'}"
    # Where minimize's own attempts fork (a preload), the forked base is the one started alike.
    found = Baseline.from_amplify(tmp_path, forked=True)
    assert found is not None
    assert (found.rate, found.arm) == (rate_of(0, 24), "base")
    # A forked winner (or a file without `compared_with`): the base.
    data["arms"] = [forked, fresh, arm("malloc=perturb", 30, 40, "base")]
    (tmp_path / "amplify.json").write_text(json.dumps(data))
    found = Baseline.from_amplify(tmp_path)
    assert found is not None
    assert (found.rate, found.arm) == (rate_of(0, 24), "base")
    assert found.phrase.startswith("amplify's base in ")


def test_each_side_gets_as_many_attempts_as_the_base_was_measured_on() -> None:
    assert attempts_for(None) == MIN_ATTEMPTS
    assert attempts_for(rate_of(0, 8)) == 8
    assert attempts_for(rate_of(0, 12)) == 12
    assert attempts_for(rate_of(0, 35)) == MAX_ATTEMPTS
    assert attempts_for(rate_of(0, 3)) == MIN_ATTEMPTS
