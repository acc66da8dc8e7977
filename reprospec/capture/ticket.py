"""A ticket's pasted text, read for what a spec needs: the failure, the machine, the command.

Tickets hold what people paste: a Python traceback (often chained, sometimes
prefixed by a logger or `[rank0]:`), a faulthandler dump, the shell's
`Segmentation fault (core dumped)`, torch's "DataLoader worker (pid N) is
killed by signal", a CUDA error, a gdb session, pytest's or gtest's output,
progress bars, `collect_env` and `pip freeze` blocks, and maybe the command
(`$ python train.py ...`). `read_ticket` turns all of it into one `Ticket`:
the failure as an expectation would state it, with the evidence for each part
(`evidence`), and what the text does not say left as None, for the writer to
mark as a placeholder.
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import NamedTuple

from reprospec.capture.datafiles import MACHINE_FOLDERS, in_machine_folders
from reprospec.capture.envblock import Machine, parse_machine
from reprospec.capture.timebound import unbound
from reprospec.core.frozen import frozen
from reprospec.core.logtext import without_escapes
from reprospec.core.pysource import UNREADABLE
from reprospec.core.pythonargs import (
    ABSOLUTE_PATH,
    DRIVE,
    NO_PROGRAM,
    is_interpreter_file,
    is_python,
    python_program,
)
from reprospec.core.redact import credential_spans
from reprospec.core.results import bare_type
from reprospec.core.shellline import (
    LAUNCHERS,
    RUNS_ANY,
    SHELLS,
    launched_at,
    program_name,
    runs_python,
)
from reprospec.core.signals import (
    CRASH_SIGNALS,
    canonical_signal,
    exit_status_signal,
    signal_from_description,
    signal_from_words,
    signal_name,
)
from reprospec.core.words import guessed_from_pytest, plural, programs_name
from reprospec.outcome.children import (
    RANK_LINE,
    RANK_PREFIX,
    RankException,
    elastic_exit,
    launcher_failed,
    pipeline_death,
    rank_exception,
)
from reprospec.outcome.cxxterminate import uncaught_cxx
from reprospec.outcome.pytestreport import crashed_test, first_failure
from reprospec.outcome.tracebacks import (
    EXCEPTION_LINE,
    FATAL_BODY,
    FATAL_HEADER,
    FRAME_AT,
    RICH_BOX_CORNERS,
    STACK_FRAME,
    PythonException,
    fatal_errors,
    headline,
    parse_chain,
    sanitizer_report,
    unboxed,
)
from reprospec.outcome.watchdog import (
    PYTEST_SESSION_END,
    PYTEST_TIMEOUT_RULE,
    TIMEOUT_HEADER,
    PytestTimeout,
    pytest_timeout_dump,
    pytest_timeout_failure,
    pytest_timeout_method,
    pytest_timeout_seconds,
    pytest_timeout_worker,
)
from reprospec.plan.shellwords import shell_script
from reprospec.plan.workfiles import SITE_PACKAGES, declared_script, is_environment_folder
from reprospec.plan.wrappers import program_file, program_start
from reprospec.spec.presets import PRESETS, PYTEST_NODE_ID, detect, output_lines

# What a CI log adds to the lines it shows, that no program printed: colours (terminal
# escapes, logtext.without_escapes: pytest's red `FAILED`, the bold of its header) and the
# clock of each line (GitHub Actions' `2026-12-01T10:00:02.1234567Z `, Jenkins'
# `[2026-12-01T10:00:02.123Z] `, a logger's `2026-12-01 10:00:02,123 `). Read with them, a
# pasted CI log lost its pytest report (`FAILED tests/t.py::\x1b[1mtest_x\x1b[0m`), its
# header's pins and its command.
_CI_CLOCK = re.compile(
    r"^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?[ \t]?",
    re.MULTILINE,
)
# Prefixes loggers and launchers put before every line of a child's output (a rank's,
# `[rank0]: `, read by the outcome's RANK_PREFIX in `_unprefixed`).
_LINE_PREFIXES = re.compile(
    r"^(?:\d+: |E   ?(?=\S| )|>\s?(?=Traceback|\s|\w)"
    # torch's `ERROR: Unexpected segmentation fault encountered in worker.` ends in a NUL,
    # pasted as a space before the next line's `Traceback`: the chain's cause was lost.
    r"|[ \x00](?=Traceback \(most recent call last\):))"
)
_PYTEST_E = re.compile(r"^E {1,7}")
_WORKER_KILLED = re.compile(
    r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: (?P<desc>[^.\n]+)"
)
_WORKER_EXITED = re.compile(r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly")
# torch's own handler in a worker (torch/csrc/DataLoader.cpp) says which signal killed it,
# before the main process's "exited unexpectedly", which says none.
_WORKER_REPORT = re.compile(
    r"ERROR: Unexpected (?P<what>segmentation fault|bus error|floating-point exception)"
    r" encountered in worker\."
)
_WORKER_REPORT_SIGNALS = {
    "segmentation fault": "SIGSEGV",
    "bus error": "SIGBUS",
    "floating-point exception": "SIGFPE",
}
# The Mach exceptions of a crash, as the signal the same fault raises on Linux, where the
# spec runs (as faulthandler's Windows exceptions are read). EXC_CRASH names its signal in
# its detail (`EXC_CRASH (SIGABRT)`); one that names none (`EXC_CRASH (code=0,
# subcode=0x0)`) says no signal to expect.
_LLDB_EXCEPTIONS = {
    "EXC_BAD_ACCESS": "SIGSEGV",
    "EXC_BAD_INSTRUCTION": "SIGILL",
    "EXC_ARITHMETIC": "SIGFPE",
}
# A trap instruction's (`__builtin_trap`, Swift's and Rust's traps): `brk` on arm64, which
# Linux aarch64 raises as SIGTRAP, but `ud2` on x86_64, SIGILL (an Intel Mac's
# EXC_BAD_INSTRUCTION): a crash whose signal depends on the machine the spec runs on.
_LLDB_TRAP = "EXC_BREAKPOINT"
_LLDB_TRAP_SIGNALS = "SIGTRAP on Linux aarch64, SIGILL on x86_64: no signal expected"
# Where a pasted failure begins: the prompt line nearest before it ran it (lldb's stop of
# a Mach exception only where it is read as a signal, or a trap's crash).
_LLDB_CRASHES = "|".join([*_LLDB_EXCEPTIONS, _LLDB_TRAP])
_FAILURE_START = re.compile(
    r"Traceback \(most recent call last\)|Fatal Python error|ERROR: Unexpected \w"
    rf"|received signal SIG|stop reason = (?:signal SIG|(?:{_LLDB_CRASHES})\b"
    r"|EXC_CRASH \([^)\n]*\bSIG)|Segmentation fault|Bus error|Timeout \(\d"
)
# A command run to show the machine: `python -m torch.utils.collect_env`, `pip list`,
# `python -c "import torch; print(torch.__version__)"`, `transformers-cli env`.
_MACHINE_REPORT = re.compile(
    r"collect_env|__version__|(?:^|\s)-m +pip\b|(?:^|[\s/])(?:pip3?|conda) +(?:list|freeze)\b"
    r"|(?:^|[\s/])(?:transformers-cli|diffusers-cli|huggingface-cli|accelerate) +env\b"
    r"|nvidia-smi|rocm-smi|rocminfo"
)
# strsignal's words for the signals that end a program, as a shell and srun print them.
_SIGNAL_WORDS = (
    r"Segmentation fault|Bus error|Aborted|Illegal instruction|Floating point exception"
    r"|Killed|Trace/breakpoint trap"
)
_SHELL_SIGNAL = re.compile(
    rf"^(?:.*?: line \d+: +(?P<pid>\d+) +)?(?P<desc>{_SIGNAL_WORDS})"
    r"(?: +\(core dumped\))?(?P<rest> +.*)?\s*$"
)
# Slurm's srun, of a task a signal ended (`srun: error: gpu-node-07: task 0: Segmentation
# fault (core dumped)`, in a job's `slurm-4242.out`): strsignal's words, as bash's. A Slurm
# log of a segfault said `no failure found`.
_SRUN_SIGNAL = re.compile(
    rf"^srun: error: \S+: tasks? [\d,\-]+: (?P<desc>{_SIGNAL_WORDS}|Out Of Memory)"
    r"(?: \(core dumped\))?\s*$"
)
# slurmstepd's words when the job's time limit ended it: the program had not ended, a hang
# (`*** JOB 4243 ON gpu-node-07 CANCELLED AT 2026-12-06T10:15:02 DUE TO TIME LIMIT ***`).
_SLURM_TIME_LIMIT = re.compile(
    r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*"
)
# GitHub Actions' end of a step past its `timeout-minutes`, or of a job past its own: the
# program ran on to the bound, a hang, as Slurm's time limit is. Not its `The operation
# was canceled.` alone, which a person's cancel and a fail-fast matrix print as well.
_GHA_TIME_LIMIT = re.compile(
    r"^(?:##\[error\]|Error: )"
    r"(?:The action '[^'\n]*' has timed out after (?P<minutes>\d+) minutes?\."
    r"|The job (?:running on runner .* )?has exceeded the maximum execution time of "
    r"(?:(?P<job>\d+) minutes?|(?P<job_time>(?:\d+h)?\d+m\d+s))\.?)",
    re.M,
)
# The newer job wording's Go duration (`6h0m0s`).
_GO_DURATION = re.compile(r"(?:(?P<h>\d+)h)?(?P<m>\d+)m(?P<s>\d+)s")


def _ci_minutes(limit: re.Match[str]) -> int:
    """The minutes a `_GHA_TIME_LIMIT` line says (its seconds rounded up)."""
    if limit["minutes"] or limit["job"]:
        return int(limit["minutes"] or limit["job"])
    time = _GO_DURATION.fullmatch(limit["job_time"])
    assert time is not None  # the line's own pattern
    return int(time["h"] or 0) * 60 + int(time["m"]) + (int(time["s"]) > 0)


# zsh's words for a job a signal ended (macOS's default shell): `zsh: segmentation fault
# python bench.py`, `zsh: abort ...`, and its job report, `[1]    12345 segmentation fault
# (core dumped)  python ...` (`[1]  + 12345 ...`). Its own texts, not strsignal's: bash's
# `Segmentation fault` alone was read, and such a ticket said `no failure found`.
_ZSH_SIGNAL = re.compile(
    r"^(?:zsh: |\[\d+\]\s+(?:[-+]\s+)?\d+\s+)(?P<desc>segmentation fault|bus error|abort"
    r"|illegal hardware instruction|floating point exception|killed|trace trap)"
    r"(?: \(core dumped\))?(?:\s+\S.*)?$"
)
_ZSH_SIGNALS = {
    "segmentation fault": "SIGSEGV",
    "bus error": "SIGBUS",
    "abort": "SIGABRT",
    "illegal hardware instruction": "SIGILL",
    "floating point exception": "SIGFPE",
    "killed": "SIGKILL",
    "trace trap": "SIGTRAP",
}
# fish's: `fish: Job 1, 'python bench.py' terminated by signal SIGSEGV (Address boundary
# error)` (an older fish: `fish: "python bench.py" terminated by signal SIGSEGV (...)`).
_FISH_SIGNAL = re.compile(r"^fish: .*\bterminated by signal (?P<signal>SIG[A-Z0-9]+)\b")
# torchrun's (torch.distributed.elastic's) report of a rank that failed: its `exitcode: -6`
# is the rank's, a child of the launcher, which a live run reports as `where: child`.
_ELASTIC_RANK = re.compile(
    r"\bChildFailedError\b|Root Cause \(first observed failure\)|local_rank: \d+ \(pid: \d+\)"
)
# GNU timeout's status when it ended its program at the bound.
_TIMED_OUT = 124
# A timeout wrapper's words that send SIGKILL, so that its end is 137, not 124.
_TIMEOUT_KILLS = re.compile(
    r"(?:^|\s)(?:-s ?|--signal[= ])(?:SIG)?(?:KILL|9)\b|(?:^|\s)(?:-k|--kill-after)\b"
)
# The shell's status said by `echo $?` (`echo "exit: $?"`): a command of its own after the
# failing one (`$ echo $?`, its output the next line), or run after it on one line
# (`$ timeout 30 python x.py; echo $?`, its output the last line before the next prompt).
_ECHO_STATUS = re.compile(r"^\s*(?:;|&&|\|\|)?\s*echo\b[^;&|]*\$\?[^;&|]*$")
# The status alone on its line (`124`), or after a word and `:`/`=` (`exit: 124`, `rc=124`):
# any number that ends a line was one, the program's own `Processed 100` read as exit 100.
_STATUS_SAID = re.compile(r"^\s*(?:[A-Za-z][\w ]{0,30}?\s*[:=]\s*)?(?P<code>\d{1,3})\s*$")
# A reporter's words that the program hangs, where the log shows no stack, signal or
# exception of it: "it hangs forever", "gets stuck at Loading checkpoint", "freezes at
# step 3", "never returns", "it hung at step 3". Verbs only: the adjective's "frozen
# embeddings" (and debugpy's "frozen modules are being used"), the noun's "the DDP
# deadlock fix" said a ticket with no failure hung; "deadlock(s|ed)" and a bare "hung"
# count only after a subject ("it deadlocks", "the job hung", "is hung") or where a place
# follows ("hung at"). Denied as _DENIED denies ("it no longer hangs"), and not where a
# modal says it only might ("without the fix it would hang").
_HANGS = re.compile(
    r"\b(?:hangs?|hanging|freez(?:es|ing)|(?:gets?|got|is|was|stays?) stuck"
    r"|stuck (?:at|in|on|forever)|never (?:returns|finishes|ends|exits"
    r"|completes|terminates)"
    r"|(?:(?:it|which|that|process|program|job|script|training|run|code|everything"
    r"|is|was|got|gets|`)\s+(?:\w+ly\s+)?)(?:hung|deadlock(?:s|ed))"
    r"|hung (?:at|in|on|forever|for|after|during|until|indefinitely|there|here))\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:would|could|might|may|should)(?:\s+(?:\w+ly|not|never|also|still|just))?"
    r"(?:\s+have|'ve)?\s+$",
    re.IGNORECASE,
)
# Lines that are no prose: a traceback's (indented, `File ...` at the margin as IPython's),
# pytest's header naming its plugins (`plugins: xdist-3.8.0, flaky-3.8.1`).
_NOT_PROSE = (" ", "\t", "File ", "plugins: ")
# A program's log line (`0.00s - Debugger warning: ...`, `2026-12-06 10:15:02 INFO ...`,
# `[INFO] ...`, `WARNING: ...`): its words are the program's, not the reporter's.
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d[\d:.,/T-]*s?\]?\s+(?:-|\||\[|\d|[A-Z]{4,}\b)"
    r"|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL)\b)"
)
# subprocess's word of a child's death: `CalledProcessError: Command '['./op']' died with
# <Signals.SIGSEGV: 11>.`, a crash in a child as a live run reports it (outcome/children.py).
_DIED_WITH = re.compile(r"\bdied with <Signals\.(?P<signal>SIG[A-Z0-9]+): \d+>")
_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?(?: with)? (?:code|status)|returned non-zero exit status|exitcode)"
    r"[:= ]+(?P<code>-?\d+)",
    re.IGNORECASE,
)
# A reporter's words that the failure comes and goes: "roughly 1 in 3 runs", "30% of the
# time", "intermittent", "flaky", "sometimes". One attempt of a spec of such a ticket
# passes by chance and reads not-reproduced; the skeleton repeats it and bounds a rate.
_FLAKY = re.compile(
    r"\b\d+\s+(?:in|out\s+of)\s+(?:every\s+)?\d+\s+(?:runs?|times|attempts|tries|trials)\b"
    r"|\b\d{1,3}\s*%\s+of\s+(?:the\s+)?(?:runs?|time|attempts|tries)\b"
    r"|\b(?:intermittent(?:ly)?|flaky|sporadic(?:ally)?|occasionally|sometimes|not\s+always"
    r"|non-?deterministic(?:ally)?|randomly)\b",
    re.IGNORECASE,
)
# Words just before a flaky word (or a hang word) that deny it: "Not flaky", "not just
# sometimes", "it is not only intermittent", "never randomly", "it no longer hangs", "it
# doesn't hang". Without them the denial read as the claim.
_DENIED = re.compile(
    r"\b(?:not|no(?:\s+longer)?|never|isn'?t|wasn'?t|aren'?t|nor|doesn'?t|didn'?t|won'?t)"
    r"\s+(?:just\s+|only\s+|merely\s+|even\s+"
    r"|really\s+|at\s+all\s+|a\s+)?$",
    re.IGNORECASE,
)
# A reporter's words that it fails every run: a later one overrides an earlier flaky word
# ("About 1 in 3 runs? No, every time actually"). "not always" is a flaky word, not these.
_EVERY_TIME = re.compile(
    r"(?<!not )(?<!n't )\b(?:every\s+(?:single\s+)?(?:time|run|attempt)|each\s+time|always"
    r"|consistently|reliably|(?<!non)(?<!non-)deterministic(?:ally)?|100\s*%\s+of\s+(?:the\s+)?(?:runs?|time))\b",
    re.IGNORECASE,
)
# A variable the reporter set, said in prose: "MALLOC_ARENA_MAX=2 exported in my shell",
# "with CUDA_LAUNCH_BLOCKING=1 set", `export NCCL_P2P_DISABLE=1`. Upper-case names of two
# or more characters (not `x=1`, not `N=3` of a formula); `==` is a pin, not a setting.
_PROSE_SETTING = re.compile(
    r"(?<![\w$.=/-])(?P<name>[A-Z][A-Z0-9_]+)="
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s=`'\"][^\s`'\"]*)"
)
# A program's advice to set one (torch's `For debugging consider passing
# CUDA_LAUNCH_BLOCKING=1.`, Hydra's `Set the environment variable HYDRA_FULL_ERROR=1 for a
# complete stack trace.`, dynamo's `Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for
# more information`, NCCL's `run with NCCL_DEBUG=INFO for details`): the run had it unset,
# so it is no setting of the reporter's.
_ADVICE = re.compile(
    r"\bconsider (?:passing|setting|using)\b|\bset the environment variable\b"
    r"|\b(?:try|you (?:can|could|may|might|should)) (?:set|pass|export|rerun|run)"
    r"|\bfor (?:more |further )?(?:information|info|details)\b",
    re.IGNORECASE,
)
# faulthandler's header run on after pytest's progress on the same line, as a terminal
# shows stderr after stdout: `test_x.py .Fatal Python error: ...`, xdist's `.Fatal ...`, `-v`'s
# `test_x.py::test_y Fatal Python error: ...`, xdist's `[gw0] [ 66%] PASSED t.py::a Fatal ...`.
_FATAL_RUN_ON = re.compile(
    r"^(?P<progress>(?:\[gw\d+\] |\S*\.py\b).*?|[.sFExXR]+)(?=Fatal Python error: )", re.M
)
# A live session's `Thread 1 "python" received signal SIGSEGV`, and a core's (`gdb PROG
# core`): `Program terminated with signal SIGSEGV, Segmentation fault.`
_GDB_SIGNAL = re.compile(
    r"(?:(?:Thread (?P<thread>\d+) .*?|Program) received|Program terminated with) signal "
    r"(?P<signal>SIG[A-Z0-9]+)",
    re.IGNORECASE,
)
# A core's thread that took the signal (`[Current thread is 1 (Thread 0x7f... (LWP 11682))]`),
# and a thread's backtrace's header in `thread apply all bt` (`Thread 1 (Thread 0x7f... (LWP
# 11682) "mt"):`), which prints the threads from the last one made to the first.
_GDB_CURRENT_THREAD = re.compile(r"^[ \t]*\[Current thread is (?P<thread>\d+) ", re.MULTILINE)
_GDB_FRAME = re.compile(
    r"^#(?P<n>\d+) +(?:0x[0-9a-f]+ in )?(?P<function>.+?)(?: (?:at|from) (?P<where>\S+))?$"
)
# lldb's stop, a live run's or a core's (`lldb -c core`): `* thread #1, name = 'crash', stop
# reason = signal SIGSEGV: invalid address (fault address: 0x0)`, on macOS a Mach exception,
# `stop reason = EXC_BAD_ACCESS (code=1, address=0x0)`. A breakpoint's stop (`stop reason =
# breakpoint 1.1`) or one to look at a live process (`signal SIGSTOP`) is no crash.
_LLDB_STOP = re.compile(
    r"\bstop reason = (?:signal (?P<signal>SIG[A-Z0-9]+)"
    r"|(?P<exception>EXC_[A-Z_]+)(?: \((?P<detail>[^)\n]*)\))?)"
)
# lldb's frame: `  * frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at
# strlen-evex.S:79`, `frame #5: 0x0000555555555081 crash`_start + 33`, an inlined one
# `_ctypes.so`string_at [inlined] string_at(size=-1, ptr=0x0) at _ctypes.c:5564:47`, one of
# no symbol the address alone.
_LLDB_FRAME = re.compile(r"^(?:\* )?frame #(?P<n>\d+): 0x[0-9a-fA-F]+(?: (?P<rest>.+))?$")
# gdb's `Starting program: /usr/bin/python3 x.py --flag` names the command it ran; a
# core's `Core was generated by `./tool --count 4'.` the one that dumped it. The kernel
# keeps the core's command line in 80 bytes (ELF_PRARGSZ), so one of 79 characters or more
# may be cut short: no command then, where a cut one named another run.
_GDB_START = re.compile(
    r"^(?:Starting program: (?P<command>.+)|Core was generated by `(?P<core>.{1,78})'\.)$"
)


def _core_line_unsure(core: str | None) -> bool:
    """Whether a core's command line (`Core was generated by`) cannot be read back as a
    command: the kernel joins argv with blanks, its quoting lost, so `python3 -c import m;
    m.call()` became `-c import 'm;' 'm.call()'` (a SyntaxError run). An interpreter's own
    `-c` (before any script or `-m`), a shell's `-c`, or a shell metacharacter names no
    command, as a line cut at 79 characters does (review); a program's own `-c` (pytest's
    `-c ci.ini`) loses nothing."""
    if core is None:
        return False
    if re.search(r"[;|&<>]", core) is not None:
        return True
    words = core.split()
    # Past a launcher (`uv run`, `timeout 60`, `env`): the first interpreter or shell it
    # starts is the one whose `-c` loses its quoting (review 14).
    for at, word in enumerate(words):
        if is_python(word):
            return python_program(words[at + 1 :]).kind == "code"
        if word.rsplit("/", 1)[-1] in SHELLS:
            # `-c`, `-lc`, `-ec`, past options and their arguments (`-o pipefail -c`), as
            # plan/shellwords reads a command's shell: a reader of flags alone stopped at
            # `pipefail` and took `bash -o pipefail -c python x.py` for a command, which
            # runs `python` with $0 set to x.py.
            return shell_script(words[at:], SHELLS) is not None
    return False


# `py-spy dump --pid N`, what a hang's ticket pastes: `Process 5512: python main.py ...`,
# `Python v3.10.13 (/usr/bin/python3.10)`, then each thread, `Thread 5512 (idle):
# "MainThread"`, and its frames innermost first, `    wait (threading.py:320)`.
_PYSPY_PROCESS = re.compile(r"^Process (?P<pid>\d+): (?P<command>.+)$")
_PYSPY_THREAD = re.compile(r"^Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active)[^)]*\)")
# A frame, Python's or (`--native`) C's: `    PyThread_acquire_lock_timed
# (libpython3.11.so.1.0)`, `    0x7f6f3bea3f16 (libc.so.6)` with no line; with debug info
# `    PyThread_acquire_lock_timed (thread_pthread.h:483)`; a C++ template's name has
# spaces and parentheses (`std::_Function_handler<void (), F>::_M_invoke (libtorch.so)`).
_PYSPY_FRAME = re.compile(r"^\s+(?P<function>\S.*) \((?P<file>[^()]+?)(?::(?P<line>\d+))?\)$")
# The suffixes of a native frame's file: C, C++, CUDA, Rust, assembly sources and headers.
_NATIVE_SOURCE = frozenset(
    {"c", "h", "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "inl", "cu", "cuh", "rs", "s"}
)

_SHARED_LIBRARY = re.compile(r"\.(?:so(?:\.\d+)*|dll|dylib)$", re.I)


def _pyspy_python(file: str, line: str | None) -> bool:
    """Whether a py-spy frame of `file` (and `line`, None where it printed none) is
    Python's: it has a line and its file is no native source nor a shared library."""
    if line is None or _SHARED_LIBRARY.search(file) is not None:
        return False
    return file.rpartition(".")[2].lower() not in _NATIVE_SOURCE


# A command quoted in prose: "I run `python train.py --x 1` and ...".
_QUOTED = re.compile(r"`(?P<command>[^`\n]+)`")
# faulthandler.dump_traceback_later's header: `Timeout (0:05:00)!`, a timeout of a fraction
# of a second `Timeout (0:00:00.500000)!`, which was read as no failure at all. The
# classifier's own (outcome/watchdog.py), so a live run and a log of it read one hang.
_FAULTHANDLER_TIMEOUT = TIMEOUT_HEADER
# A thread's line of a faulthandler dump: `Thread 0x00007f1a2b3fe6c0 (most recent call
# first):`, the one that took the signal `Current thread 0x...`; words between the id and
# `(most recent ...` (a thread's name, where a Python writes one) are allowed.
_DUMP_THREAD = re.compile(
    r"^(?:(?P<current>Current thread)|Thread) (?P<id>0x[0-9a-fA-F]+)\b.*\(most recent call first\):"
)
_CUDA_ERROR = re.compile(
    r"CUDA error: (?P<what>[^\n]+)|CUDA out of memory|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+"
    r"|NCCL error|device-side assert triggered|illegal memory access"
)
# The kernel's words for an OOM kill (dmesg, journalctl -k: `Out of memory: Killed process
# 4242 (python)`, `Memory cgroup out of memory: ...`, `oom-kill:constraint=...`), and a
# container's state (`"OOMKilled": true`, Kubernetes' `Reason: OOMKilled`).
# The first that matches is said: the line naming the process before the constraint's.
_OOM_KILLED = (
    re.compile(r"(?:Memory cgroup )?[Oo]ut of memory: Kill(?:ed)? process \d+ \([^)\n]*\)"),
    re.compile(r"\boom-kill:\S{0,60}|\bOOMKilled\b"),
    # slurmstepd's, of the job's cgroup: `Detected 1 oom_kill event in StepId=4244.0`.
    re.compile(r"\bDetected \d+ oom_kill events? in StepId=\w+(?:\.\w+)*"),
)
_FRAME = STACK_FRAME
_TRACEBACK_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_PYTEST_FAILED = re.compile(
    rf"^FAILED (?P<test>{PYTEST_NODE_ID})(?: - (?P<type>[A-Za-z_][\w.]*)(?:: (?P<message>.*))?)?$"
)
_PYTEST_CRASHED = re.compile(rf"^(?P<test>{PYTEST_NODE_ID}) (?:FAILED|ERROR)\b")
_GTEST_RUN = re.compile(r"^\[ RUN +\] (?P<test>\S+)")
_GTEST_FAILED = re.compile(r"^\[ +FAILED +\] (?P<test>[\w./]+)")
# A command the reporter ran: `$ python train.py ...`, `(env) user@host:~$ torchrun ...`.
_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:[\w.@-]+(?::[^$#]*)?)?[$#>] +(?P<command>.+)$")
# The programs a ticket's command runs: Python, the launchers (core/shellline.py
# `LAUNCHERS`, the one list: the console scripts Python environments install that no project
# ships in its own `bin`, srun and mpirun) and the shells. Of the launchers, those that are
# programs of their own, no environment's (uv, which its installers put in a `bin` of their
# own: `~/.cargo/bin/uv`).
_LAUNCHERS_BY_NAME = frozenset({"uv"})
_PROGRAMS = ("python", "python3", *sorted(LAUNCHERS), "bash", "sh")
# A line that names none of them as a word runs none: read before its shell split, which
# every line of a 100k-line log paid (half of a 42 s capture --from-log).
_MAY_RUN = re.compile(r"\b(?:" + "|".join(_PROGRAMS) + r")")
# Windows' prompts, PowerShell's `PS C:\Users\me\proj> python .\train.py` and cmd's
# `C:\proj>python train.py`: their paths' backslashes are the reader's slashes (shlex took
# `.\train.py` for `.train.py`).
_WINDOWS_PROMPT = re.compile(rf"^\s*(?:\(\S+\)\s*)?(?:PS )?{DRIVE}\\[^>\n]*> *(?P<command>.+)$")
# PowerShell's call operator before the program it runs (`& .\venv\Scripts\python.exe`).
_POWERSHELL_CALL = re.compile(r"^&\s*")
# A line of a script's trace (`bash -x`, `set -x`): the command the shell ran, after PS4's
# `+ ` (`++ ` in a command substitution), as a prompt line shows one typed: a job script's
# `+ srun python train.py` was no command, and the skeleton's stood in a TODO.
_XTRACE = re.compile(r"^\++ (?P<command>\S.*)$")
# GitHub Actions' header of a step (`Run python train.py --lr 1e-3`, in a raw log after
# `##[group]`), which then echoes the step's script and its `shell: /usr/bin/bash -e {0}`.
_GHA_RUN = re.compile(r"^(?P<group>##\[group\])?Run (?P<command>\S.*)$")
_GHA_SHELL = re.compile(r"^\s*shell: \S")
# How far below its header GitHub's `shell:` line may be: the script it echoes comes between.
_GHA_SCRIPT_LINES = 40
# A Windows prompt's `python3.10.exe` says its version as `python3.10` does.
_VERSIONED_PYTHON = re.compile(r"^python(?P<version>3\.\d+)(?:\.[eE][xX][eE])?$")
# Where a frame's function or file says what a training program was doing.
_PHASE_FRAMES = (
    (re.compile(r"sanity_check"), "sanity_check"),
    (re.compile(r"validation_step|evaluation_loop|_evaluation|validate\b|val_loop"), "validation"),
    (re.compile(r"test_step|test_loop"), "test"),
    (re.compile(r"predict_step|prediction_loop"), "predict"),
    (re.compile(r"training_step|training_epoch_loop|fit_loop|train_loop|optimizer_step"), "train"),
)


@frozen
class Failure:
    """The failure a ticket shows, as an `expect` would state it; None where it is silent."""

    outcome: str | None = None  # "error", "crash", "hang"
    signal: str | None = None
    exception: str | None = None
    message: str | None = None
    exit_code: int | None = None
    where: str | None = None  # "main", "worker", "child"
    phase: str | None = None
    step: int | None = None
    chain: tuple[PythonException, ...] = ()


@frozen
class ThreadStack:
    """One thread of a faulthandler dump that names no current thread (`Timeout (0:05:00)!`,
    dump_traceback_later's, which its watchdog thread writes): each thread's own stack,
    `file:function` innermost last. Joined into one, a thread's `join` read as the caller
    of another thread's `_worker`."""

    thread: str  # its id as the dump says it, `0x00007f1a2c9ff740`
    frames: tuple[str, ...]
    # The thread that runs the program: its outermost frame is the script's `<module>`, or
    # runpy's of `python -m`. False for every thread where no one frame tells it.
    main: bool = False


@frozen
class Ticket:
    """What a pasted ticket says. `evidence`: one line per conclusion, saying where it came from."""

    failure: Failure
    machine: Machine
    command: str | None = None
    presets: tuple[str, ...] = ()
    native_frames: tuple[str, ...] = ()
    python_frames: tuple[str, ...] = ()
    cuda_error: str | None = None
    test: str | None = None
    evidence: tuple[str, ...] = field(default=())
    # The reporter's words that it fails only sometimes (`1 in 3 runs`), or None.
    flaky: str | None = None
    # The test a pytest-xdist worker crashed running (its `where` is `child`), or None.
    xdist_crash: str | None = None
    # The `NAME=value` settings the prose says (not the command line's), in the order said.
    settings: tuple[tuple[str, str], ...] = ()
    # The variables GitHub Actions' `Run` step of the command lists under its `env:` (the
    # workflow's, not setup-python's paths of the runner), in its order.
    step_env: tuple[tuple[str, str], ...] = ()
    # The minutes GitHub Actions said a step or job ran before it ended it (`has timed out
    # after 5 minutes`), and whose limit that was: `step` (its timeout-minutes, the bound
    # the hang was seen at) or `job` (the job's, its earlier steps' minutes included, most
    # often GitHub's default 360).
    ci_minutes: int | None = None
    ci_limit: str | None = None
    # faulthandler's Windows exception the signal was read from (`access violation`).
    windows_fault: str | None = None
    # The kernel's (or a container's) words that the OOM killer killed a process, or None.
    oom_killed: str | None = None
    # The threads of a dump of several with no current one, the main one first where it
    # can be told (`python_frames` is then its stack, else empty); () otherwise.
    threads: tuple[ThreadStack, ...] = ()
    # Whether the log shows torch (a frame of it, its name, a DataLoader, a version of
    # it): only then does an axis's comment speak of a DataLoader's workers.
    shows_torch: bool = False
    # The frames of a traceback the log cuts before its exception line (a paste that ends
    # at `    step()`): a failure whose exception is not shown, which "no failure found"
    # denied. Empty where the log's last traceback ends in its exception.
    cut_traceback: tuple[str, ...] = ()
    # The command's absolute paths of the sender's machine (`/home/alice/proj/train.py`,
    # from a core's `Core was generated by`, a prompt, py-spy's `Process`) that are neither
    # on this one nor found under the capture's folder: a TODO of the skeleton's.
    sender_paths: tuple[str, ...] = ()
    # The credentials the log shows by their shape alone (a URL's password, a `Bearer`'s
    # token, a provider's `ghp_...`), whatever names them: in an exception's message they
    # went into the spec's description and expected message, for anyone to read.
    credentials: tuple[str, ...] = ()
    # Whether the command runs a native program and the log shows no Python anywhere
    # (`gdb --args ./crash`, a C program's stack): its spec names no Python version and no
    # packages, which the skeleton asked for as TODOs that made no sense for it.
    native: bool = False
    # Whether `command` is a guess (`python -m pytest TEST` from pytest's report of its
    # failing test, the log showing no command line): the skeleton says so.
    command_guessed: bool = False


def _cut_traceback(clean: str) -> tuple[str, ...]:
    """`file:function` of the log's last traceback where nothing but its frames follows
    it: the paste ended before its exception line. () where it has an exception line, or
    something else (prose, a prompt) comes after its frames."""
    lines = clean.rstrip().split("\n")
    headers = [i for i, line in enumerate(lines) if _TRACEBACK_HEADER.match(line)]
    if not headers:
        return ()
    block = lines[headers[-1] + 1 :]
    # A frame's lines are indented (its `File` line, its source, CPython's `^^^` marks).
    if not block or not all(not line.strip() or line[:1].isspace() for line in block):
        return ()
    return tuple(f"{m['file']}:{m['function']}" for m in map(_FRAME.match, block) if m)


def _cuda_error(clean: str) -> re.Match[str] | None:
    """The first CUDA error the log says, from a line that is not a traceback's source line:
    `raise RuntimeError("CUDA error: ...")` under `File "t.py", line 8` gave the spec's
    description the source's closing `")`; the exception line below it is the error."""
    lines = clean.split("\n")
    for index, line in enumerate(lines):
        if index and lines[index - 1].lstrip().startswith('File "'):
            continue  # the source line a traceback shows under its `File "...", line N`
        if found := _CUDA_ERROR.search(line):
            return found
    return _CUDA_ERROR.search(clean)


def _other_shell_signal(line: str) -> str | None:
    """The signal zsh's or fish's report of a job it ended names (`zsh: segmentation fault
    python x.py`, `fish: Job 1, 'python x.py' terminated by signal SIGSEGV (...)`), as
    bash's `Segmentation fault` is read; None for another line, and for a signal that is no
    crash (fish's `SIGTERM`, `SIGINT`: how a job is stopped)."""
    zsh = _ZSH_SIGNAL.match(line)
    if zsh is not None:
        return _ZSH_SIGNALS[zsh["desc"]]
    fish = _FISH_SIGNAL.match(line)
    named = canonical_signal(fish["signal"]) if fish is not None else None
    return named if named in CRASH_SIGNALS else None


def read_ticket(text: str, workdir: Path | None = None) -> Ticket:
    """Read everything `text` says about one failure (the last one, when it shows several).
    `workdir`, where the ticket's project is checked out (capture's current folder), is read
    only for what no line of the paste says: the class of a test a dump names by its
    function alone (`_timed_out_test`); None reads the text alone."""
    # Quoted (GitHub's quote reply, `> ` and `> > `) is read as written: every reader
    # below, the command's and the machine's too, sees the lines without their markers.
    text = _reindented(_from_ipython(_dedented(_unquoted(_plain(text.replace("\r\n", "\n"))))))
    # A CI log runs on past the step that failed: a later step's own failure (an upload
    # run `if: always()` that raised) was read as the failure, beside the failed step's
    # command. The failure is read up to the first step GitHub says failed; the machine
    # and the credentials from the whole log.
    full_log = text
    text, step_note, step_start = _through_failed_step(text)
    # A terminal echoes Ctrl-C as `^C` where the cursor was: glued to the `Traceback` line
    # Python prints next, which no traceback reader then knew.
    clean = "\n".join(_unprefixed(_CTRL_C.sub("", line)) for line in text.split("\n"))
    clean = _FATAL_RUN_ON.sub(r"\g<progress>\n", clean)
    # rich's traceback box (ROUNDED, or SQUARE on a legacy Windows console), as CPython's
    # traceback: its frames and header.
    if any(corner in clean for corner in RICH_BOX_CORNERS):
        clean = "\n".join(unboxed(clean.split("\n")))
    evidence: list[str] = []
    # A traceback pasted in a fenced block: its last message ran on into the closing
    # fence (`boom\n```` `), which is the ticket's markdown, not the program's words.
    chain = tuple(replace(e, message=_unfenced(e.message)) for e in parse_chain(clean))
    fatal = fatal_errors(clean)
    signal: str | None = None
    where: str | None = None
    outcome: str | None = None
    exit_code: int | None = None

    worker = _WORKER_KILLED.search(clean)
    if worker:
        signal = signal_from_words(worker["desc"])
        where = "worker"
        evidence.append(f"a DataLoader worker died: {worker.group(0).strip()}")
    elif (report := _WORKER_REPORT.search(clean)) is not None:
        signal = _WORKER_REPORT_SIGNALS[report["what"]]
        where = "worker"
        evidence.append(f"a DataLoader worker's own report: {report.group(0)}")
    elif _WORKER_EXITED.search(clean):
        where = "worker"
        evidence.append("a DataLoader worker exited unexpectedly (its signal is not shown)")
    gdb = _gdb_signal(clean)
    if signal is None and gdb:
        signal = canonical_signal(gdb["signal"])
        evidence.append(f"gdb: {gdb.group(0).strip()}")
    lldb = _lldb_signal(clean) if signal is None else None
    if lldb is not None:
        signal = lldb[0]  # None for a trap: a crash, of whichever signal the machine's
        evidence.append(f"lldb: {lldb[1]}")
    # pytest-xdist's report of a worker that died running a test (`[gw0] node down: Not
    # properly terminated`): the crash is the worker's, a child of pytest, as a live run
    # of the command reports it, and its test is the one xdist names.
    xdist = crashed_test(clean)
    if xdist is not None:
        where = where or "child"
        evidence.append(f"pytest-xdist: a worker crashed while running {xdist}")
    real_fatal = [f for f in fatal if not f.description.startswith("Aborted")] or fatal
    # The dump of the thread that took the signal, faulthandler's on Linux or on Windows.
    fault_stack: str | None = None
    if signal is None and real_fatal:
        signal = real_fatal[-1].signal
        if signal:
            evidence.append(f"faulthandler: {FATAL_HEADER}{real_fatal[-1].description}")
            fault_stack = real_fatal[-1].stack
    windows = _windows_fatal(clean)
    windows_fault: str | None = None
    if signal is None and windows is not None:
        what, windows_stack, after = windows
        line = f"Windows fatal exception: {what}"
        if _TRACEBACK_LINE.search(after) or _PYTEST_FAILED_LINE.search(after):
            # faulthandler's Windows handler sees first-chance exceptions too, ones SEH or
            # the JVM then handles (review): a traceback after it is what ended the run.
            evidence.append(f"faulthandler on Windows: {line}, the process went on past it")
        else:
            signal = _WINDOWS_SIGNALS[what]
            windows_fault = what
            evidence.append(f"faulthandler on Windows: {line} ({signal} on Linux)")
            fault_stack = windows_stack
    # The thread that took the signal ran in a process multiprocessing started
    # (`process.py:_bootstrap` among its frames; under fork, the parent's frames outside
    # it, `<module>`, `Pool.__init__`): a child's death, as a live run reads it (rule 6),
    # not the main process's, which the skeleton expected.
    forked = _dump_process(fault_stack) if fault_stack is not None else None
    if forked is not None:
        where = where or forked
        evidence.append(_ran_in(forked))
    died = _DIED_WITH.search(clean)
    if signal is None and died:
        signal, where = canonical_signal(died["signal"]), where or "child"
        evidence.append(f"a child process died: {died.group(0)}")
    piped = pipeline_death(clean) if signal is None and "| " in clean else None
    if piped is not None:
        # bash's report of a pipeline (`set -o pipefail; a | b | c`): a process after its
        # first that died is a child the pipeline fed, its first the command's program,
        # as a live run of the command reads it (outcome/classify.py, rule 4).
        dead, stage = piped
        signal = dead.signal
        if stage > 0:
            where = where or "child"
        which = "first process (the command's program)" if stage == 0 else "later process"
        evidence.append(
            f"the shell, of a pipeline's {which}: pid {dead.pid} ({dead.cmdline}) died of {signal}"
        )
    for line in clean.split("\n"):
        shell = _SHELL_SIGNAL.match(line.strip())
        if shell and signal is None:
            signal = signal_from_description(shell["desc"])
            evidence.append(f"the shell: {line.strip()}")
            if shell["pid"] and shell["rest"] and not _is_python(shell["rest"].split()):
                where = where or "child"
        elif signal is None and (srun := _SRUN_SIGNAL.match(line.strip())) is not None:
            # The task srun ran, the command's program: where stays the main process.
            # `Out Of Memory`: the job's cgroup's OOM killer's SIGKILL.
            desc = "Killed" if srun["desc"] == "Out Of Memory" else srun["desc"]
            signal = signal_from_description(desc)
            evidence.append(f"srun's report of its task: {line.strip()}")
        elif signal is None and (other := _other_shell_signal(line.strip())) is not None:
            # The job the shell ran, the command itself: where stays the main process.
            signal = other
            evidence.append(f"the shell: {line.strip()}")
    elastic = _ELASTIC_RANK.search(clean) is not None
    # The exit code of the rank that failed first (outcome/children.py reads torchrun's
    # log line and report, for a live run too). The other ranks' codes in its report
    # (`exitcode : -15 (pid: 3158) (SIGTERM)`) are torchrun's own doing: it ends the ranks
    # left once one failed, and that SIGTERM read as the crash where a live run of the
    # command reports the failed rank's error.
    root = elastic_exit(clean) if elastic else None
    root_code = root.code if root is not None else None
    # The SIGKILL is known from an exit status 137 alone: `timeout -s KILL`'s own, where its
    # command ran under one.
    status_kill = False
    for match in _EXIT_CODE.finditer(clean):
        code = int(match["code"])
        if root_code is not None and code != root_code:
            continue  # another rank's, ended by torchrun after the first one failed
        if code < 0:
            named = signal_name(-code)
            signal = signal or named
            if elastic:
                where = where or "child"
            said = f"exit status {code}: killed by {named}" + (
                " (a rank torchrun started)" if elastic else ""
            )
            if said not in evidence:  # torchrun says it twice: its log line and its report
                evidence.append(said)
        elif code > 128 and exit_status_signal(code):
            named = exit_status_signal(code) or ""
            status_kill = status_kill or (signal is None and named == "SIGKILL")
            signal = signal or named
            evidence.append(f"exit status {code}: 128+{code - 128} ({named})")
        elif code > 0:
            exit_code = code
    echoed = _echoed_status(clean) if signal is None and exit_code is None else None
    if echoed is not None and echoed > 128 and exit_status_signal(echoed):
        signal = exit_status_signal(echoed)
        status_kill = signal == "SIGKILL"
        evidence.append(f"the shell's `echo $?`: {echoed} = 128+{echoed - 128} ({signal})")
    elif echoed is not None and echoed > 0:
        exit_code = echoed
        evidence.append(f"the shell's `echo $?`: exit status {echoed}")
    hang = _watchdog_hang(clean)
    # pytest-timeout's `thread` dump (`+++ Timeout +++`, the threads' stacks, the rule
    # again), after which it ends the run: read as no failure at all.
    plugin_timeout = _pytest_timeout_hang(clean)
    time_limit = _SLURM_TIME_LIMIT.search(clean)
    ci_limit = _GHA_TIME_LIMIT.search(clean) if time_limit is None else None
    # A py-spy dump is of a process still running, taken because it made no progress: a
    # hang, where nothing else (a signal) says the process died.
    # Parsed once: its main thread's frames here, its threads' stacks below.
    dumped = _pyspy_dump(clean)
    pyspy = dumped[0][1] if dumped else None

    cuda = _cuda_error(clean)
    reported = first_failure(text)
    test = xdist or (reported.test if reported is not None else _test_name(clean))
    pytest_failure: PythonException | None = None
    if reported is not None and reported.exception:
        summary = _unfenced(reported.message)
        whole = _untruncated(clean, reported.exception, summary) if summary else summary
        pytest_failure = PythonException(reported.exception, whole)
        if bare_type(reported.exception) == "Failed":
            # Its `signal` method fails the hung test instead (`Failed: Timeout (>2.0s)
            # from pytest-timeout.`): a hang of that test, as a live run reads it, where
            # the skeleton expected the error `Failed` and its message.
            # (Its summary as cut, `... from pytes...`, where the log has no whole line.)
            plugin_timeout = (
                pytest_timeout_failure(whole) or pytest_timeout_failure(summary) or plugin_timeout
            )
            if plugin_timeout is not None and plugin_timeout.method == "signal":
                pytest_failure = None
    # A traceback that ends in KeyboardInterrupt is how a hang is usually pasted: its
    # reporter stopped the program where it waited (Ctrl-C, its `^C` echoed before the
    # `Traceback` line). Its frames say where; the exception is the reporter's, not the
    # program's, and an error expected of it ("no failure found", before) missed a hang.
    stopped = bool(chain) and all(e.type == "KeyboardInterrupt" for e in chain)
    if chain and not stopped:
        chain = chain[: max(n for n, e in enumerate(chain) if e.type != "KeyboardInterrupt") + 1]
    elif stopped:
        chain = ()
    failed_rank: RankException | None = None
    # (Anywhere in the chain: the report's copy of a rank's chained traceback, indented
    # under it, read as the launcher's exception's consequence, `ChildFailedError (cause)
    # -> ValueError`, the rank's own cause lost and the failure not the child's.)
    if launcher_failed(chain) and signal is None:
        # torchrun's own exception says only that a rank failed: the rank's exception is
        # the failure, as a live run of the command reads it (outcome/classify.py), which
        # never matched a skeleton that expected ChildFailedError. Read with the ranks'
        # `[rankN]:` prefixes, which say whose traceback is whose.
        rank = rank_exception(text)
        failed_rank = rank
        if rank is not None:
            where = "child"
            evidence.append(rank.describe())
            if rank.chain:
                chain = tuple(replace(e, message=_unfenced(e.message)) for e in rank.chain)
    if pytest_failure is not None and (not chain or not _same_type(chain[-1], pytest_failure)):
        # pytest's first failing test, as a live run of the command reports it; a
        # traceback of another test (pasted after it) is not that test's exception.
        chain = (pytest_failure,)
        evidence.append("pytest's report of its first failing test: " + pytest_failure.type)
    if chain:
        evidence.append(
            "the traceback: "
            + " -> ".join(f"{e.type}" + (f" ({e.link})" if e.link else "") for e in chain)
        )
    if cuda is not None:
        # What gives the spec its `environment.gpus` and its CUDA_LAUNCH_BLOCKING line.
        evidence.append(f"a CUDA error (the spec asks for a GPU): {cuda.group(0).strip()}")
    # C++'s uncaught exception: std::terminate's report before its abort() (cxxterminate.py,
    # the reader a live run's crash asks too). Its abort is a SIGABRT where the paste shows
    # no signal and no exit status (no `Aborted (core dumped)` line): a live run of the
    # command reads crash SIGABRT with that exception, not "no failure found".
    thrown = uncaught_cxx(clean) if not chain else None
    if thrown is not None and signal is None and exit_code is None:
        signal = "SIGABRT"
        evidence.append(f"C++'s std::terminate reports an uncaught {thrown.type}: an abort")
    if plugin_timeout is None and xdist is not None and signal is None and not chain:
        # A pytest-xdist worker that died with no signal shown, where pytest-timeout's
        # thread method is in force and fired (its rule shown, or a session at least its
        # timeout): its `os._exit(1)`, whose dump xdist does not show, as a live run of the
        # command reads it (no crash: no signal killed the worker). A worker ended sooner
        # (the OOM killer's SIGKILL, not shown) stays the worker's crash.
        plugin_timeout = pytest_timeout_worker(clean)
        if plugin_timeout is not None:
            where, xdist = None, None
    if plugin_timeout is not None and signal is None:
        outcome, chain = "hang", ()
        evidence.append(f"{plugin_timeout.describe()}: the test hung")
        test = test or _timed_out_test(clean, workdir)
    elif hang and signal is None:
        outcome = "hang"
        evidence.append("faulthandler's `Timeout (h:mm:ss)!` dump: the program hung")
    elif time_limit is not None and signal is None and not chain and xdist is None:
        outcome = "hang"
        evidence.append(f"Slurm ended the job at its time limit: {time_limit.group(0)}")
    elif ci_limit is not None and signal is None and not chain and xdist is None:
        outcome = "hang"
        what = ci_limit.group(0).removeprefix("##[error]")
        evidence.append(f"GitHub Actions ended it at its timeout: {what}")
    elif pyspy is not None and signal is None and not chain and xdist is None:
        outcome = "hang"
        evidence.append("py-spy dump of the running process: the program hung")
    elif stopped and signal is None and xdist is None and pytest_failure is None:
        outcome = "hang"
        evidence.append(
            "a traceback that ends in KeyboardInterrupt: the program was stopped by hand "
            "(Ctrl-C) where it waited, read as a hang"
        )
    elif signal is not None or xdist is not None or lldb is not None:
        outcome = "crash"
    elif chain or exit_code is not None:
        outcome = "error"
    # A compiler sanitizer's report (ASan's, which exits 1): an error whose message is its
    # finding, as a live run reads it (outcome/tracebacks' last_line). It was "no failure
    # found", and the skeleton's outcome a TODO.
    sanitized = sanitizer_report(clean) if outcome is None else None
    if sanitized is not None:
        outcome = "error"
        evidence.append(f"a compiler sanitizer's report ended the program: {sanitized}")
    cut = _cut_traceback(clean) if outcome is None else ()
    if cut:
        # Python printed a traceback, so the program raised: an error, whose exception
        # the paste lost. Its frames still say where.
        outcome = "error"
        evidence.append(
            "a traceback cut before its exception line (the log ends in its frames): "
            "an error, its exception not shown"
        )

    last = chain[-1] if chain else None
    frames, threads = _python_frames(
        _ranks_own(text, failed_rank.local_rank) if failed_rank and failed_rank.chain else clean,
        real_fatal[-1].stack
        if real_fatal
        else windows[1]
        if windows is not None and windows_fault is not None
        else None,
    )
    if not frames and outcome == "hang" and pyspy:
        frames = pyspy
        threads = threads or _pyspy_threads(dumped or [])
    # Read once: the progress, the running test and the Ticket all ask which presets fit.
    pasted = _pasted(text)
    presets = _presets(pasted)
    phase, step = _progress(pasted, presets)
    if phase is not None or step is not None:
        # `step 1: ...` lines have a step and no phase; step 0 is a step too.
        reached = " ".join(p for p in (phase, None if step is None else f"step {step}") if p)
        evidence.append(f"the progress lines: {reached}")
    if test is None and outcome in ("crash", "hang") and "pytest" in presets:
        # A test that crashed has no FAILED line: `-v`'s line of the test running when the
        # process died is its phase, as a live run's pytest markers say.
        test = _running_test(clean)
        if test is not None and phase is None:
            phase = test
            evidence.append(f"the test running when it died: {test}")
    if test is None and outcome == "crash" and real_fatal:
        # Without `-v` the progress line names only the file (`tests/t.py .Fatal Python
        # error`): the dump's frame in that file names the test, as for pytest-timeout's.
        test = _dumped_test(clean, workdir)
        if test is not None and phase is None:
            phase = test
            evidence.append(f"the test running when it died (the dump's frame in it): {test}")
    if test is not None and phase is None:
        phase = test
        evidence.append(f"the failing test: {test}")
    if phase is None:
        # The main thread's frames first, then each other thread's, in the dump's order.
        stacks = [frames, *(list(t.frames) for t in threads if not t.main)]
        phase = next(filter(None, map(_phase_from_frames, stacks)), None)
        if phase is not None:
            evidence.append(f"the stack: a frame of the {phase} loop")
    # A CI log's command is the chosen step's: an earlier step's caught traceback (a
    # download's retry) named its own command (review).
    command = _without_status_echo(
        (_command(text[step_start:]) if step_start else None) or _command(text)
    )
    guessed = False
    if command is None and test is not None and ".py::" in test:
        # pytest's report names its failing test, the log no command line (a CI page's
        # summary, a paste of the report alone): the test run by the run's interpreter
        # (`python -m pytest` always runs the cell's, a `pytest` may be another
        # environment's), a guess said as one. TODO-the-command-that-failed stood in,
        # which fails as `command not found` though the test was known.
        # A pytest-xdist worker's crash is a worker's only under xdist (`-n 1`: one
        # worker): the test alone crashed pytest's own process, `where: main` against the
        # expected `child`, not reproduced.
        workers = "-n 1 " if xdist is not None else ""
        command, guessed = f"python -m pytest {workers}{shlex.quote(test)}", True
    raw_command = command
    machine = parse_machine(full_log)
    sender_paths: tuple[str, ...] = ()
    by_name: tuple[tuple[str, str], ...] = ()
    if command is not None:
        command, version = _run_python(command, machine.python)
        if version is not None and machine.python is None:
            machine = replace(machine, python=version)
            evidence.append(f"the command's interpreter: Python {version}")
        if workdir is not None:
            command, moved, by_name, sender_paths = _senders_paths(command, workdir)
            evidence += [
                f"the command's {path}: the sender's path; {here} under this folder"
                for path, here in moved
            ]
            evidence += [
                programs_name(path, name, own=_own_program(path, name)) for path, name in by_name
            ]
        evidence.append(
            f"the command: {command}, {guessed_from_pytest()}"
            if guessed
            else f"the command: {command}"
        )
        if any(
            (core := _GDB_START.match(line.strip())) is not None
            and core["core"] is not None
            and core["core"].split()[1:] == _words(raw_command or "")[1:]
            for line in clean.split("\n")
        ):
            # The command was read from it.
            evidence.append(
                "the core's command line (`Core was generated by`): its arguments' quoting "
                "is lost; check words with spaces"
            )
        if outcome == "error" and not chain and exit_code == _TIMED_OUT and _bounded(command):
            # timeout's own status: it ended the program at its bound, which a live capture
            # of the command reads as the hang it is (capture/timebound.py); the skeleton
            # expected `error exit 124`, which the doc and a live capture call no failure
            # of the program's, and kept `timeout` in its command.
            outcome, exit_code = "hang", None
            evidence.append(
                f"exit status {_TIMED_OUT}: timeout's own, the command ran under it and did "
                "not end before its bound: a hang"
            )
        elif (
            outcome == "crash"
            and status_kill
            and not chain
            and not any(pattern.search(clean) for pattern in _OOM_KILLED)
            and _bounded(command, kill=True)
        ):
            # `timeout -s KILL 5` (or `-k`'s KILL after its signal) exits 137 at its bound:
            # the hang a live capture of the command reads (timebound.py), not a crash.
            outcome, signal = "hang", None
            evidence.append(
                "exit status 137: timeout's own after its SIGKILL, the command ran under it "
                "and did not end before its bound: a hang"
            )
    # Read in the prose, not in the pasted logs' lines: a traceback's own words are code.
    # pytest's header names its plugins (`plugins: xdist-3.8.0, flaky-3.8.1`): not prose.
    prose = "\n".join(line for line in clean.split("\n") if not line.startswith(_NOT_PROSE))
    if outcome is None and (hangs := _says_it_hangs(clean)) is not None:
        # Nothing in the log says how it failed: the reporter's word that it hangs is what
        # the skeleton expects, where it asked for the outcome (`fail`, a TODO).
        outcome = "hang"
        evidence.append(f"the ticket says it hangs: {hangs!r}")
    elif (
        outcome == "crash"
        and forked == "child"
        and where == "child"
        and not chain
        and (stopped or (hangs := _says_it_hangs(clean)) is not None)
    ):
        # A `multiprocessing.Pool` never notices that a worker died with its task, and its
        # `map` waits forever: a live run reads `hang after a child died of SIGSEGV`
        # (spec-format.md, rule 1), which a `crash` expected of the command never matched.
        # The reporter's Ctrl-C of the waiting `map` (its KeyboardInterrupt traceback) says
        # so as the prose's word does (review).
        outcome = "hang"
        evidence.append(
            "a traceback that ends in KeyboardInterrupt after the child died: the program "
            "was stopped by hand where it waited, read as a hang"
            if stopped
            else f"the ticket says it hangs after the child died: {hangs!r}"
        )
    if outcome == "hang" and test is None and "pytest" in presets:
        # A hang known only now (timeout's 124, the prose's word): the test `-v`'s lines
        # were running, as for a hang its dump tells (above), where the skeleton named none.
        test = _running_test(clean)
        if test is not None and phase is None:
            phase = test
            evidence.append(f"the test running when it hung: {test}")
    flaky = _fails_sometimes(prose)
    if flaky is not None:
        evidence.append(f"the ticket says it fails only sometimes: {flaky!r}")
    oom = next((m for pattern in _OOM_KILLED if (m := pattern.search(clean))), None)
    if oom is not None:
        evidence.append(f"the kernel's OOM killer killed a process: {oom.group(0)}")
    # The debugger's frames from its crash's stop: a breakpoint's stop before it
    # (`break measure`, `run`, `bt`, `continue`, `bt`), or an attach's, shows a frame #0
    # and a backtrace of its own, which were read.
    # A hang's `thread apply all bt` (an attach, a Ctrl-C): the thread it sits in, not the
    # first printed (`_stuck_thread_at`).
    native_frames = _native_frames(
        clean[slice(*_gdb_frames_at(clean, gdb))]
        if gdb
        else clean[
            _lldb_frames_at(clean, lldb[2])
            if lldb is not None
            else _stuck_thread_at(clean)
            if outcome == "hang"
            else 0 :
        ]
    )
    if thrown is not None and (last is not None or outcome != "crash" or signal != "SIGABRT"):
        thrown = None  # a crash by SIGABRT with no traceback of its own takes C++'s
    if thrown is not None:
        said = f"{thrown.type}: {thrown.message}" if thrown.message else thrown.type
        evidence.append(f"the exception, C++'s, as std::terminate printed it: {said}")
    return Ticket(
        failure=Failure(
            outcome=outcome,
            signal=signal,
            exception=last.type if last else thrown.type if thrown else None,
            message=(
                _first_line(last.message) if last else thrown.message if thrown else sanitized
            ),
            exit_code=exit_code if outcome == "error" and not chain else None,
            where=where or ("main" if outcome == "crash" else None),
            phase=phase,
            step=step,
            chain=chain,
        ),
        machine=machine,
        command=command,
        presets=presets,
        native_frames=native_frames,
        python_frames=tuple(frames),
        cuda_error=cuda.group(0).strip() if cuda else None,
        test=test,
        evidence=tuple([*evidence, *([step_note] if step_note is not None else [])]),
        flaky=flaky,
        settings=_prose_settings(prose, chain),
        step_env=_gha_step_env(full_log.split("\n"), raw_command),
        windows_fault=windows_fault,
        ci_minutes=_ci_minutes(ci_limit) if ci_limit is not None and outcome == "hang" else None,
        ci_limit=(
            ("step" if ci_limit["minutes"] else "job")
            if ci_limit is not None and outcome == "hang"
            else None
        ),
        xdist_crash=xdist,
        oom_killed=oom.group(0) if oom is not None else None,
        threads=threads,
        shows_torch=machine.torch is not None or _TORCH.search(clean) is not None,
        cut_traceback=cut,
        sender_paths=sender_paths,
        command_guessed=guessed,
        native=(
            command is not None
            and not by_name  # an environment's console script, written by its name
            and _runs_native(command, workdir, native_frames)
            and not (chain or frames or threads or cut or test or fatal)
            and machine.python is None
            and not machine.requirements
            and machine.torch is None
            and _TORCH.search(clean) is None
            and not any(map(_pythons_native_frame, native_frames))
        ),
        credentials=tuple(dict.fromkeys(full_log[a:b] for a, b, _ in credential_spans(full_log))),
    )


# A native frame of CPython's own (`_PyEval_EvalFrameDefault`, `PyObject_Call`,
# `Py_BytesMain`): a native stack of a Python program, which runs Python after all.
_PYTHON_NATIVE_FUNCTION = re.compile(r"(?:^|[^A-Za-z])_?Py[A-Z_][A-Za-z]")


def _pythons_native_frame(frame: str) -> bool:
    """Whether a native frame (`_native_frames`' `function@file`: `??@libpython3.11.so.1.0`,
    lldb's `___lldb_unnamed_symbol5@python3.11`) is the interpreter's: one of CPython's
    functions, or in an interpreter's executable or library (`pythonargs.is_interpreter_file`:
    `libpython3.11.so`, lldb's `python3.11` module, PyPy's `libpypy3.10-c.so`)."""
    where = frame.rpartition("@")[2]
    return _PYTHON_NATIVE_FUNCTION.search(frame) is not None or is_interpreter_file(where)


def _runs_native(command: str, workdir: Path | None, native_frames: Sequence[str]) -> bool:
    """Whether `command` runs a program that is no Python and runs none by its name: not
    Python, a `.py` script, a launcher or a shell, a shell script (`run.sh`), or a program
    here whose `#!` names Python or a shell (a `./train` script of the sender's own), nor
    srun or mpirun of one of these or of a program not here (the program they run answers:
    `mpirun -np 2 ./a.out`): `runs_python`, capture's rule too. And only on evidence that
    it is native: a debugger's stack of it (`native_frames`), or the program here an ELF
    file. A `./train` that is not here may be the sender's Python
    script: `$ ./train`, then `Segmentation fault (core dumped)` with no faulthandler, read
    as native, left the skeleton asking for no Python and no packages (review)."""
    words = _words(split_at_operator(command)[0])
    at = _program_at(words)
    if at is None:
        return False
    word = words[at]

    def file_of(program: str) -> Path | None:
        return program_file(program, workdir) if workdir is not None and "/" in program else None

    path = file_of(word)
    # srun's or mpirun's program answers, as capture's: by name they ran Python (review).
    if runs_python(word, path, words[at + 1 :], file_of):
        return False
    if program_name(word) in RUNS_ANY:
        launched = launched_at(words[at + 1 :])
        path = file_of(words[at + 1 + launched]) if launched is not None else None
    return bool(native_frames) or (path is not None and _is_elf(path))


def _is_elf(path: Path) -> bool:
    """Whether the file at `path` is an ELF executable (a compiled program), by its magic."""
    try:
        with path.open("rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def _ranks_own(text: str, rank: int) -> str:
    """The lines of `text` up to torchrun's report of the failed `rank`, without the other
    ranks' (`[rank0]: Traceback ...`, a consequence printed after it) and without the
    prefixes: the stack of the exception the rank raised, not torchrun's own, which the
    description quoted under the rank's exception."""
    cut = elastic_exit(text)
    before = text[: cut.start] if cut is not None else text
    own = []
    for line in before.split("\n"):
        prefix = RANK_LINE.match(line)
        if prefix is None or int(prefix["rank"]) == rank:
            own.append(_unprefixed(line))
    return "\n".join(own)


def _prose_settings(prose: str, chain: tuple[PythonException, ...]) -> tuple[tuple[str, str], ...]:
    """The `NAME=value` settings `prose` says, first value of each name: not in an
    exception's message (the program's words) nor in a program's advice to set one."""
    said = [part for e in chain for line in (e.message or "").split("\n") if (part := line.strip())]
    found: dict[str, str] = {}
    for line in prose.split("\n"):
        if _ADVICE.search(line) or any(part in line for part in said):
            continue
        for match in _PROSE_SETTING.finditer(line):
            value = match["value"]
            value = value[1:-1] if value[0] in "'\"" else value.rstrip(".,;:!?)]")
            found.setdefault(match["name"], value)
    return tuple(found.items())


# A traceback's header indented as a whole, as a Markdown code block of four spaces (or a
# paste into a list item) writes it; not a group's (`  + Exception Group Traceback`, `  |`).
_INDENTED_HEADER = re.compile(r"^(?P<indent>[ \t]+)Traceback \(most recent call last\):\s*$")


def _untruncated(clean: str, exception: str, message: str) -> str:
    """pytest's message of a failing test whole: its short summary cuts a line at the
    terminal's width, ending it `...` (`FAILED t.py::test_sub - subprocess.CalledProcessError:
    Command '['/work/...`), which, expected as written, matched no run (`\\.\\.\\.`). The
    log's own line of that exception beginning with the rest is the message; else the rest
    alone, which a message pattern matches as its beginning."""
    if not message.endswith("..."):
        return message
    cut = message[:-3]
    line = re.compile(rf"^(?:E\s+)?{re.escape(exception)}: (?P<message>.+)$")
    for found in map(line.match, clean.split("\n")):
        whole = found["message"].rstrip() if found is not None else ""
        if whole.startswith(cut) and not whole.endswith("..."):
            return whole
    return cut.rstrip()


# IPython's and Jupyter's traceback: a header `ValueError    Traceback (most recent call
# last)` (after a line of dashes), frames `Cell In[3], line 4`, `File ~/p/train.py:7, in
# main()` (IPython 8) or `<ipython-input-3-5e5b> in <module>` (7), each over its numbered
# source lines (`----> 4 f(1)`), and the exception line at the margin.
_IPYTHON_HEADER = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)\s*$"
)
# A path may hold spaces (Colab's `/content/drive/My Drive/...`, `~/my proj/x.py`): an
# IPython 8 one runs to its `:LINE`, an IPython 7 one, at the margin, is a path (`~`, `/`,
# a drive) that ends in `.py` before its ` in f(a)`; read as `\S+`, neither was a frame.
_IPYTHON_FRAME = re.compile(
    r"^(?:(?P<cell>Cell In\[\d+\]), line (?P<line>\d+)"
    r"|File (?P<file>.+?):(?P<at>\d+))(?:, in (?P<function>[\w<>.]+)\(.*\))?\s*$"
    rf"|^(?P<old>(?:~|/|{DRIVE}\\).*?\.pyx?|\S+) in (?P<in>[\w<>.]+)(?:\(.*\))?\s*$"
)


def _from_ipython(text: str) -> str:
    """`text` with each IPython (Jupyter) traceback written as CPython writes one: a
    notebook's paste, the most common traceback of a GitHub issue, was read as no failure.
    Its frames become `File` lines, its numbered source lines go; the exception line
    after them, at the margin, ends it."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        if _IPYTHON_HEADER.match(lines[index]) is None:
            out.append(lines[index])
            index += 1
            continue
        if out and set(out[-1].strip()) == {"-"}:
            out.pop()  # its rule of dashes: between a chain's link line and its header
        out.append("Traceback (most recent call last):")
        index += 1
        while index < len(lines):
            line = lines[index]
            frame = _IPYTHON_FRAME.match(line)
            if frame is not None:
                where = frame["cell"] or frame["file"] or frame["old"]
                number = frame["line"] or frame["at"] or "1"
                function = frame["function"] or frame["in"] or "<module>"
                out.append(f'  File "{where}", line {number}, in {function}')
            elif line.strip() and not line[:1].isspace() and not line.startswith("-"):
                break  # the exception line: the traceback's end, copied as it is
            index += 1
    return "\n".join(out)


# A traceback whose paste lost its indentation (a chat, an e-mail): its frames at the
# margin, `File "x.py", line 3, in f`, its source lines too, and CPython's `^^^^` marks.
_MARGIN_FRAME = re.compile(rf"^{FRAME_AT}")
_MARGIN_MARKS = re.compile(r"^[\s~^]*\^[\s~^]*$")
_LOOKS_RAISED = EXCEPTION_LINE


def _reindented(text: str) -> str:
    """`text` with each traceback whose frames stand at the margin indented as CPython
    prints it: its `File` lines by two spaces, the source line under each (and its `^^^`
    marks) by four; the first line after a frame that is neither ends it, the exception
    line. Read as pasted, the first frame line ended the traceback (`File` is no exception
    line): no failure was found in it."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if not (
            _TRACEBACK_HEADER.match(lines[index])
            and index + 1 < len(lines)
            and _MARGIN_FRAME.match(lines[index + 1])
        ):
            index += 1
            continue
        index += 1
        while index < len(lines) and _MARGIN_FRAME.match(lines[index]):
            lines[index] = "  " + lines[index]
            index += 1
            if index < len(lines) and _margin_source(lines, index):
                lines[index] = "    " + lines[index]
                index += 1
                while index < len(lines) and _MARGIN_MARKS.match(lines[index]):
                    lines[index] = "    " + lines[index]
                    index += 1
    return "\n".join(lines)


def _margin_source(lines: list[str], index: int) -> bool:
    """Whether the line after a frame at the margin is its source line: neither blank nor
    a frame, and either no exception line in shape (`main()`, `x = f(1)`) or followed by
    more of the traceback (a frame, `^^^` marks)."""
    line = lines[index]
    if not line.strip() or _MARGIN_FRAME.match(line):
        return False
    after = lines[index + 1] if index + 1 < len(lines) else ""
    return not _LOOKS_RAISED.match(line) or bool(
        _MARGIN_FRAME.match(after) or _MARGIN_MARKS.match(after)
    )


def _dedented(text: str) -> str:
    """`text` with each traceback indented as a whole (a Markdown code block of four
    spaces: `    Traceback ...`, `      File ...`, `    ValueError: bad value`) taken back
    to the margin, from its header to the first line that lacks its indent. Read as
    written, its exception line is indented like a frame's, and the ticket's
    `ValueError: bad value` read as a traceback cut before its exception line."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        header = _INDENTED_HEADER.match(lines[index])
        if header is None:
            index += 1
            continue
        indent = header["indent"]
        while index < len(lines) and (lines[index].startswith(indent) or not lines[index].strip()):
            lines[index] = lines[index][len(indent) :]
            index += 1
    return "\n".join(lines)


def _unquoted(text: str) -> str:
    """`text` without the markers of its Markdown quotes (`> `, nested `> > `), a level at
    a time: in GitHub's quote reply `> [rank1]: Traceback ...` kept its `[rank1]:` (one
    prefix is taken off a line), and `> $ python x.py` read as a prompt `>` running `$`.

    A quote is two or more lines running that each begin `>` then a space or the line's
    end, outside a code fence of its level: a lone `> python x.py` may be a prompt, and a
    fenced REPL's `>>> import torch` (no space after the first `>`) is no quote."""
    while True:
        lines = text.split("\n")
        quoted = [False] * len(lines)
        fenced = False
        for index, line in enumerate(lines):
            if _FENCE_LINE.match(line):
                fenced = not fenced
            elif not fenced:
                quoted[index] = _QUOTE_MARK.match(line) is not None
        runs = [
            index
            for index, on in enumerate(quoted)
            if on
            and (
                (index > 0 and quoted[index - 1]) or (index + 1 < len(quoted) and quoted[index + 1])
            )
        ]
        if not runs:
            return text
        for index in runs:
            lines[index] = _QUOTE_MARK.sub("", lines[index], count=1)
        text = "\n".join(lines)


def _plain(text: str) -> str:
    """`text` as the programs of a pasted CI log printed it: without the log's colours
    (their escapes, or what is left of them where the paste lost the ESC character:
    `_COLOUR_LEFT`) and the clock before each line (`_CI_CLOCK`)."""
    text = without_escapes(text)
    if any(reset in text for reset in _COLOUR_RESETS_LEFT):
        text = _COLOUR_LEFT.sub("", text)
        text = _COLOUR_RESET_LEFT.sub("", text)
        text = _ERASE_LINE_LEFT.sub("", text)
    return _CI_CLOCK.sub("", text)


# A colour's escape whose ESC a paste dropped (a web form, an issue's text box): GitHub
# Actions' echo of a step's script, `[36;1mpython train.py[0m`, was a command of no
# program; pytest's `[31mFAILED[0m` no FAILED line; GitLab's `[32;1m$ python train.py[0;m`
# no prompt, after its erase-line `[0K`. Only in a text with a reset left (`[0m`, GitLab's
# `[0;m`, which ends every colour), and read by where it stands, not its shape alone: a
# reset is one wherever it is (colorlog's `[[32mINFO[0m]`); a colour with a number (`[31m`,
# never a bare `[m`) only where a reset follows it on its line; the erase-line GitLab
# writes (`[0K`) only where GitLab writes it, at a line's start or after its `\r`. A
# program's own words are no colour: a subscript's `x[mask]`, `d[K]`, `[K, N]`, `[4K]`,
# `[10m]`, a message's `windows [5m, 10m]` or `'x[1m'`.
_COLOUR_RESETS_LEFT = ("[0m", "[0;m")
_COLOUR_RESET_LEFT = re.compile(r"\[0;?m")
_COLOUR_LEFT = re.compile(r"\[\d{1,3}(?:;\d{0,3})*m(?=[^\n]*?\[0;?m)")
_ERASE_LINE_LEFT = re.compile(r"(?:^|(?<=\r))(?:\[0K)+", re.MULTILINE)


_CTRL_C = re.compile(r"^\^C(?=\S)")


def _unprefixed(line: str) -> str:
    """A line without a launcher's or logger's prefix (`[rank0]: `, pytest's `E   `). A
    rank's (torchrun's `[default1]:`, torch's excepthook's `[rank1]:`) by the outcome's own
    rule (outcome/children.py), which reads the same lines of a live run."""
    if _PYTEST_E.match(line):
        return _PYTEST_E.sub("", line, count=1)
    if RANK_LINE.match(line):
        return RANK_PREFIX.sub("", line, count=1)
    return _LINE_PREFIXES.sub("", line, count=1)


def _first_line(message: str | None) -> str | None:
    if not message:
        return None
    return headline(message) or None


# A Markdown quote's marker: up to three spaces, `>`, then a space or the line's end.
_QUOTE_MARK = re.compile(r"^ {0,3}>(?: |$)")
# The log shows torch: its name (`torch/utils/data/...`, `torchrun`, `PyTorch version`), or a
# DataLoader's words.
_TORCH = re.compile(r"\b(?:py)?torch(?:run|vision|audio)?\b|\bDataLoader\b", re.IGNORECASE)
# A markdown code fence line: ``` or ~~~ (three or more), with an info string or none.
_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|~{3,})[\w+-]*\s*$")
_FENCE_LINE_M = re.compile(_FENCE_LINE.pattern, re.M)


def _unfenced(message: str | None) -> str | None:
    """`message` up to a code fence: a closing fence, and whatever follows it (the
    ticket's prose), is not part of it; a fence run on at the end of a line goes too."""
    if message is None:
        return None
    kept: list[str] = []
    for line in message.split("\n"):
        if _FENCE_LINE.match(line):
            break
        kept.append(line)
    text = re.sub(r"\s*`{3,}\s*$", "", "\n".join(kept)).rstrip()
    return text or None


def _same_type(one: PythonException, other: PythonException) -> bool:
    return bare_type(one.type) == bare_type(other.type)


def _test_name(text: str) -> str | None:
    """The test that failed: pytest's `FAILED path::name`, gtest's last `[ RUN ]`."""
    for line in reversed(text.split("\n")):
        stripped = line.strip()
        for pattern in (_PYTEST_FAILED, _PYTEST_CRASHED, _GTEST_FAILED):
            match = pattern.match(stripped)
            if match:
                return match["test"]
    runs = [m["test"] for line in text.split("\n") if (m := _GTEST_RUN.match(line.strip()))]
    return runs[-1] if runs else None


def _running_test(text: str) -> str | None:
    """The test `pytest -v`'s lines had started last before faulthandler's dump (or the
    text's end), or None."""
    marker = re.compile(PRESETS["pytest"].markers[0].pattern)
    running: str | None = None
    for line in output_lines(text):
        if line.startswith(FATAL_HEADER) or _FAULTHANDLER_TIMEOUT.match(line):
            break
        found = marker.match(line)
        if found is not None:
            running = found["phase"]
    return running


def _pasted(text: str) -> str:
    """The lines of the ticket's fenced code blocks, where it has any: the program's output
    pasted, not the reporter's prose around it. A title `training crashes at step 3`
    matched the steps preset and made the skeleton expect `phase: training`, which the
    program, printing only `step 3`, never reports: every attempt missed.
    A ticket with no fence is all output as far as this reader can tell."""
    inside: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE_LINE.match(line):
            fenced = not fenced
        elif fenced:
            inside.append(line)
    return "\n".join(inside) if inside else text


def _presets(text: str) -> tuple[str, ...]:
    """The presets the ticket's output fits. A Lightning bar counts from one line: a paste
    from a terminal holds only the last state of a bar redrawn with `\\r` (`Epoch 0:  37%|...|
    115/312`), and its form is Lightning's alone; a lone `step 3` may be the ticket's prose."""
    return detect(text, one_line=("lightning",))


def _progress(text: str, presets: tuple[str, ...]) -> tuple[str | None, int | None]:
    """The phase and step the progress lines had reached before the failure was printed."""
    lines = output_lines(text)
    end = next(
        (
            i
            for i, line in enumerate(lines)
            if line.startswith(("Traceback (most recent call last)", "Fatal Python error"))
        ),
        len(lines),
    )
    from reprospec.process.markers import compile_markers, match_markers

    progress = [name for name in presets if name not in ("pytest", "gtest")]
    # Matched as a run matches them (process/markers.py), so the phase is named as the run
    # will name it: `eval step 3` is phase `eval` there, and a skeleton that wrote
    # `validation` (this reader's own synonyms) never matched the failure it was read from.
    compiled, _ = compile_markers(m for name in progress for m in PRESETS[name].markers)
    phase: str | None = None
    step: int | None = None
    for line in lines[:end]:
        for event in match_markers(compiled, line):
            new_phase = event.get("phase")
            if isinstance(new_phase, str) and new_phase != phase:
                phase, step = new_phase, None
            new_step = event.get("step")
            if isinstance(new_step, int):
                step = new_step
    return phase, step


def _python_frames(text: str, fatal_stack: str | None) -> tuple[list[str], tuple[ThreadStack, ...]]:
    """`file:function` of the last traceback's (or faulthandler dump's) frames, innermost
    last, and a dump's threads where it has several and names no current one: each its
    own stack, the frames being the main thread's (none where no frame tells which)."""
    dump = fatal_stack
    if dump is None:
        lines = text.split("\n")
        headers = [i for i, line in enumerate(lines) if "Traceback (most recent" in line]
        if headers:
            block = "\n".join(lines[headers[-1] :])
            return [
                f"{m['file']}:{m['function']}" for m in map(_FRAME.match, block.split("\n")) if m
            ], ()
        # faulthandler.dump_traceback_later's `Timeout (0:05:00)!`: the stacks under it.
        timeouts = [i for i, line in enumerate(lines) if _FAULTHANDLER_TIMEOUT.match(line)]
        if not timeouts:
            return [], ()
        dump = "\n".join(lines[timeouts[-1] :])
    stacks = _dump_threads(dump)
    current = next((frames for thread, is_current, frames in stacks if is_current), None)
    if current is not None:
        # The thread that took the signal (`Fatal Python error`'s `Current thread`).
        return current, ()
    if len(stacks) < 2:
        return (stacks[0][2] if stacks else []), ()
    threads = _thread_stacks([(thread, frames) for thread, _, frames in stacks])
    main = list(threads[0].frames) if threads[0].main else []
    return main, tuple(threads)


# A process multiprocessing started runs its target under `BaseProcess._bootstrap`; a
# DataLoader worker's target is torch's `_worker_loop`.
_MP_BOOTSTRAP = "multiprocessing/process.py:_bootstrap"
_TORCH_WORKER = "torch/utils/data/_utils/worker.py:_worker_loop"


def _ran_in(forked: str) -> str:
    """The evidence line of a fatal dump `_dump_process` placed in a child (Linux's
    faulthandler dump or Windows')."""
    process = "a DataLoader worker" if forked == "worker" else "a child process"
    return f"the dump's thread ran in {process} (multiprocessing's `_bootstrap` in its frames)"


def _dump_process(dump: str) -> str | None:
    """Which process a faulthandler dump's current thread ran in: `worker` (a DataLoader
    worker), `child` (another process multiprocessing started: a Pool's worker, a
    `Process`), or None (nothing says: the main process, or a cut dump)."""
    frames = next((frames for _, current, frames in _dump_threads(dump) if current), [])
    seen = [frame.replace("\\", "/") for frame in frames]
    if not any(frame.endswith(_MP_BOOTSTRAP) for frame in seen):
        return None
    return "worker" if any(frame.endswith(_TORCH_WORKER) for frame in seen) else "child"


def _dump_threads(dump: str) -> list[tuple[str, bool, list[str]]]:
    """A faulthandler dump's threads, in its order: (id, whether it is the `Current
    thread`, its frames `file:function` innermost last). A dump of one thread without its
    `Thread 0x...` line (`Stack (most recent call first):`) is one thread of id ``."""
    stacks: list[tuple[str, bool, list[str]]] = []
    for line in dump.split("\n"):
        if (header := _DUMP_THREAD.match(line)) is not None:
            stacks.append((header["id"], header["current"] is not None, []))
        elif (frame := _FRAME.match(line)) is not None:
            if not stacks:
                stacks.append(("", False, []))
            # faulthandler prints the innermost frame first.
            stacks[-1][2].insert(0, f"{frame['file']}:{frame['function']}")
    return [stack for stack in stacks if stack[2]]


def _runs_the_program(frames: list[str]) -> bool:
    """A thread's stack (innermost last) whose outermost frame is the script's `<module>`
    or runpy's `_run_module_as_main` of `python -m`: the main thread's, which no thread
    `threading` started has (their outermost frame is its `_bootstrap`)."""
    file, _, function = frames[0].rpartition(":")
    return function == "<module>" or (function == "_run_module_as_main" and "runpy" in file)


def _pyspy_threads(dumped: list[tuple[str, list[str]]]) -> tuple[ThreadStack, ...]:
    """Each thread of a `py-spy dump` (`_pyspy_dump`'s) where it shows several, its own
    stack (`file:function` innermost last, the main one first): a deadlock's other side
    (the thread holding the lock the main one waits for) was in no description."""
    stacks = [(thread, frames) for thread, frames in dumped if frames]
    return _thread_stacks(stacks) if len(stacks) >= 2 else ()


def _pyspy_dump(text: str) -> list[tuple[str, list[str]]] | None:
    """The threads of the first process of a `py-spy dump` in `text`, in its order: (its
    header after `Thread `, its frames `file:function` innermost last); None where `text`
    has no dump. The first process's only: `--subprocesses` dumps each child after it,
    with a main thread of its own."""
    lines = text.split("\n")
    if not any(_PYSPY_PROCESS.match(line.strip()) for line in lines):
        return None
    # (the child whose section it is in, None for the first process's; header; frames)
    stacks: list[tuple[str | None, str, list[str]]] = []
    first: str | None = None
    child: str | None = None
    sections: Counter[str] = Counter()
    inside = False
    base = 0  # the indent of the thread's frames; deeper lines are --locals' (review)
    for line in lines:
        if (process := _PYSPY_PROCESS.match(line.strip())) is not None:
            if first is None:
                first = process["pid"]
            elif process["pid"] == first:
                break  # a second dump of the same process
            else:
                child = process["pid"]  # `--subprocesses`' child: its threads are not ours
                sections[child] += 1
            inside = False
            continue
        header = _PYSPY_THREAD.match(line.strip())
        indent = len(line) - len(line.lstrip())
        if header is not None:
            stacks.append((child, line.strip().split(" ", 1)[1], []))
            inside, base = True, 0
        elif not inside or not line.strip() or indent == 0:
            inside = False  # a thread's frames end at a blank or unindented line
        elif base and indent > base:
            continue  # `--locals`' `Arguments:`, `Locals:` and their values
        elif (frame := _PYSPY_FRAME.match(line)) is not None:
            base = base or indent
            if _pyspy_python(frame["file"], frame["line"]):
                stacks[-1][2].insert(0, f"{frame['file']}:{frame['function']}")
        # else a line of the thread's py-spy does not print: passed over
    if not any(count > 1 for count in sections.values()):
        own = [(thread, frames) for child, thread, frames in stacks if child is None]
        return own or None
    # py-spy before 0.4.2 printed every child after each of the parent's threads, not
    # after the last (review): a child's threads repeat, once a parent thread, and a
    # thread printed once after a child's section is the parent's next one. Known by its id
    # and frames together: a forked child's main thread keeps the pthread id of the parent's
    # thread that forked it (py-spy 0.3 prints pthread ids), the parent's own stack another
    # (review 14).
    printed = Counter((thread.split(" ", 1)[0], tuple(frames)) for _, thread, frames in stacks)
    return [
        (thread, frames)
        for child, thread, frames in stacks
        if child is None or printed[thread.split(" ", 1)[0], tuple(frames)] == 1
    ] or None


def _thread_stacks(stacks: list[tuple[str, list[str]]]) -> tuple[ThreadStack, ...]:
    """A dump's threads (id, frames innermost last), the main one first where exactly one
    runs the program (`_runs_the_program`) and so is marked main."""
    mains = [thread for thread, frames in stacks if _runs_the_program(frames)]
    threads = [
        ThreadStack(thread, tuple(frames), main=len(mains) == 1 and thread == mains[0])
        for thread, frames in stacks
    ]
    return tuple(sorted(threads, key=lambda stack: not stack.main))


def _echoed_status(clean: str) -> int | None:
    """The exit status the log's `echo $?` printed, or None where it shows none.

    `$ echo $?` prints it on the next line; `$ cmd; echo "exit: $?"` on the last line of
    its output, before the next prompt. Read nowhere before, a hang under `timeout 60`
    that `echo $?` said ended 124 was no failure at all."""
    lines = clean.split("\n")
    said: int | None = None
    for index, line in enumerate(lines):
        prompt = _PROMPT.match(line)
        if prompt is None:
            continue
        command = prompt["command"].strip()
        first, rest = split_at_operator(command)
        if _ECHO_STATUS.match(first) and not rest:
            output = lines[index + 1 : index + 2]  # `$ echo $?`: its own line
        elif rest and _ECHO_STATUS.match(rest):
            output = []  # `cmd; echo $?`: the last line of the output, before the next prompt
            for after in lines[index + 1 :]:
                # or before the fence that closes its paste (a fence line is markdown, no
                # output: read as the last line, a fenced paste's status was never found).
                if _PROMPT.match(after) or _FENCE_LINE.match(after):
                    break
                output.append(after)
            output = [o for o in output if o.strip()][-1:]
        else:
            continue
        found = _STATUS_SAID.match(output[0]) if output else None
        if found is not None:
            said = int(found["code"])
    return said


def _watchdog_hang(clean: str) -> bool:
    """Whether `clean` shows a faulthandler `Timeout (h:mm:ss)!` dump that ended its program:
    one after which, up to the next prompt or closing fence, no traceback follows.

    `dump_traceback_later(T, exit=False)` dumps and lets the program go on: a traceback
    after the dump (`ValueError: late`) is how it ended, which a live run reads as that
    error (outcome/watchdog.py reads a dump as the end only where it ends stderr); any
    header at all read the ticket as a hang."""
    lines = clean.split("\n")
    for index, line in enumerate(lines):
        if not _FAULTHANDLER_TIMEOUT.match(line):
            continue
        raised = False
        for after in lines[index + 1 :]:
            if _PROMPT.match(after) or _FENCE_LINE.match(after):
                break
            if _TRACEBACK_HEADER.match(after):
                raised = True
                break
        if not raised:
            return True
    return False


# pytest's last line, `==== 1 failed in 2.77s ====` (watchdog.PYTEST_SESSION_END): the run
# ended its own way; pytest-timeout's rule is watchdog.PYTEST_TIMEOUT_RULE.
# Its title of a thread's stack: `~~~~~ Stack of MainThread (140369081383808) ~~~~~`.
_DUMP_STACK = re.compile(r"^~{3,} Stack of .+ \(\d+\) ~{3,}\s*$")
# The dump's frame of the test: `  File "/p/test_hang.py", line 5, in test_sleeps_forever`
# (pytest-timeout's), `line 5 in test_x` (faulthandler's, no comma).
_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<function>\S+)')


def _pytest_timeout_hang(clean: str) -> PytestTimeout | None:
    """pytest-timeout's dump in `clean`, where the paste ends with it: its closing rule, up
    to the next prompt or closing fence, followed by no traceback and no pytest summary.
    Its `thread` method's ends the run; its `signal` method, with threads, dumps the same
    and fails the test alone: which one, the header's `timeout method:` says (thread where
    the paste has no header)."""
    lines = clean.split("\n")
    rules = [i for i, line in enumerate(lines) if PYTEST_TIMEOUT_RULE.match(line)]
    if not rules:
        return None
    for after in lines[rules[-1] + 1 :]:
        if _PROMPT.match(after) or _FENCE_LINE.match(after):
            break
        if _TRACEBACK_HEADER.match(after) or PYTEST_SESSION_END.match(after):
            return None
    if len(rules) == 1:
        # A paste cut inside the dump (its stacks' first lines, no closing rule): the
        # dump's stacks under the rule say it is pytest-timeout's all the same.
        if not any(_DUMP_STACK.match(line) for line in lines[rules[0] + 1 :]):
            return None
    elif pytest_timeout_dump("\n".join(lines[: rules[-1] + 1])) is None:
        return None
    method = pytest_timeout_method(clean) or "thread"
    return PytestTimeout(method, pytest_timeout_seconds(clean))


def _timed_out_test(clean: str, workdir: Path | None = None) -> str | None:
    """The test pytest-timeout's dump ended: `-v`'s line of it, run on into the dump's first
    rule (`t.py::test_x +++ Timeout +++`), else the progress line's file there (`t.py `)
    and the dump's outermost test frame in that file (`in test_x`: `_node_in_file`; the
    dump is `traceback.format_stack`'s, its frames outermost first, as given). The
    dump's frames name no class: a test method's (`t.py::TestSlow::test_x`, the node id a
    run of the spec reads) is the class enclosing the def at the frame's line, read from
    the file where the frame's path, or the progress line's in `workdir`, finds it;
    `t.py::test_x` where neither does."""
    lines = clean.split("\n")
    for index, line in enumerate(lines):
        rule = PYTEST_TIMEOUT_RULE.match(line)
        if rule is None:
            continue
        before = rule["before"].strip()
        named = re.match(rf"^(?P<test>{PYTEST_NODE_ID})(?: |$)", before)
        if named is not None:
            return named["test"]
        progress = re.match(r"^(?P<file>\S+\.py)\b", before)
        if progress is None:
            return None
        frames = []
        for frame in lines[index + 1 :]:
            if PYTEST_TIMEOUT_RULE.match(frame):
                break
            found = _DUMP_FRAME.match(frame)
            if found is not None:
                frames.append(found)
        return _node_in_file(progress["file"], frames, workdir)
    return None


def _dumped_test(clean: str, workdir: Path | None = None) -> str | None:
    """The test whose crash faulthandler dumped after pytest's progress line of its file
    (`tests/t.py .`, without `-v`): the current thread's outermost test frame in that file
    (`_node_in_file`: the innermost may be a helper it called), as a node id
    (`tests/t.py::TestX::test_y`, its classes read from the file in `workdir`, as
    `_timed_out_test` reads them); None where no such line or frame is shown. faulthandler
    lists its frames innermost first: they are given to `_node_in_file` reversed."""
    lines = clean.split("\n")
    for index, line in enumerate(lines):
        if not line.startswith(FATAL_HEADER) or index == 0:
            continue
        # `tests/t.py .` where an earlier test ran; `tests/t.py` alone where the file's
        # first test crashed (no progress character printed yet).
        progress = re.match(r"^(?P<file>\S+\.py)(?: [.sFExXR]*)?$", lines[index - 1].strip())
        if progress is None:
            continue
        body = lines[index + 1 :]
        starts = [i for i, text in enumerate(body) if _DUMP_THREAD.match(text)]
        current = [i for i in starts if body[i].startswith("Current thread")]
        begin = (current or starts or [-1])[0] + 1
        frames = []
        for frame in body[begin:]:
            found = _DUMP_FRAME.match(frame)
            if found is None:
                break  # the block's end: a blank line, another thread's header
            frames.append(found)
        test = _node_in_file(progress["file"], frames[::-1], workdir)
        if test is not None:
            return test
    return None


def _node_in_file(
    progress_file: str, frames: list[re.Match[str]], workdir: Path | None
) -> str | None:
    """The node id of the test a dump's `frames` (outermost first) show pytest calling in
    the progress line's file: the outermost frame in that file (the innermost may be a
    helper the test called, `test_b` calling `test_sleeps_forever`) whose function pytest
    collects by its default `python_functions` (`test*`: a fixture or a helper it called,
    `lib`, is no test a run's markers report; a project's own `check_*` is not read), its
    classes read from the file in
    `workdir` (`t.py::TestX::test_y`); None where no frame is such a test (no guess).
    `_timed_out_test`'s and `_dumped_test`'s one rule."""
    named = progress_file.lstrip("./")
    test = next(
        (
            found
            for found in frames
            if (found["file"] == named or found["file"].endswith("/" + named))
            and found["function"].startswith("test")
        ),
        None,
    )
    if test is None:
        return None
    # Files are read only in `workdir` (None reads the text alone): the frame's (a
    # relative path the workdir's, an absolute one as it is), then the progress line's.
    sources = [] if workdir is None else [workdir / test["file"], workdir / progress_file]
    classes = _enclosing_classes(sources, test["function"], int(test["line"]))
    return "::".join([progress_file, *classes, test["function"]])


def _enclosing_classes(sources: list[Path], function: str, line: int) -> list[str]:
    """The classes, outermost first, around the def of `function` that holds `line`, in the
    first of `sources` that is a Python file ast reads and holds such a def (a stale copy,
    its def elsewhere, is passed over); [] where the def is a module's (or no file holds
    one: the node id then names the function alone)."""
    for source in sources:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an invalid escape's SyntaxWarning (`"\d"`)
                tree = ast.parse(source.read_bytes(), filename=str(source))
        except (OSError, *UNREADABLE):
            # Not there (the reporter's machine's path), not readable, or not Python the
            # parser reads (nested past its depth: MemoryError, RecursionError).
            continue
        found = _classes_around(tree.body, function, line, [])
        if found is not None:
            return found
    return []


def _classes_around(
    body: list[ast.stmt], function: str, line: int, classes: list[str]
) -> list[str] | None:
    """`_enclosing_classes` in one body: the classes around the def, or None where no def
    of `function` directly in a class or the module holds `line`."""
    for node in body:
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, ast.ClassDef):
            return _classes_around(node.body, function, line, [*classes, node.name])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            return classes
    return None


def _without_status_echo(command: str | None) -> str | None:
    """`command` without the `; echo $?` its reporter ran after it, whose status (0) the
    spec's command would have ended with, whatever the program did."""
    if command is None:
        return None
    first, rest = split_at_operator(command)
    return first if rest and _ECHO_STATUS.match(rest) else command


def _says_it_hangs(clean: str) -> str | None:
    """The reporter's first word that the program hangs (not denied, not a modal's
    hypothetical), or None. Read in the prose's lines outside fenced blocks, and not in a
    program's log lines: the pasted output's words are the program's."""
    said: list[str] = []
    fenced = False
    for line in clean.split("\n"):
        if _FENCE_LINE.match(line):
            fenced = not fenced
        elif not fenced and not line.startswith(_NOT_PROSE) and not _LOG_LINE.match(line):
            said.append(line)
    words = "\n".join(said)
    for match in _HANGS.finditer(words):
        before = words[max(0, match.start() - 24) : match.start()]
        if not any(p.search(before) for p in (_DENIED, _HYPOTHETICAL)):
            return match.group(0)
    return None


def _fails_sometimes(prose: str) -> str | None:
    """The reporter's last word that it fails only sometimes, or None.

    A denied one ("Not flaky", "not just sometimes") is no such word, and a later word that it
    fails every time ("1 in 3 runs? No, every time actually"), in its paragraph, takes it
    back. Read by its first match alone, either wrote a 20-attempt spec expecting
    `rate: '>0'` of a failure the reporter said comes every run.
    """
    said: str | None = None
    last = 0
    for match in _FLAKY.finditer(prose):
        if _DENIED.search(prose, max(0, match.start() - 24), match.start()) is None:
            said = match.group(0)
            last = match.end()
    # Only in the same paragraph: "I always use Python 3.11" further down takes nothing back.
    paragraph_end = prose.find("\n\n", last)
    end = len(prose) if paragraph_end < 0 else paragraph_end
    if said is not None and _EVERY_TIME.search(prose, last, end) is not None:
        return None
    return said


def _phase_from_frames(frames: list[str]) -> str | None:
    for frame in reversed(frames):
        for pattern, phase in _PHASE_FRAMES:
            if pattern.search(frame):
                return phase
    return None


def _native_frames(text: str) -> tuple[str, ...]:
    """gdb's `#N ... in function (...) at file` frames of the first backtrace, or lldb's
    `frame #N: 0x... module`function(...) at file:line`: `function@file`."""
    frames: list[str] = []
    first = ""  # the number of `frames`' first
    # The same stack from its #0 printed before `frames` (the stop's frame and the one `up`
    # showed, or a `bt` before a `frame 0`): the longer of the two is the backtrace.
    held: list[str] = []
    for line in text.split("\n"):
        if (match := _GDB_FRAME.match(line.strip())) is not None:
            frame = _native_frame(match)
        elif (match := _LLDB_FRAME.match(line.strip())) is not None:
            frame = _lldb_frame(match["rest"] or "")
        else:
            if frames and line.strip().startswith("Thread "):
                break
            continue
        if match["n"] == "0" and frames:
            # lldb, as gdb, shows the frame it stopped in (`Process 23584 stopped`, its
            # thread, `frame #0: ...`) before `bt` prints it again.
            if frames[0] == frame or first != "0":
                # gdb shows the frame it stopped in (a core's `#0 __strlen_evex () at
                # ...`, its source line under it) before `bt` prints it again as the
                # backtrace's first: the backtrace, whose callers were lost, begins here,
                # also where `up` showed #1 after the stop's #0. So does one after frames
                # that began past #0, the one frame each `up`, `down` or `frame 2` shows
                # (`#1 0x... in measure (s=0x0) at foo.c:2`).
                if first == "0" and len(frames) > len(held):
                    held = frames
                frames = []
            else:
                break
        elif frames and int(match["n"]) != int(first) + len(frames):
            # A frame that does not go on from the last (`up`, `down` or `frame 2` after
            # `bt`, or after the stop's #0 and an `up`): the one frame it shows, no caller.
            continue
        if not frames:
            first = match["n"]
        frames.append(frame)
    return tuple(held if len(held) > len(frames) else frames)


# A thread's backtrace's header in `thread apply all bt` (`Thread 2 (Thread 0x7f... (LWP
# 30732) "hang"):`); thread 1 is the main thread.
_GDB_THREAD_HEADER = re.compile(r"^[ \t]*Thread (?P<n>\d+) \(.*\):[ \t]*$", re.MULTILINE)


def _stuck_thread_at(text: str) -> int:
    """Where in `text` the backtrace of the thread a hang sits in begins, of the threads gdb's
    `thread apply all bt` printed: the one native/stacks.py's `hung_thread_order` ranks
    first (a thread on a mutex before one that sleeps; the main thread's join never); 0
    where it printed fewer than two. gdb prints the newest thread first: a heartbeat in
    `nanosleep` was the spec's native stack, where `work` sat on a held mutex (review)."""
    from reprospec.native.stacks import hung_thread_order

    heads = list(_GDB_THREAD_HEADER.finditer(text))
    if len(heads) < 2:
        return 0
    threads = [
        (head["n"] == "1", [f.split("@", 1)[0] for f in _native_frames(text[head.start() :])])
        for head in heads
    ]
    return heads[hung_thread_order(threads)[0]].start()


def _native_frame(match: re.Match[str]) -> str:
    """A gdb frame line's (`_GDB_FRAME`'s) `function@file`."""
    where = (match["where"] or "").rsplit("/", 1)[-1].split(":", 1)[0]
    function = _without_arguments(match["function"].strip())
    return f"{function}@{where}" if where else function


def _lldb_frame(rest: str) -> str:
    """An lldb frame's `module`function(args) at file:line:col` (or `+ offset` where it has
    no debug info) as gdb's are written: `function@file`, `function@module` without a
    source file, the address's `??` without a symbol. Read outside parentheses: an
    argument's value names a function and its file too (`main=(crash`main at crash.c:3)`)."""
    module, tick, symbol = rest.partition("`")
    if not tick:
        return "??"
    depth = 0
    end = len(symbol)
    for at, char in enumerate(symbol):
        depth += (char == "(") - (char == ")")
        if depth == 0 and symbol.startswith((" at ", " + "), at):
            end = at
            break
    function = symbol[:end].rpartition(" [inlined] ")[2].strip()
    if function.endswith(")"):
        # Its arguments (values with debug info, types without): the balanced group that
        # ends it, where something comes before it (`(anonymous namespace)::f` keeps its).
        depth = 0
        for at in range(len(function) - 1, -1, -1):
            depth += (function[at] == ")") - (function[at] == "(")
            if depth == 0:
                if at > 0:
                    function = function[:at].rstrip()
                break
    source = symbol[end:].removeprefix(" at ") if symbol.startswith(" at ", end) else ""
    where = source.rsplit("/", 1)[-1].split(":", 1)[0] or module.rsplit("/", 1)[-1]
    return f"{function}@{where}" if where else function


def _gdb_signal(text: str) -> re.Match[str] | None:
    """gdb's first stop of a crash (`Program received signal SIGSEGV`, `Thread 2 "python"
    received signal SIGABRT`, a core's `Program terminated with signal SIGSEGV`); None where
    it shows none. A stop of a signal that is no crash comes before it or alone: Ctrl-C's
    `SIGINT` to look at a hung program, a `SIGPIPE` or `SIGUSR1` gdb stops at by default
    and the program handles once continued."""
    for stop in _GDB_SIGNAL.finditer(text):
        if canonical_signal(stop["signal"]) in CRASH_SIGNALS:
            return stop
    return None


def _gdb_frames_at(text: str, stop: re.Match[str]) -> tuple[int, int]:
    """Where in `text` the frames of gdb's crash `stop` (`_gdb_signal`'s) begin: its
    thread's backtrace where `thread apply all bt` printed every thread's (the thread the
    stop names, a core's current thread), which may come after another's; else the stop.
    And where they end: at the session's next run (`_GDB_RUN`), whose thread of that number
    stopped elsewhere (a breakpoint's), else the end of `text`."""
    end = run.start() if (run := _GDB_RUN.search(text, stop.end())) is not None else len(text)
    thread = stop["thread"]
    current = _GDB_CURRENT_THREAD.search(text, stop.end(), end)
    if thread is None and current is not None:
        thread = current["thread"]
    if thread is not None:
        header = re.compile(rf"^[ \t]*Thread {thread} \(", re.MULTILINE)
        if (found := header.search(text, stop.end(), end)) is not None:
            return found.start(), end
    return stop.start(), end


# gdb's start of another run: its prompt's `run` (`r`, `start`, `starti`, `attach`), or the
# `Starting program: ...` a run prints.
_GDB_RUN = re.compile(
    r"^[ \t]*\(gdb\) +(?:r|run|start|starti|attach)\b|^[ \t]*Starting program: ", re.MULTILINE
)


def _lldb_frames_at(text: str, stop: int) -> int:
    """Where in `text` the frames of lldb's crash stop (at `stop`, `_lldb_signal`'s) begin:
    its thread's backtrace where `bt all` (`thread backtrace all`) printed every thread's,
    from thread #1 on, the one that crashed after another's; else the stop. Only up to
    the session's next run (`_lldb_session_end`): another run's thread of that number
    stopped elsewhere."""
    line_end = text.find("\n", stop)
    line_start = text.rfind("\n", 0, stop) + 1
    thread = re.search(r"\bthread #(\d+)\b", text[line_start:stop])
    if thread is not None and line_end != -1:
        header = re.compile(rf"^[ \t]*(?:\* )?thread #{thread[1]}\b", re.MULTILINE)
        end = _lldb_session_end(text, line_start, line_end)
        if (again := header.search(text, line_end, end)) is not None:
            return again.start()
    return stop


# lldb's commands that launch its program (`_lldb_launched` reads their arguments), and
# those that attach to a process.
_LLDB_LAUNCHES = (("r",), ("run",), ("process", "launch"))
_LLDB_ATTACHES = (("attach",), ("process", "attach"))
# lldb's start of another run: its prompt's launch or attach, a process's `Process 23590
# launched: ...` (or `stopped`, `attaching`).
_LLDB_RUN = re.compile(
    r"^[ \t]*\(lldb\) +(?:"
    + "|".join(" +".join(map(re.escape, words)) for words in (*_LLDB_LAUNCHES, *_LLDB_ATTACHES))
    + r")\b|^[ \t]*Process (?P<process>\d+) (?:launched|stopped|attaching)\b",
    re.MULTILINE,
)


def _lldb_session_end(text: str, line_start: int, line_end: int) -> int:
    """Where the run of lldb's stop (on the line from `line_start` to `line_end`) ends in
    `text`: at another run (`_LLDB_RUN`) of another process than the stop's (its `Process
    N stopped` above it; batch mode prints its `launched` after the stop, the first
    Process line after it where a paste begins at the stop); else the end."""
    before = [m["process"] for m in _LLDB_RUN.finditer(text, 0, line_start) if m["process"]]
    process = before[-1] if before else None
    for run in _LLDB_RUN.finditer(text, line_end):
        if process is None and run["process"] is not None:
            process = run["process"]
            continue
        if run["process"] is None or run["process"] != process:
            return run.start()
    return len(text)


def _lldb_signal(text: str) -> tuple[str | None, str, int] | None:
    """The crash signal lldb's first stop of a crash says (`stop reason = signal SIGSEGV`,
    macOS's `EXC_BAD_ACCESS` as SIGSEGV; None for a trap's `EXC_BREAKPOINT`, a crash whose
    signal is the running machine's), its words for the evidence, and where in `text` that
    stop is (its frames follow it); None where it shows none: gdb's were read, lldb's left
    `no failure found`."""
    for stop in _LLDB_STOP.finditer(text):
        said = stop.group(0).removeprefix("stop reason = ")
        if stop["exception"] == _LLDB_TRAP:
            return None, f"{said} ({_LLDB_TRAP_SIGNALS})", stop.start()
        if stop["signal"] is not None:
            signal = canonical_signal(stop["signal"])
        else:
            detail = re.search(r"\bSIG[A-Z0-9]+\b", stop["detail"] or "")
            signal = detail.group(0) if detail else _LLDB_EXCEPTIONS.get(stop["exception"])
            if signal is not None and detail is None:
                said += f" ({signal} on Linux)"
        if signal in CRASH_SIGNALS:
            return signal, said, stop.start()
    return None


def _without_arguments(function: str) -> str:
    """`cfunction_call (func=0x7f.., args=...)` -> `cfunction_call`; `f() const ()` stays
    `f() const`."""
    if function.endswith(")") and " (" in function:
        return function[: function.rindex(" (")]
    return function


def _command(text: str) -> str | None:
    """The command the reporter ran, when the ticket shows one.

    Strongest first: a shell prompt line (`$ python ...`), gdb's `Starting program:`,
    a command quoted in prose (`` `python x.py` ``), a bare line that runs a script.
    """
    prompted: list[tuple[int, str]] = []
    # `$ ./run.sh`: the command only where no prompt runs a program.
    scripts: list[tuple[int, str]] = []
    started: list[str] = []
    quoted: list[str] = []
    bare: list[str] = []
    lines = text.split("\n")
    failed_at = next(
        (
            i
            for i, line in enumerate(lines)
            # zsh's and fish's report of the crash too (`zsh: segmentation fault  python ...`).
            if _FAILURE_START.search(line) or _other_shell_signal(line.strip()) is not None
        ),
        None,
    )
    for index, command in _gha_steps(lines):
        if _prompted_runs(command) and not _shows_machine(command):
            prompted.append((index, command))
    for index, line in enumerate(lines):
        windows = _WINDOWS_PROMPT.match(line)
        if windows is not None:
            # PowerShell runs a program by a path through its call operator (`& "C:\Program
            # Files\...\python.exe" train.py`): kept, it was a POSIX shell's `&` that put
            # nothing in the background, the spec's command broken.
            typed = _POWERSHELL_CALL.sub("", windows["command"])
            line = "$ " + _unwindowed(typed, prompted=True)
        elif (traced := _XTRACE.match(line)) is not None:
            line = "$ " + traced["command"]  # the command as the shell ran it
        prompt = _PROMPT.match(line)
        if prompt and _shows_machine(prompt["command"]):
            continue  # `$ python -m torch.utils.collect_env`: the machine, not the failure
        prompt_words = _words(prompt["command"]) if prompt else []
        debugged_program = _gdb_program(prompt_words)
        if debugged_program is not None and _LLDB.match(prompt_words[0].rsplit("/", 1)[-1]):
            # An lldb session's `(lldb) run --count 4` gave the program its arguments,
            # which no line of lldb's names again (`Process N launched: '/path/crash'`).
            end = failed_at if failed_at is not None and failed_at > index else len(lines)
            session = [m["command"] for m in map(_LLDB_COMMAND.match, lines[index + 1 : end]) if m]
            # lldb echoes the commands `-o` ran as the session's own (`(lldb) b measure`):
            # read from the prompt line only where the paste shows none of them, or a
            # `settings append target.run-args x` counted twice ran `x x` (final read).
            ones = _lldb_one_lines(prompt_words)
            commands = session if any(one in session for one in ones) else ones + session
            debugged_program = _lldb_launched(debugged_program, commands)
            if debugged_program is None:
                continue  # a launch whose words were not read: the command is a TODO
        if debugged_program is not None:
            # `$ gdb -batch -ex run -ex bt --args ./tool --count 4`: gdb ran the program
            # after `--args`, as its `Starting program:` line (which `-batch` leaves out)
            # says; the command was a TODO.
            started.append(shlex.join(debugged_program))
            continue
        if prompt and _prompted_runs(prompt["command"]):
            prompted.append((index, prompt["command"].strip()))
            continue
        if prompt and _runs_a_script(prompt["command"]):
            scripts.append((index, prompt["command"].strip()))
            continue
        debugged = _GDB_START.match(line.strip())
        start = debugged or _PYSPY_PROCESS.match(line.strip())
        if debugged is not None and _core_line_unsure(debugged["core"]):
            continue
        if start:
            words = _words(start["command"] or start.groupdict().get("core") or "")
            # gdb's program is a command whatever it runs (a tool of the sender's, `./tool
            # --count 4`), where a line of prose must run a program tickets show.
            native = (
                bool(words) and debugged is not None and not is_python(words[0].rsplit("/", 1)[-1])
            )
            if words and (native or runs_something(words)):
                # The sender's interpreter by its path stays a path here: _run_python
                # writes it `python`, the run's (its basename taken here, `python3` was
                # kept, the reader's PATH's; review). A program of their own (`./tool`)
                # stays as written: its bare name was `command not found`.
                started.append(shlex.join(words))
            continue
        for found in _QUOTED.finditer(line):
            words = _words(_unwindowed(found["command"]))
            words = _gdb_program(words) or words
            if runs_something(words) and not _shows_machine(shlex.join(words)):
                quoted.append(shlex.join(words))
        # The cheap filter first, on every line of a long log: a backslash, which
        # _unwindowed writes as a slash, is no word character to its `\b` either.
        if not _MAY_RUN.search(line):
            continue
        line = _unwindowed(line.strip())
        if runs_something(_words(line)) and not _shows_machine(line):
            bare.append(line)
    ran = [*_nearest_before(prompted, failed_at), *_nearest_before(scripts, failed_at)]
    started = [_launched_as(command, quoted) for command in started]
    return next(iter(ran + started + quoted + bare), None)


# A line (or a quoted command) that runs a program by a Windows path, on no prompt
# (`C:\Users\me\.venv\Scripts\torchrun.exe ...`, `.venv\Scripts\python.exe x.py`,
# `Scripts\torchrun.exe ...`, quoted or not): a backslash after its drive or between names.
_WINDOWS_PROGRAM = re.compile(rf"""^["']?(?:{DRIVE}\\|\.{{1,2}}\\|[\w.-]+\\[\w.-])""")


def _unwindowed(line: str, *, prompted: bool = False) -> str:
    """`line` with its backslashes written as slashes where it was typed at a Windows
    prompt (`prompted`: `_WINDOWS_PROMPT`) or its program is named by a Windows path:
    shlex read each backslash as an escape, `C:Usersme.venvScriptstorchrun.exe`, a program
    no ticket runs, and the command was a TODO. `_windows_path` then tells its paths."""
    return line.replace("\\", "/") if prompted or _WINDOWS_PROGRAM.match(line) else line


# The debuggers whose `--args PROG ARGS` runs the program: gdb, NVIDIA's, the cross one.
_GDBS = frozenset({"gdb", "cuda-gdb", "gdb-multiarch"})
# lldb by its versioned names too (Debian's `lldb-14`).
_LLDB = re.compile(r"^lldb(?:-\d+)?$")
# lldb's options that take the next word: commands to run (`-o run`, `-k bt`), files of
# them, the architecture, the script and REPL languages (`-l python`), the reproducer's
# path. A core (`-c`) or a process to attach to (`-p`, `-n`) runs nothing.
_LLDB_WITH_ARGUMENT = frozenset(
    {"-o", "-O", "-k", "-K", "-s", "-S", "-a", "--one-line", "--one-line-before-file",
     "--one-line-on-crash", "--source", "--source-before-file", "--source-on-crash",
     "--arch", "-f", "--file", "-l", "--script-language", "-R", "--repl-language",
     "--capture-path"}
)  # fmt: skip
_LLDB_NO_RUN = frozenset({"-c", "--core", "-p", "--attach-pid", "-n", "--attach-name"})


def _gdb_program(words: list[str]) -> list[str] | None:
    """The program and its arguments a gdb command line runs after `--args` (`gdb -batch
    -ex run --args python train.py`, `/usr/bin/cuda-gdb ...` too), or an lldb one (`lldb
    -o run -- ./crash --count 4`, `lldb ./crash -- --count 4`); None for another command,
    or one with no program."""
    if words and _LLDB.match(words[0].rsplit("/", 1)[-1]):
        return _lldb_program(words[1:])
    if not words or words[0].rsplit("/", 1)[-1] not in _GDBS or "--args" not in words[:-1]:
        return None
    return words[words.index("--args") + 1 :]


def _lldb_program(words: list[str]) -> list[str] | None:
    """The program and its arguments of lldb's words past its name: its positional words
    (`./crash a b`), those after `--` too, or `--file`'s program; None for a core or a
    process attached to. Before `--` a dash word is lldb's own, after the program too (its
    driver takes its options anywhere: `lldb ./crash -b -o run`)."""
    program: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return [*program, *words[index + 1 :]] or None
        if word in _LLDB_NO_RUN:
            return None
        if word in ("-f", "--file") and index + 1 < len(words):
            program.insert(0, words[index + 1])
        if word in _LLDB_WITH_ARGUMENT:
            index += 2
            continue
        if word.startswith("-"):
            index += 1  # a flag of lldb's own (`-b`, `--batch`, `-x`)
            continue
        program.append(word)
        index += 1
    return program or None


# A command of an lldb session as it echoes it: `(lldb) run --count 4`, and the driver's
# own for its command line (`(lldb) settings set -- target.run-args  "--count" "4"`).
_LLDB_COMMAND = re.compile(r"^\s*\(lldb\) +(?P<command>\S.*)$")
_LLDB_ONE_LINE = frozenset({"-o", "--one-line", "-O", "--one-line-before-file"})
# `process launch`'s switches that take no value (stop at entry, no stdio, a terminal).
_LAUNCH_FLAGS = frozenset({"-s", "--stop-at-entry", "-n", "--no-stdio", "-t", "--tty"})


def _lldb_one_lines(words: list[str]) -> list[str]:
    """The commands an lldb command line runs by `-o`/`-O` (`lldb ./crash -o 'run --count
    4'`), in order: a paste may show the prompt line without their echo."""
    commands: list[str] = []
    for at, word in enumerate(words[:-1]):
        if word == "--":
            break
        if word in _LLDB_ONE_LINE:
            commands.append(words[at + 1])
    return commands


def _lldb_launched(program: list[str], commands: list[str]) -> list[str] | None:
    """`program` (an lldb command line's, `_lldb_program`) with the arguments its session's
    last launch of `commands` (lldb's, in order) gave it: `run ARGS`' or `r ARGS`', `process
    launch [OPTIONS] -- ARGS`', or where it gave none `target.run-args`' as `settings set`
    (the driver's own for `-- ARGS`), `settings append` or an earlier launch's arguments
    (which lldb saves there) left them; `program` as it is where no launch is shown. None
    where the launch's words cannot be read (`process launch` with options and no `--`):
    its arguments are unknown, and so are a later bare launch's, which lldb gave them."""
    run_args: list[str] | None = None
    launched: list[str] | None = None
    unread = False
    saved_unknown = False  # an unread launch's words, which lldb saved as target.run-args
    for command in commands:
        words = _words(command)
        if words[:1] == ["settings"] and "target.run-args" in words:
            values = words[words.index("target.run-args") + 1 :]
            if words[1:2] == ["set"]:
                run_args, saved_unknown = values, False
            elif words[1:2] == ["append"]:
                run_args = [*(program[1:] if run_args is None else run_args), *values]
            elif words[1:2] == ["clear"]:
                run_args, saved_unknown = [], False
            continue
        launch = next((len(w) for w in _LLDB_LAUNCHES if tuple(words[: len(w)]) == w), 0)
        if not launch:
            continue
        rest = words[launch:]
        if words[0] != "process":
            launched, unread = rest, False
        elif "--" in rest:
            launched, unread = rest[rest.index("--") + 1 :], False
        else:
            # `process launch`'s options and no `--`: which words are the program's is
            # not known.
            launched = [word for word in rest if word not in _LAUNCH_FLAGS]
            unread = any(word.startswith("-") for word in launched)
        if launched and not unread:
            # lldb saves a launch's arguments for the next (`target->SetRunArguments`):
            # `run --count 4`, a breakpoint, then `run` ran `--count 4` again.
            run_args, saved_unknown = launched, False
        elif launched:
            # An unread launch's are saved too: a bare `run` after it ran them (review).
            saved_unknown = True
    if unread or (launched == [] and saved_unknown):
        return None
    if launched is None:
        return program
    if launched:
        return [program[0], *launched]
    return [program[0], *run_args] if run_args is not None else program


class _GhaStep(NamedTuple):
    """A GitHub Actions step's `Run` header as a log echoes it: its line, its command, its
    script's lines before `shell:` (each at its line, blank ones left out), and the lines
    below that `shell:` (None where no `shell:` line follows within _GHA_SCRIPT_LINES)."""

    at: int
    command: str
    group: bool
    script: tuple[tuple[int, str], ...]
    after_shell: tuple[str, ...] | None


def _gha_run_headers(lines: list[str]) -> Iterator[_GhaStep]:
    """Every `Run` header of `lines`: the one reader of a header, for the steps' commands
    (`_gha_steps`, of the log up to the failed step) and for the env of the one that failed
    (`_gha_step_env`, of the whole log), each of which reads `lines` again."""
    for index, line in enumerate(lines):
        header = _GHA_RUN.match(line.strip())
        if header is None:
            continue
        below = lines[index + 1 : index + 1 + _GHA_SCRIPT_LINES]
        shell = next((n for n, text in enumerate(below) if _GHA_SHELL.match(text)), None)
        script = tuple(
            (index + 1 + n, text.strip())
            for n, text in enumerate(below[: shell or 0])
            if text.strip()
        )
        after = tuple(below[shell + 1 :]) if shell is not None else None
        yield _GhaStep(index, header["command"].strip(), bool(header["group"]), script, after)


def _gha_steps(lines: list[str]) -> list[tuple[int, str]]:
    """The commands of GitHub Actions' steps, as a prompt line's (line, command): the
    lines of the script a step's `Run` header echoes before its `shell:`, each at its line,
    or, where it echoes none (a copy of the web page's header alone), the header's. A
    `Run ...` line is a step's only after `##[group]` or with a `shell:` line below it:
    "Run python train.py and it crashes" is prose."""
    steps: list[tuple[int, str]] = []
    for step in _gha_run_headers(lines):
        if step.after_shell is None and not step.group:
            continue
        steps += step.script or [(step.at, step.command)]
    return steps


# GitHub Actions' line after a step whose command failed: the raw log's `##[error]`, the
# web page's copy `Error: ` (as `_GHA_RUN` reads its `Run X` without `##[group]`).
_GHA_STEP_FAILED = re.compile(
    r"^(?:##\[error\]|Error: )Process completed with exit code \d+\.?\s*$", re.M
)
# faulthandler on Windows, where an access violation is no signal: `Windows fatal exception:
# access violation`, then the threads' stacks as on Linux. Each read as the signal the same
# fault raises on Linux, where the spec runs. CPython's faulthandler_exc_handler names seven
# exceptions and prints any other as its code, `code 0xc000001d` (review).
_WINDOWS_FATAL = re.compile(
    r"^Windows fatal exception: (?P<what>code 0x[0-9a-fA-F]{8}|[a-z ]+?)\s*$", re.M
)
_TRACEBACK_LINE = re.compile(_TRACEBACK_HEADER.pattern, re.M)  # any line of a text
_WINDOWS_SIGNALS = {
    "access violation": "SIGSEGV",
    "stack overflow": "SIGSEGV",
    "page error": "SIGBUS",  # EXCEPTION_IN_PAGE_ERROR
    "int divide by zero": "SIGFPE",
    "integer overflow": "SIGFPE",
    "float divide by zero": "SIGFPE",
    "float overflow": "SIGFPE",
    "code 0xc000001d": "SIGILL",  # EXCEPTION_ILLEGAL_INSTRUCTION
    "code 0xc0000096": "SIGILL",  # EXCEPTION_PRIV_INSTRUCTION
}


def _windows_fatal(clean: str) -> tuple[str, str, str] | None:
    """The last faulthandler report on Windows in `clean` of a fault `_WINDOWS_SIGNALS`
    knows: (what it says, its header and the stacks under it, as `fatal_errors` cuts a
    Linux one, and the text after them); None where there is none."""
    found = [m for m in _WINDOWS_FATAL.finditer(clean) if m["what"].lower() in _WINDOWS_SIGNALS]
    if not found:
        return None
    header = found[-1]
    lines = clean[header.start() :].split("\n")
    body = 1
    while body < len(lines) and FATAL_BODY.match(lines[body]):
        body += 1
    return header["what"].lower(), "\n".join(lines[:body]).rstrip(), "\n".join(lines[body:])


# pytest's summary line of a failed test: `FAILED tests/t.py::test_x - ValueError: ...`.
_PYTEST_FAILED_LINE = re.compile(r"^FAILED \S+::", re.M)
# A step's header: `##[group]Run actions/upload-artifact@v4` in a raw log, or, in the web
# page's copy (no `##[group]` line anywhere), `Run python train.py` with its script indented
# below it. A program's own `Run summary: 0 epochs` line is no header (review).
_GHA_STEP_HEAD = re.compile(r"^##\[group\]Run (?P<command>\S.*)$", re.M)
_GHA_PAGE_STEP_HEAD = re.compile(r"^Run (?P<command>\S.*)$(?=\n[ \t]+\S)", re.M)


def _step_heads(text: str, start: int = 0, end: int | None = None) -> list[re.Match[str]]:
    """The step headers in `text[start:end]`: the raw log's `##[group]Run` lines, or, where
    `text` has no `##[group]` line (the web page's copy), its bare `Run` lines whose next
    line is indented."""
    head = _GHA_STEP_HEAD if "##[group]" in text else _GHA_PAGE_STEP_HEAD
    return list(head.finditer(text, start, len(text) if end is None else end))


def _through_failed_step(text: str) -> tuple[str, str | None, int]:
    """`text` up to the end of the first GitHub Actions step that failed with a failure
    shown in its own lines (from its `Run` header to its `Process completed with exit code
    N.`), or ran past its time limit (no exit code line: the hang is its failure), where
    later steps follow it (and from the fence that closes the paste on, the ticket's prose);
    else all. With it, the evidence line that says which step's failure is read and how
    many later steps were set aside (the choice is a guess: the first failed step that
    shows one), None where nothing was cut; and where that step's header begins in `text`
    (0 where no step was chosen), where its command is read from."""
    ends = sorted(
        [*_GHA_STEP_FAILED.finditer(text), *_GHA_TIME_LIMIT.finditer(text)],
        key=lambda found: found.start(),
    )
    previous = 0
    for failed in ends:
        heads = _step_heads(text, previous, failed.start())
        start = heads[-1].start() if heads else previous
        # Its own lines only: a caught traceback an earlier step logged (a download's
        # retry), then a step failed with no failure this reader knows (a lint step run
        # with `continue-on-error`), is not the failure (review).
        own = text[start : failed.end()]
        timed_out = _GHA_TIME_LIMIT.match(failed.group(0)) is not None
        previous = failed.end()
        if (
            not timed_out
            and _FAILURE_START.search(own) is None
            and _PYTEST_FAILED_LINE.search(own) is None
        ):
            continue
        # The later steps end where the paste does: the ticket's prose after its closing
        # fence (`it fails only sometimes`) is kept.
        fence = _FENCE_LINE_M.search(text, failed.end())
        stop = fence.start() if fence is not None else len(text)
        later = len(_step_heads(text, failed.end(), stop))
        # The earlier steps' lines are set aside too (from the log's first step on): a
        # download's caught `ConnectionResetError` was read as the failure of a step that
        # timed out or crashed with no traceback of its own (review). The prose before the
        # log is kept; the machine and the step's env are read from the whole log.
        first = _step_heads(text, 0, start)
        before = text[: first[0].start()] if first else text[:start]
        if later == 0:
            return before + text[start:], None, len(before)
        step = f"'Run {heads[-1]['command'].strip()}'" if heads else "its"
        note = (
            f"GitHub Actions: the failure read from step {step} (the first failed step that"
            f" shows one); {plural(later, 'later step')} set aside"
        )
        kept = before + text[start : failed.end()]
        tail = "\n" + text[fence.start() :] if fence is not None else ""
        return kept + tail, note, len(before)
    return text, None, 0


# setup-python's variables in every later step's `env:`: where the runner keeps Python,
# the log's machine, not the workflow's settings (`pythonLocation` gives the version).
_GHA_RUNNER_ENV = frozenset(
    (
        "pythonLocation",
        "PKG_CONFIG_PATH",
        "Python_ROOT_DIR",
        "Python2_ROOT_DIR",
        "Python3_ROOT_DIR",
        "LD_LIBRARY_PATH",
    )
)
# Where the runner keeps what a setup action installs (setup-uv's `UV_CACHE_DIR`,
# setup-miniconda's `CONDA_PKGS_DIR`, setup-java's `JAVA_HOME`): a variable whose value is
# such a path is the log's machine, whatever its name, not the workflow's setting: read by
# its folders' names, on every runner (`/opt/hostedtoolcache`, macOS's
# `/Users/runner/work/_temp/...`, Windows' `C:\hostedtoolcache\...` and `D:\a\_temp\...`,
# a self-hosted `actions-runner/_work/_tool/...`), not Linux's prefixes alone (review).
_GHA_RUNNER_PATHS = re.compile(
    r"(?:^|[/\\])(?:hostedtoolcache|(?:_?work|a)[/\\]_(?:temp|tool))(?:[/\\]|$)"
)
_GHA_ENV_LINE = re.compile(r"^\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*): ?(?P<value>.*)$")


def _gha_step_env(lines: list[str], command: str | None) -> tuple[tuple[str, str], ...]:
    """The `NAME: value` lines under the `env:` GitHub Actions echoes for the `Run` step
    whose script is `command` (below its `shell:` line, up to `##[endgroup]`): the
    variables the workflow set for the command that failed (`MY_FAST_PATH: 1`), which
    the skeleton lost. A secret GitHub masked reads `***`."""
    if command is None:
        return ()
    for step in _gha_run_headers(lines):
        rest = step.after_shell
        if rest is None:
            continue
        if command not in (text for _, text in step.script) and step.command != command:
            continue
        found: list[tuple[str, str]] = []
        if not rest or rest[0].strip() != "env:":
            return ()
        for text in rest[1:]:
            entry = _GHA_ENV_LINE.match(text)
            if entry is None:
                break  # `##[endgroup]`, the step's output
            value = entry["value"].strip()
            if entry["name"] not in _GHA_RUNNER_ENV and not _GHA_RUNNER_PATHS.search(value):
                found.append((entry["name"], value))
        return tuple(found)
    return ()


def _launched_as(started: str, quoted: list[str]) -> str:
    """`started` (gdb's program, py-spy's process), or the command quoted in prose that
    launches its script: py-spy's `Process 4242: python train.py` beside "I ran `torchrun
    --nproc_per_node=2 train.py --epochs 10`" is that launch's worker, and the launcher and
    its arguments were lost. Only a launch: "`python train.py --no-amp` works
    fine" is the same program run another way, the one that did not fail (review)."""
    words = _words(started)
    script = next((word for word in words[1:] if word.endswith(".py")), None)
    if script is None:
        return started
    return next((q for q in quoted if _launches(_words(q), script)), started)


def _launches(words: list[str], script: str) -> bool:
    """Whether `words` run `script` through a launcher: a program that is no Python
    (`torchrun`, `accelerate launch`, `mpirun -n 2 python`) or Python's `-m` of one
    (`python -m torch.distributed.run`), before the script."""
    if script not in words:
        return False
    before = words[: words.index(script)]
    program = before[0].rsplit("/", 1)[-1] if before else ""
    return bool(before) and (not is_python(program) or "-m" in before)


def _nearest_before(commands: list[tuple[int, str]], failed_at: int | None) -> list[str]:
    """Of the prompt lines `commands` (line, command), the last before the failure's first
    line, else the first. The first was taken of "`C:\\proj>python train.py` ... no wait,
    that was the Windows box where it works. On the Linux box: `$ python train.py --bs
    128`", then the traceback, and of `$ python prepare.py` then `$ python train.py`."""
    if not commands:
        return []
    before = [command for index, command in commands if failed_at is None or index < failed_at]
    return [before[-1] if before else commands[0][1]]


def _shows_machine(command: str) -> bool:
    """A command a ticket ran to show its machine (collect_env, pip's and conda's lists, a
    library's version, `transformers-cli env`, nvcc or another CUDA install's program,
    `/usr/local/cuda/extras/demo_suite/deviceQuery`), or one that only asks a program about
    itself (`torchrun --version`, `build/tool --help`), which passes: not the failing
    command, whether a prompt, a quote or a bare line runs it."""
    if _MACHINE_REPORT.search(command) is not None:
        return True
    words = _words(split_at_operator(command)[0])
    at = _program_at(words)
    if at is None:
        return False
    args = words[at + 1 :]
    # The interpreter's own about-itself options (`-h`, `-V`, `--help`, `--version`) mean
    # the same to any program: it only says what it is.
    if args and all(arg in NO_PROGRAM for arg in args):
        return True
    word = words[at]
    return program_name(word) == "nvcc" or (
        _CUDA_INSTALL.match(word) is not None and not _runs_theirs(word, args)
    )


def _prompted_runs(line: str) -> bool:
    """A prompt line that runs what tickets run, in any stage of a pipeline or list
    (`$ cat data.txt | python app.py`)."""
    head, tail = split_at_operator(line)
    stages = [head, *re.split(r"\|\|?|&&|;", tail)] if tail else [head]
    return any(runs_something(_words(stage.lstrip("<>&|; 0123456789"))) for stage in stages)


# The tools a prompt runs by a path that set a machine up or look around, never the
# failing program (`$ /opt/conda/bin/pip install torch`, `$ .venv/bin/uv pip install x`:
# uv that runs nothing, which `runs_something` refuses); nvcc and nvidia-smi show the
# machine (`_shows_machine`).
_SETUP_TOOLS = frozenset(
    {"pip", "pip3", "uv", "conda", "mamba", "micromamba", "apt", "apt-get", "git",
     "make", "cmake", "ninja", "ls", "cat", "cd", "cp", "mv", "rm", "mkdir", "echo",
     "export", "source", "which"}
)  # fmt: skip
# A program of a CUDA or ROCm install (`/opt/cuda/bin/nvcc`, `~/cuda-12.1/extras/demo_suite/
# deviceQuery`, `/opt/rocm/bin/rocminfo`, Windows' `.../CUDA/v12.1/bin/nvcc.exe`), which a
# crash ticket runs to show its machine: by an install's own folders, since a project's
# `cuda/` folder (`./cuda/build/gemm_test`) holds the reporter's programs.
_CUDA_INSTALL = re.compile(
    rf"^(?:/|~/|{DRIVE}/)(?:.*/)?(?:cuda|rocm)(?:-[\d.]+)?(?:/v[\d.]+)?"
    r"/(?:bin|extras|nvvm|samples|libnvvp)/",
    re.IGNORECASE,
)


def _runs_a_script(line: str) -> bool:
    """A prompt line that runs a script or program of the reporter's by its path (`$
    ./run.sh`, `$ build/crash`, `$ /home/me/proj/build/crash`, `$ ~/.venv/bin/train`), or a
    shell script by its name: the command when no prompt line runs a program tickets run
    (a `$ ./install_deps.sh` before `$ python train.py` is setup). A program by a path
    without `./` was none, and the command a TODO. None are a diagnostic's, which a wrong
    command in the spec would be, worse than a TODO: a setup tool's (`_SETUP_TOOLS`) or the
    machine's own (`/usr/bin/...`, `MACHINE_FOLDERS`), unless a sanitizer or a tracer, by
    its path or its name, runs one of the reporter's (`_runs_theirs`); the caller has left
    out those that show the machine (`_shows_machine`: a CUDA install's, one asked only its
    version)."""
    words = _words(split_at_operator(line)[0])
    at = _program_at(words)  # `$ timeout 600 ./run.sh` runs run.sh
    if at is None:
        return False
    word = words[at]
    if word.endswith(".sh"):
        return True
    if program_name(word) in _DIAGNOSTICS:
        return _runs_theirs(word, words[at + 1 :])  # `$ valgrind ./build/crash`
    if "/" not in word or word.endswith("/") or program_name(word) in _SETUP_TOOLS:
        return False
    return not (word.startswith("/") and in_machine_folders(Path(word))) and not (
        _CUDA_INSTALL.match(word)
    )


# The sanitizers and tracers a crash ticket runs its program under, by name or by path
# (`valgrind ./build/crash`, `/usr/local/cuda/bin/compute-sanitizer python train.py`): the
# line is the command where they run the reporter's program (`_runs_theirs`). Any other
# program of the machine's (`ldd build/crash`, `tail -n 5 logs/x.log`, `g++ -o build/x`)
# only looks at theirs. A debugger's is not (`gdb ./build/crash core`): its own reader
# takes the program it ran, `debugged_program`, `_GDB_START`. Each one's options that take
# the next word as their value (`strace -o trace.txt`, `compute-sanitizer --leak-check
# full`): one set for all read strace's flags `-x` and `-d` as valued, and missed
# compute-sanitizer's, so the value was read as the program (review).
_SANITIZER_VALUED = frozenset(
    {"--tool", "--log-file", "--save", "--print-limit", "--filter", "--exclude",
     "--launch-timeout", "--leak-check", "--target-processes", "--racecheck-report",
     "--error-exitcode", "--show-backtrace", "--kernel-name", "--kernel-name-exclude",
     "--kernel-regex", "--kernel-regex-exclude", "--launch-count", "--launch-skip",
     "--mode", "--demangle", "--padding", "--report-api-errors", "--require-cuda-init",
     "--destroy-on-device-error", "--nvtx", "--read", "--num-callers-device",
     "--num-callers-host", "--racecheck-detect-level", "--injection-path", "--language",
     "--target-processes-filter", "--track-unused-memory", "--initcheck-address-reuse"}
)  # fmt: skip
_DIAGNOSTIC_VALUED: dict[str, frozenset[str]] = {
    "valgrind": frozenset({"--tool", "--log-file"}),
    "compute-sanitizer": _SANITIZER_VALUED,
    "cuda-memcheck": _SANITIZER_VALUED,
    "rr": frozenset({"-o", "--output-trace-dir"}),
    "strace": frozenset(
        {"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-S", "-a", "-b", "-I", "-O", "-X"}
    ),
    # A tracer and CUDA's profilers run the reporter's program as those do: each line was
    # no command once only the five above were read (review).
    "ltrace": frozenset(
        {"-o", "-e", "-p", "-s", "-u", "-a", "-A", "-D", "-F", "-l", "-n", "-w", "-x"}
    ),
    "ncu": frozenset(
        {"--set", "--section", "--metrics", "-o", "--export", "-k", "--kernel-name",
         "-c", "--launch-count", "-s", "--launch-skip", "--target-processes",
         "--replay-mode", "--section-folder", "--log-file", "--nvtx-include", "--devices",
         "--kernel-id", "--page", "-i", "--import", "--kernel-name-base", "--cache-control",
         "--clock-control"}
    ),
    "nsys": frozenset(
        {"-o", "--output", "-t", "--trace", "-s", "--sample", "-d", "--duration",
         "-y", "--delay", "-c", "--capture-range", "-b", "--backtrace", "-w",
         "--show-output", "-f", "--force-overwrite", "-e", "--env-var", "-p",
         "--nvtx-capture", "-x", "--stop-on-exit", "--stats", "--cudabacktrace",
         "--cuda-memory-usage", "--gpu-metrics-device", "--cpuctxsw", "--export"}
    ),
}  # fmt: skip
# The subcommand that runs the program, read past as an option is (`rr record ./x`,
# `nsys profile ./x`).
_DIAGNOSTIC_RUNS = {"rr": "record", "nsys": "profile"}
_DIAGNOSTICS = frozenset(_DIAGNOSTIC_VALUED)


def _valued(name: str, option: str) -> bool:
    """Whether `option` of diagnostic `name` takes the next word as its value
    (compute-sanitizer's `--check-*` all do)."""
    return option in _DIAGNOSTIC_VALUED[name] or (
        name in ("compute-sanitizer", "cuda-memcheck") and option.startswith("--check-")
    )


def _runs_theirs(word: str, args: list[str]) -> bool:
    """Whether a sanitizer's or a tracer's line (`_DIAGNOSTICS`: program `word`, then
    `args`) runs a program of the reporter's, or one tickets run: the program it wraps,
    past its options and their values (`--tool memcheck`, `-o trace.txt`), `rr record` and
    `nsys profile`, is a path of theirs (`_runs_a_script`: `./build/crash`, `build/crash`)
    or runs as a ticket's command does (`runs_something`: `python train.py`). Then the
    line is the command, which was a TODO as the diagnostic was looked at alone; anything
    else that is not one of those only looks at their program (review)."""
    name = program_name(word)
    # Not only `_runs_a_script`'s check: `_shows_machine` asks it of any CUDA program.
    if name not in _DIAGNOSTICS:
        return False
    at = 0
    runs = _DIAGNOSTIC_RUNS.get(name)
    while at < len(args) and (args[at].startswith("-") or (at == 0 and args[at] == runs)):
        at += 2 if _valued(name, args[at]) else 1
    if at >= len(args):
        return False
    wrapped = args[at:]
    return runs_something(wrapped) or _runs_a_script(shlex.join(wrapped[:1]))


def _bounded(command: str, *, kill: bool = False) -> bool:
    """Whether `command` runs its program under a `timeout DURATION` whose end is its own
    exit (not `--preserve-status`, whose exit is the program's); `kill`: one that may send
    SIGKILL (`-s KILL`, `--signal=9`, `-k 10`), whose end is 137."""
    try:
        argv = shlex.split(split_at_operator(command)[0])
    except ValueError:
        return False
    bound = unbound(argv)[1]
    return bound is not None and (not kill or _TIMEOUT_KILLS.search(bound.words) is not None)


def split_at_operator(line: str) -> tuple[str, str]:
    """`line` cut where its first shell operator outside quotes begins (`<`, `>`, `|`,
    `;`, `&`): the simple command before it, and the rest as written (`` when none)."""
    for index, char, bare in _bare_chars(line):
        if bare and char in "<>|;&":
            start = index
            if char in "<>":  # `2>&1`, `1>out`: the descriptor's digits belong to it
                while start > 0 and line[start - 1].isdigit():
                    start -= 1
                if start > 0 and not line[start - 1].isspace():
                    start = index  # `x2>y`: the digits end a word
            return line[:start].rstrip(), line[start:].strip()
    return line.strip(), ""


def runs_something(words: list[str]) -> bool:
    """A command line that runs a program the way tickets show: not prose mentioning `python`."""
    program = _program(words)
    if program not in _PROGRAMS:
        return False
    at = _program_at(words)
    rest = words[at + 1 :] if at is not None else []
    if program == "python":
        return bool(rest) and (rest[0].endswith(".py") or rest[0] in ("-m", "-c", "-u", "-X"))
    if program in _LAUNCHERS_BY_NAME:
        command = _uv_command(rest)  # `uv -q pip install x`: its global options read past
        if command and command[0] in _UV_SETUP:
            return command[:2] == ["tool", "run"]  # `uv pip install x` runs nothing: setup
    return bool(rest)


# uv's commands that set an environment up, which run no program (`uv tool run` does).
_UV_SETUP = frozenset(
    {"pip", "venv", "sync", "lock", "add", "remove", "init", "python", "tool", "cache",
     "self", "tree", "export", "build", "publish", "version"}
)  # fmt: skip
# uv's global options that take the next word as their value (`uv --project . sync`).
_UV_VALUED = frozenset(
    {"--project", "--directory", "--cache-dir", "--python", "-p", "--config-file", "--color",
     "--allow-insecure-host"}
)  # fmt: skip


def _uv_command(rest: list[str]) -> list[str]:
    """uv's words from its subcommand on, past the global options before it (`-q`,
    `--no-cache`, `--project DIR`): `$ uv -q pip install torch` was a command that ran
    something, the ticket's where no other prompt ran one (review)."""
    at = 0
    while at < len(rest) and rest[at].startswith("-"):
        at += 2 if rest[at] in _UV_VALUED else 1
    return rest[at:]


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return []


def _program(words: list[str]) -> str:
    """The program a command line runs, past `VAR=value` assignments and wrappers, by its
    name (Windows' `torchrun.exe` as `torchrun`: a prompt's `...\\Scripts\\torchrun.exe`
    was no command a ticket runs, and the log's command was none)."""
    index = _program_at(words)
    if index is None:
        return ""
    name = program_name(words[index])
    return "python" if is_python(name) else name


def _program_at(words: list[str]) -> int | None:
    """Where the program's word is, past `VAR=value` assignments and the wrappers that run
    it, each by its own options (`timeout 300`, `nice -n 5`, `env -i X=1`, one inside
    another: plan/wrappers.py, the rule a live capture reads a command by); None where none
    follows them, or where a wrapper's word is one its grammar lacks (where the program
    starts is not sure). The first word that was no assignment or `env` was taken: `timeout
    300 python train.py` ran `timeout`, no program a ticket runs, so the log's command was
    a TODO; `env -i python` ran `-i`."""
    at = program_start(words)
    return at if at is not None and at < len(words) else None


# The first folders of a path that is the system's, the same on every machine
# (`MACHINE_FOLDERS`), installed software's (`/opt`) or a run's scratch (`/tmp/out`): never
# the sender's project, and never looked for in the workdir.
_SYSTEM_FOLDERS = MACHINE_FOLDERS | {
    "tmp",
    "opt",
    # Windows' (a drive's first folder, compared lower-case), whose prompts' backslashes
    # the command reader wrote as slashes (`C:/Users/me/proj/train.py`).
    "windows",
    "program files",
    "program files (x86)",
    "programdata",
}
# A word that sets a key to a path, the path after its first `=` (an option's, `--data=PATH`,
# after its last): a Hydra override's (`data.root=PATH`, `+model.ckpt=PATH`), an
# assignment's (`VAR=PATH`).
_SETS_KEY = re.compile(r"^[+~]{0,2}[A-Za-z_][\w.]*=")


def _senders_paths(
    command: str, workdir: Path
) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    """`command` with each absolute path of the sender's project written relative, where
    the same file is under `workdir` (the capture's folder: the longest tail of the path
    found there, `/home/alice/proj/src/train.py` -> `src/train.py`); the (path, relative)
    pairs so written; the programs written by their names (path, name); and the paths
    neither here nor there, which no reader's machine has. A path is a word, or what
    follows `--opt=`, `key.sub=` (Hydra's) or `VAR=`. A program in an environment's `bin`
    (`Scripts`: `_environments_script`) that the folder lacks, or a launcher anywhere, is
    written by its name; one in a project's own `bin/` or `scripts/` is the sender's path
    it is.

    A core's `Core was generated by` (and a prompt or py-spy's `Process` line) names the
    sender's files by their absolute paths, and the spec ran `python /home/alice/...`,
    a file no one else has. A system path (`/usr/...`, `/tmp/...`) is left alone. A
    Windows prompt's (`python C:/Users/me/proj/train.py`) is read the same way."""
    head, tail = split_at_operator(command)
    words = _words(head)
    moved: list[tuple[str, str]] = []
    foreign: list[str] = []
    named: list[tuple[str, str]] = []
    changed: list[tuple[int, str, str]] = []
    program = _program_at(words)
    for index, word in enumerate(words):
        option, equals, path = "", "", word
        if word.startswith("-"):
            option, equals, path = word.rpartition("=")
        elif _SETS_KEY.match(word):
            option, equals, path = word.partition("=")
        parts = Path(path).parts  # ("/", "home", ...), ("C:", "Users", ...), ("~", ...)
        home = parts[:1] == ("~",)
        if (
            index == program
            and len(parts) > 1
            and _windows_path(parts)
            and (
                parts[1].lower() in _SYSTEM_FOLDERS or "appdata" in map(str.lower, parts)
                if ABSOLUTE_PATH.match(path)
                else not _exists(workdir / path)
            )
            and (name := _environments_script(parts))
        ):
            # A Windows environment's console script by a relative path (a bare line's
            # `Scripts\torchrun.exe`, `.venv\Scripts\torchrun.exe`), or one installed
            # for all users or one (`C:\Program Files\Python311\Scripts\torchrun.exe`,
            # `...\AppData\...\Scripts\torchrun.exe`), which the reader's machine never
            # runs: by its name, as a path of the sender's project is read below.
            named.append((path, name))
            changed.append((index, "", name))
            continue
        if not ABSOLUTE_PATH.match(path) or len(parts) < (2 if home else 3):
            continue
        if not home and parts[1].lower() in _SYSTEM_FOLDERS:
            continue
        if "appdata" in {part.lower() for part in parts} or (
            index == program and is_python(parts[-1])
        ):
            continue  # a Windows user's installed programs, their interpreter
        here = next(
            (
                Path(*parts[start:]).as_posix()
                for start in range(1, len(parts))
                if _exists(workdir / Path(*parts[start:]))
            ),
            None,
        )
        if here is None and index == program and (name := _environments_script(parts)):
            # An environment's console script (`~/.venv/bin/torchrun`, `~/.local/bin/x`,
            # `miniconda3/envs/t/bin/deepspeed`, Windows' `Scripts`): by its name, as
            # _run_python writes the interpreter, which the run's environment provides; uv
            # by its name too, which the run's PATH must provide.
            named.append((path, name))
            changed.append((index, "", name))
            continue
        if here is None:
            if not _exists(Path(path)):
                foreign.append(path)
            continue
        if index == program and "/" not in here:
            here = f"./{here}"  # a program by its bare name is looked for on PATH
        moved.append((path, here))
        changed.append((index, f"{option}{equals}", here))
    if not changed:
        return command, (), (), tuple(dict.fromkeys(foreign))
    head = _respelled(head, changed)
    # A path typed twice (`train.py ... out=train.py`) is one evidence line, one TODO path.
    return (
        " ".join(filter(None, (head, tail))),
        tuple(dict.fromkeys(moved)),
        tuple(dict.fromkeys(named)),
        tuple(dict.fromkeys(foreign)),
    )


# What a Python environment's folder holds, the one that holds its `bin` (`Scripts`): what
# plan/workfiles' `is_environment_folder` asks (a virtual environment's `pyvenv.cfg`, a
# conda environment's or install's `conda-meta`), and here also the `site-packages` of any
# installed Python's prefix (plan/workfiles' SITE_PACKAGES: pyenv's `versions/3.11.4`, a
# user's `~/.local`, Debian's `/usr`); virtualenv's old `bin/activate`.
# Where the path is not on this machine, what an environment's folder is named: a virtual
# environment's by the names `python -m venv` is given (`.venv`, `venv`, `env`, `myenv`,
# `torch-env`, `.venv-py311`, `venv3.11`: `env` ending its name, or before a version alone;
# a hidden `.venv` beginning it, `.venv-dev`, `.venv-cu121`, which is almost never a
# project's; `env-setup`, `dev-env-tools`, `venv-setup` and `venvtools` are a project's), a
# user's `.local`, a conda install's (`miniconda3`, `~/anaconda`, `micromamba`)...
_ENVIRONMENT_NAMED = re.compile(
    r"(?i)^(?:.*env|\.venv.*)(?:[-_.]?(?:py)?\d[\d.]*)?$|^\.local$"
    r"|^\.?(?:miniconda|anaconda|miniforge|mambaforge|micromamba|conda)\d*$"
)
# ... or the folder holding it (`miniconda3/envs/t`, `~/.virtualenvs/t`, `~/venvs/t`), pyenv's
# `~/.pyenv/versions/3.11.4` (a project's `versions/v1` is none).
_ENVIRONMENTS_FOLDERS = frozenset({"envs", ".virtualenvs", "virtualenvs", "venvs", ".venvs"})
# The launchers (`LAUNCHERS`) but srun and mpirun: each is written by its name wherever
# it stands. A shell, srun or mpirun in a `bin` is a build of them
# (`~/openmpi-4.1/bin/mpirun`), not an environment's.
_BY_NAME_ANYWHERE = LAUNCHERS - RUNS_ANY


def _windows_path(parts: tuple[str, ...]) -> bool:
    """Whether a path (its `Path.parts`, its backslashes written as slashes: `_unwindowed`)
    is a Windows one: after a drive (`C:/Users/me/...`), a program of Windows'
    (`Scripts/torchrun.exe`, which no drive begins), or a launcher in a relative `Scripts`
    (`.venv/Scripts/torchrun`: cmd and PowerShell run it without its `.exe`, and its
    path, the sender's, was kept, a `no such file` here). Its names are then compared
    lower-case (`Scripts`, `AppData`), as Windows does. The one rule of what a Windows path
    is, for every reader below."""
    if re.match(DRIVE, parts[0]) is not None or parts[-1].lower().endswith(".exe"):
        return True
    return (
        len(parts) > 1
        and parts[-2].lower() == "scripts"
        and parts[0] not in ("/", "~")
        and program_name(parts[-1]) in _BY_NAME_ANYWHERE
    )


def _environments_script(parts: tuple[str, ...]) -> str | None:
    """The name a program's path (its `Path.parts`) is run by (Windows' `torchrun.exe` as
    `torchrun`) where it is an environment's console script, else None: in a `bin`
    (`Scripts` of a Windows path: `_windows_path`) of a Python environment's folder. A launcher no
    project ships (`_BY_NAME_ANYWHERE`: `~/x/bin/torchrun`, and uv) is one wherever it stands; else
    what that folder holds here says so (`_environments_bin`; that of a link's target's
    too), where the program is here only if a distribution there declares or installed it
    (`declared_script`, the live capture's rule: a script written there by hand keeps its
    path), or where the program is here, says not; elsewhere its name
    (`~/.venv/bin/torchrun`, `~/torch-env/bin/x`, `~/.local/bin/x`, `~/miniconda/bin/x`) or
    its folder's (`miniconda3/envs/t/bin/x`, `~/venvs/t/bin/x`). A project's own
    `scripts/run.sh` or `bin/train`, `~/bin/mytool`, `~/env-setup/bin/deploy` and
    `~/openmpi/bin/mpirun` are no such."""
    windows = _windows_path(parts)
    folder = parts[-2].lower() if windows else parts[-2]
    if folder != "bin" and not (windows and folder == "scripts"):
        return None
    name = program_name(parts[-1])
    if name in _BY_NAME_ANYWHERE:
        # By its name wherever it stands, here too: uv's installer's `~/.local/bin/uv` and
        # `~/.cargo/bin/uv`, and pipx's `~/.local/bin/pytest`, hold no environment's marks,
        # and their path ran their own pytest, not the run's environment's. A short path's
        # too (`~/bin/torchrun`, which the length's guard below kept as the sender's).
        return name
    if len(parts) < 4:
        return None
    return name if _looks_like_environment_bin(parts) else None


def _looks_like_environment_bin(
    parts: tuple[str, ...], *, links: bool = True, user_site: bool = True
) -> bool:
    """Whether a program's path (its `Path.parts`, in a `bin` or `Scripts`) is in a Python
    environment's `bin`: what that folder holds here says so (`_environments_bin`; with
    `links`, that of a link's target's folder too), where the program is here only if a
    distribution there declares it (`declared_script`), or where the program is here,
    says not; elsewhere its folder's name (`~/.venv`, `~/torch-env`, a conda install's; a user's
    `.local` only with `user_site`) or its holder's (`miniconda3/envs/t`, `~/venvs/t`,
    pyenv's `~/.pyenv/versions/3.11.4`)."""
    program = Path(*parts)
    here = _exists(program)
    folders = [f for f in (_bins(program) if links else [program.parent]) if _environments_bin(f)]
    if folders:
        # Where the program is here, that environment's own say (`declared_script`, the
        # rule a live capture asks): a script written there by hand keeps its path. Where
        # it is not, the folder is the sender's environment's, whose scripts are unknown.
        return not here or any(declared_script(f.expanduser() / program.name) for f in folders)
    if here:
        # The program is here, in a folder that holds no environment: no name says more.
        # (The program, not its folder: this user's `~/.local` without a site-packages,
        # or a `/home/alice/tools` of this machine's, says nothing of the sender's.)
        return False
    windows = _windows_path(parts)
    holders = [part.lower() if windows else part for part in parts[1:-3]]
    return (
        (_ENVIRONMENT_NAMED.search(parts[-3]) is not None and (user_site or parts[-3] != ".local"))
        or any(holder in _ENVIRONMENTS_FOLDERS for holder in holders[-1:])
        or holders[-2:] == [".pyenv", "versions"]
    )


def _own_program(path: str, name: str) -> bool:
    """Whether a program `_senders_paths` wrote by its name is one of its own, which the
    run's PATH must provide (uv's installers' `~/.cargo/bin/uv`, `~/.local/bin/uv`), not an
    environment's console script, which the run's environment does: uv
    (`_LAUNCHERS_BY_NAME`) in no environment's `bin` (`~/.venv/bin/uv`, of `pip install
    uv`, is a console script), by what its folder holds here, else, where the path is not
    here, by its folder's name (`_looks_like_environment_bin`: the sender's `~/.venv/bin/uv`
    was said to be a program of its own, what this machine lacks telling nothing). Its own
    folder's, not a link's target's: pipx's uv, in a venv of pipx's own, is none the run's
    environment holds; nor is a user's `.local` by its name (uv's installer's)."""
    return name in _LAUNCHERS_BY_NAME and not _looks_like_environment_bin(
        Path(path).parts, links=False, user_site=False
    )


def _bins(program: Path) -> list[Path]:
    """The program's folder, and where the program is a link here (pipx's `~/.local/bin/x`
    -> `~/.local/share/pipx/venvs/x/bin/x`), its target's folder, resolved: the folder, not
    the target, as a venv's own programs may link out of it."""
    folders = [program.parent]
    try:
        here = program.expanduser()
        if here.is_symlink():
            folders.append((here.parent / here.readlink()).parent.resolve())
    except (OSError, ValueError, RuntimeError):
        pass
    return folders


def _environments_bin(folder: Path) -> bool:
    """Whether `folder`, a `bin` (`Scripts`), is a Python environment's here: its parent
    is one (`is_environment_folder`) or holds a `site-packages` (`SITE_PACKAGES`), or it
    holds virtualenv's old `activate`."""
    try:
        environment = is_environment_folder(folder.parent.expanduser())
    except (OSError, ValueError, RuntimeError):
        environment = False
    return (
        environment
        or _exists(folder / "activate")
        or any(_globbed(folder.parent, mark) for mark in SITE_PACKAGES)
    )


def _globbed(folder: Path, pattern: str) -> bool:
    """Whether `pattern` names something in `folder` (`~` read as this user's home); False
    where the folder cannot be read."""
    try:
        return next(folder.expanduser().glob(pattern), None) is not None
    except (OSError, ValueError, RuntimeError):
        return False


def _respelled(head: str, changed: list[tuple[int, str, str]]) -> str:
    """`head` with each changed word (its index among `head`'s words, what stays of it:
    `--data=` or ``, its new value) written over where it stands, quoted or not (`"C:\\Program
    Files\\..."`), every other character as the log has it: `shlex.join` quoted each word, so
    `$DATA_DIR`, `~/cfg.yaml` and `*.txt` no longer expanded."""
    spans = _word_spans(head)
    out: list[str] = []
    at = 0
    for index, kept, value in changed:
        start, end = spans[index]
        out += [head[at:start], kept, shlex.quote(value)]
        at = end
    return "".join(out) + head[at:]


def _word_spans(line: str) -> list[tuple[int, int]]:
    """Where each of `line`'s words (`shlex.split`'s) starts and ends, its quotes and
    backslashes in it."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for index, char, bare in _bare_chars(line):
        if start is None:
            if char in " \t\r\n":
                continue  # between words: nothing is quoted or escaped here
            start = index
        if bare and char in " \t\r\n":
            spans.append((start, index))
            start = None
    if start is not None:
        spans.append((start, len(line)))
    return spans


def _bare_chars(line: str) -> Iterator[tuple[int, str, bool]]:
    """Each character of a shell line with whether it is bare: outside quotes, not
    escaped, and not itself a quote or backslash (where an operator or a word's end can be);
    split_at_operator's and _word_spans' one scan."""
    quote = ""
    escaped = False
    for index, char in enumerate(line):
        bare = False
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        else:
            bare = True
        yield index, char, bare


def _exists(path: Path) -> bool:
    """Whether `path` exists (`~` read as this user's home), False for one no file system
    takes (too long, a NUL in it: a ticket's word is anything) and for a `~/...` where this
    user has no home (HOME unset, no passwd entry: `docker run -u 1234`)."""
    try:
        return path.expanduser().exists()
    except (OSError, ValueError, RuntimeError):
        return False


def _run_python(command: str, said: str | None) -> tuple[str, str | None]:
    """`command` with its interpreter written `python` where the ticket names a path or a
    version of it (`/opt/conda/bin/python3.10 train.py`, gdb's `Starting program:`), and
    the version that word says. A spec's `python` runs the run's interpreter, where a
    `python3.10` or a path of the sender's ran whatever the reader's PATH holds, or nothing
    (command not found). A version other than the one the ticket says elsewhere (`said`,
    collect_env's) leaves the word as written: which one ran is the reader's call."""
    head, tail = split_at_operator(command)
    words = _words(head)
    index = _program_at(words)
    if index is None:
        return command, None
    word = words[index]
    name = word.rsplit("/", 1)[-1]
    versioned = _VERSIONED_PYTHON.match(name)
    version = versioned["version"] if versioned else None
    if not is_python(name) or (word == name and version is None):
        return command, None  # not Python, or `python`/`python3` as a spec writes it
    if version is not None and said is not None and version != said:
        return command, None
    head = _respelled(head, [(index, "", "python")])
    return " ".join(filter(None, (head, tail))), version


def _is_python(words: list[str]) -> bool:
    return _program(words) == "python"
