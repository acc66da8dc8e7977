"""Who asked, for an error's words: the CLI's options, or the Python API's arguments."""

from __future__ import annotations

from reprospec.core.caller import argument, filters_option, filters_said, from_api, naming


def _words() -> tuple[str, str, str, str]:
    return (
        argument("--budget", "budget"),
        argument("--budget", "budget", "40"),
        filters_option(),
        filters_said(["verbose=false", "a b=1"]),
    )


def test_the_cli_is_told_of_its_options() -> None:
    assert _words() == ("--budget", "--budget 40", "-m", "-m verbose=false -m 'a b=1'")


def test_a_search_of_the_api_names_its_options_class() -> None:
    # `AmplifyReport.sentence()` said "raise --budget" to a caller of amplify_spec,
    # and a refusal `choose one with -m: -m verbose=false`.
    with naming("AmplifyOptions"):
        assert from_api(_words)() == (
            "AmplifyOptions(budget=...)",
            "AmplifyOptions(budget=40)",
            "AmplifyOptions(matrix_filters=...)",
            "AmplifyOptions(matrix_filters=('verbose=false', 'a b=1'))",
        )
    with naming("MinimizeOptions", "cell"):
        assert from_api(filters_said)(["x=1"]) == "MinimizeOptions(cell=('x=1',))"
    # reprospec.run takes no options class: the field alone.
    assert from_api(filters_said)(["x=1"]) == "matrix_filters=('x=1',)"
