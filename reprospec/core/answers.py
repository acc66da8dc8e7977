"""A search's answer as the CLI and the Python API both hand it on: its views and its exit code.

isolate, minimize, amplify and bisect each return a frozen answer (`IsolateResult`,
`Minimized`, `AmplifyReport`, `BisectReport`) that renders itself ("md": the report the
search writes, "text": what the verb prints, "json": its `--format json`) and says the
exit code its verb gives. `Answer` is what they share, so `reprospec.render` and
`reprospec.exit_code` take any of them beside a `RunResult` without importing the stages
that make them (api.py comes before them), and the CLI's verbs print and exit by the same
methods (commands/interrupt.drive_search).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Protocol, TypeVar, runtime_checkable

from reprospec.core.jsontypes import JsonObject
from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK, UsageError

ANSWER_FORMATS = ("md", "text", "json")

A = TypeVar("A")


@runtime_checkable
class Answer(Protocol):
    """A search's answer: rendered as its verb writes and prints it, with its verb's exit code."""

    def render(self, fmt: str = "md") -> str: ...

    def exit_code(self) -> int: ...


def rendered(
    found: A,
    fmt: str,
    *,
    markdown: Callable[[A], str],
    text: Callable[[A], str],
    to_dict: Callable[[A], JsonObject],
) -> str:
    """`found` as "md" (the report file's text), "text" (what the verb prints) or "json"
    (what `--format json` prints); another format is a usage error naming these."""
    if fmt == "md":
        return markdown(found)
    if fmt == "text":
        return text(found)
    if fmt == "json":
        return json.dumps(to_dict(found), indent=2)
    shown = ", ".join(repr(f) for f in ANSWER_FORMATS)
    raise UsageError(f"a search's answer renders as {shown}, not {fmt!r}")


def search_exit_code(
    interrupted: bool, status: str, succeeded: Collection[str], holds: bool = True
) -> int:
    """A search verb's exit code: 130 stopped, 0 a status of `succeeded` whose answer
    `holds` (minimize: its DIR reproduces), 3 `infra-error`, else 1 (no answer as asked)."""
    if interrupted:
        return EXIT_INTERRUPTED
    if status in succeeded and holds:
        return EXIT_OK
    if status == "infra-error":
        return EXIT_INFRA
    return EXIT_NOT_REPRODUCED


# A search report's run ids (one per probe) past this many are folded: a search's hundred
# ids inline made a wall of text above the answer's end.
_RUNS_SHOWN = 5


def runs_markdown(runs: Collection[str]) -> list[str]:
    """A search report's run ids, one per probe (amplify.md's `## Runs`, isolate.md's
    `Runs:`): up to 5 on one line, each backquoted; past that, in a `<details>` block that
    names how many and the first three. No lines ([]) where there are none."""
    ids = list(runs)
    if len(ids) <= _RUNS_SHOWN:
        return [", ".join(f"`{run}`" for run in ids)] if ids else []
    first = ", ".join(f"`{run}`" for run in ids[:3])
    return [
        f"<details><summary>{len(ids)} runs, one per probe: {first}, …</summary>",
        "",
        *(f"- `{run}`" for run in ids),
        "",
        "</details>",
    ]
