"""capture's TODO block (reprospec/spec/todo.py): read from the text capture writes, what is
still to fill in, and the block dropped where the spec is written again."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.capture.writer import Draft, render_spec
from reprospec.spec.todo import senders_paths_item, todo_block, unfilled, without_filled_todo
from reprospec.spec.validate import validate

TODO = (
    "command: the command that failed (the log does not show it; `TODO-the-command-that-"
    "failed` stands in and fails as `command not found`)",
    "environment.workdir: where the command runs, relative to this spec",
    "files: the program's data and the modules it imports (the log cannot carry them): "
    "put them in the workdir, and list here those its command does not name",
    "expect.outcome: the log shows no failure this reader knows",
)


def _skeleton() -> str:
    """A --from-log skeleton as capture writes it: the block, the stand-in command, the
    outcome beside its TODO comment."""
    return render_spec(
        Draft(
            name="from-a-ticket",
            command="TODO-the-command-that-failed",
            header=("A skeleton written by `reprospec capture --from-log issue.md`.",),
            expect={"outcome": "fail"},
            expect_comments={"outcome": "TODO: what the failure is"},
            todo=TODO,
        )
    )


def _filled(text: str) -> str:
    """The skeleton as its user fills it: a command, a workdir, files, the outcome."""
    text = text.replace("command: TODO-the-command-that-failed", "command: python run.py")
    text = text.replace("  outcome: fail  # TODO: what the failure is", "  outcome: crash")
    return text + "environment:\n  workdir: .\nfiles: [run.py]\n"


def test_the_block_capture_writes_is_read_with_each_item_s_key() -> None:
    text = _skeleton()
    block = todo_block(text)
    assert block is not None
    assert block.keys == ("command", "environment.workdir", "files", "expect.outcome")
    lines = text.split("\n")
    assert lines[block.first - 1] == "# TODO (left to fill in):"
    assert lines[block.last].startswith("reprospec: 1")  # the wrapped items are the block's
    assert todo_block("reprospec: 1\nname: a\n") is None
    # A hand-edited block whose first line continues no item raised IndexError in validate
    # (final read); the line is the block's.
    edited = todo_block("# TODO (left to fill in):\n#     x\n#   - command: y\nreprospec: 1\n")
    assert edited is not None
    assert (edited.keys, edited.last) == (("command",), 3)


def test_a_key_is_filled_when_set_to_more_than_capture_s_stand_in_or_its_todo_comment() -> None:
    text = _skeleton()
    block = todo_block(text)
    assert block is not None
    # The stand-in command, the outcome beside `# TODO`, and keys not written at all.
    assert unfilled(block, text) == block.keys
    assert unfilled(block, _filled(text)) == ()
    # One key left as it was: that one, alone.
    one_left = _filled(text).replace("files: [run.py]\n", "")
    assert unfilled(block, one_left) == ("files",)


def test_a_spec_written_again_drops_the_block_once_every_key_is_filled() -> None:
    # A filled spec's block went on into amplified.yaml and minimized.yaml, telling
    # a maintainer that keys the file sets were still to fill in.
    filled = _filled(_skeleton())
    written = without_filled_todo(filled, filled)
    assert "TODO" not in written
    assert written.startswith(
        "# A skeleton written by `reprospec capture --from-log issue.md`.\nreprospec: 1\n"
    )
    # One key still to fill in: the block stays, whole.
    partly = filled.replace("files: [run.py]\n", "")
    assert without_filled_todo(partly, partly) == partly


def test_validate_names_what_is_left_to_fill_in_and_a_block_that_can_go(tmp_path: Path) -> None:
    # The skeleton's header says `validate` checks the rest: it said only "valid".
    fresh, done = tmp_path / "fresh.yaml", tmp_path / "done.yaml"
    (tmp_path / "run.py").write_text("print('ran')\n")
    fresh.write_text(_skeleton())
    done.write_text(_filled(_skeleton()))
    found = validate([fresh, done])
    assert found.problems == []
    block = todo_block(_skeleton())
    assert block is not None
    assert found.notes == [
        f"{fresh}:{block.first}: still to fill in (4 items of capture's TODO): command, "
        "environment.workdir, files, expect.outcome",
        f"{done}:{block.first}: every key capture's TODO block lists is set: delete the "
        f"block (lines {block.first}-{block.last}), or every report and bundle of it shows "
        "it still",
    ]


def test_what_is_left_to_fill_in_is_read_from_one_parse_of_the_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lo40: `unfilled` parsed the spec for its values, and again for its comments."""
    from reprospec.spec import comments, todo
    from reprospec.spec.yamlsource import Document, load_yaml

    parsed: list[str] = []

    def counted(text: str, *, line_offset: int = 0) -> Document:
        parsed.append(text)
        return load_yaml(text, line_offset=line_offset)

    monkeypatch.setattr(todo, "load_yaml", counted)
    monkeypatch.setattr(comments, "load_yaml", counted)
    text = _skeleton()
    block = todo_block(text)
    assert block is not None
    assert unfilled(block, text) == block.keys  # the skeleton fills none
    assert len(parsed) == 1
    # A text that does not read sets none of the block's keys, as before.
    assert unfilled(block, text + "\n: [") == block.keys


def test_a_command_that_names_the_senders_paths_is_unfilled_until_it_names_none(
    tmp_path: Path,
) -> None:
    # The command is set from the log and no `# TODO` is beside it: its item was never
    # named, and a skeleton with every other key filled was said to be done.
    from reprospec.capture.fromlog import skeleton
    from reprospec.capture.ticket import read_ticket

    log = "$ python /home/alice/proj/other.py\nTraceback (most recent call last):\nOSError\n"
    text = render_spec(skeleton(read_ticket(log, workdir=tmp_path), "issue.md"))
    block = todo_block(text)
    assert block is not None
    assert "command" in unfilled(block, text)
    filled = text + (
        "environment:\n  workdir: .\n  python: '3.11'\n  packages: [numpy==2.0.0]\nfiles: []\n"
    )
    assert unfilled(block, filled) == ("command",)
    assert without_filled_todo(filled, filled) == filled
    done = filled.replace("python /home/alice/proj/other.py", "python other.py")
    assert unfilled(block, done) == ()
    # Wrapped over the block's lines, a path is read whole; quoted, it is still there.
    paths = render_spec(
        Draft(
            name="n",
            command="python /home/a/" + "p" * 60 + "/t.py --c /home/a/c.yaml",
            todo=(senders_paths_item(("/home/a/" + "p" * 60 + "/t.py", "/home/a/c.yaml")),),
        )
    )
    block = todo_block(paths)
    assert block is not None
    assert unfilled(block, paths) == ("command",)
    assert unfilled(block, paths.replace("--c /home/a/c.yaml", "--c '/home/a/c.yaml'")) == (
        "command",
    )
    assert unfilled(block, paths.replace("/home/a/" + "p" * 60 + "/t.py", "t.py")) == ("command",)
    # A hyphenated path and one longer than a line were split inside (`my-research-
    # project`, at column 88), and read back with a space in them: never found (review).
    for path in ("/home/alice/my-research-project/src/data/t.py", "/h/" + "q" * 100 + "/t.py"):
        hyphens = render_spec(
            Draft(
                name="n",
                command=f"python {path}",
                todo=(senders_paths_item(("/home/alice/some-other-folder/c.yaml", path)),),
            )
        )
        block = todo_block(hyphens)
        assert block is not None
        assert unfilled(block, hyphens) == ("command",)
