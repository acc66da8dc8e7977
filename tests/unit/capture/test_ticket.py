"""`capture --from-log`: real-world-shaped tickets read for the failure, the machine, the command.

Each ticket in tests/data/tickets/ is shaped like one people file: a PyTorch
issue body with collect_env, a Lightning traceback with an exception chain, a
faulthandler dump, a gdb session, a pytest run. The reader must name the right
exception or signal, the versions and the phase, or say nothing.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

import reprospec
from reprospec.capture.envblock import parse_machine
from reprospec.capture.fromlog import compare_machine, log_text, skeleton
from reprospec.capture.ticket import Ticket, read_ticket
from reprospec.capture.writer import render_spec
from reprospec.core.jsontypes import JsonValue
from reprospec.core.words import guessed_from_pytest
from tests.support.paths import DATA
from tests.support.torchrun import child_failed_report

TICKETS = DATA / "tickets"


def ticket(name: str) -> str:
    return (TICKETS / name).read_text(encoding="utf-8")


def test_a_pytorch_issue_with_collect_env_gives_the_worker_segfault_and_the_machine() -> None:
    read = read_ticket(ticket("pytorch-issue-collect-env.md"))
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", "SIGSEGV", "worker")
    assert failure.exception == "RuntimeError"
    assert [e.link for e in failure.chain] == ["cause", None]
    assert (failure.phase, failure.step) == ("train", 311)
    machine = read.machine
    assert machine.torch == "2.1.0+cu121"
    assert (machine.torch_cuda, machine.cuda_runtime, machine.cudnn) == (
        "12.1",
        "12.1.105",
        "8.9.2",
    )
    assert machine.python == "3.10"
    assert machine.os == "Ubuntu 22.04.3 LTS (x86_64)"
    assert machine.gpus == ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB")
    assert machine.driver == "535.104.05"
    assert "torchvision==0.16.0+cu121" in machine.requirements
    assert len(machine.requirements) == len(set(machine.requirements)) == 4
    assert read.command == (
        "CUDA_VISIBLE_DEVICES=0 python train.py --workers 4 --pin-memory --batch-size 64"
    )
    assert read.presets == ("lightning",)


def test_prose_says_the_libraries_the_gpus_the_driver_and_torchs_cuda() -> None:
    # Only torch's version was read from prose: transformers and numpy stayed unpinned, and
    # the machine's RTX 4090, its driver and torch's CUDA 12.1 (+cu121) compared nothing.
    machine = parse_machine(
        "**Environment**: Ubuntu 22.04, Python 3.10.12, PyTorch 2.1.0+cu121, Transformers"
        " v4.36.2, numpy 1.26.2, one RTX 4090, driver 535.104.05.\n"
        '  File "/venv/lib/python3.10/site-packages/transformers/trainer.py", line 1\n'
    )
    assert machine.requirements == (
        "numpy==1.26.2", "torch==2.1.0+cu121", "transformers==4.36.2"
    )  # fmt: skip
    # wandb's too, whose `import wandb` hang is a ticket of its own: its version went unread.
    said = parse_machine("hangs at `import wandb`.\nwandb 0.16.1, Python 3.11.5, Ubuntu 22.04")
    assert said.requirements == ("wandb==0.16.1",)
    assert (machine.gpus, machine.driver, machine.torch_cuda) == (
        ("RTX 4090",), "535.104.05", "12.1"
    )  # fmt: skip
    # Two versions of one name: which one failed is the reader's call. A list's wins.
    two = parse_machine("worked with numpy 1.26.4, fails with numpy 2.0.1\nnumpy==2.0.1\n")
    assert two.requirements == ("numpy==2.0.1",)
    assert parse_machine("worked with numpy 1.26.4, fails with numpy 2.0.1").requirements == ()
    # A short model name is one only after NVIDIA or Tesla; "8x A100 80GB" is 8 of them, each
    # with its memory, and is said so (the count was lost, "where there is a A100").
    gpus = parse_machine("the L4 cache; on an NVIDIA T4 and 8x A100 80GB, Pillow 10.2.0")
    assert gpus.gpus == ("NVIDIA T4", *["A100 80GB"] * 8)
    assert gpus.requirements == ("pillow==10.2.0",)
    lines = compare_machine(gpus, {"torch": {"version": "2.13.0+cpu"}})
    assert "  DIFFERS  GPUs: log NVIDIA T4, 8x A100 80GB; here none" in lines
    assert lines[-1].endswith("(run the spec on a machine with NVIDIA T4, 8x A100 80GB)")
    # One model said again without its memory or its maker ("crashes on A100", then "8x
    # A100 80GB"): one model, by its fullest name and the larger count. It was nine GPUs,
    # "A100, 8x A100 80GB". Two memories of one model are two.
    again = parse_machine("Crashes on A100 after 2k steps.\nSetup: 8x A100 80GB, driver 535.1")
    assert again.gpus == ("A100 80GB",) * 8
    assert parse_machine("one RTX 4090, an NVIDIA GeForce RTX 4090").gpus == (
        "NVIDIA GeForce RTX 4090",
    )
    assert parse_machine("passes on A100 40GB, fails on 2x A100 80GB").gpus == (
        "A100 40GB", "A100 80GB", "A100 80GB"
    )  # fmt: skip


def test_a_workers_sigkill_is_said_to_be_the_oom_killers_as_the_kernel_says_or_likely() -> None:
    text = ticket("dataloader-oom-killed.md")
    read = read_ticket(text)
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", "SIGKILL", "worker")
    # The line that names the process, not the constraint's line dmesg printed before it.
    assert read.oom_killed == "Out of memory: Killed process 22829 (pt_data_worker)"
    written = render_spec(skeleton(read, "dataloader-oom-killed.md"))
    assert (
        "signal: SIGKILL  # in a DataLoader worker; by the kernel's OOM killer (the log says "
        "'Out of memory: Killed process 22829 (pt_data_worker)'): where memory is larger, "
        "environment.perturb.memory_limit makes it run out"
    ) in written
    # Without the kernel's words: likely, not known.
    alone = read_ticket(text.split("`sudo dmesg")[0])
    assert alone.oom_killed is None
    assert "# in a DataLoader worker; most often the kernel's OOM killer's: " in render_spec(
        skeleton(alone, "dataloader-oom-killed.md")
    )
    # A container's state says it too.
    assert read_ticket('"OOMKilled": true,\nKilled\n').oom_killed == "OOMKilled"


def test_a_lightning_chain_gives_the_last_exception_its_cause_and_the_validation_step() -> None:
    read = read_ticket(ticket("lightning-chain.txt"))
    failure = read.failure
    assert failure.outcome == "error"
    assert [e.type for e in failure.chain] == ["RuntimeError", "torch.AcceleratorError"]
    assert failure.chain[0].link == "context"
    assert failure.message == "CUDA error: an illegal memory access was encountered"
    # The \r-redrawn bar's last segment before the traceback: validation step 7.
    assert (failure.phase, failure.step) == ("validation", 7)
    assert read.cuda_error == "CUDA error: an illegal memory access was encountered"
    # What the spec's `gpus: 1` comes from is said with the rest capture read.
    assert (
        "a CUDA error (the spec asks for a GPU): "
        "CUDA error: an illegal memory access was encountered" in read.evidence
    )
    assert read.presets == ("lightning",)
    assert read.machine.python == "3.11"  # from the traceback's site-packages paths
    assert read.command is None


def test_a_workers_exception_raised_again_is_expected_by_the_workers_own_message() -> None:
    # torch 2.13's log, recorded: the spec expected `Caught ValueError in DataLoader worker
    # process \d+\.`, true of any ValueError of any worker.
    log = (DATA / "recorded" / "dataloader-reraised-deep.stderr.log").read_text()
    read = read_ticket("$ python train.py --workers 2\n" + log)
    assert read.failure.exception == "ValueError"
    assert read.failure.message == "bad sample 27: label -1 is out of range [0, 10)"
    draft = skeleton(read, "t.md")
    assert draft.expect["message"] == r"bad sample \d+: label \-\d+ is out of range \[\d+, \d+\)"
    assert "- `ValueError`: bad sample 27: label -1 is out of range [0, 10)" in draft.description


def test_a_faulthandler_dump_gives_the_signal_the_crashing_thread_and_the_freeze() -> None:
    read = read_ticket(ticket("faulthandler-segfault.txt"))
    assert (read.failure.outcome, read.failure.signal, read.failure.where) == (
        "crash",
        "SIGSEGV",
        "main",
    )
    assert read.failure.step == 13
    # The current thread's frames, innermost last (faulthandler prints them innermost first).
    assert read.python_frames[-1].endswith("pyarrow/table.py:to_numpy")
    assert read.python_frames[0].endswith("extract_features.py:<module>")
    assert "pyarrow==15.0.0" in read.machine.requirements
    assert read.machine.torch == "2.2.1"
    assert read.command == (
        "python -X faulthandler scripts/extract_features.py "
        "--input data/shard-003.parquet --batch 256"
    )


def test_a_gdb_session_gives_the_signal_the_native_frames_and_the_program() -> None:
    read = read_ticket(ticket("gdb-backtrace.txt"))
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.native_frames[0] == (
        "at::native::index_add_cpu_::{lambda()#1}::operator()() const@libtorch_cpu.so"
    )
    assert read.native_frames[4] == "cfunction_call@methodobject.c"
    # gdb's `/usr/bin/python3`: the run's `python`, not the reader's PATH's `python3`
    # (review).
    assert read.command == "python bench_ops.py --op index_add --dtype bfloat16"
    assert (read.machine.torch, read.machine.python) == ("2.3.0+cpu", "3.10")
    # Said in prose only ("torch 2.3.0+cpu"), it is still the version the spec pins.
    assert read.machine.requirements == ("torch==2.3.0+cpu",)


def test_a_pytest_run_gives_the_failing_test_as_the_phase_and_its_exception() -> None:
    read = read_ticket(ticket("pytest-failure.txt"))
    failure = read.failure
    assert (failure.outcome, failure.exception) == ("error", "RuntimeError")
    assert failure.message is not None
    assert failure.message.startswith("stack expects each tensor")
    assert failure.phase == "tests/test_collate.py::test_collate_ragged"
    assert read.command == "pytest -v tests/test_collate.py"
    assert read.presets == ("pytest",)
    assert (read.machine.python, read.machine.torch) == ("3.12", "2.4.0")


@pytest.mark.parametrize(
    ("text", "signal", "where"),
    [
        (
            "./run.sh: line 3: 4242 Segmentation fault  (core dumped) ./test_ops --gtest_filter",
            "SIGSEGV",
            "child",
        ),
        ("Bus error (core dumped)", "SIGBUS", "main"),
        (
            "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)",
            "SIGSEGV",
            "main",
        ),
        (
            "subprocess.CalledProcessError: Command '['x']' returned non-zero exit status -6.",
            "SIGABRT",
            "main",
        ),
    ],
)
def test_shell_lines_and_exit_codes_name_the_signal(text: str, signal: str, where: str) -> None:
    failure = read_ticket(text).failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", signal, where)


def test_a_faulthandler_timeout_dump_is_a_hang() -> None:
    text = (
        "Timeout (0:05:00)!\nThread 0x00007f (most recent call first):\n"
        '  File "/x/train.py", line 9 in validation_step\n'
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.phase) == ("hang", "validation")


def test_a_timeout_dump_the_program_went_on_after_is_how_it_later_ended() -> None:
    # `dump_traceback_later(5, exit=False)`: the dump, then the program raised. A live run
    # reads that error (outcome/watchdog.py: the dump does not end stderr); the ticket read
    # a hang.
    dump = (
        "Timeout (0:00:05)!\nThread 0x00007f (most recent call first):\n"
        '  File "/x/train.py", line 9 in validation_step\n'
    )
    late = 'Traceback (most recent call last):\n  File "/x/train.py", line 20, in <module>\n'
    failure = read_ticket(f"{dump}{late}ValueError: late\n").failure
    assert (failure.outcome, failure.exception) == ("error", "ValueError")
    # The reporter's words after the dump are no sign the program went on.
    assert read_ticket(f"```\n{dump}```\nAny idea why?\n").failure.outcome == "hang"


_STOPPED = (
    "$ python train.py --epochs 3\nepoch 1 done\n"
    "^CTraceback (most recent call last):\n"
    '  File "/home/me/train.py", line 41, in <module>\n    main()\n'
    '  File "/home/me/train.py", line 37, in validation_step\n    for batch in loader:\n'
    '  File "/usr/lib/python3.11/threading.py", line 327, in wait\n    waiter.acquire()\n'
    "KeyboardInterrupt\n"
)


def test_a_traceback_that_ends_in_keyboardinterrupt_is_a_hang_where_it_waited() -> None:
    """The usual paste of a hang: Ctrl-C, its `^C` glued to `Traceback`. It was "no failure
    found", the spec's outcome left a TODO."""
    read = read_ticket(_STOPPED)
    assert (read.failure.outcome, read.failure.phase) == ("hang", "validation")
    # A ticket that says it happens sometimes: repeated, as any flaky failure.
    draft = skeleton(read_ticket("It hangs, maybe 1 in 5 runs.\n" + _STOPPED), "issue.md")
    assert (draft.expect["outcome"], draft.repeat, draft.expect["rate"]) == ("hang", 20, ">0")
    assert read.failure.exception is None  # the reporter's Ctrl-C, not the program's error
    assert any("KeyboardInterrupt" in said for said in read.evidence)


def test_a_keyboardinterrupt_after_an_error_leaves_the_error() -> None:
    # Stopped while the error was being handled: the error is the failure.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/t.py", line 3, in <module>\n    f()\nValueError: bad value\n\n'
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/x/t.py", line 5, in <module>\n    time.sleep(9)\nKeyboardInterrupt\n'
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.exception) == ("error", "ValueError")


def test_prose_that_mentions_python_is_no_command() -> None:
    assert read_ticket("I use python 3.10 on linux\npython is great\n").command is None


@pytest.mark.parametrize(
    ("line", "command", "axes"),
    [
        # `<` quoted as an argument, the program read nothing and passed.
        (
            "python app.py --lr 0.1 < data.txt",
            "python app.py --lr ${{ matrix.lr }} < data.txt",
            ["lr"],
        ),
        # A pipeline whose program is not its first stage, and a script of the reporter's:
        # neither was seen as the command (TODO-the-command-that-failed).
        ("cat data.txt | python app.py", "cat data.txt | python app.py", []),
        ("./run.sh", "./run.sh", []),
        # A descriptor's digits stay with its redirection (`2 >&1` gave the program an
        # argument `2` and left stderr apart).
        (
            "python app.py --workers 4 2>&1 | tee run.log",
            "python app.py --workers ${{ matrix.workers }} 2>&1 | tee run.log",
            ["workers"],
        ),
        (
            "python 'a b.py' --x '1 | 2' && echo done",
            "python 'a b.py' --x '${{ matrix.x }}' && echo done",
            ["x"],
        ),
    ],
)
def test_a_prompted_command_keeps_its_shell_operators(
    line: str, command: str, axes: list[str]
) -> None:
    read = read_ticket(f"It crashes:\n\n$ {line}\nSegmentation fault (core dumped)\n")
    assert read.command == line
    draft = skeleton(read, "ticket.txt")
    assert draft.command == command
    assert [axis.name for axis in draft.matrix] == axes


def test_a_conda_list_table_and_a_bare_freeze_are_packages() -> None:
    text = (
        "# packages in environment at /opt/conda:\n#\n# Name Version Build Channel\n"
        "numpy                     1.26.4          py311h64a7726_0    conda-forge\n"
        "pytorch                   2.2.1           py3.11_cuda12.1_cudnn8.9.2_0    pytorch\n"
        "\nrequests==2.31.0\n"
    )
    machine = parse_machine(text)
    # conda's `pytorch` is pip's `torch`: `pytorch==2.2.1` is no index's release.
    assert machine.requirements == ("numpy==1.26.4", "requests==2.31.0", "torch==2.2.1")


def test_a_whole_conda_list_pins_its_python_distributions_only() -> None:
    # A real `conda list` starts with `_libgcc_mutex`, whose `_` ended the table before any
    # row was read: nothing was pinned but torch, from the `pytorch 2.1.0` words.
    # Python itself and conda's own packages (blas, ffmpeg, pytorch-cuda) are no index's
    # distributions, which every cell then lacked (infra-error).
    machine = parse_machine(
        "# packages in environment at /home/eve/miniconda3/envs/ml:\n#\n"
        "# Name                    Version                   Build  Channel\n"
        "_libgcc_mutex             0.1                 conda_forge    conda-forge\n"
        "blas                      1.0                         mkl\n"
        "ffmpeg                    4.3                  hf484d3e_0    pytorch\n"
        "numpy                     1.26.4          py310hb13e2d6_0    conda-forge\n"
        "python                    3.10.13         hd12c33a_1_cpython    conda-forge\n"
        "pytorch                   2.1.0           py3.10_cuda12.1_cudnn8.9.2_0    pytorch\n"
        "pytorch-cuda              12.1                 ha16c6d3_5    pytorch\n"
        "tqdm                      4.66.1             pyhd8ed1ab_0    conda-forge\n"
        "torchvision               0.16.0              py310_cu121    pytorch\n"
    )
    assert machine.requirements == (
        "numpy==1.26.4",
        "torch==2.1.0",
        "torchvision==0.16.0",
        "tqdm==4.66.1",
    )
    assert machine.torch == "2.1.0"


def test_collect_envs_conda_lines_pin_python_distributions_only() -> None:
    # A conda install's collect_env lists mkl, pytorch-cuda and pytorch-mutex under
    # [conda]: each was pinned, and every cell lacked them (infra-error).
    machine = parse_machine(
        "[pip3] numpy==1.26.4\n"
        "[conda] blas                      1.0                         mkl\n"
        "[conda] mkl                       2023.1.0         h213fc3f_46344\n"
        "[conda] numpy                     1.26.4          py310h5f9d8c6_0\n"
        "[conda] pytorch                   2.1.0           py3.10_cuda12.1_cudnn8.9.2_0  pytorch\n"
        "[conda] pytorch-cuda              12.1                 ha16c6d3_5    pytorch\n"
        "[conda] pytorch-mutex             1.0                        cuda    pytorch\n"
        "[conda] torchtriton               2.1.0                     py310    pytorch\n"
    )
    assert machine.requirements == ("numpy==1.26.4", "torch==2.1.0", "triton==2.1.0")


def test_transformers_cli_envs_libraries_are_pinned() -> None:
    # `transformers-cli env`, in most Hugging Face issues: only torch was pinned, and the
    # rerun took whatever transformers (the library the ticket is about) was installed.
    machine = parse_machine(
        "- `transformers` version: 4.36.2\n"
        "- Platform: Linux-5.15.0-91-generic-x86_64-with-glibc2.35\n"
        "- Python version: 3.11.5\n"
        "- Huggingface_hub version: 0.20.1\n"
        "- Safetensors version: 0.4.1\n"
        "- Accelerate version: 0.25.0\n"
        "- Accelerate config: \tnot found\n"
        "- PyTorch version (GPU?): 2.1.2+cu121 (True)\n"
        "- Tensorflow version (GPU?): not installed (NA)\n"
        "- Jax version: not installed (NA)\n"
    )
    assert machine.requirements == (
        "accelerate==0.25.0",
        "huggingface-hub==0.20.1",
        "safetensors==0.4.1",
        "torch==2.1.2+cu121",
        "transformers==4.36.2",
    )
    assert machine.python == "3.11"


def test_a_pip_list_table_is_packages_but_an_editable_install() -> None:
    # `pip list`, as often pasted as `pip freeze`: only torch was pinned (its row read as
    # prose, `torch 2.2.0`), and torchvision, whose import the ticket said crashed, was not,
    # nor was a TODO left for the packages.
    machine = parse_machine(
        "Package            Version      Editable project location\n"
        "------------------ ------------ -------------------------\n"
        "mylib              0.1.0        /home/me/mylib\n"
        "numpy              1.26.4\n"
        "torch              2.2.0\n"
        "torchvision        0.17.0\n"
        "\nIt segfaults.\n"
    )
    assert machine.requirements == ("numpy==1.26.4", "torch==2.2.0", "torchvision==0.17.0")


def test_an_environment_written_as_a_markdown_list_is_read() -> None:
    # `transformers-cli env`'s output, pasted in most Hugging Face issues, and an issue
    # template's own list: capture said "the log does not say" the Python version and
    # "the log says nothing about its machine", and pinned nothing.
    machine = parse_machine(
        "### System Info\n\n"
        "- `transformers` version: 4.36.2\n"
        "- Platform: Linux-5.15.0-91-generic-x86_64-with-glibc2.35\n"
        "- Python version: 3.10.12\n"
        "- PyTorch version (GPU?): 2.1.2+cu121 (True)\n"
        "* **OS**: Ubuntu 22.04\n"
        "+ numpy==1.26.4\n"
    )
    assert (machine.python, machine.python_full) == ("3.10", "3.10.12")
    assert machine.torch == "2.1.2+cu121"
    assert machine.os == "Ubuntu 22.04"
    assert machine.requirements == ("numpy==1.26.4", "torch==2.1.2+cu121", "transformers==4.36.2")


def test_a_quoted_collect_env_reads_as_the_bare_one() -> None:
    # GitHub's "Quote reply" puts `> ` before every line of the block it quotes.
    bare = (
        "PyTorch version: 2.1.0+cu121\n"
        "Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)\n"
        "OS: Ubuntu 22.04.3 LTS (x86_64)\n"
        "GPU models and configuration: \nGPU 0: NVIDIA A100-SXM4-80GB\n"
        "[pip3] numpy==1.26.2\n"
    )
    quoted = "".join(f"> {line}\n" for line in bare.splitlines())
    assert parse_machine(bare).said_anything
    assert parse_machine(quoted) == parse_machine(bare)
    assert parse_machine(">> " + quoted.replace("\n> ", "\n>> ")) == parse_machine(bare)


def test_a_freeze_option_line_is_not_taken_for_a_list_item() -> None:
    # `-e` is pip's, not Markdown's: no space follows the dash.
    machine = parse_machine("-e git+https://github.com/me/mylib@abc#egg=mylib\nsix==1.16.0\n")
    assert machine.requirements == ("six==1.16.0",)


def test_a_ticket_that_says_nothing_says_nothing() -> None:
    read = read_ticket("it crashes sometimes, please help\n")
    assert read.failure.outcome is None
    assert read.command is None
    assert not read.machine.said_anything


def test_a_phase_is_expected_only_where_the_spec_gets_markers_that_report_it() -> None:
    # pytest's report names the failing test, but the command is no pytest: no pytest
    # preset goes into the spec, and "reported by the markers below" named none; then an
    # expected phase no run reports made every attempt not-reproduced: a TODO item.
    text = (
        "$ python run_suite.py\n____ test_x ____\nE   ValueError: bad\n"
        "FAILED tests/test_io.py::test_x - ValueError: bad\n"
    )
    draft = skeleton(read_ticket(text), "ticket.txt")
    assert draft.presets == ()
    assert "phase" not in draft.expect
    assert any(
        i.startswith("expect.phase: the log places the failure at tests/") for i in draft.todo
    )


def test_the_markers_a_phase_comes_from_are_above_it_in_the_spec() -> None:
    # `phase: epoch  # reported by the markers below`, under the markers: line.
    text = (DATA / "tickets" / "pytorch-issue-collect-env.md").read_text()
    written = render_spec(skeleton(read_ticket(text), "issue.md"))
    markers = written.index("\nmarkers: [{preset: lightning}]")
    phase = written.index("\n  phase: train  # reported by the markers above;")
    assert markers < phase


def test_a_setup_script_before_the_program_is_not_the_command() -> None:
    text = (
        "$ ./install_deps.sh\n$ python train.py --epochs 1\n"
        'Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n'
        "ValueError: x\n"
    )
    assert read_ticket(text).command == "python train.py --epochs 1"


def test_the_command_is_the_prompt_that_ran_the_failure_not_one_that_showed_the_machine() -> None:
    # The first prompt, "the windows box where it works", was taken, and the spec
    # lost `--bs 128`; a quoted `python -m torch.utils.collect_env` (it passes) was the
    # command of another ticket.
    windows_first = (
        "```\nC:\\proj>python train.py --pin-memory --workers 4\n```\n"
        "no wait, that was the windows box where it works. On the Linux box:\n```\n"
        "(base) alice@gpu01:~/proj$ python train.py --pin-memory --workers 4 --bs 128\n"
        "epoch 1 step 40 loss 0.3\nTraceback (most recent call last):\n"
        '  File "/home/alice/proj/train.py", line 55, in <module>\nValueError: x\n```\n'
        "$ python train.py --workers 0  # passes\n"
    )
    assert read_ticket(windows_first).command == (
        "python train.py --pin-memory --workers 4 --bs 128"
    )
    machine_first = (
        "`python -m torch.utils.collect_env`:\n```\nPyTorch version: 2.2.1+cu121\n```\n"
        "Running `python -m mypkg.finetune --devices 2` gives:\n```\n"
        "Traceback (most recent call last):\n"
        '  File "/work/mypkg/finetune.py", line 120, in main\nValueError: x\n```\n'
    )
    assert read_ticket(machine_first).command == "python -m mypkg.finetune --devices 2"
    for shown in (
        "$ python -m pip list",
        "$ pip freeze",
        '$ python -c "import torch; print(torch.__version__)"',
        "$ accelerate env",
    ):
        assert read_ticket(f"{shown}\n$ python t.py\nValueError: x\n").command == "python t.py"


def _expects_crash(read: Ticket, signal: str, where: str) -> None:
    """The ticket reads as a crash by `signal` in `where`, and its spec expects just that,
    as a live run of the same crash reports it."""
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", signal, where)
    assert skeleton(read, "t.md").expect == {"outcome": "crash", "signal": signal, "where": where}


def test_a_workers_own_report_of_its_signal_is_a_crash_in_the_worker() -> None:
    # torch's handler in the worker names the signal; the main process's "exited
    # unexpectedly" names none: the spec expected `error RuntimeError`, which no live run
    # of the same crash (crash SIGSEGV (worker)) matched.
    read = read_ticket(
        "$ python train.py --workers 4\n"
        "ERROR: Unexpected segmentation fault encountered in worker.\n"
        " Traceback (most recent call last):\n"
        '  File "/home/alice/proj/train.py", line 55, in <module>\n'
        "RuntimeError: DataLoader worker (pid(s) 5511) exited unexpectedly\n"
    )
    _expects_crash(read, "SIGSEGV", "worker")
    bus = read_ticket(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
    )
    assert (bus.failure.signal, bus.failure.where) == ("SIGBUS", "worker")


def test_one_pasted_lightning_bar_gives_the_phase_and_step_a_lone_step_line_does_not() -> None:
    # A terminal's copy of a bar redrawn with \r holds its last state only: one line, which
    # read as no progress at all (two lines were needed).
    bar = "Epoch 0:  37%|███▋      | 115/312 [00:41<01:10,  2.80it/s, loss=1.23]\n"
    read = read_ticket(f"$ python fit.py\n{bar}Traceback (most recent call last):\nValueError: x\n")
    assert read.presets == ("lightning",)
    assert (read.failure.phase, read.failure.step) == ("train", 115)
    prose = read_ticket("Step 3: run it.\n$ python fit.py\nValueError: x\n")
    assert (prose.presets, prose.failure.step) == ((), None)


def test_what_no_index_serves_is_a_todo_naming_it_not_left_out_without_a_word() -> None:
    # A wheel from the sender's disk, an editable install from git and an older pip
    # list's row with its folder were left out silently (the last pinned, myproj==0.1.0,
    # which no index has), though the crash was in libmyop.so.
    read = read_ticket(
        "$ python train.py\nSegmentation fault (core dumped)\n```\nnumpy==1.26.2\n"
        "myop @ file:///home/bob/ext/dist/myop-0.1-cp310-cp310-linux_x86_64.whl\n"
        "-e git+https://github.com/bob/proj.git@abc123#egg=proj\n```\n"
        "```\nPackage            Version\n------------------ -------\n"
        "torch              2.3.0\nmyproj             0.1.0   /home/alice/proj\n```\n"
    )
    assert read.machine.requirements == ("numpy==1.26.2", "torch==2.3.0")
    assert read.machine.not_pinned == (
        "myop: a wheel from the sender's disk (myop-0.1-cp310-cp310-linux_x86_64.whl)",
        "proj: installed editable from git+https://github.com/bob/proj.git@abc123",
        "myproj: installed from the folder /home/alice/proj",
    )
    todo = skeleton(read, "t.md").todo
    assert any(t.startswith("environment.packages: what the log's machine had") for t in todo)
    assert any("myop: a wheel from the sender's disk" in t for t in todo)


def test_the_os_said_in_prose_is_compared_and_windows_spawn_is_said() -> None:
    # "On Windows 11" was neither read nor compared, and a pickling failure of the
    # DataLoader's spawned workers gave no hint that Linux starts them otherwise.
    read = read_ticket("On Windows 11, Python 3.11.5, torch 2.1.0+cpu.\nAttributeError: x\n")
    assert read.machine.os == "Windows 11"
    ours: dict[str, JsonValue] = {
        "os": {"system": "Linux", "distribution": "Debian GNU/Linux 12 (bookworm)"},
        "python": {"version": "3.11.7"},
    }
    lines = compare_machine(read.machine, ours)
    assert "  DIFFERS  OS: log Windows 11; here Debian GNU/Linux 12 (bookworm)" in lines
    assert any("start by spawn, not by Linux's fork" in line for line in lines)
    ubuntu: dict[str, JsonValue] = {"os": {"system": "Linux", "distribution": "Ubuntu 22.04 LTS"}}
    assert compare_machine(parse_machine("Ubuntu 22.04 LTS box"), ubuntu) == [
        "the log's machine and this one:",
        "  same     OS: log Ubuntu 22.04 LTS; here Ubuntu 22.04 LTS",
    ]
    # Two said: which one failed is the reader's call.
    assert parse_machine("fails on Ubuntu 22.04, works on Ubuntu 20.04").os is None


def test_a_standard_library_frames_path_gives_the_python_version() -> None:
    # faulthandler's frame of ctypes: no site-packages path, no Versions block.
    text = (
        "$ python crash.py --use-native\nFatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f3a2b8f1740 (most recent call first):\n"
        '  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at\n'
        '  File "/home/bob/segv/crash.py", line 8 in <module>\n'
    )
    assert read_ticket(text).machine.python == "3.11"
    # A free-threaded build's lib/python3.13t/ (pythonargs.INTERPRETER_LIB's rule): its
    # version was missed, and --from-log read none.
    free = text.replace("python3.11", "python3.13t")
    assert parse_machine(free).python == read_ticket(free).machine.python == "3.13"


def test_torch_versions_said_in_prose_are_pinned_only_when_one_is_said() -> None:
    # "worked with 2.0.1, after upgrading to 2.1.0 it segfaults": the first was the one
    # that worked, and it was pinned (review).
    two = parse_machine("It worked with torch 2.0.1; after upgrading to torch 2.1.0 it segfaults.")
    assert (two.torch, two.requirements) == (None, ())
    one = parse_machine("Since torch 2.1.0 it segfaults (torch 2.1.0 on CPU too).")
    assert one.requirements == ("torch==2.1.0",)


def test_a_setting_on_the_tickets_command_line_is_written_and_shown() -> None:
    # The ticket's `MAX_TOKENS=2048 python train.py` became `${{ env.MAX_TOKENS }}` and
    # `MAX_TOKENS=***` in what capture printed: a setting read as a secret by its name.
    text = (
        "$ MAX_TOKENS=2048 HF_TOKEN=hf_zzTopSecret999zzTopSecret999 python train.py\n"
        'Traceback (most recent call last):\n  File "train.py", line 4, in <module>\n'
        "ValueError: MAX_TOKENS 2048 is over the context\n"
    )
    draft = skeleton(read_ticket(text), "ticket.txt")
    env = {line.name: line.value for line in draft.env}
    assert env == {"MAX_TOKENS": "2048", "HF_TOKEN": "${{ env.HF_TOKEN }}"}
    assert draft.expect["message"] == r"MAX_TOKENS \d+ is over the context"
    assert "MAX_TOKENS 2048 is over the context" in draft.description
    assert "zzTop" not in draft.title + draft.description


def test_a_worker_crash_ticket_expects_the_signal_and_where_not_the_main_process_exception() -> (
    None
):
    # The main process's RuntimeError ("DataLoader worker ... is killed by signal") and the
    # main loop's step 7 went into expect: a rerun of the same worker SIGSEGV raised
    # ConnectionResetError and was not-reproduced in 3/3. The live capture's rule.
    text = (
        "$ python train.py --workers 2 --decoder native\n"
        "train step 1\ntrain step 7\n"
        "ERROR: Unexpected segmentation fault encountered in worker.\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 23, in main\n'
        "    for step, (x, y) in enumerate(dl, 1):\n"
        "RuntimeError: DataLoader worker (pid 31522) is killed by signal: Segmentation fault.\n"
    )
    draft = skeleton(read_ticket(text), "ticket.md")
    assert draft.expect == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "worker",
        "phase": "train",
    }
    assert draft.expect_comments["signal"] == "in a DataLoader worker"
    assert draft.expect_comments["phase"].endswith(
        "the main loop was at step 7; workers run ahead, so no step is expected"
    )
    # The ticket still says what the main process raised, in the description.
    assert "`RuntimeError`: DataLoader worker (pid 31522)" in draft.description


def test_a_worker_crash_after_steps_of_no_phase_says_why_it_expects_no_step() -> None:
    # `step 2` lines name no phase: the comment went on `phase`, absent, and was dropped.
    text = (
        "$ python train.py --workers 2\n"
        "step 0\nstep 1\nstep 2\n"
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.\n"
    )
    draft = skeleton(read_ticket(text), "ticket.md")
    assert draft.expect == {"outcome": "crash", "signal": "SIGSEGV", "where": "worker"}
    assert draft.expect_comments["where"] == (
        "the main loop was at step 2; workers run ahead, so no step is expected"
    )


def test_the_phase_is_named_as_a_run_of_the_same_output_names_it() -> None:
    # `eval step 3/50` then a segfault: the skeleton expected phase `validation`, and the
    # same program run for real failed at `eval:3`, not-reproduced.
    from reprospec.process.markers import compile_markers, match_markers
    from reprospec.spec.presets import PRESETS

    live, _ = compile_markers(PRESETS["steps"].markers)
    for word in ("eval", "val", "valid", "evaluation", "training", "Eval"):
        lines = [f"{word} step {n}/50" for n in (1, 2, 3)]
        read = read_ticket("\n".join([*lines, "Fatal Python error: Segmentation fault", ""]))
        phases = [e["phase"] for line in lines for e in match_markers(live, line) if e["phase"]]
        assert (read.failure.phase, read.failure.step) == (phases[-1], 3), word
        assert read.failure.phase == word


def test_a_wheel_pip_freeze_installed_from_a_url_is_read_with_its_version() -> None:
    # `torch @ https://.../torch-2.1.0%2Bcu121-...whl` was dropped: the skeleton pinned
    # numpy alone, and the machine comparison had nothing to say of the torch build.
    machine = parse_machine(
        "torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp311-cp311-"
        "linux_x86_64.whl\nnumpy==1.26.0\n"
        "mylib @ git+https://github.com/me/mylib@abc123\n"
        "other @ https://example.com/wheels/notother-1.0-py3-none-any.whl\n"
        # A wheel from the sender's disk was pinned (some_pkg==0.1), which no index has.
        "some_pkg @ file:///home/bob/wheels/some_pkg-0.1-py3-none-any.whl\n"
    )
    assert machine.torch == "2.1.0+cu121"
    assert machine.requirements == ("numpy==1.26.0", "torch==2.1.0+cu121")


def test_a_log_that_lists_packages_only_says_so_under_the_machine_heading() -> None:
    from reprospec.capture.fromlog import compare_machine

    # The probe always answers for the packages asked (torch and numpy by default): the
    # sentence was only ever said to a probe without them, and a real one's read as the
    # heading over the package rows alone.
    theirs = parse_machine("numpy==1.26.0\n")
    ours: dict[str, JsonValue] = {
        "python": {"version": "3.11.7"},
        "packages": {"torch": None, "numpy": "1.26.0"},
    }
    sentence = (
        "the log names no torch, CUDA, GPU, driver, Python or OS of its machine: its "
        "packages are in the spec's environment.packages"
    )
    assert compare_machine(theirs, ours) == [
        sentence,
        "  same     packages: the spec's 1 pin, all here",
    ]
    ours["packages"] = {"torch": None, "numpy": None}
    assert compare_machine(theirs, ours) == [
        sentence,
        "  DIFFERS  numpy: log 1.26.0; here not installed",
    ]


def test_a_tickets_option_of_several_values_is_one_axis_or_kept_and_said_so() -> None:
    # `--layers 64 128 256` was `layers: [64]` read back before `128 256`; `--files a.csv
    # b.csv` an axis `files: [a.csv]`, b.csv left after it.
    text = (
        "$ python train.py --layers 64 128 256 --files a.csv b.csv --lr 0.1\n"
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "ValueError: x\n"
    )
    draft = skeleton(read_ticket(text), "ticket.txt")
    assert [(a.name, a.values) for a in draft.matrix] == [
        ("layers", ("64 128 256",)),
        ("lr", (0.1,)),
    ]
    assert draft.command == (
        "python train.py --layers ${{ matrix.layers }} --files a.csv b.csv --lr ${{ matrix.lr }}"
    )
    assert draft.header[-1].startswith("--files a.csv b.csv kept as written, no axis: ")


@pytest.mark.parametrize(
    ("text", "title"),
    [
        # A hang has no signal or exception: the outcome once stood in for it twice.
        (
            "[rank0]: train step 119 loss=1.2\n[rank0]: train step 120 loss=1.1\n"
            "Timeout (0:10:00)!\nThread 0x00007f1 (most recent call first):\n"
            '  File "/src/train.py", line 88 in step\n  File "/src/train.py", line 120 in main\n',
            "From a ticket: hang at train step 120",
        ),
        ("$ python app.py\nSegmentation fault (core dumped)\n", "From a ticket: crash SIGSEGV"),
        # Progress lines with a step and no phase read `crash SIGSEGV in a worker step
        # 1`, as if the worker crashed at that step, and `crash SIGSEGV step 3`.
        (
            "$ python run.py --num-workers 2\nstep 0: batch (8, 16)\nstep 1: batch (8, 16)\n"
            "RuntimeError: DataLoader worker (pid 6098) is killed by signal: "
            "Segmentation fault.\n",
            "From a ticket: crash SIGSEGV in a worker, main loop at step 1",
        ),
        (
            "$ python app.py\nstep 2: loss 0.2\nstep 3: loss 0.1\n"
            "Segmentation fault (core dumped)\n",
            "From a ticket: crash SIGSEGV at step 3",
        ),
    ],
)
def test_the_title_names_the_outcome_once(text: str, title: str) -> None:
    assert skeleton(read_ticket(text), "ticket.txt").title == title


def test_progress_lines_with_a_step_and_no_phase_are_evidence_step_0_too() -> None:
    # `step 0: ...` lines before a crash were not listed among what the ticket said
    # (only a phase was), and a step 0 lost its number.
    for steps, said in (((0, 1), "step 1"), ((0, 0), "step 0"), ((2, 0), "step 0")):
        lines = "".join(f"step {n}: batch (8, 16)\n" for n in steps)
        read = read_ticket(f"$ python app.py\n{lines}Segmentation fault (core dumped)\n")
        assert f"the progress lines: {said}" in read.evidence
    lines = "train step 0 loss=1\ntrain step 0 loss=1\n"
    read = read_ticket(f"$ python app.py\n{lines}Segmentation fault (core dumped)\n")
    assert "the progress lines: train step 0" in read.evidence


@pytest.mark.parametrize(
    ("prose", "said"),
    [
        ("It segfaults roughly 1 in 3 runs, only with workers.", "1 in 3 runs"),
        ("Happens about 30% of the time on our cluster.", "30% of the time"),
        ("The crash is intermittent and goes away with num_workers=0.", "intermittent"),
    ],
)
def test_a_ticket_that_says_it_fails_only_sometimes_gives_a_repeated_spec_with_a_rate(
    prose: str, said: str
) -> None:
    """A spec of a ticket that says `1 in 3 runs` ran one attempt, which passed by chance
    two times in three and read `not-reproduced`."""
    text = (
        f"{prose}\n\n"
        "$ python train.py --workers 4\n"
        "RuntimeError: DataLoader worker (pid 28311) is killed by signal: Segmentation fault.\n"
    )
    ticket = read_ticket(text)
    assert ticket.flaky == said
    draft = skeleton(ticket, "issue.md")
    assert draft.repeat == 20
    assert draft.expect["rate"] == ">0"
    assert draft.expect_comments["rate"].startswith(
        f"the ticket says it fails only sometimes ({said!r}): one attempt may pass"
    )


@pytest.mark.parametrize(
    "clock",
    [
        "",
        "2026-12-01T10:00:02.1234567Z ",
        "[2026-12-01T10:00:02.123Z] ",
        "2026-12-01 10:00:02,123 ",
    ],
)
def test_a_ci_log_is_read_without_its_colours_and_the_clock_of_each_line(clock: str) -> None:
    # A new user's paste of a GitHub Actions log: pytest's colours and the runner's clock on
    # every line lost the failing test, pytest's header's pins and the command, and the
    # skeleton expected `error` of `TODO-the-command-that-failed`.
    lines = [
        "\x1b[36;1mpytest -x tests/test_io.py\x1b[0m",
        "platform linux -- Python 3.10.14, pytest-8.2.0, pluggy-1.5.0",
        "\x1b[1m\x1b[31mE       AssertionError: assert 1 == 2\x1b[0m",
        "\x1b[31mFAILED\x1b[0m tests/test_io.py::\x1b[1mtest_read\x1b[0m"
        " - AssertionError: assert 1 == 2",
        "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ done",
    ]
    read = read_ticket("".join(f"{clock}{line}\n" for line in lines))
    assert read.command is not None
    assert read.command.startswith("pytest -x tests/test_io.py")
    assert (read.failure.exception, read.failure.phase) == (
        "AssertionError",
        "tests/test_io.py::test_read",
    )
    assert read.machine.requirements == ("pluggy==1.5.0", "pytest==8.2.0")


def test_a_flaky_ticket_whose_failure_the_reader_does_not_know_still_repeats(
    tmp_path: Path,
) -> None:
    # A new user's ticket: "it gets stuck ... maybe 1 in 5 runs", and a log that shows no
    # failure. capture said "the ticket says it fails only sometimes", yet wrote one
    # attempt: the outcome filled in by hand (hang) then missed four runs in five. The
    # reporter's "gets stuck" is the hang the skeleton expects, where it asked for one.
    text = (
        "It gets stuck at validation, maybe 1 in 5 runs.\n\n"
        "```\n$ python train.py\nepoch 0 done\nvalidating\n```\n"
    )
    draft = skeleton(read_ticket(text), "issue.md")
    assert draft.expect["outcome"] == "hang"
    assert (draft.repeat, draft.expect["rate"]) == (20, ">0")
    spec = tmp_path / "issue.yaml"
    spec.write_text(render_spec(draft))
    (tmp_path / "train.py").write_text("")
    checked = reprospec.validate(spec)
    assert not [p for p in checked.problems if "rate" in str(p)], checked.problems


@pytest.mark.parametrize(
    "prose",
    [
        "Not flaky: it fails every single time, not just sometimes.",
        "About 1 in 3 runs? No, every time actually.",
        "It is not intermittent; it crashes always.",
        "I thought it was flaky, but it fails consistently on every machine.",
    ],
)
def test_a_ticket_that_denies_it_is_flaky_gives_a_spec_of_one_attempt(prose: str) -> None:
    """A ticket's "Not flaky", "not just sometimes" or later "No, every time" read as the claim
    that it fails only sometimes: a 20-attempt spec expecting `rate: '>0'`."""
    text = f"{prose}\n\n$ python loader.py\nTypeError: lr must be a float, got str\n"
    ticket = read_ticket(text)
    assert ticket.flaky is None
    assert not any("only sometimes" in said for said in ticket.evidence)
    draft = skeleton(ticket, "issue.md")
    assert draft.repeat is None
    assert "rate" not in draft.expect


@pytest.mark.parametrize(
    ("prose", "said"),
    [
        ("Not deterministic: it fails sometimes.", "sometimes"),
        ("It fails about 1 in 3 runs.\n\nI always use Python 3.11.", "1 in 3 runs"),
        ("It does not fail every time, only 1 in 5 runs.", "1 in 5 runs"),
    ],
)
def test_a_flaky_word_stands_where_nothing_takes_it_back(prose: str, said: str) -> None:
    # A denial of the other reading, or an "always" of another paragraph, takes nothing back.
    text = f"{prose}\n\n$ python loader.py\nTypeError: lr must be a float, got str\n"
    assert read_ticket(text).flaky == said


def test_a_traceback_s_own_words_are_not_the_reporter_s() -> None:
    # A frame's source line (`if flaky:`) is the program's code, not the reporter's prose.
    text = (
        "Traceback (most recent call last):\n"
        '  File "t.py", line 3, in <module>\n'
        "    retry(sometimes=True)\n"
        "ValueError: bad\n"
    )
    ticket = read_ticket(text)
    assert ticket.flaky is None
    assert skeleton(ticket, "issue.md").repeat is None


@pytest.mark.parametrize(
    "advice",
    [
        'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
        "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ],
)
def test_a_programs_advice_for_more_information_is_no_setting(advice: str) -> None:
    # A new user's torch.compile ticket: dynamo's advice after the traceback became two
    # TODO items, "the ticket's prose sets TORCH_LOGS=+dynamo", which the reporter never set.
    text = (
        "```\n$ python repro.py\nTraceback (most recent call last):\n"
        '  File "repro.py", line 7, in <module>\n'
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        f"AssertionError: freezing requires no_grad\n\n{advice}\n```\n"
        "I have OMP_NUM_THREADS=8 exported.\n"
    )
    assert read_ticket(text).settings == (("OMP_NUM_THREADS", "8"),)


def test_a_variable_the_prose_sets_is_a_todo_of_the_skeleton() -> None:
    """`MALLOC_ARENA_MAX=2 exported in my shell` got no word in the skeleton, so its
    reader never learnt the repro may need it (lo37). Not a variable the command line
    sets (written in environment.env), one the program's message or advice names, a pin."""
    text = (
        "Segfaults at startup. I have MALLOC_ARENA_MAX=2 exported in my shell, and it\n"
        "crashes with CUDA_LAUNCH_BLOCKING=1 set too (numpy==1.26, lr=0.1, N=3).\n"
        "HF_TOKEN=hf_zzTopSecret999 is set as well.\n\n"
        "$ OMP_NUM_THREADS=4 python train.py\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    SEED=1\n"
        "RuntimeError: bad BATCH_SIZE=64\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    ticket = read_ticket(text)
    assert ticket.settings == (
        ("MALLOC_ARENA_MAX", "2"),
        ("CUDA_LAUNCH_BLOCKING", "1"),
        ("HF_TOKEN", "hf_zzTopSecret999"),
        ("OMP_NUM_THREADS", "4"),
    )
    draft = skeleton(ticket, "issue.md")
    assert [line.name for line in draft.env] == ["OMP_NUM_THREADS"]
    prose = [item for item in draft.todo if item.startswith("environment.env.")]
    assert prose == [
        "environment.env.MALLOC_ARENA_MAX: the ticket's prose sets MALLOC_ARENA_MAX=2, its"
        " command line does not: set it here if the failure needs it, or drop this item",
        "environment.env.CUDA_LAUNCH_BLOCKING: the ticket's prose sets CUDA_LAUNCH_BLOCKING=1,"
        " its command line does not: set it here if the failure needs it, or drop this item",
        "environment.env.HF_TOKEN: the ticket's prose sets HF_TOKEN (a secret: its value is"
        " not written), its command line does not: set it here if the failure needs it, or"
        " drop this item",
    ]
    assert "zzTop" not in render_spec(draft)


# pytest -n 1's output of a test that segfaults (pytest-xdist 3.8, stdout and stderr as a
# terminal shows them: faulthandler's header runs on after the progress dot).
XDIST_CRASH = """\
$ pytest -n 1 tests/test_x.py
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
plugins: rerunfailures-16.7, xdist-3.8.0, flaky-3.8.1
created: 1/1 worker
1 worker [3 items]

.Fatal Python error: Segmentation fault

Current thread 0x00007f181da94b80 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/src/tests/test_x.py", line 7 in test_y
[gw0] node down: Not properly terminated
F
replacing crashed worker gw0
.                                                                        [100%]
=================================== FAILURES ===================================
__________________________________ tests/test_x.py ___________________________________
[gw0] linux -- Python 3.11.7 /usr/bin/python
worker 'gw0' crashed while running 'tests/test_x.py::test_y[a] b]'
=========================== short test summary info ============================
FAILED tests/test_x.py::test_y[a] b] - worker 'gw0' crashed while running 'tests/test_x...
========================= 1 failed, 2 passed in 4.44s ==========================
"""


def test_a_pytest_xdist_workers_crash_is_a_child_s_at_the_test_xdist_names() -> None:
    """xdist's crash report was not read (`no failure found`), the signal neither: the
    header ran on after pytest's progress dot; `plugins: ..., flaky-3.8.1` read as the
    reporter's word that it is flaky (lo37)."""
    read = read_ticket(XDIST_CRASH)
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", "SIGSEGV", "child")
    assert failure.phase == read.test == read.xdist_crash == "tests/test_x.py::test_y[a] b]"
    assert read.flaky is None
    assert "pytest-xdist: a worker crashed while running tests/test_x.py::test_y[a] b]" in (
        read.evidence
    )
    draft = skeleton(read, "issue.md")
    assert draft.expect_comments["signal"] == "in a pytest-xdist worker"
    # Without faulthandler's dump (`-p no:faulthandler`), the crash and its test still.
    plain = XDIST_CRASH.replace(".Fatal Python error: Segmentation fault", ".")
    assert read_ticket(plain).failure.outcome == "crash"
    assert read_ticket(plain).failure.phase == "tests/test_x.py::test_y[a] b]"
    # ... expected in a child, as the title says and a live run of it reads: without the
    # signal, `where` was left out, and the main process's own crash matched.
    unsigned = skeleton(read_ticket(plain), "issue.md")
    assert unsigned.expect == {
        "outcome": "crash",
        "where": "child",
        "phase": "tests/test_x.py::test_y[a] b]",
    }
    assert unsigned.expect_comments["where"] == "in a pytest-xdist worker"
    assert "pytest-xdist worker" in unsigned.title


def test_a_pytest_v_log_of_a_crash_names_the_test_running_when_it_died() -> None:
    """A crash has no FAILED line: the skeleton named no test, where a live run's pytest
    markers give the one -v's lines were running (lo37); without -v nothing names it."""
    text = (
        "$ pytest -v tests/test_x.py\n"
        "tests/test_x.py::test_ok PASSED                                    [ 33%]\n"
        "tests/test_x.py::test_y[a] b] Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f181da94b80 (most recent call first):\n"
        '  File "/src/tests/test_x.py", line 7 in test_y\n'
        "Segmentation fault (core dumped)\n"
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.failure.phase == read.test == "tests/test_x.py::test_y[a] b]"
    assert "the test running when it died: tests/test_x.py::test_y[a] b]" in read.evidence
    draft = skeleton(read, "issue.md")
    assert draft.expect["phase"] == "tests/test_x.py::test_y[a] b]"
    assert draft.expect_comments["phase"] == "the test pytest -v's lines were running when it died"
    quiet = "$ pytest tests/test_x.py\ntests/test_x.py .Fatal Python error: Segmentation fault\n"
    assert read_ticket(quiet).failure.signal == "SIGSEGV"
    assert read_ticket(quiet).failure.phase is None


FILLED: dict[str, JsonValue] = {
    "command": "python train.py",
    "environment.workdir": ".",
    "environment.python": "3.11",
    "environment.packages": [],
    "expect.outcome": "error",
    "files": ["data.csv"],
}


@pytest.mark.parametrize(
    "text",
    [
        *(ticket(path.name) for path in sorted(TICKETS.iterdir())),
        "it crashes sometimes, please help\n",
    ],
)
def test_each_todo_is_a_spec_key_and_the_skeleton_validates_once_they_are_filled(
    tmp_path: Path, text: str
) -> None:
    # Before: "the program's files and data (...)" was listed as a TODO of its own, though
    # no key of the spec holds them: `files` does (and a file it lists must be there).
    draft = skeleton(read_ticket(text), "ticket.txt")
    document = yaml.safe_load(render_spec(draft))
    for item in draft.todo:
        key = item.partition(":")[0]
        assert key in FILLED, item
        *parents, last = key.split(".")
        at = document
        for name in parents:
            at = at.setdefault(name, {})
        at[last] = FILLED[key]
    (tmp_path / "data.csv").write_text("x\n1\n")
    spec = tmp_path / "filled.yaml"
    spec.write_text(yaml.safe_dump(document))
    checked = reprospec.validate(spec)
    assert not checked.problems, checked.problems


def test_a_pasted_parametrized_tests_id_with_spaces_is_read_whole() -> None:
    """pt35: `FAILED t.py::test_y[1-foo bar] - ...` was no test (`\\S+` stopped at the space)."""
    text = (
        "$ pytest -v t.py\n"
        "t.py::test_y[1-foo bar] FAILED                               [100%]\n"
        "FAILED t.py::test_y[1-foo bar] - AssertionError: foo bar\n"
    )
    assert read_ticket(text).test == "t.py::test_y[1-foo bar]"


@pytest.mark.parametrize("before", [" ", "\x00"])
def test_a_worker_s_traceback_after_torch_s_error_line_keeps_its_cause(before: str) -> None:
    # Torch ends `ERROR: Unexpected segmentation fault encountered in worker.` with a
    # NUL, which a paste from a terminal shows as a space before `Traceback`: that block
    # was not read, and the chain lost its cause, `... is killed by signal: ...`.
    text = (
        "```\n$ python run.py --num-workers 2\n"
        "ERROR: Unexpected segmentation fault encountered in worker.\n"
        f"{before}Traceback (most recent call last):\n"
        '  File "/v/torch/utils/data/_utils/signal_handling.py", line 73, in handler\n'
        "    _error_if_any_worker_fails()\n"
        "RuntimeError: DataLoader worker (pid 6098) is killed by signal: Segmentation fault. \n"
        "\nThe above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/src/run.py", line 22, in main\n'
        "    for step, (x, y) in enumerate(loader):\n"
        "RuntimeError: DataLoader worker (pid(s) 6098) exited unexpectedly\n```\n"
    )
    chain = read_ticket(text).failure.chain
    assert [(e.type, e.link) for e in chain] == [("RuntimeError", "cause"), ("RuntimeError", None)]
    assert (
        chain[0].message == "DataLoader worker (pid 6098) is killed by signal: Segmentation fault."
    )


@pytest.mark.parametrize("fence", ["```", "~~~~", "```text"])
def test_a_fenced_traceback_s_message_leaves_its_closing_fence_out(fence: str) -> None:
    # Before: the last exception's message ran on into the ticket's closing fence,
    # `boom went the loader\n```` (lo36).
    text = (
        f"It crashes:\n\n{fence}\nTraceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n    main()\n'
        "RuntimeError: boom went the loader\nsecond line of it\n"
        f"{fence[:4] if fence.startswith('~') else '```'}\n\nThanks\n"
    )
    failure = read_ticket(text).failure
    assert failure.chain[-1].message == "boom went the loader\nsecond line of it"
    assert failure.message == "boom went the loader"
    # A fence run on at the end of the message's line goes too.
    run_on = (
        'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n'
        "ValueError: bad```\n"
    )
    assert read_ticket(run_on).failure.chain[-1].message == "bad"


def test_pytest_s_header_pins_pytest_and_its_plugins() -> None:
    """`platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0` and `plugins: ...`
    said the versions, yet the skeleton asked for environment.packages as a TODO.
    A plugin is named without its `pytest-`, put back where the plugin is known to be
    pytest-X; one known to be its own distribution stays so, and one of neither is left
    out: a live log's `reprospec-0.1.0` was pinned as `pytest-reprospec`, which nothing has."""
    machine = parse_machine(XDIST_CRASH)
    assert machine.python == "3.11"
    assert machine.requirements == (
        "flaky==3.8.1",
        "pluggy==1.7.0",
        "pytest-rerunfailures==16.7",
        "pytest-xdist==3.8.0",
        "pytest==9.2.0",
    )
    draft = skeleton(read_ticket(XDIST_CRASH), "issue.md")
    assert draft.packages == machine.requirements
    assert not any(item.startswith("environment.packages") for item in draft.todo)
    # -v's header ends with the interpreter; a pip freeze's version is the one pinned.
    verbose = (
        "platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0 -- /usr/bin/python3\n"
        "plugins: anyio-4.3.0, cov-5.0.0, unknownthing-1.0, pytest_httpbin-2.0\n"
        "pytest==8.2.1\n"
    )
    assert parse_machine(verbose).requirements == (
        "anyio==4.3.0",
        "pluggy==1.5.0",
        "pytest-cov==5.0.0",
        "pytest==8.2.1",
        "pytest_httpbin==2.0",
    )
    assert parse_machine("plugins: see the list below\n").requirements == ()
    # Our own plugin is the engine's in every rerun: a pin of the sender's reprospec made any
    # other version's rerun an infra-error.
    ours = parse_machine("plugins: xdist-3.8.0, reprospec-0.1.0\n").requirements
    assert ours == ("pytest-xdist==3.8.0",)


def test_a_phase_only_a_frame_names_is_a_todo_item_not_an_expected_phase() -> None:
    # No marker of the spec reports `train` (only the frame `training_step` says it): the
    # skeleton expected phase: train, and with its TODOs filled every attempt was
    # not-reproduced, `@ train` against an unreported phase.
    read = read_ticket(
        "`python run_clm.py`\n\n"
        "Traceback (most recent call last):\n"
        '  File "/home/g/run_clm.py", line 4, in train\n'
        "    training_step()\n"
        '  File "/home/g/run_clm.py", line 2, in training_step\n'
        "    raise RuntimeError('once')\n"
        "RuntimeError: once\n"
    )
    assert read.failure.phase == "train"
    draft = skeleton(read, "t.md")
    assert "phase" not in draft.expect
    assert [item for item in draft.todo if item.startswith("expect.phase:")] == [
        "expect.phase: the log places the failure at train, which nothing in this spec"
        " reports: add markers or events that report it, then set phase: train; or drop this"
        " item"
    ]


def test_torchruns_report_of_a_rank_killed_by_a_signal_is_a_childs_crash() -> None:
    # The NCCL watchdog aborts rank 1; torchrun says `exitcode: -6` twice and raises
    # ChildFailedError. The skeleton said `# in the main process` (torchrun's) and kept
    # ChildFailedError, where a live run of the command reports a child's SIGABRT.
    text = (
        "$ torchrun --nproc_per_node 2 train_ddp.py\n"
        "[2024-03-11 14:02:17,502] torch.distributed.elastic.multiprocessing.api: [ERROR]"
        " failed (exitcode: -6) local_rank: 1 (pid: 91235) of binary: /usr/bin/python\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : -6 (pid: 91235)\n"
    )
    read = read_ticket(text)
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", "SIGABRT", "child")
    assert [line for line in read.evidence if line.startswith("exit status")] == [
        "exit status -6: killed by SIGABRT (a rank torchrun started)"
    ]
    assert skeleton(read, "t.md").expect == {
        "outcome": "crash",
        "signal": "SIGABRT",
        "where": "child",
    }


def test_torchruns_report_of_a_rank_that_raised_is_that_ranks_error() -> None:
    # torchrun's real stderr of a rank that raised (tests/data/children/): the skeleton
    # expected torchrun's own ChildFailedError, which a live run of the command (error
    # RuntimeError in a child) never matched.
    text = "$ torchrun --nproc_per_node 2 train.py\n" + (
        DATA / "children" / "torchrun-rank-error.stderr.log"
    ).read_text(encoding="utf-8")
    read = read_ticket(text)
    failure = read.failure
    assert (failure.outcome, failure.exception, failure.where) == ("error", "RuntimeError", "child")
    assert skeleton(read, "t.md").expect["exception"] == "RuntimeError"
    # The stack quoted is the rank's, not torchrun's launcher's.
    assert list(read.python_frames) == ["/work/train.py:<module>", "/work/train.py:main"]


def test_the_ranks_torchrun_ended_after_one_failed_are_not_the_crash() -> None:
    # Rank 1 raised; torchrun then sent SIGTERM to rank 0, and its report lists that rank's
    # `exitcode : -15` beside the root cause's 1 (a real `torchrun --nproc_per_node=2` of
    # gloo ranks, trimmed). The skeleton expected `crash SIGTERM in a child`; a live run
    # of the command reads `error ValueError (child)`.
    text = (
        "$ torchrun --nproc_per_node=2 ddp.py\n"
        "step 2 rank 1 sum [1.0, 1.0]\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/tmp/w/ddp.py", line 17, in <module>\n'
        "[rank1]:     main()\n"
        '[rank1]:   File "/tmp/w/ddp.py", line 13, in main\n'
        '[rank1]:     raise ValueError(f"bad batch on rank {rank} at step {step}")\n'
        "[rank1]: ValueError: bad batch on rank 1 at step 2\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/tmp/w/ddp.py", line 10, in main\n'
        "[rank0]:     dist.all_reduce(t)\n"
        "[rank0]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:61643.\n"
        "W1206 11:55:02.797000 514 torch/distributed/elastic/multiprocessing/api.py:1028]"
        " Sending process 3158 closing signal SIGTERM\n"
        "E1206 11:55:02.879000 514 torch/distributed/elastic/multiprocessing/api.py:1002]"
        " failed (exitcode: 1) local_rank: 1 (pid: 3159) of binary: /venv/bin/python3\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n" + child_failed_report("ddp.py")
    )
    read = read_ticket(text)
    failure = read.failure
    assert (failure.outcome, failure.signal) == ("error", None)
    assert (failure.exception, failure.message) == ("ValueError", "bad batch on rank 1 at step 2")
    assert not any("SIGTERM" in line for line in read.evidence)
    assert list(read.python_frames) == ["/tmp/w/ddp.py:<module>", "/tmp/w/ddp.py:main"]
    expect = skeleton(read, "t.md").expect
    assert (expect["outcome"], expect["exception"]) == ("error", "ValueError")
    assert "signal" not in expect


@pytest.mark.parametrize("rank_line", ["  rank      : 1\n", ""])
def test_a_root_cause_naming_no_local_rank_still_sets_torchruns_sigterm_aside(
    rank_line: str,
) -> None:
    # Only torchrun's report is pasted, its root cause's rank line without `(local_rank: 1)`
    # or missing: elastic_exit read the root cause only where it named the local rank, so
    # rank 0's `exitcode : -15 (SIGTERM)` (torchrun ending it) was read as the crash.
    text = (
        "$ torchrun --nproc_per_node=2 ddp.py\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n" + child_failed_report("ddp.py", root_rank=rank_line)
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("error", None)
    assert not any("SIGTERM" in line for line in read.evidence)


def test_subprocess_saying_a_child_died_of_a_signal_is_a_childs_crash() -> None:
    # `CalledProcessError: ... died with <Signals.SIGSEGV: 11>` was read as an error of
    # CalledProcessError, which a live run (crash SIGSEGV in a child) never matched.
    read = read_ticket(
        "Traceback (most recent call last):\n"
        '  File "/w/run_ops.py", line 3, in <module>\n'
        '    subprocess.run(["./op"], check=True)\n'
        "subprocess.CalledProcessError: Command '['./op']' died with <Signals.SIGSEGV: 11>.\n"
    )
    _expects_crash(read, "SIGSEGV", "child")


@pytest.mark.parametrize(
    ("log", "command", "python"),
    [
        # gdb names the binary it started: its version is the only one the log says.
        (
            "Starting program: /usr/bin/python3.10 train.py --workers 4\n"
            "Thread 1 received signal SIGSEGV, Segmentation fault.\n",
            "python train.py --workers 4",
            "3.10",
        ),
        (
            "$ CUDA_VISIBLE_DEVICES=0 /opt/conda/bin/python x.py | tee log\n"
            "Segmentation fault (core dumped)\n",
            "CUDA_VISIBLE_DEVICES=0 python x.py | tee log",
            None,
        ),
        # collect_env says 3.11: which of the two ran is the reader's call.
        (
            "$ python3.10 x.py\nSegmentation fault (core dumped)\n- Python version: 3.11.4\n",
            "python3.10 x.py",
            "3.11",
        ),
        ("$ python3 x.py\nSegmentation fault (core dumped)\n", "python3 x.py", None),
    ],
)
def test_a_command_run_by_a_path_or_a_version_of_python_runs_the_specs_python(
    log: str, command: str, python: str | None
) -> None:
    # `python3.10 train.py` (gdb's /usr/bin/python3.10) was written as the command, which
    # a reader's run sent to PATH's python3.10 (not found), while environment.python was
    # a TODO "the log does not say it".
    read = read_ticket(log)
    assert (read.command, read.machine.python) == (command, python)
    draft = skeleton(read, "t.md")
    assert draft.python == python
    # The spec's command starts with the program the ticket's did (its settings read
    # apart: CUDA_VISIBLE_DEVICES to environment.env).
    program = next(w for w in command.split() if "=" not in w)
    assert draft.command.split()[0] == program


@pytest.mark.parametrize(
    ("log", "command", "python"),
    [
        # The program past its wrappers, each read by its own options: the first
        # word that was no `VAR=value` or `env` was taken (`timeout`, `nice`, `-i`), no
        # program a ticket runs, so the command was a TODO.
        (
            "$ timeout 300 /opt/conda/bin/python3.10 x.py --lr 0.1\nSegmentation fault\n",
            "timeout 300 python x.py --lr 0.1",
            "3.10",
        ),
        ("$ env -i X=1 python3 x.py\nSegmentation fault\n", "env -i X=1 python3 x.py", None),
        ("$ nice -n 5 ./run.sh\nSegmentation fault\n", "nice -n 5 ./run.sh", None),
        (
            "$ CUDA_VISIBLE_DEVICES=0 timeout -s KILL 5m torchrun --nproc_per_node 2 t.py\n"
            "Segmentation fault\n",
            "CUDA_VISIBLE_DEVICES=0 timeout -s KILL 5m torchrun --nproc_per_node 2 t.py",
            None,
        ),
    ],
)
def test_a_wrapped_command_is_read_as_the_program_it_runs(
    log: str, command: str, python: str | None
) -> None:
    read = read_ticket(log)
    assert (read.command, read.machine.python) == (command, python)


def test_a_long_python_stack_is_described_by_its_outermost_frames_too() -> None:
    # The description kept the innermost six (torch's, queue's, threading's), and the
    # program's own frames, where it hung (train.py:evaluate), were cut.
    inner = "".join(f"    f{n} (torch/lib{n}.py:{n})\n" for n in range(8))
    read = read_ticket(
        "Process 7: python train.py\nPython v3.10.13 (/usr/bin/python3.10)\n\n"
        f'Thread 7 (idle): "MainThread"\n{inner}'
        "    evaluate (train.py:77)\n    main (train.py:140)\n    <module> (train.py:160)\n"
    )
    description = skeleton(read, "t.md").description
    shown = description.split("Python stack, innermost last:\n", 1)[1].split("\n")
    assert [line.strip() for line in shown[:5]] == [
        "train.py:<module>", "train.py:main", "train.py:evaluate", "...", "torch/lib5.py:f5"
    ]  # fmt: skip
    assert shown[-1].strip() == "torch/lib0.py:f0"


def test_a_py_spy_dump_is_a_hang_of_the_command_it_names() -> None:
    # What a hang's ticket pastes: it read "no failure found", the command a TODO,
    # though py-spy's first line names it and its Python.
    read = read_ticket(
        "Training hangs at the start of epoch 2. `py-spy dump --pid 5512`:\n\n```\n"
        "Process 5512: /usr/bin/python3.10 main.py --workers 4\n"
        "Python v3.10.13 (/usr/bin/python3.10)\n\n"
        'Thread 5512 (idle): "MainThread"\n'
        "    wait (threading.py:320)\n"
        "    _try_get_data (torch/utils/data/dataloader.py:1133)\n"
        "    train_one_epoch (main.py:88)\n"
        "    <module> (main.py:151)\n"
        'Thread 5601 (idle): "Thread-1 (_pin_memory_loop)"\n'
        "    wait (threading.py:324)\n```\n"
    )
    assert read.failure.outcome == "hang"
    # `python`, the spec's interpreter, where python3.10 ran whatever the reader's PATH has.
    assert read.command == "python main.py --workers 4"
    assert read.machine.python == "3.10"
    assert read.python_frames == (
        "main.py:<module>",
        "main.py:train_one_epoch",
        "torch/utils/data/dataloader.py:_try_get_data",
        "threading.py:wait",
    )
    draft = skeleton(read, "t.md")
    assert draft.expect == {"outcome": "hang"}
    assert draft.timeout == "10m"


def test_a_py_spy_process_of_a_quoted_launch_is_that_launch() -> None:
    # py-spy's header names the worker torchrun started; the reporter's quoted
    # command, which runs that script with more words, was lost (the spec ran the worker
    # alone, without torchrun and its arguments).
    ticket = (
        "I ran `torchrun --nproc_per_node=2 train.py --epochs 10` on 1 node; it hangs.\n\n"
        "```\nProcess 4242: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
        'Thread 4242 (idle): "MainThread"\n    wait (threading.py:320)\n'
        "    main (train.py:40)\n```\n"
    )
    assert read_ticket(ticket).command == "torchrun --nproc_per_node=2 train.py --epochs 10"
    # A quoted command of another script leaves py-spy's.
    other = ticket.replace("torchrun --nproc_per_node=2 train.py", "python prep.py")
    assert read_ticket(other).command == "python train.py"
    # The same program run another way, which worked, is not the launch (review).
    works = ticket.replace(
        "I ran `torchrun --nproc_per_node=2 train.py --epochs 10` on 1 node; it hangs.",
        "It hangs by default; `python train.py --batch-size 32 --no-amp` works fine.",
    )
    assert read_ticket(works).command == "python train.py"
    module = ticket.replace("torchrun", "python -m torch.distributed.run")
    assert read_ticket(module).command == (
        "python -m torch.distributed.run --nproc_per_node=2 train.py --epochs 10"
    )


@pytest.mark.parametrize(
    ("line", "command"),
    [
        (
            r"PS C:\Users\frank\proj> python .\train.py --num_workers 2",
            "python ./train.py --num_workers 2",
        ),
        (r"(base) PS D:\w> python -m pytest tests\test_x.py", "python -m pytest tests/test_x.py"),
        (r"C:\proj>python train.py --lr 0.1", "python train.py --lr 0.1"),
    ],
)
def test_a_windows_prompt_line_is_the_command_with_its_paths_slashed(
    line: str, command: str
) -> None:
    # PowerShell's and cmd's prompts were no prompt: the command was a TODO, and
    # shlex read `.\train.py` as `.train.py`. Pasted with CRLF line ends, as Windows' are.
    text = f"On Windows 11:\r\n\r\n```\r\n{line}\r\nSegmentation fault\r\n```\r\n"
    assert read_ticket(text).command == command


def test_a_cuda_error_of_torchrun_ranks_needs_a_gpu_per_rank() -> None:
    # NCCL's ranks each take a GPU: `gpus: 1` ran 4 ranks on one.
    text = (
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970,"
        " unhandled cuda error\n\nLaunched with `torchrun --nproc_per_node=4 train.py`.\n"
    )
    assert skeleton(read_ticket(text), "t.md").gpus == (
        4,
        "the failure is a CUDA error of 4 ranks (--nproc_per_node): a GPU each",
    )
    alone = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert skeleton(read_ticket(alone), "t.md").gpus == (
        1,
        "the failure is a CUDA error: it needs a GPU",
    )


def test_progress_is_read_from_the_pasted_output_not_the_tickets_title() -> None:
    """The title `training crashes at step 3` matched the steps preset: the skeleton expected
    `phase: training`, which the program, printing only `step N`, never reports, and 20 of 20
    crashes missed. With a fence, only its lines are the program's."""
    text = (
        "Title: training crashes at step 3 with segfault\n\n"
        "It happens roughly 1 in 3 runs.\n\n"
        "```\n$ python segv.py --workers 2\nstep 0\nstep 1\nstep 2\nstep 3\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f1c2b7fe740 (most recent call first):\n"
        '  File "/home/bob/proj/segv.py", line 11 in <module>\n'
        "Segmentation fault (core dumped)\n```\n"
    )
    ticket = read_ticket(text)
    assert (ticket.failure.phase, ticket.failure.step) == (None, 3)
    assert ticket.presets == ("steps",)
    # Unfenced, the same text is all output as far as the reader can tell.
    unfenced = read_ticket(text.replace("```\n", ""))
    assert unfenced.failure.phase == "training"


def test_a_cuda_error_is_read_from_the_exception_line_not_the_raise_above_it() -> None:
    # The traceback's source line `raise RuntimeError("CUDA error: ...")` came first, and
    # the spec's description ended in the source's `")`.
    text = (
        "Traceback (most recent call last):\n"
        '  File "t.py", line 8, in main\n'
        '    raise RuntimeError("CUDA error: an illegal memory access was encountered")\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    read = read_ticket(text)
    assert read.cuda_error == "CUDA error: an illegal memory access was encountered"
    assert any(e.endswith("was encountered") for e in read.evidence)


# A `Timeout (0:05:00)!` dump of a server's threads, as the report pasted it.
THREADS_TIMEOUT = """\
```
$ python -m mytool.serve --port 8080 --workers 4
step 2
Timeout (0:05:00)!
Thread 0x00007f1a2b3fe6c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/srv/mytool/pool.py", line 71 in _worker

Thread 0x00007f1a2c9ff740 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1119 in join
  File "/srv/mytool/serve.py", line 120 in <module>
```
"""


def test_a_timeout_dump_gives_each_thread_its_own_stack_the_main_one_first() -> None:
    # The threads were joined into one made-up chain, serve.py:<module> -> join ->
    # pool.py:_worker -> wait, as if join called _worker.
    read = read_ticket(THREADS_TIMEOUT)
    assert read.failure.outcome == "hang"
    assert [(t.thread, t.main, t.frames) for t in read.threads] == [
        (
            "0x00007f1a2c9ff740",
            True,
            ("/srv/mytool/serve.py:<module>", "/usr/lib/python3.11/threading.py:join"),
        ),
        (
            "0x00007f1a2b3fe6c0",
            False,
            ("/srv/mytool/pool.py:_worker", "/usr/lib/python3.11/threading.py:wait"),
        ),
    ]
    assert read.python_frames == read.threads[0].frames
    description = skeleton(read, "i3.md").description
    assert description.split("\n")[1:] == [
        "Python stacks of 2 threads (the dump names no current thread), innermost last:",
        "  thread 0x00007f1a2c9ff740, the main thread (its outermost frame runs the program):",
        "    /srv/mytool/serve.py:<module>",
        "    /usr/lib/python3.11/threading.py:join",
        "  thread 0x00007f1a2b3fe6c0:",
        "    /srv/mytool/pool.py:_worker",
        "    /usr/lib/python3.11/threading.py:wait",
    ]


def test_a_dump_whose_frames_tell_no_main_thread_says_so_and_names_none() -> None:
    # A paste cut above each thread's outermost frames: no `<module>`, no main thread.
    text = THREADS_TIMEOUT.replace('  File "/srv/mytool/serve.py", line 120 in <module>\n', "")
    read = read_ticket(text)
    assert [t.main for t in read.threads] == [False, False]
    assert read.python_frames == ()
    description = skeleton(read, "i3.md").description
    assert "which is the main thread no frame tells (none is `<module>`)" in description
    assert "main thread (its" not in description


def test_a_fatal_error_dump_with_no_current_thread_is_read_thread_by_thread() -> None:
    # An abort in a thread that runs no Python: faulthandler marks no `Current thread`,
    # and every thread's frames were read as the one stack of the signal's thread.
    text = (
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f0000000002 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n\n'
        "Thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/app/run.py", line 9 in main\n'
        '  File "/app/run.py", line 12 in <module>\n\n'
        "Extension modules: numpy.core._multiarray_umath (total: 1)\n"
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGABRT")
    assert read.python_frames == ("/app/run.py:<module>", "/app/run.py:main")
    assert [t.thread for t in read.threads] == ["0x00007f0000000001", "0x00007f0000000002"]


def test_timeouts_exit_124_of_a_command_under_it_is_a_hang() -> None:
    # A GitHub Actions step of `timeout 5 python hang2.py` that printed `step 3` and hung:
    # the skeleton expected `error exit 124` and kept `timeout 5`, where a live capture of
    # the same command writes a hang, the bound the run's timeout.
    text = (
        "2026-12-06T10:00:01.1234567Z ##[group]Run timeout 5 python hang2.py\n"
        "2026-12-06T10:00:01.1234567Z timeout 5 python hang2.py\n"
        "2026-12-06T10:00:01.1234567Z shell: /usr/bin/bash -e {0}\n"
        "2026-12-06T10:00:01.1234567Z ##[endgroup]\n"
        "2026-12-06T10:00:02.0000000Z step 2\n"
        "2026-12-06T10:00:02.0000000Z step 3\n"
        "2026-12-06T10:00:07.0000000Z ##[error]Process completed with exit code 124.\n"
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.exit_code) == ("hang", None)
    draft = skeleton(read, "t.md")
    assert draft.expect == {"outcome": "hang", "step": 3}
    assert draft.command == "python hang2.py"
    # Without the wrapper, 124 is the program's own status; with --preserve-status too.
    for command in ("python hang2.py", "timeout --preserve-status 5 python hang2.py"):
        plain = read_ticket(text.replace("timeout 5 python hang2.py", command))
        assert (plain.failure.outcome, plain.failure.exit_code) == ("error", 124)


def test_a_slurm_jobs_output_of_a_task_srun_saw_segfault_is_a_crash() -> None:
    # A job's slurm-4242.out: srun's word of its task's signal was read as no failure.
    read = read_ticket(
        "$ python seg.py --n 5\nstep 1\nstep 2\n"
        "srun: error: gpu-node-07: task 0: Segmentation fault (core dumped)\n"
        "srun: launch/slurm: _step_signal: Terminating StepId=4242.0\n"
    )
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert skeleton(read, "t.md").expect == {"outcome": "crash", "signal": "SIGSEGV", "step": 2}


def test_a_slurm_task_out_of_memory_is_the_oom_killers_sigkill() -> None:
    read = read_ticket(
        "$ python train.py\nstep 1\nstep 2\nslurmstepd: error: Detected 1 oom_kill event in"
        " StepId=4244.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: gpu-node-07: task 0: Out Of Memory\n"
    )
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGKILL")
    assert read.oom_killed == "Detected 1 oom_kill event in StepId=4244.0"


def test_a_slurm_job_ended_at_its_time_limit_is_a_hang() -> None:
    read = read_ticket(
        "$ python hang2.py\nstep 2\nstep 3\nslurmstepd: error: *** JOB 4243 ON gpu-node-07"
        " CANCELLED AT 2026-12-06T10:15:02 DUE TO TIME LIMIT ***\n"
    )
    assert read.failure.outcome == "hang"
    assert skeleton(read, "t.md").expect == {"outcome": "hang", "step": 3}
    # A person's scancel is no hang of the program's.
    cancelled = read_ticket(
        "$ python hang2.py\nstep 3\nslurmstepd: error: *** JOB 4243 ON gpu-node-07"
        " CANCELLED AT 2026-12-06T10:15:02 ***\n"
    )
    assert cancelled.failure.outcome is None


def test_credentials_a_message_shows_by_their_shape_are_not_written() -> None:
    # An HTTPError's message held the URL's password and a Bearer token: the skeleton's
    # description quoted both, and its expected message held the password as a pattern.
    password, token = "s3cr3tPassw0rd", "ghp_R4nd0mT0k3nW1thM1x3dCaseAbCdEf1234567"
    text = (
        "$ python train.py --lr 0.1\n"
        "Traceback (most recent call last):\n"
        '  File "/home/bob/train.py", line 9, in <module>\n'
        "    login()\n"
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        f"https://bob:{password}@huggingface.co/api/whoami (Authorization: Bearer {token})\n"
    )
    draft = skeleton(read_ticket(text), "t.md")
    written = render_spec(draft)
    for secret in (password, token, "s\\d+cr\\d+tPassw", token[:8]):
        assert secret not in written
    assert "https://bob:***@huggingface.co" in written
    assert yaml.safe_load(written)["expect"]["exception"] == "requests.exceptions.HTTPError"


def test_a_fraction_of_a_second_timeout_is_a_hang() -> None:
    # dump_traceback_later(0.5) writes `Timeout (0:00:00.500000)!`: read as no failure.
    text = (
        "Timeout (0:00:00.500000)!\nThread 0x00007f (most recent call first):\n"
        '  File "/x/train.py", line 9 in validation_step\n'
    )
    assert read_ticket(text).failure.outcome == "hang"


@pytest.mark.parametrize(
    ("text", "torch"),
    [
        # A server's `--workers 4` was told "for a DataLoader, 0 loads the data ...".
        (THREADS_TIMEOUT, False),
        (
            "$ python train.py --workers 4\nTraceback (most recent call last):\n"
            '  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py",'
            " line 1, in __next__\nRuntimeError: boom\n",
            True,
        ),
    ],
)
def test_a_workers_axis_names_a_dataloader_only_where_the_log_shows_torch(
    text: str, torch: bool
) -> None:
    read = read_ticket(text)
    assert read.shows_torch is torch
    (axis,) = [a for a in skeleton(read, "t.md").matrix if a.name == "workers"]
    assert ("DataLoader" in axis.comment) is torch
    # What 0 workers take away, by the incident's outcome: a hang was said "no worker to die".
    taken = {"hang": "no worker to wait on", "error": "no worker to raise it in"}
    assert axis.comment.endswith(": " + taken[str(read.failure.outcome)])


# GitHub's quote reply (`> ` on every line, `>` on a blank one) lost a rank's
# traceback (`[rank1]:` behind `> ` kept its prefix) and the command (`> $ python ...`
# read as a prompt `>` running `$`).
QUOTED = [
    '[rank1]: Traceback (most recent call last):\n[rank1]:   File "/app/x.py", line 3, in'
    " <module>\n[rank1]: ValueError: bad shape\n",
    '$ python x.py --lr 0.1\nTraceback (most recent call last):\n  File "/app/x.py", line 3,'
    " in <module>\nValueError: bad\n",
    THREADS_TIMEOUT,
    # A REPL's `>>>` in a quoted fence stays the program's words.
    "```\n>>> import x\nTraceback (most recent call last):\n"
    "  File \"<stdin>\", line 1, in <module>\nModuleNotFoundError: No module named 'x'\n```\n",
]


def _quote(text: str, depth: int) -> str:
    marker = "> " * depth
    return "\n".join((marker + line).rstrip() for line in text.split("\n"))


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("text", QUOTED)
def test_a_quoted_log_is_read_as_the_log(text: str, depth: int) -> None:
    assert read_ticket(_quote(text, depth)) == read_ticket(text)


def test_a_quoted_rank_traceback_and_prompt_are_read() -> None:
    rank = read_ticket(_quote(QUOTED[0], 1))
    assert (rank.failure.outcome, rank.failure.exception) == ("error", "ValueError")
    assert rank.failure.message == "bad shape"
    assert read_ticket(_quote(QUOTED[1], 1)).command == "python x.py --lr 0.1"
    repl = read_ticket(_quote(QUOTED[3], 2))
    assert repl.failure.exception == "ModuleNotFoundError"


def test_a_literal_expression_opener_in_the_tickets_command_is_written_so_the_spec_runs_it(
    tmp_path: Path,
) -> None:
    # A new user's trial: `--msg '${{ oops }}'` was copied into `command:` as an expression
    # of the spec's, and `reprospec validate` of the skeleton said `unknown name 'oops'`.
    text = (
        "```\n$ FOO='a${{ b }}' python train.py --msg '${{ oops }}'\n"
        "Segmentation fault (core dumped)\n```\n"
    )
    draft = skeleton(read_ticket(text), "ticket.md")
    spec = tmp_path / "t.yaml"
    spec.write_text(render_spec(draft))
    (tmp_path / "train.py").write_text("")
    checked = reprospec.validate(spec)
    assert not [p for p in checked.problems if "expression" in str(p)], checked.problems


@pytest.mark.parametrize(
    "prose",
    [
        "worked with numpy 1.26, fails with 2.0",
        "It worked with numpy 1.26, fails with 2.0.",
        "Fails with numpy 2.0.1 but works with 1.26.4",
        "upgraded numpy 1.26 -> 2.0 and now it crashes",
    ],
)
def test_prose_naming_a_working_and_a_failing_version_of_a_library_pins_neither(
    prose: str,
) -> None:
    # A new user's trial, against the docs' own example: the second version has no name of
    # its own, so the ticket read as saying one, and the pin was the one that worked.
    text = f"{prose}\n\n```\n$ python app.py\nSegmentation fault (core dumped)\n```\n"
    draft = skeleton(read_ticket(text), "np.md")
    assert not [p for p in draft.packages if p.startswith("numpy")]


@pytest.mark.parametrize("name", ["torch", "numpy"])
def test_a_release_said_bare_and_with_its_build_label_is_one_version(name: str) -> None:
    # A new user's ticket: "since upgrading to torch 2.4.0", then "Env: ..., torch
    # 2.4.0+cu121": read as two versions, neither was pinned, and the comparison lost torch.
    text = (
        f"Since upgrading to {name} 2.4.0 it crashes.\n\n"
        f"Env: Python 3.11.4, {name} 2.4.0+cu121, Ubuntu 22.04\n"
    )
    assert parse_machine(text).requirements == (f"{name}==2.4.0+cu121",)
    # Two builds of the release are two things said: which failed is the reader's call.
    two = parse_machine(f"{name} 2.4.0+cpu works, {name} 2.4.0+cu121 crashes\n")
    assert two.requirements == ()


def test_prose_naming_a_working_and_a_failing_version_of_torch_says_no_torch() -> None:
    # The torch the ticket is about, pinned where the spec leaves it: not the one that worked.
    assert parse_machine("torch 2.0.1 works, fails with 2.1.0").torch is None
    assert parse_machine("Fails with torch 2.1.0 but works with 2.0.1").torch is None


def test_a_version_after_another_name_in_the_sentence_is_that_names() -> None:
    machine = parse_machine("numpy 1.26.2 and torch 2.1.0 on Python 3.10, with 4 workers")
    assert machine.requirements == ("numpy==1.26.2", "torch==2.1.0")
    assert machine.python == "3.10"


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("zsh: segmentation fault  python bench.py --n 4", "SIGSEGV"),
        ("zsh: segmentation fault (core dumped)  python bench.py --n 4", "SIGSEGV"),
        ("zsh: abort      python bench.py --n 4", "SIGABRT"),
        ("zsh: bus error  python bench.py --n 4", "SIGBUS"),
        ("zsh: killed     python bench.py --n 4", "SIGKILL"),
        ("zsh: illegal hardware instruction  python bench.py --n 4", "SIGILL"),
        ("[1]    12345 segmentation fault (core dumped)  python bench.py --n 4", "SIGSEGV"),
        ("[2]  + 12345 abort      python bench.py --n 4", "SIGABRT"),
        (
            "fish: Job 1, 'python bench.py --n 4' terminated by signal SIGSEGV (Address"
            " boundary error)",
            "SIGSEGV",
        ),
        ('fish: "python bench.py --n 4" terminated by signal SIGABRT (Abort)', "SIGABRT"),
    ],
)
def test_zsh_and_fish_crash_lines_read_as_bashs_do(line: str, signal: str) -> None:
    # A new user's trial on macOS, whose shell is zsh: `zsh: segmentation fault  python
    # ...` gave `no failure found`, where bash's `Segmentation fault` gives the crash.
    read = read_ticket(f"```\n$ python bench.py --n 4\n{line}\n```\n")
    failure = read.failure
    assert (failure.outcome, failure.signal, failure.where) == ("crash", signal, "main")
    assert f"the shell: {line}" in read.evidence
    assert read.command == "python bench.py --n 4"


def test_a_job_fish_stopped_with_sigterm_is_no_crash() -> None:
    # How a job is stopped (`kill %1`), as a child's SIGTERM is no crash (CRASH_SIGNALS).
    line = "fish: Job 1, 'python bench.py' terminated by signal SIGTERM (Polite quit request)"
    assert read_ticket(f"$ python bench.py\n{line}\n").failure.outcome is None


def test_conda_lists_python_row_gives_the_python_version() -> None:
    # A new user's trial: the row was left out as no index's distribution (rightly), and the
    # spec said `environment.python: the Python version (the log does not say it)`.
    text = (
        "```\n$ conda list\n# packages in environment at /home/me/miniconda3/envs/x:\n#\n"
        "# Name                    Version                   Build  Channel\n"
        "_libgcc_mutex             0.1                        main\n"
        "numpy                     1.26.4          py310h5f9d8c6_0\n"
        "python                    3.10.14              h955ad1f_1\n```\n\n"
        "```\n$ python app.py\nSegmentation fault (core dumped)\n```\n"
    )
    draft = skeleton(read_ticket(text), "conda.md")
    assert draft.python == "3.10"
    assert not [item for item in draft.todo if item.startswith("environment.python")]
    assert draft.packages == ("numpy==1.26.4",)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_log_with_a_byte_order_mark_is_read_as_its_text(encoding: str) -> None:
    # Windows PowerShell 5's `>` writes UTF-16 LE with its mark: read as UTF-8 it held a NUL
    # after every letter, and capture refused it as "not text".
    text = "$ python app.py\r\nSegmentation fault (core dumped)\r\n"
    data = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # these codecs write no mark: add it
        data = ("\ufeff" + text).encode(encoding)
    assert log_text(data) == text


def test_a_log_without_a_mark_is_utf_8_and_a_bad_byte_is_replaced() -> None:
    assert log_text("Ünïcode\n".encode()) == "Ünïcode\n"
    assert log_text(b"a\xffb\x00") == "a\ufffdb\x00"  # the NUL is the CLI's to refuse


def test_a_cuda_error_of_a_command_that_sets_cuda_launch_blocking_suggests_it_no_more() -> None:
    # A new user's trial: `CUDA_LAUNCH_BLOCKING: '1'  # set on the command line`, and right
    # below it `# worth a try, in env: CUDA_LAUNCH_BLOCKING: '1'`.
    text = (
        "```\n$ CUDA_LAUNCH_BLOCKING=1 torchrun --nproc_per_node=2 train.py --bs 8\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n```\n"
    )
    draft = skeleton(read_ticket(text), "tr.md")
    blocking = [line for line in draft.env if line.name == "CUDA_LAUNCH_BLOCKING"]
    assert [(line.value, line.commented) for line in blocking] == [("1", False)]
    assert "worth a try" not in render_spec(draft)


_WINDOWS_TICKET = (
    "```\nPS C:\\proj> python .\\train.py --token hf_abcdefghijklmnopqrstuvwx --bs 8\n"
    'Traceback (most recent call last):\n  File "C:\\proj\\train.py", line 3, in <module>\n'
    "RuntimeError: boom\n```\n"
)


def test_a_secret_the_command_passes_is_read_from_the_variable_the_ticket_set_it_in() -> None:
    # A new user's trial: `$env:HF_TOKEN="hf_..."`, then `--token hf_...`, gave `TOKEN: ${{
    # env.TOKEN }}  # the ticket's command set it` (no word set TOKEN), `--token "$TOKEN"`,
    # and the same secret asked for again as an HF_TOKEN TODO.
    prose = 'I set $env:HF_TOKEN="hf_abcdefghijklmnopqrstuvwx" in PowerShell first.\n\n'
    draft = skeleton(read_ticket(prose + _WINDOWS_TICKET), "win.md")
    assert [(line.name, line.value) for line in draft.env] == [("HF_TOKEN", "${{ env.HF_TOKEN }}")]
    assert draft.env[0].comment == "the ticket set it, and its command passes it: set it in yours"
    assert '--token "$HF_TOKEN"' in draft.command
    assert not [item for item in draft.todo if "HF_TOKEN" in item]
    assert "hf_abcdefghijklmnopqrstuvwx" not in render_spec(draft)


def test_a_secret_the_command_passes_and_no_variable_held_is_not_said_set_by_it() -> None:
    draft = skeleton(read_ticket(_WINDOWS_TICKET), "win.md")
    assert [line.name for line in draft.env] == ["TOKEN"]
    assert "command set it" not in draft.env[0].comment
    assert "passed this secret as an option's value" in draft.env[0].comment
    assert '--token "$TOKEN"' in draft.command


def test_a_traceback_cut_before_its_exception_line_is_an_error_whose_exception_is_a_todo() -> None:
    # A paste that ends in the traceback's frames read "no failure found": Python printed
    # a traceback, so the program raised; only its exception line was lost.
    text = "Traceback (most recent call last):\n"
    text += '  File "train.py", line 12, in <module>\n    step()\n'
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.exception) == ("error", None)
    assert read.cut_traceback == ("train.py:<module>",)
    assert any("cut before its exception line" in line for line in read.evidence)
    draft = skeleton(read, "t.log")
    cut_todo = "expect.exception: the log's traceback is cut"
    assert any(item.startswith(cut_todo) for item in draft.todo)
    spec = yaml.safe_load(render_spec(draft))
    assert spec["expect"] == {"outcome": "error"}
    assert "cut before the exception line" in spec["title"]


def test_a_traceback_with_its_exception_line_or_prose_after_it_is_not_cut() -> None:
    header = "Traceback (most recent call last):\n"
    whole = header + '  File "t.py", line 1, in <module>\nValueError: x\n'
    assert read_ticket(whole).cut_traceback == ()
    # Prose after the frames: the reporter's words, not a traceback ended by the paste.
    prose = header + '  File "t.py", line 1, in <module>\nany ideas?\n'
    assert read_ticket(prose).failure.outcome is None


_GHA_STEP = (
    "2026-12-01T10:00:01.1234567Z ##[group]Run python train.py --lr 1e-3\n"
    "2026-12-01T10:00:01.1234567Z shell: /usr/bin/bash -e {0}\n"
    "2026-12-01T10:00:01.1234567Z env:\n"
    "2026-12-01T10:00:01.1234567Z   pythonLocation: /opt/hostedtoolcache/Python/3.10.14/x64\n"
    "2026-12-01T10:00:01.1234567Z ##[endgroup]\n"
    "2026-12-01T10:00:02.1234567Z Traceback (most recent call last):\n"
    '2026-12-01T10:00:02.1234567Z   File "train.py", line 12, in <module>\n'
    "2026-12-01T10:00:02.1234567Z RuntimeError: boom\n"
)


def test_a_github_actions_step_header_is_the_command_and_its_python_location_the_version() -> None:
    # GitHub's `Run ...` header with no script echoed under it left the command a TODO,
    # and setup-python's `pythonLocation:` (its env dump) said no Python version.
    read = read_ticket(_GHA_STEP)
    assert read.command == "python train.py --lr 1e-3"
    assert (read.machine.python, read.machine.python_full) == ("3.10", "3.10.14")


def test_a_github_actions_step_gives_the_last_line_of_its_echoed_script() -> None:
    # A `run: |` of several lines: the header shows its first, the echo all of them.
    step = (
        "##[group]Run python prepare.py\npython prepare.py\npython train.py --bs 8\n"
        "shell: /usr/bin/bash -e {0}\n##[endgroup]\n"
        'Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n'
        "ValueError: x\n"
    )
    assert read_ticket(step).command == "python train.py --bs 8"
    # `Run ...` in prose (no `##[group]`, no `shell:` under it) is no step.
    assert read_ticket("Run python a.py and it fails.\nValueError: x\n").command is None


def test_a_hang_said_by_echo_status_after_timeout_is_a_hang_and_the_echo_no_command() -> None:
    # `echo $?` printing 124 after `timeout N cmd` was read as nothing at all.
    alone = read_ticket("$ timeout 60 python train.py\nepoch 1 step 10\n$ echo $?\n124\n")
    assert alone.failure.outcome == "hang"
    assert alone.command == "timeout 60 python train.py"
    # On the command's own line: the echo's status (0) would have been the spec's command's.
    inline = read_ticket('$ timeout 30s python train.py; echo "exit: $?"\nloading\nexit: 124\n')
    assert inline.failure.outcome == "hang"
    assert inline.command == "timeout 30s python train.py"
    # In a fenced paste, as most tickets are: its closing fence is no line of the output.
    for fence in ("```", "~~~"):
        paste = f"{fence}console\n$ timeout 60 pytest tests/ -v; echo $?\nstuff\n124\n{fence}\n"
        assert read_ticket(f"Output:\n{paste}Any idea?\n").failure.outcome == "hang"
    # The status is a number alone on its line, or after `word:`/`word=`; a number that
    # only ends the program's own last line (`Processed 100`) is no status.
    said = read_ticket("$ python process.py; echo $?\nProcessed 100\n").failure
    assert (said.outcome, said.exit_code) == (None, None)
    assert read_ticket("$ python t.py; echo rc=$?\nrc=3\n").failure.exit_code == 3
    # Another status is the program's own exit; 139 a crash, as a shell reports it.
    assert read_ticket("$ python t.py\n$ echo $?\n3\n").failure.exit_code == 3
    crashed = read_ticket("$ python t.py\n$ echo $?\n139\n").failure
    assert (crashed.outcome, crashed.signal) == ("crash", "SIGSEGV")


@pytest.mark.parametrize(
    "prose",
    [
        "When I run `python train.py --workers 4`, it hangs forever after epoch 1.",
        'Running `python train.py` gets stuck at "Loading checkpoint" and never returns.',
        "`python train.py` freezes at step 3 (deadlock?).",
        "Running `python train.py`, the job hung at step 3.",
        "With 4 ranks `torchrun train.py` deadlocks in the all_reduce.",
    ],
)
def test_a_hang_said_in_prose_is_a_hang(prose: str) -> None:
    ticket = read_ticket(prose)
    assert ticket.failure.outcome == "hang"
    assert any(e.startswith("the ticket says it hangs: ") for e in ticket.evidence)


def test_a_denied_hang_or_a_failure_the_log_shows_is_not_read_from_prose() -> None:
    assert read_ticket("`python train.py` no longer hangs; it just exits.").failure.outcome is None
    assert read_ticket("`python train.py` does not hang at all.").failure.outcome is None
    traceback = (
        "It used to hang, now `python t.py` fails:\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 1, in <module>\n'
        "ValueError: bad\n"
    )
    assert read_ticket(traceback).failure.outcome == "error"


@pytest.mark.parametrize(
    "text",
    [
        # The adjective, the noun, a hypothetical, a program's log line: no hang said.
        "I fine-tune with frozen embeddings (`python ft.py`) and the loss is NaN.",
        "Since the DDP deadlock fix in 2.1, `python train.py` gives wrong results.",
        "Without the fix it would hang; with it `python train.py` gives wrong results.",
        "$ python -m debugpy train.py\n0.00s - Debugger warning: It seems that frozen modules"
        " are being used, which may\nloss: nan\n",
        # A hang word in a fenced paste is the program's output, not the reporter's word.
        "The loss is NaN:\n```\n$ python train.py\nwatchdog: no step is stuck at 3\n```\n",
    ],
)
def test_words_that_only_look_like_a_hang_are_no_hang(text: str) -> None:
    assert read_ticket(text).failure.outcome is None


def test_a_bash_x_trace_line_is_the_command_the_shell_ran() -> None:
    # A job script run under `set -x`: its `+ srun python train.py` was no command.
    log = (
        "+ module load cuda/12.1\n"
        "+ export NCCL_DEBUG=INFO\n"
        "++ hostname\n"
        "+ HOST=node07\n"
        "+ srun python train.py --epochs 3\n"
        "epoch 0 step 1\n"
        "srun: error: node07: task 0: Segmentation fault (core dumped)\n"
    )
    ticket = read_ticket(log)
    assert ticket.command == "srun python train.py --epochs 3"
    assert (ticket.failure.outcome, ticket.failure.signal) == ("crash", "SIGSEGV")


def test_a_traceback_in_an_indented_code_block_is_read_with_its_exception() -> None:
    # Markdown's four-space code block: the exception line, indented like a frame's, read
    # as a traceback cut before it (`expect.exception` a TODO, "ask for the rest of it").
    block = (
        "$ python train.py --lr 1\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 10, in <module>\n'
        "    main()\n"
        "KeyError: 'lr'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        '    raise ValueError("bad value")\n'
        "ValueError: bad value\n"
    )
    indented = "\n".join("    " + line if line else "" for line in block.split("\n"))
    ticket = read_ticket(f"It fails:\n\n{indented}\nThanks!\n")
    assert ticket.cut_traceback == ()
    assert [e.type for e in ticket.failure.chain] == ["KeyError", "ValueError"]
    assert (ticket.failure.exception, ticket.failure.message) == ("ValueError", "bad value")
    assert ticket.command == "python train.py --lr 1"


def test_a_message_pytests_summary_cut_at_the_terminals_width_is_read_whole() -> None:
    # `FAILED ... - CalledProcessError: Command '['/work/...`: expected as written, its
    # `\.\.\.` matched no run. The log's own exception line gives the rest.
    summary = (
        "$ pytest test_x.py\n"
        "=========================== short test summary info ============================\n"
        "FAILED test_x.py::test_sub - subprocess.CalledProcessError: Command '['/work/...\n"
        "============================== 1 failed in 0.31s ===============================\n"
    )
    whole = "Command '['/work/py', '-c', 'x']' returned non-zero exit status 1."
    shown = f"E       subprocess.CalledProcessError: {whole}\n\ntest_x.py:7: CalledProcessError\n"
    assert read_ticket(shown + summary).failure.message == whole
    # Where no line gives the rest, its beginning, which a message pattern matches.
    assert read_ticket(summary).failure.message == "Command '['/work/"


IPYTHON_CHAIN = """\
Running this in a notebook:

```
---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
Cell In[1], line 2
      1 d = {}
----> 2 d["x"]

KeyError: 'x'

During handling of the above exception, another exception occurred:

---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[1], line 6
----> 6 f(1)

File ~/proj/model.py:7, in f(x)
      6 def f(x):
----> 7     raise ValueError(f"bad value {x}")

ValueError: bad value 1
```
"""


def test_an_ipython_traceback_is_read_as_pythons() -> None:
    # A notebook's traceback, the most common in a GitHub issue, was no failure at all.
    ticket = read_ticket(IPYTHON_CHAIN)
    assert [(e.type, e.link) for e in ticket.failure.chain] == [
        ("KeyError", "context"),
        ("ValueError", None),
    ]
    assert (ticket.failure.exception, ticket.failure.message) == ("ValueError", "bad value 1")
    assert ticket.python_frames == ("Cell In[1]:<module>", "~/proj/model.py:f")
    # IPython 7's frame line.
    old = (
        "KeyError                                  Traceback (most recent call last)\n"
        "<ipython-input-3-5e5b8d1> in <module>\n"
        "----> 2 d['lr']\n\n"
        "KeyError: 'lr'\n"
    )
    assert read_ticket(old).failure.exception == "KeyError"
    # A path with a space (Colab's Drive, `My Drive`), in IPython 8's and 7's frame lines.
    for frame in ("File /content/drive/My Drive/x.py:7, in f()", "~/my proj/x.py in f(a)"):
        spaced = read_ticket(
            "ValueError                                Traceback (most recent call last)\n"
            f"{frame}\n      5 def f(a):\n----> 7     raise ValueError(a)\n\nValueError: 1\n"
        )
        assert (spaced.failure.outcome, spaced.failure.exception) == ("error", "ValueError")
        assert spaced.python_frames[-1] in ("/content/drive/My Drive/x.py:f", "~/my proj/x.py:f")


def test_a_pytest_hang_that_timeout_ended_names_the_test_it_was_running() -> None:
    # The prompt comes back on the line pytest -v left unended; the hang, known from
    # timeout's 124 only after the running test was looked for, named no test.
    log = (
        "$ timeout 3 pytest -v test_h.py\n"
        "collecting ... collected 2 items\n\n"
        "test_h.py::test_ok PASSED                                                [ 50%]\n"
        "test_h.py::test_hang $ echo $?\n"
        "124\n"
    )
    ticket = read_ticket(log)
    assert (ticket.failure.outcome, ticket.failure.phase) == ("hang", "test_h.py::test_hang")


def test_a_traceback_pasted_without_its_indentation_is_read() -> None:
    # A chat or an e-mail took its indentation: its first `File` line ended it as
    # no exception line, and the ticket showed no failure.
    log = (
        "$ python train.py\n"
        "Traceback (most recent call last):\n"
        'File "train.py", line 10, in <module>\n'
        "main()\n"
        'File "train.py", line 7, in main\n'
        "x = compute(cfg)\n"
        "^^^^^^^^^^^^^^^^\n"
        'File "<stdin>", line 1, in compute\n'
        "KeyError: 'lr'\n"
    )
    ticket = read_ticket(log)
    assert (ticket.failure.exception, ticket.failure.message) == ("KeyError", "'lr'")
    assert ticket.python_frames == ("train.py:<module>", "train.py:main", "<stdin>:compute")


@pytest.mark.parametrize(
    "log",
    [
        "$ timeout -s KILL 5 python train.py\nstep 1\n$ echo $?\n137\n",
        "$ timeout -k 2 5 python train.py\nstep 1\nError: Process completed with exit code 137.\n",
    ],
)
def test_a_timeout_that_sends_sigkill_ends_a_hang_with_137_not_a_crash(log: str) -> None:
    # A live capture of the command reads the hang (timebound.py); the ticket's 137 was
    # `crash SIGKILL`, which no run of the unwrapped command comes back as.
    assert read_ticket(log).failure.outcome == "hang"
    # Without such a timeout, or with the kernel's OOM kill said, 137 stays a SIGKILL.
    assert read_ticket("$ python train.py\n$ echo $?\n137\n").failure.signal == "SIGKILL"
    oom = log.replace("step 1\n", "step 1\nOut of memory: Killed process 4242 (python)\n")
    assert read_ticket(oom).failure.signal == "SIGKILL"


def test_a_pasted_torchrun_report_alone_expects_its_root_causes_exception() -> None:
    # Recorded: torch 2.13's torchrun, rank 1's `@record` main raised ValueError. A ticket
    # that pastes torchrun's traceback and report (not the ranks' own lines) expected
    # torchrun's ChildFailedError, which a live run of the command never reports.
    recorded = (DATA / "children" / "torchrun-rank-record.stderr.log").read_text()
    report = recorded[recorded.index('Traceback (most recent call last):\n  File "/venv/bin') :]
    failure = read_ticket(report).failure
    assert (failure.outcome, failure.exception, failure.message, failure.where) == (
        "error",
        "ValueError",
        "bad shard on rank 1",
        "child",
    )
    expect = yaml.safe_load(render_spec(skeleton(read_ticket(report), "t.log")))["expect"]
    assert expect["exception"] == "ValueError"


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("pytest-timeout-thread.txt", "thread"),
        ("pytest-timeout-thread-v.txt", "thread"),
        ("pytest-timeout-signal.txt", "signal"),
        ("pytest-timeout-signal-threads.txt", "signal"),
        # Under pytest-xdist (`-n 2`) the worker's dump is not shown, its `os._exit(1)` is
        # `node down: Not properly terminated`: read as a worker's crash with no signal,
        # where a live run of it reads no crash.
        ("pytest-timeout-thread-xdist.txt", "thread"),
    ],
)
def test_a_test_pytest_timeout_ended_is_a_hang_of_that_test(name: str, method: str) -> None:
    # Recorded: pytest 9 with pytest-timeout 2.4 (`--timeout 2`), a test that sleeps (or
    # joins a thread that does). The thread method's dump and `os._exit(1)` read as "no
    # failure found", the signal method's `Failed: Timeout (>2.0s) from pytest-timeout.`
    # as the error `Failed`: each is the test's hang, as a live run of it reads.
    read = read_ticket((DATA / "capture" / "pytesttimeout" / name).read_text())
    test = read.test
    assert (read.failure.outcome, read.failure.exception, read.failure.message) == (
        "hang",
        None,
        None,
    )
    assert test in ("test_hang.py::test_sleeps_forever", "test_thr.py::test_waits_on_a_thread")
    assert read.failure.phase == test
    assert f"pytest-timeout's {method} method ended" in " ".join(read.evidence)
    expect = yaml.safe_load(render_spec(skeleton(read, name)))
    assert expect["expect"]["outcome"] == "hang"
    assert expect["run"]["timeout"] == "10m"


@pytest.mark.parametrize("lines", [18, 13])
def test_a_cut_pytest_timeout_dump_is_the_method_its_header_says(lines: int) -> None:
    # Recorded: `pytest -s`, pytest-timeout's signal method (`timeout method: signal`), the
    # test joins a thread: with other threads it dumps the same rule and stacks as the
    # thread method, then fails the test alone. A paste cut after its closing rule (18
    # lines) or inside its stacks (13) was called the thread method's end of the run.
    name = "pytest-timeout-signal-threads-s-cut.txt"
    text = (DATA / "capture" / "pytesttimeout" / name).read_text()
    read = read_ticket("\n".join(text.split("\n")[:lines]) + "\n")
    assert read.failure.outcome == "hang"
    said = " ".join(read.evidence)
    assert "pytest-timeout's signal method ended the test at its timeout (2s)" in said
    # No header: the thread method, as before.
    headless = "\n".join(text.split("\n")[9:lines]) + "\n"
    assert "pytest-timeout's thread method" in " ".join(read_ticket(headless).evidence)


def test_an_xdist_worker_killed_before_pytest_timeouts_bound_stays_a_crash() -> None:
    # Recorded: pytest-xdist (`-n 1`), pytest-timeout's header (`timeout: 30.0s`, `timeout
    # method: thread`), the test `os.kill(os.getpid(), 9)` (the OOM killer's case): read as
    # the test's hang at the bound although the session says `1 failed in 4.48s`.
    name = "pytest-timeout-thread-xdist-killed.txt"
    read = read_ticket((DATA / "capture" / "pytesttimeout" / name).read_text())
    assert (read.failure.outcome, read.failure.where) == ("crash", "child")
    assert read.xdist_crash == "test_k.py::test_k"
    assert "pytest-timeout" not in " ".join(read.evidence)


def test_pytest_timeouts_failure_cut_by_the_short_summary_is_still_a_hang() -> None:
    # The short summary alone (`--tb=no`, or a paste of the last lines) cuts its message at
    # the terminal's width: read as the error `Failed`, message `Timeout ... from pytes`.
    text = (
        "FAILED test_hang.py::test_sleeps_forever - Failed: Timeout (>2.0s) from pytes...\n"
        "============================== 1 failed in 2.77s ===============================\n"
    )
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.exception, read.failure.phase) == (
        "hang",
        None,
        "test_hang.py::test_sleeps_forever",
    )
    # A test's own `pytest.fail("Timeout ...")` is its error.
    own = "FAILED t.py::test_x - Failed: Timeout waiting for the server\n"
    assert read_ticket(own).failure.exception == "Failed"


def test_a_pasted_torchrun_report_of_a_chained_rank_error_keeps_the_ranks_chain() -> None:
    # Recorded: torch 2.13's torchrun, rank 1's `@record` main raised ValueError from a
    # KeyError. The report's copy of that chain, indented under torchrun's own traceback,
    # read as `ChildFailedError (cause) -> ValueError`: the rank's cause lost, the error
    # not the child's; and the reader's re-indented lines cut the copy at its first part.
    recorded = (DATA / "children" / "torchrun-rank-record-chained.stderr.log").read_text()
    report = recorded[recorded.index('Traceback (most recent call last):\n  File "/venv/bin') :]
    for text in (recorded, report):
        failure = read_ticket(text).failure
        assert [(e.type, e.link) for e in failure.chain] == [
            ("KeyError", "cause"),
            ("ValueError", None),
        ]
        assert (failure.exception, failure.message, failure.where) == (
            "ValueError",
            "bad shard on rank 1",
            "child",
        )


def test_a_paste_cut_inside_pytest_timeouts_dump_is_still_a_hang() -> None:
    # A ticket's paste of the dump's first lines, no closing rule: "no failure found".
    recorded = (DATA / "capture" / "pytesttimeout" / "pytest-timeout-thread.txt").read_text()
    cut = "\n".join(recorded.split("\n")[:20]) + "\n"
    assert read_ticket(cut).failure.outcome == "hang"
    # The rule alone, a program's own words, is none.
    assert read_ticket("+++++ Timeout +++++\ndone\n").failure.outcome is None


def test_a_timed_out_test_method_without_v_is_named_with_its_class(tmp_path: Path) -> None:
    # pytest-timeout's thread dump names the test's function alone (`in test_sleeps`), and
    # without -v no line names its node id: the ticket read `test_cls.py::test_sleeps`, a
    # phase no run of the spec (`test_cls.py::TestSlow::test_sleeps`) ever matched.
    recorded = (DATA / "capture" / "pytesttimeout" / "pytest-timeout-thread.txt").read_text()
    paste = recorded.replace("test_hang.py", "test_cls.py").replace(
        "line 5, in test_sleeps_forever", "line 6, in test_sleeps"
    )
    (tmp_path / "test_cls.py").write_text(
        "import time\n\n\nclass TestSlow:\n    def test_sleeps(self):\n        time.sleep(30)\n"
        "\n\ndef test_sleeps():\n    pass\n"
    )
    assert read_ticket(paste, tmp_path).test == "test_cls.py::TestSlow::test_sleeps"
    # The module's def of the same name, at its line, is the module's test.
    module = paste.replace("line 6, in test_sleeps", "line 10, in test_sleeps")
    assert read_ticket(module, tmp_path).test == "test_cls.py::test_sleeps"
    # No file to read (another machine's checkout): the function alone, as before.
    assert read_ticket(paste, tmp_path / "elsewhere").test == "test_cls.py::test_sleeps"
    assert read_ticket(paste).test == "test_cls.py::test_sleeps"


def test_a_timed_out_test_that_called_another_test_function_is_the_outer_one() -> None:
    # pytest-timeout's dump (`traceback.format_stack`) lists its frames outermost first:
    # the last test frame, the innermost, was taken, so `test_b` calling
    # `test_sleeps_forever()` was read as `test_hang.py::test_sleeps_forever`, a phase no
    # run of `test_b` matches (review).
    recorded = (DATA / "capture" / "pytesttimeout" / "pytest-timeout-thread.txt").read_text()
    paste = recorded.replace(
        '  File "/home/u/proj/test_hang.py", line 5, in test_sleeps_forever\n',
        '  File "/home/u/proj/test_hang.py", line 9, in test_b\n    test_sleeps_forever()\n'
        '  File "/home/u/proj/test_hang.py", line 5, in test_sleeps_forever\n',
    )
    assert paste != recorded
    assert read_ticket(paste).test == "test_hang.py::test_b"


def _timed_out_in(frame_file: str) -> str:
    """pytest-timeout's dump of `test_cls.py`'s test_sleeps at line 6, its frame's file
    `frame_file`."""
    recorded = (DATA / "capture" / "pytesttimeout" / "pytest-timeout-thread.txt").read_text()
    return recorded.replace("test_hang.py", "test_cls.py").replace(
        '"/home/u/proj/test_cls.py", line 5, in test_sleeps_forever',
        f'"{frame_file}", line 6, in test_sleeps',
    )


_IN_A_CLASS = (
    "import time\n\n\nclass TestSlow:\n    def test_sleeps(self):\n        time.sleep(30)\n"
)


def test_a_timed_out_tests_class_is_read_past_a_file_ast_cannot_read(tmp_path: Path) -> None:
    # The frame's file nested past what the parser goes (MemoryError, which ended
    # capture --from-log), or one whose `"\d"` warns: the workdir's copy is read.
    (tmp_path / "test_cls.py").write_text(_IN_A_CLASS)
    deep = tmp_path / "deep" / "test_cls.py"
    deep.parent.mkdir()
    deep.write_bytes(b"x=" + b"-" * 100_000 + b"1\n")
    assert (
        read_ticket(_timed_out_in(str(deep)), tmp_path).test == "test_cls.py::TestSlow::test_sleeps"
    )
    # An invalid escape's warning (an error under -W error) is no reason to skip the file.
    escape = tmp_path / "escape" / "test_cls.py"
    escape.parent.mkdir()
    escape.write_text(
        'import re\n\n\nclass TestRe:\n    def test_sleeps(self):\n        re.compile("\\d")\n'
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        said = read_ticket(_timed_out_in(str(escape)), tmp_path / "elsewhere").test
    assert said == "test_cls.py::TestRe::test_sleeps"


def test_a_timed_out_tests_class_is_read_only_in_the_workdir_and_past_a_stale_copy(
    tmp_path: Path,
) -> None:
    # The frame's file is there, but no workdir was given: the text alone is read (it read
    # the frame's path, a relative one against the current folder).
    (tmp_path / "test_cls.py").write_text(_IN_A_CLASS)
    paste = _timed_out_in(str(tmp_path / "test_cls.py"))
    assert read_ticket(paste).test == "test_cls.py::test_sleeps"
    assert read_ticket(paste, tmp_path).test == "test_cls.py::TestSlow::test_sleeps"
    # A relative frame path is the workdir's.
    assert read_ticket(_timed_out_in("./test_cls.py"), tmp_path).test == (
        "test_cls.py::TestSlow::test_sleeps"
    )
    # The frame's file a stale copy (no def of the test at that line): the workdir's copy
    # is read, where the first file that parsed was the answer.
    stale = tmp_path / "stale" / "test_cls.py"
    stale.parent.mkdir()
    stale.write_text("import time\n\n\ndef test_sleeps():\n    time.sleep(30)\n")
    assert read_ticket(_timed_out_in(str(stale)), tmp_path).test == (
        "test_cls.py::TestSlow::test_sleeps"
    )


def test_the_pins_this_interpreter_lacks_are_compared_and_the_next_step_builds_them() -> None:
    # A ticket's `pip list` with packaging 23.2, read where 26.4 is installed: the
    # comparison named only Python and the OS, and `next:` said a plain `reprospec run`,
    # whose cell ends infra-error for certain ("packaging 26.4 is installed").
    from reprospec.capture.envblock import parse_machine
    from reprospec.capture.fromlog import next_step, other_pins

    theirs = parse_machine(
        "Package    Version\n---------- -------\npackaging  23.2\nsix        1.16.0\n"
        "Python 3.11.6\n"
    )
    ours: dict[str, JsonValue] = {
        "python": {"version": "3.11.7"},
        "packages": {"torch": "2.13.0+cpu", "packaging": "26.4", "six": "1.16.0"},
    }
    lines = compare_machine(theirs, ours)
    assert "  DIFFERS  packaging: log 23.2; here 26.4" in lines
    assert not any(line.lstrip().startswith(("DIFFERS  six", "same     six")) for line in lines)
    assert other_pins(theirs, ours) == ["packaging==23.2"]
    said = next_step(Path("t.yaml"), todo=True, differ=other_pins(theirs, ours))
    assert said.startswith("next: fill in the TODOs, then `reprospec run t.yaml --runner venv`")
    assert "lacks the spec's packaging==23.2" in said
    # Every pin here (a local label aside): the plain command, and one row that says so.
    ours["packages"] = {"packaging": "23.2", "six": "1.16.0+local"}
    assert "  same     packages: the spec's 2 pins, all here" in compare_machine(theirs, ours)
    assert other_pins(theirs, ours) == []
    assert next_step(Path("t.yaml"), todo=False, differ=[]) == "next: `reprospec run t.yaml`"
    # A package the probe did not answer for is not said to differ.
    assert other_pins(theirs, {"packages": {}}) == []


def test_a_pin_is_compared_by_the_rule_the_local_runner_checks_it_by() -> None:
    # `numpy==1.26` in the log, 1.26.0 here: the comparison said "DIFFERS numpy: log
    # 1.26; here 1.26.0" and next: sent to --runner venv, where the local runner's check
    # (==1.26 contains 1.26.0) runs the cell.
    from reprospec.capture.envblock import parse_machine
    from reprospec.capture.fromlog import other_pins

    theirs = parse_machine("numpy==1.26\nPython 3.11.6\n")
    ours: dict[str, JsonValue] = {"python": {"version": "3.11.7"}, "packages": {"numpy": "1.26.0"}}
    assert other_pins(theirs, ours) == []
    assert "  same     packages: the spec's 1 pin, all here" in compare_machine(theirs, ours)
    ours["packages"] = {"numpy": "1.26.1"}
    assert other_pins(theirs, ours) == ["numpy==1.26"]
    assert "  DIFFERS  numpy: log 1.26; here 1.26.1" in compare_machine(theirs, ours)


# A real faulthandler dump of a `multiprocessing.Pool` worker's SIGSEGV (ctypes.string_at(0)
# in the task, Python 3.11, fork): its thread's outermost frames are the parent's, then
# multiprocessing's `_bootstrap` of the child that died.
POOL_WORKER_DUMP = """\
$ python -X faulthandler pool.py --items 5
Fatal Python error: Segmentation fault

Current thread 0x00007ff84ae47b80 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/tmp/b/pool.py", line 6 in work
  File "/usr/lib/python3.11/multiprocessing/pool.py", line 48 in mapstar
  File "/usr/lib/python3.11/multiprocessing/pool.py", line 125 in worker
  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314 in _bootstrap
  File "/usr/lib/python3.11/multiprocessing/popen_fork.py", line 71 in _launch
  File "/usr/lib/python3.11/multiprocessing/popen_fork.py", line 19 in __init__
  File "/usr/lib/python3.11/multiprocessing/context.py", line 281 in _Popen
  File "/usr/lib/python3.11/multiprocessing/process.py", line 121 in start
  File "/usr/lib/python3.11/multiprocessing/pool.py", line 215 in __init__
  File "/usr/lib/python3.11/multiprocessing/context.py", line 119 in Pool
  File "/tmp/b/pool.py", line 11 in main
  File "/tmp/b/pool.py", line 15 in <module>
"""


def test_a_faulthandler_dump_of_a_multiprocessing_child_is_the_childs_crash() -> None:
    # It was the main process's (`# in the main process`): a spec whose every run, where
    # the program exits after its child's death, reads `crash SIGSEGV` of a child.
    read = read_ticket("```\n" + POOL_WORKER_DUMP + "```\n")
    assert (read.failure.outcome, read.failure.signal, read.failure.where) == (
        "crash",
        "SIGSEGV",
        "child",
    )
    assert skeleton(read, "t.md").expect == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "where": "child",
    }


def test_a_pool_childs_dump_the_reporter_says_hangs_is_the_hang_a_run_reads() -> None:
    # The Pool never notices its worker died and `map` waits forever: a live run reads
    # `hang after a child died of SIGSEGV`, which the `crash` the skeleton expected missed.
    text = "It segfaults in a worker and then hangs forever:\n\n```\n" + POOL_WORKER_DUMP + "```\n"
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.where) == ("hang", "child")
    draft = skeleton(read, "t.md")
    assert draft.expect == {"outcome": "hang"}
    assert draft.title == "From a ticket: hang after a child died of SIGSEGV"
    assert (
        "outcome: hang  # after a child process died of SIGSEGV (the log's faulthandler dump; "
        "the ticket says it then hangs)"
    ) in render_spec(draft)


def test_a_pool_childs_dump_then_a_ctrl_c_of_the_waiting_map_is_the_hang() -> None:
    # The reporter stopped the hung `map` with Ctrl-C and pasted its KeyboardInterrupt
    # traceback, with no "hangs" word: it was read as `crash child` (review).
    stopped = (
        "^CTraceback (most recent call last):\n"
        '  File "/tmp/b/pool.py", line 11, in main\n'
        '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 367, in map\n'
        '  File "/usr/lib/python3.11/threading.py", line 629, in wait\n'
        "KeyboardInterrupt\n"
    )
    text = "It segfaults in a worker:\n\n```\n" + POOL_WORKER_DUMP + stopped + "```\n"
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.where) == ("hang", "child")
    assert read_ticket("```\n" + POOL_WORKER_DUMP + "```\n").failure.outcome == "crash"


def test_collect_envs_os_line_with_its_machine_is_the_same_os_as_this_one() -> None:
    # collect_env writes `OS: Debian GNU/Linux 12 (bookworm) (x86_64)`; this machine's
    # distribution alone never equalled it: `DIFFERS` of the very machine the log came from.
    theirs = parse_machine("OS: Debian GNU/Linux 12 (bookworm) (x86_64)\n")
    debian = {"system": "Linux", "distribution": "Debian GNU/Linux 12 (bookworm)"}
    ours: dict[str, JsonValue] = {"os": {**debian, "machine": "x86_64"}}
    assert compare_machine(theirs, ours) == [
        "the log's machine and this one:",
        "  same     OS: log Debian GNU/Linux 12 (bookworm) (x86_64); "
        "here Debian GNU/Linux 12 (bookworm) (x86_64)",
    ]
    arm: dict[str, JsonValue] = {"os": {**debian, "machine": "aarch64"}}
    assert compare_machine(theirs, arm)[1] == (
        "  DIFFERS  OS: log Debian GNU/Linux 12 (bookworm) (x86_64); "
        "here Debian GNU/Linux 12 (bookworm) (aarch64)"
    )
    # A machine the list lacked (riscv64, armv7l) read DIFFERS of the same OS (review).
    for machine in ("riscv64", "armv7l", "mips64"):
        log = parse_machine(f"OS: Debian GNU/Linux 12 (bookworm) ({machine})\n")
        same: dict[str, JsonValue] = {"os": {**debian, "machine": machine}}
        assert compare_machine(log, same)[1].startswith("  same     OS:")


# A real `gdb -batch -ex bt ./crash core` (gdb 13, a C program's NULL strlen): gdb shows
# the frame it stopped in, with its source line, before `bt` prints it again.
GDB_CORE = """\
Our tool segfaults when given --count 4. Backtrace from the core file:

```
$ gdb -q ./crash core
(gdb) bt
[New LWP 6846]
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
Core was generated by `./crash --count 4'.
Program terminated with signal SIGSEGV, Segmentation fault.
#0  __strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79
79\t../sysdeps/x86_64/multiarch/strlen-evex.S: No such file or directory.
#0  __strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79
#1  0x00005647cea82171 in measure (s=0x0) at crash.c:4
#2  0x00005647cea821e9 in main (argc=3, argv=0x7ffcd842c148) at crash.c:8
```
"""


def test_a_gdb_backtrace_of_a_core_gives_the_signal_the_command_and_every_frame() -> None:
    # It was `no failure found`, the command a TODO and the stack its first frame alone:
    # a core's `Program terminated with signal` and `Core was generated by` were unread,
    # and the repeated `#0` ended the backtrace before its callers.
    read = read_ticket(GDB_CORE)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.command == "./crash --count 4"
    assert read.native_frames == ("__strlen_evex@strlen-evex.S", "measure@crash.c", "main@crash.c")
    # The kernel keeps 80 bytes of a core's command line: one that may be cut is none.
    cut = GDB_CORE.replace("./crash --count 4", "./crash --count 4 " + "x" * 70)
    assert read_ticket(cut).command is None


def test_the_senders_absolute_paths_are_made_relative_where_the_folder_has_them(
    tmp_path: Path,
) -> None:
    # A core's command line names the sender's files by their absolute paths: the spec ran
    # `python /home/alice/proj/train.py`, a file no one else has, with nothing said.
    core = GDB_CORE.replace(
        "./crash --count 4",
        "/usr/bin/python3 /home/a/p/src/t.py --config=/home/a/p/c.yaml --out /tmp/o",
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src/t.py").write_text("")
    (tmp_path / "c.yaml").write_text("")
    (tmp_path / "o").mkdir()  # a system path (`/tmp/...`) is no sender's project
    read = read_ticket(core, workdir=tmp_path)
    assert read.command == "python src/t.py --config=c.yaml --out /tmp/o"
    assert read.sender_paths == ()
    assert (
        "the command's /home/a/p/src/t.py: the sender's path; src/t.py under this folder"
    ) in read.evidence
    # A program of the sender's own by its bare name would be looked for on PATH.
    tool = GDB_CORE.replace("./crash", "/home/alice/proj/build/crash")
    (tmp_path / "crash").write_text("")
    assert read_ticket(tool, workdir=tmp_path).command == "./crash --count 4"
    # Where the folder does not hold it, the skeleton asks for it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    read = read_ticket(core, workdir=elsewhere)
    assert read.sender_paths == ("/home/a/p/src/t.py", "/home/a/p/c.yaml")
    (todo,) = [item for item in skeleton(read, "t.md").todo if item.startswith("command:")]
    assert todo.startswith(
        "command: it names the sender's paths `/home/a/p/src/t.py`, "
        "`/home/a/p/c.yaml`, on no other machine"
    )
    # A Windows prompt's, its backslashes read as slashes; its interpreter is no file.
    windows = (
        "PS C:\\Users\\me\\proj> C:\\Users\\me\\AppData\\Local\\Programs\\Python\\"
        "Python311\\python.exe C:\\Users\\me\\proj\\src\\t.py\n"
        "Traceback (most recent call last):\nValueError: bad\n"
    )
    read = read_ticket(windows, workdir=tmp_path)
    assert (read.command, read.sender_paths) == ("python src/t.py", ())
    assert read_ticket(windows, workdir=elsewhere).sender_paths == ("C:/Users/me/proj/src/t.py",)
    # One in the sender's home: a reader's shell reads `~` as their own.
    home = "$ python ~/proj/src/t.py\nTraceback (most recent call last):\nValueError: bad\n"
    assert read_ticket(home, workdir=tmp_path).command == "python src/t.py"
    assert read_ticket(home, workdir=elsewhere).sender_paths == ("~/proj/src/t.py",)
    # Read without a folder (the text alone), the command is as written.
    alone = read_ticket(core).command
    assert alone == "python /home/a/p/src/t.py --config=/home/a/p/c.yaml --out /tmp/o"


def test_a_senders_program_under_a_wrapper_keeps_a_path(tmp_path: Path) -> None:
    # The program is the word past the wrapper: `timeout 600 run.sh` looked run.sh up on
    # PATH (command not found), as the first word that was no assignment was `timeout`.
    (tmp_path / "run.sh").write_text("")
    log = "$ timeout 600 /home/alice/proj/run.sh\nTraceback (most recent call last):\nOSError\n"
    assert read_ticket(log, workdir=tmp_path).command == "timeout 600 ./run.sh"


def test_a_senders_home_path_where_this_user_has_no_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `~` expands by HOME, else by the passwd entry: a uid with neither (`docker run -u
    # 1234`) raised RuntimeError out of the capture.
    import pwd

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    log = "$ python ~/proj/src/t.py\nTraceback (most recent call last):\nValueError: bad\n"
    assert read_ticket(log, workdir=tmp_path).sender_paths == ("~/proj/src/t.py",)


def test_only_the_words_rewritten_change_in_the_command(tmp_path: Path) -> None:
    # The command was joined again from its words, each quoted: `$DATA_DIR`, `~/cfg.yaml`
    # and `*.txt` no longer expanded in the reader's shell.
    (tmp_path / "train.py").write_text("")
    rest = "--data $DATA_DIR --config ~/cfg.yaml --glob *.txt 2>&1 | tee log"
    error = "\nTraceback (most recent call last):\nValueError: bad\n"
    moved = f"$ python /home/alice/proj/train.py {rest}{error}"
    assert read_ticket(moved, workdir=tmp_path).command == f"python train.py {rest}"
    interpreter = f"$ /opt/conda/bin/python3.10 train.py {rest}{error}"
    assert read_ticket(interpreter).command == f"python train.py {rest}"
    # A word the log quoted is written over where it stands, its quotes with it: the words
    # were joined again, each quoted, and `$D` no longer expanded (review).
    quoted = f"$ python '/home/alice/proj/train.py' --data $D{error}"
    assert read_ticket(quoted, workdir=tmp_path).command == "python train.py --data $D"
    both = f'$ "/opt/conda/bin/python3.10" -u "/home/a/p/train.py" "a b" *.txt{error}'
    assert read_ticket(both, workdir=tmp_path).command == 'python -u train.py "a b" *.txt'


def test_which_words_of_a_command_are_the_senders_paths(tmp_path: Path) -> None:
    error = "\nTraceback (most recent call last):\nValueError: bad\n"
    (tmp_path / "train.py").write_text("")
    (tmp_path / "data").mkdir()

    def read(command: str) -> Ticket:
        return read_ticket(f"$ {command}{error}", workdir=tmp_path)

    # An environment's console script is no file to put in the workdir: by its name.
    read_ = read("/home/alice/.venv/bin/torchrun --nproc_per_node 2 /home/alice/p/train.py")
    assert (read_.command, read_.sender_paths) == ("torchrun --nproc_per_node 2 train.py", ())
    user = read("/home/alice/.local/bin/deepspeed train.py")
    assert (user.command, user.sender_paths) == ("deepspeed train.py", ())
    assert (
        "the command's /home/alice/.local/bin/deepspeed: an environment's console script, "
        "by its name"
    ) in user.evidence
    conda = read_ticket(
        "PS C:\\Users\\me\\p> C:\\Users\\me\\miniconda3\\envs\\t\\Scripts\\torchrun"
        f" train.py{error}",
        workdir=tmp_path,
    )
    assert (conda.command, conda.sender_paths) == ("torchrun train.py", ())
    # Windows' `.exe` is no part of the name it is run by (review).
    exe = read_ticket(
        "PS C:\\Users\\me\\p> C:\\Users\\me\\miniconda3\\envs\\t\\Scripts\\torchrun.exe"
        f" train.py{error}",
        workdir=tmp_path,
    )
    assert (exe.command, exe.sender_paths) == ("torchrun train.py", ())
    # An environment of its own name, ~/venvs' and a conda install's unnumbered, and a
    # launcher no project ships in its bin, are environments' too (review); a hidden
    # `.venv` with a suffix too (review).
    for script, name in (
        ("/home/alice/torch-env/bin/torchrun", "torchrun"),
        ("/home/alice/proj/.venv-py311/bin/pytest", "pytest"),
        ("/home/alice/proj/.venv-dev/bin/pytest", "pytest"),
        ("/home/alice/proj/.venv-cu121/bin/torchrun", "torchrun"),
        ("/home/alice/venvs/torch/bin/accelerate", "accelerate"),
        ("/home/alice/miniconda/bin/deepspeed", "deepspeed"),
        ("/home/alice/anaconda/bin/lightning", "lightning"),
        ("/home/alice/tools/bin/torchrun", "torchrun"),
        # A launcher in a short path's bin too: it was kept as the sender's path (review).
        ("~/bin/torchrun", "torchrun"),
        ("/home/alice/.cargo/bin/uv", "uv"),
    ):
        named = read(f"{script} --nproc_per_node 2 /home/alice/proj/train.py")
        assert (named.command, named.sender_paths) == (f"{name} --nproc_per_node 2 train.py", ())
    # uv is no environment's console script: no cell's environment installs it (review).
    assert (
        "the command's /home/alice/.cargo/bin/uv: uv, by its name (a program of its own: the "
        "run needs uv on PATH)"
    ) in named.evidence
    assert not any("console script" in line for line in named.evidence)
    # A project's own `scripts/` or `bin/` is no environment's: the sender's path, a TODO
    # item, where the run looked a bare `run.sh` up on PATH (command not found).
    # `env` only as a word of one of the two folders above bin: not a home folder's name
    # (glenville) or a project's (environmental-models) (final read).
    # Nor is a folder with `env` or `venv` as a word of its name that is no environment's
    # name (`env-setup`, `dev-env-tools`, `venv-setup`, `venvtools`), nor a build's shell,
    # srun or mpirun in its `bin`: they were written by their names, a program the reader's
    # PATH has, or lacks.
    for own in (
        "/home/alice/proj/scripts/run.sh",
        "/home/alice/proj/bin/train.sh",
        "/home/glenville/proj/bin/train.sh",
        "/data/environmental-models/bin/simulate.sh",
        "/home/alice/env-setup/bin/deploy.sh",
        "/home/alice/dev-env-tools/bin/lint.sh",
        "/home/alice/venv-setup/bin/deploy.sh",
        "/home/alice/venvtools/bin/lint.sh",
        "/home/alice/proj/bin/bash train.py",
        "/home/alice/openmpi-4.1/bin/mpirun -n 2 python train.py",
        "/home/alice/slurm/bin/srun python train.py",
    ):
        project = read(f"timeout 60 {own}")
        path = own.split()[0]
        assert (project.command, project.sender_paths) == (f"timeout 60 {own}", (path,))
    # Environments by the names `python -m venv` is given, pyenv's versions.
    for prefix in ("/home/alice/myenv", "/home/alice/venv3.11", "/home/a/.pyenv/versions/3.11.4"):
        uv = read(f"{prefix}/bin/uv run /home/alice/proj/train.py")
        assert (uv.command, uv.sender_paths) == ("uv run train.py", ()), prefix
        # The sender's environment's uv, which this machine lacks, is its console script: it
        # was said to be a program of its own, by what this machine's folder held (review).
        script = f"the command's {prefix}/bin/uv: an environment's console script, by its name"
        assert script in uv.evidence, prefix
    # A user's `.local/bin/uv` is uv's installer's: its own, by that name too.
    uv = read("/home/alice/.local/bin/uv run /home/alice/proj/train.py")
    assert (
        "the command's /home/alice/.local/bin/uv: uv, by its name (a program of its own: the "
        "run needs uv on PATH)"
    ) in uv.evidence
    # A user's AppData in any case is theirs, not their project's.
    cache = read("python train.py --cache c:/users/me/appdata/local/cache")
    assert cache.sender_paths == ()
    # A Hydra override's path and an assignment's are read as --opt=PATH's are.
    hydra = read("DATA=/home/a/p/data python train.py data.root=/home/a/p/data +x=/h/a/z")
    assert hydra.command == "DATA=data python train.py data.root=data +x=/h/a/z"
    assert hydra.sender_paths == ("/h/a/z",)
    (todo,) = [item for item in skeleton(hydra, "t.md").todo if item.startswith("command:")]
    assert "name it by a path the reader has" in todo
    # A path typed twice is one pair and one evidence line, one foreign path (review).
    twice = read("python /home/a/p/train.py out=/home/a/p/train.py --c /h/x.yaml --d /h/x.yaml")
    assert twice.command == "python train.py out=train.py --c /h/x.yaml --d /h/x.yaml"
    assert twice.sender_paths == ("/h/x.yaml",)
    said = [line for line in twice.evidence if line.startswith("the command's /home/a/p/")]
    assert said == [
        "the command's /home/a/p/train.py: the sender's path; train.py under this folder"
    ]


def test_an_environment_on_this_machine_is_one_by_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the program's folder holds here says it is an environment's, whatever its name:
    # a venv's pyvenv.cfg, conda's conda-meta, an installed Python's site-packages,
    # virtualenv's activate. A program here in a project's `tools-env/bin`, which holds none
    # of them, is the project's own; a launcher no project ships, `torchrun`, is by its name.
    # Read as the command's `~/...` program, this machine's home the test's folder. A
    # program here is one of the environment's only where a distribution installed there
    # declares it (its entry points) or installed it (its RECORD), as a live capture asks:
    # one written there by hand keeps its path.
    monkeypatch.setenv("HOME", str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    error = "\nTraceback (most recent call last):\nValueError: bad\n"

    def program(log: str) -> str:
        command = read_ticket(f"{log} train.py{error}", workdir=work).command
        assert command is not None
        return command.split()[0]

    def declare(environment: Path, *names: str, record: bool = False) -> None:
        info = environment / "lib" / "python3.11" / "site-packages" / "tool-1.0.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tool\nVersion: 1.0\n")
        if record:
            (info / "RECORD").write_text("".join(f"../../../bin/{n},,\n" for n in names))
        else:
            scripts = "".join(f"{n} = tool:main\n" for n in names)
            (info / "entry_points.txt").write_text(f"[console_scripts]\n{scripts}")

    marks = {
        "tools": "pyvenv.cfg",
        "miniforge": "conda-meta/history",
        "py": "lib/python3.11/site-packages/x.pth",
        "old": "bin/activate",
    }
    for folder, mark in marks.items():
        (tmp_path / folder / mark).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / mark).write_text("")
        (tmp_path / folder / "bin").mkdir(exist_ok=True)
        (tmp_path / folder / "bin" / "x.sh").write_text("")
        assert program(f"$ ~/{folder}/bin/x.sh") == f"~/{folder}/bin/x.sh", folder
        declare(tmp_path / folder, "x.sh")
        assert program(f"$ ~/{folder}/bin/x.sh") == "x.sh", folder
    (tmp_path / "tools-env" / "bin").mkdir(parents=True)
    for name, written in (("x.sh", "~/tools-env/bin/x.sh"), ("torchrun", "torchrun")):
        (tmp_path / "tools-env" / "bin" / name).write_text("")
        assert program(f"$ ~/tools-env/bin/{name}") == written
    # uv's installers' bins and pipx's hold no marks: uv and pytest there were this
    # machine's paths, and the spec ran pipx's pytest, not the run's environment's (review).
    pipx = tmp_path / ".local" / "share" / "pipx" / "venvs" / "tool"
    (pipx / "bin").mkdir(parents=True)
    (pipx / "pyvenv.cfg").write_text("")
    declare(pipx, "lint.sh")
    (tmp_path / ".local" / "bin").mkdir(parents=True)
    (tmp_path / ".cargo" / "bin").mkdir(parents=True)
    for linked in (".cargo/bin/uv", ".local/bin/uv", ".local/bin/pytest", ".local/bin/lint.sh"):
        name = linked.rpartition("/")[2]
        (pipx / "bin" / name).write_text("")
        (tmp_path / linked).symlink_to(pipx / "bin" / name)
        assert program(f"$ ~/{linked}") == name, linked
    # uv there is a program of its own, which the run's PATH must hold; in an environment's
    # own `bin` (`pip install uv`) its console script, as the run's environment is: it was
    # said to be a program of its own wherever it stood (review).
    (tmp_path / "tools" / "bin" / "uv").write_text("")
    declare(tmp_path / "tools", "uv", record=True)  # uv's wheel declares no entry point
    for uv, said in (
        ("~/.cargo/bin/uv", "uv, by its name (a program of its own: the run needs uv on PATH)"),
        ("~/tools/bin/uv", "an environment's console script, by its name"),
    ):
        evidence = read_ticket(f"$ {uv} run train.py{error}", workdir=work).evidence
        assert f"the command's {uv}: {said}" in evidence, uv
    # A link here whose target's folder holds no environment is no environment's program.
    (tmp_path / "tools-env" / "bin" / "y.sh").symlink_to(tmp_path / "tools-env" / "bin" / "x.sh")
    assert program("$ ~/tools-env/bin/y.sh") == "~/tools-env/bin/y.sh"
    # A program not here is the sender's, whose folder is not this one: this user's
    # `.local` without a site-packages says nothing of the sender's `.local/bin/report.sh`.
    assert program("$ ~/.local/bin/report.sh") == "report.sh"


def test_an_interpreter_and_appdata_are_no_senders_paths(tmp_path: Path) -> None:
    # _run_python writes most interpreters `python` before the sender's paths are read: these
    # reach the guards (an AppData path that is no interpreter, and interpreters it keeps as
    # the log says another version), which a test of a rewritten one never did.
    error = "Traceback (most recent call last):\nValueError: bad\n"
    (tmp_path / "src").mkdir()
    (tmp_path / "src/t.py").write_text("")
    cache = (
        "PS C:\\Users\\me\\proj> python C:\\Users\\me\\proj\\src\\t.py --cache "
        f"C:\\Users\\me\\AppData\\Local\\cache\n{error}"
    )
    read = read_ticket(cache, workdir=tmp_path)
    assert (read.command, read.sender_paths) == (
        "python src/t.py --cache C:/Users/me/AppData/Local/cache",
        (),
    )
    kept = (
        "Python version: 3.11.4\nPS C:\\Users\\me\\proj> C:\\Users\\me\\AppData\\Local\\"
        f"Programs\\Python\\Python310\\python3.10.exe C:\\Users\\me\\proj\\src\\t.py\n{error}"
    )
    read = read_ticket(kept, workdir=tmp_path)
    assert (read.command, read.sender_paths) == (
        "C:/Users/me/AppData/Local/Programs/Python/Python310/python3.10.exe src/t.py",
        (),
    )
    posix = f"Python version: 3.11.4\n$ /home/me/py310/python3.10 /home/me/proj/src/t.py\n{error}"
    read = read_ticket(posix, workdir=tmp_path)
    assert (read.command, read.sender_paths) == ("/home/me/py310/python3.10 src/t.py", ())


def test_a_cores_command_line_is_said_to_have_lost_its_quoting() -> None:
    # The kernel joins argv with blanks: `python3 -c import m; m.call()` was stated as the
    # command `python3 -c import 'm;' 'm.call()'` (a SyntaxError run), and `--run-name my
    # run` as three words, with nothing said (review).
    read = read_ticket(GDB_CORE)
    assert read.evidence[-1] == (
        "the core's command line (`Core was generated by`): its arguments' quoting is lost;"
        " check words with spaces"
    )
    for unsure in (
        "python3 -c import m; m.call()",
        "./crash --count 4 | tee log",
        "/usr/bin/python3 -u -c import m",
        "bash -c python train.py",
        # Behind a launcher, or a shell's -c among its other flags (review 14).
        "uv run python -c import os",
        "timeout 60 python3 -c import os",
        "bash -lc ./x",
        # Past an option's argument: a reader of flags alone stopped at `pipefail` and
        # stated `bash -o pipefail -c python x.py`, which runs `python` with $0 = x.py.
        "bash -o pipefail -c python x.py",
        "/bin/sh -e -o nounset -c ./x --flag",
    ):
        assert read_ticket(GDB_CORE.replace("./crash --count 4", unsure)).command is None
    # A `-c` that is the program's own (pytest's config file), not the interpreter's, loses
    # nothing: its command was refused (review).
    for sure in (
        "python -m pytest -c ci.ini tests",
        "python train.py -c cfg.yaml",
        "sh ./run.sh -c x",
        "bash -o pipefail ./run.sh -c x",
    ):
        assert read_ticket(GDB_CORE.replace("./crash --count 4", sure)).command == sure


# A real `lldb --batch -o run -k bt -- ./crash --count 4` (lldb 14, Debian 12): a C
# program's NULL strlen in a library of its own. lldb shows the frame it stopped in before
# `bt` prints the backtrace, whose frames name their module and, with debug info, file.
LLDB_RUN = """\
Our tool segfaults when given --count 4. lldb says:

```
$ lldb --batch -o run -k bt -- ./crash --count 4
(lldb) target create "./crash"
Current executable set to '/tmp/A/lldb/crash' (x86_64).
(lldb) settings set -- target.run-args  "--count" "4"
(lldb) run
Process 23584 stopped
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
    frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
Process 23584 launched: '/tmp/A/lldb/crash' (x86_64)
(lldb) bt
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
  * frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
    frame #1: 0x00007ffff7fbc121 libfoo.so`measure(s=0x0000000000000000) at foo.c:2:42
    frame #2: 0x0000555555555175 crash`main(argc=3, argv=0x00007fffffffe7f8) at crash.c:3:35
    frame #3: 0x00007ffff7df724a libc.so.6`__libc_start_call_main(main=(crash`main at \
crash.c:3:33), argc=3, argv=0x00007fffffffe7f8) at libc_start_call_main.h:58:16
    frame #4: 0x0000555555555081 crash`_start + 33
(lldb) quit
```
"""


def test_an_lldb_backtrace_gives_the_signal_the_command_and_every_frame() -> None:
    # gdb's were read; lldb's were `no failure found`, the command a TODO, no frames.
    read = read_ticket(LLDB_RUN)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.evidence[0] == "lldb: signal SIGSEGV"
    assert read.command == "./crash --count 4"
    assert read.native_frames == (
        "__strlen_evex@strlen-evex.S",
        "measure@foo.c",
        "main@crash.c",
        "__libc_start_call_main@libc_start_call_main.h",
        "_start@crash",
    )
    # lldb's other ways to name the program; a core or an attach runs none.
    for command, program in (
        ("lldb ./crash -- --count 4", "./crash --count 4"),
        ("lldb-14 -b -o run -f ./crash -- --count 4", "./crash --count 4"),
        ("lldb -c core ./crash", None),
        # lldb's options after the program are its own, not the program's.
        ("lldb ./crash --batch -o run -k bt -- --count 4", "./crash --count 4"),
        ("lldb ./crash -b -o run", "./crash"),
        ("lldb -l python ./crash -- --count 4", "./crash --count 4"),
        ("lldb --repl-language c ./crash a b", "./crash a b"),
    ):
        pasted = LLDB_RUN.replace("lldb --batch -o run -k bt -- ./crash --count 4", command)
        # The prompt line's own reading: without the run-args the driver echoed for it.
        pasted = pasted.replace('(lldb) settings set -- target.run-args  "--count" "4"\n', "")
        assert read_ticket(pasted).command == program


def test_an_lldb_sessions_run_line_gives_the_programs_arguments() -> None:
    # `$ lldb ./crash`, then `(lldb) run --count 4`: lldb's `Process N launched:` line
    # names no arguments, and the command was `./crash` alone, which does not crash.
    session = """\
```
$ lldb ./crash
(lldb) target create "./crash"
Current executable set to '/tmp/A/lldb/crash' (x86_64).
(lldb) run --count 4
Process 21888 stopped
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
    frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
Process 21888 launched: '/tmp/A/lldb/crash' (x86_64)
```
"""
    assert read_ticket(session).command == "./crash --count 4"
    for launch, command in (
        ("process launch -- --count 4", "./crash --count 4"),
        ("process launch -s -- --count 4", "./crash --count 4"),
        ("settings set -- target.run-args --count 4\n(lldb) r", "./crash --count 4"),
        # A launch's arguments are saved for the next: a second `run` ran them again.
        ("run --count 4\n(lldb) run", "./crash --count 4"),
        ("process launch -- --count 4\n(lldb) process launch", "./crash --count 4"),
        ("run --count 4\n(lldb) settings clear target.run-args\n(lldb) run", "./crash"),
        # Its options and no `--`: which words are the program's is unknown, a TODO.
        ("process launch -w /tmp --count 4", None),
        # lldb saved them: a bare launch after it ran them again, unknown too (review).
        ("process launch -e err.txt big.bin\n(lldb) run", None),
        ("process launch -e err.txt big.bin\n(lldb) process launch", None),
        ("process launch -e e.txt a\n(lldb) settings clear target.run-args\n(lldb) r", "./crash"),
        ("process launch -e e.txt big.bin\n(lldb) run x\n(lldb) run", "./crash x"),
    ):
        assert read_ticket(session.replace("run --count 4", launch)).command == command
    # A launch `-o` runs, where the paste shows the prompt line without its echo.
    by_option = session.replace("$ lldb ./crash", "$ lldb ./crash -o 'run --count 5'")
    assert read_ticket(by_option.replace("(lldb) run --count 4\n", "")).command == (
        "./crash --count 5"
    )
    # Where the paste shows them, as lldb echoes them, they count once: an appended run-arg
    # was read twice, `./crash x x` (final read).
    appended = session.replace(
        "$ lldb ./crash", "$ lldb ./crash -o 'settings append target.run-args x' -o run"
    ).replace("(lldb) run --count 4", "(lldb) settings append target.run-args x\n(lldb) run")
    assert read_ticket(appended).command == "./crash x"


# A real lldb 14 session that stopped at a breakpoint before it crashed: the breakpoint's
# stop shows a frame #0 of its own, then `c` runs on to the crash.
LLDB_BREAKPOINT = """\
```
$ lldb --batch -o 'b measure' -o run -o c -k bt -- ./crash --count 4
(lldb) target create "./crash"
Current executable set to '/tmp/A/lldb/crash' (x86_64).
(lldb) settings set -- target.run-args  "--count" "4"
(lldb) b measure
Breakpoint 1: where = libfoo.so`measure + 12 at foo.c:2:42, address = 0x0000000000001115
(lldb) run
Process 19297 stopped
* thread #1, name = 'crash', stop reason = breakpoint 1.1
    frame #0: 0x00007ffff7fbc115 libfoo.so`measure(s=0x0000000000000000) at foo.c:2:42
   1   \t#include <string.h>
-> 2   \tint measure(const char *s) { return (int)strlen(s); }
    \t                                         ^
Process 19297 launched: '/tmp/A/lldb/crash' (x86_64)
(lldb) c
Process 19297 resuming
Process 19297 stopped
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
    frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
(lldb) bt
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
  * frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
    frame #1: 0x00007ffff7fbc121 libfoo.so`measure(s=0x0000000000000000) at foo.c:2:42
    frame #2: 0x0000555555555168 crash`main(argc=3, argv=0x00007fffffffe7f8) at crash.c:4:49
    frame #3: 0x0000555555555081 crash`_start + 33
```
"""


def test_lldb_frames_are_the_crash_stops_not_an_earlier_stops() -> None:
    # The breakpoint's one-frame stop was read as the backtrace: `measure@foo.c` alone.
    crash = ("__strlen_evex@strlen-evex.S", "measure@foo.c", "main@crash.c", "_start@crash")
    read = read_ticket(LLDB_BREAKPOINT)
    assert (read.failure.signal, read.native_frames) == ("SIGSEGV", crash)
    # An attach's stop (`signal SIGSTOP`), then `c` to the crash: the same.
    attached = LLDB_BREAKPOINT.replace("breakpoint 1.1", "signal SIGSTOP").replace(
        "libfoo.so`measure(s=0x0000000000000000) at foo.c:2:42\n   1",
        "libc.so.6`__futex_wait + 24\n   1",
    )
    assert "__futex_wait" in attached
    read = read_ticket(attached)
    assert (read.failure.signal, read.native_frames) == ("SIGSEGV", crash)
    # The crash's stop without a `bt`, then another run to a breakpoint and its `bt`: the
    # later run's thread #1 was read as the crash's, its frames `main@crash.c` on.
    rerun = """\
(lldb) run
Process 100 stopped
* thread #1, name = 'crash', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
    frame #0: 0x00007ffff7f37ad8 libc.so.6`__strlen_evex at strlen-evex.S:79
Process 100 launched: '/tmp/A/lldb/crash' (x86_64)
(lldb) b main
Breakpoint 1: where = crash`main + 15 at crash.c:3:5, address = 0x0000000000001150
(lldb) run
There is a running process, kill it and restart?: [Y/n] y
Process 100 exited with status = 9 (0x00000009) killed
Process 101 launched: '/tmp/A/lldb/crash' (x86_64)
Process 101 stopped
* thread #1, name = 'crash', stop reason = breakpoint 1.1
    frame #0: 0x0000555555555150 crash`main(argc=1, argv=0x00007fffffffe7f8) at crash.c:3:5
(lldb) bt
* thread #1, name = 'crash', stop reason = breakpoint 1.1
  * frame #0: 0x0000555555555150 crash`main(argc=1, argv=0x00007fffffffe7f8) at crash.c:3:5
    frame #1: 0x0000555555555081 crash`_start + 33
"""
    read = read_ticket(rerun)
    assert (read.failure.signal, read.native_frames) == ("SIGSEGV", crash[:1])


def test_colours_whose_escape_character_a_paste_dropped_are_no_words_of_the_log() -> None:
    # A real `pytest --color=yes` run's output with its ESC characters dropped, as a web
    # form drops them, under GitHub Actions' echo of its step: `[36;1mpython -m pytest
    # ...[0m` was the command of no program, and `[31mFAILED[0m` no FAILED line.
    pytest = (DATA / "recorded" / "pytest-colour-esc-dropped.log").read_text()
    step = (
        "##[group]Run python -m pytest test_x.py\n[36;1mpython -m pytest test_x.py[0m\n"
        "shell: /usr/bin/bash -e {0}\n##[endgroup]\n"
    )
    read = read_ticket(step + pytest + "##[error]Process completed with exit code 1.\n")
    assert (read.command, read.test) == ("python -m pytest test_x.py", "test_x.py::test_div")
    assert (read.failure.exception, read.failure.message) == (
        "ZeroDivisionError",
        "division by zero",
    )
    # GitLab's job log, whose reset is `[0;m` and whose sections erase their line (`[0K`).
    gitlab = (
        'section_start:1701000000:step_script\r[0K[0K[36;1mExecuting "step_script" stage'
        "[0;m\n[32;1m$ python train.py --lr 0.1[0;m\nTraceback (most recent call last):\n"
        '  File "/builds/g/p/train.py", line 3, in <module>\nValueError: bad lr\n'
        "section_end:1701000001:step_script\r[0K[31;1mERROR: Job failed: exit code 1\n[0;m\n"
    )
    read = read_ticket(gitlab)
    assert (read.command, read.failure.message) == ("python train.py --lr 0.1", "bad lr")
    # A program's own `[10m]` in a log with no colour left is its words.
    own = "$ python x.py\nTraceback (most recent call last):\nValueError: length [10m] too long\n"
    assert read_ticket(own).failure.message == "length [10m] too long"
    # And in one with colours left, a subscript's `[mask]`, `[model]`, `[K]`, `[4K]` are
    # its words, no colour's or erase-line's.
    for coloured in ("[36;1mpython x.py[0m\n", "[32;1m$ python x.py[0;m\n"):
        read = read_ticket(
            coloured + "Traceback (most recent call last):\n"
            '  File "x.py", line 2, in <module>\n    y = x[mask]\n'
            "KeyError: 'missing [model] key: shape [K] vs [4K], [K, N] [10m]'\n"
        )
        assert (read.command, read.failure.message) == (
            "python x.py",
            "'missing [model] key: shape [K] vs [4K], [K, N] [10m]'",
        ), coloured
        # Nor a colour's shape in a message that a reset follows on no line of its own:
        # `[5m` and `[1m` were cut out of the spec's expected message.
        for message in ("ValueError: retry windows [5m, 10m] overlap", "KeyError: 'x[1m'"):
            read = read_ticket(f"{coloured}Traceback (most recent call last):\n{message}\n")
            assert message.endswith(f": {read.failure.message}"), (coloured, message)
    # A reset just before a `]` is a reset: colorlog's `[%(log_color)s%(levelname)s%(reset)s]`
    # (Hydra's log format) read `[INFO[0m]`.
    hydra = (
        "[36;1mpython x.py[0m\n[2024-01-01 00:00:00,000][__main__][[32mINFO[0m] - start\n"
        "Traceback (most recent call last):\nValueError: [[31mERROR[0m] bad\n"
    )
    assert read_ticket(hydra).failure.message == "[ERROR] bad"


def test_gdb_frames_are_the_crash_stops_not_a_breakpoints() -> None:
    # A real gdb 13 session that stopped at a breakpoint before it crashed: `bt` at the
    # breakpoint, `continue` on to the crash, `bt` again. The breakpoint's `bt` was read as
    # the backtrace: `measure@foo.c`, `main@crash.c`.
    read = read_ticket(ticket("gdb-breakpoint-then-crash.md"))
    assert (read.failure.signal, read.native_frames) == (
        "SIGSEGV",
        ("__strlen_evex@strlen-evex.S", "measure@foo.c", "main@crash.c"),
    )
    assert read.command == "./crash --count 4"
    # A live crash with no `bt`, then `break main` and another `run`, whose `thread apply
    # all bt` printed thread 1's breakpoint frames: they were read as the crash's.
    rerun = (
        '(gdb) run x\nStarting program: /tmp/mt x\n\nThread 1 "mt" received signal SIGSEGV,'
        " Segmentation fault.\n__strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79\n"
        "(gdb) break main\nBreakpoint 1 at 0x5555555551c0: file mt.c, line 9.\n(gdb) run\n"
        "Starting program: /tmp/mt x\n\n"
        'Thread 1 "mt" hit Breakpoint 1, main (argc=2, argv=0x7fffffffe7e8) at mt.c:9\n'
        '(gdb) thread apply all bt\n\nThread 1 (Thread 0x7ffff7dcd740 (LWP 11360) "mt"):\n'
        "#0  main (argc=2, argv=0x7fffffffe7e8) at mt.c:9\n"
    )
    read = read_ticket(rerun)
    assert (read.failure.signal, read.native_frames) == ("SIGSEGV", ())


def test_gdb_frames_are_the_crashed_threads_among_every_threads() -> None:
    # Real gdb 13 sessions of a program whose main thread crashed beside a sleeping one,
    # `thread apply all bt` live and on its core: the sleeping thread's backtrace, printed
    # first, was read as the crash's (live), or the core's stop's one frame (core). The
    # same where the session is pasted as an indented code block (a list item's).
    crash = ("__strlen_evex@strlen-evex.S", "measure@foo.c", "main@mt.c")
    for name in ("gdb-all-threads.md", "gdb-core-all-threads.md"):
        for indent in ("", "    "):
            text = "\n".join(indent + line for line in ticket(name).split("\n"))
            read = read_ticket(text)
            assert (read.failure.signal, read.native_frames, read.command) == (
                "SIGSEGV",
                crash,
                "./mt x",
            ), (name, indent)


def test_lldb_frames_are_the_crashed_threads_among_every_threads() -> None:
    # A real lldb session of a program whose second thread crashed, `thread backtrace all`
    # printing thread #1's backtrace first: the stop's one frame #0 was read, then
    # thread #1's frame #0 ended the backtrace.
    read = read_ticket(ticket("lldb-all-threads.md"))
    assert (read.failure.signal, read.native_frames) == (
        "SIGSEGV",
        (
            "__strlen_evex@strlen-evex.S",
            "measure@foo.c",
            "work@mt2.c",
            "start_thread@pthread_create.c",
            "__clone3@clone3.S",
        ),
    )
    # A paste that begins at the stop, no `Process N stopped` above it: the stop's own
    # batch-mode `Process N launched` after it ended its session, `bt all` unread.
    text = ticket("lldb-all-threads.md")
    read = read_ticket("```\n" + text[text.index("* thread #2") :])
    assert read.native_frames == (
        "__strlen_evex@strlen-evex.S",
        "measure@foo.c",
        "work@mt2.c",
        "start_thread@pthread_create.c",
        "__clone3@clone3.S",
    )


def test_the_frame_up_shows_before_bt_is_no_backtrace_of_its_own() -> None:
    # A real gdb 13 session: `up` shows frame #1 alone, then `bt` the backtrace from #0.
    # The lone #1 was read as the backtrace's first frame, and bt's #0 ended it.
    crash = ("__strlen_evex@strlen-evex.S", "measure@foo.c", "main@crash.c")
    read = read_ticket(ticket("gdb-up-then-bt.md"))
    assert read.native_frames == crash
    # On its core gdb shows the stop's frame as `#0 ...`, then `up` its #1: the two were
    # read as the backtrace, bt's #0 ending it (main@crash.c lost).
    strlen = "#0  __strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79\n"
    measure = "#1  0x00007ffff7fbc121 in measure (s=0x0) at foo.c:2\n"
    main = "#2  0x0000555555555164 in main (argc=3, argv=0x7fffffffe7d8) at crash.c:3\n"
    core = (
        "$ gdb ./crash core\nCore was generated by `./crash --count 4'.\n"
        "Program terminated with signal SIGSEGV, Segmentation fault.\n"
        f"{strlen}79\t../sysdeps/x86_64/multiarch/strlen-evex.S: No such file or directory.\n"
        f"(gdb) up\n{measure}2\tint measure(const char *s) {{ return (int)strlen(s); }}\n"
        f"(gdb) bt\n{strlen}{measure}{main}"
    )
    assert read_ticket(core).native_frames == crash
    # And `frame 0` after the backtrace shows its #0 again: no backtrace of its own either.
    assert read_ticket(f"{core}(gdb) frame 0\n{strlen}").native_frames == crash
    # Nor `up`, `frame 2` or `down` after it: each frame was read as the next caller
    # (`main`, `measure` after `main`).
    for shown in (f"(gdb) up\n{measure}", f"(gdb) frame 2\n{main}", f"(gdb) up\n{measure}" * 2):
        assert read_ticket(f"{core}{shown}").native_frames == crash, shown
    # On a core, `up`, `up`, `down`, then `bt`: the four frames the walk showed were the
    # longer printing of the stack, `measure` after `main`.
    walk = core.replace(f"(gdb) bt\n{strlen}{measure}{main}", "")
    walk += f"(gdb) up\n{main}(gdb) down\n{measure}(gdb) bt\n{strlen}{measure}{main}"
    assert read_ticket(walk).native_frames == crash


def test_a_gdb_stop_at_a_signal_that_is_no_crash_is_not_the_crash() -> None:
    # Real gdb 13 sessions. A program raised a signal it handles (SIGUSR1), which gdb
    # stops at, then crashed: the SIGUSR1 was the crash's signal, its `raise` frames the
    # backtrace.
    read = read_ticket(ticket("gdb-handled-signal-then-crash.md"))
    assert (read.failure.signal, read.native_frames) == (
        "SIGSEGV",
        ("__strlen_evex@strlen-evex.S", "main@usr1.c"),
    )
    # SIGINT stopped a hung program, as Ctrl-C does: it was a crash of SIGINT.
    read = read_ticket(ticket("gdb-interrupted-hang.md"))
    assert (read.failure.outcome, read.failure.signal) == ("hang", None)


def test_an_lldb_mach_exception_is_read_as_its_linux_signal() -> None:
    # macOS's lldb says a Mach exception, not a signal: the fault's signal on Linux.
    mac = """\
* thread #1, queue = 'com.apple.main-thread', stop reason = EXC_BAD_ACCESS (code=1, address=0x0)
  * frame #0: 0x00000001000003f4 crash`measure(s=0x0000000000000000) at crash.c:4:10
    frame #1: 0x0000000100000420 crash`main(argc=3, argv=0x000000016fdff0e8) at crash.c:8:3
    frame #2: 0x000000018a0d60e0 dyld`start + 2360
"""
    read = read_ticket(mac)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.evidence == ("lldb: EXC_BAD_ACCESS (code=1, address=0x0) (SIGSEGV on Linux)",)
    assert read.native_frames == ("measure@crash.c", "main@crash.c", "start@dyld")
    # A breakpoint's stop is no crash.
    stopped = mac.replace("EXC_BAD_ACCESS (code=1, address=0x0)", "breakpoint 1.1")
    assert read_ticket(stopped).failure.signal is None
    # A trap instruction's (`brk` on arm64: `__builtin_trap`, Swift's and Rust's traps) was
    # `no failure found`, then SIGTRAP, which only Linux aarch64 raises: x86_64's `ud2` is
    # SIGILL, so a crash with no signal expected (review).
    trapped = read_ticket(mac.replace("EXC_BAD_ACCESS (code=1, address=0x0)", TRAP))
    assert (trapped.failure.outcome, trapped.failure.signal) == ("crash", None)
    assert trapped.evidence == (
        f"lldb: {TRAP} (SIGTRAP on Linux aarch64, SIGILL on x86_64: no signal expected)",
    )
    expect = skeleton(trapped, "t.md").expect
    assert (expect["outcome"], "signal" in expect) == ("crash", False)
    # An EXC_CRASH that names no signal is none, nor where the failure begins: the prompt
    # before the traceback after it ran the program, not the one before it.
    unnamed = """\
$ python prep.py
* thread #1, queue = 'com.apple.main-thread', stop reason = EXC_CRASH (code=0, subcode=0x0)
$ python train.py
Traceback (most recent call last):
  File "train.py", line 3, in <module>
ValueError: bad
"""
    read = read_ticket(unnamed)
    assert (read.failure.signal, read.failure.exception) == (None, "ValueError")
    assert read.command == "python train.py"


TRAP = "EXC_BREAKPOINT (code=1, subcode=0x100003f70)"


# A real `python -m pytest -x tests/test_ops.py` whose second test died of SIGSEGV
# (ctypes.string_at(0)), without `-v`: the progress line names the file alone, and the
# dump's frames (a plugin's server thread first, then the current one) name the test.
PYTEST_X_SEGFAULT = """\
```
$ python -m pytest -x tests/test_ops.py
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
rootdir: /tmp/e
plugins: rerunfailures-16.7
collected 3 items

tests/test_ops.py .Fatal Python error: Segmentation fault

Thread 0x00007fa3ae3746c0 (most recent call first):
  File "/usr/lib/python3.11/socket.py", line 294 in accept
  File "/v/site-packages/pytest_rerunfailures.py", line 921 in run_server
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007fa3b02a0b80 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/tmp/e/tests/test_ops.py", line 9 in test_native_call
  File "/v/site-packages/_pytest/python.py", line 187 in pytest_pyfunc_call
  File "/v/site-packages/pytest/__main__.py", line 9 in <module>
  File "<frozen runpy>", line 198 in _run_module_as_main
Segmentation fault (core dumped)
```
"""


def test_a_pytest_crash_without_v_names_the_test_by_the_dumps_frame(tmp_path: Path) -> None:
    # It named no test (`-v`'s lines alone were read): a spec expecting the crash in any
    # test of the file, where the dump's frame in the progress line's file names it.
    read = read_ticket(PYTEST_X_SEGFAULT)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.failure.phase == "tests/test_ops.py::test_native_call"
    assert skeleton(read, "t.md").expect["phase"] == "tests/test_ops.py::test_native_call"
    # A test method: its class from the file in the workdir, the node id a run reports.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_ops.py").write_text(
        "import ctypes\n\n\nclass TestOps:\n    def test_add(self):\n        pass\n\n"
        "    def test_native_call(self):\n        ctypes.string_at(0)\n"
    )
    read = read_ticket(PYTEST_X_SEGFAULT.replace("/tmp/e/", ""), workdir=tmp_path)
    assert read.failure.phase == "tests/test_ops.py::TestOps::test_native_call"
    # A helper of the test's file it called is the innermost frame there, not the test.
    helper = PYTEST_X_SEGFAULT.replace(
        '  File "/tmp/e/tests/test_ops.py", line 9 in test_native_call\n',
        '  File "/tmp/e/tests/test_ops.py", line 4 in _native\n'
        '  File "/tmp/e/tests/test_ops.py", line 9 in test_native_call\n',
    )
    assert read_ticket(helper).failure.phase == "tests/test_ops.py::test_native_call"


def test_a_pytest_crash_in_a_files_first_test_names_the_test() -> None:
    # The file's first test crashed before pytest printed any progress character
    # (`tests/test_ops.py Fatal Python error`): no test was named (review).
    first = PYTEST_X_SEGFAULT.replace("tests/test_ops.py .Fatal", "tests/test_ops.py Fatal")
    read = read_ticket(first)
    assert read.failure.phase == "tests/test_ops.py::test_native_call"


def test_a_pytest_crash_in_a_fixture_of_the_tests_file_names_no_test() -> None:
    # The fixture `lib`, the outermost frame in the file, was named as the test
    # (`tests/test_ops.py::lib`), which no run's markers report: every attempt missed.
    fixture = PYTEST_X_SEGFAULT.replace(
        '  File "/tmp/e/tests/test_ops.py", line 9 in test_native_call\n',
        '  File "/tmp/e/tests/test_ops.py", line 9 in lib\n'
        '  File "/v/site-packages/_pytest/fixtures.py", line 900 in call_fixture_func\n',
    )
    read = read_ticket(fixture)
    assert read.failure.outcome == "crash"
    assert read.failure.phase is None
    assert read.test is None


def _ci_lines(lines: list[str]) -> str:
    """`lines` as GitHub Actions' raw log shows them: a clock before each."""
    return "".join(f"2026-12-07T04:50:{n:02d}.1370000Z {line}\n" for n, line in enumerate(lines))


# A GitHub Actions log (the raw one: a clock on every line, pytest's colours), the failing
# step's `env:` between setup-python's variables and its output, more steps after it.
CI_STEP_ENV = _ci_lines(
    [
        "##[group]Run python -m pytest tests/test_load.py",
        "python -m pytest tests/test_load.py",
        "shell: /usr/bin/bash -e {0}",
        "env:",
        "  pythonLocation: /opt/hostedtoolcache/Python/3.11.7/x64",
        "  UV_CACHE_DIR: /home/runner/work/_temp/setup-uv-cache",
        "  JAVA_HOME: /opt/hostedtoolcache/Java_Temurin-Hotspot_jdk/17.0.9-9/x64",
        "  MY_FAST_PATH: 1",
        "  HF_TOKEN: hf_kQzLmNpRsTuVwXyZaBcDeFgHiJkLmNoPqR",
        "  DATABASE_URL: postgres://ci:s3cretPassw0rd@db.internal:5432/test",
        "  API_KEY: ***",
        "##[endgroup]",
        "\x1b[1m=================== test session starts ===================\x1b[0m",
        "platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0",
        "collected 3 items",
        "",
        "tests/test_load.py \x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\x1b[32m.\x1b[0m\x1b[31m [100%]",
        "\x1b[1m\x1b[31mE           ValueError: batch size 16 exceeds buffer of 8 rows\x1b[0m",
        "\x1b[31mFAILED\x1b[0m tests/test_load.py::\x1b[1mtest_big\x1b[0m - ValueError: batch size"
        " 16 exceeds buffer of 8 rows",
        "##[error]Process completed with exit code 1.",
        "##[group]Run actions/upload-artifact@v4",
        "with:",
        "  name: logs",
        "##[endgroup]",
        "Post job cleanup.",
    ]
)


def test_a_ci_steps_env_is_a_todo_item_each_secret_unwritten() -> None:
    # The step's `env:` (the workflow's MY_FAST_PATH, which the failure needs) was lost:
    # the skeleton neither set it nor asked, and every rerun passed. A setup action's
    # runner paths (setup-uv's UV_CACHE_DIR, JAVA_HOME) are the machine's, no item.
    ticket = read_ticket(CI_STEP_ENV)
    assert ticket.command == "python -m pytest tests/test_load.py"
    assert [name for name, _ in ticket.step_env] == [
        "MY_FAST_PATH",
        "HF_TOKEN",
        "DATABASE_URL",
        "API_KEY",
    ]
    draft = skeleton(ticket, "ci.log")
    items = [item for item in draft.todo if item.startswith("environment.env.")]
    assert items[0] == (
        "environment.env.MY_FAST_PATH: the CI step's env sets MY_FAST_PATH=1 for the command "
        "(its `env:` under the step's `Run`): set it here if the failure needs it, or drop "
        "this item"
    )
    assert [item.split(":", 1)[0] for item in items[1:]] == [
        "environment.env.HF_TOKEN",
        "environment.env.DATABASE_URL",
        "environment.env.API_KEY",
    ]
    assert all("(a secret: its value is not written)" in item for item in items[1:])
    written = render_spec(draft)
    assert "hf_kQz" not in written
    assert "s3cret" not in written


@pytest.mark.parametrize(
    "path",
    [
        "/Users/runner/work/_temp/setup-uv-cache",
        "/Users/runner/hostedtoolcache/Python/3.11.7/arm64",
        "C:\\hostedtoolcache\\windows\\Python\\3.11.7\\x64",
        "D:\\a\\_temp\\setup-uv-cache",
        "/home/ci/actions-runner/_work/_tool/Python/3.11.7/x64",
        "/opt/hostedtoolcache",
    ],
)
def test_a_setup_actions_path_on_any_runner_is_no_step_env_item(path: str) -> None:
    # Only GitHub-hosted Linux prefixes were known: on macOS, Windows or a self-hosted
    # runner, setup-uv's UV_CACHE_DIR was a TODO item naming the runner's path (review).
    log = CI_STEP_ENV.replace("/home/runner/work/_temp/setup-uv-cache", path)
    assert path in log
    assert "UV_CACHE_DIR" not in [name for name, _ in read_ticket(log).step_env]


def test_a_ci_steps_secret_the_program_prints_is_masked_in_the_spec() -> None:
    # The step's WANDB_API_KEY was left out of its TODO item, but the traceback that
    # printed it was quoted in full in the spec's expect and description (review).
    key = "0123456789abcdef0123456789abcdef01234567"
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "env:",
            f"  WANDB_API_KEY: {key}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            f"ValueError: login failed for key {key}",
            "##[error]Process completed with exit code 1.",
        ]
    )
    written = render_spec(skeleton(read_ticket(log), "ci.log"))
    assert "ValueError" in written
    assert "0123456789abcdef" not in written


def test_a_ci_steps_url_secret_masks_its_credential_not_its_host() -> None:
    # A URL under a secret-looking name was masked whole: every 6 characters of it, its
    # host and `https:`, were masked in the spec's description and messages (review).
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "env:",
            "  DATABASE_URL: postgres://ci:s3cretPassw0rd@db.example.com:5432/app",
            "  PIP_EXTRA_INDEX_URL: https://__token__:abcDEF123456@pypi.example.com/simple",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "ConnectionError: connecting to db.example.com:5432 via"
            " postgres://other@db.example.com/app (password s3cretPassw0rd)",
            "##[error]Process completed with exit code 1.",
        ]
    )
    draft = skeleton(read_ticket(log), "ci.log")
    written = render_spec(draft)
    assert "db.example.com:5432 via postgres://other@db.example.com/app" in written
    assert "s3cret" not in written
    assert "abcDEF123456" not in written
    items = [item for item in draft.todo if item.startswith("environment.env.")]
    assert [item.split(":", 1)[0] for item in items] == [
        "environment.env.DATABASE_URL",
        "environment.env.PIP_EXTRA_INDEX_URL",
    ]
    assert all("(a secret: its value is not written)" in item for item in items)


def test_a_ci_steps_url_with_a_query_is_masked_whole() -> None:
    # The credential alone was masked where the URL's query held a token of no shape of its
    # own (`?token=`), which the spec's message then printed (review 14).
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "env:",
            "  AUTH_URL: https://u:pw123456@api.example.com/x?token=letmeinplease",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "ConnectionError: the server refused token letmeinplease",
            "##[error]Process completed with exit code 1.",
        ]
    )
    written = render_spec(skeleton(read_ticket(log), "ci.log"))
    assert "pw123456" not in written
    assert "letmeinplease" not in written


def test_a_windows_first_chance_fault_before_a_pytest_failure_is_no_crash() -> None:
    # The check for what came after the fault read pytest's FAILED line with a pattern
    # anchored to the whole text, so pytest's own report (no `Traceback` line) never counted
    # and the fault read crash SIGSEGV (review 14).
    ticket = read_ticket(
        "$ pytest tests/test_a.py\n"
        "Windows fatal exception: access violation\n\n"
        "Current thread 0x00001a2c (most recent call first):\n"
        '  File "C:\\w\\tests\\test_a.py", line 3 in test_x\n\n'
        "=================================== FAILURES ===================================\n"
        "E   AssertionError: boom\n"
        "FAILED tests/test_a.py::test_x - AssertionError: boom\n"
    )
    assert ticket.failure is not None
    assert ticket.failure.outcome == "error"
    assert ticket.failure.signal is None


def test_a_ci_steps_secret_under_a_harmless_name_is_not_written() -> None:
    # An option's secret (`--password X`) and a DSN's `password=X` under names no secret
    # rule reads were written in the TODO item and the spec (review).
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "env:",
            "  EXTRA_ARGS: --password 9fK2pQ7xLm3",
            "  CONN: host=db user=ci password=Sup3rS3cret!",
            "  MY_FAST_PATH: 1",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "ValueError: bad",
            "##[error]Process completed with exit code 1.",
        ]
    )
    draft = skeleton(read_ticket(log), "ci.log")
    items = [item for item in draft.todo if item.startswith("environment.env.")]
    assert [("(a secret: its value is not written)" in item) for item in items] == [
        True,
        True,
        False,
    ]
    written = render_spec(draft)
    assert "9fK2pQ7" not in written
    assert "Sup3rS3cret" not in written


# A download step that logged a caught traceback and succeeded, then a lint step that
# failed with no traceback: neither is the failure a later step shows.
_CAUGHT_THEN_LINT = [
    "##[group]Run python scripts/download_data.py",
    "python scripts/download_data.py",
    "shell: /usr/bin/bash -e {0}",
    "##[endgroup]",
    "Traceback (most recent call last):",
    '  File "scripts/download_data.py", line 9, in fetch',
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "downloaded 3 files",
    "##[group]Run ruff check .",
    "ruff check .",
    "shell: /usr/bin/bash -e {0}",
    "##[endgroup]",
    "src/x.py:1:8: F401 [*] `os` imported but unused",
    "##[error]Process completed with exit code 1.",
]


def test_a_ci_logs_failed_step_shows_its_failure_in_its_own_lines() -> None:
    # A download step logged a caught traceback and succeeded, a lint step failed with no
    # traceback: the search for "a failure shown" read the whole log up to the lint step's
    # end, and the download's ConnectionResetError and command were the failure (review).
    log = _ci_lines(
        [
            *_CAUGHT_THEN_LINT,
            "##[group]Run python -m pytest tests/test_load.py",
            "python -m pytest tests/test_load.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "E           ValueError: batch size 16 exceeds buffer of 8 rows",
            "FAILED tests/test_load.py::test_big - ValueError: batch size 16 exceeds buffer",
            "##[error]Process completed with exit code 1.",
            "##[group]Run actions/upload-artifact@v4",
            "##[endgroup]",
        ]
    )
    read = read_ticket(log)
    assert read.failure.exception == "ValueError"
    assert read.command == "python -m pytest tests/test_load.py"
    assert read.evidence[-1] == (
        "GitHub Actions: the failure read from step 'Run python -m pytest tests/test_load.py'"
        " (the first failed step that shows one); 1 later step set aside"
    )


def test_a_ci_step_past_its_time_limit_is_the_failure_not_a_later_steps() -> None:
    # A step that timed out prints no exit code line: an `if: always()` step's exception
    # after it was read as the failure, with its command (review).
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "epoch 1",
            "##[error]The action 'Run python train.py' has timed out after 5 minutes.",
            "##[group]Run python upload_metrics.py",
            "python upload_metrics.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "upload_metrics.py", line 3, in <module>',
            "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'",
            "##[error]Process completed with exit code 1.",
        ]
    )
    read = read_ticket(log)
    assert (read.failure.outcome, read.command) == ("hang", "python train.py")
    assert read.failure.exception is None


_TRAIN_STEP = [
    "##[group]Run python train.py",
    "python train.py",
    "shell: /usr/bin/bash -e {0}",
    "##[endgroup]",
    "epoch 1",
]


@pytest.mark.parametrize("later", [[], ["##[group]Run actions/upload-artifact@v4", "##[endgroup]"]])
@pytest.mark.parametrize(
    ("end", "outcome", "signal"),
    [
        (
            ["##[error]The action 'Run python train.py' has timed out after 5 minutes."],
            "hang",
            None,
        ),
        (
            ["Segmentation fault (core dumped)", "##[error]Process completed with exit code 139."],
            "crash",
            "SIGSEGV",
        ),
    ],
)
def test_an_earlier_ci_steps_caught_traceback_is_not_the_failed_steps_failure(
    later: list[str], end: list[str], outcome: str, signal: str | None
) -> None:
    # The step was chosen by its own lines, but its failure was read from the whole log
    # before it: a download step's caught ConnectionResetError became the exception of a
    # step that timed out or segfaulted, a spec no run of train.py reproduces (review).
    read = read_ticket(_ci_lines([*_CAUGHT_THEN_LINT, *_TRAIN_STEP, *end, *later]))
    assert (read.failure.outcome, read.failure.signal) == (outcome, signal)
    assert read.failure.exception is None
    assert read.command == "python train.py"


def test_a_failed_steps_output_line_that_begins_with_run_is_no_step_header() -> None:
    # `Run summary: ...` after the traceback was taken for a step's header: the failed step
    # held no failure, and the later `if: always()` step's FileNotFoundError and command
    # became the spec (review).
    log = _ci_lines(
        [
            "##[group]Run python train.py",
            "python train.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "KeyError: 'lr'",
            "Run summary: 0 epochs finished",
            "##[error]Process completed with exit code 1.",
            "##[group]Run python upload_metrics.py",
            "python upload_metrics.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "upload_metrics.py", line 3, in <module>',
            "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'",
            "##[error]Process completed with exit code 1.",
        ]
    )
    read = read_ticket(log)
    assert (read.failure.exception, read.command) == ("KeyError", "python train.py")
    # The web page's copy has no `##[group]`: a bare `Run` line is a header only with its
    # script indented below it.
    page = (
        "```\nRun python train.py\n  python train.py\n  shell: /usr/bin/bash -e {0}\n"
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "KeyError: 'lr'\nRun 3/5 finished\nError: Process completed with exit code 1.\n"
        "Run python upload_metrics.py\n  python upload_metrics.py\n"
        "  shell: /usr/bin/bash -e {0}\nTraceback (most recent call last):\n"
        '  File "upload_metrics.py", line 3, in <module>\n'
        "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'\n"
        "Error: Process completed with exit code 1.\n```\n"
    )
    read = read_ticket(page)
    assert (read.failure.exception, read.command) == ("KeyError", "python train.py")


def test_a_ci_log_copied_from_the_web_page_is_read_as_the_raw_log() -> None:
    # The web page shows `##[error]` as `Error: `: a later step's exception was read
    # under the failed step's command, and a step's timeout as no outcome (review).
    page = (
        "```\nRun python train.py\n  python train.py\n  shell: /usr/bin/bash -e {0}\n"
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "ValueError: bad batch\nError: Process completed with exit code 1.\n"
        "Run python upload_metrics.py\n  python upload_metrics.py\n"
        "  shell: /usr/bin/bash -e {0}\nTraceback (most recent call last):\n"
        '  File "upload_metrics.py", line 3, in <module>\n'
        "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'\n"
        "Error: Process completed with exit code 1.\n```\n"
    )
    read = read_ticket(page)
    assert (read.failure.exception, read.command) == ("ValueError", "python train.py")
    timed_out = (
        "```\nRun python train.py\n  python train.py\n  shell: /usr/bin/bash -e {0}\n"
        "epoch 1\nError: The action 'Run python train.py' has timed out after 5 minutes.\n"
        "```\n"
    )
    assert read_ticket(timed_out).failure.outcome == "hang"


def test_a_ci_logs_failure_is_the_first_failed_steps_not_a_later_steps() -> None:
    # A step run `if: always()` after the failed one raised too: its FileNotFoundError was
    # read as the failure, beside the failed step's command (train.py), a spec no run of
    # train.py reproduces.
    log = _ci_lines(
        [
            "##[group]Run python train.py --bs 16",
            "python train.py --bs 16",
            "shell: /usr/bin/bash -e {0}",
            "env:",
            "  pythonLocation: /opt/hostedtoolcache/Python/3.11.7/x64",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "/home/runner/work/l/l/train.py", line 7, in load',
            '    raise ValueError(f"batch size {bs} exceeds buffer of 8 rows")',
            "ValueError: batch size 16 exceeds buffer of 8 rows",
            "##[error]Process completed with exit code 1.",
            "##[group]Run python scripts/upload_metrics.py",
            "python scripts/upload_metrics.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "/home/runner/work/l/l/scripts/upload_metrics.py", line 4, in <module>',
            '    open("metrics.json")',
            "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'",
            "##[error]Process completed with exit code 1.",
        ]
    )
    read = read_ticket(log)
    assert read.command == "python train.py --bs 16"
    assert (read.failure.outcome, read.failure.exception) == ("error", "ValueError")
    assert read.machine.python == "3.11"


# A real `py-spy dump` (0.4) of a two-thread deadlock: each thread holds the lock the other
# waits for.
PYSPY_DEADLOCK = """\
serve.py deadlocks after printing step 1:

```
$ py-spy dump --pid 5461
Process 5461: python serve.py --workers 4
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 5461 (idle): "MainThread"
    transfer (serve.py:8)
    main (serve.py:15)
    <module> (serve.py:19)
Thread 5480 (idle): "t2"
    transfer (serve.py:8)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
```
"""


def test_a_py_spy_dump_of_several_threads_gives_each_threads_stack() -> None:
    # The main thread's alone was quoted: the deadlock's other side, t2, was lost.
    read = read_ticket(PYSPY_DEADLOCK)
    assert read.failure.outcome == "hang"
    assert read.python_frames == ("serve.py:<module>", "serve.py:main", "serve.py:transfer")
    assert [(t.thread, t.main) for t in read.threads] == [
        ('5461 (idle): "MainThread"', True),
        ('5480 (idle): "t2"', False),
    ]
    assert read.threads[1].frames[-1] == "serve.py:transfer"
    description = skeleton(read, "t.md").description
    assert '  thread 5480 (idle): "t2":\n' in description


@pytest.mark.parametrize(
    ("last", "outcome"),
    [
        ("##[error]The action 'Run python serve.py' has timed out after 5 minutes.", "hang"),
        (
            "##[error]The job running on runner GitHub Actions 2 has exceeded the maximum "
            "execution time of 10 minutes.",
            "hang",
        ),
        # The newer wording, a Go duration.
        ("##[error]The job has exceeded the maximum execution time of 6h0m0s", "hang"),
        # A person's cancel, or a fail-fast matrix's: no bound said, no hang.
        ("##[error]The operation was canceled.", None),
    ],
)
def test_github_actions_timeout_of_a_step_or_job_is_a_hang(last: str, outcome: str | None) -> None:
    # It was `no failure found`: the step ran on to its timeout-minutes, as a Slurm job's
    # time limit (a hang) does.
    log = _ci_lines(
        [
            "##[group]Run python serve.py",
            "python serve.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "step 1",
            last,
        ]
    )
    read = read_ticket(log)
    assert read.failure.outcome == outcome
    assert read.command == "python serve.py"


def test_a_ci_step_that_failed_with_no_failure_shown_is_passed_over() -> None:
    # A lint step run with continue-on-error failed first: the failure is the test step's.
    log = _ci_lines(
        [
            "##[group]Run ruff check .",
            "ruff check .",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "train.py:1:8: F401 `os` imported but unused",
            "##[error]Process completed with exit code 1.",
            "##[group]Run python train.py --bs 16",
            "python train.py --bs 16",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "/home/runner/work/l/l/train.py", line 7, in load',
            "ValueError: batch size 16 exceeds buffer of 8 rows",
            "##[error]Process completed with exit code 1.",
            "##[group]Run actions/upload-artifact@v4",
            "##[endgroup]",
        ]
    )
    read = read_ticket(log)
    assert read.command == "python train.py --bs 16"
    assert (read.failure.outcome, read.failure.exception) == ("error", "ValueError")


def test_github_actions_timeout_minutes_are_the_hangs_run_timeout() -> None:
    # The hang was seen at the workflow's 5 minutes; the skeleton's 10m passed a program
    # that ends in 7.
    log = _ci_lines(
        [
            "##[group]Run python serve.py",
            "python serve.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "##[error]The action 'Run python serve.py' has timed out after 5 minutes.",
        ]
    )
    draft = skeleton(read_ticket(log), "ci.log")
    assert draft.timeout == "5m"
    assert (
        "GitHub Actions ended it after 5 minutes (its timeout-minutes): run.timeout is that "
        "bound, where the hang was seen"
    ) in draft.header


@pytest.mark.parametrize(
    "last",
    [
        "##[error]The job running on runner GitHub Actions 2 has exceeded the maximum "
        "execution time of 360 minutes.",
        "##[error]The job has exceeded the maximum execution time of 6h0m0s",
    ],
)
def test_github_actions_job_limit_is_no_six_hour_run_timeout(last: str) -> None:
    # GitHub's default job limit (360 minutes, its earlier steps included) made every
    # attempt of the hang run 6 hours, and the header called it its timeout-minutes.
    log = _ci_lines(
        [
            "##[group]Run python serve.py",
            "python serve.py",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            last,
        ]
    )
    read = read_ticket(log)
    assert (read.ci_minutes, read.ci_limit) == (360, "job")
    draft = skeleton(read, "ci.log")
    assert draft.timeout == "10m"
    assert (
        "GitHub Actions ended the job at the job's limit (360 minutes, its earlier steps "
        "included): run.timeout is the smaller of that and 10m"
    ) in draft.header


def test_a_rich_traceback_pasted_is_the_error_with_its_stack() -> None:
    # rich 15's box, as `rich.traceback.install()` prints an uncaught error.
    box = """\
╭──────────── Traceback (most recent call last) ────────────╮
│ /tmp/areaF/r/app.py:14 in <module>                        │
│                                                           │
│ ❱ 14 main()                                               │
│                                                           │
│ /tmp/areaF/r/app.py:12 in main                            │
│                                                           │
│ ❱ 12 │   │   raise ValueError(f"batch size {bs} exceeds") │
╰───────────────────────────────────────────────────────────╯
ValueError: batch size 16 exceeds buffer of 8 rows
"""
    read = read_ticket("```\n$ python app.py --bs 16\n" + box + "```\n")
    assert (read.failure.outcome, read.failure.exception) == ("error", "ValueError")
    assert read.python_frames == ("/tmp/areaF/r/app.py:<module>", "/tmp/areaF/r/app.py:main")
    # On a legacy Windows console rich draws SQUARE's corners: the box was not unboxed.
    square = box.translate(str.maketrans("╭╮╰╯", "┌┐└┘"))
    read = read_ticket("```\n$ python app.py --bs 16\n" + square + "```\n")
    assert read.python_frames == ("/tmp/areaF/r/app.py:<module>", "/tmp/areaF/r/app.py:main")


def test_a_gdb_batch_sessions_program_is_the_one_after_args() -> None:
    # `gdb -batch` prints no `Starting program:` line: the command was a TODO, where the
    # prompt line names it after `--args` (a real gdb 13 session of a NULL strlen).
    text = """\
```
$ gdb -q -batch -ex run -ex bt --args ./crash --count 4
Program received signal SIGSEGV, Segmentation fault.
__strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79
79\t../sysdeps/x86_64/multiarch/strlen-evex.S: No such file or directory.
#0  __strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79
#1  0x0000555555555171 in measure (s=0x0) at crash.c:4
#2  0x00005555555551e9 in main (argc=3, argv=0x7fffffffe7d8) at crash.c:8
```
"""
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.command == "./crash --count 4"
    assert read.native_frames[1:] == ("measure@crash.c", "main@crash.c")


@pytest.mark.parametrize(
    "line",
    [
        "$ cuda-gdb -batch -ex run --args ./crash --count 4",
        "$ /usr/bin/gdb -batch -ex run --args ./crash --count 4",
        "I ran `gdb-multiarch -batch -ex run --args ./crash --count 4` and got:",
    ],
)
def test_another_gdbs_program_is_the_one_after_args(line: str) -> None:
    # Only a bare `gdb` was read: cuda-gdb, gdb-multiarch and a gdb by its path left the
    # command a TODO (quoted in prose: a program tickets show, here python).
    line = line.replace("./crash", "python train.py") if "`" in line else line
    text = f"{line}\nProgram received signal SIGSEGV, Segmentation fault.\n"
    expected = "python train.py --count 4" if "`" in line else "./crash --count 4"
    assert read_ticket(text).command == expected


def test_a_py_spy_native_dump_keeps_its_python_frames() -> None:
    # `py-spy dump --native` puts C frames among the Python ones: the first ended the
    # thread's stack, and the description quoted none.
    native = PYSPY_DEADLOCK.replace(
        '"MainThread"\n',
        '"MainThread"\n    0x7f6f3bea3f16 (libc.so.6)\n'
        "    PyThread_acquire_lock_timed (libpython3.11.so.1.0)\n",
    ).replace('"t2"\n', '"t2"\n    lock_PyThread_acquire_lock (libpython3.11.so.1.0)\n')
    read = read_ticket(native)
    assert read.python_frames == ("serve.py:<module>", "serve.py:main", "serve.py:transfer")
    assert read.threads[1].frames[-1] == "serve.py:transfer"


def test_a_py_spy_dump_s_debug_info_templates_and_locals_are_no_python_frames() -> None:
    # A libpython built with -g prints C frames with file:line, read as Python frames; a
    # C++ template's name (spaces) and `--locals`' lines ended the thread's stack.
    dump = PYSPY_DEADLOCK.replace(
        '"MainThread"\n',
        '"MainThread"\n    __futex_abstimed_wait_common (futex-internal.c:57)\n'
        "    PyThread_acquire_lock_timed (thread_pthread.h:483)\n"
        "    std::_Function_handler<void (), at::Task>::_M_invoke (libtorch_cpu.so)\n",
    ).replace(
        "    transfer (serve.py:8)\n    main",
        "    transfer (serve.py:8)\n        Arguments:\n            first: <_thread.lock>\n"
        "        Locals:\n            n: 1\n    main",
    )
    module = "    <module> (serve.py:19)\n"
    dump = dump.replace(module, module + "    main (python.c:15)\n")
    read = read_ticket(dump)
    assert read.python_frames == ("serve.py:<module>", "serve.py:main", "serve.py:transfer")
    assert [t.main for t in read.threads] == [True, False]
    assert read.threads[1].frames[-1] == "serve.py:transfer"


def test_a_py_spy_subprocesses_dump_gives_the_first_processs_threads() -> None:
    # `--subprocesses` (py-spy 0.4.2 on) dumps each child after the parent, a MainThread of
    # its own: read as the parent's threads, two ran `<module>` and the description said
    # none did.
    child = """\

--------------------------------------------------------------------------------
Process 21865: python serve.py --workers 4
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)
Parent Process 5461: python serve.py --workers 4

Thread 21865 (idle): "MainThread"
    SimpleQueue.get (multiprocessing/queues.py:365)
    worker (multiprocessing/pool.py:114)
    main (serve.py:12)
    <module> (serve.py:15)
"""
    dump = PYSPY_DEADLOCK.rstrip("`\n") + "\n" + child + "```\n"
    read = read_ticket(dump)
    assert [(t.thread, t.main) for t in read.threads] == [
        ('5461 (idle): "MainThread"', True),
        ('5480 (idle): "t2"', False),
    ]


def test_an_older_py_spy_subprocesses_dump_keeps_the_parents_later_threads() -> None:
    # py-spy before 0.4.2 printed every child after each of the parent's threads:
    # MainThread, the child, t2, the child again. Stopping at the first child lost t2.
    child = """\
Process 21865: python serve.py --workers 4
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)
Parent Process 5461: python serve.py --workers 4

Thread 21865 (idle): "MainThread"
    SimpleQueue.get (multiprocessing/queues.py:365)
    worker (multiprocessing/pool.py:114)
    <module> (serve.py:15)
Thread 21870 (idle): "QueueFeederThread"
    wait (threading.py:320)
    Thread.run (threading.py:982)
"""
    head, t2 = PYSPY_DEADLOCK.rstrip("`\n").split('Thread 5480 (idle): "t2"\n')
    dump = f'{head}{child}Thread 5480 (idle): "t2"\n{t2}\n{child}```\n'
    read = read_ticket(dump)
    assert [(t.thread, t.main) for t in read.threads] == [
        ('5461 (idle): "MainThread"', True),
        ('5480 (idle): "t2"', False),
    ]
    assert read.python_frames == ("serve.py:<module>", "serve.py:main", "serve.py:transfer")


def test_an_older_py_spy_dump_keeps_a_parent_thread_whose_id_a_child_reuses() -> None:
    # A Pool made in the parent's thread t2: the forked child's main thread keeps t2's
    # pthread id, and t2, counted by its id alone with the child's repeats, was dropped as
    # the child's (review 14).
    child = """\
Process 21865: python serve.py --workers 4
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)
Parent Process 5461: python serve.py --workers 4

Thread 5480 (idle): "MainThread"
    SimpleQueue.get (multiprocessing/queues.py:365)
    worker (multiprocessing/pool.py:114)
    <module> (serve.py:15)
"""
    head, t2 = PYSPY_DEADLOCK.rstrip("`\n").split('Thread 5480 (idle): "t2"\n')
    dump = f'{head}{child}Thread 5480 (idle): "t2"\n{t2}\n{child}```\n'
    read = read_ticket(dump)
    assert [(t.thread, t.main) for t in read.threads] == [
        ('5461 (idle): "MainThread"', True),
        ('5480 (idle): "t2"', False),
    ]


def test_the_prose_after_a_ci_log_with_later_steps_is_still_read() -> None:
    # The later steps were cut to the end of the ticket, and with them the reporter's
    # words after the pasted log: a flaky failure's 20 attempts were lost.
    log = _ci_lines(
        [
            "##[group]Run python train.py --bs 16",
            "python train.py --bs 16",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "Traceback (most recent call last):",
            '  File "/home/runner/work/l/l/train.py", line 7, in load',
            "ValueError: batch size 16 exceeds buffer of 8 rows",
            "##[error]Process completed with exit code 1.",
            "##[group]Run python scripts/upload_metrics.py",
            "FileNotFoundError: [Errno 2] No such file or directory: 'metrics.json'",
        ]
    )
    read = read_ticket("```\n" + log + "```\n\nIt fails only sometimes, roughly 1 in 3 runs.\n")
    assert read.failure.exception == "ValueError"
    assert read.flaky is not None


def test_a_windows_faulthandler_report_is_its_linux_signals_crash() -> None:
    # faulthandler on Windows says `Windows fatal exception: access violation`, no signal:
    # the ticket read as `no failure found`, its stack unquoted.
    text = """\
Crashes on Windows 11:

```
PS C:\\proj> python train.py --workers 2
Windows fatal exception: access violation

Current thread 0x000046f0 (most recent call first):
  File "C:\\proj\\venv\\lib\\site-packages\\torch\\nn\\modules\\conv.py", line 456 in _conv_forward
  File "C:\\proj\\train.py", line 22 in step
  File "C:\\proj\\train.py", line 40 in <module>
```
"""
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.python_frames[-1].endswith("conv.py:_conv_forward")
    assert "the log's Windows access violation, read as SIGSEGV, its kind on Linux" in (
        render_spec(skeleton(read, "win.md"))
    )


@pytest.mark.parametrize(
    ("what", "signal"),
    [
        ("page error", "SIGBUS"),
        ("integer overflow", "SIGFPE"),
        ("code 0xc000001d", "SIGILL"),
        ("code 0xC0000096", "SIGILL"),
    ],
)
def test_a_windows_fault_is_read_as_cpython_words_it(what: str, signal: str) -> None:
    # The table named words CPython never prints (`in page error`, `illegal instruction`)
    # and missed two it does; an illegal instruction is its code.
    text = f"""\
$ python train.py
Windows fatal exception: {what}

Current thread 0x000046f0 (most recent call first):
  File "C:\\proj\\train.py", line 40 in <module>
"""
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", signal)


def test_a_windows_access_violation_the_process_went_on_from_is_no_crash() -> None:
    # faulthandler's Windows handler reports first-chance exceptions SEH or the JVM then
    # handles: the later traceback ended the run, and the dump's frames are not its.
    text = """\
$ python train.py
Windows fatal exception: access violation

Current thread 0x000046f0 (most recent call first):
  File "C:\\proj\\venv\\lib\\site-packages\\jpype\\_core.py", line 5 in startJVM
  File "C:\\proj\\train.py", line 3 in <module>
Loading data
Traceback (most recent call last):
  File "C:\\proj\\train.py", line 9, in <module>
    main()
  File "C:\\proj\\train.py", line 7, in main
    raise ValueError("bad shape")
ValueError: bad shape
"""
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("error", None)
    assert read.failure.exception == "ValueError"
    assert read.python_frames == ("C:\\proj\\train.py:<module>", "C:\\proj\\train.py:main")


def test_a_windows_dump_of_a_dataloader_worker_is_the_worker_s_crash() -> None:
    # The dump's stack ends at its last line (the output after it is not its frames), and
    # its `_bootstrap` says which process, as under `Fatal Python error`.
    text = """\
$ python train.py
Windows fatal exception: access violation

Current thread 0x000046f0 (most recent call first):
  File "C:\\venv\\torch\\utils\\data\\_utils\\worker.py", line 300 in _worker_loop
  File "C:\\Python311\\lib\\multiprocessing\\process.py", line 314 in _bootstrap
  File "<string>", line 1 in <module>
Epoch 2
  File "C:\\proj\\log.py", line 40 in later
"""
    read = read_ticket(text)
    assert (read.failure.outcome, read.failure.signal) == ("crash", "SIGSEGV")
    assert read.failure.where == "worker"
    assert read.python_frames[0] == "<string>:<module>"


def test_the_skeleton_s_header_writes_its_from_log_command_as_typed() -> None:
    """`--from-log my log.txt` was written unquoted, a command that ran another, and a
    piped log as `--from-log stdin`, a file that is not there."""
    read = read_ticket("Traceback (most recent call last):\nValueError: bad\n")

    def header(source: str) -> str:
        said, line = skeleton(read, source).header[:2]
        assert said == "A skeleton written by this command:"
        assert line.startswith("  reprospec capture --from-log ")
        return line.removeprefix("  reprospec capture --from-log ")

    assert header("my log.txt") == "'my log.txt'"
    assert header("stdin") == "-"
    assert header("issue.md") == "issue.md"
    assert header("a\nb.md") == "$'a\\nb.md'"
    # A long path is written whole on its line, which can be copied back: wrapped in the
    # sentence, the command broke mid-backquote over two comment lines.
    long = "/home/alice/tickets/2026-12/issue-4242-dataloader-segfault-on-the-cluster.md"
    text = render_spec(skeleton(read, long))
    assert f"#   reprospec capture --from-log {long}\n" in text


def test_a_native_programs_skeleton_asks_for_no_python_or_packages(tmp_path: Path) -> None:
    # A gdb session of `./crash`, a C program: its skeleton asked for `environment.python`
    # and `environment.packages`, which a spec of a program that is no Python leaves out.
    native = read_ticket(ticket("gdb-breakpoint-then-crash.md"), tmp_path)
    assert native.native
    todo = skeleton(native, "t.md").todo
    assert not [
        item for item in todo if item.startswith(("environment.python", "environment.packages"))
    ]
    assert any(item.startswith("files: the program and its data") for item in todo)
    # A Python program under gdb (`gdb --args python bench_ops.py`) is asked its modules.
    python = read_ticket(ticket("gdb-backtrace.txt"), tmp_path)
    assert not python.native
    assert any(i.startswith("files: the program's data and") for i in skeleton(python, "t.md").todo)
    # A program by path that runs Python: its native stack shows CPython's frames, its `#!`
    # names Python, or it is a shell script, which runs anything.
    crash = ticket("gdb-breakpoint-then-crash.md")
    pyeval = crash.replace("#2  0x0000555555555164 in main", "#2  0x1 in _PyEval_EvalFrameDefault")
    assert not read_ticket(pyeval, tmp_path).native
    # ... or frames of a stripped libpython (`?? () from .../libpython3.11.so.1.0`).
    stripped = crash.replace(
        "#2  0x0000555555555164 in main (argc=3, argv=0x7fffffffe7d8) at crash.c:3",
        "#2  0x1 in ?? () from /usr/lib/libpython3.11.so.1.0",
    )
    assert not read_ticket(stripped, tmp_path).native
    (tmp_path / "crash").write_text("#!/usr/bin/env python3\nimport ctypes\n")
    assert not read_ticket(crash, tmp_path).native
    assert not read_ticket(crash.replace("./crash --count 4", "./crash.sh --count 4")).native
    # A Python traceback anywhere in the log is Python's too.
    traceback = (
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: x\n'
    )
    assert not read_ticket(f"$ ./crash\n{traceback}").native
    # A program by path on no evidence that it is native (no debugger's stack, not here as
    # an ELF file) may be the sender's Python script: its skeleton still asks for them.
    segfault = "$ ./train --lr 1\nSegmentation fault (core dumped)\n"
    assert not read_ticket(segfault, tmp_path).native
    (tmp_path / "train").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    assert read_ticket(segfault, tmp_path).native
    # mpirun's or srun's program answers, as capture's reader has it: by their names they
    # read as Python's, and a native crash under mpirun asked for Python (review).
    launched = "$ mpirun -np 2 ./train input.py\nSegmentation fault (core dumped)\n"
    assert read_ticket(launched, tmp_path).native
    assert read_ticket(launched.replace("mpirun -np 2", "srun -p debug"), tmp_path).native
    assert not read_ticket(launched.replace("./train", "python3 train.py"), tmp_path).native
    # A `#!` line that runs Python by env's options, or uv's trampoline, is Python's.
    for head in ("#!/usr/bin/env -S python3 -u\n", "#!/bin/sh\n'''exec' '/x/python' \"$0\"\n"):
        (tmp_path / "crash").write_text(f"{head}import ctypes\n")
        assert not read_ticket(crash, tmp_path).native, head


def test_a_pytest_report_without_its_command_line_runs_its_failing_test() -> None:
    # pytest's header and its short summary, no command line: the test id was known, and
    # the skeleton's command was `TODO-the-command-that-failed`.
    log = (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.11.7, pytest-8.1.1, pluggy-1.4.0\n"
        "rootdir: /home/alice/proj\nplugins: anyio-4.3.0\ncollected 12 items\n\n"
        "tests/test_x.py ...F........                                             [100%]\n\n"
        "=================================== FAILURES ===================================\n"
        "___________________________________ test_y ____________________________________\n\n"
        "    def test_y():\n>       assert parse('a') == 2\n"
        "E       AssertionError: assert 1 == 2\n\n"
        "tests/test_x.py:7: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_x.py::test_y[a-1] - AssertionError: assert 1 == 2\n"
        "========================= 1 failed, 11 passed in 0.12s =========================\n"
    )
    read = read_ticket(log)
    assert read.command == "python -m pytest 'tests/test_x.py::test_y[a-1]'"
    assert read.command_guessed
    # One phrase in both (core/words), the test named once in the evidence's line.
    assert read.test is not None
    guess = f"the command: {read.command}, {guessed_from_pytest()}"
    assert [line for line in read.evidence if "guess" in line] == [guess]
    draft = skeleton(read, "log.txt")
    assert not [item for item in draft.todo if item.startswith(("command", "expect.phase"))]
    assert any(guessed_from_pytest(read.test) in line for line in draft.header)
    spec = yaml.safe_load(render_spec(draft))
    assert spec["command"] == "python -m pytest 'tests/test_x.py::test_y[a-1]' -v"
    # A command line the log shows is the command, no guess.
    shown = read_ticket(f"$ pytest -x tests/test_x.py\n{log}")
    assert (shown.command, shown.command_guessed) == ("pytest -x tests/test_x.py", False)


def test_a_bare_windows_console_scripts_line_is_the_command_by_its_name(tmp_path: Path) -> None:
    # A Windows launcher's path on a line of its own, no prompt before it: shlex read its
    # backslashes as escapes (`Scriptstorchrun.exe`), no program a ticket runs, and the
    # command was a TODO; a prompt's line was read (its backslashes as slashes).
    raised = 'Traceback (most recent call last):\n  File "train.py", line 5, in <module>\n'
    raised += "ValueError: lr too high\n"
    for line in (
        r"Scripts\torchrun.exe --nproc_per_node 2 train.py",
        r".venv\Scripts\torchrun.exe --nproc_per_node 2 train.py",
        r"    C:\Users\me\proj\.venv\Scripts\torchrun.exe --nproc_per_node 2 train.py",
        r"I ran `Scripts\torchrun.exe --nproc_per_node 2 train.py` and:",
        # Installed for all users, or for one (a system folder, AppData): never the
        # reader's path either.
        r'"C:\Program Files\Python311\Scripts\torchrun.exe" --nproc_per_node 2 train.py',
        r"C:\Users\me\AppData\Roaming\Python\Python311\Scripts\torchrun.exe --nproc_per_node 2"
        " train.py",
        # Without its `.exe`, as cmd and PowerShell run it: its path, the sender's, was
        # kept (`.venv/Scripts/torchrun`, no such file here; review).
        r".venv\Scripts\torchrun --nproc_per_node 2 train.py",
        r"Scripts\torchrun --nproc_per_node 2 train.py",
    ):
        read = read_ticket(f"{line}\n{raised}", tmp_path)
        assert read.command == "torchrun --nproc_per_node 2 train.py", line
        assert any("console script, by its name" in e for e in read.evidence), line
    # A relative Windows program the folder holds stays its path; one that is no
    # environment's launcher is no command a ticket runs.
    (tmp_path / "Scripts").mkdir()
    (tmp_path / "Scripts" / "torchrun.exe").write_text("")
    here = read_ticket(f"Scripts\\torchrun.exe train.py\n{raised}", tmp_path)
    assert here.command == "Scripts/torchrun.exe train.py"
    assert read_ticket(f"Scripts\\mytool.exe train.py\n{raised}", tmp_path).command is None
    launched = read_ticket(f"venv\\Scripts\\accelerate launch train.py\n{raised}", tmp_path)
    assert launched.command == "accelerate launch train.py"


def test_a_console_script_is_one_rule_for_a_live_capture_and_a_ticket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A venv here whose `bin` holds `serve`, which its distribution declares, and `train`,
    # written there by hand. A live capture kept `~/.venv/bin/train`'s path (an environment
    # of the spec's packages lacks it) where a ticket's reader wrote it `train`, judging by
    # the folder alone.
    from reprospec.capture.command import chosen_interpreter

    home = tmp_path / "home"
    venv = home / ".venv"
    bin_folder = venv / "bin"
    bin_folder.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    info = venv / "lib" / "python3.11" / "site-packages" / "mypkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nserve = mypkg:main\n")
    for name in ("serve", "train"):
        (bin_folder / name).write_text(f"#!{bin_folder}/python\nprint(1)\n")
    monkeypatch.setenv("HOME", str(home))
    workdir = tmp_path / "work"
    workdir.mkdir()
    crashed = "Program terminated with signal SIGSEGV, Segmentation fault.\n"
    for name, live, ticketed in (
        ("serve", "serve", "serve"),
        ("train", str(bin_folder / "train"), "~/.venv/bin/train"),
    ):
        argv, _ = chosen_interpreter([str(bin_folder / name), "--lr", "1"], None, workdir)
        assert argv[0] == live, name
        core = f"Core was generated by `~/.venv/bin/{name} --lr 1'.\n{crashed}"
        read = read_ticket(core, workdir)
        assert read.command is not None
        assert read.command.split()[0].strip("'") == ticketed, name
        # Either way a Python program's: its spec asks for a Python.
        assert not read.native, name


def test_a_cuda_errors_skeleton_leaves_out_the_senders_visible_devices() -> None:
    # `CUDA_VISIBLE_DEVICES=1 python bench.py` of a CUDA error: the skeleton asked for a
    # GPU and wrote `CUDA_VISIBLE_DEVICES: '1'` in env, a device the engine's GPU slot
    # overrides (and, without `gpus`, one a machine of one GPU lacks).
    log = (
        "$ CUDA_VISIBLE_DEVICES=1 python bench.py --n 4096\nTraceback (most recent call last):\n"
        '  File "/home/u/bench.py", line 18, in kernel\n    return f(x).item()\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    draft = skeleton(read_ticket(log), "log.txt")
    assert draft.gpus is not None
    assert "CUDA_VISIBLE_DEVICES" not in {line.name for line in draft.env}
    assert any("CUDA_VISIBLE_DEVICES=1 (the sender's GPU) is left out" in h for h in draft.header)
    # Without a CUDA error no GPU is asked for: the command's setting is the spec's.
    segv = "$ CUDA_VISIBLE_DEVICES=0 python train.py\nSegmentation fault (core dumped)\n"
    env = skeleton(read_ticket(segv), "log.txt").env
    assert [(line.name, line.value) for line in env] == [("CUDA_VISIBLE_DEVICES", "0")]


def test_a_prompt_that_runs_a_program_by_its_path_is_the_command() -> None:
    # `$ build/crash`, `$ /home/me/proj/build/crash`, `$ ~/.venv/bin/train`, then the
    # shell's report of the crash: only `./` or `.sh` made a prompt's program a command,
    # and the skeleton's was TODO-the-command-that-failed.
    crashed = "Segmentation fault (core dumped)\n"
    for command in ("build/crash --n 4", "/home/me/proj/build/crash --n 4", "./crash --n 4"):
        assert read_ticket(f"$ {command}\n{crashed}").command == command
    assert read_ticket(f"$ ~/.venv/bin/train --lr 1\n{crashed}").command is not None
    # A setup tool by its path is no command; a program tickets run wins over a path's.
    assert read_ticket(f"$ /opt/conda/bin/pip install x\n{crashed}").command is None
    both = f"$ tools/prepare --out data\n$ python train.py\n{crashed}"
    assert read_ticket(both).command == "python train.py"
    # A diagnostic run by its path is none either: the machine's or a CUDA install's
    # program, a setup tool, or one asked only its version (the spec ran `nvcc --version`).
    for diagnostic in (
        "/usr/local/cuda/bin/nvcc --version",
        "/usr/local/cuda/extras/demo_suite/deviceQuery",
        "/opt/cuda-12.1/extras/demo_suite/deviceQuery",
        "/usr/bin/nvidia-smi",
        "/opt/conda/bin/uv pip install x",
        ".venv/bin/uv pip install x",
        "uv -q pip install torch",  # uv's global options before its setup (review)
        "uv --no-cache sync",
        "uv --project . sync",
        "uv --directory proj --cache-dir /tmp/c pip install x",
        "build/crash -h",
        "build/crash --version",
        "build/crash -V",
        "/opt/rocm/bin/rocminfo",
        "/opt/rocm-6.0.2/bin/rocm-smi --showuse",
        "/usr/bin/gcc -o build/crash crash.c",
        # A machine's program that only looks at theirs, a path of theirs in its words: it
        # was the command, any such path taken as a sanitizer's program (review).
        "/usr/bin/tail -n 5 logs/train.log",
        "/usr/bin/g++ -g src/main.cpp -o build/crash",
        "/usr/bin/strace -o build/out ls",
    ):
        log = f"$ {diagnostic}\nsome output\n{crashed}"
        assert read_ticket(log).command is None, diagnostic
    ran = read_ticket(f"$ ./build/crash\n$ /usr/bin/ldd build/crash\nsome output\n{crashed}")
    assert ran.command == "./build/crash"
    # A sanitizer or debugger of the machine's or a CUDA install's that runs the reporter's
    # program is the command, and a program in the project's own `cuda/` folder is theirs:
    # each was None, the wrapper's or the folder's path looked at alone (review).
    for command in (
        "/usr/local/cuda/bin/compute-sanitizer ./build/crash",
        "/usr/local/cuda-12.1/bin/compute-sanitizer --tool memcheck build/crash",
        "/usr/local/cuda/bin/cuda-memcheck ./build/crash",
        "/usr/bin/valgrind ./build/crash",
        # By name, as they are usually run, and one that runs Python (review).
        "valgrind ./build/crash",
        "compute-sanitizer ./build/crash",
        "valgrind --leak-check=full --log-file=v.txt ./build/crash --n 3",
        "strace -f -o trace.txt ./build/crash",
        "/usr/local/cuda/bin/compute-sanitizer --tool memcheck python train.py",
        "./cuda/build/gemm_test --m 4096",
        "~/proj/cuda/build/reduce_test --n 4",
        # Each tool's own valued options: strace's `-x` and `-d` are flags, and
        # compute-sanitizer's `--leak-check full` a value, each read as the program (review).
        "strace -x ./build/crash",
        "strace -d ./build/crash",
        "compute-sanitizer --leak-check full ./build/crash",
        "compute-sanitizer --target-processes all python train.py",
        "compute-sanitizer --tool memcheck --leak-check full python train.py",
        "compute-sanitizer --check-device-heap yes ./build/crash",
        # CUDA's profilers and ltrace: each was the command, then none (review).
        "/usr/local/cuda/bin/ncu --set full ./build/gemm",
        "/usr/local/cuda-12.1/bin/nsys profile ./build/gemm",
        "nsys profile -o report --trace cuda python train.py",
        "/usr/bin/ltrace ./build/crash",
    ):
        assert read_ticket(f"$ {command}\n{crashed}").command == command, command


def test_a_command_that_asks_a_program_about_itself_is_no_command() -> None:
    # `$ torchrun --version` or `$ pytest --version` before a traceback, no other command:
    # only a program run by its path was taken as a diagnostic, so a program tickets run
    # asked its version became the ticket's command (final read). A prompt's, a quote's
    # and a bare line's are one rule: `_shows_machine`.
    traceback = (
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
    )
    for diagnostic in ("$ torchrun --version", "$ pytest --version", "$ nvcc -V"):
        assert read_ticket(f"{diagnostic}\n1.0\n{traceback}").command is None, diagnostic
    quoted = f"I ran `pytest --help` and `torchrun --version`:\n{traceback}"
    assert read_ticket(quoted).command is None
    # Asked about itself and something else, the program runs: the command.
    ran = read_ticket(f"$ torchrun --version train.py\n{traceback}").command
    assert ran == "torchrun --version train.py"


def test_a_sanitizers_report_is_an_error_with_its_finding() -> None:
    # A real ASan report of gcc 12's `-fsanitize=address` build (a use after free), pasted
    # after its prompt and followed by prose: "no failure found", the outcome a TODO. A
    # live run reads `error exit 1` whose message is the finding.
    log = (
        "$ ./build/app --input data.bin\n"
        "=================================================================\n"
        "==15650==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at"
        " pc 0x55c3 bp 0x7ffc sp 0x7ffc\n"
        "READ of size 4 at 0x602000000010 thread T0\n"
        "    #0 0x55c3 in parse src/parse.c:2\n    #1 0x55c4 in main src/parse.c:3\n\n"
        "SUMMARY: AddressSanitizer: heap-use-after-free src/parse.c:2 in parse\n"
        "Shadow bytes around the buggy address:\n  0x0c047fff8000: fa fa fd fd\n"
        "==15650==ABORTING\n\nIt happens on every input.\n"
    )
    read = read_ticket(log)
    assert (read.failure.outcome, read.failure.message) == (
        "error",
        "AddressSanitizer: heap-use-after-free parse.c in parse",
    )
    expect = yaml.safe_load(render_spec(skeleton(read, "log.txt")))["expect"]
    assert expect == {
        "outcome": "error",
        "message": r"AddressSanitizer: heap\-use\-after\-free parse\.c in parse",
    }
    # A report that did not end the program (ASAN_OPTIONS=halt_on_error=0 goes on) is none.
    assert read_ticket(log.replace("==15650==ABORTING\n", "")).failure.outcome is None


def test_a_guessed_command_of_an_xdist_workers_crash_runs_it_under_xdist() -> None:
    # pytest-xdist's report of a crashed worker and no command line: the guess ran the
    # test alone, in pytest's own process, whose crash is `where: main` against the
    # expected `child` (a real run: not-reproduced).
    log = (
        "platform linux -- Python 3.11.7, pytest-8.1.1, pluggy-1.4.0\nplugins: xdist-3.5.0\n"
        "created: 2/2 workers\n[gw1] node down: Not properly terminated\n"
        "worker 'gw1' crashed while running 'tests/test_native.py::test_segv'\n"
        "FAILED tests/test_native.py::test_segv\n"
    )
    read = read_ticket(log)
    assert read.failure.where == "child"
    assert read.command == "python -m pytest -n 1 tests/test_native.py::test_segv"
    # The guess's `-n 1` is no axis (one said "from `-n 1`", as if the log had); where the
    # log lists no pytest-xdist, the skeleton asks for it (else `unrecognized arguments`).
    draft = skeleton(read, "t.md")
    assert (draft.matrix, draft.command) == (
        (),
        "python -m pytest -n 1 tests/test_native.py::test_segv -v",
    )
    assert not [item for item in draft.todo if "pytest-xdist" in item]
    unlisted = skeleton(read_ticket(log.replace("plugins: xdist-3.5.0\n", "")), "t.md")
    assert unlisted.matrix == ()
    assert [item for item in unlisted.todo if "pytest-xdist" in item] == [
        "environment.packages: pytest-xdist (the guessed command runs the test under it, in"
        " one worker; the log names no version of it)"
    ]
    # A listed version that is no PEP 440 one (a distro's `3.5.0_1`) is listed all the same:
    # parsing each requirement with packaging lost it, and asked for xdist (review).
    frozen = log.replace("plugins: xdist-3.5.0\n", "") + (
        "\n$ pip freeze\npytest==8.1.1\npytest-xdist==3.5.0_1\n"
    )
    assert not [item for item in skeleton(read_ticket(frozen), "t.md").todo if "xdist" in item]


def test_a_hang_in_an_import_is_titled_by_the_module_it_was_importing() -> None:
    # A py-spy dump of `python train.py` stuck in `import wandb` (its service never ready):
    # the title said `hang`, where a live capture says `hang while importing ...`.
    dump = (
        "$ py-spy dump --pid 48213\nProcess 48213: python train.py --epochs 3\n"
        "Python v3.11.5 (/usr/bin/python3.11)\n\n"
        'Thread 48213 (idle): "MainThread"\n'
        "    _recv (multiprocessing/connection.py:395)\n"
        "    _wait_for_ready (wandb/sdk/service/service.py:87)\n"
        "    <module> (wandb/__init__.py:40)\n"
        "    _call_with_frames_removed (<frozen importlib._bootstrap>:241)\n"
        "    _find_and_load (<frozen importlib._bootstrap>:1176)\n"
        "    <module> (train.py:7)\n"
    )
    draft = skeleton(read_ticket(dump), "wandb.md")
    assert draft.title == "From a ticket: hang while importing wandb/__init__.py"
    assert draft.expect_comments["outcome"] == (
        "while importing wandb/__init__.py (the log's stack shows it)"
    )
    # faulthandler's dump names the sender's path: the module by its packages' folder.
    timeout = (
        "$ python train.py\nTimeout (0:05:00)!\n"
        "Thread 0x00007f8e4b5ff640 (most recent call first):\n"
        '  File "/home/u/.venv/lib/python3.10/site-packages/wandb/__init__.py", line 40'
        " in <module>\n"
        '  File "<frozen importlib._bootstrap>", line 1027 in _find_and_load\n'
        '  File "/home/u/proj/train.py", line 7 in <module>\n'
    )
    title = skeleton(read_ticket(timeout), "fh.txt").title
    assert title == "From a ticket: hang while importing wandb/__init__.py"
    # The interpreter's own module by its lib folder, the sender's by its name: the title
    # showed `/usr/lib/python3.10/json/__init__.py` and `/home/u/proj/mymod.py`.
    site = "/home/u/.venv/lib/python3.10/site-packages/wandb/__init__.py"
    for path, shown in (
        ("/usr/lib/python3.10/json/__init__.py", "json/__init__.py"),
        ("/home/u/proj/mymod.py", "mymod.py"),
        # A package's init by its package: it said `__init__.py` (review).
        ("/home/u/proj/mypkg/__init__.py", "mypkg/__init__.py"),
    ):
        title = skeleton(read_ticket(timeout.replace(site, path)), "fh.txt").title
        assert title == f"From a ticket: hang while importing {shown}", title
    # A hang that imports nothing is titled as before.
    waiting = dump.replace("    <module> (wandb/__init__.py:40)\n", "    main (train.py:3)\n")
    assert skeleton(read_ticket(waiting), "w.md").title == "From a ticket: hang"


def test_powershells_call_operator_is_no_part_of_the_command(tmp_path: Path) -> None:
    # PowerShell runs a program by a (quoted) path through `&`: the command kept it,
    # `& C:/.../python.exe train.py`, a POSIX shell's background `&` before nothing.
    raised = 'Traceback (most recent call last):\n  File "train.py", line 5, in <module>\n'
    raised += "ValueError: x\n"
    for prompt, command in (
        (
            r"PS C:\proj> & C:\Users\me\AppData\Local\Programs\Python\Python311\python.exe"
            " train.py --lr 1",
            "python train.py --lr 1",
        ),
        (
            r'PS C:\proj> & "C:\Program Files\Python311\Scripts\torchrun.exe" train.py',
            "torchrun train.py",
        ),
        (  # `&` without a space, which PowerShell takes too
            r'PS C:\proj> &"C:\Program Files\Python311\python.exe" train.py',
            "python train.py",
        ),
    ):
        assert read_ticket(f"{prompt}\n{raised}", tmp_path).command == command, prompt
