"""`reprospec bisect`'s options refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.cli import main


@pytest.mark.parametrize("extra", [["--good", "1.0"], ["--bad", "2.0"]])
def test_by_date_refuses_a_version_it_would_not_use(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--by-date A..B --good X` bisected the days A..B, X dropped without a word.
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: error}\n")
    words = ["bisect", str(spec), "--package", "x", "--by-date", "2024-01-01..2024-02-01"]
    assert main([*words, *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"--by-date START..END: {extra[0]} not used" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("days", ["2030-01-01..2031-01-01", "2024-01-01..{tomorrow}"])
def test_by_date_refuses_a_day_to_come(
    days: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A range wholly to come built one environment per day (each one today's index) and
    # answered "the good end reproduces too"; nothing is to be learnt past today.
    from datetime import datetime, timedelta, timezone

    today = datetime.now(timezone.utc).date()
    days = days.format(tomorrow=(today + timedelta(days=1)).isoformat())
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: error}\n")
    words = ["bisect", str(spec), "--package", "x", "--by-date", days]
    assert main([*words, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    later = days.partition("..")[2]
    assert f"--by-date: {later} is after today ({today.isoformat()}, UTC)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()
