"""capture --repeat of a program that fails two ways: the one its spec does not expect is
said, with how to target it, and the verify says what else came back (capture/alsoseen.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import Cli

# Attempt N of the program ends as _PATTERN[(N - 1) % 6], counted in a file beside it: 3
# ValueErrors, 2 real segfaults and a pass in every 6 attempts, whichever run they are in.
_PROGRAM = """\
import ctypes, pathlib
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
print("step 1", flush=True)
print("step 2", flush=True)
kind = "segv error segv error error pass".split()[(n - 1) % 6]
if kind == "segv":
    ctypes.string_at(0)
elif kind == "error":
    raise ValueError("bad batch")
"""


def test_a_second_failure_mode_is_said_and_its_spec_is_one_command_away(
    cli: Cli, tmp_path: Path
) -> None:
    # ValueError 5/10 and SIGSEGV 4/10; the spec was about the ValueError, and
    # nothing said that 4 attempts segfaulted, nor that the verify saw them again.
    (tmp_path / "t.py").write_text(_PROGRAM.format(count=str(tmp_path / "count")))
    argv = ["capture", "--repeat", "6", "-o", "spec.yaml", "--out", str(tmp_path / "out")]
    result = cli(*argv, "--", "python", "t.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "wrote spec.yaml: error:ValueError in 3/6 attempts"
    also = re.fullmatch(
        r"also seen: (crash:SIGSEGV:main\S*) in 2/6 attempts, which the spec's expect does "
        r"not match; for it: (reprospec run spec\.yaml --set .*)",
        lines[1],
    )
    assert also, lines[1]
    segv, command = also.groups()
    assert lines[2].startswith(
        f"error:ValueError is not surely more common than {segv}: 3 to 2 of 6 attempts is "
        "within chance, so which one the spec expects may be chance"
    )
    assert lines[3] == (
        "for any failure (5/6): reprospec run spec.yaml --set "
        """'expect={outcome: fail, rate: ">0"}'"""
    )
    # The verify's 6 attempts ended as the first run's did: the others are said too.
    assert (
        f"the same signature (error:ValueError) came back in 3/6 attempts (the others: {segv} "
        "in 2, pass in 1); verdict reproduced"
    ) in result.stdout
    spec = load_spec(str(tmp_path / "spec.yaml"))
    assert f"It also ended `{segv}` in 2 of 6 attempts, which `expect` does not match" in str(
        spec.document["description"]
    )
    text = (tmp_path / "spec.yaml").read_text()
    assert f"outcome: error  # also seen: {segv} in 2/6;" in text
    # The printed command runs the same spec for the segfault, and reproduces it.
    words = shlex.split(command)
    assert words[:3] == ["reprospec", "run", "spec.yaml"]
    ran = cli(*words[1:], "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert cell["verdict"] == "reproduced"
    assert cell["expected"]["outcome"] == "crash"
    matched = [a["outcome"]["signature"] for a in cell["attempts"] if a["matched"]]
    assert matched == [segv, segv]


def test_a_hang_at_a_phase_the_written_expect_matches_is_no_other_failure(
    cli: Cli, tmp_path: Path
) -> None:
    # 3 hangs before any progress and one after "epoch 0" (hang:epoch); the spec
    # expects {outcome: hang}, which matches a hang at any phase, as `run` counts it, yet
    # capture said hang:epoch was "also seen, which the spec's expect does not match" and
    # wrote 3/4. Each attempt hangs for real, on a lock it already holds.
    count = tmp_path / "count"
    (tmp_path / "h.py").write_text(
        "import pathlib, threading\n"
        f"count = pathlib.Path({str(count)!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        "if n % 4 == 0:\n"
        "    print('epoch 0', flush=True)\n"
        "lock = threading.Lock()\n"
        "lock.acquire()\n"
        "lock.acquire()\n"
    )
    out = str(tmp_path / "out")
    argv = ["capture", "--repeat", "4", "--timeout", "3s", "-o", "spec.yaml", "--out", out]
    result = cli(*argv, "--", "python", "h.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "wrote spec.yaml: hang in 4/4 attempts", result.stdout
    assert "also seen" not in result.stdout
    text = (tmp_path / "spec.yaml").read_text()
    assert "also seen" not in text
    assert "observed 4/4" in text
    # The spec's run agrees: the hang at a phase is one of its matches.
    results = list((tmp_path / "out" / "runs").glob("*/results.json"))
    first = min(results, key=lambda p: p.stat().st_mtime)
    assert '"signature": "hang:epoch"' in first.read_text()
