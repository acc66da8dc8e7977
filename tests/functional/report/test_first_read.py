"""What the user reads first: the headline, the outcome and the Failure section.

Real runs through the CLI. Before: a hang's Python stack sat in a folded section at
the end while the Failure section showed only native frames, and gdb's whole
output was pasted twice per cell; a crashed child's command line was an absolute
venv path cut mid-argument; one cell that failed two ways read "in 1, ... in 1".
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from reprospec.core.words import shorten_command
from reprospec.report.paths import PathNames
from tests.support.cli import Cli, CliResult
from tests.support.deadline import until_reached

# Each job says it reached its hang in the file `ready` (see _hang).
_DEADLOCK = """\
import threading
def collate_lock_wait():
    lock = threading.Lock()
    lock.acquire(); open("ready", "w").close()
    lock.acquire()
collate_lock_wait()
"""


def _write(tmp_path: Path, job: str, spec: str) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "job.py").write_text(job)
    path = tmp_path / "spec.yaml"
    path.write_text("reprospec: 1\nname: first-read\nenvironment: {workdir: work}\n" + spec)
    return path


def _report(result_out: Path) -> str:
    runs = sorted((result_out / "runs").iterdir())
    return (runs[-1] / "report.md").read_text()


def _hang(cli: Cli, tmp_path: Path, job: str, out: str = "out") -> tuple[CliResult, Path]:
    """`job` run as an expected hang, its timeout 2 s, doubled while a loaded machine kept
    it from reaching its hang (its `ready` file) before then; the last try, and its folder."""

    def attempt(timeout_s: float, here: Path) -> CliResult:
        run = f"run: {{timeout: {timeout_s:g}s}}\n"
        spec = _write(here, job, f"command: python job.py\n{run}expect: {{outcome: hang}}\n")
        return cli("run", str(spec), "--out", str(here / out))

    last = until_reached(attempt, lambda here: (here / "work" / "ready").exists(), 2.0, tmp_path)
    return last.result, last.folder


def test_a_hangs_python_stack_leads_the_failure_and_gdb_is_linked(cli: Cli, tmp_path: Path) -> None:
    result, folder = _hang(cli, tmp_path, _DEADLOCK)
    assert result.code == 0, result.stdout + result.stderr
    report = _report(folder / "out")
    failure = report.split("## Failure", 1)[1].split("\n## ", 1)[0]
    assert "The Python stacks of the hung processes" in failure
    assert 'job.py", line 5 in collate_lock_wait' in failure
    # Where it sits, beside its signature (the first process in the user's code)...
    assert re.search(
        r"- `hang` \(1 attempt\): pid \d+ was in `work/job.py:5 in collate_lock_wait`", failure
    )
    # ...and its stack shown once: not again in a Stacks section below.
    assert report.count("line 5 in collate_lock_wait") == 1
    # The readers' whole output is in the attempt folder, linked; only top frames in the report.
    assert "<summary>Native stacks" not in report
    link = re.search(r"Full native stacks: \[(cells/[^\]]+native-stacks\.txt)\]", report)
    if shutil.which("eu-stack") or shutil.which("gdb"):
        assert link is not None, failure
    if link is not None:  # a reader installed: the link names a file that is there
        run_dir = result.latest_run()
        assert (run_dir / link[1]).is_file()


_LOADER_HANG = """\
import sys, time, warnings
warnings.warn("The given NumPy array is not writable", UserWarning)
for step in range(5):
    print(f"train step {step}", flush=True)
print("waiting for batch 5", flush=True)
open("ready", "w").close()
time.sleep(60)
"""


def test_a_hangs_log_excerpt_shows_the_tail_of_both_streams(cli: Cli, tmp_path: Path) -> None:
    """A numpy UserWarning on stderr was all a DataLoader-like hang's excerpt showed:
    stdout's last progress lines, where it hung, were left out."""
    result, folder = _hang(cli, tmp_path, _LOADER_HANG)
    assert result.code == 0, result.stdout + result.stderr
    failure = _report(folder / "out").split("## Failure", 1)[1].split("\n## ", 1)[0]
    excerpt = failure.split("Log excerpt:\n\n```text\n", 1)[1].split("\n```", 1)[0]
    stderr, stdout = excerpt.split("\n\n==> stdout.log <==\n")
    assert stderr.startswith("==> stderr.log <==\n")
    assert "UserWarning: The given NumPy array is not writable" in stderr
    assert stdout.endswith("train step 4\nwaiting for batch 5")


def test_one_cell_that_failed_two_ways_reads_as_one(cli: Cli, tmp_path: Path) -> None:
    # Attempt 1 raises ValueError, attempt 2 KeyError (a counter in the workdir).
    job = (
        "import pathlib\np = pathlib.Path('n'); n = int(p.read_text()) if p.exists() else 0\n"
        "p.write_text(str(n + 1))\nraise (ValueError if n % 2 == 0 else KeyError)('boom')\n"
    )
    spec = _write(
        tmp_path, job, "command: python job.py\nrun: {repeat: 2}\nexpect: {outcome: error}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    headline = _report(result.out).split("**", 2)[1]
    assert headline.startswith("1 of 1 cell failed, 2 ways: error exit 1 ValueError"), headline
    assert " in 1" not in headline.split(";")[0]


def test_a_crashed_childs_command_is_named_short_and_cut_between_arguments(
    cli: Cli, tmp_path: Path
) -> None:
    job = (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'import ctypes; ctypes.string_at(0)',"
        " '--a-long-argument-that-does-not-fit'], check=True)\n"
    )
    spec = _write(
        tmp_path, job, "command: python job.py\nexpect: {outcome: crash, signal: SIGSEGV}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    report = _report(result.out)
    venv = str(Path(sys.prefix))
    # The headline, the Failure section and the results table: no absolute venv path.
    first = report.split("## How to reproduce", 1)[0].split("Log excerpt:", 1)[0]
    assert venv not in first
    assert "(child pid" in first
    # The engine's interpreter by the name it was started as (python or python3).
    assert f"<venv>/bin/{Path(sys.executable).name} -c import ctypes;" in first
    # Cut between arguments, never inside one.
    assert "--a-long-)" not in report
    # (Named short first: `<venv>` leaves room for more of its words than the path did.)
    assert any(
        cut in first
        for cut in ("--a-long-argument-that-does-not-fit)", "string_at(0) ...)", "ctypes; ...)")
    )


def test_a_private_tmpdir_and_a_long_command_read_short() -> None:
    names = PathNames({})
    text = "cannot open /tmp/reprospec-tmp-4242-ab_c9/3/tmp/kernels/k.bin: bad magic"
    assert names.shorten(text) == "cannot open <TMPDIR>/kernels/k.bin: bad magic"
    command = "python cffi_crash_with_a_long_name.py --iterations 100 --library ./libcrash.so"
    cut = shorten_command(command, 60)
    assert cut == "python cffi_crash_with_a_long_name.py --iterations 100 ..."
    assert all(word in command.split(" ") for word in cut.split(" ")[:-1])


def test_the_html_report_links_the_full_native_stacks() -> None:
    from reprospec.report.html import fragment

    link = "cells/default/1/native-stacks.txt"
    page = str(fragment(f"Full native stacks: [{link}]({link})\n"))
    # A report written when gdb was the one reader is read alike.
    assert str(fragment(f"Full native stacks (gdb): [{link}]({link})\n")) == page
    assert f'<a href="{link}">{link}</a>' in page
    hostile = 'cells/x"><script>'
    assert "<script>" not in str(fragment(f"Full native stacks: [{hostile}]({hostile})"))


def test_a_report_written_elsewhere_links_the_run_folders_files(cli: Cli, tmp_path: Path) -> None:
    # `report RUN -o out/r.html` kept `cells/...` links relative to the run folder: opened
    # from out/, every "Full native stacks" link pointed nowhere. The way to the
    # run folder is percent-encoded: under `--out "my runs (1)"` a markdown link's bare
    # destination ended at the space and the link was text.
    if not (shutil.which("eu-stack") or shutil.which("gdb")):
        pytest.skip("no native stack reader: no link to follow (CI installs both)")
    result, folder = _hang(cli, tmp_path, _DEADLOCK, out="my runs (1)")
    out = folder / "my runs (1)"
    assert result.code == 0, result.stdout + result.stderr
    # CommonMark's bare link destination: no space, no unbalanced parenthesis.
    md_link = re.compile(r"^Full native stacks(?: \(gdb\))?: \[cells/[^\]]+\]\(([^\s()<>]+)\)$")
    for form in ("md", "html"):
        target = tmp_path / "elsewhere" / f"r.{form}"
        said = cli("report", "latest", "--format", form, "-o", str(target), "--out", str(out))
        assert said.code == 0, said.stderr
        text = target.read_text()
        if form == "md":
            lines = [line for line in text.splitlines() if line.startswith("Full native stacks")]
            found = [md_link.match(line) for line in lines]
            assert all(found), lines
            links = [m[1] for m in found if m]
        else:
            links = re.findall(r'href="([^"]*cells/[^"]+)"', text)
        assert links, form
        assert all("my%20runs%20%281%29/" in link for link in links), links
        assert all((target.parent / unquote(link)).is_file() for link in links), links
