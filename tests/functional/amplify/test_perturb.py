"""environment.perturb applied to real attempts: what the child sees, what is recorded, refusals."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from reprospec.core.sections import AGGRESSIVE_GC, Perturb, SectionError
from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup
from tests.support.cli import Cli

# What the attempt's interpreter sees, one line of JSON.
PROBE = r"""
import gc, json, os, sys, time

def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""

def competitors():
    # This attempt's: their --dir is its folder under the test's own --out, below this
    # workdir (other suites on the machine run competitors of their own).
    return sum(
        1 for pid in os.listdir("/proc")
        if pid.isdigit() and b"perturb/load.py" in cmdline(pid)
        and os.getcwd().encode() in cmdline(pid)
    )

# As many competitors as the test expects (argv[1]), waited for: the engine starts them
# beside the attempt, and load.py forks its spinners and writer after it starts. A fixed
# 0.3 s counted a starved load.py's spinners before they were forked. Never more than 60 s:
# fewer than expected then is what the test sees, and fails on.
want = int(sys.argv[1]) if len(sys.argv) > 1 else 0
deadline = time.monotonic() + 60
while competitors() < want and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({
    "switch": sys.getswitchinterval(),
    "gc": list(gc.get_threshold()),
    "hash_seed": os.environ.get("PYTHONHASHSEED"),
    "perturb": os.environ.get("MALLOC_PERTURB_"),
    "tunables": os.environ.get("GLIBC_TUNABLES"),
    "cpus": sorted(os.sched_getaffinity(0)),
    "nice": os.nice(0),
    "omp": os.environ.get("OMP_NUM_THREADS"),
    "competitors": competitors(),
}))
"""


def _spec(tmp_path: Path, perturb: str, *, matrix: str = "", competitors: int = 0) -> Path:
    (tmp_path / "probe.py").write_text(PROBE)
    spec = tmp_path / "probe.yaml"
    spec.write_text(
        f"reprospec: 1\nname: probe\ncommand: python probe.py {competitors}\n"
        f"{matrix}environment:\n  workdir: .\n  perturb:\n{perturb}"
        "expect:\n  outcome: pass\n"
    )
    return spec


def _run_folder(out: Path) -> Path:
    (run,) = (out / "runs").iterdir()
    return run


def _results(out: Path) -> dict[str, object]:
    data = json.loads((_run_folder(out) / "results.json").read_text())
    assert isinstance(data, dict)
    return data


def _seen(out: Path) -> list[dict[str, object]]:
    data = _results(out)
    seen = []
    for cell in data["cells"]:  # type: ignore[attr-defined]
        for attempt in cell["attempts"]:
            log = _run_folder(out) / attempt["logs"] / "stdout.log"
            seen.append(json.loads(log.read_text().strip().splitlines()[-1]))
    return seen


def test_each_perturbation_reaches_the_child_and_is_recorded(cli: Cli, tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        "    switch_interval: 1.0e-6\n    gc: aggressive\n    hash_seed: 7\n"
        "    malloc: perturb\n    cpus: 1\n    nice: 5\n    cpu_load: 2\n    io_load: 1\n"
        "    torch: {num_threads: 2}\n",
        competitors=4,
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr + result.stdout
    (seen,) = _seen(result.out)
    assert seen["switch"] == pytest.approx(1e-6)
    assert seen["gc"] == list(AGGRESSIVE_GC)
    assert seen["hash_seed"] == "7"
    assert seen["perturb"] == "165"
    assert "glibc.malloc.tcache_count=0" in str(seen["tunables"])
    assert seen["cpus"] == [min(os.sched_getaffinity(0))]
    assert seen["nice"] == os.nice(0) + 5 or seen["nice"] == 5
    assert seen["omp"] == "2"
    assert seen["competitors"] == 4  # the load helper, its two spinners and its writer
    data = _results(result.out)
    (attempt,) = data["cells"][0]["attempts"]  # type: ignore[index]
    recorded = " ".join(attempt["perturbed"])
    for phrase in ("switch_interval=1e-06", "gc=aggressive", "malloc=perturb", "cpus=", "nice=5"):
        assert phrase in recorded
    # The report says under its headline that the run was amplified, and how; it offers no
    # one-line plain repro (the plain command runs without the perturbation).
    report = (_run_folder(result.out) / "report.md").read_text().splitlines()
    assert report[5].startswith("> **Amplified:** attempts ran under `environment.perturb`")
    assert "switch_interval=1e-06" in report[5]
    assert "Repro without reprospec" not in "\n".join(report)
    # So do the console beside its table, and the HTML report under its headline.
    assert "perturbed: default ran under environment.perturb: switch_interval=1e-06" in (
        result.stdout
    )
    html = cli("report", str(_run_folder(result.out)), "--format", "html")
    assert html.code == 0, html.stderr
    head = html.stdout.split("<h2")[0]
    assert "<strong>Amplified:</strong>" in head
    assert "switch_interval=1e-06" in head
    # The competitors died with the attempt, and the writer's file went with them.
    assert not list((_run_folder(result.out) / attempt["logs"]).glob("io-load-*"))
    ours = str(tmp_path).encode()  # (as the probe counted them: this test's own)
    assert not [
        p
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and b"perturb/load.py" in _cmdline(p) and ours in _cmdline(p)
    ]


def _cmdline(folder: Path) -> bytes:
    try:
        return (folder / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_perturbation_is_a_matrix_axis(cli: Cli, tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        "    switch_interval: ${{ matrix.interval }}\n",
        matrix="matrix:\n  interval: [0.005, 1.0e-6]\n",
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    assert sorted(float(str(s["switch"])) for s in _seen(result.out)) == pytest.approx(
        [1e-6, 0.005]
    )


def test_a_perturbation_the_machine_cannot_apply_is_an_infra_error(
    cli: Cli, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, "    cpus: [4096]\n")
    result = cli("run", str(spec))
    assert result.code == 3, result.stdout
    assert "perturb.cpus=4096 not applied: CPU 4096 not available" in result.stdout


def test_wrong_values_are_located_errors(cli: Cli, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "    malloc: loud\n    switch_intreval: 1\n")
    result = cli("validate", str(spec))
    assert result.code == 2
    assert "probe.yaml:8" in result.stdout + result.stderr
    assert "switch_interval" in result.stdout + result.stderr  # did you mean
    with pytest.raises(SectionError) as caught:
        Perturb.from_section({"nice": 40})
    assert caught.value.path == ("environment", "perturb", "nice")


def test_settings_read_back_as_the_spec_writes_them() -> None:
    section = {"switch_interval": 1e-6, "cpus": [1, 0], "memory_limit": "64m", "gc": 10}
    perturb = Perturb.from_section(section)
    assert perturb.cpus == (0, 1)
    assert Perturb.from_section(perturb.to_json()) == perturb
    assert "memory_limit=64.0 MiB" in perturb.describe()


def test_a_memory_cgroup_is_made_and_removed_or_says_why_not() -> None:
    folder, how = make_memory_cgroup(64 * 2**20, f"reprospec-test-{os.getpid()}")
    if folder is None:
        assert how  # the reason, for the report
        pytest.skip(f"no memory cgroup here: {how}")
    assert folder.is_dir()
    remove_cgroup(folder)
    assert not folder.exists()


# What torch itself runs under, in the attempt and in a DataLoader worker it forks.
TORCH_PROBE = r"""
import json, os, torch
from torch.utils.data import DataLoader, Dataset

class Seen(Dataset):
    def __len__(self):
        return 1
    def __getitem__(self, index):
        return json.dumps({"worker_threads": torch.get_num_threads()})

seen = {
    "threads": torch.get_num_threads(),
    "interop": torch.get_num_interop_threads(),
    "omp": os.environ.get("OMP_NUM_THREADS"),
    "caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"),
    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
}
torch.ones(64, 64) @ torch.ones(64, 64)  # inter-op work after the pools were set
loader = DataLoader(Seen(), num_workers=1, multiprocessing_context="fork", batch_size=None)
seen.update(json.loads(next(iter(loader))))
print(json.dumps(seen))
"""


def test_the_torch_settings_reach_torch_and_its_workers(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import sys

    (tmp_path / "probe.py").write_text(TORCH_PROBE)
    spec = tmp_path / "torch.yaml"
    spec.write_text(
        f"reprospec: 1\nname: torch-probe\ncommand: [{sys.executable}, probe.py]\n"
        "environment:\n  workdir: .\n  perturb:\n    torch:\n"
        "      num_threads: 3\n      interop_threads: 5\n      caching_allocator: false\n"
        "      alloc_conf: 'expandable_segments:True'\n"
        "run: {timeout: 120s}\nexpect:\n  outcome: pass\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr + result.stdout
    (seen,) = _seen(result.out)
    # Each differs from torch's own default here (the CPU count, 1, unset, unset).
    assert seen == {
        "threads": 3,
        "interop": 5,
        "omp": "3",
        "caching": "1",
        "alloc_conf": "expandable_segments:True",
        "worker_threads": 1,  # torch sets a worker's to 1 itself: the setting is the parent's
    }
    (attempt,) = _results(result.out)["cells"][0]["attempts"]  # type: ignore[index]
    assert attempt["perturbed"] == [
        "torch.num_threads=3",
        "torch.interop_threads=5",
        "torch.caching_allocator=false",
        "torch.alloc_conf=expandable_segments:True",
    ]


def _boot_ticks() -> int:
    """Now, in the clock ticks since boot that /proc/PID/stat's start time counts."""
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _zombie_children(since: int) -> set[str]:
    """This process's children started at or after `since` (boot ticks) that ended and were
    not reaped, as "PID (COMM)". Only those: this process is a subreaper for every test the
    xdist worker runs, so an orphan another test left behind (started before this one)
    becomes its child and may end, unreaped, while this test runs (CI, this stop's suite).
    Every process's stat is read, and its name need not be UTF-8 (a program file named
    so): undecodable bytes replaced, where a strict read failed the test on it."""
    found = set()
    for folder in Path("/proc").iterdir():
        try:
            stat = (folder / "stat").read_bytes().decode(errors="replace")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid, started = fields[0], int(fields[1]), int(fields[19])
        if state == "Z" and ppid == os.getpid() and started >= since:
            found.add(f"{folder.name} ({comm})")
    return found


def test_the_competitors_are_reaped_by_the_engine(tmp_path: Path) -> None:
    import reprospec

    spec = _spec(tmp_path, "    cpu_load: 2\n")
    since = _boot_ticks()
    # In this process: the engine, a subreaper, inherits the spinners when their parent dies.
    result = reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "out", repeat=3, jobs=1))
    assert [a.perturbed for a in result.cells[0].attempts] == [
        ("cpu_load=2 (busy processes beside the attempt)",)
    ] * 3
    assert _zombie_children(since) == set()


# Stands in for load.py: forks one sleeper, then a second once the file GO (in --dir) is
# there, as load.py forks its spinners one after another while the engine may be stopping it.
LATE_FORKER = """
import os, sys, time
folder = sys.argv[sys.argv.index("--dir") + 1]
def sleeper():
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
sleeper()
while not os.path.exists(os.path.join(folder, "GO")):
    time.sleep(0.005)
sleeper()
open(os.path.join(folder, "FORKED"), "w").close()
time.sleep(60)
"""


def test_a_competitor_forked_as_the_load_is_stopped_is_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI, stop 48: an attempt that ended while load.py was still forking its spinners left
    # the late ones as this engine's zombies: the reap read load.py's children before the
    # kill, and a spinner forked between that read and the kill was never waited for. Here
    # the second one is forked exactly there (as the helper is stopped), every time.
    from reprospec.perturb import competitors
    from reprospec.process import start, tree

    assert tree.become_subreaper()
    script = tmp_path / "late_forker.py"
    script.write_text(LATE_FORKER, encoding="utf-8")
    monkeypatch.setattr(competitors, "LOAD", script)
    real_stop = start.stop_helper

    def stop_helper(proc: subprocess.Popen[bytes], grace_s: float = 1.0) -> None:
        (tmp_path / "GO").touch()
        # The late fork, unless the load is dead already (then it never comes).
        deadline = time.monotonic() + 10
        while not (tmp_path / "FORKED").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the stand-in load never forked its second"
            time.sleep(0.005)
        real_stop(proc, grace_s)

    monkeypatch.setattr(start, "stop_helper", stop_helper)
    since = _boot_ticks()
    load = competitors.start_load(Perturb(cpu_load=1), (), tmp_path)
    assert load is not None
    deadline = time.monotonic() + 10
    while len(_children_of(load.pid)) < 1:  # the first sleeper is there
        assert time.monotonic() < deadline
        time.sleep(0.005)
    competitors.stop_load(load, tmp_path)
    assert _zombie_children(since) == set()


def _children_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def test_a_preload_the_perturbation_turns_off_is_said_on_the_console(
    cli: Cli, tmp_path: Path
) -> None:
    # Every attempt ran fresh (a perturbation only a process's start applies),
    # which only report.md said: the console read as a forked run's.
    spec = tmp_path / "p.yaml"
    spec.write_text(
        "reprospec: 1\nname: preloaded\ncommand: [python, -c, pass]\n"
        "environment: {perturb: {switch_interval: 1.0e-6, hash_seed: 3}}\n"
        "run: {repeat: 2, preload: [json]}\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    said = "preload: 2 ran fresh: perturb.hash_seed: PYTHONHASHSEED is read when the interpreter"
    assert said in result.stdout, result.stdout
    # A perturbation the fork applies is no reason to run fresh: nothing said.
    forked = tmp_path / "forked.yaml"
    forked.write_text(spec.read_text().replace(", hash_seed: 3", ""), encoding="utf-8")
    assert "preload:" not in cli("run", str(forked)).stdout
    # A run without run.preload says nothing of it.
    plain = tmp_path / "plain.yaml"
    plain.write_text(spec.read_text().replace(", preload: [json]", ""), encoding="utf-8")
    assert "preload:" not in cli("run", str(plain)).stdout
