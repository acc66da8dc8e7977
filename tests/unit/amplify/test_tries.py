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
