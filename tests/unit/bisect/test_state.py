"""What a bisect says: its headline reads the way the question was asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.bisect.search import bisect
from reprospec.bisect.state import BisectReport, BisectRequest
from reprospec.errors import UsageError


def report(good: str, bad: str, first_bad: int) -> BisectReport:
    """A real search over the versions from `good` to `bad` (good end first), against an
    oracle that fails from index `first_bad` on: deterministic, as `git bisect` assumes."""
    from reprospec.bisect.search import Trial

    versions = [f"0.{n}" for n in range(5)]
    if good > bad:
        versions.reverse()

    def oracle(version: str, attempts: int) -> Trial:
        failed = versions.index(version) >= first_bad
        return Trial(version, 1 if failed else attempts, 1 if failed else 0)

    result = bisect(versions, oracle, min_rate=0.9)
    request = BisectRequest(Path("s.yaml"), "pkg", good, bad)
    return BisectReport(request, "id", Path("f"), "s", "", tuple(versions), result)


def test_a_regression_names_its_first_bad_release() -> None:
    assert report("0.0", "0.4", 2).headline == "first bad: pkg 0.2 (last good 0.1)"


def test_a_fix_names_the_release_that_fixed_it() -> None:
    # --good newer than --bad: 0.4 and 0.3 pass, 0.2 down to 0.0 fail. "first bad: 0.2
    # (last good 0.3)" read as if 0.2 broke it; 0.3 fixed it, 0.2 was the last bad.
    assert report("0.4", "0.0", 2).headline == "fixed in: pkg 0.3 (last bad 0.2)"


def test_bisect_md_links_a_build_log_from_its_own_folder(tmp_path: Path) -> None:
    """The build log's path is kept absolute; bisect.md (in OUT/bisect/ID/) links it from its
    own folder, where it wrote the path as given (`out/runs/...`: relative to the bisect's
    cwd, which a Markdown reader resolves from the file's folder, and finds nothing)."""
    from reprospec.bisect.search import Trial
    from reprospec.bisect.state import render_markdown

    out = tmp_path / "out"
    log = out / "runs" / "r" / "cells" / "default" / "1" / "build.log"
    versions = ("0.0", "0.1", "0.2")

    def oracle(version: str, attempts: int) -> Trial:
        if version == "0.1":
            return Trial(version, infra_error="cannot install pkg==0.1", build_log=str(log))
        return Trial(version, 1, 1) if version == "0.2" else Trial(version, attempts, 0)

    result = bisect(versions, oracle, min_rate=0.9)
    request = BisectRequest(Path("s.yaml"), "pkg", "0.0", "0.2")
    folder = out / "bisect" / "id"
    markdown = render_markdown(BisectReport(request, "id", folder, "s", "", versions, result))
    row = next(line for line in markdown.splitlines() if line.startswith("| 0.1 "))
    assert "not installable: cannot install pkg==0.1 ([build log](" in row
    link = row.split("([build log](", 1)[1].split(")", 1)[0]
    assert link == "../../runs/r/cells/default/1/build.log"
    assert (folder / link).resolve() == log.resolve()


def _refused(attempts: int, infra: str | None) -> BisectReport:
    """A bisect refused before (or after) any attempt, its one version not installable."""
    from reprospec.bisect.search import BisectResult, VersionEvidence

    evidence = VersionEvidence("0.0", "skipped", 0, 0, 0.5, infra_error=infra)
    result = BisectResult("refused", None, None, 0.0, attempts, "nothing ran", (evidence,))
    request = BisectRequest(Path("s.yaml"), "pkg", "0.0", "0.1")
    return BisectReport(request, "id", Path("f"), "s", "", ("0.0", "0.1"), result)


def test_the_answer_renders_and_exits_as_the_verb_prints_and_exits() -> None:
    """`bisect` prints `render("text")` (or "json") and exits `exit_code()`: the views and
    the rule its run() wrote out itself, which `reprospec.render` and `exit_code` give too."""
    found = report("0.0", "0.4", 2)
    text = found.render("text").splitlines()
    assert text[0] == "first bad: pkg 0.2 (last good 0.1)"
    assert text[-1] == f"{found.result.attempts} attempts; report: {Path('f', 'bisect.md')}"
    assert found.render("md").startswith("# Bisect: s, pkg 0.0..0.4\n")
    assert found.render("json").startswith('{\n  "package": "pkg",\n  "first_bad": "0.2"')
    assert found.exit_code() == 0
    assert _refused(0, "cannot install pkg==0.0").exit_code() == 3  # nothing could run
    assert _refused(3, "cannot install pkg==0.0").exit_code() == 1
    assert _refused(0, None).exit_code() == 1


@pytest.mark.parametrize("package", ["requests[socks]", "requests==2.31.0", "re quests"])
def test_a_package_is_a_distribution_name_alone(package: str) -> None:
    """`--package 'requests[socks]'` was said to be "not on the configured package index"
    (pip asked for versions of that text), and would have been added to each candidate."""
    with pytest.raises(UsageError, match="takes a distribution's name alone"):
        BisectRequest(Path("s.yaml"), package, "1.0", "2.0")


def test_a_name_in_any_spelling_is_a_package() -> None:
    for package in ("Requests", "typing_extensions", "zope.interface", "a"):
        assert BisectRequest(Path("s.yaml"), package, "1.0", "2.0").package == package


@pytest.mark.parametrize(
    ("good", "bad", "refusal"),
    [("1.0", "banana", "--bad takes a version"), ("1,0", "2.0", "--good takes a version")],
)
def test_an_end_that_is_no_version_is_refused_by_name(good: str, bad: str, refusal: str) -> None:
    """`--bad banana` said "not a version: Invalid version: 'banana'", naming neither end,
    and only after the index had listed every release of the package."""
    with pytest.raises(UsageError) as refused:
        BisectRequest(Path("s.yaml"), "pkg", good, bad)
    wrong = bad if refusal.startswith("--bad") else good
    assert str(refused.value).startswith(refusal)
    assert str(refused.value).endswith(f"got {wrong!r}")


def test_days_are_not_read_as_versions() -> None:
    request = BisectRequest(Path("s.yaml"), "pkg", "2024-03-01", "2024-03-20", by_date=True)
    assert (request.good, request.bad) == ("2024-03-01", "2024-03-20")


def test_a_resume_tries_again_the_versions_that_could_not_be_installed(tmp_path: Path) -> None:
    """A skip ran no attempt, and why the version could not be installed may have passed (the
    network, a mended wheelhouse): kept, every rerun answered `1.3 could not be tested` again,
    and only --fresh, which throws away every attempt, asked the index again."""
    from reprospec.bisect.search import Trial
    from reprospec.bisect.state import load_state, write_state

    path = tmp_path / "state.json"
    versions = ("1.0", "1.1", "1.2", "1.3")
    trials = {
        "1.3": Trial("1.3", 1, 1, runs=("r1",)),
        "1.1": Trial("1.1", infra_error="cannot install pkg==1.1: failed to fetch"),
        "1.2": Trial("1.2", 2, 0, runs=("r2",)),
    }
    write_state(path, BisectRequest(Path("s.yaml"), "pkg", "1.0", "1.3"), versions, trials, None)
    known, resumed, again = load_state(path, versions, fresh=False)
    assert known == {"1.3": trials["1.3"], "1.2": trials["1.2"]}
    assert resumed
    assert again == ("1.1",)
    assert load_state(path, versions, fresh=True) == ({}, False, ())


def test_the_printed_answer_says_how_sure_it_is() -> None:
    """The printed answer named the first bad version with no word of how sure it was (only
    bisect.md said): for a flaky failure the answer is only as good as its probability and
    the rate the bad versions showed, which isolate's printed answer gives too."""
    found = report("0.0", "0.4", 2)
    result = found.result
    text = found.render("text").splitlines()
    matched, attempts = result.rate
    assert text[-2] == (
        f"probability of this answer: {result.confidence:.3f} (stated error 0.005, assuming"
        f" a bad version reproduces in at least 0.9 of attempts); reproduction rate at the"
        f" bad versions: {matched}/{attempts}"
    )
    assert f"Probability of this answer: {result.confidence:.3f} (stated" in found.render("md")


def test_the_interrupted_json_is_the_one_cli_md_documents() -> None:
    """A stopped bisect's `--format json` has none of the answer's keys; cli.md gave only
    the answer's, so a script reading `first_bad` met a KeyError on a Ctrl-C."""
    import json
    import re

    from reprospec.bisect.search import Trial
    from reprospec.bisect.state import interrupted_json

    data = json.loads(interrupted_json("id", [Trial("1.0", 2, 0, signatures=("pass",) * 2)], None))
    docs = (Path(__file__).parents[3] / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = re.search(r'`\{"status": "interrupted", (.*?)\}`', docs, re.S)
    assert shown is not None
    text = " ".join(shown.group(1).split())
    assert re.findall(r'"(\w+)"', text.split("[", 1)[0]) == list(data)[1:]
    assert re.findall(r'"(\w+)"', text.split("[", 1)[1]) == list(data["tried"][0])


def test_bisect_md_says_what_unsure_means() -> None:
    """A flaky regression's `20.9 unsure 0/1` past the first bad: the legend named bad and
    good only, and a reader took `unsure` for doubt about the answer."""
    found = report("0.0", "0.4", 2)
    legend = found.render("md").strip().splitlines()[-1]
    assert "unsure when it ran but is neither" in legend
    assert "past the first bad, never seen failing" in legend


def test_bisect_md_says_what_an_unsure_bad_end_means() -> None:
    """A budget spent before the bad end failed as expected lists it `0.4 unsure 0/3`:
    "too few clean attempts to call it good" told of a version bisect never calls good."""
    from reprospec.bisect.search import Trial

    versions = [f"0.{n}" for n in range(5)]
    result = bisect(versions, lambda v, n: Trial(v, n, 0, signatures=("pass",) * n), budget=3)
    request = BisectRequest(Path("s.yaml"), "pkg", "0.0", "0.4")
    found = BisectReport(request, "id", Path("f"), "s", "", tuple(versions), result)
    text = found.render("md")
    assert "| 0.4 | unsure | 0 / 3 |" in text
    legend = text.strip().splitlines()[-1]
    assert "or the bad end, not yet run enough to tell" in legend


def test_an_undecided_answer_names_the_budget_as_its_caller_gave_it() -> None:
    """`reprospec.bisect_spec(BisectRequest(..., budget=3))` out of budget said "a larger
    --budget continues this bisect", an option its caller never typed; the API's answer
    names `BisectRequest(budget=...)`, kept whole in bisect.md's sentence (str.capitalize()
    lowered the rest of it)."""
    from dataclasses import replace

    from reprospec.bisect.search import Trial

    versions = [f"0.{n}" for n in range(5)]
    result = bisect(versions, lambda v, n: Trial(v, n, 0, signatures=("pass",) * n), budget=3)
    request = BisectRequest(Path("s.yaml"), "pkg", "0.0", "0.4")
    found = BisectReport(request, "id", Path("f"), "s", "", tuple(versions), result)
    assert result.status == "undecided"
    assert "a larger --budget continues this bisect" in found.render("text")
    assert "A larger --budget continues this bisect" in found.render("md")
    api = replace(found, budget_said="BisectRequest(budget=...)")
    assert "a larger BisectRequest(budget=...) continues this bisect" in api.render("text")
    assert "A larger BisectRequest(budget=...) continues this bisect" in api.render("md")


def test_the_printed_answer_names_bisect_md_unless_that_is_what_was_not_written(
    tmp_path: Path,
) -> None:
    # Only state.json's final write failed (a full disk after new trials): bisect.json and
    # bisect.md were written, and the answer's report path was dropped all the same.
    import dataclasses

    from reprospec.bisect.state import write_reports

    found = dataclasses.replace(report("0.0", "0.4", 2), folder=tmp_path)
    saved = write_reports(found, [("state.json", "No space left on device")])
    assert saved.unsaved.endswith("its state.json is not this run's"), saved.unsaved
    assert saved.unsaved_files == ("state.json",)
    assert saved.render("text").endswith(f"; report: {tmp_path / 'bisect.md'}")
    assert (tmp_path / "bisect.md").is_file()
    # A folder nothing can be written in (a file on its path): bisect.md is not this one's.
    (tmp_path / "file").write_text("")
    blocked = dataclasses.replace(found, folder=tmp_path / "file" / "bisect")
    unsaved = write_reports(blocked)
    assert "bisect.md" in unsaved.unsaved_files
    assert "report: " not in unsaved.render("text")
