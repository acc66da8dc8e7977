"""`reprospec minimize --runner docker`: what a container sees of the spec's workdir.

A workdir reached through a link: the runner mounts the plan's workdir (absolute, links
kept) at its container path (`container_workdir`: `/work` for one under /var), and a hang's
dump names its files there. Minimize named the workdir by its real path (`/tmp/...`, its
container path itself), so step 1 read every line of the failing cell's dumps as "" and
took the reduced cell's sleep loop for the failing cell's lock: `a=1 -> 0`, and the program
minimized in another hang. A candidate's data files: the container mounts its folder alone.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image  # noqa: E402
from tests.support.cli import json_verb  # noqa: E402
from tests.support.docker import CLIENT, needs_engine, require_image  # noqa: E402

# B=1 takes the lock; A=1 then waits on it forever (the failing cell's deadlock), A=0
# sleeps in a loop instead: a hang of the same thread, elsewhere.
PROGRAM = """\
import os
import threading
import time

lock = threading.Lock()


def stuck():
    if os.environ.get("B") != "1":
        return
    lock.acquire()
    if os.environ.get("A") == "1":
        lock.acquire()
    while True:
        time.sleep(0.05)


t = threading.Thread(target=stuck)
t.start()
t.join()
"""

# 3 s, as tests/functional/minimize/test_hang_place.py's: each hung attempt's place is read
# at the timeout, so the thread must be at its hang by then on a loaded machine.
SPEC = """\
reprospec: 1
name: linked
environment:
  env:
    A: "${{ matrix.a }}"
    B: "${{ matrix.b }}"
matrix:
  a: ["1", "0"]
  b: ["1", "0"]
command: python stuck.py
run:
  timeout: 3s
expect:
  outcome: hang
  cases:
    - {when: {b: "0"}, outcome: pass}
"""


@needs_engine
def test_step_1_reads_a_linked_workdirs_hangs_where_the_container_ran_them(
    tmp_path: Path,
) -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    (tmp_path / "stuck.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(SPEC, encoding="utf-8")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as links:
        linked = Path(links) / "proj"
        linked.symlink_to(tmp_path)
        argv = [
            sys.executable, "-m", "reprospec", "minimize", str(linked / "spec.yaml"),
            "--runner", "docker", "--format", "json", "--out", str(tmp_path / "out"),
            "-o", str(tmp_path / "result"), "--budget", "30", "-j", "2",
        ]  # fmt: skip
        code, data, stderr = json_verb(argv, timeout=400)
    assert code == 0, stderr
    settings = data["settings"]
    # Isolate finds the hang needs b=1 alone, and a=0,b=1 hangs; but in the sleep loop, not
    # on the lock where the failing cell hung: the failing cell is kept.
    assert settings["cell_after"] == "a=1,b=1", settings
    assert settings["message"] == (
        "a=0,b=1 fails too, but as a hang in stuck -> sleep(), "
        "not in stuck -> acquire() as the failing cell's"
    ), settings
    assert data["search"]["same_failure"]["original_places"] == ["stuck -> acquire()"]


# A candidate is a changed program: one that writes a file of the workdir where the original
# did not (a cut `if not os.path.exists("cache.txt"):`). The write stands for the cut guard,
# run by every candidate (the original's copy too) until a pass cuts it, never by the
# original run in its own workdir. What tells them apart is the folder itself, wherever
# pytest's temporary folder is (under /var both are mounted at /work, one cwd): a
# candidate's cfg.txt is a link to the user's (a symlink; a hard link before, whose count
# is 2), the original's a plain file. The refusal is printed, for the test to find.
DATA_PROGRAM = """\
import os
import sys

if os.path.islink("cfg.txt") or os.stat("cfg.txt").st_nlink > 1:
    try:
        open("cache.txt", "w").write("overwritten")
    except OSError as error:
        print("REFUSED", error)
word = open("cfg.txt").read().strip()
if os.environ.get("X") == "1":
    raise ValueError(word)
print("fine")
"""

DATA_SPEC = """\
reprospec: 1
name: data
environment:
  env:
    X: "${{ matrix.x }}"
matrix:
  x: ["1", "0"]
command: python prog.py
run:
  timeout: 30s
expect:
  outcome: error
  exception: ValueError
  cases:
    - {when: {x: "0"}, outcome: pass}
"""


@needs_engine
@pytest.mark.parametrize("preload", [(), ("--preload", "json")], ids=["own", "live"])
def test_a_candidate_reads_the_workdirs_data_files_in_its_container_and_writes_none(
    tmp_path: Path, preload: tuple[str, ...]
) -> None:
    # A candidate's folder holds its own program files and links to the workdir's others;
    # the container mounts that folder, where a symlink to the original's cfg.txt dangled
    # (the original failed with FileNotFoundError in every attempt, refused), and the
    # original workdir read-only at its own path: the links resolve, a write through one
    # is refused. Hard links instead let the container's root rewrite the user's file
    # (read-only, 0444, as well). Under --preload (`live`: one folder for every candidate,
    # its links made without them) the links pointed nowhere too.
    require_image(CLIENT, image.DEFAULT_IMAGE)
    (tmp_path / "prog.py").write_text(DATA_PROGRAM, encoding="utf-8")
    (tmp_path / "cfg.txt").write_text("boom\n", encoding="utf-8")
    cache = tmp_path / "cache.txt"
    # Writable by its owner: a container run as another user than the file's was refused
    # by the mode (EACCES), a hard link's write as well, and proved nothing of the mount.
    cache.write_text("mine\n", encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(DATA_SPEC, encoding="utf-8")
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(tmp_path / "spec.yaml"),
        "--runner", "docker", "--format", "json", "--out", str(tmp_path / "out"),
        "-o", str(tmp_path / "result"), "--budget", "30", "-j", "2", *preload,
    ]  # fmt: skip
    code, data, stderr = json_verb(argv, timeout=400)
    assert code == 0, stderr
    assert data["message_before"] == "boom", data  # its ValueError, the file read
    assert data["lines_after"] < data["lines_before"]
    assert "import sys" not in (tmp_path / "result" / "prog.py").read_text(encoding="utf-8")
    # The candidates' own program files were written beside the linked ones, never
    # through them: the user's program is as it was.
    assert (tmp_path / "prog.py").read_text(encoding="utf-8") == DATA_PROGRAM
    assert (tmp_path / "cfg.txt").read_text(encoding="utf-8") == "boom\n"
    # The candidates ran the write (their first passes keep it): refused by the read-only
    # mount (EROFS, errno 30), the user's file as it was.
    assert cache.read_text(encoding="utf-8") == "mine\n"
    refused = [
        log
        for log in (tmp_path / "out" / "runs").rglob("stdout.log")
        if "REFUSED [Errno 30]" in log.read_text(encoding="utf-8", errors="replace")
    ]
    assert refused, "no candidate's attempt tried the write through its link"
