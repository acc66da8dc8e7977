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
