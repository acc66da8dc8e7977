"""The failures a capture saw besides the one its spec expects, and how to target them.

`capture --repeat N` writes one `expect`: the most common failure signature. A program
that fails two ways (a SIGSEGV in 4 of 10 attempts, a ValueError in 5) got a spec about
the ValueError with no word of the segfault anywhere, and 5 to 4 is chance: whoever
came to chase the segfault got a spec about another bug. Each other signature is said,
with its count, on the console and in the spec's description, with the `--set` that
runs the same spec for it (and for any failure, `outcome: fail`); two counts that chance
could have swapped are said to be so. The verify says what else came back too.

Another signature is one the written `expect` does not match, as the run judges it
(`matched_by`), not one that differs: `expect: {outcome: hang}` matches a hang at any
phase, and capture said a DataLoader's `hang:epoch` was "also seen, which the spec's expect
does not match" and counted 3/4 where `reprospec run` of that spec counted 4/4.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping

from reprospec import native
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.rates import wilson
from reprospec.core.results import AttemptResult
from reprospec.core.words import plural

# A value written bare in the `--set` mapping: a word or words (`SIGSEGV`, `bad batch`);
# anything else is written double-quoted (`">0"`, `"loss \\d+"`), which YAML reads as JSON.
_PLAIN = re.compile(r"[A-Za-z_][\w.]*(?: [\w.]+)*")
_KEYWORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})


def as_often(first: int, second: int) -> bool:
    """Whether `first` and `second` (the counts of two signatures over the same attempts)
    could have come the other way round by chance: the 95% Wilson interval of the first's
    share of both reaches one half. 5 to 4 could (0.27-0.79), 9 to 1 could not (0.6-0.98):
    which of two such failures the spec expects is then the attempts' luck, said so."""
    low, _high = wilson(first, first + second)
    return low <= 0.5


def by_chance(first: str, second: str, counts: tuple[int, int], attempts: int) -> str:
    """That which of two failures the spec expects is chance: as often, or a split chance
    gives (`as_often`). 7 to 2 is one: "came about as often" misread it, "not surely more
    common" does not."""
    a, b = counts
    if a == b:
        return (
            f"{first} and {second} came as often ({a} of {attempts} each): which one the spec "
            "expects is chance"
        )
    return (
        f"{first} is not surely more common than {second}: {a} to {b} of "
        f"{plural(attempts, 'attempt')} is within chance, so which one the spec expects may be "
        "chance"
    )


def set_expect(expect: Mapping[str, JsonValue]) -> str:
    """`expect={outcome: crash, signal: SIGSEGV, rate: ">0"}`: `--set`'s argument that makes
    a spec expect this instead, quoted for a shell (a whole mapping replaces `expect`)."""

    def value(v: JsonValue) -> str:
        if isinstance(v, bool) or v is None:
            return json.dumps(v)
        if isinstance(v, (int, float)):
            return str(v)
        if isinstance(v, str) and _PLAIN.fullmatch(v) and v.lower() not in _KEYWORDS:
            return v
        if isinstance(v, list):
            return "[" + ", ".join(value(item) for item in v) + "]"
        return json.dumps(v, ensure_ascii=False)

    body = ", ".join(f"{key}: {value(v)}" for key, v in expect.items())
    return shlex.quote(f"expect={{{body}}}")


def came_back(attempts: Iterable[AttemptResult], signature: str) -> str:
    """`crash:SIGSEGV:main:strlen@libc in 6, pass in 2`: what the attempts that did not end
    as `signature` ended as, most common first; '' when every one did. The verify's line
    said "the same signature came back in 2/10" and nothing of the other 8."""
    counts = Counter(
        (a.ran.signature if a.ran is not None else "infra-error")
        for a in attempts
        if not native.attempt_agrees(a, signature)
    )
    return ", ".join(f"{name} in {count}" for name, count in counts.most_common())


def matched_by(attempts: Iterable[AttemptResult], signature: str, expect: JsonObject) -> int:
    """How many of the attempts that ended as `signature` the written `expect` matches, as
    the run's judge (outcome/judge.py) matches them: those are the spec's failure, counted
    with it, not another one."""
    from reprospec.outcome.judge import judge_attempt
    from reprospec.store.resultsjson import expectation_from_dict

    wanted = expectation_from_dict(expect)
    return sum(
        1
        for a in attempts
        if a.ran is not None and a.ran.signature == signature
        if judge_attempt(a.ran, wanted).matched
    )
