"""`materialize` of a perturbed spec: run.sh applies `environment.perturb` as the docker
runner does, or materialize refuses the spec; and run.sh's exit status is its verdict.

the bundle of an amplified spec (`malloc: perturb`) ran the program plain, and
the use-after-free that `reprospec run` crashed 8/8 printed `exit 0` (run.sh exit 0).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: uaf
command: python app.py
environment:
{environment}
run: {{timeout: 60s}}
expect: {{outcome: crash, signal: SIGSEGV, rate: ">0"}}
"""


def _bundle(tmp_path: Path, environment: str) -> Path:
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "uaf.yaml").write_text(SPEC.format(environment=environment))
    spec = load_spec(tmp_path / "uaf.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    write_bundle(spec, plans, tmp_path / "bundle")
    return tmp_path / "bundle"


def _docker_run(bundle: Path) -> list[str]:
    """The words of cell 1's `docker run`, as bash would split them."""
    script = (bundle / "run.sh").read_text()
    start = script.index('    run_container 1 "reprospec-bundle-1-$$" 60 ')
    end = script.index("\n    local status=$?", start)
    return shlex.split(script[start:end].replace("\\\n", " "))


def test_malloc_perturb_is_passed_to_the_container(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "  perturb: {malloc: perturb}")
    words = _docker_run(bundle)
    assert "MALLOC_PERTURB_=165" in words
    assert "GLIBC_TUNABLES=glibc.malloc.tcache_count=0" in words
    assert words[-4:] == ["reprospec-bundle/uaf:1", "/bin/sh", "-c", "python app.py"]
    readme = " ".join((bundle / "README.md").read_text().split())
    assert (
        "- cell 1: malloc=perturb (MALLOC_PERTURB_=165, GLIBC_TUNABLES=glibc.malloc.tcache_count=0;"
        in readme
    )
    assert "# perturbed: malloc=perturb (MALLOC_PERTURB_=165" in (bundle / "run.sh").read_text()


def test_a_switch_interval_reaches_the_images_sitecustomize(tmp_path: Path) -> None:
    # The race's amplified spec: the sitecustomize reads REPROSPEC_PERTURB.
    words = _docker_run(_bundle(tmp_path, "  perturb: {switch_interval: 1.0e-6, hash_seed: 3}"))
    assert "REPROSPEC_PERTURB=switch_interval=1e-06" in words
    assert "PYTHONHASHSEED=3" in words


def test_cpus_memory_and_nice_are_docker_options_and_a_prefix(tmp_path: Path) -> None:
    words = _docker_run(
        _bundle(
            tmp_path,
            "  memory: 1g\n  perturb: {cpus: 2, memory_limit: 256m, nice: 5}",
        )
    )
    assert words[words.index("--cpuset-cpus") + 1] == "0-1"
    # The smaller of environment.memory and memory_limit, once, with no swap beyond it.
    assert words.count("--memory") == 1
    assert words[words.index("--memory") + 1] == str(256 << 20)
    assert words[words.index("--memory-swap") + 1] == str(256 << 20)
    assert words.count("--memory-swap") == 1
    assert words[-6:] == ["nice", "-n", "5", "/bin/sh", "-c", "python app.py"]


def test_a_memory_limit_has_no_swap_beyond_it(tmp_path: Path) -> None:
    # `--memory` alone: docker's default swap limit, twice the memory, let the cell swap
    # as much again on a host with swap, where the docker runner's limit is the OOM kill.
    words = _docker_run(_bundle(tmp_path, "  memory: 1g"))
    assert words[words.index("--memory") + 1] == str(1 << 30)
    assert words[words.index("--memory-swap") + 1] == str(1 << 30)


def test_listed_cpus_are_the_cpuset(tmp_path: Path) -> None:
    words = _docker_run(_bundle(tmp_path, "  perturb: {cpus: [0, 2]}"))
    assert words[words.index("--cpuset-cpus") + 1] == "0,2"


def test_cpu_and_io_load_run_beside_the_cell_on_its_cpus(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "  perturb: {cpus: 1, cpu_load: 2, io_load: 1}")
    script = (bundle / "run.sh").read_text()
    start = script.index("    docker run \\\n        -d --rm")
    words = shlex.split(script[start : script.index(">/dev/null", start)].replace("\\\n", " "))
    assert words[words.index("--cpuset-cpus") + 1] == "0"
    assert words[-10:] == [
        "reprospec-bundle/uaf:1", "-S", "-E", "/reprospec/load.py",
        "--cpu", "2", "--io", "1", "--dir", "/reprospec/load",
    ]  # fmt: skip
    assert words[words.index("--entrypoint") + 1] == "python3"
    assert (bundle / "load.py").read_text().startswith('"""`python -S -E load.py')
    # Started before the cell's container, removed after it.
    assert start < script.index('    run_container 1 "reprospec-bundle-1-$$" 60 ')
    assert script.index('docker rm -f "reprospec-bundle-load-1-$$"') > start


def test_a_negative_nice_is_refused_located_and_nothing_is_written(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as raised:
        _bundle(tmp_path, "  perturb:\n    nice: -5")
    assert raised.value.exit_code == 2
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'uaf.yaml'}:6:11: environment.perturb.nice: ")
    assert "run.sh cannot carry it (-5: a negative nice value needs CAP_SYS_NICE" in message
    assert not (tmp_path / "bundle").exists()


def test_an_unperturbed_spec_has_no_perturbation_in_its_bundle(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "  network: false")
    words = _docker_run(bundle)
    assert not [w for w in words if w.startswith(("MALLOC_", "GLIBC_", "REPROSPEC_PERTURB"))]
    assert "perturb" not in (bundle / "README.md").read_text()
    assert not (bundle / "load.py").exists()


def test_run_sh_judges_each_cell_and_exits_with_the_verdict(tmp_path: Path) -> None:
    # run.sh printed `exit 0; expected: crash ...` and exited 0: the verdict was the reader's.
    script = (_bundle(tmp_path, "  network: false") / "run.sh").read_text()
    assert (
        """report 1 "$status" default '{"outcome": "crash", "signal": "SIGSEGV", "rate": ">0"}' \
crash SIGSEGV ''"""
        in script
    )
    assert '[ "$NOT_RUN" = 0 ] || exit 3\n[ "$MISSED" = 0 ] || exit 1\n' in script
    assert 'echo "== cell $1 [$3]: $what; expected: $4; $verdict"' in script
