"""`--resume RUN`: the spec, options and finished attempts of an interrupted run.

The run continues under its own id with the options it started with; only
`-j` may change. The spec is read from its file again and must still be the
spec that ran: an edit after the interruption would mix two specs' attempts
in one run, so it is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reprospec.core.inputs import Spec
from reprospec.core.redact import MASK
from reprospec.core.results import AttemptResult
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError


def load(
    run_id: str, out: Path, *, jobs: int | None = None, spec_path: str | Path | None = None
) -> tuple[Spec, RunOptions, Mapping[tuple[str, int], AttemptResult]]:
    """(spec, options, finished attempts) of `run_id` in the store under `out`."""
    from reprospec.pipeline.stages import ran_as_stored
    from reprospec.spec.load import load_spec
    from reprospec.store.db import Store

    if not (out / "results.db").is_file():
        raise UsageError(f"--resume {run_id}: no results store at {out / 'results.db'}")
    with Store(out) as store:
        info = store.run_info(run_id)
        if info is None:
            raise UsageError(f"--resume {run_id}: no such run in {out / 'results.db'}")
        done = store.finished_attempts(run_id)
    stored_path = Path(info.spec_path)
    if spec_path is not None and Path(spec_path).resolve() != stored_path.resolve():
        raise UsageError(
            f"--resume {run_id} ran {stored_path}, not {spec_path}: leave the spec out to resume it"
        )
    options = RunOptions.from_dict(info.options, out)
    if any(MASK in override for override in options.overrides):
        # The store keeps what every output keeps: a secret given with --set is masked
        # there, and resuming with `***` in its place would run something else.
        raise UsageError(
            f"--resume {run_id}: its --set values held a secret, which the store masks; "
            "start a new run"
        )
    if jobs is not None:
        options = options.with_changes(jobs=jobs)
    spec = load_spec(stored_path, options.overrides)
    if not ran_as_stored(spec, info.spec_text):
        raise UsageError(
            f"--resume {run_id}: {stored_path} changed since the run started; "
            "resuming would mix two specs' attempts (start a new run instead)"
        )
    return spec, options, done
