"""Marker presets: the progress lines common ML programs print, as ready-made markers.

A spec writes `markers: [{preset: lightning}]` instead of the regexes below; the
planner expands each preset into its markers, in order, before anything runs
(`expand`). `reprospec capture` detects which presets a command's output fits
(`detect`) and writes them into the spec it makes.

The patterns see what `markers.MarkerScanner` hands them: the last `\\r` segment
of a line (what a terminal shows of a redrawn bar), ANSI escapes removed. Where
one line matches several markers of a preset, their events apply in the order
written, so a pattern that names a phase comes before one that only counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reprospec.core.frozen import frozen
from reprospec.core.inputs import Marker
from reprospec.core.logtext import without_escapes

# A pytest node id as pytest prints it (`tests/test_x.py::TestA::test_b[1-foo bar]`): its
# parameters' id may hold spaces (a parametrized string), so `\S+` cut it at the first. The
# id ends at the `]` that a status word (`-v`'s `PASSED`), a summary's ` - `, faulthandler's
# header (a crash's `-v` line, stdout and stderr together, goes on with `Fatal Python error`:
# `test_x[a] b]` was cut at `[a]`) or the line's end follows, else at the first `]` before a
# space.
PYTEST_NODE_ID = (
    r"[^\s:]+\.py::[^\s\[]+"
    r"(?:\[[^\n]*?\]"
    r"(?=[ \t]+(?:PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR|RERUN)\b|[ \t]+-[ \t]"
    r"|[ \t]+Fatal Python error: |[ \t]*$)"
    r"|\[[^\n]*?\](?=\s|$))?"
)
# tqdm's bar: `[desc: ] 70%|███████   | 7/10 [00:01<00:00, ...]` (the counter after the bar).
_BAR = r"\s*\d+%\|[^|]*\|\s*(?P<step>\d+)/"


@frozen
class Preset:
    """A named set of markers and what output it is for (shown by docs and capture)."""

    name: str
    summary: str
    markers: tuple[Marker, ...]
    # Detected only with a line that sets a phase: its bars alone are any tqdm bar.
    needs_phase: bool = False


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            "tqdm",
            "tqdm progress bars (`desc: 70%|###   | 7/10 [...]`): the counter is the step",
            (Marker(r"^(?:[^|\r\n]*?:)?" + _BAR),),
        ),
        Preset(
            "lightning",
            "PyTorch Lightning's progress bars: `Epoch N:` (train), `Sanity Checking`, "
            "`Validation`, `Testing` and `Predicting DataLoader N:`; the counter is the step",
            (
                Marker(r"^Epoch \d+:" + _BAR, phase="train"),
                Marker(
                    r"^Sanity Checking(?: DataLoader \d+)?:(?:" + _BAR + ")?", phase="sanity_check"
                ),
                Marker(r"^Validation(?: DataLoader \d+)?:(?:" + _BAR + ")?", phase="validation"),
                Marker(r"^Testing(?: DataLoader \d+)?:(?:" + _BAR + ")?", phase="test"),
                Marker(r"^Predicting(?: DataLoader \d+)?:(?:" + _BAR + ")?", phase="predict"),
            ),
        ),
        Preset(
            "hf-trainer",
            "Hugging Face Trainer logs: `***** Running training *****` / `Evaluation` / "
            "`Prediction` set the phase, its bars (`7/10 [...]`) the step",
            (
                Marker(r"\*{5} Running training \*{5}", phase="train"),
                Marker(r"\*{5} Running [Ee]valuation \*{5}", phase="evaluation"),
                Marker(r"\*{5} Running Prediction \*{5}", phase="predict"),
                Marker(r"^(?:[^|\r\n]*?:)?" + _BAR),
            ),
            needs_phase=True,
        ),
        Preset(
            "gtest",
            "GoogleTest's `[ RUN      ] Suite.Name` lines: the test is the phase",
            (Marker(r"^\[ RUN +\] (?P<phase>\S+)"),),
        ),
        Preset(
            "pytest",
            "pytest -v lines (`tests/test_x.py::test_name PASSED`): the test id is the phase",
            (Marker(rf"^(?P<phase>{PYTEST_NODE_ID})(?: |$)"),),
        ),
        Preset(
            "steps",
            "plain `train step 7`, `validation step 7/10`, `step 7`, `Epoch 3` lines "
            "(`epoch N` sets the phase `epoch` and step N; a `step N` after it the step)",
            (
                Marker(r"(?i)(?<![\w.])epoch\s*[:=#]?\s*(?P<step>\d+)", phase="epoch"),
                Marker(
                    r"(?i)(?<![\w.])(?P<phase>train|training|validation|valid|val|eval"
                    r"|evaluation|test|testing)\b[^\d\r\n]{0,20}?\bstep\s*[:=#]?\s*(?P<step>\d+)"
                ),
                Marker(r"(?i)(?<![\w.])(?:global[ _])?step\s*[:=#]?\s*(?P<step>\d+)"),
            ),
        ),
    )
}


class UnknownPreset(ValueError):
    """A `preset` name that no preset has (the checks turn it into a located error)."""


def preset(name: str) -> Preset:
    """The preset called `name`; UnknownPreset otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPreset(name) from None


def expand(entries: Iterable[Marker | str]) -> tuple[Marker, ...]:
    """Markers and preset names -> the markers they stand for, in order."""
    out: list[Marker] = []
    for entry in entries:
        out.extend(preset(entry).markers if isinstance(entry, str) else (entry,))
    return tuple(out)


# A preset counts as detected when this many lines of the output fit it (one stray
# "step" in a log line is not a progress format).
MIN_DETECTED_LINES = 2
# The specific formats first: a Lightning bar is also a tqdm bar, a pytest line is no step.
_DETECTION_ORDER = ("lightning", "hf-trainer", "gtest", "pytest", "tqdm", "steps")
# A preset that a more specific detected one already covers.
_COVERED_BY = {"tqdm": ("lightning", "hf-trainer"), "steps": ("lightning", "hf-trainer")}


def output_lines(text: str) -> list[str]:
    """Lines as the marker scanner sees them: each `\\r` segment, ANSI escapes removed.

    Detection looks at every redraw of a bar, not only the last (a bar redrawn
    twenty times on one line is twenty lines of evidence).
    """
    lines: list[str] = []
    for line in without_escapes(text).split("\n"):
        lines.extend(segment for segment in line.split("\r") if segment.strip())
    return lines


def detect(text: str, *, one_line: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The presets whose markers fit the output `text`, most specific first: at least
    MIN_DETECTED_LINES lines of it, but one of those in `one_line` (a ticket's paste of a
    bar the terminal redrew in place, whose last state is one line)."""
    lines = output_lines(text)
    found: list[str] = []
    for name in _DETECTION_ORDER:
        if any(covering in found for covering in _COVERED_BY.get(name, ())):
            continue
        chosen = PRESETS[name]
        compiled = [re.compile(marker.pattern) for marker in chosen.markers]
        phased = [
            re.compile(marker.pattern)
            for marker in chosen.markers
            if marker.phase or "(?P<phase>" in marker.pattern
        ]
        hits = sum(1 for line in lines if any(p.search(line) for p in compiled))
        if chosen.needs_phase and not any(p.search(line) for p in phased for line in lines):
            continue
        if hits >= (1 if name in one_line else MIN_DETECTED_LINES):
            found.append(name)
    return tuple(found)
