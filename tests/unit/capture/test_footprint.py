"""Which of the capturing shell's variables the verify leaves out: the session's own, never
the machine's (a rerun elsewhere has its own PATH, terminal and module system)."""

from __future__ import annotations

from pathlib import Path

from reprospec.capture.footprint import (
    NativePlace,
    Pins,
    _command_code,
    crash_frame,
    foreign_packages,
    hung_import,
    imported_module,
    native_frame,
    shell_only,
    traceback_stack,
)
from reprospec.core.results import AttemptResult, Outcome
from reprospec.native import write
from reprospec.native.stacks import Frame, NativeStacks, ProcessStacks, Thread
from tests.support.paths import DATA


def test_the_verify_leaves_out_the_shells_own_variables_and_keeps_the_machines() -> None:
    environ = {
        # The program's: another shell would not have them.
        "USE_NATIVE": "1",
        "TORCH_SHOW_CPP_STACKTRACES": "1",
        "MY_FLAG": "on",
        # The machine's and the session's: every shell has its own.
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LC_ALL": "C.UTF-8",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "TMUX": "/tmp/tmux-1000/default,1,0",
        "TMUX_PANE": "%3",
        "MODULEPATH": "/etc/modulefiles",
        "LMOD_CMD": "/usr/share/lmod/lmod/libexec/lmod",
        "__LMOD_REF_COUNT_PATH": "/usr/bin:1",
        "LOADEDMODULES": "cuda/12.4",
        "_LMFILES_": "/etc/modulefiles/cuda/12.4",
        "KITTY_WINDOW_ID": "1",
        "PYTHONHOME": "/opt/python",
        # Not written into a spec, yet what `PYTHONPATH=src python -m pkg` needs: the verify
        # leaves it out, so that it finds it needed and writes it (it said "reproduced" of a
        # spec that failed anywhere else with "No module named pkg").
        "PYTHONPATH": "/src",
    }
    # A variable the spec carries is not the shell's alone.
    assert shell_only(environ, carried=["MY_FLAG"]) == (
        "PYTHONPATH",
        "TORCH_SHOW_CPP_STACKTRACES",
        "USE_NATIVE",
    )


def test_the_commands_own_code_is_its_dash_c_past_wrappers_and_options() -> None:
    # The code whose imports are the program's own, where no file holds it.
    assert _command_code(["python3", "-c", "import numpy"]) == "import numpy"
    assert _command_code(["timeout", "5", "python", "-X", "dev", "-uc", "import os"]) == (
        "import os"
    )
    assert _command_code(["env", "-i", "A=1", "python3", "-W", "ignore", "-c", "x"]) == "x"
    for argv in (["python3", "x.py", "-c", "y"], ["python3", "-m", "pytest", "-c", "a.ini"],
                 ["sh", "-c", "python -c 1"], ["python3", "-"]):  # fmt: skip
        assert _command_code(argv) is None, argv


def test_a_package_only_its_libraries_imported_is_said_apart() -> None:
    pins = Pins(
        "3.11",
        ("hypothesis==6", "pytest==9", "typing_extensions==4", "numpy==2"),
        program="pytest==9",
        plugins=("hypothesis==6",),
        direct=("numpy==2",),
    )
    assert pins.imported() == ("numpy==2",)
    assert pins.pulled_in() == ("typing_extensions==4",)
    # Where its sources could not tell, every one is its own, as before.
    unknown = Pins("3.11", pins.packages, program="pytest==9", plugins=("hypothesis==6",))
    assert unknown.imported() == ("typing_extensions==4", "numpy==2")
    assert unknown.pulled_in() == ()


def test_packages_are_foreign_only_where_no_process_searched_the_pinning_interpreters() -> None:
    own = (Path("/engine/lib/python3.11/site-packages"),)
    other = Path("/proj/.venv/lib/python3.11/site-packages")
    stdlib = Path("/usr/lib/python3.11")
    # A shell script that activated another venv: only its site-packages was searched.
    assert foreign_packages((stdlib, other), own) == other
    # The engine's own python among the processes: its versions are the right ones.
    assert foreign_packages((stdlib, other, own[0]), own) is None
    # `python -S`, or no Python at all: nothing tells either way.
    assert foreign_packages((stdlib,), own) is None
    assert foreign_packages((), own) is None


def test_a_spec_title_names_a_file_not_utf8_as_the_report_does(tmp_path: Path) -> None:
    # faulthandler's `w\udc80y.py` (a byte not UTF-8 in the file's name) titled a capture's
    # spec raw: `main.py: SIGSEGV in f (w\udc80y.py:3)`.
    stack = (
        "Stack (most recent call first):\n"
        f'  File "{tmp_path}/w\\udc80y.py", line 3 in f\n'
        f'  File "{tmp_path}/main.py", line 4 in <module>\n'
    )
    assert crash_frame(stack, tmp_path) == "f (w\ufffdy.py:3)"
    hung = (
        f'  File "{tmp_path}/w\\udc80x.py", line 2 in <module>\n'
        '  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed\n'
    )
    assert hung_import(hung, tmp_path) == "w\ufffdx.py:2"


def test_a_crash_frame_is_past_a_free_threaded_builds_standard_library(tmp_path: Path) -> None:
    # footprint's own `/lib/python\d+(\.\d+)?/` took lib/python3.13t/ for the program's:
    # a crash in ctypes, called from the user's code outside the workdir, was titled by
    # the interpreter's ctypes/__init__.py.
    stack = (
        "Stack (most recent call first):\n"
        '  File "/usr/lib/python3.13t/ctypes/__init__.py", line 519 in string_at\n'
        '  File "/opt/tools/crash.py", line 3 in boom\n'
    )
    assert crash_frame(stack, tmp_path) == "boom (crash.py:3)"


def test_an_errors_frame_is_its_own_tracebacks_not_a_launchers_after_it() -> None:
    # A real torchrun of two ranks, rank 1 raising ValueError in /tmp/G/tr/train.py; then
    # torchrun's own ChildFailedError traceback. The outcome's exception is the rank's: its
    # frame was read from torchrun's traceback, `<module> (torchrun:8)`.
    output = (DATA / "recorded" / "torchrun-rank1-valueerror.stderr.log").read_text()
    workdir = Path("/tmp/G/tr")
    assert crash_frame(traceback_stack(output, "ValueError"), workdir) == "<module> (train.py:5)"
    # The launcher's own exception is its own traceback's, and without one, the last.
    for exception in ("ChildFailedError", None):
        assert crash_frame(traceback_stack(output, exception), workdir) == "<module> (torchrun:8)"
    # A traceback is picked by its own exception line, not by a line printed after it: a
    # log's `ValueError ...` after torchrun's traceback took that for the rank's (review).
    logged = f"{output}ValueError: seen in 3 batches\n"
    assert crash_frame(traceback_stack(logged, "ValueError"), workdir) == "<module> (train.py:5)"
    # Another rank's line among the rank's frames, or a glog line before its exception line
    # (torchrun's shared stderr): its frames were not read through and torchrun's was taken.
    frame, raised = output.index("    raise ValueError"), output.index("ValueError: lr")
    for at, line in ((frame, "rank 0 step 3 ok\n"), (raised, "W1207 10:54:30.4 9590 x.py:1] w\n")):
        mixed = output[:at] + line + output[at:]
        assert crash_frame(traceback_stack(mixed, "ValueError"), workdir) == (
            "<module> (train.py:5)"
        ), line
    dotted = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert crash_frame(traceback_stack(output, dotted), workdir) == "<module> (torchrun:8)"
    # The rank's lines tagged as torch tags them (`[rank1]: `, torchrun --tee's `[default1]:`):
    # no exception line matched, and no frame was read of the rank's (review); torch's space
    # after the tag was left in place, and the frame read was torchrun's (review).
    start, end = output.index("Traceback"), output.index("rank 0 ok")
    for tag in ("[rank1]:", "[rank1]: ", "[default1]:", "[default1]: "):
        rank = "".join(tag + line for line in output[start:end].splitlines(keepends=True))
        tagged = output[:start] + rank + output[end:]
        assert crash_frame(traceback_stack(tagged, "ValueError"), workdir) == (
            "<module> (train.py:5)"
        ), tag


def test_a_traceback_begins_where_the_parser_reads_a_header_not_at_its_words() -> None:
    # A program that quoted a child's output in its message after its own traceback
    # (`... failed: Traceback (most recent call last): ...` on one line): the header's words
    # inside that line began the last block, and the frame read was none of the process's.
    workdir = Path("/home/me/proj")
    output = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/proj/run.py", line 9, in <module>\n'
        "    launch()\n"
        '  File "/home/me/proj/run.py", line 5, in launch\n'
        "    sys.exit(1)\n"
        "SystemExit: 1\n"
        "launcher log: worker printed 'Traceback (most recent call last):' then\n"
        '  File "/home/me/proj/worker.py", line 3, in <module>\n'
    )
    assert crash_frame(traceback_stack(output), workdir) == "launch (run.py:5)"
    # A DataLoader worker's own traceback in torch's reraise is one, as the parser reads
    # it: its frames are where the exception was raised.
    reraised = (DATA / "recorded" / "dataloader-reraised-deep.stderr.log").read_text()
    stack = traceback_stack(reraised, "ValueError")
    assert crash_frame(stack, workdir) == "label_of (train.py:18)"
    # A header as the parser reads it, where the raw line is more: after a coloured log
    # line's reset, and glued to a tqdm bar's last draw (review).
    raised = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/proj/run.py", line 9, in <module>\n'
        "    step()\n"
        '  File "/home/me/proj/run.py", line 5, in step\n'
        '    raise ValueError("nan")\n'
        "ValueError: nan\n"
    )
    coloured = "\x1b[0m" + raised
    assert crash_frame(traceback_stack(coloured, "ValueError"), workdir) == "step (run.py:5)"
    bar = "\r  0%|          | 0/10 [00:00<?, ?it/s]\r 10%|#         | 1/10 [00:00<00:01]"
    assert crash_frame(traceback_stack(bar + raised, "ValueError"), workdir) == "step (run.py:5)"
    # An exception's message that ends in the header, a frame line after it, is still none.
    quoting = (
        raised + "RuntimeError: child said: Traceback (most recent call last):\n"
        '  File "/home/me/proj/w.py", line 3, in <module>\n'
    )
    assert crash_frame(traceback_stack(quoting), workdir) == "step (run.py:5)"


def test_a_senders_home_path_names_its_module_by_its_file_as_an_absolute_one_does() -> None:
    # `~/proj/mod.py` (a ticket's sender's home) is an absolute path too: named by its
    # file, as `/home/u/proj/mod.py` is, and a package's init by its package (review).
    assert imported_module("/home/u/proj/mod.py", 3, None) == "mod.py:3"
    assert imported_module("~/proj/mod.py", 3, None) == "mod.py:3"
    assert imported_module("~/proj/pkg/__init__.py", 3, None) == "pkg/__init__.py:3"


def _crashed(folder: Path, command: str) -> AttemptResult:
    """An attempt whose folder holds the core's stacks of `command`, dead of SIGSEGV in main."""
    thread = Thread("1", 7, None, (Frame(0, "main", "seg"),))
    core = ProcessStacks(7, "core", command, signal="SIGSEGV", crashed_lwp=7, threads=(thread,))
    folder.mkdir(exist_ok=True)
    write(NativeStacks(processes=(core,)), folder)
    outcome = Outcome("crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
    return AttemptResult(1, 0.1, outcome, True, (), folder.name)


def test_a_native_crash_names_its_process_where_it_is_not_the_commands_program(
    tmp_path: Path,
) -> None:
    # `capture -- sh -c './seg; exit $?'` was titled `sh: SIGSEGV in main@seg`: ./seg's
    # core named the frame, and nothing said whose it was.
    seg = [_crashed(tmp_path / "1", "./seg")]
    placed = native_frame(tmp_path, seg, ("sh", "-c", "./seg; exit $?"))
    assert placed == NativePlace("main@seg", "./seg")
    # The command's own program, past its wrappers, by its file's name: no process named.
    for argv in (("./seg",), ("timeout", "60", "/w/seg", "1"), ("env", "A=1", "seg")):
        assert native_frame(tmp_path, seg, argv) == NativePlace("main@seg"), argv
    # Any two Pythons alike: `python` ran `python3.11`.
    python = [_crashed(tmp_path / "2", "/usr/bin/python3.11 t.py")]
    assert native_frame(tmp_path, python, ("python", "t.py")) == NativePlace("main@seg")
