"""`reprospec minimize` of a real hang keeps where it hangs (search.py's point 7,
`hangs-elsewhere`): real threads, real locks, a real timeout.

The program's thread takes a lock twice (a self-deadlock, in its own line), then would
wait on an Event no one sets (in its failing cell). A candidate without the first
`acquire` still hangs, as `hang`, but in the Event's wait: another hang, rejected; the
old search accepted it and answered with `threading.Event().wait()`, no lock left.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprospec import native
from tests.support.cli import json_verb

PROGRAM = """\
import os
import threading

lock = threading.Lock()


def stuck():
    lock.acquire()
    if os.environ.get("TWICE") == "1":
        lock.acquire()
    threading.Event().wait(None if os.environ.get("TWICE") == "1" else 0.1)


t = threading.Thread(target=stuck)
t.start()
t.join()
"""

SPEC = """\
reprospec: 1
name: stuck
title: 'stuck.py: hang in stuck (stuck.py:11)'
environment:
  env:
    TWICE: "${{ matrix.twice }}"
matrix:
  twice: ["1", "0"]
command: python stuck.py
run:
  timeout: 3s
expect:
  outcome: hang
  cases:
    - {when: {twice: "0"}, outcome: pass}
"""

EVENT_WAIT = "stuck -> threading.py:wait -> threading.py:wait"
# SPEC's timeout (and ANYWHERE_SPEC's), 3 s: it counts from the spawn, and each hung
# attempt's place is read at it, so the program must be at its hang by then; a dump before
# it reads another place (`<module>`): the original's places two, or a candidate's hang
# taken for one elsewhere.
# 1 s left a loaded machine's slow start little room (flaky in full runs, alone not).


def _minimize(tmp_path: Path, name: str, program: str, spec: str, *options: str) -> list[str]:
    """`reprospec minimize spec.yaml --format json -j 2 OPTIONS`'s words, with `program`
    written as `name` beside the spec in `tmp_path`, its --out and -o DIR there too."""
    (tmp_path / name).write_text(program, encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(spec, encoding="utf-8")
    return [
        sys.executable, "-m", "reprospec", "minimize", str(tmp_path / "spec.yaml"),
        "--format", "json", "--out", str(tmp_path / "out"), "-o", str(tmp_path / "result"),
        "-j", "2", *options,
    ]  # fmt: skip


def test_a_candidate_whose_hang_sits_elsewhere_is_rejected_and_the_deadlock_kept(
    tmp_path: Path,
) -> None:
    argv = _minimize(tmp_path, "stuck.py", PROGRAM, SPEC, "--min-rate", "0.9", "--budget", "80")
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    same = data["search"]["same_failure"]
    assert same["original_places"] == ["stuck -> acquire()"]
    assert EVENT_WAIT in same["hung_elsewhere"], same
    assert same["hangs_elsewhere_rejected"] >= 1
    result = (tmp_path / "result" / "stuck.py").read_text(encoding="utf-8")
    assert result.count("lock.acquire()") == 2, result  # the deadlock kept
    assert "Event" not in result  # and the wait it never reaches gone
    report = (tmp_path / "result" / "minimize.md").read_text(encoding="utf-8")
    assert "the original hung in stuck -> acquire(): " in report
    assert (
        "- **Signature**: `hang` (hung in stuck -> acquire()), the failing cell's expect" in report
    )
    assert f"whose hang sat elsewhere ({EVENT_WAIT}" in report
    assert "printing no exception the original never did, hanging where the original did" in report
    # The minimized spec claims no place of the original's (its line 11 is another line).
    written = yaml.safe_load((tmp_path / "result" / "minimized.yaml").read_text("utf-8"))
    assert "title" not in written
    assert "The original's title: stuck.py: hang in stuck (stuck.py:11)." in written["description"]
    # Run again: the stored probes replay, their places with them, to the same answer.
    code, again, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    assert again["search"]["same_failure"] == same
    assert (tmp_path / "result" / "stuck.py").read_text(encoding="utf-8") == result


ANYWHERE = """\
import os
import threading

lock = threading.Lock()


def stuck():
    lock.acquire()
    lock.acquire()


if os.environ.get("HANG") == "1":
    eval(os.environ["HANG_IN"])
"""

ANYWHERE_SPEC = """\
reprospec: 1
name: anywhere
environment:
  env:
    HANG: "${{ matrix.hang }}"
matrix:
  hang: ["1", "0"]
command: python anywhere.py
run:
  timeout: 3s
expect:
  outcome: hang
  cases:
    - {when: {hang: "0"}, outcome: pass}
"""


def test_dirs_check_holds_a_hang_to_where_the_original_hung_as_the_search_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The program hangs where the shell's HANG_IN says (the child inherits it): in stuck()
    # for the search, then, its check of DIR run again (dir-check.json gone), at an
    # Event's wait. DIR's check compared the signature `hang` alone: "fails as hang".
    argv = _minimize(tmp_path, "anywhere.py", ANYWHERE, ANYWHERE_SPEC, "--budget", "24")
    monkeypatch.setenv("HANG_IN", "stuck()")
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    assert data["unconfirmed"] == ""
    # Its main thread by its outermost function below `<module>` (a busy one is caught
    # anywhere below it): eval's `<string>` is no code of the program's, stuck() is.
    assert data["search"]["same_failure"]["original_places"] == ["stuck -> acquire()"]
    for check in (tmp_path / "out").glob("minimize/*/dir-check.json"):
        check.unlink()
    monkeypatch.setenv("HANG_IN", "threading.Event().wait()")
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 1, stderr
    unconfirmed = data["unconfirmed"]
    assert "threading.py:wait in its rerun" in unconfirmed, unconfirmed
    assert "not where the original did (stuck -> acquire())" in unconfirmed, unconfirmed


BUSY_OR_STUCK = """\
import os
import threading

lock = threading.Lock()


def stuck():
    lock.acquire()
    if os.environ.get("TWICE") == "1":
        lock.acquire()
    while os.environ.get("TWICE") == "1":
        pass


def main():
    stuck()


main()
"""


def test_a_deadlock_made_a_busy_loop_under_one_main_is_another_hang(tmp_path: Path) -> None:
    # Without its second acquire the program still hangs, in an endless loop: both sat in
    # `main` (told apart in words alone, `main (in stuck)`), and the old search answered
    # with the loop, no lock left. The line the thread waits at tells them apart.
    spec = SPEC.replace("stuck.py", "busy.py").replace(
        "title: 'busy.py: hang in stuck (busy.py:11)'\n", ""
    )
    argv = _minimize(
        tmp_path, "busy.py", BUSY_OR_STUCK, spec, "--min-rate", "0.9", "--budget", "60"
    )
    code, data, stderr = json_verb(argv, timeout=300)
    assert code == 0, stderr
    same = data["search"]["same_failure"]
    assert same["original_places"] == ["main -> stuck -> acquire()"], same
    assert "main (in stuck)" in same["hung_elsewhere"], same
    result = (tmp_path / "result" / "busy.py").read_text(encoding="utf-8")
    assert result.count("lock.acquire()") == 2, result  # the deadlock kept


# A C program that deadlocks on a mutex when told `mutex`, else sleeps for good; run.py
# execs it (no Python stack is left to dump: its place is its native stacks').
REAP = """\
#include <pthread.h>
#include <string.h>
#include <unistd.h>
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static void stuck(void) { pthread_mutex_lock(&held); pthread_mutex_lock(&held); }
static void nap(void) { for (;;) sleep(1); }
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "mutex") == 0) stuck();
    nap();
    return 0;
}
"""

EXECS = """\
import os

args = ["./reap"]
args.append("mutex")
os.execv("./reap", args)
"""

EXECS_SPEC = """\
reprospec: 1
name: execs
command: python run.py
run:
  timeout: 3s
expect:
  outcome: hang
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) to build the program")
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_c_programs_hang_that_moved_from_a_mutex_to_a_sleep_is_rejected(tmp_path: Path) -> None:
    # The C program's stack.txt is empty: its place was unread, no difference, and the
    # candidate without `args.append("mutex")` (asleep in nap(), not on the mutex) was
    # kept: run.py minimized to the sleep's hang.
    (tmp_path / "reap.c").write_text(REAP, encoding="utf-8")
    subprocess.run(
        ["cc", "-O0", "-pthread", "-o", str(tmp_path / "reap"), str(tmp_path / "reap.c")],
        check=True,
    )
    argv = _minimize(tmp_path, "run.py", EXECS, EXECS_SPEC, "--budget", "40")
    code, data, stderr = json_verb(argv, timeout=400)
    assert code == 0, stderr
    same = data["search"]["same_failure"]
    (place,) = same["original_places"]
    assert place.startswith("native: "), same  # never compared with a Python place
    assert place.endswith("<-stuck@reap"), same
    assert same["hangs_elsewhere_rejected"] >= 1, same
    assert all(p.endswith("<-nap@reap") for p in same["hung_elsewhere"]), same
    result = (tmp_path / "result" / "run.py").read_text(encoding="utf-8")
    assert "append('mutex')" in result or 'append("mutex")' in result, result
    report = (tmp_path / "result" / "minimize.md").read_text(encoding="utf-8")
    assert f"the original hung in {place.removeprefix('native: ')}: " in report
