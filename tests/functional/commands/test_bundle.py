"""`reprospec bundle RUN -o x.tar.gz` and `reprospec run x.tar.gz` end to end, real children."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import tarfile
import time
from pathlib import Path
from typing import Any

from tests.support.cli import ROOT, Cli, CliResult
from tests.support.files import tar_archive, tar_member
from tests.support.preload import imports, stamp_module

SPEC = """\
reprospec: 1
name: bundled
environment:
  workdir: ../app
  env: {MODE: "${{ matrix.mode }}"}
matrix:
  mode: [calm, crash]
command: python main.py --config conf.yaml
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: calm}
      outcome: pass
"""


MAIN = """\
import ctypes, os
import util
print(util.greeting(), open("conf.yaml").read().strip(), flush=True)
if os.environ["MODE"] == "crash":
    ctypes.string_at(0)
"""


# This checkout's reprospec, from another folder.
HERE = {"PYTHONPATH": str(ROOT)}


def _bundle(
    cli: Cli, archive: Path, out: Path, *more: str, env: dict[str, str] | None = None
) -> CliResult:
    """`reprospec bundle latest -o ARCHIVE --out OUT MORE...`: the store's newest run, packed."""
    return cli("bundle", "latest", "-o", str(archive), "--out", str(out), *more, env=env)


def _verify(cli: Cli, tmp_path: Path, archive: Path, out: Path) -> tuple[CliResult, Path]:
    """`bundle --verify` with TMPDIR a folder of its own, returned beside its result: the
    verify's temporary store is looked for there."""
    temp = tmp_path / "temp"
    temp.mkdir()
    return _bundle(cli, archive, out, "--verify", env={"TMPDIR": str(temp)}), temp


def _reruns_elsewhere(cli: Cli, archive: Path, elsewhere: Path, out: str = ".reprospec") -> None:
    """The recipient's rerun, in a new folder `elsewhere` with only the archive: its one
    cell reproduces."""
    elsewhere.mkdir()
    again = cli("run", str(archive), "--out", out, "--yes", cwd=elsewhere, env=HERE)
    assert again.code == 0, again.stdout + again.stderr
    assert "1/1 cell reproduced" in again.stdout


def _project(root: Path) -> Path:
    (root / "specs").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "app" / "main.py").write_text(MAIN)
    (root / "app" / "util.py").write_text("def greeting():\n    return 'hello'\n")
    (root / "app" / "conf.yaml").write_text("level: 3\n")
    (root / "app" / "unrelated.bin").write_bytes(b"\0" * 1000)
    (root / "specs" / "crash.yaml").write_text(SPEC)
    return root / "specs" / "crash.yaml"


def test_bundle_reruns_elsewhere_with_the_runs_options(tmp_path: Path, cli: Cli) -> None:
    spec = _project(tmp_path / "project")
    first = cli("run", str(spec), "--repeat", "2", "--out", str(tmp_path / "store"))
    assert first.code == 0, first.stderr
    run_id = next((tmp_path / "store" / "runs").iterdir()).name
    archive = tmp_path / "share" / "crash.tar.gz"
    packed = cli("bundle", run_id, "-o", str(archive), "--out", str(tmp_path / "store"))
    assert packed.code == 0, packed.stderr
    assert "3 of them from the workdir" in packed.stdout
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        assert all(m.isfile() for m in tar.getmembers())
    top = run_id
    assert {
        f"{top}/bundle.json",
        f"{top}/README.md",
        f"{top}/report.md",
        f"{top}/results.json",
        f"{top}/tree/specs/crash.yaml",
        f"{top}/tree/app/main.py",
        f"{top}/tree/app/util.py",
        f"{top}/tree/app/conf.yaml",
        f"{top}/logs/cells/mode=crash/2/stderr.log",
    } <= names
    assert f"{top}/tree/app/unrelated.bin" not in names  # not named by the command
    # The recipient has neither the project nor the store: only the archive.
    shutil.rmtree(tmp_path / "project")
    shutil.rmtree(tmp_path / "store")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # A bundle comes from a ticket: its plan is shown first, and without a terminal to ask
    # on nothing runs unless --yes says so.
    asked = cli("run", str(archive), "--out", str(elsewhere / "out"), cwd=elsewhere, env=HERE)
    assert asked.code == 2, asked.stderr
    assert "pass --yes" in asked.stderr
    assert "mode=calm" in asked.stderr
    assert not (elsewhere / "out" / "runs").exists()
    again = cli(
        "run", str(archive), "--out", str(elsewhere / "out"), "--yes", cwd=elsewhere, env=HERE
    )
    assert again.code == 0, again.stderr
    assert "2/2 cells reproduced" in again.stdout
    results = json.loads(next((elsewhere / "out" / "runs").glob("*/results.json")).read_text())
    assert [len(c["attempts"]) for c in results["cells"]] == [2, 2]  # --repeat 2 came along
    crashed = results["cells"][1]["attempts"][0]["logs"]
    log = next((elsewhere / "out" / "runs").iterdir()) / crashed / "stdout.log"
    assert log.read_text().startswith("hello level: 3")
    unpacked = sorted((elsewhere / "out" / "bundles").iterdir())
    assert len(unpacked) == 1
    assert (unpacked[0] / ".complete").is_file()
    # A second run reuses the unpacked bundle.
    third = cli(
        "run",
        str(archive),
        "--out",
        str(elsewhere / "out"),
        "-m",
        "mode=calm",
        "-y",
        cwd=elsewhere,
        env=HERE,
    )
    assert third.code == 0, third.stderr
    assert f"bundle unpacked in {unpacked[0]}" in third.stderr
    assert sorted((elsewhere / "out" / "bundles").iterdir()) == unpacked


def test_run_refuses_a_damaged_or_foreign_archive_cleanly(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip at all")
    junk = cli("run", str(tmp_path / "junk.tar.gz"))
    assert junk.code == 2
    assert "not a .tar.gz archive" in junk.stderr
    assert "Traceback" not in junk.stderr
    foreign = tar_archive(tmp_path / "foreign.tar.gz", tar_member("project/readme.txt", b"hi"))
    other = cli("run", str(foreign))
    assert other.code == 2
    assert "not a reprospec bundle" in other.stderr
    # Refused, and not left unpacked under bundles/ (it stayed there, marked complete).
    assert not list(tmp_path.rglob(".complete"))
    assert not list(tmp_path.rglob("readme.txt"))
    escaping = tar_archive(
        tmp_path / "escape.tar.gz",
        tar_member("b/bundle.json", json.dumps({"format": 1, "spec": "../../etc/passwd"}).encode()),
    )
    refused = cli("run", str(escaping))
    assert refused.code == 2
    assert "outside the bundle" in refused.stderr


def test_bundle_needs_a_tar_gz_name_and_a_run(tmp_path: Path, cli: Cli) -> None:
    missing = cli(
        "bundle", "no-such-run", "-o", str(tmp_path / "x.tar.gz"), "--out", str(tmp_path / "out")
    )
    assert missing.code == 2
    assert "no run 'no-such-run'" in missing.stderr
    spec = _project(tmp_path / "p")
    assert cli("run", str(spec), "-m", "mode=calm").code == 0
    run_dir = next((tmp_path / "out" / "runs").iterdir())
    wrong = cli(
        "bundle", str(run_dir), "-o", str(tmp_path / "x.zip"), "--out", str(tmp_path / "out")
    )
    assert wrong.code == 2
    assert "a bundle is a .tar.gz" in wrong.stderr


RAISES = """\
import sys
import helper
lr = float(sys.argv[1])
open(sys.argv[2]).read()
for step in range(1, 4):
    print(f"train step {step}/3", flush=True)
helper.check(lr)
"""

OUTSIDE_SPEC = """\
reprospec: 1
name: outside
environment:
  workdir: ../run
command: python ../raises.py 3 DATA
markers: [{preset: steps}]
expect:
  outcome: error
  exception: ValueError
  phase: train
  step: 3
"""


def test_a_script_named_from_outside_the_workdir_goes_along(tmp_path: Path, cli: Cli) -> None:
    # The D6 report: run in `run/`, the command runs `../raises.py`, which imports its
    # neighbour `helper.py`; the bundle carried neither, nor the (empty) workdir itself.
    project = tmp_path / "project"
    for folder in ("run", "specs"):
        (project / folder).mkdir(parents=True)
    (project / "raises.py").write_text(RAISES)
    (project / "helper.py").write_text(
        "def check(lr):\n"
        "    if lr > 1.0:\n"
        "        raise ValueError(f'learning rate {lr} out of range')\n"
    )
    data = tmp_path / "machine" / "data.txt"  # named by an absolute path: not carried
    data.parent.mkdir()
    data.write_text("shared\n")
    spec = project / "specs" / "r.yaml"
    spec.write_text(OUTSIDE_SPEC.replace("DATA", str(data)))
    store = tmp_path / "store"
    first = cli("run", str(spec), "--out", str(store))
    assert first.code == 0, first.stdout + first.stderr
    archive = tmp_path / "r.tar.gz"
    packed = _bundle(cli, archive, store)
    assert packed.code == 0, packed.stderr
    assert "0 of them from the workdir and 2 named from outside it" in packed.stdout
    assert "not carried, named by an absolute path" in packed.stderr
    assert str(data) in packed.stderr
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    top = next(iter(members)).split("/")[0]
    assert members[f"{top}/tree/run"].isdir()
    assert {f"{top}/tree/raises.py", f"{top}/tree/helper.py", f"{top}/tree/specs/r.yaml"} <= set(
        members
    )
    assert not any(".." in name.split("/") for name in members)
    # The recipient has the archive and the data file the spec names by its absolute path.
    shutil.rmtree(project)
    shutil.rmtree(store)
    elsewhere = tmp_path / "elsewhere"
    _reruns_elsewhere(cli, archive, elsewhere, str(elsewhere / "out"))


def test_an_absolute_workdir_reruns_under_a_relative_out_and_as_its_readme_says(
    tmp_path: Path, cli: Cli
) -> None:
    # The spec names its workdir by an absolute path (every amplified.yaml does). Under
    # the default relative `--out` the rerun looked for tree/specs/.reprospec/bundles/...;
    # the README's own spec rerun looked in the sender's folder, and its command line
    # began with a `cd` there, "run in" the spec's folder of the tree.
    project = tmp_path / "project"
    (project / "prog").mkdir(parents=True)
    (project / "specs").mkdir()
    (project / "prog" / "boom.py").write_text("raise ValueError('boom')\n")
    spec = project / "specs" / "abs.yaml"
    spec.write_text(
        f"reprospec: 1\nname: absw\nenvironment: {{workdir: {project / 'prog'}}}\n"
        "command: python boom.py\nexpect: {outcome: error, exception: ValueError}\n"
    )
    store = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(store)).code == 0
    archive = tmp_path / "abs.tar.gz"
    assert _bundle(cli, archive, store).code == 0
    shutil.rmtree(project)  # the recipient has only the archive
    elsewhere = tmp_path / "elsewhere"
    _reruns_elsewhere(cli, archive, elsewhere)
    unpacked = elsewhere / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    readme = (top / "README.md").read_text()
    words = shlex.split(_rerun_line(readme).replace("$PWD", str(unpacked)))
    mine = cli(*words, "--out", str(tmp_path / "mine"), cwd=unpacked, env=HERE)
    assert mine.code == 0, mine.stderr
    plain = re.search(r"is `([^`]+)`, run in `([^`]+)`", readme)
    assert plain is not None, readme
    assert plain.groups() == ("python boom.py", f"{top.name}/tree/prog/")


def test_a_run_whose_listed_file_is_gone_since_is_refused_not_packed_unrunnable(
    tmp_path: Path, cli: Cli
) -> None:
    # `files: [data.cvs]`, gone since the run: the bundle was written, exit 0, a warning
    # naming it, and its tree/spec.yaml still listed it, so `reprospec run b.tar.gz`
    # elsewhere was refused ("files[0]: 'data.cvs' not found in the workdir"), exit 2.
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.cvs").write_text("a,b\n")
    (project / "read.py").write_text("open('data.cvs').read()\nraise ValueError('x')\n")
    spec = project / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: listed\ncommand: python read.py\nfiles: [data.cvs]\n"
        "expect: {outcome: error, exception: ValueError}\n"
    )
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    (project / "data.cvs").unlink()
    archive = tmp_path / "s.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 2, packed.stderr
    assert "Traceback" not in packed.stderr
    assert f"files[0] 'data.cvs' (in {project})" in packed.stderr
    assert "is gone since run" in packed.stderr
    assert "does not validate" in packed.stderr  # why: what its reader's run would say
    assert not archive.exists()
    # Put back, the same run packs, and its archive runs where the project is not.
    (project / "data.cvs").write_text("a,b\n")
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    shutil.rmtree(project)
    elsewhere = tmp_path / "elsewhere"
    _reruns_elsewhere(cli, archive, elsewhere)


def test_the_rerun_command_it_prints_is_quoted_for_a_shell(tmp_path: Path, cli: Cli) -> None:
    # `wrote b b.tgz: ...; rerun it with: reprospec run b b.tgz`: pasted, that is two files.
    (tmp_path / "ok.py").write_text("print('fine')\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: quoted\ncommand: python ok.py\n")
    assert cli("run", str(spec)).code == 0
    archive = tmp_path / "my runs" / "b b.tar.gz"
    packed = _bundle(cli, archive, tmp_path / "out")
    assert packed.code == 0, packed.stderr
    assert f"rerun it with: reprospec run {shlex.quote(str(archive))}\n" in packed.stdout


def test_a_run_whose_spec_and_program_are_gone_is_refused_not_packed_broken(
    tmp_path: Path, cli: Cli
) -> None:
    # capture's verify run ran in a copy since removed: its bundle was written (exit 0)
    # without the script, and its rerun was an infra-error, `can't open file 'crash.py'`.
    project = tmp_path / "copy"
    project.mkdir()
    (project / "crash.py").write_text("import ctypes\nctypes.string_at(0)\n")
    spec = project / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: gone\ncommand: python crash.py\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    shutil.rmtree(project)
    archive = tmp_path / "b.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 2, packed.stderr
    assert "Traceback" not in packed.stderr
    assert f"the spec file {spec} is gone" in packed.stderr
    assert "(crash.py)" in packed.stderr
    assert "reprospec run SPEC" in packed.stderr
    assert not archive.exists()


def test_a_run_whose_spec_is_gone_and_read_no_file_is_still_packed(
    tmp_path: Path, cli: Cli
) -> None:
    # `command: [true]` names no file of its folder: the bundle reruns without the folder.
    project = tmp_path / "copy"
    project.mkdir()
    spec = project / "s.yaml"
    spec.write_text("reprospec: 1\nname: bare\ncommand: [true]\n")
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    shutil.rmtree(project)
    archive = tmp_path / "b.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    assert f"the spec file {spec} is gone: the bundle has no workdir files" in packed.stderr
    assert archive.is_file()


def test_a_gone_spec_whose_program_is_still_there_is_refused_saying_so(
    tmp_path: Path, cli: Cli
) -> None:
    # The program lives outside the spec's folder: it is not gone with it, and the refusal
    # said it was.
    code = tmp_path / "code"
    code.mkdir()
    (code / "app.py").write_text("raise SystemExit(3)\n")
    project = tmp_path / "spec"
    project.mkdir()
    spec = project / "s.yaml"
    spec.write_text("reprospec: 1\nname: away\ncommand: python ../code/app.py\n")
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code in (0, 1)
    shutil.rmtree(project)
    packed = _bundle(cli, tmp_path / "b.tar.gz", out)
    assert packed.code == 2, packed.stderr
    assert f"and a bundle finds the program's files the run ran ({code / 'app.py'})" in (
        packed.stderr
    )


# A program that opens files no command word names: `../shared/cfg.json` beside its
# workdir, and `data.txt` in it, by a name it builds. Neither is carried by a bundle.
READS_UNNAMED = """\
import json
cfg = json.load(open("../shared/cfg.json"))
rows = open("da" + "ta.txt").read().split()
raise KeyError(cfg["key"] + str(len(rows)))
"""


def _reads_unnamed(root: Path, *, listed: bool) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "shared").mkdir()
    (root / "shared" / "cfg.json").write_text('{"key": "missing-"}\n')
    (root / "app" / "main.py").write_text(READS_UNNAMED)
    (root / "app" / "data.txt").write_text("a b c\n")
    spec = root / "unnamed.yaml"
    spec.write_text(
        "reprospec: 1\nname: unnamed\nenvironment: {workdir: app}\ncommand: python main.py\n"
        + ("files: [data.txt]\n" if listed else "")
        + "expect: {outcome: error, exception: KeyError, message: missing-3}\n"
    )
    return spec


def test_verify_names_the_file_a_bundle_lacks_and_exits_1(tmp_path: Path, cli: Cli) -> None:
    # The archive looked complete; its recipient learnt otherwise from a
    # FileNotFoundError and `not-reproduced`. --verify reruns it away from the tree first.
    spec = _reads_unnamed(tmp_path / "project", listed=False)
    # The config moved into the workdir: only data.txt is missing from the bundle.
    (tmp_path / "project" / "shared" / "cfg.json").rename(tmp_path / "project/app/cfg.json")
    (tmp_path / "project" / "app" / "main.py").write_text(
        READS_UNNAMED.replace("../shared/cfg.json", "cfg.json")
    )
    spec.write_text(spec.read_text() + "files: [cfg.json]\n")
    out = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "b.tgz"
    checked, temp = _verify(cli, tmp_path, archive, out)
    assert checked.code == 1, checked.stderr
    assert "Traceback" not in checked.stderr
    assert "[1/1] default #1: error exit 1 FileNotFoundError" in checked.stderr
    assert (
        "verify: default: not as in the run: the run was reproduced (error exit 1 KeyError), "
        "the bundle's rerun not-reproduced (error exit 1 FileNotFoundError)"
    ) in checked.stdout
    lacks = tmp_path / "project" / "app" / "data.txt"
    assert f"the bundle lacks data.txt ({lacks})" in checked.stdout
    assert "list data.txt in the spec's `files`" in checked.stdout
    assert "the archive is kept as written" in checked.stdout
    assert archive.is_file()
    # The verify's run is in a temporary store, kept for its report; the user's store
    # holds the one run it had.
    kept = list(temp.glob("reprospec-verify-*/out/runs/*/report.md"))
    assert len(kept) == 1
    assert f"verify: its run: {kept[0]}" in checked.stdout
    assert len(list((out / "runs").iterdir())) == 1


def test_verify_of_a_rerun_that_fails_otherwise_with_the_same_verdict_exits_1(
    tmp_path: Path, cli: Cli
) -> None:
    # `expect: {outcome: error}` names no exception, so the rerun's
    # FileNotFoundError (the bundle lacks data/cfg.json) is `reproduced` as the run's
    # RuntimeError was: the verdicts alone said "as in the run" and "verified", exit 0.
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "cfg.json").write_text('{"a": 1}\n')
    (project / "job.py").write_text(
        'import json\ncfg = json.load(open("data/cfg.json"))\n'
        "raise RuntimeError(f\"boom {cfg['a']}\")\n"
    )
    spec = project / "spec.yaml"
    spec.write_text("reprospec: 1\nname: sa\ncommand: python job.py\nexpect: {outcome: error}\n")
    out = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "s.tgz"
    checked, _ = _verify(cli, tmp_path, archive, out)
    assert checked.code == 1, checked.stdout + checked.stderr
    assert "[1/1] default #1: error exit 1 FileNotFoundError" in checked.stderr
    assert (
        "verify: default: not as in the run: the run was reproduced (error exit 1 RuntimeError), "
        "the bundle's rerun reproduced (error exit 1 FileNotFoundError); it ended in "
        "error:FileNotFoundError, as no attempt of the run did"
    ) in checked.stdout
    lacks = project / "data" / "cfg.json"
    assert f"the bundle lacks data/cfg.json ({lacks}), which the program looked for" in (
        checked.stdout
    )
    assert "0/1 cell of run " in checked.stdout
    assert "verified" not in checked.stdout.replace("not verified", "")
    # With the file listed the bundle carries it, and the rerun ends as the run did.
    spec.write_text(spec.read_text() + "files: [data/cfg.json]\n")
    assert cli("run", str(spec), "--out", str(out)).code == 0
    again = _bundle(cli, archive, out, "--verify", "--force")
    assert again.code == 0, again.stdout + again.stderr
    assert "verify: default: as in the run: reproduced (error exit 1 RuntimeError)" in again.stdout


def test_verify_of_a_file_outside_the_workdir_says_files_cannot_hold_it(
    tmp_path: Path, cli: Cli
) -> None:
    spec = _reads_unnamed(tmp_path / "project", listed=True)
    out = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "b.tgz"
    checked = _bundle(cli, archive, out, "--verify")
    assert checked.code == 1, checked.stderr
    cfg = tmp_path / "project" / "shared" / "cfg.json"
    assert f"the bundle lacks ../shared/cfg.json ({cfg})" in checked.stdout
    assert "`files` holds only the workdir's files: move ../shared/cfg.json" in checked.stdout


def test_a_complete_bundle_verifies_exit_0_and_names_a_read_by_absolute_path(
    tmp_path: Path, cli: Cli
) -> None:
    spec = _reads_unnamed(tmp_path / "project", listed=True)
    # Read by its absolute path: still on this machine, so the rerun finds it.
    settings = tmp_path / "elsewhere" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"key": "missing-"}\n')
    main = tmp_path / "project" / "app" / "main.py"
    main.write_text(READS_UNNAMED.replace("../shared/cfg.json", str(settings)))
    out = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "b.tgz"
    checked, temp = _verify(cli, tmp_path, archive, out)
    assert checked.code == 0, checked.stdout + checked.stderr
    assert "verify: default: as in the run: reproduced (error exit 1 KeyError)" in checked.stdout
    assert f"verified {archive}: 1/1 cell of run " in checked.stdout
    assert "it read 1 file outside it" in checked.stdout
    assert (
        f"reprospec: warning: bundle --verify: the program read {settings} by its path, "
        "outside the bundle"
    ) in checked.stderr
    # Nothing else this machine's interpreter or the engine opened is named.
    assert checked.stderr.count("by its path, outside the bundle") == 1
    assert not list(temp.glob("reprospec-verify-*"))  # removed when it reproduced
    assert len(list((out / "runs").iterdir())) == 1
    # The archive is there: a second bundle to its name is refused, exit 2, the archive
    # as it was, where it was written over without a word (lo32 item 4); capture's words.
    before = archive.read_bytes()
    refused = _bundle(cli, archive, out)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert refused.stderr == f"reprospec: {archive} exists; pass --force to overwrite it\n"
    assert archive.read_bytes() == before
    # Without --verify, a line says it was not verified and how to verify it: the command as
    # given, its --out kept (without it, the run id was looked for in .reprospec),
    # and --force, without which the archive it wrote refused it; the run by its id, which
    # `latest` stops naming once another run has run.
    plain = _bundle(cli, archive, out, "--force")
    assert plain.code == 0, plain.stderr
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    assert (
        f"not verified: add --verify to rerun it unpacked away from this tree (reprospec "
        f"bundle {run_id} -o {archive} --out {out} --force --verify)"
    ) in plain.stdout


def _setting_project(root: Path) -> Path:
    """A program that segfaults when its config says `unsafe` and passes otherwise, the
    config read through a local module; the spec expects the segfault."""
    root.mkdir()
    (root / "conf.json").write_text('{"unsafe": false}\n')
    (root / "settings.py").write_text(
        "import json\nUNSAFE = json.load(open('conf.json'))['unsafe']\n"
    )
    (root / "app.py").write_text(
        "import ctypes\nimport settings\nprint('step 1', flush=True)\n"
        "if settings.UNSAFE:\n    ctypes.string_at(0)\n"
    )
    spec = root / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: edited\ncommand: python app.py\nfiles: [conf.json]\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    return spec


def _packed(archive: Path, name: str) -> str:
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"/tree/{name}"))
        handle = tar.extractfile(member)
        assert handle is not None
        return handle.read().decode()


def test_a_run_whose_program_changed_since_is_refused_not_packed_as_it_is_now(
    tmp_path: Path, cli: Cli
) -> None:
    # A passing run (config `unsafe: false`), the config edited back to `true`:
    # bundle packed today's config, exit 0, no word, and the bundle of a `pass` crashed
    # wherever it was rerun. The run recorded its files' digests; they are checked now.
    project = tmp_path / "project"
    spec = _setting_project(project)
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--out", str(out))
    assert ran.code == 1, ran.stdout + ran.stderr  # passed: not reproduced
    run_id = ran.latest_run().name
    archive = tmp_path / "b.tar.gz"
    (project / "conf.json").write_text('{"unsafe": true}\n')
    packed = cli("bundle", run_id, "-o", str(archive), "--out", str(out))
    assert packed.code == 2, packed.stderr
    assert "Traceback" not in packed.stderr
    assert f"not as run {run_id} read them" in packed.stderr
    assert f"conf.json (changed) (in {project})" in packed.stderr
    assert f"reprospec run {spec}) and bundle that run" in packed.stderr
    assert not archive.exists()
    assert not list(tmp_path.glob(".b.tar.gz.*"))  # no half-written archive either
    # The program's own source, edited (a "fix"), and a local module it imported, gone.
    (project / "conf.json").write_text('{"unsafe": false}\n')
    (project / "app.py").write_text("import settings\nprint('step 1', flush=True)\n")
    (project / "settings.py").unlink()
    packed = cli("bundle", run_id, "-o", str(archive), "--out", str(out))
    assert packed.code == 2, packed.stderr
    assert "app.py (changed), settings.py (gone) (in" in packed.stderr
    assert "conf.json" not in packed.stderr  # as the run read it again
    assert not archive.exists()
    # Put back as they were, the same run packs, holding what the run read.
    _setting_project(tmp_path / "again")
    for name in ("app.py", "settings.py"):
        shutil.copy(tmp_path / "again" / name, project / name)
    packed = cli("bundle", run_id, "-o", str(archive), "--out", str(out))
    assert packed.code == 0, packed.stderr
    assert "not as run" not in packed.stderr
    assert _packed(archive, "conf.json") == '{"unsafe": false}\n'


def test_a_program_that_writes_its_own_input_can_be_bundled_with_as_now(
    tmp_path: Path, cli: Cli
) -> None:
    # A program that resumes from state.json and saves it back changes it in
    # every run; every run was refused, and the advice (run again, bundle that run) looped.
    project = tmp_path / "project"
    project.mkdir()
    (project / "state.json").write_text('{"step": 0}\n')
    (project / "train.py").write_text(
        "import json\nstate = json.load(open('state.json'))\nstate['step'] += 1\n"
        "json.dump(state, open('state.json', 'w'))\n"
        "raise ValueError(f\"diverged at step {state['step']}\")\n"
    )
    spec = project / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: ck\ncommand: python train.py\nfiles: [state.json]\n"
        "expect: {outcome: error, exception: ValueError}\n"
    )
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "b.tar.gz"
    refused = _bundle(cli, archive, out)
    assert refused.code == 2, refused.stderr
    assert "state.json (changed)" in refused.stderr
    assert "The run itself last wrote state.json (modified while it ran)" in refused.stderr
    assert "bundle --as-now" in refused.stderr
    assert "and bundle that run" not in refused.stderr  # the advice that looped
    assert not archive.exists()
    packed = _bundle(cli, archive, out, "--as-now")
    assert packed.code == 0, packed.stderr
    assert (
        f"reprospec: warning: --as-now: state.json (in {project}) was written by the run "
        "itself: it is packed as the run left it"
    ) in packed.stderr
    assert _packed(archive, "state.json") == '{"step": 1}'
    # Edited after the run: still refused by default, not said to be the run's write, and
    # --as-now packs it saying it changed since.
    (project / "state.json").write_text('{"step": 7}\n')
    os.utime(project / "state.json", (time.time() + 60, time.time() + 60))
    # (--force: the archive of the first is there)
    refused = _bundle(cli, archive, out, "--force")
    assert refused.code == 2, refused.stderr
    assert "The run itself" not in refused.stderr
    assert "(or pack them as they are now with bundle --as-now)" in refused.stderr
    packed = _bundle(cli, archive, out, "--as-now", "--force")
    assert packed.code == 0, packed.stderr
    assert "state.json (in" in packed.stderr
    assert "changed since the run: it is packed as it is now" in packed.stderr
    assert _packed(archive, "state.json") == '{"step": 7}\n'


def test_a_run_whose_digests_cannot_be_checked_is_packed_saying_so(
    tmp_path: Path, cli: Cli
) -> None:
    # The store's key gone (the run folder moved away from it): the recorded digests cannot
    # be compared with today's files, which are packed, and the warning says they are.
    spec = _setting_project(tmp_path / "project")
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 1
    (out / "digest.key").unlink()
    archive = tmp_path / "b.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    assert "whether the program's files changed since run" in packed.stderr
    assert "they are packed as they are now" in packed.stderr
    assert archive.is_file()


def test_a_run_that_recorded_no_digest_of_a_file_packs_it_as_it_is(
    tmp_path: Path, cli: Cli
) -> None:
    # A file the command names that is not a source or a `files` input (a log it writes)
    # is named in the record, not digested: it is packed as it is, unchecked, no word.
    project = tmp_path / "project"
    project.mkdir()
    (project / "w.py").write_text("import sys\nopen(sys.argv[1], 'a').write('ran\\n')\n")
    (project / "run.log").write_text("")
    spec = project / "s.yaml"
    spec.write_text("reprospec: 1\nname: logged\ncommand: python w.py run.log\n")
    out = tmp_path / "out"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    results = json.loads((next((out / "runs").iterdir()) / "results.json").read_text())
    assert results["environment"]["program_files"]["named"] == ["run.log"]
    (project / "run.log").write_text("ran\nran later\n")
    archive = tmp_path / "b.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    assert "warning" not in packed.stderr
    assert _packed(archive, "run.log") == "ran\nran later\n"


def test_a_run_of_capture_is_refused_its_shell_variables_are_in_no_bundle(
    tmp_path: Path, cli: Cli
) -> None:
    # capture's own first run crashed with APP_MODE from the capturing shell;
    # its spec is the draft without it (capture writes it into the spec after), so its
    # bundle, exit 0, passed wherever it was rerun while its report said SIGSEGV.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "app.py").write_text(
        "import ctypes, os\nprint('train step 1/1', flush=True)\n"
        "if os.environ.get('APP_MODE') == 'fast':\n    ctypes.string_at(0)\n"
    )
    out = tmp_path / "out"
    captured = cli(
        "capture", "-o", "spec.yaml", "--out", str(out), "--", "python", "app.py",
        cwd=workdir, env={"APP_MODE": "fast"},
    )  # fmt: skip
    assert captured.code == 0, captured.stdout + captured.stderr
    assert "the failure needs APP_MODE" in captured.stdout
    # In the order they began, as the store recorded them: a run id's time, and results.json's
    # `started`, are to the second, and a verify's run can begin in its first run's second.
    with contextlib.closing(sqlite3.connect(out / "results.db")) as db:
        ids = [row[0] for row in db.execute("SELECT run_id FROM runs ORDER BY rowid")]
    runs = [out / "runs" / run_id for run_id in ids]
    first = runs[0].name  # capture's own run, of the draft
    assert "APP_MODE" not in (runs[0] / "spec.yaml").read_text()
    archive = tmp_path / "cap.tar.gz"
    for run in (first, runs[-1].name):  # its first run, and the verify's last
        packed = cli("bundle", run, "-o", str(archive), "--out", str(out), env={"APP_MODE": ""})
        assert packed.code == 2, packed.stderr
        assert "Traceback" not in packed.stderr
        assert f"run {run} is one of capture's own runs" in packed.stderr
        assert not archive.exists()
    spec = workdir / "spec.yaml"
    first_said = cli("bundle", first, "-o", str(archive), "--out", str(out))
    assert f"(reprospec run {spec}) and bundle that run" in first_said.stderr
    # As it says: the spec run, from a shell without the variable, and that run bundled.
    ran = cli("run", str(spec), "--out", str(out), env={"APP_MODE": ""})
    assert ran.code == 0, ran.stdout + ran.stderr
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    packed_spec = _packed(archive, "spec.yaml")
    # Set by its failing cell; the control cell, which passed without it, sets it empty.
    assert "APP_MODE: ${{ matrix.app_mode }}" in packed_spec
    assert "app_mode: [fast, null]" in packed_spec


def test_each_cells_own_script_goes_along_and_reruns(tmp_path: Path, cli: Cli) -> None:
    # The files of a workdir were read from its first cell alone, so the bundle of
    # `python ${{ matrix.prog }}.py` carried ok.py and not crash.py, whose cell's rerun was
    # infra-error (can't open file); materialize's workdir copy lacked it the same way.
    project = tmp_path / "project"
    project.mkdir()
    (project / "ok.py").write_text("print('fine')\n")
    (project / "crash.py").write_text("import ctypes\nctypes.string_at(0)\n")
    spec = project / "pick.yaml"
    spec.write_text(
        "reprospec: 1\nname: pick\nmatrix: {prog: [ok, crash]}\n"
        "command: python ${{ matrix.prog }}.py\n"
        "expect: {outcome: crash, signal: SIGSEGV, cases: [{when: {prog: ok}, outcome: pass}]}\n"
    )
    out = tmp_path / "store"
    assert cli("run", str(spec), "--out", str(out)).code == 0
    archive = tmp_path / "b.tgz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    assert "2 of them from the workdir" in packed.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = cli("run", str(archive), "--out", ".reprospec", "--yes", cwd=elsewhere, env=HERE)
    assert again.code == 0, again.stdout + again.stderr
    assert "2/2 cells reproduced" in again.stdout
    made = cli("materialize", str(spec), "-o", str(tmp_path / "mat"))
    assert made.code == 0, made.stderr
    assert sorted(p.name for p in (tmp_path / "mat" / "workdirs" / "1").iterdir()) == [
        "crash.py",
        "ok.py",
    ]


def test_a_run_made_with_preload_is_verified_and_rerun_with_it(tmp_path: Path, cli: Cli) -> None:
    # `run --preload MOD` forked its attempts from a server that imported MOD, which the
    # spec does not say: the archive reran them fresh (`run FILE`, `bundle --verify`), a
    # rerun of another process start than the run's. The manifest carries it now.
    lib = stamp_module(tmp_path)
    spec = _project(tmp_path / "project")
    spec.write_text(SPEC.replace("  env: {", f"  env: {{PYTHONPATH: {json.dumps(str(lib))}, "))
    out = tmp_path / "store"
    first = cli("run", str(spec), "--out", str(out), "--preload", "stamp")
    assert first.code == 0, first.stderr
    # A server per environment: its two cells' (MODE differs).
    assert imports(lib) == 2
    archive = tmp_path / "b.tgz"
    checked, _ = _verify(cli, tmp_path, archive, out)
    assert checked.code == 0, checked.stdout + checked.stderr
    # The verify's rerun of the failing cell forked from a server of its own: one import.
    assert imports(lib) == 3
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        manifest = json.loads(_read(tar, f"{top}/bundle.json"))
        readme = _read(tar, f"{top}/README.md")
    assert manifest["options"]["preload"] == ["stamp"]
    assert " --preload stamp" in readme
    # The recipient's `run FILE` forks as the run did; its own --preload wins.
    again = cli("run", str(archive), "--out", str(tmp_path / "again"), "--yes")
    assert again.code == 0, again.stdout + again.stderr
    results = json.loads(next((tmp_path / "again" / "runs").glob("*/results.json")).read_text())
    assert results["options"]["preload"] == ["stamp"]
    assert {a["launch"] for c in results["cells"] for a in c["attempts"]} == {"forked"}
    fresh = cli("run", str(archive), "--out", str(tmp_path / "fresh"), "--yes", "--preload", "none")
    assert fresh.code == 0, fresh.stdout + fresh.stderr
    results = json.loads(next((tmp_path / "fresh" / "runs").glob("*/results.json")).read_text())
    assert {a["launch"] for c in results["cells"] for a in c["attempts"]} == {"fresh"}


def _read(tar: tarfile.TarFile, name: str) -> str:
    member = tar.extractfile(name)
    assert member is not None, name
    return member.read().decode()


DOCKERFILE = """\
FROM reprospec-runner:latest
# The context's files the build takes: one named across a continued line, a folder.
COPY greeting.txt \\
  /opt/
COPY ["conf", "/etc/app/"]
COPY --from=reprospec-runner:latest /etc/hostname /tmp/
"""


def _docker_project(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose spec names its own Dockerfile (DOCKERFILE, which COPYs greeting.txt
    and conf/), the two files it copies written: the spec and the Dockerfile's folder."""
    spec = _project(tmp_path / "project")
    docker = tmp_path / "project" / "docker"
    (docker / "conf").mkdir(parents=True)
    (docker / "Dockerfile").write_text(DOCKERFILE)
    (docker / "greeting.txt").write_text("hello\n")
    (docker / "conf" / "app.cfg").write_text("level = 3\n")
    spec.write_text(
        SPEC.replace(
            "  workdir: ../app\n", "  workdir: ../app\n  dockerfile: ../docker/Dockerfile\n"
        )
    )
    return spec, docker


def _bundled(cli: Cli, tmp_path: Path, spec: Path) -> tuple[CliResult, dict[str, str]]:
    """The spec run and bundled: bundle's result, and each file of the archive's tree/ (by
    its path there) with its text."""
    out = tmp_path / "store"
    first = cli("run", str(spec), "--out", str(out))
    assert first.code == 0, first.stdout + first.stderr
    archive = tmp_path / "b.tgz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tree = f"{top}/tree/"
        files = {
            name.removeprefix(tree): extracted.read().decode(errors="replace")
            for name in tar.getnames()
            if name.startswith(tree) and (extracted := tar.extractfile(name)) is not None
        }
    return packed, files


def test_the_specs_dockerfile_and_what_it_copies_go_along(tmp_path: Path, cli: Cli) -> None:
    # A docker run of a spec with `environment.dockerfile` was bundled without the
    # Dockerfile, exit 0: its rerun anywhere was infra-error (`environment.dockerfile not
    # found`), which only --verify told. The local runner does not build it, so this runs
    # without an engine; what the archive holds is what a docker rerun builds from.
    spec, docker = _docker_project(tmp_path)
    (docker / "conf" / ".netrc").write_text("machine x password y\n")
    (docker / "unused.txt").write_text("not copied\n")

    packed, files = _bundled(cli, tmp_path, spec)

    assert "conf/.netrc (environment.dockerfile" in packed.stderr
    assert files["docker/Dockerfile"] == DOCKERFILE
    assert {"docker/greeting.txt", "docker/conf/app.cfg", "specs/crash.yaml"} <= files.keys()
    assert not {"docker/unused.txt", "docker/conf/.netrc", "docker/hostname"} & files.keys()


def test_what_the_dockerignore_excludes_is_not_carried_with_a_copied_folder(
    tmp_path: Path, cli: Cli
) -> None:
    # dockerfile_context carried every file of a folder a COPY names, those the context's
    # .dockerignore excludes too (a checkpoint, a secrets file): docker never sends them.
    spec, docker = _docker_project(tmp_path)
    (docker / "conf" / "private").mkdir()
    (docker / "conf" / "keep.ckpt").write_text("kept by the exception\n")
    (docker / "conf" / "big.ckpt").write_text("excluded by **/*.ckpt\n")
    (docker / "conf" / "private" / "notes.txt").write_text("excluded as a folder\n")
    (docker / ".dockerignore").write_text(
        "# what the build never sees\n**/*.ckpt\n!conf/keep.ckpt\n/conf/private\n"
    )

    names = _bundled(cli, tmp_path, spec)[1].keys()

    assert {"docker/Dockerfile", "docker/conf/app.cfg", "docker/conf/keep.ckpt"} <= names
    assert not {"docker/conf/big.ckpt", "docker/conf/private/notes.txt"} & names


def test_a_script_named_after_a_cd_goes_along_and_the_bundle_verifies(
    tmp_path: Path, cli: Cli
) -> None:
    # `cd sub && python3 x.py data.csv` names sub/x.py and sub/data.csv: the finder read
    # them in the workdir, where neither is, so the bundle carried neither and its rerun
    # failed elsewhere (`can't cd to sub`, then `can't open file`), not the run's crash.
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "x.py").write_text(
        "import ctypes, sys\nprint(open(sys.argv[1]).read().strip(), flush=True)\n"
        "ctypes.string_at(0)\n"
    )
    (project / "sub" / "data.csv").write_text("a,b\n")
    (project / "sub" / "unrelated.txt").write_text("not named\n")
    spec = project / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: cdsub\ncommand: cd sub && python3 x.py data.csv\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = tmp_path / "store"
    ran = cli("run", str(spec), "--out", str(out))
    assert ran.code == 0, ran.stdout + ran.stderr
    archive = tmp_path / "cd.tgz"
    checked, _ = _verify(cli, tmp_path, archive, out)
    assert checked.code == 0, checked.stdout + checked.stderr
    assert "2 of them from the workdir" in checked.stdout
    assert "verify: default: as in the run: reproduced (crash SIGSEGV" in checked.stdout
    assert f"verified {archive}: 1/1 cell of run " in checked.stdout
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"tree/sub/x.py", "tree/sub/data.csv", "tree/spec.yaml"} <= names
    assert "tree/sub/unrelated.txt" not in names
    # materialize's workdir copy follows the same rule.
    made = cli("materialize", str(spec), "-o", str(tmp_path / "mat"))
    assert made.code == 0, made.stderr
    copied = tmp_path / "mat" / "workdirs" / "1"
    assert sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*.*")) == [
        "sub/data.csv",
        "sub/x.py",
    ]


def test_the_bundle_of_an_interrupted_run_says_what_it_lacks(cli: Cli, tmp_path: Path) -> None:
    """A run stopped before any attempt ended was bundled with only `wrote ...; rerun it
    with ...` said: an archive whose report shows no outcome. The sender is told to finish
    the run first, and the recipient's README says why report.md shows none."""
    import sys

    from tests.support.cli import interrupt_when

    started = tmp_path / "started"
    (tmp_path / "slow.yaml").write_text(
        "reprospec: 1\nname: slow\nmatrix: {n: [1, 2]}\n"
        f"command: python -c \"open({str(started)!r}, 'w'); import time; time.sleep(60)\"\n"
        "run: {timeout: 90s}\nexpect: {outcome: hang}\n"
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "reprospec", "run", str(tmp_path / "slow.yaml")]
    stopped = interrupt_when([*argv, "--out", str(out)], started.exists)
    assert stopped.code == 130, stopped.stderr
    archive = tmp_path / "slow.tar.gz"
    packed = _bundle(cli, archive, out)
    assert packed.code == 0, packed.stderr
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    assert (
        "reprospec: warning: the run was interrupted before any attempt ended: the bundle "
        "holds its spec and files, but no outcome to show; finish it first (reprospec run "
        f"--resume {run_id} --out {out}), then bundle it again"
    ) in packed.stderr  # (its store named: without --out it looked in .reprospec)
    with tarfile.open(archive) as tar:
        readme = _read(tar, f"{run_id}/README.md")
    assert "no attempt had ended, so report.md shows no outcome" in readme


def _stopped_and_bundled(
    cli: Cli, tmp_path: Path, name: str, argument: str, spec: str, then: str = ""
) -> tuple[str, str]:
    """Run a spec whose command sleeps where its `argument` is 2 (`then` after it), stop it
    there with Ctrl-C, bundle it: (the bundle's stderr, its README). `spec`: the spec's
    lines after its name and command."""
    import sys

    from tests.support.cli import interrupt_when

    started = tmp_path / "started"
    code = (
        "import sys, time; n = int(sys.argv[1]); "
        f"n == 2 and open({str(started)!r}, 'w'); time.sleep(60 if n == 2 else 0){then}"
    )
    (tmp_path / f"{name}.yaml").write_text(
        f"reprospec: 1\nname: {name}\n"
        f"command: [python, -c, {json.dumps(code)}, '${{{{ {argument} }}}}']\n{spec}"
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "reprospec", "run", str(tmp_path / f"{name}.yaml"), "-j", "1"]
    stopped = interrupt_when([*argv, "--out", str(out)], started.exists)
    assert stopped.code == 130, stopped.stderr
    packed = _bundle(cli, tmp_path / f"{name}.tar.gz", out)
    assert packed.code == 0, packed.stderr
    with tarfile.open(tmp_path / f"{name}.tar.gz") as tar:
        readme = _read(tar, f"{tar.getnames()[0].split('/')[0]}/README.md")
    return packed.stderr, readme


def test_the_bundle_of_a_run_interrupted_midway_says_its_report_is_partial(
    cli: Cli, tmp_path: Path
) -> None:
    stderr, readme = _stopped_and_bundled(
        cli,
        tmp_path,
        "half",
        "matrix.n",
        "matrix: {n: [1, 2]}\nrun: {timeout: 90s}\nexpect: {outcome: hang}\n",
    )
    assert (
        "the run was interrupted with 1 of 2 cells not run: the bundle's report shows only "
        "what ran; finish it first"
    ) in stderr, stderr
    assert "1 of 2 cells not run, and report.md shows only what ran" in readme
    # The packed report told its recipient to `--resume` a run whose store they lack.
    with tarfile.open(tmp_path / "half.tar.gz") as tar:
        report = _read(tar, f"{tar.getnames()[0].split('/')[0]}/report.md")
    assert "` finishes it, from the run's store; `reprospec run half.tar.gz` runs it" in report
    assert ": its sender's --resume finishes it" in report, report
    assert "): --resume" not in report, report
    assert "` finishes it)" not in report, report


def test_the_bundle_of_a_run_interrupted_within_a_cell_says_its_report_is_partial(
    cli: Cli, tmp_path: Path
) -> None:
    """A Ctrl-C after 1 of a cell's 3 attempts: every cell has an outcome, so the bundle was
    packed with nothing said, though its report judged the cell on 1 attempt of 3."""
    stderr, readme = _stopped_and_bundled(
        cli,
        tmp_path,
        "cut",
        "attempt",
        "run: {timeout: 90s, repeat: 3}\nexpect: {outcome: error}\n",
        then="; sys.exit(3)",
    )
    assert (
        "the run was interrupted with 1 of 1 cell cut short (interrupted after 1 of 3 "
        "attempts): the bundle's report shows only what ran; finish it first"
    ) in stderr, stderr
    assert (
        "1 of 1 cell cut short (interrupted after 1 of 3 attempts), and report.md shows "
        "only what ran"
    ) in readme


def test_the_readmes_spec_run_by_hand_keeps_the_runs_filters(tmp_path: Path, cli: Cli) -> None:
    """`reprospec run ARCHIVE` runs the run's `-m` cells, `--repeat` and `--timeout`; the
    README's "run the spec yourself" line gave the spec alone, which ran every cell once."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: filtered\nmatrix: {code: [0, 3]}\n"
        "command: python -c 'import sys; sys.exit(${{ matrix.code }})'\n"
        "expect: {outcome: error, cases: [{when: {code: 0}, outcome: pass}]}\n"
    )
    store = tmp_path / "store"
    ran = cli(
        "run", str(spec), "-m", "code=3", "--repeat", "2", "--timeout", "90s", "--out", str(store)
    )
    assert ran.code == 0, ran.stderr
    archive = tmp_path / "f.tar.gz"
    assert _bundle(cli, archive, store).code == 0
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    readme = (top / "README.md").read_text()
    rerun = _rerun_line(readme)
    assert rerun.endswith("spec.yaml -m code=3 --repeat 2 --timeout 90s"), readme
    mine = cli(*shlex.split(rerun), "--out", str(tmp_path / "mine"), cwd=unpacked)
    assert mine.code == 0, mine.stderr
    assert "1/1 cell reproduced" in mine.stdout, mine.stdout


def test_a_probes_bundle_reruns_the_attempt_numbers_it_ran(tmp_path: Path, cli: Cli) -> None:
    """A search's probe ran attempts 5 and 6 (RunOptions.first_attempt); its bundle reran
    attempts 1 and 2, whose `${{ attempt }}` seed (here a coin at 0.5) drew other values:
    the archive did not rerun what the run did. It numbers from 5 now, and README.md says
    that the spec run by hand numbers from 1."""
    import random

    import reprospec

    spec_file = tmp_path / "coin.yaml"
    spec_file.write_text(
        'reprospec: 1\nname: coin\ncommand: >-\n  python -c "import os, random; '
        "n = ${{ attempt }}; print('attempt', n, flush=True); "
        'os.abort() if random.Random(n).random() < 0.5 else None"\n'
        "run: {timeout: 30s}\nexpect: {outcome: crash, signal: SIGABRT}\n"
    )
    out = tmp_path / "out"
    options = reprospec.RunOptions(out=out, repeat=2, first_attempt=5, purpose="amplify")
    ran = reprospec.run(reprospec.load_spec(spec_file), options)
    archive = tmp_path / "probe.tar.gz"
    readme = _bundled_readme(cli, ran.run_id, out, archive)
    assert "Its attempts were numbered from 5 (a search's probe)" in readme
    # What `reprospec run ARCHIVE` applies of the run's, said whole (observe mode and the
    # first attempt number were left out).
    assert "`--preload`, observe mode, first attempt number and `stop_on`" in readme
    rerun = cli("run", str(archive), "--out", str(tmp_path / "again"), "--yes")
    (folder,) = (tmp_path / "again" / "runs").iterdir()
    attempts = json.loads((folder / "results.json").read_text())["cells"][0]["attempts"]
    assert [a["attempt"] for a in attempts] == [5, 6], rerun.stderr
    drawn = [random.Random(n).random() < 0.5 for n in (5, 6)]
    assert [a["outcome"]["kind"] == "crash" for a in attempts] == drawn
    before = [a.ran.kind == "crash" if a.ran else None for a in ran.cells[0].attempts]
    assert before == drawn


def test_a_bundle_of_an_api_run_stops_its_cells_as_the_run_did(tmp_path: Path, cli: Cli) -> None:
    """`RunOptions(stop_on="first-reproduction")` stopped each cell at its first crash; its
    bundle, run, ran all 3 attempts, and README.md's spec run by hand did too: the manifest
    kept no stop_on. Both stop now, and a `--set run.stop_on` given still wins."""
    import reprospec

    spec_file = tmp_path / "stop.yaml"
    spec_file.write_text(
        "reprospec: 1\nname: stop\n"
        "command: python -c 'import os; os.abort()'\n"
        "run: {timeout: 30s}\nexpect: {outcome: crash, signal: SIGABRT}\n"
    )
    out = tmp_path / "out"
    options = reprospec.RunOptions(out=out, repeat=3, stop_on="first-reproduction")
    ran = reprospec.run(reprospec.load_spec(spec_file), options)
    assert len(ran.cells[0].attempts) == 1
    archive = tmp_path / "stop.tar.gz"
    readme = _bundled_readme(cli, ran.run_id, out, archive)
    assert _rerun_line(readme).endswith("stop.yaml --repeat 3 --set run.stop_on=first-reproduction")

    def attempts(*given: str) -> int:
        cells = _rerun_results(cli, archive, tmp_path / f"again{len(given)}", *given)["cells"]
        return len(cells[0]["attempts"])

    assert attempts() == 1
    assert attempts("--set", "run.stop_on=never") == 3


def test_a_bundle_reruns_at_the_runs_jobs(tmp_path: Path, cli: Cli) -> None:
    """`RunOptions(jobs=2)` over a spec's `run.parallel: 1`: its report.md said `-j 2`, but
    the manifest kept no jobs, so `reprospec run ARCHIVE` and README.md's spec run by hand
    ran one at a time, where a race reproduces at another rate. Both run at 2 now, and a
    `-j` given still wins."""
    import reprospec

    spec_file = tmp_path / "jobs.yaml"
    spec_file.write_text(
        "reprospec: 1\nname: jobs\n"
        "command: python -c 'import os; os.abort()'\n"
        "run: {timeout: 30s, parallel: 1}\nexpect: {outcome: crash, signal: SIGABRT}\n"
    )
    out = tmp_path / "out"
    ran = reprospec.run(reprospec.load_spec(spec_file), reprospec.RunOptions(out=out, jobs=2))
    archive = tmp_path / "jobs.tar.gz"
    readme = _bundled_readme(cli, ran.run_id, out, archive)
    assert _rerun_line(readme).endswith("jobs.yaml -j 2"), readme

    def jobs(*given: str) -> object:
        return _rerun_results(cli, archive, tmp_path / f"again{len(given)}", *given)["options"][
            "jobs"
        ]

    assert jobs() == 2
    assert jobs("-j", "3") == 3


def _bundled_readme(cli: Cli, run_id: str, out: Path, archive: Path) -> str:
    """`reprospec bundle RUN_ID` of the store `out` into `archive`; its README.md."""
    made = cli("bundle", run_id, "--out", str(out), "-o", str(archive))
    assert made.code == 0, made.stderr
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/README.md"))
        handle = tar.extractfile(member)
        assert handle is not None
        return handle.read().decode()


def _rerun_line(readme: str) -> str:
    """The `run ...` words README.md gives to run the bundle's spec by hand."""
    rerun = re.search(r"run the spec yourself: `reprospec (run [^`]+)`", readme)
    assert rerun is not None, readme
    return rerun.group(1)


def _rerun_results(cli: Cli, archive: Path, again: Path, *given: str) -> dict[str, Any]:
    """results.json of `reprospec run ARCHIVE *given` stored under `again`."""
    done = cli("run", str(archive), *given, "--out", str(again), "--yes")
    assert done.code == 0, done.stderr
    (folder,) = (again / "runs").iterdir()
    results: dict[str, Any] = json.loads((folder / "results.json").read_text())
    assert results["cells"], done.stderr
    return results
