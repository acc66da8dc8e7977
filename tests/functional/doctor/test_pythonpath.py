"""`doctor --runner venv` on what `PYTHONPATH` brings before each cell's venv, asked of the
run's own package probe (it starts a Python): as the run finds it, in its words."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject
from reprospec.doctor.check import Check
from reprospec.doctor.needs import CellPackages, Needs, check_spec_environment
from reprospec.environment.packages import mismatches, probe_installed

# What doctor captured of its own interpreter: the venv runner installs the packages.
CAPTURED: JsonObject = {
    "python": {"version": "3.11.7", "executable": sys.executable},
    "packages": {"packaging": "26.4"},
}
SINGLE = Needs(
    packages=("packaging==21.3",),
    package_sets=(CellPackages(("packaging==21.3",), ("c1",)),),
    runner="venv",
)
TAIL = (
    ": the venv runner's attempts inherit PYTHONPATH, so every cell that names it "
    "is an infra error, not run"
)


def _dist(folder: Path, version: str, *, egg: bool = False) -> Path:
    """`packaging` at `version` in `folder`: a dist-info, or a version-less egg-info as a
    legacy `setup.py develop` leaves it in `src/`."""
    if egg:
        meta = folder / "packaging.egg-info"
        meta.mkdir(parents=True)
        (meta / "PKG-INFO").write_text(
            f"Metadata-Version: 2.1\nName: packaging\nVersion: {version}\n"
        )
    else:
        meta = folder / f"packaging-{version}.dist-info"
        meta.mkdir(parents=True)
        (meta / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: packaging\nVersion: {version}\n"
        )
    return folder


def _check(monkeypatch: pytest.MonkeyPatch, pythonpath: str, needs: Needs = SINGLE) -> Check:
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    return check_spec_environment(CAPTURED, needs)


def _run_says(pythonpath: str, cwd: Path | None = None) -> str:
    """The run's own line for the cell, its probe asked as the run asks it."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath}
    (line,) = mismatches(
        ["packaging==21.3"], probe_installed(sys.executable, ["packaging==21.3"], env=env, cwd=cwd)
    )
    return line


def test_a_version_on_pythonpath_that_the_venv_runner_cannot_override_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `PYTHONPATH=/src/.venv/lib/python3.11/site-packages reprospec doctor --runner venv` said
    # PASS, "the venv runner installs the spec's packages", and the run then refused every
    # cell: its attempts inherit PYTHONPATH, whose packaging 26.4 comes before the venv's.
    site = _dist(tmp_path / "site-packages", "26.4")
    (site / "six-1.17.0.dist-info").mkdir()
    sets = (
        CellPackages(("packaging==21.3",), ("packaging=21.3",)),
        CellPackages(("packaging==26.4",), ("packaging=26.4",)),
    )
    needs = Needs(packages=("packaging==21.3", "packaging==26.4"), package_sets=sets, runner="venv")
    check = _check(monkeypatch, str(site), needs)
    assert check.status == "fail"
    assert check.why == (
        "packaging 26.4 is installed (the cell needs packaging==21.3), "
        f"from {os.path.realpath(site)} on PYTHONPATH, which comes first in cell "
        f"packaging=21.3{TAIL}"
    )
    assert check.todo == "unset PYTHONPATH for the run, or leave that folder out of it"
    # A cell's own PYTHONPATH is the one its attempts get; the docker runner's inherit none.
    own = tuple(replace(each, env=(("PYTHONPATH", str(tmp_path)),)) for each in sets)
    assert check_spec_environment(CAPTURED, replace(needs, package_sets=own)).status == "pass"
    assert check_spec_environment(CAPTURED, replace(needs, runner="docker")).status == "pass"
    monkeypatch.delenv("PYTHONPATH")
    assert check_spec_environment(CAPTURED, needs).status == "pass"


def test_the_first_folder_that_holds_a_distribution_wins_as_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each folder was judged on its own: `good:bad` failed on bad's 26.4, which Python never
    # reads past good's 21.3, and `bad:bad` named the one cell twice ("in cells c1, c1").
    good, bad = _dist(tmp_path / "good", "21.3"), _dist(tmp_path / "bad", "26.4")
    assert _check(monkeypatch, f"{good}:{bad}").status == "pass"
    for path in (f"{bad}:{good}", f"{bad}:{bad}"):
        check = _check(monkeypatch, path)
        assert (check.status, check.why) == ("fail", _run_says(path) + TAIL)
        assert check.why.startswith(
            "packaging 26.4 is installed (the cell needs packaging==21.3), "
            f"from {os.path.realpath(bad)} on PYTHONPATH, which comes first: "
        )


def test_a_version_less_egg_info_is_read_as_the_run_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `src/packaging.egg-info` names no version: doctor's folder-name rule skipped it and
    # passed, where the run reads its PKG-INFO and refuses the cell.
    src = _dist(tmp_path / "src", "26.4", egg=True)
    check = _check(monkeypatch, str(src))
    assert (check.status, check.why) == ("fail", _run_says(str(src)) + TAIL)
    assert f"from {os.path.realpath(src)} on PYTHONPATH" in check.why


def test_an_empty_entry_is_the_cells_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `PYTHONPATH=:/x` puts the current directory first (the attempt's, the cell's workdir):
    # doctor left the empty entry out and passed.
    workdir = _dist(tmp_path / "wd", "26.4", egg=True)
    needs = replace(
        SINGLE, package_sets=(CellPackages(("packaging==21.3",), ("c1",), workdir=str(workdir)),)
    )
    check = _check(monkeypatch, ":/nonexistent", needs)
    assert (check.status, check.why) == ("fail", _run_says(":/nonexistent", workdir) + TAIL)
    assert f"from {os.path.realpath(workdir)} on PYTHONPATH" in check.why


def test_the_workdir_python_c_puts_first_is_not_named_as_a_pythonpath_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The probe's `python -c` read the workdir's packaging 26.4 (its "" comes before every
    # PYTHONPATH entry) and named PYTHONPATH's folder, which holds the allowed 21.3: doctor
    # failed, advising to leave that folder out, which changed nothing.
    workdir = _dist(tmp_path / "wd", "26.4")
    good = _dist(tmp_path / "good", "21.3")
    needs = replace(
        SINGLE, package_sets=(CellPackages(("packaging==21.3",), ("c1",), workdir=str(workdir)),)
    )
    assert _check(monkeypatch, str(good), needs).status == "pass"


def _python_310(folder: Path) -> Path:
    """An interpreter whose markers are Python 3.10's (this one, `platform` told so): what
    doctor checks where the spec's python is 3.10 and reprospec runs on another."""
    script = folder / "python3.10"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!{sys.executable} -S\n"
        "import platform, sys\n"
        "platform.python_version = lambda: '3.10.14'\n"
        "platform.python_version_tuple = lambda: ('3', '10', '14')\n"
        "args = [a for a in sys.argv[1:] if a != '-S']\n"
        "assert args[0] == '-c', args\n"
        "sys.argv = ['-c', *args[2:]]\n"
        "exec(compile(args[1], '<string>', 'exec'), {'__name__': '__main__'})\n"
    )
    script.chmod(0o755)
    return script


def test_a_requirements_marker_is_judged_by_the_checked_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # doctor probed with reprospec's own interpreter, whose markers were then the cell's: on
    # a spec of python 3.10, `packaging==21.3; python_version < "3.11"` was skipped (passed)
    # where the run, in the cell's 3.10 venv, refused the cell; the reverse failed a spec
    # that runs.
    site = _dist(tmp_path / "site-packages", "26.4")
    captured: JsonObject = {
        "python": {"version": "3.10.14", "executable": str(_python_310(tmp_path / "bin"))},
        "packages": {},
    }
    monkeypatch.setenv("PYTHONPATH", str(site))
    for marker, status in (
        ('python_version < "3.11"', "fail"),
        ('python_version >= "3.11"', "pass"),
    ):
        wanted = (f"packaging==21.3; {marker}",)
        needs = Needs(
            python="3.10",
            packages=wanted,
            package_sets=(CellPackages(wanted, ("c1",)),),
            runner="venv",
        )
        check = check_spec_environment(captured, needs)
        assert check.status == status, check.why
        if status == "fail":
            assert f"from {os.path.realpath(site)} on PYTHONPATH" in check.why


def test_no_probe_where_no_cell_names_a_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spec of `python:` alone started a probe for no name.
    from reprospec.environment import packages

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("probed")

    monkeypatch.setattr(packages, "probe_installed", refuse)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    check = check_spec_environment(CAPTURED, Needs(python="3.11", runner="venv"))
    assert check.status != "fail", check.why
