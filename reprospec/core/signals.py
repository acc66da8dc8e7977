"""Signal numbers, names and descriptions, and the shell's 128+N exit convention."""

from __future__ import annotations

import re
import signal

# What strsignal(3) says on glibc, for platforms whose libc words it differently:
# DataLoader and shells print these texts, so they must map back to a name anywhere.
_GLIBC_DESCRIPTIONS = {
    "SIGHUP": "Hangup",
    "SIGINT": "Interrupt",
    "SIGQUIT": "Quit",
    "SIGILL": "Illegal instruction",
    "SIGTRAP": "Trace/breakpoint trap",
    "SIGABRT": "Aborted",
    "SIGBUS": "Bus error",
    "SIGFPE": "Floating point exception",
    "SIGKILL": "Killed",
    "SIGUSR1": "User defined signal 1",
    "SIGSEGV": "Segmentation fault",
    "SIGUSR2": "User defined signal 2",
    "SIGPIPE": "Broken pipe",
    "SIGALRM": "Alarm clock",
    "SIGTERM": "Terminated",
    "SIGXCPU": "CPU time limit exceeded",
    "SIGXFSZ": "File size limit exceeded",
    "SIGSYS": "Bad system call",
}

# Exit status 128+N is read as "killed by signal N" only for these N: the signals
# that end a process abnormally and whose 128+N codes are conventional (130 Ctrl-C,
# 134 abort, 137 OOM killer, 139 segfault, 143 SIGTERM). Other codes in 129..159
# (129, 138, 140, 142, ...) are more often a program's own exit code.
SHELL_FATAL_SIGNALS = frozenset(
    {
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGSEGV",
        "SIGPIPE",
        "SIGTERM",
        "SIGXCPU",
        "SIGSYS",
    }
)

# A child's death by one of these is a crash. SIGINT and SIGPIPE are how pipelines end,
# SIGTERM how a parent stops its children (a pool's terminate(), a shell's `kill %1`,
# a DataLoader's shutdown of a worker that did not exit in time).
CRASH_SIGNALS = SHELL_FATAL_SIGNALS - {"SIGINT", "SIGPIPE", "SIGTERM"}


# The signal the engine asks a live attempt's Python processes for their stacks with (the
# stackdump sitecustomize registers faulthandler on it; process/stacks.py and the docker
# runner send it at a hang). SIGURG, whose default action is to ignore: registering on it
# changes nothing a program sees. SIGUSR1 was taken over in every Python process, so a
# program that died of it outside reprospec survived it, and a program's own SIGUSR1
# handler ran when the engine asked. The stdlib-only sitecustomize, harness and
# fork server name it themselves.
STACK_DUMP_SIGNAL = signal.SIGURG


def signal_name(number: int) -> str:
    """`11` -> `"SIGSEGV"`; an unnamed number (a real-time signal) -> `"SIG40"`."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def signal_number(name: str | int) -> int | None:
    """`"SIGSEGV"`, `"segv"`, `"11"` or `11` -> 11; None when it names no signal."""
    if isinstance(name, int):
        return name if _is_signal(name) else None
    text = name.strip().upper()
    if text.isdigit():
        return int(text) if _is_signal(int(text)) else None
    if not text.startswith("SIG"):
        text = "SIG" + text
    member = getattr(signal, text, None)
    return int(member) if isinstance(member, signal.Signals) else None


def canonical_signal(name: str | int) -> str | None:
    """The one spelling of a signal used everywhere: `"segv"` -> `"SIGSEGV"`."""
    number = signal_number(name)
    return None if number is None else signal_name(number)


def describe_signal(name: str) -> str:
    """`"SIGSEGV"` -> `"Segmentation fault"` (the strsignal text)."""
    number = signal_number(name)
    if number is None:
        return name
    canonical = signal_name(number)
    return _GLIBC_DESCRIPTIONS.get(canonical) or signal.strsignal(number) or canonical


def description_key(text: str) -> str:
    """A signal's description as `signal_from_description` compares it: lower case, `-` and
    `_` as spaces, without "(core dumped)" or a final period (materialize's run.sh matches
    torch's words with these keys)."""
    # torch's worker handler says "floating-point exception", strsignal "Floating
    # point exception"; "Killed (core dumped)" variants lose the suffix.
    text = re.sub(r"\s*\(core dumped\)", "", text)
    return re.sub(r"[\s\-_]+", " ", text).strip().rstrip(".").lower()


def _description_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for sig in signal.Signals:
        text = signal.strsignal(sig)
        if text:
            table.setdefault(description_key(text), sig.name)
    for name, text in _GLIBC_DESCRIPTIONS.items():
        if hasattr(signal, name):
            table.setdefault(description_key(text), name)
    return table


_DESCRIPTIONS = _description_table()


def signal_from_description(text: str) -> str | None:
    """`"Segmentation fault"` (strsignal text, any case) -> `"SIGSEGV"`; else None."""
    return _DESCRIPTIONS.get(description_key(text))


def signal_from_words(text: str) -> str | None:
    """The signal a report's "killed by signal: X" names: X its description (torch's
    strsignal words, `Segmentation fault`), its number (`11`: older torch's and some
    wrappers' words) or its name (`SIGSEGV`); None where X names none."""
    named = signal_from_description(text)
    if named is not None:
        return named
    word = text.strip()
    return canonical_signal(word) if word.isdigit() or word.upper().startswith("SIG") else None


def exit_status_signal(code: int, *, any_signal: bool = False) -> str | None:
    """Exit status 128+N -> signal N's name when N is in SHELL_FATAL_SIGNALS; else None.

    `any_signal=True` accepts every valid N: for when the output proves a signal.
    """
    if not 128 < code < 128 + 32:
        return None
    number = code - 128
    if not _is_signal(number):
        return None
    name = signal_name(number)
    return name if any_signal or name in SHELL_FATAL_SIGNALS else None


def _is_signal(number: int) -> bool:
    try:
        signal.Signals(number)
    except ValueError:
        return False
    return True
