"""The command line reads a verb's options anywhere among its arguments, as a reader of
cli.md's usage lines expects, and refuses in the verb's own words."""

from __future__ import annotations

import pytest

from reprospec.cli import _parse, build_parser, main


def test_options_may_come_between_a_verbs_arguments() -> None:
    # argparse through the top parser took `merge`'s RUNs in one go and refused the second.
    args = _parse(build_parser("merge"), "merge", ["merge", "a", "--out", "x", "b"])
    assert (args.command, args.runs, str(args.out)) == ("merge", ["a", "b"], "x")
    # `slurm status --format json RUN`: the RUN after the option is status's run.
    words = ["slurm", "status", "--format", "json", "r1"]
    args = _parse(build_parser("slurm"), "slurm", words)
    assert (args.target, args.run_ref, args.format) == ("status", "r1", "json")


def test_capture_keeps_the_command_after_the_dashes_as_written() -> None:
    # Its positional takes the rest (argparse cannot intermix it): `--out` is the command's.
    words = ["capture", "--", "python", "t.py", "--out", "y"]
    args = _parse(build_parser("capture"), "capture", words)
    assert args.argv[-4:] == ["python", "t.py", "--out", "y"]


def test_a_refusal_shows_the_verbs_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["merge", "a", "--repat", "3"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: reprospec merge ")
    assert "unrecognized arguments: --repat 3" in err


def test_a_ctrl_c_that_breaks_argparse_s_cleanup_is_an_interruption(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Ctrl-C while argparse's parse_intermixed_args made the verb's usage line, before it
    # saved each positional's nargs: its `finally` restored `save_nargs`, never set, and the
    # AttributeError it raised read as reprospec's bug, exit 3 (a stress loop of SIGINTs
    # into `reprospec run`, once in 700: "internal error: AttributeError: '_StoreAction'
    # object has no attribute 'save_nargs'").
    import argparse

    def interrupted(_parser: argparse.ArgumentParser) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(argparse.ArgumentParser, "format_usage", interrupted)
    assert main(["merge", "a", "b"]) == 130
    err = capsys.readouterr().err
    assert err == "reprospec: interrupted\n"


def test_a_negative_duration_after_a_space_reaches_its_own_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run x.yaml --timeout -5s` said argparse's "expected one argument" (it reads
    `-5s` as an option); only `--timeout=-5s` said what is wrong with the value."""
    assert main(["run", "x.yaml", "--timeout", "-5s"]) == 2
    err = capsys.readouterr().err
    assert err == "reprospec: --timeout: expected a duration like 90s, 5m or 1h, got '-5s'\n"
    args = _parse(build_parser("envs"), "envs", ["envs", "prune", "--older-than", "-3d"])
    assert (args.action, args.older_than) == ("prune", "-3d")
    # capture's own options, not its command's words (which stay as written).
    words = ["capture", "--timeout", "-1m", "--", "python", "t.py", "--timeout", "-5s"]
    args = _parse(build_parser("capture"), "capture", words)
    assert args.timeout == "-1m"
    assert args.argv[-4:] == ["python", "t.py", "--timeout", "-5s"]
    words = ["capture", "python", "t.py", "--timeout", "-5s"]
    args = _parse(build_parser("capture"), "capture", words)
    assert args.argv[-4:] == ["python", "t.py", "--timeout", "-5s"]


def test_a_mistyped_choice_is_told_the_nearest_one(capsys: pytest.CaptureFixture[str]) -> None:
    for words, hint in (
        (["run", "x.yaml", "--runner", "dockr"], "; did you mean 'docker'?"),
        (["run", "x.yaml", "--format", "jsn"], "; did you mean 'json'?"),
        (["run", "x.yaml", "--runner", "zzzzz"], ""),
    ):
        with pytest.raises(SystemExit) as exited:
            main(words)
        assert exited.value.code == 2
        last = capsys.readouterr().err.strip().split("\n")[-1]
        assert last.startswith(f"reprospec: error: argument --{words[2][2:]}: invalid choice: ")
        assert last.endswith(")" + hint), last


@pytest.mark.parametrize(
    ("words", "said"),
    [
        # The 0 was read as the spec: `unrecognized arguments: --budget x; did you mean
        # --set?`, of an option four other verbs take.
        (
            ["run", "--budget", "0", "x"],
            "--budget 0: --budget is an option of isolate, minimize, amplify and bisect, "
            "not of run",
        ),
        (["run", "x", "--try=cpus=1"], "--try=cpus=1: --try is an option of amplify, not of run"),
    ],
)
def test_another_verbs_option_names_the_verbs_that_have_it(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(words)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: reprospec {words[0]} ")
    assert err.endswith(f"reprospec: error: {said}\n")


def test_an_abbreviation_of_the_verbs_own_option_is_its_own() -> None:
    # `--rep` is run's `--repeat` (argparse's abbreviation), not bisect's or slurm's option.
    args = _parse(build_parser("run"), "run", ["run", "--rep", "3", "x"])
    assert args.repeat == 3


def test_isolate_s_help_says_a_probe_is_a_stored_run_not_each_attempt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`isolate --help` said "each attempt is a stored run": each probe is, its attempts
    together (`history --searches` lists one run a probe; cli.md says so)."""
    with pytest.raises(SystemExit):
        main(["isolate", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "each probe (a set's attempts) is a stored run" in said
    assert "each attempt is a stored run" not in said


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("show", "'report'"),
        ("log", "'history'"),
        ("resume", "'run --resume'"),
        # Spelled near another verb (`bisect`, `run`), which the hint named instead.
        ("list", "'history'"),
        ("runs", "'history'"),
    ],
)
def test_another_tools_name_for_a_verb_gets_the_verb(
    typed: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`reprospec show latest` said "unknown command 'show'" alone: spelled nothing like
    `report`, the nearest-spelling hint had nothing to offer. And `list` got `bisect`, the
    nearest spelling, asked before the table of what other tools' names mean here."""
    assert main([typed, "latest"]) == 2
    assert f"unknown command {typed!r}; did you mean {meant}?" in capsys.readouterr().err
