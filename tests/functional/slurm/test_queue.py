"""What squeue and sacct answer, and what a run's status makes of their silence
(slurm/queue.py): sacct refusing (no accounting database) adds nothing to squeue's
entries; squeue refusing, or not there, is no answer at all (None), never "no jobs"; an
answer cut at its bound is none either. Each tool is a fake on PATH (squeue's refusal of
an id it no longer knows is Slurm 22.05's own, as asked of this machine's test cluster)."""

from __future__ import annotations

import os
from pathlib import Path
from time import monotonic, sleep

import pytest

from reprospec.slurm.queue import jobs_of_scripts, query_queue
from tests.support.fakeslurm import fake_tool


def test_a_refusing_sacct_leaves_squeues_entries_and_a_refusing_squeue_is_no_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert query_queue(["42"]) is None  # neither tool on PATH
    fake_tool(tmp_path, "squeue", "printf '42|1|43|RUNNING|None\\n'")
    fake_tool(tmp_path, "sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1")
    entries = query_queue(["42", "44"])
    assert entries is not None
    assert [(key, entry.state) for key, entry in entries.items()] == [(("42", 1), "RUNNING")]
    fake_tool(tmp_path, "squeue", "echo 'slurm_load_jobs error: timeout' >&2; exit 1")
    assert query_queue(["42"]) is None
    assert query_queue([""]) is None  # no job asked of


def test_a_wrapper_squeue_whose_child_holds_the_pipe_is_ended_at_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site's squeue wrapper (its child, the real squeue, hanging on a stopped
    slurmctld, holds the pipe): a stop 1 s in ends it then, child and all, where killing
    the wrapper and reading to EOF waited the child's 20 s."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    fake_tool(
        tmp_path,
        "squeue",
        f"echo $$ > {tmp_path}/pid; sleep 20 & echo $! > {tmp_path}/child; wait; exit 0",
    )
    began = monotonic()
    assert (
        jobs_of_scripts(["/x/array.sbatch"], timeout_s=60, stop=lambda: monotonic() - began > 1)
        is None
    )
    assert monotonic() - began < 5
    child = Path(f"/proc/{(tmp_path / 'child').read_text().strip()}/stat")
    # Ended with its wrapper's group: gone, or a zombie its new parent has yet to reap
    # (a SIGKILL takes a moment to land on a loaded machine).
    ended = monotonic() + 5
    while child.exists() and child.read_text().rsplit(")", 1)[1].split()[0] not in "ZX":
        assert monotonic() < ended, child.read_text()
        sleep(0.05)


# squeue as Slurm 22.05 answers --jobs: the lines of the ids it knows (42, an array of two
# tasks, and 45); one id alone that it does not know is refused (exit 1), a list of them
# answered with nothing; `strict` (a file): any unknown id in a list refused, as a squeue
# that asks of each may. Every argv is written to `asked`.
_SQUEUE_BY_ID = """echo "$*" >> {tools}/asked
for a; do case "$a" in --jobs=*) ids="${{a#--jobs=}}" ;; esac; done
[ -n "$ids" ] || {{ echo 'every job of every user' ; exit 0; }}
out=""; unknown=0; n=0
for id in $(echo "$ids" | tr , ' '); do
  n=$((n + 1))
  case "$id" in
    42) out="${{out}}42|1|42_1|RUNNING|None\n42|2|42_2|PENDING|Resources\n" ;;
    45) out="${{out}}45|N/A|45|PENDING|Dependency\n" ;;
    *) unknown=1 ;;
  esac
done
if [ $unknown = 1 ] && {{ [ $n = 1 ] || [ -f {tools}/strict ]; }}; then
  echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1
fi
printf "$out"
"""


@pytest.mark.parametrize("strict", [False, True])
def test_squeue_is_asked_of_the_runs_jobs_alone_and_an_id_it_forgot_is_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    # squeue was asked for every user's jobs, every array expanded: on a large cluster an
    # answer of gigabytes, cut at its bound, and the run's jobs past the cut unseen.
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    fake_tool(tmp_path, "squeue", _SQUEUE_BY_ID.format(tools=tmp_path))
    fake_tool(tmp_path, "sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1")
    if strict:
        (tmp_path / "strict").write_text("")
    entries = query_queue(["45", "42", "44"])
    assert entries is not None
    assert {key: entry.state for key, entry in entries.items()} == {
        ("42", 1): "RUNNING",
        ("42", 2): "PENDING",
        ("45", None): "PENDING",
    }
    asked = (tmp_path / "asked").read_text().splitlines()
    assert asked[0].endswith(" --jobs=42,44,45")
    # A refused list is asked again id by id; a squeue that answers the list, once.
    assert [line.rsplit(" ", 1)[1] for line in asked[1:]] == (
        ["--jobs=42", "--jobs=44", "--jobs=45"] if strict else []
    )
    # One id squeue no longer knows (refused, exit 1) is that job not listed, not silence.
    assert query_queue(["44"]) == {}


def test_ids_asked_alone_share_one_deadline_and_past_it_the_queue_is_not_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A squeue that refuses a list with an unknown id, slow to answer: each id of a run resumed
    # many times asked alone with a 30 s of its own, up to 20 minutes of one `slurm status`.
    import reprospec.slurm.queue as queue

    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    slow = "sleep 0.4\n" + _SQUEUE_BY_ID.format(tools=tmp_path)
    fake_tool(tmp_path, "squeue", slow)
    fake_tool(tmp_path, "sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1")
    (tmp_path / "strict").write_text("")
    monkeypatch.setattr(queue, "_ALONE_S", 1.0)
    ids = [str(job) for job in range(100, 120)]
    assert query_queue(ids) is None  # (not all asked: not known, never "not listed")
    asked = (tmp_path / "asked").read_text().splitlines()
    assert 1 < len(asked) < 1 + len(ids), asked


_FLOOD = "yes '7000001|1|7000001_1|PENDING|Priority' | head -c 70000000"


@pytest.mark.parametrize("cut", ["squeue", "sacct"])
def test_an_answer_cut_at_its_bound_is_no_answer_never_jobs_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    # 70 MB of other lines, then the run's: cut at 64 MiB, the running shard read as not
    # listed, and `slurm status` called it died and suggested a resume.
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    said = {"squeue": "echo '42|1|42_1|RUNNING|None'", "sacct": "echo '42_1|RUNNING'"}
    for tool, line in said.items():
        fake_tool(tmp_path, tool, f"{_FLOOD}; {line}" if tool == cut else line)
    assert query_queue(["42"]) is None
