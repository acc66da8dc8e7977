"""A search's answer: its three views, and the exit code its verb gives, by one rule."""

from __future__ import annotations

import pytest

from reprospec.core.answers import rendered, runs_markdown, search_exit_code
from reprospec.errors import UsageError


def test_an_answer_renders_as_md_text_or_json_and_nothing_else() -> None:
    views = {
        "markdown": lambda found: f"# {found}",
        "text": lambda found: f"{found}!",
        "to_dict": lambda found: {"answer": found},
    }
    assert rendered("42", "md", **views) == "# 42"  # type: ignore[arg-type]
    assert rendered("42", "text", **views) == "42!"  # type: ignore[arg-type]
    assert rendered("42", "json", **views) == '{\n  "answer": "42"\n}'  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="renders as 'md', 'text', 'json', not 'html'"):
        rendered("42", "html", **views)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("interrupted", "status", "holds", "code"),
    [
        (False, "isolated", True, 0),
        (False, "budget", True, 0),  # minimize's: a smaller program, out of budget
        (False, "budget", False, 1),  # minimize's DIR did not reproduce
        (False, "refused", True, 1),
        (False, "infra-error", True, 3),
        (True, "isolated", True, 130),  # stopped: whatever it had
    ],
)
def test_a_search_exits_as_its_verb(interrupted: bool, status: str, holds: bool, code: int) -> None:
    assert search_exit_code(interrupted, status, ("isolated", "budget"), holds) == code


def test_a_searchs_run_ids_are_inline_up_to_five_and_folded_past() -> None:
    # Called with 2 ids, the fold wrote `2 runs, one per probe: `a`, `b`, …`; each report
    # decided the threshold itself and wrote the inline form its own way.
    assert runs_markdown(()) == []
    assert runs_markdown(["a", "b"]) == ["`a`, `b`"]
    assert runs_markdown([str(n) for n in range(5)]) == ["`0`, `1`, `2`, `3`, `4`"]
    folded = runs_markdown([str(n) for n in range(6)])
    assert folded[0] == "<details><summary>6 runs, one per probe: `0`, `1`, `2`, …</summary>"
    assert folded[-1] == "</details>"
    assert folded.count("- `5`") == 1
