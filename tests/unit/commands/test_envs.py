"""`reprospec envs`: options that would be dropped without a word are refused; prune's
`kept` names what it would have removed but for a run holding it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from reprospec import venvs
from reprospec.cli import main
from reprospec.runners.docker import cache as images
from reprospec.venvs.build import in_use_lock


@pytest.mark.parametrize(
    ("words", "said"),
    [
        # `list --older-than 1d` listed every environment, the option unread.
        (["list", "--older-than", "1d"], "--older-than: for `envs prune` only"),
        (["list", "--all", "--dry-run"], "--all, --dry-run: for `envs prune` only"),
        # ...and `prune --all --older-than 1d` removed every one, however new.
        (["prune", "--all", "--older-than", "1d"], "--all and --older-than: give one"),
        # `--older-than 7`, meant as days, was 7 seconds: every environment and image went.
        (["prune", "--older-than", "7"], "--older-than 7: give its unit (7d for days, 7h, "),
        # prune says what it removes as text: `--format json` was dropped without a word.
        (["prune", "--dry-run", "--format", "json"], "--format json: for `envs list` only"),
    ],
)
def test_options_envs_would_drop_are_refused(
    words: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["envs", *words, "--out", str(tmp_path / "o")]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.fixture
def envs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environments folder `envs` reads ($REPROSPEC_ENVS), with no docker engine to ask
    (a prune would remove every machine's reprospec-env images)."""
    root = tmp_path / "envs"
    monkeypatch.setenv(venvs.ENVS_VARIABLE, str(root))
    monkeypatch.setattr(images, "reachable", lambda: (None, ""))
    return root


def _environment(root: Path, key: str, used: float) -> Path:
    """A complete environment as list_envs reads one (no venv in it), last used at `used`."""
    folder = root / key
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").touch()
    (folder / venvs.META).write_text(json.dumps({"request": {"packages": ["x==1"]}}))
    (folder / venvs.USED_BY).mkdir()
    (folder / venvs.USED_BY / "spec").touch()
    os.utime(folder / venvs.USED_BY / "spec", (used, used))
    return folder


def test_prune_says_kept_only_of_an_environment_it_would_have_removed(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run's environment, used minutes ago, was said `kept` beside a prune of those unused
    # for 30 days, as if the prune would have removed it but for the run.
    root = envs_root
    old = time.time() - 40 * 86400
    _environment(root, "old", old)
    _environment(root, "new", time.time())
    held = [venvs.hold(root, "old"), venvs.hold(root, "new")]
    try:
        assert main(["envs", "prune", "--out", str(tmp_path / "o")]) == 0
        err = capsys.readouterr().err
        assert "kept old: in use by a run now" in err
        assert "kept new" not in err
        assert main(["envs", "prune", "--all", "--out", str(tmp_path / "o")]) == 0
        err = capsys.readouterr().err
        assert "kept old: in use by a run now" in err
        assert "kept new: in use by a run now" in err
    finally:
        for handle in held:
            assert handle is not None
            handle.close()
    assert (root / "old").is_dir()
    assert (root / "new").is_dir()


def test_list_reads_an_environment_whose_lock_it_cannot_take(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A shared folder of another user's environments was listed as it is; `in use now`, the
    # lock opened for writing to tell, stopped the list on the OSError. (As root no mode
    # denies it: the lock is a folder here.)
    root = envs_root
    _environment(root, "theirs", time.time())
    in_use_lock(root, "theirs").mkdir(parents=True)
    assert main(["envs", "list", "--format", "json", "--out", str(tmp_path / "o")]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["key"], listed["in_use"]) == ("theirs", False)


def test_the_help_of_out_says_images_are_pruned_whatever_the_folder() -> None:
    # --out read as scoping all of it (docs/cli.md: the images are the engine's, whatever the
    # folder); `prune --out ./scratch` removes another project's images too.
    import argparse

    from reprospec.cli import build_parser

    parser = build_parser("envs")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = next(a for a in sub.choices["envs"]._actions if a.dest == "out")
    assert "images are listed and pruned whatever the folder" in (out.help or "")


def test_two_environments_of_one_folder_package_are_told_apart(envs_root: Path) -> None:
    # EnvRequest.to_dict left its sources out: meta.json and `envs list` showed two
    # `./mypkg` environments (two specs' folders, or one edited since) as the same.
    request = venvs.EnvRequest(
        venvs.Interpreter("/usr/bin/python3", "3.11.7"),
        ("./mypkg",),
        sources=(("./mypkg", "/a/mypkg 0123456789abcdef"),),
    )
    assert request.to_dict()["sources"] == [["./mypkg", "/a/mypkg 0123456789abcdef"]]
    folder = _environment(envs_root, request.key(), time.time())
    (folder / venvs.META).write_text(json.dumps({"request": request.to_dict()}))
    (listed,) = venvs.list_envs(envs_root)
    assert listed.sources == ("./mypkg: /a/mypkg 0123456789abcdef",)
    assert listed.to_dict()["sources"] == ["./mypkg: /a/mypkg 0123456789abcdef"]
    (row,) = venvs.summarize([listed])
    assert row["packages"] == "./mypkg (./mypkg: /a/mypkg 0123456789abcdef)"


def test_a_pruned_folder_package_environment_is_said_with_its_sources(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `envs list` named each path entry's folder and digest, but `envs prune` said only
    # `removed KEY  Python 3.11.7  ./mypkg`: two removed `./mypkg` environments read alike.
    python = venvs.Interpreter("/usr/bin/python3", "3.11.7")
    for folder, digest in (("/a/mypkg", "0123456789abcdef"), ("/b/mypkg", "fedcba9876543210")):
        request = venvs.EnvRequest(
            python, ("./mypkg",), sources=(("./mypkg", f"{folder} {digest}"),)
        )
        made = _environment(envs_root, request.key(), time.time())
        (made / venvs.META).write_text(json.dumps({"request": request.to_dict()}))
    assert main(["envs", "prune", "--all", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    said = sorted(line.split("  ", 1)[1] for line in capsys.readouterr().out.splitlines())
    assert said == [
        "Python 3.11.7  ./mypkg (./mypkg: /a/mypkg 0123456789abcdef)",
        "Python 3.11.7  ./mypkg (./mypkg: /b/mypkg fedcba9876543210)",
    ]


def test_environments_of_two_days_of_a_bisect_by_date_are_told_apart(envs_root: Path) -> None:
    # `bisect --by-date` builds one environment of the same unpinned `packages` per day, its
    # cutoff in uv's settings (UV_EXCLUDE_NEWER): `envs list` showed ten rows reading
    # `packaging`, and the build's line `Python 3.11.7 + packaging`, whichever day each was.
    python = venvs.Interpreter("/usr/bin/python3", "3.11.7")
    for day in ("2022-12-06", "2022-12-07"):
        index = venvs.IndexConfig(uv_settings=(("UV_EXCLUDE_NEWER", f"{day}T23:59:59Z"),))
        request = venvs.EnvRequest(python, ("packaging",), index=index)
        assert venvs.describe_request(request) == (
            f"Python 3.11.7 + packaging (uploaded before {day}T23:59:59Z)"
        )
        folder = _environment(envs_root, request.key(), time.time())
        (folder / venvs.META).write_text(json.dumps({"request": request.to_dict()}))
    listed = sorted(venvs.list_envs(envs_root), key=lambda env: env.cutoff)
    assert [env.to_dict()["exclude_newer"] for env in listed] == [
        "2022-12-06T23:59:59Z",
        "2022-12-07T23:59:59Z",
    ]
    rows = [row["packages"] for row in venvs.summarize(listed)]
    assert rows == [
        "packaging (uploaded before 2022-12-06T23:59:59Z)",
        "packaging (uploaded before 2022-12-07T23:59:59Z)",
    ]


def test_prune_of_a_link_says_it_removes_the_link_and_keeps_its_environment(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said `removed 1 environment, <the target's size>`, the target untouched.
    target = _environment(tmp_path / "elsewhere", "0123456789abcdef", time.time())
    (target / "big").write_bytes(b"x" * 10_000)
    envs_root.mkdir()
    (envs_root / "0123456789abcdef").symlink_to(target)
    assert main(["envs", "prune", "--all", "--out", str(tmp_path / "o")]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("removed link 0123456789abcdef  Python ?  x==1"), said.out
    assert f"(a link: its environment at {target} kept)" in said.out
    assert "removed 1 environment, 0 B" in said.err, said.err
    assert (target / "big").exists()


def test_prune_of_a_link_whose_target_is_gone_says_so_once(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Such a link was never listed, so never pruned; listed now, its message names the gone
    # target once, never "its environment at ... kept".
    envs_root.mkdir()
    (envs_root / "0123456789abcdef").symlink_to(tmp_path / "gone")
    assert main(["envs", "prune", "--all", "--out", str(tmp_path / "o")]) == 0
    said = capsys.readouterr()
    gone = os.path.realpath(tmp_path / "gone")
    assert said.out.startswith("removed link 0123456789abcdef  Python ?  unreadable: "), said.out
    assert f"its target is gone, {envs_root / '0123456789abcdef'} (a link to {gone})" in said.out
    assert "kept" not in said.out, said.out
    assert "removed 1 environment, 0 B" in said.err, said.err
    assert not (envs_root / "0123456789abcdef").is_symlink()


def test_prune_of_a_link_to_an_environment_that_cannot_be_read_says_its_target_kept(
    envs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its message named the target only as `(a link to TARGET)`: nothing said the broken
    # folder outside was left alone, as every other link's `kept` does.
    broken = _environment(tmp_path / "elsewhere", "broken", time.time())
    (broken / venvs.META).write_text("{bad")
    envs_root.mkdir()
    (envs_root / "fedcba9876543210").symlink_to(broken)
    assert main(["envs", "prune", "--all", "--out", str(tmp_path / "o")]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("removed link fedcba9876543210  Python ?  unreadable: "), said.out
    assert said.out.rstrip().endswith(f"(a link to {broken})  (its target kept)"), said.out
    assert not (envs_root / "fedcba9876543210").is_symlink()
    assert (broken / venvs.META).read_text() == "{bad"
