"""Reading the engine's own tree: a `children` file read until it is steady."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from reprospec.process import tree


def _reads(monkeypatch: pytest.MonkeyPatch, texts: list[bytes]) -> list[str]:
    asked: list[str] = []

    def read_proc(path: str) -> bytes:
        asked.append(path)
        return texts[len(asked) - 1]

    monkeypatch.setattr(tree, "read_proc", read_proc)
    return asked


def test_an_empty_children_file_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A read that listed no child skipped none (the kernel found none at its first position).
    asked = _reads(monkeypatch, [b""])
    assert tree._steady_children("children") == set()
    assert len(asked) == 1


def test_a_listed_child_is_read_until_two_reads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child listed first was reaped while the kernel listed on: 8 was skipped.
    asked = _reads(monkeypatch, [b"7 ", b"8 ", b"8 "])
    assert tree._steady_children("children") == {7, 8}
    assert len(asked) == 3
    asked = _reads(monkeypatch, [b"7 ", b""])
    assert tree._steady_children("children") == {7}
    assert len(asked) == 2


@pytest.mark.parametrize(
    ("line", "one"),
    [
        ("python x.py", True),
        ("A=1 B=2 python x.py --n 3 2>&1", True),
        ('python "my script.py" --tag "a b"', True),
        ("python x.py; exit $?", True),
        ("cd sub && python x.py", True),
        ("python x.py\nexit $?", True),
        ("timeout 60 python x.py", True),  # one program: timeout (python is its child)
        ("python x.py | tee log", False),
        ("python x.py &", False),
        ("echo $(date); python x.py", False),
        ("python x.py `cat args`", False),
        ("(python x.py)", False),
        ("python x.py <<EOF", False),
        ("python a.py; python b.py", False),
        ('python x.py; echo "done; next"', True),  # quoted: no list, and echo is built in
        ('python -c "import sys; sys.exit(139)"', True),  # Python's `;` and `(`, not the shell's
        ("python -c 'print({1: (2)})' && exit $?", True),
        ('python x.py "$(cat args)"', False),  # a substitution in double quotes forks
        ('python x.py "`cat args`"', False),
        ("python x.py 'unclosed", False),
        ('python x.py "a \\" (b)"', True),  # an escaped quote does not end the string
        ("python x.py \\(", True),  # an escaped `(` is a word, no subshell
        ("exit 3", False),
    ],
)
def test_a_shell_line_that_forks_one_program(line: str, one: bool) -> None:
    # dash forks even a one-program line's program: its own record then tells the rest.
    assert tree.one_program(line) is one


SHELL = ["/bin/sh", "-c", "cd . && python x.py"]
LAUNCH = ["/usr/bin/python3", "-S", "-E", "/src/reprospec/process/launch.py"]


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (SHELL, SHELL),
        (["nice", "-n", "5", *SHELL], SHELL),  # the docker runner's perturbation
        ([*LAUNCH, "--nice", "5", "--refused", "/r", "--", *SHELL], SHELL),  # the local one's
        ([*LAUNCH, "--barrier", "/b", "--instance", "0", "--", *SHELL], SHELL),
        (["nice", "-n", "5", *LAUNCH, "--memory", "9", "--", *SHELL], SHELL),  # nested
        # launch.py's --init runs its command as a child: the root is the init.
        (
            [*LAUNCH, "--init", "/x.json", "--", *SHELL],
            [*LAUNCH, "--init", "/x.json", "--", *SHELL],
        ),
        (["nice", "5", *SHELL], ["nice", "5", *SHELL]),  # not the form any runner writes
    ],
)
def test_what_a_root_execs_past_its_launchers(argv: list[str], target: list[str]) -> None:
    assert list(tree.exec_target(argv)) == target
    assert tree.shell_of_one_program(argv) is (target == SHELL)


def test_the_one_programs_record_says_whether_it_ran_alone(tmp_path: Path) -> None:
    argv = ["/bin/sh", "-c", "python x.py; exit $?"]
    # ended-PID.txt: the parent's pid, cminflt, sigignore, the status it asked for
    # (stackdump/sitecustomize.py).
    (tmp_path / "ended-501.txt").write_text("500 0 4096 0\n/usr/bin/dash\n")
    assert tree.program_ran_alone(argv, 500, tmp_path) == 0
    assert tree.program_ran_alone(argv, 499, tmp_path) is None  # another root's program
    piped = ["/bin/sh", "-c", "python x.py | tee l"]
    assert tree.program_ran_alone(piped, 500, tmp_path) is None
    assert tree.program_ran_alone(["python", "x.py"], 500, tmp_path) is None
    # It reaped a child; it ignored SIGCHLD (its children uncounted); two programs of it.
    for record in ("500 37 0 0\n/bin/sh\n", f"500 0 {1 << 16} 0\n/bin/sh\n"):
        (tmp_path / "ended-501.txt").write_text(record)
        assert tree.program_ran_alone(argv, 500, tmp_path) is None
    (tmp_path / "ended-501.txt").write_text("500 0 0 139\n/bin/sh\n")
    assert tree.program_ran_alone(argv, 500, tmp_path) == 139
    (tmp_path / "ended-502.txt").write_text("500 0 0 0\n/bin/sh\n")
    assert tree.program_ran_alone(argv, 500, tmp_path) is None


def test_a_begun_record_alone_says_the_one_program_died(tmp_path: Path) -> None:
    argv = ["/bin/sh", "-c", "python x.py"]
    record = tmp_path / "ended-501.txt"
    record.write_text("500\n/usr/bin/dash\n")  # begun: its parent, the shell, as it began
    assert tree.program_died(argv, 500, tmp_path, 137)
    assert not tree.program_died(argv, 500, tmp_path, 1)  # no shell's 128+N
    assert not tree.program_died(argv, 499, tmp_path, 137)  # another root's program
    assert not tree.program_died(["/bin/sh", "-c", "a | b"], 500, tmp_path, 137)
    # The shell's status the program's: passed on by `exit` or `exit $?`, not `exit 137`
    # (`python3 segv.py; exit 137` read as the SIGSEGVed program's SIGKILL).
    for line in ("python x.py; exit", "cd a && python x.py; exit $?"):
        assert tree.program_died(["/bin/sh", "-c", line], 500, tmp_path, 137), line
    for line in ("python x.py; exit 137", "python x.py || exit 137", 'python x.py; exit "$?"'):
        assert not tree.program_died(["/bin/sh", "-c", line], 500, tmp_path, 137), line
    # Ended, whatever status it asked: `raise SystemExit(137)` asks what the record cannot
    # see (it says 0), where the shell's 137 read as the program's SIGKILL.
    for asked in ("0", "137"):
        record.write_text(f"500 0 0 {asked}\n/usr/bin/dash\n")
        assert not tree.program_died(argv, 500, tmp_path, 137)
    # Two programs of the root: not known which the shell's status is.
    record.write_text("500\n/usr/bin/dash\n")
    (tmp_path / "ended-502.txt").write_text("500 0 0 0\n/usr/bin/dash\n")
    assert not tree.program_died(argv, 500, tmp_path, 137)


def test_a_record_is_the_shells_program_only_where_a_shell_forked_it(tmp_path: Path) -> None:
    """bash execs what `sh -c` (or `bash -c`) runs: the root is then the program, and its
    children's records name it their parent. A Python root's child, or the child of a
    `timeout` bash exec'd, is no program the shell forked, whose status its 128+N is."""
    argv = ["/bin/sh", "-c", "timeout -s KILL 60 python x.py"]
    record = tmp_path / "ended-501.txt"
    record.write_text("500\n/usr/bin/timeout\n")  # begun under timeout, the root
    assert not tree.program_died(argv, 500, tmp_path, 137)
    record.write_text("500 0 0 0\n/usr/bin/timeout\n")
    assert tree.program_ran_alone(argv, 500, tmp_path) is None
    # `bash -c 'python w.py'` exec'd: the root w.py has its own record; its child's names it.
    argv = ["/bin/sh", "-c", "bash -c 'python w.py'"]
    (tmp_path / "ended-500.txt").write_text("400 37 0 137\n/usr/bin/python3\n")
    for child in ("500\n/usr/bin/python3\n", "500 0 0 0\n/usr/bin/python3\n"):
        record.write_text(child)
        assert not tree.program_died(argv, 500, tmp_path, 137)
        assert tree.program_ran_alone(argv, 500, tmp_path) is None
    (tmp_path / "ended-500.txt").unlink()
    # Forked by a shell, bash, dash or a busybox sh: the shell's program.
    for shell in ("/usr/bin/bash", "/bin/busybox", "/usr/bin/dash (deleted)"):
        record.write_text(f"500\n{shell}\n")
        assert tree.program_died(argv, 500, tmp_path, 138)
        record.write_text(f"500 0 0 0\n{shell}\n")
        assert tree.program_ran_alone(argv, 500, tmp_path) == 0
    # A parent the program could not read: not known.
    record.write_text("500\n\n")
    assert not tree.program_died(argv, 500, tmp_path, 137)


def test_the_record_holds_only_for_the_status_the_program_asked_for() -> None:
    # A program that ran to its end (asked 0) and then died of SIGSEGV in a native
    # library's destructor, after its record, leaves the shell's 139: that is its death.
    assert tree.ran_alone_with(0, 0)
    assert tree.ran_alone_with(0, 1)  # an uncaught exception: not a signal's number
    assert not tree.ran_alone_with(0, 139)
    assert tree.ran_alone_with(139, 139)  # sys.exit(139): its own status
    assert not tree.ran_alone_with(None, 139)


def _stat(comm: bytes, state: bytes, cminflt: int, sigignore: int) -> bytes:
    """A /proc/PID/stat line: pid (comm) state, then fields 4..52 (man 5 proc)."""
    fields = [b"0"] * 50
    fields[0] = state
    fields[11 - 3] = str(cminflt).encode()
    fields[33 - 3] = str(sigignore).encode()
    return b"4242 (" + comm + b") " + b" ".join(fields) + b"\n"


def test_one_parser_reads_a_stat_line_for_the_scan_and_for_an_ended_root() -> None:
    # The scan's _proc_info and waited_in split /proc/PID/stat each their own way.
    # A command name with spaces and parentheses ends at the last `)`.
    comm = b"we ird) (name"
    assert tree.waited_in(_stat(comm, b"Z", 12, 0)) is True
    assert tree.waited_in(_stat(comm, b"Z", 0, 0)) is False
    sigchld = 1 << (signal.SIGCHLD - 1)
    assert tree.waited_in(_stat(comm, b"Z", 0, sigchld)) is None  # reaped by the kernel
    assert tree.waited_in(_stat(comm, b"S", 12, 0)) is None  # not ended: no count yet
    assert tree.waited_in(b"4242 (x) Z 1") is None  # cut short
    me = tree._proc_info(os.getpid())
    assert me is not None
    assert (me.ppid, me.pgid, me.state) == (os.getppid(), os.getpgrp(), "R")
