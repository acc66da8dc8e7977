"""A crash in any descendant, not only a DataLoader worker: real children, the real engine path.

Each attempt runs through the local runner (own session, subreaper), its files are
read once (`Evidence.read`), classified and judged as a run does (`attempt_result`).
Before children.py every one of these read `error RuntimeError` (or
`BrokenProcessPool`, `CalledProcessError`, exit 1).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec import native
from reprospec.core.inputs import Expectation
from reprospec.core.results import AttemptResult, Execution, Outcome
from reprospec.core.words import (
    A_PROCESS_OF_THE_PIPELINE,
    A_SHELLS_137_OR_AN_EXIT_STATUS,
    A_SHELLS_SIGKILL_SENT_BY_A_PROCESS,
    AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN,
    AS_A_SHELL_REPORTS_IT,
    KNOWN_FROM_THE_OUTPUT_ALONE,
    NO_OTHER_PROCESS_RAN,
    POOL_WORKER_NO_CRASH,
    SENT_BY_A_PROCESS,
    THE_ONE_PROGRAM_DIED_OF_IT,
    THE_PIPELINES_PROGRAM,
    outcome_phrase,
)
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.hangsource import on_disk
from reprospec.outcome.judge import judge_attempt
from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup
from reprospec.pipeline.attempt import attempt_result
from reprospec.process import memcgroup
from reprospec.runners.local import LocalRunner
from tests.support.cli import Cli
from tests.support.oomcount import machine_oom_kills
from tests.support.paths import CHILDREN
from tests.support.plans import attempt_plan

CHILD_CRASH = str(CHILDREN / "child_crash.py")


PY = sys.executable


SEGV = Expectation("crash", signal="SIGSEGV")


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    # Without native stacks (no cores): what the attempt printed and what the engine reaped
    # must be enough. test_a_core_names_the_crashed_child covers the cores.
    r = LocalRunner(native_stacks=False)
    r.prepare([])
    return r


def run_attempt(
    runner: LocalRunner,
    argv: list[str] | str,
    tmp_path: Path,
    expectation: Expectation = SEGV,
    timeout_s: float = 30.0,
    env: dict[str, str] | None = None,
) -> tuple[AttemptResult, Execution]:
    """One attempt as a run makes it; the workdir is tmp_path (a core file lands there)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    plan = replace(
        attempt_plan(argv, work, env=env, environment={"device": "cpu"}, timeout_s=timeout_s),
        expectation=expectation,
    )
    execution = runner.run(plan, tmp_path / "attempt")
    return attempt_result(plan, execution, Evidence.read(execution)), execution


def judged(result: AttemptResult, kind: str, signal: str | None, where: str) -> Outcome:
    """The attempt's outcome, asserted to be (kind, signal, where) and to meet its plan's
    expectation."""
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal, outcome.where) == (kind, signal, where), outcome
    assert result.matched, result.mismatches
    return outcome


def crashed(result: AttemptResult) -> Outcome:
    outcome = judged(result, "crash", "SIGSEGV", "child")
    # With native stacks the signature gains the crashing native frame (`:strlen@libc`).
    assert outcome.signature.startswith("crash:SIGSEGV:child")
    return outcome


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_process_segfault_is_a_child_crash_with_its_stack(
    runner: LocalRunner, tmp_path: Path, method: str
) -> None:
    result, execution = run_attempt(runner, [PY, CHILD_CRASH, f"mp-{method}"], tmp_path)
    assert execution.returncode == 1  # the main process survived and raised
    outcome = crashed(result)
    # The main process's own error is kept; the crash is the news.
    assert outcome.exception == "RuntimeError"
    assert "exit code -11" in (outcome.message or "")
    # Its parent reaped it (multiprocessing's join), and the engine's sitecustomize saw the
    # status: the pid and the process's name, where its faulthandler report had neither.
    assert outcome.pid is not None
    assert outcome.cmdline == "crasher"
    assert re.match(
        rf"child pid {outcome.pid} \(crasher\) died of SIGSEGV \(Segmentation fault\), "
        r"reaped by its parent \(pid \d+\); the main process exited 1$",
        outcome.detail or "",
    ), outcome.detail
    assert outcome_phrase(outcome) == f"crash SIGSEGV (child pid {outcome.pid}: crasher)"
    # The child's stack, not the main's traceback: the frame that crashed is in it.
    assert result.stack is not None
    assert result.stack.startswith("Fatal Python error: Segmentation fault")
    assert "in crash" in result.stack
    assert "Traceback" not in result.stack


def test_process_pool_worker_segfault_is_a_child_crash(runner: LocalRunner, tmp_path: Path) -> None:
    result, _ = run_attempt(runner, [PY, CHILD_CRASH, "pool"], tmp_path)
    outcome = crashed(result)
    assert outcome.exception == "concurrent.futures.process.BrokenProcessPool"
    assert result.stack is not None
    assert "_process_worker" in result.stack


# A ProcessPoolExecutor worker that ends without a crash signal: concurrent.futures says
# "terminated abruptly" all the same.
POOL_END = """\
import os, signal, sys
from concurrent.futures import ProcessPoolExecutor
def work(how):
    if how == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    os._exit(3)
if __name__ == "__main__":
    with ProcessPoolExecutor(2) as pool:
        print(pool.submit(work, sys.argv[1]).result())
"""


@pytest.mark.parametrize("how", ["sigterm", "exit"])
@pytest.mark.parametrize("form", ["argv", "string"])
def test_a_pool_worker_that_exited_or_was_terminated_is_no_crash(
    runner: LocalRunner, tmp_path: Path, how: str, form: str
) -> None:
    """A ProcessPoolExecutor worker that got SIGTERM or called os._exit(3) read `crash
    (child)` from "A process in the process pool was terminated abruptly" alone: rule 6
    counts a death by a crash signal only, and the program's multiprocessing, which the
    engine's hooks watch, reaped none (a SIGSEGV'd worker's is an event: the test above).
    The main process's BrokenProcessPool is the outcome, the detail saying why."""
    program = tmp_path / "pool_end.py"
    program.write_text(POOL_END)
    words = (PY, str(program), how)
    argv = list(words) if form == "argv" else one_program(*words)
    expect = Expectation("error", exception="concurrent.futures.process.BrokenProcessPool")
    result, _ = run_attempt(runner, argv, tmp_path, expect)
    outcome = judged(result, "error", None, "main")
    assert outcome.exit_code == 1
    assert outcome.detail == f"exit code 1; {POOL_WORKER_NO_CRASH}", outcome.detail


# The pool is a child Python's, run without the engine's hooks (-I: no PYTHONPATH, so no
# sitecustomize): its worker's SIGSEGV nobody wrote, and the program's own record is of its
# CalledProcessError.
INNER_POOL = """\
import ctypes, resource
from concurrent.futures import ProcessPoolExecutor
def work():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ctypes.string_at(0)
if __name__ == "__main__":
    with ProcessPoolExecutor(1) as pool:
        pool.submit(work).result()
"""
OUTER = """\
import subprocess, sys
subprocess.run([sys.executable, "-I", sys.argv[1]], check=True)
"""


def test_a_pool_of_a_child_python_without_the_hooks_stays_a_crash(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """The program's record (a CalledProcessError) vouched for a pool that was not its own:
    a child Python run with -I, whose worker died of SIGSEGV, read `error` with "no worker
    died of a crash signal: not a crash". Only the program's own BrokenProcessPool says the
    pool was one whose workers' deaths its hooks would have written."""
    inner = tmp_path / "inner.py"
    inner.write_text(INNER_POOL)
    outer = tmp_path / "outer.py"
    outer.write_text(OUTER)
    result, _ = run_attempt(runner, [PY, str(outer), str(inner)], tmp_path, Expectation("crash"))
    outcome = judged(result, "crash", None, "child")
    assert POOL_WORKER_NO_CRASH not in (outcome.detail or "")


def test_subprocess_child_is_named_by_its_command(runner: LocalRunner, tmp_path: Path) -> None:
    argv = [PY, CHILD_CRASH, "subprocess", PY, "-c", "import ctypes; ctypes.string_at(0)", "x"]
    result, _ = run_attempt(runner, argv, tmp_path)
    outcome = crashed(result)
    assert outcome.exception == "subprocess.CalledProcessError"
    assert outcome.pid is None
    assert outcome.cmdline == f"{PY} -c 'import ctypes; ctypes.string_at(0)' x"
    assert outcome_phrase(outcome).startswith(f"crash SIGSEGV (child: {PY[:20]}")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
def test_native_test_binary_under_a_shell_driver_names_pid_and_command(
    runner: LocalRunner, tmp_path: Path
) -> None:
    binary = tmp_path / "test_ops"
    subprocess.run(["gcc", "-o", str(binary), str(CHILDREN / "segv.c")], check=True)
    argv = [str(CHILDREN / "run_tests.sh"), str(tmp_path)]
    result, execution = run_attempt(runner, argv, tmp_path)
    assert execution.returncode == 1
    outcome = crashed(result)
    assert outcome.pid is not None
    assert outcome.pid > 0
    assert outcome.cmdline == "./test_ops --gtest_filter=Ops.Add"
    phrase = f"crash SIGSEGV (child pid {outcome.pid}: ./test_ops --gtest_filter=Ops.Add)"
    assert outcome_phrase(outcome) == phrase
    assert "as the shell reports it" in (outcome.detail or "")


def test_orphan_crash_is_known_from_the_wait_status_the_engine_reaped(
    runner: LocalRunner, tmp_path: Path
) -> None:
    result, execution = run_attempt(runner, [PY, CHILD_CRASH, "orphan"], tmp_path)
    assert execution.returncode == 1
    reaped = [e for e in execution.child_exits if e.signal == "SIGSEGV"]
    assert len(reaped) == 1, execution.child_exits
    outcome = crashed(result)
    assert outcome.pid == reaped[0].pid
    assert outcome.cmdline == reaped[0].cmdline
    assert "python" in (outcome.cmdline or "")
    assert "reaped by the engine" in (outcome.detail or "")
    assert outcome_phrase(outcome).startswith(f"crash SIGSEGV (child pid {outcome.pid}: ")
    # Alike crashes count together: the pid is left out where attempts are grouped.
    assert outcome_phrase(outcome, pid=False).startswith("crash SIGSEGV (child: ")


def test_main_process_segfault_is_still_the_main_crash(runner: LocalRunner, tmp_path: Path) -> None:
    result, _ = run_attempt(runner, [PY, CHILD_CRASH, "main"], tmp_path)
    outcome = result.ran
    assert outcome is not None
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main")
    assert outcome.pid is None
    assert outcome.cmdline is None


PRINTED = str(CHILDREN / "printed_crash.py")


def one_program(*words: str) -> list[str]:
    """A string command's argv: `/bin/sh -c LINE`, which dash runs by forking the program."""
    return ["/bin/sh", "-c", shlex.join(words)]


def command(how: str, words: tuple[str, ...], folder: Path) -> list[str]:
    """`words` as a list command, a string command, or a string command that is a list of
    the program and the shell's own builtins (`cd DIR && python x.py; exit $?`)."""
    if how == "argv":
        return list(words)
    if how == "string":
        return one_program(*words)
    return ["/bin/sh", "-c", f"cd {folder} && {' '.join(words)}; exit $?"]


@pytest.mark.parametrize("mode", ["shell-stdout", "faulthandler", "cpe", "worker"])
@pytest.mark.parametrize("how", ["argv", "string", "list"])
def test_crash_text_a_program_printed_is_no_childs_death(
    runner: LocalRunner, tmp_path: Path, mode: str, how: str
) -> None:
    """A program that printed a shell's, faulthandler's or subprocess's report of a
    segfault (an old CI log it triages) and raised ValueError, with no child at all, was
    `crash SIGSEGV (child pid 4242: ./test_ops)`. The engine knows no child ran: the root
    (or the one program a root shell ran) never reaped one, and it found none."""
    words = (PY, PRINTED, mode)
    argv = command(how, words, tmp_path)
    expected = Expectation("error", exception="ValueError")
    result, execution = run_attempt(runner, argv, tmp_path, expected)
    assert execution.descendants is False
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.exit_code, outcome.where) == ("error", 1, "main"), outcome
    assert (outcome.exception, outcome.message) == ("ValueError", "triage found no owner")
    assert (outcome.pid, outcome.cmdline) == (None, None)
    assert result.matched, result.mismatches
    detail = outcome.detail or ""
    assert "the output reports a death (" in detail, detail
    assert "died of SIGSEGV" in detail, detail
    assert detail.endswith(NO_OTHER_PROCESS_RAN), detail


def test_printed_crash_text_after_a_real_child_says_only_the_output_tells(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # A child ran (`true`), so the printed report may be its: still a child's crash, as
    # before, but the detail says that only text tells of it, against the main's own error.
    result, execution = run_attempt(
        runner, [PY, PRINTED, "shell-stdout", "--ran-a-child"], tmp_path
    )
    assert execution.descendants is True
    outcome = crashed(result)
    assert outcome.pid == 4242
    detail = outcome.detail or ""
    assert detail.endswith(
        "the main process exited 1 with its own uncaught ValueError; the death is known from "
        "the output alone (the engine saw no such process end)"
    ), detail


def test_a_child_death_the_program_raised_for_stays_a_crash_under_a_root_shell(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # `python child_crash.py mp-fork` as a string command: dash forks python, whose own
    # record says it reaped a child; the child's faulthandler report is its death.
    result, execution = run_attempt(runner, one_program(PY, CHILD_CRASH, "mp-fork"), tmp_path)
    assert execution.descendants is True
    outcome = crashed(result)
    assert outcome.exception == "RuntimeError"
    # Seen, not only printed: the status python's multiprocessing reaped.
    assert "(crasher) died of SIGSEGV (Segmentation fault), reaped by its parent" in (
        outcome.detail or ""
    )
    assert KNOWN_FROM_THE_OUTPUT_ALONE not in (outcome.detail or "")


@pytest.mark.parametrize("mode", ["exit139", "os_exit139"])
@pytest.mark.parametrize("how", ["argv", "string", "list"])
def test_an_exit_status_139_of_its_own_is_an_error(
    runner: LocalRunner, tmp_path: Path, how: str, mode: str
) -> None:
    """`sys.exit(139)`, no signal anywhere, was `crash SIGSEGV` by the shell's
    128+N rule, and `expect: {outcome: error, exit_code: 139}` could never match; so was
    `os._exit(139)` under a shell, which skips the interpreter's exit."""
    argv = command(how, (PY, PRINTED, mode), tmp_path)
    result, execution = run_attempt(runner, argv, tmp_path, Expectation("error", exit_code=139))
    assert (execution.returncode, execution.descendants) == (139, False)
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 139, None), outcome
    assert result.matched, result.mismatches
    assert outcome.signature == "error:exit-139"
    assert (outcome.detail or "").startswith(
        f"exit code 139; 139 = 128 + SIGSEGV{AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN}"
    ), outcome.detail


@pytest.mark.parametrize("code", ["import sys; sys.exit(139)", "import os; os._exit(int('139'))"])
def test_a_python_c_snippets_own_139_is_an_error(
    runner: LocalRunner, tmp_path: Path, code: str
) -> None:
    """A `python -c "..."` string command whose snippet held a `(` or a `;` was read
    as a line that may fork more than one program, so its own record was not asked, and its
    `sys.exit(139)` was `crash SIGSEGV` by the shell's 128+N rule."""
    line = f'{shlex.quote(PY)} -c "{code}"'  # as a spec writes it: the snippet in double quotes
    result, execution = run_attempt(runner, ["/bin/sh", "-c", line], tmp_path)
    assert execution.returncode == 139
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 139, None), outcome


@pytest.mark.parametrize(
    "line", ["{py} {script} main", "{py} {script} main; exit $?", "{py} {script} main || exit 139"]
)
def test_a_shells_139_for_its_programs_segfault_is_still_a_crash(
    runner: LocalRunner, tmp_path: Path, line: str
) -> None:
    command = line.format(py=shlex.quote(PY), script=shlex.quote(CHILD_CRASH))
    result, execution = run_attempt(runner, ["/bin/sh", "-c", command], tmp_path)
    assert execution.returncode == 139
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "main"), outcome
    assert (outcome.detail or "") == "exit status 139 = 128 + SIGSEGV, as a shell reports it"
    assert result.matched, result.mismatches


# Deaths in the interpreter's shutdown, after atexit (where the record of a normal end is
# written): a global's `__del__`, and a native library's destructor, which runs in libc's
# exit() after the interpreter uninstalled faulthandler (no report is printed).
AT_EXIT = {
    "SIGSEGV": "import ctypes\nclass Handle:\n    def __del__(self, read=ctypes.string_at):\n"
    "        read(0)\nkept = Handle()\nprint('done', flush=True)\n",
    "SIGABRT": "import os\nclass Handle:\n    def __del__(self, abort=os.abort):\n"
    "        abort()\nkept = Handle()\nprint('done', flush=True)\n",
    "native": "import ctypes, sys\nctypes.CDLL(sys.argv[1])\nprint('done', flush=True)\n",
}
DESTRUCTOR = "__attribute__((destructor)) static void bye(void) { *(volatile int *)0 = 1; }\n"


@pytest.mark.parametrize("death", sorted(AT_EXIT))
@pytest.mark.parametrize("line", ["{py} {script}", "{py} {script}; exit $?", "{py} {script} 2>&1"])
def test_a_death_in_the_shutdown_after_the_exit_record_is_a_crash(
    runner: LocalRunner, tmp_path: Path, death: str, line: str
) -> None:
    """the program's ended-PID record said it ended normally and reaped
    no child, so the shell's 128+N was called its own exit status (`error exit 139`). No
    core is read here (native stacks off, as where core_pattern pipes cores away): the
    record's asked-for status (0) against the shell's is the evidence."""
    script = tmp_path / "at_exit.py"
    script.write_text(AT_EXIT[death], encoding="utf-8")
    words = [shlex.quote(PY), shlex.quote(str(script))]
    if death == "native":
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            pytest.skip("no C compiler (cc) to build the library")
        (tmp_path / "bye.c").write_text(DESTRUCTOR, encoding="utf-8")
        library = tmp_path / "libbye.so"
        source = str(tmp_path / "bye.c")
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(library), source], check=True)
        words.append(shlex.quote(str(library)))
    command = line.format(py=words[0], script=" ".join(words[1:]))
    signal = "SIGABRT" if death == "SIGABRT" else "SIGSEGV"
    result, execution = run_attempt(
        runner, ["/bin/sh", "-c", command], tmp_path, Expectation("crash", signal=signal)
    )
    assert execution.returncode == 128 + {"SIGSEGV": 11, "SIGABRT": 6}[signal]
    judged(result, "crash", signal, "main")


def test_expect_where_tells_a_childs_segfault_from_the_main_processs(
    cli: Cli, tmp_path: Path
) -> None:
    """`expect` could not say which process must crash; a child's SIGSEGV met
    an expectation written for the main process's. `where`, per cell from the matrix."""
    (tmp_path / "prog.py").write_text(
        "import subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-c', 'import ctypes; ctypes.string_at(0)'])\n"
        "sys.exit(1 if done.returncode else 0)\n"
    )
    spec = tmp_path / "where.yaml"
    spec.write_text(
        "reprospec: 1\nname: where\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        "command: python prog.py\n"
        "matrix: {want: [child, main]}\n"
        "expect: {outcome: crash, signal: SIGSEGV, where: '${{ matrix.want }}'}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 1, result.stdout + result.stderr
    cells = {c["id"]: c for c in result.results()["cells"]}
    assert cells["want=child"]["verdict"] == "reproduced"
    assert cells["want=main"]["verdict"] == "not-reproduced"
    assert "where: expected main, got child" in cells["want=main"]["reason"]
    assert "crash SIGSEGV (main)" in result.stdout
    spec.write_text(spec.read_text().replace("[child, main]", "[child, parent]"))
    refused = cli("run", str(spec))
    assert refused.code == 2
    assert f"{spec}:6:" in refused.stderr
    assert "expect.where: expected one of main, worker, child, got 'parent'" in refused.stderr


def test_forked_attempts_of_one_program_are_judged_alike(cli: Cli, tmp_path: Path) -> None:
    """Under run.preload the engine read the forked root's /proc/PID/stat while
    its preload server reaped it: a zombie still (ran no other process: `error exit 139`)
    or gone (unknown: `crash SIGSEGV` by the shell's rule), about 3 attempts in 4 one way.
    The server now reads it before its wait and sends it with the exit status."""
    spec = tmp_path / "forked.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: forked-139\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        f"command: [python, {PRINTED}, exit139]\n"
        "expect: {outcome: error, exit_code: 139}\n"
        "run: {repeat: 16, preload: [json]}\n"
    )
    result = cli("run", str(spec), "-j", "2")
    attempts = result.results()["cells"][0]["attempts"]
    assert {a["launch"] for a in attempts} == {"forked"}
    seen = [(a["outcome"]["kind"], a["outcome"]["exit_code"]) for a in attempts]
    assert seen == [("error", 139)] * 16, seen
    assert result.code == 0, result.stdout + result.stderr


@pytest.mark.skipif(
    native.gdb_path() is None or native.core_pattern().piped,
    reason="needs gdb and cores written to the working directory",
)
def test_a_core_names_the_crashed_child(tmp_path: Path) -> None:
    runner = LocalRunner(native_stacks=True)
    runner.prepare([])
    result, _ = run_attempt(runner, [PY, CHILD_CRASH, "mp-fork"], tmp_path)
    outcome = crashed(result)
    assert outcome.pid is not None
    assert "as its core says" in (outcome.detail or "")
    # A forked child's command line is its parent's, as the kernel recorded it (80 bytes),
    # without the argument the kernel cut in two.
    assert outcome.cmdline
    whole = f"{PY} {CHILD_CRASH} mp-fork"
    shown = outcome.cmdline.removesuffix(" ...")
    assert whole.startswith(shown)
    assert whole[len(shown) :][:1] in ("", " ")
    assert outcome_phrase(outcome).startswith(f"crash SIGSEGV (child pid {outcome.pid}: ")
    assert result.stack is not None
    assert "in crash" in result.stack


@pytest.mark.skipif(
    native.gdb_path() is None or native.core_pattern().piped,
    reason="needs gdb and cores written to the working directory",
)
def test_a_core_names_a_child_with_a_long_command_line_whole(tmp_path: Path) -> None:
    """The child's core kept its command line's first 80 bytes (pr_psargs), cut
    inside a venv's long path: the script and its arguments were lost, the venv could not
    be named `<venv>`. The whole argv is read from the core's stack now."""
    runner = LocalRunner(native_stacks=True)
    runner.prepare([])
    venv = tmp_path / ("a-project-" + "p" * 40) / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").symlink_to(PY)
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("import ctypes\nctypes.string_at(0)\n")
    (work / "main.py").write_text(
        "import subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:])\n"  # quietly: only the core names the child
        "sys.exit(1 if done.returncode else 0)\n"
    )
    child = [str(venv / "python3"), "train.py", "--config", "a config.yaml", "--seed", "7"]
    assert len(child[0]) > 80
    result, _ = run_attempt(runner, [PY, "main.py", *child], tmp_path)
    outcome = crashed(result)
    assert "as its core says" in (outcome.detail or "")
    assert outcome.cmdline == " ".join(child)


HANG = Expectation("hang")


def hung_after_a_crash(result: AttemptResult) -> Outcome:
    """A hang, as observed and expected, whose crashed child is named: what a Pool leaves."""
    outcome = result.ran
    assert outcome is not None, result.infra_error
    # The outcome stays what was observed: a hang of the main process, no signal of its own.
    assert (outcome.kind, outcome.signal, outcome.where) == ("hang", None, "main"), outcome
    assert result.matched, result.mismatches
    assert outcome.crashed_child is not None, outcome.detail
    assert outcome.crashed_child.signal == "SIGSEGV"
    assert outcome.signature == "hang:after-child-SIGSEGV"
    return outcome


def test_pool_worker_segfault_then_hang_names_the_dead_worker(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """multiprocessing.Pool never notices a worker that died mid-task: map() waits forever.

    Before, the attempt was a bare `hang` whose stacks were the waiting parent's: the
    worker's SIGSEGV, the whole cause, was nowhere but in the log excerpt, unnamed.
    """
    plan = replace(
        attempt_plan([PY, CHILD_CRASH, "pool-hang"], tmp_path, timeout_s=3.0), expectation=HANG
    )
    execution = runner.run(plan, tmp_path / "attempt")
    assert execution.timed_out
    result = attempt_result(plan, execution, Evidence.read(execution))
    outcome = hung_after_a_crash(result)
    detail = outcome.detail or ""
    # The pool's own thread reaped the dead worker (and started another in its place): the
    # engine's sitecustomize saw the status, so the worker is named, pid and process name.
    child = outcome.crashed_child
    assert child is not None
    assert child.pid is not None
    assert re.match(
        rf"child pid {child.pid} \(ForkPoolWorker-1\) died of SIGSEGV \(Segmentation fault\), "
        r"reaped by its parent \(pid \d+\), before the hang",
        detail,
    ), detail
    assert "no exit within the timeout (3 s)" in detail
    assert outcome_phrase(outcome) == (
        f"hang after a child died of SIGSEGV (pid {child.pid}: ForkPoolWorker-1)"
    )
    # The dead worker's own stack, kept apart from the hung processes' stacks.
    dead, hung = result.dead_child_stack or "", result.stack or ""
    assert dead.startswith("Fatal Python error: Segmentation fault"), dead[:300]
    assert "in crash" in dead
    assert "in run_pool_hang" in dead
    # The pool started the worker through the sitecustomize's wrapper of Popen.__init__:
    # its frame is reprospec's, left out as stack.txt leaves it out.
    assert "sitecustomize.py" not in dead, dead
    assert "in _launch" in dead  # multiprocessing's own frames below it stay
    assert hung.startswith("--- pid "), hung[:300]
    assert "in map" in hung  # the parent, waiting for the lost task
    assert "in crash" not in hung
    # An expectation that asks for a crash's signal is still not met by a hang: no
    # existing spec's verdict changes.
    assert not judge_attempt(outcome, Expectation("fail", signal="SIGSEGV")).matched


@pytest.mark.skipif(
    native.gdb_path() is None or native.core_pattern().piped,
    reason="needs gdb and cores written to the working directory",
)
def test_a_core_names_the_pool_worker_that_died_before_the_hang(tmp_path: Path) -> None:
    runner = LocalRunner(native_stacks=True)
    runner.prepare([])
    plan = replace(
        attempt_plan([PY, CHILD_CRASH, "pool-hang"], tmp_path, timeout_s=3.0), expectation=HANG
    )
    execution = runner.run(plan, tmp_path / "attempt")
    result = attempt_result(plan, execution, Evidence.read(execution))
    outcome = hung_after_a_crash(result)
    child = outcome.crashed_child
    assert child is not None
    assert child.pid is not None
    assert child.evidence == "as its core says"
    assert f"{PY} {CHILD_CRASH} pool-hang".startswith((child.cmdline or "").removesuffix(" ..."))
    assert (outcome.detail or "").startswith(f"child pid {child.pid} (")
    assert outcome_phrase(outcome).startswith(
        f"hang after a child died of SIGSEGV (pid {child.pid}: "
    )
    # Alike hangs count together: the pid is left out where attempts are grouped.
    assert outcome_phrase(outcome, pid=False).startswith("hang after a child died of SIGSEGV (")
    assert f"pid {child.pid}" not in outcome_phrase(outcome, pid=False)
    # The report's native frames are the dead worker's core's, not a hung process's.
    assert result.native is not None
    assert (result.dead_child_stack or "").startswith("Fatal Python error: Segmentation fault")
    assert f"--- pid {child.pid} (" not in (result.stack or "")  # it hung in no stack dump


def test_run_reports_the_pool_worker_that_died_before_the_hang(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "pool.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: pool-hang\n"
        "title: multiprocessing.Pool hangs after a worker segfaults\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        f"command: [python, {CHILD_CRASH}, pool-hang]\n"
        "run: {timeout: 3s}\n"
        "expect: {outcome: hang}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr  # reproduced: a hang, as expected
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert (outcome["kind"], outcome["signal"]) == ("hang", None)
    assert outcome["signature"] == "hang:after-child-SIGSEGV"
    child = outcome["crashed_child"]
    assert child["signal"] == "SIGSEGV"
    # Named by its pid where its core was read (native stacks on, gdb there).
    named = f" (pid {child['pid']}: " if child.get("pid") else ""
    said = f"default #1: hang after a child died of SIGSEGV{named}"
    assert said in result.stdout + result.stderr  # the progress line
    report = (result.latest_run() / "report.md").read_text()
    # The headline, the first thing read, names the death; then the failure's own lines.
    headline = report.split("\n**", 1)[1].split("**\n", 1)[0]
    assert headline.startswith("hang after a child died of SIGSEGV")
    assert headline.endswith(" in 1 of 1 cell; as expected in every cell (1/1 attempts)")
    failure = report.split("## Failure", 1)[1].split("\n## ", 1)[0]
    assert "- `hang:after-child-SIGSEGV` (1 attempt)" in failure
    assert "died of SIGSEGV (Segmentation fault)" in failure
    assert "before the hang: whatever waited for its work may wait forever" in failure
    # The dead worker's stack comes before the hung processes' stacks.
    dead_at = failure.index("The stack of the process that died (the child")
    hung_at = failure.index("The Python stacks of the hung processes")
    assert dead_at < hung_at
    assert "in crash" in failure[dead_at:hung_at]
    assert "sitecustomize.py" not in failure, failure  # reprospec's own frames
    assert "in map" in failure[hung_at:]
    assert "in crash" not in failure[hung_at:]
    # Stored apart in results.json, which a later `reprospec report` reads.
    stored = result.results()["cells"][0]["attempts"][0]
    assert "in crash" in stored["dead_child_stack"]
    assert "in crash" not in stored["stack"]


KILLED = Expectation("crash", signal="SIGKILL")


@pytest.fixture
def memory_limit() -> Iterator[dict[str, str]]:
    """A memory cgroup of 128 MiB, named in the variable that makes child_crash.py's SIGKILLed
    child join and fill it: a real OOM kill, never the machine's memory."""
    folder, why = make_memory_cgroup(128 << 20, f"reprospec-test-children-{os.getpid()}")
    if folder is None:
        pytest.skip(f"no memory cgroup can be made here: {why}")
    try:
        yield {"CHILD_CRASH_MEMCG": str(folder)}
    finally:
        remove_cgroup(folder)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_sigkilled_child_is_a_crash_its_parents_reaping_tells(
    runner: LocalRunner, tmp_path: Path, method: str, memory_limit: dict[str, str]
) -> None:
    """A SIGKILL (the OOM killer's, a real one under a memory limit) leaves no core and no
    report, and the main process reaps the child itself: before, its RuntimeError was the
    outcome, `error`, the death unnamed. The status its multiprocessing reaped (the engine's
    sitecustomize writes it as a `child_exit` event) is the death's evidence, whatever the
    start method (forkserver's status is its server's, read through a poll() of its own)."""
    argv = [PY, CHILD_CRASH, f"mp-kill-{method}"]
    result, execution = run_attempt(runner, argv, tmp_path, KILLED, env=memory_limit)
    assert not execution.no_oom_kill
    assert execution.returncode == 1
    outcome = judged(result, "crash", "SIGKILL", "child")
    assert outcome.exception == "RuntimeError"
    assert outcome.cmdline == "crasher"
    assert re.match(
        rf"child pid {outcome.pid} \(crasher\) died of SIGKILL \(Killed\), reaped by its "
        r"parent \(pid \d+\); the main process exited 1$",
        outcome.detail or "",
    ), outcome.detail
    assert result.matched, result.mismatches


def test_a_forked_attempts_sigkilled_child_is_seen_too(
    cli: Cli, tmp_path: Path, memory_limit: dict[str, str]
) -> None:
    """Under run.preload the attempt is a fork of a server that had no events file (it is
    per attempt): the watch is installed in the server all the same, and its forks write."""
    spec = tmp_path / "forked.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: forked-kill\n"
        f"environment: {{workdir: {tmp_path}, env: {json.dumps(memory_limit)}}}\n"
        f"command: [python, {CHILD_CRASH}, mp-kill]\n"
        "expect: {outcome: crash, signal: SIGKILL, where: child}\n"
        "run: {repeat: 2, preload: [multiprocessing]}\n"
    )
    result = cli("run", str(spec))
    attempts = result.results()["cells"][0]["attempts"]
    assert {a["launch"] for a in attempts} == {"forked"}
    assert result.code == 0, [a["outcome"]["detail"] for a in attempts]
    assert all("reaped by its parent" in a["outcome"]["detail"] for a in attempts)


@pytest.mark.parametrize("how", ["kill", "oskill", "killpg"])
def test_a_child_its_parent_killed_itself_is_no_crash(
    runner: LocalRunner, tmp_path: Path, how: str
) -> None:
    """Process.kill() (a timeout of the program's own, a pool's shutdown), os.kill() of
    its pid (torchrun's shutdown of the other ranks), or os.killpg() of the group it leads:
    the SIGKILL is the parent's doing, and the error it raised after is the outcome."""
    expect = Expectation("error", exception="RuntimeError")
    result, _ = run_attempt(runner, [PY, CHILD_CRASH, f"mp-parent-{how}"], tmp_path, expect)
    judged(result, "error", None, "main")


@pytest.mark.parametrize("mode", ["fork-kill", "daemon-kill", "daemon-killpg"])
def test_a_child_the_program_killed_is_no_crash_where_the_engine_reaps_it(
    runner: LocalRunner, tmp_path: Path, mode: str
) -> None:
    """A child of os.fork(), or a daemon, SIGKILLed by the program's own os.kill (a
    test's teardown of the server it started), then reaped by the engine (no Python parent
    polled it), was `crash SIGKILL (child ...)` where the program's RuntimeError is the
    outcome: its sitecustomize now writes the kill it sent (a `signalled` event)."""
    expect = Expectation("error", exception="RuntimeError")
    result, execution = run_attempt(runner, [PY, CHILD_CRASH, mode], tmp_path, expect)
    assert any(c.signal == "SIGKILL" for c in execution.child_exits), execution.child_exits
    judged(result, "error", None, "main")


def test_a_child_that_killed_itself_is_its_own_doing_where_no_oom_kill_was_counted(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """Its own os.kill(os.getpid(), SIGKILL), which no `signalled` event records, was a
    crash; a SIGKILL is one only as the OOM killer's, and the kernel counted no OOM kill on
    the machine: a process sent it, and the program's RuntimeError is the outcome."""
    expect = Expectation("error", exception="RuntimeError")
    argv = [PY, CHILD_CRASH, "fork-selfkill"]
    result, _ = run_with_no_oom_kill(runner, argv, tmp_path, expect)
    outcome = judged(result, "error", None, "main")
    assert (outcome.detail or "").endswith(SENT_BY_A_PROCESS), outcome.detail


def run_with_no_oom_kill(
    runner: LocalRunner,
    argv: list[str] | str,
    tmp_path: Path,
    expectation: Expectation,
    timeout_s: float = 30.0,
) -> tuple[AttemptResult, Execution]:
    """`run_attempt` while the kernel counts no OOM kill on the machine (this module's real
    OOM kills run beside it under -n 2): tried again a few times, else skipped."""
    for again in range(5):
        before = machine_oom_kills()
        if before is None:
            pytest.skip("this kernel counts no OOM kills (/proc/vmstat)")
        folder = tmp_path / f"try-{again}"
        folder.mkdir()
        done = run_attempt(runner, argv, folder, expectation, timeout_s=timeout_s)
        if machine_oom_kills() == before:
            # Seen by the engine where it can judge a SIGKILL: one process that died of none
            # leaves the count unread (memcgroup.none_killed), and no_oom_kill unknown.
            ran = done[1]
            assert ran.no_oom_kill or memcgroup.none_killed(ran.descendants, ran.returncode)
            return done
    pytest.skip("other processes of this machine were OOM-killed meanwhile, at every try")


# A CI script's own deadline for a step: GNU timeout SIGKILLs the step, then its own process
# group, itself included; the step, a zombie, is re-parented to the engine, which reaps it.
CI_SCRIPT = """\
#!/bin/bash
timeout -s KILL 1 {py} -c "import time; time.sleep(30)"
echo "training step timed out (status $?)" >&2
exit 1
"""

# The same from Python: the step's SIGKILL, then an error of the program's own.
PY_TIMEOUT = """\
import subprocess
subprocess.run(["timeout", "-s", "KILL", "1", "sleep", "5"])
raise ValueError("the step timed out")
"""


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")
@pytest.mark.parametrize("how", ["script", "python"])
def test_a_child_a_timeout_in_the_program_sigkilled_is_no_crash(
    runner: LocalRunner, tmp_path: Path, how: str
) -> None:
    """`timeout -s KILL` in a CI script, or in a Python program's subprocess.run,
    kills a step that outlived its deadline, and the program fails its own way (exit 1, a
    ValueError). No sitecustomize sees timeout's kill, and the engine reaped the step dead
    of SIGKILL: before, `crash SIGKILL (child: [python3])`. With no OOM kill counted on the
    machine the SIGKILL was a process's: the main process's error is the outcome."""
    if how == "script":
        script = tmp_path / "ci.sh"
        script.write_text(CI_SCRIPT.format(py=shlex.quote(PY)))
        script.chmod(0o755)
        argv, expect = [str(script)], Expectation("error", exit_code=1)
    else:
        program = tmp_path / "step.py"
        program.write_text(PY_TIMEOUT)
        argv, expect = [PY, str(program)], Expectation("error", exception="ValueError")
    result, execution = run_with_no_oom_kill(runner, argv, tmp_path, expect)
    outcome = judged(result, "error", None, "main")
    assert outcome.exit_code == 1
    # Mostly the step dies after timeout, and the engine reaps it (the old code's crash);
    # where timeout reaped it first (a race in the kernel's order), no death is seen, and
    # the verdict is the same error.
    if any(c.signal == "SIGKILL" for c in execution.child_exits):
        detail = outcome.detail or ""
        assert re.search(r"; child pid \d+ \(.+\) died of SIGKILL \(Killed\), ", detail), detail
        assert SENT_BY_A_PROCESS in detail


# A step's deadline whose death the command's own status reports: /bin/sh gives 128 + SIGKILL
# for the timeout it forked (GNU timeout SIGKILLs its process group, itself included), and
# `timeout --foreground` kills only its child and exits 137 itself.
STEP = "import time; time.sleep(30)"
EXIT_137 = Expectation("error", exit_code=137)


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")
@pytest.mark.parametrize("form", ["string", "list"])
def test_a_137_for_a_sigkill_a_timeout_sent_is_no_crash(
    runner: LocalRunner, tmp_path: Path, form: str
) -> None:
    """`timeout -s KILL 1 python3 ...` as the command read `crash SIGKILL` (the
    shell's 137, rule 4), where the same kill followed by `exit 1` read `error exit 1` (rule
    6: no OOM kill counted on the machine, so a process sent it). The status that reports a
    SIGKILL a process sent is the program's: `error` exit 137, saying why."""
    if form == "string":
        argv: list[str] | str = f"timeout -s KILL 1 {shlex.quote(PY)} -c {shlex.quote(STEP)}"
    else:
        argv = ["timeout", "--foreground", "-s", "KILL", "1", PY, "-c", STEP]
    result, execution = run_with_no_oom_kill(runner, argv, tmp_path, EXIT_137)
    assert execution.returncode == 137
    outcome = judged(result, "error", None, "main")
    assert outcome.exit_code == 137
    # The string form's step, killed with timeout's group, is reaped by the engine: a kill
    # seen. `--foreground`'s timeout reaps its own step: the engine saw no process killed,
    # and the status alone may as well be a program's own `exit 137`.
    why = A_SHELLS_SIGKILL_SENT_BY_A_PROCESS if form == "string" else A_SHELLS_137_OR_AN_EXIT_STATUS
    said = f"exit code 137; 137 = 128 + SIGKILL{why}"
    assert (outcome.detail or "").startswith(said), outcome.detail
    assert result.matched, result.mismatches


@pytest.mark.parametrize("form", ["string", "list"])
def test_a_137_of_a_program_a_python_one_exec_d_is_said_to_be_maybe_its_own(
    runner: LocalRunner, tmp_path: Path, form: str
) -> None:
    """A program that execs `sh -c 'exit 137'` read `error exit 137` in both forms, but the
    string form's detail said the status was a SIGKILL `sent by a process` where no process
    was killed: nothing the engine saw shows a kill, so the detail says the status may be
    the program's own."""
    code = "import os; os.execvp('sh', ['sh', '-c', 'exit 137'])"
    argv: list[str] | str = (
        f"{shlex.quote(PY)} -c {shlex.quote(code)}" if form == "string" else [PY, "-c", code]
    )
    result, execution = run_with_no_oom_kill(runner, argv, tmp_path, EXIT_137)
    assert execution.returncode == 137
    outcome = judged(result, "error", None, "main")
    assert "sent by a process" not in (outcome.detail or ""), outcome.detail
    if form == "string":
        said = f"exit code 137; 137 = 128 + SIGKILL{A_SHELLS_137_OR_AN_EXIT_STATUS}"
    else:
        said = f"exit code 137; 137 = 128 + SIGKILL{AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN}"
    assert outcome.detail == said, outcome.detail
    assert result.matched, result.mismatches


def test_a_137_is_a_crash_where_the_oom_killer_killed(
    runner: LocalRunner, tmp_path: Path, memory_limit: dict[str, str]
) -> None:
    """The shell's 137 for its one program's SIGKILL: by the OOM killer (a real one, in a
    128 MiB memory cgroup), rule 4's `crash SIGKILL`; the same program killing itself with
    no OOM kill counted on the machine died of SIGKILL itself, the main process, a crash
    whatever the count (rule 2), as its list form and bash, which execs it, read it (the
    program's own record says it asked for no status). A shell that reports a death it did
    not see die is test_a_137_for_a_sigkill_a_timeout_sent_is_no_crash."""
    command = f"{shlex.quote(PY)} {shlex.quote(CHILD_CRASH)} killed"
    (tmp_path / "oom").mkdir()
    oom, execution = run_attempt(runner, command, tmp_path / "oom", KILLED, env=memory_limit)
    assert execution.returncode == 137
    assert not execution.no_oom_kill
    outcome = judged(oom, "crash", "SIGKILL", "main")
    said = f"exit status 137 = 128 + SIGKILL{AS_A_SHELL_REPORTS_IT}"
    assert outcome.detail == said
    (tmp_path / "self").mkdir()
    itself, _ = run_with_no_oom_kill(runner, command, tmp_path / "self", KILLED)
    detail = judged(itself, "crash", "SIGKILL", "main").detail
    assert detail == f"{said}; {THE_ONE_PROGRAM_DIED_OF_IT}"


EXIT_137_ITSELF = "import sys; sys.exit(137)"


@pytest.mark.parametrize(
    "form", ["list", "string", "bash-list", "bash-string", "list-exit", "string-exit"]
)
def test_a_main_process_sigkill_reads_the_same_whatever_shell_ran_it(
    runner: LocalRunner, tmp_path: Path, form: str
) -> None:
    """A program that SIGKILLs itself (no OOM kill counted) read `crash SIGKILL` as a list
    command and where bash ran it (bash execs its last command, and the engine reads -9),
    but `error exit 137` where dash forked it and reported 137: one spec, two verdicts by
    the machine's /bin/sh. The program's own record (begun, never ended: it asked for no
    status) says the 137 is its death: `crash SIGKILL` of the main process every way. Its
    own `sys.exit(137)` stays `error` exit 137 both ways."""
    program = [PY, CHILD_CRASH, "killed"]
    expect = KILLED
    if form.endswith("exit"):
        program, expect = [PY, "-c", EXIT_137_ITSELF], EXIT_137
    line = shlex.join(program)
    forms: dict[str, list[str] | str] = {
        "list": program,
        "string": line,
        "bash-list": ["bash", "-c", line],
        "bash-string": f"bash -c {shlex.quote(line)}",
        "list-exit": program,
        "string-exit": line,
    }
    argv = forms[form]
    result, execution = run_with_no_oom_kill(runner, argv, tmp_path, expect)
    if expect is EXIT_137:
        outcome = judged(result, "error", None, "main")
        assert outcome.exit_code == 137
        assert "its own exit status" in (outcome.detail or ""), outcome.detail
    else:
        judged(result, "crash", "SIGKILL", "main")
        # The list form's root died of it; the string form's shell reported it (dash's 137).
        assert execution.returncode in (-9, 137)
        assert execution.program_died == (execution.returncode == 137)


def test_a_pool_worker_sigkilled_before_the_hang_is_named(
    runner: LocalRunner, tmp_path: Path, memory_limit: dict[str, str]
) -> None:
    """The pool replaces a SIGKILLed worker (the OOM killer's) silently and its map() waits
    forever: before, a bare `hang`; the pool's own reaping names the death that lost the
    task."""
    plan = replace(
        attempt_plan([PY, CHILD_CRASH, "pool-kill"], tmp_path, timeout_s=3.0, env=memory_limit),
        expectation=HANG,
    )
    execution = runner.run(plan, tmp_path / "attempt")
    assert execution.timed_out
    outcome = attempt_result(plan, execution, Evidence.read(execution)).ran
    assert outcome is not None
    assert (outcome.kind, outcome.signal) == ("hang", None), outcome
    assert outcome.signature == "hang:after-child-SIGKILL"
    child = outcome.crashed_child
    assert child is not None
    assert (child.signal, child.cmdline) == ("SIGKILL", "ForkPoolWorker-1")
    assert (outcome.detail or "").startswith(f"child pid {child.pid} (ForkPoolWorker-1) died of")


# A DataLoader program's attempt imports torch (about 2 s of CPU) and forks its workers: 15
# to 23 s on a 2-core machine beside 12 busy processes, and past the 30 s timeout at about
# 16 (a SIGKILLed `hang`, returncode -9, where the test meant a worker's death). Its end
# comes with the death, so a long timeout costs nothing where it passes.
TORCH_TIMEOUT_S = 120.0


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_dataloader_worker_sigkilled_is_the_workers_crash_whatever_torch_says(
    runner: LocalRunner, tmp_path: Path, memory_limit: dict[str, str]
) -> None:
    """torch's words for a SIGKILLed worker race with the main process's own failure (a
    ConnectionResetError, 1 attempt in 6 of a worker killed just after it sent a batch; an
    EOFError where it was taking the batch's shared-memory handle from the dead worker, seen
    once in a CI run; "exited unexpectedly", which names no signal). Before, those read as
    the main process's `error`, or as `crash (worker)` with no signal: a spec that expects
    `signal: SIGKILL, where: worker` read not-reproduced. The main process reaped the worker;
    the status it reaped says SIGKILL, and which pid. (The OOM killer's, a real one under a
    memory limit: a SIGKILL no OOM kill explains is a process's, the next test.)"""
    expect = Expectation("crash", signal="SIGKILL", where="worker")
    result, execution = run_attempt(
        runner,
        [PY, str(CHILDREN / "loader_kill.py")],
        tmp_path,
        expect,
        timeout_s=TORCH_TIMEOUT_S,
        env=memory_limit,
    )
    assert not execution.no_oom_kill
    assert execution.returncode == 1
    outcome = judged(result, "crash", "SIGKILL", "worker")
    stderr = execution.stderr_path.read_text()
    # Whichever of torch's three ends the race took: none names the signal.
    assert re.search(
        r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"
        r"|^(ConnectionResetError|EOFError)\b",
        stderr,
        re.MULTILINE,
    ), stderr
    assert "killed by signal" not in stderr
    # Which worker too: item 9 is batch 2's, which torch gives worker 0 of 2.
    assert re.match(
        rf"DataLoader worker 0 \(pid {outcome.pid}\) died of SIGKILL \(Killed\); the main "
        r"process exited 1$",
        outcome.detail or "",
    ), outcome.detail
    assert result.matched, result.mismatches


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_dataloader_worker_sigkilled_with_no_oom_kill_is_no_crash(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """A worker that a process SIGKILLed (its own os.kill here; a `kill -9` from outside
    alike) read `crash SIGKILL (worker)`, the words of an OOM kill, though the kernel
    counted none: as a child's (rule 6), such a SIGKILL is no crash. The main process's
    error is the outcome, `where: worker`, its detail naming the worker and who killed it.

    Which error is torch's race (loader_kill.py's docstring): its check of the workers
    ("exited unexpectedly", a RuntimeError), or, where the main process was reading a batch
    the worker had just sent before the dead worker was reaped, a ConnectionResetError of
    its own (seen once in a full suite on the 2 loaded cores), or an EOFError where it was
    taking the batch's shared-memory handle from the worker (seen once in CI)."""
    expect = Expectation("error", where="worker")
    argv = [PY, str(CHILDREN / "loader_kill.py")]
    result, execution = run_with_no_oom_kill(runner, argv, tmp_path, expect, TORCH_TIMEOUT_S)
    assert execution.returncode == 1
    outcome = judged(result, "error", None, "worker")
    assert outcome.exception in ("RuntimeError", "ConnectionResetError", "EOFError"), outcome
    assert re.match(
        r"exit code 1; DataLoader worker 0 \(pid \d+\) died of SIGKILL \(Killed\), "
        + re.escape(SENT_BY_A_PROCESS)
        + "$",
        outcome.detail or "",
    ), outcome.detail


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_dataloader_worker_segfault_names_the_worker_by_its_index(
    cli: Cli, tmp_path: Path
) -> None:
    """A program's own DataLoader (no harness, so no `worker_exit` event): the
    `child_exit` event its main process's reaping wrote named the pid only, and the crash
    read `a DataLoader worker pid N died of SIGSEGV`, though the worker's start says which
    worker it is (torch's `worker_id`). The event and the report's line now name it."""
    spec = tmp_path / "loader.yaml"
    spec.write_text(
        "reprospec: 1\nname: loader-segv\n"
        f"command: [python, {CHILDREN / 'loader_segv.py'}]\n"
        "expect: {outcome: crash, signal: SIGSEGV, where: worker}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    (attempt,) = result.results()["cells"][0]["attempts"]
    outcome = attempt["outcome"]
    (events,) = result.latest_run().rglob("events.jsonl")
    exits = [
        e for e in map(json.loads, events.read_text().splitlines()) if e["event"] == "child_exit"
    ]
    assert [(e["worker"], e["pid"], e["signal"]) for e in exits] == [
        (1, outcome["pid"], "SIGSEGV")
    ], exits
    line = f"DataLoader worker 1 (pid {outcome['pid']}) died of SIGSEGV (Segmentation fault)"
    assert outcome["detail"].startswith(line), outcome["detail"]
    assert (
        f"\n{line}; the main process exited 1\n" in (result.latest_run() / "report.md").read_text()
    )


CHILD_HANG = str(CHILDREN / "child_hang.py")


# The children that start an interpreter of their own before they reach their frame
# (spawn's bootstrap imports the main module again; `python -c`, `child_hang.py forever`):
# on a loaded machine 3 s found the spawned child still in `<string>:1 in <module>`,
# spawn's own bootstrap (16 busy processes on its core). The others fork, or sleep.
NEW_INTERPRETER = frozenset({"mp-spawn", "string", "subprocess"})


@pytest.mark.parametrize(
    ("mode", "frame"),
    [
        ("mp-fork", "child_hang.py:27 in stuck"),
        ("mp-spawn", "child_hang.py:27 in stuck"),
        ("pool", "child_hang.py:27 in stuck"),
        ("subprocess", "child_hang.py:68 in main"),
        # Its code is `<string>`, its only frames: they are the program's.
        ("string", "<string>:2 in <module>"),
        # No Python stack at all: named by its command.
        ("sleep", "(sleep 600, not a Python program)"),
    ],
)
def test_a_hang_in_a_child_the_main_process_waits_for_is_where_child(
    runner: LocalRunner, tmp_path: Path, mode: str, frame: str
) -> None:
    """The main process only joins its child (or waits for its exit, or for its pool's
    result): `expect: where: child` is met, the child's frame named, and the stacks show no
    frame of reprospec's own sitecustomize (nu62b: `where: main`, its headline frame
    `sitecustomize.py:450 in watched`)."""
    result, _ = run_attempt(
        runner,
        [PY, CHILD_HANG, mode],
        tmp_path,
        expectation=Expectation("hang", where="child"),
        timeout_s=10.0 if mode in NEW_INTERPRETER else 3.0,
    )
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.where, outcome.signature) == ("hang", "child", "hang"), outcome
    assert result.matched, result.mismatches
    from reprospec.outcome.hungstacks import hung_processes

    pids = [p.pid for p in hung_processes(result.stack, source=on_disk)]
    assert outcome.pid in pids[1:], (outcome.pid, pids)  # the child's, not the main process's
    assert f"child pid {outcome.pid} " in (outcome.detail or "")
    assert frame in (outcome.detail or ""), outcome.detail
    assert "sitecustomize" not in (result.stack or "")


def test_a_thread_deadlock_is_the_main_process_and_names_the_threads(
    runner: LocalRunner, tmp_path: Path
) -> None:
    result, _ = run_attempt(
        runner, [PY, CHILD_HANG, "threads"], tmp_path, expectation=HANG, timeout_s=3.0
    )
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.where) == ("hang", "main"), outcome
    from reprospec.outcome.hungstacks import where_stuck

    stuck = where_stuck(result.stack, source=on_disk)
    assert stuck is not None
    described = stuck.describe()
    assert "'s threads were in " in described, described
    assert described.count("child_hang.py:37 in take") == 2, described
    assert "its main thread joining them in " in described, described
    assert described.endswith(" in deadlock"), described


def test_the_sitecustomizes_deaths_are_the_crash_signals() -> None:
    """The sitecustomize (stdlib only) names the signals whose death of a child is a crash
    itself, to write a `signalled` event of each it sends another process: they must be
    core/signals.py's CRASH_SIGNALS, or a kill the program sent would read as a crash, or a
    crash as its doing. Read in a child: importing it installs its hooks."""
    from reprospec.core.signals import CRASH_SIGNALS
    from reprospec.process.stacks import STACKDUMP_DIR

    code = "import signal, sitecustomize as s; print(*(signal.Signals(n).name for n in s._DEATHS))"
    done = subprocess.run(
        [PY, "-S", "-c", code],
        env={**os.environ, "PYTHONPATH": str(STACKDUMP_DIR)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert set(done.stdout.split()) == set(CRASH_SIGNALS)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_a_torchrun_rank_s_exception_is_the_failure_not_torchruns(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """A real torchrun of two ranks, rank 1 raising: the launcher ends with its own
    ChildFailedError, which read as the outcome, so `exception: RuntimeError` (what capture
    writes from the ticket, what the reporter saw) never matched."""
    script = tmp_path / "work" / "train.py"
    script.parent.mkdir()
    script.write_text(
        "import os\n"
        "if os.environ['RANK'] == '1':\n"
        "    raise RuntimeError('CUDA error: device-side assert triggered')\n"
    )
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    expect = Expectation("error", exception="RuntimeError", message="device-side assert")
    argv = [torchrun, "--nproc_per_node=2", "train.py"]
    result, _ = run_attempt(runner, argv, tmp_path, expect, timeout_s=120)
    outcome = judged(result, "error", None, "child")
    assert "local rank 1 raised it (torchrun ended with ChildFailedError" in (outcome.detail or "")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_a_torchrun_rank_that_exits_first_is_the_cause_not_its_peers_error(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """A real torchrun of two ranks (gloo): rank 1 `sys.exit(3)`, rank 0's next all-reduce
    then `RuntimeError: Connection closed by peer`, printed before torchrun saw rank 1's
    exit. That traceback read as rank 1's: `RuntimeError (child)`, "local rank 1 raised it"."""
    script = tmp_path / "work" / "train.py"
    script.parent.mkdir()
    script.write_text(
        "import sys, time, torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(2)\n"
        "dist.all_reduce(t)\n"
        "if dist.get_rank() == 1:\n"
        "    sys.exit(3)\n"
        "dist.all_reduce(t)\n"
        "time.sleep(30)\n"
    )
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    expect = Expectation("error", exit_code=1)
    argv = [torchrun, "--nproc_per_node=2", "train.py"]
    result, _ = run_attempt(runner, argv, tmp_path, expect, timeout_s=120)
    outcome = judged(result, "error", None, "child")
    assert outcome.exception is not None
    assert outcome.exception.endswith("ChildFailedError"), outcome
    assert "local rank 1 failed first: it exited with code 3" in (outcome.detail or "")
    # Rank 0's error, where it raised one before torchrun ended it, is said as what followed.
    assert "raised it" not in (outcome.detail or ""), outcome.detail


# The middle process of a pipeline crashes; pipefail makes the shell's status its 139.
PIPELINE = (
    "set -o pipefail; seq 1 100000 | {py} -c 'import ctypes, sys; sys.stdin.readline(); "
    "ctypes.string_at(0)' | cat > /dev/null"
)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_pipelines_process_that_crashed_is_the_child_not_the_main_one(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """`set -o pipefail; a | b | c` where b segfaults: the shell exits 139, which read
    `crash SIGSEGV` of the main program; bash's report lists b as a process of the
    pipeline after its first, with its pid and command: the crash is that child's."""
    command = PIPELINE.format(py=shlex.quote(PY))
    result, execution = run_attempt(runner, ["bash", "-c", command], tmp_path)
    assert execution.returncode == 139
    outcome = crashed(result)
    assert outcome.pid is not None
    assert (outcome.cmdline or "").startswith(f"{PY} -c 'import ctypes, sys; "), outcome
    assert (outcome.detail or "").startswith(
        f"exit status 139 = 128 + SIGSEGV, as a shell reports it; child pid {outcome.pid} ("
    ), outcome.detail
    assert (outcome.detail or "").endswith(A_PROCESS_OF_THE_PIPELINE), outcome.detail


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_pipelines_first_process_that_crashed_is_the_main_one(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """`set -o pipefail; python train.py 2>&1 | tee log.txt`, the most common pipeline of
    all, whose python segfaults: bash's report lists it as the pipeline's first process,
    the command's program, which read `where: child`. It is the main process's crash, its
    pid and command said in the detail."""
    crash = f"{shlex.quote(PY)} -c 'import ctypes; ctypes.string_at(0)'"
    command = f"set -o pipefail; {crash} 2>&1 | tee log.txt"
    result, execution = run_attempt(runner, ["bash", "-c", command], tmp_path)
    assert execution.returncode == 139
    outcome = judged(result, "crash", "SIGSEGV", "main")
    detail = outcome.detail or ""
    assert detail.startswith("exit status 139 = 128 + SIGSEGV, as a shell reports it; pid "), detail
    assert f" ({PY} -c 'import ctypes; ctypes.string_at(0)' 2>&1), " in detail, detail
    assert detail.endswith(THE_PIPELINES_PROGRAM), detail


def test_a_scripts_last_command_that_crashed_is_still_the_main_one(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """No pipeline: a script whose program crashed exits 139 as bash reports it, and that
    program is the main one (rule 4), as before."""
    command = f"{shlex.quote(PY)} -c 'import ctypes; ctypes.string_at(0)'; exit $?"
    result, execution = run_attempt(runner, ["bash", "-c", command], tmp_path)
    assert execution.returncode == 139
    judged(result, "crash", "SIGSEGV", "main")
