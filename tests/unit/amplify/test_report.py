"""The amplified spec's document: its folders made absolute, as written."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.amplify.report import AmplifyReport, amplified_document, markdown, write
from reprospec.amplify.report import text as answer
from reprospec.amplify.search import AmplifyResult, Arm, ArmResult
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject
from reprospec.core.logtext import shell_line
from reprospec.core.results import Rate
from reprospec.core.runoptions import RunOptions, rerun_words
from reprospec.core.units import parse_rate
from reprospec.isolation.candidates import Tally
from reprospec.spec.comments import AXES_NOTE, observe_line
from reprospec.spec.yamlsource import load_yaml


def test_the_amplified_workdir_is_absolute_without_dot_dots(tmp_path: Path) -> None:
    # `/work/repo/../incidents/race` ran, but read as a path nobody typed.
    base = tmp_path / "repo"
    document: JsonObject = {"reprospec": 1, "environment": {"workdir": "../incidents/race"}}
    out = amplified_document(document, (("switch_interval", 1e-06),), base)
    environment = out["environment"]
    assert isinstance(environment, dict)
    assert environment["workdir"] == str(tmp_path / "incidents" / "race")
    assert environment["perturb"] == {"switch_interval": 1e-06}


def test_an_amplified_workdir_of_a_matrix_value_is_named_from_the_specs_folder(
    tmp_path: Path,
) -> None:
    """`workdir: ${{ matrix.proj }}` was kept as written, so amplified.yaml, in
    OUT/amplify/ID, looked for OUT/amplify/ID/a (`folder not found`, every cell)."""
    base = tmp_path / "repo"

    def moved(workdir: str, matrix: JsonObject, dockerfile: str = "") -> JsonObject:
        environment: JsonObject = {"workdir": workdir}
        if dockerfile:
            environment["dockerfile"] = dockerfile
        document: JsonObject = {"reprospec": 1, "matrix": matrix, "environment": environment}
        out = amplified_document(document, (("gc", 1),), base)["environment"]
        assert isinstance(out, dict)
        return out

    relative: JsonObject = {"proj": ["a", "sub/b"], "include": [{"proj": "c"}]}
    assert moved("${{ matrix.proj }}", relative)["workdir"] == f"{base}/${{{{ matrix.proj }}}}"
    assert moved("src/${{ matrix.proj }}", {})["workdir"] == f"{base}/src/${{{{ matrix.proj }}}}"
    # A value that may render absolute is left as written: the spec's folder before it
    # would make `/abs` a folder under it.
    absolute: JsonObject = {"proj": ["a", "/srv/b"]}
    assert moved("${{ matrix.proj }}", absolute)["workdir"] == "${{ matrix.proj }}"
    assert moved("${{ env.WORK }}", relative)["workdir"] == "${{ env.WORK }}"
    assert moved("/srv/${{ matrix.proj }}", relative)["workdir"] == "/srv/${{ matrix.proj }}"
    # A dockerfile's `~` is the home folder, as the spec's check reads it.
    home = moved(".", {}, dockerfile="~/images/Dockerfile")["dockerfile"]
    assert home == str(Path("~/images/Dockerfile").expanduser())


def _found(tmp_path: Path, expectation: Expectation, matched: int) -> AmplifyReport:
    base = ArmResult(Arm(), Rate(3, 21, 0.04, 0.35), Tally(matched=3, passed=18))
    winner = ArmResult(
        Arm((("switch_interval", 1e-6),), "single"),
        Rate(matched, 80, 0.40 if matched < 80 else 0.95, 1.0 if matched == 80 else 0.62),
        Tally(matched=matched, passed=80 - matched),
    )
    result = AmplifyResult("amplified", (base, winner), 1, True, 101)
    return AmplifyReport(
        id="a1",
        folder=tmp_path,
        spec_name="race",
        spec_path=str(tmp_path / "race.yaml"),
        cell=Cell(id="default", index=0, matrix={}),
        expectation=expectation,
        result=result,
        runs=(),
        reused=0,
        interrupted=False,
        budget=200,
        amplified_spec=tmp_path / "amplified.yaml",
    )


def _amplified(tmp_path: Path, source: str, expectation: Expectation) -> tuple[AmplifyReport, str]:
    """`_found`'s answer written over the spec `source` (the text of `tmp_path`'s spec), and
    the amplified.yaml it wrote."""
    document = load_yaml(source).data
    assert isinstance(document, dict)
    found = write(_found(tmp_path, expectation, 41), document, tmp_path, source)
    assert found.amplified_spec is not None
    return found, found.amplified_spec.read_text()


def test_the_amplified_spec_without_a_rate_is_said_to_need_one_to_judge_a_run_by_it(
    tmp_path: Path,
) -> None:
    """amplify.md suggests `reprospec run amplified.yaml --repeat 20`; with no `expect.rate`
    every attempt must fail, and at the amplified 41/80 that run read `not-reproduced`, exit
    1, of a failure it reproduced in half its attempts."""
    text = markdown(_found(tmp_path, Expectation("error", exception="AssertionError"), 41))
    assert (
        "The cell's `expect` has no `rate`, so a run judges every attempt and reads "
        "`not-reproduced` where any attempt passes; amplified, it failed in 41/80 "
        "(0.40–0.62): give the failing cell `rate: '>0'` in its `expect` to judge a run by "
        "its rate (a bound below that interval, `>=0.2`, tells a fix)."
    ) in text
    # Its interval as the table above prints it, rounded outward: 9/36's 0.1351–0.4141
    # read `0.13–0.42` in the table and `(0.14–0.41)` here.
    found = _found(tmp_path, Expectation("error"), 9)
    found = replace(
        found,
        result=replace(
            found.result,
            arms=(
                found.result.arms[0],
                replace(found.result.arms[1], rate=Rate(9, 36, 0.1351, 0.4141)),
            ),
        ),
    )
    text = markdown(found)
    assert "| switch_interval=1e-06 | 9/36 | 0.13–0.42 |" in text
    assert "amplified, it failed in 9/36 (0.13–0.42): give" in text
    # With a rate of its own, or failing in every attempt, a run judges it as it should.
    rated = Expectation("error", rate=parse_rate(">0"))
    assert "has no `rate`" not in markdown(_found(tmp_path, rated, 41))
    assert "has no `rate`" not in markdown(_found(tmp_path, Expectation("error"), 80))


def test_the_terminal_says_the_amplified_spec_needs_a_rate_too(tmp_path: Path) -> None:
    """A user who ran `reprospec run amplified.yaml` on the terminal's word read
    `not-reproduced` of a failure amplified to 17/18: the note was in amplify.md alone."""
    said = answer(_found(tmp_path, Expectation("error"), 41)).splitlines()
    # The last line names the report, as isolate's and bisect's do; the note is above it.
    assert said[-1] == f"report: {tmp_path / 'amplify.md'}"
    assert said[-2].startswith("note: The cell's `expect` has no `rate`"), said
    assert "give the failing cell `rate: '>0'` in its `expect`" in said[-2]
    assert said[-3] == f"amplified spec: {tmp_path / 'amplified.yaml'}"
    # With a rate of its own, or failing in every attempt, it needs none.
    rated = Expectation("error", rate=parse_rate(">0"))
    assert "note:" not in answer(_found(tmp_path, rated, 41))
    assert "note:" not in answer(_found(tmp_path, Expectation("error"), 80))


def _not_amplified(tmp_path: Path, base: Rate, expectation: Expectation) -> AmplifyReport:
    arms = (
        ArmResult(Arm(), base, Tally(matched=base.matched, passed=base.attempts - base.matched)),
        ArmResult(Arm((("gc", "aggressive"),), "single"), Rate(9, 20, 0.26, 0.66), Tally()),
    )
    return AmplifyReport(
        id="a1",
        folder=tmp_path,
        spec_name="race",
        spec_path=str(tmp_path / "race.yaml"),
        cell=Cell(id="workers=2,gc=true", index=1, matrix={"workers": 2, "gc": True}),
        expectation=expectation,
        result=AmplifyResult("not-amplified", arms, None, False, 60),
        runs=(),
        reused=0,
        interrupted=False,
        budget=300,
        cells=4,
    )


def test_not_amplified_says_when_the_base_is_frequent_enough_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "not amplified" (exit 1) and the arms, read as a dead end, where the base at
    # 21/40 is already enough for minimize and isolate (their minimum rate 0.3).
    monkeypatch.chdir(tmp_path)
    found = _not_amplified(tmp_path, Rate(21, 40, 0.37, 0.67), Expectation("error"))
    said = (
        "the base already fails in 21/40 (at least 0.37), often enough for isolate and "
        "minimize (at least 0.3): go on without a perturbation: reprospec minimize race.yaml "
        "-m workers=2 -m gc=true (or reprospec isolate race.yaml -m workers=2 -m gc=true)"
    )
    assert f"next: {said}" in found.render("text").splitlines()
    assert f"Next: {said}." in found.render("md")
    # A base that is rare, or below the cell's own rate bound, is not frequent enough as it
    # is: its next step gives isolate and minimize its rate (below).
    rare = _not_amplified(tmp_path, Rate(3, 40, 0.03, 0.20), Expectation("error"))
    bound = _not_amplified(
        tmp_path, Rate(21, 40, 0.37, 0.67), Expectation("error", rate=parse_rate(">=0.5"))
    )
    # The bound as the base's interval prints it, rounded down: 12/16's 0.505 read
    # `(95% CI 0.50–0.90)` in the answer and `(at least 0.51)` on this line.
    halfway = _not_amplified(tmp_path, Rate(12, 16, 0.5050168, 0.8981793), Expectation("error"))
    assert "base 12/16 (95% CI 0.50–0.90)" in halfway.render("text")
    assert "the base already fails in 12/16 (at least 0.50), often" in halfway.render("text")
    for quiet in (rare, bound):
        assert "often enough" not in quiet.render("text")
        assert "--min-rate" in quiet.render("text")
    # A spec of one cell has no passing side for isolate: minimize alone is named.
    alone = replace(found, cell=Cell(id="default", index=0, matrix={}), cells=1)
    assert (
        alone.render("text")
        .splitlines()[-2]
        .endswith("go on without a perturbation: reprospec minimize race.yaml")
    )
    # Amplified under `--python PATH`: the commands carry it (bare, an infra-error).
    under = replace(alone, rerun_options=("--python", ".venv/bin/python"))
    assert (
        under.render("text")
        .splitlines()[-2]
        .endswith("reprospec minimize race.yaml --python .venv/bin/python")
    )
    # Amplified with `-j 2 --set run.timeout=15s`: the spec file's commands carry both (its
    # `--set`s are not in the file; without `-j` the next search ran one attempt at a time).
    given = RunOptions(jobs=2, overrides=("run.timeout=15s",))
    carried = replace(alone, rerun_options=rerun_words(given), overrides=given.overrides)
    assert (
        carried.render("text")
        .splitlines()[-2]
        .endswith("reprospec minimize race.yaml -j 2 --set run.timeout=15s")
    )


def test_the_suggested_commands_carry_the_options_the_attempts_ran_with(tmp_path: Path) -> None:
    """A spec captured with `--python .venv/bin/python` was amplified under it, and
    amplify.md suggested a bare `reprospec run amplified.yaml --repeat 20`: an infra-error,
    its packages missing from reprospec's interpreter; and `reprospec isolate
    amplified.yaml` of its one cell, refused (exit 2) without `--passing-set`."""
    from dataclasses import replace

    from reprospec.core.runoptions import RunOptions, rerun_words

    options = RunOptions(python=".venv/bin/python", runner="venv", out=Path("o"))
    assert rerun_words(options) == (
        "--runner",
        "venv",
        "--python",
        ".venv/bin/python",
        "--out",
        "o",
    )
    assert rerun_words(RunOptions()) == ()
    assert rerun_words(RunOptions(jobs=2)) == ("-j", "2")
    found = replace(
        _found(tmp_path, Expectation("crash", rate=parse_rate(">0")), 41),
        rerun_options=("--python", ".venv/bin/python"),
    )
    spec = tmp_path / "amplified.yaml"
    text = markdown(found)
    assert f"    reprospec run {spec} --python .venv/bin/python --repeat 20\n" in text
    assert (
        f"    reprospec isolate {spec} --python .venv/bin/python --passing-set PATH=VALUE" in text
    )
    # A spec of several cells has its passing side: no --passing-set is asked for.
    several = markdown(replace(found, cells=4))
    assert f"    reprospec isolate {spec} --python .venv/bin/python\n" in several
    # isolate names the cell amplified: bare, it took the first cell expected to fail, and
    # `amplify -m mode=c`'s isolate ran on mode=b, saying the failure was amplified there.
    cell_c = Cell(id="mode=c", index=2, matrix={"mode": "c"})
    matrix = markdown(replace(found, cells=3, cell=cell_c))
    assert f"    reprospec isolate {spec} -m mode=c --python .venv/bin/python\n" in matrix


def test_the_amplified_spec_keeps_the_source_spec_s_comments(tmp_path: Path) -> None:
    # A new user's amplified.yaml of a captured spec: the `--python` note and the reasons
    # beside `expect` and the variables were gone (the document dumped again).
    source = (
        "# Written by `reprospec capture -- python race.py`.\n"
        "# It ran with --python /venv/bin/python, whose packages it pins:\n"
        "#   rerun it with the same, or with --runner venv.\n"
        "reprospec: 1\nname: race\nenvironment:\n  env:\n"
        "    # your shell set it: the failure needs it\n    RACE: '1'\n"
        "command: python race.py\n"
        "expect:\n  outcome: error\n  exception: AssertionError  # raised by the check\n"
    )
    _, text = _amplified(tmp_path, source, Expectation("error", exception="AssertionError"))
    lines = text.splitlines()
    assert lines[0].startswith("# Amplified by reprospec amplify from ")
    assert lines[2:5] == source.splitlines()[:3]
    assert (
        lines[lines.index("    RACE: '1'") - 1] == "    # your shell set it: the failure needs it"
    )
    assert "  exception: AssertionError  # raised by the check" in lines
    written = load_yaml(text).data
    assert isinstance(written, dict)
    assert written["environment"] == {
        "env": {"RACE": "1"},
        "workdir": str(tmp_path),
        "perturb": {"switch_interval": 1e-06},
    }


def test_the_amplified_spec_s_note_on_axes_names_the_amplified_spec(tmp_path: Path) -> None:
    # amplified.yaml of a captured spec kept capture's `#   reprospec run crash.yaml
    # --observe ...`, naming the original spec, over amplified.yaml (minimize's was mended).
    note = (*AXES_NOTE, observe_line("crash.yaml"))
    source = (
        "# Written by `reprospec capture -- python race.py --batch 4`.\n"
        + "".join(f"# {line}\n" for line in note)
        + "reprospec: 1\nname: race\ncommand: python race.py --batch ${{ matrix.batch }}\n"
        "matrix:\n  batch: [4]\n"
        "expect:\n  outcome: error\n  exception: AssertionError\n"
    )
    found, text = _amplified(tmp_path, source, Expectation("error", exception="AssertionError"))
    # By its path, as amplify.md's commands name it: the bare name ran only from the folder.
    quoted = shell_line([str(found.amplified_spec)])
    assert f"\n# {observe_line(quoted)}\n" in text
    assert f"\n    reprospec run {quoted} " in markdown(found)
    assert "crash.yaml" not in text
    assert f"# {AXES_NOTE[0]}\n" in text
    # An --out whose path holds a line break: shlex.quote wrote it into the comments (the
    # header's spec path, the note's), and the line after the break, no comment, made
    # amplified.yaml invalid YAML. Both are written on one line, `$'...\n...'`.
    folder = tmp_path / "out\ndir"
    folder.mkdir()
    found, text = _amplified(folder, source, Expectation("error", exception="AssertionError"))
    assert isinstance(load_yaml(text).data, dict)
    assert f"\n# {observe_line(shell_line([str(found.amplified_spec)]))}\n" in text
    header = f"# Amplified by reprospec amplify from {shell_line([found.spec_path])} "
    assert text.startswith(header)
    assert "\\n" in text.splitlines()[0]


def test_the_amplified_spec_keeps_capture_s_todo_block_only_while_a_key_is_unfilled(
    tmp_path: Path,
) -> None:
    # A filled skeleton's TODO block came into amplified.yaml, a stale "left to fill
    # in"; one still asking for a key stays.
    head = (
        "# A skeleton written by `reprospec capture --from-log issue.md`.\n"
        "#\n# TODO (left to fill in):\n"
        "#   - environment.python: the Python version (the log does not say it)\n"
    )
    body = "reprospec: 1\nname: race\ncommand: python race.py\nexpect: {outcome: error}\n"
    for python, kept in (("environment: {python: '3.11'}\n", False), ("", True)):
        source = head + body + python
        _, text = _amplified(tmp_path, source, Expectation("error"))
        assert ("# TODO (left to fill in):" in text) is kept, text
        assert "# A skeleton written by `reprospec capture --from-log issue.md`." in text


def test_the_amplified_spec_s_schema_line_names_the_schema_from_its_own_folder(
    tmp_path: Path,
) -> None:
    # lo35: `$schema=../schemas/...` was copied as written into OUT/amplify/ID/, where it
    # named nothing: the editor's checks and hovers were gone from the amplified spec.
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "reprospec.schema.json").write_text("{}")
    specs = tmp_path / "specs"
    source = (
        "# yaml-language-server: $schema=../schemas/reprospec.schema.json\n"
        "reprospec: 1\nname: race\ncommand: python race.py\nexpect: {outcome: error}\n"
    )
    document = load_yaml(source).data
    assert isinstance(document, dict)
    found = replace(
        _found(tmp_path, Expectation("error"), 41), folder=tmp_path / "out" / "amplify" / "a1"
    )
    written = write(found, document, specs, source)
    assert written.amplified_spec is not None
    lines = written.amplified_spec.read_text().splitlines()
    assert "# yaml-language-server: $schema=../../../schemas/reprospec.schema.json" in lines


def _suggested(line: str, verb: str) -> list[str]:
    """The words of the `reprospec VERB ...` a next line suggests, up to `)`, `,` or its end."""
    import re
    import shlex

    found = re.search(rf"reprospec {verb} ([^(),]*)", line)
    assert found is not None, line
    return [verb, *shlex.split(found.group(1))]


def test_not_amplified_with_a_rare_base_suggests_isolate_and_minimize_at_its_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base below 0.3 got only "not amplified" and a larger `--budget`, where isolate and
    minimize go on at its rate with `--min-rate` (lo36). Each suggested command is one the
    real parser takes."""
    from reprospec.cli import build_parser

    monkeypatch.chdir(tmp_path)
    found = _not_amplified(tmp_path, Rate(3, 40, 0.03, 0.20), Expectation("error"))
    line = found.render("text").splitlines()[-2]
    assert line == (
        "next: the base fails in 3/40 (at least 0.03), below isolate's and minimize's minimum "
        "rate (0.3): go on without a perturbation at that rate, with more attempts: reprospec "
        "minimize race.yaml -m workers=2 -m gc=true --min-rate 0.03 (or reprospec "
        "isolate race.yaml -m workers=2 -m gc=true --min-rate 0.03 --budget 210), or give "
        "amplify a larger --budget"
    )
    assert f"Next: {line.removeprefix('next: ')}." in found.render("md")
    one = replace(
        found,
        cell=Cell(id="default", index=0, matrix={}),
        cells=1,
        result=replace(
            found.result,
            arms=(
                ArmResult(Arm(), Rate(1, 60, 0.003, 0.09), Tally(matched=1, passed=59)),
                *found.result.arms[1:],
            ),
        ),
        rerun_options=("--python", ".venv/bin/python"),
    )
    alone = one.render("text").splitlines()[-2]
    assert alone.startswith("next: the base fails in 1/60 (at least 0.003), below")
    assert "minimize race.yaml --python .venv/bin/python --min-rate 0.003 --budget 2100" in alone
    assert "--passing-set PATH=VALUE" in alone  # one cell: isolate needs its passing side
    # A matrix of one value is one cell too: isolate refused `isolate rare.yaml -m n=900
    # --min-rate 0.015` without --passing-set (exit 2), the command this line gave (nu-a).
    single = replace(found, cell=Cell(id="n=900", index=0, matrix={"n": 900}), cells=1)
    assert "--budget 210 --passing-set PATH=VALUE)" in single.render("text").splitlines()[-2]
    # Its one cell needs no -m, as race.yaml's does not: the commands name none.
    assert " -m " not in single.render("text")
    assert " -m " not in single.render("md")
    frequent = _not_amplified(tmp_path, Rate(21, 40, 0.37, 0.67), Expectation("error"))
    frequent = replace(frequent, cell=Cell(id="n=900", index=0, matrix={"n": 900}), cells=1)
    assert "reprospec isolate" not in frequent.render("text").splitlines()[-2]
    for line_ in (line, alone):
        for verb in ("minimize", "isolate"):
            parsed = build_parser().parse_args(_suggested(line_, verb))
            assert 0 < parsed.min_rate < 1
            # a --budget only above the verb's default (minimize's 1000): never one lower
            assert parsed.budget >= {"minimize": 1000, "isolate": 100}[verb]
    # A base that never failed has nothing to isolate: no next step.
    never = _not_amplified(tmp_path, Rate(0, 40, 0.0, 0.09), Expectation("error"))
    assert "next:" not in never.render("text")


def test_amplify_md_folds_a_long_list_of_runs(tmp_path: Path) -> None:
    # Before: the search's 51 run ids inline, one paragraph of ids.
    found = _not_amplified(tmp_path, Rate(3, 40, 0.03, 0.20), Expectation("error"))
    runs = tuple(f"20261202-0451{i:02d}-ab{i:02d}" for i in range(51))
    text = markdown(replace(found, runs=runs))
    section = text.split("## Runs\n", 1)[1]
    assert section.startswith(
        "\n<details><summary>51 runs, one per probe: `20261202-045100-ab00`, "
        "`20261202-045101-ab01`, `20261202-045102-ab02`, …</summary>\n\n- `20261202-045100-ab00`\n"
    )
    assert section.count("- `") == 51
    assert "</details>" in section
    assert ", ".join(runs) not in text
    few = markdown(replace(found, runs=runs[:2]))
    # Inline as isolate.md's are: each backquoted.
    assert few.endswith("## Runs\n\n`20261202-045100-ab00`, `20261202-045101-ab01`\n")


def test_the_amplified_spec_s_rate_comment_says_the_amplified_rate(tmp_path: Path) -> None:
    # amplified.yaml kept capture's `# observed 1/10; ... run with --repeat 74` beside
    # `switch_interval: 1e-06`, which fails in half its attempts: the comment and its
    # advice were of the spec before its perturbation.
    source = (
        "reprospec: 1\nname: race\ncommand: python race.py\n"
        "expect:\n  outcome: error\n  exception: AssertionError  # raised by the check\n"
        "  rate: '>0'  # observed 1/10; met by one match, never refuted: to tell a fix, "
        "raise it (`>=0.05`) and run with --repeat 74\n"
    )
    expectation = Expectation("error", exception="AssertionError", rate=parse_rate(">0"))
    _, text = _amplified(tmp_path, source, expectation)
    assert "1/10" not in text, text
    assert "--repeat 74" not in text, text
    assert (
        "  rate: '>0'  # observed 41/80 with switch_interval=1e-06 (amplify), 3/21 without it; "
        "met by one match, never refuted: to tell a fix, raise it (`>=0.25`) and run with "
        "--repeat 13"
    ) in text.splitlines(), text
    assert "  exception: AssertionError  # raised by the check" in text
    written = load_yaml(text).data
    assert isinstance(written, dict)
    source_expect = load_yaml(source).data
    assert isinstance(source_expect, dict)
    assert written["expect"] == source_expect["expect"]


def test_a_fresh_winner_is_said_against_the_fresh_base_everywhere(tmp_path: Path) -> None:
    # Under run.preload malloc=perturb's attempts start fresh and the base's fork: the claim,
    # the arms, amplify.json and amplified.yaml's comment name the base it was judged
    # against, `base (fresh)`, and its rate, not the forked base's.
    arms = (
        ArmResult(Arm(), Rate(3, 21, 0.04, 0.35), Tally(matched=3, passed=18)),
        ArmResult(Arm((), "base", fresh=True), Rate(1, 16, 0.01, 0.28), Tally(1, 15)),
        ArmResult(Arm((("gc", "aggressive"),), "single"), Rate(2, 8, 0.07, 0.59), Tally(2, 6)),
        ArmResult(
            Arm((("malloc", "perturb"),), "single", fresh=True),
            Rate(30, 40, 0.60, 0.86),
            Tally(matched=30, passed=10),
        ),
    )
    expectation = Expectation("error", exception="AssertionError", rate=parse_rate(">0"))
    found = replace(
        _found(tmp_path, expectation, 41),
        result=AmplifyResult("amplified", arms, 3, True, 85),
    )
    source = "reprospec: 1\nname: race\ncommand: python race.py\nexpect:\n  rate: '>0'\n"
    document = load_yaml(source).data
    assert isinstance(document, dict)
    written = write(found, document, tmp_path, source)
    line = "base 3/21 (95% CI 0.04–0.35); with malloc=perturb: 30/40 (0.60–0.86)"
    assert answer(written).splitlines()[0] == f"{line}, against base (fresh) 1/16 (0.01–0.28)"
    assert (
        "  malloc=perturb: 30/40 (95% CI 0.60–0.86); ran fresh, judged against base (fresh)"
    ) in answer(written).splitlines()
    assert "  gc=aggressive: 2/8 (95% CI 0.07–0.59)" in answer(written).splitlines()
    md = (tmp_path / "amplify.md").read_text()
    assert (
        "`malloc=perturb` ran fresh (a perturbation only a process's start applies) and was "
        "judged against `base (fresh)`" in md
    )
    data = json.loads((tmp_path / "amplify.json").read_text())
    compared = {a["perturbation"]: a["compared_with"] for a in data["arms"]}
    assert compared == {
        "base": None,
        "base (fresh)": None,
        "gc=aggressive": "base",
        "malloc=perturb": "base (fresh)",
    }
    assert written.amplified_spec is not None
    assert (
        "  rate: '>0'  # observed 30/40 with malloc=perturb (amplify), 1/16 without it (both "
        "started fresh)"
    ) in written.amplified_spec.read_text()


def test_amplify_given_the_amplified_spec_names_its_folder(tmp_path: Path) -> None:
    # nu-a: `minimize race.yaml --amplify .../amplified.yaml` read "not an amplify result
    # (Expecting value: line 1 column 1 (char 0))", the JSON decoder's words.
    from reprospec.amplify.driver import amplified_overrides
    from reprospec.errors import UsageError

    (tmp_path / "amplify.json").write_text('{"settings": {"gc": "aggressive"}}')
    (tmp_path / "amplified.yaml").write_text("reprospec: 1\n")
    with pytest.raises(UsageError) as caught:
        amplified_overrides(tmp_path / "amplified.yaml")
    said = str(caught.value)
    assert "Expecting value" not in said
    assert said.endswith(f"(not JSON); its folder is one: --amplify {tmp_path}")
    with pytest.raises(UsageError) as caught:
        amplified_overrides(tmp_path / "nowhere")
    assert str(caught.value).endswith("its amplify.json (No such file or directory)")


def test_amplify_md_says_the_budget_continues_in_one_sentence(tmp_path: Path) -> None:
    # nu-a: "40 attempts of a budget of 40. a larger --budget continues ..." in amplify.md.
    found = _not_amplified(tmp_path, Rate(3, 40, 0.03, 0.20), Expectation("error"))
    found = replace(found, result=replace(found.result, budget_spent=True))
    assert (
        "60 attempts of a budget of 300; a larger --budget continues this amplification: its "
        "60 attempts are replayed, not run again."
    ) in markdown(found)


def test_an_arm_never_tried_is_not_given_a_rate_where_the_best_is_not_established(
    tmp_path: Path,
) -> None:
    # The budget ended before cpu_load=2 ran: amplify.md said "`cpu_load=2` 0/0 (0.00–1.00)
    # may be as good", a rate of no attempt.
    found = _found(tmp_path, Expectation("crash"), 41)
    untried = ArmResult(Arm((("cpu_load", 2),), "single"), Rate(0, 0, 0.0, 1.0), Tally())
    result = replace(found.result, arms=(*found.result.arms, untried), established=False)
    text = markdown(replace(found, result=result))
    assert "The best setting is not established: `cpu_load=2` (not tried) may be as good." in text


def test_an_answer_without_a_winner_leaves_no_amplified_spec_of_an_earlier_one(
    tmp_path: Path,
) -> None:
    # The same amplification under a smaller --budget answered "not amplified", and the
    # amplified.yaml its larger budget wrote stayed beside it, naming a winner.
    document: JsonObject = {"reprospec": 1, "name": "race", "command": "python race.py"}
    written = write(_found(tmp_path, Expectation("error"), 41), document, tmp_path)
    assert written.amplified_spec is not None
    assert written.amplified_spec.is_file()
    not_amplified = _not_amplified(tmp_path, Rate(1, 8, 0.02, 0.47), Expectation("error"))
    again = write(not_amplified, document, tmp_path)
    assert again.amplified_spec is None
    assert not (tmp_path / "amplified.yaml").exists()
    assert json.loads((tmp_path / "amplify.json").read_text())["amplified_spec"] is None


def test_an_answer_whose_report_could_not_be_written_names_the_file_not_saved(
    tmp_path: Path,
) -> None:
    """amplify.json written and amplify.md not (a full disk between them): the warning said
    both were not this run's. Each is tried on its own (write_atomic: a failed write
    leaves no truncated amplify.json), and the warning names the one not written."""
    document: JsonObject = {"reprospec": 1, "name": "race", "command": "python race.py"}
    (tmp_path / "amplify.md").mkdir()  # a rename onto it fails
    saved = write(_found(tmp_path, Expectation("error"), 41), document, tmp_path)
    assert saved.unsaved.startswith(f"the answer could not be saved in {tmp_path} (")
    assert saved.unsaved.endswith("): its amplify.md is not this run's"), saved.unsaved
    assert json.loads((tmp_path / "amplify.json").read_text())["id"] == "a1"
    assert saved.amplified_spec == tmp_path / "amplified.yaml"
    assert "report:" not in answer(saved)  # the amplify.md there is not this answer's
    # An earlier answer's amplified.yaml that cannot be replaced is named, with its error.
    (tmp_path / "amplify.md").rmdir()
    stale = tmp_path / "amplified.yaml"
    stale.unlink()
    stale.mkdir()
    (stale / "x").write_text("")
    again = write(_found(tmp_path, Expectation("error"), 41), document, tmp_path)
    assert again.amplified_spec is None
    assert again.unsaved.endswith("): its amplified.yaml is not this run's"), again.unsaved
    assert "()" not in again.unsaved
    # Only amplified.yaml was not written: amplify.md is this answer's, and its path is
    # printed (it was left out wherever anything was unsaved).
    assert answer(again).endswith(f"report: {tmp_path / 'amplify.md'}"), answer(again)


def test_the_budget_continues_as_the_api_names_the_budget(tmp_path: Path) -> None:
    # amplify_spec(..., AmplifyOptions(budget=40)) out of budget said "a larger --budget
    # continues" in amplify.md and its text, where its other advice said
    # `AmplifyOptions(budget=...)`.
    found = _not_amplified(tmp_path, Rate(3, 40, 0.03, 0.20), Expectation("error"))
    found = replace(
        found,
        result=replace(found.result, budget_spent=True),
        budget_said="AmplifyOptions(budget=...)",
    )
    said = "a larger AmplifyOptions(budget=...) continues this amplification"
    assert said in markdown(found)
    assert said in found.render("text")
