"""Which files of the workdir go into minimize's DIR (minimize/named.py)."""

from __future__ import annotations

from pathlib import Path

from reprospec.minimize.named import copy_named
from reprospec.minimize.program import Program
from reprospec.spec.load import load_spec


def test_a_spec_string_no_file_system_takes_as_a_name_is_not_a_file(tmp_path: Path) -> None:
    # A `capture --from-log` spec's description (a paragraph of the ticket, a line
    # over 255 bytes) was looked up as a file of the workdir, and its "File name too long"
    # ended a 200-attempt minimize with exit 2 and no result written; so did a Python
    # file's docstring of over 255 bytes.
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("open('cfg.json')\n")
    (work / "cfg.json").write_text("{}\n")
    ticket = "RuntimeError: DataLoader worker (pid 48213) is killed by signal " * 6
    (work / "s.yaml").write_text(
        "reprospec: 1\nname: s\n"
        f"description: |\n  Read from issue.md.\n  {ticket}\n"
        "command: python app.py\nexpect: {outcome: crash}\n"
    )
    spec = load_spec(work / "s.yaml")
    # A program's docstring of a paragraph is looked up the same way.
    source = f'"""{ticket}"""\nopen("cfg.json")\n'
    program = Program(("python", "app.py"), (), files=(("app.py", source),))
    out = tmp_path / "out"
    out.mkdir()
    carried = copy_named(work, out, program, spec, skip={out})
    assert carried.names == ("cfg.json",)
    assert (out / "cfg.json").read_text() == "{}\n"


def test_only_the_spec_fields_the_program_runs_with_name_its_files(tmp_path: Path) -> None:
    # A spec whose description said "see notes.txt" got notes.txt copied into DIR
    # (and listed in minimized.yaml's files), though the program never reads it; a matrix
    # value the command takes still names its config, and the program's own strings theirs.
    work = tmp_path / "work"
    work.mkdir()
    for name in ("cfg.json", "small.json", "notes.txt", "train.log", "boom.txt"):
        (work / name).write_text("{}\n")
    (work / "app.py").write_text("open('cfg.json')\n")
    (work / "s.yaml").write_text(
        "reprospec: 1\nname: s\ntitle: crashes, see train.log\n"
        "description: |\n  Read the reporter's notes.txt first.\n"
        "labels: [notes.txt]\n"
        "matrix:\n  config: [small.json]\n"
        "command: python app.py --config ${{ matrix.config }}\n"
        "expect: {outcome: error, message: boom.txt}\n"
    )
    spec = load_spec(work / "s.yaml")
    program = Program(
        ("python", "app.py"),
        ("--config", "${{ matrix.config }}"),
        files=(("app.py", "open('cfg.json')\n"),),
    )
    out = tmp_path / "out"
    out.mkdir()
    carried = copy_named(work, out, program, spec, skip={out})
    assert carried.names == ("cfg.json", "small.json")
    assert sorted(p.name for p in out.iterdir()) == ["cfg.json", "small.json"]
