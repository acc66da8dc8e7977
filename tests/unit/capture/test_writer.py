"""The pure parts of `capture` that decide the spec: variables, rate bounds, message patterns,
the local files behind module names, the pinned distributions, and the text the writer makes."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.capture.footprint import (
    LocalInstall,
    crash_frame,
    environment_lines,
    hung_import,
    local_files,
    local_note,
    reaching,
    wiped_note,
    with_import_roots,
)
from reprospec.capture.toggles import propose
from reprospec.capture.writer import (
    MAX_MESSAGE_CHARS,
    Axis,
    Control,
    Draft,
    EnvLine,
    axis_for,
    message_pattern,
    process_keys,
    rate_bound,
    render_spec,
    script_stem,
    show_value,
)
from reprospec.core import expr
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.yamlsource import load_yaml
from tests.support.secretnames import named_secrets


def test_variables_that_matter_are_kept_and_secrets_are_read_back_never_written() -> None:
    environ = {
        "CUDA_VISIBLE_DEVICES": "1",
        "HF_TOKEN": "hf_abcdefghijkl",
        "NCCL_DEBUG": "INFO",
        "PYTHONPATH": "/home/me/src",
        "REPROSPEC_RECORD_IMPORTS": "1",
        "HOME": "/home/me",
    }
    proposal = propose(["OMP_NUM_THREADS=1", "python", "a.py"])
    lines = {line.name: line for line in environment_lines(environ, proposal, uses_torch=True)}
    assert list(lines) == [
        "OMP_NUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
        "HF_TOKEN",
        "NCCL_DEBUG",
        "CUDA_LAUNCH_BLOCKING",
    ]
    assert lines["HF_TOKEN"].value == "${{ env.HF_TOKEN }}"
    assert lines["CUDA_LAUNCH_BLOCKING"].commented
    assert lines["OMP_NUM_THREADS"].value == "1"
    # This shell's own, written as it had them, say so: no rerun left them out (they read
    # as settings the failure was shown to need); the command line's say theirs.
    assert lines["NCCL_DEBUG"].comment == "your shell set it; not tested by a rerun without it"
    assert lines["OMP_NUM_THREADS"].comment == "set on the command line"
    # A locale other than UTF-8 is written (the verify keeps the shell's, so a failure that
    # needs it verified here and passed in a reader's UTF-8 shell); a UTF-8 one is not.
    posix = {**environ, "LC_ALL": "POSIX", "LANG": "C.UTF-8"}
    written = [line.name for line in environment_lines(posix, proposal, uses_torch=False)]
    assert "LC_ALL" in written
    assert "LANG" not in written


def test_a_setting_the_command_line_sets_is_written_as_its_value() -> None:
    # `MAX_TOKENS=2048 python train.py` was written `${{ env.MAX_TOKENS }}`: a reference to
    # the reader's environment, where the failing command had set 2048.
    proposal = propose(["MAX_TOKENS=2048", "HF_TOKEN=hf_abcdefghijkl", "python", "train.py"])
    lines = {line.name: line for line in environment_lines({}, proposal, uses_torch=False)}
    assert lines["MAX_TOKENS"] == EnvLine("MAX_TOKENS", "2048", "set on the command line")
    assert lines["HF_TOKEN"].value == "${{ env.HF_TOKEN }}"
    # The shell's own variables keep the wider rule: never written, whatever the name.
    shell = environment_lines({"HF_TOKENIZER_KEYS": "x1y2"}, propose(["python", "a.py"]), False)
    assert [line.value for line in shell] == ["${{ env.HF_TOKENIZER_KEYS }}"]


@pytest.mark.parametrize("length", ["short", "long"])
def test_a_secret_the_command_line_sets_under_any_name_is_read_back(length: str) -> None:
    # `GITHUB_TOKEN_RO=abcd... python x.py` was written `GITHUB_TOKEN_RO: abcd...
    # # set on the command line`, judged by its name's last word.
    secrets = named_secrets(length)
    words = [f"{name}={value}" for name, value in secrets.items()]
    proposal = propose([*words, "MAX_TOKENS=2048", "python", "x.py"])
    lines = {line.name: line for line in environment_lines({}, proposal, uses_torch=False)}
    for name in secrets:
        assert lines[name].value == f"${{{{ env.{name} }}}}", name
    assert lines["MAX_TOKENS"].value == "2048"


def test_env_i_keeps_only_what_the_command_reads_back_and_says_what_it_wipes() -> None:
    # `env -i A=1 python3 x.py` kept `env -i`, yet the spec's environment.env
    # said the program had PYTHONUNBUFFERED=1 and the shell's settings, which `-i` wipes.
    environ = {
        "PYTHONUNBUFFERED": "1",
        "NCCL_DEBUG": "INFO",
        "LC_ALL": "POSIX",
        "HF_TOKEN": "hf_abcdefghijkl",
    }
    token = named_secrets("long")["GITHUB_TOKEN_RO"]
    cleared = propose(
        [
            "B=2",
            "HF_TOKEN=hf_zyxwvutsrqpo",
            "env",
            "-i",
            f"GITHUB_TOKEN_RO={token}",
            "python",
            "x.py",
        ]
    )
    lines = environment_lines(environ, cleared, uses_torch=True)
    # Read back by the command ("$GITHUB_TOKEN_RO", expanded before env runs): it reaches.
    assert [line.name for line in reaching(lines, cleared)] == ["GITHUB_TOKEN_RO"]
    note = wiped_note(cleared)
    assert note is not None
    assert "`env -i`" in note
    assert "stack-dump sitecustomize" in note
    assert "TMPDIR" in note
    assert "CUDA_VISIBLE_DEVICES" in note
    # `-S` holds env's options too; `-u NAME` takes NAME alone, and says so when it is ours.
    split = propose(["env", "-S", "-i A=1 python x.py"])
    assert reaching(environment_lines(environ, split, uses_torch=False), split) == ()
    unset = propose(["env", "-u", "NCCL_DEBUG", "--unset=TMPDIR", "python", "x.py"])
    kept = reaching(environment_lines(environ, unset, uses_torch=False), unset)
    assert [line.name for line in kept] == ["HF_TOKEN", "PYTHONUNBUFFERED", "LC_ALL"]
    assert wiped_note(unset) == (
        "`env -u TMPDIR` takes reprospec's own from the program too: the attempt's private TMPDIR"
    )
    # Without env's options nothing is wiped, and nothing is said.
    plain = propose(["env", "A=1", "python", "x.py"])
    assert len(reaching(environment_lines(environ, plain, uses_torch=False), plain)) == 5
    assert wiped_note(plain) is None
    assert wiped_note(propose(["env", "-C", "/tmp", "python", "x.py"])) is None


def test_an_editable_project_in_the_workdir_is_imported_from_its_folders(tmp_path: Path) -> None:
    # `pip install -e .` of the workdir's project: no pin (no index has it), the spec's
    # PYTHONPATH leads with the folder the install served the modules from.
    project = LocalInstall(
        "mypkg", "0.1.0", str(tmp_path), editable=True, roots=(str(tmp_path / "src"),)
    )
    assert project.carried_roots(tmp_path) == ("src",)
    assert replace(project, roots=(str(tmp_path),)).carried_roots(tmp_path) == (".",)
    outside = replace(project, path="/opt/lib", roots=("/opt/lib/src",))
    assert outside.carried_roots(tmp_path) is None
    assert replace(project, editable=False).carried_roots(tmp_path) is None
    given = (
        EnvLine("PYTHONPATH", "vendor", "set on the command line"),
        EnvLine("OMP_NUM_THREADS", "1"),
    )
    lines = with_import_roots(given, (project, outside), tmp_path)
    assert lines[0] == EnvLine(
        "PYTHONPATH",
        "src:vendor",
        "mypkg: your editable install's modules, from the workdir; set on the command line",
    )
    assert lines[1:] == given[1:]
    assert with_import_roots(given, (outside,), tmp_path) == given
    assert local_note(project, tmp_path).startswith(
        "mypkg 0.1.0 is your editable install of . (pip install -e), which no index has"
    )
    assert "outside the workdir" in local_note(outside, tmp_path)
    assert "was installed from" in local_note(replace(project, editable=False), tmp_path)


def test_rate_bounds_follow_what_was_observed() -> None:
    assert rate_bound(1, 1) is None
    assert rate_bound(5, 5) == ">=0.5"
    assert rate_bound(10, 10) == ">=0.7"
    assert rate_bound(3, 10) == ">0"
    assert rate_bound(0, 5) is None


def test_a_message_becomes_a_pattern_that_matches_it_and_its_siblings() -> None:
    pattern = message_pattern("DataLoader worker (pid(s) 21864) exited unexpectedly\nmore")
    assert pattern == r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"
    assert re.search(pattern, "DataLoader worker (pid(s) 4242) exited unexpectedly")


def test_a_path_of_the_attempts_own_temporary_folders_becomes_a_wildcard() -> None:
    # What an attempt's mkdtemp gives under its TMPDIR (the engine's reprospec-tmp folder),
    # with an object's address: the next attempt has other names and another address.
    seen = (
        "stale buffer <__main__.Buf object at 0x7f3a2c1d9e50> mapped from "
        "/tmp/reprospec-tmp-4242-dquig3k_/17/tmp/tmpl9x2lvz0/shard.bin"
    )
    again = (
        "stale buffer <__main__.Buf object at 0x7f11aa00bb10> mapped from "
        "/tmp/reprospec-tmp-977-a1b2c3d4/2/tmp/tmp_q8w7e6r/shard.bin"
    )
    pattern = message_pattern(seen)
    assert pattern == (
        r"stale buffer <__main__\.Buf object at (?:0x)?[0-9a-f]+> mapped from \S+/shard\.bin"
    )
    assert re.search(pattern, again)
    # mktemp's and multiprocessing's names too; a path of no made-up name stays as written.
    assert (
        message_pattern("no socket /tmp/pymp-k2j4h5g6/listener-x") == r"no socket \S+/listener\-x"
    )
    assert message_pattern("cannot open /tmp/tmp.Xy12AbCdEf") == r"cannot open \S+"
    assert message_pattern("cannot open /data/shards/train.bin") == (
        r"cannot open /data/shards/train\.bin"
    )


def test_a_path_under_the_run_folder_loses_the_runs_id() -> None:
    runs = "/home/me/proj/.reprospec/runs"
    seen = f"lock held: {runs}/20261129-101010-a-1f2e/default/1/tmp/x.lock"
    again = f"lock held: {runs}/20261130-090909-b-77aa/default/1/tmp/x.lock"
    pattern = message_pattern(seen, (runs,))
    assert pattern == r"lock held: \S+/default/\d+/tmp/x\.lock"
    assert re.search(pattern, again)


def test_a_masked_secret_becomes_a_wildcard_and_the_pattern_matches_the_real_message() -> None:
    # capture reads the message masked; the judge matches the child's own, with the secret.
    pattern = message_pattern("403 for token *** (expired)")
    assert "*" not in pattern
    assert pattern == r"\d+ for token .+? \(expired\)"
    assert re.search(pattern, "403 for token hf_SuperSecretValue123 (expired)")


def test_a_part_of_a_secret_becomes_a_wildcard_and_a_rerun_with_another_value_matches() -> None:
    # The program printed the token's first six characters: the mask (whole values only)
    # left them, and written down they leaked and failed whoever holds another token.
    secret = "hf_abcSECRET123xyz"
    pattern = message_pattern("row has 3 columns (token hf_abc)", secrets=[secret, "ab"])
    assert "abc" not in pattern
    assert pattern == r"row has \d+ columns \(token .+?\)"
    assert re.search(pattern, "row has 3 columns (token hf_other)")
    # Whole, or inside a path the run folder makes volatile: one wildcard, nothing left.
    runs = "/home/me/.reprospec/runs"
    whole = message_pattern(f"bad key {secret} in {runs}/r1/{secret}/x", (runs,), [secret])
    assert "SECRET" not in whole
    assert "hf_" not in whole
    assert re.search(whole, f"bad key k2 in {runs}/r2/k2/x")
    # Fewer than SECRET_PART_CHARS characters alike are the message's own words.
    assert message_pattern("read 4 rows", secrets=["rows-are-secret"]) == r"read \d+ rows"


def test_the_cut_counts_the_messages_own_text_and_never_ends_inside_a_wildcard() -> None:
    words = "x" * (MAX_MESSAGE_CHARS - 20)
    path = "/tmp/tmpabcdefgh/shard.bin"
    # 100 + 4 + 10 of the message's own text, then 6 more: the made-up folder did not count.
    pattern = message_pattern(f"{words} at {path} and then some more words")
    assert pattern == f"{words} at \\S+/shard\\.bin and t"
    cut = message_pattern(f"{'x' * MAX_MESSAGE_CHARS}{path}")
    assert cut == "x" * MAX_MESSAGE_CHARS


def test_module_names_map_to_the_workdir_files_the_child_resolved(tmp_path: Path) -> None:
    (tmp_path / "scripts" / "pkg").mkdir(parents=True)
    for name in (
        "scripts/run.py",
        "scripts/util.py",
        "scripts/pkg/__init__.py",
        "scripts/pkg/a.py",
    ):
        (tmp_path / name).write_text("")
    (tmp_path / "util.py").write_text("")  # shadowed: the script's folder comes first
    found = local_files(
        ["util", "pkg.a", "json", "torch.nn", "missing"], tmp_path, tmp_path / "scripts"
    )
    assert found == ("scripts/pkg/__init__.py", "scripts/pkg/a.py", "scripts/util.py")


def test_a_hung_import_is_read_from_the_stack(tmp_path: Path) -> None:
    stack = (
        "Current thread 0x00007f (most recent call first):\n"
        f'  File "{tmp_path}/plugin.py", line 9 in <module>\n'
        '  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed\n'
        f'  File "{tmp_path}/main.py", line 13 in <module>\n'
    )
    assert hung_import(stack, tmp_path) == "plugin.py:9"
    assert hung_import("", tmp_path) is None
    # A package's module by its path in its packages' folder, as a ticket's title names it
    # (it said `__init__.py:40`, the ticket `wandb/__init__.py`); the interpreter's alike.
    for lib, module in (
        ("/home/u/.venv/lib/python3.10/site-packages", "wandb/__init__.py"),
        ("/usr/lib/python3.10", "json/__init__.py"),
    ):
        installed = stack.replace(f"{tmp_path}/plugin.py", f"{lib}/{module}")
        assert hung_import(installed, tmp_path) == f"{module}:9"
    # A package outside the workdir and any library folder (on PYTHONPATH) by its package,
    # a Windows interpreter's alike: each said `__init__.py:9` (review).
    for path, module in (
        ("/home/u/libs/mypkg/__init__.py", "mypkg/__init__.py"),
        (r"C:\Python310\Lib\json\__init__.py", "json/__init__.py"),
        ("/srv/mymod.py", "mymod.py"),
    ):
        elsewhere = stack.replace(f"{tmp_path}/plugin.py", path)
        assert hung_import(elsewhere, tmp_path) == f"{module}:9"


def test_a_crashs_frame_is_the_programs_own_in_the_thread_that_took_the_signal(
    tmp_path: Path,
) -> None:
    lib = "/usr/lib/python3.11"
    # faulthandler's dump of a forked child: innermost first, ctypes' frame is where the
    # fault landed, the program's `work` what it was doing.
    child = (
        "Fatal Python error: Segmentation fault\n\nStack (most recent call first):\n"
        f'  File "{lib}/ctypes/__init__.py", line 519 in string_at\n'
        f'  File "{tmp_path}/jobs/mp.py", line 8 in work\n'
        f'  File "{lib}/multiprocessing/process.py", line 108 in run\n'
        f'  File "{tmp_path}/jobs/mp.py", line 15 in main\n'
    )
    assert crash_frame(child, tmp_path) == "work (jobs/mp.py:8)"
    # gdb's py-bt of a DataLoader worker's core, the crashed thread first, another after.
    worker = (
        "Thread 1 (Thread 0x7f (LWP 32280)):\nTraceback (most recent call first):\n"
        f'  File "{lib}/ctypes/__init__.py", line 519, in string_at\n'
        "    return _string_at(ptr, size)\n"
        f'  File "{tmp_path}/data.py", line 12, in __getitem__\n'
        "    ctypes.string_at(0)\n"
        f'  File "/v/site-packages/torch/utils/data/_utils/fetch.py", line 54, in fetch\n\n'
        "Thread 3 (Thread 0x7e (LWP 32291)):\nTraceback (most recent call first):\n"
        f'  File "{tmp_path}/other.py", line 3, in wait\n'
    )
    assert crash_frame(worker, tmp_path) == "__getitem__ (data.py:12)"
    # A traceback is innermost last; code outside the workdir counts when nothing of the
    # workdir shows, a library's and the interpreter's never.
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/opt/app/run.py", line 3, in <module>\n'
        '  File "/opt/app/native.py", line 7, in load\n'
        f'  File "{lib}/ctypes/__init__.py", line 519, in string_at\n'
    )
    assert crash_frame(traceback, tmp_path) == "load (native.py:7)"
    only_libraries = f'Stack (most recent call first):\n  File "{lib}/x.py", line 1 in f\n'
    assert crash_frame(only_libraries, tmp_path) is None
    assert crash_frame(None, tmp_path) is None


def test_the_written_spec_reads_back_as_drafted() -> None:
    command = "python a.py --workers ${{ matrix.workers }} " + "--flag " * 20
    draft = Draft(
        name="x",
        command=command.strip(),
        workdir="sub",
        files=("sub/mod.py",),
        python="3.11",
        packages=("torch==2.13.0+cpu", "numpy==2.1.0"),
        env=(
            EnvLine("A", "1e3"),
            EnvLine("CUDA_LAUNCH_BLOCKING", "1", "try", commented=True),
        ),
        matrix=(Axis("workers", (2,), "try [2, 0]"), Axis("name", ("a, b",))),
        presets=("lightning", "steps"),
        timeout="30s",
        expect={"outcome": "crash", "signal": "SIGSEGV", "step": "3..5"},
        todo=("command: a long explanation " * 5,),
        header=("first line",),
    )
    text = render_spec(draft)
    document = load_yaml(text).data
    assert isinstance(document, dict)
    assert document["command"] == command.strip()
    assert document["environment"] == {
        "workdir": "sub",
        "python": "3.11",
        # A local label (`+cpu`) matched no other build of the release: a comment only.
        "packages": ["torch==2.13.0", "numpy==2.1.0"],
        "env": {"A": "1e3"},
    }
    assert "- torch==2.13.0  # 2.13.0+cpu where it failed" in text
    assert document["matrix"] == {"workers": [2], "name": ["a, b"]}
    assert document["markers"] == [{"preset": "lightning"}, {"preset": "steps"}]
    assert document["expect"] == {"outcome": "crash", "signal": "SIGSEGV", "step": "3..5"}
    assert "#   CUDA_LAUNCH_BLOCKING: '1'  # try" in text
    assert all(len(line) <= 100 for line in text.splitlines() if line.startswith("# "))


@pytest.mark.parametrize(
    ("argv", "stem"),
    [
        (("python", "train.py", "--lr", "1"), "train"),
        (("python", "-m", "pkg.tool"), "pkg"),
        # A shell script names the capture, not its suffix or the shell: `run.sh-capture.yaml`
        # and `sh-capture.yaml` were the default names.
        (("./run.sh",), "run"),
        (("sh", "run.sh", "--fast"), "run"),
        (("MY_FLAG=1", "./go.bash"), "go"),
        (("bash", "-c", "make test"), "bash"),
        (("bash", "-x", "run.sh"), "run"),  # named `bash`: an option before the script
        (("sh", "-o", "pipefail", "-e", "scripts/go.sh"), "go"),
        (("bash", "-xc", "sh run.sh"), "bash"),
        (("bash", "--", "-odd.sh"), "odd"),
        (("bash", "-O", "extglob", "run.sh"), "run"),  # named `extglob`
        (("bash", "--rcfile", "my.rc", "go.sh"), "go"),
        (("bash", "-s", "arg"), "bash"),  # the script comes on stdin
        (("pytest", "-x"), "pytest"),
    ],
)
def test_a_captured_command_is_named_by_its_script(argv: tuple[str, ...], stem: str) -> None:
    assert script_stem(argv) == stem


@pytest.mark.parametrize(
    ("where", "exception"),
    [("worker", None), ("child", None), ("main", "RuntimeError")],
)
def test_a_crashs_exception_is_expected_only_of_the_main_process(
    where: str, exception: str | None
) -> None:
    # A worker's death surfaces in the main process as RuntimeError one time and
    # ConnectionResetError the next: a spec expecting it never reproduced.
    keys = process_keys(crash=True, where=where, exception="RuntimeError", step=None)
    assert keys.exception == exception


def test_the_main_process_is_expected_only_where_it_is_certain() -> None:
    # A live run's classified outcome names a worker's or a child's death as such, so its
    # `main` is certain; a ticket's `main` is the reader's default for a log naming none.
    certain = process_keys(crash=True, where="main", exception=None, step=None, certain=True)
    assumed = process_keys(crash=True, where="main", exception=None, step=None)
    assert (certain.where, assumed.where) == ("main", None)
    hang = process_keys(crash=False, where="main", exception=None, step=None, certain=True)
    assert hang.where is None


def test_a_hang_stuck_in_a_worker_or_child_is_expected_there_where_it_is_certain() -> None:
    # As a worker's crash: the main process's own hang is another bug, and so is a hang in
    # a child it only waits for. A hang in the main process, or a ticket's (not certain),
    # writes none.
    def where(process: str, *, certain: bool) -> str | None:
        keys = process_keys(
            crash=False, hang=True, where=process, exception=None, step=None, certain=certain
        )
        return keys.where

    assert where("worker", certain=True) == "worker"
    assert where("worker", certain=False) is None
    assert where("main", certain=True) is None
    assert where("child", certain=True) == "child"
    assert where("child", certain=False) is None


def test_an_errors_exception_is_its_own_wherever_it_was_raised() -> None:
    keys = process_keys(crash=False, where=None, exception="ValueError", step=3)
    assert (keys.exception, keys.step, keys.comments) == ("ValueError", 3, ())


def test_a_workers_step_seen_once_is_not_expected_and_says_why() -> None:
    keys = process_keys(crash=True, where="worker", exception="RuntimeError", step=7)
    assert (keys.exception, keys.step) == (None, None)
    assert keys.comments == (
        ("phase", "the main loop was at step 7; workers run ahead, so no step is expected"),
    )


def test_a_step_is_a_range_where_it_varied_and_exact_where_it_did_not() -> None:
    varied = process_keys(crash=True, where="main", exception=None, step=7, steps=(7, 9, 8), seen=3)
    assert (varied.step, varied.comments) == ("7..9", (("step", "as observed: it varies"),))
    same = process_keys(crash=True, where="worker", exception=None, step=7, steps=(7, 7), seen=2)
    assert same.step == 7
    main = process_keys(crash=True, where="main", exception="SystemError", step=7)
    assert (main.exception, main.step) == ("SystemError", 7)


def test_a_workers_step_that_varied_is_not_expected_and_says_where_the_main_loop_was() -> None:
    """The main loop notices a worker's death some steps late, by timing: 5 crashes noticed
    at steps 9..11 wrote `step: 9..11`, and the verify's 5 crashes, at 7, 8 and 12, all
    missed it."""
    varied = process_keys(
        crash=True, where="worker", exception=None, step=9, steps=(9, 9, 11, 10), seen=4
    )
    assert varied.step is None
    assert varied.comments == (
        ("phase", "the main loop was at steps 9..11; workers run ahead, so no step is expected"),
    )


def test_an_axis_of_several_words_says_so_and_is_named_quoted() -> None:
    # `layers: [64 128 256]  # from `--layers 64 128 256``, named `layers=64 128 256, lr=0.1`
    # in capture's output: one number, read as the comment and the list went.
    layers, lr = propose(["python", "t.py", "--layers", "64", "128", "256", "--lr", "0.1"]).toggles
    axis = axis_for(layers)
    assert axis.values == ("64 128 256",)
    assert axis.comment == (
        "from `--layers 64 128 256`: one value of several words, each a value of the option"
    )
    assert axis_for(lr).comment == "from `--lr 0.1`"
    assert [show_value(t.value) for t in (layers, lr)] == ["'64 128 256'", "0.1"]
    assert show_value("it's a") == "'it''s a'"
    assert show_value("16-mixed") == "16-mixed"


def test_a_dataloader_is_named_in_a_workers_hint_only_for_a_program_importing_torch() -> None:
    # `--workers 2` of a program importing only ctypes was told "for a DataLoader, 0 loads
    # the data in the main process".
    (workers,) = propose(["python", "app.py", "--workers", "2"]).toggles
    with_torch = axis_for(workers, uses_torch=True).comment
    assert with_torch == (
        "from `--workers 2`; try [2, 0]: for a DataLoader, 0 loads the data in the main process"
    )
    crash = axis_for(workers, uses_torch=True, outcome="crash").comment
    assert crash == with_torch + ": no worker to die"
    without = axis_for(workers, uses_torch=False).comment
    assert without.startswith("from `--workers 2`; try [2, 0]: ")
    assert "DataLoader" not in without
    # What 0 workers take away is said by the incident's outcome: "no worker to die" was
    # said of a hang too.
    said = {k: axis_for(workers, False, k).comment.rpartition(": ")[2] for k in ("hang", "error")}
    assert said == {"hang": "no worker to wait on", "error": "no worker to raise it in"}
    assert axis_for(workers, False, "crash").comment.endswith("worker processes: no worker to die")
    # A hint that holds for any program is the same either way.
    (pinned,) = propose(["python", "app.py", "--pin-memory"]).toggles
    assert axis_for(pinned, uses_torch=False).comment == axis_for(pinned).comment


def test_a_literal_expression_opener_in_a_variables_value_is_written_so_the_spec_sets_it() -> None:
    # environment.env's values are expanded: `FOO='a${{ b }}'` of the command line, or a
    # shell's `PS1`, written as is failed the spec's validation (`unknown name 'b'`).
    environ = {"NCCL_DEBUG_FILE": "${{ env.USER }}-run", "LC_ALL": "${{x}}"}
    proposal = propose(["FOO=a${{ b }}", "python", "a.py"])
    lines = {line.name: line for line in environment_lines(environ, proposal, uses_torch=False)}
    context: dict[str, JsonValue] = {"matrix": {}, "env": {"USER": "reader"}}
    assert expr.interpolate(lines["FOO"].value, context) == "a${{ b }}"
    assert expr.interpolate(lines["NCCL_DEBUG_FILE"].value, context) == "${{ env.USER }}-run"
    assert expr.interpolate(lines["LC_ALL"].value, context) == "${{x}}"


def test_the_observe_note_is_one_line_at_a_long_spec_path_and_carried_true() -> None:
    """Wrapped at 88 columns, a long spec path put `reprospec run`, the path and
    `--observe ...` on three comment lines: no one could paste it, and minimize and
    amplify, which find the note by its lines, carried it naming the original spec."""
    from reprospec.spec.comments import AXES_NOTE, axes_note_for, observe_line

    long = "incidents/a_rather_long_folder_name/another_level/crash_from_the_training_job.yaml"
    header = (
        "Written by this command:",
        "  reprospec capture -- python app.py --mode fast",
        *AXES_NOTE,
    )
    draft = Draft(
        name="app",
        command="python app.py --mode ${{ matrix.mode }}",
        matrix=(Axis("mode", ("fast",)),),
        header=(*header, observe_line(long)),
    )
    text = render_spec(draft)
    assert f"\n# {observe_line(long)}\n" in text
    assert all(len(line) <= 90 for line in text.split("\n") if long not in line)
    # minimize's and amplify's rewrite finds it and names the spec they write.
    body = text[text.index("reprospec: 1") :]
    carried = axes_note_for(text, body, "minimized.yaml")
    assert f"\n# {observe_line('minimized.yaml')}\n" in carried
    assert long not in carried


@pytest.mark.parametrize(
    ("env", "axes"),
    [
        ({"MLPKG_FUSED": "1"}, {"mlpkg_fused": ["1", None]}),
        ({"ALPHA_B": "2", "ZETA_A": "1"}, {"shell_env": ["set", "empty"]}),
    ],
)
def test_a_control_cell_sets_the_variables_in_one_cell_and_empties_them_in_the_other(
    tmp_path: Path, env: dict[str, str], axes: dict[str, JsonValue]
) -> None:
    # The spec a person would write by hand: the failing cell as captured, and the control
    # cell, the command with the variables empty, expected to pass (what minimize holds its
    # candidates to); a toggle's own axis stays beside it.
    from reprospec.plan.attempt import expectation_for, plan_attempt
    from reprospec.spec.load import load_spec
    from reprospec.spec.matrix import expand

    lines = tuple(
        EnvLine(name, value, "your shell set it: the failure needs it")
        for name, value in env.items()
    )
    draft = Draft(
        name="fused",
        command="python prog.py --steps ${{ matrix.steps }}",
        env=lines,
        matrix=(Axis("steps", (3,), "from `--steps 3`"),),
        expect={"outcome": "error", "exception": "RuntimeError"},
        control=Control(tuple(env), "the control cell"),
    )
    path = tmp_path / "spec.yaml"
    path.write_text(render_spec(draft), encoding="utf-8")
    spec = load_spec(path)
    document = spec.document["matrix"]
    assert isinstance(document, dict)
    assert {k: v for k, v in document.items() if k in axes} == axes
    cells = list(expand(spec))
    assert len(cells) == 2
    seen = {}
    for cell in cells:
        plan = plan_attempt(spec, cell, 1, base_env={})
        seen[expectation_for(spec, cell, base_env={}).outcome] = {n: plan.env.get(n) for n in env}
    assert seen == {"error": env, "pass": dict.fromkeys(env, "")}
