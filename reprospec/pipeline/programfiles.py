"""The program's files digested as a run begins: what `compare` tells `train.py changed` by.

The files are those the cells name (plan/workfiles.py's `run_files`: the script, its
local imports, what its words name, the spec's `files`), read from one cell per axis
value (`PlannedAttempts.covering`) before any attempt starts: an attempt may write a file
its command names. Each is digested under the store's key (store/digests.py) and named
relative to the spec's folder, else by its absolute path. The record is the captured
environment's FILES_FIELD, kept in the store from the run's start, so that a resumed run
can say its files changed since.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.plan.run import RunPlan
from reprospec.store.digests import FILES_FIELD


def program_files(plan: RunPlan, out: Path) -> tuple[JsonObject | None, tuple[str, ...]]:
    """(FILES_FIELD's record of the files the run's cells name, warnings); None, and a
    warning, where the files cannot be digested: `compare` then says whether they changed
    is unknown."""
    from reprospec.plan.workfiles import run_files
    from reprospec.store.digests import file_digests, store_key

    base = plan.spec.base_dir.resolve()
    try:
        found = run_files(plan.attempts.covering())
        named = {
            (path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)): path
            for path in found
        }
        if not named:
            return file_digests(None, {}), ()  # no key made for none
        return file_digests(store_key(out), named), ()
    except (OSError, ValueError) as exc:  # the record is worth less than the run
        return None, (f"the program's files were not digested (compare cannot tell them): {exc}",)


def files_since(
    before: Mapping[str, JsonValue], files: JsonObject | None, run_id: str
) -> tuple[str, ...]:
    """A warning where a resumed run's files are not those it began with (the user edited
    the script between the interrupt and the resume): its attempts ran two programs."""
    if files is None or FILES_FIELD not in before:
        return ()
    from reprospec.store.compare import files_change

    change = files_change(before, {FILES_FIELD: files}, run_id, run_id)
    differ = [*change["changed"], *change["added"], *change["removed"]]
    if not differ:
        return ()
    return (
        "the program's files changed between the run's start and its resume (the attempts "
        f"before the resume ran the earlier ones): {', '.join(differ)}",
    )


__all__ = ["files_since", "program_files"]
