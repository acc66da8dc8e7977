"""`amplify --try FIELD=VALUE` (amplify/driver.py's `parse_tries`): a bad value is worded as
the spec validator words it in `environment.perturb`, never another field's words."""

from __future__ import annotations

import pytest

from reprospec.amplify.driver import parse_tries
from reprospec.errors import UsageError


@pytest.mark.parametrize(
    ("item", "message"),
    [
        # A word the field takes, mistyped: its words and a did-you-mean, as a spec's
        # `malloc: perturbb` says (it said "expected a whole number >= 1").
        (
            "malloc=perturbb",
            "--try malloc=perturbb: expected perturb, check, strict or a byte 1-255, "
            "got 'perturbb' (did you mean 'perturb'?)",
        ),
        ("malloc=300", "--try malloc=300: expected a perturb byte 1-255, got 300"),
        (
            "switch_interval=-1",
            "--try switch_interval=-1: expected a number of seconds > 0, like 1e-6, got -1",
        ),
        (
            "torch.num_threads=0",
            "--try torch.num_threads=0: expected a whole number >= 1, got 0",
        ),
    ],
)
def test_a_bad_value_is_worded_as_the_spec_validator_words_it(item: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_tries([item])
    assert str(caught.value) == message
    assert caught.value.exit_code == 2


def test_good_values_are_read_as_yaml() -> None:
    assert parse_tries(["malloc=perturb", "malloc=7", "torch.num_threads=2"]) == (
        ("malloc", "perturb"),
        ("malloc", 7),
        ("torch.num_threads", 2),
    )


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            ["gc=aggressive", "gc=aggressive"],
            "--try gc=aggressive: the same perturbation as --try gc=aggressive "
            "(gc=aggressive): give each once",
        ),
        # Spelled another way, the same value: one arm's label.
        (
            ["switch_interval=1e-6", "cpus=1", "perturb.switch_interval=0.000001"],
            "--try perturb.switch_interval=0.000001: the same perturbation as "
            "--try switch_interval=1e-6 (switch_interval=1e-06): give each once",
        ),
    ],
)
def test_the_same_perturbation_twice_is_refused(items: list[str], message: str) -> None:
    # It reached the search, which raised ValueError: an internal error with a traceback.
    with pytest.raises(UsageError) as caught:
        parse_tries(items)
    assert str(caught.value) == message
    assert caught.value.exit_code == 2


def test_one_field_with_two_values_is_two_arms() -> None:
    assert parse_tries(["gc=aggressive", "gc=5"]) == (("gc", "aggressive"), ("gc", 5))
