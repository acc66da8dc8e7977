"""The files a command cell's standalone repro lists as needed, from the words of its command."""

from __future__ import annotations

from pathlib import Path

import reprospec
from reprospec.core.runoptions import RunOptions
from reprospec.plan.run import plan_run
from reprospec.plan.shellwords import Located, located_words
from reprospec.plan.workfiles import CarriedFiles, carried_files, named_files, program_files


def _files(tmp_path: Path, command: str) -> tuple[str, ...]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reprospec: 1\nname: w\nenvironment: {{workdir: app}}\ncommand: {command}\n")
    plan = plan_run(reprospec.load_spec(spec), RunOptions()).attempts[0]
    assert carried_files(plan).inside == named_files(plan)
    return named_files(plan)


def test_the_files_a_shell_command_writes_are_not_files_it_needs(tmp_path: Path) -> None:
    # A run leaves them in the workdir (tee created out.txt), so they exist when the
    # report is written: they were listed as files the repro needs.
    app = tmp_path / "app"
    app.mkdir()
    for name in ("train.py", "conf.yaml", "out.txt", "log.txt", "err.txt"):
        (app / name).write_text("")
    assert _files(tmp_path, "'python train.py conf.yaml | tee -a out.txt'") == (
        "conf.yaml",
        "train.py",
    )
    assert _files(tmp_path, "'python train.py > log.txt 2> err.txt; cat conf.yaml'") == (
        "conf.yaml",
        "train.py",
    )
    # Read, not written: a file after tee's pipeline stage, and a word `tee` that is an argument.
    assert _files(tmp_path, "'python train.py | tee out.txt && python train.py log.txt'") == (
        "log.txt",
        "train.py",
    )
    assert _files(tmp_path, "'python train.py --name tee log.txt'") == ("log.txt", "train.py")


def test_a_list_command_that_runs_a_shell_script_names_the_files_of_its_script(
    tmp_path: Path,
) -> None:
    # `[bash, -o, pipefail, -c, SCRIPT]` (what a crash before `| tee` is told to use) names
    # train.py inside one word: its repro listed no file at all.
    app = tmp_path / "app"
    app.mkdir()
    for name in ("train.py", "out.txt", "run.sh"):
        (app / name).write_text("")
    piped = '[bash, -o, pipefail, -c, "python train.py | tee out.txt"]'
    assert _files(tmp_path, piped) == ("train.py",)
    assert _files(tmp_path, '[/bin/sh, -ec, "python train.py"]') == ("train.py",)
    # `-c` after the script is the script's argument: the words are the command's own.
    assert _files(tmp_path, "[bash, run.sh, -c, train.py]") == ("run.sh", "train.py")


def test_a_shell_run_by_a_string_command_names_the_files_of_its_own_script(
    tmp_path: Path,
) -> None:
    # `sh -c 'cat data.txt | python parse.py'` as a string command runs under /bin/sh -c:
    # its words were sh, -c and the inner script whole, so capture's verify copy (and a
    # bundle) lacked data.txt, the pipeline read nothing, and the crash did not come.
    app = tmp_path / "app"
    app.mkdir()
    for name in ("parse.py", "data.txt", "sorted.txt"):
        (app / name).write_text("")
    inner = "cat data.txt | python parse.py --strict | sort > sorted.txt"
    assert _files(tmp_path, f"\"sh -c '{inner}'\"") == ("data.txt", "parse.py")
    assert _files(tmp_path, f"\"bash -o pipefail -c '{inner}'\"") == ("data.txt", "parse.py")
    assert _files(tmp_path, f"[bash, -c, \"sh -c '{inner}'\"]") == ("data.txt", "parse.py")


def test_the_files_a_shell_script_names_are_files_the_command_needs(tmp_path: Path) -> None:
    # `sh run.sh` runs `cat data.txt | python app.py`: run.sh alone was carried, and the
    # bundle failed elsewhere on data.txt, which no Python process opened for capture to see.
    app = tmp_path / "app"
    app.mkdir()
    for name in ("app.py", "data.txt", "out.txt", "notes.txt", "more.csv", "unnamed.txt"):
        (app / name).write_text("")
    (app / "run.sh").write_text(
        "# notes.txt is a comment's word\ncat data.txt|python app.py > out.txt\n./step2\n"
    )
    # A script without the suffix is one by its `#!` line, and its words count too.
    (app / "step2").write_text("#!/usr/bin/env bash\nwc -l more.csv\n")
    assert _files(tmp_path, "sh run.sh") == ("app.py", "data.txt", "more.csv", "run.sh", "step2")
    # A text file that names files is no script: its words are not followed.
    (app / "list.txt").write_text("unnamed.txt\n")
    assert _files(tmp_path, "cat list.txt") == ("list.txt",)


def test_the_programs_files_are_its_sources_and_inputs_not_the_files_its_words_name(
    tmp_path: Path,
) -> None:
    """One rule for compare and a search's id: what the program is. A log the command
    writes (`--log run.log`) was digested as the program's and told changed at every run,
    and a config its words name may be written as well: neither is the program's. The
    spec's `files` are (declared as read), and so is code, whatever names it."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "train.py").write_text("import util\n")
    (app / "util.py").write_text("")
    (app / "tool").write_text("#!/usr/bin/env python3\n")  # code by its #! line
    for name in ("cfg.yaml", "run.log", "data.csv"):
        (app / name).write_text("x")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: w\nenvironment: {workdir: app}\nfiles: [data.csv]\n"
        "command: python train.py --config cfg.yaml --log=run.log --helper tool\n"
    )
    plan = plan_run(reprospec.load_spec(spec), RunOptions())
    found = program_files(plan.attempts.variants().attempts)
    assert [p.name for p in found.sources] == ["tool", "train.py", "util.py"]
    assert [p.name for p in found.inputs] == ["data.csv"]
    assert [p.name for p in found.named] == ["cfg.yaml", "run.log"]
    # What a bundle carries is all of them, as before.
    assert carried_files(plan.attempts[0]).inside == (
        "cfg.yaml", "data.csv", "run.log", "tool", "train.py", "util.py",
    )  # fmt: skip


def test_a_wrapped_programs_file_is_its_source(tmp_path: Path) -> None:
    # `timeout 60 ./tool` read `timeout` as the program, and the workdir's tool,
    # a binary no suffix or `#!` line says is code, was no source of the program's.
    app = tmp_path / "app"
    app.mkdir()
    (app / "tool").write_bytes(b"\x7fELF")
    spec = tmp_path / "spec.yaml"
    for command in ("./tool --fast", "A=1 timeout -s KILL 60 env -i nice -n 5 ./tool --fast"):
        spec.write_text(
            f"reprospec: 1\nname: w\nenvironment: {{workdir: app}}\ncommand: {command}\n"
        )
        plan = plan_run(reprospec.load_spec(spec), RunOptions())
        found = program_files(plan.attempts.variants().attempts)
        assert [p.name for p in found.sources] == ["tool"], command
        assert found.named == (), command


def test_a_cd_moves_the_words_after_it_into_its_folder() -> None:
    # What a shell line runs where, read from its words (shlex keeps `;` on a word).
    assert located_words(["cd", "sub", "&&", "python3", "x.py"]) == [
        Located("sub", ("python3", "x.py"))
    ]
    assert located_words(["cd", "sub;", "python3", "x.py", "data.csv"]) == [
        Located("sub", ("python3", "x.py", "data.csv"))
    ]
    assert located_words(["cd", "a b", "&&", "cd", "-P", "c", "&&", "x"]) == [
        Located("a b/c", ("x",))
    ]
    assert located_words(["cd", "/abs/w", "&&", "x"]) == [Located("/abs/w", ("x",))]
    # A later command's `cd` moves what comes after it only.
    assert located_words(["python", "a.py", "&&", "cd", "sub", "&&", "python", "b.py"]) == [
        Located("", ("python", "a.py", "&&")),
        Located("sub", ("python", "b.py")),
    ]
    # `cd sub || exit 1`: what follows runs in sub or not at all.
    assert located_words(["cd", "sub", "||", "exit", "1;", "x"]) == [
        Located("sub", ("||", "exit", "1;", "x"))
    ]


def test_a_cd_whose_folder_cannot_be_told_ends_the_following() -> None:
    # The words after it are read in the line's own folder, as before any `cd` was followed.
    for cd in (["cd"], ["cd", "-"], ["cd", "$DIR"], ["cd", "sub*"]):
        assert located_words(["cd", "sub", "&&", *cd, "&&", "x"]) == [Located("", ("x",))]
    assert located_words(["cd", "a", "b", "&&", "x"]) == [Located("", ("b", "&&", "x"))]
    # A `cd` that may not run, or runs in a subshell of its own, is not followed either.
    assert located_words(["cd", "sub", "&&", "a", "||", "cd", "c", "&&", "x"]) == [
        Located("sub", ("a", "||")),
        Located("", ("x",)),
    ]
    assert located_words(["a", "|", "cd", "c", ";", "x"]) == [
        Located("", ("a", "|", "cd", "c", ";", "x"))
    ]
    # A line with a background job, a pipeline or a subshell is read whole in the line's
    # own folder, as before any `cd` was followed: in the first three client.py runs
    # there, not in server/; the last is read so too, for one rule.
    for line in (
        "cd server && python3 serve.py & python3 client.py",
        "cd server & python3 client.py",
        "(echo hi; cd server; python3 serve.py); python3 client.py",
        "cd server && python3 serve.py | tee log; python3 client.py",
    ):
        words = line.split()
        assert located_words(words) == [Located("", tuple(words))], line
    # A quoted argument holding parentheses is an argument, not a subshell: its `cd` is
    # followed (the words come split, quotes gone, as command_words gives them).
    words = ["cd", "build", "&&", "python", "-c", "import ctypes; ctypes.string_at(8)"]
    assert located_words(words) == [Located("build", tuple(words[3:]))]
    assert located_words(["a;", "(cd", "b", "&&", "x)"]) == [
        Located("", ("a;", "(cd", "b", "&&", "x)"))
    ]
    # A word `cd` that is an argument, or after an assignment, is a word.
    assert located_words(["A=1", "cd", "sub", "&&", "echo", "cd", "x"]) == [
        Located("", ("A=1", "cd", "sub", "&&", "echo", "cd", "x"))
    ]


def test_the_files_named_after_a_cd_are_found_in_its_folder(tmp_path: Path) -> None:
    # `cd sub && python3 x.py` ran sub/x.py: the finder looked for x.py in the workdir, and
    # a bundle went without it (its rerun: "can't open file").
    app = tmp_path / "app"
    (app / "sub" / "pkg").mkdir(parents=True)
    for name in ("x.py", "data.csv", "pkg/__init__.py", "pkg/tool.py"):
        (app / "sub" / name).write_text("")
    (app / "sub" / "x.py").write_text("import helper\n")
    (app / "sub" / "helper.py").write_text("")
    (app / "x.py").write_text("")  # the workdir's own x.py: not the one that runs
    assert _files(tmp_path, "'cd sub && python3 x.py --data=data.csv'") == (
        "sub/data.csv",
        "sub/helper.py",
        "sub/x.py",
    )
    assert _files(tmp_path, "'cd sub; python3 x.py data.csv'") == (
        "sub/data.csv",
        "sub/helper.py",
        "sub/x.py",
    )
    assert _files(tmp_path, f"'cd \"{app}/sub\" && python3 -m pkg.tool'") == (
        "sub/pkg/__init__.py",
        "sub/pkg/tool.py",
    )
    assert _files(tmp_path, "'cd sub && cd .. && python3 x.py'") == ("x.py",)
    # A folder it cannot tell: the words are read in the workdir, as before.
    assert _files(tmp_path, "'cd $HOME && python3 x.py'") == ("x.py",)


def test_a_cd_out_of_the_workdir_carries_what_a_relative_path_out_of_it_does(
    tmp_path: Path,
) -> None:
    # `cd ../tools && python3 t.py` is `python3 ../tools/t.py`: carried at its relative
    # place; under an absolute folder outside the workdir, listed as this machine's.
    (tmp_path / "app").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "t.py").write_text("")
    (tmp_path / "tools" / "other.py").write_text("")  # not named: the folder is not carried
    spec = tmp_path / "spec.yaml"
    for command, expected in (
        ("cd ../tools && python3 t.py", CarriedFiles((), (tmp_path / "tools" / "t.py",))),
        (
            f"cd {tmp_path}/tools && python3 t.py",
            CarriedFiles((), (), (tmp_path / "tools" / "t.py",)),
        ),
    ):
        spec.write_text(
            f"reprospec: 1\nname: w\nenvironment: {{workdir: app}}\ncommand: '{command}'\n"
        )
        plan = plan_run(reprospec.load_spec(spec), RunOptions()).attempts[0]
        assert carried_files(plan) == expected
        assert named_files(plan) == ()


def test_a_tilde_user_with_no_home_names_the_workdirs_file(tmp_path: Path) -> None:
    # The shell leaves a `~user` with no home as typed, a folder of the workdir by that
    # name; `Path.expanduser` raised there, and the word named no file (review).
    from reprospec.plan.workfiles import file_in

    script = tmp_path / "~nosuchuser-zz" / "x.py"
    script.parent.mkdir()
    script.write_text("print(1)\n")
    assert file_in("~nosuchuser-zz/x.py", tmp_path) == script.resolve()


def test_a_tilde_user_with_no_home_above_the_workdir_is_no_traceback(tmp_path: Path) -> None:
    # `~nosuchuser/../../x.py`, a file outside the workdir: its `~user` was expanded with
    # Path.expanduser, which raised RuntimeError past every caller (review).
    work = tmp_path / "proj"
    work.mkdir()
    (tmp_path / "x.py").write_text("print(1)\n")
    spec = work / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\ncommand: '~nosuchuser-zz/../../x.py'\nexpect: {outcome: pass}\n"
    )
    plan = plan_run(reprospec.load_spec(spec), RunOptions()).attempts[0]
    carried_files(plan)
    program_files([plan])
