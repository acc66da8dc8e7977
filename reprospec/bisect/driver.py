"""`reprospec bisect`: which release of a package broke it, found by running the spec.

The search is `search.bisect` (pure); this module gives it an oracle that
runs the spec's chosen cell through the Python API (`api.run`) with that
package's pin replaced by the candidate version (an override of the cell's
resolved `environment.packages`, never a CLI call), on a runner that installs
packages (venv: one uv environment per candidate, cached; docker: one image per
candidate). Every attempt is an ordinary stored run (purpose "bisect"), and
the search state, keyed by version, is saved after every candidate in
`<out>/bisect/<id>/state.json`: the same command run again resumes where an
interrupted bisect stopped.

    --by-date START..END bisects days instead of releases: every candidate day
    installs the spec's packages (the named one unpinned) as they were at the end
    of that day (uv's --exclude-newer), for nightlies or a whole environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from reprospec import venvs
from reprospec.bisect import releases, search
from reprospec.bisect.search import BisectResult, Trial
from reprospec.bisect.state import (
    BisectReport,
    BisectRequest,
    load_state,
    stored_answer,
    write_reports,
    write_state,
)
from reprospec.core import environ
from reprospec.core.atomicfile import unwritable
from reprospec.core.caller import argument, said
from reprospec.core.jsontypes import JsonObject
from reprospec.core.redact import Redactor
from reprospec.core.runoptions import RunOptions
from reprospec.core.safepoint import Deferral
from reprospec.core.sections import Environment
from reprospec.core.trylock import search_held
from reprospec.core.words import build_log_phrase, plural
from reprospec.environment import packages
from reprospec.errors import FatalError, InfraError, UsageError
from reprospec.export.tree import program_digest
from reprospec.pipeline.searchscope import search_scope
from reprospec.plan.failingcell import Amplified, cell_filters, choose_failing_cell, fails
from reprospec.store.runfolder import RunFolder


class BisectInterrupted(KeyboardInterrupt):
    """Ctrl-C during a bisect: what ran is saved; the same command resumes.

    `tested`: each version's attempts so far, oldest first, which the verb prints as its
    partial answer (it printed nothing, where cli.md promised it as isolate's)."""

    def __init__(
        self,
        message: str,
        bisect_id: str = "",
        folder: Path | None = None,
        tested: Sequence[Trial] = (),
    ) -> None:
        super().__init__(message)
        self.bisect_id = bisect_id
        self.folder = folder
        self.tested = tuple(tested)


Progress = Callable[[str], None]


# The filter a hint shows, as the Python API's caller writes it in a tuple.
_AXIS_VALUE = repr("AXIS=VALUE")


@search_scope(servers=False)  # each version an interpreter of its own
def bisect_spec(
    request: BisectRequest,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    deferral: Deferral | None = None,
) -> BisectReport:
    """Run the bisect end to end: versions, the bad end, the search, the report files.

    `deferral`: each candidate's run's (RunOptions.deferral): the CLI's, whose stop handler
    defers a stop while a candidate's run is written (commands/interrupt.py)."""
    from reprospec import api

    redactor = Redactor()  # until the spec is read: nothing to mask yet

    def say(line: str) -> None:
        if progress is not None:
            progress(redactor.text(line))

    # An --out that is a file: refused at once, as `run` refuses it, where the index was
    # asked for every release and the first environment's lock said "Not a directory:
    # OUT/envs/.locks".
    RunFolder.check_out(request.out)
    _check_python(request)
    spec = api.load_spec(request.spec, request.overrides)
    # Every candidate run is masked by the pipeline; what bisect itself says and writes is
    # masked the same way (redact.py).
    redactor = Redactor.for_spec(spec.document)
    whole = api.plan_run(spec, RunOptions())
    # -m, or the spec's expect where it says one cell fails (plan/failingcell.py).
    chosen = choose_failing_cell(
        whole.cells,
        whole.expectations,
        request.matrix_filters,
        verb="bisect",
        several="refuse",
        spec=str(request.spec),
        amplified=Amplified.read(request.amplified) if request.amplified else None,
    )
    cell = chosen.cell
    # Every candidate runs that one cell: the filters that keep exactly it.
    filters = cell_filters(cell, whole.cells)
    plan = api.plan_run(spec, RunOptions(matrix_filters=filters))
    if len(plan.cells) != 1:
        raise UsageError(f"bisect runs one cell: {len(plan.cells)} cells are alike ({cell.id})")
    expectation = plan.expectation(cell)
    if not fails(expectation):
        # Every version would "not reproduce" a pass: refused before anything is built, as
        # isolate and amplify refuse it (it ran 20 attempts, then blamed the bad end).
        # A spec without expect too (every outcome matched, so a pass was "1 matching
        # failure" and the good end "reproduces too", exit 1 after 23 attempts).
        # `-m` chooses among cells: a spec of one has none to choose (the hint read
        # `-m AXIS=VALUE` for a spec without a matrix).
        hint = (
            f"choose a failing cell with "
            f"{said('-m AXIS=VALUE', 'BisectRequest(matrix_filters=(' + _AXIS_VALUE + ',))')}"
            if len(whole.cells) > 1
            else "write in its expect how the bad version fails (with "
            f"{said('--good', 'good')} the newer version, bisect finds the release that fixed it)"
        )
        expected = "expected to pass" if expectation.outcome == "pass" else "observed (no expect)"
        raise UsageError(
            f"bisect needs the cell's expect to say how it fails; {cell.id or 'the cell'} is "
            f"{expected}: {hint}"
        )
    if chosen.total > 1:
        say(chosen.said())
    environment = plan.attempts[0].environment
    if request.runner == "docker" and environment.dockerfile:
        # Its image gets no `packages` installed, only checked: every version but the one the
        # Dockerfile installs was "skipped", and the answer a refusal after the bad end's
        # image was built and run, saying to "leave them out of the spec". (`package` is
        # set: by_date, the one request without it, is venv's alone.)
        raise UsageError(
            f"bisect --runner docker cannot vary {request.package}: the cell's image is built "
            f"from environment.dockerfile ({environment.dockerfile}), which gets no `packages` "
            "installed (they are only checked against it); bisect with --runner venv, or give "
            "the cell an environment.image instead of the Dockerfile"
        )
    if (added := _added_package(request, environment.packages)) is not None:
        say(added)
    # Each candidate's run judges its attempts by the cell's expect without its rate, as
    # isolate's and minimize's probes do: with `expect.rate` the run's first-reproduction
    # stop waited for the rate's interval, not the first matching failure, and a flaky
    # bad end ran all its attempts (20 where the third matched).
    expect = "expect=" + json.dumps({k: v for k, v in expectation.to_dict().items() if k != "rate"})
    try:
        versions = _candidates(request)
    except KeyboardInterrupt:
        # Listing the index's versions can take a while: stopped there, nothing is saved
        # (the CLI's word for a search stopped early, "run the same command again to
        # resume", promised what no state held).
        what = f"{request.package}'s versions" if request.package else "the days to try"
        raise BisectInterrupted(
            f"interrupted while listing {what}, before any version was tried: nothing was "
            "saved (the same command starts over)"
        ) from None
    bisect_id = request.key(spec, program_digest(plan.attempts.variants().attempts))
    folder = request.out / "bisect" / bisect_id
    # One search of this folder at a time (core/trylock.py): two of the same command each
    # ran every candidate, and the last to write state.json dropped the other's.
    with search_held(folder, f"bisect {bisect_id}"):
        known, resumed, again = load_state(folder / "state.json", versions, request.fresh)
        if resumed:
            # Evidence by version, weighed whole (search.bisect's `known`), whatever the budget.
            say(
                f"continuing bisect {bisect_id}: "
                f"{plural(sum(t.attempts for t in known.values()), 'attempt')} "
                f"from an earlier run, counted in the budget of {request.budget} "
                f"({said('--fresh', 'BisectRequest(fresh=True)')} starts over)"
            )
        if again:
            say(
                f"trying to install {', '.join(again)} again, where an earlier run of this bisect "
                "could not"
            )
        min_rate = request.min_rate
        if min_rate is None:
            min_rate = _rate_floor(plan.expectation(cell).rate) or search.DEFAULT_MIN_RATE
        say(
            f"bisecting {request.package or 'the environment'}: "
            f"{plural(len(versions), 'candidate')} from {versions[0]} (good) to "
            f"{versions[-1]} (bad), cell {cell.id or '(only)'}"
        )

        trials: dict[str, Trial] = dict(known)
        # A finished bisect stored under an earlier, less strict stop, rerun where --out cannot
        # be written: the present stop may ask attempts that cannot be stored, so its stored
        # answer is printed, with a warning, where a version would need them. Only one asked
        # the same question: the key leaves --error and --min-rate out, and a stricter one's
        # attempts (or any a state stored under the present stop lacks) stay refused.
        answered = (
            stored_answer(folder / "state.json") if resumed and unwritable(request.out) else None
        )
        if answered is not None and (
            answered.error != request.error or answered.min_rate != min_rate
        ):
            answered = None
        # Why the last trial's save failed (suppressed in `oracle`), "" once one succeeds.
        unsaved = [""]

        def stopped() -> BisectInterrupted:
            order = {version: n for n, version in enumerate(versions)}
            if unsaved[0]:
                # The last save failed: state.json lacks trials the resume was promised.
                # Tried once more (a disk that had filled may have room again).
                try:
                    save()
                    unsaved[0] = ""
                except OSError as exc:
                    unsaved[0] = exc.strerror or str(exc)
            # Resumed from what it saved: nothing, before a version had an attempt end.
            if unsaved[0]:
                again = (
                    f"its trials could not be saved in {folder} ({unsaved[0]}): the same "
                    "command starts over from what state.json holds"
                )
            elif trials:
                again = f"rerun the same command to resume {bisect_id}"
            else:
                again = (
                    "no version had an attempt end, so nothing was saved (the same command "
                    "starts over)"
                )
            return BisectInterrupted(
                f"interrupted; {again}",
                bisect_id,
                folder,
                sorted(trials.values(), key=lambda t: order.get(t.version, len(order))),
            )

        def save(result: BisectResult | None = None) -> None:
            write_state(folder / "state.json", request, versions, trials, result)

        def oracle(version: str, attempts: int) -> Trial:
            if cancel is not None and cancel.is_set():  # stopped between two candidates
                raise stopped()
            if answered is not None:
                raise _StoredAnswer(version)
            _check_out(request.out, folder, version)
            # Numbered after the attempts this version already ran (an earlier call, or the
            # stored search's), so that a `${{ attempt }}` seed or a fault's `probability` coin
            # draws new values where asking again numbered from 1 drew the same ones.
            earlier = trials[version].attempts if version in trials else 0
            trial, interrupted = _run_candidate(
                request,
                filters,
                expect,
                environment.packages,
                version,
                attempts,
                cancel,
                deferral,
                say,
                first_attempt=earlier + 1,
            )
            if trial.attempts or not interrupted:
                # What ran counts, even in an interrupted candidate; nothing else is kept.
                trials[version] = trials[version].merged(trial) if version in trials else trial
                # Not kept (--out made read-only, a full disk, since _check_out): the search
                # goes on, and the final save says state.json is not this run's, or
                # `stopped` that the resume it offers lacks these trials.
                try:
                    save()
                    unsaved[0] = ""
                except OSError as exc:
                    unsaved[0] = exc.strerror or str(exc)
                say(_describe(trial))
            if interrupted:
                raise stopped()
            return trial

        try:
            result = search.bisect(
                versions,
                oracle,
                error=request.error,
                budget=request.budget,
                min_rate=min_rate,
                known=known,
            )
        except _StoredAnswer as needs:
            assert answered is not None
            result = dataclasses.replace(
                answered,
                warnings=(
                    *answered.warnings,
                    f"this answer is the one an earlier run stored, under an earlier, less "
                    f"strict stop: the present one asks attempts of {needs.version}, whose "
                    f"runs --out {request.out} cannot store (it cannot be written); make it "
                    "writable and run the same command again to check the answer",
                ),
            )
        except BisectInterrupted:
            raise
        except KeyboardInterrupt:  # while an environment was being built, say
            raise stopped() from None
        # A finished bisect run again on an --out made read-only since: every trial is
        # stored (a new one stops on the results store first, `_check_out`), so the answer
        # is known and printed, with a warning that its files are not this run's; state.json
        # is named only where it lacks what this run added.
        failed: list[tuple[str, str]] = []
        try:
            save(result)
        except OSError as exc:
            if trials != known:
                failed.append(("state.json", exc.strerror or str(exc)))
        changed, unknown = (
            _changed(request, environment, spec.base_dir, result, trials)
            if request.by_date
            else ((), "")
        )
        if unknown:
            say(unknown)
        report = redactor.value(
            BisectReport(
                request,
                bisect_id,
                folder,
                spec.name,
                cell.id,
                versions,
                result,
                changed,
                resumed,
                environment.perturb.describe(),
                # By keyword: placed by position, a field added before them (as `unsaved`
                # was after) took them, and the tests that set them by hand still passed.
                chosen=chosen.reason if chosen.total > 1 else "",
                budget_said=argument("--budget", "budget"),
            )
        )
        return write_reports(report, failed)


class _StoredAnswer(Exception):
    """The search asks attempts of `version` where the stored answer is printed instead."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


def _check_out(out: Path, folder: Path, version: str) -> None:
    """Refuse, before its environment is built, a version's attempts where --out cannot be
    written (made read-only since an earlier run: the stored trials replay, and only a
    version they do not answer gets here); its run stopped on the results store after the
    build, `out is read-only to this user`, with no word of what it was for. So where
    --out can be but the bisect's own folder (OUT/bisect/ID, another user's) cannot: the
    version's attempts ran, then its state.json's write raised a traceback."""
    why = unwritable(out)
    if why:
        raise UsageError(
            f"--out {out}: cannot be written ({why}), and "
            f"{version} needs attempts, whose runs are stored there: give an --out that can be, "
            "or make this one writable again"
        )
    why = unwritable(folder)
    if why:
        raise UsageError(
            f"--out {out}: {folder} cannot be written ({why}), and {version} needs attempts, "
            "whose trials are saved there (state.json): give an --out that can be, or make "
            "that folder writable again"
        )


# ---- candidates ----------------------------------------------------------------------------


def _candidates(request: BisectRequest) -> tuple[str, ...]:
    if request.by_date:
        return releases.days_between(request.good, request.bad)
    assert request.package is not None
    index = venvs.user_index_config((request.find_links,) if request.find_links else ())
    # An end that is a pre-release is listed only with pre-releases: it was asked for, so
    # they are listed (`between` still leaves out those in between, unless --pre).
    ends_pre = releases.prerelease(request.good) or releases.prerelease(request.bad)
    listed = releases.list_versions(request.package, index, pre=request.pre or ends_pre)
    return releases.between(
        listed, request.good, request.bad, pre=request.pre, name=request.package
    )


def _added_package(request: BisectRequest, current: Sequence[str]) -> str | None:
    """The line that says `--package` is none of the cell's packages, or None.

    Each candidate then adds it (a dependency the spec leaves unpinned is bisected so), but
    a misspelt name that is on the index (`--package six` for a spec of `packaging`) built
    an environment per version and ended `the good end reproduces too`, said nowhere why."""
    if request.package is None:
        return None
    if packages.normalize(request.package) in packages.requirement_names(current):
        return None
    listed = " ".join(current) if current else "none"
    pin = request.package if request.by_date else f"{request.package}==VERSION"
    return (
        f"{request.package} is not among the cell's packages ({listed}): each candidate "
        f"adds {pin} to them"
    )


def _rate_floor(rate: object) -> float | None:
    """`expect.rate: ">=0.3"` says a reproducing version fails at least that often."""
    op, value = getattr(rate, "op", None), getattr(rate, "value", None)
    if op in (">=", ">") and isinstance(value, (int, float)) and 0 < value < 1:
        return float(value)
    return None


def candidate_packages(
    current: Sequence[str], package: str | None, version: str, by_date: bool
) -> tuple[str, ...]:
    """The cell's packages with `package` pinned to `version` (unpinned when by date).

    The spec's entry keeps its extras and marker: `requests[socks]==2.31.0` becomes
    `requests[socks]==2.28.0`, where it became `requests==2.28.0` and every version lost
    PySocks (`ModuleNotFoundError` at the bad end, refused though `run` reproduced it)."""
    wanted = packages.normalize(package) if package else None
    pin = (package if by_date else f"{package}=={version}") if package else None
    out: list[str] = []
    for requirement in current:
        names = packages.requirement_names([requirement])
        if pin and wanted and names and names[0] == wanted:
            kept = _with_extras_and_marker(pin, requirement)
            if kept not in out:
                out.append(kept)
            continue
        out.append(requirement)
    if pin and not any(packages.requirement_names([r]) == (wanted,) for r in out):
        out.append(pin)
    return tuple(out)


def _with_extras_and_marker(pin: str, requirement: str) -> str:
    """`pin` (`NAME==V`, or `NAME` by date) with the extras and marker `requirement` has."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        written = Requirement(requirement)
    except InvalidRequirement:  # a wheel file: it names a version, and nothing more
        return pin
    name, sep, rest = pin.partition("==")
    extras = f"[{','.join(sorted(written.extras))}]" if written.extras else ""
    marker = f"; {written.marker}" if written.marker else ""
    return f"{name}{extras}{sep}{rest}{marker}"


def _run_candidate(
    request: BisectRequest,
    filters: Sequence[str],
    expect: str,
    current: Sequence[str],
    version: str,
    attempts: int,
    cancel: threading.Event | None,
    deferral: Deferral | None,
    say: Progress,
    *,
    first_attempt: int = 1,
) -> tuple[Trial, bool]:
    """Up to `attempts` attempts of the cell at `version`, stopping at the first match,
    numbered from `first_attempt`; the runner's lines (the candidate's venv or image build)
    said as the bisect's own are.

    `expect`: the `expect=` override the attempts are judged by (the cell's, no rate).
    Returns what ran and whether the run was interrupted (Ctrl-C, `cancel`).
    """
    from reprospec import api

    pinned = candidate_packages(current, request.package, version, request.by_date)
    override = "environment.packages=" + json.dumps(list(pinned))
    candidate = api.load_spec(request.spec, (*request.overrides, override, expect))
    options = RunOptions(
        runner=request.runner,
        jobs=request.jobs,
        repeat=attempts,
        timeout_s=request.timeout_s,
        stop_on="first-reproduction",
        matrix_filters=tuple(filters),
        out=request.out,
        python=request.python,
        find_links=request.find_links,
        purpose="bisect",
        first_attempt=first_attempt,
        command_line=request.command_line,
        probe=_probe(request, version),
        say=say,
        deferral=deferral,
    )
    with _exclude_newer(_end_of_day(version) if request.by_date else None):
        result = api.run(candidate, options, cancel=cancel)
    cell = result.cells[0]
    ran = [a.ran for a in cell.attempts if a.ran is not None]
    if not ran:
        failed = [a for a in cell.attempts if a.infra_error]
        reason = (failed[0].infra_error if failed else None) or cell.reason or "no attempt ran"
        # The venv runner keeps a failed install's whole output in the folder of the cell's
        # first attempt. Absolute, from the run folder as the run made it: bisect.json, the
        # state a later continuation renders from another folder, and bisect.md (a link from
        # its own folder) name it, where `--out` as typed named it from this cwd only.
        folder = RunFolder.of(request.out.resolve(), result.run_id)
        logs = [folder.path / a.logs / venvs.BUILD_LOG for a in failed if a.logs]
        build_log = next((log for log in logs if log.is_file()), None)
        if build_log is not None:
            # The reason as the runner said it names the file too: the trial keeps it apart.
            reason = reason.removesuffix(build_log_phrase("", build_log))
        trial = Trial(
            version,
            infra_error=reason,
            runs=(result.run_id,),
            build_log=None if build_log is None else str(build_log),
        )
        return trial, result.interrupted
    trial = Trial(
        version,
        attempts=len(ran),
        matched=sum(a.matched for a in cell.attempts if a.ran is not None),
        signatures=tuple(outcome.signature or outcome.kind for outcome in ran),
        runs=(result.run_id,),
    )
    return trial, result.interrupted


def _probe(request: BisectRequest, version: str) -> str:
    """What one candidate's run tried, as `history --searches` names it: `pyyaml 5.4.1`, or
    by date `pyyaml as of 2024-03-05` (the whole environment's, without --package)."""
    if request.by_date:
        return f"{request.package or 'the environment'} as of {version}"
    return f"{request.package} {version}"


def _end_of_day(day: str) -> str:
    return f"{day}T23:59:59Z"


@contextlib.contextmanager
def _exclude_newer(cutoff: str | None) -> Iterator[None]:
    """uv's exclude-newer for the candidate's environment (read by uv and hashed by envs)."""
    if cutoff is None:
        yield
        return
    with environ.changed({"UV_EXCLUDE_NEWER": cutoff}):
        yield


def _describe(trial: Trial) -> str:
    if trial.attempts == 0 and trial.build_log is not None:
        # One line where uv's whole output (70 lines of a setup.py's traceback) was streamed
        # and its reason then said again here and in the table: the file keeps the rest.
        return (
            f"{trial.version}: skipped: cannot be installed: {_failure_line(trial)} "
            f"(build log: {trial.build_log})"
        )
    if trial.attempts == 0:
        return f"{trial.version}: skipped ({trial.infra_error})"
    seen: dict[str, int] = {}
    for signature in trial.signatures:
        seen[signature] = seen.get(signature, 0) + 1
    outcomes = ", ".join(f"{s} x{n}" for s, n in seen.items())
    verdict = "bad" if trial.matched else "clean"
    return f"{trial.version}: {trial.matched}/{trial.attempts} matched ({outcomes}) -> {verdict}"


def _failure_line(trial: Trial) -> str:
    """The one line of a failed install's log that says why (the stored reason where the
    log cannot be read)."""
    assert trial.build_log is not None
    try:
        text = Path(trial.build_log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return venvs.build_failure_line(text) or (trial.infra_error or "no output")


def _changed(
    request: BisectRequest,
    environment: Environment,
    spec_dir: Path,
    result: BisectResult,
    trials: Mapping[str, Trial] | None = None,
) -> tuple[tuple[tuple[str, str | None, str | None], ...], str]:
    """By date: the installed versions that differ between the last good and first bad day,
    read from the environments the venv runner built: the one each day's last run ran in
    (its captured interpreter's prefix, `_ran_in`), else their keys as the runner made them
    (`venvs.env_request`, a path entry's files and the spec's python too), where one built
    by hand without a path entry's `sources` named none and `changed` was empty. With the
    line that says why they are unknown ("" where known): a path entry's files walked
    again (after the search) that raise, or changed since, so that a day's key names no
    environment; either was an empty `changed` said nowhere, or a traceback after the
    answer was saved."""
    if result.status != "found" or result.last_good is None or result.first_bad is None:
        return (), ""
    installed: list[dict[str, str]] = []
    root = _envs_root(request)
    for day in (result.last_good, result.first_bad):
        ran_in = _ran_in(request, (trials or {}).get(day))
        if ran_in is not None:
            installed.append(venvs.installed(ran_in))
            continue
        try:
            with _exclude_newer(_end_of_day(day)):
                index = venvs.user_index_config((request.find_links,) if request.find_links else ())
                pinned = candidate_packages(environment.packages, request.package, day, True)
                env_request = venvs.env_request(
                    dataclasses.replace(environment, packages=pinned),
                    python=request.python,
                    index=index,
                    cwd=spec_dir,
                    warn=lambda _line: None,  # said as the search built it
                )
        except InfraError as exc:
            return (
                (),
                f"what changed from {result.last_good} to {result.first_bad} is unknown: {exc}",
            )
        meta = venvs.read_meta(root / env_request.key())
        if meta is None:
            return (), (
                f"what changed from {result.last_good} to {result.first_bad} is unknown: the "
                f"environment of {day} is not found under {root} (pruned, or a path entry's "
                "files changed since the search ran it)"
            )
        installed.append(venvs.installed(meta))
    names = sorted(set(installed[0]) | set(installed[1]))
    return tuple(
        (n, installed[0].get(n), installed[1].get(n))
        for n in names
        if installed[0].get(n) != installed[1].get(n)
    ), ""


def _ran_in(request: BisectRequest, trial: Trial | None) -> JsonObject | None:
    """The description of the environment the trial's last run ran in, read from where its
    environment capture saw the interpreter (`python.prefix`: the venv's folder), so that
    nothing is walked again; None where it cannot be read (no run, no capture)."""
    if trial is None or not trial.runs:
        return None
    from reprospec.store.resultsjson import load_run

    try:
        run = load_run(trial.runs[-1], request.out)
    except (FatalError, OSError, ValueError):  # gone or damaged: keyed as the runner keyed it
        return None
    python = run.environment.get("python")
    prefix = python.get("prefix") if isinstance(python, dict) else None
    return venvs.read_meta(Path(prefix)) if isinstance(prefix, str) and prefix else None


def _check_python(request: BisectRequest) -> None:
    """`--python` checked as `run --python` checks it (`python3_version`: exit 3 where
    it is missing, does not run, or is no Python 3), before anything is built. Unchecked,
    every version's environment failed on it and the bisect was refused as "the bad end
    cannot be tested", after asking the index for every release. On the venv runner, a
    name (`python3.10`, `3.12`) is found as that runner finds it (`find_interpreter`: uv,
    then past a pyenv shim that does not run), which PATH's shim refused."""
    if request.python is None or request.runner == "docker":
        return
    from reprospec.runners.venv import base_python  # the venv runner's: docker returned

    try:
        base_python(request.python)
    except InfraError as exc:
        raise InfraError(f"{exc} ({said('--python', 'python')})") from exc


def _envs_root(request: BisectRequest) -> Path:
    return venvs.envs_folder(request.out)
