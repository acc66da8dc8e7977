"""The program's files digested as a run begins: what `compare` tells `train.py changed` by.

The files are the program's by plan/workfiles.py's `program_files`, the rule a search's
id hashes too: its sources (the script, its local imports, a shell script) and its inputs
(the spec's `files`); not the other files its words name, which it may write (a log named
by `--log run.log` changed at every run), only named in the record (`named`). They are
read from one attempt per job the cells run (`PlannedAttempts.variants`), before any
attempt starts. Each is digested under the store's key (store/digests.py), a file over
DIGEST_LIMIT told by its size and modification time, and named relative to the spec's
folder, else by its absolute path. Each is keyed too by its path relative to the cells'
workdir (`in_workdir`; the workdirs' common folder where the cells have several), with
that workdir (`workdir`) named as the files are: the same file is then the same key after
amplify writes the workdir absolute (`race/race.py` and `/home/u/race/race.py` are both
`race.py`) and in a bundle's rerun (`.../tree/race/race.py`), whose tree keeps the files'
places relative to their workdir. The record is the captured environment's FILES_FIELD,
kept in the store from the run's start, so that a resume under other files is refused.

A search's probe (isolate, minimize, amplify, bisect: tens to thousands of runs of one
program) reads none: its record says why (`skipped`), and `compare` says unknown of it.
The search's id already holds its program's digest, as the search began, and minimize's
probes each run a smaller copy of the program, which nobody compares.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from reprospec.core.caller import resuming, run_again
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.runoptions import SEARCH_PURPOSES
from reprospec.plan.run import RunPlan
from reprospec.store.digests import FILES_FIELD, RunKey


def program_files(plan: RunPlan, key: RunKey) -> tuple[JsonObject | None, tuple[str, ...]]:
    """(FILES_FIELD's record of the program's files, warnings); None, and a warning, where
    the files cannot be digested: `compare` then says whether they changed is unknown.
    `key`: the run's store key, read once for all it digests."""
    purpose = plan.options.purpose
    if purpose in SEARCH_PURPOSES:
        return {
            "store": None,
            "of": [],
            "skipped": f"a probe of {purpose}: its search's id holds the program's digest",
        }, ()
    from reprospec.plan.workfiles import program_files as files_of
    from reprospec.store.digests import file_digests

    base = plan.spec.base_dir.resolve()

    def name(path: Path) -> str:
        return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)

    try:
        variants = plan.attempts.variants()
        found = files_of(variants.attempts)
        program = {name(path): path for path in (*found.sources, *found.inputs)}
        # No key is made for no file (a run of `true`).
        record = file_digests(key.get() if program else None, program)
        workdirs = {attempt.workdir.resolve() for attempt in variants.attempts}
    except (OSError, ValueError) as exc:  # the record is worth less than the run
        return None, (f"the program's files were not digested (compare cannot tell them): {exc}",)
    if program and workdirs:
        # Lexical, as the files are found (`workdir / name`): a `..` keeps its meaning.
        workdir = Path(os.path.commonpath(sorted(workdirs)))
        record["workdir"] = name(workdir)
        record["in_workdir"] = [
            [key, Path(os.path.relpath(path, workdir)).as_posix()]
            for key, path in sorted(program.items())
        ]
    if found.named:
        record["named"] = [n for n in sorted(name(path) for path in found.named)]
    if variants.unread:
        record["partial"] = (
            f"the files of {len(variants.attempts)} of the jobs the cells run were read, "
            f"up to {variants.unread} more were not"
        )
    return record, ()


def refuse_other_files(
    before: Mapping[str, JsonValue], files: JsonObject | None, run_id: str
) -> tuple[str, ...]:
    """Refuse (exit 2) a resume whose program's files are not those the run began with
    (the user edited the script between the interrupt and the resume), naming each. Taken
    with a warning, a cell's attempts ran two programs: `1x pass, 1x error exit 3` read
    as a flaky failure, a loop repro in its report and `flaky` in its JUnit,
    as a changed variable would (pipeline/resume.py). A file the run lacked and that is
    there now is a warning only: no attempt ran it, and adding it is how the attempts that
    could not run (`can't open file`) are fixed before they are retried."""
    if files is None or FILES_FIELD not in before:
        return ()  # a run made before runs kept them, or files that could not be read
    from reprospec.errors import UsageError
    from reprospec.store.compare import files_change

    change = files_change(before, {FILES_FIELD: files}, run_id, run_id)
    told = [
        *(f"{name}: changed" for name in change["changed"]),
        *(f"{name}: removed" for name in change["removed"]),
    ]
    if told:
        raise UsageError(
            f"{resuming(run_id)}: the program's files are not the run's ({', '.join(told)}): "
            "its finished attempts ran them as they were, and the rest must too. Put them "
            f"back as they were to resume it, or {run_again()}"
        )
    if not change["added"]:
        return ()
    return (
        "the program's files the run lacked as it began are there now (the attempts before "
        f"the resume ran without them): {', '.join(change['added'])}",
    )


__all__ = ["program_files", "refuse_other_files"]
