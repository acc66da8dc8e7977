"""Per-cell `packages` honoured or refused, with real interpreters."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from reprospec.environment.packages import (
    PROBE_CODE,
    PackageCheck,
    mismatches,
    parse_probe,
    probe_args,
    probe_installed,
)
from tests.support.cli import Cli

PYYAML = importlib.metadata.version("pyyaml")


def test_probe_reports_what_the_interpreter_has() -> None:
    seen = probe_installed(sys.executable, ["PyYAML", "surely-not-installed-reprospec"])
    assert seen.versions == {"pyyaml": PYYAML, "surely-not-installed-reprospec": None}
    assert seen.markers["python_version"] == "{}.{}".format(*sys.version_info[:2])
    assert seen.prefix == sys.prefix


def test_a_version_a_pythonpath_folder_brings_is_named_with_its_folder(tmp_path: Path) -> None:
    # A venv built for packaging==21.3, run from a shell whose PYTHONPATH held another
    # environment's site-packages: the cell was refused with "packaging 26.4 is installed
    # (the cell needs packaging==21.3)", which read as a venv built wrong.
    site = tmp_path / "site-packages"
    meta = site / "packaging-26.4.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 26.4\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    seen = probe_installed(sys.executable, ["packaging==21.3"], env=env)
    assert seen.pythonpath == {"packaging": str(site)}
    assert mismatches(["packaging==21.3"], seen) == (
        "packaging 26.4 is installed (the cell needs packaging==21.3), "
        f"from {site} on PYTHONPATH, which comes first",
    )
    # The environment's own version is named as before.
    plain = probe_installed(sys.executable, ["pyyaml==0.0.1"])
    assert plain.pythonpath == {}
    assert mismatches(["pyyaml==0.0.1"], plain) == (
        f"pyyaml {PYYAML} is installed (the cell needs pyyaml==0.0.1)",
    )


def test_a_pythonpath_folder_is_named_by_its_metadatas_name_not_its_folders(
    tmp_path: Path,
) -> None:
    # The folder's own name was read for the distribution's: an egg-info of a checkout
    # (`legacy_checkout.egg-info`, Name: packaging) brought packaging 26.4 and was not
    # named; a `pyyaml-0.1.dist-info` of another distribution was named for the
    # environment's own pyyaml.
    site = tmp_path / "site-packages"
    egg = site / "legacy_checkout.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 26.4\n")
    other = site / "pyyaml-0.1.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: not-yaml\nVersion: 0.1\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    seen = probe_installed(sys.executable, ["packaging==21.3", "pyyaml==0.0.1"], env=env)
    assert seen.pythonpath == {"packaging": str(site)}
    assert mismatches(["packaging==21.3", "pyyaml==0.0.1"], seen) == (
        "packaging 26.4 is installed (the cell needs packaging==21.3), "
        f"from {site} on PYTHONPATH, which comes first",
        f"pyyaml {PYYAML} is installed (the cell needs pyyaml==0.0.1)",
    )


def test_an_empty_pythonpath_entry_is_the_current_directory(tmp_path: Path) -> None:
    # `PYTHONPATH=:/x` puts the current directory first, as Python reads it; the probe left
    # the empty entry out, so a workdir's metadata was named as the environment's own.
    site = tmp_path / "wd"
    meta = site / "packaging.egg-info"
    meta.mkdir(parents=True)
    (meta / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 26.4\n")
    folder = os.path.realpath(site)
    for entries in (":/nonexistent", "/nonexistent:"):
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": entries}
        seen = probe_installed(sys.executable, ["packaging==21.3"], env=env, cwd=site)
        assert seen.pythonpath == {"packaging": folder}
        assert mismatches(["packaging==21.3"], seen) == (
            "packaging 26.4 is installed (the cell needs packaging==21.3), "
            f"from {folder} on PYTHONPATH, which comes first",
        )
    # No empty entry, or an empty PYTHONPATH: no folder of PYTHONPATH holds it.
    for entries in ("/nonexistent", ""):
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": entries}
        assert probe_installed(sys.executable, ["packaging"], env=env, cwd=site).pythonpath == {}


def test_the_pythonpath_read_ends_at_the_last_pythonpath_folder(tmp_path: Path) -> None:
    # Past PYTHONPATH's folders nothing can be named as theirs, but the probe read on until
    # it found each name: every distribution's metadata in site-packages (hundreds in an
    # ML environment) before pyyaml's. A folder after them holds one it must not open.
    site = tmp_path / "site"
    site.mkdir()
    later = tmp_path / "later"
    meta = later / "zzz_other-1.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: zzz-other\nVersion: 1.0\n")
    probe = (
        "import builtins, sys\n"
        "opened = []\n"
        "def recorded(path, *args, **kwargs):\n"
        "    opened.append(str(path))\n"
        "    return builtins.open(path, *args, **kwargs)\n"
        f"sys.path.insert(sys.path.index({str(site)!r}) + 1, {str(later)!r})\n"
        f"exec(compile({PROBE_CODE!r}, 'probe', 'exec'), {{'open': recorded}})\n"
        f"print([p for p in opened if p.startswith({str(later)!r})], file=sys.stderr)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", probe, *probe_args(["pyyaml"])],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    seen = parse_probe(done.stdout, sys.executable)
    assert (seen.versions, seen.pythonpath) == ({"pyyaml": PYYAML}, {})
    assert done.stderr.strip() == "[]"


def test_the_working_directory_of_python_c_is_not_the_environment(tmp_path: Path) -> None:
    # `python -c` puts "" (the cwd, a cell's workdir) before every PYTHONPATH entry: its
    # packaging 99.1 was read, and named as from PYTHONPATH's folder, which holds the allowed
    # 21.3 ("leave that folder out of it" changed nothing), or, with no PYTHONPATH, as the
    # environment's own.
    workdir = tmp_path / "wd"
    meta = workdir / "packaging-99.1.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 99.1\n")
    good = tmp_path / "good" / "packaging-21.3.dist-info"
    good.mkdir(parents=True)
    (good / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 21.3\n")
    folder = os.path.realpath(good.parent)
    for site in (True, False):
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(good.parent)}
        seen = probe_installed(sys.executable, ["packaging==21.3"], env=env, cwd=workdir, site=site)
        assert (seen.versions, seen.pythonpath) == ({"packaging": "21.3"}, {"packaging": folder})
        assert mismatches(["packaging==21.3"], seen) == ()
    own = probe_installed(sys.executable, ["packaging"], env={"PATH": "/usr/bin:/bin"}, cwd=workdir)
    assert (
        own.versions
        == {"packaging": importlib.metadata.version("packaging")}
        != {"packaging": "99.1"}
    )


def test_probe_reads_the_metadata_files_where_python_has_no_importlib_metadata(
    tmp_path: Path,
) -> None:
    """A venv uv made on Python 3.7 has neither importlib.metadata nor pkg_resources: the
    probe raised ModuleNotFoundError and every `--runner venv` cell on 3.7 was infra-error
    (`package check ... failed: No module named 'pkg_resources'`). Such a Python is this
    one with those modules unimportable (sys.modules[name] = None)."""
    site = tmp_path / "site"
    (site / "Old_Pkg-1.2.dist-info").mkdir(parents=True)
    (site / "Old_Pkg-1.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: Old_Pkg\nVersion: 1.2\n\nName: not-this\n"
    )
    (site / "egg_pkg-0.3.egg-info").write_text(
        "Metadata-Version: 1.0\nName: egg-pkg\nVersion: 0.3\n"
    )
    old_python = (
        "import sys\n"
        "for name in ('importlib.metadata', 'importlib_metadata', 'pkg_resources'):\n"
        "    sys.modules[name] = None\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "sys.argv[1:] = [sys.argv[-1]]\n"
        f"exec(compile({PROBE_CODE!r}, 'probe', 'exec'))\n"
    )
    names = json.dumps(["old-pkg", "egg-pkg", "pyyaml", "absent-here"])
    done = subprocess.run(
        [sys.executable, "-c", old_python, names], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = parse_probe(done.stdout, sys.executable)
    assert seen.versions == {
        "old-pkg": "1.2",
        "egg-pkg": "0.3",
        "pyyaml": PYYAML,
        "absent-here": None,
    }


def test_check_is_cached_per_key(tmp_path: Path) -> None:
    # A folder on PYTHONPATH with a fake distribution: what the interpreter sees changes
    # with the environment, so the environment is part of the key.
    site = tmp_path / "site"
    (site / "reprospec_fake-1.2.dist-info").mkdir(parents=True)
    (site / "reprospec_fake-1.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: reprospec-fake\nVersion: 1.2\n"
    )
    check = PackageCheck()
    assert (
        check.reason(sys.executable, ["reprospec-fake==1.2"], env={"PYTHONPATH": str(site)}) is None
    )
    refused = check.reason(sys.executable, ["reprospec-fake==1.2"], env={})
    assert refused is not None
    assert "reprospec-fake is not installed" in refused
    # Cached: the folder is gone, the answer for that key stays what was probed.
    (site / "reprospec_fake-1.2.dist-info" / "METADATA").unlink()
    assert (
        check.reason(sys.executable, ["reprospec-fake==1.2"], env={"PYTHONPATH": str(site)}) is None
    )
    assert (
        PackageCheck().reason(
            sys.executable, ["reprospec-fake==1.2"], env={"PYTHONPATH": str(site)}
        )
        is not None
    )


def test_missing_interpreter_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    reason = PackageCheck().reason(str(tmp_path / "nope"), ["six"])
    assert reason is not None
    assert "interpreter not found" in reason


def test_matrix_over_versions_on_the_local_runner(cli: Cli, tmp_path: Path) -> None:
    """The cell whose version is not installed is infra-error naming it; the other runs."""
    spec = tmp_path / "versions.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: pyyaml-versions
        environment:
          packages: ["pyyaml==${{{{ matrix.pyyaml }}}}"]
        matrix:
          pyyaml: ["{PYYAML}", "5.1"]
        command: python -c "import yaml, sys; sys.exit(0 if yaml.__version__ == '{PYYAML}' else 9)"
        expect:
          outcome: pass
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 3, done.stderr
    cells = {c["id"]: c for c in done.results()["cells"]}
    ok, wrong = cells[f"pyyaml={PYYAML}"], cells["pyyaml=5.1"]
    assert ok["verdict"] == "reproduced"
    assert ok["attempts"][0]["outcome"]["kind"] == "pass"
    assert wrong["verdict"] == "infra-error"
    attempt = wrong["attempts"][0]
    assert attempt["outcome"] is None
    assert f"pyyaml {PYYAML} is installed (the cell needs pyyaml==5.1)" in attempt["infra_error"]
    # It never ran: no output of the command in its logs.
    logs = done.latest_run() / attempt["logs"]
    assert (logs / "stdout.log").read_text() == ""


def test_a_package_the_local_runner_cannot_check_is_infra_error(cli: Cli, tmp_path: Path) -> None:
    """A folder to install from passes validation but names no distribution: the local
    runner, which installs nothing, cannot tell whether the interpreter has it. It ran the
    cell and judged it `reproduced`; now the cell is infra-error and never runs."""
    spec = tmp_path / "folder.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: folder-package
        environment:
          packages: ["./vendor/six"]
        command: python -c "open('RAN', 'w')"
        expect: {outcome: pass}
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 3, done.stderr
    (cell,) = done.results()["cells"]
    assert cell["verdict"] == "infra-error"
    assert cell["attempts"][0]["infra_error"].startswith(
        "cannot check the cell's packages: './vendor/six' names no distribution"
    )
    assert not (tmp_path / "RAN").exists()


def test_a_requirement_that_is_not_pep_508_is_refused_before_the_run(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "typo.yaml"
    spec.write_text(
        'reprospec: 1\nname: typo\nenvironment:\n  packages: ["six=1.2"]\n'
        'command: python -c "pass"\nexpect: {outcome: pass}\n'
    )
    for verb in ("validate", "run"):
        done = cli(verb, str(spec))
        assert done.code == 2, done.stdout
        assert (
            f"{spec}:4:14: environment.packages[0]: 'six=1.2' is not a valid requirement"
            " (did you mean 'six==1.2'?)" in done.stderr + done.stdout
        )
        assert "Traceback" not in done.stderr


def _kit_site(site: Path) -> Path:
    """A folder with `kit` 1.0 (extras `fast`, needing `reprospec-absent-speedup`, and `yaml`,
    needing PyYAML), as a dist-info, and `eggkit` 0.1 as an egg-info with a requires.txt."""
    (site / "kit-1.0.dist-info").mkdir(parents=True)
    (site / "kit-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kit\nVersion: 1.0\nProvides-Extra: fast\n"
        'Requires-Dist: reprospec-absent-speedup>=2; extra == "fast"\n'
        'Requires-Dist: PyYAML>=1; extra == "yaml"\n\nbody\n'
    )
    (site / "eggkit-0.1.egg-info").mkdir()
    (site / "eggkit-0.1.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 1.0\nName: eggkit\nVersion: 0.1\n"
    )
    (site / "eggkit-0.1.egg-info" / "requires.txt").write_text(
        "pyyaml\n\n[fast]\nreprospec-absent-speedup\n"
    )
    return site


def test_an_extras_requirements_are_checked(cli: Cli, tmp_path: Path) -> None:
    """`kit[fast]` passed the check with what the extra requires missing, and the cell ran
    without it; now it is infra-error naming the missing requirement, before it runs. An
    extra whose requirements are installed (`kit[yaml]`) runs."""
    site = _kit_site(tmp_path / "site")
    spec = tmp_path / "extras.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: extras
        environment:
          packages: ["kit[${{ matrix.extra }}]"]
        matrix:
          extra: [fast, yaml]
        command: python -c "open('RAN-' + '${{ matrix.extra }}', 'w')"
        expect: {outcome: pass}
        """)
    )
    done = cli("run", str(spec), env={"PYTHONPATH": str(site)})
    assert done.code == 3, done.stderr
    cells = {c["id"]: c for c in done.results()["cells"]}
    assert cells["extra=yaml"]["verdict"] == "reproduced"
    fast = cells["extra=fast"]
    assert fast["verdict"] == "infra-error"
    assert (
        "reprospec-absent-speedup is not installed (kit[fast] requires "
        "reprospec-absent-speedup>=2)" in fast["attempts"][0]["infra_error"]
    )
    assert (tmp_path / "RAN-yaml").exists()
    assert not (tmp_path / "RAN-fast").exists()


def test_the_probe_reads_extras_where_python_has_no_importlib_metadata(tmp_path: Path) -> None:
    """The metadata-file fallback (Python 3.6/3.7 venvs) says what extras require too:
    Requires-Dist of a dist-info, the sections of an egg-info's requires.txt."""
    site = _kit_site(tmp_path / "site")
    old_python = (
        "import sys\n"
        "for name in ('importlib.metadata', 'importlib_metadata', 'pkg_resources'):\n"
        "    sys.modules[name] = None\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "sys.argv[1:] = sys.argv[-2:]\n"
        f"exec(compile({PROBE_CODE!r}, 'probe', 'exec'))\n"
    )
    args = probe_args(["kit[fast]", "eggkit[fast]"])
    assert args == ['["kit", "eggkit"]', "extras"]
    done = subprocess.run(
        [sys.executable, "-c", old_python, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = parse_probe(done.stdout, sys.executable)
    assert seen.requires["eggkit"] == ("pyyaml", 'reprospec-absent-speedup; extra == "fast"')
    assert mismatches(["kit[yaml]", "eggkit[fast]", "kit[fast]"], seen) == (
        "reprospec-absent-speedup is not installed (eggkit[fast] requires "
        "reprospec-absent-speedup)",
        "reprospec-absent-speedup is not installed (kit[fast] requires "
        "reprospec-absent-speedup>=2)",
    )
