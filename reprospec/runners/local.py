"""The local runner: each attempt is a subprocess of the chosen interpreter on this machine."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.core.gpudebug import SANITIZER_LOG, sanitizer_argv
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.recent import Recent
from reprospec.core.results import Execution
from reprospec.core.scoped import Scoped
from reprospec.environment.interpreter import python3_version
from reprospec.environment.probe import HARNESS_PYTHON, probe_environment
from reprospec.errors import FatalError, InfraError
from reprospec.native import cudagdb
from reprospec.perturb import apply as perturbing
from reprospec.perturb import competitors
from reprospec.perturb import fork as perturb_fork
from reprospec.process import (
    leftovers,
    memcgroup,
    rlimits,
    run,
    sanitizer,
    scratch,
    starter,
    tree,
)
from reprospec.process.childprotocol import (
    CELL_VAR,
    HARNESS_DIR,
    ChildPaths,
    Instance,
    child_env,
    write_cell,
)
from reprospec.process.output import EventWriter, MarkerMatcher, compile_markers, output_sink
from reprospec.runners.base import (
    AttemptFiles,
    attempt_files,
    cd_folders,
    infra_execution,
    pipeline_report,
    stall_watch,
)

if TYPE_CHECKING:  # imported when a spec asks for them (preload, packages): most runs never do
    from reprospec.environment.packages import PackageCheck
    from reprospec.process import forkserver
    from reprospec.runners import programs  # a cell held to its environment's programs
    from reprospec.runners.together import InstanceStart

SHIM_PREFIX = "reprospec-python-"


def resolve_python(python: str | None) -> str:
    """The interpreter as an absolute path, symlinks kept (a venv's python stays in its venv)."""
    if python is None:
        return sys.executable
    if os.sep not in python:
        return shutil.which(python) or python
    # abspath, not Path.resolve (which follows symlinks); os.path.expanduser leaves a `~`
    # it cannot expand where Path.expanduser raises.
    return os.path.abspath(os.path.expanduser(python))  # noqa: PTH100, PTH111


def _older_than_harness(version: str) -> bool:
    """Whether an interpreter of `version` (`3.9.18`) is older than the harness runs on."""
    parts = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    return parts < HARNESS_PYTHON


def checked_python(python: str | None) -> str:
    """`--python`'s interpreter (`resolve_python`), checked by `python3_version` (InfraError,
    exit 3, where it is missing, not executable, or runs but is no Python 3) before a verb
    asks it anything: the one check of `--python` for every verb that takes it (`env`,
    `doctor` and `materialize` asked a script that printed "hello" for its environment and
    said only `printed no JSON: Expecting value: line 1 column 1 (char 0)`, where `run` said
    what was wrong)."""
    path = resolve_python(python)
    python3_version(path)
    return path


def _unchosen(python: str) -> str | None:
    """`ran reprospec's own interpreter X, not Y of your PATH`, of the `python` or
    `python3` a command names (`_ran_unchosen`): why a missing module may be ours.

    None when the PATH's `python3` (or `python`) is in the same folder as `python`:
    the person's own interpreter (an activated venv, the system's).
    """
    theirs = shutil.which("python3") or shutil.which("python")
    if theirs is not None and os.path.dirname(os.path.abspath(theirs)) == os.path.dirname(python):  # noqa: PTH100, PTH120
        return None
    yours = f", not {theirs} of your PATH" if theirs else " (no python on your PATH)"
    return f"ran reprospec's own interpreter {python}{yours}"


def _ran_unchosen(argv: Sequence[str] | None, unchosen: str | None) -> str | None:
    """`` `python3` in the command ran reprospec's own interpreter ... ``, named as the
    command names it (it said `python` of a command that ran `python3`)."""
    if unchosen is None or not argv:
        return None
    found = _BARE_PYTHON.search(" ".join(argv))
    return None if found is None else f"`{found['name']}` in the command {unchosen}"


# The command's program as the attempt's PATH finds it, for a moment (programs.py): every
# attempt of a short command would walk PATH and read a file's first line again.
_FOREIGN: Recent[tuple[str, str], tuple[programs.Foreign | None]] = Recent()

# A command that runs `python` or `python3` by name (the shims resolve it to ours).
_BARE_PYTHON = Lazy(r"(?:^|[\s;&|(`])(?P<name>python3?)(?=\s|$)")


class _Outer:
    """The engine's environment as a child inherits it, decoded once while it is unchanged.

    `dict(os.environ)` decodes every variable in Python (about 40 calls per variable set,
    a tenth of the engine's CPU per attempt of `true`). os.environ keeps its encoded
    form in a dict (`_data`): comparing that with the copy taken at the last decode is
    one C-level comparison, so a change (a test fixture's, an API user's
    `os.environ[...] = ...` between runs) is still seen before the next attempt starts.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.encoded: dict[object, object] | None = None
        self.decoded: dict[str, str] = {}


_OUTER = _Outer()


def outer_environ() -> dict[str, str]:
    """A copy of os.environ without the engine's own cell variable (an engine running
    inside another attempt must not hand its cell down)."""
    encoded = getattr(os.environ, "_data", None)
    if not isinstance(encoded, dict):  # not CPython's os.environ: decode it every time
        outer = dict(os.environ)
        outer.pop(CELL_VAR, None)
        return outer
    with _OUTER.lock:
        if _OUTER.encoded != encoded:
            # The encoded copy first: a change made while decoding is seen next time.
            _OUTER.encoded = dict(encoded)
            _OUTER.decoded = dict(os.environ)
            _OUTER.decoded.pop(CELL_VAR, None)
        return dict(_OUTER.decoded)


def _prepend_path(value: str | None, *entries: str) -> str:
    parts = [*entries]
    if value:
        parts.append(value)
    return os.pathsep.join(parts)


class LocalRunner:
    """Runs attempts as child processes of `python` (default: the engine's own interpreter)."""

    name = "local"
    # Said after a cell's missing packages; the venv runner (which installs them) says none.
    # A ticket's pins (`capture --from-log`: torch==2.3.1 of a CUDA machine) are rarely
    # this machine's, and installing them is not always what the reader wants.
    # `--python PATH` first: a captured spec pins the packages of the interpreter it ran
    # with, and a bare `reprospec run` of it named only these two. Its header names that
    # interpreter only where capture was given --python (capture/command.py's _header):
    # "a captured spec's header names the one" sent a bundle's reader to a header without it.
    packages_hint = (
        "; `--python PATH` runs it with an interpreter that has them (a spec captured with "
        "--python names it in its header), `--runner venv` builds an environment "
        "that has them, or `--set 'environment.packages=[]'` runs the cell with this "
        "interpreter's as they are"
    )
    # Whether every cell's programs must be its interpreter's environment's (programs.py):
    # the venv runner's cells, whose environment is the cell's. The local runner holds a
    # cell to it only where the cell lists `packages` (then its verdict claims them); a
    # command of a cell without them runs as the person's shell would run it.
    own_programs = False
    # Whether the cell's packages were installed into this interpreter for it (the venv
    # runner's): an entry that names only a location (`./mypkg`) was installed from there,
    # and is not refused as one no name can be checked for, which made every venv cell of a
    # folder package infra-error after uv had installed it.
    installed_here = False

    def __init__(
        self,
        python: str | None = None,
        cache_dir: Path | None = None,
        *,
        native_stacks: bool = True,
        keep_cores: bool = False,
    ) -> None:
        self.python = resolve_python(python)
        # Whether the person chose the interpreter that `python` in a command runs: given
        # with --python, or the `python` of their own PATH. Else it is the one reprospec was
        # installed into (a pipx or `uv tool` venv), which has only reprospec's packages.
        self.unchosen = None if python is not None else _unchosen(self.python)
        # Where the torch part of the environment capture is kept between runs.
        self.cache_dir = cache_dir
        # gdb stacks of crashes (from cores) and hangs (attached): native.py.
        self.native_stacks = native_stacks
        self.keep_cores = keep_cores
        self._lock = threading.Lock()
        self._version: str | None = None
        self._shim_dir: Path | None = None
        # The guards of other environments' programs, by the PATH they were made from.
        self._guards: dict[str, Path | None] = {}
        # The cell's `packages`, checked against what the interpreter has (once per key),
        # made at the first cell that lists some.
        self._packages: PackageCheck | None = None
        # What that check found (its mismatch lines) for the attempts the environment
        # capture asked for (`keep_package_lines`), by (cell, attempt): the same probe's
        # words, not a second probe of the interpreter. By attempt, not by cell: the check's
        # key holds the attempt's site variables (PYTHONPATH perturbed, a `${{ attempt }}`
        # value), and under -j the attempt whose check ended last decided the captured
        # attempt's lines. Only those asked for: one entry per attempt grew for the whole
        # run (-j with a large repeat), where one is read.
        self._keep_lines: set[tuple[str, int]] = set()
        self._package_lines: dict[tuple[str, int], tuple[str, ...] | None] = {}
        # Fork servers for `run.preload`, started when an attempt first needs one.
        self._preloader: forkserver.Preloader | None = None

    def close(self) -> None:
        """Stop the preload servers (the run is over); attempts may not be running."""
        with self._lock:
            preloader, self._preloader = self._preloader, None
        if preloader is not None:
            preloader.close()

    def _preload(self) -> forkserver.Preloader:
        from reprospec.process import forkserver

        kept = _kept(self.python)
        if kept is not None:
            with _KEPT.lock:
                if kept.preloader is None:
                    kept.preloader = forkserver.Preloader(self.python)
                # Not this runner's to close: the keep_servers() block closes it.
                return kept.preloader
        with self._lock:
            if self._preloader is None:
                self._preloader = forkserver.Preloader(self.python)
                # An API user who never calls close() still leaves no server behind.
                weakref.finalize(self, self._preloader.close)
            return self._preloader

    def keep_package_lines(self, plan: AttemptPlan) -> None:
        """Keep what the check finds for the attempt `plan` (the capture's): `package_lines`."""
        with self._lock:
            self._keep_lines.add((plan.cell.id, plan.attempt))

    def package_lines(self, plan: AttemptPlan) -> tuple[str, ...] | None:
        """What the run's own check of `environment.packages` found wrong for the attempt
        `plan`, one line each (() where nothing); None where it has not checked it, or was
        not asked to keep it (`keep_package_lines`)."""
        with self._lock:
            return self._package_lines.get((plan.cell.id, plan.attempt))

    def _package_check(self) -> PackageCheck:
        """The run's one check of `environment.packages` (its cache is per run, shared by
        the attempts' threads); a spec that lists none never imports its probe."""
        from reprospec.environment.packages import PackageCheck

        with self._lock:
            if self._packages is None:
                self._packages = PackageCheck()
            return self._packages

    # -- interpreter -----------------------------------------------------------------

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:  # noqa: ARG002 (Runner protocol)
        """Check that the interpreter exists and runs; raises InfraError otherwise."""
        self._check_interpreter()
        self._shims()
        # Found (or built, once per machine) now, not inside the first attempt's time.
        starter.find()

    def _check_interpreter(self) -> str:
        with self._lock:
            if self._version is None:
                self._version = python3_version(self.python)
            return self._version

    def _shims(self) -> Path:
        """A folder whose `python` and `python3` run the chosen interpreter (put first on PATH).

        They are tiny exec scripts, not symlinks: through a symlink the child's
        sys.executable would be the link and a venv interpreter would lose its venv
        (pyvenv.cfg is looked up next to the path that was run).
        """
        kept = _kept(self.python)
        if kept is not None:
            # The same folder for every run of the block: it is on PATH, and PATH is part
            # of a preload server's key, so another folder would be another server.
            with _KEPT.lock:
                if kept.shims is None:
                    kept.shims = _make_shims(self.python)
                return kept.shims
        with self._lock:
            if self._shim_dir is not None:
                return self._shim_dir
            folder = _make_shims(self.python)
            weakref.finalize(self, shutil.rmtree, folder, True)
            self._shim_dir = folder
            return folder

    def _guard_dir(self, search_path: str, own: frozenset[str]) -> Path | None:
        """The folder of guards for the programs of other environments on `search_path`
        (programs.py), None where there are none; made once per PATH (shared inside
        `keep_servers()`, as the shims are: the folder is on PATH, part of a preload
        server's key)."""
        from reprospec.runners import programs

        kept = _kept(self.python)
        lock, made = self._guard_table(kept)
        with lock:
            if search_path not in made:
                foreign = programs.foreign_scripts(search_path, own)
                folder = None
                if foreign:
                    scratch.sweep_orphans(tempfile.gettempdir(), SHIM_PREFIX)
                    folder = Path(tempfile.mkdtemp(prefix=f"{SHIM_PREFIX}{os.getpid()}-guards-"))
                    leftovers.watch_path(folder)
                    if kept is None:
                        weakref.finalize(self, shutil.rmtree, folder, True)
                    programs.write_guards(folder, foreign)
                made[search_path] = folder
            return made[search_path]

    def _guard_table(self, kept: _Kept | None) -> tuple[threading.Lock, dict[str, Path | None]]:
        """The guard folders made so far, by PATH, and the lock they are made under: the
        kept servers' (shared inside `keep_servers()`), else this runner's own."""
        return (_KEPT.lock, kept.guards) if kept is not None else (self._lock, self._guards)

    def _guard_folders(self) -> set[str]:
        lock, made = self._guard_table(_kept(self.python))
        with lock:
            return {str(folder) for folder in made.values() if folder is not None}

    # -- attempts --------------------------------------------------------------------

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        """Run one attempt to its end, timeout or cancel; no process of it survives."""
        return self._run(plan, log_dir, gpu_slot=gpu_slot, cancel=cancel)

    def run_instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slots: Sequence[tuple[str, ...]],
        cancel: threading.Event | None = None,
    ) -> tuple[Execution, ...]:
        """Run `plan.copies` instances of one attempt, released together (together.py).

        Instance I runs in `log_dir/instance-I/` with its own GPU slot and variables;
        the instances share the attempt's TMPDIR and XDG_CACHE_HOME (copies of one
        program on one machine share its caches). Raises InfraError when the instances
        could not all be started; no process of any instance survives the return.
        """
        # Imported by a spec with run.instances only: the start barrier and its socket
        # are nothing a run of single attempts needs (issue 30, item 4).
        from reprospec.runners.together import instance_slots, run_together

        slots = instance_slots(plan, gpu_slots)
        self._check_interpreter()
        self._shims()
        if not plan.workdir.is_dir():
            raise InfraError(f"workdir not found: {plan.workdir}")
        shared_tmp = plan.environment.shared_tmp
        scratch_dirs = None if shared_tmp else scratch.prepare(log_dir)
        shm = scratch.shm_snapshot()

        def run_one(number: int, start: InstanceStart, stop: threading.Event) -> Execution:
            folder = log_dir / f"instance-{number}"
            return self._run(plan, folder, gpu_slot=slots[number], cancel=stop, instance=start)

        def cleanup() -> list[str]:
            said = list(scratch.clean(scratch_dirs)) if scratch_dirs is not None else []
            return [*said, *scratch.remove_shm_leaks(shm, remove=not shared_tmp)]

        return run_together(
            plan, log_dir, run_one=run_one, scratch_dirs=scratch_dirs, cancel=cancel,
            cleanup=cleanup,
        )  # fmt: skip

    def _run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
        instance: InstanceStart | None = None,
    ) -> Execution:
        # A command's logs are made at their first byte (most attempts that pass print
        # nothing); a workload's and an instance's as before, which their readers expect.
        lazy = plan.workload is None and instance is None
        base = attempt_files(plan, log_dir, gpu_slot)
        events_path = base["events_path"]

        def infra(reason: str, warnings: Sequence[str] = ()) -> Execution:
            now = run.utc_now()
            return infra_execution(base, reason, started=now, finished=now, warnings=warnings)

        try:
            version = self._check_interpreter()
            shims = self._shims()
        except InfraError as exc:
            return infra(str(exc))
        if not plan.workdir.is_dir():
            return infra(f"workdir not found: {plan.workdir}")
        if plan.workload is not None:
            if _older_than_harness(version):
                # The harness failed to import there (`ImportError: cannot import name
                # 'TypeAlias'`), an exit 1 judged an `error` as if it were the program's.
                return infra(
                    f"a workload runs reprospec's harness, which needs Python "
                    f"{'.'.join(map(str, HARNESS_PYTHON))} or later; {self.python} is Python "
                    f"{version}: give --python an interpreter that new"
                )
            argv = [self.python, "-m", "reprospec_harness"]
            write_cell(plan, log_dir / "cell.json")
        elif plan.argv:
            argv = list(plan.argv)
            if argv[0] in ("python", "python3"):
                # What the shim on PATH would exec, without the shell in between.
                argv[0] = self.python
        else:
            return infra("nothing to run: the plan has neither a command nor a workload")
        tool = plan.environment.debug.compute_sanitizer
        if tool is not None:
            exe = sanitizer.find(self.python)
            if exe is None:
                return infra(
                    f"environment.debug.compute_sanitizer: {tool}: compute-sanitizer not found "
                    f"on PATH, in {self.python}'s site-packages or /usr/local/cuda/bin; "
                    f"{sanitizer.INSTALL_HINT}"
                )
            argv = sanitizer_argv(exe, tool, str(log_dir), argv)
        warnings: list[str] = []
        perturb = plan.environment.perturb
        try:
            # Before anything starts: a perturbation this machine cannot apply is the
            # attempt's infra-error, never a plain run (perturb/apply.py).
            applied = perturbing.prepare(
                perturb, token=tree.new_token(), wants_gpu=plan.environment.wants_gpu
            )
        except FatalError as exc:
            return infra(str(exc))
        # Where launch.py says what it could not apply: it runs only with the options.
        refused_path = log_dir / "perturb-refused.txt" if applied.launch_options else None
        launch_options = list(instance.launch_options if instance else ())
        if refused_path is not None:
            launch_options += [*applied.launch_options, "--refused", str(refused_path)]
        try:
            argv, limit_warnings = rlimits.wrap_argv(
                argv, plan.environment, launch_options, torch=plan.uses_torch
            )
        except FatalError as exc:
            perturbing.finish(applied)
            return infra(str(exc))
        warnings.extend(limit_warnings)
        shared_tmp = plan.environment.shared_tmp
        # An instance's scratch is its attempt's, made and cleaned by run_instances.
        own_scratch = instance is None and not shared_tmp
        scratch_dirs = scratch.prepare(log_dir) if own_scratch else None
        env = self._child_env(
            plan,
            log_dir,
            shims,
            gpu_slot,
            scratch_dirs if instance is None else instance.scratch,
            instance.instance if instance is not None else None,
        )
        # A forked attempt's server is the unperturbed attempt's (the base's, under amplify):
        # the fork applies the perturbation itself (perturb/fork.py).
        unperturbed = dict(env)
        # The perturbation wins over the spec's own env: it is the experiment.
        env.update(perturbing.variables(perturb, env))
        packages = plan.environment.packages
        guarded = self.own_programs or bool(packages)
        if guarded and plan.argv:
            # Never a verdict on another environment's packages: a console script the
            # cell's environment lacks is not run from the caller's (programs.py).
            foreign = self._foreign_program(plan.argv, env["PATH"], shims)
            if foreign is not None:
                if scratch_dirs is not None:
                    scratch.clean(scratch_dirs)
                perturbing.finish(applied)
                return infra(foreign.reason, warnings)
        if packages:
            # Never a verdict on the wrong environment: a cell whose packages this
            # interpreter does not satisfy is not run (issue 9).
            check = self._package_check()
            wanted = tuple(packages)
            if self.installed_here:
                wanted = check.named(wanted)
            refused, lines = check.checked(self.python, wanted, env=env, cwd=plan.workdir)
            with self._lock:
                if (plan.cell.id, plan.attempt) in self._keep_lines:
                    self._package_lines[plan.cell.id, plan.attempt] = lines
            if refused and self.packages_hint:
                refused += self.packages_hint
            if refused:
                if scratch_dirs is not None:
                    scratch.clean(scratch_dirs)
                perturbing.finish(applied)
                return infra(refused, warnings)
        capture = (
            native.Capture(
                log_dir,
                keep_cores=self.keep_cores,
                elsewhere=cd_folders(plan),
                stderr=pipeline_report(plan, base["stderr_path"]),
            )
            if self.native_stacks
            else None
        )
        launcher: forkserver.Launcher | None = None
        launch_note: str | None = None
        unforked = perturb_fork.unforkable(perturb) if plan.preload else None
        if unforked is not None:
            launch_note = f"ran fresh: {unforked}"
        elif plan.preload:
            # Forked from a server that imported the modules once (forkserver.py), or fresh.
            launcher, reason = self._preload().launcher(
                plan,
                unperturbed,
                fresh_argv=argv,
                native=capture,
                cancel=cancel,
                perturb=perturb_fork.fork_options(applied, refused_path),
            )
            if launcher is None:
                launch_note = f"ran fresh: {reason}"
        try:
            markers, marker_warnings = compile_markers(plan.markers)
            warnings.extend(marker_warnings)
            events = EventWriter(events_path) if markers else None
            shm = scratch.shm_snapshot() if instance is None else None
            # Markers are matched on their own thread: a slow regex never delays the timeout.
            matcher = MarkerMatcher(markers, events) if events is not None else None
            # Cores held from their creation while the attempt runs (native/corewatch.py).
            watched = capture.watch(plan.workdir) if capture is not None else ()
            stall = stall_watch(plan, events_path)
        except BaseException:
            if launcher is not None:  # its server's lease: held, a server is never stopped
                launcher.release()
            raise
        load = None
        oom_watch = memcgroup.OomWatch()
        oom: str | None = None
        no_oom_kill = False
        # Whether its watch may be left unread (memcgroup.none_killed): known once it ran.
        unread = False
        try:
            load = competitors.start_load(perturb, applied.cpu_list, log_dir)
            result = run.run_process(
                argv,
                env=env,
                cwd=plan.workdir,
                stdout=output_sink(base["stdout_path"], matcher=matcher, lazy=lazy),
                stderr=output_sink(base["stderr_path"], matcher=matcher, lazy=lazy),
                timeout_s=plan.timeout_s,
                stack_dir=log_dir,
                stack_path=log_dir / "stack.txt",
                cancel=cancel,
                native=capture,
                start=launcher,
                record=os.path.join(log_dir, leftovers.INFLIGHT),  # noqa: PTH118 (os calls use it)
                stall=stall,
                # An attempt's own folder (not an instance's): the run folder hands a silent
                # pass's folder, its blank record in it, to the cell's next attempt.
                reuse_record=instance is None,
            )
            unread = memcgroup.none_killed(result.descendants, result.returncode)
        except (run.OutputLost, run.AttemptLost) as exc:
            return infra(str(exc.strerror), warnings)
        except OSError as exc:
            return infra(f"cannot start {argv[0]}: {exc.strerror or exc}", warnings)
        except FatalError as exc:  # the competitors could not start
            return infra(str(exc), warnings)
        finally:
            if launcher is not None:  # the attempt is over: its server may be stopped
                launcher.release()
            competitors.stop_load(load, log_dir)
            # perturb.memory_limit's cgroup is the attempt's alone: its count is certain.
            own = perturbing.finish(applied)
            if unread:
                # One process, which died of no SIGKILL: no kill counted was the attempt's
                # (`no_oom_kill` stays False, unknown: it judges only a SIGKILL's sender).
                oom_watch.end()
                oom = own
            else:
                engine_wide = oom_watch.said()
                if own is None and engine_wide is not None and oom_watch.shared:
                    # Maybe another attempt's kill: a warning, never the SIGKILL's name.
                    warnings.append(engine_wide)
                    engine_wide = None
                oom = own or engine_wide
                # Read once every process of the attempt is gone: none can be killed after.
                # Read where a kill was named too: the next attempt's watch takes this count
                # as its start's (memcgroup.MACHINE_FRESH_S), so it must hold that kill.
                none_anywhere = oom_watch.none_anywhere()
                no_oom_kill = oom is None and none_anywhere
            for folder in watched:
                native.WATCH.release(folder)
            if matcher is not None:
                warnings.extend(matcher.close())
            if events is not None:
                events.close()
            if stall is not None:
                stall.close()
            # Every process of the attempt is gone: what it left is no one's.
            if scratch_dirs is not None:
                warnings.extend(scratch.clean(scratch_dirs))
            if shm is not None:
                warnings.extend(scratch.remove_shm_leaks(shm, remove=not shared_tmp))
        lost = launcher.lost if launcher is not None else None
        if launcher is not None and lost is not None and not result.timed_out:
            # Its server died under it (forkserver.py): its SIGKILL is no verdict on the
            # program. One that timed out was alive at its deadline: its hang is its own.
            lost_execution = infra_execution(
                base,
                lost,
                started=result.started,
                finished=result.finished,
                warnings=warnings,
                duration_s=result.duration_s,
            )
            return replace(lost_execution, launch="forked", launch_note=launcher.note)
        if tool is not None and not result.timed_out:
            failed = sanitizer_failure(result.returncode, log_dir, base)
            if failed is not None:
                return infra_execution(
                    base, failed, started=result.started, finished=result.finished,
                    warnings=warnings, duration_s=result.duration_s,
                )  # fmt: skip
        # Only launch.py writes the reason, and it runs only with the perturbation's options.
        not_perturbed = perturbing.refused_reason(refused_path) if refused_path else None
        if not_perturbed is not None:
            return infra(not_perturbed, warnings)
        # A guard ran: the command started another environment's program, whatever it
        # made of that (`pytest || true` passes) is no verdict on the cell's packages.
        refused_program = None
        if guarded:
            from reprospec.runners import programs

            refused_program = programs.refused_reason(log_dir)
        if refused_program is not None:
            return infra(refused_program, warnings)
        # The folder's names as the attempt left it, for Evidence.read (one listing); the
        # competitors' files stop_load removed after it are not (review).
        names = result.names
        if names is not None and load is not None:
            names = frozenset(n for n in names if not fnmatchcase(n, competitors.IO_LOAD_FILES))
        if plan.environment.debug.cuda_coredump is not None:
            # cuda-gdb's files are written here, after the listing: Evidence lists again.
            names = None
            # Every process is gone: the GPU core the driver wrote is complete.
            said = cudagdb.read_core(log_dir)
            if said is not None:
                warnings.append(said)
        return Execution(
            returncode=result.returncode,
            timed_out=result.timed_out,
            stalled=result.stalled,
            duration_s=result.duration_s,
            started=result.started,
            finished=result.finished,
            stack_path=result.stack_path,
            interrupted=result.interrupted,
            warnings=(*warnings, *result.warnings),
            child_exits=result.child_exits,
            descendants=result.descendants,
            program_died=result.program_died,
            process_limit=result.process_limit,
            oom=oom,
            no_oom_kill=no_oom_kill,
            launch="forked" if launcher is not None and launcher.forked else "fresh",
            launch_note=launcher.note if launcher is not None else launch_note,
            perturbed=applied.notes,
            ended_at=result.ended_at,
            unchosen_python=_ran_unchosen(plan.argv, self.unchosen),
            names=names,
            **base,
        )

    def _child_env(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        shims: Path,
        gpu_slot: tuple[str, ...],
        scratch_dirs: scratch.Scratch | None = None,
        instance: Instance | None = None,
    ) -> dict[str, str]:
        """os.environ + the spec's env + the child protocol (ARCHITECTURE.md)."""
        outer = outer_environ()
        ours = child_env(
            plan,
            ChildPaths(
                attempt_dir=str(log_dir),
                harness_dir=str(HARNESS_DIR),
                tmp_dir=str(scratch_dirs.tmp) if scratch_dirs is not None else None,
                cache_dir=str(scratch_dirs.cache) if scratch_dirs is not None else None,
            ),
            gpu_ids=gpu_slot,
            pythonpath_after=[outer.get("PYTHONPATH", "")] if "PYTHONPATH" not in plan.env else [],
            instance=instance,
        )
        env = {**outer, **ours}
        # dirname: "" for a bare `python3.11` (found in no folder), where Path.parent gives ".".
        home = os.path.dirname(self.python)  # noqa: PTH120
        search_path = env.get("PATH", os.defpath)
        entries = [str(shims), home]
        if self.own_programs or plan.environment.packages:
            # Imported for such a cell alone: the local runner's other cells run their
            # commands as the person's shell would (issue 30, item 4).
            from reprospec.runners import programs

            own = programs.own_folders(entries)
            guards = self._guard_dir(search_path, own)
            if guards is not None:
                entries.append(str(guards))
        if self.own_programs and os.path.isfile(os.path.join(home, os.pardir, "pyvenv.cfg")):  # noqa: PTH113, PTH118
            # The cell's venv is the active one: a tool that asks (uv, pip's warnings, a
            # program printing its environment) must not be told the caller's.
            env["VIRTUAL_ENV"] = os.path.dirname(home)  # noqa: PTH120
            env.pop("VIRTUAL_ENV_PROMPT", None)
        env["PATH"] = _prepend_path(search_path, *entries)
        return env

    def _foreign_program(
        self, argv: Sequence[str], search_path: str, shims: Path
    ) -> programs.Foreign | None:
        """The command's own program, where it is another environment's (programs.py)."""
        from reprospec.runners import programs

        name = programs.command_program(argv)
        if name is None:
            return None
        key = (name, search_path)
        kept = _FOREIGN.get(key, 2.0)
        if kept is not None:
            return kept[0]
        own = programs.own_folders([str(shims), os.path.dirname(self.python)])  # noqa: PTH120
        # Past the guards (made in _child_env): the program a guard stands for is the answer.
        guards = self._guard_folders()
        past = os.pathsep.join(p for p in search_path.split(os.pathsep) if p not in guards)
        return _FOREIGN.put(key, (programs.foreign_program(name, past, own),))[0]

    # -- environment -----------------------------------------------------------------

    def capture_environment(
        self,
        plan: AttemptPlan,
        log_dir: Path,  # noqa: ARG002 (Runner protocol; the probe writes nothing there)
    ) -> Mapping[str, JsonValue]:
        """`python -m reprospec_harness.envinfo` in a child; on any failure a minimal dict."""
        try:
            version: str | None = self._check_interpreter()
        except InfraError as exc:
            return {"python": None, "error": str(exc)}
        packages = list(plan.environment.packages)
        try:
            return probe_environment(
                self.python,
                packages,
                harness_root=HARNESS_DIR,
                extra_env={str(k): str(v) for k, v in plan.env.items()},
                torch_cache=self.cache_dir,
                with_torch=plan.uses_torch,
            )
        except InfraError as exc:
            return {"python": version, "error": str(exc)}


def sanitizer_failure(returncode: int | None, log_dir: Path, files: AttemptFiles) -> str | None:
    """Why compute-sanitizer failed before the program ran (its log read back), else None."""
    try:
        log_text = (log_dir / SANITIZER_LOG).read_text("utf-8", "replace")
    except OSError:
        return None
    output = b""
    for path in (files["stdout_path"], files["stderr_path"]):
        with contextlib.suppress(OSError):
            output += path.read_bytes()[:4096]
    return sanitizer.own_failure(returncode, log_text, output)


def _make_shims(python: str) -> Path:
    """The shim folder of `_shims`: `python` and `python3` exec scripts for `python`."""
    # Named after the engine's pid: a later engine removes those of a dead one
    # (scratch.sweep_orphans), the watchdog at once.
    scratch.sweep_orphans(tempfile.gettempdir(), SHIM_PREFIX)
    folder = Path(tempfile.mkdtemp(prefix=f"{SHIM_PREFIX}{os.getpid()}-"))
    leftovers.watch_path(folder)
    # As bytes: an interpreter in a folder whose path is not UTF-8 (PATH's `python3`, the
    # engine's own sys.executable) is named by its own bytes, not an UnicodeEncodeError.
    script = f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n'.encode("utf-8", "surrogateescape")
    for name in ("python", "python3"):
        path = folder / name
        path.write_bytes(script)
        path.chmod(0o755)
    return folder


class _Kept:
    """What the local runners of one interpreter share inside `keep_servers()`: filled in
    as they need it. A plain class: made only inside that block (a search's), where a
    dataclass was built by every run's import for nothing (issue 30, item 4)."""

    __slots__ = ("guards", "preloader", "shims")

    def __init__(self) -> None:
        self.shims: Path | None = None
        self.preloader: forkserver.Preloader | None = None
        self.guards: dict[str, Path | None] = {}


def _stop(kept: _Kept) -> None:
    if kept.preloader is not None:
        kept.preloader.close()
    if kept.shims is not None:
        shutil.rmtree(kept.shims, ignore_errors=True)
    for folder in kept.guards.values():
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


# keep_servers(): by interpreter, while a block is open.
_KEPT: Scoped[str, _Kept] = Scoped(end=_stop)


def _kept(python: str) -> _Kept | None:
    return _KEPT.setdefault(python, _Kept)


@contextlib.contextmanager
def keep_servers() -> Iterator[None]:
    """While open, the local runners of this process share their preload servers and shims.

    A search verb (minimize, isolate) runs hundreds of small runs of one program; each run's
    runner would start its own `run.preload` server and pay `import torch` again (measured:
    ~15 s a candidate under load, for attempts of 0.2 s). Inside the block a runner's
    `close()` leaves them running, and the outermost block's end stops them. Servers stay
    keyed as always (interpreter, environment, workdir, preload list), so what an attempt
    may be forked from does not change, only how long a server lives.
    """
    with _KEPT.block():
        yield


def servers_kept() -> bool:
    """Whether a `keep_servers()` block is open now (a search's, `runners.kept_servers`)."""
    return _KEPT.is_open()
