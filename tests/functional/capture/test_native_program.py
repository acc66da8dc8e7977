"""`reprospec capture -- ./prog` of a real C program, built with cc in the test's folder: what
its spec carries of the shell's variables, and where its crash and its hang are said to be
(and where `reprospec run` says its hang sits)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from reprospec import native
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.load import load_spec
from tests.support.cli import Cli, CliResult

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) to build the program")

_SEGFAULT = "int main(void) { volatile int *p = 0; *p = 1; return 0; }\n"
_NAP = "#include <unistd.h>\nint main(void) { for (;;) sleep(1); }\n"

# A real deadlock among three threads: `work` waits on a mutex main holds, main joins it, and
# a heartbeat sleeps beside them (what a hung process's first thread often is).
_DEADLOCK = """\
#include <pthread.h>
#include <unistd.h>
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static void *beat(void *arg) { for (;;) sleep(1); return arg; }
static void *work(void *arg) { pthread_mutex_lock(&held); return arg; }
int main(void) {
    pthread_t b, w;
    pthread_mutex_lock(&held);
    pthread_create(&b, 0, beat, 0);
    pthread_create(&w, 0, work, 0);
    pthread_join(w, 0);
    return 0;
}
"""

# A deadlock in main while a helper thread reaps a child (`sleep 1000`, idle) in waitpid.
_REAP = """\
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pid_t child;
static void *reaper(void *arg) { waitpid(child, 0, 0); return arg; }
static void stuck(void) { pthread_mutex_lock(&held); pthread_mutex_lock(&held); }
int main(void) {
    pthread_t r;
    child = fork();
    if (child == 0) { execlp("sleep", "sleep", "1000", (char *)0); _exit(127); }
    pthread_create(&r, 0, reaper, 0);
    stuck();
    return 0;
}
"""

# A launcher that reads its child's output (cargo's `Command::output`, ctest's loop): it
# runs ./nap with its stdout a pipe and waits in `read` (or `poll`) for what never comes.
_PIPED = """\
#include <poll.h>
#include <unistd.h>
int main(void) {
    int fds[2];
    char buf[256];
    if (pipe(fds) != 0) return 1;
    if (fork() == 0) {
        dup2(fds[1], 1); close(fds[0]); close(fds[1]);
        execl("./nap", "./nap", (char *)0);
        _exit(127);
    }
    close(fds[1]);
    struct pollfd wait = {fds[0], POLLIN, 0};
    while (POLL && poll(&wait, 1, -1) >= 0) {}
    while (read(fds[0], buf, sizeof buf) > 0) {}
    return 0;
}
"""

# A parent that hangs by itself beside its idle child: it runs ./nap as _PIPED does, a
# thread reads the pipe, and main deadlocks on a mutex it holds.
_PIPED_STUCK = """\
#include <pthread.h>
#include <unistd.h>
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int out;
static char buf[256];
static void *reader(void *arg) { while (read(out, buf, sizeof buf) > 0) {} return arg; }
static void stuck(void) { pthread_mutex_lock(&held); pthread_mutex_lock(&held); }
int main(void) {
    int fds[2];
    pthread_t r;
    if (pipe(fds) != 0) return 1;
    if (fork() == 0) {
        dup2(fds[1], 1); close(fds[0]); close(fds[1]);
        execl("./nap", "./nap", (char *)0);
        _exit(127);
    }
    close(fds[1]);
    out = fds[0];
    pthread_create(&r, 0, reader, 0);
    stuck();
    return 0;
}
"""


def built(folder: Path, name: str, source: str, *defines: str) -> None:
    """`folder/name`, compiled from `source` (-O0: the program's own frames stay)."""
    assert CC is not None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.c").write_text(source)
    argv = [CC, "-O0", "-pthread", *defines, "-o", str(folder / name), str(folder / f"{name}.c")]
    subprocess.run(argv, check=True)


def captured(cli: Cli, work: Path, *argv: str, env: dict[str, str]) -> CliResult:
    """`reprospec capture -o spec.yaml ARGV` in `work`, its store beside it; it succeeded."""
    out = work.parent / "out"
    result = cli("capture", "-o", "spec.yaml", "--out", str(out), *argv, cwd=work, env=env)
    assert result.code == 0, result.stdout + result.stderr
    return result


def captured_hang(cli: Cli, work: Path, program: str, *argv: str) -> str:
    """The title of `capture --timeout 2s --no-verify -- ARGV`'s spec, a hang of `program`'s,
    whose `outcome: hang` comment names the same place."""
    captured(cli, work, "--timeout", "2s", "--no-verify", "--", *argv, env={})
    title = document(work)["title"]
    assert isinstance(title, str)
    assert title.startswith(f"{program}: hang in "), title
    text = (work / "spec.yaml").read_text()
    assert f"outcome: hang  # hung in {title.removeprefix(f'{program}: hang in ')}\n" in text, text
    return title


def ran_hang(
    cli: Cli, tmp_path: Path, name: str, source: str, *defines: str
) -> tuple[CliResult, str]:
    """`reprospec run` of `./name` built from `source`, a spec expecting its hang in 2 s; it
    succeeded, and its one attempt's outcome placed the hang natively: the result and that place."""
    work = tmp_path / name
    built(work, name, source, *defines)
    spec = work / "spec.yaml"
    spec.write_text(
        f"reprospec: 1\nname: {name}\ncommand: ./{name}\nrun: {{timeout: 2s}}\n"
        "expect: {outcome: hang}\n"
    )
    result = cli("run", str(spec), "--out", str(tmp_path / "out"), cwd=work)
    assert result.code == 0, result.stdout + result.stderr
    (attempt,) = json.loads((result.latest_run() / "results.json").read_text())["cells"][0][
        "attempts"
    ]
    place = attempt["outcome"]["hung_native"]
    assert isinstance(place, str), attempt["outcome"]
    return result, place


def document(work: Path) -> Mapping[str, JsonValue]:
    return load_spec(str(work / "spec.yaml")).document


@needs_cc
def test_a_c_program_s_spec_carries_none_of_the_shell_s_python_settings(
    cli: Cli, tmp_path: Path
) -> None:
    # A C program's spec wrote the shell's PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED
    # into environment.env ("your shell set it; not tested by a rerun without it"): the
    # interpreter's variables counted as relevant for any command, and the verify never
    # tests them, though no Python of the program reads them.
    work = tmp_path / "seg"
    built(work, "seg", _SEGFAULT)
    # A third of the interpreter's settings: the rule, not two names.
    shell = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    result = captured(cli, work, "--", "./seg", env=shell)
    spec = document(work)
    environment = spec.get("environment")
    env = environment.get("env", {}) if isinstance(environment, dict) else {}
    assert isinstance(env, dict)
    assert not [name for name in env if name.startswith("PYTHON")], env
    text = (work / "spec.yaml").read_text()
    assert "PYTHON" not in text.split("command:")[0], text
    # Left out of the verify as any other variable of the shell the spec does not carry,
    # and the failure came back without them.
    (verify,) = [line for line in result.stdout.splitlines() if line.startswith("verify")]
    assert "verdict reproduced" in verify, verify
    assert "the failure needs" not in result.stdout, result.stdout
    expect = spec["expect"]
    assert isinstance(expect, dict)
    assert (expect["outcome"], expect["signal"]) == ("crash", "SIGSEGV")


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_c_program_s_hang_is_titled_and_expected_where_its_native_stack_sits(
    cli: Cli, tmp_path: Path
) -> None:
    # `./lock: hang`, with `expect: {outcome: hang}` and nothing of where, though its native
    # stacks showed `work` on a held mutex: a Python hang is titled by its frame, and a
    # crash's signal comment names its frame. Of the three threads, the one on the mutex
    # names it, not main's join nor the heartbeat's sleep.
    work = tmp_path / "lock"
    built(work, "lock", _DEADLOCK)
    title = captured_hang(cli, work, "./lock", "./lock")
    assert title.endswith("<-work@lock"), title
    place = title.removeprefix("./lock: hang in ")
    assert "@libc" in place.split("<-")[0], place  # the C library's wait it blocks in


@needs_cc
@pytest.mark.skipif(
    not native.can_read() or native.core_pattern().piped,
    reason="needs eu-stack or gdb, and cores written to the working directory",
)
def test_a_c_program_s_crash_is_titled_and_expected_by_its_signature_s_native_frame(
    cli: Cli, tmp_path: Path
) -> None:
    # `./seg: SIGSEGV`, its `signal` comment naming no frame, though the run's signature said
    # `crash:SIGSEGV:main:main@seg`: capture's crash frame came from Python stacks alone, and
    # a Python crash's title and comment name its frame.
    work = tmp_path / "seg"
    built(work, "seg", _SEGFAULT)
    result = captured(cli, work, "--no-verify", "--", "./seg", "1", env={})
    assert "wrote spec.yaml: crash:SIGSEGV:main:main@seg in 1/1 attempt" in result.stdout, (
        result.stdout
    )
    assert document(work)["title"] == "./seg: SIGSEGV in main@seg"
    text = (work / "spec.yaml").read_text()
    (signal,) = [line for line in text.splitlines() if line.lstrip().startswith("signal:")]
    assert signal.startswith("  signal: SIGSEGV  # "), signal
    assert signal.endswith(", in main@seg"), signal


@needs_cc
@pytest.mark.skipif(
    not native.can_read() or native.core_pattern().piped,
    reason="needs eu-stack or gdb, and cores written to the working directory",
)
def test_a_crash_of_a_program_a_shell_ran_names_that_program_beside_its_frame(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture -- sh -c './seg; exit $?'` was titled `sh: SIGSEGV in main@seg`, read as if
    # sh crashed: the frame is ./seg's core's, whose death the shell's status 139 reported.
    work = tmp_path / "seg"
    built(work, "seg", _SEGFAULT)
    captured(cli, work, "--no-verify", "--", "sh", "-c", "./seg; exit $?", env={})
    assert document(work)["title"] == "sh: SIGSEGV in a process it ran (seg), in main@seg"
    text = (work / "spec.yaml").read_text()
    (signal,) = [line for line in text.splitlines() if line.lstrip().startswith("signal:")]
    assert signal.endswith("a process it ran dies of it (seg), in main@seg"), signal


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_c_program_s_hang_is_placed_by_the_run_s_line_report_and_results(
    cli: Cli, tmp_path: Path
) -> None:
    # `reprospec run` of a C program's hang said `hang (observed)`, and its report.md `hang`,
    # with no place: the outcome kept only a Python frame (`hung_in`), though its native
    # stacks showed `sleep` in `main`. The outcome keeps the native place and its words say it.
    result, place = ran_hang(cli, tmp_path, "nap", _NAP)
    run = result.latest_run()
    assert place.endswith("<-main@nap"), place
    assert "@libc" in place.split("<-")[0], place  # the C library's sleep it sits in
    assert f"default #1: hang in {place} (match" in result.stderr, result.stderr
    assert f"`hang in {place}`" in (run / "report.md").read_text()
    # Its own program's place: no process named beside it.
    results = json.loads((run / "results.json").read_text())
    assert "hung_process" not in results["cells"][0]["attempts"][0]["outcome"]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_program_whose_thread_reaps_a_child_is_placed_in_its_own_deadlock(
    cli: Cli, tmp_path: Path
) -> None:
    # reap: main deadlocks in stuck() while a helper thread waits for its child (`sleep
    # 1000`) in waitpid. `reprospec run` said `hang in clock_nanosleep@libc`, the idle
    # child's: a program with any thread in a child wait was passed over as a launcher.
    result, place = ran_hang(cli, tmp_path, "reap", _REAP)
    assert place.endswith("<-stuck@reap"), place
    assert f"default #1: hang in {place} (match" in result.stderr, result.stderr


@needs_cc
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_hang_under_make_is_placed_in_the_program_make_waits_for(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture -- make` of a Makefile whose one step runs ./nap was titled `make: hang in
    # wait4@libc<-reap_children@make`: of the processes read, only a shell waiting for its
    # child was passed over, and make, waiting for ./nap alike, was taken for the place.
    work = tmp_path / "make"
    built(work, "nap", _NAP)
    (work / "Makefile").write_text("all:\n\t./nap\n")
    title = captured_hang(cli, work, "make", "make")
    assert title.endswith("<-main@nap"), title
    # The process too, as a crash in a process make ran is titled: it read `make: hang in
    # clock_nanosleep@libc<-main@nap`, as if make slept.
    assert title.startswith("make: hang in a process it ran (nap), in "), title


def _parents(run: Path) -> dict[str, str | None]:
    """Each live process's parent, by its command, in the run's one attempt's stacks."""
    stacks = json.loads((run / "cells/default/1/native-stacks.json").read_text())
    pids = {p["pid"]: p["command"] for p in stacks["processes"]}
    return {p["command"]: pids.get(p["ppid"]) for p in stacks["processes"]}


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_launcher_reading_its_child_s_output_is_placed_in_the_child_that_hangs(
    cli: Cli, tmp_path: Path
) -> None:
    # pp runs ./nap with its stdout a pipe and reads it: `reprospec run` said `hang in
    # read@libc<-main@pp`, the launcher's wait, where ./nap slept. Only a wait for a child
    # (wait4) passed a launcher over; its stacks now keep each process's parent.
    built(tmp_path / "pp", "nap", _NAP)
    result, place = ran_hang(cli, tmp_path, "pp", _PIPED, "-DPOLL=0")
    assert place.endswith("<-main@nap"), place
    assert "@libc" in place.split("<-")[0], place  # the C library's sleep it sits in
    assert _parents(result.latest_run())["./nap"] == "./pp"
    # The line, report.md and results.json name ./nap too, as capture's title does: they
    # said `hang in clock_nanosleep@libc<-main@nap`, as if pp slept.
    said = f"hang in a process it ran (nap), in {place}"
    assert f"default #1: {said} (match" in result.stderr, result.stderr
    report = (result.latest_run() / "report.md").read_text()
    assert f"in a process it ran (nap), in `{place}` (cell" in report, report
    results = json.loads((result.latest_run() / "results.json").read_text())
    assert results["cells"][0]["attempts"][0]["outcome"]["hung_process"] == "./nap"


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize("poll", [0, 1], ids=["read", "poll"])
def test_a_capture_of_a_launcher_reading_its_child_is_titled_by_the_child(
    cli: Cli, tmp_path: Path, poll: int
) -> None:
    # `capture -- ./pp` was titled `./pp: hang in read@libc<-main@pp` (with poll:
    # `poll@libc<-main@pp`): the child's sleep, and the child, as a crash's are named.
    work = tmp_path / "pp"
    built(work, "nap", _NAP)
    built(work, "pp", _PIPED, f"-DPOLL={poll}")
    title = captured_hang(cli, work, "./pp", "./pp")
    assert title.startswith("./pp: hang in a process it ran (nap), in "), title
    assert title.endswith("<-main@nap"), title


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_parent_that_deadlocks_beside_its_idle_child_is_the_place(
    cli: Cli, tmp_path: Path
) -> None:
    # Leaf first only past a process that waits on its child and nothing else: this one's
    # thread reads ./nap's pipe, but main deadlocks on its own mutex, which is the hang.
    built(tmp_path / "stuck", "nap", _NAP)
    result, place = ran_hang(cli, tmp_path, "stuck", _PIPED_STUCK)
    assert place.endswith("<-stuck@stuck"), place
    assert _parents(result.latest_run())["./nap"] == "./stuck"


@needs_cc
@pytest.mark.skipif(shutil.which("strip") is None, reason="strip is not installed")
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_stripped_program_s_hang_is_placed_without_its_unnamed_caller(
    cli: Cli, tmp_path: Path
) -> None:
    # A stripped program (`capture -- sleep 100`) was titled `sleep: hang in
    # clock_nanosleep@libc<-??@sleep`: its own frame has no name to tell anyone.
    work = tmp_path / "stripped"
    built(work, "nap", _NAP)
    subprocess.run(["strip", str(work / "nap")], check=True)
    title = captured_hang(cli, work, "./nap", "./nap")
    assert "??" not in title, title
    assert "<-" not in title, title  # no caller with a name to give
    assert title.endswith("@libc"), title  # the C library's sleep it sits in


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_python_program_waiting_for_its_c_child_is_placed_in_the_child_s_native_stack(
    cli: Cli, tmp_path: Path
) -> None:
    # `subprocess.run(["./nap"], capture_output=True)` was titled `run.py: hang in a child
    # process` and run as `hang (child pid N)`, no place: the native place was read only of
    # a hang with no Python stack, and run.py's only waits in communicate().
    work = tmp_path / "py"
    built(work, "nap", _NAP)
    (work / "run.py").write_text(
        'import subprocess\nsubprocess.run(["./nap"], capture_output=True)\n'
    )
    title = captured_hang(cli, work, "run.py", "python3", "run.py")  # comment alike
    # The child named, as the run's line names it: it read `run.py: hang in a child process
    # in clock_nanosleep@libc<-main@nap`, whose child was nowhere said.
    assert title.startswith("run.py: hang in a child process (nap), in "), title
    place = title.removeprefix("run.py: hang in a child process (nap), in ")
    assert place.endswith("<-main@nap"), title
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out2"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "default #1:" in line]
    assert line.startswith("[1/1] default #1: hang (child pid "), line
    assert line.split(": ./nap) in ", 1)[1].startswith(f"{place} (match"), line
    report = (run.latest_run() / "report.md").read_text()
    assert f"not a Python program) in `{place}` (cell" in report, report


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_python_program_hanging_in_its_own_code_beside_an_idle_c_child_stays_its_own(
    cli: Cli, tmp_path: Path
) -> None:
    # Its own frame, not the child's sleep: the child's native place is taken only where
    # the main process only waits for it.
    work = tmp_path / "own"
    built(work, "nap", _NAP)
    (work / "own.py").write_text(
        "import subprocess, time\n"
        'child = subprocess.Popen(["./nap"])\n'
        "def spin():\n"
        "    while True:\n"
        "        time.sleep(0.05)\n"
        "spin()\n"
    )
    title = captured_hang(cli, work, "own.py", "python3", "own.py")
    assert title == "own.py: hang in spin (own.py:5)", title


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize(
    ("name", "waits", "line"),
    [
        ("lk", "lock = multiprocessing.Lock()\nwith lock:\n    with lock:\n        pass\n", 5),
        ("mq", "q = multiprocessing.Queue()\nq.get()\n", 4),
        ("ev", "done = multiprocessing.Event()\ndone.wait()\n", 4),
    ],
    ids=["lock", "queue-get", "event-wait"],
)
def test_a_python_program_hung_in_its_own_multiprocessing_wait_beside_a_c_child_stays_its_own(
    cli: Cli, tmp_path: Path, name: str, waits: str, line: int
) -> None:
    # A multiprocessing Lock, Queue or Event is never waited on for a program with no Python
    # stack: it was titled `lk.py: hang in a child process in clock_nanosleep@libc<-main@nap`
    # and run as `hang (child pid N: ./nap) in ...`, its own line unnamed.
    work = tmp_path / name
    built(work, "nap", _NAP)
    head = 'import multiprocessing, subprocess\nchild = subprocess.Popen(["./nap"])\n'
    (work / f"{name}.py").write_text(head + waits)
    title = captured_hang(cli, work, f"{name}.py", "python3", f"{name}.py")
    assert title == f"{name}.py: hang in <module> ({name}.py:{line})", title
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out2"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (said,) = [s for s in run.stderr.splitlines() if "default #1:" in s]
    assert "child" not in said, said
    assert "nap" not in said, said


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize(
    "command",
    ["./nap 'x y'", "FOO=1 ./nap", "./nap > /dev/null"],
    ids=["quoted", "env", "redirect"],
)
def test_the_spec_s_own_program_is_no_process_it_ran_whatever_its_shell_text(
    cli: Cli, tmp_path: Path, command: str
) -> None:
    # The runner's `/bin/sh -c TEXT` runs the command's program as its direct child, whose
    # argv (`./nap x y`) differs from TEXT: the run said `hang in a process it ran (nap x y)`
    # where capture's title said `./nap: hang in ...`.
    work = tmp_path / "nap"
    built(work, "nap", _NAP)
    (work / "spec.yaml").write_text(
        f'reprospec: 1\nname: nap\ncommand: "{command}"\nrun: {{timeout: 2s}}\n'
        "expect: {outcome: hang}\n"
    )
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (said,) = [s for s in run.stderr.splitlines() if "default #1:" in s]
    assert said.startswith("[1/1] default #1: hang in clock_nanosleep@libc<-main@nap ("), said
    (attempt,) = json.loads((run.latest_run() / "results.json").read_text())["cells"][0]["attempts"]
    assert "hung_process" not in attempt["outcome"], attempt["outcome"]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_python_program_s_c_child_s_own_child_names_both(cli: Cli, tmp_path: Path) -> None:
    # Python runs ./pp, which reads the pipe of the ./nap it runs: the run said `hang (child
    # pid N) in a process it ran (nap)`, the child's own command lost.
    work = tmp_path / "two"
    built(work, "nap", _NAP)
    built(work, "pp", _PIPED, "-DPOLL=0")
    (work / "run.py").write_text(
        'import subprocess\nsubprocess.run(["./pp"], capture_output=True)\n'
    )
    (work / "spec.yaml").write_text(
        "reprospec: 1\nname: two\ncommand: python3 run.py\nrun: {timeout: 2s}\n"
        "expect: {outcome: hang}\n"
    )
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (said,) = [s for s in run.stderr.splitlines() if "default #1:" in s]
    assert said.startswith("[1/1] default #1: hang (child pid "), said
    assert ": ./pp) in a process it ran (nap), in clock_nanosleep@libc<-main@nap (" in said, said
    (attempt,) = json.loads((run.latest_run() / "results.json").read_text())["cells"][0]["attempts"]
    assert attempt["outcome"]["cmdline"] == "./pp", attempt["outcome"]
    assert attempt["outcome"]["hung_process"] == "./nap", attempt["outcome"]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize(
    ("call", "child"),
    [('["./pp"]', "pp"), ('"./nap; echo done", shell=True', "sh -c ./nap; echo done")],
    ids=["c-launcher", "shell"],
)
def test_a_python_program_s_hang_two_levels_down_is_titled_as_the_run_says_it(
    cli: Cli, tmp_path: Path, call: str, child: str
) -> None:
    # Python runs ./pp reading ./nap's pipe (or a shell running ./nap): the run said `hang
    # (child pid N: ./pp) in a process it ran (nap), in ...`, but capture titled it `run.py:
    # hang in a child process in clock_nanosleep@libc<-main@nap`, naming neither.
    work = tmp_path / "two"
    built(work, "nap", _NAP)
    built(work, "pp", _PIPED, "-DPOLL=0")
    (work / "run.py").write_text(
        f"import subprocess\nsubprocess.run({call}, capture_output=True)\n"
    )
    title = captured_hang(cli, work, "run.py", "python3", "run.py")  # comment alike
    said = f"in a child process ({child}), in a process it ran (nap), in "
    assert title.startswith(f"run.py: hang {said}"), title
    place = title.removeprefix(f"run.py: hang {said}")
    assert place.endswith("<-main@nap"), title
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out2"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "default #1:" in line]
    assert f") in a process it ran (nap), in {place} (match" in line, line
    # report.md's Failure list too: it gave nap's place to the child's pid, nap unnamed.
    report = (run.latest_run() / "report.md").read_text()
    assert f"not a Python program), in a process it ran (nap), in `{place}` (cell" in report, report


_MP_EXEC = {
    "call": "import multiprocessing, subprocess\n"
    'if __name__ == "__main__":\n'
    '    p = multiprocessing.Process(target=subprocess.call, args=(["./nap"],))\n'
    "    p.start()\n"
    "    p.join()\n",
    "exec": "import multiprocessing, os\n"
    'if __name__ == "__main__":\n'
    '    p = multiprocessing.Process(target=os.execv, args=("./nap", ["./nap"]))\n'
    "    p.start()\n"
    "    p.join()\n",
}


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize("how", sorted(_MP_EXEC))
def test_a_multiprocessing_child_that_runs_a_c_program_is_where_the_hang_is(
    cli: Cli, tmp_path: Path, how: str
) -> None:
    # A Process whose target runs ./nap (subprocess.call) or becomes it (os.execv), joined:
    # cfa4fe8f took only a subprocess wait for one on a program with no Python stack, and
    # placed the hang at the parent's `p.join()` line (`mc.py: hang in <module> (mc.py:5)`).
    work = tmp_path / how
    built(work, "nap", _NAP)
    (work / "mc.py").write_text(_MP_EXEC[how])
    captured(cli, work, "--timeout", "2s", "--no-verify", "--", "python3", "mc.py", env={})
    title = document(work)["title"]
    assert isinstance(title, str)
    assert title.startswith("mc.py: hang in a child process"), title
    assert title.endswith("<-main@nap"), title


# A SIGALRM handler that takes a mutex the code it interrupted holds: a real deadlock inside
# the handler, main's `pause` below it.
_HANDLER_LOCK = """\
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void on_alarm(int s) { (void)s; pthread_mutex_lock(&m); pthread_mutex_unlock(&m); }
int main(void) {
    signal(SIGALRM, on_alarm);
    pthread_mutex_lock(&m);
    alarm(1);
    for (;;) pause();
}
"""


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_hang_inside_a_signal_handler_is_placed_in_the_handler(cli: Cli, tmp_path: Path) -> None:
    # d7365874 read every live thread below its last `<signal handler called>`, meant for a
    # SIGCHLD handler our stop of a child ran: this handler's own deadlock was placed where
    # it had interrupted main (pause@libc<-main@hlock, review). A handler that waits stays.
    _, place = ran_hang(cli, tmp_path, "hlock", _HANDLER_LOCK)
    assert place.endswith("<-on_alarm@hlock"), place
