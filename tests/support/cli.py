"""Run the real CLI in a child process, as a user would, and find what it wrote."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.support.envs import envs_root

ROOT = Path(__file__).resolve().parent.parent.parent
SPECS = ROOT / "specs"
_REPORT_LINE = re.compile(r"^report: (.+)/report\.md\s*$", re.MULTILINE)


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str
    out: Path

    def latest_run(self) -> Path:
        """The run folder this command wrote (it prints `report: .../report.md`).

        Folder names sort by second only, so two runs in one second cannot be told
        apart by name: the printed path decides, then the newest results.json.
        """
        printed = _REPORT_LINE.findall(self.stdout + "\n" + self.stderr)
        if printed:
            folder = Path(printed[-1])
            if folder.is_absolute() and (folder / "results.json").is_file():
                return folder
        runs = [p for p in (self.out / "runs").iterdir() if (p / "results.json").is_file()]
        assert runs, "no run folder written"
        return max(runs, key=lambda p: (p / "results.json").stat().st_mtime_ns)

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.latest_run() / "results.json").read_text())
        return data


# How long a test waits for one `reprospec` command before it fails: a bound for a command
# that never ends, not a speed check. A run of a few torch attempts takes minutes with three
# test suites on two cores (a load of 20).
CLI_TIMEOUT_S = 1800.0


class Cli(Protocol):
    """The `cli` fixture: run `python -m reprospec ARGS` as a user would."""

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = CLI_TIMEOUT_S,
        cwd: Path | None = None,
        stdin: str | None = None,
    ) -> CliResult: ...


def run_cli(
    out: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = CLI_TIMEOUT_S,
    cwd: Path | None = None,
    stdin: str | None = None,
) -> CliResult:
    """Run `python -m reprospec ARGS` as a user would; `--out` defaults to `out`.

    The `cli` fixture calls it with its test's tmp_path; a module-scoped fixture calls it
    with a folder of its own, so that one engine run is read by many tests."""
    argv = [sys.executable, "-m", "reprospec", *args]
    takes_out = ("run", "report", "history", "compare", "merge")
    used = Path(args[args.index("--out") + 1]) if "--out" in args[:-1] else None
    if args and args[0] in takes_out and "--out" not in args:
        argv += ["--out", str(out)]
        used = out
    cache = (cwd or ROOT) / used / "cache" if used is not None else None
    # What the sharing made, so that a command that writes nothing (a dry run, a refusal)
    # is seen writing nothing: the folder goes again when the command added nothing to it.
    made, copied = (
        _share_torch_captures(_torch_captures(), cache) if cache is not None else (None, set())
    )
    child_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    # stdin is never the developer's terminal: a command that asks must not wait for it.
    # (`stdin`: the text a command reads from its standard input, like `--from-log -`.)
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env,
        cwd=cwd or ROOT,
        **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
    )
    if cache is not None:
        _share_torch_captures(cache, _torch_captures())
        if made is not None and _files(made) == copied:
            shutil.rmtree(made)
    return CliResult(proc.returncode, proc.stdout, proc.stderr, out)


@contextlib.contextmanager
def torch_captures_shared(out: Path) -> Iterator[None]:
    """Around an engine that runs with `--out out` outside run_cli (`reprospec.run` in
    this process, a child pytest's `--reprospec-out`): the torch captures seen so far are
    in its `cache/` before it starts, and the ones it made are kept for the next run."""
    _share_torch_captures(_torch_captures(), out / "cache")
    try:
        yield
    finally:
        _share_torch_captures(out / "cache", _torch_captures())


def _files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()} if folder.exists() else set()


# The environment capture's torch part (`import torch` in a child: 2 s of CPU, 200 MiB) is
# cached by the engine in `OUT/cache/torch-KEY.json`, KEY being what it depends on
# (interpreter, torch build, driver, CUDA/TORCH variables: environment/probe.py). Each test
# has an `--out` of its own, so every torch-using run of the suite imported torch for it
# again; the engine's own files are carried from one `--out` to the next instead (kept
# with the test environments), and a run whose key differs captures afresh as always.
def _torch_captures() -> Path:
    return envs_root() / "torch-captures"


def _share_torch_captures(source: Path, target: Path) -> tuple[Path | None, set[Path]]:
    """Copy the torch captures of `source` that `target` lacks (atomically: xdist); the
    outermost folder this created (the `--out` folder, or its `cache/`) or None, and the
    files it copied."""
    made: Path | None = None
    copied: set[Path] = set()
    for file in source.glob("torch-*.json"):
        if (target / file.name).exists():
            continue
        if made is None and not target.exists():
            made = target if target.parent.exists() else target.parent
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError:
            # An `--out` that is a file, under one, or where nothing can be made (/proc):
            # the command is to refuse it, and nothing is shared into it.
            return None, copied
        partial = target / f".{file.name}.{os.getpid()}"
        shutil.copyfile(file, partial)
        partial.replace(target / file.name)
        copied.add(target / file.name)
    return made, copied


def json_verb(argv: Sequence[str], *, timeout: float) -> tuple[int, dict[str, Any], str]:
    """Run `argv`, a verb with `--format json`, from the repository with NO_COLOR set:
    (exit code, the JSON object it printed, {} where it printed none, stderr)."""
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    data = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, data, proc.stderr


def terminal_signals() -> None:
    """A child's SIGINT and SIGHUP back at their defaults, as a terminal's foreground job
    has them (a Popen's preexec_fn). A test run started in the background (a shell without
    job control ignores SIGINT there; nohup, SIGHUP) hands its children those signals
    ignored: Python then installs no KeyboardInterrupt handler and a shell script cannot
    trap them, so a signal a test sends before the program's own handler was lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def interrupt_when(
    argv: Sequence[str],
    ready: Callable[[], bool],
    *,
    env: dict[str, str] | None = None,
    wait_s: float = 120,
    again_when: Callable[[], bool] | None = None,
    signum: int = signal.SIGINT,
    another_thread: Path | None = None,
) -> CliResult:
    """Start `argv` in a child, press Ctrl-C (SIGINT) once `ready()` holds, and again once
    `again_when()` holds where given, and return how it stopped (`out` is the working
    folder: the caller knows its own store). `signum`: another signal sent instead (SIGHUP:
    the terminal closed).

    What a user does at the terminal: the tests of "Ctrl-C keeps what ran" all start an
    engine, wait for a sign it is mid-work, interrupt it and read what it said. The second
    press waits for a sign that the first was handled: standard signals do not queue, and
    two SIGINTs sent 50 ms apart reached a loaded engine's handler as one.

    `another_thread` (a file to create, argv being `python -m reprospec ...`): the one
    SIGINT is sent by the engine's own process to a thread other than its main one
    (CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD), as the kernel may deliver it.
    """
    if another_thread is not None:
        assert list(argv[1:3]) == ["-m", "reprospec"], argv
        assert again_when is None, "one press only"
        argv = [argv[0], "-c", CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD, str(another_thread), *argv[3:]]
    child = subprocess.Popen(
        list(argv),
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + wait_s
        for sign in (ready, again_when):
            if sign is None:
                break
            while not sign():
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "the point to interrupt at never came"
                time.sleep(0.01)
            if another_thread is not None:
                another_thread.touch()
            else:
                child.send_signal(signum)
        try:
            stdout, stderr = child.communicate(timeout=wait_s)
        except subprocess.TimeoutExpired as exc:
            # Where it stood, read before it is killed: a stop that never ended (a minimize
            # still running 120 s after its Ctrl-C, once in a suite) said nothing of why.
            said = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
            raise AssertionError(
                f"still running {wait_s:g}s after the signal; its stderr:\n{said}\n"
                f"its threads:\n{_python_stacks(child.pid)}"
            ) from None
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return CliResult(child.returncode, stdout, stderr, ROOT)


def _python_stacks(pid: int) -> str:
    """py-spy's dump of `pid`'s threads (the dev extra installs it), or why there is none."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    try:
        dumped = subprocess.run(
            [spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(py-spy dump failed: {exc})"
    return dumped.stdout + dumped.stderr


def is_workload_example(name: str) -> bool:
    """Whether the example spec `name` (under specs/) has a `workload`: every attempt of it
    imports torch."""
    return "\nworkload:" in (SPECS / name).read_text(encoding="utf-8")


# The `example_run` fixture (tests/conftest.py): the run of one example spec, shared by the
# tests that read it, in every xdist worker.
ExampleRun = Callable[[str], CliResult]


# `python -c THIS SIGN reprospec-args...`: the CLI, pressed Ctrl-C once the file SIGN exists,
# the SIGINT sent to a thread other than the main one, as the kernel may hand it to any
# thread that does not block it (Python runs handlers on the main thread alone).
CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD = """
import os, signal, sys, threading, time
from reprospec.__main__ import main

def press(sign):
    while not os.path.exists(sign):
        time.sleep(0.01)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=press, args=(sys.argv[1],), daemon=True).start()
sys.argv = ["reprospec", *sys.argv[2:]]
sys.exit(main())
"""
