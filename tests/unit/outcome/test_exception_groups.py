"""Exception groups (3.11+): the members an `ExceptionGroup` held, as CPython prints them.

Every `asyncio.TaskGroup` failure is an `ExceptionGroup`: read as its type alone, a
ValueError group and a KeyError group were one signature, `error:ExceptionGroup`, and
`expect.exception: ValueError` never met the TaskGroup's ValueError. The texts are CPython
3.11's and 3.13's own output of the programs named (3.11 prints a member's later message
lines unprefixed; 3.13 prefixes them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.results import (
    ChainLink,
    GroupMember,
    Outcome,
    RunResult,
    group_agrees,
    group_named,
    split_group,
)
from reprospec.core.words import outcome_phrase
from reprospec.native import agrees
from reprospec.outcome.classify import classify
from reprospec.outcome.judge import judge_attempt
from reprospec.outcome.tracebacks import parse_chain, raised_types, recorded_chain
from reprospec.report.failure import chain_lines, member_lines
from reprospec.store.resultsjson import outcome_from_dict, outcome_to_dict
from tests.support.plans import execution_in

# asyncio.run(main()), main's TaskGroup running a task that raises ValueError("boom").
TASK_GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "/w/tg.py", line 7, in <module>
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/runners.py", line 190, in run
  |     return runner.run(main)
  |            ^^^^^^^^^^^^^^^^
  |   File "/w/tg.py", line 5, in main
  |     async with asyncio.TaskGroup() as tg:
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/w/tg.py", line 3, in bad
    |     raise ValueError("boom")
    | ValueError: boom
    +------------------------------------
"""

# A group of a ValueError never raised (two lines of message) and a nested group, raised
# while handling a KeyError, of a TypeError and that KeyError.
_NESTED_HEAD = """\
  + Exception Group Traceback (most recent call last):
  |   File "/w/nested.py", line 9, in <module>
  |     raise ExceptionGroup("outer", [ValueError("v\\nsecond line"), g]) from None
  | ExceptionGroup: outer (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | ValueError: v
"""
_NESTED_TAIL = """\
    +---------------- 2 ----------------
    | Traceback (most recent call last):
    |   File "/w/nested.py", line 3, in f
    |     raise KeyError("k")
    | KeyError: 'k'
    |
    | During handling of the above exception, another exception occurred:
    |
    | Exception Group Traceback (most recent call last):
    |   File "/w/nested.py", line 7, in <module>
    |     f()
    |   File "/w/nested.py", line 5, in f
    |     raise ExceptionGroup("inner", [TypeError("t"), e])
    | ExceptionGroup: inner (2 sub-exceptions)
    +-+---------------- 1 ----------------
      | TypeError: t
      +---------------- 2 ----------------
      | Traceback (most recent call last):
      |   File "/w/nested.py", line 3, in f
      |     raise KeyError("k")
      | KeyError: 'k'
      +------------------------------------
"""
NESTED_311 = _NESTED_HEAD + "second line\n" + _NESTED_TAIL
NESTED_313 = _NESTED_HEAD + "    | second line\n" + _NESTED_TAIL

# BaseExceptionGroup("b", [KeyboardInterrupt()]), and 20 ValueErrors past the 15 printed.
BASE_GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "<string>", line 1, in <module>
  | BaseExceptionGroup: b (1 sub-exception)
  +-+---------------- 1 ----------------
    | KeyboardInterrupt
    +------------------------------------
"""
WIDE = (
    "  + Exception Group Traceback (most recent call last):\n"
    '  |   File "/w/many.py", line 4, in <module>\n'
    "  | ExceptionGroup: w (20 sub-exceptions)\n"
    "  +-+---------------- 1 ----------------\n"
    "    | ValueError: 0\n"
    + "".join(
        f"    +---------------- {n + 1} ----------------\n    | ValueError: {n}\n"
        for n in range(1, 15)
    )
    + "    +---------------- ... ----------------\n"
    "    | and 5 more exceptions\n"
    "    +------------------------------------\n"
)


def _failed_with(tmp_path: Path, stderr: str) -> Outcome:
    """The outcome of a command's attempt that printed `stderr` and exited 1."""
    (tmp_path / "stderr.log").write_text(stderr)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 1))
    assert isinstance(outcome, Outcome)
    return outcome


def _members(text: str) -> list[tuple[str, str | None]]:
    chain = parse_chain(text)
    return [(m.type, m.message) for m in chain[-1].members]


def test_a_task_groups_member_is_read() -> None:
    chain = parse_chain(TASK_GROUP)
    assert [e.type for e in chain] == ["ExceptionGroup"]
    assert chain[0].message == "unhandled errors in a TaskGroup (1 sub-exception)"
    assert _members(TASK_GROUP) == [("ValueError", "boom")]


@pytest.mark.parametrize("text", [NESTED_311, NESTED_313], ids=["3.11", "3.13"])
def test_a_nested_groups_members_stand_in_its_place(text: str) -> None:
    # The KeyError the inner group was raised while handling is no member: only its own.
    assert _members(text) == [
        ("ValueError", "v\nsecond line"),
        ("TypeError", "t"),
        ("KeyError", "'k'"),
    ]


def test_a_base_exception_group_and_a_group_wider_than_printed() -> None:
    assert _members(BASE_GROUP) == [("KeyboardInterrupt", None)]
    assert _members(WIDE) == [("ValueError", str(n)) for n in range(15)]


def test_a_group_printed_with_no_traceback_is_read() -> None:
    # `sys.tracebacklimit = 0`: the group's own lines, prefixed, and no header; a program's
    # record of it (raised-PID.txt) holds the same lines.
    hidden = BASE_GROUP.replace("  + Exception Group Traceback (most recent call last):\n", "")
    hidden = hidden.replace('  |   File "<string>", line 1, in <module>\n', "")
    assert _members(hidden) == [("KeyboardInterrupt", None)]
    assert parse_chain(hidden)[0].type == "BaseExceptionGroup"
    assert recorded_chain("died\n" + hidden)[0].members == parse_chain(hidden)[0].members
    # A `| ` line with no member's rule after it is no group.
    assert parse_chain("  | ValueError: v\n") == ()


# 3.11.7's stderr of `sys.tracebacklimit = 0`, then
# `raise ExceptionGroup("g", [ExceptionGroup("h", [ValueError("a")]), KeyError("k")])`.
HIDDEN_NESTED = """\
  | ExceptionGroup: g (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | ExceptionGroup: h (1 sub-exception)
    +-+---------------- 1 ----------------
      | ValueError: a
      +------------------------------------
    +---------------- 2 ----------------
    | KeyError: 'k'
    +------------------------------------
"""


def test_a_hidden_nested_group_is_read_as_the_outer_group() -> None:
    # The inner group's line (after the outer member's rule) was read as the group: `h`,
    # [ValueError], the outer group and its KeyError lost.
    chain = parse_chain(HIDDEN_NESTED)
    assert [(e.type, e.message) for e in chain] == [("ExceptionGroup", "g (2 sub-exceptions)")]
    assert _members(HIDDEN_NESTED) == [("ValueError", "a"), ("KeyError", "'k'")]


@pytest.mark.parametrize("traceback", [True, False], ids=["traceback", "tracebacklimit=0"])
def test_a_threads_group_is_never_read_as_a_hidden_group(traceback: bool) -> None:
    # A thread dead of a nested group (its traceback printed), or of a group under
    # `sys.tracebacklimit = 0`: it ended that thread, not the process.
    if traceback:
        text = (
            "Exception in thread Thread-1 (f):\n"
            "  + Exception Group Traceback (most recent call last):\n"
            '  |   File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
            "  |     self.run()\n"
            '  |   File "/w/thr.py", line 3, in f\n'
            '  |     raise ExceptionGroup("outer", [ExceptionGroup("inner", [ValueError("a")])])\n'
            "  | ExceptionGroup: outer (1 sub-exception)\n"
            "  +-+---------------- 1 ----------------\n"
            "    | ExceptionGroup: inner (1 sub-exception)\n"
            "    +-+---------------- 1 ----------------\n"
            "      | ValueError: a\n"
            "      +------------------------------------\n"
        )
    else:
        text = (
            "Exception in thread Thread-1 (f):\n"
            "  | ExceptionGroup: outer (1 sub-exception)\n"
            "  +-+---------------- 1 ----------------\n"
            "    | ValueError: a\n"
            "    +------------------------------------\n"
        )
    assert parse_chain(text) == ()


# 3.11.7's stderr under `sys.tracebacklimit = 0`: a group printed handled
# (`traceback.print_exc()`), then the group that ended the process.
HANDLED_THEN_FATAL = """\
  | ExceptionGroup: first (1 sub-exception)
  +-+---------------- 1 ----------------
    | KeyError: 'k'
    +------------------------------------
  | ExceptionGroup: fatal (1 sub-exception)
  +-+---------------- 1 ----------------
    | ValueError: v
    +------------------------------------
"""

# 3.11.7's stderr under `sys.tracebacklimit = 0`: a thread dead of a group, then the
# main thread's group.
THREAD_THEN_MAIN = """\
Exception in thread Thread-1 (f):
  | ExceptionGroup: outer (1 sub-exception)
  +-+---------------- 1 ----------------
    | ValueError: a
    +------------------------------------
  | ExceptionGroup: main (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | KeyError: 'k'
    +---------------- 2 ----------------
    | TypeError: t
    +------------------------------------
"""


def test_a_hidden_group_after_another_groups_closing_rule_is_read() -> None:
    # The closing rule before it was taken for a member's: the handled group was read,
    # the fatal one's member merged into it, and after a thread's group nothing was.
    assert [e.message for e in parse_chain(HANDLED_THEN_FATAL)] == ["fatal (1 sub-exception)"]
    assert _members(HANDLED_THEN_FATAL) == [("ValueError", "v")]
    assert [e.message for e in parse_chain(THREAD_THEN_MAIN)] == ["main (2 sub-exceptions)"]
    assert _members(THREAD_THEN_MAIN) == [("KeyError", "'k'"), ("TypeError", "t")]


def test_a_hidden_group_after_a_handled_groups_traceback_is_the_one_read() -> None:
    # A group printed with its traceback (`traceback.print_exc()`), then the one that ended
    # the process under `sys.tracebacklimit = 0` (3.11.7): the first group's members were
    # read on into the second's (KeyError and ValueError), then the handled group was read
    # alone, as though the process died of it.
    text = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/w/mix.py", line 3, in <module>\n'
        '  |     raise ExceptionGroup("first", [KeyError("k")])\n' + HANDLED_THEN_FATAL
    )
    assert parse_chain(text)[-1].message == "fatal (1 sub-exception)"
    assert _members(text) == [("ValueError", "v")]
    # A hidden group printed handled, then a traceback: that traceback ended the process.
    fatal = 'Traceback (most recent call last):\n  File "/w/x.py", line 9, in <module>\n'
    assert parse_chain(HANDLED_THEN_FATAL + fatal + "OSError: o\n")[-1].type == "OSError"


# 3.11.7's stderr of a group with notes (`e.add_note("fatal note\nsecond")`): the notes'
# lines stand between the group's line and its first member's rule.
NOTED = """\
  | ExceptionGroup: fatal (1 sub-exception)
  | fatal note
  | second
  +-+---------------- 1 ----------------
    | ValueError: v
    | its own note
    +------------------------------------
"""


@pytest.mark.parametrize("traceback", [True, False])
def test_a_groups_notes_leave_its_members_read(traceback: bool) -> None:
    # The note's line was taken for the group's first: no rule, so no members.
    header = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/w/n.py", line 2, in <module>\n'
        "  |     raise e\n"
    )
    text = (header if traceback else "") + NOTED
    assert parse_chain(text)[-1].message == "fatal (1 sub-exception)\nfatal note\nsecond"
    assert _members(text) == [("ValueError", "v\nits own note")]


def test_a_group_is_named_by_its_members_in_its_words_signature_and_judgement(
    tmp_path: Path,
) -> None:
    outcome = _failed_with(tmp_path, TASK_GROUP)
    assert outcome.exception == "ExceptionGroup"
    assert outcome.members == (GroupMember("ValueError", "boom"),)
    assert outcome.signature == "error:ExceptionGroup[ValueError]"
    assert outcome_phrase(outcome) == "error exit 1 ExceptionGroup[ValueError]"
    assert judge_attempt(outcome, Expectation("error", exception="ValueError")).matched
    assert judge_attempt(outcome, Expectation("error", exception="ExceptionGroup")).matched
    assert judge_attempt(outcome, Expectation("error", message="^boom$")).matched
    missed = judge_attempt(outcome, Expectation("error", exception="KeyError"))
    assert missed.mismatches == ("exception: expected KeyError, got ExceptionGroup[ValueError]",)
    assert member_lines(outcome) == ["`ValueError`: `boom`"]


def test_a_group_in_a_chain_keeps_its_members_and_expect_meets_them() -> None:
    cause = ChainLink(
        "ExceptionGroup", "c (1 sub-exception)", "cause", (GroupMember("ValueError", "boom"),)
    )
    outcome = Outcome(
        "error",
        exit_code=1,
        exception="RuntimeError",
        message="wrapped",
        chain=(cause, ChainLink("RuntimeError", "wrapped")),
    )
    assert judge_attempt(outcome, Expectation("error", exception="ValueError")).matched
    assert judge_attempt(outcome, Expectation("error", message="^boom$")).matched
    assert not judge_attempt(outcome, Expectation("error", exception="KeyError")).matched
    assert outcome_from_dict(outcome_to_dict(outcome)) == outcome
    assert chain_lines(outcome)[0] == "`ExceptionGroup[ValueError]`: `c (1 sub-exception)`"


def test_a_group_logged_before_another_exit_keeps_its_members(tmp_path: Path) -> None:
    # `logging.exception` of a TaskGroup's failure, then `sys.exit(2)`: the last traceback
    # printed, no exception of the outcome; its members still say which bug it was.
    (tmp_path / "stderr.log").write_text("ERROR:root:request failed\n" + TASK_GROUP)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 2))
    assert isinstance(outcome, Outcome)
    assert outcome.exception is None
    assert outcome.last_traceback is not None
    assert outcome.last_traceback.members == (GroupMember("ValueError", "boom"),)
    assert outcome_phrase(outcome) == "error exit 2 (last traceback: ExceptionGroup[ValueError])"
    assert judge_attempt(outcome, Expectation("error", exception="ValueError")).matched
    assert not judge_attempt(outcome, Expectation("error", exception="KeyError")).matched
    assert outcome_from_dict(outcome_to_dict(outcome)) == outcome
    # Its message is the group's own line, as a KeyError's would be (`KeyError: 'x'`), not
    # stderr's last line, the group's closing rule `+------------------------------------`.
    assert outcome.message == "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"


def test_a_threads_group_is_named_by_its_members_in_the_detail(tmp_path: Path) -> None:
    thread = (
        "Exception in thread Thread-1 (f):\n"
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
        "  |     self.run()\n"
        '  |   File "/w/thr.py", line 3, in f\n'
        "  | ExceptionGroup: t (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | KeyError: 'k'\n"
        "    +------------------------------------\n"
    )
    (tmp_path / "stderr.log").write_text(thread)
    (tmp_path / "stdout.log").write_bytes(b"")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 3))
    assert isinstance(outcome, Outcome)
    assert outcome.exception is None  # a thread's: it ended no process
    assert "1 thread died of an exception (ExceptionGroup[KeyError]; " in (outcome.detail or "")


def test_groups_of_different_members_have_different_signatures() -> None:
    value = group_named("ExceptionGroup", (GroupMember("ValueError"),))
    key = group_named("ExceptionGroup", (GroupMember("KeyError"), GroupMember("KeyError")))
    both = group_named("ExceptionGroup", (GroupMember("ValueError"), GroupMember("KeyError")))
    assert (value, key, both) == (
        "ExceptionGroup[ValueError]",
        "ExceptionGroup[KeyError]",
        "ExceptionGroup[KeyError,ValueError]",  # sorted: a TaskGroup's order is timing's
    )
    assert group_named("ValueError", ()) == "ValueError"


def test_members_are_stored_and_an_older_outcome_reads_with_none() -> None:
    outcome = Outcome(
        "error",
        exit_code=1,
        exception="ExceptionGroup",
        signature="error:ExceptionGroup[ValueError]",
        members=(GroupMember("ValueError", "boom"),),
    )
    stored = outcome_to_dict(outcome)
    assert stored["members"] == [{"type": "ValueError", "message": "boom"}]
    assert outcome_from_dict(stored) == outcome
    del stored["members"]  # a results.json (or a store's row) written before members
    assert outcome_from_dict(stored).members == ()
    assert "members" not in outcome_to_dict(Outcome("error", exception="ValueError"))


def test_a_signatures_group_is_read_back_as_group_named_wrote_it() -> None:
    named = group_named("ExceptionGroup", (GroupMember("ValueError"), GroupMember("KeyError")))
    assert split_group(f"error:{named}:train") == (
        "error:ExceptionGroup:train",
        frozenset({"KeyError", "ValueError"}),
    )
    assert split_group("error:ExceptionGroup") == ("error:ExceptionGroup", None)
    # A pytest test id's `[param]` is no member; a crash names no exception.
    assert split_group("error:AssertionError:t.py::test_x[1]")[1] is None
    assert split_group("crash:SIGSEGV:main:f[1]@lib")[1] is None


def test_one_task_groups_failures_agree_whichever_tasks_failed_first() -> None:
    # One two-task TaskGroup gave [KeyError,ValueError], [ValueError] and [KeyError]: one
    # failure, which minimize (native.agrees) and compare (group_agrees) count as one; an
    # older run's group names none. Members apart, another exception or another place
    # differ.
    both = "error:ExceptionGroup[KeyError,ValueError]"
    for signature in ("error:ExceptionGroup[ValueError]", "error:ExceptionGroup", both):
        assert group_agrees(signature, both)
        assert group_agrees(both, signature)
        assert agrees(signature, both, native_unknown=False, across_builds=False)
    assert group_agrees("error:ExceptionGroup[ValueError]:train", "error:ExceptionGroup:train")
    assert not group_agrees("error:ExceptionGroup[KeyError]", "error:ExceptionGroup[ValueError]")
    assert not agrees(
        "error:ExceptionGroup[KeyError]",
        "error:ExceptionGroup[ValueError]",
        native_unknown=True,
        across_builds=True,
    )
    assert not group_agrees("error:ValueError", "error:ExceptionGroup[ValueError]")
    assert not group_agrees(
        "error:ExceptionGroup[ValueError]", "error:ExceptionGroup[ValueError]:x"
    )
    assert not group_agrees("error:BaseExceptionGroup", "error:ExceptionGroup[ValueError]")


# pytest 9's report of a test that wrapped its TaskGroup's failure:
# `except ExceptionGroup as group: raise RuntimeError("wrapped") from group`.
WRAPPED_REPORT = """\
=================================== FAILURES ===================================
_________________________________ test_wrapped _________________________________
  + Exception Group Traceback (most recent call last):
  |   File "/w/test_cases.py", line 19, in test_wrapped
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/w/test_cases.py", line 4, in bad
    |     raise ValueError("boom")
    | ValueError: boom
    +------------------------------------

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/test_cases.py", line 21, in test_wrapped
    raise RuntimeError("wrapped") from group
RuntimeError: wrapped

The above exception was the direct cause of the following exception:

    def test_wrapped():
        try:
            asyncio.run(main())
        except ExceptionGroup as group:
>           raise RuntimeError("wrapped") from group
E           RuntimeError: wrapped

test_cases.py:21: RuntimeError
=========================== short test summary info ============================
FAILED test_cases.py::test_wrapped - RuntimeError: wrapped
============================== 1 failed in 0.25s ===============================
"""


def test_a_pytest_tests_group_in_its_chain_keeps_its_members(tmp_path: Path) -> None:
    # Its chain was left out (the test's RuntimeError alone): `expect.exception: ValueError`
    # missed under pytest what it met where the same code ran outside it.
    (tmp_path / "stderr.log").write_text("")
    (tmp_path / "stdout.log").write_text(WRAPPED_REPORT)
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 1), pytest=True)
    assert isinstance(outcome, Outcome)
    assert (outcome.exception, outcome.message) == ("RuntimeError", "wrapped")
    assert [(link.type, link.members) for link in outcome.chain] == [
        ("ExceptionGroup", (GroupMember("ValueError", "boom"),)),
        ("RuntimeError", ()),
    ]
    assert judge_attempt(outcome, Expectation("error", exception="ValueError")).matched
    assert judge_attempt(outcome, Expectation("error", exception="RuntimeError")).matched
    assert not judge_attempt(outcome, Expectation("error", exception="KeyError")).matched


def _group_run(*members: str) -> RunResult:
    """error_run with its failing cell's attempt an exception group of `members`."""
    from dataclasses import replace

    from tests.support.runs import error_run

    run = error_run()
    cell = run.cells[1]
    attempt = cell.attempts[0]
    assert attempt.ran is not None
    named = group_named("ExceptionGroup", [GroupMember(m) for m in members])
    ran = replace(attempt.ran, exception="ExceptionGroup", signature=f"error:{named}:train")
    cells = (run.cells[0], replace(cell, attempts=(replace(attempt, outcome=ran),)))
    return replace(run, cells=cells)


def test_compare_counts_one_groups_members_among_the_others_as_no_changed_outcome() -> None:
    # No test reached compare with group signatures: dropping `group_agrees` from its
    # `_same_outcomes` failed none.
    from reprospec.store.compare import compare

    some, both = _group_run("ValueError"), _group_run("KeyError", "ValueError")
    assert compare(some, both)["cells"] == []
    assert compare(both, some)["cells"] == []
    changed = compare(_group_run("KeyError"), some)["cells"]
    assert [row["change"] for row in changed] == ["outcome changed"]


# 3.11.7's stderr of `raise ExceptionGroup("g1\ng2\ng3", [ValueError("x\ny\nz"), KeyError(2)])`
# under `sys.tracebacklimit = 0`: the group's own message and its member's run over three
# lines, 3.11 printing every line after a message's first bare.
MULTILINE = """\
  | ExceptionGroup: g1
g2
g3 (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | ValueError: x
y
z
    +---------------- 2 ----------------
    | KeyError: 2
    +------------------------------------
"""


@pytest.mark.parametrize("traceback", [True, False], ids=["traceback", "tracebacklimit=0"])
def test_a_groups_message_over_several_lines_leaves_its_members_read(traceback: bool) -> None:
    # Hidden (no header), the group's bare second line ended the look for its first member's
    # rule: no group at all (`error exit 1`); with its traceback, the bare line ended the
    # group's own lines (message `g1`, no members: `ExceptionGroup` alone), and a member's
    # message of three lines ended the members at its second.
    header = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/w/m.py", line 1, in <module>\n'
        "  |     raise ExceptionGroup(...)\n"
    )
    text = (header if traceback else "") + MULTILINE
    assert parse_chain(text)[-1].message == "g1\ng2\ng3 (2 sub-exceptions)"
    assert _members(text) == [("ValueError", "x\ny\nz"), ("KeyError", "2")]
    # Two lines, the brief's case: `first line\nsecond line`, one member.
    two = "  | ExceptionGroup: first line\nsecond line (1 sub-exception)\n" + (
        "  +-+---------------- 1 ----------------\n"
        "    | ValueError: x\n"
        "    +------------------------------------\n"
    )
    assert _members((header if traceback else "") + two) == [("ValueError", "x")]


# CPython 3.11's output of a thread that raised `RuntimeError("in thread") from
# ValueError("root")` (a cause never raised: its line alone, under the thread's label),
# then the main thread's own KeyError.
THREAD_UNRAISED_CAUSE = """\
Exception in thread w:
ValueError: root

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner
    self.run()
  File "/usr/lib/python3.11/threading.py", line 982, in run
    self._target(*self._args, **self._kwargs)
  File "/w/th.py", line 3, in f
    raise RuntimeError("in thread") from ValueError("root")
RuntimeError: in thread
Traceback (most recent call last):
  File "/w/th.py", line 5, in <module>
    raise KeyError("main")
KeyError: 'main'
"""


def test_a_threads_cause_never_raised_is_the_threads_not_the_main_threads() -> None:
    """The thread's label stands right above its unraised cause: the chain is the thread's
    (never what ended the process), and the cause is one of the types it printed."""
    assert [(e.type, e.link) for e in parse_chain(THREAD_UNRAISED_CAUSE)] == [("KeyError", None)]
    assert raised_types(THREAD_UNRAISED_CAUSE) == ("ValueError", "RuntimeError", "KeyError")


# `logging.exception("lookup failed")` of a KeyError, then `raise RuntimeError("top") from
# ValueError("root")`, under `python -S` (CPython 3.11's output).
LOGGED_THEN_UNRAISED = """\
ERROR:root:lookup failed
Traceback (most recent call last):
  File "/w/lg.py", line 3, in <module>
    {}["x"]
    ~~^^^^^
KeyError: 'x'
ValueError: root

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/lg.py", line 6, in <module>
    raise RuntimeError("top") from ValueError("root")
RuntimeError: top
"""


def test_a_logged_traceback_ends_its_chain_at_its_own_lines() -> None:
    """The lines after a logged exception's own are no part of its message: a cause never
    raised among them is the next chain's (it read `KeyError("'x'\\nValueError: root")`,
    the cause of RuntimeError), by the class the raise makes in place or, where it names
    none (`from err`), by the rule of any other output; where that reads none, the chain's
    cause is missed, never the logged one's."""
    read = [("ValueError", "root", "cause"), ("RuntimeError", "top", None)]

    def chain(text: str) -> list[tuple[str, str | None, str | None]]:
        return [(e.type, e.message, e.link) for e in parse_chain(text)]

    assert chain(LOGGED_THEN_UNRAISED) == read
    two = LOGGED_THEN_UNRAISED.replace("ValueError: root", "retrying\nValueError: root")
    assert chain(two) == read
    # Two lines that may each be the cause's (`print("ConfigError: was retried")`): the
    # raise's `from ValueError(` says which; with `from err`, none is read.
    doubt = LOGGED_THEN_UNRAISED.replace("ValueError: root", "ConfigError: x\nValueError: root")
    assert chain(doubt) == read
    err = 'from ValueError("root")\n'
    assert chain(LOGGED_THEN_UNRAISED.replace(err, "from err\n")) == read
    assert [e.type for e in parse_chain(doubt.replace(err, "from err\n"))] == ["RuntimeError"]
    # A chain printed right under a log record (`log.error(...)`, then the raise): its
    # blocks are one chain, as ever.
    raised = LOGGED_THEN_UNRAISED.replace("KeyError: 'x'\nValueError: root\n", "KeyError: 'x'\n")
    raised = raised.replace(err, "from e\n")
    assert [(e.type, e.link) for e in parse_chain(raised)] == [
        ("KeyError", "cause"),
        ("RuntimeError", None),
    ]


# `raise RuntimeError("top") from Timeout("slow\\nafter 3 tries")` under `python -S`, a
# line printed above it (CPython 3.11's output).
MADE_IN_THE_RAISE = """\
Note: retrying
Timeout: slow
after 3 tries

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/made.py", line 6, in <module>
    raise RuntimeError("top") from Timeout("slow\\nafter 3 tries")
RuntimeError: top
"""


def test_a_cause_the_raise_makes_in_place_is_read_by_the_class_it_names() -> None:
    """`Timeout` is not named as a class, and its message runs over two lines: read by the
    class the raise's source line names (`from Timeout(`), one line of it; none where two
    lines are of it, or where the raise names none (`from err`)."""
    read = [("Timeout", "slow\nafter 3 tries", "cause"), ("RuntimeError", "top", None)]
    assert [(e.type, e.message, e.link) for e in parse_chain(MADE_IN_THE_RAISE)] == read
    dotted = MADE_IN_THE_RAISE.replace("Timeout: slow", "errors.Timeout: slow").replace(
        "from Timeout(", "from errors.Timeout("
    )
    assert [e.type for e in parse_chain(dotted)] == ["errors.Timeout", "RuntimeError"]
    two = MADE_IN_THE_RAISE.replace("Note: retrying", "Timeout: was retried")
    assert [e.type for e in parse_chain(two)] == ["RuntimeError"]
    elsewhere = MADE_IN_THE_RAISE.replace('from Timeout("slow\\nafter 3 tries")', "from err")
    assert [e.type for e in parse_chain(elsewhere)] == ["RuntimeError"]
