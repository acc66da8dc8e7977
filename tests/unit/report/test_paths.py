"""How a bundle names the sender's paths (report/paths.py `PathNames.for_bundle`)."""

from __future__ import annotations

from reprospec.report.paths import PathNames, shared

LABELS = {
    "/home/alice/proj/.venv": "<venv>",
    "/home/alice/.pyenv/versions/3.11.7": "<python>",
    "/home/alice/proj": "",
    "/home/alice": "<home>",
}


def test_a_bundle_names_home_venv_and_user_but_keeps_the_project_whole() -> None:
    names = PathNames.for_bundle(LABELS, ["bob"])
    text = (
        'File "/home/alice/proj/train.py", line 3\n'
        "/home/alice/proj/.venv/lib/site.py /home/alice/.pyenv/versions/3.11.7/lib\n"
        "/work/alice/repo /scratch/bob/x.csv alice@host /work/alicex/y /proc/1/root\n"
    )
    assert names.shorten(text) == (
        'File "<home>/proj/train.py", line 3\n'
        "<venv>/lib/site.py <python>/lib\n"
        "/work/<user>/repo /scratch/<user>/x.csv alice@host /work/alicex/y /proc/1/root\n"
    )
    assert names.data(b"\xff /home/alice/x") == b"\xff <home>/x"


def test_a_copys_labelled_paths_read_the_same_again() -> None:
    names = PathNames.for_bundle(LABELS)
    copied = {names.shorten(path): label for path, label in LABELS.items()}
    assert copied == {
        "<venv>": "<venv>",
        "<python>": "<python>",
        "<home>/proj": "",
        "<home>": "<home>",
    }
    assert shared(copied)
    assert not shared(LABELS)
    again = PathNames.for_bundle(copied)
    text = 'File "<home>/proj/train.py" <venv>/lib /work/<user>/repo'
    assert again.shorten(text) == text
    # A report made from the copy names the project relative, as the sender's did.
    assert PathNames(copied).shorten('File "<home>/proj/train.py"') == 'File "train.py"'


def test_a_relative_spelling_of_a_labelled_folder_is_named_by_its_label() -> None:
    labels = {
        "/work/main/.venv": "<venv>",
        "/root/.pyenv/versions/3.11.7": "<python>",
        "/tmp/h5/inc_a": "",
        "/root": "<home>",
    }
    text = (
        "../../../work/main/.venv/lib/python3.11/site-packages/torch/x.py:52\n"
        "  /work/main/.venv/lib/python3.11/site-packages/torch/x.py:52: UserWarning\n"
        "../../../../root/.pyenv/versions/3.11.7/lib/a.py ../../../root/notes\n"
    )
    masked = (
        "<venv>/lib/python3.11/site-packages/torch/x.py:52\n"
        "  <venv>/lib/python3.11/site-packages/torch/x.py:52: UserWarning\n"
        "<python>/lib/a.py <home>/notes\n"
    )
    assert PathNames(labels).shorten(text) == masked
    assert PathNames.for_bundle(labels).shorten(text) == masked
    # As a bundle's results.json holds the lines: each after an escaped line break.
    assert PathNames.for_bundle(labels).shorten(text.replace("\n", "\\n")) == masked.replace(
        "\n", "\\n"
    )
    # The project's own relative paths, and `..`s that name no folder, are the user's.
    kept = "../data/x.csv ../../x ../../work/main/.venv .venv/lib ../../../work/main/.venvx"
    assert PathNames(labels).shorten(kept) == kept


def test_more_ups_name_a_labelled_folder_only_where_it_shares_no_folder_with_the_project() -> None:
    # /tmp/x/proj and /tmp/x/.venv share /tmp/x: `../../.venv` is /tmp/.venv, no venv of the
    # run, and was named `<venv>` as `../.venv` is.
    labels = {"/tmp/x/.venv": "<venv>", "/tmp/x/proj": "", "/root": "<home>"}
    text = "../.venv/lib/a.py ../../.venv/lib/a.py ../../../.venv/x see\\n../../.venv/y"
    kept = "<venv>/lib/a.py ../../.venv/lib/a.py ../../../.venv/x see\\n../../.venv/y"
    assert PathNames(labels).shorten(text) == kept
    assert PathNames.for_bundle(labels).shorten(text) == kept
    # Under /, more `..`s stop at / and still reach it (a workdir below the project).
    labels = {"/work/main/.venv": "<venv>", "/tmp/h5/inc_a": ""}
    text = "../../../work/main/.venv/a ../../../../../work/main/.venv/b"
    assert PathNames(labels).shorten(text) == "<venv>/a <venv>/b"


def test_a_path_right_after_a_terminal_colour_code_is_named_by_its_label() -> None:
    """pytest's and a logger's coloured lines put a colour code right before a path
    (`\\x1b[33m/work/main/.venv/x`), whose `m` read as a word's: the path, absolute or
    relative, and an attempt's scratch folder were left as they were. The code is kept."""
    labels = {"/work/main/.venv": "<venv>", "/tmp/h5/inc_a": "", "/root": "<home>"}
    text = (
        "\x1b[33m/work/main/.venv/lib/x.py\x1b[0m:52 \x1b[1;31m../../../work/main/.venv/y.py\n"
        "\x1b[m/root/notes \x1b[0m/tmp/h5/inc_a/t.py \x1b[32m/tmp/reprospec-tmp-7-ab/2/tmp/f\n"
    )
    masked = (
        "\x1b[33m<venv>/lib/x.py\x1b[0m:52 \x1b[1;31m<venv>/y.py\n"
        "\x1b[m<home>/notes \x1b[0mt.py \x1b[32m<TMPDIR>/f\n"
    )
    assert PathNames(labels).shorten(text) == masked
    # As a bundle's results.json holds them: the code and the line break escaped.
    escaped = text.replace("\x1b", "\\u001b").replace("\n", "\\n")
    assert PathNames(labels).shorten(escaped) == masked.replace("\x1b", "\\u001b").replace(
        "\n", "\\n"
    )
    # Still only a whole path, and the project's own `../` and a word's letters are kept.
    kept = "\x1b[33mfoo/work/main/.venv/x \x1b[33m../data/x.csv \x1b[33m/work/main/.venvx"
    assert PathNames(labels).shorten(kept) == kept


def test_a_path_after_a_run_of_codes_of_any_final_letter_is_named() -> None:
    """gcc puts `\\x1b[01m\\x1b[K` (bold, then erase to the line's end) before a file's
    path, and ends each coloured part with `\\x1b[m\\x1b[K`: only a code ending in `m` was
    read, so the path after `\\x1b[K` was left as it was."""
    labels = {"/work/main/.venv": "<venv>", "/tmp/h5/inc_a": "", "/root": "<home>"}
    text = (
        "\x1b[01m\x1b[K/root/proj/x.c:1:20:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K\n"
        "\x1b[38:5:208m/work/main/.venv/inc/y.h\x1b[m \x1b[K../../../work/main/.venv/z.h\n"
        "\x1b[01m\x1b[K/tmp/reprospec-tmp-7-ab/2/cache/w.o\x1b[m\x1b[K\n"
    )
    masked = (
        "\x1b[01m\x1b[K<home>/proj/x.c:1:20:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K\n"
        "\x1b[38:5:208m<venv>/inc/y.h\x1b[m \x1b[K<venv>/z.h\n"
        "\x1b[01m\x1b[K<XDG_CACHE_HOME>/w.o\x1b[m\x1b[K\n"
    )
    assert PathNames(labels).shorten(text) == masked
    escaped = text.replace("\x1b", "\\u001b").replace("\n", "\\n")
    assert PathNames(labels).shorten(escaped) == masked.replace("\x1b", "\\u001b").replace(
        "\n", "\\n"
    )
    # A letter of a word after a code is still a word's: its path is no whole one.
    kept = "\x1b[Kfoo/work/main/.venv/x \x1b[01m\x1b[K/work/main/.venvx"
    assert PathNames(labels).shorten(kept) == kept
