"""Where a Slurm run stands: each shard and the merge, and why we think so.

The shard folders are the truth (a results.json is a finished shard); then the Slurm
output file of each task (`slurmstepd: *** JOB ... CANCELLED ... DUE TO TIME LIMIT ***`);
then squeue/sacct for what is queued or running.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.words import plural
from reprospec.slurm.plan import SlurmRun
from reprospec.slurm.queue import ACTIVE_STATES, ENDED_STATES, QueueEntry, query_queue
from reprospec.store.runfolder import RunFolder, cell_folder

# The last line an array task prints: the exit status of its `reprospec run`.
EXIT_LINE = re.compile(r"^reprospec-slurm: exit (\d+)$", re.MULTILINE)
# slurmstepd's own words when it ends a task: `*** JOB 16 ON vm CANCELLED AT 2026-11-23T14:38:10
# DUE TO TIME LIMIT ***` (no "DUE TO" when a person ran scancel).
CANCELLED_LINE = re.compile(
    r"\*\*\* (?:JOB|STEP) (?P<job>[\d.]+) ON (?P<node>\S+) CANCELLED AT (?P<at>\S+)"
    r"(?: DUE TO (?P<cause>[A-Z][A-Z ]*[A-Z]))?(?: \([^)]*\))? \*\*\*"
)
# The node's UTC offset, as the shard's first line gives it (scripts.py): slurmstepd's
# `CANCELLED AT` is the node's local time, with no zone.
NODE_OFFSET = re.compile(r"^reprospec-slurm: shard .* utc(?P<offset>[+-]\d{4})$", re.MULTILINE)
# slurmstepd's causes, as a status says them.
_CAUSES = {
    "TIME LIMIT": "time limit",
    "NODE FAILURE": "node failure",
    "PREEMPTION": "preempted",
    "JOB REQUEUE": "requeued",
}

ShardState = Literal["done", "queued", "running", "died", "failed", "unknown", "not-submitted"]


@frozen
class ShardStatus:
    """Where one shard stands, and why we think so."""

    shard: int
    state: ShardState
    detail: str
    job: str  # `12_3`, or "" when never submitted
    attempts_started: int
    attempts_planned: int
    run_dir: Path | None
    log: Path | None


@frozen
class MergeStatus:
    """Where the merge job stands; `report` once the merged run exists."""

    state: Literal["done", "queued", "running", "failed", "unknown", "not-submitted"]
    detail: str
    job: str
    report: Path | None
    log: Path | None


@frozen
class RunStatus:
    """The whole run: each shard, the merge, and whether squeue answered."""

    run: SlurmRun
    shards: tuple[ShardStatus, ...]
    merge: MergeStatus
    queue_answered: bool
    warnings: tuple[str, ...] = field(default=())

    @property
    def missing(self) -> tuple[int, ...]:
        """Shards a resume would submit again: ended without complete results."""
        return tuple(s.shard for s in self.shards if s.state in ("died", "failed", "not-submitted"))

    @property
    def active(self) -> tuple[int, ...]:
        return tuple(s.shard for s in self.shards if s.state in ("queued", "running"))

    @property
    def all_done(self) -> bool:
        return all(s.state == "done" for s in self.shards)


def death_cause(log_text: str) -> str | None:
    """Why slurmstepd ended a task, from its output file: "time limit", "cancelled", ..."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    if not matches:
        return None
    cause = matches[-1].group("cause")
    return _CAUSES.get(cause.strip(), cause.strip().lower()) if cause else "cancelled"


def _cancel_line(log_text: str) -> str:
    """slurmstepd's own words: `*** JOB 13 ON vm CANCELLED AT ... DUE TO TIME LIMIT ***`."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    return matches[-1].group(0) if matches else ""


def _last_error_line(log_text: str) -> str:
    """The last line that says what went wrong: reprospec's own, else an error, else the last."""
    lines = [
        line.strip()
        for line in log_text.splitlines()
        if line.strip() and not EXIT_LINE.match(line.strip())
    ]
    for pick in (
        lambda line: line.startswith(("reprospec:", "reprospec-slurm: not")),
        lambda line: "error" in line.lower(),
    ):
        for line in reversed(lines):
            if pick(line):
                return line
    return lines[-1] if lines else ""


def cancel_time(log_text: str) -> datetime | None:
    """When slurmstepd ended the task: its node's local time, as Slurm prints it, read at
    the node's offset where the shard's first line gave it (a reader in another zone read
    it hours off), else at this machine's."""
    matches = list(CANCELLED_LINE.finditer(log_text))
    if not matches:
        return None
    try:
        at = datetime.fromisoformat(matches[-1].group("at"))
    except ValueError:
        return None
    offsets = NODE_OFFSET.findall(log_text[: matches[-1].start()])
    if at.tzinfo is not None or not offsets:
        return at.astimezone()
    return datetime.fromisoformat(f"{at.isoformat()}{offsets[-1]}")


# How long before slurmstepd's `CANCELLED AT` an attempt that ended, whatever it read, may
# have ended of that stop: the stamp is in whole seconds, and the task's processes die of
# it in the moment after (the engine hears of it after its attempt's, often).
CUT_SLACK_S = 2.0


def ended_as_stopped(finished: str, killed: datetime, slack_s: float = CUT_SLACK_S) -> bool:
    """Whether an attempt that ended at `finished` (ISO) may have ended of the stop at
    `killed`: no earlier than `slack_s` before it (an unreadable time: yes, the safe side)."""
    try:
        stamp = datetime.fromisoformat(finished)
    except ValueError:
        return True
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()
    return stamp.timestamp() >= killed.timestamp() - slack_s


def _cut_short(results: JsonObject, log_text: str) -> list[str]:
    """The attempts of a shard's complete results that ended as Slurm stopped its task
    (`cell #N`): a time limit's SIGTERM reached them before the engine, which took their
    ends for their own and wrote the run complete. A shell whose `sleep` it killed went on
    and exited 0: `pass` (the CI run of stop 62). Nothing is cut without slurmstepd's
    `CANCELLED AT` line."""
    killed = cancel_time(log_text) if death_cause(log_text) is not None else None
    cells = results.get("cells")
    if killed is None or not isinstance(cells, list):
        return []
    cut: list[str] = []
    for cell in cells:
        attempts = cell.get("attempts") if isinstance(cell, dict) else None
        if not isinstance(cell, dict) or not isinstance(attempts, list):
            continue
        cut.extend(
            f"{cell.get('id')} #{attempt.get('attempt')}"
            for attempt in attempts
            if isinstance(attempt, dict)
            and ended_as_stopped(str(attempt.get("finished", "")), killed)
        )
    return cut


def read_log(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def shard_run(run: SlurmRun, shard: int) -> tuple[Path | None, JsonObject | None]:
    """The shard's run folder (there is one per shard) and its results.json, when written."""
    runs = RunFolder.all_under(run.shard_dir(shard))
    if not runs:
        return None, None
    folder = runs[-1].path
    try:
        data = json.loads(runs[-1].results_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return folder, None
    return folder, data if isinstance(data, dict) else None


def _attempts_started(run: SlurmRun, shard: int, folder: Path | None, results: object) -> int:
    """The shard's attempts so far: a finished shard's, from its results.json; else (an
    interrupted one's too) those its store recorded as ended, with those running (their
    folders, `cells/<cell>/<n>/`).

    Not the folders alone: a silent pass leaves no folder once it ends (`RunFolder.prune`),
    and a shard done with all of its attempts read `done 0/2 attempts` where both passed.
    """
    if folder is None:
        return 0
    # An interrupted run's results.json holds what it had when it stopped: read while a
    # resume of it runs, it said `running 0/1 attempts` throughout; the store
    # has those attempts and the resumed ones.
    if (
        isinstance(results, dict)
        and not results.get("interrupted")
        and isinstance(results.get("cells"), list)
    ):
        cells = [c for c in results["cells"] if isinstance(c, dict)]
        return sum(len(c["attempts"]) for c in cells if isinstance(c.get("attempts"), list))
    started = {(p.parent.name, p.name) for p in RunFolder(folder).attempt_folders()}
    from reprospec.store.db import Store, StoreError

    try:
        with Store(run.shard_dir(shard), reader=True) as store:
            ended = store.finished_attempts(folder.name, include_infra_errors=True)
    except StoreError:
        ended = {}
    started |= {(cell_folder(cell), str(attempt)) for cell, attempt in ended}
    return len(started)


def shard_status(
    run: SlurmRun,
    shard: int,
    queue: Mapping[tuple[str, int | None], QueueEntry] | None,
) -> ShardStatus:
    """One shard: its results decide "done"; otherwise the queue, its log, its exit line."""
    planned = run.attempts[shard - 1] if shard <= len(run.attempts) else 0
    folder, results = shard_run(run, shard)
    started = _attempts_started(run, shard, folder, results)
    sub = run.latest_submission(shard)
    job = f"{sub.array_job}_{shard}" if sub else ""
    log = run.shard_log(shard, sub.array_job) if sub else None

    def status(state: ShardState, detail: str) -> ShardStatus:
        return ShardStatus(
            shard=shard,
            state=state,
            detail=detail,
            job=job,
            attempts_started=started,
            attempts_planned=planned,
            run_dir=folder,
            log=log if log is not None and log.exists() else None,
        )

    expected_shard = f"{shard}/{run.shards}"
    if results is not None and not results.get("interrupted"):
        if results.get("shard") not in (expected_shard, None):
            return status("failed", f"holds shard {results.get('shard')}, not {expected_shard}")
        text = read_log(log)
        if cut := _cut_short(results, text):
            shown = ", ".join(cut[:3]) + (f" and {len(cut) - 3} more" if len(cut) > 3 else "")
            return status(
                "died",
                f"{death_cause(text)}: {plural(len(cut), 'attempt')} ended as Slurm stopped "
                f"the task ({shown}), run again on resume ({_cancel_line(text)})",
            )
        summary = results.get("summary")
        summary = summary if isinstance(summary, dict) else {}
        cells = summary.get("cells")
        counted = plural(cells, "cell") if isinstance(cells, int) else "? cells"
        return status(
            "done",
            f"{summary.get('reproduced', '?')} of {counted} reproduced"
            + (f", {summary['undecided']} undecided" if summary.get("undecided") else "")
            + (f", {summary['infra_error']} infra-error" if summary.get("infra_error") else ""),
        )
    if sub is None:
        return status("not-submitted", "never submitted")
    entry = queue.get((sub.array_job, shard)) if queue is not None else None
    if entry is not None and entry.state in ACTIVE_STATES:
        if entry.state == "PENDING":
            reason = f" ({entry.reason})" if entry.reason and entry.reason != "None" else ""
            return status("queued", f"pending{reason}")
        return status("running", entry.state.lower())
    text = read_log(log)
    cause = death_cause(text)
    if cause is not None:
        return status("died", f"{cause} ({_cancel_line(text)})")
    exits = EXIT_LINE.findall(text)
    # `reprospec run` ended on its own, without results: Slurm calls the task FAILED for
    # its exit status alone, which read `died ... (Slurm state FAILED)`, not why it ended
    # (`interpreter not found: ...`), nor that resubmitting it fails the same way.
    ended_itself = exits and results is None and (entry is None or entry.state == "FAILED")
    if (
        entry is not None
        and entry.state in ENDED_STATES
        and entry.state != "COMPLETED"
        and not ended_itself
    ):
        return status("died", f"{ENDED_STATES[entry.state]} (Slurm state {entry.state})")
    if results is not None:  # interrupted: SIGTERM reached the engine, it wrote what it had
        return status("died", "interrupted: partial results only")
    if exits:
        line = _last_error_line(text)
        return status(
            "failed",
            f"reprospec run exited {exits[-1]} without results" + (f": {line}" if line else ""),
        )
    if queue is None:
        return status("unknown", "no results yet, and squeue does not answer")
    if log is None or not log.exists():
        return status("died", "left the queue without starting (no output file)")
    return status("died", "ended without results: " + (_last_error_line(text) or "empty log"))


def merge_status(
    run: SlurmRun, queue: Mapping[tuple[str, int | None], QueueEntry] | None
) -> MergeStatus:
    """The merge job of the latest submission, and the merged report once written."""
    sub = run.latest_submission()
    merged = [f for f in RunFolder.all_under(run.run_dir / "merged") if f.results_json.is_file()]
    newest = merged[-1].report_md if merged else None
    if sub is None:
        return MergeStatus("not-submitted", "never submitted", "", None, None)
    log = run.merge_log(sub.merge_job)
    log_found = log if log.exists() else None
    text = read_log(log_found)
    exits = EXIT_LINE.findall(text)
    if newest is not None:
        return MergeStatus("done", "merged", sub.merge_job, newest, log_found)
    entry = queue.get((sub.merge_job, None)) if queue is not None else None
    if entry is not None and entry.state in ACTIVE_STATES:
        if entry.state == "PENDING":
            reason = f" ({entry.reason})" if entry.reason and entry.reason != "None" else ""
            return MergeStatus("queued", f"pending{reason}", sub.merge_job, None, log_found)
        return MergeStatus("running", entry.state.lower(), sub.merge_job, None, log_found)
    if exits:
        return MergeStatus(
            "failed",
            f"exited {exits[-1]}: {_last_error_line(text)}",
            sub.merge_job,
            newest,
            log_found,
        )
    if entry is not None and entry.state in ENDED_STATES:
        return MergeStatus("failed", f"Slurm state {entry.state}", sub.merge_job, newest, log_found)
    if queue is None:
        return MergeStatus("unknown", "squeue does not answer", sub.merge_job, newest, log_found)
    return MergeStatus("failed", "left the queue without merging", sub.merge_job, newest, log_found)


def run_status(run: SlurmRun, *, ask_queue: bool = True) -> RunStatus:
    """Every shard and the merge; squeue/sacct are asked once for all jobs of the run."""
    jobs = [j for sub in run.submissions for j in (sub.array_job, sub.merge_job)]
    queue = query_queue(jobs) if ask_queue else None
    shards = tuple(shard_status(run, k, queue) for k in range(1, run.shards + 1))
    warnings = () if queue is not None or not ask_queue else ("squeue does not answer",)
    return RunStatus(
        run=run,
        shards=shards,
        merge=merge_status(run, queue),
        queue_answered=queue is not None,
        warnings=warnings,
    )


def status_to_dict(status: RunStatus) -> JsonObject:
    """`reprospec slurm status --json`."""
    return {
        "run_id": status.run.run_id,
        "run_dir": str(status.run.run_dir),
        "spec": status.run.spec,
        "shards": [
            {
                "shard": s.shard,
                "state": s.state,
                "detail": s.detail,
                "job": s.job,
                "attempts_started": s.attempts_started,
                "attempts_planned": s.attempts_planned,
                "run_dir": str(s.run_dir) if s.run_dir else None,
                "log": str(s.log) if s.log else None,
            }
            for s in status.shards
        ],
        "merge": {
            "state": status.merge.state,
            "detail": status.merge.detail,
            "job": status.merge.job,
            "report": str(status.merge.report) if status.merge.report else None,
            "log": str(status.merge.log) if status.merge.log else None,
        },
        "missing": list(status.missing),
        "queue_answered": status.queue_answered,
    }
