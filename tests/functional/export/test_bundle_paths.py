"""What a bundle shows of the machine it was made on: its copies of results.json and of the
attempts' logs name the sender's home folder `<home>` and their name as a path's folder
`<user>`, as report.md does, while the run folder keeps them; the copy still reports and
compares as the run. Real runs, real children."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: home-paths
environment:
  env: {DATA: "%s/data.csv"}
command: python boom.py
expect: {outcome: error}
"""

BOOM = """\
import os
print("home", os.path.expanduser("~"), "data", os.environ["DATA"], flush=True)
raise RuntimeError("boom")
"""

USER = "alicebx43"


def test_a_bundle_names_the_senders_home_and_user_as_report_md_does(
    tmp_path: Path, cli: Cli
) -> None:
    home = tmp_path / "home" / USER
    project = home / "proj"
    project.mkdir(parents=True)
    scratch = tmp_path / "scratch" / USER  # the user's name as a folder outside the home
    (project / "s.yaml").write_text(SPEC % scratch)
    (project / "boom.py").write_text(BOOM)
    env = {"HOME": str(home)}
    store = tmp_path / "store"
    # The spec named by its whole path: report.md's first line and its rerun command, and
    # bundle.json's command line, name it so.
    ran = cli("run", str(project / "s.yaml"), "--out", str(store), env=env, cwd=project)
    assert ran.code == 0, ran.stderr
    run_dir = ran.latest_run()
    kept = (run_dir / "results.json").read_text()
    assert str(project) in kept  # the sender's own run folder is not changed

    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(store), env=env)
    assert packed.code == 0, packed.stderr
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (copy,) = unpacked.iterdir()
    shared = [
        copy / "results.json",
        copy / "bundle.json",
        copy / "README.md",
        *(copy / "logs").rglob("*.log"),
    ]
    leaked = [p.relative_to(copy) for p in shared if USER.encode() in p.read_bytes()]
    assert leaked == []
    stdout = next((copy / "logs").rglob("stdout.log")).read_text()
    assert f"home <home> data {tmp_path}/scratch/<user>/data.csv" in stdout
    stderr = next((copy / "logs").rglob("stderr.log")).read_text()
    assert 'File "<home>/proj/boom.py"' in stderr
    # What a rerun runs is carried as it ran: the spec names its own paths, in tree/ and
    # in the spec report.md embeds, which still reruns; so does the archive.
    assert str(scratch) in (copy / "tree" / "s.yaml").read_text()
    report_lines = (copy / "report.md").read_text().splitlines()
    spec_line = f'  env: {{DATA: "{scratch}/data.csv"}}'
    assert [line for line in report_lines if USER in line] == [spec_line]
    # Its first line names the packed spec beside it, not the sender's file: the report
    # reruns where it was unpacked, its workdir in tree/ (it named `<home>/proj/s.yaml`,
    # and `run report.md` looked for the workdir beside report.md: `folder not found`).
    assert report_lines[0].endswith('path="tree/s.yaml" -->')
    again = tmp_path / "again"
    for rerun in (copy / "report.md", archive):
        reran = cli("run", str(rerun), "--yes", "--out", str(again), env=env, cwd=tmp_path)
        assert reran.code == 0, reran.stderr
        assert "1/1 cell reproduced" in reran.stdout + reran.stderr

    # The copy reports as the run did (its `paths` are labelled too), and compares with
    # the run it was made of without a path read as a difference.
    rendered = tmp_path / "again.md"
    report = cli("report", str(copy), "-o", str(rendered), "--out", str(store), env=env)
    assert report.code == 0, report.stderr
    # report.md names the home `<home>` already; the spec it embeds (and reruns) keeps what
    # it writes, which the copy's results.json names as the logs do.
    sent = [line.replace(f"/{USER}/", "/<user>/") for line in report_lines]
    assert rendered.read_text().splitlines()[1:] == sent[1:]
    compared = cli("compare", str(copy), str(run_dir), "--out", str(store), env=env)
    assert compared.code == 0, compared.stderr
    assert "same spec" in compared.stdout, compared.stdout
    assert "same environment" in compared.stdout, compared.stdout
    assert "no cell changed" in compared.stdout, compared.stdout


def test_a_specs_comments_name_the_senders_home_as_the_rest_does(tmp_path: Path, cli: Cli) -> None:
    # Capture's header `# It ran with --python /home/alice/proj/.venv/bin/python` was packed
    # as written into tree/, spec.yaml and the spec report.md embeds, where everything else
    # named the home `<home>`: a comment is no part of what a rerun runs.
    home = tmp_path / "home" / USER
    project = home / "proj"
    project.mkdir(parents=True)
    python = project / ".venv" / "bin" / "python"
    spec = f"# It ran with --python {python}, whose packages it pins.\n" + SPEC.replace(
        'environment:\n  env: {DATA: "%s/data.csv"}\n', ""
    )
    (project / "s.yaml").write_text(spec)
    (project / "boom.py").write_text(BOOM.replace(', "data", os.environ["DATA"]', ""))
    env = {"HOME": str(home)}
    store = tmp_path / "store"
    ran = cli("run", "s.yaml", "--out", str(store), env=env, cwd=project)
    assert ran.code == 0, ran.stdout + ran.stderr
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(store), env=env)
    assert packed.code == 0, packed.stderr
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (copy,) = unpacked.iterdir()
    for name in ("tree/s.yaml", "spec.yaml", "report.md"):
        text = (copy / name).read_text()
        assert USER not in text, name
        assert "# It ran with --python <home>/proj/.venv/bin/python, whose" in text, name
    # The spec's own lines are as they ran, and report.md's digest is of the block as
    # packed: it reruns, as the archive does.
    assert (copy / "tree" / "s.yaml").read_text().split("\n")[1:] == spec.split("\n")[1:]
    again = tmp_path / "again"
    for rerun in (copy / "report.md", archive):
        reran = cli("run", str(rerun), "--yes", "--out", str(again), env=env, cwd=tmp_path)
        assert reran.code == 0, reran.stdout + reran.stderr
        assert "1/1 cell reproduced" in reran.stdout + reran.stderr


def test_a_hash_line_inside_a_block_value_is_the_command_s_and_packed_as_it_ran(
    tmp_path: Path, cli: Cli
) -> None:
    # Every line starting with `#` was named as a comment: a heredoc's `# /home/alice/proj`
    # inside `command: |` became `# <home>/proj`, and the recipient's command wrote another
    # file (exit 3 where the sender's exited 1; a late review). YAML says what a comment is.
    home = tmp_path / "home" / USER
    project = home / "proj"
    project.mkdir(parents=True)
    spec = (
        "reprospec: 1\nname: heredoc\n"
        f"# my note: the data lives in {project}/data\n"
        "command: |\n"
        "  cat > check.txt <<'X'\n"
        f"  # {project}\n"
        "  X\n"
        f"  grep -qx '# {project}' check.txt || exit 3\n"
        "  exit 1\n"
        "expect:\n  outcome: error\n  exit_code: 1\n"
    )
    (project / "s.yaml").write_text(spec)
    env = {"HOME": str(home)}
    store = tmp_path / "store"
    ran = cli("run", "s.yaml", "--out", str(store), env=env, cwd=project)
    assert ran.code == 0, ran.stdout + ran.stderr
    archive = tmp_path / "share.tar.gz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(store), env=env)
    assert packed.code == 0, packed.stderr
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (copy,) = unpacked.iterdir()
    for name in ("tree/s.yaml", "spec.yaml", "report.md"):
        text = (copy / name).read_text()
        assert "# my note: the data lives in <home>/proj/data" in text, name
        assert f"  # {project}\n" in text, name  # the heredoc's line, as it ran
    reran = cli("run", str(archive), "--yes", "--out", str(tmp_path / "again"), cwd=tmp_path)
    assert reran.code == 0, reran.stdout + reran.stderr
    assert "1/1 cell reproduced" in reran.stdout + reran.stderr
