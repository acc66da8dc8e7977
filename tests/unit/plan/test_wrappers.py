"""The programs that run another one, read by their own options: where the program's words
start in a command (`timeout 5 env -i python3 x.py`), or that this is not sure."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from reprospec.plan.wrappers import (
    program_file,
    program_start,
    program_words,
    unsure_wrapper,
    wrapped,
)


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("python3 x.py", "python3 x.py"),
        ("A=1 B=2 python3 x.py", "python3 x.py"),
        ("timeout 5 env -i python3 x.py --lr 0.1", "python3 x.py --lr 0.1"),
        ("env A=1 timeout -s KILL 5 python x.py", "python x.py"),
        ("env -i - A=1 B=2 python x.py", "python x.py"),
        ("env -u HOME -- python x.py", "python x.py"),
        ("env --block-signal=INT --unset HOME python x.py", "python x.py"),
        ("timeout --foreground -k 5 --signal=KILL 1.5m python x.py", "python x.py"),
        ("timeout -fsKILL 5 python x.py", "python x.py"),
        ("timeout --sig KILL 5 python x.py", "python x.py"),  # a unique prefix, as getopt
        ("nice -n 5 python x.py", "python x.py"),
        ("nice -5 nice --adjustment=3 python x.py", "python x.py"),
        ("stdbuf -oL -e 0 python x.py", "python x.py"),
        ("taskset -c 0-3 python x.py", "python x.py"),
        ("taskset 0x3 python x.py", "python x.py"),
        ("numactl --membind=0 -N 0 --physcpu 0-3 -l python x.py", "python x.py"),
        ("ionice -c 3 -t chrt -f 10 python x.py", "python x.py"),
        ("chrt -b python x.py", "python x.py"),  # no priority for SCHED_BATCH
        ("xvfb-run -a -s '-screen 0 1024x768x24' python x.py", "python x.py"),
        ("/usr/bin/time -v -o t.txt nohup setsid -w python x.py", "python x.py"),
        ("timeout 60", ""),
    ],
)
def test_where_the_program_starts(command: str, program: str) -> None:
    assert shlex.join(program_words(shlex.split(command))) == program


@pytest.mark.parametrize(
    ("command", "unsure"),
    [
        ("numactl --cpuset 0 python x.py", "numactl"),  # an option it does not have
        ("timeout --ver 5 python x.py", "timeout"),  # --verbose or --version: getopt refuses
        ("timeout -z 5 python x.py", "timeout"),
        ("timeout soon python x.py", "timeout"),  # DURATION is no duration
        ("taskset -p 0x3 1234", "taskset"),  # a pid mode: no program
        ("chrt -p 10 1234", "chrt"),
        ("timeout 5 env -S 'python x.py'", "env"),  # the program inside one word
        ("env -iS 'python x.py'", "env"),
    ],
)
def test_a_word_a_wrappers_grammar_lacks_leaves_the_program_unsure(
    command: str, unsure: str
) -> None:
    words = shlex.split(command)
    assert program_start(words) is None
    assert program_words(words) == []
    assert unsure_wrapper(words) == unsure


def test_each_wrappers_words_are_its_span() -> None:
    found = wrapped(shlex.split("timeout 5 env -i A=1 nice -n 5 python x.py"))
    assert found is not None
    assert found.spans == ((0, 2), (2, 5), (5, 8))
    assert found.program == 8
    unwrapped = wrapped(["python", "x.py"])
    assert unwrapped is not None
    assert (unwrapped.spans, unwrapped.program) == ((), 0)


def test_a_program_file_expands_a_tilde_as_the_shell_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert program_file("~/bin/train", tmp_path) == tmp_path / "home" / "bin" / "train"
    assert program_file("./train", tmp_path) == tmp_path / "train"
    assert program_file("/opt/train", tmp_path) == Path("/opt/train")
    # An unknown user's `~`: the shell leaves it as typed (Path.expanduser raised).
    unknown = "~nosuchuser-reprospec/bin/train"
    assert program_file(unknown, tmp_path) == tmp_path / unknown


def test_a_ticket_program_under_an_unknown_users_home_is_no_traceback(tmp_path: Path) -> None:
    from reprospec.capture.ticket import _runs_native

    assert not _runs_native("~nosuchuser-reprospec/bin/train --epochs 1", tmp_path, ())
    assert _runs_native("~nosuchuser-reprospec/bin/train", tmp_path, ("main@crash.c",))
