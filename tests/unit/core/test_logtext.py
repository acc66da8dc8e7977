"""The log excerpt a report quotes, of a log read whole or as its head and tail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import reprospec
from reprospec.core.logtext import (
    _UNPRINTABLE,
    _UNPRINTABLE_OR_NEWLINE,
    _escape,
    excerpt,
    printable,
    without_escapes,
)
from reprospec.outcome.evidence import read_log


def test_an_excerpt_of_a_log_read_as_head_and_tail_does_not_undercount_what_it_left_out(
    tmp_path: Path,
) -> None:
    # A log too big to read whole is read as its head and tail: the lines of its unread
    # middle are left out too, and were not counted ("4725 earlier lines omitted" of 4961).
    log = tmp_path / "stdout.log"
    log.write_text("".join(f"log line {i}\n" for i in range(5000)))
    text = read_log(log, head=1000, tail=1000)
    mark = re.search(r"^\[\.\.\. (\d+) bytes omitted \.\.\.\]$", text, re.M)
    assert mark is not None
    read = [line for line in text.rstrip("\n").split("\n") if line != mark[0]]
    assert excerpt(text, max_lines=10).split("\n") == [
        f"… ({len(read) - 10} earlier lines and {mark[1]} unread bytes omitted)",
        *(f"log line {i}" for i in range(4990, 5000)),
    ]
    # Read whole, the count is every line left out.
    assert excerpt(read_log(log), max_lines=10).split("\n")[0] == "… (4990 earlier lines omitted)"


def test_blank_lines_in_a_row_are_one_blank_line_and_one_repeat_is_one_time() -> None:
    # faulthandler's report of a crash in a thread with no Python state (an OpenMP worker
    # of a torch op): "Fatal Python error" and two blank lines, which read as a line
    # "[previous line repeated 1 more times]" under nothing.
    text = "Fatal Python error: Segmentation fault\n\n\nExtension modules: torch._C\n"
    assert excerpt(text) == "Fatal Python error: Segmentation fault\n\nExtension modules: torch._C"
    assert excerpt("x\nx\n") == "x\n[previous line repeated 1 more time]"


def test_one_escape_pattern_reads_a_line_one_way_everywhere() -> None:
    """Four modules held their own copy of the escape pattern, each narrower: preset
    detection and a docker build's log kept an OSC title or hyperlink (`\\x1b]8;;URL`),
    the output scanner a two-byte escape (`\\x1bM`), the classifier a `\\x1b[<u`; so one
    line read one way for the markers and another for detection. Every reader takes
    core.logtext's `without_escapes`, and no other module writes the pattern again."""
    from reprospec.outcome.classify import normalize_message
    from reprospec.runners.docker.image import without_colour
    from reprospec.spec.presets import output_lines

    line = "\x1b]0;title\x07\x1b[1mEpoch 1\x1b[0m \x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\\x1bM"
    assert without_escapes(line) == "Epoch 1 link"
    assert output_lines(line) == ["Epoch 1 link"]
    assert without_colour(line) == "Epoch 1 link"
    assert normalize_message(line + "\x1b[<u") == normalize_message("Epoch 1 link")
    package = Path(reprospec.__file__).parent
    copies = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.name != "logtext.py" and re.search(r"\\x1b\\\[|\\033\\\[", path.read_text())
    ]
    assert copies == []


def test_shell_split_reads_back_what_shell_join_wrote_odd_words_and_bytes_not_utf8() -> None:
    # shlex.split read shell_join's `$'b\xfe.tar.gz'` as `$` and a quoted word: the
    # rejoined line (resume's hint, merge's -m, a redacted --set) named another file.
    from reprospec.core.logtext import shell_join, shell_split

    odd = [
        "b\udcfe.tar.gz", "", "a b", "it's", 'say "hi"', "back\\slash", "$HOME", "$'x'",
        "new\nline", "tab\tx", "é\udc80", "\udcc3", "-m", "a=1", "\x01", "'", "\\",
    ]  # fmt: skip
    assert shell_split(shell_join(odd)) == odd
    for word in odd:
        assert shell_split(shell_join([word])) == [word]
    line = "reprospec run $'/tmp/b\\xfe.tar.gz' -m a=1"
    assert shell_split(line) == ["reprospec", "run", "/tmp/b\udcfe.tar.gz", "-m", "a=1"]
    assert shell_join(shell_split(line)) == line
    # Bash's other escapes, and shlex's reading of every other line.
    assert shell_split("$'a\\tb\\'c\\\\d\\101\\x41\\q'") == ["a\tb'c\\dAA\\q"]
    assert shell_split("""a 'b c' "d \\" e" f\\ g h$i""") == ["a", "b c", 'd " e', "f g", "h$i"]
    # Two $'...' halves of one character are its bytes, one word; a `$'` quoted is text.
    assert shell_split("$'\\xc3'$'\\xa9' \"$'a'\" '$'") == ["é", "$'a'", "$"]
    for unclosed in ("a 'b", 'a "b', "a $'b"):
        with pytest.raises(ValueError, match="No closing quotation"):
            shell_split(unclosed)


def test_not_utf8_names_the_byte_and_shows_the_text_unless_told_not_to() -> None:
    from reprospec.core.logtext import not_utf8

    assert not_utf8("the spec's path", "/tmp/é/s.yaml") is None
    assert not_utf8("the spec's path", "/tmp/d\udcffir/s.yaml") == (
        "/tmp/d\\xffir/s.yaml: the spec's path is not UTF-8 (byte 0xff): reprospec records "
        "it in UTF-8 (a run's store, results.json): rename the folder"
    )
    # A variable's value may be a secret: left out.
    assert not_utf8("environment.env.X", "k\udc80", shown=False, then="no") == (
        "environment.env.X is not UTF-8 (byte 0x80): no"
    )


def _frames(n: int, name: str) -> str:
    return "".join(
        f'  File "/venv/lib/python3.11/site-packages/{name}{i}.py", line {i}, in f{i}\n'
        f"    value = call_{i}(x)\n"
        f"            ^^^^^^^^^^^\n"
        for i in range(n)
    )


def test_an_excerpt_of_a_logs_last_lines_begins_at_a_frame_not_on_its_carets() -> None:
    # A worker's segfault: torch's chained traceback, its last one inside the window and
    # the window beginning in the first one's frames: the excerpt began `            ^^^^`
    # under "… (7 earlier lines omitted)", the File line it belongs to left out above it.
    log = (
        f"Traceback (most recent call last):\n{_frames(10, 'queue')}"
        "RuntimeError: DataLoader worker (pid 7) is killed by signal: Segmentation fault.\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        f"Traceback (most recent call last):\n{_frames(3, 'loader')}"
        "RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly\n"
    )
    lines = excerpt(log, max_lines=20).split("\n")
    # The frame the window began in, whole: its File line is looked for above first.
    assert lines[0] == "… (25 earlier lines omitted)"
    assert lines[1].startswith('  File "/venv/lib/python3.11/site-packages/queue8.py"')
    assert lines[-1] == "RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly"
    # Lines indented as a whole (a markdown code block's four spaces) keep their window.
    indented = "\n".join(f"    line {i}" for i in range(30))
    assert excerpt(indented, max_lines=10).split("\n")[1] == "    line 20"


def test_a_window_beginning_on_the_last_frames_carets_begins_at_its_file_line() -> None:
    # Only the lines below were looked at: the exception line came next, the start was
    # kept, and the excerpt read "… (4 lines omitted)", "    ^^^^", "RuntimeError: ...".
    log = f"Traceback (most recent call last):\n{_frames(12, 'm')}RuntimeError: boom\n"
    lines = excerpt(log, max_lines=4).split("\n")
    assert lines[-4:] == [
        '  File "/venv/lib/python3.11/site-packages/m11.py", line 11, in f11',
        "    value = call_11(x)",
        "            ^^^^^^^^^^^",
        "RuntimeError: boom",
    ]
    assert lines[-5] == "… (32 lines omitted)", lines
    # Longer than its window (no anchor): the window's start goes back to the File line.
    frames = _frames(3, "m").rstrip("\n").split("\n")
    log = "\n".join([*(f"line {i}" for i in range(20)), *frames, "RuntimeError: boom"])
    lines = excerpt(log, max_lines=2).split("\n")
    assert lines == [
        "… (26 earlier lines omitted)",
        '  File "/venv/lib/python3.11/site-packages/m2.py", line 2, in f2',
        "    value = call_2(x)",
        "            ^^^^^^^^^^^",
        "RuntimeError: boom",
    ]


def test_a_dying_workers_line_stands_where_it_was_among_the_marks() -> None:
    # torch's last words in a worker come right above the main process's traceback, after
    # a warning: put on top of one `… (3 earlier lines omitted)` that counted it, the line
    # read as if three lines had come between it and the traceback under it.
    frames = [f'  File "m{i}.py", line {i}, in f' for i in range(45)]
    text = "\n".join(
        [
            "warn.py:1: UserWarning: numpy",
            "  x = y",
            "ERROR: Unexpected segmentation fault encountered in worker.",
            "Traceback (most recent call last):",
            *frames,
            "RuntimeError: DataLoader worker (pid 7) is killed by signal: Segmentation fault.",
        ]
    )
    lines = excerpt(text, max_lines=10).split("\n")
    assert lines[:3] == [
        "…",
        "ERROR: Unexpected segmentation fault encountered in worker.",
        "Traceback (most recent call last):",
    ]
    # Within the window's tail, the lines between the key line and the window are counted.
    text = "\n".join(["a", "a2", "ERROR: Unexpected x", "b", "c", *frames[:20]])
    assert excerpt(text, max_lines=5).split("\n")[:3] == [
        "… (2 earlier lines omitted)",
        "ERROR: Unexpected x",
        "… (17 lines omitted)",
    ]


def test_a_gap_of_one_line_shows_the_line() -> None:
    # The key line is most often 1-2 lines above the window: its one-line gaps read
    # "… (1 earlier lines omitted)", a mark as long as the line it stood for.
    frames = [f'  File "m{i}.py", line {i}, in f' for i in range(45)]
    text = "\n".join(["a", "ERROR: Unexpected x", "b", *frames[:20]])
    assert excerpt(text, max_lines=5).split("\n")[:4] == [
        "a",
        "ERROR: Unexpected x",
        "… (16 lines omitted)",
        frames[15],
    ]
    # Above a long traceback too, where the marks are a bare `…`.
    text = "\n".join(["w", "ERROR: Unexpected x", "Traceback (most recent call last):", *frames])
    assert excerpt(text, max_lines=10).split("\n")[:2] == ["w", "ERROR: Unexpected x"]
    # A count of one is worded as one; an unread middle is a mark even alone.
    tail = [f"t{i}" for i in range(5)]
    text = "\n".join(["a", "[... 1 bytes omitted ...]", *tail])
    said = "… (1 earlier line and 1 unread byte omitted)"
    assert excerpt(text, max_lines=5).split("\n")[0] == said
    text = "\n".join(["[... 9 bytes omitted ...]", *tail])
    said = "… (9 unread bytes omitted)"
    assert excerpt(text, max_lines=5).split("\n")[0] == said


def test_a_gap_of_only_the_unread_middle_says_no_lines() -> None:
    # Gaps split around a key line: the mark just above the dying worker's line is
    # the head/tail mark alone, which read "0 earlier lines and 5000 unread bytes".
    tail = [f"line {i}" for i in range(60)]
    text = "\n".join(["[... 5000 bytes omitted ...]", "ERROR: Unexpected segfault", *tail])
    assert excerpt(text, max_lines=10).split("\n")[:3] == [
        "… (5000 unread bytes omitted)",
        "ERROR: Unexpected segfault",
        "… (50 lines omitted)",
    ]


def test_key_lines_left_out_stay_in_order_three_in_all() -> None:
    # A fourth distinct key line above the window, or one in a long traceback's omitted
    # middle, went on top of the excerpt: above the lines it had come after.
    keys = [f"ERROR: Unexpected {name}" for name in "abcd"]
    text = "\n".join([*(f"{key}\nx" for key in keys), *(f"t{i}" for i in range(10))])
    lines = excerpt(text, max_lines=10).split("\n")
    assert [line for line in lines if line.startswith("ERROR")] == keys[:3]
    assert lines[lines.index(keys[2]) + 1 :][:2] == ["… (3 lines omitted)", "t0"]
    frames = [f'  File "m{i}.py", line {i}, in f' for i in range(45)]
    text = "\n".join(
        [
            "w",
            "w2",
            "ERROR: Unexpected segmentation fault",
            "Traceback (most recent call last):",
            *frames[:20],
            "ERROR: Unexpected bus error",
            *frames[20:],
            "RuntimeError: x",
        ]
    )
    lines = excerpt(text, max_lines=10).split("\n")
    assert lines[:3] == ["…", "ERROR: Unexpected segmentation fault", lines[2]]
    assert lines[2] == "Traceback (most recent call last):"
    at = lines.index("ERROR: Unexpected bus error")
    assert lines[at - 1 : at + 2] == ["… (16 lines omitted)", lines[at], "… (21 lines omitted)"]
    assert lines[-1] == "RuntimeError: x"


def test_a_key_line_the_window_holds_is_not_kept_above_it_too() -> None:
    # Several DataLoader workers dying print the same line: one above the window and one
    # in it read twice, the excerpt spending its lines on the repeat.
    key = "ERROR: Unexpected segmentation fault encountered in worker."
    text = "\n".join(["a", key, "b", "c", "d", "e", "f", "g", key, "h", "i"])
    lines = excerpt(text, max_lines=5).split("\n")
    assert lines.count(key) == 1
    assert lines[-3:] == [key, "h", "i"]
    frames = [f'  File "m{i}.py", line {i}, in f' for i in range(45)]
    text = "\n".join(["w", "w2", key, "Traceback (most recent call last):", *frames, key, "X"])
    assert excerpt(text, max_lines=10).split("\n").count(key) == 1


def test_words_before_says_whether_a_word_of_its_own_starts_there() -> None:
    from reprospec.core.logtext import words_before

    line = "run a\\ -j 'b c'x -- \"d -- e\""
    assert words_before(line, 0) == ([], True)
    assert words_before(line, line.index("a")) == (["run"], True)
    # Joined to an escaped blank, or to a closing quote: the word before's.
    assert words_before(line, line.index("-j")) == (["run", "a "], False)
    assert words_before(line, line.index("x")) == (["run", "a -j", "b c"], False)
    assert words_before(line, line.index(" --") + 1) == (["run", "a -j", "b cx"], True)
    with pytest.raises(ValueError, match="closing quotation"):  # inside a quotation
        words_before(line, line.index("-- e"))


def test_shell_line_keeps_a_command_of_several_lines_on_one_and_reads_back() -> None:
    from reprospec.core.logtext import shell_join, shell_line, shell_split

    words = ["python", "-c", "import os\nos.abort()", "it's\tx", "é", "x\u2028y", "b\udcfe\n"]
    line = shell_line(words)
    assert "\n" not in line
    assert line.startswith("python -c $'import os\\nos.abort()' $'it\\'s\\tx' 'é' ")
    assert shell_split(line) == words
    # Words without a control character are written as shell_join writes them.
    assert shell_line(["a b", "é", "b\udcfe"]) == shell_join(["a b", "é", "b\udcfe"])


def test_a_line_with_nothing_to_write_out_is_given_back_as_it_is() -> None:
    # A progress line per attempt: nothing in it to escape, and no copy made of it (the
    # translation through a dict per character was most of what printing it cost).
    line = "[5/1000] default #1: pass (match, 0.00s, eta 3m10s)"
    assert printable(line, one_line=True) is line
    assert printable(line) is line
    # Every character either mode writes out is still written out, whatever is beside it.
    for code in (*range(0x00, 0x100), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), 0x2066):
        for text in (chr(code), f"é {chr(code)}", f"a {chr(code)} b"):
            for one_line in (False, True):
                want = re.sub(_UNPRINTABLE_OR_NEWLINE if one_line else _UNPRINTABLE, _escape, text)
                assert printable(text, one_line=one_line) == want, (code, one_line)
