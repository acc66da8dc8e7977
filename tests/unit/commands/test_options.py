"""Options shared by the verbs: declared once (commands/options.py), refused in one wording
whichever verb was given them, turned into `RunOptions` by one function; `run` reads its
inputs into one request without changing the parsed arguments; a bundle's manifest
options are held to the CLI's bounds."""

from __future__ import annotations

import argparse
import io
import json
import tarfile
from pathlib import Path

import pytest

from reprospec.cli import COMMANDS, build_parser, main
from reprospec.commands import options as opt
from reprospec.commands.run import read_request
from reprospec.core.bounds import MAX_PARALLEL, MAX_REPEAT
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.report import FORMATS

SPEC = "reprospec: 1\nname: tiny\ncommand: 'true'\nexpect: {outcome: pass}\n"


def _bundle(path: Path, options: dict[str, object]) -> Path:
    """A bundle as `reprospec bundle` lays it out, with these options in its manifest."""
    manifest = {"format": 1, "spec": "tree/tiny.yaml", "options": options}
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (
            ("b/bundle.json", json.dumps(manifest).encode()),
            ("b/tree/tiny.yaml", SPEC.encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line a refused command ends with (exit 2 whether argparse or the
    verb refused it)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(str(exc.code))
    assert code == 2, argv
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_every_verb_declares_its_own_parser_and_only_the_one_run_is_built() -> None:
    full = build_parser()
    subparsers = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == list(COMMANDS)
    one = build_parser("isolate")
    only = next(a for a in one._actions if isinstance(a, argparse._SubParsersAction))
    assert list(only.choices) == ["isolate"]


@pytest.mark.parametrize("verb", ["run", "merge", "report"])
def test_every_verb_that_prints_a_report_takes_every_format_render_renders(verb: str) -> None:
    # Report took md, html, junit, json; `render` renders github too.
    parser = build_parser(verb)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    fmt = next(a for a in sub.choices[verb]._actions if a.dest == "format")
    assert tuple(fmt.choices or ()) == FORMATS
    assert "github" in FORMATS


def _verb_and_spec(verb: str, tmp_path: Path) -> list[str]:
    """`VERB tiny.yaml` (SPEC written) and what the verb checks before its run options."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    needs = {"bisect": ["--package", "p", "--good", "1", "--bad", "2"], "slurm": ["--shards", "1"]}
    return [verb, str(spec), *needs.get(verb, [])]


@pytest.mark.parametrize("verb", ["run", "isolate", "bisect", "slurm"])
def test_a_bad_count_is_refused_in_one_wording_by_every_verb(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _verb_and_spec(verb, tmp_path)
    for flag, bad, words in (
        ("-j", "0", "argument -j/--jobs: expected a number >= 1, got 0"),
        ("-j", str(MAX_PARALLEL + 1), f"expected a number from 1 to {MAX_PARALLEL}, got"),
        ("-j", "two", "argument -j/--jobs: expected a whole number, got 'two'"),
        ("--timeout", "0s", "reprospec: --timeout: expected a duration > 0, got '0s'"),
        ("--timeout", "soon", "--timeout: expected a duration like 90s, 5m or 1h, got 'soon'"),
    ):
        argv = [*before, flag, bad, "--out", str(tmp_path)]
        assert words in _refusal(capsys, *argv)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("verb", ["run", "isolate", "bisect", "slurm", "materialize"])
def test_a_find_links_folder_that_is_not_there_is_refused_before_anything_runs(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was taken, and every cell of the run was an infra-error (`--find-links folder
    # not found`), exit 3; under the local runner, which uses none, not a word.
    out = [] if verb == "materialize" else ["--out", str(tmp_path)]
    argv = [*_verb_and_spec(verb, tmp_path), *out]
    spec = tmp_path / "tiny.yaml"
    missing = tmp_path / "wheels"
    line = _refusal(capsys, *argv, "--find-links", str(missing))
    assert line.endswith(f"argument --find-links: folder not found: {missing}")
    line = _refusal(capsys, *argv, "--find-links", str(spec))
    assert line.endswith(f"argument --find-links: not a folder: {spec}")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("verb", ["run", "isolate", "bisect", "slurm"])
def test_an_empty_python_is_refused_before_anything_runs(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--python ''` (`--python "$PY"` with PY unset) was `interpreter not found: `,
    # exit 3, after the run was set up.
    argv = [*_verb_and_spec(verb, tmp_path), "--out", str(tmp_path), "--python", ""]
    line = _refusal(capsys, *argv)
    assert line.endswith("argument --python: expected an interpreter's path or name, got ''")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out"],
        ["isolate", "--out"],
        ["materialize", "-o"],
        ["minimize", "-o"],
        ["history", "--out"],
        ["report", "-o"],
    ],
)
def test_an_empty_out_or_output_is_refused_before_anything_runs(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `--out "$OUT"` with OUT unset was `Path('')`, the current folder: `run` wrote its
    # results.db and runs/ there, among the user's files, as `--python ''` is refused.
    monkeypatch.chdir(tmp_path)
    verb, flag = argv
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    line = _refusal(capsys, verb, "latest" if verb == "report" else str(spec), flag, "")
    assert line.endswith(
        f"argument {'-o/--output' if flag == '-o' else flag}: expected a path, got ''"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


@pytest.mark.parametrize("verb", ["run", "slurm"])
def test_repeat_is_bounded_as_run_repeat_is(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refusal(capsys, verb, "x.yaml", "--repeat", str(MAX_REPEAT + 1))
    assert line.endswith(
        f"argument --repeat: expected a number from 1 to {MAX_REPEAT}, "
        f"got {MAX_REPEAT + 1} (docs/limits.md)"
    )


@pytest.mark.parametrize("verb", ["isolate", "bisect"])
def test_fractions_are_refused_in_one_wording(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # bisect checks its versions first; give it a question it can read.
    extra = ["--package", "p", "--good", "1", "--bad", "2"] if verb == "bisect" else []
    line = _refusal(capsys, verb, "x.yaml", *extra, "--error", "1.5")
    assert line == "reprospec: --error must be strictly between 0 and 1, got 1.5"
    # 0 and 1 themselves are refused too, and the words say so.
    line = _refusal(capsys, verb, "x.yaml", *extra, "--min-rate", "0")
    assert line == "reprospec: --min-rate must be strictly between 0 and 1, got 0"


def test_run_options_are_the_same_whichever_verb_parsed_them(tmp_path: Path) -> None:
    shared = ["--timeout", "90s", "-j", "3", "--python", "py", "--out", str(tmp_path)]
    (tmp_path / "wheels").mkdir()  # a --find-links folder must be there
    shared += ["--find-links", str(tmp_path / "wheels"), "--set", "run.repeat=2"]
    seen = {}
    for verb, extra in (
        ("run", ["--gpus", "0", "--keep-cores", "-m", "a=1"]),
        ("isolate", ["--gpus", "0", "--keep-cores"]),
        ("bisect", ["-m", "a=1"]),
        ("slurm", ["-m", "a=1"]),
    ):
        args = build_parser(verb).parse_args([verb, "s.yaml", *shared, *extra])
        options = opt.run_options(args, purpose=verb)
        assert options.timeout_s == 90
        assert options.jobs == 3
        assert options.python == "py"
        assert options.out == tmp_path
        assert options.find_links == tmp_path / "wheels"
        assert options.overrides == ("run.repeat=2",)
        assert options.purpose == verb
        seen[verb] = options
    # What a verb does not declare keeps RunOptions' default.
    assert seen["isolate"].matrix_filters == ()
    assert seen["bisect"].gpus is None
    assert not seen["slurm"].keep_cores
    assert seen["run"].matrix_filters == seen["slurm"].matrix_filters == ("a=1",)
    assert seen["run"].gpus == "0"
    assert seen["run"].keep_cores


@pytest.mark.parametrize("verb", ["run", "minimize", "isolate", "amplify"])
def test_preload_is_one_option_whichever_verb_takes_it(verb: str) -> None:
    """`--preload` reached run and minimize only: isolate and amplify refused it, exit 2,
    where `--set run.preload=[...]` worked (a new user's trial)."""
    for given, modules in (("json,os.path", ("json", "os.path")), ("none", ())):
        args = build_parser(verb).parse_args([verb, "s.yaml", "--preload", given])
        assert opt.run_options(args, purpose=verb).preload == modules
    args = build_parser(verb).parse_args([verb, "s.yaml"])
    assert opt.run_options(args, purpose=verb).preload is None
    # An empty name is refused: `,,` ran every attempt fresh without a word, and
    # `json,,os` dropped what may be a mistyped module.
    for empty in (",,", "json,,os", "json,"):
        args = build_parser(verb).parse_args([verb, "s.yaml", "--preload", empty])
        with pytest.raises(UsageError, match=f"--preload '{empty}' names an empty module"):
            opt.run_options(args, purpose=verb)
    # And no name at all: `--preload "$MODS"` with MODS unset was read as `none`.
    for blank in ("", " "):
        args = build_parser(verb).parse_args([verb, "s.yaml", "--preload", blank])
        with pytest.raises(UsageError, match=f"--preload '{blank}' names no module"):
            opt.run_options(args, purpose=verb)


def test_bisect_takes_preload_as_the_specs_run_preload_given_last() -> None:
    """bisect's runs take the spec's fields (BisectRequest has overrides, no preload): its
    `--preload` is `--set run.preload=[...]` after the user's own, so it wins as run's does."""
    argv = ["bisect", "s.yaml", "--set", "run.preload=[torch]", "--preload", "json"]
    options = opt.run_options(build_parser("bisect").parse_args(argv), purpose="bisect")
    assert (*options.overrides, *opt.preload_set(options.preload)) == (
        "run.preload=[torch]",
        'run.preload=["json"]',
    )
    assert opt.preload_set(()) == ("run.preload=[]",)
    assert opt.preload_set(None) == ()


def test_run_reads_a_bundle_into_one_request_and_leaves_the_arguments_alone(
    tmp_path: Path,
) -> None:
    archive = _bundle(
        tmp_path / "tiny.tar.gz",
        {"matrix_filters": [], "repeat": 3, "timeout_s": 45, "observe": True},
    )
    args = build_parser("run").parse_args(["run", str(archive), "--out", str(tmp_path / "o")])
    before = dict(vars(args))
    request = read_request(args)
    assert vars(args) == before
    assert request.options.repeat == 3
    assert request.options.timeout_s == 45
    assert request.options.observe
    assert request.confirm == str(archive)  # a bundle is shown and confirmed first
    assert request.spec.name == "tiny"
    # Options given here win over the bundle's.
    args = build_parser("run").parse_args(
        ["run", str(archive), "--out", str(tmp_path / "o"), "--repeat", "5", "--yes"]
    )
    request = read_request(args)
    assert (request.options.repeat, request.options.timeout_s) == (5, 45)
    assert request.confirm is None
    assert request.options.preload is None  # the run had no --preload
    with pytest.raises(AttributeError):
        request.options = RunOptions()  # type: ignore[misc]
    # A run made with --preload reruns with it (its spec does not say it), unless told.
    forked = _bundle(tmp_path / "forked.tar.gz", {"preload": ["json", "os.path"]})
    for more, modules in (((), ("json", "os.path")), (("--preload", "none"), ())):
        argv = ["run", str(forked), "--out", str(tmp_path / "o"), *more]
        assert read_request(build_parser("run").parse_args(argv)).options.preload == modules


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"repeat": 10**12}, "options.repeat: expected a number from 1 to 10000, got 10000000"),
        ({"repeat": 0}, "options.repeat: expected a number >= 1, got 0"),
        ({"repeat": "3"}, "options.repeat: expected a whole number, got '3'"),
        ({"timeout_s": 0}, "options.timeout_s: expected a duration > 0, got 0"),
        ({"timeout_s": "90s"}, "options.timeout_s: expected a number of seconds, got '90s'"),
        ({"observe": "yes"}, "options.observe: expected true or false, got 'yes'"),
        ({"matrix_filters": "a=1"}, "options.matrix_filters: expected a list of AXIS=VALUE"),
        ({"preload": "torch"}, "options.preload: expected a list of module names, got 'torch'"),
        ({"preload": ["os; rm"]}, "options.preload: expected a list of module names"),
    ],
)
def test_a_bundles_options_are_held_to_the_clis_bounds(
    options: dict[str, object], refused: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _bundle(tmp_path / "ticket.tar.gz", options)
    out = tmp_path / "out"
    line = _refusal(capsys, "run", str(archive), "--yes", "--out", str(out))
    assert line.startswith("reprospec: bundle ticket.tar.gz: bundle.json: ")
    assert refused in line
    assert not (out / "runs").exists()
    assert not (out / "results.db").exists()


def test_bisects_help_says_the_defaults_the_search_uses() -> None:
    """`bisect --help` said `--error` defaults to 0.01 and `--min-rate` to 0.2, where the
    search uses 0.005 and 0.3 (search.py, and cli.md says so)."""
    from reprospec.bisect.search import DEFAULT_ERROR, DEFAULT_MIN_RATE

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {a.dest: a.help or "" for a in sub.choices["bisect"]._actions}
    assert helps["error"].endswith(f"(default {DEFAULT_ERROR:g})")
    assert helps["min_rate"].endswith(f"else {DEFAULT_MIN_RATE:g})")


def test_slurm_time_takes_sbatchs_formats_and_refuses_another_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`slurm --time 2:00:xx` was found by sbatch only, exit 3 ("sbatch refused")
    after the run was planned; it is a usage error, exit 2, as every other option's."""
    parser = build_parser("slurm")
    for given in ("90", "90:30", "2:00:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED"):
        args = parser.parse_args(["slurm", "s.yaml", "--shards", "2", "--time", given])
        assert args.time == given
    for bad in ("2:00:xx", "2h", "1-", "1:2:3:4", ""):
        with pytest.raises(SystemExit) as caught:
            parser.parse_args(["slurm", "s.yaml", "--shards", "2", "--time", bad])
        assert caught.value.code == 2
        assert "argument --time: expected Slurm's time format" in capsys.readouterr().err


def _helps(verb: str) -> dict[str, str]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {a.dest: a.help or "" for a in sub.choices[verb]._actions}


@pytest.mark.parametrize("verb", ["run", "isolate", "minimize", "amplify", "doctor", "bisect"])
def test_runners_help_names_every_runner_the_verb_takes(verb: str) -> None:
    """`--runner`'s help said "local processes (default) or in fresh docker containers"
    where the verb takes venv too (dc44)."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (runner,) = [a for a in sub.choices[verb]._actions if a.dest == "runner"]
    assert [name for name in runner.choices or () if name not in (runner.help or "")] == []


def test_isolates_help_says_the_passing_cell_it_takes_by_default() -> None:
    """`isolate --passing` said "default: the first expected to pass", where isolate takes
    the one that differs from the failing cell most (differences.farthest; cli.md says so)."""
    assert _helps("isolate")["passing"].endswith(
        "the one that differs from the failing cell in the most axes)"
    )


def test_minimizes_help_takes_workload_specs_as_the_verb_does() -> None:
    """`minimize --help` said its SPEC was "a command spec", where a workload spec's
    numbers are minimized too (minimize/workload.py)."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parser = sub.choices["minimize"]
    assert "workload spec" in (parser.description or "")
    assert _helps("minimize")["spec"].startswith("a command or workload spec")


def test_every_option_with_a_default_value_says_it_in_its_help() -> None:
    """`--out` of bisect, envs and slurm, and slurm's `--runner`, gave no default in their
    help (dc44). `--format`'s help describes its default choice instead of naming it."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    silent = [
        f"{verb} {'/'.join(action.option_strings) or action.metavar}"
        for verb, parser in sub.choices.items()
        for action in parser._actions
        if isinstance(action.default, (str, int, Path))
        and not isinstance(action.default, bool)
        and action.default != argparse.SUPPRESS
        and action.dest != "format"
        and str(action.default) not in (action.help or "")
    ]
    assert silent == []


def test_a_relative_python_or_wheel_folder_is_recorded_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run records them, and `--resume` pasted in another folder read `wh` and
    `../env/bin/python` against that one: every cell an infra-error. A name PATH
    finds stays a name; a venv's python keeps its link (resolved, it leaves the venv)."""
    (tmp_path / "wh").mkdir()
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").symlink_to("/usr/bin/python3")
    monkeypatch.chdir(tmp_path / "wh")
    parser = build_parser()
    args = parser.parse_args(
        ["run", "s.yaml", "--find-links", "../wh", "--python", "../env/bin/python"]
    )
    options = opt.run_options(args)
    assert options.find_links == tmp_path / "wh"
    assert options.python == str(tmp_path / "env" / "bin" / "python")
    named = opt.run_options(parser.parse_args(["run", "s.yaml", "--python", "python3"]))
    assert named.python == "python3"


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--shard", "--shard expects K/N like 2/8, got ''"),
        ("--resume", "argument --resume: expected a run id, `latest` or a run folder, got ''"),
        ("--find-links", "argument --find-links: expected a path, got ''"),
    ],
)
def test_an_empty_shard_resume_or_find_links_is_refused(
    option: str,
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A variable left unset: `--shard ''` ran every attempt unsharded, `--find-links ''`
    # took the current folder for a wheelhouse, `--resume ''` looked for a run named after
    # the current folder (`--resume run-try: no results store at /results.db`).
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    assert _refusal(capsys, "run", str(spec), option, "").endswith(said)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


@pytest.mark.parametrize("verb", ["run", "plan", "doctor", "isolate"])
def test_an_empty_spec_is_refused_as_the_argument_it_is(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `run "$SPEC"`, SPEC unset, said `.: is a folder, not a spec file`.
    assert _refusal(capsys, verb, "").endswith("argument SPEC: expected a spec file, got ''")


def test_an_output_path_linked_to_a_folder_whose_path_is_not_utf8_is_refused(
    tmp_path: Path,
) -> None:
    # The CLI checked -o/--out as absolute() (links kept), where the run records --out's
    # real path and capture's spec is loaded by it: `-o linked/s.yaml`, linked to
    # d$'\xff'ir, passed here. The real path is checked.
    folder = tmp_path / "d\udcffir"
    folder.mkdir()
    (tmp_path / "linked").symlink_to(folder)
    with pytest.raises(UsageError, match=r"^-o .*d\\xffir/s.yaml: the path is not UTF-8 "):
        opt.check_utf8("-o", tmp_path / "linked" / "s.yaml")
    opt.check_utf8("--python", Path("python3"), as_given=True)
    with pytest.raises(UsageError, match=r"^--python py\\xff: the path is not UTF-8"):
        opt.check_utf8("--python", Path("py\udcff"), as_given=True)
