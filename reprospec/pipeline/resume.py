"""`--resume RUN`: the spec, options and finished attempts of an interrupted run.

The run continues under its own id with the options it started with; only
`-j` may change. An option given with `--resume` that would change what runs
(`--timeout 3s`, `-m`, `--set`, ...) is refused, naming it: taken silently, a
user waited out the old timeout of every hang believing the new one applied.
The spec is read from its file again and must still be the spec that ran: an
edit after the interruption would mix two specs' attempts in one run, so it is
refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from reprospec.core.caller import resuming, run_again, said
from reprospec.core.inputs import Spec
from reprospec.core.jsontypes import JsonValue
from reprospec.core.redact import MASK
from reprospec.core.results import AttemptResult
from reprospec.core.runoptions import RunOptions, absolute_folder, absolute_python
from reprospec.core.units import format_duration
from reprospec.errors import UsageError

# The options a resumed run keeps from the run it continues (`RunOptions` field -> the
# `run` flag that sets it): its finished attempts ran under them, and the attempts left
# must run as those did for one cell's attempts to be judged alike. `-j` (how many at
# once) changes no attempt's own options, though a race's rate may change with it: the
# run's is kept, but a resume may give another. `--out`, `--format` and `--yes` change
# nothing that runs.
KEPT: Mapping[str, str] = {
    "matrix_filters": "-m",
    "overrides": "--set",
    "observe": "--observe",
    "runner": "--runner",
    "repeat": "--repeat",
    "first_attempt": "--first-attempt",
    "timeout_s": "--timeout",
    "python": "--python",
    "gpus": "--gpus",
    "shard": "--shard",
    "find_links": "--find-links",
    "keep_cores": "--keep-cores",
    "preload": "--preload",
}


def resolve(reference: str | Path, out: Path) -> tuple[str, Path]:
    """(run id, store folder) of what `--resume` and the API's `resume` are given: a run id
    or a unique prefix of one under `out`, `latest` (`latest~N`), or the run's folder (which
    names its own store). The API took an exact id alone, where `load_result` takes all
    of these: `resume("latest")` said 'no such run'."""
    from reprospec.store.refs import is_latest, resolve_run_id, run_id_named
    from reprospec.store.resultsjson import refuse_a_search_answer

    reference = str(reference)
    run_id = resolve_run_id(reference, out) if is_latest(reference) else reference
    # `--resume .reprospec/amplify/ID` (or its amplify.md) was read as a run's folder and
    # said "no such run": a search resumes by its own command, which the refusal names.
    refuse_a_search_answer(Path(run_id), resuming=True)
    if Path(run_id).is_dir():
        # `--resume .reprospec/runs/ID`: the folder names both the run and its store.
        folder = Path(run_id).resolve()
        return folder.name, folder.parent.parent
    return run_id_named(run_id, out), out  # several refused; none: load says so


def _store_set_aside(run_id: str, out: Path) -> str:
    """What to do with a run whose folder `run` made (its engine.json) but whose store no
    longer holds it: the store was moved aside (a damaged one: the engine's own message says
    to) or removed. It was refused as a merged run ("such as one `reprospec merge` made"),
    where no merge was in it (lo32 item 3). "" for any other run."""
    import json

    from reprospec.core.logtext import shell_join, shell_split
    from reprospec.core.reportspec import rerun_command
    from reprospec.core.runoptions import without_options
    from reprospec.store.runfolder import ENGINE_JSON, RunFolder

    folder = RunFolder.of(out, run_id)
    if not (folder.path / ENGINE_JSON).is_file():
        return ""
    aside = sorted(
        str(p) for p in out.glob("results.db?*") if not p.name.endswith(("-wal", "-shm"))
    )
    where = f" ({', '.join(aside)} is there)" if aside else ""
    command, report = "reprospec run SPEC", ""
    try:
        ran = json.loads(folder.results_json.read_text(encoding="utf-8"))
        # A run made from Python has no command line: its options make one, as its
        # report's does (`reprospec run SPEC` alone dropped its `-m`, `--repeat`, ...).
        line = str(ran["command_line"]) or rerun_command(
            ran["options"], str(ran["spec"]["path"]), as_ran=True
        )
        command = shell_join(without_options(shell_split(line), ("--out",)))
        report = f"; what it ran is in its folder: `reprospec report {run_id} --out {out}`"
    except (OSError, ValueError, KeyError, TypeError):
        pass  # killed before it wrote one
    return (
        f": its folder is of a results store since moved aside or removed{where}, and only "
        "a store that holds its attempts resumes it. Run its spec again, "
        f"`{command} --out {out}`{report}"
    )


def load(
    run_id: str,
    out: Path,
    *,
    jobs: int | None = None,
    spec_path: str | Path | None = None,
    asked: RunOptions | None = None,
    given: Collection[str] = (),
) -> tuple[Spec, RunOptions, Mapping[tuple[str, int], AttemptResult]]:
    """(spec, options, finished attempts) of `run_id` in the store under `out`.

    `given` names the `KEPT` options the command line gave, `asked` their values: one
    that differs from the run's own is refused (`refuse_changes`)."""
    from reprospec.pipeline.stages import ran_as_stored
    from reprospec.spec.load import load_spec
    from reprospec.store.db import Store

    if not (out / "results.db").is_file():
        raise UsageError(
            f"{resuming(run_id)}: no results store at {out / 'results.db'}"
            + _store_set_aside(run_id, out)
        )
    with Store(out) as store:
        info = store.run_info(run_id)
        if info is None:
            if gone := _store_set_aside(run_id, out):
                raise UsageError(f"{resuming(run_id)}: {out / 'results.db'} does not hold it{gone}")
            if (out / "runs" / run_id / "results.json").is_file():
                # `latest` after a merge names the merged run: its folder, in no store.
                raise UsageError(
                    f"{resuming(run_id)}: a run the store does not hold, such as one "
                    "`reprospec merge` made, is not resumed; resume the runs it was made of "
                    "(`reprospec history` lists them)"
                )
            raise UsageError(f"{resuming(run_id)}: no such run in {out / 'results.db'}")
        done = store.finished_attempts(run_id)
    stored_path = Path(info.spec_path)
    if not stored_path.is_file():
        # "PATH: no such file" alone, and the moved file given was refused as another spec
        # ("leave the spec out"): no way on was said.
        raise UsageError(
            f"{resuming(run_id)}: its spec {stored_path} is gone (moved or removed?); a "
            "resumed run reads it there: put it back, unchanged, or run the spec again"
        )
    if spec_path is not None and Path(spec_path).resolve() != stored_path.resolve():
        raise UsageError(
            f"{resuming(run_id)} ran {stored_path}, not {spec_path}: "
            "leave the spec out to resume it"
        )
    options = RunOptions.from_dict(info.options, out)
    gone_read_only(run_id, options)
    if any(MASK in override for override in options.overrides):
        # The store keeps what every output keeps: a secret given with --set is masked
        # there, and resuming with `***` in its place would run something else.
        raise UsageError(
            f"{resuming(run_id)}: its {said('--set', 'overrides')} values held a secret, "
            "which the store masks; start a new run"
        )
    if asked is not None:
        refuse_changes(run_id, options, asked, given)
    if jobs is not None:
        options = options.with_changes(jobs=jobs)
    spec = load_spec(stored_path, options.overrides)
    if not ran_as_stored(spec, info.spec_text):
        raise UsageError(
            f"{resuming(run_id)}: {stored_path} changed since the run started; "
            "resuming would mix two specs' attempts (start a new run instead)"
        )
    refuse_other_variables(run_id, info.environment, spec, out)
    return spec, options, done


def gone_read_only(run_id: str, options: RunOptions) -> None:
    """Refuse (exit 2) resuming a docker run whose `read_only` folder (a minimize
    candidate's: the workdir its links name) is gone: each container mounts it, and every
    attempt would be an infra-error. A local or venv run's attempts never read it as a
    folder of their own (they follow the links or not): its resume goes on, as `bundle`
    of it does."""
    folder = options.read_only
    if options.runner == "docker" and folder is not None and not folder.is_dir():
        raise UsageError(
            f"{resuming(run_id)}: its read_only {folder} (the workdir minimize mounted "
            "read-only) is gone; put it back or start a new run"
        )


def refuse_other_variables(
    run_id: str, began: Mapping[str, JsonValue], spec: Spec, out: Path
) -> None:
    """Refuse (exit 2) a resume in an environment where a variable the spec reads
    (`${{ env.CODE }}`) has another value than the run read as it began, naming each with
    both values (a secret's: only that it changed). Taken silently, a cell's attempts
    ran `exit 0` before the resume and `exit 3` after it, and read as flaky."""
    from reprospec.store.digests import RunKey
    from reprospec.store.specvariables import FIELD, changes, record

    before = began.get(FIELD)
    if before is None:
        return  # a run made before runs kept them: nothing to tell by
    rows = changes(before, record(spec.document, RunKey(out)))
    if not rows:
        return
    told = "; ".join(
        f"{name}: {how}"
        if a is None and b is None
        else f"{name}: {_quoted(a)} as the run began, {_quoted(b)} now"
        for name, a, b, how in rows
    )
    unknown = [name for name, _a, _b, how in rows if how.endswith("is unknown")]
    # A secret whose change cannot be told (a store that could not keep the key its digests
    # need) cannot be "set as it was": the advice names what the user can do.
    advice = (
        f"Set them as they were to resume it, or {run_again()}"
        if len(unknown) < len(rows)
        else "Whether they changed cannot be told (the store could not keep the key of its "
        f"digests): {run_again()}"
    )
    raise UsageError(
        f"{resuming(run_id)}: the spec reads variables whose values are not the run's ({told}): "
        f"its finished attempts ran with the run's values, and the rest must too. {advice}"
    )


def _quoted(value: str | None) -> str:
    return "unset" if value is None else repr(value)


def refuse_changes(
    run_id: str, began: RunOptions, asked: RunOptions, given: Collection[str]
) -> None:
    """Refuse (exit 2) the options in `given` whose value in `asked` is not the one the
    run `began` with, each named with the value the run keeps. Repeating the run's own
    value (its command line with `--resume` added) is no change and is let through."""
    changed = [
        name for name in KEPT if name in given and _value(asked, name) != _value(began, name)
    ]
    if not changed:
        return
    flags = ", ".join(KEPT[name] for name in changed)
    kept = "; ".join(f"{KEPT[name]} {_shown(began, name)}" for name in changed)
    raise UsageError(
        f"{resuming(run_id)}: {flags} given, but a resumed run keeps the options it began "
        f"with ({kept}): its finished attempts ran under them, and only -j may change. "
        "Run the spec again (without --resume) to run it with new options"
    )


def _value(options: RunOptions, name: str) -> object:
    value: object = getattr(options, name)
    if name == "matrix_filters":
        # The same cells in another order (`-m a=3 -m a=1`); a `--set` keeps its order, a
        # later one may set what an earlier one set.
        return frozenset(options.matrix_filters)
    # A run recorded before paths were made absolute (`env/bin/python`), read against this
    # folder as the given one was: the run's own value again is no change.
    if name == "python" and isinstance(value, str):
        return absolute_python(value)
    if name == "find_links" and isinstance(value, Path):
        return absolute_folder(value)
    return value


# What an option the run began without meant, so that the message says what it keeps.
_UNSET = {
    "matrix_filters": "none: every cell",
    "overrides": "none",
    "repeat": "none: the spec's",
    "timeout_s": "none: the spec's",
    "python": "none: this interpreter",
    "gpus": "none: all visible",
    "shard": "none: every attempt",
    "find_links": "none",
    "preload": "none: the spec's",
}


def _shown(options: RunOptions, name: str) -> str:
    """How the run began with option `name`, as its flag reads it."""
    value = _value(options, name)
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None and name == "python" and options.runner == "docker":
        return "none: each image's python3"  # not this interpreter: none of it ran
    if value is None or value == () or value == frozenset():
        return _UNSET.get(name, "none")
    if name == "timeout_s" and isinstance(value, float):
        return format_duration(value)
    if name == "matrix_filters":
        # As the command line gives them: `-m a=1 -m b=y`, not `-m a=1 b=y`.
        return " -m ".join(options.matrix_filters)
    if isinstance(value, tuple):
        return " ".join(str(part) for part in value)
    return str(value)
