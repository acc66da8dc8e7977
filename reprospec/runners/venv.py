"""The venv runner: the local runner, in a virtualenv built for each cell's resolved packages.

Each distinct resolved environment (interpreter + `packages` + index options,
after `${{ matrix.* }}` interpolation) gets its own venv from `reprospec.venvs`,
cached by content hash under `.reprospec/venvs/` and reused by later runs.
Attempts then run exactly as the local runner runs them, with that venv's
interpreter; the local runner's per-cell package check still runs in the child
before the first attempt of each environment, so a venv that was changed after
it was built is refused too. The venv is the attempt's active one (first on PATH,
VIRTUAL_ENV), and a Python program of another environment that the command would
find on the caller's PATH (`pytest` of an activated venv, when the cell's packages
do not bring it) is the attempt's infra-error, never run (runners/programs.py).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from reprospec import venvs
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import Execution
from reprospec.core.trylock import SharedHold
from reprospec.core.words import build_log_phrase
from reprospec.environment import packages
from reprospec.errors import InfraError
from reprospec.process import run
from reprospec.runners.base import attempt_files, infra_execution
from reprospec.runners.local import LocalRunner


def print_progress(stream: TextIO | None = None) -> venvs.EnvProgressCallback:
    """A progress callback that writes one line per step (and uv's own lines) to `stream`
    (None: sys.stderr as it is when a line is written)."""
    return said(lambda line: print(f"reprospec: {line}", file=stream or sys.stderr, flush=True))


def said(say: Callable[[str], None]) -> venvs.EnvProgressCallback:
    """A progress callback that says one line per step (`env KEY: ...`), and uv's own lines
    indented, to `say` (RunOptions.say: the Python API's, where print_progress prints)."""

    def show(event: venvs.EnvProgress) -> None:
        if event.stage == "output":
            if event.message.startswith("Using Python"):
                return  # the temporary build folder: noise
            say(f"    {event.message}")
        elif event.stage == "warning":
            say(f"warning: {event.message}")
        elif event.stage != "reused":
            say(f"env {event.key}: {event.message}")

    return show


def base_python(given: str) -> str:
    """`--python GIVEN` on the venv runner: a name (`python3.10`, `3.12`) found as the
    runner finds the interpreter it builds on (`find_interpreter`: uv, then past a pyenv
    shim that does not run), a path checked as every verb checks it (`checked_python`);
    InfraError where it cannot be. The one rule of doctor's `--python` and bisect's."""
    from reprospec.runners.local import checked_python
    from reprospec.venvs.build import by_name

    return venvs.find_interpreter(given).path if by_name(given) else checked_python(given)


class VenvRunner:
    """Runs each attempt as a local child of the venv built for its cell's packages."""

    name = "venv"

    def __init__(
        self,
        python: str | None = None,
        cache_dir: Path | None = None,
        *,
        envs_dir: Path | None = None,
        find_links: Path | None = None,
        spec_dir: Path | None = None,
        exclude_newer: str | None = None,
        progress: venvs.EnvProgressCallback | None = None,
        spec_name: str | None = None,
        say: Callable[[str], None] | None = None,
        **_options: object,
    ) -> None:
        self.base_python = python
        self.cache_dir = cache_dir
        # $REPROSPEC_ENVS, else .reprospec/envs next to .reprospec/cache.
        self.envs_dir = (
            envs_dir
            or venvs.shared_envs()
            or (cache_dir.parent / "envs" if cache_dir is not None else Path(".reprospec/envs"))
        ).resolve()
        self.find_links = find_links
        self.spec_dir = spec_dir
        self.exclude_newer = exclude_newer
        # `say`: RunOptions.say, as the docker runner takes it (the Python API's lines,
        # slurm's preflight's too); neither given: printed on stderr, as the CLI prints them.
        if progress is None:
            progress = said(say) if say is not None else print_progress()
        self.progress = progress
        self.spec_name = spec_name
        self._lock = threading.Lock()
        self._index: venvs.IndexConfig | None = None
        # A cell's environment section (python, packages) -> its env key or its build error.
        self._keys: dict[str, str] = {}
        self._errors: dict[str, str] = {}
        # A cell's environment section -> its env key and uv's whole output of its failed
        # build, written once per cell (venvs.BUILD_LOG) where the console has one line.
        self._build_logs: dict[str, tuple[str, str]] = {}
        # A cell's id -> the file its attempts' reason names: the first of its attempts that
        # ran here wrote it (one build, one copy: --repeat 50 made 50).
        self._cell_logs: dict[str, Path] = {}
        self._runners: dict[str, LocalRunner] = {}
        self._envs: dict[str, venvs.Env] = {}
        # Each environment this runner uses, held (venvs.hold) until it closes: a prune
        # meanwhile leaves it in place, where it removed it under the attempts.
        self._holds: dict[str, SharedHold | None] = {}
        self._build_lock = threading.Lock()
        self._warned: set[str] = set()
        # A python not found is searched for once a run, by each section's `env_request`
        # (a `uv python find` of up to 120 s each), until `close`, and once a search, whose
        # scope holds them across its probes' runs (`remembered_failures`).
        self._remembered = contextlib.ExitStack()
        self._remembered.enter_context(venvs.remembered_failures())

    # -- environments ----------------------------------------------------------------

    def _index_config(self) -> venvs.IndexConfig:
        with self._lock:
            if self._index is None:
                links = (self.find_links,) if self.find_links is not None else ()
                self._index = venvs.user_index_config(links)
            return self._index

    @staticmethod
    def _section_key(plan: AttemptPlan) -> str:
        environment = plan.environment
        return json.dumps([environment.python, list(environment.packages)])

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        """Build (or find) the environment of every distinct cell environment, once.

        A cell whose environment cannot be built is not fatal to the run: its
        attempts become infra errors with the reason. Raises InfraError only when
        uv itself is missing.
        """
        venvs.uv_binary()
        distinct: dict[str, AttemptPlan] = {}
        for plan in plans:
            distinct.setdefault(self._section_key(plan), plan)
        total = len(distinct)
        for number, plan in enumerate(distinct.values(), start=1):
            self._env_for(plan, f"{number}/{total}")

    def build_error(self, plan: AttemptPlan) -> str:
        """Why the plan's environment could not be had ("" when it is built): `slurm` asks
        on the login node, after `prepare`, before it submits shards that would only record
        the infra-error."""
        return self._env_for(plan)[1]

    def keep_build_log(self, plan: AttemptPlan) -> Path | None:
        """Write uv's whole output of the plan's failed build under the environments folder
        (venvs.failed_build_log) and return that file; None where the build did not fail
        with output. For `slurm`'s refusal on the login node, where no attempt folder
        receives it and the console has only its reason's line."""
        with self._lock:
            failed = self._build_logs.get(self._section_key(plan))
        if failed is None:
            return None
        key, log = failed
        path = venvs.failed_build_log(self.envs_dir, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(log, encoding="utf-8")
        return path

    def _env_for(self, plan: AttemptPlan, label: str = "") -> tuple[LocalRunner | None, str]:
        """The local runner of the plan's environment, or None and why it could not be had."""
        section = self._section_key(plan)
        with self._lock:
            key = self._keys.get(section)
            if key is not None:
                return self._runners[key], ""
            if section in self._errors:
                return None, self._errors[section]
        with self._build_lock:  # one build at a time; uv parallelises inside one
            with self._lock:
                key = self._keys.get(section)
                if key is not None:
                    return self._runners[key], ""
            request: venvs.EnvRequest | None = None
            try:
                request = venvs.env_request(
                    plan.environment,
                    python=self.base_python,
                    index=self._index_config(),
                    exclude_newer=self.exclude_newer,
                    cwd=self.spec_dir,
                    warn=self._warn,
                )
                say = self._labelled(label, request)
                self._hold(request.key())
                env = venvs.ensure_env(
                    request,
                    self.envs_dir,
                    progress=say,
                    user=self.spec_name or plan.spec_name,
                    cwd=self.spec_dir,
                )
            except InfraError as exc:
                reason = f"environment for {plan.cell.id or 'the cell'} not built: {exc}"
                if request is not None:
                    self._release(request.key())  # nothing of it is used
                with self._lock:
                    self._errors[section] = reason
                    if request is not None and isinstance(exc, venvs.EnvBuildError) and exc.log:
                        self._build_logs[section] = (request.key(), exc.log)
                return None, reason
            runner = LocalRunner(python=str(env.python), cache_dir=self.cache_dir)
            runner.packages_hint = ""  # installed here: a miss is the build's, not a choice
            runner.installed_here = True
            # The cell's environment is this venv: a console script it lacks is refused,
            # never run from the caller's activated venv (runners/programs.py).
            runner.own_programs = True
            with self._lock:
                self._keys[section] = env.key
                self._envs[env.key] = env
                self._runners.setdefault(env.key, runner)
                return self._runners[env.key], ""

    def _warn(self, line: str) -> None:
        """Say a warning of an environment's request (a folder keyed in part) once a run:
        each cell's section of the same folder walks it again."""
        with self._lock:
            if line in self._warned:
                return
            self._warned.add(line)
        self.progress(venvs.EnvProgress("", "warning", line))

    def _hold(self, key: str) -> None:
        """Hold environment `key` (venvs.hold) before it is built or reused, once per runner:
        a prune then leaves it until `close`. Called under `_build_lock` only, so that two
        cells of one key do not both open a hold (the check and the store are apart)."""
        with self._lock:
            held = key in self._holds
        if not held:
            handle = venvs.hold(self.envs_dir, key)  # (waits out a prune removing it)
            with self._lock:
                self._holds[key] = handle

    def _release(self, key: str) -> None:
        """Let environment `key` go: its build failed (nothing of it is used) or the runner
        closes."""
        with self._lock:
            handle = self._holds.pop(key, None)
        if handle is not None:
            handle.close()

    def _labelled(self, label: str, request: venvs.EnvRequest) -> venvs.EnvProgressCallback:
        progress = self.progress
        what = venvs.describe_request(request)

        def say(event: venvs.EnvProgress) -> None:
            if event.stage == "create":
                message = f"building {label} ({what})".replace("  ", " ")
                progress(venvs.EnvProgress(event.key, event.stage, message, event.seconds))
            else:
                progress(event)

        return say

    def pins(self, plan: AttemptPlan) -> tuple[str, ...]:
        """The plan's packages pinned at the versions its venv holds."""
        with self._lock:
            key = self._keys.get(self._section_key(plan))
            env = self._envs.get(key) if key is not None else None
        return packages.pins(plan.environment.packages, env.installed) if env else ()

    def environments(self) -> Mapping[str, venvs.Env]:
        """The environments this runner has prepared, by key."""
        with self._lock:
            return dict(self._envs)

    # -- attempts --------------------------------------------------------------------

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        """Run one attempt in its cell's venv (building it first if `prepare` did not)."""
        runner, reason = self._env_for(plan)
        if runner is None:
            now = run.utc_now()
            files = attempt_files(plan, log_dir, gpu_slot)
            reason = self._with_cell_log(plan, log_dir, reason)
            return infra_execution(files, reason, started=now, finished=now)
        return runner.run(plan, log_dir, gpu_slot=gpu_slot, cancel=cancel)

    def _with_cell_log(self, plan: AttemptPlan, log_dir: Path, reason: str) -> str:
        """`reason` (the plan's failed build) naming the file that keeps uv's whole output:
        written into `log_dir` at the cell's first attempt that runs here, then named by its
        others (`reason` alone where the build failed with no output). The run folder keeps
        what the console was spared, where a user, report.md, or bisect's one line point to
        it; a plain cell's attempt and a `run.instances` one name it alike."""
        with self._lock:
            failed = self._build_logs.get(self._section_key(plan))
            if failed is None:
                return reason
            kept = self._cell_logs.get(plan.cell.id)
            if kept is None:
                kept = self._cell_logs[plan.cell.id] = log_dir / venvs.BUILD_LOG
                kept.write_text(failed[1], encoding="utf-8")
        return build_log_phrase(reason, kept)

    def close(self) -> None:
        """Stop each environment's local runner (their preload servers), and let the
        environments go (a prune may remove them now)."""
        with self._lock:
            runners = list(self._runners.values())
            holds = list(self._holds)
        for runner in runners:
            runner.close()
        for key in holds:
            self._release(key)
        self._remembered.close()

    def run_instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slots: Sequence[tuple[str, ...]],
        cancel: threading.Event | None = None,
    ) -> tuple[Execution, ...]:
        """The instances of one attempt (`run.instances`) in its cell's venv."""
        runner, reason = self._env_for(plan)
        if runner is None:
            # As a plain cell's attempt: uv's whole output kept once for the cell and named,
            # where the reason alone left it nowhere.
            log_dir.mkdir(parents=True, exist_ok=True)
            raise InfraError(self._with_cell_log(plan, log_dir, reason))
        return runner.run_instances(plan, log_dir, gpu_slots=gpu_slots, cancel=cancel)

    def keep_package_lines(self, plan: AttemptPlan) -> None:
        """Keep what the check of the plan's venv finds for it (LocalRunner's)."""
        runner, _ = self._env_for(plan)
        if runner is not None:
            runner.keep_package_lines(plan)

    def package_lines(self, plan: AttemptPlan) -> tuple[str, ...] | None:
        """What the run's check of the plan's venv found wrong (LocalRunner.package_lines)."""
        runner, _ = self._env_for(plan)
        return runner.package_lines(plan) if runner is not None else None

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, JsonValue]:
        """The environment of the plan's venv as the harness sees it."""
        runner, reason = self._env_for(plan)
        if runner is None:
            return {"python": None, "error": reason}
        return runner.capture_environment(plan, log_dir)
