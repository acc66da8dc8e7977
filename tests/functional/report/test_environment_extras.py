"""The report's Environment mismatch and a requirement with an extra (`shop[fast]`).

A captured environment holds versions, not Requires-Dist: the section could not judge what
an extra requires, and a run whose own package check refused every cell (`quickjson is not
installed (shop[fast] requires quickjson>=2)`) reported no mismatch at all. The section
now asks the interpreter that ran as the run's check does, in the same words.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli

METADATA = """\
Metadata-Version: 2.1
Name: shop
Version: 1.0
Requires-Dist: quickjson>=2; extra == "fast"
Provides-Extra: fast
"""


def _site(tmp_path: Path) -> Path:
    """A folder holding distribution shop 1.0, whose extra `fast` needs quickjson>=2 (not
    there): put on PYTHONPATH by the spec, as a project's vendored packages are."""
    site = tmp_path / "site"
    info = site / "shop-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(METADATA)
    (site / "shop.py").write_text("")
    return site


def test_a_missing_extra_is_a_mismatch_in_the_report_as_in_runs_check(
    tmp_path: Path, cli: Cli
) -> None:
    site = _site(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: extras\n"
        'command: python -c "import shop"\n'
        "environment:\n"
        "  packages: ['shop[fast]']\n"
        f"  env: {{PYTHONPATH: '{site}'}}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 3, result.stderr  # the run's own check refused the cell
    line = "quickjson is not installed (shop[fast] requires quickjson>=2)"
    data = result.results()
    assert line in data["cells"][0]["attempts"][0]["infra_error"]
    report = (result.latest_run() / "report.md").read_text()
    section = report.split("**Environment mismatch**", 1)
    assert len(section) == 2, report
    assert f"- {line}" in section[1].split("\n\n", 2)[1]
    assert data["environment"]["environment_mismatch"] == [line]


def test_an_extra_that_is_there_is_no_mismatch(tmp_path: Path, cli: Cli) -> None:
    site = _site(tmp_path)
    dep = site / "quickjson-2.1.dist-info"
    dep.mkdir()
    (dep / "METADATA").write_text("Metadata-Version: 2.1\nName: quickjson\nVersion: 2.1\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: extras\n"
        'command: python -c "import shop"\n'
        "environment:\n"
        "  packages: ['shop[fast]']\n"
        f"  env: {{PYTHONPATH: '{site}'}}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    assert "Environment mismatch" not in (result.latest_run() / "report.md").read_text()
