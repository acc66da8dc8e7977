"""`reprospec capture --from-log`: the CLI writes a skeleton that validates, lists what is left,
and compares the log's machine with this one; presets in a spec are checked and expanded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Spec
from reprospec.core.runoptions import RunOptions
from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec
from reprospec.spec.presets import PRESETS
from tests.support.cli import ROOT, Cli, CliResult

TICKETS = ROOT / "tests" / "data" / "tickets"


def test_a_pytorch_ticket_becomes_a_spec_that_validates_with_the_machine_compared(
    cli: Cli, tmp_path: Path
) -> None:
    ticket = TICKETS / "pytorch-issue-collect-env.md"
    result = cli("capture", "--from-log", str(ticket), "-o", "t.yaml", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "wrote t.yaml: crash SIGSEGV in a worker, main loop at train" in result.stdout
    assert "left to fill in (2), marked TODO in t.yaml:" in result.stdout
    # Its pins are not this interpreter's: the next step builds them, named as pinned.
    assert (
        "next: fill in the TODOs, then `reprospec run t.yaml --runner venv` (this interpreter "
        "lacks the spec's numpy==1.26.2, torch==2.1.0, torchvision==0.16.0 and 1 more"
    ) in result.stdout
    # Whatever numpy is here (none, or another release): the row names the log's.
    assert "DIFFERS  numpy: log 1.26.2; here " in result.stdout
    # This machine has no GPU and a CPU torch build: both differ from the ticket's.
    assert "DIFFERS  GPUs: log 2x NVIDIA A100-SXM4-80GB; here none" in (result.stdout)
    assert "DIFFERS  CUDA (torch build): log 12.1; here none (CPU build)" in result.stdout
    spec = load_spec(str(tmp_path / "t.yaml"))
    document = spec.document
    assert document["command"] == (
        "python train.py --workers ${{ matrix.workers }} "
        "${{ matrix.pin_memory and '--pin-memory' or '' }} --batch-size ${{ matrix.batch_size }}"
    )
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert environment["python"] == "3.10"
    assert environment["env"] == {"CUDA_VISIBLE_DEVICES": "0"}
    # The release, not the build: `==2.1.0+cu121` matched no other build of 2.1.0.
    assert "torch==2.1.0" in environment["packages"]  # type: ignore[operator]
    assert "- torch==2.1.0  # 2.1.0+cu121 where it failed" in (tmp_path / "t.yaml").read_text()
    # A worker's crash: its signal and where, as the live capture writes it; not the main
    # process's RuntimeError (ConnectionResetError on another run) nor the main loop's step.
    assert document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "train",
    }
    assert document["markers"] == [{"preset": "lightning"}]
    validated = cli("validate", str(tmp_path / "t.yaml"))
    assert validated.code == 0, validated.stdout + validated.stderr


def test_a_worker_crash_ticket_gives_a_spec_that_the_same_worker_crash_reproduces(
    cli: Cli, tmp_path: Path
) -> None:
    # The ticket's main-process RuntimeError and main-loop step 7 went into
    # expect; the live program's worker died of the same SIGSEGV every time and the main
    # process raised ConnectionResetError, or the loop was at another step: 0/3, not
    # reproduced. The program is tests/data/capture/worker/, the ticket its crash's log.
    shutil.copytree(ROOT / "tests" / "data" / "capture" / "worker", tmp_path / "worker")
    ticket = TICKETS / "dataloader-worker-sigsegv.md"
    made = cli("capture", "--from-log", str(ticket), "-o", "t.yaml", cwd=tmp_path)
    assert made.code == 0, made.stderr
    assert "wrote t.yaml: crash SIGSEGV in a worker, main loop at validation" in made.stdout
    document = load_spec(str(tmp_path / "t.yaml")).document
    assert document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "validation",
    }
    assert "# in a DataLoader worker" in (tmp_path / "t.yaml").read_text()
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = cli(
        "run", "t.yaml", "--set", "environment.workdir=worker", "--repeat", "2",
        cwd=tmp_path, env=here,
    )  # fmt: skip
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert cell["verdict"] == "reproduced", cell
    assert {a["outcome"]["where"] for a in cell["attempts"]} == {"worker"}


def test_an_oom_ticket_reproduces_here_under_the_memory_limit_its_spec_suggests(
    cli: Cli, tmp_path: Path
) -> None:
    """A DataLoader worker the OOM killer ended on a 32 GB box (the ticket: its real torch
    2.13 traceback and dmesg's line) passes on a machine with more memory; the spec says
    so, and with `environment.perturb.memory_limit` it runs out here too, named as such."""
    folder, why = make_memory_cgroup(2**30, f"reprospec-probe-{os.getpid()}")
    if folder is None:
        pytest.skip(f"no memory cgroup can be made here: {why}")
    remove_cgroup(folder)
    shutil.copytree(ROOT / "tests" / "data" / "capture" / "oom", tmp_path / "oom")
    ticket = TICKETS / "dataloader-oom-killed.md"
    made = cli("capture", "--from-log", str(ticket), "-o", "t.yaml", cwd=tmp_path)
    assert made.code == 0, made.stderr
    assert "the kernel's OOM killer killed a process: Out of memory: Killed process" in (
        made.stdout
    )
    written = (tmp_path / "t.yaml").read_text()
    assert "environment.perturb.memory_limit makes it run out" in written
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = cli(
        "run", "t.yaml", "--set", "environment.workdir=oom",
        "--set", "environment.perturb.memory_limit=300m",
        cwd=tmp_path, env=here,
    )  # fmt: skip
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert cell["verdict"] == "reproduced", cell
    (attempt,) = cell["attempts"]
    assert attempt["outcome"]["oom_killed"] is True
    assert "crash SIGKILL by the OOM killer (worker)" in ran.stdout


def test_a_ticket_without_a_command_gets_a_placeholder_that_cannot_pass_for_a_reproduction(
    cli: Cli, tmp_path: Path
) -> None:
    text = (TICKETS / "lightning-chain.txt").read_text()
    result = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=tmp_path, stdin=text)
    assert result.code == 0, result.stderr
    assert "command: the command that failed" in result.stdout
    spec_text = (tmp_path / "t.yaml").read_text()
    assert "# TODO (left to fill in):" in spec_text
    assert "command: TODO-the-command-that-failed" in spec_text
    # A CUDA error needs a GPU: said in the spec, so that where there is none the cell
    # could not run, never judged (it read as a packages mismatch).
    assert "  gpus: 1  # the failure is a CUDA error: it needs a GPU\n" in spec_text
    ran = cli("run", "t.yaml", cwd=tmp_path)
    assert ran.code == 3  # an infrastructure error, not "not reproduced"
    cells = ran.results()["cells"]
    assert cells[0]["verdict"] == "infra-error"
    assert "needs 1 GPU" in cells[0]["reason"]
    # Without the GPU the placeholder command is the infrastructure error.
    spec_text = spec_text.replace("  gpus: 1  # the failure is a CUDA error: it needs a GPU\n", "")
    (tmp_path / "t.yaml").write_text(spec_text)
    ran = cli("run", "t.yaml", cwd=tmp_path)
    assert ran.code == 3
    assert "TODO-the-command-that-failed" in ran.results()["cells"][0]["reason"]


def test_a_preset_marker_expands_and_a_wrong_one_is_located(cli: Cli, tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        "reprospec: 1\nname: p\ncommand: 'true'\n"
        "markers: [{preset: lightning}, {pattern: '^x (?P<step>\\d+)'}]\n"
    )
    planned = plan_run(load_spec(str(good)), RunOptions())
    markers = planned.attempts[0].markers
    assert markers[: len(PRESETS["lightning"].markers)] == PRESETS["lightning"].markers
    assert markers[-1].pattern == r"^x (?P<step>\d+)"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "reprospec: 1\nname: p\ncommand: 'true'\n"
        "markers:\n  - {preset: lightnin}\n  - {preset: steps, phase: x}\n  - {phase: y}\n"
    )
    result = cli("validate", str(bad))
    assert result.code == 2
    lines = result.stdout.splitlines() + result.stderr.splitlines()
    assert any(":5:" in line and "lightning" in line for line in lines), lines
    assert any("a preset marker takes no 'phase'" in line for line in lines), lines
    assert any("a marker needs a 'pattern' (or a 'preset')" in line for line in lines), lines


def test_the_schema_names_every_preset() -> None:
    schema = json.loads((ROOT / "schemas" / "reprospec.schema.json").read_text())
    preset = schema["properties"]["markers"]["items"]["properties"]["preset"]
    (names,) = [branch["enum"] for branch in preset["anyOf"] if "enum" in branch]
    assert names == list(PRESETS)


TEST_IO = """\
class D:
    def __init__(self, n): self.n = n
    def __repr__(self): return f"torch.{self.n}"
    def __eq__(self, o): return self.n == o.n
F16, F32 = D("float16"), D("float32")
def test_ok(): pass
def test_roundtrip_fp16():
    assert F32 == F16
def test_after(): pass
"""

PYTEST_TICKET = """\
$ pytest tests/test_io.py
tests/test_io.py .....F.
___________________ test_roundtrip_fp16 ___________________
    def test_roundtrip_fp16():
>       assert load(save(t)).dtype == t.dtype
E       AssertionError: assert torch.float32 == torch.float16
tests/test_io.py:42: AssertionError
FAILED tests/test_io.py::test_roundtrip_fp16 - AssertionError: assert torch.float32 == torch.float16
"""


def test_a_pytest_ticket_gives_a_spec_that_a_live_run_of_the_failure_meets(
    cli: Cli, tmp_path: Path
) -> None:
    # The D7 report: the spec promised markers it did not write, and a live run of the
    # same failure was `error exit 1`: pytest catches what its tests raise, so there was
    # no traceback to read, and `expect` (AssertionError at the test) could never be met.
    # A test passes after the failing one: the failure's test is pytest's, not the last.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_io.py").write_text(TEST_IO)
    (tmp_path / "ticket.txt").write_text(PYTEST_TICKET)
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    made = cli("capture", "--from-log", "ticket.txt", "-o", "pt.yaml", cwd=tmp_path, env=here)
    assert made.code == 0, made.stderr
    document = load_spec(str(tmp_path / "pt.yaml")).document
    assert document["command"] == "pytest tests/test_io.py -v"
    assert document["markers"] == [{"preset": "pytest"}]
    assert document["expect"] == {
        "outcome": "error",
        "exception": "AssertionError",
        "message": r"assert torch\.float\d+ == torch\.float\d+",
        "phase": "tests/test_io.py::test_roundtrip_fp16",
    }
    ran = cli("run", "pt.yaml", cwd=tmp_path, env=here)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert "1/1 cell reproduced" in ran.stdout
    # Captured live, the same failure gives a spec that reproduces it too.
    live = cli(
        "capture", "-o", "live.yaml", "--", "pytest", "tests/test_io.py", "-x",
        cwd=tmp_path, env=here,
    )  # fmt: skip
    assert live.code == 0, live.stdout + live.stderr
    assert "error:AssertionError:tests/test_io.py::test_roundtrip_fp16" in live.stdout
    assert "verdict reproduced" in live.stdout
    expect = load_spec(str(tmp_path / "live.yaml")).document["expect"]
    assert isinstance(expect, dict)
    assert expect["exception"] == "AssertionError"
    assert expect["phase"] == "tests/test_io.py::test_roundtrip_fp16"


def test_a_secret_on_the_tickets_command_line_is_neither_printed_nor_written(
    cli: Cli, tmp_path: Path
) -> None:
    # `capture` quoted the command it read, token and all; and the program's message held
    # the token's first characters, which the spec wrote into its expected message.
    text = (
        "Command:\n\n"
        "    $ HF_TOKEN=hf_zzTopSecret999 python train.py --lr 0.1\n\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "PermissionError: 401 for token hf_zzTop (revoked)\n"
    )
    result = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=tmp_path, stdin=text)
    assert result.code == 0, result.stderr
    assert "the command: HF_TOKEN=*** python train.py --lr 0.1" in result.stdout
    # A secret-looking option of the ticket's command too: read from the environment.
    flagged = text.replace("--lr 0.1", "--api-key sk-proj-XYZ987 --lr 0.1")
    again = cli("capture", "--from-log", "-", "-o", "f.yaml", cwd=tmp_path, stdin=flagged)
    assert again.code == 0, again.stderr
    assert "XYZ987" not in again.stdout + (tmp_path / "f.yaml").read_text()
    command = load_spec(str(tmp_path / "f.yaml")).document["command"]
    assert command == 'python train.py --api-key "$API_KEY" --lr ${{ matrix.lr }}'

    written = (tmp_path / "t.yaml").read_text()
    for output in (result.stdout, result.stderr, written):
        assert "zzTop" not in output
    document = load_spec(str(tmp_path / "t.yaml")).document
    assert document["expect"] == {
        "outcome": "error",
        "exception": "PermissionError",
        "message": r"\d+ for token .+? \(revoked\)",
    }


def test_a_setting_on_the_tickets_command_line_is_printed_and_written(
    cli: Cli, tmp_path: Path
) -> None:
    # `MAX_TOKENS=2048` looked secret by its name: printed as `MAX_TOKENS=***`, written as
    # `${{ env.MAX_TOKENS }}`, a value the reader's shell never had.
    text = (
        "$ MAX_TOKENS=2048 python train.py\n"
        'Traceback (most recent call last):\n  File "train.py", line 4, in <module>\n'
        "ValueError: MAX_TOKENS 2048 is over the context\n"
    )
    result = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=tmp_path, stdin=text)
    assert result.code == 0, result.stderr
    assert "the command: MAX_TOKENS=2048 python train.py" in result.stdout
    environment = load_spec(str(tmp_path / "t.yaml")).document["environment"]
    assert isinstance(environment, dict)
    assert environment["env"] == {"MAX_TOKENS": "2048"}


def test_a_faulthandler_timeout_ticket_is_titled_a_hang_once(cli: Cli, tmp_path: Path) -> None:
    # A hang has no signal or exception to name: the outcome stood in for it, and the
    # skeleton was titled "hang hang at train step 120".
    (tmp_path / "hang-ticket.txt").write_text(
        "Running `torchrun --nproc_per_node 2 train.py --bs 32 --compile` hangs at step 120.\n\n"
        "[rank0]: train step 119 loss=1.2\n[rank0]: train step 120 loss=1.1\n"
        "Timeout (0:10:00)!\nThread 0x00007f1 (most recent call first):\n"
        '  File "/src/train.py", line 88 in step\n  File "/src/train.py", line 120 in main\n'
    )
    result = cli("capture", "--from-log", "hang-ticket.txt", "-o", "h.yaml", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "wrote h.yaml: hang at train step 120\n" in result.stdout
    document = load_spec(str(tmp_path / "h.yaml")).document
    assert document["title"] == "From a ticket: hang at train step 120"
    assert document["expect"] == {"outcome": "hang", "phase": "train", "step": 120}


def test_a_variable_the_tickets_prose_sets_is_left_to_fill_in(cli: Cli, tmp_path: Path) -> None:
    # "MALLOC_ARENA_MAX=2 exported in my shell" was in no line capture printed or wrote: the
    # user never learnt the repro may need it (lo37).
    text = (
        "It segfaults with MALLOC_ARENA_MAX=2 exported in my shell.\n\n"
        "$ python train.py --lr 0.1\nSegmentation fault (core dumped)\n"
    )
    result = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=tmp_path, stdin=text)
    assert result.code == 0, result.stderr
    item = "environment.env.MALLOC_ARENA_MAX: the ticket's prose sets MALLOC_ARENA_MAX=2"
    assert f"  - {item}, its command line does not" in result.stdout
    checked = cli("validate", "t.yaml", cwd=tmp_path)
    assert "environment.env.MALLOC_ARENA_MAX" in checked.stderr
    # Set as the item says, it is filled.
    spec = tmp_path / "t.yaml"
    spec.write_text(spec.read_text() + "environment:\n  env:\n    MALLOC_ARENA_MAX: '2'\n")
    checked = cli("validate", "t.yaml", cwd=tmp_path)
    assert checked.code == 0, checked.stderr
    assert "still to fill in" in checked.stderr
    assert "MALLOC_ARENA_MAX" not in checked.stderr


CRASHING_TESTS = """\
import ctypes
def test_ok(): pass
def test_crash(): ctypes.string_at(0)
def test_after(): pass
"""


def _crashing_log(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """A real pytest run, with `options`, of tests/test_x.py whose second test segfaults."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(CRASHING_TESTS)
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options]
    return subprocess.run(
        [*pytest, "tests/test_x.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def _captured(cli: Cli, tmp_path: Path, ticket: str, name: str) -> tuple[CliResult, Spec]:
    """`capture --from-log` of `ticket` into `name`, with this interpreter's pytest on PATH:
    what it printed, and the spec it wrote, which `reprospec run` reproduces."""
    (tmp_path / "ticket.txt").write_text(ticket)
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    made = cli("capture", "--from-log", "ticket.txt", "-o", name, cwd=tmp_path, env=here)
    assert made.code == 0, made.stderr
    ran = cli("run", name, cwd=tmp_path, env=here)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert "1/1 cell reproduced" in ran.stdout
    return made, load_spec(str(tmp_path / name))


def test_a_pytest_xdist_log_of_a_crashing_test_gives_its_test_and_a_spec_a_live_run_meets(
    cli: Cli, tmp_path: Path
) -> None:
    # xdist's `[gw0] node down: Not properly terminated` / `worker 'gw0' crashed while
    # running '...'` was not read: "no failure found", `outcome: fail # TODO`, where a live
    # run of the command is a crash of a child at that test. And faulthandler's header ran
    # on after the progress dot (`.Fatal Python error: ...`), so no signal was read; the
    # header's `plugins: ..., flaky-3.8.1` said the failure was flaky (lo37).
    log = _crashing_log(tmp_path, "-n", "1")
    assert "[gw0] node down: Not properly terminated" in log.stdout + log.stderr
    ticket = "$ pytest -n 1 tests/test_x.py\n" + log.stdout + log.stderr
    made, spec = _captured(cli, tmp_path, ticket, "x.yaml")
    assert (
        "wrote x.yaml: crash SIGSEGV in a pytest-xdist worker at tests/test_x.py::test_crash\n"
    ) in made.stdout
    assert spec.document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "child",
        "phase": "tests/test_x.py::test_crash",
    }


def test_a_pytest_v_log_of_a_crashing_test_gives_its_test_and_a_spec_a_live_run_meets(
    cli: Cli, tmp_path: Path
) -> None:
    # A crash has no FAILED line: the skeleton expected no test, where a live run's pytest
    # markers name the one -v's lines were running (lo37).
    log = _crashing_log(tmp_path, "-v")
    assert log.returncode == -11, log.stdout + log.stderr
    ticket = "$ pytest -v tests/test_x.py\n" + log.stdout + log.stderr
    made, spec = _captured(cli, tmp_path, ticket + "Segmentation fault (core dumped)\n", "v.yaml")
    assert "the test running when it died: tests/test_x.py::test_crash" in made.stdout
    assert spec.document["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "phase": "tests/test_x.py::test_crash",
    }


# A server whose main thread joins a pool of threads that wait for ever: a real hang, and
# faulthandler's dump of it after half a second (`Timeout (0:00:00.500000)!`).
# The watchdog is armed once every thread is at its wait (the barrier): armed first, its
# 0.5 s ran out on a loaded machine before a thread got there, and the dump showed it in
# threading's start-up (`_bootstrap_inner`, no `_worker`), or the main thread in `start`.
THREADED_HANG = """\
import faulthandler, sys, threading

def _worker(ready, stop):
    ready.wait()
    stop.wait()

ready = threading.Barrier(3)
stop = threading.Event()
pool = [threading.Thread(target=_worker, args=(ready, stop)) for _ in range(2)]
for thread in pool:
    thread.start()
ready.wait()
faulthandler.dump_traceback_later(0.5, exit=True)
pool[0].join()
"""


def test_a_real_timeout_dump_of_threads_gives_one_stack_per_thread(
    cli: Cli, tmp_path: Path
) -> None:
    # The threads of a `Timeout` dump were joined into one made-up chain (the main
    # thread's `join` the caller of a worker thread's `_worker`), and the `workers` axis
    # of a program that shows no torch spoke of a DataLoader.
    (tmp_path / "serve.py").write_text(THREADED_HANG)
    hung = subprocess.run(
        [sys.executable, "serve.py", "--workers", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Timeout (0:00:00.500000)!" in hung.stderr, hung.stderr
    (tmp_path / "hang.md").write_text(f"```\n$ python serve.py --workers 2\n{hung.stderr}```\n")
    made = cli("capture", "--from-log", "hang.md", "-o", "h.yaml", cwd=tmp_path)
    assert made.code == 0, made.stderr
    assert "wrote h.yaml: hang\n" in made.stdout
    document = load_spec(str(tmp_path / "h.yaml")).document
    description = str(document["description"]).split("\n")
    assert description[1] == (
        "Python stacks of 3 threads (the dump names no current thread), innermost last:"
    )
    # The main thread first, its own stack alone: `<module>`, then threading's join.
    assert description[2].endswith(", the main thread (its outermost frame runs the program):")
    heads = [i for i, line in enumerate(description) if line.startswith("  thread 0x")]
    assert heads[0] == 2
    assert len(heads) == 3
    main = description[3 : heads[1]]
    assert main[0].endswith("/serve.py:<module>")
    assert main[1].endswith("threading.py:join")
    assert not any("_worker" in line or "_bootstrap" in line for line in main)
    # Each worker thread's stack begins at threading's _bootstrap and ends in its wait.
    workers = [i for i, line in enumerate(description) if line.endswith("threading.py:_bootstrap")]
    assert len(workers) == 2
    assert all(description[i - 1].startswith("  thread 0x") for i in workers)
    assert sum(line.endswith("/serve.py:_worker") for line in description) == 2
    assert "DataLoader" not in (tmp_path / "h.yaml").read_text()
    validated = cli("validate", "h.yaml", cwd=tmp_path)
    assert validated.code == 0, validated.stderr


def _quoted(text: str, depth: int) -> str:
    """`text` as GitHub's quote reply writes it, `depth` levels deep (`> > `)."""
    return "\n".join(("> " * depth + line).rstrip() for line in text.split("\n"))


@pytest.mark.parametrize("rank", [False, True])
def test_a_quoted_log_is_read_as_the_log_itself(cli: Cli, tmp_path: Path, rank: bool) -> None:
    # Quoted (`> `), a rank's traceback (`[rank1]:` behind the quote) read as no
    # failure, and the command (`> $ python x.py --lr 0.1`) as none.
    (tmp_path / "x.py").write_text("import sys\nraise ValueError('bad shape')\n")
    raised = subprocess.run(
        [sys.executable, "x.py", "--lr", "0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "ValueError: bad shape" in raised.stderr
    lines = raised.stderr.rstrip("\n").split("\n")
    if rank:  # torchrun's --tee: every line of a rank's output behind `[rank1]: `
        lines = [f"[rank1]: {line}" for line in lines]
    log = "$ python x.py --lr 0.1\n" + "\n".join(lines) + "\n"
    written = {}
    for depth in (0, 1, 2):
        (tmp_path / f"log{depth}.md").write_text(_quoted(log, depth) if depth else log)
        made = cli("capture", "--from-log", f"log{depth}.md", "-o", f"t{depth}.yaml", cwd=tmp_path)
        assert made.code == 0, made.stderr
        assert f"wrote t{depth}.yaml: error ValueError\n" in made.stdout
        assert "  the command: python x.py --lr 0.1\n" in made.stdout
        written[depth] = (tmp_path / f"t{depth}.yaml").read_text().replace(f"log{depth}.md", "L")
    assert written[1] == written[0] == written[2]
    document = load_spec(str(tmp_path / "t1.yaml")).document
    assert document["command"] == "python x.py --lr ${{ matrix.lr }}"
    assert document["expect"] == {
        "outcome": "error",
        "exception": "ValueError",
        "message": "bad shape",
    }


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (("--repeat", "5"), "--repeat (set run.repeat in the spec it writes)"),
        (("--repeat", "1"), "--repeat (set run.repeat in the spec it writes)"),
        (("--timeout", "1m"), "--timeout (set run.timeout in the spec it writes)"),
        (("--no-verify",), "--no-verify (it never reruns the spec it writes)"),
        (("--python", sys.executable), "--python (the spec's Python and packages are the log's)"),
        (("--out", "runs"), "--out (no run is stored)"),
    ],
)
def test_an_option_of_a_command_capture_is_refused_with_from_log(
    cli: Cli, tmp_path: Path, given: tuple[str, ...], named: str
) -> None:
    # `--from-log i3.md --repeat 5` exited 0 and wrote one attempt's spec: the
    # option was dropped without a word.
    (tmp_path / "t.md").write_text("$ python x.py\nSegmentation fault (core dumped)\n")
    result = cli("capture", "--from-log", "t.md", *given, "-o", "t.yaml", cwd=tmp_path)
    assert result.code == 2, result.stdout + result.stderr
    assert result.stderr == (
        f"reprospec: capture --from-log runs nothing, so it takes no {named}: "
        "those are for `capture -- CMD`\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.md"]
    # -o and --force apply to both: a log read with them is written.
    (tmp_path / "t.yaml").write_text("reprospec: 1\n")
    forced = cli("capture", "--from-log", "t.md", "-o", "t.yaml", "--force", cwd=tmp_path)
    assert forced.code == 0, forced.stderr


_TRAIN = """\
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--batch-size", type=int)
args = parser.parse_args()
raise ValueError(f"loss is nan at lr {args.lr}")
"""
_TRAIN_LOG = """\
$ {command} --lr 0.1 --batch-size 32
Traceback (most recent call last):
  File "train.py", line 7, in <module>
    raise ValueError(f"loss is nan at lr {{args.lr}}")
ValueError: loss is nan at lr 0.1
"""
_PYTEST_LOG = """\
$ {command} -x tests/test_t.py
============================= test session starts ==============================
collected 1 item

tests/test_t.py F                                                        [100%]

=================================== FAILURES ===================================
____________________________________ test_a ____________________________________

    def test_a():
>       assert 1 == 2
E       assert 1 == 2

tests/test_t.py:2: AssertionError
=========================== short test summary info ============================
FAILED tests/test_t.py::test_a - assert 1 == 2
============================== 1 failed in 0.01s ===============================
"""


def _skeleton(cli: Cli, folder: Path, log: str) -> tuple[dict[str, object], str]:
    """The spec `--from-log` writes of `log` in `folder`: its document, its text."""
    folder.mkdir(parents=True, exist_ok=True)
    made = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=folder, stdin=log)
    assert made.code == 0, made.stdout + made.stderr
    return dict(load_spec(str(folder / "t.yaml")).document), (folder / "t.yaml").read_text()


def test_a_logs_wrapped_command_gives_the_spec_its_bare_command_gives(
    cli: Cli, tmp_path: Path
) -> None:
    """The log's command line was read by its first word past `VAR=value` and a
    word `env`: `timeout 300 python train.py --lr 0.1` and `nice -n 5 ...` ran `timeout` and
    `nice`, no program a ticket runs, so the command was a TODO; `env -i X=1 pytest ...` ran
    `-i`. Read by plan/wrappers.py, each gives the bare command's spec (script, axes,
    pytest's node id), the wrapper kept as written: the program ran under it."""
    for log, bare, wrappers in (
        (_TRAIN_LOG, "python train.py", ("timeout 300", "nice -n 5", "timeout 5 env -i X=1")),
        (_PYTEST_LOG, "pytest", ("timeout 300", "env -i X=1", "stdbuf -oL nice -n 5")),
    ):
        plain, _ = _skeleton(cli, tmp_path / bare / "bare", log.format(command=bare))
        for at, wrapper in enumerate(wrappers):
            wrapped, _ = _skeleton(
                cli, tmp_path / bare / str(at), log.format(command=f"{wrapper} {bare}")
            )
            assert wrapped["command"] == f"{wrapper} {plain['command']}", wrapper
            for key in ("name", "matrix", "expect", "markers"):
                assert wrapped.get(key) == plain.get(key), (wrapper, key)
    # And it runs: the wrapped command's skeleton reproduces the failure here.
    workdir = tmp_path / "work"
    (workdir / "tests").mkdir(parents=True)
    (workdir / "train.py").write_text(_TRAIN)
    (workdir / "tests" / "test_t.py").write_text("def test_a():\n    assert 1 == 2\n")
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for bare, at in (("python train.py", 0), ("pytest", 2)):
        folder = tmp_path / bare / str(at)
        shutil.copytree(workdir, folder / "work")
        ran = cli("run", "t.yaml", "--set", "environment.workdir=work", cwd=folder, env=here)
        assert ran.code == 0, ran.stdout + ran.stderr
        (cell,) = ran.results()["cells"]
        assert cell["verdict"] == "reproduced", (bare, cell)


def test_a_hangs_timeout_wrapper_becomes_the_runs_timeout(cli: Cli, tmp_path: Path) -> None:
    """A `timeout` in a hang's log is the reporter's bound: kept in the command, it
    ends the hung program by SIGTERM, which a run reads as `error exit 124`, never the hang
    (not-reproduced). Its duration becomes the run's timeout, and the header says so."""
    log = (
        "$ CUDA_VISIBLE_DEVICES=0 timeout -s INT 3 nice -n 5 python hang.py --lr 0.1\n"
        "step 1\n"
        "Timeout (0:00:03)!\n"
        "Thread 0x00007f0000000000 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        '  File "hang.py", line 6 in <module>\n'
    )
    document, text = _skeleton(cli, tmp_path, log)
    assert document["command"] == "nice -n 5 python hang.py --lr ${{ matrix.lr }}"
    assert document["run"] == {"timeout": "3s"}
    assert document["expect"] == {"outcome": "hang"}
    assert "# `timeout -s INT 3` of the command is the run's timeout (3s)" in text
    (tmp_path / "hang.py").write_text(
        "import argparse, threading\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--lr')\n"
        "parser.parse_args()\n"
        "print('step 1', flush=True)\n"
        "threading.Event().wait()\n"
    )
    here = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = cli("run", "t.yaml", "--set", "environment.workdir=.", cwd=tmp_path, env=here)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert cell["verdict"] == "reproduced", cell
    # An error's log keeps it: the failure came before the bound the program ran under.
    error, _ = _skeleton(
        cli, tmp_path / "error", _TRAIN_LOG.format(command="timeout 3 python train.py")
    )
    assert str(error["command"]).startswith("timeout 3 python train.py --lr")
    assert "run" not in error


def test_a_literal_expression_opener_in_the_tickets_command_validates_and_plans_as_written(
    cli: Cli, tmp_path: Path
) -> None:
    # A new user's trial: the skeleton's `command:` held the ticket's `${{ oops }}` as an
    # expression (`unknown name 'oops'`), and `"${{ env.USER }}-run"` read the reader's
    # environment where the ticket's program got the text.
    command = "python train.py --msg '${{ oops }}' --template '${{ env.USER }}-run'"
    text = f"```\n$ {command}\nSegmentation fault (core dumped)\n```\n"
    (tmp_path / "train.py").write_text("")
    result = cli("capture", "--from-log", "-", "-o", "t.yaml", cwd=tmp_path, stdin=text)
    assert result.code == 0, result.stderr
    validated = cli("validate", "t.yaml", cwd=tmp_path)
    assert validated.code == 0, validated.stdout + validated.stderr
    planned = cli("plan", "t.yaml", cwd=tmp_path)
    assert f"  command: {command}\n" in planned.stdout


def test_a_worker_crashs_log_redirected_to_a_file_is_read_with_torchs_nul(
    cli: Cli, tmp_path: Path
) -> None:
    # A new user's trial: torch's `ERROR: Unexpected segmentation fault encountered in
    # worker.` ends in a NUL, which `python train.py > out.log 2>&1` keeps, and capture
    # refused the log of the very crash it knows as "not text (it holds NUL bytes)".
    program = ROOT / "tests" / "data" / "capture" / "worker" / "train.py"
    command = [sys.executable, str(program), "--workers", "2", "--pin-memory"]
    ran = subprocess.run(command, capture_output=True, check=False, timeout=300)
    assert ran.returncode != 0
    log = b"$ python train.py --workers 2 --pin-memory\n" + ran.stdout + ran.stderr
    assert b"\x00" in log  # torch's own, as the real program printed it
    (tmp_path / "out.log").write_bytes(log)
    result = cli("capture", "--from-log", "out.log", "-o", "t.yaml", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "wrote t.yaml: crash SIGSEGV in a worker" in result.stdout
    assert "\x00" not in (tmp_path / "t.yaml").read_text(encoding="utf-8")


def test_a_binary_file_is_refused_as_no_log(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "core").write_bytes(bytes(range(256)) * 16)
    result = cli("capture", "--from-log", "core", "-o", "t.yaml", cwd=tmp_path)
    assert result.code == 2
    assert "--from-log: core is not text" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "t.yaml").exists()


def test_a_utf_16_log_as_windows_powershell_writes_it_is_read(cli: Cli, tmp_path: Path) -> None:
    # A new user's trial: PowerShell 5's `>` writes UTF-16 LE with a byte order mark, and
    # capture refused the ticket as "not text (it holds NUL bytes)".
    text = (
        "It crashes:\r\n\r\n```\r\n$ python app.py --n 4\r\n"
        "Segmentation fault (core dumped)\r\n```\r\n"
    )
    (tmp_path / "u16.txt").write_bytes(text.encode("utf-16"))
    result = cli("capture", "--from-log", "u16.txt", "-o", "u.yaml", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "wrote u.yaml: crash SIGSEGV" in result.stdout
    assert "the command: python app.py --n 4" in result.stdout
