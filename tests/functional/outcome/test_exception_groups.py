"""Exception groups from real programs, through the CLI: the members name the failure.

An `asyncio.TaskGroup` whose task raised ValueError read `error exit 1 ExceptionGroup`,
missed `expect.exception: ValueError`, and shared its signature with a KeyError group; a
group printed under `sys.tracebacklimit = 0` (no header) read as no exception at all, its
message the group's closing rule `+------------------------------------`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.cli import Cli

_PROGRAM = textwrap.dedent(
    """
    import asyncio, sys
    kind = sys.argv[1]

    async def bad(exc):
        raise exc

    async def main(*excs):
        async with asyncio.TaskGroup() as tg:
            for exc in excs:
                tg.create_task(bad(exc))

    if kind == "value":
        asyncio.run(main(ValueError("boom")))
    elif kind == "key":
        asyncio.run(main(KeyError("k")))
    elif kind == "nested":
        try:
            raise ExceptionGroup("inner", [TypeError("t\\nmore of it")])
        except ExceptionGroup as inner:
            raise ExceptionGroup("outer", [inner, OSError("o")]) from None
    elif kind == "wrapped":
        # A library's own error raised from the TaskGroup's: the group is the chain's cause.
        try:
            asyncio.run(main(ValueError("boom")))
        except ExceptionGroup as group:
            raise RuntimeError("request failed") from group
    elif kind == "logged":
        # A CLI that logs the failure and exits 2: the group is the last traceback printed.
        import logging
        try:
            asyncio.run(main(ValueError("boom")))
        except ExceptionGroup:
            logging.exception("request failed")
            sys.exit(2)
    elif kind == "hidden":
        # A CLI that hides its tracebacks: the group prints its lines, with no header.
        sys.tracebacklimit = 0
        raise ExceptionGroup("quiet", [ValueError("boom")])
    else:
        raise BaseExceptionGroup("stop", [KeyboardInterrupt()])
    """
)


def test_a_groups_members_are_its_outcomes_and_expect_exception_meets_them(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "groups.py").write_text(_PROGRAM)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: groups\nmatrix:\n"
        "  kind: [value, key, nested, base, hidden, wrapped, logged]\n"
        "command: python groups.py ${{ matrix.kind }}\nrun: {timeout: 30s}\n"
        "expect:\n  outcome: error\n  exception: ValueError\n  message: '^boom$'\n"
        "  cases:\n"
        + "".join(
            f"    - {{when: {{kind: {k}}}, outcome: error}}\n" for k in ("key", "nested", "base")
        )
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcomes = {cell["id"]: cell["attempts"][0]["outcome"] for cell in result.results()["cells"]}
    said = {
        cell: (o["exception"], o["signature"], o.get("members")) for cell, o in outcomes.items()
    }
    assert said == {
        "kind=value": (
            "ExceptionGroup",
            "error:ExceptionGroup[ValueError]",
            [{"type": "ValueError", "message": "boom"}],
        ),
        "kind=key": (
            "ExceptionGroup",
            "error:ExceptionGroup[KeyError]",
            [{"type": "KeyError", "message": "'k'"}],
        ),
        "kind=nested": (
            "ExceptionGroup",
            "error:ExceptionGroup[OSError,TypeError]",
            [
                {"type": "TypeError", "message": "t\nmore of it"},
                {"type": "OSError", "message": "o"},
            ],
        ),
        "kind=hidden": (
            "ExceptionGroup",
            "error:ExceptionGroup[ValueError]",
            [{"type": "ValueError", "message": "boom"}],
        ),
        "kind=wrapped": ("RuntimeError", "error:RuntimeError", None),
        "kind=logged": (None, "error:exit-2", None),
        "kind=base": (
            "BaseExceptionGroup",
            "error:BaseExceptionGroup[KeyboardInterrupt]",
            [{"type": "KeyboardInterrupt", "message": None}],
        ),
    }, said
    assert "error exit 1 ExceptionGroup[ValueError]" in result.stdout
    logged = outcomes["kind=logged"]["last_traceback"]
    assert logged["members"] == [{"type": "ValueError", "message": "boom"}], logged
    cause = outcomes["kind=wrapped"]["chain"][0]
    assert (cause["type"], cause["members"]) == (
        "ExceptionGroup",
        [{"type": "ValueError", "message": "boom"}],
    )
    report = (result.latest_run() / "report.md").read_text()
    assert "- `ValueError`: `boom`" in report
    assert "- `error:ExceptionGroup[KeyError]` (1 attempt)" in report


_TEST_MODULE = textwrap.dedent(
    """
    import asyncio

    async def bad():
        raise ValueError("boom")

    def test_task_group():
        async def main():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(bad())
        asyncio.run(main())
    """
)


def test_a_pytest_tests_task_group_failure_names_its_members(cli: Cli, tmp_path: Path) -> None:
    """pytest prints a test's group as CPython does, with no `E   ` line, and shortens its
    summary (`ValueError('boom') [single exception in Exceptio...`): the test's failure read
    as `error exit 1` with no exception, and `expect.exception: ValueError` missed it."""
    (tmp_path / "test_tg.py").write_text(_TEST_MODULE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: pytest-groups\ncommand: python -m pytest -q -p no:cacheprovider"
        " test_tg.py\nrun: {timeout: 60s}\nexpect: {outcome: error, exception: ValueError}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert outcome["signature"].startswith("error:ExceptionGroup[ValueError]"), outcome
    assert outcome["members"] == [{"type": "ValueError", "message": "boom"}]


def test_a_task_groups_memory_error_under_environment_memory_is_said_to_be_the_limits(
    cli: Cli, tmp_path: Path
) -> None:
    """A TaskGroup whose task ran out of memory under `environment.memory`: the verdict says
    the attempt reached its limit, as for a bare MemoryError (its type was looked for in
    the chain alone, where the group is `ExceptionGroup`)."""
    (tmp_path / "alloc.py").write_text(
        textwrap.dedent(
            """
            import asyncio

            async def alloc():
                return bytearray(400 << 20)

            async def main():
                async with asyncio.TaskGroup() as tg:
                    tg.create_task(alloc())

            asyncio.run(main())
            """
        )
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: group-oom\nenvironment: {memory: 200m}\n"
        "command: python3 alloc.py\nexpect: {outcome: error, exception: MemoryError}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    assert "ExceptionGroup[MemoryError]" in result.stdout, result.stdout
    assert "at its memory limit (200.0 MiB, environment.memory)" in result.stdout, result.stdout


_UNRAISED = textwrap.dedent(
    """
    import sys
    kind = sys.argv[1]
    if kind == "group":
        raise ExceptionGroup("group", [TypeError("inner")]) from ValueError("root")
    elif kind == "plain":
        raise RuntimeError("top") from ValueError("root")
    else:
        # A cause made, never raised, whose own cause was raised: the chain's middle link.
        try:
            raise KeyError("first")
        except KeyError as first:
            middle = ValueError("root")
            middle.__cause__ = first
            raise RuntimeError("top") from middle
    """
)


def ran_chains(cli: Cli, spec: Path) -> dict[str, list[tuple[str, str, str | None]]]:
    """`reprospec run SPEC`, which succeeded: each cell's first attempt's chain by cell id, as
    (type, message, link) of each exception in it."""
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    return {
        cell["id"]: [
            (link["type"], link["message"], link["link"])
            for link in cell["attempts"][0]["outcome"]["chain"]
        ]
        for cell in result.results()["cells"]
    }


def test_a_cause_never_raised_keeps_its_place_in_the_chain(cli: Cli, tmp_path: Path) -> None:
    """`raise ExceptionGroup(...) from ValueError("root")`: a cause never raised prints no
    traceback, only `ValueError: root` above the link line, and the chain dropped it:
    `expect.exception: ValueError` missed, and the report named no cause. Read from the
    program's own record and, under `python -S` (no hooks), from stderr alike."""
    (tmp_path / "unraised.py").write_text(_UNRAISED)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: unraised\nmatrix:\n  kind: [group, plain, middle]\n"
        "  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} unraised.py ${{ matrix.kind }}\nrun: {timeout: 30s}\n"
        "expect:\n  outcome: error\n  exception: ValueError\n  message: '^root$'\n"
    )
    chains = ran_chains(cli, spec)
    root = ("ValueError", "root", "cause")
    for python in ("python", "python -S"):
        assert chains[f"kind=group,python={python}"] == [
            root,
            ("ExceptionGroup", "group (1 sub-exception)", None),
        ], chains
        assert chains[f"kind=plain,python={python}"] == [root, ("RuntimeError", "top", None)]
        assert chains[f"kind=middle,python={python}"] == [
            ("KeyError", "'first'", "cause"),
            root,
            ("RuntimeError", "top", None),
        ], chains


_PARAGRAPHS = textwrap.dedent(
    """
    import sys
    kind = sys.argv[1]
    if kind == "raised":
        # A raised cause whose message's last paragraph reads as an exception line.
        try:
            raise ValueError("bad config\\n" + "\\n".join(f"key{i}: {i}" for i in range(40))
                             + "\\n\\nHint: see docs")
        except ValueError as e:
            raise RuntimeError("top") from e
    elif kind == "unraised":
        raise RuntimeError("top") from ValueError("root\\n\\nHint: check it")
    elif kind == "after":
        # A traceback the program went on from, a warning (a line that ends a message: the
        # traceback's ends above it), more output, then a cause never raised.
        import traceback, warnings
        try:
            {}["x"]
        except KeyError:
            traceback.print_exc()
        warnings.warn("retrying")
        for epoch in range(40):
            print(f"epoch {epoch}", file=sys.stderr)
        raise RuntimeError("top") from ValueError("root")
    else:
        print("loading model", file=sys.stderr)
        raise RuntimeError("top") from ValueError("root")
    """
)


def test_a_causes_message_is_never_read_as_a_cause_of_its_own(cli: Cli, tmp_path: Path) -> None:
    """A cause's message runs down to the link line, blank lines and `Hint: ...` lines
    too: its last paragraph was read as an unraised exception of its own (`Hint`), which
    took the cause's place, raised (`expect.exception: ValueError` reproduced before the
    unraised causes were read, not after) or not; and a line the program printed right
    above a cause never raised hid it (its first line was read as the exception's).
    A traceback the program went on from, then more output, then a cause never raised reads
    as one message (the next test's raised causes): the cause is read only where a warning
    or a log record ends that traceback's message."""
    (tmp_path / "paragraphs.py").write_text(_PARAGRAPHS)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: paragraphs\nmatrix:\n  kind: [raised, unraised, printed, after]\n"
        "  python: ['python', 'python -S']\n"
        "command: ${{ matrix.python }} paragraphs.py ${{ matrix.kind }}\nrun: {timeout: 30s}\n"
        "expect:\n  outcome: error\n  exception: ValueError\n"
    )
    chains = ran_chains(cli, spec)
    top = ("RuntimeError", "top", None)
    for python in ("python", "python -S"):
        raised = chains[f"kind=raised,python={python}"]
        assert [(kind, link) for kind, _, link in raised] == [("ValueError", "cause"), top[::2]]
        assert raised[0][1].startswith("bad config\nkey0: 0\n"), chains
        assert chains[f"kind=unraised,python={python}"] == [
            ("ValueError", "root\n\nHint: check it", "cause"),
            top,
        ], chains
        root = [("ValueError", "root", "cause"), top]
        assert chains[f"kind=printed,python={python}"] == root, chains
        assert chains[f"kind=after,python={python}"] == root, chains


_RAISED = textwrap.dedent(
    """
    import sys
    kind = sys.argv[1]
    if kind in ("timeout", "loading", "process_group"):
        class Timeout(Exception):
            pass
        # Output right above a cause of a type not named as a class: `ProcessGroup` names
        # none either (a group is `...ExceptionGroup`/`...ErrorGroup`).
        printed = {"loading": "loading", "process_group": "ProcessGroup: init"}.get(kind)
        if printed:
            print(printed, file=sys.stderr)
        raise RuntimeError("top") from Timeout("took too long")
    elif kind == "printed":
        print("ConfigError: was retried", file=sys.stderr)
        print("all good", file=sys.stderr)
        raise RuntimeError("top") from ValueError("root")
    elif kind == "futures":
        from concurrent.futures import ProcessPoolExecutor
        def work(x):
            raise ValueError("in worker\\n\\nHint: look\\nTypeError: inner")
        if __name__ == "__main__":
            with ProcessPoolExecutor(1) as pool:
                pool.submit(work, 1).result()
    else:
        cause = {
            "paragraph": ValueError("bad\\n\\nreason:\\nOSError: disk full"),
            "context": ValueError("bad\\n\\nreason:\\nOSError: disk full"),
            "long": ValueError("bad\\n" + "\\n".join(f"k{i}: {i}" for i in range(40))
                               + "\\nOSError: disk"),
            "interrupt": KeyboardInterrupt("stop\\n\\nuser pressed ^C\\nSystemExit: 1"),
            "group": ExceptionGroup("eg", [ValueError("v\\n\\nnote\\nTypeError: x")]),
        }[kind]
        try:
            raise cause
        except BaseException as e:
            if kind == "context":
                raise RuntimeError("top")
            raise RuntimeError("top") from e
    """
)


def test_a_raised_causes_message_keeps_its_cause_and_a_doubtful_one_reads_none(
    cli: Cli, tmp_path: Path
) -> None:
    """CPython prints a raised cause's message down to the link line, so a line of it
    that reads as an exception's (`OSError: disk full` after a blank line, or 40 lines
    down) was read as a cause never raised and took the raised one's place: OSError for
    ValueError, TypeError for a pool worker's ValueError or for a group, SystemExit for
    KeyboardInterrupt. And a cause of a type not named as a class (`Timeout`) took the
    line printed above it (`loading`: a cause named `loading`), and a line printed above a
    cause never raised (`ConfigError: was retried`) was read as the cause, with the real one
    as its message: where two lines may each be the cause's, none is read, but where the
    raise makes its cause in place (`from Timeout("took too long")`, `from
    ValueError("root")`), the one line of that class is the cause's."""
    (tmp_path / "raised.py").write_text(_RAISED)
    spec = tmp_path / "spec.yaml"
    kinds = "paragraph, context, long, interrupt, group, futures, printed, timeout, loading"
    kinds += ", process_group"
    spec.write_text(
        f"reprospec: 1\nname: raised\nmatrix:\n  kind: [{kinds}]\n"
        # `-S`: no record of the chain from inside the program, only its stderr to read.
        "command: python -S raised.py ${{ matrix.kind }}\nrun: {timeout: 60s}\n"
        "expect:\n  outcome: error\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcomes = {
        cell["id"].removeprefix("kind="): cell["attempts"][0]["outcome"]
        for cell in result.results()["cells"]
    }
    # An exception with no cause is written with no chain.
    chains = {
        kind: [(link["type"], link["link"]) for link in outcome.get("chain", [])]
        for kind, outcome in outcomes.items()
    }
    assert {outcomes[kind]["exception"] for kind in ("printed", "loading", "process_group")} == {
        "RuntimeError"
    }
    top = ("RuntimeError", None)
    assert chains == {
        "paragraph": [("ValueError", "cause"), top],
        "context": [("ValueError", "context"), top],
        "long": [("ValueError", "cause"), top],
        "interrupt": [("KeyboardInterrupt", "cause"), top],
        "group": [("ExceptionGroup", "cause"), top],
        "futures": [("ValueError", "cause"), ("ValueError", None)],
        # Two lines of types named as classes, but the raise makes its cause in place
        # (`from ValueError("root")`): the one ValueError line is the cause's.
        "printed": [("ValueError", "cause"), top],
        "timeout": [("Timeout", "cause"), top],
        # The raise makes its cause in place (`from Timeout(...)`): the one `Timeout` line
        # is the cause's, whatever was printed above it.
        "loading": [("Timeout", "cause"), top],
        "process_group": [("Timeout", "cause"), top],
    }, chains
