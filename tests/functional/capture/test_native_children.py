"""`reprospec run` of a real C program beside children of its own that it does not read: where
its hang is placed (a server's `accept` beside an idle worker; a reader of several children,
one asleep and one deadlocked). Built with cc as test_native_program's programs are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reprospec import native
from tests.functional.capture.test_native_program import built, needs_cc, ran_hang
from tests.support.cli import Cli, CliResult

_NAP = "#include <unistd.h>\nint main(void) { for (;;) sleep(1); }\n"

# A server that forks an idle worker (./nap) and waits for a client that never comes.
_SERVER = """\
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
    if (fork() == 0) { execl("./nap", "./nap", (char *)0); _exit(127); }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0) return 1;
    accept(s, 0, 0);
    return 0;
}
"""

# A program that deadlocks on its own mutex.
_DL = """\
#include <pthread.h>
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static void stuck(void) { pthread_mutex_lock(&held); pthread_mutex_lock(&held); }
int main(void) { stuck(); return 0; }
"""

# A launcher of two children, each with its stdout a pipe: ./nap sleeps, ./dl deadlocks, and
# it reads the first one's pipe.
_MULTI = """\
#include <unistd.h>
static int spawn(const char *path) {
    int fds[2];
    if (pipe(fds) != 0) _exit(1);
    if (fork() == 0) {
        dup2(fds[1], 1); close(fds[0]); close(fds[1]);
        execl(path, path, (char *)0);
        _exit(127);
    }
    close(fds[1]);
    return fds[0];
}
int main(void) {
    char buf[1];
    int first = spawn("./nap");
    spawn("./dl");
    return (int)read(first, buf, 1);
}
"""

# A parent that forks ./nap (its output the runner's, as the parent's is), then waits on a
# descriptor of its own nobody writes: a pipe it holds both ends of (`read`), or one end of
# a socket pair (`poll`). Neither is ./nap's output.
_LONELY = """\
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
    int fds[2];
    char buf[1];
    if (fork() == 0) { execl("./nap", "./nap", (char *)0); _exit(127); }
    if (SOCKET) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 1;
        struct pollfd wait = {fds[0], POLLIN, 0};
        return poll(&wait, 1, -1);
    }
    if (pipe(fds) != 0) return 1;
    return (int)read(fds[0], buf, 1);
}
"""

# A program that waits on a pipe of its own nobody writes, and has no child.
_READER = """\
#include <unistd.h>
int main(void) {
    int fds[2];
    char buf[1];
    if (pipe(fds) != 0) return 1;
    return (int)read(fds[0], buf, 1);
}
"""

# A launcher of two children it only reaps: ./rd first (a lower pid, listed first), then ./dl.
_TWO = """\
#include <sys/wait.h>
#include <unistd.h>
static void spawn(const char *path) {
    if (fork() == 0) { execl(path, path, (char *)0); _exit(127); }
}
int main(void) {
    spawn("./rd");
    spawn("./dl");
    while (wait(0) > 0) {}
    return 0;
}
"""


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_server_waiting_for_a_client_beside_its_idle_worker_is_the_place(
    cli: Cli, tmp_path: Path
) -> None:
    # It was placed in the worker's sleep (`clock_nanosleep@libc<-main@nap`), its `accept`
    # taken for a launcher's read of its child's output (review).
    built(tmp_path / "server", "nap", _NAP)
    _, place = ran_hang(cli, tmp_path, "server", _SERVER)
    assert place.endswith("<-main@server"), place
    assert place.startswith("accept"), place


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_reader_of_several_children_is_placed_in_the_deadlocked_one(
    cli: Cli, tmp_path: Path
) -> None:
    # The first child listed won: ./nap's sleep, where ./dl deadlocked on its mutex (review).
    built(tmp_path / "multi", "nap", _NAP)
    built(tmp_path / "multi", "dl", _DL)
    _, place = ran_hang(cli, tmp_path, "multi", _MULTI)
    assert place.endswith("<-stuck@dl"), place


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_compound_command_s_hang_names_the_process_it_ran(cli: Cli, tmp_path: Path) -> None:
    # `./nap; echo done` read `hang in clock_nanosleep@libc<-main@nap`, as if ./nap were the
    # whole command: the runner's `sh -c` child was taken for the command whatever its text.
    work = tmp_path / "nap"
    built(work, "nap", _NAP)
    (work / "spec.yaml").write_text(
        'reprospec: 1\nname: nap\ncommand: "./nap; echo done"\nrun: {timeout: 2s}\n'
        "expect: {outcome: hang}\n"
    )
    run = cli("run", "spec.yaml", "--out", str(tmp_path / "out"), cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    (said,) = [s for s in run.stderr.splitlines() if "default #1:" in s]
    assert said.startswith(
        "[1/1] default #1: hang in a process it ran (nap), in clock_nanosleep@libc<-main@nap ("
    ), said
    (attempt,) = json.loads((run.latest_run() / "results.json").read_text())["cells"][0]["attempts"]
    assert attempt["outcome"]["hung_process"] == "./nap", attempt["outcome"]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize(("socket", "wait"), [(0, "read"), (1, "poll")], ids=["pipe", "socket"])
def test_a_parent_waiting_on_a_descriptor_that_is_not_its_child_s_output_is_the_place(
    cli: Cli, tmp_path: Path, socket: int, wait: str
) -> None:
    # Both idle, the hang was placed in ./nap's sleep (`hang in a process it ran (nap)`):
    # any wait on a descriptor was taken for a read of a child's output. Only a descriptor
    # that is the child's stdout or stderr passes the place to it (test_native_program's
    # ./pp, whose ./nap writes the pipe it reads, still does).
    built(tmp_path / "lonely", "nap", _NAP)
    result, place = ran_hang(cli, tmp_path, "lonely", _LONELY, f"-DSOCKET={socket}")
    assert place.startswith(f"{wait}@libc"), place
    assert place.endswith("<-main@lonely"), place
    (attempt,) = json.loads((result.latest_run() / "results.json").read_text())["cells"][0][
        "attempts"
    ]
    assert "hung_process" not in attempt["outcome"], attempt["outcome"]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_reader_with_nothing_below_it_is_ranked_with_another_branch_s_hang(
    cli: Cli, tmp_path: Path
) -> None:
    # ./rd, listed first, waits on its own pipe; its sibling ./dl deadlocks on its mutex. The
    # place was ./rd's `read@libc<-main@rd`: a reader with nothing below it was taken as the
    # listing's first, never ranked against the other branches' hangs.
    built(tmp_path / "two", "rd", _READER)
    built(tmp_path / "two", "dl", _DL)
    _, place = ran_hang(cli, tmp_path, "two", _TWO)
    assert place.endswith("<-stuck@dl"), place


# Launchers whose wait is fed from below by other means than the child's stdout: the place
# is the child's (`hang in a process it ran (nap)`), as before 838201dd took their own
# waits for the hang. SOCKPAIR: the child's stdout is a socket pair's end (libuv's stdio);
# STATUS: the child holds a status pipe's write end at fd 9 (systemd's notify, gpg's
# --status-fd), its stdout the launcher's own; SELFPIPE: SIGCHLD's handler writes the pipe
# it polls (the self-pipe trick).
_FED = """\
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
static int fds[2];
static void chld(int s) { (void)s; write(fds[1], "x", 1); }
int main(void) {
    char buf[64];
    if (SOCKPAIR ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) : pipe(fds)) return 1;
    if (SELFPIPE) signal(SIGCHLD, chld);
    if (fork() == 0) {
        if (!SELFPIPE) { dup2(fds[1], SOCKPAIR ? 1 : 9); close(fds[0]); close(fds[1]); }
        execl("./nap", "./nap", (char *)0);
        _exit(127);
    }
    if (SELFPIPE) { struct pollfd p = {fds[0], POLLIN, 0}; return poll(&p, 1, -1); }
    close(fds[1]);
    while (read(fds[0], buf, sizeof buf) > 0) {}
    return 0;
}
"""

# A parent that forks ./dl (deadlocked on its mutex), then waits on a pipe of its own.
_LONELY_DL = """\
#include <unistd.h>
int main(void) {
    int fds[2]; char buf[1];
    if (fork() == 0) { execl("./dl", "./dl", (char *)0); _exit(127); }
    if (pipe(fds) != 0) return 1;
    return (int)read(fds[0], buf, 1);
}
"""


def _attempts(cli: Cli, work: Path, command: str, *options: str) -> tuple[CliResult, list[Any]]:
    """`reprospec run` of `command` in `work`, a hang expected in 2 s: its result and attempts."""
    (work / "spec.yaml").write_text(
        f"reprospec: 1\nname: fed\ncommand: {json.dumps(command)}\nrun: {{timeout: 2s}}\n"
        "expect: {outcome: hang}\n"
    )
    run = cli("run", "spec.yaml", "--out", str(work.parent / "out"), *options, cwd=work)
    assert run.code == 0, run.stdout + run.stderr
    cells = json.loads((run.latest_run() / "results.json").read_text())["cells"]
    return run, [attempt for cell in cells for attempt in cell["attempts"]]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize("kind", ["SOCKPAIR", "STATUS"])
def test_a_launcher_fed_by_its_child_other_than_by_a_stdout_pipe_gives_way_to_it(
    cli: Cli, tmp_path: Path, kind: str
) -> None:
    # 838201dd read a wait as the launcher's own unless a pipe it reads was the child's fd 1
    # or 2: a socket pair's end (its two ends two inodes) and a pipe at fd 9 were taken for
    # nobody's, and the hang placed in the launcher's `read@libc<-main@fed` (review).
    work = tmp_path / "fed"
    built(work, "nap", _NAP)
    built(work, "fed", _FED, *(f"-D{k}={int(k == kind)}" for k in ("SOCKPAIR", "SELFPIPE")))
    run, (attempt,) = _attempts(cli, work, "./fed")
    assert attempt["outcome"]["hung_native"] == "clock_nanosleep@libc<-main@nap", attempt["outcome"]
    assert attempt["outcome"]["hung_process"] == "./nap", attempt["outcome"]
    assert "hang in a process it ran (nap)" in run.stderr, run.stderr


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_launcher_told_of_its_child_s_end_by_a_handler_gives_way_to_it_in_every_attempt(
    cli: Cli, tmp_path: Path
) -> None:
    # Its SIGCHLD handler writes the pipe it polls: the place was its own `poll`, or, where
    # the runner's stop of the child ran the handler, `chld@fed`: one hang, two signatures
    # across attempts. A process that catches SIGCHLD is not known: the child's place.
    work = tmp_path / "fed"
    built(work, "nap", _NAP)
    built(work, "fed", _FED, "-DSOCKPAIR=0", "-DSELFPIPE=1")
    _, attempts = _attempts(cli, work, "./fed", "--repeat", "3")
    places = {attempt["outcome"]["hung_native"] for attempt in attempts}
    assert places == {"clock_nanosleep@libc<-main@nap"}, [a["outcome"] for a in attempts]


@needs_cc
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_make_j_waiting_for_a_jobserver_token_gives_way_to_its_recipe(
    cli: Cli, tmp_path: Path
) -> None:
    # `make -j2` of three recipes, each ./nap: make waits in `pselect` for a token of its
    # jobserver pipe, which its children hold; it was taken for its own hang
    # (pselect@libc<-jobserver_acquire@make), or its SIGCHLD handler for the place.
    work = tmp_path / "make"
    built(work, "nap", _NAP)
    (work / "Makefile").write_text("all: a b c\na b c:\n\t./nap\n")
    _, attempts = _attempts(cli, work, "make -j2", "--repeat", "2")
    places = {attempt["outcome"]["hung_native"] for attempt in attempts}
    assert places == {"clock_nanosleep@libc<-main@nap"}, [a["outcome"] for a in attempts]


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
def test_a_reader_of_a_pipe_of_its_own_gives_way_to_its_deadlocked_child(
    cli: Cli, tmp_path: Path
) -> None:
    # Its idle `read` won over its own child's deadlock (read@libc<-main@lonely): a reader
    # with nothing below that it reads was ranked against other branches only (review).
    built(tmp_path / "lonely", "dl", _DL)
    _, place = ran_hang(cli, tmp_path, "lonely", _LONELY_DL)
    assert place == "lll_lock_wait@libc<-stuck@dl", place


# Launchers that wait on what their child holds by other means than a pipe or a socket: a
# FIFO (mkfifo) the child opens by its path at fd 9, an eventfd it inherits at fd 9.
_UNFOLLOWED = """\
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
    int r;
    if (FIFO) { unlink("f"); mkfifo("f", 0600); r = open("f", O_RDONLY | O_NONBLOCK | O_CLOEXEC); }
    else r = eventfd(0, 0);
    if (fork() == 0) {
        dup2(FIFO ? open("f", O_WRONLY) : r, 9);
        execl("./nap", "./nap", (char *)0);
        _exit(127);
    }
    struct pollfd p = {r, POLLIN, 0};
    return poll(&p, 1, -1);
}
"""


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize("fifo", [1, 0], ids=["fifo", "eventfd"])
def test_a_launcher_waiting_on_a_descriptor_not_followed_gives_way_to_its_child(
    cli: Cli, tmp_path: Path, fifo: int
) -> None:
    # A link that was neither a pipe nor a socket was passed over as nobody's: the launcher's
    # own `poll@libc<-main@unf` was the place. Only a regular file, a folder and an ordinary
    # character device are known to be fed by nothing below.
    work = tmp_path / "unf"
    built(work, "nap", _NAP)
    built(work, "unf", _UNFOLLOWED, f"-DFIFO={fifo}")
    _, (attempt,) = _attempts(cli, work, "./unf")
    assert attempt["outcome"]["hung_native"] == "clock_nanosleep@libc<-main@nap", attempt["outcome"]
    assert attempt["outcome"]["hung_process"] == "./nap", attempt["outcome"]


# A FUSE daemon (the raw /dev/fuse protocol) serving one file mnt/f, which forks ./fusefd: it
# opens mnt/f, then waits on a pipe of its own beside a sleeping ./nap.
_FUSE_DAEMON = """\
import ctypes, os, struct, sys
here = os.path.dirname(os.path.abspath(__file__)); mnt = os.path.join(here, "mnt")
fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"revfuse", mnt.encode(), b"fuse", 0, opts) != 0:
    sys.exit("mount: errno %d" % ctypes.get_errno())
if os.fork() == 0:
    os.execl("./fusefd", "./fusefd")
def attr(node):
    mode, size = (0o40755, 0) if node == 1 else (0o100644, 5)
    return struct.pack("=QQQQQQIIIIIIIIII", node, size, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0,
                       4096, 0)
def reply(unique, err=0, body=b""):
    os.write(fd, struct.pack("=IiQ", 16 + len(body), -err if err else 0, unique) + body)
while True:
    data = os.read(fd, 1 << 20)
    ln, op, unique, node = struct.unpack_from("=IIQQ", data)
    arg = data[40:ln]
    if op == 26:  # INIT
        reply(unique, 0, struct.pack("=IIIIHHI", 7, 22, 0, 0, 16, 12, 4096))
    elif op == 1:  # LOOKUP
        if node == 1 and arg.split(b"\\0")[0] == b"f":
            reply(unique, 0, struct.pack("=QQQQII", 2, 0, 0, 0, 0, 0) + attr(2))
        else:
            reply(unique, 2)
    elif op == 3:  # GETATTR, its answer never cached: every stat asks the daemon
        reply(unique, 0, struct.pack("=QII", 0, 0, 0) + attr(node))
    elif op in (14, 27):  # OPEN, OPENDIR
        reply(unique, 0, struct.pack("=QII", 0, 0, 0))
    elif op == 15:  # READ
        reply(unique, 0, b"hello")
    elif op in (2, 36):  # FORGET, INTERRUPT: no reply
        pass
    elif op in (18, 25, 29):  # RELEASE, FLUSH, RELEASEDIR
        reply(unique)
    else:
        reply(unique, 38)
"""

_FUSE_READER = """\
#include <fcntl.h>
#include <unistd.h>
int main(void) {
    int f = open("mnt/f", O_RDONLY), fds[2];
    if (f < 0 || pipe(fds) != 0) return 1;
    if (fork() == 0) { execl("./nap", "./nap", (char *)0); _exit(127); }
    char c;
    return (int)read(fds[0], &c, 1);
}
"""


def _can_mount_fuse() -> bool:
    """Whether this machine lets a test mount FUSE in a mount namespace of its own (root,
    /dev/fuse, unshare): CI's container may not."""
    import os
    import subprocess

    if os.geteuid() != 0 or not Path("/dev/fuse").exists() or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], check=False)
    return probe.returncode == 0


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.skipif(not _can_mount_fuse(), reason="no FUSE mount in a namespace of its own here")
def test_a_hung_tree_holding_a_file_its_own_fuse_daemon_serves_is_read_without_asking_it(
    tmp_path: Path,
) -> None:
    # The pipes' reading of a stopped tree stat'ed each descriptor's file (0117885d): a FUSE
    # file's stat waits for its daemon, stopped with the tree, for good: the engine never
    # ended, its attempt's tree left stopped (a review). A FUSE file is not stat'ed: the
    # reader's pipes are not known, and the hang is placed as before.
    import os
    import signal
    import subprocess
    import sys

    work = tmp_path / "fuse"
    built(work, "nap", _NAP)
    built(work, "fusefd", _FUSE_READER)
    (work / "mnt").mkdir()
    (work / "srv.py").write_text(_FUSE_DAEMON)
    (work / "spec.yaml").write_text(
        "reprospec: 1\nname: fuse\ncommand: python3 srv.py\nrun: {timeout: 3s}\n"
        "expect: {outcome: hang}\n"
    )
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": root}
    argv = ["unshare", "-m", "--propagation", "private", sys.executable, "-m", "reprospec"]
    engine = subprocess.Popen(
        [*argv, "run", "spec.yaml", "--out", str(tmp_path / "out")],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = engine.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(engine.pid, signal.SIGKILL)
        for proc in Path("/proc").iterdir():  # the attempt's tree, left stopped
            try:
                if proc.name.isdigit() and (proc / "cwd").readlink() == work:
                    os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass
        engine.communicate()
        pytest.fail("the engine did not end: it waited on the FUSE daemon it had stopped")
    assert engine.returncode == 0, stdout + stderr
    assert "hang in <module> (srv.py:" in stderr + stdout, stderr + stdout


# hlock's deadlocked SIGALRM handler in a parent that also has a child and a SIGCHLD handler:
# the runner's stop of the child enters that handler on top of the deadlock (NEST), or a
# SIGALRM handler that waits (blocking) for its child that hangs (WAIT).
_HANDLERS = """\
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pid_t child;
static void on_alarm(int s) {
    (void)s;
    if (WAIT) { waitpid(child, 0, 0); return; }
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
}
static void chld(int s) { (void)s; }
int main(void) {
    if (!WAIT) signal(SIGCHLD, chld);
    signal(SIGALRM, on_alarm);
    child = fork();
    if (child == 0) { execl("./nap", "./nap", (char *)0); _exit(127); }
    if (!WAIT) pthread_mutex_lock(&m);
    alarm(1);
    for (;;) pause();
}
"""


@needs_cc
@pytest.mark.skipif(not native.can_read(), reason="neither eu-stack nor gdb is installed")
@pytest.mark.parametrize("wait", [0, 1], ids=["nested", "waitpid"])
def test_a_handler_that_waits_is_read_under_one_the_stop_entered(
    cli: Cli, tmp_path: Path, wait: int
) -> None:
    # The handlers were peeled from the outermost: a SIGCHLD handler the stop entered on top of
    # a deadlocked SIGALRM handler was named (`chld@hs`); and a handler waiting in waitpid was
    # taken for code that runs, main's pause named (a late review of a19f5d29).
    work = tmp_path / "hs"
    built(work, "nap", _NAP)
    built(work, "hs", _HANDLERS, f"-DWAIT={wait}")
    _, (attempt,) = _attempts(cli, work, "./hs")
    place = attempt["outcome"]["hung_native"]
    if wait:
        assert place == "clock_nanosleep@libc<-main@nap", attempt["outcome"]
    else:
        assert place.endswith("<-on_alarm@hs"), attempt["outcome"]
