"""The command line's habits, as a person meets them: a mistyped verb or option, a long
run's ETA, Ctrl-C and the command that resumes, `--format json` everywhere, `envs` alone,
and shell completion from a real bash."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, Cli, interrupt_when

BIN = Path(sys.executable).parent


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_mistyped_verb_or_option_gets_the_nearest(cli: Cli) -> None:
    verb = cli("rn", "specs/segfault.yaml")
    assert verb.code == 2
    assert "unknown command 'rn'; did you mean 'run'?" in verb.stderr
    assert "Traceback" not in verb.stderr
    option = cli("plan", "specs/segfault.yaml", "--formt", "json")
    assert option.code == 2
    assert "unrecognized arguments: --formt json; did you mean --format?" in option.stderr
    # Nothing near: no guess, the usual list.
    far = cli("zzzzzz")
    assert far.code == 2
    assert "did you mean" not in far.stderr


def test_a_double_dash_ends_the_options_for_a_spec_named_with_a_dash(
    cli: Cli, tmp_path: Path
) -> None:
    # `run -- -x.yaml` was "unrecognized arguments: -x.yaml" (Python 3.11's
    # intermixed parsing dropped what follows `--`), and `run -x.yaml` said nothing of
    # the file of that name.
    write(tmp_path / "-x.yaml", "reprospec: 1\nname: dash\ncommand: 'true'\n")
    checked = cli("validate", "--", "-x.yaml", cwd=tmp_path)
    assert checked.code == 0, checked.stderr
    ran = cli("run", "--out", str(tmp_path / "o"), "--", "-x.yaml", cwd=tmp_path)
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("dash: "), ran.stdout
    assert len(list((tmp_path / "o" / "runs").iterdir())) == 1
    bare = cli("run", "-x.yaml", cwd=tmp_path)
    assert bare.code == 2
    assert "did you mean ./-x.yaml or -- -x.yaml (a file of that name)?" in bare.stderr
    assert not (tmp_path / ".reprospec").exists()


def test_a_run_from_a_removed_folder_says_so(tmp_path: Path) -> None:
    # `cd gone; rmdir ../gone; reprospec run /abs/spec.yaml` said only "reprospec:
    # No such file or directory" (the default --out made absolute from the cwd).
    spec = write(tmp_path / "ok.yaml", "reprospec: 1\nname: ok\ncommand: 'true'\n")
    gone = tmp_path / "gone"
    gone.mkdir()
    script = 'cd "$1" && rmdir "$1" && exec "$2" -m reprospec run "$3"'
    done = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), sys.executable, str(spec)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "reprospec: the current folder no longer exists (removed after the shell entered it): "
        "cd into one that does\n"
    )


def test_an_out_that_is_no_folder_is_refused_as_the_users_path(cli: Cli, tmp_path: Path) -> None:
    # `--out FILE` was "the results store FILE/results.db: cannot create its
    # folder: File exists" and a folder where results.db belongs "the file or its disk
    # failed (unable to open database file)", both exit 3, an infrastructure error.
    spec = write(tmp_path / "ok.yaml", "reprospec: 1\nname: ok\ncommand: 'true'\n")
    (tmp_path / "a-file").write_text("")
    on_a_file = cli("run", str(spec), "--out", str(tmp_path / "a-file"))
    assert on_a_file.code == 2, on_a_file.stderr
    assert on_a_file.stderr == (
        f"reprospec: --out {tmp_path / 'a-file'}: not a folder (a file is there); give a folder\n"
    )
    (tmp_path / "store" / "results.db").mkdir(parents=True)
    on_a_folder = cli("run", str(spec), "--out", str(tmp_path / "store"))
    assert on_a_folder.code == 2, on_a_folder.stderr
    assert "results.db: a folder is there, not a store; move it aside" in on_a_folder.stderr
    assert not (tmp_path / "store" / "runs").exists()


def test_an_out_whose_runs_is_a_file_and_history_of_a_file_are_refused(
    cli: Cli, tmp_path: Path
) -> None:
    # `run` under an --out whose runs/ is a file said only "File exists: OUT/runs", and
    # `history --out FILE` "no runs recorded in FILE yet", exit 0, as of an empty folder.
    spec = write(tmp_path / "ok.yaml", "reprospec: 1\nname: ok\ncommand: 'true'\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").write_text("")
    ran = cli("run", str(spec), "--out", str(out))
    assert ran.code == 2, ran.stderr
    refused = (
        f"reprospec: --out {out}: {out / 'runs'} is a file, not the folder of its runs; "
        "move it aside, or give another --out\n"
    )
    assert ran.stderr == refused
    listed = cli("history", "--out", str(out))
    assert (listed.code, listed.stderr) == (2, refused)
    # As the user gave it, relative, where run named its resolved path (history did not),
    # and before the run made its results.db there.
    (out / "results.db").unlink(missing_ok=True)
    for verb in (("run", "ok.yaml"), ("history",)):
        said = cli(*verb, "--out", "out", cwd=tmp_path)
        assert (said.code, said.stderr) == (
            2,
            "reprospec: --out out: out/runs is a file, not the folder of its runs; "
            "move it aside, or give another --out\n",
        )
    assert not (out / "results.db").exists()
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for given, why in (
        (a_file, "a file is there"),
        (a_file / "x", f"{a_file} on its path is a file"),
    ):
        listed = cli("history", "--out", str(given))
        assert (listed.code, listed.stdout) == (2, ""), listed.stderr
        assert listed.stderr == f"reprospec: --out {given}: not a folder ({why}); give a folder\n"
    # The verbs that read a run by id or `latest` said "latest: FILE has no runs" or "no run
    # 'ID': ... under FILE/runs" of an --out that is a file, where history says why.
    for reading in (("report", "latest"), ("report", "some-id"), ("run", "--resume", "latest")):
        said = cli(*reading, "--out", str(a_file))
        assert (said.code, said.stderr) == (
            2,
            f"reprospec: --out {a_file}: not a folder (a file is there); give a folder\n",
        ), reading


def test_an_output_that_cannot_be_written_is_named_by_its_option(cli: Cli, tmp_path: Path) -> None:
    # `report latest -o /proc/nope` said "No such file or directory:
    # /proc/nope", which names none of the command's options.
    spec = write(tmp_path / "ok.yaml", "reprospec: 1\nname: ok\ncommand: 'true'\n")
    assert cli("run", str(spec)).code == 0
    said = cli("report", "latest", "-o", "/proc/nope")
    assert said.code == 2
    # The call that failed and its path, and why /proc, which exists, said no.
    assert said.stderr == (
        "reprospec: -o /proc/nope: cannot write there: write /proc/nope: "
        "No such file or directory (/proc exists, but nothing can be made in it)\n"
    )
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "r.md"
    said = cli("report", "latest", "-o", str(bad))
    assert said.code == 2
    assert said.stderr == (
        f"reprospec: -o {bad}: cannot write there: mkdir {bad.parent}: "
        f"File exists ({bad.parent} is a file)\n"
    )


def test_json_is_format_json_on_every_verb_and_envs_lists_by_default(
    cli: Cli, tmp_path: Path
) -> None:
    out = str(tmp_path / "store")
    # No engine: the docker runner's images on this machine's engine are not this test's.
    alone = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    assert cli("envs", "--out", out, env=alone).stderr.startswith("no environments in ")
    for spelling in (["--format", "json"], ["--json"]):  # --json: the old spelling, hidden
        listed = cli("envs", *spelling, "--out", out, env=alone)
        assert listed.code == 0, listed.stderr
        assert json.loads(listed.stdout) == []
    assert "--json" not in cli("envs", "--help").stdout
    for verb in ("env", "doctor", "envs", "slurm", "plan", "history", "compare", "isolate"):
        text = cli(verb, "--help").stdout
        assert re.search(r"--format \{[a-z,]*json", text), (verb, text)
    doctor = cli("doctor", "--format", "json")
    checks = json.loads(doctor.stdout)
    assert checks
    assert all({"name", "status"} <= set(check) for check in checks)


@pytest.mark.skipif(shutil.which("bash") is None, reason="skipped: bash is not installed")
def test_bash_completes_verbs_and_options_through_argcomplete(cli: Cli) -> None:
    code = cli("completion", "bash")
    assert code.code == 0, code.stderr
    script = "\n".join(
        [
            code.stdout,
            'ask() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$1";',
            '  [[ "$1" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));',
            '  COMPREPLY=(); _python_argcomplete reprospec "${COMP_WORDS[-1]}";',
            '  echo "$1=>${COMPREPLY[*]}"; }',
            'ask "reprospec ru"',
            'ask "reprospec run --rep"',
            'ask "reprospec envs "',
            'ask "reprospec completion "',
        ]
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "--norc", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    answers = dict(line.split("=>", 1) for line in done.stdout.splitlines() if "=>" in line)
    assert answers["reprospec ru"].split() == ["run"], done
    assert answers["reprospec run --rep"].split() == ["--repeat"]
    assert set(answers["reprospec envs "].split()) >= {"list", "prune", "--format"}
    assert set(answers["reprospec completion "].split()) >= {"bash", "zsh", "fish"}
    for shell in ("zsh", "fish"):
        shown = cli("completion", shell)
        assert shown.code == 0
        assert "reprospec" in shown.stdout
        assert "_ARGCOMPLETE" in shown.stdout


SLOW_SPEC = """\
reprospec: 1
name: slow
matrix:
  n: [1, 2, 3]
command: >-
  python -c "import os, pathlib, sys, time;
  pathlib.Path('{tmp}', 'started').touch();
  go = pathlib.Path('{tmp}', 'go').exists();
  time.sleep(0 if go else 300)"
run: {{timeout: 120s}}
expect: {{outcome: pass}}
"""


def test_ctrl_c_prints_the_resume_command_that_finishes_the_run(tmp_path: Path) -> None:
    spec = write(tmp_path / "slow.yaml", SLOW_SPEC.format(tmp=tmp_path))
    out = tmp_path / "store"
    env = {**os.environ, "NO_COLOR": "1"}
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        (tmp_path / "started").exists,
    )
    stderr = stopped.stderr
    assert stopped.code == 130, stderr
    found = re.search(r"^reprospec: interrupted; finish the run with: (.+)$", stderr, re.M)
    assert found, stderr
    words = shlex.split(found.group(1))
    run_id = next((out / "runs").iterdir()).name
    assert words == ["reprospec", "run", "--resume", run_id, "--out", str(out)]
    # report.md gives the same command, and `report` renders it again so: without its --out
    # the pasted line looked for the run in .reprospec ("no results store").
    note = f"(`{found.group(1)}` finishes it)"
    assert note in (out / "runs" / run_id / "report.md").read_text(encoding="utf-8")
    again = subprocess.run(
        [sys.executable, "-m", "reprospec", "report", run_id, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert note in again.stdout, again.stderr
    results = out / "runs" / run_id / "results.json"
    command_line = json.loads(results.read_text(encoding="utf-8"))["command_line"]
    assert command_line == f"reprospec run {spec}"
    # The command as printed, with the attempts now free to finish.
    (tmp_path / "go").touch()
    resumed = subprocess.run(
        [sys.executable, "-m", "reprospec", *words[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "3/3 cells reproduced" in resumed.stdout
    # The resumed run still says how it was run (the store kept no command line: "").
    assert json.loads(results.read_text(encoding="utf-8"))["command_line"] == command_line


# SLOW_SPEC whose attempts say when the engine, stopping, asks them for their stacks
# (SIGURG, before it kills them): a sign that the first Ctrl-C was handled, and an answer
# that never comes, so the engine waits its STACK_WAIT_S for the stack files before it
# writes anything.
# The handler is set before `started` is written: a press before it would find faulthandler's.
ASKED_SPEC = SLOW_SPEC.replace(
    "  pathlib.Path('{tmp}', 'started')",
    "  signal.signal(signal.SIGURG, lambda *_: pathlib.Path('{tmp}', 'asked').touch());\n"
    "  pathlib.Path('{tmp}', 'started')",
).replace("import os,", "import os, signal,")


def test_a_second_ctrl_c_does_not_cut_short_what_the_first_writes(tmp_path: Path) -> None:
    spec = write(tmp_path / "slow.yaml", ASKED_SPEC.format(tmp=tmp_path))
    out = tmp_path / "store"
    # The second press once the first was handled: pressed 50 ms apart, the two reached a
    # loaded engine as one signal (standard signals do not queue), and nothing was said.
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        (tmp_path / "started").exists,
        again_when=(tmp_path / "asked").exists,
    )
    assert stopped.code == 130, stopped.stderr
    assert "reprospec: stopping: writing what finished first" in stopped.stderr
    assert "reprospec: interrupted; finish the run with: reprospec run --resume" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    run = next((out / "runs").iterdir())
    assert (run / "report.md").is_file()
    history = subprocess.run(
        [sys.executable, "-m", "reprospec", "history", "--out", str(out), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert [r["status"] for r in json.loads(history.stdout)] == ["interrupted"]


def test_a_closed_terminal_stops_a_run_as_ctrl_c_does(tmp_path: Path) -> None:
    # SIGHUP's default action killed the engine where it stood: no results.json,
    # no report, and history said `killed`, where Ctrl-C writes them and says `interrupted`.
    spec = write(tmp_path / "slow.yaml", SLOW_SPEC.format(tmp=tmp_path))
    out = tmp_path / "store"
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        (tmp_path / "started").exists,
        signum=signal.SIGHUP,
    )
    assert stopped.code == 130, stopped.stderr
    assert "reprospec: interrupted; finish the run with: reprospec run --resume" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    run = next((out / "runs").iterdir())
    assert (run / "report.md").is_file()
    assert (run / "results.json").is_file()
    history = subprocess.run(
        [sys.executable, "-m", "reprospec", "history", "--out", str(out), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert [r["status"] for r in json.loads(history.stdout)] == ["interrupted"]


def test_a_run_whose_progress_reader_went_away_ends_as_a_closed_pipe(tmp_path: Path) -> None:
    # `run SPEC 2>&1 | head -1`: the progress line after head had gone raised EPIPE, taken
    # for a store failure (`InfraError: Broken pipe`), whose message broke the same pipe:
    # Python's exit 1, a not-reproduced run's code, with the run stopped and nothing said.
    spec = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\nmatrix:\n  n: [1, 2, 3]\ncommand: sleep 1\n"
        "run: {repeat: 3}\nexpect: {outcome: pass}\n",
    )
    out = tmp_path / "store"
    reader, writer = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=writer,
    )  # fmt: skip
    os.close(writer)
    try:
        assert os.read(reader, 200).startswith(b"[1/9] n=1 #1: pass")
    finally:
        os.close(reader)
    assert child.wait(timeout=120) == 141
    history = subprocess.run(
        [sys.executable, "-m", "reprospec", "history", "--out", str(out), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    [stored] = json.loads(history.stdout)
    assert stored["status"] == "interrupted"
    resumed = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "--resume", "latest", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.parametrize("closed", [">&-", "2>&-", "<&- >&- 2>&-"])
def test_a_run_started_without_stdout_or_stderr_runs_whole(tmp_path: Path, closed: str) -> None:
    # `reprospec run SPEC >&- 2>&-`: Python's sys.stdout or sys.stderr was None, and the
    # first progress line (or the table) was `internal error: AttributeError: 'NoneType'
    # object has no attribute 'write'`, exit 3, the run stored interrupted.
    spec = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\nmatrix:\n  n: [1, 2]\ncommand: 'true'\nexpect: {outcome: pass}\n",
    )
    out = tmp_path / "store"
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -m reprospec run "$1" --out "$2" {closed}',
         sys.executable, str(spec), str(out)],
        cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    history = subprocess.run(
        [sys.executable, "-m", "reprospec", "history", "--out", str(out), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert [(r["status"], r["cells"]) for r in json.loads(history.stdout)] == [("finished", 2)]


def test_a_run_under_nohup_outlives_its_terminal(tmp_path: Path) -> None:
    # `nohup reprospec run`: the SIGHUP it ignores stays ignored, the run goes on.
    spec = write(tmp_path / "one.yaml", SLOW_SPEC.format(tmp=tmp_path).replace("1, 2, 3", "1"))
    out = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", NOHUP_RUN, str(spec), str(out)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the attempt never started"
            time.sleep(0.01)
        child.send_signal(signal.SIGHUP)
        time.sleep(0.5)  # the handler, had one been set, stops the run well within this
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, stderr


# `nohup`'s part: SIGHUP ignored, then reprospec run in the same process.
NOHUP_RUN = """
import signal, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)
from reprospec.cli import main
sys.exit(main(["run", sys.argv[1], "--out", sys.argv[2]]))
"""


LATE_SECOND_SIGTERM = """
import os, signal, sys, threading
from reprospec.commands.interrupt import install_stop_handlers


class Late:
    def __del__(self) -> None:  # module teardown: the interpreter's last moments
        os.kill(os.getpid(), signal.SIGTERM)


late = Late()
install_stop_handlers(threading.Event())
try:
    os.kill(os.getpid(), signal.SIGTERM)
except KeyboardInterrupt:
    pass
sys.exit(130)
"""


def test_a_second_sigterm_as_the_interpreter_exits_keeps_exit_130() -> None:
    # A CI runner's second SIGTERM just after "interrupted" was printed found CPython's
    # default action put back at exit: the run died of it, 143 instead of 130.
    stopped = subprocess.run(
        [sys.executable, "-c", LATE_SECOND_SIGTERM],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert stopped.returncode == 130, stopped.stderr


def test_a_run_log_carries_an_eta_while_attempts_are_left(cli: Cli, tmp_path: Path) -> None:
    spec = write(
        tmp_path / "four.yaml",
        "reprospec: 1\nname: four\nmatrix: {n: [1, 2, 3, 4]}\n"
        'command: python -c "import time; time.sleep(0.2)"\nexpect: {outcome: pass}\n',
    )
    result = cli("run", str(spec), "-j", "1")
    assert result.code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 4, result.stderr
    for line in lines[:3]:
        assert re.search(r", eta \d+s\)$", line), line
    assert "eta" not in lines[3]


@pytest.mark.skipif(shutil.which("script") is None, reason="skipped: script is not installed")
def test_the_progress_bar_on_a_terminal_shows_an_eta(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "bar.yaml",
        "reprospec: 1\nname: bar\nmatrix: {n: [1, 2, 3, 4, 5, 6]}\n"
        'command: python -c "import time; time.sleep(0.4)"\nexpect: {outcome: pass}\n',
    )
    command = shlex.join(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(tmp_path / "o")]
    )
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    # `script` gives the run a real terminal, so rich draws its live bar.
    done = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "160", "TERM": "xterm"},
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done.stdout)
    # rich's estimate, once two attempts have finished: `2/6 0:00:02 eta 0:00:04`.
    assert re.search(r"\d/6 \d:\d\d:\d\d eta \d:\d\d:\d\d", screen), screen[-2000:]


def test_a_local_option_cut_short_is_left_out_of_the_command_line_shown(tmp_path: Path) -> None:
    # argparse takes `--ou DIR` for `--out DIR` (its abbreviations): the recorded command,
    # made to be shown to others, kept `--ou /home/me/...` and `--keep-c`, and How to
    # reproduce gave `--pyth X` beside the `--python X` it adds.
    spec = tmp_path / "t.yaml"
    spec.write_text(
        "reprospec: 1\nname: t\ncommand: python -c pass\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    out = tmp_path / "somewhere"
    argv = [
        sys.executable, "-m", "reprospec", "run", str(spec), "--ou", str(out), "--keep-c",
        "--form=md", f"--pyth={sys.executable}", "-j", "1",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (results,) = out.glob("runs/*/results.json")
    assert json.loads(results.read_text(encoding="utf-8"))["command_line"] == (
        f"reprospec run {spec} -j 1"
    )
    report = (results.parent / "report.md").read_text(encoding="utf-8")
    assert "--pyth=" not in report
    assert str(out) not in report.split("## How to reproduce", 1)[1].split("##", 1)[0]
