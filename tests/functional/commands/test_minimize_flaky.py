"""`reprospec minimize` of a flaky race: rates read without the stopping rule's bias, DIR's
check sized from the lowest rate measured, and a miss told as chance, not missing files.

A user's race failed 8 of 40 times; minimize reported the original as 5/10 (its rate
attempts stop at their 5th failure, which reads high), sized DIR's check from the
result's 5/6 (43%: 9 attempts, which a failure at 20% passes 13 times in 100), and on
the miss told them to "copy in what the program reads under a name it builds" of a
program that reads no file, with minimize.md's Failure messages saying "(none seen)".

tests/data/minimize/race/racelib.py is real threads losing a real check-then-act race,
every third attempt (a counter file), never in `result-dir`: the search sees a flaky
failure at 1/3 and DIR's check misses for certain, so the test is not flaky itself.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from pathlib import Path

from tests.support.cli import ROOT, run_cli

RACELIB = ROOT / "tests" / "data" / "minimize" / "race" / "racelib.py"

SHOP = """\
import sys

import racelib

racelib.race("--parallel" in sys.argv)
"""


def _spec(lib: Path, counter: Path) -> str:
    return f"""\
reprospec: 1
name: race
matrix:
  include:
    - {{mode: serial}}
    - {{mode: parallel}}
command: python shop.py --${{{{ matrix.mode }}}}
environment:
  env:
    PYTHONPATH: {lib}
    RACE_COUNTER: {counter}
run:
  timeout: 30s
expect:
  outcome: error
  exception: AssertionError
  cases:
    - when: {{mode: serial}}
      outcome: pass
"""


def test_a_flaky_miss_in_dir_is_told_as_chance_and_rates_are_unbiased(tmp_path: Path) -> None:
    lib, work = tmp_path / "lib", tmp_path / "work"
    lib.mkdir()
    work.mkdir()
    shutil.copy(RACELIB, lib / "racelib.py")
    (work / "shop.py").write_text(SHOP, encoding="utf-8")
    (work / "race.yaml").write_text(_spec(lib, tmp_path / "counter"), encoding="utf-8")
    argv = ["minimize", "race.yaml", "-o", "result-dir", "-j", "1", "--budget", "80"]
    argv += ["--out", str(tmp_path / "store"), "--python", sys.executable]
    result = run_cli(tmp_path, *argv, cwd=work, timeout=600)
    assert result.code == 1, result.stdout + result.stderr
    line = result.stdout.splitlines()[0]
    found = json.loads((work / "result-dir" / "minimize.json").read_text(encoding="utf-8"))
    search = found["search"]

    # (a) The original failed at attempts 3, 6, ..., 15 and its rate stopped at the 5th
    # failure: 5/15 reads high; 4/14 is the unbiased count, and minimize.md says why.
    assert search["original_rate"]["matched"] == 4, search["original_rate"]
    assert search["original_rate"]["attempts"] == 14, search["original_rate"]
    assert search["original_stopped"] is True
    md = (work / "result-dir" / "minimize.md").read_text(encoding="utf-8")
    assert "the original: 4/14" in md
    assert "counted without the failure they stopped at" in md

    # (b) DIR's check ran as many attempts as make a clean streak at the lowest rate
    # measured (the result's or the original's low end) at most 1% likely.
    ran = re.search(r"did not fail as error:AssertionError in (\d+) attempts", line)
    assert ran is not None, line
    low = min(search["rate"]["low"], search["original_rate"]["low"])
    assert int(ran.group(1)) == min(60, math.ceil(math.log(0.01) / math.log(1 - low))), line
    chance = (1 - low) ** int(ran.group(1))
    assert chance <= 0.01 or int(ran.group(1)) == 60  # the cap: the line then says the chance

    # (c) The miss says how likely it is by chance and blames no file: none was missing.
    assert "stays clean" in line, line
    assert "with a chance of" in line, line
    assert "name it builds" not in line, line
    assert "its rerun found no file missing" in line, line

    # (d) The result failed in the search: its message row says why it has none.
    assert "(none seen)" not in md
    assert "DIR's rerun did not fail" in md


# Statements minimize can cut, each a candidate that still calls the race: they are what the
# candidates' own runs are made of, one attempt each at --min-rate 0.9.
LONG_SHOP = """\
import sys

import racelib

a = 1
b = 2
c = a + b
d = [a, b, c]
e = len(d)
racelib.race("--parallel" in sys.argv)
"""


def test_the_min_rate_warning_counts_only_the_fair_sample(tmp_path: Path) -> None:
    """At --min-rate 0.9 a candidate is dropped after one clean attempt, so the candidates
    kept are those whose one attempt was the race's third: each read 1/1, and the warning
    read the candidates' 10/25 (a race failing one in three) where the original's own
    attempts, counted without the failure they stopped at, are 4/14."""
    lib, work = tmp_path / "lib", tmp_path / "work"
    lib.mkdir()
    work.mkdir()
    shutil.copy(RACELIB, lib / "racelib.py")
    (work / "shop.py").write_text(LONG_SHOP, encoding="utf-8")
    (work / "race.yaml").write_text(_spec(lib, tmp_path / "counter"), encoding="utf-8")
    argv = ["minimize", "race.yaml", "-o", "out", "-j", "1", "--budget", "120"]
    argv += ["--min-rate", "0.9", "--out", str(tmp_path / "store"), "--python", sys.executable]
    result = run_cli(tmp_path, *argv, cwd=work, timeout=600)
    assert result.code in (0, 1), result.stdout + result.stderr
    search = json.loads((work / "out" / "minimize.json").read_text(encoding="utf-8"))["search"]
    original = search["original_rate"]
    assert (original["matched"], original["attempts"]) == (4, 14), original
    # Candidates were kept at their one matching attempt: what read the rate high.
    assert search["ran"] > 5, search
    (warning,) = [w for w in search["warnings"] if "--min-rate" in w]
    assert warning.startswith("the original reproduced in 4/14 attempts"), warning
    assert "clearly below the assumed minimum rate 0.9" in warning, warning
    md = (work / "out" / "minimize.md").read_text(encoding="utf-8")
    assert "reproduced in 4/14 attempts" in md
