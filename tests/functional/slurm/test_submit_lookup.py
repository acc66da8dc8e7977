"""How a job whose sbatch timed out is told in squeue (slurm/submit.py): by the marker its
own sbatch gave it, not by a submit time that slurmctld's clock, behind ours, makes seem
older; and never guessed among several; one squeue no longer lists asked of sacct. This
machine's Slurm (if any) is not asked: sbatch, squeue and sacct are fakes on PATH, squeue
and sacct answering in the fields they are asked for."""

from __future__ import annotations

import os
import re
import threading
from datetime import datetime
from pathlib import Path
from time import monotonic, sleep

import pytest

from reprospec.slurm.queue import Accounted, jobs_marked
from reprospec.slurm.submit import LookupWait, SubmissionUnconfirmed, _sbatch_or_found
from tests.support.fakeslurm import fake_tool

TIMED_OUT = "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
# Records the --comment it was given, then times out as a stopped slurmctld makes it.
SBATCH = """for a; do
  case "$a" in --comment=*) echo "${{a#--comment=}}" > {tools}/marker ;; esac
done
echo "{timed_out}" >&2; exit 1"""
# Each line of `jobs` (id, seconds from now, comment: `@` the sbatch's marker) is a job of
# /r/array.sbatch, task 1, its fields those squeue's --format asks for.
SQUEUE = """for a; do case "$a" in --format=*) fmt="${{a#--format=}}" ;; esac; done
while read -r id off comment; do
  [ "$comment" = @ ] && comment=$(cat {tools}/marker)
  t=$(date -d "$off seconds" +%Y-%m-%dT%H:%M:%S); line=""; IFS='|'
  for f in $fmt; do
    case "$f" in %F) v=$id ;; %K) v=1 ;; %V) v=$t ;; %T) v=PENDING ;; %k) v=$comment ;;
      %o) v=/r/array.sbatch ;; *) v=? ;; esac
    line="$line${{line:+|}}$v"
  done
  unset IFS; echo "$line"
done < {tools}/jobs"""


# Each line of `accounted` (job id as sacct writes it, state, the Comment, the --comment in
# the SubmitLine; `@` the sbatch's marker, `-` none) is a job sacct remembers, its fields
# those sacct's --format asks for; a file `refused` holds sacct's refusal instead.
SACCT = """if [ -f {tools}/refused ]; then cat {tools}/refused >&2; exit 1; fi
for a; do case "$a" in --format=*) fmt="${{a#--format=}}" ;; esac; done
while read -r id state comment given; do
  [ "$comment" = @ ] && comment=$(cat {tools}/marker); [ "$comment" = - ] && comment=""
  [ "$given" = @ ] && given=$(cat {tools}/marker)
  t=$(date +%Y-%m-%dT%H:%M:%S); line=""; IFS=','
  for f in $fmt; do
    case "$f" in JobID) v=$id ;; State) v=$state ;; Submit) v=$t ;; Comment) v=$comment ;;
      SubmitLine) v="sbatch --parsable --comment=$given /r/array.sbatch" ;; *) v=? ;; esac
    line="$line${{line:+|}}$v"
  done
  unset IFS; echo "$line"
done < {tools}/accounted"""


def _tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str, accounted: str = "") -> None:
    fake_tool(tmp_path, "sbatch", SBATCH.format(tools=tmp_path, timed_out=TIMED_OUT))
    fake_tool(tmp_path, "squeue", SQUEUE.format(tools=tmp_path))
    fake_tool(tmp_path, "sacct", SACCT.format(tools=tmp_path))
    (tmp_path / "jobs").write_text(jobs)
    (tmp_path / "accounted").write_text(accounted)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_the_job_an_sbatch_marked_is_found_though_slurmctlds_clock_is_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Submitted "2 s before" the sbatch began by slurmctld's clock: the whole-second time
    # check missed it (exit 3, the queued job unrecorded). 499: the script's job by hand,
    # 501: a second resume's, new too but not marked by this sbatch.
    _tools(tmp_path, monkeypatch, "499 -300 (null)\n500 -2 @\n501 1 reprospec:other\n")
    said: list[str] = []
    job = _sbatch_or_found(
        ["sbatch", "--parsable", "/r/array.sbatch"], frozenset({1}), set(), said.append
    )
    assert job == "500"
    assert said == [
        f"sbatch timed out: {TIMED_OUT}; slurmctld queued it all the same: job 500 "
        "(/r/array.sbatch)"
    ]


def test_two_jobs_either_of_which_may_be_the_sbatchs_are_not_guessed_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's own --comment: no marker, the submit time tells, and two jobs are new
    # (this resume's and a second resume's beside it). The highest was taken.
    _tools(tmp_path, monkeypatch, "500 1 mine\n501 1 mine\n")
    with pytest.raises(SubmissionUnconfirmed) as raised:
        _sbatch_or_found(
            ["sbatch", "--parsable", "--comment=mine", "/r/array.sbatch"],
            frozenset({1}),
            set(),
            lambda _: None,
        )
    assert str(raised.value) == (
        f"sbatch timed out: {TIMED_OUT}; squeue lists 2 jobs of /r/array.sbatch that may be "
        "its (500, 501): which one this sbatch queued is not known (see squeue --me "
        "--format=%i,%V,%k,%o)"
    )
    assert (tmp_path / "marker").read_text() == "mine\n"  # the user's comment, left as it is


def test_no_job_marked_by_the_sbatch_is_unconfirmed_naming_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # New jobs of the script, none of them this sbatch's: the marker said, by which the
    # user tells its job should slurmctld queue it later.
    _tools(tmp_path, monkeypatch, "500 1 (null)\n501 1 reprospec:other\n")
    with pytest.raises(SubmissionUnconfirmed) as raised:
        _sbatch_or_found(
            ["sbatch", "--parsable", "/r/array.sbatch"], frozenset({1}), set(), lambda _: None
        )
    marker = (tmp_path / "marker").read_text().strip()
    assert re.fullmatch("reprospec:[0-9a-f]{32}", marker)
    assert str(raised.value) == (
        f"sbatch timed out: {TIMED_OUT}; squeue lists no job of /r/array.sbatch with this "
        f"sbatch's {marker}, nor does sacct: it may still be queued (see squeue --me "
        "--format=%i,%V,%k,%o)"
    )


@pytest.mark.parametrize(
    "accounted",
    [
        "499 COMPLETED reprospec:other reprospec:other\n500_1 COMPLETED @ @\n",
        # A cluster that keeps no job comments (AccountingStoreFlags): the sbatch line.
        "499 COMPLETED - reprospec:other\n500_1 COMPLETED - @\n",
    ],
)
def test_a_marked_job_that_ended_and_left_squeue_is_found_in_sacct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accounted: str
) -> None:
    # A short job that ended before the lookup and left squeue's memory (MinJobAge): squeue
    # listed no job of the script, and the job, run, was unconfirmed (exit 3, unrecorded).
    _tools(tmp_path, monkeypatch, "", accounted)
    said: list[str] = []
    job = _sbatch_or_found(
        ["sbatch", "--parsable", "/r/array.sbatch"], frozenset({1}), set(), said.append
    )
    assert job == "500"
    assert said == [
        f"sbatch timed out: {TIMED_OUT}; slurmctld queued it all the same: job 500 "
        "(/r/array.sbatch)"
    ]


def test_a_cluster_without_accounting_is_said_where_squeue_lists_no_marked_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch, "")
    (tmp_path / "refused").write_text("Slurm accounting storage is disabled\n")
    with pytest.raises(SubmissionUnconfirmed) as raised:
        _sbatch_or_found(
            ["sbatch", "--parsable", "/r/array.sbatch"], frozenset({1}), set(), lambda _: None
        )
    marker = (tmp_path / "marker").read_text().strip()
    assert str(raised.value) == (
        f"sbatch timed out: {TIMED_OUT}; squeue lists no job of /r/array.sbatch with this "
        f"sbatch's {marker}, and sacct cannot say (Slurm accounting storage is disabled): it "
        "may still be queued (see squeue --me --format=%i,%V,%k,%o)"
    )


def test_two_marked_jobs_sacct_lists_are_said_as_saccts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by sacct (squeue lists none), the message said "squeue lists 2 jobs" and sent
    # the user to squeue, which lists neither.
    _tools(tmp_path, monkeypatch, "", "500_1 COMPLETED @ @\n501_1 COMPLETED @ @\n")
    with pytest.raises(SubmissionUnconfirmed) as raised:
        _sbatch_or_found(
            ["sbatch", "--parsable", "/r/array.sbatch"], frozenset({1}), set(), lambda _: None
        )
    assert str(raised.value) == (
        f"sbatch timed out: {TIMED_OUT}; sacct lists 2 jobs of /r/array.sbatch that may be "
        "its (500, 501): which one this sbatch queued is not known (see sacct "
        "--format=JobID,Submit,Comment,SubmitLine)"
    )


def test_a_second_stop_while_sacct_is_asked_names_sacct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stops were told "squeue says ..." and "squeue is no longer asked" as sacct was,
    # and the end read "sacct cannot say (sacct was stopped)".
    _tools(tmp_path, monkeypatch, "")
    fake_tool(tmp_path, "sacct", f"touch {tmp_path}/sacct-asked; exec sleep 30")
    told: list[str] = []
    wait = LookupWait(told.append)

    def stop_twice() -> None:
        deadline = monotonic() + 30
        while not (tmp_path / "sacct-asked").exists() and monotonic() < deadline:
            sleep(0.05)
        wait.heard(False)
        wait.heard(True)

    stopper = threading.Thread(target=stop_twice, daemon=True)
    stopper.start()
    began = monotonic()
    with pytest.raises(SubmissionUnconfirmed) as raised:
        _sbatch_or_found(
            ["sbatch", "--parsable", "/r/array.sbatch"],
            frozenset({1}),
            set(),
            lambda _: None,
            wait,
        )
    stopper.join()
    assert monotonic() - began < 10
    marker = (tmp_path / "marker").read_text().strip()
    assert re.fullmatch(
        r"stopping once sacct says whether sbatch queued the job \(up to \d+ s\), so that "
        r"slurm\.json records it: press Ctrl-C again to stop waiting \(the run folder is kept\)",
        told[0],
    ), told
    assert told[1:] == ["stopping: sacct is no longer asked whether sbatch queued the job"]
    assert str(raised.value) == (
        f"sbatch timed out: {TIMED_OUT}; squeue lists no job of /r/array.sbatch with this "
        f"sbatch's {marker}, and its lookup in sacct was stopped: it may still be queued "
        "(see squeue --me --format=%i,%V,%k,%o)"
    )


def test_sacct_asked_again_without_submitline_shares_the_first_runs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An sacct older than SubmitLine refuses it after 2 s (a slow slurmdbd): the second
    # run, the comment alone, was given the whole time again (3 + 3 s, not 3).
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    fake_tool(
        tmp_path,
        "sacct",
        'case "$*" in *SubmitLine*) sleep 2; '
        "echo 'sacct: error: Invalid field requested: \"SubmitLine\"' >&2; exit 1 ;; esac\n"
        "exec sleep 30",
    )
    began = monotonic()
    accounted = jobs_marked("reprospec:x", "/r/array.sbatch", datetime.now(), timeout_s=3)
    assert monotonic() - began < 4.5
    assert accounted == Accounted(None, "sacct did not answer within 3 s")
