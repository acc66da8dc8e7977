"""The report's Environment mismatch and a requirement with an extra (`shop[fast]`).

A captured environment holds versions, not Requires-Dist: the section could not judge what
an extra requires, and a run whose own package check refused every cell (`quickjson is not
installed (shop[fast] requires quickjson>=2)`) reported no mismatch at all. The section
now asks the interpreter that ran as the run's check does, in the same words.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli


def _dist(site: Path, name: str, version: str, metadata: str = "") -> None:
    """Distribution `name` `version` installed in `site` as an installer leaves it: its
    dist-info's METADATA (`metadata`: the lines after Name and Version), its module."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata}"
    )
    (site / f"{name}.py").write_text("")


def _spec(tmp_path: Path) -> tuple[Path, Path]:
    """The spec, which asks for `shop[fast]`, and the folder it puts on PYTHONPATH, as a
    project's vendored packages are: it holds distribution shop 1.0, whose extra `fast`
    needs quickjson>=2 (a test adds it there or not)."""
    site = tmp_path / "site"
    _dist(
        site, "shop", "1.0", 'Requires-Dist: quickjson>=2; extra == "fast"\nProvides-Extra: fast\n'
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: extras\n"
        'command: python -c "import shop"\n'
        "environment:\n"
        "  packages: ['shop[fast]']\n"
        f"  env: {{PYTHONPATH: '{site}'}}\n"
    )
    return spec, site


def test_a_missing_extra_is_a_mismatch_in_the_report_as_in_runs_check(
    tmp_path: Path, cli: Cli
) -> None:
    spec, _site = _spec(tmp_path)
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
    spec, site = _spec(tmp_path)
    _dist(site, "quickjson", "2.1")
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    assert "Environment mismatch" not in (result.latest_run() / "report.md").read_text()
