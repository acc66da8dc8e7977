"""Bad specs are refused, located and bounded, before anything runs.

Each spec of `specs/` (written by make_corpus.py), and a few that only exist as
files of a kind (a FIFO, /dev/zero, a folder, a file past the size bound), goes
through `validate`, `plan` and `run` in one real child process. Each verb must
exit 2 with every problem located (`FILE:LINE:COL: ...` or a file-level
`FILE: ...`), no traceback; the child's peak RSS (wait4) stays under 200 MB and
its CPU time under 15 s (CPU, not wall time: this machine is shared); and the
spec's command, `touch EXECUTED`, never ran.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SPECS = HERE / "specs"
DRIVER = HERE / "drive.py"
MAX_RSS_BYTES = 200 * 2**20
# A guard against a blow-up (a check quadratic in a spec's 5,000 keys takes minutes), not a
# speed target: those are benchmarks/' to measure. 5 s failed on a slow day with no change
# (many_unknown_keys.yaml: 5.5-7.3 s here, where CI's machine took under 5 s).
MAX_CPU_S = 15.0
# Only a hang reaches this: the child is killed and the test fails.
WALL_LIMIT_S = 120.0

CORPUS = sorted(p.name for p in SPECS.iterdir())


def _fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "fifo.yaml")
    return "fifo.yaml"


def _zero_link(tmp: Path) -> str:
    (tmp / "zero.yaml").symlink_to("/dev/zero")
    return "zero.yaml"


def _folder(tmp: Path) -> str:
    (tmp / "folder.yaml").mkdir()
    return "folder.yaml"


def _symlink_loop(tmp: Path) -> str:
    (tmp / "a.yaml").symlink_to(tmp / "b.yaml")
    (tmp / "b.yaml").symlink_to(tmp / "a.yaml")
    return "a.yaml"


def _huge_file(tmp: Path) -> str:
    line = "# " + "x" * 1022 + "\n"
    head = "reprospec: 1\nname: huge\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"
    (tmp / "huge.yaml").write_text(head + line * (9 * 1024))
    return "huge.yaml"


def _yaml_too_long(tmp: Path) -> str:
    text = "reprospec: 1\nname: long\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"
    (tmp / "long.yaml").write_text(text + "description: " + "y" * 140_000 + "\n")
    return "long.yaml"


def _report_too_long(tmp: Path) -> str:
    body = "reprospec: 1\nname: long\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"
    block = "```yaml\n" + body + "labels: [" + "a, " * 50_000 + "a]\n```\n"
    (tmp / "report.md").write_text("# Report\n\n" + block)
    return "report.md"


GENERATED: dict[str, Callable[[Path], str]] = {
    "fifo": _fifo,
    "dev-zero-by-symlink": _zero_link,
    "dev-zero": lambda _tmp: "/dev/zero",
    "folder-named-yaml": _folder,
    "symlink-loop": _symlink_loop,
    "file-past-8-mib": _huge_file,
    "yaml-past-128k-chars": _yaml_too_long,
    "report-md-past-128k-chars": _report_too_long,
}


def run_child(argv: list[str], cwd: Path) -> tuple[int, str, resource.struct_rusage]:
    """Run `argv`; (exit status, stdout, that child's own rusage) via wait4."""
    out_path, err_path = cwd / ".child-stdout", cwd / ".child-stderr"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("REPROSPEC_ADVERSARIAL_UNSET", None)
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    killer = threading.Timer(WALL_LIMIT_S, lambda: os.killpg(proc.pid, signal.SIGKILL))
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
    stderr = err_path.read_text(errors="replace")
    assert proc.returncode == 0, f"driver died ({proc.returncode}):\n{stderr[-3000:]}"
    return proc.returncode, out_path.read_text(), usage


def check(spec: str, tmp_path: Path) -> None:
    _, stdout, usage = run_child(
        [sys.executable, str(DRIVER), spec, str(tmp_path / "out")], tmp_path
    )
    results = json.loads(stdout)
    peak_rss = int(results.pop("peak_rss"))
    located = re.compile(rf"^{re.escape(spec)}(:\d+:\d+)?: \S")
    for verb, result in results.items():
        stderr = str(result["stderr"])
        assert result["code"] == 2, f"{verb} {spec}: exit {result['code']}\n{stderr}"
        lines = [line for line in stderr.splitlines() if not re.match(r"^\d+ problem", line)]
        assert lines, f"{verb} {spec}: no problem reported"
        for line in lines:
            assert located.match(line), f"{verb} {spec}: not located: {line[:300]!r}"
        assert "Traceback" not in stderr
        assert "internal error" not in stderr
    assert peak_rss < MAX_RSS_BYTES, f"peak RSS {peak_rss >> 20} MB"
    cpu = usage.ru_utime + usage.ru_stime
    assert cpu < MAX_CPU_S, f"{cpu:.1f}s of CPU for validate + plan + run"
    assert not (tmp_path / "EXECUTED").exists(), "the spec's command ran"
    assert not (tmp_path / "out" / "runs").exists() or not any(
        (tmp_path / "out" / "runs").iterdir()
    ), "a run folder was written"


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("name", CORPUS)
def test_bad_spec_is_refused_located_bounded_and_runs_nothing(name: str, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes((SPECS / name).read_bytes())
    check(name, tmp_path)


@pytest.mark.parametrize("kind", sorted(GENERATED))
def test_unreadable_kinds_of_file_are_refused(kind: str, tmp_path: Path) -> None:
    check(GENERATED[kind](tmp_path), tmp_path)
