"""A requirement's extra the run's capture could not judge (the docker runner's: a capture
holds no Requires-Dist and the image's interpreter is not this machine's) is said as not
judged in the report, not passed over as if it matched."""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.jsontypes import JsonObject
from reprospec.environment.captured import extra_mismatches
from reprospec.report.markdown import render_markdown
from tests.support.runs import error_run


def test_an_extra_no_interpreter_here_can_judge_is_named_unjudged() -> None:
    env: JsonObject = {"python": {"executable": "/usr/bin/python3", "version": "3.11.7"}}
    # No interpreter of this machine to ask (cwd None): named, nothing asked.
    assert extra_mismatches(env, ["torch[opt-einsum]", "numpy"], variables={}, cwd=None) == (
        [],
        ["torch[opt-einsum]"],
    )
    assert extra_mismatches(env, ["numpy>=1"], variables={}, cwd=None) == ([], [])
    run = error_run()
    said = render_markdown(
        replace(run, environment={**run.environment, "environment_unjudged": ["torch[opt-einsum]"]})
    )
    assert "Not judged here: what the extras of torch[opt-einsum] require" in said
    assert "Not judged here" not in render_markdown(run)


def test_what_was_not_judged_stands_under_the_environment_mismatch_heading() -> None:
    # With no mismatch, "Not judged here" was a paragraph with no heading after the
    # environment's table; beside mismatches, outside their heading's list.
    run = error_run()
    alone = render_markdown(
        replace(run, environment={**run.environment, "environment_unjudged": ["torch[opt-einsum]"]})
    )
    assert (
        "**Environment mismatch** (none in what could be judged here):\n\n"
        "- Not judged here: what the extras of torch[opt-einsum] require"
    ) in alone
    both = render_markdown(
        replace(
            run,
            environment={
                **run.environment,
                "environment_mismatch": ["numpy: spec 1.26, ran 2.0.1"],
                "environment_unjudged": ["torch[opt-einsum]"],
            },
        )
    )
    assert (
        "**Environment mismatch** (the spec names a different environment than this run had):"
        "\n\n- numpy: spec 1.26, ran 2.0.1\n- Not judged here: what the extras of"
    ) in both
