"""One probe of `reprospec minimize` run for real: the candidate written into its own folder,
run as a normal run of the spec, and each attempt read as the bug or not.

driver.py decides what to try; this module answers one probe (`ProbeRunner.run`), from
the state file when an earlier search already ran it. An attempt is the bug when its
expect matches and its signature is the original's (`_kind`); the exceptions it printed
are read from its logs (`_raised`) so a candidate failing some other way is rejected.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from reprospec import native
from reprospec.core.inputs import Cell
from reprospec.core.results import AttemptResult, RunResult
from reprospec.core.runoptions import RunOptions
from reprospec.core.units import format_duration
from reprospec.core.words import plural
from reprospec.errors import FatalError
from reprospec.isolation.candidates import AttemptKind, failed_otherwise, otherwise
from reprospec.isolation.state import StateFile, StoredProbe
from reprospec.minimize.hangplace import attempt_place, ran_source
from reprospec.minimize.program import Program, join_words, left_out, link_inside
from reprospec.minimize.search import (
    Probe,
)
from reprospec.minimize.unperturbed import (
    UNPERTURBED,
)
from reprospec.minimize.workload import (
    field_overrides,
)
from reprospec.outcome.hangsource import Source


def _kind(attempt: AttemptResult, signature: str | None, role: str) -> AttemptKind:
    """What one attempt says: the bug (its expect and the original's signature), or not.

    `signature` None: any failure the expect accepts is the bug (the comparison oracle).
    A passing cell's failure is never a pass, whatever its signature. An attempt without
    the perturbation matches by the expect alone, as amplify counts its base: the rule it
    serves rejects, so a looser match only makes the result larger.
    """
    outcome = attempt.ran
    if outcome is None:
        return "infra"
    if role == "unperturbed":
        if attempt.matched:
            return "match"
        return "pass" if outcome.kind == "pass" else otherwise(outcome.kind)
    same = signature is None or native.attempt_agrees(attempt, signature)
    if role == "passing":
        if outcome.kind == "pass":
            return "pass"
        return "match" if same else otherwise(outcome.kind)
    if attempt.matched and same:
        return "match"
    return "pass" if outcome.kind == "pass" else otherwise(outcome.kind)


# Which logs `_raised` reads, stored with each probe's exceptions (StoredProbe.raised_from):
# a state whose probes say otherwise (an earlier version's, which read stderr alone, or
# stdout too without saying so) is read again (`_reread`), never compared as it is: the
# original's exceptions from stderr against a candidate's from both logs rejected a
# candidate for the very exception the original had printed on stdout.
RAISED_FROM = "stderr+stdout"
# The version of the rule a probe's hang places were read by (StoredProbe.places_from;
# hangplace.place_of and outcome/hungstacks.hung_threads): another, and a stored state's
# are read again. Bump it with each change of that rule. ("stack.txt" before, the same
# rule's first version; places-5 read a line from the folder when read, not the attempt's
# text: a docker container's path never, a live folder the last candidate's; places-6 cut
# a line at a `#` inside a string; places-7 left a C program's hang, with no dump, unread.)
PLACES_FROM = "places-8"


def _side(role: str) -> str:
    """Which cells a probe of `role` runs: the failing cell's, or the passing cells'."""
    return "failing" if role in ("failing", "unperturbed", "recheck") else "passing"


def _longest_attempt(probe: StoredProbe, runs: Path) -> float:
    """The longest attempt of a stored probe's runs that ended (not by a timeout); 0 where
    its runs are gone or unreadable."""
    from reprospec.store.resultsjson import load_run

    longest = 0.0
    try:
        for run_id in probe.run_id.split(","):
            for cell in load_run(runs / run_id).cells:
                for attempt in cell.attempts:
                    if attempt.ran is not None and attempt.ran.kind != "hang":
                        longest = max(longest, attempt.duration_s)
    except (FatalError, OSError):
        return 0.0
    return longest


def probe_key(role: str, program: str) -> str:
    """A stored probe's key: its role and its program's key (`program_of` reads it back)."""
    return f"{role}:{program}"


def program_of(key: str) -> str:
    """The program's key of a stored probe's `probe_key` (a key without its role, as
    written by hand or by no version, is taken whole rather than raise on resume)."""
    return key.split(":", 1)[-1]


def candidate_folder(folder: Path, program: str) -> Path:
    """A candidate's own workdir under the search's folder (`ProbeRunner.materialize`)."""
    return folder / "candidates" / program


def stored_source(
    folder: Path, workdir: Path, *, live: bool, workload: bool, runner: str = "local"
) -> Callable[[StoredProbe], Source]:
    """Where the lines of a stored probe's hangs are read when it is read again (`reread`):
    its candidate's own folder (`candidate_folder`, written once for that content; its
    text unknown where the folder is gone), the live folder's links to the original's
    files alone (its own files are the last candidate's), a workload's workdir (no files
    of its own); each as the container named it where `runner`'s attempts ran in one
    (`ran_source`: a stored probe keeps no execution that recorded it)."""

    def at(where: Path, *, written: bool = True) -> Source:
        return ran_source(where, runner, written=written)

    def source(probe: StoredProbe) -> Source:
        if workload:
            return at(workdir)
        if live:
            return at(folder / "live", written=False)
        return at(candidate_folder(folder, program_of(probe.key)))

    return source


def reread(probe: StoredProbe, runs: Path, source: Callable[[StoredProbe], Source]) -> StoredProbe:
    """A probe an earlier version stored, its exceptions read again from its runs' logs by
    this version's rule (`_raised`), in the order `ProbeRunner._stored` read them; where a run
    is gone or unreadable, none (`raised` empty: the search takes the original's as
    unknown, as for a state stored before they were, and a candidate's as none new), stamped
    `RAISED_FROM` all the same, so that its runs are looked for once, not at each resume. Its
    hangs' places too, where they were not read by this rule (a state stored before they
    were: its Barrier candidate was accepted, and a rerun replayed that answer), only a
    failing probe's that matched (the search compares no other), their lines from
    `source`'s (`stored_source`); where its runs are gone, none, which the search compares
    with nothing. Either way stamped `PLACES_FROM`: read once, not at each resume."""
    from reprospec.store.resultsjson import load_run

    again_raised = probe.raised_from != RAISED_FROM and bool(probe.kinds)
    again_places = (
        probe.places_from != PLACES_FROM and probe.role == "failing" and "match" in probe.kinds
    )
    if not again_raised and not again_places:
        return probe
    raised: list[tuple[str, ...]] = []
    places: list[str] = []
    lines = source(probe)
    try:
        for run_id in probe.run_id.split(","):
            run_dir = runs / run_id
            run = load_run(run_dir)
            for cell in run.cells:
                for attempt in sorted(cell.attempts, key=lambda a: a.attempt):
                    raised.append(_raised(run_dir, attempt))
                    places.append(attempt_place(run_dir, attempt, lines))
    except (FatalError, OSError):
        raised, places = [], []
    read = len(raised) == len(probe.kinds)
    if again_places:
        hung = tuple(places) if read and any(places) else ()
        probe = replace(probe, places=hung, places_from=PLACES_FROM)
    if not again_raised:
        return probe
    # Where its runs are gone, stamped too, with none (`raised` empty, where a probe read
    # holds one entry per attempt): the search takes the original's as unknown and a
    # candidate's as none new, as before; left unstamped, its results.json was looked for
    # again at every resume.
    return replace(probe, raised=tuple(raised) if read else (), raised_from=RAISED_FROM)


def _raised(run_dir: Path, attempt: AttemptResult) -> tuple[str, ...]:
    """The exception types the attempt printed a traceback of, any thread's (the search's
    point 7): on stderr, then on stdout (a shell's `2>&1`, a logger set to stdout), each
    log's head and tail as the classifier reads them, each up to its crash report.

    Two files hold no order between them: where the crash report is on stderr alone and
    the process that died is not the main one (a DataLoader worker, a child), the main
    process printed on after it, and what it logged to stdout then is the death's
    consequence, which varies with timing (one program's main process logged a
    ConnectionResetError, an EOFError or a RuntimeError after the same worker's SIGSEGV):
    stdout is left out there, as stderr's tail after the report is."""
    from reprospec.outcome.evidence import read_log
    from reprospec.outcome.tracebacks import crash_reported, raised_types
    from reprospec.process.childprotocol import STDERR, STDOUT

    outcome = attempt.ran
    if outcome is None or not attempt.logs:
        return ()
    stderr = read_log(run_dir / attempt.logs / STDERR)
    stdout = read_log(run_dir / attempt.logs / STDOUT)
    died_in_main = outcome.where in (None, "main") and outcome.crashed_child is None
    if crash_reported(stderr) and not crash_reported(stdout) and not died_in_main:
        return raised_types(stderr)
    return tuple(dict.fromkeys((*raised_types(stderr), *raised_types(stdout))))


# A candidate's attempts time out at this many times the longest attempt seen to end, and
# never sooner than the floor (`ProbeRunner.candidate_timeout`).
CANDIDATE_FACTOR = 10
CANDIDATE_FLOOR_S = 10.0
# The first attempts' pace is said where the budget at it would take this long or more: a
# user's pytest command spent 9 min 50 s on 145 attempts (8 s each) and heard nothing.
PACE_SAID_FROM_S = 60.0


class ProbeRunner:
    """Runs one probe as a normal run of the candidate (or answers it from the state)."""

    def __init__(
        self,
        *,
        spec_path: Path,
        overrides: Sequence[str],
        options: RunOptions,
        failing: Cell,
        passing: Sequence[Cell],
        workdir: Path,
        failing_overrides: Sequence[str] = (),
        folder: Path,
        as_list: bool,
        state: StateFile,
        cancel: threading.Event,
        parallel: int,
        same_signature: bool = True,
        live: bool = False,
        workload: bool = False,
        env: bool = False,
        timeout_s: float | None = None,
        hang: bool = True,
        say: Callable[[str], None] | None = None,
        budget: int = 0,
        pace_note: str = "",
        pace_key: str = "",
    ) -> None:
        self.env = env  # the spec has environment.env: every candidate sets its own
        self.same_signature = same_signature
        # A workload's candidates are `--set` values of the spec: no files, no own workdir.
        self.workload = workload
        self.live = live
        self.spec_path = spec_path
        self.overrides = tuple(overrides)
        self.options = options
        self.failing = failing
        # The settings step's configuration: a one-cell matrix and the failing expect.
        self.failing_overrides = tuple(failing_overrides)
        self.passing = tuple(passing)
        self.workdir = workdir
        self.folder = folder
        self.as_list = as_list
        self.state = state
        self.cancel = cancel
        self.parallel = parallel
        saved = folder / "signature"
        self.signature = saved.read_text(encoding="utf-8") if saved.is_file() else ""
        # The failure message of the attempt that named the signature (the original's):
        # minimize.md shows it beside the result's.
        said = folder / "message"
        self.message = said.read_text(encoding="utf-8") if said.is_file() else ""
        # How the original failed where it failed otherwise before any attempt matched (a
        # SyntaxError under another interpreter, a hang at a short --timeout): a refusal
        # said "0/20: 20 failed otherwise" and no more, the reason left in the run folders.
        other = folder / "otherwise"
        self.otherwise = other.read_text(encoding="utf-8") if other.is_file() else ""
        self.signature_provisional = False
        self.reused = 0  # probes answered from the state
        self.replayed = 0  # their attempts: counted in the budget as if run again
        # The attempt's own timeout, and whether the failure is a hang: a failure that is
        # not has its candidates run at `candidate_timeout`, from the `longest` attempt seen
        # of each side (the failing cell's probes, the passing cells'): a passing cell that
        # trains 1000 steps is no 10x of a failing one that crashes at step 1.
        self.timeout_s = timeout_s
        self.hang = hang
        self.longest: dict[str, float] = {}
        self.say = say
        self.capped_at: float | None = None
        # The pace line (`_say_pace`): the search's budget, what it ends with (preloadhint),
        # and the original's key, whose first probe's pace it says. Not on a resume: its
        # first probe to run is a candidate's, of 1 attempt, and most of the budget is spent.
        self.budget = budget
        self.pace_note = pace_note
        self.pace_key = pace_key
        self.paced = state.stored > 0

    def candidate_timeout(self, side: str) -> float | None:
        """The timeout a probe's attempts run at: `CANDIDATE_FACTOR` times the longest
        attempt seen to end (not by a timeout), at least `CANDIDATE_FLOOR_S`, where that
        is below the attempt's own. A candidate that lost the code stopping a thread (a
        `finally: stop.set()`) hangs; at capture's 300 s timeout each of its attempts held
        a 2 s pytest suite's minimize still for 5 minutes. Never for a hang, whose
        timeout is what it is judged by; None until an attempt of `side` has ended."""
        longest = self.longest.get(side, 0.0)
        if self.hang or self.timeout_s is None or not longest:
            return None
        cap = max(CANDIDATE_FLOOR_S, CANDIDATE_FACTOR * longest)
        return cap if cap < self.timeout_s else None

    def run(self, program: Program, probe: Probe) -> StoredProbe:
        key = probe_key(probe.role, program.key)
        # At most the attempts asked: a smaller budget's search asks fewer near its end.
        stored = self.state.take(key, probe.attempts)
        if stored is not None:
            self.reused += 1
            self.replayed += len(stored.kinds)
            side = _side(probe.role)
            if not self.hang and not self.longest.get(side):
                # A resumed search's first new probe ran at the spec's timeout: a hanging
                # candidate, the one Ctrl-C stopped, held it 300 s again.
                runs = self.options.out.resolve() / "runs"
                self.longest[side] = _longest_attempt(stored, runs)
            return replace(stored, interrupted=False)
        began = time.monotonic()
        stored = self._run(program, probe, key)
        if probe.role == "failing" and program.key == self.pace_key:
            self._say_pace(stored, time.monotonic() - began)
        if not stored.interrupted:
            self.state.add(stored)
        elif stored.run_id:
            # Cut short by Ctrl-C: not stored (the resumed search asks it again, whole), but
            # the numbers it drew stay drawn, so its attempt folders are not numbered again.
            self.state.cut(key, stored.first_attempt)
        return stored

    def _say_pace(self, stored: StoredProbe, wall_s: float) -> None:
        """After the original's first probe (`-j` of its attempts at a time), the wall clock
        it took, its seconds an attempt at -j (a run's own setup, each interpreter's
        imports), and what the budget left would take at that pace, so a user can choose a
        smaller --budget, a larger -j or --preload before waiting; said once, where that is
        a minute or more. Its k attempts ran in ceil(k/j) rounds of j at once: the budget
        left runs in ceil(left/j) rounds of the same wall clock each."""
        if self.paced or self.say is None or stored.interrupted or not stored.kinds:
            return
        self.paced = True
        ran = len(stored.kinds)
        parallel = max(1, self.parallel)
        round_s = wall_s / -(-ran // parallel)
        left = self.budget - ran
        total = round_s * -(-left // parallel)
        if left <= 0 or total < PACE_SAID_FROM_S:
            return
        minutes, seconds = divmod(round(total), 60)
        self.say(
            f"{plural(ran, 'attempt')} took {wall_s:.1f}s, {round_s / parallel:.1f}s an "
            f"attempt at -j {self.parallel}: the {plural(left, 'attempt')} left of the budget "
            f"would take about {minutes}m {seconds:02d}s at that pace{self.pace_note}"
        )

    def _run(self, program: Program, probe: Probe, key: str) -> StoredProbe:
        from reprospec import api

        if self.cancel.is_set():
            return StoredProbe(key, (), probe.role, (), "", interrupted=True)
        # Numbered after the attempts this candidate's earlier probes used (a recheck's after
        # the failing probes' of the same program): each draws new values of a `${{ attempt
        # }}` seed or a fault's `probability` coin. The passing side runs one attempt a cell.
        failing_side = probe.role in ("failing", "unperturbed", "recheck")
        first = self.state.first_attempt(key, max(1, probe.attempts) if failing_side else 1)
        if self.workload:
            sets = [*self.overrides, *field_overrides(program)]
            source = ran_source(self.workdir, self.options.runner)
        else:
            where = self.materialize(program)
            # The candidate's lines as it ran them, whatever its folder holds when they are
            # read (a live folder is rewritten for the next candidate).
            source = ran_source(where, self.options.runner, program.files)
            sets = [*self.overrides, f"environment.workdir={json.dumps(str(where))}"]
            words = [*program.head, *program.args]
            command = words if self.as_list else join_words(tuple(words))
            sets.append("command=" + json.dumps(command))
        if self.env:
            # Always, when the spec has variables: a candidate that dropped them all must
            # not run with the spec's own.
            sets.append("environment.env=" + json.dumps(dict(program.env)))
        base_options = self.options
        if not self.workload:
            # The original workdir its folder's links name (`link_tree`): read there, never
            # written (the docker runner mounts it read-only; RunOptions.read_only).
            base_options = base_options.with_changes(read_only=self.workdir)
        cap = self.candidate_timeout(_side(probe.role))
        if cap is not None:
            base_options = base_options.with_changes(timeout_s=cap)
            if self.capped_at is None and self.say is not None:
                self.say(
                    f"candidates run at a timeout of {format_duration(cap)}, "
                    f"{CANDIDATE_FACTOR}x the longest attempt that ended "
                    f"({self.longest[_side(probe.role)]:.2f}s), not the attempt's "
                    f"{format_duration(self.timeout_s or 0)}: one that runs longer is not "
                    "the failure"
                )
            self.capped_at = cap
        if probe.role in ("failing", "unperturbed", "recheck"):
            # Without the perturbation (search.py's point 6): the failing cell with its
            # environment.perturb emptied, whatever set it (--amplify's --set, step 1's
            # overrides or the spec), the last override.
            unperturbed = (UNPERTURBED,) if probe.role == "unperturbed" else ()
            spec = api.load_spec(self.spec_path, [*sets, *self.failing_overrides, *unperturbed])
            options = base_options.with_changes(
                repeat=max(1, probe.attempts),
                stop_on="first-reproduction" if probe.stop_after == 1 else "never",
                jobs=self.parallel,
                matrix_filters=() if self.failing_overrides else only_cell(self.failing),
                purpose="minimize",
                first_attempt=first,
            )
            results = [api.run(spec, options, cancel=self.cancel)]
        else:
            spec = api.load_spec(self.spec_path, sets)
            # One run per passing cell, at once: -m filters cannot name a set of cells.
            options = base_options.with_changes(
                repeat=1, jobs=1, purpose="minimize", first_attempt=first
            )
            with ThreadPoolExecutor(max_workers=max(1, self.parallel)) as pool:
                futures = [
                    pool.submit(
                        api.run,
                        spec,
                        options.with_changes(matrix_filters=only_cell(cell)),
                        cancel=self.cancel,
                    )
                    for cell in self.passing
                ]
                results = [f.result() for f in futures]
        return self._stored(results, probe, key, first, source)

    def _learn_signature(self, signature: str, native_text: str | None, message: str) -> None:
        """The original's first matching attempt names the signature every later one needs;
        kept beside the state for a resumed run. One whose native stacks were not read (its
        core lost to a parallel crash) names it only until one that has them agrees."""
        unknown = native.read_none(native_text)
        if self.signature and not (
            self.signature_provisional
            and not unknown
            and native.agrees(self.signature, signature, native_unknown=True, across_builds=False)
        ):
            return
        self.signature = signature
        self.signature_provisional = unknown
        self.message = message
        self.folder.mkdir(parents=True, exist_ok=True)  # a workload's probes write no files
        (self.folder / "signature").write_text(signature, encoding="utf-8")
        (self.folder / "message").write_text(message, encoding="utf-8")

    def _learn_otherwise(self, attempt: AttemptResult, run_dir: Path) -> None:
        """The first attempt of the original that failed otherwise, its signature, message
        and folder, for the refusal where none matched; kept beside the state, as the
        signature is, for the same command again."""
        outcome = attempt.ran
        if self.otherwise or outcome is None:
            return
        message = (outcome.message or "").strip().splitlines()
        said = f" ({message[-1][:200]})" if message else ""
        where = f", its logs in {run_dir / attempt.logs}" if attempt.logs else ""
        self.otherwise = f"{outcome.signature}{said}{where}"
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "otherwise").write_text(self.otherwise, encoding="utf-8")

    def _stored(
        self, results: Sequence[RunResult], probe: Probe, key: str, first: int, source: Source
    ) -> StoredProbe:
        kinds: list[AttemptKind] = []
        raised: list[tuple[str, ...]] = []
        places: list[str] = []
        numbers: list[int] = []
        reason = ""
        for result in results:
            run_dir = self.options.out.resolve() / "runs" / result.run_id
            for cell in result.cells:
                for attempt in sorted(cell.attempts, key=lambda a: a.attempt):
                    unperturbed = probe.role == "unperturbed"
                    if attempt.matched and attempt.ran is not None and not unperturbed:
                        self._learn_signature(
                            attempt.ran.signature, attempt.native, attempt.ran.message or ""
                        )
                    signature = self.signature if self.same_signature else None
                    if attempt.ran is not None and attempt.ran.kind != "hang":
                        side = _side(probe.role)
                        self.longest[side] = max(self.longest.get(side, 0.0), attempt.duration_s)
                    kinds.append(_kind(attempt, signature, probe.role))
                    failing = probe.role == "failing"
                    if failed_otherwise(kinds[-1]) and failing and not self.signature:
                        self._learn_otherwise(attempt, run_dir)
                    raised.append(_raised(run_dir, attempt))
                    places.append(attempt_place(run_dir, attempt, source))
                    numbers.append(attempt.attempt)
                    reason = attempt.infra_error or reason
        return StoredProbe(
            key=key,
            candidate=(),
            role=probe.role,
            kinds=tuple(kinds),
            run_id=",".join(r.run_id for r in results),
            infra_reason=reason,
            interrupted=any(r.interrupted for r in results),
            raised=tuple(raised),
            raised_from=RAISED_FROM,
            places=tuple(places) if any(places) else (),
            places_from=PLACES_FROM,
            first_attempt=first,
            # The failing side's one run numbers its attempts as a configuration's (StoredProbe
            # keeps them where not contiguous); the passing side's one attempt of each cell
            # shares one number.
            numbers=tuple(numbers) if len(results) == 1 else (),
        )

    def _skipped(self) -> set[Path]:
        """What no candidate mirrors: this search's folder and the store it is in (--out),
        which `left_out` cannot tell from its database before the first run is stored."""
        return {self.folder.resolve(), self.options.out.resolve()}

    def materialize(self, program: Program) -> Path:
        """The candidate's workdir: its files written, every other file linked to the original.

        Live (under run.preload): one folder, its program files rewritten for each probe;
        probes run one at a time, so no two candidates share it at once.
        """
        if self.live:
            where = self.folder / "live"
            if not where.is_dir():
                link_tree(self.workdir, where, skip=self._skipped())
            for path, text in program.files:
                target = where / path
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            return where
        where = candidate_folder(self.folder, program.key)
        if where.is_dir():
            return where
        temporary = where.with_name(where.name + ".tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        link_tree(self.workdir, temporary, skip=self._skipped())
        for path, text in program.files:
            target = temporary / path
            if target.is_symlink() or target.exists():
                # Unlinked, never written through: the link's file is the user's.
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        temporary.replace(where)
        return where


def link_tree(source: Path, target: Path, skip: set[Path]) -> None:
    """`target` mirrors `source`: the same folders, each file a symlink to the original's,
    by its path (links kept) that the runs' `RunOptions.read_only` names, so that the docker
    runner mounts it read-only there: a candidate is a mutated program (a guard cut, and
    `np.save` rewrites the user's cache), and a write through a link must never reach the
    user's file (hard links, for the container's sake, let the container's root rewrite
    it, 0444 or not; review). Caches and results stores are left out (`left_out`), and
    `skip`. A folder linked into the workdir (`data -> /datasets/x`) is linked whole, as a
    file is: os.walk lists it with the folders and never walks it, and it was in no
    candidate's folder (the original's `open("data/cfg.txt")` failed in each attempt,
    refused). A link whose target is in the workdir (`pkg -> src/pkg`): `_mirrored`."""
    target.mkdir(parents=True, exist_ok=True)
    real = source.resolve()
    for root, dirs, names in os.walk(source):
        here = Path(root)
        dirs[:] = [d for d in dirs if not left_out(here / d) and (here / d).resolve() not in skip]
        linked = [d for d in dirs if (here / d).is_symlink()]
        rel = here.relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in (*names, *linked):
            (target / rel / name).symlink_to(_mirrored(here / name, rel, real, skip))


def _mirrored(path: Path, rel: Path, real: Path, skip: set[Path]) -> Path | str:
    """What a candidate's link to `path` (in the workdir's folder `rel`) points at: the
    original's `path`, but where `path` is itself a link to a file or folder of the workdir
    that candidates mirror (`pkg -> src/pkg`), that one in the candidate's own folder,
    relative: `Program` keeps a module by its real path (src/pkg/mod.py), and a link to the
    original's `pkg` had every candidate's `import pkg` load the original's module, never
    the candidate's (status budget, the module minimized to nothing of the bug)."""
    found = link_inside(path, real, rel)
    if found is None:
        return path  # no link, or one out of the workdir: the original's, read there
    inside, text = found
    folders = [real / Path(*inside.parts[:n]) for n in range(1, len(inside.parts) + 1)]
    if any(f in skip or (f.is_dir() and left_out(f)) for f in folders):
        return path  # left out of every candidate's folder: the original's
    return text


def only_cell(cell: Cell) -> tuple[str, ...]:
    """`-m` filters that keep exactly this cell."""
    return tuple(f"{axis}={json.dumps(value)}" for axis, value in cell.matrix.items())
