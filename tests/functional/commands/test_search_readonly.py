"""`reprospec minimize` and `reprospec amplify` run again on a finished search whose --out was
made read-only since: the probes replay from state.json and the answer is known, but the
write of its reports (minimize.json, amplified.yaml) failed and the command exited 2 with
`Read-only file system` and no answer. The answer is printed with a warning and the exit
code is the answer's; minimize's -o DIR, where its minimized program goes, is refused
before anything replays where it cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT
from tests.support.readonly import read_only

PROGRAM = """\
import ctypes
import sys

unused = 1
if sys.argv[1] == "a":
    ctypes.string_at(0)
print("ok")
"""

SPEC = """\
reprospec: 1
name: readonly
matrix:
  mode: [a, b]
command: python prog.py ${{ matrix.mode }}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: b}
      outcome: pass
"""

# Fails only on one CPU: amplify's `cpus=1` wins in every attempt.
ONE_CPU = """\
import ctypes
import os

if len(os.sched_getaffinity(0)) == 1:
    ctypes.string_at(0)
print("ok")
"""

ONE_CPU_SPEC = """\
reprospec: 1
name: onecpu
command: python prog.py
expect:
  outcome: crash
  signal: SIGSEGV
  rate: ">0"
"""

ENV = {**os.environ, "NO_COLOR": "1"}
WARNING = "reprospec: warning: the answer could not be saved in "


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=120)


def _search(
    tmp_path: Path, verb: str, program: str, spec: str, *options: str
) -> tuple[list[str], Path]:
    """`reprospec VERB spec.yaml --out OUT OPTIONS`'s words over `program` as prog.py in
    `tmp_path`, and OUT (tmp_path/out), the folder the reruns make read-only."""
    (tmp_path / "prog.py").write_text(program)
    (tmp_path / "spec.yaml").write_text(spec)
    out = tmp_path / "out"
    spec_path = str(tmp_path / "spec.yaml")
    return [sys.executable, "-m", "reprospec", verb, spec_path, "--out", str(out), *options], out


def _writable(folder: Path) -> None:
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            (Path(root) / name).chmod(0o755)
    folder.chmod(0o755)


def test_minimize_prints_its_replayed_answer_and_refuses_an_unwritable_dir(
    tmp_path: Path,
) -> None:
    argv, out = _search(
        tmp_path, "minimize", PROGRAM, SPEC,
        "-j", "1", "--budget", "12", "--min-rate", "0.9", "--error", "0.5",
    )  # fmt: skip
    result = tmp_path / "result"
    first = _run([*argv, "-o", str(result)])
    assert first.returncode in (0, 1), first.stderr  # minimized, or out of budget
    answer = first.stdout.splitlines()[0]
    try:
        for fmt in ("text", "json"):
            again = _run(read_only(out, [*argv, "-o", str(result), "--format", fmt]))
            assert again.returncode == first.returncode, again.stderr
            assert "Traceback" not in again.stderr
            assert "replay" in again.stderr  # nothing ran again
            assert WARNING in again.stderr, again.stderr
            assert f"those in {result} are" in again.stderr
            if fmt == "text":
                assert again.stdout.splitlines()[0] == answer
                # DIR holds this answer: its minimize.md is named.
                assert f"report: {result / 'minimize.md'}" in again.stdout
            else:
                assert json.loads(again.stdout)["unsaved"].startswith(
                    "the answer could not be saved"
                )
            assert "unsaved" in json.loads((result / "minimize.json").read_text())
        # The default DIR lies in the read-only --out: refused before anything replays.
        default = _run(read_only(out, argv))
        assert default.returncode == 2, default.stderr
        assert "replay" not in default.stderr
        assert f"--out {out}: {out / 'minimize'} cannot be written (Read-only" in default.stderr
    finally:
        _writable(out)
    try:
        unwritable = _run(read_only(result, [*argv, "-o", str(result)]))
        assert unwritable.returncode == 2, unwritable.stderr
        assert "replay" not in unwritable.stderr
        assert f"-o {result}: cannot be written (" in unwritable.stderr
        assert "Traceback" not in unwritable.stderr
    finally:
        _writable(result)


def test_amplify_prints_its_replayed_answer_though_it_cannot_be_saved(tmp_path: Path) -> None:
    argv, out = _search(
        tmp_path, "amplify", ONE_CPU, ONE_CPU_SPEC, "-j", "2", "--budget", "16", "--try", "cpus=1"
    )
    first = _run(argv)
    assert first.returncode == 0, first.stdout + first.stderr
    answer = first.stdout.splitlines()[0]
    amplified = next(out.glob("amplify/*/amplified.yaml"))
    try:
        for fmt in ("text", "json"):
            again = _run(read_only(out, [*argv, "--format", fmt]))
            assert again.returncode == 0, again.stderr
            assert "Traceback" not in again.stderr
            assert "replay" in again.stderr
            assert WARNING in again.stderr, again.stderr
            if fmt == "text":
                assert again.stdout.splitlines()[0] == answer
                assert "report: " not in again.stdout  # amplify.md is not this answer's
                # The amplified spec there is this answer's, written by the first run.
                assert f"amplified spec: {amplified}" in again.stdout
            else:
                data = json.loads(again.stdout)
                assert data["unsaved"].startswith("the answer could not be saved")
                assert data["amplified_spec"] == str(amplified)
    finally:
        _writable(out)


def test_minimize_with_another_dir_on_a_read_only_out_is_refused_before_dir_is_written(
    tmp_path: Path,
) -> None:
    """DIR's check is replayed only for the -o it was stored of: another -o ran its
    attempts, which stopped on the read-only --out's results store, exit 2 after the
    replay with no answer. It is refused before DIR is written, naming the -o whose check
    is stored; that one is answered, unsaved, as ever."""
    argv, out = _search(tmp_path, "minimize", PROGRAM, SPEC, "-j", "1", "--budget", "40")
    result, other = tmp_path / "result", tmp_path / "other"
    first = _run([*argv, "-o", str(result)])
    assert first.returncode == 0, first.stderr  # minimized: DIR's check ran
    try:
        again = _run(read_only(out, [*argv, "-o", str(other)]))
        assert again.returncode == 2, again.stderr
        assert "Traceback" not in again.stderr
        # Refused before the replay: the stored check names its -o already.
        assert "replay" not in again.stderr, again.stderr
        assert f"--out {out}: cannot be written (Read-only" in again.stderr, again.stderr
        assert f"give -o {result} again (its check is stored)" in again.stderr
        assert not other.exists()
        same = _run(read_only(out, [*argv, "-o", str(result)]))
        assert same.returncode == 0, same.stderr
        assert WARNING in same.stderr
        # A smaller --budget replays to another answer, a refusal, which runs no check:
        # answered from the stored probes (exit 1), not refused naming the -o stored.
        smaller = _run(read_only(out, [*argv, "--budget", "8", "-o", str(tmp_path / "small")]))
        assert smaller.returncode == 1, smaller.stderr
        assert smaller.stdout.startswith("not minimized (refused): the budget is too small")
        assert "give -o" not in smaller.stderr, smaller.stderr
        assert WARNING in smaller.stderr
        # Another --min-rate is other settings too (dir-check.json's `asked`): left to the
        # replay, which says what it reached, not refused before it.
        rate = _run(read_only(out, [*argv, "--min-rate", "0.5", "-o", str(tmp_path / "rate")]))
        assert rate.returncode in (1, 2), rate.stderr
        assert "Traceback" not in rate.stderr
        assert "replay" in rate.stderr, rate.stderr
    finally:
        _writable(out)
    # What the pre-check compares: the search's settings, stored beside DIR's check; one
    # that varied run to run (a field of Settings' repr) would turn the check off, and the
    # refusal above would come after the replay.
    (check,) = out.glob("minimize/*/dir-check.json")
    asked = json.loads(check.read_text())["asked"]
    assert asked.startswith("Settings("), asked
    assert "budget=40" in asked, asked
    second = tmp_path / "second"
    anew = _run([*argv[: argv.index("--out") + 1], str(second), "-j", "1", "--budget", "40"])
    assert anew.returncode == 0, anew.stderr
    (check,) = second.glob("minimize/*/dir-check.json")
    assert json.loads(check.read_text())["asked"] == asked


# SPEC run on one CPU.
PERTURBED_SPEC = SPEC.replace("name: readonly\n", "name: perturbed\n").replace(
    "expect:\n", "environment:\n  perturb:\n    cpus: [0]\nexpect:\n"
)

# Fails only on one CPU: the perturbation is what makes it fail.
PERTURBED = """\
import ctypes
import os
import sys

unused = 1
if sys.argv[1] == "a" and len(os.sched_getaffinity(0)) == 1:
    ctypes.string_at(0)
print("ok")
"""


def test_minimize_refuses_an_unstored_unperturbed_check_on_a_read_only_out(
    tmp_path: Path,
) -> None:
    """The check of DIR without the perturbation follows DIR's own check; one stopped
    before its unperturbed.json was written ran again on the read-only --out, after the
    replay and DIR's write, and stopped on the results store: exit 2, `out is read-only to
    this user`, no answer. It is refused before anything replays, saying which check runs;
    with the check stored, the answer is printed unsaved as ever."""
    result = tmp_path / "result"
    argv, out = _search(
        tmp_path, "minimize", PERTURBED, PERTURBED_SPEC,
        "-j", "1", "--budget", "20", "--min-rate", "0.9", "--error", "0.5", "-o", str(result),
    )  # fmt: skip
    first = _run(argv)
    assert first.returncode in (0, 1), first.stdout + first.stderr
    (record,) = out.glob("minimize/*/unperturbed.json")  # the check ran: DIR was confirmed
    kept = record.read_bytes()
    record.unlink()  # as a check stopped before its end leaves it
    answer = (result / "minimize.json").read_bytes()
    try:
        again = _run(read_only(out, argv))
        assert again.returncode == 2, again.stderr
        assert "Traceback" not in again.stderr
        # Refused before the replay: DIR's stored check names this -o, confirmed (review).
        assert "replay" not in again.stderr, again.stderr
        assert (
            f"--out {out}: cannot be written (Read-only file system), and the check of -o "
            f"{result} without the perturbation runs its minimized.yaml" in again.stderr
        ), again.stderr
        assert (result / "minimize.json").read_bytes() == answer  # DIR left as it was
        # A record of this DIR whose check does not read as one is none: refused so too,
        # not taken for stored, replayed, and its check's run refused only then (review).
        _writable(out)
        unread = {**json.loads(kept), "check": {"original": "?"}}
        record.write_text(json.dumps(unread) + "\n", encoding="utf-8")
        garbled = _run(read_only(out, argv))
        assert garbled.returncode == 2, garbled.stderr
        assert "replay" not in garbled.stderr, garbled.stderr
        assert "without the perturbation runs its minimized.yaml" in garbled.stderr
    finally:
        _writable(out)
    record.unlink(missing_ok=True)  # the garbled one, read-only to a user
    record.write_bytes(kept)
    try:
        stored = _run(read_only(out, argv))
        assert stored.returncode == first.returncode, stored.stderr
        assert WARNING in stored.stderr, stored.stderr
        assert stored.stdout.splitlines()[0] == first.stdout.splitlines()[0]
    finally:
        _writable(out)


def test_bisect_prints_its_answer_on_a_read_only_out_and_refuses_new_attempts(
    tmp_path: Path,
) -> None:
    """A finished bisect run again on an --out made read-only since knew its answer from
    state.json, then exited 2 on its write (`Read-only file system: .../state.tmp8929`), no
    answer. It prints the answer with the warning isolate's, minimize's and amplify's give,
    exit code the answer's; where a version needs attempts (--fresh), it is refused before
    that version's environment is built, saying why."""
    from reprospec import venvs
    from tests.support.envs import make_releases, uv_environment

    wheels = make_releases(
        tmp_path / "wheels", "reprospec-rodemo", 4, lambda m: f"REGRESSED = {m >= 2}\n"
    )
    (tmp_path / "prog.py").write_text(
        "import reprospec_rodemo\nassert not reprospec_rodemo.REGRESSED\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: rodemo\nenvironment:\n  packages: [reprospec-rodemo==1.3]\n"
        "command: python prog.py\nexpect:\n  outcome: error\n  exception: AssertionError\n"
    )
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", "bisect", str(tmp_path / "spec.yaml"), "--package",
        "reprospec-rodemo", "--good", "1.0", "--bad", "1.3", "--find-links", str(wheels),
        "--out", str(out),
    ]  # fmt: skip
    env = {**ENV, venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)

    first = run(argv)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.startswith("first bad: reprospec-rodemo 1.2 (last good 1.1)")
    try:
        for fmt in ("text", "json"):
            again = run(read_only(out, [*argv, "--format", fmt]))
            assert again.returncode == 0, again.stderr
            assert "Traceback" not in again.stderr
            assert WARNING in again.stderr, again.stderr
            assert "its bisect.json and bisect.md are not this run's" in again.stderr
            if fmt == "text":
                assert again.stdout.splitlines()[0] == first.stdout.splitlines()[0]
                assert "report: " not in again.stdout  # bisect.md is not this answer's
            else:
                data = json.loads(again.stdout)
                assert data["first_bad"] == "1.2"
                assert data["unsaved"].startswith("the answer could not be saved")
        fresh = run(read_only(out, [*argv, "--fresh"]))
        assert fresh.returncode == 2, fresh.stderr
        assert "Traceback" not in fresh.stderr
        assert f"--out {out}: cannot be written (Read-only file system), and 1.3 needs" in (
            fresh.stderr
        )
    finally:
        _writable(out)
    # Out of budget (undecided), then a larger --budget on the read-only --out: the next
    # version's environment is not built (cli.md: "before its environment is built").
    small, envs = tmp_path / "small", tmp_path / "envs-small"
    small_argv = [*argv[: argv.index("--out")], "--out", str(small)]
    small_env = {**env, venvs.ENVS_VARIABLE: str(envs)}

    def run_small(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, capture_output=True, text=True, cwd=ROOT, env=small_env, timeout=300
        )

    undecided = run_small([*small_argv, "--budget", "1"])
    assert undecided.returncode == 1, undecided.stdout + undecided.stderr
    assert undecided.stdout.startswith("undecided: "), undecided.stdout
    built = sorted(p.name for p in envs.iterdir())
    try:
        larger = run_small(read_only(small, small_argv))
        assert larger.returncode == 2, larger.stdout + larger.stderr
        assert "Traceback" not in larger.stderr
        assert f"--out {small}: cannot be written (Read-only file system), and " in larger.stderr
        assert " needs attempts, whose runs are stored there" in larger.stderr
        assert sorted(p.name for p in envs.iterdir()) == built
    finally:
        _writable(small)
    # --out can be written, the bisect's own folder (another user's) cannot: its attempts
    # ran, then the write of state.json raised a traceback. Refused as --out is.
    (folder,) = (p for p in (out / "bisect").iterdir() if p.is_dir())
    try:
        theirs = run(read_only(folder, [*argv, "--fresh"]))
        assert theirs.returncode == 2, theirs.stderr
        assert "Traceback" not in theirs.stderr
        assert f"--out {out}: {folder} cannot be written (Read-only file system), and 1.3 " in (
            theirs.stderr
        )
    finally:
        _writable(out)


def test_a_larger_budget_on_a_read_only_out_is_refused_before_anything_replays(
    tmp_path: Path,
) -> None:
    """isolate's, minimize's and amplify's run out of budget, then given a larger --budget on
    an --out made read-only since: each replayed its stored probes, ran its first new
    attempt and exited 2 on the results store's `out is read-only to this user` (for root on
    a read-only mount too). Refused before anything replays, saying why."""
    searches = {
        "isolate": ("isolation", ("--budget", "3"), ()),
        "minimize": ("minimization", ("--budget", "8", "-j", "1"), ("-o", "result")),
        "amplify": ("amplification", ("--budget", "4", "-j", "2"), ()),
    }
    for verb, (search, small, more) in searches.items():
        folder = tmp_path / verb
        folder.mkdir()
        argv, out = _search(folder, verb, PROGRAM, SPEC, *small)
        if more:
            argv = [*argv, more[0], str(folder / more[1])]
        first = _run(argv)
        assert first.returncode == 1, first.stdout + first.stderr  # out of budget
        larger = [*argv, "--budget", "40"]
        try:
            again = _run(read_only(out, larger))
        finally:
            _writable(out)
        assert again.returncode == 2, again.stdout + again.stderr
        assert "Traceback" not in again.stderr
        assert "continuing" not in again.stderr  # nothing replayed
        assert f"--out {out}: cannot be written (" in again.stderr, again.stderr
        budget = small[1]
        assert f"and a --budget of 40 continues {search} " in again.stderr, again.stderr
        assert f"past its earlier run's --budget of {budget}," in again.stderr
        assert f"(or --budget {budget} to see its answer again)" in again.stderr


# Two settings differ between the failing cell and the passing one: minimize's step 1
# isolates them; both are needed, so isolate on a budget of 1 refuses as too small.
TWO_SETTINGS = """\
import ctypes
import sys

if sys.argv[1] == "a" and sys.argv[2] == "x":
    ctypes.string_at(0)
print("ok")
"""

TWO_SETTINGS_SPEC = """\
reprospec: 1
name: readonly2
matrix:
  mode: [a, b]
  extra: [x, y]
  exclude:
    - {mode: a, extra: y}
    - {mode: b, extra: x}
command: python prog.py ${{ matrix.mode }} ${{ matrix.extra }}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: b}
      outcome: pass
"""


@pytest.mark.parametrize(
    ("verb", "small", "more", "said"),
    [
        # isolate refused, its budget too small (status refused): a larger one goes on.
        ("isolate", "1", (), "a --budget of 40 continues isolation "),
        # minimize's step 1 isolates under a share of its --budget (8 // 5, 40 // 5): its
        # isolate went on and wrote, past its own refusal, on a larger --budget.
        ("minimize", "8", ("-j", "1", "-o"), "a --budget of 40 continues minimize's step 1 "),
    ],
)
def test_a_larger_budget_past_a_refusal_or_step_1_on_a_read_only_out_is_refused(
    tmp_path: Path, verb: str, small: str, more: tuple[str, ...], said: str
) -> None:
    argv, out = _search(tmp_path, verb, TWO_SETTINGS, TWO_SETTINGS_SPEC, "--budget", small)
    if more:
        argv = [*argv, *more, str(tmp_path / "result")]
    first = _run(argv)
    assert first.returncode in (1, 2), first.stdout + first.stderr
    try:
        again = _run(read_only(out, [*argv, "--budget", "40"]))
    finally:
        _writable(out)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "Traceback" not in again.stderr
    assert "continuing" not in again.stderr, again.stderr  # nothing replayed
    assert f"--out {out}: cannot be written (" in again.stderr, again.stderr
    assert said in again.stderr, again.stderr


def test_an_interrupted_minimize_on_a_read_only_out_is_refused_at_its_attempts_budget(
    tmp_path: Path,
) -> None:
    """An interrupted minimize's stored probes never hold the final check of its best (nor
    step 2, where it stopped in step 1): `--budget` of the attempts it ran is no replay alone,
    and was let through to run new attempts on the read-only --out. Refused, with no
    --budget to give."""
    argv, out = _search(
        tmp_path, "minimize", PROGRAM, SPEC,
        "-j", "1", "--budget", "12", "--min-rate", "0.9", "--error", "0.5",
        "-o", str(tmp_path / "result"),
    )  # fmt: skip
    first = _run(argv)
    assert first.returncode in (0, 1), first.stderr
    (answer,) = (out / "minimize").glob("*/minimize.json")
    stored = json.loads(answer.read_text(encoding="utf-8"))
    stored["status"] = "interrupted"  # as a run stopped before its final check leaves it
    answer.write_text(json.dumps(stored), encoding="utf-8")
    try:
        again = _run(read_only(out, [*argv, "--budget", str(stored["attempts"])]))
    finally:
        _writable(out)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "Traceback" not in again.stderr
    assert f"--out {out}: cannot be written (" in again.stderr, again.stderr
    assert "goes on from its interrupted run" in again.stderr
    assert "--budget" not in again.stderr.split("cannot be written", 1)[1]
