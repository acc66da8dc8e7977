"""`reprospec slurm`: job arrays on a real one-host Slurm (scripts/slurm-setup.sh), status, resume.

The cluster tests submit with the real sbatch and wait for the real slurmctld/slurmd;
outside CI they skip when no Slurm answers, in CI they fail.
"""

from __future__ import annotations

import fcntl
import json
import shlex
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from reprospec.slurm import RunStatus, load
from tests.support.cli import ROOT, SPECS, Cli, ExampleRun, run_cli
from tests.support.paths import session_folder
from tests.support.slurm import (
    cluster_held,
    needs_cluster,
    only_run,
    require_cluster,
    wait_for,
    wait_settled,
)

# Real-engine tests (a running slurmctld/slurmd): `-m "not docker and not slurm"` skips them.
pytestmark = pytest.mark.slurm


def _facts(results: dict[str, Any]) -> dict[str, Any]:
    """What must be equal cell for cell: verdict, rate, and every attempt's outcome.

    Not a crash's `exception`: how the main process noticed a dead DataLoader worker
    depends on timing (torch's RuntimeError, or the pin-memory thread's ConnectionResetError).
    """

    def fact(outcome: dict[str, Any], key: str) -> object:
        return None if key == "exception" and outcome.get("kind") == "crash" else outcome.get(key)

    keys = ("kind", "signal", "where", "phase", "step", "exception")
    return {
        cell["id"]: (
            cell["verdict"],
            cell["rate"]["matched"],
            cell["rate"]["attempts"],
            [
                (a["attempt"], a["matched"], *(fact(a["outcome"] or {}, k) for k in keys))
                for a in cell["attempts"]
            ],
        )
        for cell in results["cells"]
    }


def _merged_results(status: RunStatus) -> dict[str, Any]:
    assert status.merge.state == "done", status
    assert status.merge.report is not None, status
    data: dict[str, Any] = json.loads((status.merge.report.parent / "results.json").read_text())
    return data


def _write_spec(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- without a cluster -------------------------------------------------------------------


def test_dry_run_prints_the_array_and_merge_scripts_and_submits_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    result = cli(
        "slurm",
        str(SPECS / "segfault-command.yaml"),
        "--shards",
        "2",
        "--gpus-per-shard",
        "1",
        "--partition",
        "gpu",
        "--time",
        "0:30:00",
        "--sbatch-arg=--account=lab",
        "-m",
        "num_workers=2",
        "--set",
        "run.timeout=90s",
        "--repeat",
        "3",
        "--timeout",
        "45s",
        "-j",
        "2",
        "--python",
        sys.executable,
        "--dry-run",
        "--out",
        str(shared),
    )
    assert result.code == 0, result.stderr
    out = result.stdout
    for line in (
        "#SBATCH --array=1-2",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=0:30:00",
        "#SBATCH --cpus-per-task=2",
    ):
        assert line in out
    # One array task per shard, each into its own folder, with the same runner options.
    assert '--shard "$K"/2 --out "$OUT"' in out
    for words in (
        "-m num_workers=2",
        "--set run.timeout=90s",
        "--repeat 3",
        "--timeout 45s",
        "-j 2",
        f"--python {sys.executable}",
        "--runner local",
    ):
        assert words in out, words
    assert "--dependency=afterany:<array job>" in out
    assert "--account=lab" in out
    assert 'merge "${runs[@]}" --out "$RUN/merged"' in out
    assert not shared.exists(), "a dry run writes nothing"
    # Both scripts are valid bash.
    scripts = out.split("# would submit:")[0].split("# /")
    for script in scripts[1:]:
        body = script.split("\n", 1)[1]
        check = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
        assert check.returncode == 0, check.stderr


def test_slurm_refuses_bad_input_with_exit_2(cli: Cli, tmp_path: Path) -> None:
    spec = str(SPECS / "segfault-command.yaml")
    no_shards = cli("slurm", spec, "--dry-run")
    assert no_shards.code == 2
    assert "--shards" in no_shards.stderr
    too_many = cli("slurm", spec, "--shards", "5", "--dry-run")
    assert too_many.code == 2
    assert "only 4 attempts" in too_many.stderr
    bad = _write_spec(tmp_path / "bad.yaml", "reprospec: 1\nname: x\ncommand: true\nexpect: {}\n")
    located = cli("slurm", str(bad), "--shards", "1", "--dry-run")
    assert located.code == 2
    assert f"{bad}:" in located.stderr
    assert "Traceback" not in located.stderr
    unknown = cli("slurm", "status", "no-such-run", "--out", str(tmp_path))
    assert unknown.code == 2
    assert "no Slurm run 'no-such-run'" in unknown.stderr
    # `slurm status` without its RUN said `slurm SPEC needs --shards N`, reading `status`
    # as a spec (and, with --shards, `status: no such file`).
    for verb, extra in (("status", []), ("resume", []), ("status", ["--shards", "2"])):
        no_run = cli("slurm", verb, *extra, "--out", str(tmp_path))
        assert no_run.code == 2, no_run.stderr
        assert f"slurm {verb} needs RUN" in no_run.stderr
        assert "--shards" not in no_run.stderr
        assert "Traceback" not in no_run.stderr


# -- on the cluster ------------------------------------------------------------------------


@needs_cluster
@pytest.mark.usefixtures("time_limited_run")
@pytest.mark.slow
def test_segfault_spec_in_two_shards_merges_to_what_a_local_run_gives(
    cli: Cli, tmp_path: Path, example_run: ExampleRun
) -> None:
    pytest.importorskip("torch")
    require_cluster()
    shared = tmp_path / "shared"
    # The example's two cells with DataLoader workers (the crash and the pass beside it), one
    # per shard: each cell is a Slurm task that imports torch; the two without workers would
    # add no path through Slurm that these do not take.
    submitted = cli(
        "slurm", str(SPECS / "segfault.yaml"), "-m", "num_workers=2", "--shards", "2",
        "--out", str(shared),
    )  # fmt: skip
    assert submitted.code == 0, submitted.stderr
    assert "array job" in submitted.stdout
    assert "merge job" in submitted.stdout
    run_dir = only_run(shared)
    status = wait_settled(run_dir)
    assert [s.state for s in status.shards] == ["done", "done"], status
    merged = _merged_results(status)

    local = example_run("segfault.yaml")  # the examples' own local run, read here too
    assert local.code == 0, local.stderr
    with_workers = {k: v for k, v in _facts(local.results()).items() if "num_workers=2" in k}
    assert len(with_workers) == 2, with_workers
    assert _facts(merged) == with_workers
    # The crash is recorded with its signal, where and step; the merge was not held up by it.
    crashed = {c["id"]: c for c in merged["cells"]}["num_workers=2,pin_memory=true"]
    outcome = crashed["attempts"][0]["outcome"]
    assert (outcome["signal"], outcome["where"], outcome["step"]) == ("SIGSEGV", "worker", 7)
    log = status.merge.log
    assert log is not None
    # The merge is done once its results are written; the job then prints the run's status
    # and its exit line, which the log may not hold yet.

    def merge_job_exited() -> bool:
        return "reprospec-slurm: exit" in log.read_text()

    wait_for(merge_job_exited, timeout=60)
    assert "reprospec-slurm: exit 0" in log.read_text()
    # Each shard had its own store; nothing wrote one SQLite file from two tasks.
    assert (run_dir / "shards" / "1" / "results.db").is_file()
    assert (run_dir / "shards" / "2" / "results.db").is_file()
    assert not (shared / "results.db").exists()
    shard_of = {
        json.loads(p.read_text())["shard"]
        for p in (run_dir / "shards").glob("*/runs/*/results.json")
    }
    assert shard_of == {"1/2", "2/2"}


HOLD_SPEC = """\
reprospec: 1
name: slurm-{name}
matrix:
  part: [hold, quick]
environment:
  env: {{MARK: "{mark}", STARTED: "{started}"}}
command: >-
  if [ "${{{{ matrix.part }}}}" = hold ] && [ ! -e "$MARK" ]; then
  touch "$MARK"; touch "$STARTED"; sleep 600; fi; echo finished
run:
  timeout: 900s
expect:
  outcome: pass
"""


def _hold_spec(tmp_path: Path, name: str) -> Path:
    """Cell `hold` sleeps 10 minutes the first time it runs and passes at once after that."""
    return _write_spec(
        tmp_path / f"{name}.yaml",
        HOLD_SPEC.format(name=name, mark=tmp_path / "held-once", started=tmp_path / "started"),
    )


def _resume_and_check(cli: Cli, run_dir: Path, *argv: str) -> None:
    resumed = cli(*argv)
    assert resumed.code == 0, resumed.stderr
    assert "resubmitted shard 1 of 2" in resumed.stdout
    run = load(run_dir)
    assert run.submissions[-1].shards == (1,)
    status = wait_settled(run_dir)
    assert [s.state for s in status.shards] == ["done", "done"], status
    merged = _merged_results(status)
    assert {c["id"]: c["verdict"] for c in merged["cells"]} == {
        "part=hold": "reproduced",
        "part=quick": "reproduced",
    }
    # Slurm's SIGTERM reached the attempt too: whether the engine recorded that as the
    # attempt's end or not, it is no crash of the spec, and the resumed shard ran it again.
    hold = {c["id"]: c for c in merged["cells"]}["part=hold"]
    assert [a["outcome"]["kind"] for a in hold["attempts"]] == ["pass"]


# The time-limit test's run waits on Slurm's clock: `--time 1` ends its held shard 60-90 s
# after the shard starts (limits are whole minutes, checked every 30 s). It is submitted when
# the first cluster test of this module starts (usefixtures below) and is read by the
# time-limit test, the module's last: the wait runs beside the other cluster tests instead
# of after them, a worker idle for it no more.
TIME_LIMIT_TEST = "test_a_shard_past_its_time_limit_is_reported_and_resumed"


@dataclass(frozen=True)
class TimeLimitedRun:
    """The held-shard run submitted with `--time 1`: where it is, and what submitting said."""

    run_dir: Path
    code: int
    stderr: str


@pytest.fixture(scope="session")
def time_limited_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> TimeLimitedRun | None:
    """Submitted once per session, and only when the time-limit test was collected (None
    otherwise): under xdist the workers share it as they share the examples' runs (the
    first to ask submits under an exclusive lock and writes down the run; the others read
    it), so the module's tests may run on either worker and one job is held, not two."""
    if not any(item.name == TIME_LIMIT_TEST for item in request.session.items):
        return None
    require_cluster()
    folder = session_folder(tmp_path_factory, "slurm-time-limit")
    record = folder / "submitted.json"
    with (folder / "submit.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not record.is_file():
            spec = _hold_spec(folder, "time-limit")
            shared = folder / "shared"
            # Session fixtures are set up before the autouse _one_cluster lock: taken here,
            # or this submitted as another worker had slurmctld stopped.
            with cluster_held(alone=False):
                submitted = run_cli(
                    folder / "out", "slurm", str(spec), "--shards", "2", "--time", "1",
                    "--out", str(shared),
                )  # fmt: skip
            run_dir = only_run(shared) if submitted.code == 0 else shared
            saved = {"run_dir": str(run_dir), "code": submitted.code, "stderr": submitted.stderr}
            record.write_text(json.dumps(saved), encoding="utf-8")
    saved = json.loads(record.read_text(encoding="utf-8"))
    return TimeLimitedRun(Path(saved["run_dir"]), saved["code"], saved["stderr"])


@needs_cluster
@pytest.mark.usefixtures("time_limited_run")
def test_a_cancelled_shard_is_reported_the_merge_says_so_and_resume_finishes_it(
    cli: Cli, tmp_path: Path
) -> None:
    require_cluster()
    shared = tmp_path / "shared"
    spec = _hold_spec(tmp_path, "cancelled")
    submitted = cli("slurm", str(spec), "--shards", "2", "--out", str(shared))
    assert submitted.code == 0, submitted.stderr
    run_dir = only_run(shared)
    started = tmp_path / "started"
    wait_for(started.exists)
    array_job = load(run_dir).submissions[-1].array_job
    subprocess.run(["scancel", f"{array_job}_1"], check=True)

    status = wait_settled(run_dir)
    first, second = status.shards
    assert (first.state, second.state) == ("died", "done"), status
    assert first.detail.startswith("cancelled")
    assert "CANCELLED AT" in first.detail
    # The merge ran anyway (afterany) and refused to merge an incomplete set: no hang.
    assert status.merge.state == "failed"
    assert "not merging" in status.merge.detail
    shown = cli("slurm", "status", str(run_dir))
    assert shown.code == 3
    assert "reprospec slurm resume" in shown.stdout
    assert "died" in shown.stdout
    assert "cancelled" in shown.stdout
    _resume_and_check(cli, run_dir, "slurm", str(run_dir), "--resume")


@needs_cluster
def test_options_sbatch_refuses_leave_no_run_folder(cli: Cli, tmp_path: Path) -> None:
    # The run's folder stayed when sbatch refused the job (`--partition nosuch`):
    # `slurm status` listed it `never submitted`, and its `resume` only submitted the same
    # refused options again, the one set it keeps.
    require_cluster()
    shared = tmp_path / "shared"
    shared.mkdir()
    spec = str(SPECS / "segfault-command.yaml")
    # (A --time sbatch cannot read is exit 2 before planning now: an option sbatch does not
    # know is one it alone refuses.)
    for bad in (["--partition", "no-such-partition"], ["--sbatch-arg=--no-such-option"]):
        refused = cli("slurm", spec, "--shards", "2", *bad, "--out", str(shared))
        assert refused.code == 3, refused.stdout + refused.stderr
        assert "sbatch refused the job" in refused.stderr
        # Nor the folder above it that it made: an empty SHARED/slurm stayed. SHARED,
        # there before, stays.
        assert not (shared / "slurm").exists(), "no folder of a run never submitted"
        assert shared.is_dir()


SILENT_SPEC = """\
reprospec: 1
name: slurm-silent
matrix:
  i: [1, 2]
command: "true"
expect:
  outcome: pass
"""


@needs_cluster
@pytest.mark.usefixtures("time_limited_run")
def test_status_counts_silent_passes_and_says_why_a_shard_failed(cli: Cli, tmp_path: Path) -> None:
    # A silent pass leaves no attempt folder, which status counted: a shard done with both
    # its attempts read `done 0/2 attempts`. And a shard whose `reprospec run` exited 3 on
    # its own (an interpreter that is no Python) read `died ... (Slurm state FAILED)`, not
    # its error, as if a resubmit could help.
    require_cluster()
    spec = _write_spec(tmp_path / "silent.yaml", SILENT_SPEC)
    shared = tmp_path / "shared"
    done = cli("slurm", str(spec), "--shards", "1", "--out", str(shared))
    assert done.code == 0, done.stderr
    status = wait_settled(only_run(shared))
    (shard,) = status.shards
    assert (shard.state, shard.attempts_started, shard.attempts_planned) == ("done", 2, 2)
    assert "2/2 attempts" in cli("slurm", "status", str(only_run(shared))).stdout
    # Python on the login node, so submitted (slurm checks --python before it submits,
    # 0964e1b8); no Python on the node (a path the nodes see another way: here, within a
    # Slurm job), so the task's run exits 3.
    fake = tmp_path / "fake-python"
    fake.write_text(f'#!/bin/sh\n[ -n "$SLURM_JOB_ID" ] && exit 1\nexec {sys.executable} "$@"\n')
    fake.chmod(0o755)
    broken = tmp_path / "broken"
    failed = cli("slurm", str(spec), "--shards", "1", "--python", str(fake), "--out", str(broken))
    assert failed.code == 0, failed.stderr
    status = wait_settled(only_run(broken))
    (shard,) = status.shards
    assert shard.state == "failed", status
    assert f"not a Python 3 interpreter: {fake}" in shard.detail


@needs_cluster
def test_a_shared_folder_and_a_workdir_with_spaces_and_quotes_submit_and_merge(
    cli: Cli, tmp_path: Path
) -> None:
    # `--out "/shared/sl 9"` (or a spec's folder with a space, the task's --chdir)
    # was `sbatch refused the job: ... Invalid directive found in batch script: 9/slurm/...`,
    # exit 3, nothing submitted: the #SBATCH word ended at the space.
    require_cluster()
    workdir = tmp_path / "we ird"
    workdir.mkdir()
    spec = _write_spec(workdir / "sil ent.yaml", SILENT_SPEC)
    shared = tmp_path / "sl 9" / 'it\'s "q"'
    done = cli("slurm", spec.name, "--shards", "2", "--out", str(shared), cwd=workdir)
    assert done.code == 0, done.stderr
    # The commands it prints to follow the run paste into a shell as they read.
    lines = [line.strip() for line in done.stdout.splitlines()]
    follow = shlex.split(next(line for line in lines if line.startswith("reprospec slurm")))
    assert follow == ["reprospec", "slurm", "status", str(only_run(shared))]
    listed = next(line for line in lines if line.startswith("(listed by: "))
    assert shlex.split(listed.removeprefix("(listed by: ").removesuffix(")"))[-1] == str(shared)
    status = wait_settled(only_run(shared))
    assert [s.state for s in status.shards] == ["done", "done"], status
    assert status.merge.state == "done", status
    assert _merged_results(status)["summary"]["reproduced"] == 2


@needs_cluster
def test_a_shared_folder_and_a_workdir_with_a_hash_submit_and_merge(
    cli: Cli, tmp_path: Path
) -> None:
    # sbatch reads an unquoted `#` in a #SBATCH line as a comment's start: the task ran in
    # `.../work` (`--chdir=.../work#1`), which is no folder, and its log went to the file
    # `.../run` (`--output=.../run#1/...`).
    require_cluster()
    workdir = tmp_path / "work#1"
    workdir.mkdir()
    spec = _write_spec(workdir / "silent.yaml", SILENT_SPEC)
    shared = tmp_path / "run#1"
    done = cli("slurm", spec.name, "--shards", "1", "--out", str(shared), cwd=workdir)
    assert done.code == 0, done.stderr
    status = wait_settled(only_run(shared))
    assert [s.state for s in status.shards] == ["done"], status
    assert status.merge.state == "done", status
    assert list((only_run(shared) / "logs").glob("shard-1-*.out")), "the task's log is not there"
    assert not (tmp_path / "run").exists()


@needs_cluster
def test_a_spec_edited_while_its_tasks_wait_is_refused_by_the_tasks(
    cli: Cli, tmp_path: Path
) -> None:
    # The tasks ran the spec file as it was when each started: edited while they
    # waited in the queue, they ran the edited spec (output v2, exit 1 where v1 passed),
    # never the one `reprospec slurm` validated and split.
    require_cluster()
    spec = _write_spec(tmp_path / "edited.yaml", SILENT_SPEC)
    shared = tmp_path / "shared"
    held = cli("slurm", str(spec), "--shards", "2", "--sbatch-arg=--hold", "--out", str(shared))
    assert held.code == 0, held.stderr
    run_dir = only_run(shared)
    spec.write_text(SILENT_SPEC.replace('"true"', '"false"'))
    sub = load(run_dir).submissions[-1]
    subprocess.run(["scontrol", "release", sub.array_job, sub.merge_job], check=True)
    status = wait_settled(run_dir)
    assert [s.state for s in status.shards] == ["failed", "failed"], status
    for shard in status.shards:
        assert shard.detail == (
            f"reprospec run exited 2 without results: reprospec: {spec} changed since "
            f"reprospec slurm planned this run: shard {shard.shard} would run another "
            "spec; submit it again"
        )
    assert status.merge.state == "failed", status
    # The merge job's advice is status's, said when it ran: it had said to resume, which
    # is refused below.
    assert status.merge.log is not None
    not_merging = status.merge.log.read_text().splitlines()[-2]
    assert not_merging.startswith("reprospec-slurm: not merging: shards 1, 2 have no"), not_merging
    assert "slurm resume" not in not_merging
    assert f"{spec} changed since reprospec slurm planned run" in status.merge.detail
    # Neither status nor resume sends it again: each task sent would refuse it once more
    # (resume submitted both, which failed the same way, and status said to resume).
    said = cli("slurm", "status", str(run_dir))
    assert said.code == 3, said.stderr
    hint = said.stdout.splitlines()[-1]
    assert "reprospec slurm resume" not in hint
    assert f"{spec} changed since reprospec slurm planned run {run_dir.name}" in hint
    refused = cli("slurm", "resume", str(run_dir))
    assert refused.code == 2, refused.stdout + refused.stderr
    assert "not resubmitted" in refused.stderr
    assert "submit the spec again" in refused.stderr
    assert len(load(run_dir).submissions) == 1
    spec.write_text(SILENT_SPEC)  # put back as it was: resume sends the shards again
    resumed = cli("slurm", "resume", str(run_dir))
    assert resumed.code == 0, resumed.stderr
    sub = load(run_dir).submissions[-1]  # held as the first (its --sbatch-arg is kept)
    subprocess.run(["scontrol", "release", sub.array_job, sub.merge_job], check=True)
    status = wait_settled(run_dir)
    assert [s.state for s in status.shards] == ["done", "done"], status


GRES_SPEC = """\
reprospec: 1
name: slurm-gres
environment:
  gpus: 1
matrix:
  i: [1, 2, 3, 4]
command: echo "cvd=$CUDA_VISIBLE_DEVICES gres=$SLURM_JOB_GPUS"
expect:
  outcome: pass
"""


@needs_cluster
@pytest.mark.usefixtures("time_limited_run")
def test_each_task_hands_out_the_gpus_slurm_gave_it_through_gres(cli: Cli, tmp_path: Path) -> None:
    require_cluster()
    spec = _write_spec(tmp_path / "gres.yaml", GRES_SPEC)
    shared = tmp_path / "shared"
    # A login shell's CUDA_VISIBLE_DEVICES must not leak into the tasks: only GRES counts.
    env = {"CUDA_VISIBLE_DEVICES": "0,1"}
    ok = cli(
        "slurm",
        str(spec),
        "--shards",
        "2",
        "--gpus-per-shard",
        "1",
        "--out",
        str(shared / "one"),
        env=env,
    )
    assert ok.code == 0, ok.stderr
    too_few = cli(
        "slurm",
        str(spec),
        "--shards",
        "2",
        "--gpus-per-shard",
        "1",
        "--set",
        "environment.gpus=2",
        "--out",
        str(shared / "two"),
        env=env,
    )
    assert too_few.code == 0, too_few.stderr

    status = wait_settled(only_run(shared / "one"))
    merged = _merged_results(status)
    assert status.merge.report is not None
    run_dir = status.merge.report.parent
    seen = set()
    for cell in merged["cells"]:
        assert cell["verdict"] == "reproduced", cell
        attempt = cell["attempts"][0]
        printed = (run_dir / attempt["logs"] / "stdout.log").read_text().split()
        fields = dict(word.split("=", 1) for word in printed)
        # The attempt's GPU is the one Slurm allocated to its task.
        assert fields["cvd"] == fields["gres"], fields
        assert fields["cvd"] in ("0", "1"), fields
        assert attempt["gpu_slot"] == [fields["cvd"]]
        seen.add(fields["cvd"])
    assert seen

    status = wait_settled(only_run(shared / "two"))
    merged = _merged_results(status)
    for cell in merged["cells"]:
        assert cell["verdict"] == "infra-error"
        assert cell["attempts"][0]["infra_error"].startswith("skipped: needs 2 GPUs, 1 visible")


def test_attempts_killed_with_their_shard_are_forgotten_older_crashes_kept(
    cli: Cli, tmp_path: Path
) -> None:
    """An attempt that ended by SIGTERM when slurmstepd cancelled the task runs again."""
    from datetime import datetime, timedelta

    from reprospec.slurm import (
        ShardArgs,
        SlurmOptions,
        Submission,
        forget_killed_attempts,
        new_run,
        save,
    )
    from reprospec.store.db import Store

    spec = _write_spec(
        tmp_path / "term.yaml",
        """\
reprospec: 1
name: killed-by-term
command: kill -TERM $$
run: {repeat: 2}
expect: {outcome: crash, signal: SIGTERM}
""",
    )
    run = new_run(
        spec, "killed-by-term", tmp_path, SlurmOptions(shards=1), ShardArgs(), (2,), chdir=ROOT
    )
    ran = cli("run", str(spec), "--shard", "1/1", "--out", str(run.shard_dir(1)))
    assert ran.code == 0, ran.stderr
    (folder,) = (run.shard_dir(1) / "runs").iterdir()
    with Store(run.shard_dir(1)) as store:
        attempts = store.finished_attempts(folder.name)
    assert [a.ran.signal for a in attempts.values() if a.ran] == ["SIGTERM", "SIGTERM"]
    # Slurm cancelled the task right after attempt 2 ended, and 10 minutes after attempt 1.
    second = datetime.fromisoformat(attempts[("default", 2)].finished).astimezone()
    killed = second + timedelta(seconds=1)
    run = replace(run, submissions=(Submission("41", "42", (1,), "now"),))
    save(run)
    run.shard_log(1, "41").parent.mkdir(parents=True, exist_ok=True)
    run.shard_log(1, "41").write_text(
        f"slurmstepd-vm: error: *** JOB 43 ON vm CANCELLED AT "
        f"{killed.replace(tzinfo=None).isoformat(timespec='seconds')} DUE TO TIME LIMIT ***\n"
    )
    with Store(run.shard_dir(1)) as store:
        store.forget_attempts(folder.name, [("default", 1)])
        old = replace(
            attempts[("default", 1)], finished=(second - timedelta(minutes=10)).isoformat()
        )
        store.record_attempt(folder.name, "default", old)
    assert forget_killed_attempts(run, 1) == (("default", 2),)
    with Store(run.shard_dir(1)) as store:
        assert sorted(store.finished_attempts(folder.name)) == [("default", 1)]


@needs_cluster
@pytest.mark.slow
def test_a_shard_past_its_time_limit_is_reported_and_resumed(
    cli: Cli, time_limited_run: TimeLimitedRun | None
) -> None:
    """Slurm's limits are whole minutes: the held shard dies 60-90 s after it starts (its
    run was submitted when the module's first cluster test started: see TIME_LIMIT_TEST)."""
    require_cluster()
    assert time_limited_run is not None
    assert time_limited_run.code == 0, time_limited_run.stderr
    run_dir = time_limited_run.run_dir
    status = wait_settled(run_dir)
    first, second = status.shards
    assert (first.state, second.state) == ("died", "done"), status
    assert first.detail.startswith("time limit")
    assert "DUE TO TIME LIMIT" in first.detail
    shown = cli("slurm", "status", str(run_dir), "--json")
    assert shown.code == 3
    data = json.loads(shown.stdout)
    assert data["missing"] == [1]
    assert data["shards"][0]["state"] == "died"
    _resume_and_check(cli, run_dir, "slurm", "resume", str(run_dir), "--time", "5")
