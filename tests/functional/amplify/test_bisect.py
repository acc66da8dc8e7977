"""`bisect --amplify`: a race that a release brought, rare in plain runs, bisected under the
perturbation `amplify` found for it, with real venvs of small wheels made here."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from reprospec import venvs
from tests.support.cli import Cli
from tests.support.envs import make_releases, uv_environment

DEMO = "reprospec-racedemo"
FIRST_BAD = 3  # 1.3 dropped the cache's lock

# The library: a cache filled by threads; the lock guards the check-then-act until 1.3.
_LIBRARY = '''\
import threading
VERSION = {version!r}
_lock = threading.Lock() if {locked} else None


def fill(keys, rounds, threads):
    """Fill a fresh cache from `threads` threads, `rounds` times; a key built twice raises."""
    for _ in range(rounds):
        cache, made = {{}}, []
        start = threading.Barrier(threads)

        def get(key):
            if _lock is not None:
                with _lock:
                    return _get(key)
            return _get(key)

        def build(key):
            made.append(key)
            return key

        def _get(key):
            if key not in cache:  # check
                value = build(key)  # a Python call: a thread may switch here
                cache[key] = value  # act
            return cache[key]

        def work():
            start.wait()
            total = 0
            for key in range(keys):
                total += key
                get(key)

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        if len(made) != keys:
            raise RuntimeError("cache entry built twice: %d duplicate(s)" % (len(made) - keys))
'''


def _project(tmp_path: Path) -> tuple[Path, Path]:
    wheels = make_releases(
        tmp_path / "wheels",
        DEMO,
        6,
        lambda minor: _LIBRARY.format(version=f"1.{minor}", locked=minor < FIRST_BAD),
    )
    (tmp_path / "user.py").write_text(
        "import reprospec_racedemo as lib\nlib.fill(2000, 20, 2)\nprint('filled', lib.VERSION)\n"
    )
    spec = tmp_path / "race.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: racedemo
        environment:
          workdir: .
          packages: ["{DEMO}==1.5"]
        command: python user.py
        run: {{timeout: 60s}}
        expect:
          outcome: error
          exception: RuntimeError
          message: cache entry built twice
        """)
    )
    return spec, wheels


def test_bisect_under_the_amplification_finds_the_release_and_says_so(
    cli: Cli, tmp_path: Path
) -> None:
    spec, wheels = _project(tmp_path)
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    out = tmp_path / "out"
    common = ("--out", str(out), "--find-links", str(wheels), "-j", "2")
    amplified = cli(
        "amplify", str(spec), *common, "--runner", "venv", "--budget", "200",
        "--try", "switch_interval=1e-6",
        "--format", "json", env=env, timeout=600,
    )  # fmt: skip
    assert amplified.code == 0, amplified.stderr + amplified.stdout
    found = json.loads(amplified.stdout)
    assert found["perturbation"] == "switch_interval=1e-06", found["sentence"]

    done = cli(
        "bisect", str(spec), "--package", DEMO, "--good", "1.0", "--bad", "1.5",
        "--amplify", str(found["folder"]), *common, env=env, timeout=600,
    )  # fmt: skip
    assert done.code == 0, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("amplified: found under environment.perturb (switch_interval=1e-06")
    assert f"1.{FIRST_BAD}" in lines[1]
    as_json = cli(
        "bisect", str(spec), "--package", DEMO, "--good", "1.0", "--bad", "1.5",
        "--amplify", str(found["folder"]), *common, "--format", "json", env=env, timeout=600,
    )  # fmt: skip
    assert as_json.code == 0, as_json.stderr
    result = json.loads(as_json.stdout)
    assert (result["first_bad"], result["last_good"]) == (f"1.{FIRST_BAD}", f"1.{FIRST_BAD - 1}")
    assert result["perturbed"] == ["switch_interval=1e-06"]
    # Every attempt of every version ran under the perturbation, as recorded by the runner.
    runs = [run_id for tested in result["tested"] for run_id in tested["runs"]]
    assert runs
    for run_id in runs:
        data = json.loads((out / "runs" / run_id / "results.json").read_text())
        attempts = [a for cell in data["cells"] for a in cell["attempts"]]
        assert attempts
        assert all(a["perturbed"] == ["switch_interval=1e-06"] for a in attempts)
