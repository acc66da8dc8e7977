"""What `envs list` takes for an environment, of folders made by hand (no venv built)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from reprospec import venvs


def _environment(folder: Path, meta: str | None) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    if meta is not None:
        (folder / venvs.META).write_text(meta)
    return folder


def test_a_link_to_a_whole_or_a_broken_environment_is_listed_as_a_link(
    tmp_path: Path,
) -> None:
    """A link in the environments folder to an environment kept elsewhere is listed as it
    was; a link to a folder whose description cannot be read, and a key's link whose target
    is gone, were never listed (only the next run of their key removed them): each is listed
    as a link that cannot be read. A link of another name to nothing, or to a venv of the
    user's (a pyvenv.cfg, no reprospec-env.json), is not ours: it was listed and pruned."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    whole = _environment(tmp_path / "elsewhere" / "whole", meta)
    broken = _environment(tmp_path / "elsewhere" / "broken", "{bad")
    root = tmp_path / "envs"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(whole)
    (root / "fedcba9876543210").symlink_to(broken)
    (root / "1111111111111111").symlink_to(tmp_path / "gone")
    (root / "notes").symlink_to(tmp_path / "gone")
    (root / "other").symlink_to(tmp_path / "elsewhere")
    (root / "my-project-venv").symlink_to(_environment(tmp_path / "proj" / ".venv", None))
    (root / "broken-notes").symlink_to(broken)
    _environment(root / "aaaaaaaaaaaaaaaa", "{bad")
    listed = {env.key: env for env in venvs.list_envs(root)}
    assert sorted(listed) == [
        "0123456789abcdef",
        "1111111111111111",
        "aaaaaaaaaaaaaaaa",
        "fedcba9876543210",
    ]
    assert listed["0123456789abcdef"].packages == ("six",)
    assert not listed["0123456789abcdef"].unreadable
    assert listed["aaaaaaaaaaaaaaaa"].unreadable.startswith("its reprospec-env.json is not JSON")
    assert not listed["aaaaaaaaaaaaaaaa"].linked_to
    link = listed["fedcba9876543210"]
    assert link.unreadable.startswith("its reprospec-env.json is not JSON")
    assert link.linked_to == str(broken)
    assert link.listed().endswith(f"{root / 'fedcba9876543210'} (a link to {link.linked_to})")
    gone = listed["1111111111111111"]
    assert gone.unreadable == "its target is gone"
    assert gone.linked_to == str(tmp_path / "gone")
    assert gone.size_bytes == 0
    assert gone.last_used > 0


def test_prune_of_a_broken_link_removes_the_link_alone(tmp_path: Path) -> None:
    """A link to an environment that cannot be read, or whose target is gone, goes with
    prune as any other link: the link alone, its target untouched."""
    broken = _environment(tmp_path / "elsewhere" / "broken", "{bad")
    root = tmp_path / "envs"
    root.mkdir()
    (root / "fedcba9876543210").symlink_to(broken)
    (root / "1111111111111111").symlink_to(tmp_path / "gone")
    (root / "my-project-venv").symlink_to(_environment(tmp_path / "proj" / ".venv", None))
    removed = venvs.prune_envs(root)
    assert sorted(env.key for env in removed) == ["1111111111111111", "fedcba9876543210"]
    assert (root / "my-project-venv").is_symlink()
    assert all(env.size_bytes == 0 for env in removed)
    assert not (root / "fedcba9876543210").is_symlink()
    assert not (root / "1111111111111111").is_symlink()
    assert (broken / venvs.META).read_text() == "{bad"
    assert venvs.list_envs(root) == []


def test_one_whose_interpreter_is_gone_is_listed_with_its_python_and_packages(
    tmp_path: Path,
) -> None:
    """A description that reads, beside a bin/python whose interpreter was uninstalled: it
    was listed with Python `?` and no packages, though the description holds both, which
    decide whether to reinstall that python or prune it."""
    meta = {"request": {"python": {"version": "3.10.4"}, "packages": ["torch==2.1.0"]}}
    folder = tmp_path / "envs" / "0123456789abcdef"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(tmp_path / "gone" / "python3.10")
    (folder / venvs.META).write_text(json.dumps({**meta, "created": "2026-01-02T03:04:05+00:00"}))
    [env] = venvs.list_envs(tmp_path / "envs")
    assert env.python == "3.10.4"
    assert env.packages == ("torch==2.1.0",)
    assert env.created == "2026-01-02T03:04:05+00:00"
    gone = tmp_path / "gone" / "python3.10"
    assert env.unreadable == f"its bin/python links to {gone}, which is gone"
    assert env.listed().startswith("torch==2.1.0, unreadable: its bin/python links to ")


def test_a_chain_of_links_to_a_gone_interpreter_names_the_path_that_is_gone(
    tmp_path: Path,
) -> None:
    """A venv laid out as stdlib's (`python -> python3 -> /abs/python3`): it said `its
    bin/python links to python3, which is gone`, though python3 is there (a link itself)."""
    folder = tmp_path / "envs" / "0123456789abcdef"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python3").symlink_to(tmp_path / "gone" / "python3")
    (folder / "bin" / "python").symlink_to("python3")
    (folder / venvs.META).write_text(json.dumps({"request": {}}))
    [env] = venvs.list_envs(tmp_path / "envs")
    gone = tmp_path / "gone" / "python3"
    assert env.unreadable == f"its bin/python links to {gone}, which is gone"


def test_prune_of_a_link_removes_the_link_alone_and_frees_nothing(tmp_path: Path) -> None:
    """A listed link was renamed into .tmp, where rmtree (which refuses a link) and every
    later sweep left it, its target untouched, and its target's size was said freed."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    whole = _environment(tmp_path / "elsewhere" / "whole", meta)
    (whole / "big").write_bytes(b"x" * 10_000)
    root = tmp_path / "envs"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(whole)
    [listed] = venvs.list_envs(root)
    assert listed.linked_to == str(whole)
    [would] = venvs.prune_envs(root, dry_run=True)
    assert would.size_bytes == 0
    assert (root / "0123456789abcdef").is_symlink()
    [removed] = venvs.prune_envs(root)
    assert removed.size_bytes == 0
    assert removed.linked_to == str(whole)
    assert not (root / "0123456789abcdef").is_symlink()
    assert (whole / "big").stat().st_size == 10_000
    assert not (root / ".tmp").exists() or not any((root / ".tmp").iterdir())
    assert venvs.sweep_unfinished(root) == []


def test_prune_leaves_a_link_that_a_run_built_over_since_it_was_listed(tmp_path: Path) -> None:
    """`envs prune` lists, then prunes: a run that built the environment over the link in
    between (build._build, under the same build lock) made the link's `unlink` meet a
    folder, an IsADirectoryError traceback. It is left, to a later prune that sees it."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    whole = _environment(tmp_path / "elsewhere" / "whole", meta)
    root = tmp_path / "envs"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(whole)
    listed = venvs.list_envs(root)
    (root / "0123456789abcdef").unlink()
    _environment(root / "0123456789abcdef", meta)
    assert venvs.prune_envs(root, listed=listed) == []
    assert (root / "0123456789abcdef" / venvs.META).is_file()
    assert (whole / venvs.META).is_file()


def test_prune_passes_over_an_environment_gone_since_it_was_listed(tmp_path: Path) -> None:
    """Another prune removed it between this one's listing and its turn: the rename raised
    FileNotFoundError, a traceback. Gone already, it is not said removed by this one."""
    root = tmp_path / "envs"
    _environment(root / "0123456789abcdef", json.dumps({"request": {}}))
    listed = venvs.list_envs(root)
    [removed] = venvs.prune_envs(root)
    assert removed.key == "0123456789abcdef"
    assert venvs.prune_envs(root, listed=listed) == []


def test_prune_leaves_an_environment_used_or_built_again_since_it_was_listed(
    tmp_path: Path,
) -> None:
    """Only link vs folder was checked again under the lock: one a run used and let go
    while prune removed earlier ones (each rmtree of a torch env takes seconds), and one
    another prune removed and a run built again, were removed `--older-than` on the
    listing's stale last use."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    root = tmp_path / "envs"
    used = _environment(root / "0123456789abcdef", meta)
    rebuilt = _environment(root / "fedcba9876543210", meta)
    month_ago = time.time() - 30 * 86400
    for folder in (used, rebuilt):
        os.utime(folder / venvs.META, (month_ago, month_ago))
    listed = venvs.list_envs(root)
    assert all(env.last_used == month_ago for env in listed)
    (used / venvs.USED_BY).mkdir()
    (used / venvs.USED_BY / "spec.yaml").touch()  # a run's use, now
    again = _environment(tmp_path / "staged", meta)  # made before the old goes: a new inode
    os.utime(again / venvs.META, (month_ago, month_ago))
    shutil.rmtree(rebuilt)
    again.rename(rebuilt)
    assert venvs.prune_envs(root, older_than_s=86400, listed=listed) == []
    assert (used / venvs.META).is_file()
    assert (rebuilt / venvs.META).is_file()
    # A use since that leaves it still due is no reason to keep it (`--older-than 0`).
    [removed] = venvs.prune_envs(root, older_than_s=0, keys=["0123456789abcdef"], listed=listed)
    assert removed.key == "0123456789abcdef"
    assert not used.exists()


def test_a_relative_link_is_listed_at_its_absolute_target_and_json_says_it_is_a_link(
    tmp_path: Path,
) -> None:
    """`ln -s ../elsewhere/whole KEY`: prune said `its environment at ../elsewhere/whole
    kept`, relative to the environments folder, not to the user's folder; and JSON had no
    `linked_to`, a link read as an environment of its target's size."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    whole = _environment(tmp_path / "elsewhere" / "whole", meta)
    root = tmp_path / "envs"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(Path("..") / "elsewhere" / "whole")
    _environment(root / "aaaaaaaaaaaaaaaa", meta)
    listed = {env.key: env for env in venvs.list_envs(root)}
    link = listed["0123456789abcdef"]
    assert link.linked_to == str(whole)
    assert link.to_dict()["linked_to"] == str(whole)
    assert listed["aaaaaaaaaaaaaaaa"].to_dict()["linked_to"] is None


def test_a_link_under_a_linked_folder_is_said_as_the_user_names_the_folder(
    tmp_path: Path,
) -> None:
    """`proj -> data/proj`: a link `proj/envs/KEY -> ../shared/whole` was listed (and said
    kept by prune, and in JSON) at `data/proj/shared/whole`, a path the user never typed:
    `realpath` resolved the folders above the link too. One hop, the folders as named; a
    `..` out of an environments folder that is itself a link climbs out of its target."""
    meta = json.dumps({"request": {"python": {"version": "3.11.7"}, "packages": ["six"]}})
    _environment(tmp_path / "data" / "proj" / "shared" / "whole", meta)
    (tmp_path / "proj").symlink_to(tmp_path / "data" / "proj")
    root = tmp_path / "proj" / "envs"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(Path("..") / "shared" / "whole")
    [link] = venvs.list_envs(root)
    assert link.linked_to == str(tmp_path / "proj" / "shared" / "whole")
    [removed] = venvs.prune_envs(root, dry_run=True)
    assert removed.linked_to == str(tmp_path / "proj" / "shared" / "whole")
    # The environments folder a link itself: its `..` is its target's parent, not `proj`.
    _environment(tmp_path / "data" / "other" / "whole", meta)
    (tmp_path / "data" / "other" / "envs").mkdir()
    (tmp_path / "proj" / "linked").symlink_to(tmp_path / "data" / "other" / "envs")
    outer = tmp_path / "proj" / "linked"
    (outer / "fedcba9876543210").symlink_to(Path("..") / "whole")
    [through] = venvs.list_envs(outer)
    assert through.linked_to == str(tmp_path / "data" / "other" / "whole")


def test_a_gone_interpreter_under_a_linked_folder_is_named_by_the_path_the_link_gave(
    tmp_path: Path,
) -> None:
    """A `~/.pyenv` that is itself a link (to /data/pyenv): `realpath` resolved the folders
    above the missing interpreter too, so it was named under /data, not the pyenv path the
    venv links to and the user knows."""
    (tmp_path / "data" / "pyenv" / "versions").mkdir(parents=True)
    (tmp_path / "pyenv").symlink_to(tmp_path / "data" / "pyenv")
    gone = tmp_path / "pyenv" / "versions" / "3.10.13" / "bin" / "python3.10"
    folder = tmp_path / "envs" / "0123456789abcdef"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python3").symlink_to(gone)
    (folder / "bin" / "python").symlink_to("python3")
    (folder / venvs.META).write_text(json.dumps({"request": {}}))
    [env] = venvs.list_envs(tmp_path / "envs")
    assert env.unreadable == f"its bin/python links to {gone}, which is gone"


def test_a_loop_of_links_for_bin_python_is_said_without_a_hang(tmp_path: Path) -> None:
    """A loop was said as `links to .../bin/python, which is gone`: the link itself, there."""
    folder = tmp_path / "envs" / "0123456789abcdef"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python3").symlink_to("python")
    (folder / "bin" / "python").symlink_to("python3")
    (folder / venvs.META).write_text(json.dumps({"request": {}}))
    [env] = venvs.list_envs(tmp_path / "envs")
    assert env.unreadable == "its bin/python is a loop of links"


def test_a_relative_hop_to_a_gone_interpreter_is_said_with_its_dots_climbed(
    tmp_path: Path,
) -> None:
    """A relative target was joined to the link's folder as it was, `bin/../../../pythons/...`."""
    folder = tmp_path / "envs" / "0123456789abcdef"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python3").symlink_to("../../../pythons/3.10/bin/python3.10")
    (folder / "bin" / "python").symlink_to("python3")
    (folder / venvs.META).write_text(json.dumps({"request": {}}))
    [env] = venvs.list_envs(tmp_path / "envs")
    gone = tmp_path / "pythons" / "3.10" / "bin" / "python3.10"
    assert env.unreadable == f"its bin/python links to {gone}, which is gone"


def test_a_link_whose_target_climbs_out_of_a_loop_of_links_is_listed(tmp_path: Path) -> None:
    """`KEY -> loop/../gone`, `loop -> loop`: the climb out of `loop` was `Path.resolve`'s,
    which raised on the loop, and `envs list` stopped on a RuntimeError."""
    root = tmp_path / "envs"
    root.mkdir()
    (root / "loop").symlink_to("loop")
    (root / "0123456789abcdef").symlink_to("loop/../gone")
    [env] = venvs.list_envs(root)
    assert env.unreadable == "its target is gone"
    assert env.linked_to == str(root / "gone")
