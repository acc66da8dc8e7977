"""The pins capture writes: the distributions behind a program's imports, read in its
interpreter (reprospec_harness.pins), of the packages this test environment has."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.harness import HARNESS_ROOT

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness.pins import distributions


def test_a_requirement_of_an_extra_leaves_the_package_pinned() -> None:
    # execnet requires pytest only for its `testing` extra: pytest was left out as coming
    # with execnet, and a captured `pytest -n 2` spec pinned execnet alone (a new user).
    pinned = distributions(["execnet", "pytest"])
    assert [p.split("==")[0].lower() for p in pinned] == ["execnet", "pytest"]


def test_an_install_from_a_folder_is_no_pin_and_a_vcs_one_is_its_direct_reference() -> None:
    # PEP 610's direct_url.json, as pip and uv write it. `pip install -e .` of the user's
    # own project was pinned `mypkg==0.1.0`, which no index has.
    from reprospec_harness.pins import _direct

    editable = '{"url": "file:///src/my%20proj", "dir_info": {"editable": true}}'
    assert _direct("mypkg", "0.1.0", editable) == ("", "/src/my proj", True)
    assert _direct("mypkg", "0.1.0", '{"url": "file:///src/proj", "dir_info": {}}') == (
        "",
        "/src/proj",
        False,
    )
    # A wheel file is a release of its version, which a wheelhouse serves: pinned.
    wheel = '{"url": "file:///w/nu-1.2.3-py3-none-any.whl", "archive_info": {}}'
    assert _direct("nu", "1.2.3", wheel) == ("nu==1.2.3", None, False)
    vcs = (
        '{"url": "https://github.com/o/r.git", '
        '"vcs_info": {"vcs": "git", "commit_id": "4f2a9c1", "requested_revision": "main"}}'
    )
    assert _direct("r", "0.0.1", vcs) == ("r @ git+https://github.com/o/r.git@4f2a9c1", None, False)
    remote = '{"url": "https://h/x-1.0.tar.gz", "archive_info": {"hashes": {}}}'
    assert _direct("x", "1.0", remote) == ("x @ https://h/x-1.0.tar.gz", None, False)
    for index in (None, "", "not json", "[]"):
        assert _direct("numpy", "2.1.0", index) == ("numpy==2.1.0", None, False)


def test_a_develop_install_is_named_by_its_egg_link_or_pth_and_a_release_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `setup.py develop` writes no direct_url.json: an `.egg-link` names the folder its
    # `.egg-info` is in and the project's (`../` from src/), easy-install.pth the folder.
    from reprospec_harness.pins import _develop_folders

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    project, flat, egg = tmp_path / "proj", tmp_path / "flat", site / "six-1.16-py3.11.egg"
    (site / "proj.egg-link").write_text(f"{project / 'src'}\n../")
    debian = tmp_path / "usr" / "dist-packages"
    (site / "easy-install.pth").write_text(
        f"{project / 'src'}\n{flat}\n./six-1.16-py3.11.egg\n{debian}\n"
        "import sys; sys.__plen = len(sys.path)\n# a comment\n"
    )
    monkeypatch.setattr(sys, "path", [str(tmp_path / "elsewhere"), str(site)])
    # A site folder a `.pth` adds and an egg easy_install unpacked are installed releases.
    assert _develop_folders() == {
        (project / "src").resolve(): str(project.resolve()),
        flat.resolve(): str(flat.resolve()),
    }
    assert egg.resolve() not in _develop_folders()
    # A folder that is no site folder is not read: a workdir's own `.pth` is nothing.
    monkeypatch.setattr(sys, "path", [str(tmp_path / "venv")])
    assert _develop_folders() == {}


def test_a_plugin_is_a_distribution_whose_entry_point_module_was_loaded_by_its_name() -> None:
    # By the top-level package alone, a test importing torch made torch one of
    # pytest's plugins (its `torchrun.logs_specs` entry point names a torch module), and
    # hypothesis, whose pytest11 module `_hypothesis_pytestplugin` is no hypothesis module,
    # never was one.
    from importlib.metadata import PackageNotFoundError, version

    from reprospec_harness.pins import plugins

    try:
        pins = [f"torch=={version('torch')}", f"hypothesis=={version('hypothesis')}"]
    except PackageNotFoundError:
        pytest.skip("needs torch and hypothesis installed")
    imported = ["torch", "torch.nn", "hypothesis", "hypothesis.core"]
    assert plugins(pins, imported, "pytest") == []
    assert plugins(pins, [*imported, "_hypothesis_pytestplugin"], "pytest") == [pins[1]]
