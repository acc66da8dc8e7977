"""`reprospec amplify` on real programs: a thread race, a use-after-free in C, an OOM path.

Each names the perturbation that makes the failure frequent, with its interval, and the
amplified spec it writes reproduces at that rate. Budgets are small (the effects are large
here); benchmarks/amplify.py runs the 300-attempt version and the plain rates.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup
from tests.support.cli import Cli, CliResult
from tests.support.paths import DATA as TEST_DATA
from tests.support.preload import imports, stamp_module

DATA = TEST_DATA / "amplify"


def _copy(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path / next(n for n in names if n.endswith(".yaml"))


def _amplify(cli: Cli, spec: Path, out: Path, *args: str) -> tuple[CliResult, dict[str, object]]:
    result = cli(
        "amplify", str(spec), "--out", str(out), "-j", "2", "--format", "json", *args, timeout=600
    )
    assert result.code in (0, 1), result.stderr
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return result, data


def _rerun(cli: Cli, spec: str, out: Path, repeat: int) -> tuple[int, int]:
    """(matched, attempts) of the amplified spec run as any spec."""
    result = cli("run", spec, "--out", str(out), "--repeat", str(repeat), "-j", "2", timeout=600)
    (run,) = (out / "runs").iterdir()
    cells = json.loads((run / "results.json").read_text())["cells"]
    attempts = cells[0]["attempts"]
    assert result.code in (0, 1), result.stderr
    return sum(1 for a in attempts if a["matched"]), len(attempts)


def _attempts(out: Path) -> list[dict[str, Any]]:
    """Every attempt of every run the search made under `out`, as results.json holds it."""
    return [
        attempt
        for path in (out / "runs").glob("*/results.json")
        for cell in json.loads(path.read_text())["cells"]
        for attempt in cell["attempts"]
    ]


def _rate(arm: object) -> dict[str, float]:
    assert isinstance(arm, dict)
    rate = arm["rate"]
    assert isinstance(rate, dict)
    return rate


@pytest.fixture
def session_library(tmp_path: Path) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the session library")
    spec = _copy(tmp_path, "uaf.yaml", "uaf.py", "uaf.c")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(tmp_path / "libsession.so"), "uaf.c"],
        cwd=tmp_path,
        check=True,
    )
    return spec


def test_a_base_that_always_fails_is_measured_alone(cli: Cli, tmp_path: Path) -> None:
    """A real segfault in every attempt: the base is measured on, alone, to 35 attempts and
    the search ends (cli.md). One attempt of another arm ran in the base's last round,
    and the answer called its 1/1 "best"."""
    (tmp_path / "segv.py").write_text("import ctypes\nctypes.string_at(0)\n")
    spec = tmp_path / "segv.yaml"
    spec.write_text(
        "reprospec: 1\nname: segv\ncommand: python segv.py\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    result = cli("amplify", str(spec), "--out", str(tmp_path / "out"), "--budget", "60")
    assert result.code == 1, result.stderr
    assert result.stdout.splitlines()[0] == (
        "base 35/35 (95% CI 0.90–1.00): not amplified (the base already fails in 35/35 "
        "attempts (at least 90%): amplify is for a rarer failure)"
    )
    # The arms the search ended before are said so, not `0/0 (95% CI 0.00–1.00)`.
    arm_lines = [line for line in result.stdout.splitlines() if line.startswith("  ")]
    assert arm_lines[0].startswith("  base: 35/35"), arm_lines
    assert all(
        line.endswith(": not tried (the search ended before it)") for line in arm_lines[1:]
    ), arm_lines
    assert "run.preload" not in result.stderr
    # With run.preload, the console says which arms fork and which run fresh
    # (a 14-minute search of fresh perturbed arms said nothing of it).
    more = ("--budget", "60", "--set", "run.preload=[ctypes]")
    preloaded, data = _amplify(cli, spec, tmp_path / "out", *more)
    # The default tries: each forks but malloc's, which only a process's start applies.
    assert (
        "run.preload: the base and the perturbed arms fork from the preloaded server; an arm "
        "with malloc=perturb runs fresh (perturb.malloc=perturb: glibc's thread cache"
    ) in preloaded.stderr, preloaded.stderr
    assert data["used"] == 35
    arms = data["arms"]
    assert isinstance(arms, list)
    assert [_rate(arm)["attempts"] for arm in arms[1:]] == [0] * (len(arms) - 1)


def test_a_thread_race_is_amplified_by_a_short_switch_interval(cli: Cli, tmp_path: Path) -> None:
    spec = _copy(tmp_path, "race.yaml", "race.py")
    # The perturbed rate follows the machine's load: about 0.4 quiet, 0.96 at a load of 10
    # of mixed work, 0.08-0.17 with every core busy with other processes (CI's neighbour
    # tests; 5/60 there, where a budget of 120 could not tell it from the base's 0/60). The
    # search stops once the intervals part, so a quiet machine spends no more of the budget.
    _, data = _amplify(
        cli, spec, tmp_path / "out", "--budget", "400", "--try", "switch_interval=1e-6"
    )
    assert data["status"] == "amplified", data["sentence"]
    assert data["perturbation"] == "switch_interval=1e-06"
    winner = _rate(next(a for a in data["arms"] if a["perturbation"] == data["perturbation"]))  # type: ignore[attr-defined]
    # Amplified: its interval above the base's.
    assert winner["low"] > _rate(data["base"])["high"]
    assert str(data["sentence"]).startswith("base ")
    # The amplified spec reproduces, run as any spec: enough attempts that at half the
    # winner's lower bound (the load may change between the two) none failing has a chance
    # of at most 1 in 1,000 (32 fixed attempts saw one failure or none in one run in four
    # at 0.08).
    attempts = min(400, math.ceil(math.log(1e-3) / math.log(1 - winner["low"] / 2)))
    matched, ran = _rerun(cli, str(data["amplified_spec"]), tmp_path / "again", attempts)
    assert matched >= 1, f"{matched}/{ran} against {winner}"


def test_a_use_after_free_is_amplified_by_malloc_perturbation(
    cli: Cli, tmp_path: Path, session_library: Path
) -> None:
    out = tmp_path / "out"
    args = ("--budget", "40", "--try", "malloc=perturb", "--try", "switch_interval=1e-6")
    _, data = _amplify(cli, session_library, out, *args)
    assert data["status"] == "amplified", data["sentence"]
    assert data["perturbation"] == "malloc=perturb"
    assert _rate(data["base"])["matched"] == 0  # plain runs never crash
    winner = _rate(next(a for a in data["arms"] if a["perturbation"] == "malloc=perturb"))  # type: ignore[attr-defined]
    assert winner["low"] >= 0.2
    amplified = Path(str(data["amplified_spec"]))
    assert "malloc: perturb" in amplified.read_text()
    assert (amplified.parent / "amplify.md").read_text().splitlines()[2].startswith("**base 0/")
    assert _rerun(cli, str(amplified), tmp_path / "again", 4) == (4, 4)
    # The same command again resumes from the stored probes: nothing new runs.
    _, resumed = _amplify(cli, session_library, out, *args)
    stored = json.loads((amplified.parent / "state.json").read_text())["probes"]
    assert resumed["reused"] == len(stored)
    assert resumed["runs"] == data["runs"]
    assert resumed["sentence"] == data["sentence"]


def test_a_different_crash_under_a_perturbation_is_reported_not_counted(
    cli: Cli, tmp_path: Path, session_library: Path
) -> None:
    # The spec expects an abort; malloc perturbation brings a segfault: not this bug.
    args = ("--budget", "16", "--try", "malloc=perturb", "--set", "expect.signal=SIGABRT")
    result, data = _amplify(cli, session_library, tmp_path / "out", *args)
    assert result.code == 1
    assert data["status"] == "not-amplified"
    (arm,) = (a for a in data["arms"] if a["perturbation"] == "malloc=perturb")  # type: ignore[attr-defined]
    assert arm["matched"] == 0
    assert arm["other"] == 8
    assert "crash SIGSEGV" in arm["other_failures"][0]["outcome"]


def test_an_oom_path_is_amplified_by_a_memory_limit(cli: Cli, tmp_path: Path) -> None:
    folder, why = make_memory_cgroup(2**30, f"reprospec-probe-{os.getpid()}")
    if folder is None:
        pytest.skip(f"no memory cgroup can be made here: {why}")
    remove_cgroup(folder)
    spec = _copy(tmp_path, "oom.yaml", "oom.py")
    _, data = _amplify(
        cli,
        spec,
        tmp_path / "out",
        "--budget",
        "40",
        "--try",
        "memory_limit=200M",
        "--try",
        "gc=aggressive",
    )
    assert data["status"] == "amplified", data["sentence"]
    assert data["perturbation"] == "memory_limit=200M"
    assert _rate(data["base"])["matched"] == 0
    assert _rerun(cli, str(data["amplified_spec"]), tmp_path / "again", 3) == (3, 3)


def test_usage_errors_say_what_is_wrong(cli: Cli, tmp_path: Path) -> None:
    spec = _copy(tmp_path, "race.yaml", "race.py")
    result = cli("amplify", str(spec), "--out", str(tmp_path), "--try", "switch_intervall=1e-6")
    assert result.code == 2
    assert "perhaps you meant 'switch_interval'" in result.stderr
    result = cli("amplify", str(spec), "--out", str(tmp_path), "--try", "cpus=zero")
    assert result.code == 2
    assert "--try cpus=zero" in result.stderr
    result = cli(
        "amplify",
        str(spec),
        "--out",
        str(tmp_path),
        "--set",
        "expect.outcome=pass",
        "--set",
        "~expect.exception",
        "--set",
        "~expect.message",
    )
    assert result.code == 2, result.stderr
    assert "amplify needs the cell's expect to say how it fails" in result.stderr
    assert "cell default is expected to pass" in result.stderr
    # No expect at all read "default is expected to be observed" (nu-a).
    result = cli("amplify", str(spec), "--out", str(tmp_path), "--set", "~expect")
    assert result.code == 2, result.stderr
    assert "cell default has no expect (any outcome): `run --observe`" in result.stderr
    assert "be observed" not in result.stderr
    # Every --try already the spec's own perturbation: nothing to try, refused before any
    # attempt, where 20 attempts of the base ended "no perturbation failed more often".
    result = cli(
        "amplify", str(spec), "--out", str(tmp_path), "--set",
        "environment.perturb={switch_interval: 1e-06}", "--try", "switch_interval=1e-6",
    )  # fmt: skip
    assert result.code == 2, result.stderr
    assert "--try switch_interval=1e-06: cell default already runs under it" in result.stderr
    assert not list(tmp_path.glob("runs/*"))


def test_isolate_under_an_amplification_says_it_was_amplified(cli: Cli, tmp_path: Path) -> None:
    shutil.copy(DATA / "race.py", tmp_path / "race.py")
    spec = tmp_path / "race-matrix.yaml"
    spec.write_text(
        "reprospec: 1\nname: cache-race-threads\n"
        "command: python race.py 2000 4 ${{ matrix.threads }}\n"
        "matrix:\n  threads: [2, 1]\nenvironment:\n  workdir: .\nrun:\n  timeout: 60s\n"
        "expect:\n  outcome: error\n  exception: RuntimeError\n"
        "  cases:\n    - when: {threads: 1}\n      outcome: pass\n"
    )
    _, found = _amplify(
        cli,
        spec,
        tmp_path / "out",
        "-m",
        "threads=2",
        "--budget",
        "80",
        "--try",
        "switch_interval=1e-6",
    )
    assert found["status"] == "amplified", found["sentence"]
    result = cli(
        "isolate",
        str(spec),
        "--out",
        str(tmp_path / "out"),
        "-j",
        "2",
        "--amplify",
        found_dir := str(found["folder"]),
        timeout=600,
    )
    assert result.code == 0, result.stderr + result.stdout
    first = result.stdout.splitlines()[0]
    assert first.startswith("amplified: found under environment.perturb (switch_interval=1e-06)")
    assert "threads" in result.stdout.splitlines()[1]
    (folder,) = (tmp_path / "out" / "isolate").iterdir()
    assert "amplified: found under" in (folder / "isolate.md").read_text().splitlines()[4]
    # The same amplification of this spec's copy elsewhere (same name) is taken; another
    # spec's is refused before anything runs: its "without it the failure is rarer" was
    # said of a failure the amplification never measured.
    other = tmp_path / "other.yaml"
    other.write_text(
        "reprospec: 1\nname: a-deterministic-pair\ncommand: python -c 'raise SystemExit(3)'\n"
        "matrix:\n  a: [1, 2]\nexpect:\n  outcome: error\n"
        "  cases:\n    - when: {a: 1}\n      outcome: pass\n"
    )
    refused = cli("isolate", str(other), "--out", str(tmp_path / "out"), "--amplify", found_dir)
    assert refused.code == 2, refused.stderr + refused.stdout
    assert refused.stderr.startswith(f"reprospec: --amplify {found_dir}: an amplification of ")
    assert "'cache-race-threads'" in refused.stderr
    assert "not of 'a-deterministic-pair'" in refused.stderr
    # amplify measures one cell: the advice for a matrix says how to pick it.
    assert f"(reprospec amplify {other} -m AXIS=VALUE, its failing cell)" in refused.stderr
    assert not list((tmp_path / "out" / "runs").glob("*a-deterministic-pair*"))


# Exit 3 when A=1 and B is not 0: per the cases, a=1,b=1 (and a=1,b=2 where the matrix has
# it) fail, every other cell passes.
PAIR = """\
reprospec: 1
name: env-pair
matrix: {a: ["0", "1"], b: ["0", "1"]}
environment:
  env: {A: "${{ matrix.a }}", B: "${{ matrix.b }}"}
command: >-
  python -c "import os, sys;
  sys.exit(3 if os.environ['A'] == '1' and os.environ['B'] != '0' else 0)"
run: {timeout: 30s}
expect:
  outcome: error
  exit_code: 3
  cases:
    - {when: {a: "0"}, outcome: pass}
    - {when: {b: "0"}, outcome: pass}
"""


def _cells_run(out: Path) -> set[str]:
    return {
        cell["id"]
        for run in (out / "runs").iterdir()
        for cell in json.loads((run / "results.json").read_text())["cells"]
    }


def test_the_one_cell_the_spec_expects_to_fail_is_amplified_without_m(
    cli: Cli, tmp_path: Path
) -> None:
    # A spec of four cells whose expect says one fails was refused: "amplify runs one cell,
    # and 4 match ...: choose one with -m" (new user).
    spec = tmp_path / "pair.yaml"
    spec.write_text(PAIR)
    args = ("--budget", "4", "--try", "gc=aggressive")
    result = cli("amplify", str(spec), "--out", str(tmp_path / "out"), *args, timeout=300)
    assert result.code == 1, result.stderr  # not amplified: the base fails in every attempt
    lines = result.stdout.splitlines()
    assert lines[0].startswith("base 4/4")
    assert lines[1] == "cell a=1,b=1: the only one of 4 cells expected to fail"
    assert "cell a=1,b=1: the only one of 4 cells expected to fail" in result.stderr
    assert _cells_run(tmp_path / "out") == {"a=1,b=1"}  # only that cell ran
    # Two cells expected to fail: refused before anything runs, each with the -m to type.
    spec.write_text(PAIR.replace('b: ["0", "1"]', 'b: ["0", "1", "2"]'))
    refused = cli("amplify", str(spec), "--out", str(tmp_path / "two"), *args)
    assert refused.code == 2, refused.stderr
    assert refused.stderr == (
        f"reprospec: amplify runs one cell, and 2 cells of {spec} are expected to fail: "
        "choose one with -m: -m b=1 (cell a=1,b=1); -m b=2 (cell a=1,b=2)\n"
    )
    assert not (tmp_path / "two" / "runs").exists()
    # A --try typo is said first, not after the -m it asked for was typed.
    typo = cli("amplify", str(spec), "--out", str(tmp_path / "two"), "--try", "switch_intervl=1e-6")
    assert typo.code == 2, typo.stderr
    assert typo.stderr.startswith(
        "reprospec: --try switch_intervl=1e-6: unknown perturbation 'switch_intervl'; perhaps "
        "you meant 'switch_interval'?"
    ), typo.stderr
    assert not (tmp_path / "two" / "runs").exists()
    # The advised -m, typed: that cell, said so.
    chosen = cli("amplify", str(spec), "--out", str(tmp_path / "two"), "-m", "b=2", *args)
    assert chosen.code == 1, chosen.stderr
    assert "cell a=1,b=2: the only one of the 2 cells -m b=2 keeps expected to fail" in (
        chosen.stdout
    )
    assert _cells_run(tmp_path / "two") == {"a=1,b=2"}


# The command fails (exit 3) exactly when PYTHONHASHSEED is 7, which `hash_seed: 7` sets:
# the base never fails, hash_seed=8 never, hash_seed=7 always. Every probe's outcome is
# fixed, so the search asks the same probes on every run.
SEEDED = """\
reprospec: 1
name: seeded
command: >-
  python -c "import os, sys; sys.exit(3 if os.environ.get('PYTHONHASHSEED') == '7' else 0)"
run: {timeout: 30s}
expect: {outcome: error, exit_code: 3}
"""


def _runs(out: Path) -> set[str]:
    return {p.name for p in (out / "runs").iterdir()} if (out / "runs").is_dir() else set()


def test_a_larger_budget_continues_the_amplification_a_smaller_one_ran_out_in(
    cli: Cli, tmp_path: Path
) -> None:
    # Keyed on its budget, the amplification started over under --budget 40: every probe
    # that --budget 10 had run ran again.
    spec = tmp_path / "seeded.yaml"
    spec.write_text(SEEDED)
    out = tmp_path / "out"
    tries = ("--try", "hash_seed=8", "--try", "hash_seed=7", "-j", "1")

    def amplify(budget: int, *more: str) -> tuple[CliResult, dict[str, Any]]:
        result = cli(
            "amplify", str(spec), "--out", str(out), "--budget", str(budget), *tries, *more,
            "--format", "json", timeout=300,
        )  # fmt: skip
        assert result.code in (0, 1), result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return result, data

    # Base x4, base x4, then hash_seed=8 x2: the last round is cut to what the budget has.
    result, short = amplify(10)
    assert (short["status"], short["used"], short["reused"]) == ("not-amplified", 10, 0)
    assert short["budget_spent"] is True
    first = _runs(out)
    assert len(first) == 3

    # The same folder; the ten attempts replayed and counted in the budget. hash_seed=8's
    # round asks four attempts: its two stored ones are replayed and two more run.
    result, longer = amplify(40)
    assert result.code == 0, result.stderr
    assert longer["id"] == short["id"]
    assert (longer["status"], longer["perturbation"]) == ("amplified", "hash_seed=7")
    assert "continuing amplification" in result.stderr
    assert "3 probes from an earlier run to replay, counted in the budget of 40" in (result.stderr)
    assert (longer["reused"], longer["replayed"]) == (3, 10)
    assert longer["budget_spent"] is False
    second = _runs(out)
    assert first < second
    assert set(longer["runs"]) == second
    arms = {a["perturbation"]: (a["matched"], a["rate"]["attempts"]) for a in longer["arms"]}
    assert arms == {"base": (0, 8), "hash_seed=8": (0, 8), "hash_seed=7": (8, 8)}

    # The text says what was replayed and what a larger budget does; nothing new runs.
    again = cli(
        "amplify", str(spec), "--out", str(out), "--budget", "40", *tries, timeout=300
    )  # fmt: skip
    assert again.code == 0, again.stderr
    assert (
        f"24 attempts of a budget of 40 (24 of them replayed from an earlier run: "
        f"{len(second) - len(first) + 3} probes)"
    ) in again.stdout
    assert _runs(out) == second
    stopped = cli(
        "amplify", str(spec), "--out", str(out), "--budget", "10", *tries, timeout=300
    )  # fmt: skip
    assert "a larger --budget continues this amplification: its 10 attempts are replayed" in (
        stopped.stdout
    )

    # A smaller budget replays no more than it allows (base x4, then x2), and runs nothing.
    result, smaller = amplify(6)
    assert (smaller["used"], smaller["replayed"]) == (6, 6)
    assert _rate(smaller["base"])["attempts"] == 6
    assert _runs(out) == second
    # Its runs are the two that hold those six attempts, not every stored one: counted,
    # the runs it named held 24 attempts where it said 6.
    assert smaller["runs"] == longer["runs"][:2]

    # What decides a probe's outcome changed: the per-attempt timeout starts a new search.
    result, timed = amplify(10, "--timeout", "20s")
    assert timed["id"] != short["id"]
    assert timed["reused"] == 0


def test_preload_forks_the_base_from_one_server(cli: Cli, tmp_path: Path) -> None:
    """`amplify --preload MOD`, as run's: the base's attempts fork from one server that
    imported MOD once for the whole search (its probes are runs of their own: a server
    each before), and the commands amplify suggests carry the option."""
    lib = stamp_module(tmp_path)
    (tmp_path / "segv.py").write_text("import ctypes\nctypes.string_at(0)\n")
    spec = tmp_path / "segv.yaml"
    spec.write_text(
        "reprospec: 1\nname: segv\ncommand: python segv.py\n"
        f"environment: {{env: {{PYTHONPATH: {json.dumps(str(lib))}}}}}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = tmp_path / "out"
    result, data = _amplify(cli, spec, out, "--budget", "60", "--preload", "stamp")
    assert "run.preload: the base and the perturbed arms fork from the preloaded" in result.stderr
    assert data["used"] == 35  # the base alone, measured on in several probes
    runs = [json.loads(r.read_text()) for r in (out / "runs").glob("*/results.json")]
    assert len(runs) > 1
    assert all(r["options"]["preload"] == ["stamp"] for r in runs)
    launches = {a["launch"] for r in runs for c in r["cells"] for a in c["attempts"]}
    assert launches == {"forked"}
    assert imports(lib) == 1
    markdown = next((out / "amplify").glob("*/amplify.md")).read_text()
    # The next command goes on as the attempts ran: forked (rerun_words).
    next_command = r"go on without a perturbation: reprospec minimize \S+ --preload stamp"
    assert re.search(next_command, markdown), markdown


def test_preload_forks_the_perturbed_arms_from_the_bases_server(cli: Cli, tmp_path: Path) -> None:
    """`amplify --preload MOD` of a thread race: the switch-interval arm's attempts fork from
    the one server the base's fork from (they ran fresh, a whole interpreter start each:
    amplify compared forked attempts with fresh ones), each under the perturbation."""
    spec = _copy(tmp_path, "race.yaml", "race.py")
    lib = stamp_module(tmp_path)
    out = tmp_path / "out"
    more = ("--budget", "40", "--try", "switch_interval=1e-6", "--preload", "stamp")
    result, data = _amplify(cli, spec, out, "--set", f"environment.env.PYTHONPATH={lib}", *more)
    said = "run.preload: the base and the perturbed arms fork from the preloaded server"
    assert said + "\n" in result.stderr, result.stderr
    arms = data["arms"]
    assert isinstance(arms, list)
    assert all(_rate(arm)["attempts"] > 0 for arm in arms), arms  # both arms ran
    attempts = _attempts(out)
    perturbed = [a for a in attempts if a.get("perturbed")]
    assert perturbed
    assert len(perturbed) < len(attempts)
    assert {a["launch"] for a in attempts} == {"forked"}
    assert all("switch_interval=1e-06" in a["perturbed"] for a in perturbed)
    assert imports(lib) == 1  # one server, one import, for both arms


def test_preload_judges_a_fresh_arm_against_a_base_run_fresh_too(cli: Cli, tmp_path: Path) -> None:
    """`amplify --preload MOD` with `--try malloc=perturb`: the base forks, malloc=perturb's
    attempts start fresh (only a process's start applies it). A program that fails only when
    it starts fresh (here: exit 3 unless MOD was imported before it, by the server) made
    malloc=perturb "amplified", 8/8 against the forked base's 0/8, for the start's sake: it is
    judged against `base (fresh)`, the spec run fresh too (`--preload none`), instead."""
    lib = stamp_module(tmp_path)
    (tmp_path / "start.py").write_text("import sys\nsys.exit(0 if 'stamp' in sys.modules else 3)\n")
    spec = tmp_path / "start.yaml"
    spec.write_text(
        "reprospec: 1\nname: start\ncommand: python start.py\n"
        f"environment: {{env: {{PYTHONPATH: {json.dumps(str(lib))}}}}}\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    out = tmp_path / "out"
    more = ("--budget", "28", "--try", "malloc=perturb", "--preload", "stamp")
    result, data = _amplify(cli, spec, out, *more)
    assert data["status"] == "not-amplified", data["sentence"]
    assert "such an arm is judged against base (fresh)" in result.stderr, result.stderr
    listed = data["arms"]
    assert isinstance(listed, list)
    arms = {arm["perturbation"]: arm for arm in listed}
    assert list(arms) == ["base", "base (fresh)", "malloc=perturb"]
    assert arms["malloc=perturb"]["compared_with"] == "base (fresh)"
    assert _rate(arms["base"])["matched"] == 0
    assert _rate(arms["malloc=perturb"])["low"] > _rate(arms["base"])["high"]
    assert _rate(arms["base (fresh)"])["matched"] == _rate(arms["base (fresh)"])["attempts"] > 0
    # Against its own base it stands no higher than the forked base does above itself.
    assert data["note"] == "no perturbation failed more often than its base"
    fresh = _rate(arms["base (fresh)"])
    assert f", against base (fresh) {fresh['matched']}/{fresh['attempts']} (" in str(
        data["sentence"]
    )
    # Each arm's attempts started as said: the base's forked, the fresh base's and
    # malloc=perturb's fresh (the fresh base's runs with --preload none).
    launches: dict[str, set[str]] = {}
    for path in (out / "runs").glob("*/results.json"):
        run = json.loads(path.read_text())
        for attempt in run["cells"][0]["attempts"]:
            arm = (
                "malloc=perturb"
                if attempt.get("perturbed")
                else "base"
                if run["options"]["preload"] == ["stamp"]
                else "base (fresh)"
            )
            launches.setdefault(arm, set()).add(attempt["launch"])
    assert launches == {"base": {"forked"}, "base (fresh)": {"fresh"}, "malloc=perturb": {"fresh"}}


def test_preload_that_could_not_fork_says_its_attempts_ran_fresh(cli: Cli, tmp_path: Path) -> None:
    """`amplify --preload MOD` where the server cannot import MOD: every attempt runs fresh,
    and amplify.md said "Under run.preload the base's attempts forked from the preloaded
    server". The answer, amplify.md and amplify.json say how many ran fresh and why."""
    spec = _copy(tmp_path, "race.yaml", "race.py")
    out = tmp_path / "out"
    more = ("--budget", "24", "--try", "switch_interval=1e-6", "--try", "malloc=perturb")
    _, data = _amplify(cli, spec, out, *more, "--preload", "no_such_module_nu43")
    attempts = _attempts(out)
    assert attempts
    assert {a["launch"] for a in attempts} == {"fresh"}
    unforked = str(data["unforked"])
    assert re.fullmatch(r"(\d+) of \1 attempts meant to fork ran fresh \(ran fresh: .+\)", unforked)
    assert "no_such_module_nu43" in unforked
    text = cli(
        "amplify",
        str(spec),
        "--out",
        str(out),
        "-j",
        "2",
        *more,
        "--preload",
        "no_such_module_nu43",
    )
    assert f"run.preload: {unforked}\n" in text.stdout, text.stdout
    markdown = next((out / "amplify").glob("*/amplify.md")).read_text()
    assert f"Under run.preload {unforked}." in markdown
    assert "the base's attempts forked" not in markdown
    # Forked as meant, nothing is said (the test above: the base's attempts forked).
    lib = stamp_module(tmp_path)
    out2 = tmp_path / "out2"
    _, forked = _amplify(
        cli, spec, out2, *more, "--preload", "stamp", "--set", f"environment.env.PYTHONPATH={lib}"
    )
    assert forked["unforked"] is None
    assert "the base's attempts forked" in next((out2 / "amplify").glob("*/amplify.md")).read_text()


def test_preload_whose_base_runs_fresh_measures_no_fresh_base(cli: Cli, tmp_path: Path) -> None:
    """`amplify --preload MOD --try malloc=perturb` where the base's attempts run fresh all the
    same: a server that cannot import MOD, a command that is a shell line. `base (fresh)`
    measured the base again, from the budget, and the first line said "the base and the
    perturbed arms fork from the preloaded server" of a server that never started. The line
    is said once the base's attempts ran, and the fresh arm is judged against the base."""
    spec = _copy(tmp_path, "race.yaml", "race.py")
    shell = tmp_path / "shell.yaml"
    shell.write_text(spec.read_text().replace("python race.py", "python race.py; true"))
    lib = stamp_module(tmp_path)
    more = ("--budget", "24", "--try", "switch_interval=1e-6", "--try", "malloc=perturb")
    for name, path, preload in (
        ("import", spec, ("--preload", "no_such_module_pf44")),
        ("shell", shell, ("--preload", "stamp", "--set", f"environment.env.PYTHONPATH={lib}")),
    ):
        out = tmp_path / name
        result, data = _amplify(cli, path, out, *more, *preload)
        assert "fork from the preloaded server" not in result.stderr, result.stderr
        said = re.search(
            r"run\.preload: the base's attempts ran fresh, not forked \((.+)\)", result.stderr
        )
        assert said is not None, result.stderr
        assert ("no_such_module_pf44" if name == "import" else "shell line") in said[1]
        assert ", as every arm's will: each is judged against the base, started alike" in (
            result.stderr
        )
        listed = data["arms"]
        assert isinstance(listed, list)
        arms = {arm["perturbation"]: arm for arm in listed}
        assert list(arms) == ["base", "switch_interval=1e-06", "malloc=perturb"], name
        assert arms["malloc=perturb"]["compared_with"] == "base"
        assert not arms["malloc=perturb"]["fresh"]
        # Every run kept the preload asked: none was the fresh base's (--preload none).
        runs = [json.loads(p.read_text()) for p in (out / "runs").glob("*/results.json")]
        assert runs
        assert all(run["options"]["preload"] for run in runs), name
        assert {a["launch"] for a in _attempts(out)} == {"fresh"}


# A seeded fault at probability 0.5: the coin is the attempt number's, as a `--seed
# ${{ attempt }}` program's or a workload fault's `probability` is, and the attempt says
# which number it drew.
SEEDED_COIN = (
    'reprospec: 1\nname: seeded\ncommand: >-\n  python -c "import os, random; '
    "n = ${{ attempt }}; print('attempt', n, flush=True); "
    'os.abort() if random.Random(n).random() < 0.5 else None"\n'
    "run: {timeout: 30s}\nexpect: {outcome: crash, signal: SIGABRT}\n"
)


def test_an_arms_probes_draw_new_attempt_numbers(cli: Cli, tmp_path: Path) -> None:
    """Each probe is a run of its own, and each numbered its attempts from 1: the base's
    second probe of 4 drew the first one's 4 coins again, and its rate (6/8 of a coin at
    0.5) counted 4 draws twice. An arm's probes are numbered after each other now: the
    runs of one arm hold 1, 2, ... once each, and each attempt drew the number it holds."""
    seeded = tmp_path / "seeded.yaml"
    seeded.write_text(SEEDED_COIN)
    out = tmp_path / "out"
    result = cli(
        "amplify", str(seeded), "--out", str(out), "--budget", "16", "--try", "gc=1", "-j", "2"
    )
    assert result.code in (0, 1), result.stderr
    assert (
        "note: cell default reads its attempt number (`${{ attempt }}` in its command): "
        "each arm's attempts are numbered 1, 2, ... across its probes"
    ) in result.stderr
    by_arm = _numbers_by_arm(out)
    assert set(by_arm) == {"base", "gc=1"}
    for path in (out / "runs").glob("*/results.json"):
        for attempt in json.loads(path.read_text())["cells"][0]["attempts"]:
            number = attempt["attempt"]
            # The program drew the number the store gives the attempt.
            log = (path.parent / attempt["logs"] / "stdout.log").read_text()
            assert f"attempt {number}\n" in log, (number, log)
            aborts = random.Random(number).random() < 0.5
            assert (attempt["outcome"]["kind"] == "crash") == aborts, attempt
    assert len(list((out / "runs").iterdir())) > 2, "an arm probed twice at least"
    for arm, numbers in by_arm.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), (arm, sorted(numbers))


def _numbers_by_arm(out: Path) -> dict[str, list[int]]:
    """The attempt numbers of each arm's runs, as the store holds them (state.json says
    which run is which arm's, and where each began)."""
    state = json.loads(next((out / "amplify").glob("*/state.json")).read_text())
    numbers: dict[str, list[int]] = {}
    for probe in state["probes"]:
        run = json.loads((out / "runs" / probe["run_id"] / "results.json").read_text())
        held = sorted(a["attempt"] for a in run["cells"][0]["attempts"])
        assert held[0] == probe["first_attempt"], probe
        numbers.setdefault(probe["arm"], []).extend(held)
    return numbers


def test_a_continued_search_numbers_after_the_replayed_attempts(cli: Cli, tmp_path: Path) -> None:
    """A larger --budget replays the stored probes and runs more: those are numbered after
    every attempt the arm ran before, not from 1 again."""
    seeded = tmp_path / "seeded.yaml"
    seeded.write_text(SEEDED_COIN)
    out = tmp_path / "out"
    common = ("amplify", str(seeded), "--out", str(out), "--try", "gc=1", "-j", "2")
    assert cli(*common, "--budget", "8").code in (0, 1)
    before = {p.name for p in (out / "runs").iterdir()}
    result = cli(*common, "--budget", "16")
    assert result.code in (0, 1), result.stderr
    assert {p.name for p in (out / "runs").iterdir()} > before
    for arm, drawn in _numbers_by_arm(out).items():
        assert sorted(drawn) == list(range(1, len(drawn) + 1)), (arm, sorted(drawn))


def test_a_cell_that_reads_no_attempt_number_is_not_told_of_it(cli: Cli, tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        "reprospec: 1\nname: plain\ncommand: python -c pass\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = str(tmp_path / "out")
    result = cli("amplify", str(plain), "--out", out, "--budget", "4", "--try", "gc=1")
    assert result.code == 1, result.stderr
    assert "attempt number" not in result.stderr


def test_a_second_search_of_a_folder_in_use_is_refused(cli: Cli, tmp_path: Path) -> None:
    """The same command in another terminal while the first ran: each ran every probe, and
    the last to write state.json dropped the other's probes."""
    from reprospec.core.trylock import search_held

    spec = tmp_path / "plain.yaml"
    spec.write_text(
        "reprospec: 1\nname: plain\ncommand: python -c pass\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = tmp_path / "out"
    _, first = _amplify(cli, spec, out, "--budget", "4", "--try", "gc=1")
    folder = Path(str(first["folder"]))
    # Held as a running search holds it (the kernel's lock, as another process takes it).
    with search_held(folder, "the first"):
        result = cli("amplify", str(spec), "--out", str(out), "--budget", "8", "--try", "gc=1")
    assert result.code == 2, result.stderr
    assert (
        f"reprospec: amplification {first['id']} is running now in another reprospec "
        f"({folder} is held by pid {os.getpid()}): wait for it to end"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    # Released, the same command goes on from the stored probes.
    _, second = _amplify(cli, spec, out, "--budget", "8", "--try", "gc=1")
    assert (second["reused"], second["replayed"]) == (1, 4)
