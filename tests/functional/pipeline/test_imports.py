"""What a short run imports: the readers of crashes, hangs and GPU dumps only when there is
one to read (issue 30, item 4: imports were two thirds of a one-attempt run's CPU).

Each test runs the CLI in a fresh interpreter, as a user runs it, and reads its
`sys.modules` at exit.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.native.readers import unavailable_reason
from tests.support.cli import ROOT

# Read a crash's core or a hang's live processes (native/), or a GPU's dumps (outcome/).
READERS = (
    "reprospec.native.eustack",
    "reprospec.native.gdb",
    "reprospec.native.backtrace",
    "reprospec.outcome.cudacore",
    "reprospec.outcome.sanitizerlog",
    "reprospec.outcome.flightrecorder",
    "concurrent.futures",
)

# What only some runs need: a child's crash read from its exit (an attempt that exited
# non-zero), the ranks of a distributed workload (it says so in its events), instances
# released together (run.instances), `reprospec doctor`'s checks (a run's capture holds
# what ran against the spec with environment/captured.py alone), GitHub's summary and
# annotations (in GitHub Actions), the repro.py generator (a workload's standalone repro),
# the native stacks' classes and their symbol names (built at a crash or a hang, or read
# back where an attempt folder holds them), the probe of `environment.packages` (a spec
# that lists some), the reader of a Python file's imports (a command that names one), what
# the GPU diagnostics left (an attempt whose folder or stderr shows some), the preload
# servers' client (run.preload), the
# reader of tracebacks (an attempt that wrote to stderr), the report's sections that
# explain a failure (its signatures, what separates it) or the children's warnings, the
# instances' record (attempts of 2+ instances), the reader of pytest's report (a
# pytest command that failed), the readers of run ids and `latest` (the verbs that read a
# run), a run read back from the store (--resume, bundle) and the guards of a cell's
# programs (a cell held to its environment's: packages, the venv runner), the record of a
# child the engine reaped (a program that started one) and of a core read (a crash's), a
# resumed run's record (--resume), and `html` (its table of entities: the report's escape,
# markup.html_text, reads none).
NOT_FOR_A_PASS = (
    "reprospec.outcome.children",
    "reprospec.outcome.ranks",
    "reprospec.runners.together",
    "reprospec.process.barrier",
    "reprospec.doctor",
    "reprospec.report.github",
    "reprospec.spec.lines",
    "reprospec.plan.reproscript",
    "reprospec.native.stacks",
    "reprospec.native.symbols",
    "reprospec.environment.packages",
    "reprospec.plan.pyimports",
    "reprospec.outcome.gpufindings",
    "reprospec.process.forkserver",
    "reprospec.process.preload",
    "reprospec.outcome.tracebacks",
    "reprospec.report.childwarnings",
    "reprospec.report.separation",
    "reprospec.report.signatures",
    "reprospec.report.instances",
    "reprospec.outcome.pytestreport",
    "reprospec.store.refs",
    "reprospec.store.storedrun",
    "reprospec.runners.programs",
    "reprospec.core.childexit",
    "reprospec.native.coreinfo",
    "reprospec.native.coreargv",
    "reprospec.core.resumed",
    "html.entities",
)

# The PATH a run is given here: no GPU is named unless an nvidia-smi is on it.
_PATH = "/usr/bin:/bin"

_RUN_AND_LIST = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr))\n"
    "sys.argv = ['reprospec', *sys.argv[1:]]\n"
    "runpy.run_module('reprospec', run_name='__main__', alter_sys=True)\n"
)


def _modules_of_run(tmp_path: Path, command: str, outcome: str, more: str = "") -> set[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"reprospec: 1\nname: short\ncommand: {command}\nexpect: {{outcome: {outcome}}}\n{more}"
    )
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, "run", str(spec), "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": _PATH, "NO_COLOR": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listed = [line for line in done.stderr.splitlines() if line.startswith("MODULES ")]
    return set(listed[-1].split()[1:])


def test_a_run_that_passes_imports_no_reader_of_crashes_hangs_or_gpu_dumps(
    tmp_path: Path,
) -> None:
    modules = _modules_of_run(tmp_path, "[true]", "pass")
    assert "reprospec.native.capture" in modules  # the attempt asked whether it could read
    assert [name for name in READERS if name in modules] == []
    assert [name for name in NOT_FOR_A_PASS if name in modules] == []
    if shutil.which("nvidia-smi", path=_PATH) is None:  # no GPU named: none listed
        assert "reprospec.pipeline.machinegpus" not in modules


def test_a_spec_that_lists_packages_imports_their_probe(tmp_path: Path) -> None:
    # The other side of the lazy PackageCheck: a cell's packages are still checked.
    modules = _modules_of_run(tmp_path, "[true]", "pass", "environment: {packages: [pyyaml]}\n")
    assert "reprospec.environment.packages" in modules
    assert "reprospec.runners.programs" in modules  # and held to their environment's programs


def test_an_error_exit_imports_the_reader_of_children(tmp_path: Path) -> None:
    # The other side of the lazy import: an exit that may be a child's crash reads them.
    modules = _modules_of_run(tmp_path, "[sh, -c, 'echo failed >&2; exit 3']", "error")
    assert "reprospec.outcome.children" in modules
    assert "reprospec.outcome.tracebacks" in modules  # its stderr is read for one
    assert "reprospec.report.signatures" in modules  # and its report names the failure
    assert "reprospec.report.separation" in modules


@pytest.mark.skipif(unavailable_reason() is not None, reason="no reader of cores here")
def test_a_crash_imports_the_readers_it_needs(tmp_path: Path) -> None:
    modules = _modules_of_run(tmp_path, "[sh, -c, 'kill -SEGV $$']", "crash")
    assert "reprospec.native.eustack" in modules or "reprospec.native.gdb" in modules
    assert "reprospec.native.stacks" in modules
    assert "reprospec.native.coreinfo" in modules  # its core was read
    assert "reprospec.native.coreargv" in modules  # and its command line, from its stack


# The collector's state when the first attempt starts, and its collections from the command
# line's `main` until then.
_RUN_AND_WATCH_COLLECTOR = (
    "import gc, runpy, sys\n"
    "from reprospec import cli\n"
    "from reprospec.pipeline import scheduler\n"
    "def collections():\n"
    "    return sum(generation['collections'] for generation in gc.get_stats())\n"
    "main, run, entered = cli.main, scheduler.Scheduler.run, []\n"
    "def watched_main(argv=None):\n"
    "    entered.append(collections())\n"
    "    return main(argv)\n"
    "def watched_run(self):\n"
    "    print('COLLECTOR', gc.isenabled(), gc.get_freeze_count(), collections() - entered[0],\n"
    "          file=sys.stderr)\n"
    "    return run(self)\n"
    "cli.main, scheduler.Scheduler.run = watched_main, watched_run\n"
    "sys.argv = ['reprospec', *sys.argv[1:]]\n"
    "runpy.run_module('reprospec', run_name='__main__', alter_sys=True)\n"
)


def test_the_command_line_imports_without_collections_and_runs_its_attempts_with_them(
    tmp_path: Path,
) -> None:
    # core/collector.py: the imports' objects live to the exit, so the collector is held
    # off while they are made, and on again (those objects frozen) for a long run's garbage.
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: short\ncommand: [true]\nexpect: {outcome: pass}\n")
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_WATCH_COLLECTOR, "run", str(spec), "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": _PATH, "NO_COLOR": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("COLLECTOR ")]
    _, enabled, frozen, collected = line.split()
    assert enabled == "True", line
    assert int(frozen) > 10_000, line  # the modules' objects, out of every later walk
    assert int(collected) == 0, line
