"""A spec's comments carried onto its document written again (amplified.yaml)."""

from __future__ import annotations

from pathlib import Path

from reprospec.core.jsontypes import JsonObject
from reprospec.spec.comments import (
    AXES_NOTE,
    axes_note_for,
    carry_comments,
    observe_line,
    schema_moved,
)
from reprospec.spec.yamlsource import dump_yaml, load_yaml

# As capture writes a spec, with what a hand adds: a `#` in a string and in a block
# scalar (no comments), a comment on a list item, one at the end.
SOURCE = """\
# Written by `reprospec capture -- python crash.py` (run
#   20261202-014236-capture-crash-dfbd).
# It ran with --python /venv/bin/python, whose packages it pins:
#   rerun it with the same, or with --runner venv.
reprospec: 1
name: crash  # the name
description: |
  # not a comment: a block scalar's line
  It ended badly.
environment:
  env:
    # your shell set it: the failure needs it
    CRASH_ON: '1'
    TAG: 'a # b'  # a quoted hash, then a comment
command: python crash.py --tag '#x'
labels:
  - captured  # by capture
expect:
  outcome: crash
  signal: SIGSEGV  # exit status 139 = 128 + SIGSEGV
# the end
"""


def test_comments_stay_at_their_keys_and_the_data_is_the_same() -> None:
    data = load_yaml(SOURCE).data
    assert isinstance(data, dict)
    environment = data["environment"]
    assert isinstance(environment, dict)
    perturbed: JsonObject = {**environment, "perturb": {"cpu_load": 4}}
    new: JsonObject = {**data, "environment": perturbed}
    text = carry_comments(SOURCE, dump_yaml(new))
    assert load_yaml(text).data == new
    lines = text.splitlines()
    assert lines[:4] == SOURCE.splitlines()[:4]
    assert "name: crash  # the name" in lines
    at = lines.index("    CRASH_ON: '1'")
    assert lines[at - 1] == "    # your shell set it: the failure needs it"
    assert "  signal: SIGSEGV  # exit status 139 = 128 + SIGSEGV" in lines
    assert "- captured  # by capture" in lines
    assert lines[-1] == "# the end"
    # A `#` inside a string or a block scalar is none: said once, where it was.
    assert text.count("not a comment") == 1
    assert text.count("a quoted hash, then a comment") == 1


def test_a_value_the_dump_wraps_takes_its_comment_above_it() -> None:
    long = "word " * 30
    source = f"name: x\ntitle: '{long}'  # why so long\n"
    new = load_yaml(source).data
    text = carry_comments(source, dump_yaml(new))
    assert load_yaml(text).data == new
    assert "# why so long" in text
    assert text.index("# why so long") < text.index("title:")


def test_a_text_that_is_no_yaml_is_left_as_the_dump() -> None:
    dumped = dump_yaml({"name": "x"})
    assert carry_comments("a: [\n", dumped) == dumped


def test_a_comment_after_a_flow_collection_stays_at_the_key_or_item_it_follows() -> None:
    # lo35: the comment after `env: {a: 1, b: 2}` went to the last key on its line (`b`),
    # and once the dump wrote `env` a key per line it stood after `b: 2`; the one after a
    # list's flow item went after the item's last key.
    source = (
        "name: x\n"
        "environment:\n"
        "  env: {CRASH_ON: '1', TAG: a}  # the failure needs both\n"
        "labels:\n"
        "  - {name: a, kind: b}  # a label\n"
        "  - plain  # another\n"
    )
    new = load_yaml(source).data
    text = carry_comments(source, dump_yaml(new))
    assert load_yaml(text).data == new
    lines = text.splitlines()
    assert "  env:  # the failure needs both" in lines, text
    assert "- name: a  # a label" in lines, text
    assert "- plain  # another" in lines, text
    assert text.count("#") == 3


def test_a_relative_schema_line_is_made_to_name_the_same_file_from_the_new_folder(
    tmp_path: Path,
) -> None:
    # lo35: amplified.yaml (OUT/amplify/ID/) kept `$schema=../schemas/...` as written, which
    # from there named nothing: an editor checked the amplified spec against no schema.
    schema = tmp_path / "schemas" / "reprospec.schema.json"
    schema.parent.mkdir()
    schema.write_text("{}")
    specs, into = tmp_path / "specs", tmp_path / ".reprospec" / "amplify" / "a1"
    line = "# yaml-language-server: $schema="
    text = f"{line}../schemas/reprospec.schema.json\nname: x\n"
    moved = schema_moved(text, specs, into)
    assert moved == f"{line}../../../schemas/reprospec.schema.json\nname: x\n"
    assert (into / moved.split("=", 1)[1].split("\n")[0]).resolve() == schema.resolve()
    # The same folder: the same line.
    assert schema_moved(text, specs, specs) == text
    # A URL, an absolute path, a path that named no file where the spec was: as written.
    kept = (
        f"{line}https://example.org/reprospec.schema.json",
        f"{line}{schema}",
        f"  #yaml-language-server: $schema=file:///{schema}",
        f"{line}../missing/reprospec.schema.json",
        "# $schema=../schemas/reprospec.schema.json (no editor reads this line)",
    )
    for each in kept:
        assert schema_moved(each + "\n", specs, into) == each + "\n"


def test_the_axes_note_names_the_spec_written_even_where_its_path_is_a_part_of_the_head() -> None:
    # The path was replaced where it first occurred in the line: a spec captured as `run`
    # or `e` had the head rewritten ("#   ramplified.yamlprospec run e --observe").
    for captured in ("run", "e", "spec", "pro", "crash.yaml"):
        lines = (*AXES_NOTE, observe_line(captured))
        text = "".join(f"# {line}\n" for line in lines) + "matrix:\n  a: [1]\n"
        note = axes_note_for(text, "matrix:\n  a: [1]\n", "amplified.yaml")
        assert note.splitlines()[2] == f"# {observe_line('amplified.yaml')}", note


def test_an_observe_note_capture_wrapped_at_a_long_path_is_still_found_and_made_whole() -> None:
    # Captured before the command was kept whole, a long path put it over three lines
    # (the 88 columns' wrap): minimize and amplify carried it, naming the original spec.
    long = "incidents/a_rather_long_folder_name/another_level/crash_from_the_training_job.yaml"
    wrapped = (
        f"#   reprospec run\n#     {long}\n#     --observe --set 'matrix.AXIS=[OLD,\n#     NEW]'\n"
    )
    head = "".join(f"# {line}\n" for line in AXES_NOTE) + wrapped
    text = head + "reprospec: 1\nmatrix:\n  a: [1]\n"
    note = axes_note_for(text, "reprospec: 1\nmatrix:\n  a: [1]\n", "amplified.yaml")
    assert note.splitlines()[2:4] == [f"# {observe_line('amplified.yaml')}", "reprospec: 1"]
    # Without a matrix, the note goes whole.
    gone = axes_note_for(text.replace("matrix:\n  a: [1]\n", ""), "reprospec: 1\n", "m.yaml")
    assert gone == "reprospec: 1\n", gone
    # Wrapped inside a quoted path at one of its blanks: still found.
    spaced = (
        "#   reprospec run 'incidents/a rather long folder name/another\n"
        "#     level/crash_from_the_training_job.yaml' --observe --set\n"
        "#     'matrix.AXIS=[OLD, NEW]'\n"
    )
    text = (
        "".join(f"# {line}\n" for line in AXES_NOTE) + spaced + "reprospec: 1\nmatrix:\n  a: [1]\n"
    )
    note = axes_note_for(text, "reprospec: 1\nmatrix:\n  a: [1]\n", "amplified.yaml")
    assert note.splitlines()[2:4] == [f"# {observe_line('amplified.yaml')}", "reprospec: 1"]
