"""JUnit XML: one testsuite per run, one testcase per cell, every attempt recorded."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from reprospec.core.results import CellResult, RunResult
from reprospec.core.words import (
    attempt_phrase,
    expectation_phrase,
    interrupted_of,
    interval_bounds,
    resume_command,
    resumed_note,
    resumed_phrase,
    seconds,
    stopped_of,
)

# Characters XML 1.0 cannot carry at all (NUL from a worker's stderr, stray escapes).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: object) -> str:
    return _NOT_XML.sub("", str(text))


def is_flaky(cell: CellResult) -> bool:
    """Attempts that disagree: some matched and some did not, or outcomes of different kinds."""
    ran = [a for a in cell.attempts if a.ran is not None]
    return (
        len({a.matched for a in ran}) > 1 or len({a.ran.kind for a in ran if a.ran is not None}) > 1
    )


def _properties(parent: ET.Element, items: list[tuple[str, object]]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in items:
        ET.SubElement(props, "property", name=_x(name), value=_x(value))


def _attempt_lines(cell: CellResult) -> str:
    lines = []
    for a in cell.attempts:
        matched = "as expected" if a.matched else "unexpected"
        line = f"attempt {a.attempt}: {attempt_phrase(a)}; {matched}; {seconds(a.duration_s)}"
        if a.gpu_slot:
            line += f"; gpu {','.join(a.gpu_slot)}"
        if a.mismatches:
            line += f"; {'; '.join(a.mismatches)}"
        if a.logs:
            line += f"; logs {a.logs}"
        lines.append(line)
    return "\n".join(lines)


def _testcase(suite: ET.Element, run: RunResult, cell: CellResult) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        name=_x(cell.cell.id),
        classname=_x(run.spec_name),
        time=f"{sum(a.duration_s for a in cell.attempts):.3f}",
    )
    rate = cell.rate
    # Rounded outward, as the failure's message prints them (interval_bounds).
    low, high = interval_bounds(rate.low, rate.high, digits=3)
    props: list[tuple[str, object]] = [
        ("verdict", cell.verdict),
        ("expected", expectation_phrase(cell.expected)),
        ("rate", f"{rate.matched}/{rate.attempts}"),
        ("rate_low", low),
        ("rate_high", high),
    ]
    if is_flaky(cell):
        props.append(("flaky", "true"))
    if stopped := stopped_of(cell.reason):
        # A passing test case shows no reason: its unrun attempts were skipped, not lost.
        props.append(("stopped", stopped))
    elif run.interrupted and (cut := interrupted_of(cell.reason)):
        # A Ctrl-C cut it short: `rate 1/1` of a passing test case read as the whole cell's,
        # where report.md and the job summary say `1/1 (interrupted after 1 of 3 attempts)`.
        props.append(("interrupted", cut))
    props += [(f"attempt.{a.attempt}", attempt_phrase(a)) for a in cell.attempts]
    _properties(case, props)
    details = _attempt_lines(cell)
    if cell.verdict in ("not-reproduced", "undecided"):
        # Undecided fails the test case too: the spec's claim is not established yet.
        ET.SubElement(case, "failure", message=_x(cell.reason), type=cell.verdict).text = _x(
            details
        )
    elif cell.verdict == "infra-error":
        ET.SubElement(case, "error", message=_x(cell.reason), type="infra-error").text = _x(details)
    elif cell.verdict == "not-run":
        ET.SubElement(case, "skipped", message=_x(cell.reason))
    ET.SubElement(case, "system-out").text = _x(details)


def render_junit(run: RunResult) -> str:
    """The run as JUnit XML (a `<testsuites>` holding one `<testsuite>`)."""
    s = run.summary
    counts = {
        "tests": str(s["cells"]),
        "failures": str(s["not_reproduced"] + s["undecided"]),
        "errors": str(s["infra_error"]),
        "skipped": str(s.get("not_run", 0)),
        "time": f"{sum(a.duration_s for c in run.cells for a in c.attempts):.3f}",
    }
    root = ET.Element("testsuites", {"name": "reprospec", **counts})
    suite = ET.SubElement(
        root, "testsuite", {"name": _x(run.spec_name), "timestamp": _x(run.started), **counts}
    )
    props: list[tuple[str, object]] = [
        ("run_id", run.run_id),
        ("runner", run.runner),
        ("spec", run.spec_path),
        ("interrupted", str(run.interrupted).lower()),
    ]
    if run.resumed is not None:
        # As report.md's note under its headline: a resumed run read as one run that went
        # straight through. A property for a reader that lists them, the note in the
        # suite's output for one that shows only that (the same words, words.resumed_*).
        props.append(("resumed", resumed_phrase(run.resumed)))
    _properties(suite, props)
    for cell in run.cells:
        _testcase(suite, run, cell)
    if run.resumed is not None:
        # After the testcases: where the JUnit schema puts a testsuite's system-out.
        ET.SubElement(suite, "system-out").text = _x(
            resumed_note(resume_command(run.run_id, run.store), run.resumed)
        )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
