"""The one vocabulary: how outcomes, expectations, rates, sizes and durations read to people.

Every renderer words results through here (the console's progress lines and
table, the markdown report, JUnit, the GitHub summary, the judge's reasons), so
a crash reads the same wherever it is shown:

    outcome       crash SIGSEGV (worker) @ validation:7     error exit 1 ValueError @ train:3
    not run       infra-error: docker engine not reachable
    expectation   crash SIGSEGV @ validation:6..8 rate >=0.3
    rate          3/4 (95% CI 0.30–0.95)
    attempts      2× hang @ import, 1× pass

The raw values (`6..8`, `>=0.3`, byte counts) are formatted by units.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from reprospec.models import (
    AttemptResult,
    Expectation,
    NotRun,
    Outcome,
    Rate,
    VerdictKind,
)
from reprospec.signals import canonical_signal
from reprospec.units import format_size

VERDICT_MARKS: dict[VerdictKind, str] = {
    "reproduced": "✅",
    "not-reproduced": "❌",
    "infra-error": "⚠️",
    "observed": "🔍",
}
VERDICT_LEGEND = "✅ reproduced · ❌ not reproduced · ⚠️ infra-error"
OBSERVE_LEGEND = "🔍 observed (no expectation) · ⚠️ infra-error"


def location(phase: str | None, step: object) -> str:
    """`validation:7`, `validation`, `step 7` or ''."""
    if phase and step is not None:
        return f"{phase}:{step}"
    if phase:
        return phase
    return f"step {step}" if step is not None else ""


def outcome_phrase(outcome: Outcome | NotRun, *, where: bool = True, message: bool = False) -> str:
    """`crash SIGSEGV (worker) @ validation:7`: one outcome in a few words.

    `where=False` leaves out the phase and step (a grid cell, or a reason whose
    expectation does not ask where); `message=True` adds the message's first line.
    """
    if isinstance(outcome, NotRun):
        return f"infra-error: {outcome.reason}" if where else "infra-error"
    parts: list[str] = [outcome.kind]
    if outcome.signal:
        parts.append(outcome.signal)
    if outcome.kind == "error" and outcome.exit_code is not None:
        parts.append(f"exit {outcome.exit_code}")
    if outcome.exception and outcome.kind != "crash":
        # A worker crash surfaces as a RuntimeError in the main process: the signal is the news.
        parts.append(outcome.exception)
    if message:
        parts.append(repr(shorten(outcome.message.splitlines()[0], 60)) if outcome.message else "")
    if outcome.where == "worker":
        parts.append("(worker)")
    spot = location(outcome.phase, outcome.step) if where else ""
    if spot:
        parts.append(f"@ {spot}")
    return " ".join(p for p in parts if p)


def attempt_phrase(attempt: AttemptResult, *, where: bool = True) -> str:
    """An attempt's outcome, or why it did not run."""
    return outcome_phrase(attempt.outcome, where=where)


def expectation_phrase(expected: Expectation, *, rate: bool = True) -> str:
    """`crash SIGSEGV @ validation:6..8 rate >=0.3`: what a cell was expected to do."""
    if expected.observes:
        return "anything (observed)"
    parts: list[str] = [expected.outcome]
    if expected.signal:
        parts.append(canonical_signal(expected.signal) or expected.signal)
    if expected.exit_code is not None:
        parts.append(f"exit {expected.exit_code}")
    if expected.exception:
        parts.append(expected.exception)
    if expected.message:
        parts.append(f"/{expected.message}/")
    spot = location(expected.phase, expected.step)
    if spot:
        parts.append(f"@ {spot}")
    if rate and expected.rate is not None:
        parts.append(f"rate {expected.rate}")
    return " ".join(parts)


def rate_phrase(rate: Rate, *, fraction: bool = False) -> str:
    """`3/4 (95% CI 0.30–0.95)`; the interval only when there were several attempts.

    `fraction=True` adds the observed fraction: `6/20 = 0.30 (95% CI 0.15–0.52)`.
    """
    text = f"{rate.matched}/{rate.attempts}"
    if fraction and rate.attempts:
        text += f" = {rate.matched / rate.attempts:.2f}"
    if rate.attempts > 1:
        text += f" (95% CI {rate.low:.2f}–{rate.high:.2f})"
    return text


def attempts_phrase(attempts: Iterable[AttemptResult]) -> str:
    """What a cell's attempts did: one phrase, or how many did each (`2× hang, 1× pass`)."""
    counts = Counter(attempt_phrase(a) for a in attempts)
    if not counts:
        return "not run"
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n}× {text}" for text, n in counts.most_common())


def seconds(value: float) -> str:
    """A measured duration: `5.02s`."""
    return f"{value:.2f}s"


def size(value: object) -> str:
    """Bytes for people (`64.0 MiB`); '' for anything not a number."""
    return format_size(value)


def plural(n: int, word: str) -> str:
    """`1 cell`, `4 cells`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters, ending in `...` when cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


__all__ = [
    "OBSERVE_LEGEND",
    "VERDICT_LEGEND",
    "VERDICT_MARKS",
    "attempt_phrase",
    "attempts_phrase",
    "expectation_phrase",
    "location",
    "outcome_phrase",
    "plural",
    "rate_phrase",
    "seconds",
    "shorten",
    "size",
]
