"""capture's own wording: where the spec it wrote is said to be."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.capture.command import (
    Observed,
    _names_python,
    _shown,
    _title,
    capture,
    chosen_interpreter,
    command_request,
    expectation,
    listed_files,
    observe,
    refusal,
    tidied_lines,
    tidied_paths,
    without_pids,
)
from reprospec.capture.hangwait import VerifyWait
from reprospec.capture.writer import Draft, render_spec
from reprospec.core.results import (
    AttemptResult,
    ChainLink,
    GroupMember,
    Outcome,
    RunResult,
    group_named,
)
from reprospec.errors import EXIT_USAGE, InfraError, UsageError
from reprospec.outcome.pytestreport import XDIST_CRASHED


def test_the_spec_written_is_shown_as_typed_here_unless_far_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "a" / "b" / "c" / "d"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert _shown(here / "spec.yaml") == "spec.yaml"
    assert _shown(tmp_path / "a" / "b" / "x.yaml") == "../../x.yaml"
    # `-o /srv/x.yaml` read `../../../../srv/x.yaml`: past two folders up it is absolute.
    assert _shown(tmp_path / "x.yaml") == str(tmp_path / "x.yaml")


def test_an_interpreter_beside_the_engines_own_is_another_one(tmp_path: Path) -> None:
    # Same folder was taken for the engine's own: /usr/bin/python3.9 beside an engine of
    # /usr/bin/python3.11 was rewritten `python` and ran the engine's (review).
    ours = chosen_interpreter([sys.executable, "t.py"], None, tmp_path)
    assert ours == (("python", "t.py"), None)
    other = Path(sys.executable).parent / "python3.99"
    command, python = chosen_interpreter([str(other), "t.py"], None, tmp_path)
    assert (command, python) == (("python", "t.py"), str(other))


def test_a_console_script_beside_its_interpreter_by_a_path_not_normal_is_by_its_name(
    tmp_path: Path,
) -> None:
    # `Path(found).absolute()` kept `..` and links: `../venv/bin/tool` and a linked `.venv`
    # stayed this machine's paths in the spec, where the absolute path was `tool` (review).
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "tool").write_text(f"#!{venv}/bin/python\nimport sys\n")
    dist = venv / "lib" / "python3.11" / "site-packages" / "pkg-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[console_scripts]\ntool = pkg:main\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(venv)
    for program in (str(venv / "bin" / "tool"), "../venv/bin/tool", ".venv/bin/tool"):
        command, _ = chosen_interpreter([program, "x"], None, work)
        assert command == ("tool", "x"), program
    # A script there that no installed distribution declares (written by hand) is in no
    # environment built of the spec's packages: it keeps its path (review).
    (venv / "bin" / "mine").write_text(f"#!{venv}/bin/python\nimport sys\n")
    command, _ = chosen_interpreter(["../venv/bin/mine", "x"], None, work)
    assert command == ("../venv/bin/mine", "x")


def test_a_console_script_of_an_environment_at_a_long_path_pins_its_interpreter(
    tmp_path: Path,
) -> None:
    # uv and distlib write `#!/bin/sh` and a trampoline that execs the interpreter where
    # its path is too long for a `#!` line: capture read only the `#!` line, so such a
    # `tool` kept this machine's path and pinned no interpreter (review).
    venv = tmp_path / ("v" * 120) / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    trampoline = f"#!/bin/sh\n'''exec' '{python}' \"$0\" \"$@\"\n' '''\nimport sys\n"
    (venv / "bin" / "tool").write_text(trampoline)
    dist = venv / "lib" / "python3.11" / "site-packages" / "pkg-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[console_scripts]\ntool = pkg:main\n")
    command, chosen = chosen_interpreter([str(venv / "bin" / "tool"), "x"], None, tmp_path)
    assert (command, chosen) == (("tool", "x"), str(python))


def test_a_console_script_of_debians_system_python_is_by_its_name(tmp_path: Path) -> None:
    # Only `site-packages` was read: apt's `/usr/bin/pip3` and `/usr/bin/pytest`, declared in
    # `/usr/lib/python3/dist-packages`, kept their path in the spec (review).
    usr = tmp_path / "usr"
    (usr / "bin").mkdir(parents=True)
    for site, name in (("lib/python3", "pip3"), ("local/lib/python3.11", "tool")):
        (usr / "bin" / name).write_text(f"#!{usr}/bin/python3\nimport sys\n")
        dist = usr / site / "dist-packages" / f"{name}-1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[console_scripts]\n{name} = pkg:main\n")
        command, _ = chosen_interpreter([str(usr / "bin" / name), "x"], None, tmp_path)
        assert command == (name, "x"), site


def test_a_worker_crashs_title_names_its_frame_and_no_step_of_the_main_loop() -> None:
    # The main loop's step (10), noticed some steps after the worker died, was in the title
    # (`SIGSEGV in a DataLoader worker at train step 10`) while `expect` said no step could
    # be expected; the frame the worker died in was in no title.
    worker = Outcome(
        "crash", signal="SIGSEGV", where="worker", phase="train", step=10, signature="s"
    )
    observed = Observed(worker, 1, 1, steps=(10,), frame="__getitem__ (data.py:12)")
    expect, comments = expectation(observed)
    assert "step" not in expect
    assert comments["signal"] == "in a DataLoader worker, in __getitem__ (data.py:12)"
    assert _title(("python", "train.py"), observed, expect) == (
        "train.py: SIGSEGV in a DataLoader worker in __getitem__ (data.py:12), main loop at train"
    )
    # Where the steps were seen (three attempts at one step), the title says them as
    # `expect` does; a main process's crash keeps its step.
    again = replace(observed, matched=3, attempts=3, steps=(10, 10, 10), frame=None)
    expect, _ = expectation(again)
    assert _title(("python", "train.py"), again, expect) == (
        "train.py: SIGSEGV in a DataLoader worker, main loop at train step 10"
    )
    main = Observed(replace(worker, where="main", step=7), 1, 1, steps=(7,))
    expect, _ = expectation(main)
    assert _title(("python", "train.py"), main, expect) == "train.py: SIGSEGV at train step 7"


def test_a_hang_at_import_is_titled_with_the_import() -> None:
    # `main.py: hang` was the title (and every report's headline) of a hang its stack
    # showed in `import slowlib`, which only the description and a comment said.
    observed = Observed(Outcome("hang", signature="hang"), 1, 1)
    expect, comments = expectation(observed, "slowlib.py:9")
    assert comments["outcome"] == "while importing slowlib.py:9 (its stack shows it)"
    assert _title(("python", "main.py"), observed, expect, "slowlib.py:9") == (
        "main.py: hang while importing slowlib.py:9"
    )
    assert _title(("python", "main.py"), observed, expect) == "main.py: hang"
    # An import inside the loop, at step 3: the main process's own hang, not another
    # process's, so its phase is no "main loop" beside it.
    looped = Observed(Outcome("hang", phase="train", step=3, signature="hang@train"), 1, 1)
    expect, _ = expectation(looped, "slowlib.py:9")
    assert _title(("python", "main.py"), looped, expect, "slowlib.py:9") == (
        "main.py: hang while importing slowlib.py:9 at train step 3"
    )


def test_a_hangs_place_is_said_on_outcome_with_the_other_failures_after_it() -> None:
    # A Python hang's frame and a C program's native place go on `outcome` as a crash's
    # frame goes on `signal`; the failures also seen follow it, and only a hang's cause (its
    # import, a child's death) is said alone.
    segv = Observed(Outcome("crash", signal="SIGSEGV", signature="crash:SIGSEGV:main"), 1, 3)
    abrt = Observed(Outcome("crash", signal="SIGABRT", signature="crash:SIGABRT:main"), 1, 3)
    hang = Observed(Outcome("hang", signature="hang"), 1, 3, frame="<module> (hang.py:4)")
    expect, comments = expectation(hang)
    assert comments["outcome"] == "hung in <module> (hang.py:4)"
    assert _title(("python", "hang.py"), hang, expect) == "hang.py: hang in <module> (hang.py:4)"
    native = replace(hang, frame="clock_nanosleep@libc<-main@nap", others=(segv, abrt))
    expect, comments = expectation(native)
    assert comments["outcome"] == (
        "hung in clock_nanosleep@libc<-main@nap; also seen: crash:SIGSEGV:main in 1/3 and "
        "1 other; the description says how to expect it"
    )
    assert _title(("./nap",), native, expect) == "./nap: hang in clock_nanosleep@libc<-main@nap"
    # No place: the others alone; an import's hang: its import alone.
    _, comments = expectation(replace(native, frame=None, others=(segv,)))
    assert comments["outcome"] == (
        "also seen: crash:SIGSEGV:main in 1/3; the description says how to expect it"
    )
    _, comments = expectation(native, "slowlib.py:9")
    assert comments["outcome"] == "while importing slowlib.py:9 (its stack shows it)"
    # A launcher's child's place names the child, as a crash in a process it ran is said:
    # `make: hang in clock_nanosleep@libc<-main@nap` read as if make slept.
    ran = replace(native, process="./nap", others=(segv,))
    expect, comments = expectation(ran)
    assert comments["outcome"] == (
        "hung in a process it ran (nap), in clock_nanosleep@libc<-main@nap; also seen: "
        "crash:SIGSEGV:main in 1/3; the description says how to expect it"
    )
    assert _title(("make",), ran, expect) == (
        "make: hang in a process it ran (nap), in clock_nanosleep@libc<-main@nap"
    )


def test_why_a_worker_crash_expects_no_step_is_said_where_no_phase_is_expected() -> None:
    # The `steps` preset's `step 2` names no phase: the comment saying why the main loop's
    # step is not expected went on `phase`, absent, and was dropped, so the spec of
    # `crash SIGSEGV (worker) @ step 2` said nothing of the step it left out.
    worker = Outcome("crash", signal="SIGSEGV", where="worker", step=2, signature="s")
    expect, comments = expectation(Observed(worker, 1, 1, steps=(2,)))
    assert expect == {"outcome": "crash", "signal": "SIGSEGV", "where": "worker"}
    assert comments["where"] == (
        "the main loop was at step 2; workers run ahead, so no step is expected"
    )
    varied = Observed(worker, 3, 3, steps=(4, 4, 2))
    expect, comments = expectation(varied)
    assert "step" not in expect
    assert "phase" not in expect
    assert comments["where"].startswith("the main loop was at steps 2..4; workers run ahead")


def test_a_worker_crash_seen_once_in_several_attempts_expects_no_step() -> None:
    # `capture --repeat 5` with one worker crash in five wrote `step: 8`: the rule counted
    # the attempts that ran, not those that saw the crash, and capture.md says the step of
    # a worker crash seen once is left out.
    worker = Outcome(
        "crash", signal="SIGSEGV", where="worker", phase="train", step=8, signature="s"
    )
    once = Observed(worker, 1, 5, steps=(8,))
    expect, comments = expectation(once)
    assert expect == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "train",
        "rate": ">0",
    }
    assert comments["phase"].startswith("the main loop was at step 8; workers run ahead")
    # Seen in two attempts at one step, the step held: it is expected.
    twice = Observed(worker, 2, 5, steps=(8, 8))
    assert expectation(twice)[0]["step"] == 8


def test_a_main_process_crash_is_expected_where_it_happened_and_a_hang_names_no_process() -> None:
    # A main process's SIGSEGV was captured without `where`, so its spec was reproduced by
    # a DataLoader worker's SIGSEGV, another bug. A hang with no stuck worker is "main" by
    # the classifier's default only: no process is claimed.
    main = Outcome("crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
    expect, comments = expectation(Observed(main, 1, 1))
    assert expect == {"outcome": "crash", "signal": "SIGSEGV", "where": "main"}
    assert comments["signal"] == "in the main process"
    hang = Outcome("hang", where="main", phase="train", step=3, signature="hang:train")
    assert expectation(Observed(hang, 1, 1, steps=(3,)))[0] == {
        "outcome": "hang",
        "phase": "train",
        "step": 3,
    }


def test_data_the_command_names_and_the_program_read_is_listed_its_code_is_not(
    tmp_path: Path,
) -> None:
    # config.json, named by `--config config.json` and read by the program, was
    # left out of `files` as named; a run digests only `files` of what the command names
    # (compare said "same program files" across an edit of it). The script itself, code
    # the command names, is compared as code without being listed.
    for name in ("app.py", "config.json", "util.py", "rows.csv"):
        (tmp_path / name).write_text("")
    read = ("app.py", "config.json", "rows.csv", "util.py")
    argv = ("python", "app.py", "--config", "config.json")
    assert listed_files(read, argv, tmp_path) == ("config.json", "rows.csv", "util.py")
    # A name through a folder of its own (`./config.json`) is the same file.
    argv = ("python", "./app.py", "--config", "./config.json")
    assert listed_files(read, argv, tmp_path) == ("config.json", "rows.csv", "util.py")


def test_a_pass_over_a_crash_says_what_to_capture_instead(tmp_path: Path) -> None:
    # A pipeline's status is its last command's; under `bash -o pipefail` it is
    # the crash's. A script file with a pipeline likewise; a program that went on over its
    # child's death has no such switch.
    script = "cat data.txt | python parse.py --strict | sort"
    said = refusal(("sh", "-c", script), tmp_path)
    assert said.startswith("nothing written: the command passed, so a spec of it could only")
    assert said.endswith(f"capture `bash -o pipefail -c '{script}'`, whose status is the crash's")
    said = refusal(("MODE=1", "bash", "-x", "-c", script), tmp_path)
    assert f"capture `MODE=1 bash -o pipefail -c '{script}'`" in said
    (tmp_path / "run.sh").write_text("python train.py | tee log\n")
    assert "capture `bash -o pipefail run.sh`" in refusal(("sh", "run.sh"), tmp_path)
    for argv in (("python", "wrapper.py"), ("sh", "-c", "python a.py; echo done")):
        said = refusal(argv, tmp_path)
        assert "pipefail" not in said
        assert said.endswith("run the process that died as the command) and capture that")


def test_a_pytest_xdist_workers_crash_is_said_to_be_a_workers() -> None:
    # Before: `tests/test_x.py::test_crash: SIGSEGV in a child process in ...`, where the
    # classifier knew from xdist's own line that the child was its worker (lo36).
    node = "tests/test_x.py::test_crash"
    worker = Outcome(
        "crash",
        signal="SIGSEGV",
        where="child",
        phase=node,
        signature="s",
        detail=f"child pid 7 died of SIGSEGV; the main process exited 1; {XDIST_CRASHED} {node}",
    )
    observed = Observed(worker, 1, 1, frame="test_crash (tests/test_x.py:5)")
    expect, comments = expectation(observed)
    assert _title(("pytest", "-n", "2"), observed, expect) == (
        f"{node}: SIGSEGV in a pytest-xdist worker in test_crash (tests/test_x.py:5)"
    )
    assert comments["signal"] == "in a pytest-xdist worker, in test_crash (tests/test_x.py:5)"
    # Another child, or one xdist did not name, stays a child process.
    child = replace(observed, outcome=replace(worker, detail="child pid 7 died of SIGSEGV"))
    expect, comments = expectation(child)
    assert "in a child process in test_crash" in _title(("pytest",), child, expect)
    assert comments["signal"].startswith("in a child process")


def test_a_path_through_dot_dot_is_written_the_short_way_unless_a_link_makes_it_another(
    tmp_path: Path,
) -> None:
    (tmp_path / "pt").mkdir()
    (tmp_path / "x.py").write_text("")
    (tmp_path / "run.sh").write_text("")
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "in").mkdir()
    (tmp_path / "far" / "x.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "far" / "in")
    argv = ["./pt/../run.sh", "python", "pt/../x.py", "./pt/../x.py", "--out=pt/../x.py"]
    # The program keeps its `./` (a bare `run.sh` is looked up on PATH); an option's
    # value, a word with no `..` and a path naming no file stay as typed.
    assert tidied_paths(argv, tmp_path) == (
        "./run.sh", "python", "x.py", "./x.py", "--out=pt/../x.py"
    )  # fmt: skip
    assert tidied_paths(["python", "./x.py", "pt/../gone.py"], tmp_path) == (
        "python", "./x.py", "pt/../gone.py"
    )  # fmt: skip
    # link/../x.py is far/x.py; x.py beside link is another file: left as typed.
    assert tidied_paths(["python", "link/../x.py"], tmp_path) == ("python", "link/../x.py")


def test_a_descriptions_process_ids_are_left_out_and_the_sentence_still_reads() -> None:
    # A hang in a child: the spec's description names no pid of the capture's own run.
    assert without_pids(
        "no exit within the timeout (5 s); killed after 5.1s; child pid 30425 was in "
        "childhang.py:7 in child, where the main process only waits for it"
    ) == (
        "no exit within the timeout (5 s); killed after 5.1s; a child process was in "
        "childhang.py:7 in child, where the main process only waits for it"
    )
    assert without_pids("worker 1 (pid 42) died") == "worker 1 died"
    assert without_pids("the DataLoader worker pid 42 was in x.py") == (
        "the DataLoader worker was in x.py"
    )
    # A pid that is its clause's subject: the pipeline's program read `; (python x.py),
    # the first process of ...`, and a hung process `pid 42 was in` `was in`.
    assert without_pids("as a shell reports it; pid 42 (python x.py), the first process") == (
        "as a shell reports it; a process (python x.py), the first process"
    )
    assert without_pids("pid 42 was in x.py:3") == "a process was in x.py:3"
    # What follows the pid stays joined: classify's `child pid 4200's threads were in` read
    # `a child process 's threads`, and `(pid 4242: python pool.py)` `(a process : ...)`.
    assert without_pids("child pid 4200's threads were in x.py") == (
        "a child process's threads were in x.py"
    )
    assert without_pids("the DataLoader worker pid 42's threads") == (
        "the DataLoader worker's threads"
    )
    assert without_pids("(pid 4242: python pool.py)") == "(a process: python pool.py)"
    # A word before the pid is no noun that names the process unless it is one.
    assert without_pids("killed by pid 42, then") == "killed by a process, then"


def test_a_run_that_could_not_start_leaves_no_draft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `capture --python /nope -- python t.py`: the draft ("rewritten when the run ends")
    # stayed, and the next capture, with the interpreter corrected, needed --force.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("raise SystemExit(1)\n")
    request = command_request(["python", "t.py"], output=tmp_path / "spec.yaml", verify=False)

    # As an observing run is called: its four facts, no `shown` (verify's alone has one).
    def run_spec(
        path: Path,
        repeat: int,
        observe: bool,
        wait: VerifyWait | None,
        /,
        *,
        shown: Path | None = None,
    ) -> RunResult:
        assert path.is_file()  # the draft the run would read
        assert (repeat, observe, wait, shown) == (request.repeat, True, None, None)
        raise InfraError("interpreter not found: /nope")

    with pytest.raises(InfraError, match="interpreter not found"):
        capture(request, run_spec)
    assert not (tmp_path / "spec.yaml").exists()


def test_a_command_whose_program_is_a_folder_is_refused_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `capture -- /tmp` ran, and captured dash's `Permission denied` (exit 126) as a spec
    # that expected nothing: the words said nothing of a folder.
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"first word, /tmp, is a folder, not a program") as e:
        command_request(["/tmp"])
    assert e.value.exit_code == EXIT_USAGE
    with pytest.raises(UsageError, match=r"program \(word 3\), \./sub, is a folder"):
        command_request(["timeout", "5", "./sub", "x"])
    # Without a slash the shell looks the word up on PATH, not in the folder it runs in.
    assert command_request(["sub", "x"]).argv == ("sub", "x")


def test_the_words_written_without_dot_dot_are_each_on_a_line_render_spec_leaves_whole() -> None:
    # In the sentence, `'./pt/../data loader config.yaml'` wrapped at its space over two
    # comment lines; a word typed twice was listed twice.
    long = "./pt/../data loader config.yaml"
    pairs = (("./pt/../x.py", "./x.py"), (long, "./data loader config.yaml"))
    lines = tidied_lines((*pairs, pairs[0]))
    assert lines[1:] == [
        "  ./pt/../x.py -> ./x.py",
        "  './pt/../data loader config.yaml' -> './data loader config.yaml'",
    ]
    text = render_spec(Draft(name="n", command="python x.py", header=("x" * 70, *lines)))
    assert "\n#   './pt/../data loader config.yaml' -> './data loader config.yaml'\n" in text
    assert tidied_lines(()) == []


def test_a_task_groups_failure_is_expected_by_its_member() -> None:
    # It wrote `exception: ExceptionGroup` and the group's message, `unhandled errors in a
    # TaskGroup \(\d+ sub\-exception\)`: met by any TaskGroup's failure, not this bug's.
    group = Outcome(
        "error",
        exit_code=1,
        exception="ExceptionGroup",
        message="unhandled errors in a TaskGroup (1 sub-exception)",
        signature="error:ExceptionGroup[ValueError]",
        members=(GroupMember("ValueError", "boom 42"),),
    )
    assert Observed(group, 1, 1).common_members is None  # no attempts counted
    counted = Observed(group, 1, 1, common_members=frozenset({"ValueError"}))
    expect, comments = expectation(counted)
    assert (expect["exception"], expect["message"]) == ("ValueError", r"boom \d+")
    assert comments["exception"].startswith("a member of the ExceptionGroup that ended it")
    # Where counted attempts held no member in common, none is expected: the group's own
    # type, no message, and the comment says none was in all.
    expect2, comments2 = expectation(replace(Observed(group, 1, 1), common_members=frozenset()))
    assert expect2["exception"] == "ExceptionGroup"
    assert "message" not in expect2
    assert "none in all" in comments2["exception"]
    # Uncounted, the rule is a log's (group_expectation's None): the first member to fail,
    # not the least of its own by name, which an Uncounted sentinel of its own chose (review).
    two = replace(group, members=(GroupMember("ValueError", "boom 42"), GroupMember("KeyError")))
    expect3, comments3 = expectation(Observed(two, 1, 1))
    assert expect3["exception"] == "ValueError"
    assert "the first to fail" in comments3["exception"]


def test_a_task_groups_last_traceback_is_expected_by_its_member() -> None:
    # A process that printed a TaskGroup's traceback and exited its own way (`error exit 2
    # (last traceback: ExceptionGroup[ValueError])`) still wrote `exception: ExceptionGroup`
    # and no message: met by any TaskGroup's failure (review).
    def printed(number: int, *members: str, said: str | None = None) -> AttemptResult:
        last = ChainLink(
            "ExceptionGroup",
            f"unhandled errors in a TaskGroup ({len(members)} sub-exceptions)",
            members=tuple(GroupMember(m, f"{m.lower()} 7") for m in members),
        )
        outcome = Outcome(
            "error", exit_code=2, message=said, signature="error:exit-2", last_traceback=last
        )
        return _attempt(number, outcome)

    one = printed(1, "ValueError").outcome
    assert isinstance(one, Outcome)
    expect, comments = expectation(Observed(one, 3, 3, common_members=frozenset({"ValueError"})))
    assert (expect["exception"], expect["message"], expect["exit_code"]) == (
        "ValueError",
        r"valueerror \d+",
        2,
    )
    assert comments["exception"].startswith("the last traceback printed; the process went on")
    assert "a member of the ExceptionGroup printed last, held by" in comments["exception"]
    # Its members by the rule of a group that ended the process: one every attempt held.
    seen = [printed(1, "KeyError", "ValueError"), printed(2, "ValueError")]
    expect, _ = expectation(observe(seen))
    assert expect["exception"] == "ValueError"
    expect, comments = expectation(observe([*seen, printed(3, "KeyError")]))
    assert (expect["exception"], "message" in expect) == ("ExceptionGroup", False)
    assert "none in all" in comments["exception"]
    # The process's own last line stays the message, a member's or none (review); the
    # group's closing rule, stderr's last line where the group was printed last, is none.
    rule = "+------------------------------------"
    own = "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)"
    for said, message in (
        ("giving up after 3 retries", "giving up after"),
        (rule, "valueerror"),
        (own, "valueerror"),
    ):
        two = printed(1, "KeyError", "ValueError", said=said)
        expect, _ = expectation(observe([two, printed(2, "ValueError", said=said)]))
        assert expect["exception"] == "ValueError"
        assert str(expect["message"]).startswith(message)
    seen = [printed(1, "KeyError", said="giving up"), printed(2, "ValueError", said="giving up")]
    expect, _ = expectation(observe(seen))
    assert (expect["exception"], expect["message"]) == ("ExceptionGroup", "giving up")


def _group_failure(number: int, *members: str) -> AttemptResult:
    outcome = Outcome(
        "error",
        exit_code=1,
        exception="ExceptionGroup",
        message=f"unhandled errors in a TaskGroup ({len(members)} sub-exceptions)",
        signature=f"error:{group_named('ExceptionGroup', [GroupMember(m) for m in members])}",
        members=tuple(GroupMember(m, f"{m.lower()} 7") for m in members),
    )
    return _attempt(number, outcome)


def _attempt(number: int, outcome: Outcome) -> AttemptResult:
    return AttemptResult(
        attempt=number, duration_s=0.1, outcome=outcome, matched=False, mismatches=(), logs=""
    )


def test_a_task_groups_member_is_one_every_attempt_of_it_held() -> None:
    # Which task failed first is timing's: the first member of the most common attempt
    # (`[KeyError,ValueError]`, KeyError first) was written, and missed the `[ValueError]`
    # attempts that verify, minimize and isolate count as this failure.
    seen = [
        _group_failure(1, "KeyError", "ValueError"),
        _group_failure(2, "KeyError", "ValueError"),
        _group_failure(3, "ValueError"),
    ]
    assert observe(seen).common_members == frozenset({"ValueError"})
    expect, comments = expectation(observe(seen))
    assert (expect["exception"], expect["message"]) == ("ValueError", r"valueerror \d+")
    assert "held by every attempt of it" in comments["exception"]
    # `common_members` had three meanings, None for both "no group" and "not counted" (an
    # outcome seen alone, a log's): counted, a failure that is no group held none.
    plain = _attempt(
        5, Outcome("error", exit_code=1, exception="KeyError", signature="error:KeyError")
    )
    assert observe([plain]).common_members == frozenset()
    # No member in all of them: the group's type alone, and no message.
    expect, comments = expectation(observe([*seen, _group_failure(4, "KeyError")]))
    assert expect["exception"] == "ExceptionGroup"
    assert "message" not in expect
    assert "none in all" in comments["exception"]


def test_a_python_console_script_run_by_a_home_path_names_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    script = home / ".venv" / "bin" / "train"
    script.parent.mkdir(parents=True)
    script.write_text("#!/home/u/.venv/bin/python\nimport train\n")
    monkeypatch.setenv("HOME", str(home))
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert _names_python(["~/.venv/bin/train", "--epochs", "1"], workdir)
    script.write_text("#!/bin/false\n")
    assert not _names_python(["~/.venv/bin/train"], workdir)


def test_a_launcher_or_an_env_s_script_names_python(tmp_path: Path) -> None:
    # `#!/usr/bin/env -S python3 -u` read as no Python (its last word, `-u`, was asked),
    # and srun and mpirun (which run anything) as none: a `python -I` run's spec lost its
    # python, where a ticket's reader counts them as Python's (review).
    (tmp_path / "t").write_text("#!/usr/bin/env -S python3 -u\nimport sys\n")
    assert _names_python(["./t"], tmp_path)
    assert _names_python(["srun", "-n", "2", "./a.out"], tmp_path)  # not here: may be
    assert _names_python(["mpirun", "-np", "2", "./a.out"], tmp_path)
    (tmp_path / "a.out").write_bytes(b"\x7fELF")
    assert not _names_python(["./a.out"], tmp_path)
    # srun and mpirun run any program: a native one's crash pinned the engine's Python.
    assert not _names_python(["mpirun", "-np", "2", "./a.out"], tmp_path)
    assert not _names_python(["srun", "./a.out"], tmp_path)
    assert _names_python(["srun", "-n", "2", "python3", "t.py"], tmp_path)
    assert _names_python(["mpirun", "-np", "2", "./t"], tmp_path)
    # The program alone answers, not its own arguments, nor an option's value: `input.py`
    # pinned Python, and `-p test` (on PATH, /usr/bin/test) made `./missing` native (review).
    assert not _names_python(["mpirun", "-np", "2", "./a.out", "input.py"], tmp_path)
    assert not _names_python(["mpirun", "-np", "2", "./a.out", "--log", "run.sh"], tmp_path)
    assert not _names_python(["mpirun", "--mca", "btl", "self", "./a.out"], tmp_path)
    assert _names_python(["srun", "-p", "test", "./missing"], tmp_path)


def test_a_program_under_an_unknown_users_home_is_read_as_typed(tmp_path: Path) -> None:
    # `~nosuchuser/bin/train`: the shell leaves it as typed; Path.expanduser raised
    # RuntimeError, and `capture -- '~bob/bin/train'` died with a traceback.
    argv = ["~nosuchuser-reprospec/bin/train", "--epochs", "1"]
    assert not _names_python(argv, tmp_path)
    assert chosen_interpreter(argv, None, tmp_path) == (tuple(argv), None)
    python = ["~nosuchuser-reprospec/bin/python3", "t.py"]
    assert chosen_interpreter(python, None, tmp_path)[0] == ("python", "t.py")
