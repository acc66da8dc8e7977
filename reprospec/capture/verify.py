"""The verify: the written spec run again, as another person's shell would run it.

A capture that says `reproduced` must mean that the spec alone reproduces. The local
runner hands its attempts this process's environment, so a rerun in the capturing shell
would inherit what the spec does not carry (`USE_NATIVE=1`, set there and written
nowhere, gave `reproduced` for a spec that passed anywhere else). The rerun leaves out the
shell's own variables (`footprint.shell_only`: all but this machine's PATH, HOME, locale
and the like); when the failure comes back with them and not without, the one it needs
(or the few) is found by halves and written into `environment.env`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reprospec import native
from reprospec.capture.footprint import needed_lines, shell_only
from reprospec.capture.writer import Draft, render_spec
from reprospec.core import environ
from reprospec.core.results import AttemptResult, RunResult

# (spec, attempts, observe) -> the run: how capture runs a spec (the CLI's live progress).
Runner = Callable[[Path, int, bool], RunResult]


@dataclass(frozen=True)
class Rerun:
    """One rerun of the written spec: did the observed failure come back, as `expect` says."""

    run_id: str
    attempts: tuple[AttemptResult, ...]
    same: int  # attempts whose signature is the observed one's
    verdicts: str
    verified: bool


def verify(
    run_spec: Runner, spec_path: Path, draft: Draft, signature: str, repeat: int
) -> tuple[tuple[str, ...], bool]:
    """Rerun the spec at `spec_path` (written from `draft`) without the shell's own
    variables, rewritten with the ones the failure needs; what to say, and whether the
    failure came back as `expect` says."""
    own = shell_only(os.environ, (line.name for line in draft.env))

    def check(kept: Iterable[str] = ()) -> Rerun:
        keep = set(kept)
        return _rerun(run_spec, spec_path, repeat, signature, [n for n in own if n not in keep])

    lines: list[str] = []
    done = check()
    needed: tuple[str, ...] = ()
    if not done.verified and own and check(own).verified:
        needed = _needed(own, check)
        draft = replace(draft, env=(*draft.env, *needed_lines(os.environ, needed)))
        spec_path.write_text(render_spec(draft), encoding="utf-8")
        lines.append(
            "the failure needs " + ", ".join(needed) + " as your shell sets it: it did not "
            "come back without it, and the spec now sets it (environment.env)"
        )
        done = check(needed)
    left_out = [name for name in own if name not in needed]
    without = f" (without {_names(left_out)} of your shell)" if left_out else ""
    lines.append(
        f"verify{without}: {'the same' if done.same else 'NOT the same'} signature "
        f"({signature}) came back in {done.same}/{len(done.attempts)} attempt(s)"
        + _unmatched(done.attempts, done.verified, came_back=done.same > 0)
        + f"; verdict {done.verdicts} (run {done.run_id})"
    )
    return tuple(lines), done.verified


def _rerun(
    run_spec: Runner, spec_path: Path, repeat: int, signature: str, left_out: Sequence[str]
) -> Rerun:
    """Rerun the spec with the variables `left_out` unset (this process's environment is
    what the local runner hands its attempts), then put them back."""
    with environ.changed(dict.fromkeys(left_out)):
        result = run_spec(spec_path, repeat, False)
    again = tuple(a for cell in result.cells for a in cell.attempts)
    same = sum(
        1
        for a in again
        if a.ran is not None
        and native.agrees(a.ran.signature, signature, native_unknown=native.read_none(a.native))
    )
    verified = same > 0 and all(cell.verdict == "reproduced" for cell in result.cells)
    verdicts = ", ".join(sorted({cell.verdict for cell in result.cells}))
    return Rerun(result.run_id, again, same, verdicts, verified)


def _needed(own: Sequence[str], check: Callable[[Iterable[str]], Rerun]) -> tuple[str, ...]:
    """Of `own` (the failure comes back with all of them set), the one it needs, by halves;
    or the smallest half-split set that still brings it back when one alone does not."""
    found = list(own)
    while len(found) > 1:
        half = len(found) // 2
        first, second = found[:half], found[half:]
        if check(first).verified:
            found = first
        elif check(second).verified:
            found = second
        else:
            break  # it needs variables from both halves: keep them all
    return tuple(found)


def _names(names: Sequence[str], shown: int = 4) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _unmatched(attempts: Sequence[AttemptResult], verified: bool, *, came_back: bool) -> str:
    """What of the written `expect` the rerun's attempts missed, when the verdict is not
    `reproduced`: the same signature can come back while the spec still misses (a message
    pattern, a step), and the line must say which, not only that it missed. ", but" only
    when the signature did come back: "NOT the same ... came back in 0/1 attempt(s), but
    the spec's expect did not match" read as a contradiction."""
    if verified:
        return ""
    misses = list(dict.fromkeys(m for a in attempts if not a.matched for m in a.mismatches))
    if not misses:
        return ""
    more = f" (and {len(misses) - 1} more)" if len(misses) > 1 else ""
    joint = ", but" if came_back else ";"
    return f"{joint} the spec's expect did not match: {misses[0]}{more}"
